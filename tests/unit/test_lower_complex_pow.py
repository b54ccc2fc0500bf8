"""
`lower-to-tpu` of complex pow (issue 15 item 3, lowering/complex_pairs.py `_pow`) against
level S's numpy power on hypothesis-drawn values: its special cases (b = 0, a = 0) and
integer exponents below 100 (multiplied out with numpy's uncontracted product, Smith's
division for negative ones) bit for bit, infinities, NaN and signed zeros included; any
other exponent exp(b log a) with b log a the uncontracted product (level S: glibc's cpow,
cpowf in float for complex<f32>): within 4 ulps of |a^b| per unit of the product scale of
b log a (its rounding, which exp turns into a relative error; measured at most 1.2), a
result of at least the smallest normal; a non-finite level-S part where level T has one
too. The integer paths' op count and the step time: test_complex_cost.py and below.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from shardc.tests.unit.test_lower_complex import (
    SETTINGS,
    TYPES,
    assert_same,
    product_scale,
    run_both,
    values,
)
from shardc.tests.unit.test_lower_element_types import program, ty
from shardc.tests.unit.test_lower_movement import DEVICES

SHAPE = (8, 128)


def pow_program(ctype: str, shape=SHAPE) -> str:
    t = ty(shape, ctype)
    return program([t, t], t, f"hlo.pow %a0, %a1 : {t}")


def integer_exponents(rng: np.random.Generator, shape, ctype: str) -> np.ndarray:
    """Integers in [-110, 110] (the multiplied-out ones and some beyond), with +-0 or a
    nonzero imaginary part now and then."""
    n = rng.integers(-110, 111, shape).astype(np.float64)
    n = np.where(rng.random(shape) < 0.2, rng.integers(-4, 5, shape), n)
    imag = np.where(rng.random(shape) < 0.5, 0.0, -0.0)
    imag = np.where(rng.random(shape) < 0.05, 1.0, imag)
    out = np.empty(shape, TYPES[ctype])
    out.real, out.imag = n, imag
    return out


@SETTINGS
@given(st.sampled_from(sorted(TYPES)), st.integers(0, 2**16))
def test_integer_exponents_are_level_s(ctype: str, seed: int) -> None:
    """Bit for bit (any NaN for a NaN), bases of every magnitude and the specials; where
    the imaginary part is nonzero or |n| >= 100, only the finite results are bounded
    (`test_other_exponents_are_close`)."""
    rng = np.random.default_rng(seed)
    rows = [[values(rng, SHAPE, ctype), integer_exponents(rng, SHAPE, ctype)] for _ in range(2)]
    want, got = run_both(pow_program(ctype), rows)
    for d in range(DEVICES):
        e = rows[d][1]
        exact = (e.imag == 0) & (np.abs(e.real) < 100)
        assert_same(got[d][0][exact], want[d][0][exact])


def test_special_cases_are_level_s() -> None:
    """b = 0 gives 1 whatever a (NaN too); a = 0 (either sign) gives 0 where Re b > 0,
    else NaN; n = 1 gives a itself (a NaN part kept, an infinite one as it is)."""
    nan, inf = np.nan, np.inf
    pairs = [
        (0, 0),
        (nan, 0),
        (complex(nan, 1), complex(0, -0.0)),
        (complex(-0.0, -0.0), 3),
        (0, 2.5),
        (0, complex(1, 1)),
        (0, complex(0, 1)),
        (0, -2),
        (complex(inf, 0), 2),
        (complex(inf, 1), 3),
        (complex(1, inf), -2),
        (complex(nan, 0), 1),
        (complex(3, 0), complex(nan, 0)),
        (complex(2, 1), complex(2, -0.0)),
    ]
    for ctype, dt in TYPES.items():
        a = np.array([p[0] for p in pairs], dt)
        b = np.array([p[1] for p in pairs], dt)
        want, got = run_both(pow_program(ctype, a.shape), [[a, b]] * DEVICES)
        with np.errstate(all="ignore"):
            assert_same(want[0][0], np.power(a, b))
        assert_same(got[0][0], want[0][0])


def other_exponents(rng: np.random.Generator, shape, ctype: str) -> np.ndarray:
    """Complex exponents of moderate size, non-integer reals, and some specials."""
    out = np.empty(shape, TYPES[ctype])
    out.real = rng.standard_normal(shape) * 3
    out.imag = np.where(rng.random(shape) < 0.3, 0.0, rng.standard_normal(shape) * 3)
    return np.where(rng.random(shape) < 0.1, values(rng, shape, ctype), out)


@SETTINGS
@given(st.sampled_from(sorted(TYPES)), st.integers(0, 2**16))
def test_other_exponents_are_close(ctype: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(DEVICES):
        a = values(rng, SHAPE, ctype)
        near = rng.standard_normal((2, *SHAPE))
        a = np.where(rng.random(SHAPE) < 0.7, (near[0] + 1j * near[1]).astype(a.dtype), a)
        rows.append([a, other_exponents(rng, SHAPE, ctype)])
    want, got = run_both(pow_program(ctype), rows)
    ulps = 4  # measured: 1.2 at most, level T's log and exp against glibc's
    eps = np.finfo(np.float64 if ctype == "complex<f64>" else np.float32).eps
    for d in range(DEVICES):
        a, b = rows[d]
        w, g = want[d][0], got[d][0]
        with np.errstate(all="ignore"):
            s = product_scale(b, np.log(a.astype(np.complex128)))
            scale = 1 + np.maximum(s.real, s.imag)
        finite = np.isfinite(w.real) & np.isfinite(w.imag)
        assert np.all(~np.isfinite(g.real[~finite]) | ~np.isfinite(g.imag[~finite]))
        ok = finite & np.isfinite(scale) & (np.abs(w) > np.finfo(eps.dtype).tiny)
        with np.errstate(all="ignore"):
            err = np.maximum(np.abs(w.real - g.real), np.abs(w.imag - g.imag)) / np.abs(w)
        assert np.all(err[ok] <= ulps * eps * scale[ok]), np.max(err[ok] / eps / scale[ok])


@pytest.mark.parametrize("chip", ["v5e", "v5p"])
@pytest.mark.parametrize("ctype", sorted(TYPES))
def test_level_s_step_is_level_t_step(ctype: str, chip: str) -> None:
    import shardc

    text = pow_program(ctype, (512, 1024))
    s = shardc.run(text, timing_only=True, chip=chip).report["step_time_s"]
    kernel = shardc.compile(text, f"lower-to-tpu{{chip={chip}}}")
    t = shardc.run(kernel, timing_only=True, chip=chip).report["step_time_s"]
    assert abs(t / s - 1) < 0.1, (s, t)


def test_what_numpy_power_computes() -> None:
    """The premises of `_pow`, independently of the lowering: an integer exponent is
    multiplied out with the uncontracted product in the part type (n = 5: 1 a, a^2 a^2
    ... by square and multiply), any other one is exp(b log a) with that product."""
    rng = np.random.default_rng(0)
    for dt in TYPES.values():
        a = (rng.standard_normal(4096) + 1j * rng.standard_normal(4096)).astype(dt)
        b = (rng.standard_normal(4096) * 3 + 1j * rng.standard_normal(4096) * 3).astype(dt)

        def plain(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            out = np.empty_like(x)
            out.real = x.real * y.real - x.imag * y.imag
            out.imag = x.real * y.imag + x.imag * y.real
            return out

        one = np.ones_like(a)
        five = plain(plain(one, a), plain(plain(a, a), plain(a, a)))
        assert np.array_equal(np.power(a, dt(5)), five)
        with np.errstate(all="ignore"):
            assert np.array_equal(np.power(a, b), np.exp(plain(b, np.log(a))))
            assert not np.array_equal(np.power(a, b), np.exp(b * np.log(a)))
