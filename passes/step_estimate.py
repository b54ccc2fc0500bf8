"""
The cost model's estimate of a per-device step, one definition for every pass and gate
that applies a transformation only where the step gets faster (`micro-batch`,
`collective-matmul`, `spmd-pipeline`'s gates).

Two numbers, both by the interpreter's timing rules (`interpreter.timing`: a compute
stream, one collective engine taking collectives in issue order, each overlapping the
ones ahead by its `collective_overlap` (`timing.engine_window`), a ring `_start`'s first
step pushing the rings in flight on its links (`timing.push_in_flight`), a sync
collective or a `done` blocking the stream) and its per-op costs (`timing.compute_cost`),
so that what a pass estimates is what `shardc-run --timing-only` reports for the program
the pipeline returns:

* `program_order_time`: the block run in the order it is written (what the user sees
  for that program; one device stands for all, as every device of a level-S function runs
  the same ops on the same types). A `while`/`case` costs its static estimate
  (`CostModel.control_cost`, its collectives synchronous, as the interpreter runs them).
* `scheduled_time`: the block as `async-split` + `schedule` would leave it, i.e.
  `program_order_time` of the scheduler's order, computed without touching the block:
  without a memory limit on a `StepGraph` (the block as ints, each sync collective a
  start node and a done node, the scheduler's rules run on them), with one on the block
  itself (its sync collectives split for `BlockScheduler` and joined back). No copy
  either way, as an estimate must cost about what `schedule` does for the gates to stay
  linear.

`module_step_time` is the pipeline's objective: per function, the better of the scheduled
order and the order as written (`spmd-pipeline` keeps the program order where scheduling
would be slower), summed over functions.
"""

from __future__ import annotations

import bisect
import copy
import math
from collections.abc import Hashable, Iterable, Mapping
from typing import Any, cast

import numpy as np
from shardc.dialects import collective, hlo
from shardc.hardware.cost import CachedCostModel, CostModel, Landings, OpCost, cached
from shardc.hardware.vmem import IN_FLIGHT
from shardc.interpreter.timing import (
    InFlight,
    compute_cost,
    engine_window,
    issued_behind,
    link_axes,
    push_in_flight,
)
from shardc.passes.async_split import TO_START, start_and_done
from shardc.passes.block_order import control_predecessors, used_values
from shardc.passes.schedule import BlockScheduler, ScheduleStuck
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Block, Operation, SSAValue


def op_time(op: Operation, model: CostModel) -> float:
    """An op's time on the compute stream, as the interpreter's timeline charges it."""
    if isinstance(op, hlo.WhileOp | hlo.CaseOp):
        return model.op_cost(op).time  # its regions' ops, run where it stands
    cost = compute_cost(model, op)
    return cost.time if cost is not None else 0.0


def program_order_time(
    ops: Iterable[Operation], model: CostModel, memo: dict[Operation, float] | None = None
) -> float:
    """
    The step of a block's `ops` in this order (the module docstring's rules). `memo`, op ->
    its time, shared by estimates of the same ops in two orders (written and scheduled),
    costs each op once: the cost model's key for an op (its types and properties, hashed)
    is most of an estimate's time.
    """
    memo = {} if memo is None else memo
    ops = list(ops)
    if any(skewed(op, model) for op in ops if isinstance(op, collective.CollectiveOp)):
        return _per_device_time(ops, model, memo)
    times = []
    for op in ops:
        time = memo.get(op)
        if time is None:
            time = memo[op] = _time(op, model)
        times.append(time)
    return _forward(ops, times, model)


def _forward(
    ops: list[Operation],
    times: list[float],
    model: CostModel,
    ends: dict[Operation, float] | None = None,
) -> float:
    """The step of `ops` (each taking its `times` entry) in this order, one device standing
    for all; each collective's end into `ends` when given (`collective_slack`)."""
    clock = engine = 0.0
    in_flight: dict[SSAValue, InFlight] = {}
    for op, time in zip(ops, times, strict=True):
        if isinstance(op, collective.CollectiveOp):
            overlap = model.collective_overlap(op)
            begin, end = engine_window(clock, engine, time, overlap)
            first = model.collective_first_step(op)
            engine = max(engine, push_in_flight(in_flight.values(), clock, first, link_axes(op)))
            engine = max(engine, end)
            if ends is not None:
                ends[op] = end
            if op.IS_START:
                in_flight[op.results[0]] = InFlight(begin, end, first, overlap, link_axes(op))
            else:
                clock = end
        elif isinstance(op, collective.DoneOp):
            flying = in_flight.pop(op.future, None)
            clock = clock if flying is None else max(clock, flying.end)
        else:
            clock += time
    return max(clock, engine)


