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
(`driver.execution`). Its report has the same keys (`interpreter.level_t_timeline`), the
collectives counted from the level-S program `lower-to-tpu` recorded in the kernel's
module (`shardc.level_s`). A hand-written kernel takes and gives every buffer per device
(`in_K.D`, `out_K.D`).

This module only parses flags and prints: compiling, running, checking and the report
are the library driver's (`shardc.driver`), which the Python API calls too.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from shardc.diagnostics import DiagnosticError
from shardc.dialects import make_context
from shardc.driver import progress
from shardc.driver.checking import Comparison, check_outputs, reference_outputs
from shardc.driver.compiling import PassChange, compile_module, with_chip
from shardc.driver.execution import execute
from shardc.driver.files import StagedWrites, load_inputs, read_text
from shardc.driver.reporting import Report, make_report, program_title, specs_str, summary_text
from shardc.hardware.chips import CHIPS, UnknownChipError, get_chip
from shardc.interpreter import io
from shardc.interpreter.host_memory import check_fits, check_kernel_fits
from shardc.interpreter.mpi import running_under_mpi
from shardc.interpreter.timing import Timeline
from shardc.interpreter.values import type_str
from shardc.parsing import parse_and_verify
from shardc.tools.cli import run_tool
from xdsl.dialects.builtin import ModuleOp

PROG = "shardc-run"

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
    _add_timing_arguments(p)
    return p


def _add_timing_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of the timing model and what it writes: report, trace, plot."""
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


# The run -------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Parse, compile (-p), run, check (--check), print and write what was asked for."""
    chip = _check_flags(args)
    text, filename = read_text(args.file)
    progress.step(f"parsing {filename}")
    original = parse_and_verify(make_context(), text, filename)
    entry = io.find_entry(original, args.entry, filename)
    from shardc.interpreter.level_t import is_level_t

    if is_level_t(entry) and io.kernel_io(entry) is None:  # hand-written: per-device buffers
        return run_level_t_cli(args, chip, original, entry, filename)
    original_sig = io.signature(original, entry, filename)
    if args.timing_only:
        return run_timing_only(args, chip, filename, original, original_sig)
    return run_with_values(args, chip, text, filename, original, original_sig)


def _check_flags(args: argparse.Namespace) -> Any:
    """The chip; flags that cannot work are errors before any work is done."""
    if args.plot is not None:
        from shardc.interpreter.plot import require_matplotlib

        require_matplotlib(f"{PROG}: error: --plot")
    try:
        chip = get_chip(args.chip)
    except UnknownChipError as e:
        raise DiagnosticError(f"{PROG}: error: --chip: {e}") from None
    if args.timing_only:
        flags = (("--inputs", args.inputs), ("--outputs", args.outputs), ("--check", args.check))
        clash = [f for f, v in flags if v]
        if clash:
            raise DiagnosticError(
                f"{PROG}: error: --timing-only computes no values, so it cannot be used with "
                f"{' or '.join(clash)}"
            )
    return chip


def _inputs(args: argparse.Namespace, sig: io.Signature) -> tuple[Any, str, dict[str, Any]]:
    """The input arrays (checked against the program as written), their source, and how
    the report describes them."""
    if running_under_mpi():
        return _mpi_inputs(args, sig)
    if args.inputs is not None:
        inputs: Any = load_inputs(args.inputs)
        source = args.inputs
        info: dict[str, Any] = {"source": args.inputs}
    else:
        inputs = io.random_inputs(sig, args.seed)
        source = f"random inputs (seed {args.seed})"
        info = {"source": "random", "seed": args.seed}
    # validate against the program as written (bad inputs are reported before compiling)
    return io.check_inputs(sig, inputs, source), source, info


