"""
`reduce-scatter-create`: an all_reduce whose only use is a dynamic_slice at this device's
block becomes a reduce_scatter (XLA's ReduceScatterCreator).

    %r = collective.all_reduce add %x on @mesh["x"] : tensor<32x8xf32>
    %o = hlo.mul (spmd.axis_index @mesh["x"]), 8
    %s = hlo.dynamic_slice %r [%o, %zero] sizes = [8, 8]
  ->
    %s = collective.reduce_scatter add %x on @mesh["x"], dim = 0 : (tensor<32x8xf32>) -> tensor<8x8xf32>

Matched:
- the slice's start indices are evaluated on every device (`device_values`): any integer
  expression of `spmd.axis_index` and constants (the partitioner's `axis_index * block`,
  row-major shard indices over several axes, lookup tables, iota, subtraction) is
  recognised by its values, not its spelling;
- exactly one dimension's (clamped) offset differs between devices; there it must be
  `q * size` with `q` a permutation of 0..G-1 inside every group of the all_reduce. The
  reduce_scatter's groups list each group's devices in `q` order: the all_reduce's own
  groups when `q` is the rank; the same mesh axes in another order when that gives `q`
  (e.g. a `{"b", "a"}` sharding after an all_reduce over ["a", "b"]; floats then combine
  in another order, so results may differ in the last bits); else explicit groups;
- every other dimension's offset is the same on every device: a partial slice there (and
  `size * G` short of the scattered dimension, XLA's non-uniform split) becomes a static
  `hlo.slice` of the input before the reduce_scatter, which then also moves fewer bytes;
- reshapes and transposes between the all_reduce and the slice move before the
  collective (the reduction is elementwise, so moving data first changes no value);
- any reduction kind (add, mul, max, min).

Not matched: an all_reduce (or an intervening reshape) with another user (the all_reduce
would stay and the reduce_scatter come on top: more communication, XLA declines too);
variadic all_reduces (run this before `collective-combine`); `_start` forms (run before
`async-split`); a static `hlo.slice` (it cannot depend on the device); offsets that read
anything but mesh coordinates and constants; slices varying in two dimensions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from shardc.dialects import collective, hlo
from shardc.dialects.spmd import MeshAttr, find_mesh
from shardc.dialects.syntax import i64_attr
from shardc.passes.device_values import clamped_offsets, is_invariant
from shardc.passes.rewrite_utils import (
    erase_if_dead,
    insert_from,
    properties_for_groups,
    replace_results,
    replay_data_movement,
    single_user,
    sites_only,
    static_slice_or_value,
    tensor_type,
)
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

DATA_MOVEMENT = (hlo.ReshapeOp, hlo.TransposeOp)


@dataclass
class Match:
    all_reduce: collective.AllReduceOp
    chain: list[Operation]
    slice: hlo.DynamicSliceOp
    dim: int
    groups: list[list[int]]
    starts: list[int]
    sizes: list[int]
    """The static slice of the (reshaped) input before the reduce_scatter."""


def match(ar: collective.AllReduceOp, mesh: MeshAttr) -> Match | None:
    if len(ar.operands) != 1:
        return None
    value = ar.results[0]
    chain: list[Operation] = []
    while True:
        user = single_user(value)
        if user is None or not value.has_one_use():
            return None
        if isinstance(user, DATA_MOVEMENT):
            chain.append(user)
            value = user.results[0]
            continue
        if not isinstance(user, hlo.DynamicSliceOp) or user.operand is not value:
            return None
        break
    ds = user
    shape = list(tensor_type(value).get_shape())
    sizes = list(ds.sizes)
    offsets = clamped_offsets(ds.start_indices, shape, sizes, mesh)
    if offsets is None:
        return None
    varying = [d for d, off in enumerate(offsets) if not is_invariant(off)]
    if len(varying) != 1:
        return None
    (dim,) = varying
    size = sizes[dim]
    off = offsets[dim]
    if size == 0 or np.any(off % size):
        return None
    q = off // size
    groups = ar.device_groups()
    g = len(groups[0])
    if size * g > shape[dim]:
        return None
    ordered: list[list[int]] = []
    for group in groups:
        if sorted(int(q[d]) for d in group) != list(range(g)):
            return None
        ordered.append(sorted(group, key=lambda d: int(q[d])))
    starts = [int(o[0]) for o in offsets]
    starts[dim] = 0
    slice_sizes = list(sizes)
    slice_sizes[dim] = size * g
    return Match(ar, chain, ds, dim, ordered, starts, slice_sizes)


def rewrite(m: Match, mesh: MeshAttr, rewriter: PatternRewriter) -> None:
    ar, ds = m.all_reduce, m.slice
    new_ops: list[Operation] = []
    value = ar.operands[0]
    for op in m.chain:
        moved = replay_data_movement(op, value)
        new_ops.append(moved)
        value = moved.results[0]
    value, sliced = static_slice_or_value(value, m.starts, m.sizes)
    new_ops += sliced
    rs = collective.ReduceScatterOp.create(
        operands=[value],
        result_types=[ds.result.type],
        properties={
            "kind": StringAttr(ar.kind.data),
            "dim": i64_attr(m.dim),
            **properties_for_groups(ar, m.groups, mesh),
        },
        attributes=dict(ar.attributes),
    )
    new_ops.append(rs)
    insert_from(rewriter, ar, new_ops, InsertPoint.before(ds))
    indices = list(ds.start_indices)
    replace_results(rewriter, ds, rs.results)
    for op in reversed(m.chain):
        rewriter.erase(op)
    rewriter.erase(ar)
    erase_if_dead(indices, rewriter)


@dataclass(frozen=True)
class CreateReduceScatter(RewritePattern):
    """One all_reduce whose only use is this device's block of it (module docstring)."""

    mesh: MeshAttr

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: collective.AllReduceOp, rewriter: PatternRewriter) -> None:
        found = match(op, self.mesh)
        if found is not None:
            rewrite(found, self.mesh, rewriter)


@dataclass(frozen=True)
class ReduceScatterCreatePass(ModulePass):
    """all_reduce + dynamic_slice at this device's block -> reduce_scatter (module docstring)."""

    name = "reduce-scatter-create"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        mesh = find_mesh(op)
        if mesh is None:
            return
        sites_only(
            PatternRewriteWalker(CreateReduceScatter(mesh)), collective.AllReduceOp
        ).rewrite_module(op)
