"""
Element types below a byte at level G and S: `i4`, `ui4`, `i2`, `ui2` are ml_dtypes arrays
(one element per byte), but numpy's ufuncs on them either are missing or return int8. So
the plan runs every op that touches them on byte-wide copies (`values.container`: int8 /
uint8) and wraps each integer result back to its type (`astype` wraps, as StableHLO's
integer arithmetic does). Adding, multiplying, negating, dividing, comparing, moving and
reducing in a byte and wrapping once gives the same bits as doing it in the narrow type;
the ops that depend on the bit width (shifts, popcnt, count_leading_zeros) and the ops
that read the result type (convert, constant, iota) handle sub-byte types themselves and
are not wrapped.

Also the ops of the new types: `hlo.complex`, `hlo.real`, `hlo.imag` and
`hlo.bitcast_convert` (numpy `.view`, little-endian).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from shardc.dialects import hlo
from shardc.interpreter.hlo_impls import fast_impl
from shardc.interpreter.values import (
    C64,
    C128,
    COMPLEX_DTYPES,
    F64,
    NARROW_INT_DTYPES,
    container,
    int_info,
    tensor_spec,
)
from xdsl.dialects.builtin import TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, register_impls
from xdsl.ir import Operation

_OWN_NARROW_HANDLING: tuple[type[Operation], ...] = (
    hlo.ShiftLeftOp,
    hlo.ShiftRightLogicalOp,
    hlo.ShiftRightArithmeticOp,
    hlo.PopcntOp,
    hlo.CountLeadingZerosOp,
    hlo.ConvertOp,
    hlo.ConstantOp,
    hlo.IotaOp,
    hlo.BitcastConvertOp,
)


def _narrow(op: Operation) -> bool:
    for v in (*op.operands, *op.results):
        ty = v.type
        if isinstance(ty, TensorType) and tensor_spec(ty)[1] in NARROW_INT_DTYPES:
            return True
    return False


def _widen(v: Any) -> Any:
    dtype = getattr(v, "dtype", None)
    if dtype is not None and dtype in NARROW_INT_DTYPES:
        return np.asarray(v).astype(container(dtype))
    return v


def adapt(op: Operation, raw: Callable[..., Any]) -> Callable[..., Any]:
    """`raw` itself, or for an op on sub-byte integers, `raw` run in bytes and wrapped."""
    if isinstance(op, _OWN_NARROW_HANDLING) or not _narrow(op):
        return raw
    dtypes = [
        tensor_spec(r.type)[1] if isinstance(r.type, TensorType) else None for r in op.results
    ]

    def run(ft: Any, interp: Any, op: Operation, args: tuple) -> tuple:
        out = raw(ft, interp, op, tuple(_widen(a) for a in args))
        return tuple(
            np.asarray(v).astype(d) if d in NARROW_INT_DTYPES else v
            for v, d in zip(out, dtypes, strict=True)
        )

    return run


def bitcast(x: np.ndarray, dtype: np.dtype[Any], shape: tuple[int, ...]) -> np.ndarray:
    """
    StableHLO bitcast_convert: the same bytes (little-endian) read as `dtype` in `shape`;
    sub-byte integers reinterpret their bits within their width (i4 <-> ui4).
    """
    x = np.asarray(x)
    if x.dtype in NARROW_INT_DTYPES or dtype in NARROW_INT_DTYPES:
        bits = int_info(dtype).bits
        raw = x.astype(container(x.dtype)).view(np.uint8) & np.uint8((1 << bits) - 1)
        signed = container(dtype).kind == "i"
        if signed:  # sign-extend the top bit of the width
            raw = (raw.astype(np.int16) ^ (1 << (bits - 1))) - (1 << (bits - 1))
        return raw.astype(container(dtype)).astype(dtype).reshape(shape)
    data = np.ascontiguousarray(x).astype(x.dtype.newbyteorder("<"), copy=False)
    return data.view(dtype.newbyteorder("<")).reshape(shape).astype(dtype, copy=False)


@register_impls
class TypeFunctions(InterpreterFunctions):
    """hlo.complex, hlo.real, hlo.imag, hlo.bitcast_convert."""

    @fast_impl(hlo.ComplexOp)
    def run_complex(self, interp: Interpreter, op: hlo.ComplexOp, args: PythonValues):
        re, im = (np.asarray(a) for a in args)
        dtype = C128 if re.dtype == F64 else C64
        out = np.empty(re.shape, dtype=dtype)
        out.real = re
        out.imag = im
        return (out,)

    @fast_impl(hlo.RealOp)
    def run_real(self, interp: Interpreter, op: hlo.RealOp, args: PythonValues):
        return (np.array(np.real(args[0])),)  # a copy; keeps rank 0 (ascontiguousarray does not)

    @fast_impl(hlo.ImagOp)
    def run_imag(self, interp: Interpreter, op: hlo.ImagOp, args: PythonValues):
        x = np.asarray(args[0])
        if x.dtype in COMPLEX_DTYPES:
            return (np.array(np.imag(x)),)
        return (np.zeros_like(x),)

    @fast_impl(hlo.BitcastConvertOp)
    def run_bitcast_convert(
        self, interp: Interpreter, op: hlo.BitcastConvertOp, args: PythonValues
    ):
        shape, dtype = tensor_spec(op.result.type)
        return (bitcast(args[0], dtype, shape),)
