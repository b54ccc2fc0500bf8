"""
`lower-to-tpu` of `hlo.atan2` (lowering/atan2.py: range reduction and Cephes' rational
approximation in f64, issue 15 item 3) against level S (numpy's arctan2 in f64, rounded
once): hypothesis-drawn values over the whole exponent range within 2 f64 ulps (f64) or
one ulp of the type (f32, bf16, f16: the f64 result rounded once, equal but where it
straddles a rounding boundary); every pair of special values (signed zeros, infinities,
NaN, subnormals, the largest) exactly, signs of zeros included; and level S's charge is
the lowered kernel's vector ops. `hlo.atan` lowers as atan2(x, 1), tested the same way.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.interpreter.testing import parse
from shardc.tests.unit.test_lower_complex import run_both
from shardc.tests.unit.test_lower_element_types import program, ty
from shardc.tests.unit.test_lower_movement import DEVICES
from shardc.tests.unit.test_lower_remainder import simulated_vpu_ops

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DTYPES = {
    "f64": np.dtype(np.float64),
    "f32": np.dtype(np.float32),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f16": np.dtype(np.float16),
}
ULPS = {"f64": 2, "f32": 1, "bf16": 1, "f16": 1}
"""Stated tolerance: f64's approximation is within 2 ulps (1 seen); the narrower types
round that f64 value once, as level S rounds numpy's."""
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 5e-324, -2.2e-308, 1.7e308, 0.5]


