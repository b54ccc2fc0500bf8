"""
The cost model's estimate of a per-device block's step: its collectives split into
`_start`/`done` pairs and list-scheduled (`schedule`'s `BlockScheduler`), on the block as
given (callers pass a copy). One definition for every pass that applies a transformation
only where the estimate says the step gets faster (`micro-batch`, `collective-matmul`).
"""

from __future__ import annotations

import math

from shardc.dialects import collective
from shardc.hardware.cost import CostModel
from shardc.passes.async_split import split as async_split
from shardc.passes.schedule import BlockScheduler, ScheduleStuck
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block
from xdsl.pattern_rewriter import PatternRewriter


def scheduled_time(
    block: Block,
    model: CostModel,
    memory_limit: int | None = None,
    max_in_flight: int = 4,
) -> float:
    """The scheduled step time of `block` (modified: pass a copy); inf if it cannot fit."""
    for op in list(block.ops):
        if isinstance(op, collective.SYNC_OPS):
            async_split(op, PatternRewriter(op))
    try:
        _, _, time = BlockScheduler(block, model, memory_limit, max_in_flight).run()
    except ScheduleStuck:
        return math.inf
    return time


def module_step_time(module: ModuleOp, model: CostModel) -> float:
    """The summed scheduled time of every function of `module` (on a copy)."""
    copy = module.clone()
    return sum(
        scheduled_time(f.body.block, model)
        for f in copy.walk()
        if isinstance(f, func.FuncOp) and f.body.blocks
    )
