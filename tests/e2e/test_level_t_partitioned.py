"""
The partitioner's generated programs (hypothesis: programs, meshes, shardings), compiled
to level S by `spmd-pipeline` and on to level T by `tpu-pipeline`: the level-T simulation
gives the level-S interpreter's numbers, with none of the simulator's diagnostics.
"""

from __future__ import annotations

import shardc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.tests.e2e.differential import assert_close
from shardc.tests.e2e.test_partition_differential import partitionable_programs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partitionable_programs(), st.integers(0, 3))
def test_generated_programs_at_level_t_equal_level_s(text: str, seed: int) -> None:
    level_s = shardc.run(shardc.compile(text, "spmd-pipeline"), seed=seed)
    level_t = shardc.run(shardc.compile(text, "tpu-pipeline"), seed=seed)
    assert level_t.report["level"] == "T"
    assert_close(level_s.outputs, level_t.outputs, exact=False)
