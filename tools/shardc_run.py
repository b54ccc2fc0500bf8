"""
`shardc-run`: runs a program at the level it is in on simulated devices (DESIGN.md
"Tools"; the interpreter is `shardc.interpreter`).

    shardc-run FILE [-p PIPELINE] [--entry NAME] [--inputs IN.npz] [--outputs OUT.npz]
               [--seed N] [--check] [--chip v5e] [--timing-only] [--trace TRACE.json]
               [--report-json REPORT.json] [--plot TIMELINE.png]

Inputs are global arrays `in_0..` (per-device `in_K.D` for `spmd.per_device_io`
programs), read from `--inputs` or drawn from `--seed` using the program's signature
*before* `-p`, so one seed gives the same inputs whatever the pipeline. Outputs are
`out_0..` (or `out_K.D`). Every error is one diagnostic on stderr and exit status 1, and
no output file is written unless the run succeeded.

Every run is also timed on the simulated machine (`--chip`, default v5e; the model is
`shardc.interpreter.timing` over `shardc.hardware.cost`): the summary and the report
give step time, compute, exposed communication, the roofline bound, collectives, bytes
and peak memory; `--trace` writes the per-device timeline as Chrome/Perfetto JSON and
`--plot` draws it as a PNG (`shardc.interpreter.plot`; needs matplotlib, the `plot` extra).
`--timing-only` skips the values altogether (shapes and the timing model only).

Level T: a kernel `lower-to-tpu` made (`-p tpu-pipeline`, or a file `shardc-opt` wrote)
runs on the level-T simulator (`shardc.interpreter.level_t`) with the same arrays as the
level-S function it came from: `tpu.io` says which of its buffers are inputs, outputs
and scratch, and the shardings it keeps split and assemble the global arrays
(`execute_level_t`). Its report has the same keys (`interpreter.level_t_timeline`), the
collectives counted from the level-S program when `-p` made the kernel. A hand-written
kernel takes and gives every buffer per device (`in_K.D`, `out_K.D`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from shardc.diagnostics import DiagnosticError, error_at
from shardc.dialects import make_context
from shardc.hardware.chips import CHIPS, UnknownChipError, get_chip
from shardc.interpreter import io
from shardc.interpreter.devices import Executor, module_mesh
from shardc.interpreter.timing import Timeline, summary_lines
from shardc.interpreter.values import BF16, F16, F32, F64, FLOAT_DTYPES, dtype_name, type_str
from shardc.parsing import parse_and_verify, verify_module
from shardc.passes.collective_stats import CollectiveStats
from shardc.tools import progress
from shardc.tools.cli import run_tool
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException

if TYPE_CHECKING:
    from shardc.interpreter.level_t_timeline import LevelTTimeline

PROG = "shardc-run"

TOLERANCES: dict[Any, float] = {F64: 1e-10, F32: 1e-4, F16: 5e-3, BF16: 2e-2}
"""
--check: relative tolerance per float dtype, against the largest |reference| value. A
partitioned program sums in another order than the global one (partial dots, then the
all_reduce); over contractions of thousands of f32 terms that moves results by a few 1e-5
of their scale, so f32 allows 1e-4.
"""

NOT_YET: dict[str, str] = {}
"""Flags parsed but not implemented yet (exit status 2): option name -> what."""

DEFAULT_CHIP = "v5e"

EPILOG = """\
levels: a function marked spmd.partitioned or spmd.per_device_io runs on the mesh's
devices (level S); any other runs on one device with global semantics (level G). A tpu
kernel (level T, e.g. -p tpu-pipeline) runs on the level-T simulator: a kernel made by
lower-to-tpu takes and gives the arrays of the level-S function it was lowered from; a
hand-written one takes every argument buffer per device (in_K.D, default random) and
gives them all back (out_K.D), with neither -p, --check, --timing-only nor --plot.

