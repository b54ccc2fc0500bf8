"""
`lower-to-tpu` of floor, ceil, round_nearest_even, round_nearest_afz, sign, cbrt, expm1,
log1p, tan, cosh and sinh (lowering/unary_math.py, issue 15 item 3) against level S
(interpreter/hlo_elementwise.py): every value of bf16, f16, f8E4M3FN and f8E5M2 bit for
bit; f32 and f64 on hypothesis-drawn values over the whole exponent range (tiny, huge,
subnormal) and specials: the rounding ops and sign bit for bit, the f64 code within its
stated ulps of numpy (f64) or one ulp (f32: the f64 value rounded once), specials
(signed zeros, infinities, NaN, overflow, expm1's -1, log1p's -inf) exactly, exact cubes
exact; integer sign bit for bit in every width; level S's charge is the lowered kernel's
vector ops.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.interpreter.testing import parse
from shardc.tests.unit.test_lower_atan2 import assert_within
from shardc.tests.unit.test_lower_complex import run_both
from shardc.tests.unit.test_lower_element_types import program, ty
from shardc.tests.unit.test_lower_movement import DEVICES
from shardc.tests.unit.test_lower_remainder import simulated_vpu_ops

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EXACT_OPS = ["floor", "ceil", "round_nearest_even", "round_nearest_afz", "sign"]
F64_OPS = ["cbrt", "expm1", "log1p", "tan", "cosh", "sinh"]
NARROW = {
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f16": np.dtype(np.float16),
    "f8E4M3FN": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8E5M2": np.dtype(ml_dtypes.float8_e5m2),
}
WIDE = {"f64": np.dtype(np.float64), "f32": np.dtype(np.float32)}
F64_ULPS = {"cbrt": 1, "cosh": 1, "log1p": 1, "expm1": 1, "tan": 2, "sinh": 1}
"""lowering/unary_math.py's stated (measured) bounds against numpy's f64 functions; cosh
and sinh 2 past exp's overflow (`assert_f64_ulps`)."""
EXP_OVERFLOW = 709.782712893384
"""Above it (and below 710.48) cosh and sinh are exp(|x| / 2)^2 / 2: 2 ulps."""


def assert_f64_ulps(op: str, x: np.ndarray, got: np.ndarray, want: np.ndarray) -> None:
    """Within `F64_ULPS[op]`, 2 where cosh / sinh are past exp's overflow."""
    past = np.abs(x.astype(np.float64)) > EXP_OVERFLOW if op in ("cosh", "sinh") else x != x
    assert_within(got[~past], want[~past], F64_ULPS[op])
    assert_within(got[past], want[past], 2)


SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, -2.0, 0.5, -0.5, 2.5, -2.5]
SPECIALS += [5e-324, -2.2e-308, 1.7e308, -1.7e308, 709.9, 710.4, -710.4, 711.0, -745.2]
SPECIALS += [1e-17, -1e-17, 1e16 + 2, 4503599627370497.0, 0.49999999999999994, 27.0, -8.0]


