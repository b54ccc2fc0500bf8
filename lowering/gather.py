"""
hlo.gather and hlo.scatter lowered to tpu (part of `lower-to-tpu`, see
lowering/lower_to_tpu.py) as DMA programs whose indices are read from SMEM, every
dimension-number form level S runs (interpreter/hlo_gather.py: collapsed / inserted
dimensions, operand batching dimensions, any index_vector_dim, windows of any size).

Why DMAs and not a tiled VMEM loop: a gather reads rows the indices pick at run time,
so no static block plan can know which operand blocks a result block needs; a DMA
engine, however, reads any HBM block at offsets a scalar core computes. The indices go
to SMEM (the scalar core's memory; Pallas's scalar prefetch), one `memref.load` per
start-index component, and each gathered slice is one DMA.

One view for both sides
-----------------------
The gathered slice (operand rank, `slice_sizes`) and its place in the result (result
rank: 1 along the batch dimensions, the window along the offset dimensions) hold the
same elements in the same row-major order, but their shapes differ by the positions of
size-1 dimensions. Both buffers are viewed (a `tpu.memref_reshape` of a whole buffer,
so a bitcast) with one common list of *slots*: the result's dimensions in order, with
each dropped operand dimension (collapsed / inserted, operand batching) inserted as a
size-1 slot just before the next kept one. The operand view has 1 at the batch slots,
the result view 1 at the dropped slots; then a slice is `memref_slice` of the same block
shape on both sides, and one `tpu.dma_start`. Scatter is the same with the updates in
the result's place (update_window_dims as offset_dims, inserted_window_dims as
collapsed_slice_dims).

gather: the indices are DMA'd to SMEM (in chunks along the first batch dimension of the
indices when they exceed half the SMEM), each start is clamped to
`[0, operand_dim - slice_size]` (StableHLO, level S), and every slice's DMA is started
before the first wait (one semaphore: all DMAs have one size); slices of different
batch points never write the same bytes.

scatter: the operand is copied into the result first (waited: the updates overwrite
those bytes), then update after update in index order (so that duplicates combine as
level S's `ufunc.at` does), a window applied only when it lies wholly in bounds (else
skipped, XLA's rule): `replace` is one DMA of the update window into its place;
`add`/`mul`/`max`/`min` read the result window and the update window into VMEM,
combine them (`vector_ops.combine`) and write the window back, each step waited before
the next (a later update may touch the same bytes). bf16/f16 `add`/`mul` accumulate as
level S does, in f32 in update order and rounded once, on the touched windows only
(`_lower_scatter_f32`: an f32 HBM scratch of which only those windows are used; the
rest of the result is the operand's copy).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shardc.diagnostics import OpPassError
from shardc.dialects import hlo, tpu
from shardc.dialects.hlo import accumulation_type
from shardc.dialects.sizes import element_bytes
from shardc.dialects.tpu import MemorySpace, memref_type
from shardc.hardware.chips import Chip
from shardc.hardware.cost import scatter_in_f32
from shardc.lowering.context import LoweringContext, Target
from shardc.lowering.emit import (
    HBM,
    VMEM,
    Emitter,
    for_steps,
    loop_nest,
    memref_shape,
    reshape_view,
    tensor_type,
)
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    IntegerAttr,
    IntegerType,
    MemRefType,
    VectorType,
    i1,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue

_OPS = (hlo.GatherOp, hlo.ScatterOp)


def handles(op: Operation) -> bool:
    """Whether this module lowers ops of this kind."""
    return isinstance(op, _OPS)


@dataclass(frozen=True)
class _Layout:
    """Where a gather's / scatter's slices come from and go (see the module docstring)."""

    operand: tuple[int, ...]
    """The operand's shape."""
    window: tuple[int, ...]
    """The slice size along every operand dimension (1 where dropped)."""
    slots: tuple[tuple[str, int], ...]
    """("batch", j) for the j-th batch dimension, ("dim", d) for operand dimension d."""
    batch: tuple[int, ...]
    """The batch shape (the indices' shape without index_vector_dim)."""
    start_map: tuple[int, ...]
    """Operand dimension of each start-index component."""
    batching: tuple[tuple[int, int], ...]
    """(operand dimension, batch axis) of every operand batching dimension."""
    ivd: int

    @property
    def operand_view(self) -> tuple[int, ...]:
        return tuple(1 if k == "batch" else self.operand[i] for k, i in self.slots)

    @property
    def other_view(self) -> tuple[int, ...]:
        """The shape of the result (gather) / updates (scatter) seen with the slots."""
        return tuple(self.batch[i] if k == "batch" else self.window[i] for k, i in self.slots)

    @property
    def block(self) -> tuple[int, ...]:
        return tuple(1 if k == "batch" else self.window[i] for k, i in self.slots)


