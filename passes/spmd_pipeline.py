"""
`spmd-pipeline{chip= memory-limit= combine-threshold-bytes= micro-batch=true fusion=true}`: from a
global program to the optimized, scheduled per-device program.

The order is the data flow, each pass needing what the one before made:

1. `spmd-propagate`, `spmd-partition`: the per-device program with sync collectives;
2. `canonicalize`, `cse`: fold what partitioning left (index arithmetic, identical reshards);
3. `reduce-scatter-create`, `all-gather-slice-simplify`, `all-reduce-reassociate`: fewer,
   smaller collectives (cleanups of patterns partitioning and users write);
4. `collective-combine`: merge independent collectives of one kind — before async-split,
   which only wraps what is left;
5. `collective-matmul`: overlap an all_gather feeding a dot (or a dot feeding a
   reduce_scatter) with the dot itself, by decomposition into permutes;
6. `micro-batch`: where the cost model says it pays, cut the program into chunks along a
   dimension that flows through its collectives (the batch), so that one chunk's
   collective overlaps the next chunk's compute (tensor parallelism: the all_reduce after
   each row-parallel dot). After `collective-combine`, which can merge the chunks'
   collectives back together after the estimate counted on them apart (run before it,
   `dp_grads large` in bench/overlap.py is 3-4% slower), and after `collective-matmul`,
   whose rings it can cut too (its estimate sees them); before `async-split`, since it
   splits sync collectives and estimates each choice by running async-split and the
   scheduler on a copy;
7. `fusion` (`fusion=false` skips it): elementwise chains, reductions and dot epilogues
   as fused ops, costed by the bytes crossing them; after micro-batch (which cuts the
   unfused ops) and before async-split, so that the scheduler sees the fusions;
8. `async-split`, `schedule`: every collective as start/done, ordered by the cost model so
   communication hides behind independent compute.

`bench/overlap.py` measures the result against synchronous collectives and the roofline.
On a level-S program (already partitioned) steps 1 skip it and the rest apply.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.hardware.chips import CHIPS
from shardc.passes.all_gather_slice_simplify import AllGatherSliceSimplifyPass
from shardc.passes.all_reduce_reassociate import AllReduceReassociatePass
from shardc.passes.async_split import AsyncSplitPass
from shardc.passes.collective_combine import CollectiveCombinePass
from shardc.passes.collective_matmul import CollectiveMatmulPass
from shardc.passes.fusion import FusionPass
from shardc.passes.micro_batch import MicroBatchPass
from shardc.passes.reduce_scatter_create import ReduceScatterCreatePass
from shardc.passes.rewrite_utils import check_option
from shardc.passes.schedule import SchedulePass
from shardc.passes.spmd_partition import SpmdPartitionPass
from shardc.passes.spmd_propagate import SpmdPropagatePass
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination


@dataclass(frozen=True)
class SpmdPipelinePass(ModulePass):
    """The passes of the module docstring, in its order."""

    name = "spmd-pipeline"

    chip: str = "v5e"
    """The chip whose cost model drives the scheduler."""
    memory_limit: int | None = None
    """Passed to `schedule`."""
    combine_threshold_bytes: int = 32 * 1024 * 1024
    """Passed to `collective-combine`."""
    micro_batch: bool = True
    """Run `micro-batch` (false: leave the program unsplit)."""
    fusion: bool = True
    """Run `fusion` (false: every op its own kernel, as level T lowers them today)."""

    def __post_init__(self) -> None:
        # The pipeline's own options first (so a bad one names this pipeline), then building
        # the passes checks theirs: a bad one is a bad pipeline when it is parsed, not a
        # failure halfway through the run.
        check_option(
            self.name, "chip", self.chip in CHIPS, f"one of {', '.join(CHIPS)}", f"'{self.chip}'"
        )
        self.passes()

    def partitioning_passes(self) -> list[ModulePass]:
        """Steps 1-4: the collectives partitioning decides, cleaned up and combined."""
        return [
            SpmdPropagatePass(),
            SpmdPartitionPass(chip=self.chip),
            CanonicalizePass(),
            CommonSubexpressionElimination(),
            ReduceScatterCreatePass(),
            AllGatherSliceSimplifyPass(),
            AllReduceReassociatePass(),
            CollectiveCombinePass(threshold_bytes=self.combine_threshold_bytes),
        ]

    def passes(self) -> list[ModulePass]:
        return [
            *self.partitioning_passes(),
            CollectiveMatmulPass(chip=self.chip),
            *(
                [MicroBatchPass(chip=self.chip, memory_limit=self.memory_limit)]
                if self.micro_batch
                else []
            ),
            *([FusionPass()] if self.fusion else []),
            AsyncSplitPass(),
            SchedulePass(memory_limit=self.memory_limit, chip=self.chip),
        ]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for p in self.passes():
            p.apply(ctx, op)
