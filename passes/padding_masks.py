"""
Masks for unevenly split (padded) blocks at level S: where a reduction or a dot's
contraction runs over a dimension whose last blocks are padded, the padding is replaced
by the reduction's identity (zero for a dot's contraction, on both operands: garbage
times zero is not zero when the garbage is NaN) before the op, so it never reaches a
result. Block k of c entries of a dimension of size n holds global indices k*c + i;
entries with k*c + i >= n are padding:

    %iota = hlo.iota dim = d : tensor<..xi32>        // i
    %k    = (this device's shard index over the axes) * c, broadcast
    %keep = hlo.compare LT, %iota + %k, n             // true on real entries
    %x'   = hlo.select %keep, %x, identity
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from shardc.dialects import hlo
from shardc.dialects.syntax import splat_elements
from shardc.passes.resharding import Resharder
from xdsl.dialects.builtin import AnyFloat, IntegerType, Signedness, TensorType, i1, i32
from xdsl.ir import Attribute, SSAValue

PaddedDim = tuple[int, Sequence[str], int]
"""(dimension, the axes splitting it, its global size)."""


def identity(kind: str, element: Attribute) -> float:
    """The identity of a reduction `kind` (add mul max min) in `element`'s type."""
    if kind == "add":
        return 0
    if kind == "mul":
        return 1
    if isinstance(element, AnyFloat):
        return -math.inf if kind == "max" else math.inf
    assert isinstance(element, IntegerType)
    width = element.width.data
    if element.signedness.data == Signedness.UNSIGNED:
        return 0 if kind == "max" else 2**width - 1
    if width == 1:
        return 0 if kind == "max" else 1
    return -(2 ** (width - 1)) if kind == "max" else 2 ** (width - 1) - 1


def mask_padding(
    resharder: Resharder, value: SSAValue, padded: Sequence[PaddedDim], fill: float
) -> SSAValue:
    """`value` (a local block) with the padding of each of `padded`'s dims set to `fill`."""
    ty = value.type
    assert isinstance(ty, TensorType)
    shape = ty.get_shape()
    keep: SSAValue | None = None
    for dim, axes, size in padded:
        flags = _real_entries(resharder, shape, dim, axes, size)
        keep = flags if keep is None else resharder._insert(hlo.AndOp(keep, flags)).results[0]  # pyright: ignore[reportPrivateUsage]
    if keep is None:
        return value
    literal = splat_elements(TensorType(ty.element_type, shape), fill)
    filler = resharder._insert(hlo.ConstantOp(literal)).results[0]  # pyright: ignore[reportPrivateUsage]
    return resharder._insert(hlo.SelectOp(keep, value, filler)).results[0]  # pyright: ignore[reportPrivateUsage]


def _real_entries(
    resharder: Resharder, shape: Sequence[int], dim: int, axes: Sequence[str], size: int
) -> SSAValue:
    """An i1 tensor of `shape`: true where the entry of `dim` is not padding."""
    insert = resharder._insert  # pyright: ignore[reportPrivateUsage]
    index_ty = TensorType(i32, shape)
    iota = insert(hlo.IotaOp(dim, index_ty)).results[0]
    block = resharder.constant_i32(shape[dim])
    offset = insert(hlo.MulOp(resharder.shard_index(axes), block)).results[0]
    spread = insert(hlo.BroadcastOp(offset, [], index_ty)).results[0]
    where = insert(hlo.AddOp(iota, spread)).results[0]
    limit = insert(hlo.ConstantOp(splat_elements(index_ty, size))).results[0]
    flags = insert(hlo.CompareOp("LT", where, limit)).results[0]
    assert isinstance(flags.type, TensorType) and flags.type.element_type == i1
    return flags


__all__ = ["PaddedDim", "identity", "mask_padding"]
