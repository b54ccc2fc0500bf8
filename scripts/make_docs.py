"""
Generate the parts of docs/ that come from running the code, so they cannot drift:

* docs/passes.md, whole: every registered pass and pipeline, its options, and its
  before/after IR on a small example, produced by running the pass (`shardc-opt`, in
  process);
* docs/tutorial-jax.md, its output blocks: the tutorial's ```sh blocks are run in order in
  a scratch directory that sees the repository's `.venv`, `tests` and `examples`, and
  every ```text block marked `<!-- docs-output: stdout -->` (or `stderr`) is replaced by
  that stream of the last command block before it. A `<!-- docs-test: skip ... -->` line
  right before a ```sh block leaves it out. Everything else in the tutorial is by hand;
* docs/tutorial-timeline.png, the tutorial's `--plot` picture (not checked: pixels
  depend on the matplotlib version).

    .venv/bin/python scripts/make_docs.py           # rewrite both
    .venv/bin/python scripts/make_docs.py --check   # exit 1 if either is stale

`tests/e2e/test_docs.py` runs the same rendering and compares. Passes come from `shardc.driver.registry`
(a newly registered pass gets a section with its options and no example until one is
added to EXAMPLES below); options and their one-line meanings come from the pass
classes' dataclass fields and the docstrings under them; the summary from the first
paragraph of the pass module's docstring.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import inspect
import io
import itertools
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "passes.md"
TUTORIAL = ROOT / "docs" / "tutorial-jax.md"
TIMELINE = ROOT / "docs" / "tutorial-timeline.png"


@dataclass(frozen=True)
class Example:
    spec: str
    """The `-p` pipeline the example runs."""
    text: str
    """The input module."""
    note: str = ""
    """One or two sentences on what to look at."""
    file: str | None = None
    """A repository file the input is read from (instead of `text`)."""
    show_after: bool = True
    """False for passes that only print (the IR is unchanged)."""


EXAMPLES: dict[str, Example] = {
    "spmd-propagate": Example(
        "spmd-propagate{explain=true}",
        """\
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @main(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>},
                %w: tensor<32x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"model"}]>},
                %b: tensor<128xf32>) -> tensor<16x128xf32> {
  %h = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x128xf32>) -> tensor<16x128xf32>
  %bb = hlo.broadcast %b, dims = [1] : (tensor<128xf32>) -> tensor<16x128xf32>
  %s = hlo.add %h, %bb : tensor<16x128xf32>
  func.return %s : tensor<16x128xf32>
}
""",
        "Every op gets `spmd.sharding`; `explain=true` adds `spmd.origin`. The unannotated "
        "result is replicated, so partitioning will all-gather `%s`.",
    ),
    "spmd-partition": Example(
        "spmd-propagate,spmd-partition{stats=true}",
        """\
spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @main(%x: tensor<16x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {"model"}]>},
                %w: tensor<128x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"model"}, {}]>})
    -> (tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>}) {
  %y = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<16x128xf32>, tensor<128x32xf32>) -> tensor<16x32xf32>
  func.return %y : tensor<16x32xf32>
}
""",
        "Partitioning needs every value's sharding, so the example runs `spmd-propagate` "
        'first. The contracting dimension is split by "model": each device computes a '
        'partial sum, and the replicated-over-"model" result makes it an `all_reduce`. '
        "`stats=true` prints the collectives on stderr.",
    ),
    "spmd-pipeline": Example(
        "spmd-pipeline",
        "",
        "Column-parallel then row-parallel dot. The pipeline "
        'partitions, leaves one `all_reduce` over "model", makes it async and schedules it '
        "(here nothing independent is left to overlap it with).",
        file="examples/megatron_mlp.mlir",
    ),
    "collective-stats": Example(
        "collective-stats",
        "",
        "The IR is unchanged (not repeated here); the statistics go to stderr.",
        file="examples/collectives.mlir",
        show_after=False,
    ),
    "collective-combine": Example(
        "collective-combine{overlap-aware=false}",
        """\