def _layout(op: hlo.GatherOp | hlo.ScatterOp) -> _Layout:
    if isinstance(op, hlo.GatherOp):
        operand, indices, other = op.operand, op.start_indices, op.result
        offsets, dropped_dims = op.dims("offset_dims"), op.dims("collapsed_slice_dims")
        op_batching, idx_batching = (
            op.dims("operand_batching_dims"),
            op.dims("start_indices_batching_dims"),
        )
        start_map, window = op.dims("start_index_map"), tuple(op.dims("slice_sizes"))
    else:
        operand, indices, other = op.operand, op.scatter_indices, op.updates
        offsets, dropped_dims = op.dims("update_window_dims"), op.dims("inserted_window_dims")
        op_batching, idx_batching = (
            op.dims("input_batching_dims"),
            op.dims("scatter_indices_batching_dims"),
        )
        start_map, window = op.dims("scatter_dims_to_operand_dims"), tuple(op.window_sizes())
    shape = tuple(tensor_type(operand.type).get_shape())
    idx_shape = tensor_type(indices.type).get_shape()
    ivd = op.ivd
    batch = tuple(s for d, s in enumerate(idx_shape) if d != ivd)
    dropped = sorted({*dropped_dims, *op_batching})
    kept = [d for d in range(len(shape)) if d not in dropped]
    slots: list[tuple[str, int]] = []
    pending, kept_it, batch_j = list(dropped), iter(kept), 0
    for r in range(len(tensor_type(other.type).get_shape())):
        if r in offsets:
            k = next(kept_it)
            while pending and pending[0] < k:
                slots.append(("dim", pending.pop(0)))
            slots.append(("dim", k))
        else:
            slots.append(("batch", batch_j))
            batch_j += 1
    slots += [("dim", d) for d in pending]
    batching = tuple(
        (a, b - (1 if b > ivd else 0)) for a, b in zip(op_batching, idx_batching, strict=True)
    )
    return _Layout(shape, window, tuple(slots), batch, tuple(start_map), batching, ivd)


# Indices in SMEM ------------------------------------------------------------------------


IN_FLIGHT = 16
"""Gathered slices in flight at once (a DMA queue's depth; each later one first waits for
the oldest): enough to keep HBM busy with rows of a few KiB (16 and 64 give the same
step for 8 KiB rows), and it bounds the simulator's work per DMA (every DMA event
re-rates the ones in flight)."""


def smem_budget(chip: Chip) -> int:
    """SMEM bytes the indices may take at once: half, the rest for offsets and the like."""
    return chip.smem_bytes // 2


def _index_chunks(target: Target, op: Operation, indices: SSAValue) -> tuple[int, int]:
    """(dimension, size) of the indices' chunks in SMEM: (-1, 0) if they fit whole."""
    ty = tensor_type(indices.type)
    shape = ty.get_shape()
    budget = smem_budget(target.chip)
    size = math.prod(shape) * element_bytes(ty.element_type)
    if size <= budget:
        return -1, 0
    ivd = op.ivd  # type: ignore[attr-defined]
    dim = 0 if ivd != 0 else 1
    row = size // shape[dim]
    fits = [c for c in range(1, shape[dim] + 1) if shape[dim] % c == 0 and c * row <= budget]
    if not fits:
        raise OpPassError(
            op,
            f"lower-to-tpu: {op.name}: one chunk of its indices ({row} bytes along "
            f"dimension {dim}) does not fit half the SMEM ({budget} of "
            f"{target.chip.smem_bytes} bytes on {target.chip.name})",
        )
    return dim, max(fits)


