"""
numpy implementations of the element-wise `hlo` ops of issue 13 (rounding, remainder,
clamp, sign, is_finite, the transcendentals atan2 cbrt expm1 log1p erf erfc sinh cosh tan,
and the integer bit ops xor, shifts, popcnt, count_leading_zeros).

Semantics are StableHLO's. Transcendentals of f32, bf16 and f16 are computed in f64 and
rounded once to their type (within 1 ULP of the correctly rounded result; f64 uses the
platform's libm). Rounding, remainder, sign, clamp and the integer ops are exact; integer
arithmetic wraps. Registered with the plan next to `HloFunctions` (`plan.py`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from shardc.dialects import hlo
from shardc.interpreter.hlo_impls import fast_impl, int_div
from shardc.interpreter.values import F32, FLOAT_DTYPES, LOW_PRECISION, container, int_info
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, register_impls

F64 = np.dtype(np.float64)

_erf_f64 = np.frompyfunc(math.erf, 1, 1)
_erfc_f64 = np.frompyfunc(math.erfc, 1, 1)


def in_f64(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Apply `fn` in f64 and round once to the operands' type."""

    def run(*xs: np.ndarray) -> np.ndarray:
        dtype = np.asarray(xs[0]).dtype
        with np.errstate(all="ignore"):
            r = np.asarray(fn(*(np.asarray(x, dtype=F64) for x in xs)), dtype=F64)
        return r.astype(dtype)

    return run