def collective_slack(ops: Iterable[Operation], model: CostModel) -> dict[Operation, float]:
    """
    Per collective of a block's `ops` (in this order, `program_order_time`'s rules, one
    device standing for all): by how many seconds its end may come later without the
    step coming later. A forward pass (`program_order_time`'s) gives each collective's
    end; a backward one the latest each may end: before its `done` must resume the compute
    for the rest to finish by the step, and before every collective issued after it may
    begin (the engine takes them in issue order: `timing.engine_window`). A collective on
    a chain of collectives that keeps the engine busy up to a `done` that waits has no
    slack, however long the compute under it: every second its ring idles comes out of
    the step (`ring_steps.Overlap` keeps such a ring's link busy rather than the compute).
    """
    ops = list(ops)
    times = [_time(op, model) for op in ops]
    ends: dict[Operation, float] = {}
    latest = engine_limit = _forward(ops, times, model, ends)
    """The latest the compute clock may be after the op (going backward); the latest a
    collective issued before may end (the engine must be free for the later ones)."""
    by_done: dict[SSAValue, float] = {}
    slack: dict[Operation, float] = {}
    for op, time in zip(reversed(ops), reversed(times), strict=True):
        if isinstance(op, collective.CollectiveOp):
            end = min(engine_limit, by_done.pop(op.results[0], latest) if op.IS_START else latest)
            slack[op] = max(0.0, end - ends[op])
            begin = end - time
            engine_limit = min(engine_limit, begin + model.collective_overlap(op))
            latest = min(latest, begin)
        elif isinstance(op, collective.DoneOp):
            by_done[op.future] = latest
        else:
            latest -= time
    return slack


def skewed(op: collective.CollectiveOp, model: CostModel) -> bool:
    """Whether `op`'s members, beginning together, end at different times
    (`Landings.skewed`): then one device no longer stands for all."""
    landings = model.collective_landings(op)
    return landings is not None and landings.skewed


class DeviceClocks:
    """
    Every device's compute clock and collective engine, for a block where one device no
    longer stands for all: a one-round collective whose members end at different times
    (`CostModel.collective_landings`, e.g. a permute over a line whose wrap edge is long)
    makes their clocks differ from then on. The interpreter's rules
    (`rendezvous._time_collective`) over arrays: a collective begins per group (its last
    member's issue, the members' engines: `timing.engine_window`), a one-round one at each
    member's own issue, and ends per member (`Landings.ends`).

    While every device's compute clock is the same, `clock` is that one float (a float
    sum is the sum each element of the array would get), and so is `engine` while every
    device's engine is free at the same time: a compute op then costs no array operation,
    nor a ring over every device (at 10k ops the array operations were most of an estimate
    of a skewed block).
    """

    def __init__(self, devices: int):
        self.devices = devices
        self.clock: float | np.ndarray = 0.0
        """Each device's compute clock (one float while they are all the same)."""
        self.engine: float | np.ndarray = 0.0
        """When each device's collective engine is free (one float while the same)."""

    def advance(self, time: float) -> None:
        """A compute op of `time` on every device."""
        self.clock += time

    def wait(self, ends: float | np.ndarray) -> None:
        """Each device's compute waits for its `ends` (one float again if they agree)."""
        self.clock = _collapsed(np.maximum(self.clock, ends))

    def collective(
        self, op: collective.CollectiveOp, model: CostModel, time: float, overlap: float
    ) -> float | np.ndarray:
        """Each device's end of `op` issued now (-inf on devices outside its groups; one
        float if every device ends then)."""
        groups = model.group_array(op)
        landings = model.collective_landings(op)
        clock, engine = self.clock, self.engine
        if landings is None and groups.size == self.devices:
            if not isinstance(clock, np.ndarray) and not isinstance(engine, np.ndarray):
                # a ring over every device, all of them issuing it and free together:
                # the arrays' rule on the one number they all hold
                end = float(np.maximum(clock, engine - overlap) + time)
                self.engine = float(np.maximum(engine, end))
                return end
        free = (
            engine[groups].max(axis=1, keepdims=True) if isinstance(engine, np.ndarray) else engine
        )
        ends = np.full(self.devices, -math.inf)
        if landings is None:
            if isinstance(clock, np.ndarray):
                issued = clock[groups].max(axis=1, keepdims=True)
            else:
                issued = clock
            ends[groups] = np.maximum(issued, free - overlap) + time
        else:
            begins = np.zeros(max(self.devices, landings.size))
            issued = clock[groups] if isinstance(clock, np.ndarray) else clock
            begins[groups] = np.maximum(issued, free - overlap)
            ends[groups] = landings.ends(begins)[groups]
        self.engine = _collapsed(np.maximum(engine, ends))
        return ends

    def issued(self, op: collective.CollectiveOp, model: CostModel) -> float | np.ndarray:
        """When each device's group has issued `op` now (its last member's clock; nan
        outside its groups: no push there, `timing.first_step_push`)."""
        clock = self.clock
        if not isinstance(clock, np.ndarray):
            return clock
        groups = model.group_array(op)
        issued = np.full(self.devices, np.nan)
        issued[groups] = clock[groups].max(axis=1, keepdims=True)
        return issued

    def collective_pushing(
        self,
        op: collective.CollectiveOp,
        model: CostModel,
        costs: tuple[float, float, float],
        in_flight: Mapping[Any, InFlight | np.ndarray | float],
    ) -> InFlight | np.ndarray | float:
        """`collective` of `op` issued now, `costs` = (time, overlap, first step), after
        its first step has pushed the rings `in_flight` (`timing.push_in_flight`): a
        ring's `InFlight` (its ends per device), a one-round collective's ends."""
        time, overlap, first = costs
        issued = self.issued(op, model)
        ends = self.collective(op, model, time, overlap)
        rings = [f for f in in_flight.values() if isinstance(f, InFlight)]
        latest = push_in_flight(rings, issued, first, link_axes(op))
        self.engine = _collapsed(np.fmax(self.engine, latest))
        if model.collective_landings(op) is not None:
            return ends
        return InFlight(ends - time, ends, first, overlap, link_axes(op))

    def step(self) -> float:
        clock, engine = self.clock, self.engine
        return float(
            max(
                clock.max() if isinstance(clock, np.ndarray) else clock,
                engine.max() if isinstance(engine, np.ndarray) else engine,
            )
        )


