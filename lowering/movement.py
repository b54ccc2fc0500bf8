"""
hlo data-movement ops lowered to tpu (part of `lower-to-tpu`, see lowering/lower_to_tpu.py):
ops that only move bytes become DMAs between HBM buffers (and their `tpu.memref_slice`
and `tpu.memref_reshape` views), without a round trip through VMEM: a DMA engine reads
and writes strided HBM blocks itself, so staging through VMEM would only add a second
transfer and VMEM pressure.

* reshape: one DMA from the operand into the result viewed with the operand's shape
  (both are whole buffers, hence contiguous, so the row-major view is a bitcast).
* slice: unit strides (or one element along a strided dimension) are one DMA of a
  `memref_slice` block. A stride s > 1 along a dimension of size n divisible by s views
  that dimension as [n / s, s] (a reshape of the whole operand) and takes column
  `lo % s` of rows `lo / s ..`: still one DMA. A stride that does not divide n has no
  such view; there the slice is one DMA per result index along that dimension (an
  `scf.for`), all in flight before the first wait.
* concatenate: one DMA per operand into its part of the output, all in flight at once.
* dynamic_slice: the offsets are rank-0 tensors in HBM; each is DMA'd into SMEM, read
  with `memref.load`, clamped to [0, dim - size] exactly as the interpreter does
  (StableHLO semantics), and the block at those offsets is one DMA.
* dynamic_update_slice: the operand is copied into the result while the offsets are
  fetched, then the update is DMA'd into its clamped place (after the copy has landed:
  both DMAs write the same bytes).
* spmd.axis_index (partitioning computes slice offsets from it): `tpu.axis_index`
  stored into an SMEM scalar (`memref.store`), DMA'd to the value's HBM buffer;
  hlo.partition_id likewise from `tpu.device_id` (level S's partition is the device id),
  extended or truncated to the result's width (a `tpu.memref_bitcast` view for unsigned);
  hlo.replica_id a 0 the same way (level S: one replica, every device's id 0).
* bitcast_convert between widths (one width is elementwise: lowering/compute.py): one DMA
  from the operand, viewed as the result's type (`tpu.memref_bitcast`), into the result.
* real / imag of a complex tensor: one strided DMA from its parts' view (a
  `tpu.memref_bitcast` to the part type with a last dimension of 2, sliced at 0 or 1);
  complex: two, the parts into that view of the result (lowering/complex_pairs.py).

Every DMA has its own semaphore (or, for the DMAs of one loop, one semaphore and DMAs of
one size), every DMA is waited, so every semaphore ends at zero. A result with no
elements is nothing to move.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shardc.diagnostics import OpPassError
from shardc.dialects import hlo, spmd, tpu
from shardc.dialects.tpu import MemorySpace, memref_type
from shardc.lowering.context import LoweringContext, Target
from shardc.lowering.emit import (
    HBM,
    Emitter,
    loop_nest,
    memref_shape,
    reshape_view,
    tensor_type,
)
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import ComplexType, IntegerAttr, IntegerType, MemRefType, i32
from xdsl.ir import Operation, SSAValue

_OPS = (
    hlo.ReshapeOp,
    hlo.SliceOp,
    hlo.ConcatenateOp,
    hlo.DynamicSliceOp,
    hlo.DynamicUpdateSliceOp,
    spmd.AxisIndexOp,
    hlo.PartitionIdOp,
    hlo.ReplicaIdOp,
)


def handles(op: Operation) -> bool:
    """Whether this module lowers ops of this kind."""
    if isinstance(op, hlo.BitcastConvertOp):
        return op.extra_dim() != 0
    if isinstance(op, hlo.RealOp | hlo.ImagOp):  # of a complex tensor: its parts' bytes
        return hlo.element_kind(tensor_type(op.operand.type).element_type) == hlo.COMPLEX
    return isinstance(op, (*_OPS, hlo.ComplexOp))


def check(target: Target, op: Operation) -> None:
    """Raise an `OpPassError` at `op` if this variant cannot be lowered."""
    if isinstance(op, spmd.AxisIndexOp) and tensor_type(op.result.type).element_type != i32:
        raise OpPassError(
            op, f"lower-to-tpu: {op.name} as {op.result.type} is not supported yet (i32 only)"
        )


def lower(ctx: LoweringContext, op: Operation) -> None:
    if math.prod(tensor_type(op.results[0].type).get_shape()) == 0:
        return
    _LOWERINGS[type(op)](ctx, op)  # pyright: ignore[reportArgumentType]


# Helpers ------------------------------------------------------------------------------


def _view(
    e: Emitter, ref: SSAValue, offsets: Sequence[SSAValue | int], shape: Sequence[int], hint: str
) -> SSAValue:
    """The block of `shape` at `offsets` (constants or index values) of an HBM `ref`."""
    ty = ref.type
    assert isinstance(ty, MemRefType)
    if list(shape) == list(ty.get_shape()) and all(o == 0 for o in offsets):
        return ref
    idx = [e.index(o) if isinstance(o, int) else o for o in offsets]
    return e.op(tpu.MemRefSliceOp(ref, idx, memref_type(shape, ty.element_type, HBM)), hint)


def _copies(e: Emitter, pairs: Sequence[tuple[SSAValue, SSAValue]], hint: str) -> None:
    """DMA each (src, dst), all started before the first wait, one semaphore each."""
    sems = [e.op(tpu.AllocOp(tpu.DMASemaphoreType()), f"{hint}_sem") for _ in pairs]
    for (src, dst), sem in zip(pairs, sems, strict=False):
        e.op(tpu.DMAStartOp(src, dst, recv_sem=sem))
    for (_, dst), sem in zip(pairs, sems, strict=False):
        e.op(tpu.DMAWaitOp(sem, dst))


# reshape, concatenate -----------------------------------------------------------------


def _lower_reshape(ctx: LoweringContext, op: hlo.ReshapeOp) -> None:
    e = ctx.emitter
    src, dst = ctx.buffers[op.operand], ctx.buffers[op.result]
    _copies(e, [(src, reshape_view(e, dst, memref_shape(src), "reshape_view"))], "reshape")


def _lower_concatenate(ctx: LoweringContext, op: hlo.ConcatenateOp) -> None:
    e = ctx.emitter
    dim = op.dimension.value.data
    dst = ctx.buffers[op.result]
    pairs, offset = [], 0
    for v in op.inputs:
        src = ctx.buffers[v]
        shape = memref_shape(src)
        if shape[dim]:
            at = [offset if d == dim else 0 for d in range(len(shape))]
            pairs.append((src, _view(e, dst, at, shape, "concat_part")))
        offset += shape[dim]
    _copies(e, pairs, "concat")


# slice --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Dim:
    """How one dimension of a strided slice is taken (see the module docstring)."""

    lo: int
    stride: int
    count: int
    """Result size along the dimension."""
    size: int
    """Operand size along the dimension."""

    @property
    def kind(self) -> str:
        if self.stride == 1 or self.count == 1:
            return "block"
        return "split" if self.size % self.stride == 0 else "loop"


def _lower_slice(ctx: LoweringContext, op: hlo.SliceOp) -> None:
    e = ctx.emitter
    src, dst = ctx.buffers[op.operand], ctx.buffers[op.result]
    dims = [
        _Dim(lo, s, k, n)
        for (lo, _, s), k, n in zip(op.bounds, memref_shape(dst), memref_shape(src), strict=False)
    ]
    # Split dimensions become two: [n / s, s] in the operand, [k, 1] in the result.
    src_shape = [
        x
        for d in dims
        for x in ((d.size // d.stride, d.stride) if d.kind == "split" else (d.size,))
    ]
    dst_shape = [x for d in dims for x in ((d.count, 1) if d.kind == "split" else (d.count,))]
    src_v = reshape_view(e, src, src_shape, "slice_src")
    dst_v = reshape_view(e, dst, dst_shape, "slice_dst")
    loops = [d for d in dims if d.kind == "loop"]
    if not loops:
        block, out = _slice_views(e, dims, src_v, dst_v, [])
        assert block is not None
        _copies(e, [(block, out)], "slice")
        return
    # One DMA per index of the loop dimensions, all of one size: one semaphore, every
    # DMA started before the first wait.
    sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "slice_sem")
    trips = [d.count for d in loops]

    def start(b: Emitter, ivs: list[SSAValue]) -> None:
        block, out = _slice_views(b, dims, src_v, dst_v, ivs)
        assert block is not None
        b.op(tpu.DMAStartOp(block, out, recv_sem=sem))

    def wait(b: Emitter, ivs: list[SSAValue]) -> None:
        b.op(tpu.DMAWaitOp(sem, _slice_views(b, dims, src_v, dst_v, ivs, src=False)[1]))

    loop_nest(e, trips, start)
    loop_nest(e, trips, wait)


def _slice_views(
    b: Emitter,
    dims: Sequence[_Dim],
    src_v: SSAValue,
    dst_v: SSAValue,
    ivs: list[SSAValue],
    src: bool = True,
) -> tuple[SSAValue | None, SSAValue]:
    """
    The operand block (of the operand view `src_v`; unless `src` is false) and its place
    in the result view `dst_v`, at the loop indices `ivs` of the "loop" dimensions.
    """
    src_at: list[SSAValue | int] = []
    dst_at: list[SSAValue | int] = []
    shape: list[int] = []
    it = iter(ivs)
    for d in dims:
        if d.kind == "block":
            src_at.append(d.lo)
            dst_at.append(0)
            shape.append(d.count)
        elif d.kind == "split":
            src_at += [d.lo // d.stride, d.lo % d.stride]
            dst_at += [0, 0]
            shape += [d.count, 1]
        else:
            i = next(it)
            src_at.append(b.add(b.mul(i, b.index(d.stride)), b.index(d.lo)) if src else 0)
            dst_at.append(i)
            shape.append(1)
    return (
        _view(b, src_v, src_at, shape, "slice_block") if src else None,
        _view(b, dst_v, dst_at, shape, "slice_out"),
    )


# dynamic_slice, dynamic_update_slice --------------------------------------------------


def _fetch_offsets(
    ctx: LoweringContext, indices: Sequence[SSAValue]
) -> list[tuple[SSAValue, SSAValue, SSAValue]]:
    """
    Start the DMAs of the rank-0 offset tensors (HBM) into SMEM: (smem scalar, its
    semaphore, the HBM source) per offset; `_load_offsets` waits and reads them.
    """
    e = ctx.emitter
    fetched = []
    for v in indices:
        src = ctx.buffers[v]
        ty = src.type
        assert isinstance(ty, MemRefType)
        smem = e.op(tpu.AllocOp(memref_type([], ty.element_type, MemorySpace.SMEM)), "offset_smem")
        sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "offset_sem")
        e.op(tpu.DMAStartOp(src, smem, recv_sem=sem))
        fetched.append((smem, sem, src))
    return fetched


def _load_offsets(
    ctx: LoweringContext,
    fetched: Sequence[tuple[SSAValue, SSAValue, SSAValue]],
    dims: Sequence[int],
    sizes: Sequence[int],
) -> list[SSAValue]:
    """Wait for the offsets, read them and clamp each to [0, dim - size] (as index)."""
    e = ctx.emitter
    out = []
    for (smem, sem, _), dim, size in zip(fetched, dims, sizes, strict=False):
        e.op(tpu.DMAWaitOp(sem, smem))
        v = e.op(memref.LoadOp.get(smem, []), "offset")
        ty = v.type
        lo = e.op(arith.ConstantOp(IntegerAttr(0, ty)))
        hi = e.op(arith.ConstantOp(IntegerAttr(dim - size, ty)))
        clamped = e.op(arith.MinSIOp(e.op(arith.MaxSIOp(v, lo)), hi), "offset_clamped")
        out.append(e.to_index(clamped, "offset_index"))
        e.op(tpu.DeallocOp(smem))
    return out


def _lower_dynamic_slice(ctx: LoweringContext, op: hlo.DynamicSliceOp) -> None:
    e = ctx.emitter
    src, dst = ctx.buffers[op.operand], ctx.buffers[op.result]
    fetched = _fetch_offsets(ctx, op.start_indices)
    at = _load_offsets(ctx, fetched, memref_shape(src), op.sizes)
    _copies(
        e, [(e.op(tpu.MemRefSliceOp(src, at, dst.type), "dynamic_block"), dst)], "dynamic_slice"
    )


def _lower_dynamic_update_slice(ctx: LoweringContext, op: hlo.DynamicUpdateSliceOp) -> None:
    e = ctx.emitter
    src, upd, dst = (ctx.buffers[v] for v in (op.operand, op.update, op.result))
    copy_sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "dus_copy_sem")
    e.op(tpu.DMAStartOp(src, dst, recv_sem=copy_sem))
    fetched = _fetch_offsets(ctx, op.start_indices)
    at = _load_offsets(ctx, fetched, memref_shape(src), memref_shape(upd))
    # The update overwrites bytes the copy writes: it starts once the copy has landed.
    e.op(tpu.DMAWaitOp(copy_sem, dst))
    if math.prod(memref_shape(upd)):
        _copies(e, [(upd, e.op(tpu.MemRefSliceOp(dst, at, upd.type), "dus_place"))], "dus")


def _lower_axis_index(ctx: LoweringContext, op: spmd.AxisIndexOp) -> None:
    e = ctx.emitter
    me = e.op(tpu.AxisIndexOp(op.mesh.root_reference.data, op.axis.data), "axis_index")
    smem = e.op(tpu.AllocOp(memref_type([], i32, MemorySpace.SMEM)), "axis_index_smem")
    e.op(memref.StoreOp.get(me, smem, []))
    _copies(e, [(smem, ctx.buffers[op.result])], "axis_index")
    e.op(tpu.DeallocOp(smem))


def _lower_partition_id(ctx: LoweringContext, op: hlo.PartitionIdOp | hlo.ReplicaIdOp) -> None:
    """partition_id: the device id; replica_id: 0 (one replica)."""
    e = ctx.emitter
    elem = tensor_type(op.result.type).element_type
    assert isinstance(elem, IntegerType)
    width = elem.width.data
    signless = IntegerType(width)
    if isinstance(op, hlo.ReplicaIdOp):
        me = e.i32(0, "replica_id")
    else:
        me = e.op(tpu.DeviceIdOp(), "partition_id")
    if width > 32:
        me = e.op(arith.ExtSIOp(me, signless), "partition_id_ext")
    elif width < 32:
        me = e.op(arith.TruncIOp(me, signless), "partition_id_trunc")
    smem = e.op(tpu.AllocOp(memref_type([], signless, MemorySpace.SMEM)), "partition_id_smem")
    e.op(memref.StoreOp.get(me, smem, []))
    src = smem
    if signless != elem:  # an unsigned result: the same bits
        src = e.op(tpu.MemRefBitcastOp(smem, memref_type([], elem, MemorySpace.SMEM)), "pid")
    _copies(e, [(src, ctx.buffers[op.result])], "partition_id")
    e.op(tpu.DeallocOp(smem))


def _lower_bitcast_convert(ctx: LoweringContext, op: hlo.BitcastConvertOp) -> None:
    e = ctx.emitter
    dst = ctx.buffers[op.result]
    ty = tensor_type(op.result.type)
    view = memref_type(ty.get_shape(), ty.element_type, MemorySpace.HBM)
    src = e.op(tpu.MemRefBitcastOp(ctx.buffers[op.operand], view), "bitcast_view")
    _copies(e, [(src, dst)], "bitcast")


# real, imag, complex ----------------------------------------------------------------------


def _parts_view(e: Emitter, ref: SSAValue, which: int) -> SSAValue:
    """Part `which` (0: real, 1: imaginary) of a complex HBM buffer: its bitcast to the
    part type (a last dimension of 2) sliced at `which` (a strided block)."""
    ty = ref.type
    assert isinstance(ty, MemRefType)
    elem = ty.element_type
    assert isinstance(elem, ComplexType)
    shape = list(ty.get_shape())
    pairs = e.op(tpu.MemRefBitcastOp(ref, memref_type([*shape, 2], elem.element_type, HBM)))
    return _view(e, pairs, [0] * len(shape) + [which], [*shape, 1], "part")


def _lower_part(ctx: LoweringContext, op: hlo.RealOp | hlo.ImagOp) -> None:
    """One strided DMA of the part's elements into the result."""
    e = ctx.emitter
    src = _parts_view(e, ctx.buffers[op.operand], 0 if isinstance(op, hlo.RealOp) else 1)
    dst = reshape_view(e, ctx.buffers[op.result], memref_shape(src), "part_dst")
    _copies(e, [(src, dst)], "part")


