"""
`lower-to-tpu` of float `hlo.remainder` (lowering/vector_ops.py `float_remainder`, issue 15
item 3): fmod reduced in exact f64 steps, bit for bit with level S (numpy's fmod, exact)
for f32, bf16, f16 and the f8 types: hypothesis-drawn values over the whole exponent range
(ratios |a / b| up to f32's 2^277, subnormals), and every special: signed zeros (the sign
of a), infinities (x % inf = x, inf % y = NaN), NaN, y = 0 (NaN), |a| < |b|, a multiple of
b (a signed zero). f64: an integer long division of the significands (f64_remainder.py),
checked against level S and numpy's fmod.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.interpreter.testing import parse, run_per_device
from shardc.tests.unit.test_lower_element_types import program, ty
from shardc.tests.unit.test_lower_movement import DEVICES, check

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DTYPES = {
    "f32": np.dtype(np.float32),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f16": np.dtype(np.float16),
    "f8E4M3FN": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8E5M2": np.dtype(ml_dtypes.float8_e5m2),
}
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.0, -7.5, 1e-45, 3e38]


def values(rng: np.random.Generator, shape, dtype: np.dtype) -> np.ndarray:
    """Random bit patterns (every exponent, subnormals, NaNs, infinities), some specials."""
    width = dtype.itemsize
    bits = rng.integers(0, 256**width, size=shape, dtype=np.uint64)
    x = bits.astype(np.dtype(f"u{width}")).view(dtype)
    pick = rng.random(size=shape)
    special = np.array(SPECIALS, np.float32)[rng.integers(0, len(SPECIALS), size=shape)]
    return np.where(pick < 0.25, special.astype(dtype), x).astype(dtype)


@SETTINGS
@given(
    st.sampled_from(sorted(DTYPES)),
    st.tuples(st.sampled_from([1, 3, 8]), st.sampled_from([1, 5, 128])),
    st.integers(0, 2**16),
)
def test_float_remainder_is_level_s_bit_for_bit(dtype: str, shape, seed: int) -> None:
    rng = np.random.default_rng(seed)
    t = ty(shape, dtype)
    rows = []
    for _ in range(DEVICES):
        a, b = values(rng, shape, DTYPES[dtype]), values(rng, shape, DTYPES[dtype])
        if rng.random() < 0.3:  # exact multiples: a signed zero
            a = (b.astype(np.float32) * np.float32(rng.integers(-4, 5))).astype(b.dtype)
        rows.append([a, b])
    check(program([t, t], t, f"hlo.remainder %a0, %a1 : {t}"), rows)


def test_float_remainder_specials_and_extreme_ratios() -> None:
    """Every pair of specials, and the largest f32 by the smallest subnormal (11 steps)."""
    s = np.array([*SPECIALS, 3.4028235e38, 1.4e-45, -2.5e-40, 16777217.0], np.float32)
    a, b = np.meshgrid(s, s)
    t = ty(a.shape, "f32")
    check(program([t, t], t, f"hlo.remainder %a0, %a1 : {t}"), [[a, b]] * DEVICES)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_the_largest_ratio_of_each_type(dtype: str) -> None:
    """The largest finite value (and its neighbours) by the smallest subnormals: the most
    steps the type's reduction takes (`hardware.cost.FMOD_STEPS`)."""
    info = ml_dtypes.finfo(DTYPES[dtype])
    top = np.array([info.max, -info.max, info.max / 3], np.float32)
    tiny = info.smallest_subnormal
    low = np.array([tiny, 3 * tiny, 7 * tiny], np.float32)
    a, b = (x.astype(DTYPES[dtype]) for x in np.meshgrid(top, low))
    t = ty(a.shape, dtype)
    check(program([t, t], t, f"hlo.remainder %a0, %a1 : {t}"), [[a, b], [b, a]])