def _collapsed(times: np.ndarray) -> float | np.ndarray:
    """`times` (one per device), or the one float they all are."""
    low = times.min()
    return float(low) if low == times.max() else times


def _devices(model: CostModel) -> int:
    mesh = model.mesh
    return math.prod(mesh.shape) if mesh is not None else 1


def _ends(flying: InFlight | np.ndarray | float) -> np.ndarray | float:
    """When a collective in flight ends on each device (`DeviceClocks.collective_pushing`:
    a ring's `InFlight`, a one-round collective's ends)."""
    return flying.end if isinstance(flying, InFlight) else flying


def _per_device_time(ops: list[Operation], model: CostModel, memo: dict[Operation, float]) -> float:
    """`program_order_time` on every device's clocks (`DeviceClocks`)."""
    clocks = DeviceClocks(_devices(model))
    in_flight: dict[SSAValue, InFlight | np.ndarray | float] = {}
    for op in ops:
        time = memo.get(op)
        if time is None:
            time = memo[op] = _time(op, model)
        if isinstance(op, collective.CollectiveOp):
            costs = (time, model.collective_overlap(op), model.collective_first_step(op))
            ends = clocks.collective_pushing(op, model, costs, in_flight)
            if op.IS_START:
                in_flight[op.results[0]] = ends
            else:
                clocks.wait(_ends(ends))
        elif isinstance(op, collective.DoneOp):
            ends = in_flight.pop(op.future, None)
            if ends is not None:
                clocks.wait(_ends(ends))
        else:
            clocks.advance(time)
    return clocks.step()


def _time(op: Operation, model: CostModel) -> float:
    kind = _kind(op)
    if kind == _COMPUTE:
        return op_time(op, model)
    if kind == _DONE:
        return 0.0
    return model.collective_time(cast(collective.CollectiveOp, op))


_KINDS: dict[type[Operation], int] = {}
"""Each op class's `_kind` (an op's kind is its class's: `isinstance` on the dialects'
abstract classes, a few per op and estimate, was a tenth of `StepGraph`)."""


def _kind(op: Operation) -> int:
    """`_START` (an async collective's start), `_SYNC` (any other collective), `_DONE` or
    `_COMPUTE`: what `op` is to the clocks, as written."""
    kind = _KINDS.get(type(op))
    if kind is None:
        if isinstance(op, collective.CollectiveOp):
            kind = _START if op.IS_START else _SYNC
        elif isinstance(op, collective.DoneOp):
            kind = _DONE
        else:
            kind = _COMPUTE
        kind = _KINDS[type(op)] = kind
    return kind


def split_sync(block: Block) -> list[tuple[Operation, collective.DoneOp]]:
    """
    Each sync collective of `block` replaced, for the scheduler, by its `_start` and a
    `done` right after it (as `async-split` does); the collective itself is kept aside for
    `join_back`, so every other op and value of the block stays the same object (a pass
    that holds on to them, as `micro-batch` does to its classes, can estimate in place).
    """
    pairs: list[tuple[Operation, collective.DoneOp]] = []
    futures: dict[tuple[Attribute, ...], collective.FutureType] = {}  # one per result types
    for op in list(block.ops):
        if type(op) not in TO_START:
            continue
        start, done = start_and_done(cast(collective.CollectiveOp, op), futures)
        block.insert_ops_before([start, done], op)
        for old, new in zip(op.results, done.results, strict=True):
            old.replace_all_uses_with(new)
        block.detach_op(op)
        pairs.append((op, done))
    return pairs