--check runs the program as read (before -p) as the reference and compares every output:
exact for integers and i1, and for floats |diff| <= rtol * max|reference| with rtol
f64 1e-10, f32 1e-4, f16 5e-3, bf16 2e-2. Without -p a level-G program is its own
reference (the check passes trivially); a level-S file without -p has no level-G
reference and --check is an error. A failed check exits 1 and writes no --outputs (the
--report-json is still written, with "check": {"passed": false, ...}).

bf16 arrays are stored in .npz files as raw 2-byte values (numpy's '|V2'); --inputs
accepts them that way.

timing: every run is also timed on a simulated machine of --chip (v4, v5e, v5p, v6e;
default v5e). Each device has a compute stream (each hlo op takes its roofline time,
max(FLOPs / peak, HBM bytes / bandwidth)) and a collective engine (one collective at a
time, in issue order); a collective starts when every member of its group has reached
it and its engines are free; a sync collective blocks the compute stream until it ends,
a _start only at its done. The summary and --report-json give (of the slowest device)
step_time_s, compute_time_s, exposed_comm_time_s (step - compute: time the compute
stream waits for communication), roofline_time_s (max over devices of max(total
compute, total communication), a lower bound), collectives (executed, per kind),
comm_bytes (operand bytes of those collectives), and peak_memory_bytes (live tensors,
max over program order and devices). --trace writes the timeline as Chrome/Perfetto
trace-event JSON (ui.perfetto.dev): a process per device, threads "compute" and
"collectives" (written, like --outputs, only when the run and its check succeed).
--plot draws the same timeline as a PNG: per device a compute row (matmuls, other ops,
and hatched where the compute stream waits for communication) and a collectives row
(coloured by kind), the step time and roofline bound as vertical lines, the program,
chip, step time and exposed communication in the title (needs matplotlib: pip install
'shardc[plot]'; without it --plot is an error before anything runs).

--timing-only computes no values and allocates no arrays: inputs are not drawn, ops
only propagate types (small values such as loop bounds and device coordinates are still
computed, for control flow), collectives still meet and are timed. It cannot be used
with --inputs, --outputs or --check (there are no values); a branch or loop bound that
depends on input values is an error.
"""


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 1 (bad input), like shardc-opt
        self.print_usage(sys.stderr)
        raise DiagnosticError(f"{PROG}: error: {message}")


def _seed(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


_seed.__name__ = "non-negative integer"


def build_arg_parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(
        prog=PROG,
        description="Run a shardc program (level G, S or T) on simulated devices.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", metavar="FILE", help="the program (.mlir), or - for stdin")
    p.add_argument(
        "-p",
        "--passes",
        metavar="PIPELINE",
        default=None,
        help="compile with this pass pipeline first (shardc-opt syntax)",
    )
    p.add_argument(
        "--entry",
        metavar="NAME",
        default=None,
        help="function to run (default: @main, else the only public function)",
    )
    p.add_argument(
        "--inputs",
        metavar="IN.npz",
        default=None,
        help="input arrays in_0.. (in_K.D for per-device programs)",
    )
    p.add_argument(
        "--outputs",
        metavar="OUT.npz",
        default=None,
        help="write output arrays out_0.. (out_K.D for per-device programs)",
    )
    p.add_argument(
        "--seed",
        type=_seed,
        default=0,
        help="seed of the random inputs when --inputs is not given (default 0)",
    )
    p.add_argument(
        "--check", action="store_true", help="also run the program before -p and compare outputs"
    )
    p.add_argument(
        "--report-json", metavar="REPORT.json", default=None, help="write the summary as JSON"
    )
    p.add_argument(
        "--chip",
        default=DEFAULT_CHIP,
        help=f"chip preset of the timing model: {', '.join(CHIPS)} (default {DEFAULT_CHIP})",
    )
    p.add_argument(
        "--timing-only",
        action="store_true",
        help="no values: shapes and the timing model only (see below)",
    )
    p.add_argument(
        "--trace",
        metavar="TRACE.json",
        default=None,
        help="write the per-device timeline as Chrome/Perfetto trace JSON",
    )
    p.add_argument(
        "--plot",
        metavar="TIMELINE.png",
        default=None,
        help="draw the per-device timeline as a PNG (needs matplotlib)",
    )
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress lines on stderr (printed only for runs longer than 2 s)",
    )
    return p


# Compiling ------------------------------------------------------------------------------


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    from shardc.passes import registry
    from xdsl.transforms import get_all_passes

    passes = dict(get_all_passes())
    passes.update(registry.all_passes())
    return passes


@dataclass(frozen=True)
class PassChange:
    """What one pass changed: ops and collectives in the module before and after it."""

    name: str
    ops: tuple[int, int]
    collectives: tuple[int, int]

    def as_json(self) -> dict[str, Any]:
        return {
            "pass": self.name,
            "ops_before": self.ops[0],
            "ops_after": self.ops[1],
            "collectives_before": self.collectives[0],
            "collectives_after": self.collectives[1],
        }


def _counts(module: ModuleOp) -> tuple[int, int]:
    """(ops, collectives) in `module`, the module op itself not counted."""
    ops = sum(1 for _ in module.walk()) - 1
    return ops, sum(CollectiveStats.of(module).counts.values())


def _flatten(passes: Sequence[ModulePass]) -> list[ModulePass]:
    """A pipeline pass (one with `passes()`, like spmd-pipeline) as the passes it runs."""
    out: list[ModulePass] = []
    for p in passes:
        inner = getattr(p, "passes", None)
        out.extend(_flatten(inner()) if callable(inner) else [p])
    return out


LEVEL_S: weakref.WeakKeyDictionary[ModuleOp, ModuleOp] = weakref.WeakKeyDictionary()
"""
Modules `compile_module` lowered to level T -> a copy of them as they were before
`lower-to-tpu` (level S): a kernel's run reports the collectives of that program
(`collectives`, `comm_bytes` count what the program asks for, not how the DMAs move it).
"""


def compile_module(
    module: ModuleOp, spec: str, filename: str, prog: str = PROG
) -> list[PassChange]:
    """
    Apply a pass pipeline in place, verifying after every pass (as shardc-opt does), and
    say what each pass (pipelines expanded into theirs) changed. Before `lower-to-tpu`,
    keep a copy of the module in `LEVEL_S`.
    """
    changes: list[PassChange] = []
    before = [_counts(module)]

    def verify_after(
        previous: ModulePass | None, module: ModuleOp, following: ModulePass | None
    ) -> None:
        if following is not None:
            progress.step(
                f"pass {len(changes) + 1 + (previous is not None)}/{n_passes} {following.name}"
            )
        if following is not None and following.name == "lower-to-tpu" and module not in LEVEL_S:
            LEVEL_S[module] = module.clone()
        if previous is None:
            return
        try:
            verify_module(module, filename=filename)
        except DiagnosticError as e:
            raise DiagnosticError(f"after pass '{previous.name}': {e}") from None
        after = _counts(module)
        changes.append(
            PassChange(previous.name, (before[0][0], after[0]), (before[0][1], after[1]))
        )
        before[0] = after

    try:
        parsed = PassPipeline.parse_spec(available_passes(), spec)
    except (ValueError, ArgSpecParseError) as e:
        raise DiagnosticError(f"{prog}: error: invalid pass pipeline '{spec}': {e}") from None
    flat = tuple(_flatten(parsed.passes))
    n_passes = len(flat)
    pipeline = PassPipeline(flat, verify_after)
    try:
        pipeline.apply(make_context(), module)
    except DiagnosticException as e:
        op = getattr(e, "op", None)
        if op is not None:
            raise DiagnosticError(
                str(error_at(op, getattr(e, "message", str(e)), filename))
            ) from None
        raise DiagnosticError(f"{filename}: error: {e}") from None
    return changes


def with_chip(spec: str, chip: str) -> str:
    """Give `chip=` to every pass of `spec` that takes it and does not set it."""
    from xdsl.utils.arg_spec import parse_pipeline

    try:
        specs = list(parse_pipeline(spec))
    except (ValueError, ArgSpecParseError):
        return spec  # compile_module reports the bad pipeline
    passes = available_passes()
    out: list[str] = []
    changed = False
    for s in specs:
        factory = passes.get(s.name)
        if factory is not None and "chip" not in s.parameters:
            cls = factory()
            if dataclasses.is_dataclass(cls) and any(
                f.name == "chip" for f in dataclasses.fields(cls)
            ):
                s = dataclasses.replace(s, parameters={**s.parameters, "chip": (chip,)})
                changed = True
        out.append(str(s))
    return ",".join(out) if changed else spec


# Comparing ------------------------------------------------------------------------------


@dataclass
class Comparison:
    name: str
    max_abs_diff: float
    tolerance: float
    passed: bool
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "max_abs_diff": _json_float(self.max_abs_diff),
            "tolerance": self.tolerance,
            "passed": self.passed,
        }
        if self.note:
            d["note"] = self.note
        return d


def _json_float(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)


def compare(name: str, got: np.ndarray, ref: np.ndarray) -> Comparison:
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return Comparison(
            name,
            math.inf,
            0.0,
            False,
            f"got {type_str(got.shape, got.dtype)}, reference {type_str(ref.shape, ref.dtype)}",
        )
    if got.size == 0:
        return Comparison(name, 0.0, 0.0, True)
    if ref.dtype not in FLOAT_DTYPES:
        diff = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        worst = float(diff.max())
        return Comparison(name, worst, 0.0, worst == 0.0)
    g, r = got.astype(np.float64), ref.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(r)
    with np.errstate(all="ignore"):
        diff = np.where(both_nan, 0.0, np.abs(g - r))
        same_inf = np.isinf(g) & (g == r)
        diff = np.where(same_inf, 0.0, diff)
    diff = np.where(np.isnan(diff), np.inf, diff)
    worst = float(diff.max())
    finite = np.abs(r[np.isfinite(r)])
    scale = float(finite.max()) if finite.size else 0.0
    tol = TOLERANCES[ref.dtype] * max(scale, 1e-30)
    return Comparison(name, worst, tol, worst <= tol)


# The run --------------------------------------------------------------------------------


@dataclass
class Report:
    file: str
    entry: str
    level: str
    devices: int
    mesh: str | None
    pipeline: str | None
    inputs: dict[str, Any]
    outputs: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    check: dict[str, Any] | None = None
    timing_only: bool = False
    timing: dict[str, Any] | None = None
    """`Timeline.report()`: DESIGN.md's timing keys, merged into the top level."""
    passes: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """What each pass of `-p` changed (`PassChange.as_json`)."""

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "file": self.file,
            "entry": self.entry,
            "level": self.level,
            "devices": self.devices,
            "mesh": self.mesh,
            "pipeline": self.pipeline,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "check": self.check,
            "timing_only": self.timing_only,
            "passes": self.passes,
        }
        if self.timing is not None:
            for key, value in self.timing.items():
                out.setdefault(key, value)
        return out


