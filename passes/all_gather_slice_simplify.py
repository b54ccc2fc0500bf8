"""
`all-gather-slice-simplify`: a dynamic_slice that takes this device's own block back out
of an all_gather is the all_gather's operand (XLA's AllGatherDynamicSliceSimplifier).

    %g = collective.all_gather %x on @mesh["x"], dim = 0 : (tensor<4x8xf32>) -> tensor<16x8xf32>
    %s = hlo.dynamic_slice %g [%x_index_times_4, %zero] sizes = [4, 8]
  ->  %x

Matched (start indices are evaluated on every device, see `device_values`):
- on the gather dimension the clamped offset is `rank * block + c` with the same `c` on
  every device and the slice inside the block; every other offset is the same on every
  device. The result is `%x`, or a static `hlo.slice` of it when the slice takes only
  part of the block (`c`, sizes);
- through reshapes (XLA's allow_intervening_reshape): when the gathered blocks are
  contiguous in row-major order (only size-1 dimensions before the gather dimension) and
  the slice of the reshaped value is the contiguous range `rank * numel(x)` of length
  `numel(x)`, the result is `%x` reshaped. That includes a reshape that merges the
  gather dimension with the next ones (XLA's AllPartitionsWithReshapeOnSliceDim, which
  XLA declines);
- variadic all_gathers (each result separately); the all_gather may have other users
  (it stays for them: XLA's allow_multiple_users; it is erased once unused).

Not matched: another device's block, or a slice across blocks; a slice of the gathered
dimension through a reshape that interleaves blocks; `_start` forms; offsets that read
anything but mesh coordinates and constants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from shardc.dialects import collective, hlo
from shardc.dialects.spmd import MeshAttr, find_mesh
from shardc.passes.device_values import clamped_offsets, device_ranks, is_invariant
from shardc.passes.rewrite_utils import (
    erase_if_dead,
    insert_from,
    replace_results,
    sites_only,
    static_slice_or_value,
    tensor_type,
)
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)


def _own_block_direct(
    ds: hlo.DynamicSliceOp, ag: collective.AllGatherOp, x: SSAValue, mesh: MeshAttr
) -> list[Operation] | SSAValue | None:
    """The slice applied straight to the all_gather's result."""
    gathered = tensor_type(ds.operand).get_shape()
    sizes = list(ds.sizes)
    offsets = clamped_offsets(ds.start_indices, gathered, sizes, mesh)
    if offsets is None:
        return None
    dim = ag.dim.value.data
    block = tensor_type(x).get_shape()[dim]
    _, ranks = device_ranks(ag)
    starts: list[int] = []
    for d, off in enumerate(offsets):
        if d == dim:
            off = off - ranks * block
        if not is_invariant(off):
            return None
        starts.append(int(off[0]))
    if starts[dim] < 0 or starts[dim] + sizes[dim] > block:
        return None
    value, ops = static_slice_or_value(x, starts, sizes)
    return ops if ops else value


def _own_block_through_reshape(
    ds: hlo.DynamicSliceOp, ag: collective.AllGatherOp, x: SSAValue, mesh: MeshAttr
) -> list[Operation] | SSAValue | None:
    """The slice applied to a reshape of the all_gather's result: contiguous blocks only."""
    dim = ag.dim.value.data
    gathered = tensor_type(ag.results[0]).get_shape()
    if math.prod(gathered[:dim]) != 1:
        return None  # the blocks interleave in row-major order
    shape = tensor_type(ds.operand).get_shape()
    sizes = list(ds.sizes)
    # The slice is one contiguous range: size-1 dims, then one partial dim, then full dims.
    partial = [d for d, (s, n) in enumerate(zip(sizes, shape, strict=False)) if s != n]
    first = partial[0] if partial else 0
    if any(sizes[d] != 1 for d in range(first)) or any(
        sizes[d] != shape[d] for d in range(first + 1, len(shape))
    ):
        return None
    offsets = clamped_offsets(ds.start_indices, shape, sizes, mesh)
    if offsets is None:
        return None
    strides = [math.prod(shape[d + 1 :]) for d in range(len(shape))]
    flat = sum((o * s for o, s in zip(offsets, strides, strict=False)), np.zeros_like(offsets[0]))
    numel = math.prod(tensor_type(x).get_shape())
    if math.prod(sizes) != numel:
        return None
    _, ranks = device_ranks(ag)
    if not np.array_equal(flat, ranks * numel):
        return None
    result_type = tensor_type(ds.result)
    if result_type == tensor_type(x):
        return x
    return [hlo.ReshapeOp(x, TensorType(result_type.element_type, result_type.get_shape()))]


def simplify(ds: hlo.DynamicSliceOp, mesh: MeshAttr, rewriter: PatternRewriter) -> None:
    source = ds.operand
    reshapes: list[hlo.ReshapeOp] = []
    while isinstance(source.owner, hlo.ReshapeOp):
        reshapes.append(source.owner)
        source = source.owner.operand
    ag = source.owner
    if not isinstance(ag, collective.AllGatherOp):
        return
    x = ag.operands[ag.results.index(source)]  # pyright: ignore[reportArgumentType]
    if reshapes:
        found = _own_block_through_reshape(ds, ag, x, mesh)
    else:
        found = _own_block_direct(ds, ag, x, mesh)
    if found is None:
        return
    inputs = list(ds.operands)
    if isinstance(found, SSAValue):
        replace_results(rewriter, ds, [found], rename=False)
    else:
        insert_from(rewriter, ds, found)
        replace_results(rewriter, ds, found[-1].results)
    erase_if_dead(inputs, rewriter)


@dataclass(frozen=True)
class SimplifyOwnBlockSlice(RewritePattern):
    """This device's block of an all_gather is the all_gather's operand (module docstring)."""

    mesh: MeshAttr

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hlo.DynamicSliceOp, rewriter: PatternRewriter) -> None:
        simplify(op, self.mesh, rewriter)


@dataclass(frozen=True)
class AllGatherSliceSimplifyPass(ModulePass):
    """dynamic_slice of this device's block of an all_gather -> its operand (module docstring)."""

    name = "all-gather-slice-simplify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        mesh = find_mesh(op)
        if mesh is None:
            return
        sites_only(
            PatternRewriteWalker(SimplifyOwnBlockSlice(mesh)), hlo.DynamicSliceOp
        ).rewrite_module(op)
