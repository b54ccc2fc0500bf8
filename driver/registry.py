"""The passes and pipelines shardc registers with its tools (name -> pass class factory)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _spmd_propagate() -> type[ModulePass]:
    from shardc.passes.spmd_propagate import SpmdPropagatePass

    return SpmdPropagatePass


def _spmd_partition() -> type[ModulePass]:
    from shardc.passes.spmd_partition import SpmdPartitionPass

    return SpmdPartitionPass


def _spmd_pipeline() -> type[ModulePass]:
    from shardc.passes.spmd_pipeline import SpmdPipelinePass

    return SpmdPipelinePass


def _tpu_pipeline() -> type[ModulePass]:
    from shardc.lowering.tpu_pipeline import TpuPipelinePass

    return TpuPipelinePass


def _collective_stats() -> type[ModulePass]:
    from shardc.passes.collective_stats import CollectiveStatsPass

    return CollectiveStatsPass


def _collective_combine() -> type[ModulePass]:
    from shardc.passes.collective_combine import CollectiveCombinePass

    return CollectiveCombinePass


def _schedule() -> type[ModulePass]:
    from shardc.passes.schedule import SchedulePass

    return SchedulePass


def _reduce_scatter_create() -> type[ModulePass]:
    from shardc.passes.reduce_scatter_create import ReduceScatterCreatePass

    return ReduceScatterCreatePass


def _all_gather_slice_simplify() -> type[ModulePass]:
    from shardc.passes.all_gather_slice_simplify import AllGatherSliceSimplifyPass

    return AllGatherSliceSimplifyPass


def _all_reduce_reassociate() -> type[ModulePass]:
    from shardc.passes.all_reduce_reassociate import AllReduceReassociatePass

    return AllReduceReassociatePass


def _collective_matmul() -> type[ModulePass]:
    from shardc.passes.collective_matmul import CollectiveMatmulPass

    return CollectiveMatmulPass


def _async_split() -> type[ModulePass]:
    from shardc.passes.async_split import AsyncSplitPass

    return AsyncSplitPass


def _micro_batch() -> type[ModulePass]:
    from shardc.passes.micro_batch import MicroBatchPass

    return MicroBatchPass


def _fusion() -> type[ModulePass]:
    from shardc.passes.fusion import FusionPass

    return FusionPass


def _lower_to_tpu() -> type[ModulePass]:
    from shardc.lowering.lower_to_tpu import LowerToTpuPass

    return LowerToTpuPass


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """shardc's own passes; xDSL's (`canonicalize`, `cse`, `dce`, ...) come with the driver."""
    return {
        "spmd-propagate": _spmd_propagate,
        "spmd-partition": _spmd_partition,
        "spmd-pipeline": _spmd_pipeline,
        "collective-stats": _collective_stats,
        "collective-combine": _collective_combine,
        "reduce-scatter-create": _reduce_scatter_create,
        "all-gather-slice-simplify": _all_gather_slice_simplify,
        "all-reduce-reassociate": _all_reduce_reassociate,
        "collective-matmul": _collective_matmul,
        "micro-batch": _micro_batch,
        "fusion": _fusion,
        "async-split": _async_split,
        "schedule": _schedule,
        "lower-to-tpu": _lower_to_tpu,
        "tpu-pipeline": _tpu_pipeline,
    }