def atan2_of(dtype: str, y: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(level S's atan2, level T's) of device 0."""
    t = ty(y.shape, dtype)
    want, got = run_both(program([t, t], t, f"hlo.atan2 %a0, %a1 : {t}"), [[y, x]] * DEVICES)
    return np.asarray(want[0][0]), np.asarray(got[0][0])


def assert_within(got: np.ndarray, want: np.ndarray, ulps: int) -> None:
    """Equal (zeros' signs too, NaN for NaN), or within `ulps` of want's type."""
    assert got.dtype == want.dtype and got.shape == want.shape
    g, w = got.astype(np.float64), want.astype(np.float64)
    same = ((g == w) & (np.signbit(g) == np.signbit(w))) | (np.isnan(g) & np.isnan(w))
    with np.errstate(invalid="ignore"):  # spacing of NaN and inf
        spacing = np.spacing(np.abs(want)).astype(np.float64)
    close = np.isfinite(w) & (np.abs(g - w) <= ulps * spacing)
    assert np.all(same | close), (g[~(same | close)], w[~(same | close)])


def values(rng: np.random.Generator, shape, dtype: np.dtype) -> np.ndarray:
    """Normals scaled over the type's exponent range, some specials."""
    top = int(np.log10(float(np.finfo(dtype).max))) if dtype != np.float64 else 300
    v = rng.standard_normal(shape) * 10.0 ** rng.integers(-top, top + 1, size=shape)
    pick = rng.random(shape) < 0.1
    v = np.where(pick, np.array(SPECIALS)[rng.integers(0, len(SPECIALS), size=shape)], v)
    with np.errstate(over="ignore"):
        return v.astype(dtype)


@SETTINGS
@given(
    st.sampled_from(sorted(DTYPES)),
    st.tuples(st.sampled_from([1, 3, 8]), st.sampled_from([1, 5, 128])),
    st.integers(0, 2**16),
    st.booleans(),
)
def test_atan2_is_level_s_within_its_ulps(dtype: str, shape, seed: int, near: bool) -> None:
    """`near`: |y| and |x| of one magnitude (angles across every octant, the t > 0.66
    reduction), else independent magnitudes (tiny and huge ratios)."""
    rng = np.random.default_rng(seed)
    y = values(rng, shape, DTYPES[dtype])
    x = values(rng, shape, DTYPES[dtype])
    if near:
        with np.errstate(over="ignore"):
            x = (y.astype(np.float64) * rng.uniform(-3, 3, shape)).astype(DTYPES[dtype])
    want, got = atan2_of(dtype, y, x)
    assert_within(got, want, ULPS[dtype])


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_atan2_special_values_are_numpys(dtype: str) -> None:
    """Every pair of specials (C99's table: +-0 and +-pi by x's sign bit, +-pi/2,
    +-pi/4 and +-3pi/4 of infinities, NaN), exactly but for the finite angles' ulps."""
    with np.errstate(over="ignore"):
        sp = np.array(SPECIALS).astype(DTYPES[dtype])
    y, x = (np.ascontiguousarray(v) for v in np.meshgrid(sp, sp))
    want, got = atan2_of(dtype, y, x)
    assert_within(got, want, ULPS[dtype])
    exact = ~np.isfinite(y.astype(float)) | (y.astype(float) == 0)
    assert_within(got[exact], want[exact], 0)  # zeros, infinities, NaN: C99's exactly


@pytest.mark.parametrize("dtype", ["f64", "f32", "bf16"])
def test_level_s_charges_the_ops_the_lowering_emits(dtype: str) -> None:
    """hardware/cost.py's `elementwise_vpu_ops` of an atan2 (level S's charge per element)
    is the vector ops per element the lowered kernel runs at level T: they cannot drift."""
    import shardc
    from shardc.dialects import hlo
    from shardc.hardware.cost import ATAN2_OPS, elementwise_vpu_ops

    t = ty((16, 256), dtype)
    text = program([t, t], t, f"hlo.atan2 %a0, %a1 : {t}")
    (op,) = [o for o in parse(text, "atan2.mlir").walk() if isinstance(o, hlo.Atan2Op)]
    per_element = elementwise_vpu_ops(op)
    assert per_element >= ATAN2_OPS  # the polynomial and the quadrant, not one op
    assert simulated_vpu_ops(text) == per_element * 16 * 256
    s = shardc.run(text, timing_only=True, chip="v5e").report["ops"]
    assert sum(row["flops"] for row in s) == per_element * 16 * 256


def test_a_reduce_body_is_charged_its_atan2s_vector_code() -> None:
    """A reduce body's charge (`reduce_body_ops`, also the lowering's work estimate) counts
    an atan2 as its vector ops, not one op."""
    from shardc.dialects import hlo
    from shardc.hardware.cost import ATAN2_OPS, ATAN2_WIDEN_OPS, reduce_body_ops

    v = "tensor<f32>"
    text = f"""spmd.mesh @m = <["x"={DEVICES}]>
func.func @main(%x: tensor<8x128xf32>, %i: {v}) -> tensor<8xf32> attributes {{spmd.per_device_io}} {{
  %r = hlo.reduce(%x init: %i) across dims = [1] : (tensor<8x128xf32>, {v}) -> tensor<8xf32> reducer(%a: {v}, %b: {v}) {{
    %t = hlo.atan2 %a, %b : {v}
    %s = hlo.max %t, %b : {v}
    hlo.return %s : {v}
  }}
  func.return %r : tensor<8xf32>
}}"""
    (op,) = [o for o in parse(text, "body.mlir").walk() if isinstance(o, hlo.ReduceOp)]
    assert reduce_body_ops(op) == ATAN2_OPS + ATAN2_WIDEN_OPS + 1


@SETTINGS
@given(
    st.sampled_from(sorted(DTYPES)),
    st.tuples(st.sampled_from([1, 3, 8]), st.sampled_from([1, 5, 128])),
    st.integers(0, 2**16),
)
def test_atan_is_atan2_of_one_within_its_ulps(dtype: str, shape, seed: int) -> None:
    """`hlo.atan` lowers as atan2(x, 1) (the same vector code): level S's arctan within
    the same ulps, its specials (signed zeros, +-pi/2 of infinities, NaN) exactly."""
    rng = np.random.default_rng(seed)
    x = values(rng, shape, DTYPES[dtype])
    t = ty(shape, dtype)
    want, got = run_both(program([t], t, f"hlo.atan %a0 : {t}"), [[x]] * DEVICES)
    assert_within(np.asarray(got[0][0]), np.asarray(want[0][0]), ULPS[dtype])


@pytest.mark.parametrize("dtype", ["f64", "bf16"])
def test_level_s_charges_atans_ops(dtype: str) -> None:
    """An atan's charge is its lowered kernel's vector ops (atan2's and the splat 1)."""
    from shardc.dialects import hlo
    from shardc.hardware.cost import ATAN2_OPS, elementwise_vpu_ops

    t = ty((16, 256), dtype)
    text = program([t], t, f"hlo.atan %a0 : {t}")
    (op,) = [o for o in parse(text, "atan.mlir").walk() if isinstance(o, hlo.AtanOp)]
    assert elementwise_vpu_ops(op) > ATAN2_OPS
    assert simulated_vpu_ops(text) == elementwise_vpu_ops(op) * 16 * 256
