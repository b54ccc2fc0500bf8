"""
Source ops that have no `hlo` op of their own, written with `hlo` ops.

Both importers meet the same XLA ops under two spellings (StableHLO's
`stablehlo.log_plus_one` / CHLO's `chlo.erf`, HLO text's `log-plus-one` / `erf`); each
expansion is written once here, on the `Emitter`, so that the two importers give the same
`hlo` ops for the same source op. What an importer does not support (float remainder,
integer xor) it rejects itself, in its own words, before calling these.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from shardc.frontends.common import Emitter, is_float
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

# XLA's f32 erf (xla/hlo/builder/lib/math.cc, ErfImpl32): x clamped to [-4, 4],
# x * P(x^2) / Q(x^2); absolute error below 5e-7 against JAX.
ERF_ALPHA = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
ERF_BETA = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)


def square(e: Emitter, x: SSAValue) -> SSAValue:
    return e.binary("mul", x, x)


def tan(e: Emitter, x: SSAValue) -> SSAValue:
    return e.binary("div", e.unary("sin", x), e.unary("cos", x))


def sinh_or_cosh(e: Emitter, x: SSAValue, cosh: bool) -> SSAValue:
    """(exp(x) -+ exp(-x)) / 2."""
    a, b = e.unary("exp", x), e.unary("exp", e.unary("neg", x))
    s = e.binary("add" if cosh else "sub", a, b)
    return e.binary("mul", s, e.scalar_like(0.5, x))


def exponential_minus_one(e: Emitter, x: SSAValue) -> SSAValue:
    return e.binary("sub", e.unary("exp", x), e.scalar_like(1.0, x))


def log_plus_one(e: Emitter, x: SSAValue) -> SSAValue:
    return e.unary("log", e.binary("add", x, e.scalar_like(1.0, x)))


def is_finite(e: Emitter, x: SSAValue) -> SSAValue:
    return e.compare("LT", e.unary("abs", x), e.scalar_like(math.inf, x))


def is_inf(e: Emitter, x: SSAValue, sign: int = 0) -> SSAValue:
    """|x| == inf (`sign` 0), x == +inf (1) or x == -inf (-1)."""
    if sign == 0:
        return e.compare("EQ", e.unary("abs", x), e.scalar_like(math.inf, x))
    return e.compare("EQ", x, e.scalar_like(math.inf if sign > 0 else -math.inf, x))


def sign(e: Emitter, x: SSAValue) -> SSAValue:
    """-1, 0 or 1 (a float keeps its zero's sign and its NaN, as XLA's sign does)."""
    ty = x.type
    assert isinstance(ty, TensorType)
    zero = e.scalar_like(0, x)
    keep = x if is_float(ty.element_type) else zero
    pos = e.select(e.compare("GT", x, zero), e.scalar_like(1, x), keep)
    return e.select(e.compare("LT", x, zero), e.scalar_like(-1, x), pos)


def clamp(e: Emitter, lo: SSAValue, x: SSAValue, hi: SSAValue) -> SSAValue:
    """min(max(x, lo), hi); rank-0 bounds are broadcast to x's shape."""
    lo, hi = e.broadcast_scalar(lo, x), e.broadcast_scalar(hi, x)
    return e.binary("min", e.binary("max", x, lo), hi)


def integer_remainder(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    """a - trunc(a / b) * b: hlo.div truncates integers toward zero, as XLA does."""
    return e.binary("sub", a, e.binary("mul", e.binary("div", a, b), b))


def bool_xor(e: Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    return e.compare("NE", a, b)


def erf(e: Emitter, x: SSAValue) -> SSAValue:
    """XLA's f32 rational approximation (ERF_ALPHA / ERF_BETA)."""
    four = e.scalar_like(4.0, x)
    xc = e.binary("min", e.binary("max", x, e.unary("neg", four)), four)
    x2 = e.binary("mul", xc, xc)

    def poly(coeffs: Sequence[float]) -> SSAValue:
        p = e.scalar_like(coeffs[0], x)
        for c in coeffs[1:]:
            p = e.binary("add", e.binary("mul", p, x2), e.scalar_like(c, x))
        return p

    return e.binary("div", e.binary("mul", xc, poly(ERF_ALPHA)), poly(ERF_BETA))


def erfc(e: Emitter, x: SSAValue) -> SSAValue:
    y = erf(e, x)
    return e.binary("sub", e.scalar_like(1.0, x), y)