def _mpi_inputs(args: argparse.Namespace, sig: io.Signature) -> tuple[Any, str, dict[str, Any]]:
    """`_inputs` under mpirun: no rank holds a global input (`interpreter.shard_inputs`):
    the file's arrays are mapped, not read; random ones are drawn by each rank."""
    from shardc.interpreter.shard_inputs import SeededInputs, load_lazily

    if args.inputs is None:
        seeded = SeededInputs(args.seed)
        return seeded, f"random inputs (seed {args.seed})", {"source": "random", "seed": args.seed}
    try:
        arrays = load_lazily(args.inputs)
    except Exception as e:
        raise DiagnosticError(f"{PROG}: error: cannot read inputs '{args.inputs}': {e}") from None
    return io.check_inputs(sig, arrays, args.inputs), args.inputs, {"source": args.inputs}


def _compiled(
    args: argparse.Namespace, text: str, filename: str, sig: io.Signature
) -> tuple[ModuleOp, io.Signature, list[PassChange]]:
    """A fresh parse of the program compiled with -p (the original stays the reference)."""
    module = parse_and_verify(make_context(), text, filename)
    changes = compile_module(module, with_chip(args.passes, args.chip), filename)
    function = io.find_entry(module, sig.name, filename)
    compiled = io.signature(module, function, filename)
    if compiled.input_specs() != sig.input_specs():
        raise DiagnosticError(
            f"{filename}: error: the pipeline changed the inputs of "
            f"@{sig.name}: before {specs_str(sig.input_specs())}, "
            f"after {specs_str(compiled.input_specs())}"
        )
    return module, compiled, changes


def run_with_values(
    args: argparse.Namespace,
    chip: Any,
    text: str,
    filename: str,
    original: ModuleOp,
    original_sig: io.Signature,
) -> int:
    """A run that computes values: inputs, -p, the run, --check, then the outputs."""
    check_fits(original_sig, filename)
    inputs, input_source, inputs_info = _inputs(args, original_sig)
    if args.check and args.passes is None and original_sig.level != "G":
        raise DiagnosticError(
            f"{filename}: error: --check needs a level-G reference, but @{original_sig.name} "
            f"is already a per-device (level {original_sig.level}) program and no -p pipeline was given: "
            "there is nothing to compare it with (run the level-G source with -p instead)"
        )
    module, sig, changes = original, original_sig, []
    if args.passes is not None:
        module, sig, changes = _compiled(args, text, filename, original_sig)
        check_fits(sig, filename)
    outputs, timeline = execute(module, sig, filename, chip, inputs, input_source)
    distributed = _mpi_check(args, filename, original, original_sig, sig, inputs, module)
    if timeline is None:
        return 0  # under mpirun, a rank other than 0: rank 0 reports and writes
    specs = [(n, v.shape, v.dtype) for n, v in outputs.items()]
    report = make_report(
        filename, module, sig, args.passes, inputs_info, specs, timeline, passes=changes
    )
    comparisons: list[Comparison] = []
    if distributed is not None:
        comparisons = _distributed_verdict(report, *distributed)
    elif args.check:
        if not isinstance(inputs, dict):  # under mpirun: rank 0's reference
            inputs = io.random_inputs(original_sig, inputs.seed)
        reference = reference_outputs(
            args.passes is not None, filename, original, original_sig, inputs, input_source, module
        )
        comparisons = check_outputs(report, filename, outputs, reference)
    types = {n: type_str(v.shape, v.dtype) for n, v in outputs.items()}
    print(summary_text(report, types, comparisons))
    with StagedWrites() as files:
        stage_report(files, args, report)
        if report.check is not None and not report.check["passed"]:
            print(f"{PROG}: check failed", file=sys.stderr)
            return 1  # the report says why; nothing else is written
        stage_trace(files, args, timeline)
        stage_plot(files, args, timeline, report)
        if args.outputs is not None:
            files.write(
                args.outputs,
                lambda f: np.savez(f, **{n: io.savable(a) for n, a in outputs.items()}),
                binary=True,
                announce=f"wrote {args.outputs}",
            )
    return 0


