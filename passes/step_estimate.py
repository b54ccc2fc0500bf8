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
* `scheduled_time`: the block as `async-split` + `schedule` would leave it (on the block
  given: pass a copy), i.e. `program_order_time` of the scheduler's order.

`module_step_time` is the pipeline's objective: per function, the better of the scheduled
order and the order as written (`spmd-pipeline` keeps the program order where scheduling
would be slower), summed over functions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from shardc.dialects import collective, hlo
from shardc.hardware.cost import CostModel
from shardc.interpreter.timing import compute_cost
from shardc.passes.async_split import split as async_split
from shardc.passes.schedule import BlockScheduler, ScheduleStuck
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter


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


def schedule_order(
    block: Block, model: CostModel, memory_limit: int | None = None, max_in_flight: int = 4
) -> list[Operation] | None:
    """`schedule`'s order of `block` after `async-split` (modified: pass a copy); None if it
    cannot fit the memory limit."""
    for op in list(block.ops):
        if isinstance(op, collective.SYNC_OPS):
            async_split(op, PatternRewriter(op))
    try:
        order, _, _ = BlockScheduler(block, model, memory_limit, max_in_flight).run()
    except ScheduleStuck:
        return None
    return order


def scheduled_time(
    block: Block,
    model: CostModel,
    memory_limit: int | None = None,
    max_in_flight: int = 4,
) -> float:
    """The scheduled step time of `block` (modified: pass a copy); inf if it cannot fit."""
    order = schedule_order(block, model, memory_limit, max_in_flight)
    if order is None:
        return math.inf
    return program_order_time(order, model)


def _blocks(module: ModuleOp) -> list[Block]:
    return [
        f.body.block
        for f in module.body.block.ops
        if isinstance(f, func.FuncOp) and len(f.body.blocks) == 1
    ]


def module_step_time(module: ModuleOp, model: CostModel, memory_limit: int | None = None) -> float:
    """Summed over functions: the better of scheduled and written order (on a copy)."""
    total = 0.0
    for block in _blocks(module.clone()):
        written = program_order_time(block.ops, model)  # before scheduling changes the copy
        total += min(written, scheduled_time(block, model, memory_limit))
    return total
