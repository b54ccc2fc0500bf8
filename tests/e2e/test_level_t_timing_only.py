"""
Level T's timing-only mode against its valued mode (issue 15 item 4) on the partitioner's
generated programs (hypothesis: programs, meshes, shardings) through `tpu-pipeline`: the
same report (every step, finish, compute and communication time, DMA and byte count) and
the same trace, so the shape-only buffers, per-device vector clocks and box overlaps
change nothing but the cost of the simulation.
"""

from __future__ import annotations

import shardc
from hypothesis import HealthCheck, given, settings
from shardc.tests.e2e.test_partition_differential import partitionable_programs

GIVEN = ("inputs", "timing_only")
"""Report keys that say what the run was given, not what it simulated."""


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partitionable_programs())
def test_generated_programs_time_the_same_without_values(text: str) -> None:
    kernel = shardc.compile(text, "tpu-pipeline")
    valued = shardc.run(kernel.clone(), seed=0)
    timed = shardc.run(kernel, timing_only=True)
    assert timed.report["level"] == "T"
    for key, value in valued.report.items():
        if key not in GIVEN:
            assert timed.report[key] == value, key
    assert timed.timeline.trace() == valued.timeline.trace()