def read_text(path: str) -> tuple[str, str]:
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    except (OSError, UnicodeDecodeError) as e:
        raise DiagnosticError(f"{PROG}: error: cannot read '{path}': {e}") from None


def load_inputs(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except Exception as e:
        raise DiagnosticError(f"{PROG}: error: cannot read inputs '{path}': {e}") from None


def write_atomically(path: str, write: Callable[[Any], None], binary: bool) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb" if binary else "w") as f:
            write(f)
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise DiagnosticError(f"{PROG}: error: cannot write '{path}': {e}") from None


def run(args: argparse.Namespace) -> int:
    for key, what in NOT_YET.items():
        if getattr(args, key):
            print(f"{PROG}: {what} is not implemented yet", file=sys.stderr)
            return 2
    if args.plot is not None:
        from shardc.interpreter.plot import require_matplotlib

        require_matplotlib(f"{PROG}: error: --plot")  # before any work
    try:
        chip = get_chip(args.chip)
    except UnknownChipError as e:
        raise DiagnosticError(f"{PROG}: error: --chip: {e}") from None
    if args.timing_only:
        clash = [
            f
            for f, v in (
                ("--inputs", args.inputs),
                ("--outputs", args.outputs),
                ("--check", args.check),
            )
            if v
        ]
        if clash:
            raise DiagnosticError(
                f"{PROG}: error: --timing-only computes no values, so it cannot be used with "
                f"{' or '.join(clash)}"
            )
    text, filename = read_text(args.file)
    ctx = make_context()
    progress.step(f"parsing {filename}")
    original = parse_and_verify(ctx, text, filename)
    entry = io.find_entry(original, args.entry, filename)
    from shardc.interpreter.level_t import is_level_t

    if is_level_t(entry) and io.kernel_io(entry) is None:  # hand-written: per-device buffers
        return run_level_t_cli(args, chip, original, entry, filename)
    original_sig = io.signature(original, entry, filename)

    if args.timing_only:
        return run_timing_only(args, chip, ctx, text, filename, original, original_sig)

    if args.inputs is not None:
        inputs = load_inputs(args.inputs)
        input_source = args.inputs
        inputs_info: dict[str, Any] = {"source": args.inputs}
    else:
        inputs = io.random_inputs(original_sig, args.seed)
        input_source = f"random inputs (seed {args.seed})"
        inputs_info = {"source": "random", "seed": args.seed}
    # validate against the program as written (bad inputs are reported before compiling)
    inputs = io.check_inputs(original_sig, inputs, input_source)

    if args.check and args.passes is None and original_sig.level != "G":
        raise DiagnosticError(
            f"{filename}: error: --check needs a level-G reference, but @{entry.sym_name.data} "
            f"is already a per-device (level {original_sig.level}) program and no -p pipeline was given: "
            "there is nothing to compare it with (run the level-G source with -p instead)"
        )

    changes: list[PassChange] = []
    if args.passes is not None:
        module = parse_and_verify(ctx, text, filename)
        changes = compile_module(module, with_chip(args.passes, args.chip), filename)
        function = io.find_entry(module, entry.sym_name.data, filename)
        sig = io.signature(module, function, filename)
        if sig.input_specs() != original_sig.input_specs():
            raise DiagnosticError(
                f"{filename}: error: the pipeline changed the inputs of "
                f"@{entry.sym_name.data}: before {_specs_str(original_sig.input_specs())}, "
                f"after {_specs_str(sig.input_specs())}"
            )
    else:
        module, sig = original, original_sig

    outputs, timeline = execute(module, sig, filename, chip, inputs, input_source)
    report = make_report(
        filename,
        module,
        sig,
        args.passes,
        inputs_info,
        [(n, v.shape, v.dtype) for n, v in outputs.items()],
        timeline,
        passes=changes,
    )
    passed = True
    comparisons: list[Comparison] = []
    if args.check:
        if args.passes is None:
            reference = outputs
            ref_what = "the program itself (no -p given)"
        else:
            progress.step(f"checking: running the level-{original_sig.level} program before -p")
            reference = io.run(Executor(original, filename), original_sig, inputs, input_source)
            ref_what = f"the level-{original_sig.level} program before -p"
        names = list(reference)
        if list(outputs) != names:
            raise DiagnosticError(
                f"{filename}: error: --check: the compiled program has outputs "
                f"{list(outputs)} but the reference has {names}"
            )
        comparisons = [compare(n, outputs[n], reference[n]) for n in names]
        passed = all(c.passed for c in comparisons)
        report.check = {
            "reference": ref_what,
            "passed": passed,
            "outputs": [c.as_json() for c in comparisons],
        }

    print_summary(report, {n: type_str(v.shape, v.dtype) for n, v in outputs.items()}, comparisons)
    write_report(args, report)
    if not passed:
        print(f"{PROG}: check failed", file=sys.stderr)
        return 1
    write_trace(args, timeline)
    write_plot(args, timeline, report)
    if args.outputs is not None:
        write_atomically(args.outputs, lambda f: np.savez(f, **outputs), binary=True)
        print(f"wrote {args.outputs}")
    return 0


def run_level_t_cli(
    args: argparse.Namespace,
    chip: Any,
    module: ModuleOp,
    entry: Any,
    filename: str,
) -> int:
    """
    A level-T kernel (`interpreter.level_t`) runs on the level-T simulator. Its arguments
    are per-device HBM buffers: `--inputs` gives `in_K.D` (argument K on device D; a
    missing one starts uninitialized, NaN), without it every argument is random from
    `--seed`; `--outputs` gets every argument's final contents as `out_K.D`.
    """
    from shardc.interpreter.level_t import Simulator
    from shardc.interpreter.values import dtype_of, random_array

    unsupported = [
        f
        for f, v in (
            ("-p", args.passes),
            ("--check", args.check),
            ("--timing-only", args.timing_only),
            ("--plot", args.plot),
        )
        if v
    ]
    if unsupported:
        raise DiagnosticError(
            f"{filename}: error: {', '.join(unsupported)} not supported for a level-T kernel "
            f"(@{entry.sym_name.data} uses tpu ops)"
        )
    sim = Simulator(module, chip, filename, trace=args.trace is not None)
    arg_types = entry.function_type.inputs.data
    given = load_inputs(args.inputs) if args.inputs is not None else None
    rng = np.random.default_rng(args.seed)
    inputs: list[list[Any]] = []
    for d in range(sim.n):
        row: list[Any] = []
        for k, ty in enumerate(arg_types):
            if given is not None:
                row.append(given.get(f"in_{k}.{d}"))
            else:
                row.append(random_array(rng, tuple(ty.get_shape()), dtype_of(ty.element_type)))
        inputs.append(row)
    progress.step(f"running level T on {sim.n} devices")
    outputs, report = sim.run(entry, inputs)
    print(
        f"level T on {report['devices']} x {chip.name}: step time {report['step_time_s']:.6g} s, "
        f"{report['dmas']} DMAs, {report['ici_bytes']} ICI bytes, "
        f"{report['local_dma_bytes']} local DMA bytes, peak VMEM {report['peak_vmem_bytes']} bytes"
    )
    if args.report_json is not None:
        write_atomically(args.report_json, lambda f: json.dump(report, f, indent=1), binary=False)
    if args.trace is not None:
        trace = sim.trace()
        write_atomically(args.trace, lambda f: json.dump(trace, f), binary=False)
    if args.outputs is not None:
        arrays = {f"out_{k}.{d}": a for d, row in enumerate(outputs) for k, a in enumerate(row)}
        write_atomically(args.outputs, lambda f: np.savez(f, **arrays), binary=True)
        print(f"wrote {args.outputs}")
    return 0


def run_timing_only(
    args: argparse.Namespace,
    chip: Any,
    ctx: Any,
    text: str,
    filename: str,
    original: ModuleOp,
    original_sig: io.Signature,
) -> int:
    """--timing-only: no inputs drawn, no values computed; shapes and timing only."""
    changes: list[PassChange] = []
    if args.passes is not None:
        # the original is not needed any more: compile it in place (no second parse)
        module = original
        changes = compile_module(module, with_chip(args.passes, args.chip), filename)
        function = io.find_entry(module, original_sig.name, filename)
        sig = io.signature(module, function, filename)
    else:
        module, sig = original, original_sig
    _, timeline = execute(module, sig, filename, chip, None, "", timing_only=True)
    specs = sig.output_specs()
    report = make_report(
        filename,
        module,
        sig,
        args.passes,
        {"source": "none (--timing-only)"},
        specs,
        timeline,
        timing_only=True,
        passes=changes,
    )
    print_summary(report, {n: type_str(shape, dtype) for n, shape, dtype in specs}, [])
    write_report(args, report)
    write_trace(args, timeline)
    write_plot(args, timeline, report)
    return 0


def execute(
    module: ModuleOp,
    sig: io.Signature,
    filename: str,
    chip: Any,
    inputs: Any,
    input_source: str,
    *,
    timing_only: bool = False,
) -> tuple[dict[str, np.ndarray], Timeline]:
    """
    Run `sig`'s function of the (compiled) module on `chip`'s simulated devices: the
    output arrays by name (none with `timing_only`: no values, `inputs` unused) and the
    timeline. Shared by `shardc-run` and the Python API (`shardc.run`).
    """
    progress.step(
        f"running level {sig.level} on {sig.devices} device{'s' if sig.devices != 1 else ''}"
        + (" (timing only)" if timing_only else "")
    )
    if sig.level == "T":
        return execute_level_t(
            module, sig, filename, chip, inputs, input_source, timing_only=timing_only
        )
    executor = Executor(module, filename, chip=chip, abstract=timing_only)
    if timing_only:
        n_args = len(sig.function.body.block.args)
        executor.run(sig.function, [[None] * n_args for _ in range(sig.devices)])
        outputs: dict[str, np.ndarray] = {}
    else:
        outputs = io.run(executor, sig, inputs, input_source)
    timeline = executor.timeline
    assert timeline is not None
    return outputs, timeline


def execute_level_t(
    module: ModuleOp,
    sig: io.Signature,
    filename: str,
    chip: Any,
    inputs: Any,
    input_source: str,
    *,
    timing_only: bool = False,
) -> tuple[dict[str, np.ndarray], LevelTTimeline]:
    """
    `execute` for a kernel `lower-to-tpu` made: the inputs split per device as for its
    level-S function, None for its output and scratch buffers (`tpu.io`), the level-T
    simulator (`values=False` for `timing_only`), the outputs assembled from its output
    buffers. The report's collectives are those of the level-S program it was lowered
    from, if this process compiled it (`LEVEL_S`).
    """
    from shardc.interpreter.level_t import Simulator
    from shardc.interpreter.level_t_timeline import LevelTTimeline

    counts = io.kernel_io(sig.function)
    assert counts is not None
    k, m, s = counts
    if timing_only:
        rows: list[list[Any]] = [[None] * k for _ in range(sig.devices)]
    else:
        rows = io.split_inputs(sig, io.check_inputs(sig, inputs, input_source))
    sim = Simulator(module, chip, filename, trace=True, values=not timing_only)
    buffers, _ = sim.run(sig.function, [[*row, *([None] * (m + s))] for row in rows])
    outputs = (
        {}
        if timing_only
        else io.assemble_outputs(sig, [tuple(b[k : k + m]) for b in buffers], filename)
    )
    level_s = LEVEL_S.get(module)
    report = None
    if level_s is not None:
        function = io.find_entry(level_s, sig.name, filename)
        level_s_sig = io.signature(level_s, function, filename)
        _, timeline = execute(level_s, level_s_sig, filename, chip, None, "", timing_only=True)
        report = timeline.report()
    return outputs, LevelTTimeline(sim, report)


def make_report(
    filename: str,
    module: ModuleOp,
    sig: io.Signature,
    pipeline: str | None,
    inputs_info: dict[str, Any],
    output_specs: Sequence[tuple[str, Sequence[int], Any]],
    timeline: Timeline,
    *,
    timing_only: bool = False,
    passes: Sequence[PassChange] = (),
) -> Report:
    """The run's report (DESIGN.md's keys and the run's description)."""
    mesh = module_mesh(module)
    return Report(
        file=filename,
        entry=sig.name,
        level=sig.level,
        devices=sig.devices,
        mesh=_mesh_str(*mesh) if mesh and sig.level != "G" else None,
        pipeline=pipeline,
        inputs=inputs_info,
        outputs=[
            {"name": n, "shape": list(shape), "dtype": dtype_name(dtype)}
            for n, shape, dtype in output_specs
        ],
        timing_only=timing_only,
        timing=timeline.report(),
        passes=[p.as_json() for p in passes],
    )


def program_title(report: Report) -> str:
    """`file @entry -p PIPELINE`: how a picture of the run names the program."""
    name = os.path.basename(report.file) if report.file not in ("<stdin>",) else report.file
    title = f"{name} @{report.entry}"
    return title + (f"  -p {report.pipeline}" if report.pipeline else "")


def write_report(args: argparse.Namespace, report: Report) -> None:
    if args.report_json is not None:
        write_atomically(
            args.report_json,
            lambda f: f.write(json.dumps(report.as_json(), indent=2) + "\n"),
            binary=False,
        )


def write_trace(args: argparse.Namespace, timeline: Timeline) -> None:
    if args.trace is not None:
        write_atomically(args.trace, lambda f: f.write(timeline.trace_json()), binary=False)
        print(f"wrote trace {args.trace} (open it in ui.perfetto.dev)")


def write_plot(args: argparse.Namespace, timeline: Timeline, report: Report) -> None:
    if args.plot is not None:
        from shardc.interpreter.plot import plot_timeline

        progress.step(f"drawing {args.plot}")
        plot_timeline(
            timeline, args.plot, program=program_title(report), what=f"{PROG}: error: --plot"
        )
        print(f"wrote timeline {args.plot}")


def _mesh_str(name: str, mesh: Any) -> str:
    axes = ", ".join(f'"{n}"={s}' for n, s in zip(mesh.names, mesh.shape, strict=False))
    return f"@{name} <[{axes}]>"


def _specs_str(specs: Sequence[tuple[str, tuple[int, ...], Any]]) -> str:
    return "(" + ", ".join(f"{n}: {type_str(s, d)}" for n, s, d in specs) + ")"


def print_summary(report: Report, outputs: dict[str, str], comparisons: list[Comparison]) -> None:
    devices = f"{report.devices} device" + ("s" if report.devices != 1 else "")
    mesh = f" on mesh {report.mesh}" if report.mesh else ""
    lines = [f"{report.file} @{report.entry}: level {report.level}, {devices}{mesh}"]
    if report.pipeline:
        lines.append(f"pipeline: {report.pipeline}")
        width = max((len(p["pass"]) for p in report.passes), default=0)
        for p in report.passes:
            ops = f"ops {p['ops_before']} -> {p['ops_after']}"
            coll = f"collectives {p['collectives_before']} -> {p['collectives_after']}"
            same = (
                p["ops_before"] == p["ops_after"]
                and p["collectives_before"] == p["collectives_after"]
            )
            lines.append(
                f"  {p['pass']:<{width}}  {ops:<18} {coll}"
                + ("  (no change in counts)" if same else "")
            )
    src = report.inputs
    lines.append(
        "inputs: "
        + (f"random (seed {src['seed']})" if src["source"] == "random" else src["source"])
    )
    if report.timing_only:
        lines.append("outputs (not computed: --timing-only):")
    width = max((len(n) for n in outputs), default=0)
    for name, ty in outputs.items():
        lines.append(f"  {name:<{width}}  {ty}")
    if report.check is not None:
        verdict = "pass" if report.check["passed"] else "FAIL"
        lines.append(f"check against {report.check['reference']}: {verdict}")
        for c in comparisons:
            tol = "exact" if c.tolerance == 0.0 else f"tolerance {c.tolerance:.3g}"
            status = "ok" if c.passed else "FAIL"
            note = f"  ({c.note})" if c.note else ""
            lines.append(
                f"  {c.name:<{width}}  max |diff| {c.max_abs_diff:.3g} ({tol}) {status}{note}"
            )
    if report.timing is not None:
        lines.extend(summary_lines(report.timing))
        if report.level == "T":
            from shardc.interpreter import level_t_timeline

            lines.extend(level_t_timeline.summary_lines(report.timing))
    print("\n".join(lines))


def main(argv: Sequence[str] | None = None) -> int:
    def body() -> int:
        args = build_arg_parser().parse_args(argv)
        with progress.reporting(PROG, enabled=not args.quiet):
            return run(args)

    return run_tool(PROG, body)


__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
