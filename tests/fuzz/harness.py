"""
Mutation fuzzing of shardc's tools on its own inputs (issue 16 item 3).

The corpus is what the project already has: the example programs, the lit tests' inputs,
the JAX corpus's StableHLO and XLA HLO text, XLA's partitioner tests, and `tpu` kernels
(lowered examples and the tpu dialect's lit inputs). A mutation changes a program the way
a hand edit or a bad generator does: a token deleted, duplicated, swapped or replaced;
a number set to 0, -1, 2^31-1, 2^64+1 or 10^30; a type, a sharding axis or a mesh size
changed. Each mutated input is given to one tool run in process, under a wall-clock limit,
and classified:

* `accepted`: exit 0;
* `rejected`: exit 1 with an `error:` message and no traceback (a clean diagnostic);
* a defect: a traceback or `internal error`, a hang (over the limit), an exit status
  other than 0 and 1, or exit 1 without a message.

`Outcome.defect` is None for the first two and names the class otherwise.
"""

from __future__ import annotations

import contextlib
import io
import random
import re
import signal
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_.$-]*|-?\d+(?:\.\d+)?|\S')
NUMBERS = (
    "0",
    "-1",
    "1",
    "3",
    "2147483647",
    "18446744073709551617",
    "1000000000000000000000000000000",
)
TYPES = ("f32", "bf16", "f16", "i32", "i8", "i1", "f64", "ui8", "complex<f32>", "f8E4M3FN")
AXES = ('"x"', '"y"', '"data"', '"model"', '""', '"a b"', '"?"')
INSERTS = ("{", "}", "(", ")", "[", "]", "<", ">", ",", ":", "=", "%0", "@m", "->", "loc(", "#spmd")

TOOLS: dict[str, tuple[str, tuple[str, ...]]] = {
    "opt": ("mlir", ()),
    "opt spmd-pipeline": ("mlir", ("-p", "spmd-pipeline")),
    "opt tpu-pipeline": ("mlir", ("-p", "tpu-pipeline")),
    "run": ("mlir", ("--quiet",)),
    "run spmd-pipeline --check": ("mlir", ("-p", "spmd-pipeline", "--check", "--quiet")),
    "run tpu-pipeline --timing-only": ("mlir", ("-p", "tpu-pipeline", "--timing-only", "--quiet")),
    "run kernel": ("kernel", ("--quiet",)),
    "import": ("foreign", ()),
}
"""Tool name -> (which corpus it reads, its flags)."""


@dataclass(frozen=True)
class Outcome:
    tool: str
    code: int | str
    """Exit status, or "hang"."""
    message: str
    """The last line of stderr (the diagnostic or the crash)."""
    defect: str | None

    @property
    def kind(self) -> str:
        if self.defect is not None:
            return "defect"
        return "accepted" if self.code == 0 else "rejected"


@cache
def corpus(kind: str) -> tuple[str, ...]:
    """The seed inputs of one kind: "mlir" (level G/S programs), "kernel" (level T),
    "foreign" (StableHLO and HLO text)."""
    if kind == "mlir":
        files = sorted((REPO / "examples").glob("*.mlir"))
        files += sorted((REPO / "tests" / "filecheck").rglob("*.mlir"))
        texts = [f.read_text() for f in files if "tpu" not in f.parts and "Output" not in f.parts]
        return tuple(t for t in texts if len(t) < 40000)
    if kind == "kernel":
        return tuple(_kernels())
    files = sorted((REPO / "tests" / "frontends" / "corpus").glob("*.hlo.txt"))
    files += sorted((REPO / "tests" / "frontends" / "corpus").glob("*.stablehlo.mlir"))
    files += sorted((REPO / "tests" / "frontends" / "xla_partitioner").glob("*.hlo"))
    return tuple(f.read_text() for f in files)


def _kernels() -> Iterator[str]:
    """Lowered examples (small ones) and the tpu dialect's lit inputs."""
    from shardc.dialects import make_context
    from shardc.driver.compiling import compile_module
    from shardc.parsing import parse_and_verify

    for name in ("megatron_mlp", "collectives", "softmax", "reshard"):
        text = (REPO / "examples" / f"{name}.mlir").read_text()
        module = parse_and_verify(make_context(), text, name)
        compile_module(module, "tpu-pipeline", name)
        yield str(module)
    yield (REPO / "tests" / "filecheck" / "dialects" / "tpu" / "ring_all_gather.mlir").read_text()