def join_back(pairs: list[tuple[Operation, collective.DoneOp]]) -> None:
    """Undo `split_sync`: each collective back in its place, its uses back."""
    for op, done in pairs:
        start = done.future.owner
        block = done.parent_block()
        assert isinstance(start, Operation) and block is not None
        block.insert_op_before(op, start)
        for old, new in zip(op.results, done.results, strict=True):
            new.replace_all_uses_with(old)
        block.erase_op(done)
        block.erase_op(start)


class OpCosts:
    """
    One estimate's costs remembered by op (the object, not its key): the written order, the
    scheduler and the scheduled order each ask for every op's cost, and the cost model's key
    of an op (its types and properties, hashed) is most of the price of an answer. Valid
    while the ops do not change: one estimate, or (`spmd-pipeline`'s gate) the plans and
    estimates of one pass until it changes the module; `split_sync` only re-points uses at
    values of the same types, which the costs do not depend on. A cached `model` is asked
    with the op's key, computed once for all the questions about it (a collective is asked
    five). Answers as `model` does
    (`op_cost`, `collective_time`, `collective_landings`, `collective_overlap`,
    `group_array` remembered; anything else is `model`'s).
    """

    def __init__(self, model: CostModel):
        self.model = model
        self._keyed = isinstance(model, CachedCostModel)
        self._keys: dict[Operation, Hashable | None] = {}
        """Each op's key in a cached `model` (`CachedCostModel.key`), once per op."""
        self._ops: dict[Operation, OpCost] = {}
        self._collectives: dict[Operation, float] = {}
        self._other_form: dict[Operation, float] = {}
        """A collective costed as its other form (`collective_time(op, start)`: a sync one as
        the `_start` it becomes)."""
        self._landings: dict[Operation, Landings | None] = {}
        self._overlaps: dict[Operation, float] = {}
        self._groups: dict[Operation, np.ndarray] = {}
        self.times: dict[Operation, float] = {}
        """`program_order_time`'s memo for these ops (op -> its time on the timeline)."""

    def moved(self, twins: Mapping[Operation, Operation], keep: bool = False) -> OpCosts:
        """
        These costs for a copy (`twins`: each op mapped to its copy, e.g. `copy_op`'s
        `op_mapper`), for a pass that adds and erases ops but changes none it keeps (a
        use re-pointed at a value of the same type changes no cost): `spmd-pipeline`
        carries one module's costs to the copy its gate estimates instead of costing every
        op again (issue 14 item 7). Each table is carried by its own entries (most tables
        know a few ops: the collectives). With `keep`, the costs of the ops themselves are
        kept too (micro-batch costs the module and its fused copy with one table).
        """
        copy = OpCosts(self.model)
        pairs = [
            (self._ops, copy._ops),
            (self._collectives, copy._collectives),
            (self._other_form, copy._other_form),
            (self._landings, copy._landings),
            (self._overlaps, copy._overlaps),
            (self._groups, copy._groups),
            (self._keys, copy._keys),
            (self.times, copy.times),
        ]
        twin_of = twins.get
        for mine, theirs in pairs:
            if keep:
                theirs.update(mine)
            for op, found in mine.items():
                if (twin := twin_of(op)) is not None:
                    theirs[twin] = found
        return copy

    def key(self, op: Operation) -> Hashable | None:
        """The cached model's key of `op` (`CachedCostModel.key`), once per op; None (not
        remembered by key) for a model without keys."""
        if not self._keyed:
            return None
        found = self._keys.get(op, _MISSING)
        if found is _MISSING:
            found = self._keys[op] = cast(CachedCostModel, self.model).key(op)
        return found

    def _ask(self, cache: dict[Operation, Any], op: Operation, question: str, *args: Any) -> Any:
        """The model's answer to `question` about `op`, remembered in `cache`; a cached
        model is given the op's key, computed once for all questions about the op."""
        found = cache.get(op, _MISSING)
        if found is _MISSING:
            ask = getattr(self.model, question)
            if self._keyed:
                found = cache[op] = ask(op, *args, key=self.key(op))
            else:
                found = cache[op] = ask(op, *args)
        return found

    def op_cost(self, op: Operation) -> OpCost:
        return self._ask(self._ops, op, "op_cost")

    def collective_time(self, op: collective.CollectiveOp, start: bool | None = None) -> float:
        cache = self._collectives if start in (None, op.IS_START) else self._other_form
        return self._ask(cache, op, "collective_time", start)

    def collective_landings(self, op: collective.CollectiveOp) -> Landings | None:
        return self._ask(self._landings, op, "collective_landings")

    def collective_overlap(self, op: collective.CollectiveOp) -> float:
        return self._ask(self._overlaps, op, "collective_overlap")

    def group_array(self, op: collective.CollectiveOp) -> np.ndarray:
        return self._ask(self._groups, op, "group_array")

    def same_as(self, start: Operation, sync: Operation) -> None:
        """`start` (made by `split_sync` from `sync`) costs what `sync` costed as a
        `_start` (a collective's time is its kind's, operands', groups' and VMEM
        budget's, `CostModel.collective_time`, the budget a `_start`'s share)."""
        if sync in self._other_form:
            self._collectives[start] = self._other_form[sync]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


