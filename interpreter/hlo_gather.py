"""
numpy implementations of `hlo.gather` and `hlo.scatter` (issue 13), registered with the
plan next to `HloFunctions` (`plan.py`).

Both follow StableHLO's index formulas, vectorised: the operand index of every result
(gather) or update (scatter) element is `full_start_index + full_batching_index +
full_offset_index`, built as broadcast integer arrays and applied with one fancy index
(gather) or one `ufunc.at` (scatter), never a Python loop per element.

gather clamps each start index to `[0, operand_dim - slice_size]`. scatter applies a window
only when it lies wholly inside the operand (XLA: an out-of-bounds window is skipped);
duplicate indices are all applied (`add` sums them, in update order), accumulating
bf16/f16 in f32 and rounding once; `replace` with duplicates keeps one of them (StableHLO
leaves which to the implementation).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from shardc.dialects import hlo
from shardc.interpreter.hlo_impls import fast_impl
from shardc.interpreter.values import BOOL, accumulation_dtype, reduce_ufunc
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, register_impls


def _index_vectors(indices: np.ndarray, ivd: int) -> np.ndarray:
    """The indices with the index vector as the last axis (int64)."""
    idx = np.asarray(indices).astype(np.int64)
    if ivd == idx.ndim:
        return idx[..., None]
    return np.moveaxis(idx, ivd, -1)


def _batch_coordinate(batch_shape: tuple[int, ...], axis: int, lead: int) -> np.ndarray:
    """The coordinate along batch axis `axis`, broadcastable over the batch shape + `lead` ones."""
    shape = [1] * len(batch_shape)
    shape[axis] = batch_shape[axis]
    return np.arange(batch_shape[axis]).reshape(shape + [1] * lead)


def _operand_indices(
    starts: np.ndarray,
    start_map: Sequence[int],
    batching: Sequence[tuple[int, int]],
    window_axes: dict[int, int],
    window_shape: Sequence[int],
    rank: int,
) -> list[np.ndarray]:
    """
    For each operand dimension, an integer array over (batch..., window...) giving the
    operand index: start (from `starts[..., k]` for `start_map[k]`) + batching coordinate
    + window offset (`window_axes[d]` is d's window axis).
    """
    batch_shape = starts.shape[:-1]
    nb, nw = len(batch_shape), len(window_shape)
    out: list[np.ndarray] = []
    for d in range(rank):
        index: Any = np.zeros([1] * (nb + nw), dtype=np.int64)
        if d in start_map:
            index = starts[..., start_map.index(d)].reshape(batch_shape + (1,) * nw)
        for op_dim, batch_axis in batching:
            if op_dim == d:
                index = index + _batch_coordinate(batch_shape, batch_axis, nw)
        if d in window_axes:
            w = window_axes[d]
            shape = [1] * (nb + nw)
            shape[nb + w] = window_shape[w]
            index = index + np.arange(window_shape[w]).reshape(shape)
        out.append(index)
    return out


def _batch_axis(index_dim: int, ivd: int) -> int:
    """An indices dimension's axis among the batch dims (the index vector dim removed)."""
    return index_dim - (1 if index_dim > ivd else 0)


def gather(operand: np.ndarray, indices: np.ndarray, op: hlo.GatherOp) -> np.ndarray:
    operand = np.asarray(operand)
    sizes = op.dims("slice_sizes")
    start_map = op.dims("start_index_map")
    starts = _index_vectors(indices, op.ivd)
    hi = np.array([operand.shape[d] - sizes[d] for d in start_map], dtype=np.int64)
    starts = np.clip(starts, 0, hi)
    dropped = {*op.dims("collapsed_slice_dims"), *op.dims("operand_batching_dims")}
    kept = [d for d in range(operand.ndim) if d not in dropped]
    batching = [
        (a, _batch_axis(b, op.ivd))
        for a, b in zip(
            op.dims("operand_batching_dims"), op.dims("start_indices_batching_dims"), strict=True
        )
    ]
    window = [sizes[d] for d in kept]
    index = _operand_indices(
        starts, start_map, batching, {d: i for i, d in enumerate(kept)}, window, operand.ndim
    )
    taken = np.broadcast_to(operand[tuple(index)], (*starts.shape[:-1], *window))
    # (batch..., offset...) -> the result's order (offset_dims say where offsets go).
    nb, offset_dims = starts.ndim - 1, op.dims("offset_dims")
    batch_iter, offset_iter = iter(range(nb)), iter(range(nb, nb + len(kept)))
    perm = [next(offset_iter) if r in offset_dims else next(batch_iter) for r in range(taken.ndim)]
    return np.array(np.transpose(taken, perm), order="C")


def scatter(
    operand: np.ndarray, indices: np.ndarray, updates: np.ndarray, op: hlo.ScatterOp
) -> np.ndarray:
    operand, updates = np.asarray(operand), np.asarray(updates)
    window_dims = op.dims("update_window_dims")
    scatter_dims = [d for d in range(updates.ndim) if d not in window_dims]
    # updates as (scatter..., window...), the layout `_operand_indices` builds.
    upd = np.transpose(updates, [*scatter_dims, *window_dims])
    starts = _index_vectors(indices, op.ivd)
    start_map = op.dims("scatter_dims_to_operand_dims")
    sizes = op.window_sizes()
    dropped = {*op.dims("inserted_window_dims"), *op.dims("input_batching_dims")}
    kept = [d for d in range(operand.ndim) if d not in dropped]
    batching = [
        (a, _batch_axis(b, op.ivd))
        for a, b in zip(
            op.dims("input_batching_dims"), op.dims("scatter_indices_batching_dims"), strict=True
        )
    ]
    window = [updates.shape[d] for d in window_dims]
    index = _operand_indices(
        starts, start_map, batching, {d: i for i, d in enumerate(kept)}, window, operand.ndim
    )
    # A window is applied only if it fits wholly: 0 <= start <= dim - window size.
    fits = np.ones(starts.shape[:-1], dtype=bool)
    for k, d in enumerate(start_map):
        fits &= (starts[..., k] >= 0) & (starts[..., k] <= operand.shape[d] - sizes[d])
    mask = np.broadcast_to(fits.reshape(fits.shape + (1,) * len(window)), upd.shape)
    flat = tuple(np.broadcast_to(i, upd.shape)[mask] for i in index)
    values = upd[mask]
    return _apply(operand, flat, values, op.kind.data)


def _apply(operand: np.ndarray, index: tuple[np.ndarray, ...], values: np.ndarray, kind: str):
    dtype = operand.dtype
    if kind == "replace":
        out = np.array(operand, copy=True)
        out[index] = values
        return out
    acc_dtype = accumulation_dtype(dtype)
    out = np.array(operand, dtype=acc_dtype, copy=True)
    ufunc = reduce_ufunc(kind, dtype)
    with np.errstate(all="ignore"):
        if dtype == BOOL:
            ufunc.at(out, index, values)
        else:
            ufunc.at(out, index, values.astype(acc_dtype, copy=False))
    return out.astype(dtype, copy=False)


@register_impls
class GatherScatterFunctions(InterpreterFunctions):
    """hlo.gather and hlo.scatter."""

    @fast_impl(hlo.GatherOp)
    def run_gather(self, interp: Interpreter, op: hlo.GatherOp, args: PythonValues):
        return (gather(args[0], args[1], op),)

    @fast_impl(hlo.ScatterOp)
    def run_scatter(self, interp: Interpreter, op: hlo.ScatterOp, args: PythonValues):
        return (scatter(args[0], args[1], args[2], op),)
