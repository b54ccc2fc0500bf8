"""
numpy implementations of `hlo.reduce_window` and `hlo.select_and_scatter` (issue 13),
registered with the plan next to `HloFunctions` (`plan.py`).

Both visit the window by its offsets: for each offset inside the window one strided slice
of the (dilated, padded) operand holds that offset's element of every window position at
once, so a window of k elements costs k numpy calls on arrays of the result's shape,
whatever the operand's size. Sums and products of bf16/f16 accumulate in f32 (as `reduce`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
from shardc.dialects import hlo
from shardc.interpreter.hlo_impls import fast_impl, pad
from shardc.interpreter.values import accumulation_dtype, reduce_ufunc, tensor_spec
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, register_impls


def _window_slices(
    window: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
    out_shape: Sequence[int],
) -> list[tuple[tuple[int, ...], tuple[slice, ...]]]:
    """For each offset in the window: the slice of the padded operand it reads."""
    out = []
    for offset in itertools.product(*(range(w) for w in window)):
        out.append(
            (
                offset,
                tuple(
                    slice(k * wd, k * wd + s * (n - 1) + 1, s)
                    for k, wd, s, n in zip(offset, dilations, strides, out_shape, strict=True)
                ),
            )
        )
    return out


def reduce_window(
    x: np.ndarray,
    init: np.ndarray,
    kind: str,
    op: hlo.WindowedOp,
    out_dtype: np.dtype[Any],
) -> np.ndarray:
    """StableHLO reduce_window: init combined with each window of the padded operand."""
    x = np.asarray(x)
    acc = accumulation_dtype(x.dtype)
    start = np.asarray(init).astype(acc)
    interior = tuple(b - 1 for b in op.base_dilation)
    padded = pad(x.astype(acc), start, op.low, op.high, interior)
    shape = op.result_shape(x.shape)
    out = np.full(shape, start, dtype=acc)
    if 0 in shape:
        return out.astype(out_dtype)
    ufunc = reduce_ufunc(kind, x.dtype)
    for _, where in _window_slices(op.window, op.strides, op.window_dilation, shape):
        out = ufunc(out, padded[where])
    return out.astype(out_dtype) if out.dtype != out_dtype else out


def select_and_scatter(
    x: np.ndarray,
    source: np.ndarray,
    init: np.ndarray,
    op: hlo.SelectAndScatterOp,
) -> np.ndarray:
    """
    In each window of the padded operand, the first element (row-major window order) that
    the select keeps against every later one (GE: a first largest; GT: a last largest; NaN
    wins as `compare` says) gets the window's source element added to it.
    """
    x, source = np.asarray(x), np.asarray(source)
    zeros = (0,) * x.ndim
    padded = pad(x, np.zeros((), x.dtype), op.low, op.high, zeros)
    valid = pad(np.ones(x.shape, bool), np.zeros((), bool), op.low, op.high, zeros)
    shape = source.shape
    best = np.zeros(shape, dtype=x.dtype)
    have = np.zeros(shape, dtype=bool)
    chosen = np.zeros((x.ndim, *shape), dtype=np.int64)
    keep = np.greater_equal if op.select.data == "GE" else np.greater
    if 0 not in shape:
        for offset, where in _window_slices(op.window, op.strides, (1,) * x.ndim, shape):
            cand, ok = padded[where], valid[where]
            take = ok & (~have | ~keep(best, cand))
            best = np.where(take, cand, best)
            have |= take
            for d, k in enumerate(offset):
                chosen[d] = np.where(take, k, chosen[d])
    acc = accumulation_dtype(source.dtype)
    out = np.full(x.shape, np.asarray(init).astype(acc), dtype=acc)
    positions = np.indices(shape)
    target = tuple(
        (positions[d] * op.strides[d] + chosen[d] - op.low[d])[have] for d in range(x.ndim)
    )
    np.add.at(out, target, source.astype(acc)[have])
    return out.astype(source.dtype) if out.dtype != source.dtype else out


@register_impls
class WindowFunctions(InterpreterFunctions):
    """hlo.reduce_window and hlo.select_and_scatter."""

    @fast_impl(hlo.ReduceWindowOp)
    def run_reduce_window(self, interp: Interpreter, op: hlo.ReduceWindowOp, args: PythonValues):
        dtype = tensor_spec(op.result.type)[1]
        return (reduce_window(args[0], args[1], op.kind.data, op, dtype),)

    @fast_impl(hlo.SelectAndScatterOp)
    def run_select_and_scatter(
        self, interp: Interpreter, op: hlo.SelectAndScatterOp, args: PythonValues
    ):
        return (select_and_scatter(args[0], args[1], args[2], op),)
