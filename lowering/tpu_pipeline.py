"""
`tpu-pipeline`: `spmd-pipeline` then `lower-to-tpu` for one chip, from level G (or S) to
level T. It lives with the lowering (not in `passes/`) because it runs `lower-to-tpu`: the
layers import downward only.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.lowering.lower_to_tpu import LowerToTpuPass
from shardc.passes.rewrite_utils import check_option
from shardc.passes.spmd_pipeline import SpmdPipelinePass
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