spmd.mesh @mesh = <["data"=2, "model"=2]>
func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>, %c: tensor<4xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<4xf32>)
    attributes {spmd.partitioned} {
  %ra = collective.all_reduce add %a on @mesh["data"] : tensor<8xf32>
  %x = hlo.exp %ra : tensor<8xf32>
  %b2 = hlo.exp %b : tensor<8xf32>
  %rb = collective.all_reduce add %b2 on @mesh["data"] : tensor<8xf32>
  %rc = collective.all_reduce add %c on @mesh["data"] : tensor<4xf32>
  func.return %x, %rb, %rc : tensor<8xf32>, tensor<8xf32>, tensor<4xf32>
}
""",
        "Three all_reduces with one key become one variadic all_reduce, placed after its "
        "last operand; the block is re-ordered so users follow it. `overlap-aware=false` is "
        "XLA's policy; the default would also ask the cost model whether the merge delays "
        "a user.",
    ),
    "reduce-scatter-create": Example(
        "reduce-scatter-create",
        """\
spmd.mesh @mesh = <["x"=8]>
func.func @main(%p: tensor<32x128xf32>) -> tensor<4x128xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %ar = collective.all_reduce add %p on @mesh["x"] : tensor<32x128xf32>
  %i = spmd.axis_index @mesh["x"] : tensor<i32>
  %c4 = hlo.constant dense<4> : tensor<i32>
  %off = hlo.mul %i, %c4 : tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %ds = hlo.dynamic_slice %ar [%off, %zero] sizes = [4, 128] : (tensor<32x128xf32>, tensor<i32>, tensor<i32>) -> tensor<4x128xf32>
  func.return %ds : tensor<4x128xf32>
}
""",
        "The slice offset `axis_index * 4` is evaluated on every device and recognised as "
        "block r of dimension 0; the index arithmetic is dead afterwards.",
    ),
    "all-gather-slice-simplify": Example(
        "all-gather-slice-simplify",
        """\
spmd.mesh @mesh = <["x"=8]>
func.func @main(%p: tensor<4x128xf32>) -> tensor<4x128xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %ag = collective.all_gather %p on @mesh["x"], dim = 0 : (tensor<4x128xf32>) -> tensor<32x128xf32>
  %i = spmd.axis_index @mesh["x"] : tensor<i32>
  %c4 = hlo.constant dense<4> : tensor<i32>
  %off = hlo.mul %i, %c4 : tensor<i32>
  %zero = hlo.constant dense<0> : tensor<i32>
  %ds = hlo.dynamic_slice %ag [%off, %zero] sizes = [4, 128] : (tensor<32x128xf32>, tensor<i32>, tensor<i32>) -> tensor<4x128xf32>
  func.return %ds : tensor<4x128xf32>
}
""",
        "This device's own block of the all_gather is its operand: the collective goes.",
    ),
    "all-reduce-reassociate": Example(
        "all-reduce-reassociate",
        """\
spmd.mesh @mesh = <["x"=4]>
func.func @main(%p0: tensor<8xf32>, %p1: tensor<8xf32>, %p2: tensor<8xf32>) -> tensor<8xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %ar0 = collective.all_reduce add %p0 on @mesh["x"] : tensor<8xf32>
  %ar1 = collective.all_reduce add %p1 on @mesh["x"] : tensor<8xf32>
  %ar2 = collective.all_reduce add %p2 on @mesh["x"] : tensor<8xf32>
  %s0 = hlo.add %ar0, %ar1 : tensor<8xf32>
  %s1 = hlo.add %s0, %ar2 : tensor<8xf32>
  func.return %s1 : tensor<8xf32>
}
""",
        "A chain of adds of all_reduces collapses into one all_reduce in one run.",
    ),
    "collective-matmul": Example(
        "collective-matmul{bidirectional=false}",
        """\
spmd.mesh @mesh = <["x"=4]>
func.func @main(%x: tensor<4x32xf32>, %w: tensor<32x8xf32>) -> tensor<16x8xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %g = collective.all_gather %x on @mesh["x"], dim = 0 : (tensor<4x32xf32>) -> tensor<16x32xf32>
  %y = hlo.dot %g, %w, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x8xf32>) -> tensor<16x8xf32>
  func.return %y : tensor<16x8xf32>
}
""",
        "The all_gather feeding the dot becomes a ring of 3 permutes; each step's partial "
        "dot is written into its rows of the result while the next block travels "
        "(`bidirectional=false` keeps the example to one ring).",
    ),
    "micro-batch": Example(
        "micro-batch{force=true chunks=2}",
        """\
