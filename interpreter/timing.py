"""
Level-S (and level-G) timing: the simulated machine's clocks, the per-device timeline, the
report DESIGN.md names, and a Chrome/Perfetto trace.

The cost of every op comes from `shardc.hardware.cost.CostModel` (the one model the
`schedule` pass uses too); this module only decides *when* things run.

The machine
-----------
Every device has a **compute stream** and a **collective engine**.

* A compute op (every `hlo` op and `spmd.constraint`) runs on the compute stream for
  `CostModel.op_cost(op).time`, in program order. Control ops (`scf`, `func`, scalar
  `arith`, `tensor.extract`, `spmd.axis_index`) take no time and are not on the timeline.
* A collective (sync or `_start`) is *issued* when the device's compute stream reaches
  it (its arrival time = the compute clock then). It **begins** when every member of its
  group has issued it and every member's engine can take it (`engine_window`), and takes
  `CostModel.collective_time(op)`. All members see the same begin and end, except for a
  collective that is one round of DMAs (a permute, an all_to_all, an all_reduce of fewer
  elements than its group: `CostModel.collective_landings`): it begins on each member at
  that member's own issue (its DMAs start at its `_start`; the engine term stays the
  group's, whose transfers share the links), and ends there when the member's own sends
  have left and the transfers it receives have landed (as level T's kernel waits: a device
  no long transfer reaches is not held by the group's longest one, e.g. a line's wrap edge).
* A sync collective blocks its device's compute stream until the collective ends.
* A `_start` does not block: compute continues while the engine works; its
  `collective.done` blocks the compute stream until the collective has ended.
* In flight: any number of `_start`s may be outstanding (issued and not yet done) on a
  device (bounding that is the scheduler's job, as XLA's latency-hiding scheduler does).
  Collectives in flight together on one device are not run end to end: every DMA a
  device has started flies at once, its latency overlapping the others' while bytes
  crossing the same ICI links share them. A collective may begin up to its *overlap*
  (`CostModel.collective_overlap`: an all_to_all's or permute's whole latency, one
  round of DMAs; a ring's first step's latency, since its later steps are issued in
  order behind the rings ahead of it) before the engine is free of the collectives
  issued before it, and the engine is then busy until the latest end (`engine_window`:
  one rule for this timeline, `passes/step_estimate.py` and the scheduler). Bytes never
  overlap: bandwidth-bound collectives still add up, as on shared links. A `_start`'s
  first step is sent at the `_start` (lower-to-tpu emits it there), over links the
  collectives in flight may be using: those end later by as much as it held them
  (`first_step_push`, `CostModel.collective_first_step`; the FSDP step's four
  all_gathers issued together: the first ends three steps later), and the engine with
  them (`push_in_flight`: this timeline and `step_estimate.program_order_time`). (Collectives
  over disjoint torus axes could overlap entirely on real hardware; the kernel issues
  their ring steps in order, one instruction stream, so level S does not assume it.)
* Level G: one device, compute only.

Report (`Timeline.report()`, the keys of DESIGN.md "Report JSON keys")
-------------------------------------------------------------------------
* A device's *finish* time is when it returns (its compute clock then; every collective
  has ended by then, because every `_start` has its `done`).
* `step_time_s`: the largest finish time. The *slowest device* is the first device with
  that finish time; every other per-device number below is of that device, except
  `roofline_time_s` and `peak_memory_bytes`.
* `compute_time_s`: the slowest device's compute-stream busy time (sum of its compute
  ops' times).
* `exposed_comm_time_s`: `step_time_s - compute_time_s`: the time the slowest device's
  compute stream is idle, i.e. blocked at a sync collective or a `done` (waiting for the
  transfer itself, for the engine, or for a late group member to arrive).
* `roofline_time_s`: the schedule's lower bound, `max over devices of max(total compute,
  total communication)`, communication being the device's engine busy time (the sum of
  its collectives' times less what overlapped, `engine_busy`). Always `<= step_time_s`.
* `collectives`: collectives the slowest device executed, per kind (keys exactly
  `all_reduce all_gather reduce_scatter all_to_all permute`); a `_start` counts under its
  kind, a variadic collective once; a collective in a loop counts once per iteration.
* `comm_bytes`: the slowest device's operand bytes of those collectives (algorithm-free),
  an integer; `comm_bytes_by_kind` splits it per kind.
* `peak_memory_bytes`: the largest live-tensor total over program order and devices.

Extra keys: `chip`, `comm_time_s` (the slowest device's engine busy time),
`slowest_device`, `peak_memory_at` (the op where the peak is reached), and `per_device` (each device's finish, compute, communication,
exposed time, comm bytes and peak memory).

Memory model (`memory_plan`)
----------------------------
Per device, in program order: the entry function's arguments are live throughout (the
caller owns them); every other tensor value is a buffer of its type's size (`tensor_bytes`:
elements x bytes per element, i1 one byte), allocated when its op runs and freed after its
last use (an unused result right after its op). While an op runs its operands and its
results are both live; the peak is taken there. A `_start`'s operands stay live until its
`done` (the engine reads them); its future holds the result buffers, which its `done`
hands to its results (no new allocation). Values used inside a nested region
(`scf.for`/`scf.if` bodies) are live until the op containing that region ends. Block
arguments of nested blocks (loop-carried values) alias the values passed in, so they are
not counted again. Reshapes are counted as new buffers (XLA makes them bitcasts: a small
overestimate).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from shardc.diagnostics import op_origin
from shardc.dialects import collective as coll
from shardc.dialects import hlo, spmd
from shardc.dialects.collective import collective_kind
from shardc.dialects.sizes import value_bytes
from shardc.hardware.chips import Chip
from shardc.hardware.cost import CostModel, Landings, OpCost
from shardc.interpreter import breakdown
from shardc.interpreter.breakdown import op_label
from shardc.interpreter.trace_events import TraceWriter, trace_json
from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue

KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "permute")
"""Collective kinds, in the report's order (`collective-stats`' too)."""

REPORT_KEYS = (
    "devices",
    "step_time_s",
    "compute_time_s",
    "exposed_comm_time_s",
    "roofline_time_s",
    "collectives",
    "comm_bytes",
    "peak_memory_bytes",
)
"""The report keys DESIGN.md fixes."""

COMPUTE_TID = 0
COLLECTIVE_TID = 1


def is_timed(op: Operation) -> bool:
    """
    Ops that run on the compute stream (and appear on the timeline). Not `hlo.while` /
    `hlo.case` (the ops of their regions run, and take time, each time they run) nor
    `hlo.return`; a reduce with a body is one kernel (its body's ops are in its cost).
    """
    regions = bool(op.regions)
    found = _TIMED.get((type(op), regions))
    if found is None:
        found = _TIMED[(type(op), regions)] = _is_timed(op)
    return found


_TIMED: dict[tuple[type[Operation], bool], bool] = {}
"""`is_timed` by (op class, whether the op has regions): all it depends on, found once (every
estimate asks it of every op, issue 14 item 7)."""


def _is_timed(op: Operation) -> bool:
    if isinstance(op, hlo.FusionOp):  # one kernel: its ops take no time of their own
        return True
    if isinstance(op, hlo.ReduceOp):  # a body (argmax) is its combiner, not ops that run
        return True
    if op.dialect_name() == "hlo":
        return not op.regions and not isinstance(op, hlo.ReturnOp)
    return isinstance(op, spmd.ConstraintOp)


# Memory plan ----------------------------------------------------------------------------


def memory_plan(function: func.FuncOp) -> dict[Operation, tuple[int, int]]:
    """
    For every op of `function` (nested ones included): (bytes allocated when it runs,
    bytes freed after it), per the module docstring's memory model.
    """
    position: dict[Operation, int] = {}
    for op in function.walk():
        for region in op.regions:
            for block in region.blocks:
                for i, inner in enumerate(block.ops):
                    position[inner] = i
    alloc: dict[Operation, int] = {}
    free: dict[Operation, int] = {}
    for op in function.walk():
        if op is function:
            continue
        if isinstance(op, coll.DoneOp) and _from_start(op.operands[0]):
            alloc[op] = 0  # the future's buffers become the results
        else:
            alloc[op] = sum(value_bytes(r.type) for r in op.results)
        block = op.parent_block()
        for r in op.results:
            size = value_bytes(r.type)
            if not size:
                continue
            if (
                isinstance(r.type, coll.FutureType)
                and r.uses
                and all(isinstance(u.operation, coll.DoneOp) for u in r.uses)
            ):
                continue  # handed to the done's results, freed at their last uses
            last = _last_use(r, op, block, position)
            free[last] = free.get(last, 0) + size
    return {op: (alloc[op], free.get(op, 0)) for op in alloc}


def _from_start(value: SSAValue) -> bool:
    owner = value.owner
    return isinstance(owner, coll.CollectiveOp) and owner.IS_START


def _last_use(
    value: SSAValue, definer: Operation, block: Block | None, position: dict[Operation, int]
) -> Operation:
    users: list[Operation] = []
    for use in value.uses:
        user = use.operation
        users.append(user)
        if isinstance(user, coll.CollectiveOp) and user.IS_START:
            # the engine reads the operand until the collective's done
            users.extend(u.operation for u in user.results[0].uses)
    last, last_pos = definer, position.get(definer, -1)
    for user in users:
        while user is not None and user.parent_block() is not block:
            user = user.parent_op()
        if user is None:
            continue
        pos = position.get(user, -1)
        if pos > last_pos:
            last, last_pos = user, pos
    return last


# Per-device state -----------------------------------------------------------------------


class DeviceClock:
    """One device's clocks, counters and timeline while (and after) it runs."""

    __slots__ = (
        "device",
        "clock",
        "engine",
        "busy",
        "comm",
        "live",
        "peak",
        "peak_op",
        "compute",
        "collectives",
        "waits",
        "counts",
        "comm_bytes",
    )

    def __init__(self, device: int, live: int = 0):
        self.device = device
        self.clock = 0.0
        """When the compute stream is next free (seconds)."""
        self.engine = 0.0
        """When the collective engine is next free."""
        self.busy = 0.0
        """Compute-stream busy time so far."""
        self.comm = 0.0
        """Engine busy time so far."""
        self.live = live
        self.peak = live
        self.peak_op: Operation | None = None
        self.compute: list[tuple[Operation, float, float]] = []
        """Compute-stream slices (op, start, end)."""
        self.collectives: list[tuple[Operation, float, float, float]] = []
        """Engine slices (op, issued, start, end)."""
        self.waits: list[tuple[Operation, float, float]] = []
        """Compute stream blocked at a sync collective or a done (op, start, end)."""
        self.counts: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.comm_bytes: dict[str, int] = dict.fromkeys(KINDS, 0)

    @property
    def finish(self) -> float:
        return max(self.clock, self.engine)


@dataclass
class CollectiveCost:
    """A collective's cost, computed once per op."""

    kind: str
    time: float
    bytes: int
    algorithm: str = ""
    """What the cost model assumed (`CostModel.collective_algorithm`)."""
    overlap: float = 0.0
    """What of `time` may run under the collectives ahead (`CostModel.collective_overlap`)."""
    landings: Landings | None = None
    """Each member's own end of a one-round collective (`CostModel.collective_landings`)."""
    first_step: float = 0.0
    """Link time of the DMAs a `_start` starts at the `_start` (`CostModel.collective_first_step`)."""
    axes: frozenset[str] | None = None
    """The mesh axes whose links it crosses (None: explicit groups, any link)."""


def engine_window(
    issued: float, engine_free: float, time: float, overlap: float
) -> tuple[float, float]:
    """
    (begin, end) of a collective issued at `issued` (its group's last arrival) on an engine
    busy until `engine_free` (its members' latest) with the collectives issued before it:
    it begins once issued and at most `overlap` before the engine is free (the module
    docstring's "In flight"), and takes `time`. The engine is then busy until
    `max(engine_free, end)`; its busy time grows by `engine_busy`. The one rule of
    collectives in flight for the interpreter's timeline, `step_estimate` and `schedule`.
    """
    begin = max(issued, engine_free - overlap)
    return begin, begin + time


Times = Any
"""A time (float), or one per device (numpy array)."""


@dataclass(slots=True)
class InFlight:
    """A ring `_start` in flight, as its links see it: from `begin` to `end` (per device:
    arrays), steps of `step` seconds of bytes each followed by `gap` seconds of hop
    latency (`CostModel.collective_first_step`, `collective_overlap`), over the links of
    mesh `axes` (None: any)."""

    begin: Times
    end: Times
    step: float
    gap: float
    axes: frozenset[str] | None

    def shares_links(self, axes: frozenset[str] | None) -> bool:
        """Whether a collective over `axes` may cross its links (a mesh axis in common)."""
        return self.axes is None or axes is None or bool(self.axes & axes)


def first_step_push(issued: Times, ahead: InFlight, first_step: float) -> Times:
    """
    How much later a ring in flight (`ahead`) ends when a ring `_start` issued at
    `issued` sends its first step (`first_step` seconds of link time) over the same
    links: lower-to-tpu starts those DMAs at the `_start` (lowering/ring_steps.py), so
    they share the links with the step `ahead` is sending (equal shares: its bytes drain
    later by as much as crossed meanwhile), and what is left of them crosses in the hop
    latency between its steps, when its links idle, then shares its next step. The
    `_start` itself ends no later (`engine_window`: its first step is done by the time
    the engine takes it). Zero when nothing is in flight at `issued`. Floats or arrays
    (one per device, `step_estimate.DeviceClocks`; nan: not issued there).
    """
    period = ahead.step + ahead.gap
    phase = np.mod(issued - ahead.begin, period) if period > 0 else issued * 0.0
    shared = np.minimum(first_step, ahead.step - phase)
    push = np.where(
        phase < ahead.step,  # sharing the step being sent, then the gap after it
        shared + np.maximum(0.0, first_step - shared - ahead.gap),
        np.maximum(0.0, first_step - (period - phase)),  # in the gap, then the next step
    )
    # nan `issued`: a device outside the `_start`'s groups, not pushed
    return np.nan_to_num(np.clip(push, 0.0, np.maximum(0.0, ahead.end - issued)), nan=0.0)


def link_axes(op: coll.CollectiveOp) -> frozenset[str] | None:
    """The mesh axes whose links `op` crosses (`InFlight.axes`; None: explicit groups)."""
    return None if op.explicit_groups is not None else frozenset(op.axes)


def push_in_flight(
    flying: Iterable[InFlight], issued: Times, first_step: float, axes: frozenset[str] | None
) -> Times:
    """
    A ring `_start` over `axes` issued at `issued` whose first step takes `first_step`:
    every ring `flying` over links it shares ends later by `first_step_push`. Returns the
    latest end among them (-inf: none), which the engine is busy until at least (its busy
    time grows by as much). The one rule of the interpreter's timeline
    (interpreter/rendezvous.py) and `step_estimate`'s.
    """
    latest: Times = -math.inf
    if first_step <= 0:
        return latest
    for f in flying:
        if f.shares_links(axes):
            f.end = f.end + first_step_push(issued, f, first_step)
            latest = np.maximum(latest, f.end)
    return latest


def engine_busy(engine_free: float, begin: float, end: float) -> float:
    """The engine time a collective in `[begin, end)` adds to an engine busy until
    `engine_free` (the part not already under the collectives ahead)."""
    return max(0.0, end - max(begin, engine_free))


def issued_behind(time: float, overlap: float) -> float:
    """
    The engine time a collective of `time` and `overlap` adds when it is issued together
    with others, behind collectives still in flight for at least its overlap: its
    `engine_busy` under `engine_window` (time - overlap: an all_to_all's or a permute's
    bytes only, a ring all but its first step's latency). What a collective costs in a
    program that keeps the engine busy; `spmd-partition` prices its candidates so
    (`step_estimate.scheduled_time(issued_together=True)`), not knowing which of the
    program's other collectives will be in flight with them.
    """
    begin, end = engine_window(0.0, overlap, time, overlap)
    return engine_busy(overlap, begin, end)


# The timeline and its outputs -----------------------------------------------------------


class Slice(NamedTuple):
    """One interval of one device's timeline (`Timeline.slices()`)."""

    device: int
    stream: str
    """"compute", "collectives" or "wait" (the compute stream blocked on communication)."""
    op: Operation
    start: float
    end: float
    flops: float
    """0 for collectives and waits."""
    bytes: int
    """HBM bytes of a compute op; operand bytes of a collective; 0 for waits."""


@dataclass
class Timeline:
    """Every device's clocks and slices after one run, and what they add up to."""

    chip: Chip
    level: str
    devices: list[DeviceClock]
    op_costs: dict[Operation, OpCost]
    collective_costs: dict[Operation, CollectiveCost]
    where: Callable[[Operation], str | None] = field(default=lambda op: None)
    """Source location (`file:line:col`) of an op, None if unknown."""
    model: CostModel | None = None
    """The cost model the times came from (for the per-op breakdown's rooflines)."""

    @property
    def slowest(self) -> DeviceClock:
        return max(self.devices, key=lambda d: d.finish)  # first of the slowest

    def report(self) -> dict[str, Any]:
        """DESIGN.md's report keys (see the module docstring) and a few more."""
        slow = self.slowest
        step = slow.finish
        roofline = max(max(d.busy, d.comm) for d in self.devices)
        return {
            "devices": len(self.devices),
            "step_time_s": step,
            "compute_time_s": slow.busy,
            "exposed_comm_time_s": max(0.0, step - slow.busy),
            "roofline_time_s": roofline,
            "collectives": dict(slow.counts),
            "comm_bytes": sum(slow.comm_bytes.values()),
            "peak_memory_bytes": max(d.peak for d in self.devices),
            "chip": self.chip.name,
            "comm_time_s": slow.comm,
            "comm_bytes_by_kind": dict(slow.comm_bytes),
            "slowest_device": slow.device,
            "peak_memory_at": self._peak_location(),
            **self._breakdown(slow),
            "per_device": [
                {
                    "device": d.device,
                    "finish_time_s": d.finish,
                    "compute_time_s": d.busy,
                    "comm_time_s": d.comm,
                    "exposed_comm_time_s": max(0.0, d.finish - d.busy),
                    "comm_bytes": sum(d.comm_bytes.values()),
                    "peak_memory_bytes": d.peak,
                }
                for d in self.devices
            ],
        }

    def _breakdown(self, slow: DeviceClock) -> dict[str, Any]:
        """The report's `ops` and `collective_ops` (interpreter/breakdown.py)."""
        model = self.model or CostModel(self.chip)

        def kinds(op: Operation) -> tuple[str, int, str]:
            cc = self.collective_costs.get(op)
            if cc is None:
                return (collective_kind(op), 0, "")  # pyright: ignore[reportArgumentType]
            return (cc.kind, cc.bytes, cc.algorithm)

        return {
            "ops": breakdown.op_entries(slow.compute, self.op_costs, model, self.where),
            "collective_ops": breakdown.collective_entries(
                slow.collectives, slow.waits, kinds, self.where
            ),
        }

    def _peak_location(self) -> str | None:
        """Where the device with the largest peak reached it (op name and location)."""
        top = max(self.devices, key=lambda d: d.peak)
        if top.peak_op is None:
            return None
        loc = self.where(top.peak_op)
        source = op_origin(top.peak_op)
        return (
            f"{op_label(top.peak_op)} on device {top.device}"
            + (f" at {loc}" if loc else "")
            + (f" (from {source})" if source else "")
        )

    def slices(self) -> list[Slice]:
        """Every device's timeline as flat slices, device by device, stream by stream."""
        out: list[Slice] = []
        for d in self.devices:
            for op, start, end in d.compute:
                cost = self.op_costs.get(op)
                out.append(
                    Slice(
                        d.device,
                        "compute",
                        op,
                        start,
                        end,
                        cost.flops if cost else 0.0,
                        cost.bytes if cost else 0,
                    )
                )
            for op, start, end in d.waits:
                out.append(Slice(d.device, "wait", op, start, end, 0.0, 0))
            for op, _, start, end in d.collectives:
                cc = self.collective_costs.get(op)
                out.append(
                    Slice(d.device, "collectives", op, start, end, 0.0, cc.bytes if cc else 0)
                )
        return out

    # Trace ---------------------------------------------------------------------------

    def trace(self) -> dict[str, Any]:
        """
        Chrome trace-event JSON (ui.perfetto.dev and chrome://tracing open it; written by
        `trace_events.TraceWriter`): one process per device, one thread per stream
        ("compute", "collectives"), each op a complete ("X") event named after the op,
        ts/dur in microseconds, with its FLOPs or bytes and source location in `args`. Time
        the compute stream spends blocked at a sync collective or a `done` is a "wait"
        event on the compute thread.
        """
        writer = TraceWriter()
        labels: dict[Operation, dict[str, Any]] = {}
        for d in self.devices:
            self._trace_device(writer, d, labels)
        return writer.document(
            {
                "chip": self.chip.name,
                "level": self.level,
                **{k: v for k, v in self.report().items() if k != "per_device"},
            }
        )

    def _op_args(self, op: Operation, labels: dict[Operation, dict[str, Any]]) -> dict[str, Any]:
        """A fresh copy of the `args` every event of `op` carries (op, results, loc)."""
        args = labels.get(op)
        if args is None:
            args = {"op": op.name}
            names = [r.name_hint for r in op.results if r.name_hint]
            if names:
                args["results"] = ", ".join(f"%{n}" for n in names)
            loc = self.where(op)
            if loc:
                args["loc"] = loc
            if source := op_origin(op):  # JAX's location of an imported op
                args["source"] = source
            labels[op] = args
        return dict(args)

    def _trace_device(
        self, writer: TraceWriter, d: DeviceClock, labels: dict[Operation, dict[str, Any]]
    ) -> None:
        """One device's process, threads and slices."""
        pid = d.device
        writer.process(pid, f"device {pid}")
        writer.metadata("process_sort_index", pid, pid, key="sort_index")
        writer.metadata("thread_name", pid, "compute", tid=COMPUTE_TID)
        if self.level == "S":
            writer.metadata("thread_name", pid, "collectives", tid=COLLECTIVE_TID)
        for op, start, end in d.compute:
            cost = self.op_costs.get(op)
            args = self._op_args(op, labels)
            if cost is not None:
                args["flops"] = cost.flops
                args["bytes"] = cost.bytes
            writer.complete(op_label(op), "compute", pid, COMPUTE_TID, start, end, args)
        for op, start, end in d.waits:
            args = self._op_args(op, labels)
            args["waits_for"] = op.name
            kind = collective_kind(op) if isinstance(op, coll.CollectiveOp) else op.name
            writer.complete(f"wait {kind}", "wait", pid, COMPUTE_TID, start, end, args)
        for op, issued, start, end in d.collectives:
            cc = self.collective_costs.get(op)
            args = self._op_args(op, labels)
            if cc is not None:
                args["bytes"] = cc.bytes
            args["issued_us"] = issued * 1e6
            writer.complete(op.name, "collective", pid, COLLECTIVE_TID, start, end, args)

    def trace_json(self) -> str:
        return trace_json(self.trace())


# Formatting -----------------------------------------------------------------------------


def format_seconds(t: float) -> str:
    if t == 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def format_bytes(n: float) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


def summary_lines(report: dict[str, Any]) -> list[str]:
    """The timing part of `shardc-run`'s summary."""
    step = report["step_time_s"]
    lines = [
        f"timing on {report['chip']}"
        + (f" (slowest device {report['slowest_device']})" if report["devices"] > 1 else "")
        + ":",
        f"  step time            {format_seconds(step)}",
        f"  compute              {format_seconds(report['compute_time_s'])}",
        f"  exposed comm         {format_seconds(report['exposed_comm_time_s'])}",
        f"  roofline bound       {format_seconds(report['roofline_time_s'])}"
        + (f" ({report['roofline_time_s'] / step:.0%} of step)" if step > 0 else ""),
    ]
    counts = report["collectives"]
    total = sum(counts.values())
    if total:
        kinds = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
        lines.append(
            f"  collectives          {total} ({kinds}), {format_bytes(report['comm_bytes'])} "
            f"per device, {format_seconds(report['comm_time_s'])} on the engine"
        )
    else:
        lines.append("  collectives          none")
    at = report.get("peak_memory_at")
    lines.append(
        f"  peak memory          {format_bytes(report['peak_memory_bytes'])}"
        + (f" (at {at})" if at else "")
    )
    return lines + breakdown.summary_lines(report)


def compute_cost(model: CostModel, op: Operation) -> OpCost | None:
    """The op's compute cost, or None for ops that take no time (control, scalars)."""
    if not is_timed(op):
        return None
    cost = model.op_cost(op)
    if not math.isfinite(cost.time):
        return None
    return cost


__all__ = [
    "KINDS",
    "REPORT_KEYS",
    "Slice",
    "CollectiveCost",
    "DeviceClock",
    "Timeline",
    "compute_cost",
    "engine_busy",
    "engine_window",
    "first_step_push",
    "InFlight",
    "link_axes",
    "push_in_flight",
    "issued_behind",
    "memory_plan",
    "op_label",
    "summary_lines",
]
