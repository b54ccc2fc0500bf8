"""
Values of the level-T simulator's scalar and vector ops that are plain numerics: `arith`,
`math`, `vector.broadcast` and the elementwise `tpu` ops (`cmp`, `select`, `convert`), one
function per op type in `ELEMENTWISE` (`level_t_ops.KernelFunctions` registers each as
an xDSL `@impl`), and `arith.constant` (`constant`).

Scalars are Python ints (wrapped to their integer type) and floats; vectors are numpy
arrays of their element type. bf16/f16 vector arithmetic computes in f32 and rounds once,
casts follow StableHLO's `convert` (as the level-S interpreter, `values`).
"""

from __future__ import annotations

from collections.abc import Callable
from math import erf as _scalar_erf
from typing import Any

import numpy as np
from shardc.dialects import tpu
from shardc.interpreter.values import convert as _hlo_convert
from shardc.interpreter.values import dtype_of
from xdsl.dialects import arith, math, vector
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    VectorType,
)
from xdsl.ir import Attribute, Operation

Elementwise = Callable[[Any, list[Any], Attribute], Any]
"""`(op, operand values, result type) -> result value`."""


def constant(op: arith.ConstantOp) -> Any:
    """The value of `arith.constant`: a Python scalar or a numpy array of its vector type."""
    value = op.value
    ty = op.result.type
    if isinstance(value, IntegerAttr):
        return int(value.value.data)
    if isinstance(value, FloatAttr):
        return float(value.value.data)
    if isinstance(value, DenseIntOrFPElementsAttr):
        assert isinstance(ty, VectorType)
        dtype = dtype_of(ty.element_type)
        vals = np.array(value.get_values())
        shape = tuple(ty.get_shape())
        if vals.size == 1:
            return np.full(shape, vals.reshape(())).astype(dtype)
        return vals.reshape(shape).astype(dtype)
    raise ValueError(f"unsupported constant {value}")


def _wrap_int(x: int, ty: Any) -> int:
    if isinstance(ty, IntegerType):
        w = ty.width.data
        x &= (1 << w) - 1
        if w > 1 and x >= 1 << (w - 1):
            x -= 1 << w
    return x


def _int_binary(f):
    def impl(op, args, ty):
        a, b = args
        with np.errstate(over="ignore"):  # integers wrap (0-d vectors: numpy scalars)
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                return f(a, b).astype(dtype_of(ty.element_type))
            return _wrap_int(f(a, b), ty)

    return impl


