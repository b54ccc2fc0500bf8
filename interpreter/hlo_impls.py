"""
numpy implementations of the `hlo` and `spmd` ops, registered with xDSL's interpreter
framework (`@register_impls`, `@impl`): `Interpreter.run_op(op, args)` runs any of them,
and the device executor (`execution.py`) calls the same functions directly.

Semantics are StableHLO's; numerics follow DESIGN.md: bf16/f16 values are rounded to
their type after every op (elementwise ops on them compute in f32 and round once), and
`dot` and `reduce` accumulate bf16/f16 in f32 and round once at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from shardc.diagnostics import InterpreterError
from shardc.dialects import hlo, spmd
from shardc.interpreter.hlo_reduce_body import reduce_with_body
from shardc.interpreter.values import (
    BOOL,
    C64,
    C128,
    F32,
    FLOAT_DTYPES,
    INT_DTYPES,
    LOW_PRECISION,
    accumulation_dtype,
    array_from_dense,
    container,
    convert,
    frozen,
    identity,
    reduce_ufunc,
    tensor_spec,
)
from xdsl.dialects import tensor
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.ir import Operation

RAW_IMPL_KEY = "__shardc_raw_impl__"
"""Attribute of an `@fast_impl` implementation holding the undecorated function."""


def fast_impl(op_type: type[Operation]) -> Callable[[Callable[..., Any]], Any]:
    """
    `@impl(op_type)` that also keeps the plain function (returning the results tuple),
    so the device executor can call it without xDSL's `OpImplResult` wrapper.
    """

    def deco(fn: Callable[..., Any]) -> Any:
        wrapped = impl(op_type)(fn)
        setattr(wrapped, RAW_IMPL_KEY, fn)
        return wrapped

    return deco


DEVICE_KEY = "device"
"""`Interpreter.get_data(HloFunctions, DEVICE_KEY, ...)`: the running `DeviceInfo`."""


class DeviceInfo:
    """Which simulated device an interpreter runs (for `spmd.axis_index`)."""

    __slots__ = ("device", "module")

    def __init__(self, device: int, module: Operation | None):
        self.device = device
        self.module = module


# Elementwise helpers --------------------------------------------------------------------


def _via_f32(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """
    Apply `fn` in the value's own type, or with one rounding from f32 for bf16/f16/f8
    and from complex<f64> for complex<f32>.
    """

    def run(x: np.ndarray) -> np.ndarray:
        dtype = x.dtype
        if dtype in LOW_PRECISION:
            return fn(x.astype(F32)).astype(dtype)
        if dtype == C64:
            return fn(x.astype(C128)).astype(dtype)
        return fn(x)

    return run


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return np.reciprocal(np.sqrt(x))


def _logistic(x: np.ndarray) -> np.ndarray:
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))


_exp = _via_f32(np.exp)
_log = _via_f32(np.log)
_tanh = _via_f32(np.tanh)
_sqrt = _via_f32(np.sqrt)
_sin = _via_f32(np.sin)
_cos = _via_f32(np.cos)
_rsqrt_any = _via_f32(_rsqrt)
_logistic_any = _via_f32(_logistic)


def int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """
    Integer division truncating toward zero (C, StableHLO). x / 0 is -1 (all bits set,
    as XLA does: the largest value of an unsigned type) and INT_MIN / -1 wraps to INT_MIN.
    """
    a, b = np.asarray(a), np.asarray(b)
    zero = b == 0
    safe = np.where(zero, 1, b).astype(b.dtype)
    q = np.floor_divide(a, safe)
    r = a - q * safe
    q = q + ((r != 0) & ((a < 0) != (safe < 0))).astype(q.dtype)
    return np.where(zero, np.asarray(-1).astype(a.dtype), q).astype(a.dtype)


def int_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """
    Integer power by repeated squaring with wrapping multiplication. A negative exponent
    gives 0 except for bases 1 (1) and -1 (+-1), as XLA does.
    """
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    dtype = a.dtype
    result = np.ones(a.shape, dtype=dtype)
    base = a.copy()
    e = np.where(b < 0, 0, b).astype(dtype)
    while np.any(e > 0):
        odd = (e & 1).astype(bool)
        result = np.where(odd, result * base, result)
        base = base * base
        e = e >> 1
    neg = b < 0
    if np.any(neg):
        odd_exp = (b & 1).astype(bool)
        special = np.where(a == 1, 1, np.where(a == -1, np.where(odd_exp, -1, 1), 0))
        result = np.where(neg, special.astype(dtype), result)
    return result.astype(dtype)


def _binary(float_fn: Callable[..., Any], int_fn: Callable[..., Any] | None = None):
    int_fn = int_fn or float_fn

    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.dtype in FLOAT_DTYPES:
            return float_fn(a, b)
        return int_fn(a, b)

    return run


def _pow_float(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype in LOW_PRECISION:
        return np.power(a.astype(F32), b.astype(F32)).astype(a.dtype)
    return np.power(a, b)


_COMPARE = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "LT": np.less,
    "LE": np.less_equal,
    "GT": np.greater,
    "GE": np.greater_equal,
}


# Dot ------------------------------------------------------------------------------------


def dot_general(
    lhs: np.ndarray,
    rhs: np.ndarray,
    batching: tuple[tuple[int, ...], tuple[int, ...]],
    contracting: tuple[tuple[int, ...], tuple[int, ...]],
    out_dtype: np.dtype[Any],
) -> np.ndarray:
    """
    StableHLO dot_general: result dims batch, lhs free, rhs free. bf16/f16/f8 accumulate
    in f32, rounded once; integers in an integer result type (i8 x i8 -> i32 exactly).
    """
    acc = accumulation_dtype(lhs.dtype)
    if acc in INT_DTYPES and out_dtype in INT_DTYPES:
        acc = container(out_dtype)
    lhs = np.asarray(lhs)
    rhs = np.asarray(rhs)
    if lhs.dtype != acc:
        lhs = lhs.astype(acc)
    if rhs.dtype != acc:
        rhs = rhs.astype(acc)
    (lb, rb), (lc, rc) = batching, contracting
    lf = hlo.dot_free_dims(lhs.ndim, lb, lc)
    rf = hlo.dot_free_dims(rhs.ndim, rb, rc)
    ls, rs = lhs.shape, rhs.shape
    batch_shape = [ls[d] for d in lb]
    lfree_shape = [ls[d] for d in lf]
    rfree_shape = [rs[d] for d in rf]
    k = 1
    for d in lc:
        k *= ls[d]
    m = 1
    for s in lfree_shape:
        m *= s
    n = 1
    for s in rfree_shape:
        n *= s
    nb = 1
    for s in batch_shape:
        nb *= s
    lt = lhs.transpose([*lb, *lf, *lc])
    rt = rhs.transpose([*rb, *rc, *rf])
    if nb == 1 and not lb:
        a = lt if lt.ndim == 2 and len(lf) == 1 and len(lc) == 1 else lt.reshape(m, k)
        b = rt if rt.ndim == 2 and len(rf) == 1 and len(rc) == 1 else rt.reshape(k, n)
        if acc == BOOL:
            out = np.matmul(a.astype(np.int64), b.astype(np.int64)) != 0
        else:
            out = np.matmul(a, b)
    else:
        a = lt.reshape(nb, m, k)
        b = rt.reshape(nb, k, n)
        if acc == BOOL:
            out = np.matmul(a.astype(np.int64), b.astype(np.int64)) != 0
        else:
            out = np.matmul(a, b)
    out = out.reshape(batch_shape + lfree_shape + rfree_shape)
    if out.dtype != out_dtype:
        out = convert(out, out_dtype)
    return out


def reduce(x: np.ndarray, kind: str, dims: tuple[int, ...], out_dtype: np.dtype[Any]) -> np.ndarray:
    """Reduce `dims` away from the kind's identity, accumulating bf16/f16 in f32."""
    x = np.asarray(x)
    acc = accumulation_dtype(x.dtype)
    ufunc = reduce_ufunc(kind, x.dtype)
    src = x.astype(acc) if x.dtype != acc else x
    out = ufunc.reduce(src, axis=dims, dtype=acc, initial=identity(kind, acc))
    out = np.asarray(out)
    if out.dtype != out_dtype:
        out = out.astype(out_dtype)
    return out