def check(target: Target, op: Operation) -> None:
    """Raise an `OpPassError` at `op` if this variant cannot be lowered."""
    indices = op.operands[1]
    elem = tensor_type(indices.type).element_type
    signless = isinstance(elem, IntegerType) and elem.signedness.data.name == "SIGNLESS"
    if not signless or elem == i1:
        raise OpPassError(op, f"lower-to-tpu: {op.name} with {elem} indices is not supported yet")
    _index_chunks(target, op, indices)
    if isinstance(op, hlo.ScatterOp):
        _check_scatter(target, op)


def lower(ctx: LoweringContext, op: Operation) -> None:
    if isinstance(op, hlo.GatherOp):
        _lower_gather(ctx, op)
    else:
        assert isinstance(op, hlo.ScatterOp)
        _lower_scatter(ctx, op)


def _chunked(
    ctx: LoweringContext,
    op: Operation,
    indices: SSAValue,
    per_chunk: Callable[[Emitter, SSAValue, SSAValue | None, int], None],
) -> None:
    """
    The indices in SMEM, whole or chunk by chunk: `per_chunk(e, smem, chunk_start,
    chunk_dim)` with the SMEM buffer of the chunk (waited for) and the index (along
    `chunk_dim` of the indices, -1 if whole) where it starts.
    """
    e = ctx.emitter
    src = ctx.buffers[indices]
    shape = memref_shape(src)
    elem = tensor_type(indices.type).element_type
    dim, size = _index_chunks(ctx.target, op, indices)
    n = 1 if dim < 0 else shape[dim] // size
    smem_shape = list(shape) if dim < 0 else [size if d == dim else s for d, s in enumerate(shape)]
    smem = e.op(tpu.AllocOp(memref_type(smem_shape, elem, MemorySpace.SMEM)), "indices_smem")
    sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "indices_sem")
    if n == 1:
        b, start = e, e.index(0) if dim >= 0 else None
    else:
        b, c = for_steps(e, 0, n, "chunk")
        start = b.mul(c, b.index(size))
    if start is None:
        part = src
    else:
        at = [start if d == dim else b.index(0) for d in range(len(shape))]
        part = b.op(tpu.MemRefSliceOp(src, at, memref_type(smem_shape, elem, HBM)), "indices_chunk")
    b.op(tpu.DMAStartOp(part, smem, recv_sem=sem))
    b.op(tpu.DMAWaitOp(sem, smem))
    per_chunk(b, smem, start, dim)
    if n != 1:
        b.op(scf.YieldOp())
    e.op(tpu.DeallocOp(smem))


def _starts(
    b: Emitter,
    lay: _Layout,
    smem: SSAValue,
    ivs: Sequence[SSAValue],
    chunk: tuple[SSAValue | None, int],
    clamp: bool,
) -> tuple[dict[int, SSAValue], SSAValue | None]:
    """
    The operand offset (index) of every operand dimension with a start or a batching
    coordinate at batch point `ivs` (chunk-relative along chunk dimension `chunk[1]`,
    which starts at `chunk[0]`), and (scatter, `clamp` false) whether the window fits.
    Starts are read as i64: clamped to [0, dim - window] (gather), or tested (scatter).
    """
    full = list(ivs)
    start, cdim = chunk
    if start is not None:
        j = cdim - (1 if cdim > lay.ivd else 0)
        full[j] = b.add(full[j], start)
    offsets: dict[int, SSAValue] = {}
    fits: SSAValue | None = None
    for k, d in enumerate(lay.start_map):
        at = list(ivs)
        if len(memref_shape(smem)) > len(lay.batch):  # else index_vector_dim is implicit
            at.insert(lay.ivd, b.index(k))
        v = b.op(memref.LoadOp.get(smem, at), "start")
        if v.type != i64:
            v = b.op(arith.ExtSIOp(v, i64))
        hi = b.op(arith.ConstantOp(IntegerAttr(lay.operand[d] - lay.window[d], i64)))
        zero = b.op(arith.ConstantOp(IntegerAttr(0, i64)))
        if clamp:
            v = b.op(arith.MinSIOp(b.op(arith.MaxSIOp(v, zero)), hi), "start_clamped")
        else:
            ok = b.op(
                arith.AndIOp(b.op(arith.CmpiOp(v, zero, "sge")), b.op(arith.CmpiOp(v, hi, "sle")))
            )
            fits = ok if fits is None else b.op(arith.AndIOp(fits, ok))
        offsets[d] = b.to_index(v, "start_index")
    for d, axis in lay.batching:
        offsets[d] = full[axis]
    return offsets, fits


