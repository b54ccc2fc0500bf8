"""
Test-suite configuration shared by every test folder.

Hypothesis profiles: `ci` is derandomized (the same examples on every run, no example
database), so a CI run is reproducible and a red CI is not a coin toss; `dev` (the default
elsewhere) explores new examples each run. `CI=true` (as CI sets it) selects `ci`;
`HYPOTHESIS_PROFILE=NAME` selects one explicitly.

Markers: `slow` marks the level-T timing tests that take seconds each; they run by default
(CI runs everything), `-m "not slow"` skips them for a quick local loop.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev")
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a test that takes seconds (level-T timing runs)")


def pytest_report_header(config: pytest.Config) -> str:
    return f"hypothesis profile: {settings.get_current_profile_name()}"
