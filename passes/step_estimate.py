"""
The cost model's estimate of a per-device step, one definition for every pass and gate
that applies a transformation only where the step gets faster (`micro-batch`,
`collective-matmul`, `spmd-pipeline`'s gates).

Two numbers, both by the interpreter's timing rules (`interpreter.timing`: a compute
stream, one collective engine taking collectives in issue order, each overlapping the
ones ahead by its `collective_overlap` (`timing.engine_window`), a sync
collective or a `done` blocking the stream) and its per-op costs (`timing.compute_cost`),
so that what a pass estimates is what `shardc-run --timing-only` reports for the program
the pipeline returns:

* `program_order_time`: the block run in the order it is written (what the user sees
  for that program; one device stands for all, as every device of a level-S function runs
  the same ops on the same types). A `while`/`case` costs its static estimate
  (`CostModel.control_cost`, its collectives synchronous, as the interpreter runs them).
* `scheduled_time`: the block as `async-split` + `schedule` would leave it, i.e.
  `program_order_time` of the scheduler's order (computed on the block itself, its sync
  collectives split for the scheduler and joined back: no copy, as an estimate must cost
  about what `schedule` does for the gates to stay linear).

`module_step_time` is the pipeline's objective: per function, the better of the scheduled
order and the order as written (`spmd-pipeline` keeps the program order where scheduling
would be slower), summed over functions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, cast

from shardc.dialects import collective, hlo
from shardc.hardware.cost import CostModel, OpCost, cached
from shardc.interpreter.timing import compute_cost, engine_window
from shardc.passes.async_split import TO_START
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
    clock = engine = 0.0
    in_flight: dict[SSAValue, float] = {}
    for op in ops:
        time = memo.get(op)
        if time is None:
            time = memo[op] = _time(op, model)
        if isinstance(op, collective.CollectiveOp):
            _, end = engine_window(clock, engine, time, model.collective_overlap(op))
            engine = max(engine, end)
            if op.IS_START:
                in_flight[op.results[0]] = end
            else:
                clock = end
        elif isinstance(op, collective.DoneOp):
            clock = max(clock, in_flight.pop(op.future, clock))
        else:
            clock += time
    return max(clock, engine)


def _time(op: Operation, model: CostModel) -> float:
    if isinstance(op, collective.CollectiveOp):
        return model.collective_time(op)
    if isinstance(op, collective.DoneOp):
        return 0.0
    return op_time(op, model)


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
        start_type = TO_START.get(type(op))  # pyright: ignore[reportArgumentType]
        if start_type is None:
            continue
        types = tuple(op.result_types)
        future = futures.get(types)
        if future is None:
            future = futures[types] = collective.FutureType(types)  # pyright: ignore
        start = start_type.create(
            operands=list(op.operands),
            result_types=[future],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        # what `DoneOp(start.results[0])` builds, without its checks (estimates only)
        done = collective.DoneOp.create(operands=start.results, result_types=types)
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
    while the ops do not change, i.e. for one estimate; `split_sync` only re-points uses at
    values of the same types, which the costs do not depend on. Answers as `model` does
    (`op_cost`, `collective_time`; anything else is `model`'s).
    """

    def __init__(self, model: CostModel):
        self.model = model
        self._ops: dict[Operation, OpCost] = {}
        self._collectives: dict[Operation, float] = {}

    def op_cost(self, op: Operation) -> OpCost:
        cost = self._ops.get(op)
        if cost is None:
            cost = self._ops[op] = self.model.op_cost(op)
        return cost

    def collective_time(self, op: collective.CollectiveOp) -> float:
        time = self._collectives.get(op)
        if time is None:
            time = self._collectives[op] = self.model.collective_time(op)
        return time

    def same_as(self, start: Operation, sync: Operation) -> None:
        """`start` (made by `split_sync` from `sync`) costs what `sync` costs: a collective's
        time is its kind's, operands' and groups' (`CostModel.collective_time`), the same
        for both forms."""
        if sync in self._collectives:
            self._collectives[start] = self._collectives[sync]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


def per_op(model: CostModel) -> CostModel:
    """`model` with one estimate's costs remembered by op (`OpCosts`; itself if it is)."""
    return model if isinstance(model, OpCosts) else cast(CostModel, OpCosts(model))


def scheduled_time(
    block: Block,
    model: CostModel,
    memory_limit: int | None = None,
    max_in_flight: int = 4,
    memo: dict[Operation, float] | None = None,
) -> float:
    """
    The step of `block` as `async-split` + `schedule` would leave it: `program_order_time`
    of the scheduler's order; inf if it cannot fit the memory limit. On the block itself,
    left as it was (split for the scheduler and joined back: no copy).
    """
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


def _blocks(module: ModuleOp) -> list[Block]:
    return [
        f.body.block
        for f in module.body.block.ops
        if isinstance(f, func.FuncOp) and len(f.body.blocks) == 1
    ]


def module_step_time(module: ModuleOp, model: CostModel, memory_limit: int | None = None) -> float:
    """Summed over functions: the better of scheduled and written order (the module is left
    as it was)."""
    model = cached(model)
    total = 0.0
    for block in _blocks(module):
        memo: dict[Operation, float] = {}  # the same ops in both orders: costed once
        costs = per_op(model)  # and once more for the scheduler: one key per op
        written = program_order_time(block.ops, costs, memo)
        total += min(written, scheduled_time(block, costs, memory_limit, memo=memo))
    return total