def _blocks(
    b: Emitter,
    lay: _Layout,
    operand_v: SSAValue,
    other_v: SSAValue,
    offsets: dict[int, SSAValue],
    batch: Sequence[SSAValue],
) -> tuple[SSAValue, SSAValue]:
    """The operand block at `offsets` and the other side's block at batch point `batch`."""
    src_at: list[SSAValue] = []
    dst_at: list[SSAValue] = []
    zero = b.index(0)
    for kind, i in lay.slots:
        if kind == "batch":
            src_at.append(zero)
            dst_at.append(batch[i])
        else:
            src_at.append(offsets.get(i, zero))
            dst_at.append(zero)
    elem = memref_type_of(operand_v).element_type
    ty = memref_type(lay.block, elem, HBM)
    return (
        b.op(tpu.MemRefSliceOp(operand_v, src_at, ty), "slice_block"),
        b.op(tpu.MemRefSliceOp(other_v, dst_at, ty), "slice_place"),
    )


def memref_type_of(v: SSAValue) -> MemRefType:
    ty = v.type
    assert isinstance(ty, MemRefType)
    return ty


def _batch_points(
    lay: _Layout, chunk_dim: int, chunk_size: int
) -> tuple[list[int], Callable[[Emitter, list[SSAValue], SSAValue | None], list[SSAValue]]]:
    """
    The loop trip counts over the batch points of one chunk, and a function giving the
    global batch coordinates from the loop ivs and the chunk start.
    """
    cj = -1 if chunk_dim < 0 else chunk_dim - (1 if chunk_dim > lay.ivd else 0)
    trips = [chunk_size if j == cj else s for j, s in enumerate(lay.batch)]

    def coords(b: Emitter, ivs: list[SSAValue], start: SSAValue | None) -> list[SSAValue]:
        return [
            b.add(iv, start) if j == cj and start is not None else iv for j, iv in enumerate(ivs)
        ]

    return trips, coords


# gather ---------------------------------------------------------------------------------


def _lower_gather(ctx: LoweringContext, op: hlo.GatherOp) -> None:
    if math.prod(tensor_type(op.result.type).get_shape()) == 0:
        return
    e = ctx.emitter
    lay = _layout(op)
    operand_v = reshape_view(e, ctx.buffers[op.operand], lay.operand_view, "gather_operand")
    result_v = reshape_view(e, ctx.buffers[op.result], lay.other_view, "gather_result")
    sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "gather_sem")
    _, chunk_size = _index_chunks(ctx.target, op, op.start_indices)

    def per_chunk(b: Emitter, smem: SSAValue, start: SSAValue | None, dim: int) -> None:
        trips, coords = _batch_points(lay, dim, chunk_size)
        total = math.prod(trips)
        window = min(total, IN_FLIGHT)
        zero = [b.index(0)] * len(lay.block)
        waited = b.op(
            tpu.MemRefSliceOp(result_v, zero, memref_type(lay.block, _elem(op), HBM)), "waited"
        )

        def issue(inner: Emitter, ivs: list[SSAValue]) -> None:
            offsets, _ = _starts(inner, lay, smem, ivs, (start, dim), clamp=True)
            src, dst = _blocks(inner, lay, operand_v, result_v, offsets, coords(inner, ivs, start))
            inner.op(tpu.DMAStartOp(src, dst, recv_sem=sem))

        def one(inner: Emitter, ivs: list[SSAValue]) -> None:
            if total > window:  # at most `window` slices in flight: wait for the oldest
                lin = inner.index(0)
                for iv, t in zip(ivs, trips, strict=True):
                    lin = inner.add(inner.mul(lin, inner.index(t)), iv)
                full = inner.op(arith.CmpiOp(lin, inner.index(window), "sge"))
                then = Emitter(Block())
                inner.op(scf.IfOp(full, [], Region(then.block)))
                then.op(tpu.DMAWaitOp(sem, waited))
                then.op(scf.YieldOp())
            issue(inner, ivs)

        if len(trips) == 1 and total > window:
            # One batch dimension: the first `window` slices, then a wait before each.
            first, iv = for_steps(b, 0, window, "b")
            issue(first, [iv])
            first.op(scf.YieldOp())
            rest, iv = for_steps(b, window, total, "b")
            rest.op(tpu.DMAWaitOp(sem, waited))
            issue(rest, [iv])
            rest.op(scf.YieldOp())
        else:
            loop_nest(b, trips, one, "b")
        waits, _ = for_steps(b, 0, window, "w")
        waits.op(tpu.DMAWaitOp(sem, waited))
        waits.op(scf.YieldOp())

    mark = e.block.last_op
    _chunked(ctx, op, op.start_indices, per_chunk)
    _hoist_constants(e, mark)


