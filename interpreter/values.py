"""
Numerics helpers shared by the interpreter: element types to numpy dtypes, constants to
arrays, the accumulation type of reducing ops, reduction identities, random inputs.

Values are numpy arrays (or numpy scalars for rank-0 results of elementwise ops; both have
`.shape` and `.dtype`). Arrays the interpreter hands around are never written in place, so
one array may be shared by several SSA values and several devices.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
I32 = np.dtype(np.int32)
I64 = np.dtype(np.int64)
BOOL = np.dtype(np.bool_)

LOW_PRECISION = frozenset({BF16, F16})
"""Float dtypes whose ops compute in f32 and round once to the type."""
FLOAT_DTYPES = frozenset({BF16, F16, F32, F64})
INT_DTYPES = frozenset({I32, I64})

_NAMES = {BF16: "bf16", F16: "f16", F32: "f32", F64: "f64", I32: "i32", I64: "i64", BOOL: "i1"}


def dtype_of(element_type: Attribute) -> np.dtype[Any]:
    """The numpy dtype of an MLIR element type (f32 f64 f16 bf16 i32 i64 i1)."""
    if isinstance(element_type, Float32Type):
        return F32
    if isinstance(element_type, BFloat16Type):
        return BF16
    if isinstance(element_type, Float16Type):
        return F16
    if isinstance(element_type, Float64Type):
        return F64
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1:
            return BOOL
        if width == 32:
            return I32
        if width == 64:
            return I64
    raise ValueError(f"unsupported element type {element_type}")


def dtype_name(dtype: np.dtype[Any]) -> str:
    """The MLIR spelling of a dtype (`f32`, `bf16`, `i1`, ...)."""
    return _NAMES.get(np.dtype(dtype), str(dtype))


def tensor_spec(ty: Attribute) -> tuple[tuple[int, ...], np.dtype[Any]]:
    """(shape, dtype) of a tensor type."""
    if not isinstance(ty, TensorType):
        raise ValueError(f"expected a tensor type, got {ty}")
    return tuple(ty.get_shape()), dtype_of(ty.element_type)


def type_str(shape: tuple[int, ...], dtype: np.dtype[Any]) -> str:
    """`tensor<16x32xf32>` for a shape and dtype."""
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{dtype_name(dtype)}>"


def accumulation_dtype(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """
    The type dot, reduce and reducing collectives accumulate in (f32 for bf16/f16).

    The interpreter's one accumulation rule (`dot_general`, `reduce`, `combine_in_order`
    all call it). It is the numpy side of the accumulation type the dialects define for
    IR types (`tpu.accumulation_type` today, issue #12 item 5 makes one definition in
    `dialects/`); it differs for i1, which the interpreter accumulates as i1 (dot is
    or-of-ands) where `tpu.matmul` has no accumulator. Once the dialect definition lands,
    this may become `dtype_of` of it for the float types.
    """
    return F32 if dtype in LOW_PRECISION else dtype


def frozen(array: np.ndarray) -> np.ndarray:
    """Mark an array read-only (it may be shared between values and devices)."""
    array.flags.writeable = False
    return array


def array_from_dense(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The (read-only) numpy array of a dense literal, from its packed bytes."""
    shape, dtype = tensor_spec(attr.type)
    raw = attr.data.data
    if dtype == BOOL:
        flat = np.frombuffer(raw, dtype=np.uint8) != 0
    else:
        flat = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype, copy=False)
    count = int(np.prod(shape, dtype=np.int64))
    if flat.size == 1 and count != 1:
        out = np.full(shape, flat[0], dtype=dtype)
    else:
        out = np.array(flat.reshape(shape), dtype=dtype)
    return frozen(out)


# Reductions ---------------------------------------------------------------------------

_REDUCE_UFUNCS = {
    "add": np.add,
    "mul": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
}
_BOOL_UFUNCS = {
    "add": np.logical_or,
    "mul": np.logical_and,
    "max": np.logical_or,
    "min": np.logical_and,
}


def reduce_ufunc(kind: str, dtype: np.dtype[Any]) -> np.ufunc:
    """The binary ufunc combining two values of `kind` (i1: add/max = or, mul/min = and)."""
    return (_BOOL_UFUNCS if dtype == BOOL else _REDUCE_UFUNCS)[kind]