def mutate(text: str, rng: random.Random) -> str:
    """One mutation of `text` (see the module docstring)."""
    tokens = list(TOKEN.finditer(text))
    if not tokens:
        return text
    m = rng.choice(tokens)
    action = rng.choice(
        ("delete", "duplicate", "swap", "replace", "number", "type", "axis", "insert")
    )
    if action == "number":
        numbers = [t for t in tokens if t.group().lstrip("-").isdigit()] or [m]
        m = rng.choice(numbers)
        return text[: m.start()] + rng.choice(NUMBERS) + text[m.end() :]
    if action == "type":
        found = [t for t in tokens if t.group() in TYPES or re.fullmatch(r"\d+x\w+", t.group())]
        m = rng.choice(found or [m])
        return text[: m.start()] + rng.choice(TYPES) + text[m.end() :]
    if action == "axis":
        found = [t for t in tokens if t.group().startswith('"')] or [m]
        m = rng.choice(found)
        return text[: m.start()] + rng.choice(AXES) + text[m.end() :]
    if action == "insert":
        return text[: m.start()] + rng.choice(INSERTS) + text[m.start() :]
    if action == "delete":
        return text[: m.start()] + text[m.end() :]
    if action == "duplicate":
        return text[: m.end()] + " " + m.group() + text[m.end() :]
    other = rng.choice(tokens)
    if action == "replace":
        return text[: m.start()] + other.group() + text[m.end() :]
    a, b = sorted((m, other), key=lambda t: t.start())
    if a.start() == b.start():
        return text
    return text[: a.start()] + b.group() + text[a.end() : b.start()] + a.group() + text[b.end() :]


def mutated(kind: str, rng: random.Random) -> tuple[str, str]:
    """(a mutated input of `kind`, its file suffix)."""
    seeds = corpus(kind)
    text = rng.choice(seeds)
    for _ in range(rng.randint(1, 3)):
        text = mutate(text, rng)
    suffix = ".mlir"
    if kind == "foreign" and text.lstrip().startswith("HloModule"):
        suffix = ".hlo"
    return text, suffix


class Hang(BaseException):
    """Raised by the alarm; a BaseException so that no `except Exception` swallows it."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise `Hang` in the block after `seconds` of wall time."""

    def on_alarm(signum: int, frame: object) -> None:
        raise Hang(f"no answer after {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _main(tool: str) -> Callable[[Sequence[str]], int]:
    from shardc.tools import shardc_import, shardc_opt, shardc_run

    if tool.startswith("opt"):
        return shardc_opt.main
    if tool.startswith("run"):
        return shardc_run.main
    return shardc_import.main


def run_tool(tool: str, text: str, suffix: str = ".mlir", limit_s: float = 30.0) -> Outcome:
    """Run `tool` on `text` in process and classify what happened."""
    flags = TOOLS[tool][1]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"input{suffix}"
        path.write_text(text)
        args = [str(path), *flags]
        if not tool.startswith("run"):
            args += ["-o", str(Path(tmp) / "out.mlir")]
        out, err = io.StringIO(), io.StringIO()
        try:
            with (
                time_limit(limit_s),
                contextlib.redirect_stdout(out),
                contextlib.redirect_stderr(err),
            ):
                code: int | str = _main(tool)(args)
        except Hang:
            code = "hang"
        except BaseException as e:  # noqa: BLE001 - an escaping exception is the defect
            code = "exception"
            err.write(f"{type(e).__name__}: {e}")
    stderr = err.getvalue()
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    return Outcome(tool, code, last, _defect(code, stderr))


def _defect(code: int | str, stderr: str) -> str | None:
    if code == "hang":
        return "hang"
    if code == "exception":
        return "exception escaped"
    if "Traceback (most recent call last)" in stderr:
        return "traceback"
    if "internal error" in stderr:
        return "internal error"
    if code not in (0, 1):
        return f"exit status {code}"
    if code == 1 and "error" not in stderr:
        return "exit 1 without a message"
    return None
