"""
One level-S run spread over MPI ranks (`interpreter.mpi`): each rank runs its devices with
the in-process executor (`Executor.run_local`) and a `DistributedRendezvous`; rank 0 then
holds every device's results (assembled into the global outputs as in process,
`io.assemble_outputs`) and every device's clock, from which it builds the very timeline,
hence the very report, of the in-process run (timing is a property of the program, not of
how it was simulated).

Clocks refer to ops; ops do not travel, so a clock travels with each op replaced by its
index in the module's walk order, which is the same on every rank (every rank parsed and
compiled the same text with the same pipeline).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import tracemalloc
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from shardc.diagnostics import DiagnosticError
from shardc.interpreter import io
from shardc.interpreter.devices import Executor
from shardc.interpreter.mpi import World
from shardc.interpreter.mpi_rendezvous import DeadlockError, DistributedRendezvous
from shardc.interpreter.shard_inputs import SeededInputs, random_blocks
from shardc.interpreter.timing import DeviceClock, Timeline
from xdsl.ir import Operation

_OP_LISTS = ("compute", "collectives", "waits")


def clock_state(tm: DeviceClock, index: Mapping[Operation, int]) -> dict[str, Any]:
    """A device clock as plain data, ops as their walk indices."""
    state = {name: getattr(tm, name) for name in DeviceClock.__slots__}
    state["peak_op"] = None if tm.peak_op is None else index[tm.peak_op]
    for name in _OP_LISTS:
        state[name] = [(index[op], *rest) for op, *rest in state[name]]
    return state


def clock_from_state(state: dict[str, Any], ops: Sequence[Operation]) -> DeviceClock:
    tm = DeviceClock(state["device"])
    for name in DeviceClock.__slots__:
        setattr(tm, name, state[name])
    tm.peak_op = None if state["peak_op"] is None else ops[state["peak_op"]]
    for name in _OP_LISTS:
        setattr(tm, name, [(ops[i], *rest) for i, *rest in state[name]])
    return tm


def run_level_s(
    executor: Executor,
    sig: io.Signature,
    local_args: dict[int, Sequence[Any]],
    world: World,
) -> tuple[list[tuple[Any, ...]] | None, Timeline | None]:
    """
    Run `sig`'s level-S function on this rank's devices (`local_args`); on rank 0 every
    device's results in device order and the timeline (with a chip), None elsewhere.
    A deadlock or an error on this rank ends the job here (`_run_or_fail`).
    """
    function = sig.function
    executor.prepare(function)
    ops = list(executor.module.walk())
    world.build_communicators(ops)
    rendezvous = DistributedRendezvous(
        executor.plan.collectives,
        executor.diagnostics,
        executor.cost_model is not None,
        executor.abstract,
        world,
        ops,
        world.timeout,
    )
    results, devices = _run_or_fail(executor, function, local_args, rendezvous, world)
    world.local_results = results  # what a distributed --check compares (driver.mpi_checking)
    index = {op: i for i, op in enumerate(ops)}
    clocks = [clock_state(d.tm, index) if d.tm is not None else None for d in devices]
    gathered = world.gather((results, clocks))
    if gathered is None:
        return None, None
    every: dict[int, tuple[Any, ...]] = {}
    states: list[Any] = []
    for rank_results, rank_clocks in gathered:
        every.update(rank_results)
        states.extend(rank_clocks)
    ordered = [every[d] for d in range(sig.devices)]
    timeline = None
    if executor.chip is not None:
        timeline = executor.make_timeline(True, [clock_from_state(s, ops) for s in states])
    return ordered, timeline


def _run_or_fail(
    executor: Executor,
    function: Any,
    local_args: dict[int, Sequence[Any]],
    rendezvous: DistributedRendezvous,
    world: World,
) -> tuple[dict[int, tuple[Any, ...]], list[Any]]:
    """This rank's run; a deadlock is reported and shared, any other error aborts."""
    try:
        results, devices = executor.run_local(function, local_args, rendezvous)
    except DeadlockError as e:
        print(e, flush=True, file=sys.stderr)
        world.finish(failed=True)
        raise SystemExit(1) from None
    except DiagnosticError as e:
        world.abort(f"shardc-run: rank {world.rank}: {e}")
        raise
    except Exception as e:  # a bug: still end the whole job, not just this rank
        world.abort(f"shardc-run: rank {world.rank}: internal error: {type(e).__name__}: {e}")
        raise
    if not world.finish(failed=False):
        raise SystemExit(1)  # another rank failed and said why
    return results, devices


def run(
    executor: Executor,
    sig: io.Signature,
    inputs: Mapping[str, np.ndarray] | SeededInputs | None,
    source: str,
    world: World,
) -> tuple[dict[str, np.ndarray] | None, Timeline | None]:
    """`io.run` over MPI: the outputs and timeline on rank 0, (None, None) elsewhere."""
    local = world.set_devices(sig.devices, executor.filename)
    baseline = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
    if tracemalloc.is_tracing():
        tracemalloc.reset_peak()
    if inputs is None:  # timing only
        n_args = len(sig.function.body.block.args)
        local_args = {d: [None] * n_args for d in local}
    elif isinstance(inputs, SeededInputs):  # each rank draws its blocks only
        local_args = random_blocks(sig, inputs.seed, list(local))
    else:  # arrays mapped from the file (`shard_inputs.load_lazily`): blocks read only
        local_args = io.split_inputs_for(sig, io.check_inputs(sig, inputs, source), local)
    inputs_peak = _traced_peak(baseline)
    world.agree(None)
    start = time.perf_counter()
    results, timeline = run_level_s(executor, sig, local_args, world)
    _write_stats(world, local, inputs_peak, time.perf_counter() - start)
    if results is None:
        return None, None
    outputs = {} if inputs is None else io.assemble_outputs(sig, results, executor.filename)
    return outputs, timeline


def _traced_peak(baseline: int) -> int | None:
    """Peak bytes allocated (over `baseline`) while this rank made its inputs, when
    tracemalloc traces (`PYTHONTRACEMALLOC=1`)."""
    return tracemalloc.get_traced_memory()[1] - baseline if tracemalloc.is_tracing() else None


def _write_stats(world: World, local: range, inputs_peak: int | None, wall: float) -> None:
    """
    With `SHARDC_MPI_STATS=PATH` (containing `{rank}`), each rank writes what it did as
    JSON: its devices, bytes sent, peak memory (RSS; traced peak while making the inputs
    under `PYTHONTRACEMALLOC`) and the run's wall time (bench/mpi_scaling.py, tests).
    """
    path = os.environ.get("SHARDC_MPI_STATS")
    if not path:
        return
    stats = {
        "rank": world.rank,
        "ranks": world.size,
        "devices": [local.start, local.stop],
        "bytes_sent": world.bytes_sent,
        "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "inputs_traced_peak_bytes": inputs_peak,
        "run_wall_s": wall,
    }
    with open(path.format(rank=world.rank), "w") as f:
        json.dump(stats, f)


def add_stats(world: World, values: dict[str, Any]) -> None:
    """Add `values` to this rank's SHARDC_MPI_STATS file (what a distributed --check
    held: `driver.mpi_checking`)."""
    path = os.environ.get("SHARDC_MPI_STATS")
    if not path:
        return
    name = path.format(rank=world.rank)
    stats = json.loads(open(name).read()) if os.path.exists(name) else {}
    stats.update(values)
    with open(name, "w") as f:
        json.dump(stats, f)


__all__ = ["add_stats", "clock_from_state", "clock_state", "run", "run_level_s"]
