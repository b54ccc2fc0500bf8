"""
CI's fuzzing budget (issue 16 item 3): a few mutated inputs per tool, each of which must
end accepted or cleanly rejected (`harness.Outcome.defect is None`). `bench/fuzz.py` runs
the large budget.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.tests.fuzz.harness import TOOLS, mutated, run_tool


@pytest.mark.parametrize("tool", sorted(TOOLS))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_mutated_inputs_are_accepted_or_cleanly_rejected(tool: str, seed: int) -> None:
    text, suffix = mutated(TOOLS[tool][0], random.Random(seed))
    outcome = run_tool(tool, text, suffix)
    assert outcome.defect is None, f"{outcome}\n--- input ---\n{text}"
