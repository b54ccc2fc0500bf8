"""`spmd-pipeline`: from a global program to the partitioned per-device program."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.canonicalize import CanonicalizePass

from shardc.passes.spmd_partition import SpmdPartitionPass
from shardc.passes.spmd_propagate import SpmdPropagatePass


@dataclass(frozen=True)
class SpmdPipelinePass(ModulePass):
    """propagate, partition, canonicalize (the order is the data flow: each needs the last)."""

    name = "spmd-pipeline"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for p in (SpmdPropagatePass(), SpmdPartitionPass(), CanonicalizePass()):
            p.apply(ctx, op)