def simulated_vpu_ops(text: str, chip: str = "v5e") -> float:
    """The VPU ops (FLOPs of the `ops` rows) the level-T simulator charges for the kernel
    `lower-to-tpu` makes of `text`, timing only: what the lowering emits, as charged."""
    import shardc

    kernel = shardc.compile(text, f"lower-to-tpu{{chip={chip}}}")
    report = shardc.run(kernel, timing_only=True, chip=chip).report
    return sum(row["flops"] for row in report["ops"])


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16"])  # f8: no timing-only placeholder
def test_level_s_charges_the_ops_the_lowering_emits(dtype: str) -> None:
    """hardware/cost.py's `elementwise_vpu_ops` of a remainder (what level S charges per
    element) is the vector ops per element of the lowered kernel: the two cannot drift."""
    import shardc
    from shardc.dialects import hlo
    from shardc.hardware.cost import FMOD_STEPS, elementwise_vpu_ops

    t = ty((16, 256), dtype)
    text = program([t, t], t, f"hlo.remainder %a0, %a1 : {t}")
    (op,) = [o for o in parse(text, "rem.mlir").walk() if isinstance(o, hlo.RemainderOp)]
    per_element = elementwise_vpu_ops(op)
    assert per_element > FMOD_STEPS[dtype][1] * 10  # the steps, not one op
    assert simulated_vpu_ops(text) == per_element * 16 * 256
    s = shardc.run(text, timing_only=True, chip="v5e").report["ops"]
    assert sum(row["flops"] for row in s) == per_element * 16 * 256


def test_level_s_charges_the_f64_long_division() -> None:
    """f64's remainder (lowering/f64_remainder.py's 205 steps): level S charges
    `elementwise_vpu_ops` per element, the lowered kernel's counted vector ops, not one."""
    import shardc
    from shardc.dialects import hlo
    from shardc.hardware.cost import F64_FMOD_STEP_OPS, F64_FMOD_STEPS, elementwise_vpu_ops

    t = ty((16, 256), "f64")
    text = program([t, t], t, f"hlo.remainder %a0, %a1 : {t}")
    (op,) = [o for o in parse(text, "rem.mlir").walk() if isinstance(o, hlo.RemainderOp)]
    per_element = elementwise_vpu_ops(op)
    assert per_element > F64_FMOD_STEPS * F64_FMOD_STEP_OPS  # the steps, not one op
    assert simulated_vpu_ops(text) == per_element * 16 * 256
    s = shardc.run(text, timing_only=True, chip="v5e").report["ops"]
    assert sum(row["flops"] for row in s) == per_element * 16 * 256


F64_SPECIALS = [
    0.0,
    -0.0,
    np.inf,
    -np.inf,
    np.nan,
    1.0,
    -3.0,
    5e-324,
    -2.2e-308,
    1.7976931348623157e308,
]


def f64_values(rng: np.random.Generator, shape) -> np.ndarray:
    """Random f64 bit patterns (every exponent, subnormals, NaNs), some specials, some
    near each other (small exponent differences)."""
    x = rng.integers(0, 2**64, size=shape, dtype=np.uint64).view(np.float64)
    pick = rng.random(size=shape)
    special = np.array(F64_SPECIALS)[rng.integers(0, len(F64_SPECIALS), size=shape)]
    near = rng.standard_normal(size=shape) * 10.0 ** rng.integers(-5, 6, size=shape)
    return np.where(pick < 0.2, special, np.where(pick < 0.5, near, x))


@SETTINGS
@given(st.tuples(st.sampled_from([1, 3, 8]), st.sampled_from([1, 5, 128])), st.integers(0, 2**16))
def test_f64_remainder_is_numpy_fmod_bit_for_bit(shape, seed: int) -> None:
    """f64 (`lowering/f64_remainder.py`): level S and an independent numpy fmod."""
    rng = np.random.default_rng(seed)
    t = ty(shape, "f64")
    rows = [[f64_values(rng, shape), f64_values(rng, shape)] for _ in range(DEVICES)]
    for a, b in rows[:2]:
        if rng.random() < 0.5:
            a[...] = b * rng.integers(-9, 10, size=shape)  # exact multiples: signed zeros
    check(program([t, t], t, f"hlo.remainder %a0, %a1 : {t}"), rows)


def test_f64_remainder_extremes_against_numpy() -> None:
    """The largest exponent difference (the max by the smallest subnormal: 205 steps),
    subnormal results, every pair of specials; compared with level S (the oracle) and,
    independently, np.fmod on the same values."""
    s = np.array([*F64_SPECIALS, 2.0**1023 * 1.5, 3 * 5e-324, 2.0**-1000, 1e300 / 7], np.float64)
    a, b = np.meshgrid(s, s)
    t = ty(a.shape, "f64")
    text = program([t, t], t, f"hlo.remainder %a0, %a1 : {t}")
    check(text, [[a, b]] * DEVICES)
    with np.errstate(invalid="ignore"):
        want = np.fmod(a, b)
    got = run_per_device(text, [[a, b]] * DEVICES)[0][0]
    assert np.array_equal(np.asarray(got), want, equal_nan=True)