spmd.mesh @mesh = <["model"=4]>
func.func @main(%x: tensor<8x32xf32>, %w1: tensor<32x32xf32>, %w2: tensor<32x32xf32>) -> tensor<8x32xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %h = hlo.dot %x, %w1, contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32>
  %a = hlo.tanh %h : tensor<8x32xf32>
  %y = hlo.dot %a, %w2, contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32>
  %r = collective.all_reduce add %y on @mesh["model"] : tensor<8x32xf32>
  func.return %r : tensor<8x32xf32>
}
""",
        "Split along the batch into 2 chunks, each with its own all_reduce, reassembled "
        "for the return. `force=true` skips the cost model's verdict (a program this "
        "small never pays).",
    ),
    "async-split": Example(
        "async-split",
        """\
spmd.mesh @mesh = <["x"=4]>
func.func @main(%a: tensor<8x4xf32>, %b: tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<32x4xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %ar, %ar2 = collective.all_reduce add %a, %b on @mesh["x"] : tensor<8x4xf32>, tensor<4xf32>
  %ag = collective.all_gather %a on @mesh["x"], dim = 0 : (tensor<8x4xf32>) -> tensor<32x4xf32>
  func.return %ar, %ar2, %ag : tensor<8x4xf32>, tensor<4xf32>, tensor<32x4xf32>
}
""",
        "Each sync collective becomes `_start` + `done` right after it; a variadic one "
        "gives one future holding both results.",
    ),
    "schedule": Example(
        "schedule",
        """\
