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


def _collective_stats() -> type[ModulePass]:
    from shardc.passes.collective_stats import CollectiveStatsPass

    return CollectiveStatsPass


def _collective_combine() -> type[ModulePass]:
    from shardc.passes.collective_combine import CollectiveCombinePass

    return CollectiveCombinePass


def _schedule() -> type[ModulePass]:
    from shardc.passes.schedule import SchedulePass

    return SchedulePass


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """shardc's own passes; xDSL's (`canonicalize`, `cse`, `dce`, ...) come with the driver."""
    return {
        "spmd-propagate": _spmd_propagate,
        "spmd-partition": _spmd_partition,
        "spmd-pipeline": _spmd_pipeline,
        "collective-stats": _collective_stats,
        "collective-combine": _collective_combine,
        "schedule": _schedule,
    }
