"""
Modules from XLA's SPMD-partitioner tests (`xla/service/spmd/spmd_partitioner_test.cc`:
HLO text with global shapes and `sharding=`, the partitioner's input), in
`tests/frontends/xla_partitioner/`: each imports as a level-G program and `spmd-pipeline`
partitions it; small ones run against level G with values, the large ones (up to GBs of
f32, as XLA's tests write them) are partitioned and timed without values. Most split a
dimension unevenly (f32[3,3] over 2 devices), as XLA's tests like to.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from shardc.driver.compiling import compile_module
from shardc.frontends.hlo_text import import_hlo_text
from shardc.interpreter.testing import parse, time_program

from tests.e2e.differential import partition_and_compare

MODULES = Path(__file__).with_name("xla_partitioner")


def cases() -> list:
    out = []
    for path in sorted(MODULES.glob("*.hlo")):
        out.append(pytest.param(path, id=path.stem))
    return out


@pytest.mark.parametrize("path", cases())
def test_partitioner_input_imports_at_level_g_and_partitions(path: Path) -> None:
    result = import_hlo_text(path.read_text(), path.name)
    assert result.stats.level == "G"
    program = str(result.module)
    module = parse(program)
    main = next(op for op in module.walk() if op.name == "func.func")
    elements = sum(math.prod(a.type.get_shape()) for a in main.body.block.args)  # pyright: ignore
    if elements <= 1 << 16:
        partition_and_compare(program, seed=0, note=path.name)
        return
    compile_module(module, "spmd-pipeline", path.name)
    timeline = time_program(str(module), abstract=True)
    assert timeline.report()["step_time_s"] > 0
