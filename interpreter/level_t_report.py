"""
What a finished level-T run reports: the simulator's report (`report`), its Chrome trace
(`trace`, through the shared `trace_events.TraceWriter`), and the errors found at the end:
a deadlock (`deadlock`: every blocked device, what it waits for and why nothing will
come) and semaphores left non-zero at exit (`check_exit`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.diagnostics import InterpreterError
from shardc.dialects import tpu
from shardc.interpreter.level_t_machine import DeviceState
from shardc.interpreter.trace_events import TraceWriter
from xdsl.ir import Operation

if TYPE_CHECKING:
    from shardc.interpreter.level_t_sim import Simulator

TIDS = {"compute": 0, "wait": 0, "dma": 1}
"""Trace thread per slice stream: waits are on the compute thread, DMAs on their own."""


def report(sim: Simulator) -> dict[str, Any]:
    """The simulator's own report (`level_t_timeline` derives DESIGN.md's keys from it)."""
    finish = [d.clock for d in sim.devs]
    for dma in sim.dmas:
        finish[dma.device] = max(finish[dma.device], dma.drained)
        finish[dma.target] = max(finish[dma.target], dma.drained + dma.hops * sim.chip.hop_latency)
    step = max(finish) if finish else 0.0
    return {
        "level": "T",
        "chip": sim.chip.name,
        "devices": sim.n,
        "step_time_s": step,
        "compute_time_s": max(d.busy for d in sim.devs),
        "dmas": len(sim.dmas),
        "ici_bytes": sum(d.ici_bytes for d in sim.devs),
        "local_dma_bytes": sum(d.local_bytes for d in sim.devs),
        "peak_vmem_bytes": max(d.peak_vmem for d in sim.devs),
        "per_device": [
            {
                "device": d.index,
                "finish_time_s": finish[d.index],
                "compute_time_s": d.busy,
                "ici_bytes_sent": d.ici_bytes,
                "local_dma_bytes": d.local_bytes,
                "peak_vmem_bytes": d.peak_vmem,
            }
            for d in sim.devs
        ],
    }


def trace(sim: Simulator) -> dict[str, Any]:
    """Chrome trace events (run with `trace=True`): compute, wait and DMA slices per device."""
    writer = TraceWriter(phase_first=True)
    for dev in sim.devs:
        writer.process(dev.index, f"device {dev.index}")
        for stream, name, t0, t1, args in dev.trace:
            writer.complete(name, stream, dev.index, TIDS[stream], t0, t1, args)
    return writer.document()


def check_exit(sim: Simulator) -> None:
    """Every semaphore must end at zero (a DMA nobody waited for says so)."""
    for sem in sim.sems:
        sim.memory.check_sem_zero(sem, sem.op)


def deadlock(sim: Simulator, blocked: list[DeviceState]) -> InterpreterError:
    """The error of a run whose every unfinished device is blocked."""
    lines = []
    first: Operation | None = None
    for dev in blocked:
        if dev.waiting is None:
            continue
        op, kind, obj = dev.waiting
        if first is None:
            first = op
        if kind == "sem":
            sem, amount = obj
            unit = "bytes" if isinstance(op, tpu.DMAWaitOp) else ""
            what = f"{amount} {unit}".strip()
            line = (
                f"device {dev.index} waits at {sim.diag.at(op)} for {what} on {sem.describe()}, "
                f"which holds {sem.value}"
            )
            if isinstance(op, tpu.DMAWaitOp):
                line += (
                    "; no DMA in flight will add more: waiting for more bytes than will ever arrive"
                    if sem.value
                    else "; no DMA in flight will signal it"
                )
            others = [
                f"{s.label} ({s.value})"
                for s in sim.sems
                if s.device == dev.index and s.value and s is not sem
            ]
            if others:
                line += f" (non-zero on device {dev.index}: {', '.join(others)})"
            lines.append(line)
        else:
            key, group = obj
            missing = [m for m in group if m not in sim.effects.barriers.get(key, set())]
            lines.append(
                f"device {dev.index} waits at {sim.diag.at(op)} for devices "
                f"{', '.join(map(str, missing))} of group {list(group)}"
            )
    done = [d.index for d in sim.devs if d.done]
    if done:
        lines.append(f"finished: device{'s' if len(done) > 1 else ''} {', '.join(map(str, done))}")
    assert first is not None
    dev0 = blocked[0].index
    return sim.diag.error(
        first, dev0, "deadlock: every unfinished device is blocked\n  " + "\n  ".join(lines)
    )


__all__ = ["check_exit", "deadlock", "report", "trace"]