def both(op: str, x: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(level S's `op` of x, level T's) on device 0."""
    t = ty(x.shape, dtype)
    want, got = run_both(program([t], t, f"hlo.{op} %a0 : {t}"), [[x]] * DEVICES)
    return np.asarray(want[0][0]), np.asarray(got[0][0])


def assert_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Bit for bit, but a NaN may be any NaN."""
    assert got.dtype == want.dtype and got.shape == want.shape
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(g) & np.isnan(w)
    same = (g.view(np.uint64) == w.view(np.uint64)) | nan
    assert np.all(same), (g[~same][:8], w[~same][:8])


def every_value(dtype: np.dtype) -> np.ndarray:
    """Every bit pattern of a 16- or 8-bit float type, as a 2-d block."""
    n = 1 << (8 * dtype.itemsize)
    bits = np.arange(n, dtype=np.dtype(f"u{dtype.itemsize}")).view(dtype)
    return bits.reshape(-1, 256)


@pytest.mark.parametrize("dtype", sorted(NARROW))
@pytest.mark.parametrize("op", EXACT_OPS + F64_OPS)
def test_every_value_of_the_narrow_floats_is_level_s_bit_for_bit(op: str, dtype: str) -> None:
    want, got = both(op, every_value(NARROW[dtype]), dtype)
    assert_bits(got, want)


def values(rng: np.random.Generator, shape, dtype: np.dtype) -> np.ndarray:
    """Normals scaled over the type's exponent range (tiny to huge), halves (ties of the
    roundings), small integers, some specials."""
    top = 300 if dtype == np.float64 else 37
    v = rng.standard_normal(shape) * 10.0 ** rng.integers(-top, top + 1, size=shape)
    near = rng.standard_normal(shape) * 10.0 ** rng.uniform(-9, 3, size=shape)  # |x| < 1e3
    v = np.where(rng.random(shape) < 0.5, near, v)
    halves = rng.integers(-20, 21, size=shape) / 2
    v = np.where(rng.random(shape) < 0.1, halves, v)
    pick = rng.random(shape) < 0.1
    v = np.where(pick, np.array(SPECIALS)[rng.integers(0, len(SPECIALS), size=shape)], v)
    with np.errstate(over="ignore"):
        return v.astype(dtype)


@SETTINGS
@given(
    st.sampled_from(EXACT_OPS + F64_OPS),
    st.sampled_from(sorted(WIDE)),
    st.tuples(st.sampled_from([1, 3, 8]), st.sampled_from([1, 5, 128])),
    st.integers(0, 2**16),
)
def test_f32_and_f64_are_level_s_within_the_stated_ulps(op: str, dtype: str, shape, seed) -> None:
    rng = np.random.default_rng(seed)
    x = values(rng, shape, WIDE[dtype])
    want, got = both(op, x, dtype)
    if op in EXACT_OPS:
        assert_bits(got, want)
    elif dtype == "f64":
        assert_f64_ulps(op, x, got, want)
    else:
        assert_within(got, want, 1)


@pytest.mark.parametrize("dtype", sorted(WIDE))
@pytest.mark.parametrize("op", F64_OPS)
def test_specials_are_numpys(op: str, dtype: str) -> None:
    """Zeros (their signs), infinities, NaN, overflow and the ends of the range: where
    numpy's value is not a finite nonzero number, exactly; else within the ulps."""
    with np.errstate(over="ignore"):
        x = np.array(SPECIALS).astype(WIDE[dtype]).reshape(1, -1)
    want, got = both(op, x, dtype)
    if dtype == "f64":
        assert_f64_ulps(op, x, got, want)
    else:
        assert_within(got, want, 1)
    w = want.astype(np.float64)
    exact = ~np.isfinite(w) | (w == 0) | (np.abs(w) == 1)  # expm1's -1, cosh's 1
    assert_bits(got[exact], want[exact])


@pytest.mark.parametrize("scale", [-300, -7, 0, 100, 300])
def test_exact_cubes_have_exact_roots(scale: int) -> None:
    """cbrt of every exact cube q^3 (0 <= q < 2^17: q^3 has at most 51 bits), scaled by
    2^(3 scale), negated for odd q, is q 2^scale, as numpy's."""
    q = np.arange(1 << 17, dtype=np.float64) * 2.0**scale  # 0 too
    q = np.where(np.arange(q.size) % 2 == 0, q, -q).reshape(-1, 256)
    want, got = both("cbrt", q * q * q, "f64")
    assert np.array_equal(want, q)  # the reference is exact: the test is meaningful
    assert_bits(got, want)


INTS = ["i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64", "i2", "i4", "ui2", "ui4"]


@pytest.mark.parametrize("dtype", INTS)
def test_integer_sign_is_level_s_bit_for_bit(dtype: str) -> None:
    """-1 / 0 / 1 (unsigned: 0 / 1) in every width, the smallest and largest value too;
    sub-byte integers through their i32 lanes (lowering/narrow_ints.py)."""
    from shardc.interpreter.values import dtype_of
    from shardc.tests.unit.test_lower_movement import parse_type

    np_type = dtype_of(parse_type(dtype))
    info = ml_dtypes.iinfo(np_type)
    rng = np.random.default_rng(7)
    container = np.dtype(np.uint64 if info.min == 0 else np.int64)
    x = rng.integers(int(info.min), int(info.max), size=(8, 128), endpoint=True, dtype=container)
    x[0, :3] = [int(info.min), int(info.max), 0]
    x = x.astype(np_type)
    want, got = both("sign", x, dtype)
    assert got.dtype == want.dtype and np.array_equal(got.astype(np.int64), want.astype(np.int64))


COST_CASES = [(op, d) for op in EXACT_OPS + F64_OPS for d in ("f64", "f32", "bf16")]
COST_CASES += [("sign", d) for d in ("i32", "ui8", "i4")]


@pytest.mark.parametrize(("op", "dtype"), COST_CASES)
def test_level_s_charges_the_ops_the_lowering_emits(op: str, dtype: str) -> None:
    """hardware/cost.py's `elementwise_vpu_ops` (level S's charge per element) is the
    vector ops per element the lowered kernel runs at level T: they cannot drift."""
    from shardc.hardware.cost import elementwise_vpu_ops

    t = ty((16, 256), dtype)
    text = program([t], t, f"hlo.{op} %a0 : {t}")
    (o,) = [x for x in parse(text, "u.mlir").walk() if x.name == f"hlo.{op}"]
    per_element = elementwise_vpu_ops(o)
    if op in F64_OPS:
        assert per_element > 2  # vector code, not one op
    assert simulated_vpu_ops(text) == per_element * 16 * 256


def test_the_dispatch_and_the_module_list_the_same_ops() -> None:
    from shardc.lowering import unary_math, vector_ops

    assert set(unary_math.OPS) == set(vector_ops._UNARY_MATH)


FUSED = """
func.func @main(%x: tensor<16x256xbf16>) -> (tensor<16x256xbf16>, tensor<16x256xbf16>) {
  %r:2 = hlo.fusion(%p0 = %x) kind = loop, name = "unary_fusion" : (tensor<16x256xbf16>) -> (tensor<16x256xbf16>, tensor<16x256xbf16>) {
    %a = hlo.log1p %p0 : tensor<16x256xbf16>
    %b = hlo.sinh %a : tensor<16x256xbf16>
    %c = hlo.round_nearest_afz %b : tensor<16x256xbf16>
    %d = hlo.sign %p0 : tensor<16x256xbf16>
    hlo.return %c, %d : tensor<16x256xbf16>, tensor<16x256xbf16>
  }
  func.return %r#0, %r#1 : tensor<16x256xbf16>, tensor<16x256xbf16>
}
"""


def test_a_fusion_of_them_is_one_loop_equal_to_level_s_and_charged_its_ops() -> None:
    """In a fusion (lowering/fusion.py: one loop, intermediates in vregs) the ops are the
    same vector code: level S's values, and level S charges the loop's vector ops."""
    import shardc
    from shardc.dialects import hlo
    from shardc.hardware.cost import elementwise_vpu_ops
    from shardc.tests.unit.test_lower_fusion import check

    check(FUSED)
    inner = [o for o in parse(FUSED).walk() if isinstance(o, hlo.HloOp) and o.name != "hlo.fusion"]
    per_element = sum(elementwise_vpu_ops(o) for o in inner if not isinstance(o, hlo.ReturnOp))
    assert simulated_vpu_ops(FUSED) == per_element * 16 * 256
    s = shardc.run(FUSED, timing_only=True, chip="v5e").report["ops"]
    assert sum(row["flops"] for row in s) == per_element * 16 * 256