def _mpi_check(
    args: argparse.Namespace,
    filename: str,
    original: ModuleOp,
    original_sig: io.Signature,
    sig: io.Signature,
    inputs: Any,
    module: ModuleOp,
) -> tuple[Any, list[Comparison]] | None:
    """--check under mpirun, computed distributed (`driver.mpi_checking`): every rank its
    part; rank 0 gets the reference and the comparisons. None where it does not apply
    (not under mpirun, or outputs that are partial sums: rank 0 checks them whole)."""
    if not (args.check and args.passes is not None and running_under_mpi()):
        return None
    from shardc.driver import mpi_checking
    from shardc.interpreter import mpi

    if not mpi_checking.supported(sig, original_sig):
        return None
    world = mpi.world()
    return mpi_checking.distributed_check(
        world, filename, original, original_sig, sig, inputs, module
    )


def _distributed_verdict(
    report: Any, reference: Any, comparisons: list[Comparison]
) -> list[Comparison]:
    """Rank 0: the verdict of a distributed --check into the report, as `check_outputs`."""
    report.check = {
        "reference": reference.what,
        "passed": all(c.passed for c in comparisons),
        "outputs": [c.as_json() for c in comparisons],
    }
    return comparisons


def run_timing_only(
    args: argparse.Namespace,
    chip: Any,
    filename: str,
    original: ModuleOp,
    original_sig: io.Signature,
) -> int:
    """--timing-only: no inputs drawn, no values computed; shapes and timing only."""
    module, sig, changes = original, original_sig, []
    if args.passes is not None:
        # the original is not needed any more: compile it in place (no second parse)
        changes = compile_module(module, with_chip(args.passes, args.chip), filename)
        function = io.find_entry(module, original_sig.name, filename)
        sig = io.signature(module, function, filename)
    _, timeline = execute(module, sig, filename, chip, None, "", timing_only=True)
    if timeline is None:
        return 0  # under mpirun, a rank other than 0: rank 0 reports and writes
    specs = sig.output_specs()
    inputs_info = {"source": "none (--timing-only)"}
    report = make_report(
        filename,
        module,
        sig,
        args.passes,
        inputs_info,
        specs,
        timeline,
        timing_only=True,
        passes=changes,
    )
    print(summary_text(report, {n: type_str(shape, dtype) for n, shape, dtype in specs}, []))
    with StagedWrites() as files:
        stage_report(files, args, report)
        stage_trace(files, args, timeline)
        stage_plot(files, args, timeline, report)
    return 0


def run_level_t_cli(
    args: argparse.Namespace, chip: Any, module: ModuleOp, entry: Any, filename: str
) -> int:
    """
    A hand-written level-T kernel runs on the level-T simulator. Its arguments are
    per-device HBM buffers: `--inputs` gives `in_K.D` (argument K on device D; a missing
    one starts uninitialized, NaN), without it every argument is random from `--seed`;
    `--outputs` gets every argument's final contents as `out_K.D`.
    """
    from shardc.interpreter.level_t import Simulator

    flags = (
        ("-p", args.passes),
        ("--check", args.check),
        ("--timing-only", args.timing_only),
        ("--plot", args.plot),
    )
    unsupported = [f for f, v in flags if v]
    if unsupported:
        raise DiagnosticError(
            f"{filename}: error: {', '.join(unsupported)} not supported for a level-T kernel "
            f"(@{entry.sym_name.data} uses tpu ops)"
        )
    sim = Simulator(module, chip, filename, trace=args.trace is not None)
    check_kernel_fits(entry, sim.n, filename)
    inputs = _kernel_inputs(args, entry, sim.n)
    progress.step(f"running level T on {sim.n} devices")
    outputs, report = sim.run(entry, inputs)
    print(
        f"level T on {report['devices']} x {chip.name}: step time {report['step_time_s']:.6g} s, "
        f"{report['dmas']} DMAs, {report['ici_bytes']} ICI bytes, "
        f"{report['local_dma_bytes']} local DMA bytes, peak VMEM {report['peak_vmem_bytes']} bytes"
    )
    with StagedWrites() as files:
        if args.report_json is not None:
            files.write(args.report_json, lambda f: json.dump(report, f, indent=1), binary=False)
        if args.trace is not None:
            trace = sim.trace()
            files.write(args.trace, lambda f: json.dump(trace, f), binary=False)
        if args.outputs is not None:
            arrays = {f"out_{k}.{d}": a for d, row in enumerate(outputs) for k, a in enumerate(row)}
            files.write(
                args.outputs,
                lambda f: np.savez(f, **{n: io.savable(a) for n, a in arrays.items()}),
                binary=True,
                announce=f"wrote {args.outputs}",
            )
    return 0


