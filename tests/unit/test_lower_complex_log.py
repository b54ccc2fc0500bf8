"""
`lower-to-tpu` of complex `hlo.log` (lowering/complex_pairs.py `_log`: log|z| + i
atan2(b, a) on the parts, issue 15 item 3) against level S (numpy's complex128 log,
glibc's clog; complex<f32> rounded once): hypothesis-drawn values of every magnitude and
values on and near the unit circle (where log|z| cancels), and every pair of specials
(C99 Annex G: -inf + i arg of zeros, +inf of an infinite part even with a NaN one, NaN);
complex max / min (`_lexicographic`) bit for bit in numpy's lexicographic order.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from shardc.tests.unit.test_lower_complex import SETTINGS, TYPES, assert_same, run_both, values
from shardc.tests.unit.test_lower_element_types import program, ty
from shardc.tests.unit.test_lower_movement import DEVICES

ULPS = {"complex<f32>": 1, "complex<f64>": 4}
"""Each part's tolerance in its type's ulps: complex<f32> is computed in f64 at both
levels and rounds to the same f32 but near a rounding boundary; complex<f64>: atan2 within
2 ulps, log|z| a few (Kahan's log1p near |z| = 1, log(hi) + log(1 + q^2) / 2 elsewhere)."""
ABSOLUTE = {"complex<f32>": 0.0, "complex<f64>": 2.0**-104}
"""And an absolute slack: near |z| = 1, complex<f64>'s hi^2 - 1 + lo^2 adds the squares'
exact low parts with one rounding (about eps^2), where glibc sums them exactly."""


def assert_log_close(got: np.ndarray, want: np.ndarray, ctype: str) -> None:
    """NaN, infinities and zeros exactly as level S (signs too), the rest within `ULPS`."""
    eps = np.finfo(np.real(want).dtype).eps
    for g, w in ((np.real(got), np.real(want)), (np.imag(got), np.imag(want))):
        assert np.array_equal(np.isnan(g), np.isnan(w))
        exact = (w == 0) | np.isinf(w)
        assert np.array_equal(g[exact], w[exact])
        assert np.array_equal(np.signbit(g[exact]), np.signbit(w[exact]))
        fin = np.isfinite(w)
        err = np.abs(g[fin].astype(np.float64) - w[fin])
        bound = ULPS[ctype] * eps * np.abs(w[fin]) + ABSOLUTE[ctype]
        assert np.all(err <= bound), (g[fin][err > bound], w[fin][err > bound])


def near_unit(rng: np.random.Generator, shape, ctype: str) -> np.ndarray:
    """On and near the unit circle: log|z| tiny, the cancellation a naive log(a^2 + b^2)
    suffers."""
    part = np.float32 if ctype == "complex<f32>" else np.float64
    angle = rng.uniform(-np.pi, np.pi, shape)
    radius = 1 + rng.standard_normal(shape) * 10.0 ** rng.integers(-16, -1, shape)
    z = np.empty(shape, TYPES[ctype])
    z.real = (radius * np.cos(angle)).astype(part)
    z.imag = (radius * np.sin(angle)).astype(part)
    return z


@SETTINGS
@given(
    st.sampled_from(sorted(TYPES)),
    st.tuples(st.sampled_from([1, 3, 8]), st.sampled_from([1, 5, 128])),
    st.integers(0, 2**16),
    st.booleans(),
)
def test_log_is_level_s_within_its_ulps(ctype: str, shape, seed: int, unit: bool) -> None:
    rng = np.random.default_rng(seed)
    t = ty(shape, ctype)
    draw = near_unit if unit else values
    rows = [[draw(rng, shape, ctype)] for _ in range(DEVICES)]
    want, got = run_both(program([t], t, f"hlo.log %a0 : {t}"), rows)
    for d in range(DEVICES):
        assert_log_close(got[d][0], want[d][0], ctype)


@pytest.mark.parametrize("ctype", sorted(TYPES))
def test_log_special_values_are_c99s(ctype: str) -> None:
    """Every pair of signed zeros, infinities, NaN, one, huge and subnormal parts."""
    big = 1.7e308 if ctype == "complex<f64>" else 3.4e38
    s = np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan, big, -big, 5e-324])
    re, im = np.meshgrid(s, s)
    z = np.empty(re.shape, TYPES[ctype])
    with np.errstate(over="ignore"):
        z.real, z.imag = re, im
    t = ty(z.shape, ctype)
    want, got = run_both(program([t], t, f"hlo.log %a0 : {t}"), [[z]] * DEVICES)
    assert_log_close(got[0][0], want[0][0], ctype)


@SETTINGS
@given(
    st.sampled_from(sorted(TYPES)),
    st.sampled_from(["max", "min"]),
    st.tuples(st.sampled_from([1, 3, 8]), st.sampled_from([1, 5, 128])),
    st.integers(0, 2**16),
)
def test_max_min_are_numpys_lexicographic_order(ctype: str, op: str, shape, seed: int):
    """Bit for bit with level S (numpy's maximum / minimum of complex numbers): real parts
    first, ties (half the real parts shared, signed zeros) by the imaginary parts, NaN
    parts as numpy propagates them."""
    rng = np.random.default_rng(seed)
    a, b = values(rng, shape, ctype), values(rng, shape, ctype)
    tie = rng.random(shape) < 0.5
    b.real = np.where(tie, a.real, b.real)
    t = ty(shape, ctype)
    want, got = run_both(program([t, t], t, f"hlo.{op} %a0, %a1 : {t}"), [[a, b]] * DEVICES)
    for d in range(DEVICES):
        assert_same(got[d][0], np.asarray(want[d][0]))