spmd.mesh @dp = <["data"=8]>
func.func @main(%x: tensor<512x1024xbf16>, %w0: tensor<1024x1024xbf16>, %w1: tensor<1024x1024xbf16>) -> (tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) attributes {spmd.partitioned} {
  %g0 = hlo.dot %x, %w0, contracting_dims = [1] x [0] : (tensor<512x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<512x1024xbf16>
  %d0 = hlo.dot %x, %g0, contracting_dims = [0] x [0] : (tensor<512x1024xbf16>, tensor<512x1024xbf16>) -> tensor<1024x1024xbf16>
  %f0 = collective.all_reduce_start add %d0 on @dp["data"] : tensor<1024x1024xbf16> -> !collective.future<tensor<1024x1024xbf16>>
  %r0 = collective.done %f0 : !collective.future<tensor<1024x1024xbf16>> -> tensor<1024x1024xbf16>
  %g1 = hlo.dot %g0, %w1, contracting_dims = [1] x [0] : (tensor<512x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<512x1024xbf16>
  %d1 = hlo.dot %x, %g1, contracting_dims = [0] x [0] : (tensor<512x1024xbf16>, tensor<512x1024xbf16>) -> tensor<1024x1024xbf16>
  func.return %r0, %d1 : tensor<1024x1024xbf16>, tensor<1024x1024xbf16>
}
""",
        "The first gradient's `done` moves after the independent dots, so its all_reduce "
        "runs under them.",
    ),
    "tpu-pipeline": Example(
        "tpu-pipeline",
        """\
spmd.mesh @ring = <["x"=4]>
func.func @main(%a: tensor<32x128xf32> {spmd.sharding = #spmd.sharding<@ring, [{"x"}, {}]>})
    -> (tensor<32x128xf32> {spmd.sharding = #spmd.sharding<@ring, [{}, {}]>}) {
  %e = hlo.exp %a : tensor<32x128xf32>
  %c = spmd.constraint %e <@ring, [{"x"}, {}]> : tensor<32x128xf32>
  func.return %c : tensor<32x128xf32>
}
""",
        "Level G to level T. The constraint keeps `exp` on each device's 8 rows; the "
        "replicated result makes partitioning all-gather them. `lower-to-tpu` turns both "
        "into one kernel: the `exp` as HBM -> VMEM DMA, `tpu.load`, `math.exp`, "
        "`tpu.store`, DMA back; the all_gather as a ring of remote DMAs. The "
        "kernel keeps `spmd.partitioned` and the shardings of its input and output "
        "buffers, so `shardc-run` splits global inputs and assembles outputs as at level S.",
    ),
    "lower-to-tpu": Example(
        "lower-to-tpu{chip=v5e}",
        """\
spmd.mesh @ring = <["x"=4]>
func.func @main(%a: tensor<8x128xf32>) -> tensor<32x128xf32> attributes {spmd.per_device_io} {
  %r = collective.all_gather %a on @ring["x"], dim = 0 : (tensor<8x128xf32>) -> tensor<32x128xf32>
  func.return %r : tensor<32x128xf32>
}
""",
        "A ring all_gather over 4 devices (no wraparound on a 4-chip v5e axis, so one "
        "direction): the level-S result becomes an HBM output argument (`tpu.io = [1, 1, 0]`: "
        "one input, one output, no scratch); the own shard is copied into its slot, then 3 "
        "steps each push one slot to the right neighbour with a remote DMA.",
    ),
}

XDSL_EXAMPLES: dict[str, Example] = {
    "canonicalize": Example(
        "canonicalize",
        """\
spmd.mesh @mesh = <["x"=1, "y"=4]>
func.func @main(%a: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) attributes {spmd.partitioned, spmd.per_device_io} {
  %t = hlo.transpose %a, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %u = hlo.transpose %t, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %c = hlo.constant dense<2.0> : tensor<4xf32>
  %b = hlo.broadcast %c, dims = [1] : (tensor<4xf32>) -> tensor<8x4xf32>
  %r = collective.all_reduce add %u on @mesh["x"] : tensor<8x4xf32>
  %s = hlo.mul %r, %b : tensor<8x4xf32>
  func.return %u, %s : tensor<8x4xf32>, tensor<8x4xf32>
}
""",
        "xDSL's `canonicalize` with shardc's patterns (`passes/canonicalization_patterns/`): a "
        "transpose of a transpose, a broadcast of a splat constant, a collective over a "
        "group of one device.",
    ),
}


# Running ---------------------------------------------------------------------------------


def run_opt(text: str, spec: str) -> tuple[str, str]:
    """`shardc-opt FILE -p SPEC` in process: (stdout, stderr); raises if it fails."""
    from shardc.tools import shardc_opt

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "example.mlir"
        path.write_text(text)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = shardc_opt.main([str(path), "-p", spec])
    if status != 0:
        raise RuntimeError(f"shardc-opt -p '{spec}' failed:\n{err.getvalue()}")
    return out.getvalue(), err.getvalue().replace(str(path), "example.mlir")


# Introspection ---------------------------------------------------------------------------


def field_docs(cls: type) -> dict[str, str]:
    """The docstrings written under a dataclass's fields (attribute docstrings)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        tree = ast.parse(source)
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for a, b in itertools.pairwise(body):
            if (
                isinstance(a, ast.AnnAssign)
                and isinstance(a.target, ast.Name)
                and isinstance(b, ast.Expr)
                and isinstance(b.value, ast.Constant)
                and isinstance(b.value.value, str)
            ):
                docs[a.target.id] = " ".join(b.value.value.split())
    return docs


def options(cls: type) -> list[tuple[str, str, str, str]]:
    """(option, type, default, meaning) of a pass class."""
    if not dataclasses.is_dataclass(cls):
        return []
    docs = field_docs(cls)
    rows = []
    for f in dataclasses.fields(cls):
        if f.name == "name":
            continue
        default = f.default if f.default is not dataclasses.MISSING else ""
        if isinstance(default, bool):
            default = str(default).lower()
        elif default is None:
            default = "(none)"
        ty = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        rows.append((f.name.replace("_", "-"), str(ty), str(default), docs.get(f.name, "")))
    return rows


def module_summary(cls: type) -> str:
    """
    The first paragraph of the pass module's docstring (of the class's, when the module
    is another pass's: `tpu-pipeline` lives beside `spmd-pipeline`), without its
    `name{...}:` lead.
    """
    doc = inspect.getdoc(sys.modules[cls.__module__]) or ""
    name = getattr(cls, "name", "")
    own = inspect.getdoc(cls)
    if cls.__doc__ and doc.startswith("`") and not doc.startswith(f"`{name}"):
        doc = own or doc
    doc = doc or own or ""
    first = " ".join(doc.split("\n\n")[0].split())
    if first.startswith("`") and "`:" in first[:200]:
        first = first.split("`:", 1)[1].strip()
    return first[:1].upper() + first[1:]


def source_path(cls: type) -> str:
    path = Path(inspect.getfile(cls)).resolve()
    if "site-packages" in path.parts:
        return f"xDSL, {cls.__module__}"
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return f"xdsl: {cls.__module__}"


def sub_passes(cls: type) -> list[str] | None:
    """A pipeline's passes (with default options), or None for a single pass."""
    if not callable(getattr(cls, "passes", None)):
        return None
    instance = cls()
    out: list[str] = []

    def flat(p: object) -> None:
        inner = getattr(p, "passes", None)
        if callable(inner):
            for q in inner():
                flat(q)
        else:
            out.append(str(p.pipeline_pass_spec()))  # type: ignore[attr-defined]

    flat(instance)
    return out


# Rendering -------------------------------------------------------------------------------

HEADER = """\
# Passes and pipelines

<!-- Generated by scripts/make_docs.py: do not edit. Regenerate with
     .venv/bin/python scripts/make_docs.py   (tests/e2e/test_docs.py checks it is current) -->

Every pass below is registered in `driver/registry.py` and runs in `shardc-opt FILE -p
'name{option=value ...}'` and `shardc-run FILE -p ...` (option names are the field names
with `-`; `shardc-run`, `shardc.compile` and `spmd-pipeline` give `chip=` to every pass that
has it). The tools verify the module after every pass. The examples are run by
`scripts/make_docs.py` when this page is generated: the "after" IR is what the pass
prints today. xDSL's own passes (`cse`, `dce`, ...) are available too; `canonicalize`
is listed because shardc's ops add patterns to it.

Levels: G = global `hlo` + `spmd`, S = per-device `hlo` + `collective`, T = `tpu` kernels
(see [architecture.md](architecture.md)).

"""


def cell(text: str) -> str:
    """Text for a markdown table cell."""
    return text.replace("|", "\\|")


def fence(lang: str, text: str) -> str:
    return f"```{lang}\n{text.rstrip()}\n```\n"


def render_pass(name: str, cls: type, example: Example | None) -> str:
    parts = [f"## `{name}`\n", f"`{source_path(cls)}`. {module_summary(cls)}\n"]
    subs = sub_passes(cls)
    if subs is not None:
        parts.append("A pipeline; it runs, in order:\n")
        parts.append("".join(f"{i}. `{s}`\n" for i, s in enumerate(subs, 1)))
    rows = options(cls)
    if rows:
        parts.append(
            "| option | type | default | meaning |\n|---|---|---|---|\n"
            + "".join(f"| `{o}` | `{cell(t)}` | `{d}` | {cell(m)} |\n" for o, t, d, m in rows)
        )
    else:
        parts.append("No options.\n")
    if example is None:
        parts.append("No example yet (add one to `EXAMPLES` in `scripts/make_docs.py`).\n")
        return "\n".join(parts)
    text = (ROOT / example.file).read_text() if example.file else example.text
    out, err = run_opt(text, example.spec)
    where = f" (`{example.file}`)" if example.file else ""
    parts.append(f"Example{where}: `shardc-opt example.mlir -p '{example.spec}'`. {example.note}\n")
    parts.append("Before:\n")
    parts.append(fence("mlir", text))
    if example.show_after:
        parts.append("After:\n")
        parts.append(fence("mlir", out))
    if err.strip():
        parts.append("stderr:\n")
        parts.append(fence("text", err))
    return "\n".join(parts)


def render() -> str:
    from shardc.driver import registry
    from xdsl.transforms import get_all_passes

    registered = {name: factory() for name, factory in registry.all_passes().items()}
    xdsl = {name: get_all_passes()[name]() for name in XDSL_EXAMPLES}
    pipelines = [n for n, c in registered.items() if sub_passes(c) is not None]
    singles = [n for n in registered if n not in pipelines]

    lines = [HEADER, "| pass | what |\n|---|---|\n"]
    for n in [*pipelines, *singles, *xdsl]:
        cls = registered.get(n) or xdsl[n]
        summary = module_summary(cls).split(". ")[0].rstrip(".")
        # the table keeps short asides (XLA's names); citations stay in the sections
        summary = re.sub(r" ?\(([^()]{60,}|[^()]*issue [^()]*)\)", "", summary)
        lines.append(f"| [`{n}`](#{n}) | {cell(summary)} |\n")
    body = [render_pass(n, registered[n], EXAMPLES.get(n)) for n in [*pipelines, *singles]]
    body += [render_pass(n, xdsl[n], XDSL_EXAMPLES[n]) for n in xdsl]
    return "".join(lines) + "\n" + "\n".join(body)


# The tutorial's outputs ------------------------------------------------------------------

FENCE = re.compile(r"^```(\w[\w-]*)\s*$")
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\b")
OUTPUT = re.compile(r"<!--\s*docs-output:\s*(stdout|stderr)\s*-->")


class CommandFailed(Exception):
    pass


def sandbox(directory: Path) -> Path:
    """
    A directory where the tutorial's repo-relative paths resolve, outputs stay local. Its
    `.venv` is the environment running this script (`sys.prefix`), wherever that is, so the
    tutorial's `.venv/bin/...` commands run the shardc under test, not whatever a `.venv`
    in the repository holds.
    """
    targets = {".venv": Path(sys.prefix), "tests": ROOT / "tests", "examples": ROOT / "examples"}
    for name, target in targets.items():
        link = directory / name
        if not link.exists():
            link.symlink_to(target)
    return directory


def run_block(command: str, cwd: Path) -> tuple[str, str]:
    env = {**os.environ, "SHARDC_PROGRESS_AFTER": "1000000"}  # no progress lines in outputs
    proc = subprocess.run(
        ["bash", "-e", "-c", command],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        raise CommandFailed(
            f"exit status {proc.returncode}:\n{command}\n{proc.stdout}\n{proc.stderr}"
        )
    return proc.stdout, proc.stderr


def render_tutorial(text: str, cwd: Path) -> str:
    """`text` with its output blocks replaced by what its commands print, run in `cwd`."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    last: tuple[str, str] | None = None
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i].rstrip("\n"))
        if not m:
            out.append(lines[i])
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        body = "".join(lines[i + 1 : j])
        before = lines[i - 1] if i > 0 else ""
        wanted = OUTPUT.search(before)
        if m.group(1) == "sh" and not SKIP.search(before):
            last = run_block(body, cwd)
        if m.group(1) == "text" and wanted:
            if last is None:
                raise CommandFailed(f"line {i + 1}: an output block before any command")
            stream = last[0] if wanted.group(1) == "stdout" else last[1]
            body = stream if stream.endswith("\n") or not stream else stream + "\n"
        out.append(lines[i])
        out.append(body)
        out.extend(lines[j : j + 1])
        i = j + 1
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--check", action="store_true", help="exit 1 if a generated page differs")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            tutorial = render_tutorial(TUTORIAL.read_text(), sandbox(Path(tmp)))
        except CommandFailed as e:
            print(f"{TUTORIAL.relative_to(ROOT)}: a command failed: {e}", file=sys.stderr)
            return 1
        picture = Path(tmp) / "timeline.png"
        if (
            not args.check
            and picture.exists()
            and (not TIMELINE.exists() or TIMELINE.read_bytes() != picture.read_bytes())
        ):  # not checked: pixels depend on the matplotlib version and its fonts
            TIMELINE.write_bytes(picture.read_bytes())
            print(f"wrote {TIMELINE.relative_to(ROOT)}")
    stale = []
    for path, text in ((OUT, render()), (TUTORIAL, tutorial)):
        current = path.read_text() if path.exists() else ""
        if current == text:
            continue
        stale.append(path)
        if not args.check:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if args.check and stale:
        names = ", ".join(str(p.relative_to(ROOT)) for p in stale)
        print(f"stale: {names}: run .venv/bin/python scripts/make_docs.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