def _lower_complex(ctx: LoweringContext, op: hlo.ComplexOp) -> None:
    """Two strided DMAs: the real and imaginary parts into their places in the result, one
    after the other (their interleaved blocks span the same bytes of the result)."""
    e = ctx.emitter
    dst = ctx.buffers[op.result]
    for which, v in enumerate((op.lhs, op.rhs)):
        place = _parts_view(e, dst, which)
        src = reshape_view(e, ctx.buffers[v], memref_shape(place), "part_src")
        _copies(e, [(src, place)], "complex")


_LOWERINGS: dict[type[Operation], Callable[[LoweringContext, Operation], None]] = {
    hlo.RealOp: _lower_part,  # pyright: ignore[reportAssignmentType]
    hlo.ImagOp: _lower_part,  # pyright: ignore[reportAssignmentType]
    hlo.ComplexOp: _lower_complex,  # pyright: ignore[reportAssignmentType]
    hlo.ReshapeOp: _lower_reshape,  # pyright: ignore[reportAssignmentType]
    hlo.SliceOp: _lower_slice,  # pyright: ignore[reportAssignmentType]
    hlo.ConcatenateOp: _lower_concatenate,  # pyright: ignore[reportAssignmentType]
    hlo.DynamicSliceOp: _lower_dynamic_slice,  # pyright: ignore[reportAssignmentType]
    hlo.DynamicUpdateSliceOp: _lower_dynamic_update_slice,  # pyright: ignore[reportAssignmentType]
    spmd.AxisIndexOp: _lower_axis_index,  # pyright: ignore[reportAssignmentType]
    hlo.PartitionIdOp: _lower_partition_id,  # pyright: ignore[reportAssignmentType]
    hlo.ReplicaIdOp: _lower_partition_id,  # pyright: ignore[reportAssignmentType]
    hlo.BitcastConvertOp: _lower_bitcast_convert,  # pyright: ignore[reportAssignmentType]
}
