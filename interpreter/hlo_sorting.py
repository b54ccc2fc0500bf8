"""
numpy implementations of `hlo.sort` and `hlo.top_k` (issue 13), registered with the plan
next to `HloFunctions` (`plan.py`).

Both order a key along one dimension with a stable sort (numpy's `kind="stable"`): a sort
StableHLO calls unstable may order equal keys any way, and the stable order is one of them.
Floats are ordered in float64 (exact for every float type shardc has): by value with NaNs
last and -0 equal to +0 (`LT`, `GT` reverses it), or in StableHLO's total order
(`TOTALORDER`: -NaN < -inf < .. < -0 < +0 < .. < +inf < +NaN) through an integer key.
"""

from __future__ import annotations

import numpy as np
from shardc.dialects import hlo
from shardc.interpreter.hlo_impls import fast_impl
from shardc.interpreter.values import FLOAT_DTYPES
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, register_impls

_MAGNITUDE_BITS = np.int64(0x7FFF_FFFF_FFFF_FFFF)


def total_order_key(x: np.ndarray) -> np.ndarray:
    """int64 keys whose order is StableHLO's total order of the floats `x`."""
    bits = np.asarray(x).astype(np.float64).view(np.int64)
    return np.where(bits < 0, bits ^ _MAGNITUDE_BITS, bits)


def sort_permutation(key: np.ndarray, dim: int, comparator: str) -> np.ndarray:
    """
    Indices along `dim` that sort `key` stably as `comparator` says (LT / GT, optionally
    TOTALORDER); equal keys keep their order, in descending sorts too.
    """
    key = np.asarray(key)
    if key.dtype in FLOAT_DTYPES or key.dtype.kind == "f":
        key = total_order_key(key) if comparator.endswith("TOTALORDER") else key.astype(np.float64)
    if not comparator.startswith("GT"):
        return np.argsort(key, axis=dim, kind="stable")
    # Descending and stable: sort the reversed key ascending, read it backwards.
    flipped = np.argsort(np.flip(key, axis=dim), axis=dim, kind="stable")
    return key.shape[dim] - 1 - np.flip(flipped, axis=dim)


def sort(xs: list[np.ndarray], dim: int, comparator: str) -> tuple[np.ndarray, ...]:
    order = sort_permutation(xs[0], dim, comparator)
    return tuple(np.take_along_axis(np.asarray(x), order, axis=dim) for x in xs)


def top_k(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest along the last dimension (total order), lowest index first on ties."""
    x = np.asarray(x)
    order = sort_permutation(x, x.ndim - 1, "GT TOTALORDER")[..., :k]
    return np.take_along_axis(x, order, axis=-1), order.astype(np.int32)


@register_impls
class SortingFunctions(InterpreterFunctions):
    """hlo.sort and hlo.top_k."""

    @fast_impl(hlo.SortOp)
    def run_sort(self, interp: Interpreter, op: hlo.SortOp, args: PythonValues):
        return sort(list(args), op.dim, op.comparator.data)

    @fast_impl(hlo.TopKOp)
    def run_top_k(self, interp: Interpreter, op: hlo.TopKOp, args: PythonValues):
        return top_k(args[0], op.count)