def identity(kind: str, dtype: np.dtype[Any]) -> Any:
    """The identity of a reduction kind in `dtype` (max: -inf / int min, ...)."""
    if dtype == BOOL:
        return kind in ("mul", "min")
    if kind == "add":
        return dtype.type(0)
    if kind == "mul":
        return dtype.type(1)
    if dtype in FLOAT_DTYPES:
        return dtype.type(-np.inf if kind == "max" else np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.min if kind == "max" else info.max)


def combine_in_order(kind: str, values: list[np.ndarray]) -> np.ndarray:
    """
    Reduce `values` elementwise in list order, accumulating in the accumulation type and
    rounding once at the end (the semantics of reducing collectives and unreduced sums).
    """
    dtype = values[0].dtype
    acc_dtype = accumulation_dtype(dtype)
    ufunc = reduce_ufunc(kind, dtype)
    acc = np.array(values[0], dtype=acc_dtype, copy=True)
    with np.errstate(all="ignore"):
        for v in values[1:]:
            ufunc(acc, v.astype(acc_dtype, copy=False), out=acc)
    return acc.astype(dtype, copy=False)


# Random inputs ------------------------------------------------------------------------


def random_array(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype[Any]
) -> np.ndarray:
    """
    A random array for a program input: standard normal for floats (drawn in f32, f64
    for f64, then rounded to the type), integers in [-8, 8) for i32/i64, fair bools.
    """
    if dtype == BOOL:
        return rng.integers(0, 2, size=shape, dtype=np.int8).astype(bool)
    if dtype in INT_DTYPES:
        return rng.integers(-8, 8, size=shape, dtype=np.int64).astype(dtype)
    if dtype == F64:
        return rng.standard_normal(size=shape, dtype=np.float64)
    return rng.standard_normal(size=shape, dtype=np.float32).astype(dtype)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical (NaNs with the same payload are equal, -0.0 differs from 0.0)."""
    if a is b:
        return True
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.size == 0:
        return True
    a_bytes = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    b_bytes = np.ascontiguousarray(b).reshape(-1).view(np.uint8)
    return bool(np.array_equal(a_bytes, b_bytes))


# Conversions --------------------------------------------------------------------------


def f64_to_bf16(x: np.ndarray) -> np.ndarray:
    """
    Round f64 values to bf16 correctly (to nearest, ties to even). ml_dtypes converts
    f64 through f32, which rounds twice; rounding to f32 *to odd* first makes the second
    rounding exact (f32 has more than 2 * 8 + 2 significand bits).
    """
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        r = x.astype(np.float32)
        back = r.astype(np.float64)
        inexact = (back != x) & np.isfinite(x)
        away = inexact & (np.abs(back) > np.abs(x))
        r = np.where(away, np.nextafter(r, np.float32(0)), r).astype(np.float32)
        bits = np.ascontiguousarray(r).view(np.uint32) | inexact.astype(np.uint32)
    return bits.view(np.float32).astype(BF16)


def convert(x: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """
    StableHLO convert: float -> int truncates toward zero (NaN -> 0, out of range
    saturates); int -> float and float -> narrower float round to nearest even; any -> i1
    is `!= 0`; i1 -> any is 0 / 1; int -> int wraps.
    """
    x = np.asarray(x)
    src = x.dtype
    if src == dtype:
        return x
    if dtype == BOOL:
        return x != 0
    if src == BOOL:
        return x.astype(dtype)
    if dtype in INT_DTYPES:
        if src in INT_DTYPES:
            return x.astype(dtype)
        info = np.iinfo(dtype)
        with np.errstate(all="ignore"):
            t = np.trunc(x.astype(np.float64))
            t = np.where(np.isnan(t), 0.0, t)
            out = np.where(t >= 2.0**63, info.max, 0).astype(np.int64)
            inside = t < 2.0**63
            out[inside] = np.clip(t[inside], -(2.0**63), None).astype(np.int64)
            out = np.clip(out, info.min, info.max)
        return out.astype(dtype)
    # float destination
    if dtype == BF16 and src in (F64, I32, I64):
        return f64_to_bf16(x.astype(np.float64))
    if dtype == F16 and src in INT_DTYPES:
        return x.astype(np.float64).astype(F16)
    with np.errstate(all="ignore"):
        return x.astype(dtype)
