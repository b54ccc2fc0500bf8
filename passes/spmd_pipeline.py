"""`spmd-pipeline`: from a global program to the partitioned per-device program."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from shardc.passes.collective_combine import CollectiveCombinePass
from shardc.passes.spmd_partition import SpmdPartitionPass
from shardc.passes.spmd_propagate import SpmdPropagatePass


@dataclass(frozen=True)
class SpmdPipelinePass(ModulePass):
    """
    propagate, partition, canonicalize, cse, collective-combine: each needs the one before;
    CSE merges the identical index computations and reshards that different users of one
    value asked for, and the combiner then merges independent collectives of one kind.
    """

    name = "spmd-pipeline"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        passes = (
            SpmdPropagatePass(),
            SpmdPartitionPass(),
            CanonicalizePass(),
            CommonSubexpressionElimination(),
            CollectiveCombinePass(),
        )
        for p in passes:
            p.apply(ctx, op)