def pad(
    x: np.ndarray,
    value: np.ndarray,
    low: tuple[int, ...],
    high: tuple[int, ...],
    interior: tuple[int, ...],
) -> np.ndarray:
    """
    StableHLO pad: place `x` with `interior` gaps into a buffer of the padding value that
    holds the non-negative edge padding too, then cut away what negative edges remove.
    """
    x = np.asarray(x)
    stretched = [s + max(s - 1, 0) * i for s, i in zip(x.shape, interior, strict=True)]
    full = [max(lo, 0) + s + max(hi, 0) for s, lo, hi in zip(stretched, low, high, strict=True)]
    out = np.full(full, np.asarray(value, dtype=x.dtype), dtype=x.dtype)
    place = tuple(
        slice(max(lo, 0), max(lo, 0) + s, i + 1)
        for s, lo, i in zip(stretched, low, interior, strict=True)
    )
    out[place] = x
    keep = tuple(
        slice(max(-lo, 0), n - max(-hi, 0)) for n, lo, hi in zip(full, low, high, strict=True)
    )
    return out[keep]


# The implementations --------------------------------------------------------------------


@register_impls
class HloFunctions(InterpreterFunctions):
    """Every `hlo` op, `spmd.constraint` (identity) and `spmd.axis_index`."""

    def __init__(self) -> None:
        self._params: dict[Operation, Any] = {}

    def params(self, op: Operation, compute: Callable[[], Any]) -> Any:
        """Per-op constants derived from attributes, computed once."""
        p = self._params.get(op)
        if p is None:
            p = self._params[op] = compute()
        return p

    # binary elementwise ---------------------------------------------------------------

    @fast_impl(hlo.AddOp)
    def run_add(self, interp: Interpreter, op: hlo.AddOp, args: PythonValues):
        return (np.add(args[0], args[1]),)

    @fast_impl(hlo.SubOp)
    def run_sub(self, interp: Interpreter, op: hlo.SubOp, args: PythonValues):
        return (np.subtract(args[0], args[1]),)

    @fast_impl(hlo.MulOp)
    def run_mul(self, interp: Interpreter, op: hlo.MulOp, args: PythonValues):
        return (np.multiply(args[0], args[1]),)

    @fast_impl(hlo.DivOp)
    def run_div(self, interp: Interpreter, op: hlo.DivOp, args: PythonValues):
        a, b = args
        if a.dtype in INT_DTYPES:
            return (int_div(a, b),)
        return (np.divide(a, b),)

    @fast_impl(hlo.MaxOp)
    def run_max(self, interp: Interpreter, op: hlo.MaxOp, args: PythonValues):
        return (np.maximum(args[0], args[1]),)

    @fast_impl(hlo.MinOp)
    def run_min(self, interp: Interpreter, op: hlo.MinOp, args: PythonValues):
        return (np.minimum(args[0], args[1]),)

    @fast_impl(hlo.PowOp)
    def run_pow(self, interp: Interpreter, op: hlo.PowOp, args: PythonValues):
        a, b = args
        if a.dtype in INT_DTYPES:
            return (int_pow(a, b),)
        return (_pow_float(a, b),)

    @fast_impl(hlo.AndOp)
    def run_and(self, interp: Interpreter, op: hlo.AndOp, args: PythonValues):
        return (np.bitwise_and(args[0], args[1]),)

    @fast_impl(hlo.OrOp)
    def run_or(self, interp: Interpreter, op: hlo.OrOp, args: PythonValues):
        return (np.bitwise_or(args[0], args[1]),)

    # unary elementwise ----------------------------------------------------------------

    @fast_impl(hlo.NegOp)
    def run_neg(self, interp: Interpreter, op: hlo.NegOp, args: PythonValues):
        return (np.negative(args[0]),)

    @fast_impl(hlo.ExpOp)
    def run_exp(self, interp: Interpreter, op: hlo.ExpOp, args: PythonValues):
        return (_exp(args[0]),)

    @fast_impl(hlo.LogOp)
    def run_log(self, interp: Interpreter, op: hlo.LogOp, args: PythonValues):
        return (_log(args[0]),)

    @fast_impl(hlo.TanhOp)
    def run_tanh(self, interp: Interpreter, op: hlo.TanhOp, args: PythonValues):
        return (_tanh(args[0]),)

    @fast_impl(hlo.SqrtOp)
    def run_sqrt(self, interp: Interpreter, op: hlo.SqrtOp, args: PythonValues):
        return (_sqrt(args[0]),)

    @fast_impl(hlo.RsqrtOp)
    def run_rsqrt(self, interp: Interpreter, op: hlo.RsqrtOp, args: PythonValues):
        return (_rsqrt_any(args[0]),)

    @fast_impl(hlo.AbsOp)
    def run_abs(self, interp: Interpreter, op: hlo.AbsOp, args: PythonValues):
        x = args[0]
        if x.dtype == C64:  # the modulus in f64, rounded once
            return (np.absolute(x.astype(C128)).astype(F32),)
        return (np.absolute(x),)

    @fast_impl(hlo.SinOp)
    def run_sin(self, interp: Interpreter, op: hlo.SinOp, args: PythonValues):
        return (_sin(args[0]),)

    @fast_impl(hlo.CosOp)
    def run_cos(self, interp: Interpreter, op: hlo.CosOp, args: PythonValues):
        return (_cos(args[0]),)

    @fast_impl(hlo.LogisticOp)
    def run_logistic(self, interp: Interpreter, op: hlo.LogisticOp, args: PythonValues):
        return (_logistic_any(args[0]),)

    @fast_impl(hlo.NotOp)
    def run_not(self, interp: Interpreter, op: hlo.NotOp, args: PythonValues):
        x = args[0]
        if x.dtype == BOOL:
            return (np.logical_not(x),)
        return (np.invert(x),)

    # compare, select, convert, constant, iota -----------------------------------------

    @fast_impl(hlo.CompareOp)
    def run_compare(self, interp: Interpreter, op: hlo.CompareOp, args: PythonValues):
        fn = self.params(op, lambda: _COMPARE[op.comparison_direction.data])
        return (fn(args[0], args[1]),)

    @fast_impl(hlo.SelectOp)
    def run_select(self, interp: Interpreter, op: hlo.SelectOp, args: PythonValues):
        p, a, b = args
        if np.ndim(p) == 0:
            return (a if p else b,)
        return (np.where(p, a, b),)

    @fast_impl(hlo.ConvertOp)
    def run_convert(self, interp: Interpreter, op: hlo.ConvertOp, args: PythonValues):
        dtype = self.params(op, lambda: tensor_spec(op.result.type)[1])
        return (convert(args[0], dtype),)

    @fast_impl(hlo.ConstantOp)
    def run_constant(self, interp: Interpreter, op: hlo.ConstantOp, args: PythonValues):
        return (self.params(op, lambda: array_from_dense(op.value)),)

    @fast_impl(hlo.IotaOp)
    def run_iota(self, interp: Interpreter, op: hlo.IotaOp, args: PythonValues):
        def compute() -> np.ndarray:
            shape, dtype = tensor_spec(op.result.type)
            dim = op.iota_dimension.value.data
            line = convert(np.arange(shape[dim], dtype=np.int64), dtype)
            view = [1] * len(shape)
            view[dim] = shape[dim]
            return frozen(np.ascontiguousarray(np.broadcast_to(line.reshape(view), shape)))

        return (self.params(op, compute),)

    # shape ops ------------------------------------------------------------------------

    @fast_impl(hlo.BroadcastOp)
    def run_broadcast(self, interp: Interpreter, op: hlo.BroadcastOp, args: PythonValues):
        def compute() -> tuple[list[int], tuple[int, ...]]:
            shape = tuple(op.result.type.get_shape())  # pyright: ignore
            view = [1] * len(shape)
            src = op.operand.type.get_shape()  # pyright: ignore
            for i, d in enumerate(op.dims):
                view[d] = src[i]
            return view, shape

        view, shape = self.params(op, compute)
        return (np.broadcast_to(np.reshape(args[0], view), shape),)

    @fast_impl(hlo.ReshapeOp)
    def run_reshape(self, interp: Interpreter, op: hlo.ReshapeOp, args: PythonValues):
        shape = self.params(op, lambda: tuple(op.result.type.get_shape()))  # pyright: ignore
        return (np.reshape(args[0], shape),)

    @fast_impl(hlo.TransposeOp)
    def run_transpose(self, interp: Interpreter, op: hlo.TransposeOp, args: PythonValues):
        perm = self.params(op, lambda: op.perm)
        return (np.transpose(args[0], perm),)

    @fast_impl(hlo.SliceOp)
    def run_slice(self, interp: Interpreter, op: hlo.SliceOp, args: PythonValues):
        index = self.params(op, lambda: tuple(slice(lo, hi, s) for lo, hi, s in op.bounds))
        return (np.asarray(args[0])[index],)

    @fast_impl(hlo.DynamicSliceOp)
    def run_dynamic_slice(self, interp: Interpreter, op: hlo.DynamicSliceOp, args: PythonValues):
        x = np.asarray(args[0])
        sizes = self.params(op, lambda: op.sizes)
        index = tuple(
            slice(s, s + n)
            for s, n in (
                (min(max(int(i), 0), dim - n), n)
                for i, n, dim in zip(args[1:], sizes, x.shape, strict=False)
            )
        )
        return (x[index],)

    @fast_impl(hlo.DynamicUpdateSliceOp)
    def run_dynamic_update_slice(
        self, interp: Interpreter, op: hlo.DynamicUpdateSliceOp, args: PythonValues
    ):
        x, u = np.asarray(args[0]), np.asarray(args[1])
        index = tuple(
            slice(s, s + n)
            for s, n in (
                (min(max(int(i), 0), dim - n), n)
                for i, n, dim in zip(args[2:], u.shape, x.shape, strict=False)
            )
        )
        out = x.copy()
        out[index] = u
        return (out,)

    @fast_impl(hlo.ConcatenateOp)
    def run_concatenate(self, interp: Interpreter, op: hlo.ConcatenateOp, args: PythonValues):
        dim = self.params(op, lambda: op.dimension.value.data)
        return (np.concatenate(args, axis=dim),)

    # dot and reduce -------------------------------------------------------------------

    @fast_impl(hlo.DotOp)
    def run_dot(self, interp: Interpreter, op: hlo.DotOp, args: PythonValues):
        batching, contracting, dtype = self.params(
            op,
            lambda: (op.batching, op.contracting, tensor_spec(op.result.type)[1]),
        )
        return (dot_general(args[0], args[1], batching, contracting, dtype),)

    @fast_impl(hlo.ReduceOp)
    def run_reduce(self, interp: Interpreter, op: hlo.ReduceOp, args: PythonValues):
        if op.has_body:
            return reduce_with_body(interp, op, args)
        kind, dims, dtype = self.params(
            op,
            lambda: (op.kind.data, op.dims, tensor_spec(op.result.type)[1]),  # pyright: ignore[reportOptionalMemberAccess]
        )
        return (reduce(args[0], kind, dims, dtype),)

    # pad and reverse ------------------------------------------------------------------

    @fast_impl(hlo.PadOp)
    def run_pad(self, interp: Interpreter, op: hlo.PadOp, args: PythonValues):
        low, high, interior = self.params(op, lambda: (op.low, op.high, op.interior))
        return (pad(args[0], args[1], low, high, interior),)

    @fast_impl(hlo.ReverseOp)
    def run_reverse(self, interp: Interpreter, op: hlo.ReverseOp, args: PythonValues):
        dims = self.params(op, lambda: op.dims)
        return (np.flip(np.asarray(args[0]), axis=dims),)

    # spmd -----------------------------------------------------------------------------

    @fast_impl(spmd.ConstraintOp)
    def run_constraint(self, interp: Interpreter, op: spmd.ConstraintOp, args: PythonValues):
        return (args[0],)

    @fast_impl(spmd.AxisIndexOp)
    def run_axis_index(self, interp: Interpreter, op: spmd.AxisIndexOp, args: PythonValues):
        info: DeviceInfo | None = interp.get_data(HloFunctions, DEVICE_KEY, lambda: None)
        if info is None:
            raise InterpreterError(
                "spmd.axis_index needs a level-S program (a function marked "
                "spmd.partitioned or spmd.per_device_io) running on a mesh"
            )
        mesh = spmd.lookup_mesh(op, op.mesh.root_reference.data)
        coords = mesh.coords(info.device)
        value = coords[mesh.names.index(op.axis.data)]
        _, dtype = tensor_spec(op.result.type)
        return (np.array(value, dtype=dtype),)


@register_impls
class TensorScalarFunctions(InterpreterFunctions):
    """
    The bridge from tensors to scalars for control flow on device values: `tensor.extract`
    of a numpy array gives a Python scalar (so `arith` and `scf.if` can use it).
    """

    @fast_impl(tensor.ExtractOp)
    def run_extract(self, interp: Interpreter, op: tensor.ExtractOp, args: PythonValues):
        x, *indices = args
        return (np.asarray(x)[tuple(int(i) for i in indices)].item(),)