def per_op(model: CostModel) -> CostModel:
    """`model` with one estimate's costs remembered by op (`OpCosts`; itself if it is)."""
    return model if isinstance(model, OpCosts) else cast(CostModel, OpCosts(model))


def scheduled_time(
    block: Block,
    model: CostModel,
    memory_limit: int | None = None,
    max_in_flight: int = IN_FLIGHT,
    memo: dict[Operation, float] | None = None,
    issued_together: bool = False,
) -> float:
    """
    The step of `block` as `async-split` + `schedule` would leave it: `program_order_time`
    of the scheduler's order; inf if it cannot fit the memory limit. The block is left as
    it was (a `StepGraph` of it; with a memory limit, `split_scheduled_time`).
    `issued_together` (no memory limit): every collective issued behind others still in
    flight, charged `timing.issued_behind` (what it adds to a busy engine) with nothing
    more to overlap: the price of a piece of a program (a partition candidate) whose
    collectives run among the program's others.
    """
    model = per_op(model)
    if memory_limit is None:  # no live bytes to track: the scheduler over ints (`StepGraph`)
        graph = StepGraph(block, model, memo)
        if issued_together:
            graph.issue_together()
        return graph.scheduled_time(max_in_flight)
    assert not issued_together, "issued_together is priced without a memory limit"
    return split_scheduled_time(block, model, memory_limit, max_in_flight, memo)


def split_scheduled_time(
    block: Block,
    model: CostModel,
    memory_limit: int | None = None,
    max_in_flight: int = IN_FLIGHT,
    memo: dict[Operation, float] | None = None,
) -> float:
    """`scheduled_time` by the ops themselves: the block split (`split_sync`), scheduled by
    `BlockScheduler` (which tracks live bytes for a memory limit) and joined back. The
    definition `StepGraph` follows (tests/e2e/test_pipeline_reuse.py holds them equal)."""
    model = per_op(model)
    pairs = split_sync(block)
    if isinstance(model, OpCosts):
        for sync, done in pairs:
            model.same_as(done.future.owner, sync)  # pyright: ignore[reportArgumentType]
    try:
        scheduler = BlockScheduler(block, model, memory_limit, max_in_flight, peak=False)
        order, _, _ = scheduler.run()
        time = program_order_time(order, model, memo)
    except ScheduleStuck:
        time = math.inf
    join_back(pairs)
    return time


_MISSING = object()

_START, _DONE, _COMPUTE, _SYNC = 0, 1, 2, 3
"""`StepGraph` kinds: a `_start`, a `done`, a compute op, a collective run synchronously (one
with no `_start` form: it blocks the stream, as `BlockScheduler.run_compute` runs it)."""