def _trunc_div(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.trunc(np.divide(a, b)).astype(np.int64)
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _trunc_rem(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.fmod(a, b)
    return a - _trunc_div(a, b) * b


def _float_binary(f):
    def impl(op, args, ty):
        a, b = args
        if isinstance(ty, VectorType):
            dtype = dtype_of(ty.element_type)
            compute = np.float32 if dtype.itemsize < 4 else dtype
            return f(np.asarray(a, compute), np.asarray(b, compute)).astype(dtype)
        return float(f(a, b))

    return impl


def _float_unary(f):
    def impl(op, args, ty):
        (a,) = args
        if isinstance(ty, VectorType):
            dtype = dtype_of(ty.element_type)
            compute = np.float32 if dtype.itemsize < 4 else dtype
            return f(np.asarray(a, compute)).astype(dtype)
        return float(f(a))

    return impl


def _round_half_away(x):
    """C's round: the integer part, one more in magnitude where the fraction (exact:
    x - trunc(x)) is at least a half; +-0, +-inf and NaN stay."""
    with np.errstate(invalid="ignore"):  # inf - inf: the fraction of an infinity
        t = np.trunc(x)
        return np.where(np.abs(x - t) >= 0.5, t + np.copysign(np.ones_like(t), x), t)


def _cast(op, args, ty):
    (a,) = args
    if isinstance(ty, VectorType):
        return np.asarray(a).astype(dtype_of(ty.element_type))
    if isinstance(ty, IndexType | IntegerType):
        return _wrap_int(int(a), ty)
    return float(a)


def _convert(op, args, ty):
    """Vector casts as StableHLO's convert (saturating fptosi, NaN -> 0, one rounding)."""
    if isinstance(ty, VectorType):
        return _hlo_convert(np.asarray(args[0]), dtype_of(ty.element_type))
    return _cast(op, args, ty)


def _int_unary(f):
    def impl(op, args, ty):
        return f(np.asarray(args[0])).astype(dtype_of(ty.element_type))

    return impl


def _int_div(a, b):
    from shardc.interpreter.hlo_impls import int_div

    return int_div(a, b)


def _int_pow(a, b):
    from shardc.interpreter.hlo_impls import int_pow

    return int_pow(a, b)


def _vector_extract(op, args):
    """`vector.extract`: the sub-vector (or element) at the leading positions."""
    dynamic = iter(args[1:])
    pos = tuple(p if isinstance(p, int) else int(next(dynamic)) for p in op.get_mixed_position())
    return np.array(args[0][pos])


def _vector_broadcast(op, args, ty):
    """MLIR vector.broadcast: a scalar, or a vector's trailing dims (size 1 stretches)."""
    src = np.asarray(args[0]).astype(dtype_of(ty.element_type))
    return np.broadcast_to(src, tuple(ty.get_shape()))


_CMP = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "slt": lambda a, b: a < b,
    "sle": lambda a, b: a <= b,
    "sgt": lambda a, b: a > b,
    "sge": lambda a, b: a >= b,
    "ult": lambda a, b: a < b,
    "ule": lambda a, b: a <= b,
    "ugt": lambda a, b: a > b,
    "uge": lambda a, b: a >= b,
}
_CMPF = {
    "false": lambda a, b: np.zeros(np.broadcast(a, b).shape, dtype=bool),
    "oeq": lambda a, b: a == b,
    "one": lambda a, b: (a == a) & (b == b) & (a != b),
    "olt": lambda a, b: a < b,
    "ole": lambda a, b: a <= b,
    "ogt": lambda a, b: a > b,
    "oge": lambda a, b: a >= b,
    "ord": lambda a, b: (a == a) & (b == b),
    "ueq": lambda a, b: np.logical_not((a < b) | (a > b)),
    "une": lambda a, b: a != b,
    "ult": lambda a, b: np.logical_not(a >= b),  # unordered (a NaN) or less
    "ule": lambda a, b: np.logical_not(a > b),
    "ugt": lambda a, b: np.logical_not(a <= b),
    "uge": lambda a, b: np.logical_not(a < b),
    "uno": lambda a, b: (a != a) | (b != b),
    "true": lambda a, b: np.ones(np.broadcast(a, b).shape, dtype=bool),
}


def _as_unsigned(x, width: int):
    """The integer `x` (array or Python int) read as unsigned `width` bits."""
    if isinstance(x, np.ndarray | np.integer):
        x = np.asarray(x)
        if x.dtype.kind == "i":
            return x.view(np.dtype(f"u{x.dtype.itemsize}"))
        return x
    return int(x) & ((1 << width) - 1)


def _int_width(ty) -> int:
    elem = getattr(ty, "element_type", ty)
    width = getattr(elem, "width", None)
    return width.data if width is not None else 64  # index: 64 bits


def _cmpi(op, args, ty):
    pred = op.predicate.value.data
    names = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
    if pred >= 6:  # ult ule ugt uge compare the bits as unsigned numbers
        width = _int_width(op.operands[0].type)
        args = tuple(_as_unsigned(a, width) for a in args)
    r = _CMP[names[pred]](*args)
    return r if isinstance(r, np.ndarray) else bool(r)


def _tpu_cmp(op, args):
    """`tpu.cmp`: float predicates on float vectors, integer ones (u* unsigned) on ints."""
    pred = op.predicate.data
    elem = op.operands[0].type.element_type
    if isinstance(elem, IntegerType):
        if pred in ("ult", "ule", "ugt", "uge"):
            args = tuple(_as_unsigned(a, elem.width.data) for a in args)
        return _CMP[pred](*args)
    return _CMPF[pred](*args)


def _cmpf(op, args, ty):
    names = [
        "false",
        "oeq",
        "ogt",
        "oge",
        "olt",
        "ole",
        "one",
        "ord",
        "ueq",
        "ugt",
        "uge",
        "ult",
        "ule",
        "une",
        "uno",
        "true",
    ]
    r = _CMPF[names[op.predicate.value.data]](*args)
    return r if isinstance(r, np.ndarray) else bool(r)


def _select(op, args, ty):
    c, a, b = args
    if isinstance(c, np.ndarray) or isinstance(a, np.ndarray):
        return np.where(c, a, b)
    return a if c else b


def _signed(f):
    """A signed op (`divsi`, `maxsi`, `minsi`) reads the bits of unsigned arrays as signed."""

    def g(a, b):
        if isinstance(a, np.ndarray) and a.dtype.kind == "u":
            a = a.view(np.dtype(f"i{a.dtype.itemsize}"))
        if isinstance(b, np.ndarray) and b.dtype.kind == "u":
            b = b.view(np.dtype(f"i{b.dtype.itemsize}"))
        return f(a, b)

    return g


ELEMENTWISE: dict[type[Operation], Elementwise] = {
    arith.AddiOp: _int_binary(lambda a, b: a + b),
    arith.SubiOp: _int_binary(lambda a, b: a - b),
    arith.MuliOp: _int_binary(lambda a, b: a * b),
    arith.DivSIOp: _int_binary(
        _signed(lambda a, b: _int_div(a, b) if isinstance(a, np.ndarray) else _trunc_div(a, b))
    ),
    arith.RemSIOp: _int_binary(_trunc_rem),
    arith.FloorDivSIOp: _int_binary(lambda a, b: a // b),
    arith.MaxSIOp: _int_binary(
        _signed(lambda a, b: np.maximum(a, b) if isinstance(a, np.ndarray) else max(a, b))
    ),
    arith.MinSIOp: _int_binary(
        _signed(lambda a, b: np.minimum(a, b) if isinstance(a, np.ndarray) else min(a, b))
    ),
    arith.AndIOp: _int_binary(lambda a, b: a & b),
    arith.OrIOp: _int_binary(lambda a, b: a | b),
    arith.XOrIOp: _int_binary(lambda a, b: a ^ b),
    arith.AddfOp: _float_binary(np.add),
    arith.SubfOp: _float_binary(np.subtract),
    arith.MulfOp: _float_binary(np.multiply),
    arith.DivfOp: _float_binary(np.divide),
    arith.MaximumfOp: _float_binary(np.maximum),
    arith.MinimumfOp: _float_binary(np.minimum),
    arith.MaxnumfOp: _float_binary(np.fmax),
    arith.MinnumfOp: _float_binary(np.fmin),
    arith.NegfOp: _float_unary(np.negative),
    math.ExpOp: _float_unary(np.exp),
    math.LogOp: _float_unary(np.log),
    math.TanhOp: _float_unary(np.tanh),
    math.SqrtOp: _float_unary(np.sqrt),
    math.RsqrtOp: _float_unary(lambda x: 1 / np.sqrt(x)),
    math.AbsFOp: _float_unary(np.abs),
    math.TruncOp: _float_unary(np.trunc),
    # The VPU's rounding instructions (lowering/unary_math.py): to -inf, +inf, the nearest
    # (ties to even), the nearest (ties away from zero, C's `round`).
    math.FloorOp: _float_unary(np.floor),
    math.CeilOp: _float_unary(np.ceil),
    math.RoundEvenOp: _float_unary(np.rint),
    math.RoundOp: _float_unary(_round_half_away),
    math.CopySignOp: _float_binary(np.copysign),
    math.SinOp: _float_unary(np.sin),
    math.CosOp: _float_unary(np.cos),
    math.PowFOp: _float_binary(np.power),
    math.ErfOp: _float_unary(lambda x: np.frompyfunc(_scalar_erf, 1, 1)(x).astype(x.dtype)),
    math.AbsIOp: _int_unary(np.abs),
    math.IPowIOp: _int_binary(lambda a, b: _int_pow(np.asarray(a), np.asarray(b))),
    vector.BroadcastOp: _vector_broadcast,
    arith.IndexCastOp: _cast,
    arith.ExtFOp: _convert,
    arith.TruncFOp: _convert,
    arith.SIToFPOp: _convert,
    arith.FPToSIOp: _convert,
    arith.ExtSIOp: _convert,
    arith.TruncIOp: _convert,
    arith.ExtUIOp: _convert,
    arith.UIToFPOp: _convert,
    arith.CmpiOp: _cmpi,
    arith.CmpfOp: _cmpf,
    arith.SelectOp: _select,
    tpu.CmpOp: lambda op, args, ty: _tpu_cmp(op, args),
    tpu.SelectOp: _select,
    tpu.ConvertOp: _convert,
    # Unsigned integers (ui8 .. ui64 vectors hold numpy unsigned arrays; scalars are read
    # as unsigned bits of their width).
    arith.DivUIOp: _int_binary(lambda a, b: _unsigned(_int_div, a, b)),
    arith.MaxUIOp: _int_binary(lambda a, b: _unsigned(np.maximum, a, b)),
    arith.MinUIOp: _int_binary(lambda a, b: _unsigned(np.minimum, a, b)),
    # The same bits as another type of the width (sorting's float keys and moved values).
    arith.BitcastOp: lambda op, args, ty: np.asarray(args[0]).view(dtype_of(ty.element_type)),
    # Shifts (amounts read as unsigned; one >= the width is poison: an error here) and
    # bit counts, on the bits of the width.
    arith.ShLIOp: lambda op, args, ty: _shift(op, args, ty, "left"),
    arith.ShRUIOp: lambda op, args, ty: _shift(op, args, ty, "logical"),
    arith.ShRSIOp: lambda op, args, ty: _shift(op, args, ty, "arithmetic"),
    math.CtPopOp: lambda op, args, ty: _bit_count(args[0], ty, popcount=True),
    math.CountLeadingZerosOp: lambda op, args, ty: _bit_count(args[0], ty, popcount=False),
    # A slice of a vector at static / dynamic positions (a reduce body's element).
    vector.ExtractOp: lambda op, args, ty: _vector_extract(op, args),
    # The full product of unsigned integers as (low, high) halves (Philox's 32x32->64).
    arith.MulUIExtendedOp: lambda op, args, ty: _mul_extended(args, ty),
}


def _shift(op, args, ty, kind: str):
    a, s = args
    width = _int_width(ty)
    amount = _as_unsigned(s, width)
    if np.any(np.asarray(amount) >= width):
        raise ValueError(f"{op.name}: a shift amount >= the bit width {width} is poison")
    if not isinstance(ty, VectorType):
        x = _wrap_int(int(a), ty) if kind == "arithmetic" else _as_unsigned(a, width)
        return _wrap_int(x << int(amount) if kind == "left" else x >> int(amount), ty)
    dtype = dtype_of(ty.element_type)
    n = dtype.itemsize
    a = np.asarray(a).astype(dtype)
    by = np.asarray(amount).astype(np.dtype(f"u{n}"))
    if kind == "arithmetic":
        signed = a.view(np.dtype(f"i{n}"))
        return np.right_shift(signed, by.astype(signed.dtype)).view(dtype)
    u = a.view(np.dtype(f"u{n}"))
    moved = np.left_shift(u, by) if kind == "left" else np.right_shift(u, by)
    return moved.view(dtype)


def _bit_count(a, ty, popcount: bool):
    """`math.ctpop` / `math.ctlz` of an integer vector (scalar) of its type's width."""
    width = _int_width(ty)
    u = np.asarray(_as_unsigned(np.asarray(a), width))
    ones = np.bitwise_count(u)
    if not popcount:
        length = np.zeros(u.shape, dtype=np.int64)
        for k in range(width):  # bit length = the number of k with u >> k != 0
            length += np.right_shift(u, np.asarray(k, u.dtype)) != 0
        ones = width - length
    if isinstance(ty, VectorType):
        return ones.astype(dtype_of(ty.element_type))
    return _wrap_int(int(ones), ty)


def _unsigned(f, a, b):
    """`f` on unsigned arrays as they are, on Python ints as their unsigned 64-bit bits."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return f(np.asarray(a), np.asarray(b))
    return int(f(np.uint64(_as_unsigned(a, 64)), np.uint64(_as_unsigned(b, 64))))


def _mul_extended(args, ty) -> tuple[Any, Any]:
    """`arith.mului_extended` of i32 (or narrower) vectors or scalars: the two halves of
    the exact product of the bits read as unsigned (two results: a tuple)."""
    width = _int_width(ty)
    assert width <= 32, "mului_extended of more than 32 bits"
    a, b = (np.asarray(_as_unsigned(np.asarray(x), width)).astype(np.uint64) for x in args)
    prod = a * b
    mask = np.uint64((1 << width) - 1)
    low, high = prod & mask, prod >> np.uint64(width)
    if isinstance(ty, VectorType):
        dtype = dtype_of(ty.element_type)
        return low.astype(dtype), high.astype(dtype)
    return _wrap_int(int(low), ty), _wrap_int(int(high), ty)


__all__ = ["ELEMENTWISE", "Elementwise", "constant"]
