"""
Where the time goes: the per-op breakdown of a level-S (or level-G) timeline, the report's
`ops` and `collective_ops` keys (DESIGN.md Additions) and the text report's "top ops".

What a performance engineer reads in an XLA profile, per op of the slowest device:

* `ops`: every compute op (or fusion) of the program that ran, slowest first: `op` (its
  name; a fusion's name after its root), `time_s` (summed over its executions and the copies
  passes made of it: an op in a loop body runs once per iteration, micro-batch cuts an op
  into chunks; `count` says how many), `flops`, `bytes` (HBM bytes it moves),
  `location` (`file:line:col` in the program run) and `source` (the user's source, JAX's
  `loc(...)` of an imported op), `bound` ("compute" when its FLOPs at its unit's rate take
  longer than its bytes at HBM bandwidth, else "memory"), `roofline_time_s` (the longer of
  the two) and `roofline_fraction` (roofline / time: 1.0 at level S, whose cost model
  charges each op its roofline; what a lowering loses shows up below 1). Their `time_s`
  sum to `compute_time_s`.
* `collective_ops`: every collective the slowest device ran, longest first: `op`, `kind`,
  `bytes` (operand bytes), `algorithm` (what the cost model assumed), `time_s` (on the
  engine), `exposed_s` (the compute stream blocked waiting for it, at its sync op or its
  `done`, including waiting for late group members) and `hidden_s` (`time_s - exposed_s`,
  at least 0: the part that ran under compute), `location`, `source`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shardc.diagnostics import op_origin
from shardc.dialects import collective as coll
from shardc.dialects import hlo
from shardc.hardware.cost import CostModel, OpCost
from xdsl.ir import Operation

TOP_OPS = 8
"""How many ops and collectives the text report lists."""


def op_label(op: Operation) -> str:
    """An op's name on the timeline: a fusion's own name (`dot_add_fusion.1`), as XLA's
    profiles show fusions, else the op's name."""
    if isinstance(op, hlo.FusionOp):
        return op.label
    return op.name


def _row_label(op: Operation) -> str:
    """`op_label` without a fusion's uniquing suffix: the chunks micro-batch cut from one
    fusion (`dot_fusion.2`, `dot_fusion.5`) are one row of the breakdown."""
    label = op_label(op)
    if isinstance(op, hlo.FusionOp):
        base, dot, suffix = label.rpartition(".")
        if dot and suffix.isdigit():
            return base
    return label


def op_entries(
    compute: list[tuple[Operation, float, float]],
    costs: dict[Operation, OpCost],
    model: CostModel,
    where: Callable[[Operation], str | None],
) -> list[dict[str, Any]]:
    """The `ops` key from one device's compute slices (op, start, end)."""
    rows: dict[tuple[str, str | None, str | None], dict[str, Any]] = {}
    for op, start, end in compute:
        # One row per op of the user's program: the copies a pass made of it (micro-batch's
        # chunks) and its executions in a loop add up, `count` says how many.
        label, at, source = _row_label(op), where(op), op_origin(op)
        row = rows.get((label, at, source))
        if row is None:
            row = rows[(label, at, source)] = {
                "op": label,
                "time_s": 0.0,
                "count": 0,
                "flops": 0.0,
                "bytes": 0,
                "compute_s": 0.0,
                "location": at,
                "source": source,
            }
        cost = costs.get(op)
        row["time_s"] += end - start
        row["count"] += 1
        if cost is not None:
            row["flops"] += cost.flops
            row["bytes"] += cost.bytes
            row["compute_s"] += model.compute_seconds(op)
    out = [_with_roofline(row, model) for row in rows.values()]
    out.sort(key=lambda e: -e["time_s"])
    return out


def _with_roofline(row: dict[str, Any], model: CostModel) -> dict[str, Any]:
    """A row's bound and roofline from its FLOPs' unit time and its bytes' HBM time."""
    compute_s = row.pop("compute_s")
    memory_s = row["bytes"] / model.chip.hbm_bw
    roofline = max(compute_s, memory_s)
    time = row["time_s"]
    row["bound"] = "compute" if compute_s >= memory_s and row["flops"] else "memory"
    row["roofline_time_s"] = roofline
    row["roofline_fraction"] = min(1.0, roofline / time) if time > 0 else 1.0
    return row


def _collective_of(op: Operation) -> Operation:
    """The collective a wait is for: a `done`'s `_start`, else the op itself."""
    if isinstance(op, coll.DoneOp):
        return op.operands[0].owner  # pyright: ignore[reportReturnType]
    return op


def collective_entries(
    collectives: list[tuple[Operation, float, float, float]],
    waits: list[tuple[Operation, float, float]],
    kinds: Callable[[Operation], tuple[str, int, str]],
    where: Callable[[Operation], str | None],
) -> list[dict[str, Any]]:
    """The `collective_ops` key from one device's engine slices and waits;
    `kinds(op)` gives (kind, bytes, algorithm)."""
    exposed: dict[Operation, float] = {}
    for op, start, end in waits:
        target = _collective_of(op)
        exposed[target] = exposed.get(target, 0.0) + (end - start)
    out: list[dict[str, Any]] = []
    for op, _issued, start, end in collectives:
        kind, nbytes, algorithm = kinds(op)
        blocked = exposed.pop(op, 0.0)  # a collective in a loop: its waits, once
        out.append(
            {
                "op": op.name,
                "kind": kind,
                "bytes": nbytes,
                "algorithm": algorithm,
                "time_s": end - start,
                "exposed_s": blocked,
                "hidden_s": max(0.0, (end - start) - blocked),
                "location": where(op),
                "source": op_origin(op),
            }
        )
    out.sort(key=lambda e: -e["time_s"])
    return out


def _where(entry: dict[str, Any]) -> str:
    at = entry.get("location") or ""
    source = entry.get("source")
    return at + (f" (from {source})" if source else "")


def summary_lines(report: dict[str, Any], top: int = TOP_OPS) -> list[str]:
    """The text report's "top ops" and "top collectives" tables."""
    from shardc.interpreter.timing import format_bytes, format_seconds

    lines: list[str] = []
    ops = report.get("ops") or []
    compute = report.get("compute_time_s") or 0.0
    if ops:
        lines.append(f"  top ops ({min(top, len(ops))} of {len(ops)}, slowest device):")
        for e in ops[:top]:
            share = f"{e['time_s'] / compute:4.0%}" if compute > 0 else "  - "
            count = f" x{e['count']}" if e["count"] > 1 else ""
            lines.append(
                f"    {format_seconds(e['time_s']):>9} {share}  {e['op']}{count}"
                f"  {e['flops']:.3g} FLOP, {format_bytes(e['bytes'])}, {e['bound']}-bound,"
                f" {e['roofline_fraction']:.0%} of roofline  {_where(e)}".rstrip()
            )
    colls = report.get("collective_ops") or []
    if colls:
        lines.append(f"  top collectives ({min(top, len(colls))} of {len(colls)}):")
        for e in colls[:top]:
            lines.append(
                f"    {format_seconds(e['time_s']):>9}  "
                f"{e['kind'] if e['kind'] != 'collective' else e['op']} {format_bytes(e['bytes'])}"
                f" ({e['algorithm']}), {format_seconds(e['hidden_s'])} hidden,"
                f" {format_seconds(e['exposed_s'])} exposed  {_where(e)}".rstrip()
            )
    return lines


__all__ = ["collective_entries", "op_entries", "op_label", "summary_lines"]
