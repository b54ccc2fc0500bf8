"""
Running a (compiled) program at the level it is in on a chip's simulated devices: level G
and S on the device interpreter (`interpreter.devices`), a kernel `lower-to-tpu` made on
the level-T simulator (`interpreter.level_t`) with the arrays of the level-S function it
came from; every run timed (`interpreter.timing`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from shardc.diagnostics import DiagnosticError
from shardc.driver import progress
from shardc.interpreter import io
from shardc.interpreter.devices import Executor
from shardc.interpreter.mpi import running_under_mpi
from shardc.interpreter.timing import Timeline
from shardc.lowering.level_s_summary import level_s_report
from xdsl.dialects.builtin import ModuleOp

if TYPE_CHECKING:
    from shardc.interpreter.level_t_timeline import LevelTTimeline


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
    if running_under_mpi() and not _mpi_runs_here(sig):
        return {}, None  # pyright: ignore[reportReturnType]  # rank 0 runs this level alone
    if running_under_mpi() and sig.level != "S":  # rank 0 alone: global arrays
        inputs = _global_inputs(sig, inputs)
    if sig.level == "T":
        return execute_level_t(
            module, sig, filename, chip, inputs, input_source, timing_only=timing_only
        )
    executor = Executor(module, filename, chip=chip, abstract=timing_only)
    if running_under_mpi() and sig.level == "S":  # mpirun -n K: devices over the ranks
        return _execute_mpi(executor, sig, None if timing_only else inputs, input_source)
    if timing_only:
        n_args = len(sig.function.body.block.args)
        executor.run(sig.function, [[None] * n_args for _ in range(sig.devices)])
        outputs: dict[str, np.ndarray] = {}
    else:
        outputs = io.run(executor, sig, inputs, input_source)
    timeline = executor.timeline
    assert timeline is not None
    return outputs, timeline


def _mpi_runs_here(sig: io.Signature) -> bool:
    """
    Under mpirun, a level-S program's devices are spread over the ranks
    (`interpreter.mpi_run`), so every rank runs it; a level-G or T program runs on rank 0
    alone (False elsewhere: that rank has nothing to run or print). Either way the ranks
    first agree that their setup succeeded (`World.agree`).
    """
    from shardc.interpreter import mpi

    if sig.level == "S":
        return True
    world = mpi.world()
    if not world.started:
        world.agree(None)
    return world.is_root


def _global_inputs(sig: io.Signature, inputs: Any) -> Any:
    """The global arrays for a level run on rank 0 alone (drawn here if each rank was
    to draw its own blocks: `shard_inputs.SeededInputs`)."""
    from shardc.interpreter.shard_inputs import SeededInputs

    if isinstance(inputs, SeededInputs):
        return io.random_inputs(sig, inputs.seed)
    return inputs


def _execute_mpi(
    executor: Executor, sig: io.Signature, inputs: Any, input_source: str
) -> tuple[dict[str, np.ndarray], Timeline]:
    """`execute` of a level-S program under mpirun: rank 0 gets the outputs and timeline,
    every other rank `({}, None)`."""
    from shardc.interpreter import mpi, mpi_run

    outputs, timeline = mpi_run.run(executor, sig, inputs, input_source, mpi.world())
    return outputs or {}, timeline  # pyright: ignore[reportReturnType]


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
    from, as `lower-to-tpu` recorded them (`lowering.level_s_summary`).
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
    try:
        summary = level_s_report(module, sig.name)
    except ValueError as e:
        raise DiagnosticError(f"{filename}: error: {e}") from None
    return outputs, LevelTTimeline(sim, summary)
