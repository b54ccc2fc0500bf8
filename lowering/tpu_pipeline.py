"""
`tpu-pipeline`: `spmd-pipeline` then `lower-to-tpu` for one chip, from level G (or S) to
level T. It lives with the lowering (not in `passes/`) because it runs `lower-to-tpu`: the
layers import downward only.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from shardc.lowering.lower_to_tpu import LowerToTpuPass
from shardc.passes.rewrite_utils import check_option
from shardc.passes.spmd_pipeline import SpmdPipelinePass
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass


@dataclass(frozen=True)
class TpuPipelinePass(SpmdPipelinePass):
    """
    `tpu-pipeline{chip= memory-limit= combine-threshold-bytes= micro-batch= vmem-limit=}`:
    `spmd-pipeline` then `lower-to-tpu`, both for the same chip (the cost model that
    schedules the collectives is the machine the kernel's blocks must fit), from level G
    (or S) to level T. The options are spmd-pipeline's (its `fusion` too: on by default,
    each fusion then one tiled loop, lowering/fusion.py; a fusion that cannot be one loop
    is lowered op by op and named in the kernel's `tpu.unfused` and the level-S summary
    line) and lower-to-tpu's `vmem-limit`.
    """

    name = "tpu-pipeline"

    vmem_limit: int | None = None
    """Passed to `lower-to-tpu`."""

    def __post_init__(self) -> None:
        ok = self.vmem_limit is None or self.vmem_limit > 0
        check_option(self.name, "vmem-limit", ok, "a positive number of bytes", self.vmem_limit)
        super().__post_init__()

    def passes(self) -> list[ModulePass]:
        return [
            *SpmdPipelinePass.passes(self),
            LowerToTpuPass(chip=self.chip, vmem_limit=self.vmem_limit),
        ]

    def spmd_pipeline(self) -> SpmdPipelinePass:
        """The `spmd-pipeline` this pipeline runs before `lower-to-tpu` (same options)."""
        return SpmdPipelinePass(**{f.name: getattr(self, f.name) for f in fields(SpmdPipelinePass)})

    def to_level_s(self, ctx: Context, module: ModuleOp) -> LowerToTpuPass:
        """
        Run every pass before `lower-to-tpu` on `module` as `apply` runs them and return
        the `lower-to-tpu` that follows: the program level S times is then the one this
        pipeline lowers. Applying `passes()[:-1]` one by one is not that program:
        `spmd-pipeline` keeps `all-reduce-reassociate`, `collective-combine`,
        `collective-matmul` and `micro-batch` only where its estimate says the step gets
        no slower, and hands `fusion` micro-batch's fused copy; without those gates the
        real-size transformer layer (examples/real_size) combined its collectives and
        split less, a program of 17.1 ms at level S on v5e against the pipeline's 8.9 ms
        (helper biglayer).
        """
        self.spmd_pipeline().apply(ctx, module)
        return LowerToTpuPass(chip=self.chip, vmem_limit=self.vmem_limit)
