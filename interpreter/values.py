"""
Numerics helpers shared by the interpreter: element types to numpy dtypes, constants to
arrays, the accumulation type of reducing ops, reduction identities, random inputs.

Values are numpy arrays (or numpy scalars for rank-0 results of elementwise ops; both have
`.shape` and `.dtype`). Arrays the interpreter hands around are never written in place, so
one array may be shared by several SSA values and several devices.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    ComplexType,
    DenseIntOrFPElementsAttr,
    Float8E4M3FNType,
    Float8E5M2Type,
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
F8E4M3FN = np.dtype(ml_dtypes.float8_e4m3fn)
F8E5M2 = np.dtype(ml_dtypes.float8_e5m2)
I32 = np.dtype(np.int32)
I64 = np.dtype(np.int64)
BOOL = np.dtype(np.bool_)
C64 = np.dtype(np.complex64)
C128 = np.dtype(np.complex128)

_SIGNED = {
    2: np.dtype(ml_dtypes.int2),
    4: np.dtype(ml_dtypes.int4),
    8: np.dtype(np.int8),
    16: np.dtype(np.int16),
    32: I32,
    64: I64,
}
_UNSIGNED = {
    2: np.dtype(ml_dtypes.uint2),
    4: np.dtype(ml_dtypes.uint4),
    8: np.dtype(np.uint8),
    16: np.dtype(np.uint16),
    32: np.dtype(np.uint32),
    64: np.dtype(np.uint64),
}

LOW_PRECISION = frozenset({BF16, F16, F8E4M3FN, F8E5M2})
"""Float dtypes whose ops compute in f32 and round once to the type."""
FLOAT_DTYPES = frozenset({BF16, F16, F32, F64, F8E4M3FN, F8E5M2})
INT_DTYPES = frozenset({*_SIGNED.values(), *_UNSIGNED.values()})
"""Every integer dtype (signed and unsigned, sub-byte ones included; not bool)."""
UNSIGNED_DTYPES = frozenset(_UNSIGNED.values())
COMPLEX_DTYPES = frozenset({C64, C128})
NARROW_INT_DTYPES = frozenset({_SIGNED[2], _SIGNED[4], _UNSIGNED[2], _UNSIGNED[4]})
"""Sub-byte integers (ml_dtypes int4 ...): one per byte in numpy, computed in a byte."""

_NAMES = {BF16: "bf16", F16: "f16", F32: "f32", F64: "f64", BOOL: "i1"}
_NAMES |= {F8E4M3FN: "f8E4M3FN", F8E5M2: "f8E5M2", C64: "complex<f32>", C128: "complex<f64>"}
_NAMES |= {d: f"i{w}" for w, d in _SIGNED.items()}
_NAMES |= {d: f"ui{w}" for w, d in _UNSIGNED.items()}
_FLOATS: dict[type, np.dtype[Any]] = {
    Float32Type: F32,
    BFloat16Type: BF16,
    Float16Type: F16,
    Float64Type: F64,
    Float8E4M3FNType: F8E4M3FN,
    Float8E5M2Type: F8E5M2,
}


def dtype_of(element_type: Attribute) -> np.dtype[Any]:
    """
    The numpy dtype of an MLIR element type: f64 f32 f16 bf16 f8E4M3FN f8E5M2 (ml_dtypes
    for bf16 and f8), i1 (bool), signed and unsigned integers of 2 to 64 bits (ml_dtypes
    int2/int4/uint2/uint4 below a byte), complex<f32> / complex<f64>.
    """
    dtype = _FLOATS.get(type(element_type))
    if dtype is not None:
        return dtype
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1 and element_type.signedness.data.name == "SIGNLESS":
            return BOOL
        table = _UNSIGNED if element_type.signedness.data.name == "UNSIGNED" else _SIGNED
        if width in table:
            return table[width]
    if isinstance(element_type, ComplexType):
        inner = type(element_type.element_type)
        if inner is Float32Type:
            return C64
        if inner is Float64Type:
            return C128
    raise ValueError(f"unsupported element type {element_type}")


def int_info(dtype: np.dtype[Any]) -> Any:
    """`iinfo` of an integer dtype, sub-byte ones included (bits, min, max)."""
    return ml_dtypes.iinfo(dtype) if dtype in NARROW_INT_DTYPES else np.iinfo(dtype)


def container(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The byte-wide dtype a sub-byte integer computes in (int8 / uint8); else itself."""
    if dtype in NARROW_INT_DTYPES:
        return np.dtype(np.uint8) if dtype in UNSIGNED_DTYPES else np.dtype(np.int8)
    return dtype


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
    if dtype in LOW_PRECISION:
        return F32
    return container(dtype)


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
    elif dtype in NARROW_INT_DTYPES:  # one sign- or zero-extended byte per element
        flat = np.frombuffer(raw, dtype=container(dtype)).astype(dtype)
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
    if dtype in COMPLEX_DTYPES:
        inf = -np.inf if kind == "max" else np.inf
        return dtype.type(complex(inf, inf))
    info = int_info(dtype)
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
    for f64, then rounded to the type), integers in [-8, 8) for signed types of 8 bits
    or more, [0, 16) for unsigned ones, their whole range for i4/ui4/i2/ui2, fair bools,
    complex numbers with standard normal real and imaginary parts.
    """
    streams, finish = random_streams(dtype)
    n = math.prod(shape)
    return finish([draw(rng, n).reshape(shape) for draw in streams])


RandomDraw = Callable[[np.random.Generator, int], np.ndarray]


def random_streams(
    dtype: np.dtype[Any],
) -> tuple[list[RandomDraw], Callable[[list[np.ndarray]], np.ndarray]]:
    """
    How `random_array` draws an array of `dtype`: the flat streams it draws one after the
    other (two for complex numbers) and how it makes the array from them, elementwise.
    Drawing a stream in consecutive pieces gives the same values as drawing it whole (bools
    in pieces of a multiple of 4: numpy draws them 4 per 32-bit word), so a process can
    keep only its devices' blocks of a huge input (`interpreter.shard_inputs`).
    """
    if dtype == BOOL:
        return [lambda rng, n: rng.integers(0, 2, size=n, dtype=np.int8)], (
            lambda parts: parts[0].astype(bool)
        )
    if dtype in INT_DTYPES:
        info = int_info(dtype)
        lo, hi = max(int(info.min), -8), min(int(info.max) + 1, 16 if info.min == 0 else 8)
        return [lambda rng, n: rng.integers(lo, hi, size=n, dtype=np.int64)], (
            lambda parts: parts[0].astype(dtype, copy=False)
        )
    if dtype in COMPLEX_DTYPES:
        part = np.float64 if dtype == C128 else np.float32

        def normal(rng: np.random.Generator, n: int) -> np.ndarray:
            return rng.standard_normal(size=n, dtype=part)

        return [normal, normal], lambda parts: (parts[0] + 1j * parts[1]).astype(dtype)
    if dtype == F64:
        return [lambda rng, n: rng.standard_normal(size=n, dtype=np.float64)], (
            lambda parts: parts[0]
        )
    return [lambda rng, n: rng.standard_normal(size=n, dtype=np.float32)], (
        lambda parts: parts[0].astype(dtype, copy=False)
    )


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
        # reshape(-1): a 0-d array cannot be viewed as another dtype; the shape comes back
        flat = np.ascontiguousarray(r).reshape(-1).view(np.uint32)
        bits = flat | inexact.astype(np.uint32).reshape(-1)
    return bits.view(np.float32).astype(BF16).reshape(x.shape)


def convert(x: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """
    StableHLO convert (XLA's choices where the spec leaves it open): float -> int
    truncates toward zero, NaN -> 0, out of range saturates; int -> float and float ->
    narrower float round to nearest even once (f8E4M3FN has no infinity: overflow and
    inf give NaN, as ml_dtypes and XLA do); any -> i1 is `!= 0`; i1 -> any is 0 / 1;
    int -> int wraps (two's complement, unsigned read as unsigned); real -> complex has
    imaginary part 0; complex -> real keeps the real part (XLA).
    """
    x = np.asarray(x)
    src = x.dtype
    if src == dtype:
        return x
    if dtype == BOOL:
        return x != 0
    if src == BOOL:
        return x.astype(dtype)
    if src in COMPLEX_DTYPES and dtype not in COMPLEX_DTYPES:
        return convert(np.real(x).astype(F64 if src == C128 else F32), dtype)
    if dtype in INT_DTYPES:
        if src in INT_DTYPES:
            return x.astype(container(src)).astype(container(dtype)).astype(dtype)
        return _float_to_int(x, dtype)
    if dtype in COMPLEX_DTYPES:
        part = F64 if dtype == C128 else F32
        if src in COMPLEX_DTYPES:
            re, im = np.real(x), np.imag(x)
        else:
            re, im = x, np.zeros(x.shape, dtype=part)
        out = np.empty(x.shape, dtype)  # not re + 1j * im: an infinite im makes re NaN
        out.real, out.imag = convert(re, part), convert(im, part)
        return out
    # float destination
    if src in INT_DTYPES:
        x = x.astype(container(src))
    if dtype == BF16 and src in (F64, *INT_DTYPES):
        return f64_to_bf16(x.astype(np.float64))
    if dtype in (F16, F8E4M3FN, F8E5M2) and src in INT_DTYPES:
        return x.astype(np.float64).astype(dtype)
    with np.errstate(all="ignore"):
        return x.astype(dtype)


def _float_to_int(x: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """Truncate toward zero in f64; NaN -> 0; saturate at the type's limits."""
    info = int_info(dtype)
    with np.errstate(all="ignore"):
        t = np.trunc(x.astype(np.float64))
        t = np.where(np.isnan(t), 0.0, t)
        high = t >= float(info.max)  # 2**63 and 2**64 are exact floats: >= is saturation
        low = t <= float(info.min)
        inside = ~(high | low)
        out = np.zeros(t.shape, dtype=container(dtype))
        out[inside] = t[inside].astype(container(dtype))
        out[high] = info.max
        out[low] = info.min
    return out.astype(dtype)
