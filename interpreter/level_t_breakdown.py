"""
The report's `ops` at level T (interpreter/breakdown.py has level S's): per op of the
program `lower-to-tpu` lowered, the time the slowest device's compute stream spent on the
kernel code that came from it, slowest first.

Level T's `compute_time_s` is the union of the device's vector-op slices and its local
(HBM <-> VMEM) DMAs. Each piece of that union goes to one op: the activity that started
last among those in progress (the kernel runs one op's tiled loop after another; a
double-buffered fetch of the next op's first block that overlaps the previous op's last
compute counts for the next op once its own compute has not started, for the previous one
while it computes). So the rows' `time_s` sum to `compute_time_s`. A row's `flops` are its
vector ops' (a matmul's 2mkn), its `bytes` its local DMAs', its `roofline_time_s` the
longer of its vector ops' unit time and its bytes at HBM bandwidth, and
`roofline_fraction` what the tiled loop achieves of that: below 1 where the first block's
fetch, the last write-back and the VMEM loads and stores add to the roofline.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable
from typing import Any

from shardc.diagnostics import source_line
from shardc.interpreter.level_t_machine import Dma

Span = tuple[float, float, str]
"""(start, end, location) of one activity on the compute stream."""

_OP_NAME = re.compile(r"=\s*\"?((?:hlo|collective|spmd)\.[a-z_]+)")


def op_name_at(location: str) -> str:
    """The op written at `file:line:col` (read from the source), else `kernel`."""
    parts = location.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit():
        text = source_line(parts[0], int(parts[1]))
        if text and (found := _OP_NAME.search(text)):
            return found.group(1)
    return "kernel"


def _attribute(spans: list[Span]) -> dict[str, float]:
    """Each instant covered by a span goes to the latest-started span covering it."""
    bounds = sorted({t for s, e, _ in spans for t in (s, e)})
    by_start = sorted(spans)
    active: list[tuple[float, int, float, str]] = []  # (-start, order, end, location)
    out: dict[str, float] = {}
    i = 0
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        while i < len(by_start) and by_start[i][0] <= lo:
            s, e, loc = by_start[i]
            heapq.heappush(active, (-s, i, e, loc))
            i += 1
        while active and active[0][2] <= lo:
            heapq.heappop(active)  # ended: lazily, only the top matters
        if active:
            loc = active[0][3]
            out[loc] = out.get(loc, 0.0) + (hi - lo)
    return out


def op_rows(
    trace: list[tuple[str, str, float, float, dict[str, Any]]],
    dmas: list[Dma],
    device: int,
    span: Callable[[Dma], tuple[float, float]],
    where: Callable[[Any], str],
    hbm_bw: float,
) -> list[dict[str, Any]]:
    """The `ops` rows of `device` from its trace slices and its local DMAs (`hbm_bw`:
    the chip's HBM bytes/s)."""
    spans: list[Span] = []
    flops: dict[str, float] = {}
    unit: dict[str, float] = {}
    nbytes: dict[str, int] = {}
    for stream, _, t0, t1, args in trace:
        if stream == "compute":
            loc = args.get("at", "")
            spans.append((t0, t1, loc))
            flops[loc] = flops.get(loc, 0.0) + args.get("flops", 0.0)
            if args.get("flops"):  # a vector op at its unit's rate (not a VMEM load/store)
                unit[loc] = unit.get(loc, 0.0) + (t1 - t0)
    for d in dmas:
        if d.device == device and d.target == device:
            s, e = span(d)
            loc = where(d.op)
            spans.append((s, e, loc))
            nbytes[loc] = nbytes.get(loc, 0) + d.nbytes
    rows = []
    for loc, time in _attribute(spans).items():
        memory_s = nbytes.get(loc, 0) / hbm_bw
        compute_s = unit.get(loc, 0.0)
        roofline = max(compute_s, memory_s)
        rows.append(
            {
                "op": op_name_at(loc),
                "time_s": time,
                "count": 1,
                "flops": flops.get(loc, 0.0),
                "bytes": nbytes.get(loc, 0),
                "bound": "compute" if compute_s >= memory_s and flops.get(loc) else "memory",
                "roofline_time_s": roofline,
                "roofline_fraction": min(1.0, roofline / time) if time > 0 else 1.0,
                "location": loc or None,
                "source": None,
            }
        )
    rows.sort(key=lambda r: -r["time_s"])
    return rows


def collective_rows(
    trace: list[tuple[str, str, float, float, dict[str, Any]]],
    dmas: list[Dma],
    device: int,
    span: Callable[[Dma], tuple[float, float]],
    where: Callable[[Any], str],
) -> list[dict[str, Any]]:
    """
    The `collective_ops` rows of `device`: per collective of the lowered program (its
    ring's DMAs to or from other chips carry its location), `time_s` the union of those
    DMAs' spans, `bytes` what it sent, `exposed_s` the time the device's compute stream
    waited at that collective's semaphores (`tpu.wait` slices located there), `hidden_s`
    the rest. Its `op` is the collective written at that location, or `collective of
    hlo.dot` for one partitioning inserted there (its kind is then not known at level T).
    """
    spans: dict[str, list[tuple[float, float]]] = {}
    sent: dict[str, int] = {}
    for d in dmas:
        if d.target != d.device and device in (d.device, d.target):
            loc = where(d.op)
            spans.setdefault(loc, []).append(span(d))
            if d.device == device:
                sent[loc] = sent.get(loc, 0) + d.nbytes
    waited: dict[str, float] = {}
    for stream, _, t0, t1, args in trace:
        if stream == "wait" and args.get("at") in spans:
            waited[args["at"]] = waited.get(args["at"], 0.0) + (t1 - t0)
    rows = []
    for loc, intervals in spans.items():
        time = covered(intervals)
        exposed = min(time, waited.get(loc, 0.0))
        name = op_name_at(loc)
        # A collective partitioning inserted is located at the op it came from (a dot's
        # all_reduce at the dot): the kernel's DMAs do not say which kind ran.
        coll = name.startswith("collective.")
        rows.append(
            {
                "op": name if coll else f"collective of {name}",
                "kind": name.removeprefix("collective.").removesuffix("_start")
                if coll
                else "collective",
                "bytes": sent.get(loc, 0),
                "algorithm": "lowered: remote DMAs and semaphores",
                "time_s": time,
                "exposed_s": exposed,
                "hidden_s": time - exposed,
                "location": loc or None,
                "source": None,
            }
        )
    rows.sort(key=lambda r: -r["time_s"])
    return rows


def covered(spans: list[tuple[float, float]]) -> float:
    """The length of the union of intervals."""
    total, end = 0.0, float("-inf")
    for lo, hi in sorted(spans):
        if hi > end:
            total += hi - max(lo, end)
            end = hi
    return total


__all__ = ["collective_rows", "covered", "op_name_at", "op_rows"]