def _in_own_type(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """Apply an exact `fn` in the value's type (bf16/f16 through f32, exact there too)."""

    def run(*xs: np.ndarray) -> np.ndarray:
        dtype = np.asarray(xs[0]).dtype
        with np.errstate(all="ignore"):
            if dtype in LOW_PRECISION:
                return np.asarray(fn(*(np.asarray(x, dtype=F32) for x in xs))).astype(dtype)
            return np.asarray(fn(*xs)).astype(dtype)

    return run


def _round_afz(x: np.ndarray) -> np.ndarray:
    """Round half away from zero, exactly: trunc(x) + copysign(|frac| >= 0.5, x)."""
    t = np.trunc(x)
    up = (np.abs(x - t) >= 0.5).astype(x.dtype)
    return t + np.copysign(up, x)


def _float_sign(x: np.ndarray) -> np.ndarray:
    one = np.ones_like(x)
    return np.where(x > 0, one, np.where(x < 0, -one, x))


def _float_remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.fmod(a, b)


def int_remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a - trunc(a / b) * b, wrapping: x % 0 = x and INT_MIN % -1 = 0, as XLA does."""
    a, b = np.asarray(a), np.asarray(b)
    with np.errstate(over="ignore"):
        return (a - int_div(a, b) * b).astype(a.dtype)


def _unsigned(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def _as_bits(x: np.ndarray) -> tuple[np.ndarray, int]:
    """
    The bits of integer `x` as an unsigned array (a sub-byte integer's bits, zero-extended
    in a byte) and the type's width in bits.
    """
    x = np.asarray(x)
    bits = int_info(x.dtype).bits
    # np.array, not ascontiguousarray: that makes a rank-0 array rank 1
    u = _unsigned(np.array(x.astype(container(x.dtype), copy=False), order="C"))
    if bits < 8:
        u = u & np.uint8((1 << bits) - 1)
    return u, bits


def _shift(a: np.ndarray, b: np.ndarray, kind: str) -> np.ndarray:
    """
    Shifts by an amount read as unsigned: >= the bit width gives 0 (or the sign fill).
    Sub-byte integers shift in a byte and wrap back to their width.
    """
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    dtype = a.dtype
    ua, bits = _as_bits(a)
    amount, _ = _as_bits(b)
    inside = amount < bits
    clipped = np.minimum(amount, bits - 1).astype(ua.dtype)
    if kind == "arithmetic":  # the top bit fills (unsigned types too, as XLA's ashr)
        pad = ua.dtype.itemsize * 8 - bits  # past the width: as >> (bits - 1)
        signed = np.left_shift(ua, pad).view(np.dtype(f"i{ua.dtype.itemsize}")) >> pad
        moved = np.right_shift(signed, clipped.astype(signed.dtype))
        return moved.view(container(dtype)).astype(dtype)
    moved = np.left_shift(ua, clipped) if kind == "left" else np.right_shift(ua, clipped)
    out = np.where(inside, moved, 0).astype(ua.dtype)
    return out.view(container(dtype)).astype(dtype)


def _popcnt(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    u, _ = _as_bits(x)
    return np.bitwise_count(u).astype(container(x.dtype)).astype(x.dtype)


def _count_leading_zeros(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    u, bits = _as_bits(x)
    length = np.zeros(u.shape, dtype=np.int64)
    for k in range(bits):  # bit length = the number of k with u >> k != 0
        length += np.right_shift(u, k) != 0
    return (bits - length).astype(container(x.dtype)).astype(x.dtype)


_TRANSCENDENTAL: dict[type, Callable[..., np.ndarray]] = {
    hlo.Atan2Op: in_f64(np.arctan2),
    hlo.CbrtOp: in_f64(np.cbrt),
    hlo.Expm1Op: in_f64(np.expm1),
    hlo.Log1pOp: in_f64(np.log1p),
    hlo.ErfOp: in_f64(lambda x: _erf_f64(x).astype(F64)),
    hlo.ErfcOp: in_f64(lambda x: _erfc_f64(x).astype(F64)),
    hlo.SinhOp: in_f64(np.sinh),
    hlo.CoshOp: in_f64(np.cosh),
    hlo.TanOp: in_f64(np.tan),
}
_EXACT_FLOAT: dict[type, Callable[..., np.ndarray]] = {
    hlo.CeilOp: _in_own_type(np.ceil),
    hlo.FloorOp: _in_own_type(np.floor),
    hlo.RoundNearestEvenOp: _in_own_type(np.rint),
    hlo.RoundNearestAfzOp: _in_own_type(_round_afz),
}


@register_impls
class ElementwiseFunctions(InterpreterFunctions):
    """The element-wise ops of issue 13."""

    @fast_impl(hlo.RemainderOp)
    def run_remainder(self, interp: Interpreter, op: hlo.RemainderOp, args: PythonValues):
        a, b = args
        if np.asarray(a).dtype in FLOAT_DTYPES:
            return (_in_own_type(_float_remainder)(a, b),)
        return (int_remainder(a, b),)

    @fast_impl(hlo.XorOp)
    def run_xor(self, interp: Interpreter, op: hlo.XorOp, args: PythonValues):
        return (np.bitwise_xor(args[0], args[1]),)

    @fast_impl(hlo.ShiftLeftOp)
    def run_shift_left(self, interp: Interpreter, op: hlo.ShiftLeftOp, args: PythonValues):
        return (_shift(args[0], args[1], "left"),)

    @fast_impl(hlo.ShiftRightLogicalOp)
    def run_shift_right_logical(
        self, interp: Interpreter, op: hlo.ShiftRightLogicalOp, args: PythonValues
    ):
        return (_shift(args[0], args[1], "logical"),)

    @fast_impl(hlo.ShiftRightArithmeticOp)
    def run_shift_right_arithmetic(
        self, interp: Interpreter, op: hlo.ShiftRightArithmeticOp, args: PythonValues
    ):
        return (_shift(args[0], args[1], "arithmetic"),)

    @fast_impl(hlo.PopcntOp)
    def run_popcnt(self, interp: Interpreter, op: hlo.PopcntOp, args: PythonValues):
        return (_popcnt(args[0]),)

    @fast_impl(hlo.CountLeadingZerosOp)
    def run_clz(self, interp: Interpreter, op: hlo.CountLeadingZerosOp, args: PythonValues):
        return (_count_leading_zeros(args[0]),)

    @fast_impl(hlo.SignOp)
    def run_sign(self, interp: Interpreter, op: hlo.SignOp, args: PythonValues):
        x = np.asarray(args[0])
        if x.dtype in FLOAT_DTYPES:
            return (_float_sign(x),)
        return (np.sign(x).astype(x.dtype),)

    @fast_impl(hlo.IsFiniteOp)
    def run_is_finite(self, interp: Interpreter, op: hlo.IsFiniteOp, args: PythonValues):
        return (np.isfinite(np.asarray(args[0], dtype=F64)),)

    @fast_impl(hlo.ClampOp)
    def run_clamp(self, interp: Interpreter, op: hlo.ClampOp, args: PythonValues):
        lo, x, hi = (np.asarray(v) for v in args)
        return (np.minimum(np.maximum(x, lo), hi).astype(x.dtype),)

    @fast_impl(hlo.Atan2Op)
    def run_atan2(self, interp: Interpreter, op: hlo.Atan2Op, args: PythonValues):
        return (_TRANSCENDENTAL[hlo.Atan2Op](*args),)

    @fast_impl(hlo.CbrtOp)
    def run_cbrt(self, interp: Interpreter, op: hlo.CbrtOp, args: PythonValues):
        return (_TRANSCENDENTAL[hlo.CbrtOp](*args),)

    @fast_impl(hlo.Expm1Op)
    def run_expm1(self, interp: Interpreter, op: hlo.Expm1Op, args: PythonValues):
        return (_TRANSCENDENTAL[hlo.Expm1Op](*args),)

    @fast_impl(hlo.Log1pOp)
    def run_log1p(self, interp: Interpreter, op: hlo.Log1pOp, args: PythonValues):
        return (_TRANSCENDENTAL[hlo.Log1pOp](*args),)

    @fast_impl(hlo.ErfOp)
    def run_erf(self, interp: Interpreter, op: hlo.ErfOp, args: PythonValues):
        return (_TRANSCENDENTAL[hlo.ErfOp](*args),)

    @fast_impl(hlo.ErfcOp)
    def run_erfc(self, interp: Interpreter, op: hlo.ErfcOp, args: PythonValues):
        return (_TRANSCENDENTAL[hlo.ErfcOp](*args),)

    @fast_impl(hlo.SinhOp)
    def run_sinh(self, interp: Interpreter, op: hlo.SinhOp, args: PythonValues):
        return (_TRANSCENDENTAL[hlo.SinhOp](*args),)

    @fast_impl(hlo.CoshOp)
    def run_cosh(self, interp: Interpreter, op: hlo.CoshOp, args: PythonValues):
        return (_TRANSCENDENTAL[hlo.CoshOp](*args),)

    @fast_impl(hlo.TanOp)
    def run_tan(self, interp: Interpreter, op: hlo.TanOp, args: PythonValues):
        return (_TRANSCENDENTAL[hlo.TanOp](*args),)

    @fast_impl(hlo.CeilOp)
    def run_ceil(self, interp: Interpreter, op: hlo.CeilOp, args: PythonValues):
        return (_EXACT_FLOAT[hlo.CeilOp](*args),)

    @fast_impl(hlo.FloorOp)
    def run_floor(self, interp: Interpreter, op: hlo.FloorOp, args: PythonValues):
        return (_EXACT_FLOAT[hlo.FloorOp](*args),)

    @fast_impl(hlo.RoundNearestEvenOp)
    def run_round_nearest_even(
        self, interp: Interpreter, op: hlo.RoundNearestEvenOp, args: PythonValues
    ):
        return (_EXACT_FLOAT[hlo.RoundNearestEvenOp](*args),)

    @fast_impl(hlo.RoundNearestAfzOp)
    def run_round_nearest_afz(
        self, interp: Interpreter, op: hlo.RoundNearestAfzOp, args: PythonValues
    ):
        return (_EXACT_FLOAT[hlo.RoundNearestAfzOp](*args),)
