"""
numpy implementations of CHLO's element-wise ops of issue 13: erf_inv, the inverse
trigonometric and hyperbolic functions, lgamma and digamma.

Each is computed in f64 and rounded once to the operand's type, like the transcendentals of
`hlo_elementwise`. numpy has no erf_inv, lgamma or digamma, so they are written here: erf_inv
by Giles' approximation refined by Newton steps on erf (or on log erfc near +-1, where
1 - |y| is exact), lgamma from Python's `math.lgamma` with the poles made +inf, digamma by the
recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then its asymptotic series (reflection
for x < 1/2). Registered with the plan next to `HloFunctions` (`plan.py`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from shardc.dialects import hlo
from shardc.interpreter.hlo_elementwise import F64, in_f64
from shardc.interpreter.hlo_impls import fast_impl
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, register_impls

_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _giles_erf_inv(a: np.ndarray) -> np.ndarray:
    """Giles' single-precision approximation of erf_inv (a starting point for Newton)."""
    w = -np.log((1.0 - a) * (1.0 + a))
    small = w - 2.5
    p_small = np.polyval(
        [
            2.81022636e-08,
            3.43273939e-07,
            -3.5233877e-06,
            -4.39150654e-06,
            0.00021858087,
            -0.00125372503,
            -0.00417768164,
            0.246640727,
            1.50140941,
        ],
        small,
    )
    large = np.sqrt(w) - 3.0
    p_large = np.polyval(
        [
            -0.000200214257,
            0.000100950558,
            0.00134934322,
            -0.00367342844,
            0.00573950773,
            -0.0076224613,
            0.00943887047,
            1.00167406,
            2.83297682,
        ],
        large,
    )
    return np.where(w < 5.0, p_small, p_large) * a


def erf_inv_f64(y: np.ndarray) -> np.ndarray:
    """erf_inv in f64: +-inf at +-1, NaN outside [-1, 1]."""
    y = np.asarray(y, dtype=F64)
    a = np.abs(y)
    inside = a < 1.0
    a_in = np.where(inside, a, 0.0)
    x = _giles_erf_inv(a_in)
    near_one = a_in > 0.5
    tail = 1.0 - a_in  # exact for a in [0.5, 1] (Sterbenz)
    for _ in range(6):
        slope = _TWO_OVER_SQRT_PI * np.exp(-x * x)
        # near +-1: Newton on log erfc(x) = log(1 - a), which erfc's steepness cannot upset
        tail_x = np.where(near_one, _erfc(x).astype(F64), 1.0)
        step_near = (np.log(tail_x) - np.log(np.where(near_one, tail, 1.0))) * tail_x
        step_mid = _erf(x).astype(F64) - a_in
        err = np.where(near_one, -step_near, step_mid)
        x = x - np.where(slope > 0, err / np.where(slope > 0, slope, 1.0), 0.0)
    x = np.where(inside, x, np.where(a == 1.0, np.inf, np.nan))
    return np.copysign(x, y)


def _lgamma_scalar(x: float) -> float:
    if math.isnan(x):
        return x
    if math.isinf(x) or (x <= 0 and x == math.floor(x)):
        return math.inf
    try:
        return math.lgamma(x)
    except OverflowError:
        return math.inf


_lgamma = np.frompyfunc(_lgamma_scalar, 1, 1)


def lgamma_f64(x: np.ndarray) -> np.ndarray:
    """log |Gamma(x)| in f64: +inf at 0, -1, -2, ... and at +-inf."""
    with np.errstate(all="ignore"):
        return np.asarray(_lgamma(np.asarray(x, dtype=F64)), dtype=F64)


# -B_2k / 2k for k = 1..7: psi(x) ~ log x - 1/(2x) + sum_k c_k / x^(2k)
_PSI_SERIES = (-1 / 12, 1 / 120, -1 / 252, 1 / 240, -1 / 132, 691 / 32760, -1 / 12)


def _digamma_large(x: np.ndarray) -> np.ndarray:
    """psi(x) for x >= 10 by its asymptotic series (error below 1e-16 relative there)."""
    inv2 = 1.0 / (x * x)
    series = np.zeros_like(x)
    for c in reversed(_PSI_SERIES):
        series = (series + c) * inv2
    return np.log(x) - 0.5 / x + series


