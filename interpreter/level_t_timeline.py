"""
A level-T run seen as the level-S `Timeline` is (`interpreter.timing`): the report with
DESIGN.md's keys, the Chrome trace and the slices `--plot` draws, so that `shardc-run`
and `shardc.run` treat a kernel's run like any other (`tools.shardc_run.execute`).

The report keys, from the level-T simulation (`interpreter.level_t.Simulator`):
* `step_time_s`: the latest finish (a device's clock, or a DMA it is part of landing);
  the slowest device is the first with that finish.
* `compute_time_s`: the time the slowest device computes (vector, MXU, load/store ops)
  or has a local DMA of its own in flight: an op's HBM traffic is part of its cost, as
  in level S's roofline op cost. `exposed_comm_time_s` is the rest of the step: waiting
  for remote DMAs, semaphores and barriers. `comm_time_s`: the time it has a remote DMA
  in flight (from its start until it lands).
* `roofline_time_s`: max over devices of max(compute time, comm time): a lower bound
  of the step, as at level S.
* `collectives`, `comm_bytes`, `comm_bytes_by_kind`: algorithm-free counts, so they come
  from the level-S program the kernel was lowered from (the report of a timing-only
  level-S run, given as `level_s`); without it (a level-T file run directly) they are
  zero and `collectives_known` is false.
* `peak_memory_bytes`: per device, its HBM buffers (the kernel's arguments: inputs,
  outputs and one scratch buffer per intermediate value) plus its peak VMEM; the max.
Level-T extras: `level` "T", `dmas`, `ici_bytes`, `local_dma_bytes`, `peak_vmem_bytes`,
`hbm_buffer_bytes`, `vector_compute_time_s` (the slowest device's compute ops alone), and
`level_s` (the level-S timing model's step, compute, exposed and roofline times, for
comparison).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from shardc.interpreter import level_t_breakdown
from shardc.interpreter.level_t import Simulator
from shardc.interpreter.level_t_breakdown import covered
from shardc.interpreter.timing import KINDS, format_bytes, format_seconds
from shardc.interpreter.trace_events import trace_json

HBM_WAIT = "tpu.dma_wait (HBM)"
"""The op name of a wait slice for local DMAs only (see `LevelTTimeline.slices`)."""

LEVEL_S_KEYS = ("step_time_s", "compute_time_s", "exposed_comm_time_s", "roofline_time_s")
"""What `level_s` keeps of the level-S report."""


class _Named(NamedTuple):
    """Stands for the op of a slice (the plot reads `name` and `operands`)."""

    name: str
    operands: tuple[Any, ...] = ()


class Slice(NamedTuple):
    """One interval of one device's timeline (as `timing.Slice`)."""

    device: int
    stream: str
    """"compute", "wait" (blocked on a DMA, semaphore or barrier), "HBM DMA" (local) or
    "ICI DMA" (to another chip)."""
    op: _Named
    start: float
    end: float
    flops: float
    bytes: int


