"""
The tiling core of `compute`, part two: the loop of a planned `Tiled` op (`tile`): one
`scf.for` over all blocks, operand blocks DMA'd into one or two VMEM slots (prefetched a
step ahead), the body, result blocks DMA'd back (see the `compute` module docstring).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from shardc.dialects import tpu
from shardc.dialects.tpu import memref_type
from shardc.lowering.context import LoweringContext
from shardc.lowering.emit import HBM, VMEM, reshape_view, tensor_type
from shardc.lowering.tile_index import (
    Ix,
    TileConstants,
    TileEmitter,
    emit_if,
    ix_add,
    ix_cmp,
    ix_div,
    ix_mul,
    ix_rem,
    ix_value,
)
from shardc.lowering.tile_plan import Plan, Tiled, plan_blocks, plan_time, vmem_in_use
from shardc.lowering.vector_ops import load_block, store_block, zero_indices
from xdsl.dialects import scf
from xdsl.dialects.builtin import MemRefType, VectorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue


@dataclass
class _Buffers:
    """A stream's or the result's VMEM: one or two slots, a DMA semaphore per slot."""

    buf: SSAValue
    sems: SSAValue
    slots: int
    shape: tuple[int, ...]
    elem: Attribute

    @classmethod
    def alloc(
        cls, e: TileEmitter, shape: tuple[int, ...], elem: Attribute, slots: int, hint: str
    ) -> _Buffers:
        lead = [slots] if slots > 1 else []
        buf = e.op(tpu.AllocOp(memref_type([*lead, *shape], elem, VMEM)), hint)
        sems = e.op(tpu.AllocOp(tpu.DMASemaphoreType(lead)), f"{hint}_sems")
        return cls(buf, sems, slots, shape, elem)

    def slot(self, b: TileEmitter, i: Ix) -> tuple[SSAValue, SSAValue]:
        """The VMEM block and semaphore of slot `i`."""
        if self.slots == 1:
            return self.buf, self.sems
        zeros = [b.index(0) for _ in self.shape]
        ty = memref_type(self.shape, self.elem, VMEM)
        hint = self.buf.name_hint
        ref = b.once(
            ("slot", self.buf, i),
            lambda: tpu.MemRefSliceOp(self.buf, [ix_value(b, i), *zeros], ty),
            f"{hint}_slot",
        )
        sem = b.once(
            ("slot", self.sems, i),
            lambda: tpu.MemRefSliceOp(self.sems, [ix_value(b, i)], tpu.DMASemaphoreType()),
            f"{hint}_sem",
        )
        return ref, sem


def _hbm_block(
    b: TileEmitter, ref: SSAValue, shape: Sequence[int], offsets: Sequence[Ix], hint: str
) -> SSAValue:
    ty = ref.type
    assert isinstance(ty, MemRefType)
    if tuple(ty.get_shape()) == tuple(shape):
        return ref
    idx = [ix_value(b, o) for o in offsets]
    rty = memref_type(shape, ty.element_type, HBM)
    return b.once(("hbm", ref, *idx, *shape), lambda: tpu.MemRefSliceOp(ref, idx, rty), hint)


def _decode(b: TileEmitter, t: Ix, grid: Sequence[int]) -> list[Ix]:
    """Block index per iteration dimension of flat step `t` < prod(grid) (row-major)."""
    idx: list[Ix] = []
    stride = math.prod(grid)
    outermost = True
    for g in grid:
        stride //= g
        if g == 1:
            idx.append(0)
            continue
        q = ix_div(b, t, stride)
        idx.append(q if outermost else ix_rem(b, q, g))
        outermost = False
    return idx


def tile(ctx: LoweringContext, t: Tiled) -> None:
    """Plan the blocks of `t` and emit its loop (see the module docstring)."""
    if math.prod(tensor_type(t.result.type).get_shape()) == 0:
        return  # an empty result: nothing to write
    in_use = vmem_in_use(ctx.emitter.block)
    plan = plan_blocks(ctx.target, t, in_use)
    overlap = ctx.overlap
    if overlap is not None and overlap.rings:
        # Ring steps of pending collectives go at block boundaries: enough blocks for
        # those whose transfers fit under this loop.
        want = overlap.wanted_steps(plan_time(ctx.target.chip, t, plan))
        if want > math.prod(plan.grid):
            plan = plan_blocks(ctx.target, t, in_use, want)
    _emit(ctx, t, plan, in_use)


def _emit(ctx: LoweringContext, t: Tiled, plan: Plan, in_use: int) -> None:
    """The loop of the module docstring: prologue, one `scf.for` step (the pending
    ring steps `ring_steps.Overlap` places first in its body), epilogue. The first blocks
    of operands that are ready before the previous loop starts are fetched while it runs
    (`_early`)."""
    if t.on_plan is not None:
        t.on_plan(plan.blocks)
    top = ctx.emitter.block
    mark = top.last_op
    consts = TileConstants(top)
    early = _early(ctx, t, plan)
    if early:
        before, streams = early
        consts = TileConstants(Block())
        loop = _Loop(ctx.buffers, t, plan, TileEmitter(consts.block, consts))
        loop.fetch(loop.e, 0, streams)
        for o in loop.e.detach_all():
            top.insert_op_before(o, before)
            for inner in o.walk():
                inner.location = t.op.location
        consts.block = top
        loop.e = TileEmitter(top, consts, loop.e.memo)
    else:
        streams = []
        loop = _Loop(ctx.buffers, t, plan, TileEmitter(top, consts))
    loop.prologue(streams)
    if loop.steps == 1:
        b, step = loop.e, 0
    else:
        b, step = loop.e.loop(loop.steps, "t")
    if ctx.overlap is not None and ctx.overlap.rings:
        ctx.overlap.place(b, step, loop.steps, plan_time(ctx.target.chip, t, plan) / loop.steps)
    views = loop.arrive(b, step)
    loop.prefetch(b, step)
    loop.compute(b, step, views)
    if loop.steps > 1:
        b.op(scf.YieldOp())
    loop.epilogue()
    start = top.first_op if mark is None else mark.next_op
    assert start is not None
    _LAST[:] = [_Emitted(top, start, t.op, in_use + plan.vmem, top.last_op)]


@dataclass
class _Emitted:
    """The last tiled loop emitted into a kernel block: its first op, the op it lowers,
    the VMEM it held at most (with what was in use), and the block's last op after it."""

    block: Block
    start: Operation
    op: Operation
    vmem: int
    end: Operation | None