def _digamma_positive(x: np.ndarray) -> np.ndarray:
    """psi(x) for x >= 1/2: recurrence up to 10, then the series."""
    shift = np.zeros_like(x)
    for _ in range(10):
        low = x < 10.0
        shift = np.where(low, shift - 1.0 / np.where(low, x, 1.0), shift)
        x = np.where(low, x + 1.0, x)
    return shift + _digamma_large(x)


def digamma_f64(x: np.ndarray) -> np.ndarray:
    """psi(x) in f64: NaN at 0, -1, -2, ... and at -inf (as XLA), +inf at +inf."""
    x = np.asarray(x, dtype=F64)
    finite = np.isfinite(x)
    pole = finite & (x <= 0) & (x == np.floor(x))
    xs = np.where(finite & ~pole, x, 1.0)
    reflect = xs < 0.5
    # psi(x) = psi(1 - x) - pi cot(pi x); cot has period 1, so reduce x exactly first
    r = xs - np.round(xs)
    cot = np.where(reflect & (r != 0), 1.0 / np.tan(np.pi * np.where(r != 0, r, 0.5)), 0.0)
    value = np.where(
        reflect, _digamma_positive(np.where(reflect, 1.0 - xs, 1.0)) - np.pi * cot, 0.0
    )
    value = np.where(reflect, value, _digamma_positive(np.where(reflect, 1.0, xs)))
    value = np.where(pole, np.nan, value)
    return np.where(finite, value, np.where(x == np.inf, np.inf, np.nan))


SPECIAL: dict[type, Callable[..., np.ndarray]] = {
    hlo.ErfInvOp: in_f64(erf_inv_f64),
    hlo.AsinOp: in_f64(np.arcsin),
    hlo.AcosOp: in_f64(np.arccos),
    hlo.AtanOp: in_f64(np.arctan),
    hlo.AsinhOp: in_f64(np.arcsinh),
    hlo.AcoshOp: in_f64(np.arccosh),
    hlo.AtanhOp: in_f64(np.arctanh),
    hlo.LgammaOp: in_f64(lgamma_f64),
    hlo.DigammaOp: in_f64(digamma_f64),
}
"""Each CHLO op's implementation, on operands of its own type."""


@register_impls
class SpecialFunctions(InterpreterFunctions):
    """CHLO's element-wise ops of issue 13 (one implementation each, from `SPECIAL`)."""

    @fast_impl(hlo.ErfInvOp)
    def run_erf_inv(self, interp: Interpreter, op: hlo.ErfInvOp, args: PythonValues):
        return (SPECIAL[hlo.ErfInvOp](*args),)

    @fast_impl(hlo.AsinOp)
    def run_asin(self, interp: Interpreter, op: hlo.AsinOp, args: PythonValues):
        return (SPECIAL[hlo.AsinOp](*args),)

    @fast_impl(hlo.AcosOp)
    def run_acos(self, interp: Interpreter, op: hlo.AcosOp, args: PythonValues):
        return (SPECIAL[hlo.AcosOp](*args),)

    @fast_impl(hlo.AtanOp)
    def run_atan(self, interp: Interpreter, op: hlo.AtanOp, args: PythonValues):
        return (SPECIAL[hlo.AtanOp](*args),)

    @fast_impl(hlo.AsinhOp)
    def run_asinh(self, interp: Interpreter, op: hlo.AsinhOp, args: PythonValues):
        return (SPECIAL[hlo.AsinhOp](*args),)

    @fast_impl(hlo.AcoshOp)
    def run_acosh(self, interp: Interpreter, op: hlo.AcoshOp, args: PythonValues):
        return (SPECIAL[hlo.AcoshOp](*args),)

    @fast_impl(hlo.AtanhOp)
    def run_atanh(self, interp: Interpreter, op: hlo.AtanhOp, args: PythonValues):
        return (SPECIAL[hlo.AtanhOp](*args),)

    @fast_impl(hlo.LgammaOp)
    def run_lgamma(self, interp: Interpreter, op: hlo.LgammaOp, args: PythonValues):
        return (SPECIAL[hlo.LgammaOp](*args),)

    @fast_impl(hlo.DigammaOp)
    def run_digamma(self, interp: Interpreter, op: hlo.DigammaOp, args: PythonValues):
        return (SPECIAL[hlo.DigammaOp](*args),)