def _hoist_constants(e: Emitter, mark: Operation | None) -> None:
    """Move the constants of the loops emitted after `mark` before their loops: the
    simulator runs a loop body once per slice (thousands), a constant costs as much as
    any op there, and a constant (no operands) may be defined anywhere above its uses."""
    first = e.block.first_op if mark is None else mark.next_op
    loops = []
    while first is not None:
        if isinstance(first, scf.ForOp):
            loops.append(first)
        first = first.next_op
    for loop in loops:
        inner = [o for o in loop.walk() if isinstance(o, arith.ConstantOp) and o is not loop]
        for c in inner:
            c.detach()
            e.block.insert_op_before(c, loop)


def _elem(op: Operation):
    return tensor_type(op.results[0].type).element_type


# scatter --------------------------------------------------------------------------------


def _check_scatter(target: Target, op: hlo.ScatterOp) -> None:
    elem = _elem(op)
    kind = op.kind.data
    if kind != "replace":
        block = _layout(op).block
        wide = accumulation_type(elem) if scatter_in_f32(op) else elem
        size = math.prod(block) * (element_bytes(elem) + element_bytes(wide))
        target.check_vmem(op, f"{op.name}'s update window {list(block)} (two VMEM blocks)", size)


def _lower_scatter(ctx: LoweringContext, op: hlo.ScatterOp) -> None:
    e = ctx.emitter
    res = ctx.buffers[op.result]
    copy_sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "scatter_copy_sem")
    e.op(tpu.DMAStartOp(ctx.buffers[op.operand], res, recv_sem=copy_sem))
    if math.prod(tensor_type(op.updates.type).get_shape()) == 0:
        e.op(tpu.DMAWaitOp(copy_sem, res))
        return
    if scatter_in_f32(op):
        _lower_scatter_f32(ctx, op, copy_sem)
        return
    e.op(tpu.DMAWaitOp(copy_sem, res))  # the updates overwrite those bytes
    lay = _layout(op)
    result_v = reshape_view(e, res, lay.operand_view, "scatter_result")
    updates_v = reshape_view(e, ctx.buffers[op.updates], lay.other_view, "scatter_updates")
    sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "scatter_sem")
    elem = _elem(op)
    kind = op.kind.data
    vmem = []
    if kind != "replace":
        vmem = [
            e.op(tpu.AllocOp(memref_type(lay.block, elem, VMEM)), h)
            for h in ("scatter_window", "scatter_update")
        ]

    def step(b: Emitter, offsets: dict[int, SSAValue], batch: list[SSAValue]) -> None:
        place, upd = _blocks(b, lay, result_v, updates_v, offsets, batch)
        _apply_update(b, kind, place, upd, vmem, sem)

    _each_update(ctx, op, lay, step)
    for buf in vmem:
        e.op(tpu.DeallocOp(buf))


Step = Callable[[Emitter, dict[int, SSAValue], list[SSAValue]], None]
"""One update's work: its operand offsets (the window's place) and batch coordinates."""