_LAST: list[_Emitted] = []
"""The last loop emitted (one, whatever the kernel: `_early` checks it is the block's)."""


def _early(ctx: LoweringContext, t: Tiled, plan: Plan) -> tuple[Operation, list[int]] | None:
    """
    Where to start the first-block DMAs of which streams of `t` early: before the
    previous loop, if it was the last thing emitted and lowers the op just before this one
    (or this op: a concatenate's pieces), for the streams whose values were complete
    before that op (function arguments, results of earlier ops: every earlier loop and
    movement waited for its DMAs, a collective's result is read only after its `done`),
    if both loops' VMEM fit at once. Their fetch then runs under the previous loop's
    compute instead of before this loop (a loop's fill is otherwise exposed).
    """
    prev = _LAST[0] if _LAST else None
    if prev is None or prev.block is not ctx.emitter.block:
        return None
    if prev.end is not ctx.emitter.block.last_op:
        return None
    if not (t.op is prev.op or t.op.prev_op is prev.op):
        return None
    if prev.vmem + plan.vmem > ctx.target.vmem_bytes:
        return None
    ready = [i for i, s in enumerate(t.streams) if _ready_before(s.value, prev.op)]
    return (prev.start, ready) if ready else None


def _ready_before(value: SSAValue, op: Operation) -> bool:
    """Whether `value` is complete before `op` runs: an argument of its block, or the
    result of an op before it in that block."""
    block = op.parent_block()
    if isinstance(value, BlockArgument):
        return value.block is block
    owner = value.owner
    if not isinstance(owner, Operation) or owner.parent_block() is not block or owner is op:
        return False
    return block.get_operation_index(owner) < block.get_operation_index(op)  # pyright: ignore