class StepGraph:
    """
    A block as `BlockScheduler` sees it after `split_sync` (each sync collective a `_start`
    node and a `done` node right after it), as lists of ints and floats: the same order,
    dependencies and costs, without building or erasing an op. `scheduled_time` runs
    `BlockScheduler`'s rules (no memory limit: every step fits) and `program_order_time`'s
    clocks on it, so it returns what `split_sync` + `BlockScheduler.run` +
    `program_order_time` + `join_back` return, at a fraction of the price (issue 14 item
    7: the gates estimate the whole module several times per pass).
    """

    def __init__(self, block: Block, model: CostModel, memo: dict[Operation, float] | None):
        self.model, self.memo = model, {} if memo is None else memo
        self.kind: list[int] = []
        self.cost: list[float] = []
        """What the scheduler charges (`BlockScheduler.advance`)."""
        self.time: list[float] = []
        """What `program_order_time` charges."""
        self.start: list[int] = []
        """A done's start node (-1: none in the block)."""
        self.overlap: list[float] = []
        """A collective's `collective_overlap` (what `timing.engine_window` lets overlap
        the collectives ahead); 0 for other nodes."""
        self.first_step: list[float] = []
        """A `_start` node's `collective_first_step` (`timing.push_in_flight`); 0 else."""
        self.link_axes: dict[int, frozenset[str] | None] = {}
        """A `_start` node's `timing.link_axes`, made when `program_time` first needs it
        (the schedulers call it per candidate order)."""
        self.ops: list[Operation] = []
        """Each node's op (a split collective's for both of its nodes)."""
        self.split = False
        """Whether a sync collective stands as two nodes (then an order of the nodes is no
        order of the ops)."""
        self.split_starts: list[int] = []
        self._orders: dict[int, list[int]] = {}
        """`order`'s answers by `max_in_flight` (the graph's costs unchanged since)."""
        self._scheduled: dict[int, float] = {}
        """`scheduled_time`'s answers by `max_in_flight`."""
        """The start nodes of the sync collectives standing as two nodes."""
        self.skewed = False
        """Whether a collective's members end at different times (`DeviceClocks`)."""
        ops = list(block.ops)
        self.result_node: dict[int, int] = {}
        """id(op) -> the node of the op's results (a split collective's done)."""
        self.first_node: dict[int, int] = {}
        """id(op) -> the op's first node (a split collective's start); ids, not ops: the
        ops are alive while the block is, and an int hashes without a Python call."""
        self._add_all(ops)
        self.users: list[list[int]] = [[] for _ in self.kind]
        self.waiting = [0] * len(self.kind)
        self._link(block, ops)

    def _add_all(self, block_ops: list[Operation]) -> None:
        """The nodes of `block_ops`, in order (one loop, the lists bound locally: at 10k
        ops every gate builds a graph of the module, issue 14 item 7)."""
        model, memo = self.model, self.memo
        kinds, costs, times, starts = self.kind, self.cost, self.time, self.start
        overlaps, ops, firsts = self.overlap, self.ops, self.first_step
        first, result = self.first_node, self.result_node
        op_cost, collective_time = model.op_cost, model.collective_time
        collective_overlap = model.collective_overlap
        last = block_ops[-1] if block_ops else None
        for op in block_ops:
            cls = type(op)
            n = len(kinds)
            if cls in TO_START:  # its `_start` and its `done`, as `split_sync` leaves it
                # costed as the `_start` it becomes (its VMEM share), not the written op
                # (`memo`, shared with the written order's estimate, holds that one's time)
                sync = cast(collective.CollectiveOp, op)
                time = collective_time(sync, start=True)
                ops += (op, op)
                kinds += (_START, _DONE)
                costs += (time, 0.0)
                times += (time, 0.0)
                starts += (-1, n)
                overlaps += (collective_overlap(sync), 0.0)
                firsts += (model.collective_first_step(sync, start=True), 0.0)
                if not self.skewed:
                    self.skewed = skewed(sync, model)
                first[id(op)], result[id(op)] = n, n + 1
                self.split = True
                self.split_starts.append(n)
                continue
            time = memo.get(op)
            if time is None:
                time = memo[op] = _time(op, model)
            kind = _KINDS.get(cls)
            if kind is None:
                kind = _kind(op)
            ops.append(op)
            kinds.append(kind)
            times.append(time)
            if kind == _COMPUTE:
                costs.append(op_cost(op).time if op is not last else 0.0)
                starts.append(-1)
                overlaps.append(0.0)
                firsts.append(0.0)
            elif kind == _DONE:
                owner = cast(collective.DoneOp, op).future.owner
                costs.append(0.0)
                starts.append(first.get(id(owner), -1))
                overlaps.append(0.0)
                firsts.append(0.0)
            else:
                coll = cast(collective.CollectiveOp, op)
                costs.append(collective_time(coll))
                starts.append(-1)
                overlaps.append(collective_overlap(coll))
                firsts.append(model.collective_first_step(coll))
                if not self.skewed:
                    self.skewed = skewed(coll, model)
            first[id(op)] = result[id(op)] = n

    def _link(self, block: Block, block_ops: list[Operation]) -> None:
        """`block_order.dependency_graph` of the split block, by node: an op depends on the
        ops of the block whose results it (or its regions) reads, and on its control
        predecessors (the block's ops are the keys of `result_node`)."""
        control = control_predecessors(block)
        first, result = self.first_node, self.result_node
        users, waiting = self.users, self.waiting
        result_of = result.get
        for op in block_ops:
            me = id(op)
            n = first[me]
            values = used_values(op) if op.regions else op._operands  # pyright: ignore
            deps: set[int] = set()
            for v in values:
                d = result_of(id(v.owner))
                if d is not None:
                    deps.add(d)
            deps.discard(result[me])  # its own results (read inside its regions)
            if control:
                deps.update(first[id(p)] for p in control.get(op, ()))
            if n != result[me]:  # a split collective: its done waits for its start
                users[n].append(n + 1)
                waiting[n + 1] = 1
            for d in deps:
                users[d].append(n)
            waiting[n] = len(deps)

    def order(self, max_in_flight: int) -> list[int]:
        """`BlockScheduler.run`'s order (no memory limit), by node (remembered: read only)."""
        found = self._orders.get(max_in_flight)
        if found is None:
            found = self._orders[max_in_flight] = self._order(max_in_flight)
        return found

    def _order(self, max_in_flight: int) -> list[int]:
        kind, cost, start_of, users = self.kind, self.cost, self.start, self.users
        overlap = self.overlap
        waiting = list(self.waiting)
        last = len(kind) - 1
        ready: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])
        for n in range(last):
            if not waiting[n]:
                ready[kind[n]].append(n)
        starts, dones, computes, syncs = ready
        in_flight: dict[int, float] = {}
        clock = engine = 0.0
        order: list[int] = []
        while starts or dones or computes or syncs:
            n = self._choose(ready, in_flight, clock, max_in_flight)
            k = kind[n]
            lst = ready[k]
            del lst[bisect.bisect_left(lst, n)]
            if k == _START:
                _, end = engine_window(clock, engine, cost[n], overlap[n])
                engine = max(engine, end)
                in_flight[n] = end
            elif k == _DONE:
                s = start_of[n]
                if s in in_flight:
                    clock = max(clock, in_flight.pop(s))
            elif k == _SYNC:
                _, clock = engine_window(clock, engine, cost[n], overlap[n])
                engine = max(engine, clock)
            else:
                clock += cost[n]
            order.append(n)
            for u in users[n]:
                waiting[u] -= 1
                if not waiting[u] and u != last:
                    bisect.insort(ready[kind[u]], u)
        order.append(last)
        return order

    def _choose(
        self,
        ready: tuple[list[int], list[int], list[int], list[int]],
        in_flight: dict[int, float],
        clock: float,
        max_in_flight: int,
    ) -> int:
        """`BlockScheduler.choose`: a start if a slot is free, else a done that has
        finished (a start is waiting), else the first compute, else the done that finishes
        first. A sync collective is a compute op there (one list, in original order)."""
        starts, dones, computes, syncs = ready
        start_of = self.start
        if len(in_flight) < max_in_flight:
            if starts:
                return starts[0]
        elif starts:
            for d in dones:
                if in_flight.get(start_of[d], clock) <= clock:
                    return d
        if computes or syncs:
            if not syncs:
                return computes[0]
            return syncs[0] if not computes or syncs[0] < computes[0] else computes[0]
        if not dones:
            raise ScheduleStuck
        return min(dones, key=lambda d: (in_flight.get(start_of[d], clock), d))

    def issue_together(self) -> None:
        """Every collective node charged as issued behind others in flight
        (`timing.issued_behind`), with no overlap left (`scheduled_time`'s
        `issued_together`)."""
        for n, k in enumerate(self.kind):
            if k in (_START, _SYNC):
                self.cost[n] = issued_behind(self.cost[n], self.overlap[n])
                self.time[n] = issued_behind(self.time[n], self.overlap[n])
                self.overlap[n] = 0.0
        self.skewed = False  # each collective's engine time only: one device stands for all
        self._orders, self._scheduled = {}, {}

    def scheduled_time(self, max_in_flight: int) -> float:
        """`program_order_time` of `order`; inf if the scheduler is stuck (remembered)."""
        found = self._scheduled.get(max_in_flight)
        if found is None:
            found = self._scheduled[max_in_flight] = self._scheduled_time(max_in_flight)
        return found

    def _scheduled_time(self, max_in_flight: int) -> float:
        if not self.kind:
            return 0.0
        try:
            order = self.order(max_in_flight)
        except ScheduleStuck:
            return math.inf
        return self.program_time(order)

    def after_split(self, block: Block) -> StepGraph | None:
        """
        This graph as the graph of `block`, if `block` is this graph's block after
        `async-split` (each sync collective replaced in place by its `_start` and a `done`
        reading it, every other op the same): the graph stands a sync collective as the
        `_start` and `done` the split makes (`split_sync` is async-split's rewrite, its
        costs the `_start`'s), so it is the graph `StepGraph(block)` would build, the same
        numbers in the same places; only its ops are `block`'s. None, if `block` is not
        that. `schedule` then orders by the graph `micro-batch`'s estimate of the same ops
        built (issue 14 item 7), its order remembered.
        """
        ops = list(block.ops)
        if len(ops) != len(self.ops):
            return None
        for s in self.split_starts:
            start, done = ops[s], ops[s + 1]
            if (
                type(start) is not TO_START[type(self.ops[s])]  # pyright: ignore
                or not isinstance(done, collective.DoneOp)
                or done.future is not start.results[0]
            ):
                return None
        split = {n for s in self.split_starts for n in (s, s + 1)}
        if any(
            op is not mine
            for n, (op, mine) in enumerate(zip(ops, self.ops, strict=True))
            if n not in split
        ):
            return None
        graph = copy.copy(self)
        graph.ops, graph.split, graph.split_starts = ops, False, []
        return graph

    def written_time(self) -> float:
        """`program_order_time` of the nodes as they are (a split sync collective's start
        then its done)."""
        return self.program_time(range(len(self.kind)))

    def sync_written_time(self) -> float:
        """`program_order_time` of the block as it is written, its sync collectives sync:
        the nodes in order, a split collective's start node run as the sync collective (its
        time as written, `_time`) and its done node then finding nothing in flight. The same
        clocks on the same numbers as `program_order_time(block.ops)`, from the graph an
        estimate builds anyway (issue 14 item 7: no second walk over the ops)."""
        kind, time = self.kind, self.time
        if self.split_starts:
            kind, time = list(kind), list(time)
            for n in self.split_starts:
                op = self.ops[n]
                sync = self.memo.get(op)
                if sync is None:
                    sync = self.memo[op] = _time(op, self.model)
                kind[n], time[n] = _SYNC, sync
        return self.program_time(range(len(kind)), kind, time)

    def program_time(
        self,
        order: Iterable[int],
        kind: list[int] | None = None,
        time: list[float] | None = None,
    ) -> float:
        """`program_order_time` of the nodes in `order` (`kind`, `time`: the nodes' own
        unless given)."""
        kind = self.kind if kind is None else kind
        time = self.time if time is None else time
        start_of, overlap = self.start, self.overlap
        if self.skewed:
            return self._per_device_time(order, kind, time)
        clock = engine = 0.0
        in_flight: dict[int, InFlight] = {}
        firsts, ops, axes_of = self.first_step, self.ops, self.link_axes
        for n in order:
            k = kind[n]
            if k == _START:
                begin, end = engine_window(clock, engine, time[n], overlap[n])
                if n not in axes_of:
                    axes_of[n] = link_axes(cast(collective.CollectiveOp, ops[n]))
                axes = axes_of[n]
                engine = max(engine, push_in_flight(in_flight.values(), clock, firsts[n], axes))
                engine = max(engine, end)
                in_flight[n] = InFlight(begin, end, firsts[n], overlap[n], axes)
            elif k == _SYNC:
                _, clock = engine_window(clock, engine, time[n], overlap[n])
                engine = max(engine, clock)
            elif k == _DONE:
                flying = in_flight.pop(start_of[n], None)
                clock = clock if flying is None else max(clock, flying.end)
            else:
                clock += time[n]
        return max(clock, engine)

    def _per_device_time(self, order: Iterable[int], kind: list[int], time: list[float]) -> float:
        """`program_time` on every device's clocks (`DeviceClocks`)."""
        start_of, overlap, ops = self.start, self.overlap, self.ops
        clocks = DeviceClocks(_devices(self.model))
        in_flight: dict[int, InFlight | np.ndarray | float] = {}
        for n in order:
            k = kind[n]
            if k in (_START, _SYNC):
                op = cast(collective.CollectiveOp, ops[n])
                ends = clocks.collective_pushing(
                    op, self.model, (time[n], overlap[n], self.first_step[n]), in_flight
                )
                if k == _START:
                    in_flight[n] = ends
                else:
                    clocks.wait(_ends(ends))
            elif k == _DONE:
                ends = in_flight.pop(start_of[n], None)
                if ends is not None:
                    clocks.wait(_ends(ends))
            else:
                clocks.clock += time[n]  # `advance`, inlined
        return clocks.step()


def _blocks(module: ModuleOp) -> list[Block]:
    return [
        f.body.block
        for f in module.body.block.ops
        if isinstance(f, func.FuncOp) and len(f.body.blocks) == 1
    ]


def module_step_time(
    module: ModuleOp, model: CostModel | OpCosts, memory_limit: int | None = None
) -> float:
    """Summed over functions: the better of scheduled and written order (the module is left
    as it was). `model` may be an `OpCosts` of the module's ops, kept by the caller (valid
    while they do not change)."""
    # costs by op, the same ops in both orders and for the scheduler: one key per op (or
    # none, for the ops of a caller's `OpCosts` that knows them already)
    costs = model if isinstance(model, OpCosts) else OpCosts(cached(model))
    memo, by_op = costs.times, cast(CostModel, costs)
    total = 0.0
    for block in _blocks(module):
        if memory_limit is None:  # both orders' times from one graph of the block
            graph = StepGraph(block, by_op, memo)
            total += min(graph.sync_written_time(), graph.scheduled_time(IN_FLIGHT))
            continue
        written = program_order_time(block.ops, by_op, memo)
        total += min(written, scheduled_time(block, by_op, memory_limit, memo=memo))
    return total