def _each_update(ctx: LoweringContext, op: hlo.ScatterOp, lay: _Layout, step: Step) -> None:
    """`step` for every update whose window lies wholly in bounds, in index order."""
    _, chunk_size = _index_chunks(ctx.target, op, op.scatter_indices)

    def per_chunk(b: Emitter, smem: SSAValue, start: SSAValue | None, dim: int) -> None:
        trips, coords = _batch_points(lay, dim, chunk_size)

        def one(inner: Emitter, ivs: list[SSAValue]) -> None:
            offsets, fits = _starts(inner, lay, smem, ivs, (start, dim), clamp=False)
            body = inner
            if fits is not None:
                body = Emitter(Block())
                inner.op(scf.IfOp(fits, [], Region(body.block)))
            step(body, offsets, coords(body, ivs, start))
            if fits is not None:
                body.op(scf.YieldOp())

        loop_nest(b, trips, one, "b")

    _chunked(ctx, op, op.scatter_indices, per_chunk)


def _apply_update(
    b: Emitter, kind: str, place: SSAValue, upd: SSAValue, vmem: list[SSAValue], sem: SSAValue
) -> None:
    """One update window into its place: a DMA (replace) or read, combine, write back."""
    if kind == "replace":
        b.op(tpu.DMAStartOp(upd, place, recv_sem=sem))
        b.op(tpu.DMAWaitOp(sem, place))
        return
    window, update = vmem
    b.op(tpu.DMAStartOp(place, window, recv_sem=sem))
    b.op(tpu.DMAStartOp(upd, update, recv_sem=sem))
    b.op(tpu.DMAWaitOp(sem, window))
    b.op(tpu.DMAWaitOp(sem, update))
    shape = memref_shape(window)
    vty = VectorType(memref_type_of(window).element_type, shape)
    z = [b.index(0)] * len(shape)
    x = b.op(tpu.LoadOp(window, z, vty))
    y = b.op(tpu.LoadOp(update, z, vty))
    b.op(tpu.StoreOp(combine(b, kind, x, y), window, z))
    b.op(tpu.DMAStartOp(window, place, recv_sem=sem))
    b.op(tpu.DMAWaitOp(sem, place))


def combine(b: Emitter, kind: str, x: SSAValue, y: SSAValue) -> SSAValue:
    """`x kind y` on vectors, level S's reduce_ufunc (max/min of floats propagate NaN)."""
    vty = x.type
    assert isinstance(vty, VectorType)
    elem = vty.element_type
    if elem == i1:  # or = max, and = min over 0/1
        ops = {"add": arith.OrIOp, "max": arith.OrIOp, "mul": arith.AndIOp, "min": arith.AndIOp}
    elif isinstance(elem, IntegerType):
        ops = {"add": arith.AddiOp, "mul": arith.MuliOp, "max": arith.MaxSIOp, "min": arith.MinSIOp}
    else:
        ops = {
            "add": arith.AddfOp,
            "mul": arith.MulfOp,
            "max": arith.MaximumfOp,
            "min": arith.MinimumfOp,
        }
    return b.op(ops[kind](x, y))


# bf16 / f16 scatter add and mul: in f32 ----------------------------------------------------


