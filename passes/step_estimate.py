"""
The cost model's estimate of a per-device step, one definition for every pass and gate
that applies a transformation only where the step gets faster (`micro-batch`,
`collective-matmul`, `spmd-pipeline`'s gates).

Two numbers, both by the interpreter's timing rules (`interpreter.timing`: a compute
stream, one collective engine running one collective at a time in issue order, a sync
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
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from shardc.dialects import collective, hlo
from shardc.hardware.cost import CostModel, OpCost
from shardc.interpreter.timing import compute_cost
from shardc.passes.async_split import join
from shardc.passes.async_split import split as async_split
from shardc.passes.schedule import BlockScheduler, ScheduleStuck
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter


@dataclass
class CachedCostModel(CostModel):
    """
    A `CostModel` that remembers each op's cost by what it depends on (op name, operand and
    result types, properties and attributes), so that the copies of a module every
    estimate works on, and the many identical ops of a real program, cost one computation
    each. Ops with regions are costed each time (their cost depends on their regions).
    """

    _ops: dict[Hashable, OpCost] = field(default_factory=dict[Hashable, OpCost])
    _collectives: dict[Hashable, float] = field(default_factory=dict[Hashable, float])

    @staticmethod
    def key(op: Operation) -> Hashable | None:
        if op.regions:
            return None
        types = (tuple(v.type for v in op.operands), tuple(r.type for r in op.results))
        if isinstance(op, hlo.ConstantOp):  # its bytes, not its value
            return (op.name, types)
        props = tuple(sorted(op.properties.items()))
        return (op.name, types, props, tuple(sorted(op.attributes.items())))

    def op_cost(self, op: Operation) -> OpCost:
        key = self.key(op)
        if key is None:
            return super().op_cost(op)
        cost = self._ops.get(key)
        if cost is None:
            cost = self._ops[key] = super().op_cost(op)
        return cost

    def collective_time(self, op: collective.CollectiveOp) -> float:
        key = self.key(op)
        if key is None:
            return super().collective_time(op)
        time = self._collectives.get(key)
        if time is None:
            time = self._collectives[key] = super().collective_time(op)
        return time


def cached(model: CostModel) -> CachedCostModel:
    """`model` with its costs remembered (itself if it already is)."""
    if isinstance(model, CachedCostModel):
        return model
    return CachedCostModel(model.chip, model.mesh)


def op_time(op: Operation, model: CostModel) -> float:
    """An op's time on the compute stream, as the interpreter's timeline charges it."""
    if isinstance(op, hlo.WhileOp | hlo.CaseOp):
        return model.op_cost(op).time  # its regions' ops, run where it stands
    cost = compute_cost(model, op)
    return cost.time if cost is not None else 0.0


def program_order_time(ops: Iterable[Operation], model: CostModel) -> float:
    """The step of a block's `ops` in this order (the module docstring's rules)."""
    clock = engine = 0.0
    in_flight: dict[SSAValue, float] = {}
    for op in ops:
        if isinstance(op, collective.CollectiveOp):
            engine = max(clock, engine) + model.collective_time(op)
            if op.IS_START:
                in_flight[op.results[0]] = engine
            else:
                clock = engine
        elif isinstance(op, collective.DoneOp):
            clock = max(clock, in_flight.pop(op.future, clock))
        else:
            clock += op_time(op, model)
    return max(clock, engine)


def split_sync(block: Block) -> list[collective.DoneOp]:
    """`async-split` every sync collective of `block`; the `done`s made (for `join_back`)."""
    return [
        async_split(op, PatternRewriter(op))
        for op in list(block.ops)
        if isinstance(op, collective.SYNC_OPS)
    ]


def join_back(dones: list[collective.DoneOp]) -> None:
    """Undo `split_sync` (each pair is still adjacent: the scheduler's order is not applied)."""
    for done in dones:
        joined = join(done, PatternRewriter(done))
        assert joined is not None


def scheduled_time(
    block: Block,
    model: CostModel,
    memory_limit: int | None = None,
    max_in_flight: int = 4,
) -> float:
    """
    The step of `block` as `async-split` + `schedule` would leave it: `program_order_time`
    of the scheduler's order; inf if it cannot fit the memory limit. On the block itself,
    left as it was (split for the scheduler and joined back: no copy).
    """
    dones = split_sync(block)
    try:
        order, _, _ = BlockScheduler(block, model, memory_limit, max_in_flight).run()
        time = program_order_time(order, model)
    except ScheduleStuck:
        time = math.inf
    join_back(dones)
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
        written = program_order_time(block.ops, model)
        total += min(written, scheduled_time(block, model, memory_limit))
    return total
