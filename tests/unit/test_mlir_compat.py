"""
The generic form we print is valid MLIR: `mlir-opt-19 --allow-unregistered-dialect`
(Debian's `mlir-19-tools`; skipped where it is not installed) accepts ~30 random
programs of each level, printed generically, in one `--split-input-file` run.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.tests.unit.strategies import (
    RandomChooser,
    build_collective_program,
    build_hlo_program,
    collective_programs,
    hlo_programs,
    parse,
    print_module,
)

MLIR_OPT = shutil.which("mlir-opt-19")

pytestmark = pytest.mark.skipif(MLIR_OPT is None, reason="mlir-opt-19 is not installed")


def mlir_opt_accepts(generic_modules: list[str]) -> None:
    assert MLIR_OPT is not None
    text = "\n// -----\n".join(generic_modules)
    result = subprocess.run(
        [MLIR_OPT, "--allow-unregistered-dialect", "--split-input-file", "--mlir-print-op-generic"],
        input=text,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[:4000]


def test_seeded_programs_are_valid_mlir():
    programs = [
        print_module(parse(build(RandomChooser(seed))), generic=True)
        for seed in range(15)
        for build in (build_hlo_program, build_collective_program)
    ]
    mlir_opt_accepts(programs)


@settings(
    deadline=None,
    max_examples=1,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(st.one_of(hlo_programs(), collective_programs()), min_size=30, max_size=30))
def test_hypothesis_programs_are_valid_mlir(programs: list[str]):
    """One mlir-opt run over 30 hypothesis programs (shrinks to the failing one)."""
    mlir_opt_accepts([print_module(parse(p), generic=True) for p in programs])