def _lower_scatter_f32(ctx: LoweringContext, op: hlo.ScatterOp, copy_sem: SSAValue) -> None:
    """
    Level S's f32 accumulation on the windows the updates touch only (the rest of the
    result is the operand's copy, already in flight): an f32 HBM scratch of the operand's
    shape of which only those windows are ever written or read. Three passes in index
    order, each step waited: every touched window of the operand widened into it
    (duplicates write the same bytes twice), every update combined into it in f32, then
    every touched window rounded once into the result (after the copy's wait).
    """
    e = ctx.emitter
    lay = _layout(op)
    elem, wide = _elem(op), accumulation_type(_elem(op))
    acc = ctx.hbm_scratch(memref_type(lay.operand, wide, HBM), "scatter_acc")
    views = {
        "operand": reshape_view(e, ctx.buffers[op.operand], lay.operand_view, "scatter_operand"),
        "acc": reshape_view(e, acc, lay.operand_view, "scatter_acc_view"),
        "result": reshape_view(e, ctx.buffers[op.result], lay.operand_view, "scatter_result"),
        "updates": reshape_view(e, ctx.buffers[op.updates], lay.other_view, "scatter_updates"),
    }
    narrow = e.op(tpu.AllocOp(memref_type(lay.block, elem, VMEM)), "scatter_narrow")
    accum = e.op(tpu.AllocOp(memref_type(lay.block, wide, VMEM)), "scatter_wide")
    # Two semaphores: a wait takes whole DMAs, and the two windows differ in size.
    sem, upd_sem = (e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "scatter_sem") for _ in "ab")
    kind = op.kind.data

    def widen(b: Emitter, offsets: dict[int, SSAValue], batch: list[SSAValue]) -> None:
        _dma(b, _window(b, lay, views["operand"], offsets), narrow, sem)
        _convert_block(b, narrow, accum)
        _dma(b, accum, _window(b, lay, views["acc"], offsets), sem)

    def apply(b: Emitter, offsets: dict[int, SSAValue], batch: list[SSAValue]) -> None:
        place = _window(b, lay, views["acc"], offsets)
        upd = _window(b, lay, views["updates"], {}, batch)
        b.op(tpu.DMAStartOp(place, accum, recv_sem=sem))
        b.op(tpu.DMAStartOp(upd, narrow, recv_sem=upd_sem))
        b.op(tpu.DMAWaitOp(sem, accum))
        b.op(tpu.DMAWaitOp(upd_sem, narrow))
        x, y = _load(b, accum), _load(b, narrow)
        y = b.op(arith.ExtFOp(y, VectorType(wide, memref_shape(narrow))))
        b.op(tpu.StoreOp(combine(b, kind, x, y), accum, [b.index(0)] * len(lay.block)))
        _dma(b, accum, place, sem)

    def round_once(b: Emitter, offsets: dict[int, SSAValue], batch: list[SSAValue]) -> None:
        _dma(b, _window(b, lay, views["acc"], offsets), accum, sem)
        _convert_block(b, accum, narrow)
        _dma(b, narrow, _window(b, lay, views["result"], offsets), sem)

    _each_update(ctx, op, lay, widen)
    _each_update(ctx, op, lay, apply)
    e.op(tpu.DMAWaitOp(copy_sem, ctx.buffers[op.result]))
    _each_update(ctx, op, lay, round_once)
    for buf in (narrow, accum):
        e.op(tpu.DeallocOp(buf))


def _window(
    b: Emitter,
    lay: _Layout,
    ref: SSAValue,
    offsets: dict[int, SSAValue],
    batch: Sequence[SSAValue] | None = None,
) -> SSAValue:
    """The window at `offsets` of an operand-shaped view, or (`batch` given) the update
    at batch point `batch` of the updates' view; in the view's own element type."""
    zero = b.index(0)
    if batch is None:
        at = [zero if k == "batch" else offsets.get(i, zero) for k, i in lay.slots]
    else:
        at = [batch[i] if k == "batch" else zero for k, i in lay.slots]
    ty = memref_type(lay.block, memref_type_of(ref).element_type, HBM)
    return b.op(tpu.MemRefSliceOp(ref, at, ty), "scatter_window")


def _dma(b: Emitter, src: SSAValue, dst: SSAValue, sem: SSAValue) -> None:
    b.op(tpu.DMAStartOp(src, dst, recv_sem=sem))
    b.op(tpu.DMAWaitOp(sem, dst))


def _load(b: Emitter, ref: SSAValue) -> SSAValue:
    ty = memref_type_of(ref)
    shape = ty.get_shape()
    return b.op(tpu.LoadOp(ref, [b.index(0)] * len(shape), VectorType(ty.element_type, shape)))


def _convert_block(b: Emitter, src: SSAValue, dst: SSAValue) -> None:
    """A VMEM block widened (exact) or rounded once into another of the same shape."""
    to = memref_type_of(dst)
    frm = memref_type_of(src).element_type
    vty = VectorType(to.element_type, to.get_shape())
    cls = arith.ExtFOp if element_bytes(frm) < element_bytes(to.element_type) else arith.TruncFOp
    b.op(tpu.StoreOp(b.op(cls(_load(b, src), vty)), dst, [b.index(0)] * len(vty.get_shape())))
