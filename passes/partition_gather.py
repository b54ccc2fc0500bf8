"""
How `spmd-partition` computes `hlo.gather` and `hlo.scatter` on local blocks where a
local op with local types is not enough (XLA's partitioning of embedding lookups and their
gradients; the factors are in `sharding_rules`):

* a gather from an operand split along its one indexed dimension (an embedding table split
  on the vocabulary): the global start indices are clamped as StableHLO says, shifted by
  this device's first row, and the rows a device does not own are masked to zero after
  its local gather; the partial results are summed by an all_reduce (the reduction factor
  leaves the result `unreduced`);
* a scatter into an operand split along its one indexed dimension: indices shifted by this
  device's first row, so updates for other devices' rows are out of bounds locally and
  skipped, as scatter skips out-of-bounds windows;
* a scatter whose updates are split along a scatter dimension (batch-split updates into a
  replicated table): each device scatters its updates into the kind's identity, an
  all_reduce of that kind combines them, and the result is combined with the operand.
"""

from __future__ import annotations

from shardc.dialects import hlo
from shardc.dialects.spmd import ShardingAttr
from shardc.dialects.syntax import splat_elements
from shardc.passes.resharding import Resharder
from shardc.passes.sharding_rules import gather_is_masked, scatter_owned_rows_dim
from xdsl.dialects.builtin import TensorType, i1
from xdsl.ir import Operation, SSAValue


def _tensor(value: SSAValue) -> TensorType:
    ty = value.type
    assert isinstance(ty, TensorType)
    return ty


def _splat(r: Resharder, ty: TensorType, value: float) -> SSAValue:
    return r._insert(hlo.ConstantOp(splat_elements(ty, value))).results[0]  # pyright: ignore[reportPrivateUsage]


def _emit(r: Resharder, op: Operation) -> SSAValue:
    return r._insert(op).results[0]  # pyright: ignore[reportPrivateUsage]


def _row_offset(r: Resharder, axes: tuple[str, ...], rows: int, ty: TensorType) -> SSAValue:
    """This device's first row along `axes` (blocks of `rows`), broadcast to `ty`."""
    index = r.shard_index(axes)
    first = _emit(r, hlo.MulOp(index, r.constant_i32(rows)))
    scalar = _emit(r, hlo.ConvertOp(first, TensorType(ty.element_type, [])))
    return _emit(r, hlo.BroadcastOp(scalar, [], ty))


def owned_indexed_dim(
    op: hlo.GatherOp | hlo.ScatterOp, operand: ShardingAttr
) -> tuple[int, tuple[str, ...]] | None:
    """The operand's split indexed dimension a device computes its own rows of, if any."""
    index_map = (
        op.dims("start_index_map")
        if isinstance(op, hlo.GatherOp)
        else op.dims("scatter_dims_to_operand_dims")
    )
    if len(index_map) != 1 or not operand.dim_axes[index_map[0]]:
        return None
    d = index_map[0]
    owned = (
        gather_is_masked(op, d) if isinstance(op, hlo.GatherOp) else scatter_owned_rows_dim(op, d)
    )
    return (d, operand.dim_axes[d]) if owned else None


def shift_indices(
    r: Resharder,
    op: hlo.GatherOp | hlo.ScatterOp,
    dim: int,
    axes: tuple[str, ...],
    rows: int,
    clamp_to: int | None,
) -> SSAValue:
    """
    Replace the op's indices by (clamped to [0, clamp_to - 1] first for a gather) minus
    this device's first row; the shifted indices.
    """
    r.anchor = op
    indices = op.operands[1]
    ty = _tensor(indices)
    if clamp_to is not None:
        lo = _splat(r, ty, 0)
        hi = _splat(r, ty, clamp_to - 1)
        indices = _emit(r, hlo.ClampOp(lo, indices, hi))
    shifted = _emit(r, hlo.SubOp(indices, _row_offset(r, axes, rows, ty)))
    op.operands[1] = shifted
    return shifted


def mask_gather(
    r: Resharder, op: hlo.GatherOp, operand: ShardingAttr, global_shape: tuple[int, ...]
) -> tuple[SSAValue, list[Operation]] | None:
    """
    A gather from an operand split along its indexed dimension: shift the indices, mask the
    rows this device does not own. The masked result and the ops inserted after the op
    (None if the operand is not split that way).
    """
    owned = owned_indexed_dim(op, operand)
    if owned is None:
        return None
    dim, axes = owned
    rows = _tensor(op.operand).get_shape()[dim]
    local = shift_indices(r, op, dim, axes, rows, clamp_to=global_shape[dim])
    anchor = op.next_op
    assert anchor is not None
    r.anchor = anchor
    since = len(r.inserted)
    ty = _tensor(local)
    mask_ty = TensorType(i1, ty.get_shape())
    low = _emit(r, hlo.CompareOp("GE", local, _splat(r, ty, 0)))
    high = _emit(r, hlo.CompareOp("LT", local, _splat(r, ty, rows)))
    mask = _emit(r, hlo.AndOp(low, high))
    assert _tensor(mask) == mask_ty
    result = _tensor(op.result)
    batch = [s for d, s in enumerate(ty.get_shape()) if d != op.ivd]
    if op.ivd < ty.get_num_dims():
        mask = _emit(r, hlo.ReshapeOp(mask, TensorType(i1, batch)))
    offset_dims = op.dims("offset_dims")
    batch_dims = [d for d in range(result.get_num_dims()) if d not in offset_dims]
    spread = _emit(r, hlo.BroadcastOp(mask, batch_dims, TensorType(i1, result.get_shape())))
    zeros = _splat(r, result, 0)
    masked = _emit(r, hlo.SelectOp(spread, op.result, zeros))
    return masked, r.inserted[since:]


def shift_scatter(r: Resharder, op: hlo.ScatterOp, operand: ShardingAttr) -> None:
    """A scatter into an operand split along its indexed dimension: shift the indices."""
    owned = owned_indexed_dim(op, operand)
    if owned is not None:
        dim, axes = owned
        shift_indices(r, op, dim, axes, _tensor(op.operand).get_shape()[dim], clamp_to=None)


COMBINE = {"add": hlo.AddOp, "mul": hlo.MulOp, "max": hlo.MaxOp, "min": hlo.MinOp}


def identity_value(kind: str, ty: TensorType) -> float:
    """The identity of a scatter kind in the element type of `ty`."""
    if kind in ("add", "mul"):
        return 0 if kind == "add" else 1
    if hlo.element_kind(ty.element_type) == hlo.FLOAT:
        return float("-inf") if kind == "max" else float("inf")
    element = ty.element_type
    width = element.width.data  # pyright: ignore[reportAttributeAccessIssue]
    if element.signedness.data.name == "UNSIGNED":  # pyright: ignore[reportAttributeAccessIssue]
        return 0 if kind == "max" else 2**width - 1
    return -(2 ** (width - 1)) if kind == "max" else 2 ** (width - 1) - 1


def combine_scattered(r: Resharder, op: hlo.ScatterOp, axes: list[str]) -> SSAValue:
    """
    Updates split along `axes`: scatter into the identity, all_reduce the partial results
    (of the scatter's kind), combine with the operand. The combined value; the caller
    redirects the uses of the op's result.
    """
    kind = op.kind.data
    operand = op.operand
    ty = _tensor(operand)
    r.anchor = op
    op.operands[0] = _splat(r, ty, identity_value(kind, ty))
    anchor = op.next_op
    assert anchor is not None
    r.anchor = anchor
    reduced = r.all_reduce(op.result, axes, kind)
    return _emit(r, COMBINE[kind](operand, reduced))