class _Loop:
    """The VMEM buffers of one tiled op and the pieces of its loop."""

    def __init__(self, buffers: Mapping[SSAValue, SSAValue], t: Tiled, plan: Plan, e: TileEmitter):
        self.buffers, self.t, self.e, self.tag = buffers, t, e, t.tag
        self.blocks, self.grid = plan.blocks, plan.grid
        self.out_grid = self.grid[: t.n_out]
        self.n_blocks, self.n_red = math.prod(self.out_grid), math.prod(self.grid[t.n_out :])
        self.steps = self.n_blocks * self.n_red
        self.periods = [s.period(self.grid) for s in t.streams]
        self.ins = [
            _Buffers.alloc(
                e, s.block(self.blocks), s.elem, 2 if s.moves(self.grid) else 1, f"{self.tag}_in{i}"
            )
            for i, s in enumerate(t.streams)
        ]
        self.scratch = [
            e.op(
                tpu.AllocOp(memref_type(s.staged(self.blocks), s.elem, VMEM)),
                f"{self.tag}_staged{i}",
            )
            if s.perm is not None
            else None
            for i, s in enumerate(t.streams)
        ]
        self.scratch += [
            e.op(tpu.AllocOp(memref_type(x.shape(self.blocks), x.elem, VMEM)), f"{self.tag}_tmp{i}")
            for i, x in enumerate(t.scratch)
        ]
        self.n_streams = len(t.streams)
        self.out_block = tuple(self.blocks[: t.n_out])
        slots = 2 if self.n_blocks > 1 else 1
        self.outs = [
            _Buffers.alloc(
                e,
                self.out_block,
                tensor_type(r.type).element_type,
                slots,
                f"{self.tag}_out{i}" if i else f"{self.tag}_out",
            )
            for i, r in enumerate(t.results)
        ]
        self.acc = None
        if plan.separate_acc:
            assert t.acc is not None
            self.acc = e.op(
                tpu.AllocOp(memref_type(self.out_block, t.acc.elem, VMEM)), f"{self.tag}_acc"
            )

    # Operands --------------------------------------------------------------------------

    def slot(self, b: TileEmitter, i: int, step: Ix) -> tuple[SSAValue, SSAValue]:
        """Stream i's VMEM block and semaphore at `step` (slots alternate per fetch)."""
        return self.ins[i].slot(b, ix_rem(b, ix_div(b, step, self.periods[i]), 2))

    def fresh(self, b: TileEmitter, step: Ix, period: int) -> bool | SSAValue:
        """Whether a stream of this period gets a new block at `step`."""
        return ix_cmp(b, ix_rem(b, step, period), "eq", 0)

    def fetch(self, b: TileEmitter, step: Ix, streams: Sequence[int]) -> None:
        """Start the DMAs of these streams' blocks for step `step`."""
        idx = _decode(b, step, self.grid)
        for i in streams:
            s = self.t.streams[i]
            offsets = [0 if it is None else ix_mul(b, idx[it], self.blocks[it]) for it in s.dims]
            if s.window is not None:
                offsets = [ix_add(b, x, k) for x, k in zip(offsets, s.window[0], strict=True)]
            src = _hbm_block(
                b,
                self.buffers[s.value],
                s.block(self.blocks),
                offsets,
                f"{self.tag}_in{i}_block",
            )
            ref, sem = self.slot(b, i, step)
            b.op(tpu.DMAStartOp(src, ref, recv_sem=sem))

    def prologue(self, started: Sequence[int] = ()) -> None:
        """Every operand's first block (but those `started` early); the fixed ones are
        all they will ever need."""
        self.fetch(self.e, 0, [i for i in range(len(self.t.streams)) if i not in started])
        for i, s in enumerate(self.t.streams):
            if not s.moves(self.grid):
                self.e.op(tpu.DMAWaitOp(self.ins[i].sems, self.ins[i].buf))

    def arrive(self, b: TileEmitter, step: Ix) -> list[SSAValue]:
        """Wait for the blocks that are new at `step` (staging those that need another
        layout); the operands' VMEM blocks as the body reads them."""
        views = []
        for i, (s, stage) in enumerate(zip(self.t.streams, self.scratch, strict=False)):
            ref, sem = self.slot(b, i, step)

            def wait(w: TileEmitter, s=s, ref=ref, sem=sem, stage=stage) -> None:
                if s.moves(self.grid):
                    w.op(tpu.DMAWaitOp(sem, ref))
                if stage is not None:
                    assert s.perm is not None
                    zeros = [w.index(0) for _ in s.shape]
                    v = w.op(tpu.LoadOp(ref, zeros, VectorType(s.elem, s.block(self.blocks))))
                    w.op(tpu.StoreOp(w.op(tpu.TransposeOp(v, s.perm)), stage, zeros))

            emit_if(b, self.fresh(b, step, self.periods[i]), wait)
            views.append(
                reshape_view(b, ref if stage is None else stage, s.view_shape(self.blocks))
            )
        extra = self.scratch[len(self.t.streams) :]
        return views + [x for x in extra if x is not None]

    def prefetch(self, b: TileEmitter, step: Ix) -> None:
        """Start the DMAs of the blocks that are new at the next step, into the other
        slots (after this step's waits, so that its own blocks get the bandwidth first)."""
        nxt = ix_add(b, step, 1)
        for period in sorted({p for p in self.periods if p < self.steps}):
            due = [i for i, p in enumerate(self.periods) if p == period]
            emit_if(
                b,
                ix_cmp(b, nxt, "slt", self.steps),
                lambda w, period=period, due=due: emit_if(
                    w, self.fresh(w, nxt, period), lambda x: self.fetch(x, nxt, due)
                ),
            )

    # The result ------------------------------------------------------------------------

    def compute(self, b: TileEmitter, step: Ix, views: list[SSAValue]) -> None:
        """The body on this step's blocks, into the result slots or the accumulator; at a
        result block's last reduced block, its write-back."""
        t = self.t
        o = 0 if self.n_blocks == 1 else ix_div(b, step, self.n_red)
        r = step if self.n_blocks == 1 else ix_rem(b, step, self.n_red)
        slots = [out.slot(b, ix_rem(b, o, 2)) for out in self.outs]

        def reuse(w: TileEmitter) -> None:
            """The result slots' previous blocks (two blocks ago) have left for HBM."""
            for ref, sem in slots:
                emit_if(
                    w,
                    ix_cmp(w, o, "sge", 2),
                    lambda x, ref=ref, sem=sem: x.op(tpu.DMAWaitOp(sem, ref)),
                )

        refs = [ref for ref, _ in slots]
        target = (refs[0] if len(refs) == 1 else refs) if self.acc is None else self.acc
        if t.acc is not None:
            emit_if(b, ix_cmp(b, r, "eq", 0), lambda w: self.init(w, target, reuse))
        else:
            reuse(b)
        idx = _decode(b, step, self.grid)
        t.body(b, views, idx, target)  # pyright: ignore[reportArgumentType]

        def finish(w: TileEmitter) -> None:
            """The result blocks are complete: rounded from the accumulator, sent to HBM."""
            if self.acc is not None:
                reuse(w)
                self.round_once(w, refs, views, idx)
            oidx = _decode(w, o, self.out_grid)
            offsets = [ix_mul(w, i, k) for i, k in zip(oidx, self.out_block, strict=False)]
            if t.out_offset is not None:
                offsets = [ix_add(w, x, k) for x, k in zip(offsets, t.out_offset, strict=True)]
            for k, (res, (ref, sem)) in enumerate(zip(t.results, slots, strict=True)):
                hint = f"{self.tag}_out{k}_block" if k else f"{self.tag}_out_block"
                dst = _hbm_block(w, self.buffers[res], self.out_block, offsets, hint)
                w.op(tpu.DMAStartOp(ref, dst, recv_sem=sem))

        emit_if(b, ix_cmp(b, r, "eq", self.n_red - 1), finish)

    def init(self, w: TileEmitter, target: SSAValue, reuse: Callable[[TileEmitter], None]) -> None:
        """A result block's first reduced block: the accumulator starts at the identity."""
        a = self.t.acc
        assert a is not None
        if self.acc is None:
            reuse(w)  # the accumulator is the result slot
        w.op(
            tpu.StoreOp(
                a.init(w, VectorType(a.elem, self.out_block)), target, zero_indices(w, target)
            )
        )

    def round_once(
        self, w: TileEmitter, refs: list[SSAValue], views: list[SSAValue], idx: list[Ix]
    ) -> None:
        """The accumulator, rounded to the result type (then a fused epilogue), into the
        result slots."""
        a = self.t.acc
        assert a is not None and self.acc is not None
        v = a.finish(w, load_block(w, self.acc))
        vals = [v] if a.epilogue is None else a.epilogue(w, v, views, idx)
        for val, ref in zip(vals, refs, strict=True):
            store_block(w, val, ref)

    def epilogue(self) -> None:
        """Wait for the last result blocks' DMAs; free the VMEM."""
        e = self.e
        for k in range(max(0, self.n_blocks - 2), self.n_blocks):
            for out in self.outs:
                ref, sem = out.slot(e, k % 2)
                e.op(tpu.DMAWaitOp(sem, ref))
        for buf in [
            *(x.buf for x in self.ins),
            *self.scratch,
            *(x.buf for x in self.outs),
            self.acc,
        ]:
            if buf is not None:
                e.op(tpu.DeallocOp(buf))
