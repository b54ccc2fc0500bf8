"""
Every example program (the ones tests/e2e/test_examples.py finds: `examples/*.mlir` and
`../shared/examples/*.mlir`; a copy of one runs once) at level T: compiled with `spmd-pipeline` and run at level S,
then lowered with `lower-to-tpu` and run on the level-T simulator, from the same global
inputs (seed 0); the outputs agree, exactly for integers, to a tight tolerance for floats
(ring reductions and tiled dots sum in another order than level S).

Ops `lower-to-tpu` cannot lower yet skip the program, the op named in the reason, so the
test becomes real as lowering/compute.py grows; the programs of collectives and
elementwise ops only (MUST_RUN) never skip.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import shardc
from shardc.interpreter.values import FLOAT_DTYPES
from shardc.tests.e2e.test_examples import EXAMPLES

UNSUPPORTED = "is not supported yet"
RTOL = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 2e-6}
"""Of the largest |level-S value| of the output; other float types: their epsilon x 4."""
MUST_RUN = {"collectives.mlir", "reshard.mlir"}


def distinct(paths: list[Path]) -> list[Path]:
    """The first of every set of identical programs (../shared/examples copies some)."""
    seen: set[str] = set()
    out = []
    for p in paths:
        if (text := p.read_text()) not in seen:
            seen.add(text)
            out.append(p)
    return out


PROGRAMS = distinct(EXAMPLES)


def tolerance(reference: np.ndarray) -> float:
    rtol = RTOL.get(reference.dtype, 4 * float(np.finfo(reference.dtype).eps))
    return rtol * max(float(np.max(np.abs(reference.astype(np.float64)), initial=0.0)), 1e-30)


def lower_or_skip(module, path: Path):
    """`lower-to-tpu`, or skip naming what is not supported yet."""
    try:
        return shardc.compile(module, "lower-to-tpu")
    except shardc.DiagnosticError as e:
        if UNSUPPORTED not in str(e) or path.name in MUST_RUN:
            raise
        pytest.skip(str(e).splitlines()[0].split(" op ", 1)[-1])


def test_the_examples_include_the_ones_that_must_run():
    assert MUST_RUN <= {p.name for p in PROGRAMS}


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_example_level_t_equals_level_s(path: Path):
    level_s = shardc.compile(path.read_text(), "spmd-pipeline", filename=str(path))
    want = shardc.run(level_s)
    kernel = lower_or_skip(level_s, path)
    got = shardc.run(kernel)
    assert got.report["level"] == "T"
    assert got.report["collectives"] == want.report["collectives"]
    assert list(got.outputs) == list(want.outputs)
    for name, ref in want.outputs.items():
        out = got.outputs[name]
        assert out.dtype == ref.dtype and out.shape == ref.shape, name
        if ref.dtype in FLOAT_DTYPES:
            diff = np.abs(out.astype(np.float64) - ref.astype(np.float64))
            assert float(diff.max(initial=0.0)) <= tolerance(ref), (
                f"{name}: max |diff| {diff.max()}"
            )
        else:
            np.testing.assert_array_equal(out, ref, err_msg=name)