def _kernel_inputs(args: argparse.Namespace, entry: Any, devices: int) -> list[list[Any]]:
    """Every argument buffer of a hand-written kernel per device: given or random."""
    from shardc.interpreter.values import dtype_of, random_array

    arg_types = entry.function_type.inputs.data
    given = load_inputs(args.inputs) if args.inputs is not None else None
    rng = np.random.default_rng(args.seed)
    inputs: list[list[Any]] = []
    for d in range(devices):
        row: list[Any] = []
        for k, ty in enumerate(arg_types):
            if given is not None:
                row.append(given.get(f"in_{k}.{d}"))
            else:
                row.append(random_array(rng, tuple(ty.get_shape()), dtype_of(ty.element_type)))
        inputs.append(row)
    return inputs


# Writing ---------------------------------------------------------------------------------


def stage_report(files: StagedWrites, args: argparse.Namespace, report: Report) -> None:
    if args.report_json is not None:
        files.write(
            args.report_json,
            lambda f: f.write(json.dumps(report.as_json(), indent=2) + "\n"),
            binary=False,
        )


def stage_trace(files: StagedWrites, args: argparse.Namespace, timeline: Timeline) -> None:
    if args.trace is not None:
        files.write(
            args.trace,
            lambda f: f.write(timeline.trace_json()),
            binary=False,
            announce=f"wrote trace {args.trace} (open it in ui.perfetto.dev)",
        )


def stage_plot(
    files: StagedWrites, args: argparse.Namespace, timeline: Timeline, report: Report
) -> None:
    if args.plot is not None:
        from shardc.interpreter.plot import render_png, require_matplotlib

        require_matplotlib(f"{PROG}: error: --plot")
        progress.step(f"drawing {args.plot}")
        files.write(
            args.plot,
            lambda f: render_png(timeline, f, program=program_title(report)),
            binary=True,
            announce=f"wrote timeline {args.plot}",
        )


def main(argv: Sequence[str] | None = None) -> int:
    root = True
    if running_under_mpi():
        from shardc.interpreter.mpi import world

        root = world().is_root

    def body() -> int:
        args = build_arg_parser().parse_args(argv)
        with progress.reporting(PROG, enabled=not args.quiet and root):
            return run(args)

    return run_tool(PROG, _mpi_guard(body) if running_under_mpi() else body)


def _mpi_guard(body: Any) -> Any:
    """
    Under mpirun every rank parses, reads inputs and compiles alike, so an error there is
    every rank's: the ranks agree (`World.agree`) and rank 0 alone reports it. Errors
    once the distributed run has started are the run's (`interpreter.mpi_run`).
    """
    from shardc.interpreter.mpi import world

    def guarded() -> int:
        world().reset()
        try:
            return body()
        except Exception as e:  # a user error, or a bug, before the run: agree, then report
            if world().started:
                raise
            world().agree(e if isinstance(e, DiagnosticError) else RuntimeError(f"{PROG}: {e!r}"))
            raise

    return guarded


__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