@dataclass
class LevelTTimeline:
    """A finished level-T simulation (run with `trace=True`) and its report."""

    sim: Simulator
    level_s: dict[str, Any] | None = None
    """The level-S program's `Timeline.report()` (timing-only run), if known."""

    level = "T"

    @property
    def chip(self) -> Any:
        return self.sim.chip

    @property
    def devices(self) -> list[Any]:
        return self.sim.devs

    def _span(self, dma: Any) -> tuple[float, float]:
        """From a DMA's start until its last byte lands (drained, plus its hops' latency)."""
        return dma.start, dma.drained + dma.hops * self.sim.chip.hop_latency

    def _times(self, device: int) -> tuple[float, float]:
        """(compute, comm) of `device`: see the module docstring."""
        compute = [
            (t0, t1) for stream, _, t0, t1, _ in self.sim.devs[device].trace if stream == "compute"
        ]
        comm = []
        for d in self.sim.dmas:
            if d.device == device:
                (compute if d.target == device else comm).append(self._span(d))
        return covered(compute), covered(comm)

    def report(self) -> dict[str, Any]:
        base = self.sim.report()
        per = base["per_device"]
        n = len(per)
        step = base["step_time_s"]
        finish = [p["finish_time_s"] for p in per]
        slow = finish.index(max(finish)) if n else 0
        vector = [p["compute_time_s"] for p in per]
        busy, dma = zip(*(self._times(d) for d in range(n)), strict=False) if n else ((), ())
        hbm = [sum(b.array.nbytes for b in self.sim.args[d]) for d in range(n)]
        peak = [hbm[d] + per[d]["peak_vmem_bytes"] for d in range(n)]
        s = self.level_s or {}
        return {
            "devices": n,
            "step_time_s": step,
            "compute_time_s": busy[slow],
            "exposed_comm_time_s": max(0.0, step - busy[slow]),
            "roofline_time_s": max(
                (max(b, c) for b, c in zip(busy, dma, strict=False)), default=0.0
            ),
            "collectives": dict(s.get("collectives", dict.fromkeys(KINDS, 0))),
            "comm_bytes": s.get("comm_bytes", 0),
            "peak_memory_bytes": max(peak, default=0),
            "chip": base["chip"],
            "level": "T",
            "collectives_known": self.level_s is not None,
            "comm_time_s": dma[slow],
            "comm_bytes_by_kind": dict(s.get("comm_bytes_by_kind", {})),
            "slowest_device": slow,
            "peak_memory_at": None,
            "dmas": base["dmas"],
            "ici_bytes": base["ici_bytes"],
            "local_dma_bytes": base["local_dma_bytes"],
            "peak_vmem_bytes": base["peak_vmem_bytes"],
            "hbm_buffer_bytes": max(hbm, default=0),
            "vector_compute_time_s": vector[slow] if n else 0.0,
            "level_s": {k: s[k] for k in LEVEL_S_KEYS} | {"unfused": s.get("unfused", [])}
            if s
            else None,
            "ops": self._ops(slow) if n else [],
            "collective_ops": self._collective_ops(slow) if n else [],
            "per_device": [
                {
                    "device": d,
                    "finish_time_s": finish[d],
                    "compute_time_s": busy[d],
                    "vector_compute_time_s": vector[d],
                    "comm_time_s": dma[d],
                    "exposed_comm_time_s": max(0.0, finish[d] - busy[d]),
                    "ici_bytes_sent": per[d]["ici_bytes_sent"],
                    "local_dma_bytes": per[d]["local_dma_bytes"],
                    "peak_vmem_bytes": per[d]["peak_vmem_bytes"],
                    "peak_memory_bytes": peak[d],
                }
                for d in range(n)
            ],
        }

    def _ops(self, device: int) -> list[dict[str, Any]]:
        """The report's `ops` for `device` (interpreter/level_t_breakdown.py)."""
        sim = self.sim
        return level_t_breakdown.op_rows(
            sim.devs[device].trace, sim.dmas, device, self._span, sim.diag.where, sim.chip.hbm_bw
        )

    def _collective_ops(self, device: int) -> list[dict[str, Any]]:
        """The report's `collective_ops` for `device` (interpreter/level_t_breakdown.py)."""
        sim = self.sim
        return level_t_breakdown.collective_rows(
            sim.devs[device].trace, sim.dmas, device, self._span, sim.diag.where
        )

    def _remote_spans(self, device: int) -> list[tuple[float, float]]:
        """When a DMA between `device` and another chip is in flight (either direction)."""
        return sorted(
            self._span(d)
            for d in self.sim.dmas
            if d.target != d.device and device in (d.device, d.target)
        )

    def slices(self) -> list[Slice]:
        """
        The simulator's slices; a `tpu.dma_wait` during which no DMA to or from another
        chip is in flight waits for the device's own HBM<->VMEM traffic, which the report
        counts as compute (an op's memory time), so it is named `HBM_WAIT` and not drawn
        as waiting for communication.
        """
        out: list[Slice] = []
        for dev in self.sim.devs:
            remote = self._remote_spans(dev.index)
            for stream, name, t0, t1, args in dev.trace:
                if stream == "dma":
                    stream = "HBM DMA" if name == "local DMA" else "ICI DMA"
                elif stream == "wait" and name == "tpu.dma_wait" and not _overlaps(remote, t0, t1):
                    name = HBM_WAIT
                out.append(
                    Slice(dev.index, stream, _Named(name), t0, t1, 0.0, args.get("bytes", 0))
                )
        return out

    def trace(self) -> dict[str, Any]:
        """The simulator's Chrome trace, with the report in `otherData` (as level S)."""
        trace = self.sim.trace()
        report = self.report()
        trace["otherData"] = {
            "chip": report["chip"],
            "level": "T",
            **{k: v for k, v in report.items() if k != "per_device"},
        }
        return trace

    def trace_json(self) -> str:
        return trace_json(self.trace())


def _overlaps(spans: list[tuple[float, float]], t0: float, t1: float) -> bool:
    """Whether any of the (sorted) spans overlaps [t0, t1]."""
    return any(lo < t1 and hi > t0 for lo, hi in spans if lo < t1)


def summary_lines(report: dict[str, Any]) -> list[str]:
    """What `shardc-run` adds to the timing summary of a level-T run."""
    dmas = (
        f"  DMAs                 {report['dmas']} on all devices: {format_bytes(report['local_dma_bytes'])} "
        f"local, {format_bytes(report['ici_bytes'])} over ICI; peak VMEM "
        f"{format_bytes(report['peak_vmem_bytes'])}, HBM buffers "
        f"{format_bytes(report['hbm_buffer_bytes'])} per device"
    )
    lines = [dmas]
    s = report.get("level_s")
    if s:
        lines.append(
            f"  level-S model        step {format_seconds(s['step_time_s'])}, roofline "
            f"{format_seconds(s['roofline_time_s'])} (the program before lower-to-tpu; "
            + (
                f"fusions lowered op by op: {'; '.join(s['unfused'])})"
                if s.get("unfused")
                else "each fusion one loop at level T)"
            )
        )
    if not report.get("collectives_known", True):
        lines.append(
            "  (collective counts and bytes need the level-S program: run its source with -p)"
        )
    return lines


__all__ = ["HBM_WAIT", "LevelTTimeline", "Slice", "summary_lines"]
