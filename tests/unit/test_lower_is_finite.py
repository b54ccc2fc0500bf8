"""
`lower-to-tpu` of `hlo.is_finite` (lowering/vector_ops.py `_is_finite`: -inf < x < inf,
ordered compares, below f32 on the widened value): bit for bit with level S and with
numpy's `isfinite` (the reference, independent of both) on every float type, random bit
patterns (NaNs, infinities, subnormals) and every special; level S charges the vector ops
the kernel emits (`hardware/cost.py` `FLOAT_MATH_OPS`, `compute_widen_ops`); inside a
fusion too.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import hlo
from shardc.hardware.cost import elementwise_vpu_ops
from shardc.interpreter.testing import parse, run_per_device
from shardc.tests.unit.test_lower_element_types import program, ty
from shardc.tests.unit.test_lower_movement import DEVICES, check
from shardc.tests.unit.test_lower_remainder import simulated_vpu_ops, values

DTYPES = {
    "f64": np.dtype(np.float64),
    "f32": np.dtype(np.float32),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f16": np.dtype(np.float16),
    "f8E4M3FN": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8E5M2": np.dtype(ml_dtypes.float8_e5m2),
}


def is_finite(shape: tuple[int, ...], dtype: str) -> str:
    t, r = ty(shape, dtype), ty(shape, "i1")
    return program([t], r, f"hlo.is_finite %a0 : ({t}) -> {r}")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(DTYPES)),
    st.tuples(st.sampled_from([1, 3, 8]), st.sampled_from([1, 5, 128])),
    st.integers(0, 2**16),
)
def test_is_finite_is_level_s_and_numpy(dtype: str, shape, seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = [[values(rng, shape, DTYPES[dtype])] for _ in range(DEVICES)]
    text = is_finite(shape, dtype)
    check(text, rows)  # level T == level S, bit for bit
    for row, got in zip(rows, run_per_device(text, rows), strict=True):
        assert np.array_equal(np.asarray(got[0]), np.isfinite(row[0].astype(np.float64)))


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_is_finite_of_every_special(dtype: str) -> None:
    """Signed zeros, the largest finite value and the smallest subnormal of the type (both
    signs), infinities where the type has them (f8E4M3FN has none: its NaN only), NaN."""
    info = ml_dtypes.finfo(DTYPES[dtype])
    specials = [0.0, -0.0, info.max, -info.max, info.smallest_subnormal, np.nan, 1.0]
    if dtype != "f8E4M3FN":
        specials += [np.inf, -np.inf]
    x = np.array(specials, np.float64).astype(DTYPES[dtype]).reshape(1, -1)
    text = is_finite(x.shape, dtype)
    check(text, [[x]] * DEVICES)
    (got,) = run_per_device(text, [[x]] * DEVICES)[0]
    want = [True, True, True, True, True, False, True] + [False, False][: len(specials) - 7]
    assert list(np.asarray(got)[0]) == want


@pytest.mark.parametrize("dtype", ["f64", "f32", "bf16", "f8E5M2"])
def test_level_s_charges_the_ops_the_lowering_emits(dtype: str) -> None:
    """Two splats, two compares and an and per element, and the widening below f32."""
    text = is_finite((16, 256), dtype)
    (op,) = [o for o in parse(text).walk() if isinstance(o, hlo.IsFiniteOp)]
    per_element = elementwise_vpu_ops(op)
    assert per_element == (5 if dtype in ("f64", "f32") else 6)
    assert simulated_vpu_ops(text) == per_element * 16 * 256


def test_is_finite_fused_with_its_producer() -> None:
    """`fusion` puts x * y and its is_finite in one loop: still level S's bits."""
    import shardc

    t, r = ty((8, 128), "bf16"), ty((8, 128), "i1")
    text = f"""spmd.mesh @m = <["x"={DEVICES}]>
func.func @main(%a0: {t}, %a1: {t}) -> {r} attributes {{spmd.per_device_io}} {{
  %p = hlo.mul %a0, %a1 : {t}
  %r = hlo.is_finite %p : ({t}) -> {r}
  func.return %r : {r}
}}"""
    fused = str(shardc.compile(text, "fusion"))
    assert "hlo.fusion" in fused
    rng = np.random.default_rng(7)
    rows = [[values(rng, (8, 128), DTYPES["bf16"]) for _ in range(2)] for _ in range(DEVICES)]
    check(fused, rows)
