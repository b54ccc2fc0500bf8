"""
`hlo.pad`, `hlo.reverse`, `hlo.reduce_window` and `hlo.select_and_scatter` lowered to tpu
(part of `lower-to-tpu`, see lowering/lower_to_tpu.py): pad and reverse only place bytes,
so, as `movement`, they are DMA programs between HBM buffers, plus for pad a fill of the
padding value written by a tiled loop (`compute`'s core: one VMEM block of the value,
broadcast once per block, DMA'd out).

pad
---
Level S charges pad the operand read plus the result write; the lowering moves exactly
that when no dimension has interior padding:

* The padding is a frame of boxes (per dimension d with low or high edge padding: the
  slab before and after the operand along d, over the operand's kept range in the
  dimensions before d and the whole result in those after): each box is filled by its
  own tiled loop (the result buffer's box seen as a `tpu.memref_slice`), and the
  operand's kept part (negative edges cut it) is one DMA into its place, all at once:
  they write disjoint bytes, so nothing orders them.
* With interior padding the gaps are not boxes: the whole result is filled, then (after
  the fill has landed: both write the same bytes) the operand is placed. A dimension with
  interior padding i places element k at `low + k (i + 1)`: when i + 1 divides the
  result's size the dimension is viewed as [size / (i + 1), i + 1] (a reshape of the
  whole result) and the elements go to one column, one DMA; otherwise one DMA per kept
  element along it (an `scf.for`, all in flight before the first wait).

reduce_window
-------------
Before the kernel is built (`expand`, an xDSL rewrite of the level-S function, so that
every intermediate gets its HBM buffer from the ABI), a reduce_window becomes what level
S computes, op for op: the operand (converted to the accumulation type: f32 for bf16/f16)
padded with the init value (base dilation as interior padding), the init broadcast to the
result, then per window offset (row-major, level S's order) one strided `hlo.slice` of
the padded operand combined into the accumulator (`add`/`mul`/`max`/`min`; `or`/`and`
for i1), and one conversion back. Every one of those lowers as above and in `compute`
and `movement`, bit-exact with level S. It moves (window size) x (result) bytes more
than one tiled loop reading each operand block once would, so channels-last poolings
(the common case: a window over the spatial dimensions only) skip this rewrite and lower
as that kernel, lowering/window_kernel.py (an image per step with its halo, the offsets
as shifted VMEM loads); convolutions likewise (lowering/conv_kernel.py), both through
`handles` / `check` / `lower` here.

select_and_scatter
------------------
Rewritten by `expand` too, into hardware/select_scatter.py's `expansion` (one definition:
level S costs the op as those ops): per window offset, row-major, a strided slice of the
operand padded with zeros, compared with the best so far as level S's select does (GE:
first largest, GT: last; a NaN on either side is taken; padding, a padded `true` mask,
never), the chosen offset's index kept per window; then per offset in reverse row-major
order the windows that chose it give their source element (-0.0 elsewhere: adding it
changes no value, -0.0 included), placed at their operand position by one pad (interior
padding stride - 1) and added to the result, which starts as `init` (f32 for bf16/f16,
rounded once). The reverse walk adds an element's windows in row-major window order, as
level S; bit for bit with it, NaN and signed zeros included. It moves (window size) x
(operand) bytes, so channels-last poolings (the max-pool gradients of CNNs) skip this
rewrite and lower as one kernel, lowering/select_scatter_kernel.py (an image per step
with its halo, the source added into a VMEM accumulator, one write-back), which level S
charges as such (`select_scatter.Pooling`).

reverse
-------
There is no DMA with a negative stride: one DMA per index of the reversed dimensions
(one flat `scf.for` over them), each moving the slab of the other dimensions from index
j to index n - 1 - j, all of one size on one semaphore, `IN_FLIGHT` at a time (DMA j
waits for DMA j - IN_FLIGHT before it starts). The bytes are level S's (read the operand,
write the result); reversing the lane (last) dimension makes those DMAs strided columns,
which on the chip would be a lane permute in vector registers instead (the tpu dialect
has none).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from shardc.diagnostics import OpPassError
from shardc.dialects import hlo, tpu
from shardc.dialects.hlo import BOOL, accumulation_type, element_kind
from shardc.dialects.tpu import memref_type
from shardc.hardware import select_scatter
from shardc.hardware.cost import vpu_time
from shardc.lowering import compute as tpu_compute
from shardc.lowering import conv_kernel, select_scatter_kernel, window_kernel
from shardc.lowering.context import LoweringContext, Target
from shardc.lowering.emit import (
    HBM,
    Emitter,
    for_steps,
    loop_nest,
    memref_shape,
    reshape_view,
    tensor_type,
)
from shardc.lowering.movement import _copies as copies
from shardc.lowering.ring_steps import Overlap
from shardc.lowering.tile_index import Ix, TileEmitter
from shardc.lowering.tile_loop import tile
from shardc.lowering.tile_plan import Stream, Tiled
from shardc.lowering.vector_ops import broadcast_to, load_block, store_block
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import MemRefType, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

_OPS = (hlo.PadOp, hlo.ReverseOp, hlo.ConvolutionOp, hlo.ReduceWindowOp, hlo.SelectAndScatterOp)


def handles(op: Operation) -> bool:
    """Whether this module lowers ops of this kind (a convolution, reduce_window or
    select_and_scatter: one that `expand` left for lowering/conv_kernel.py,
    lowering/window_kernel.py or lowering/select_scatter_kernel.py)."""
    return isinstance(op, _OPS)


def check(target: Target, op: Operation) -> None:
    """Every pad and reverse lowers (a fill block is one (8, 128) tile at least, which
    any VMEM holds); a convolution's, reduce_window's or select_and_scatter's kernel
    blocks must fit."""
    if isinstance(op, hlo.ConvolutionOp):
        conv_kernel.check(target, op)
    elif isinstance(op, hlo.ReduceWindowOp):
        window_kernel.check(target, op)
    elif isinstance(op, hlo.SelectAndScatterOp):
        select_scatter_kernel.check(target, op)


def lower(ctx: LoweringContext, op: Operation) -> None:
    if math.prod(tensor_type(op.results[0].type).get_shape()) == 0:
        return
    if isinstance(op, hlo.ConvolutionOp):
        conv_kernel.lower(ctx, op)
    elif isinstance(op, hlo.ReduceWindowOp):
        window_kernel.lower(ctx, op)
    elif isinstance(op, hlo.SelectAndScatterOp):
        select_scatter_kernel.lower(ctx, op)
    elif isinstance(op, hlo.PadOp):
        _lower_pad(ctx, op)
    else:
        assert isinstance(op, hlo.ReverseOp)
        _lower_reverse(ctx, op)


def _view(e: Emitter, ref: SSAValue, at: Sequence[SSAValue | int], shape: Sequence[int], hint: str):
    """The box of `shape` at `at` (constants or index values) of an HBM `ref`."""
    ty = ref.type
    assert isinstance(ty, MemRefType)
    if list(shape) == list(ty.get_shape()) and all(o == 0 for o in at):
        return ref
    idx = [e.index(o) if isinstance(o, int) else o for o in at]
    return e.op(tpu.MemRefSliceOp(ref, idx, memref_type(shape, ty.element_type, HBM)), hint)


# pad ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _PadDim:
    """One dimension of a pad: which operand elements are kept and where they go."""

    n: int
    """Operand size."""
    low: int
    interior: int
    size: int
    """Result size."""

    @property
    def every(self) -> int:
        return self.interior + 1

    @property
    def first(self) -> int:
        """The first kept operand index (negative low padding cuts the ones before)."""
        return max(0, -(self.low // self.every)) if self.low < 0 else 0

    @property
    def count(self) -> int:
        """Kept operand elements (those landing inside the result)."""
        last = min(self.n - 1, (self.size - 1 - self.low) // self.every)
        return max(0, last - self.first + 1)

    @property
    def at(self) -> int:
        """Result position of the first kept element."""
        return self.low + self.first * self.every

    @property
    def kind(self) -> str:
        if self.interior == 0 or self.count <= 1:
            return "block"
        return "split" if self.size % self.every == 0 else "loop"


def _pad_dims(op: hlo.PadOp) -> list[_PadDim]:
    src = tensor_type(op.operand.type).get_shape()
    dst = tensor_type(op.result.type).get_shape()
    return [_PadDim(n, lo, i, r) for n, lo, i, r in zip(src, op.low, op.interior, dst, strict=True)]


def _lower_pad(ctx: LoweringContext, op: hlo.PadOp) -> None:
    dims = _pad_dims(op)
    e = ctx.emitter
    dst = ctx.buffers[op.result]
    empty = any(d.count == 0 for d in dims)
    if empty or any(d.kind != "block" for d in dims):
        _fill(ctx, op, dst)  # waits for its last write-back
        if not empty:
            _place(ctx, op, dims)()
        return
    # The operand's DMA runs under the fills (they write other bytes).
    wait = _place(ctx, op, dims)
    # The frame: per dimension, the slabs before and after the kept part.
    lead: list[tuple[int, int]] = []  # (at, size) of the kept range in earlier dims
    for i, d in enumerate(dims):
        rest = [(0, x.size) for x in dims[i + 1 :]]
        for at, size in ((0, d.at), (d.at + d.count, d.size - d.at - d.count)):
            if size > 0:
                box = [*lead, (at, size), *rest]
                view = _view(e, dst, [a for a, _ in box], [s for _, s in box], "pad_edge")
                _fill(ctx, op, view)
        lead.append((d.at, d.count))
    wait()


def _place(ctx: LoweringContext, op: hlo.PadOp, dims: Sequence[_PadDim]) -> Callable[[], None]:
    """Start the DMAs of the operand's kept part into its place in the result (see the
    module docstring); what emits their waits."""
    e = ctx.emitter

    # Split dimensions become two: [size / every, every] in the result, [n, 1] in the
    # operand (whole buffers, so both reshapes are views).
    def split(d: _PadDim, two: tuple[int, int], one: tuple[int]) -> tuple[int, ...]:
        return two if d.kind == "split" else one

    src_v = reshape_view(
        e, ctx.buffers[op.operand], [x for d in dims for x in split(d, (d.n, 1), (d.n,))], "pad_src"
    )
    dst_v = reshape_view(
        e,
        ctx.buffers[op.result],
        [x for d in dims for x in split(d, (d.size // d.every, d.every), (d.size,))],
        "pad_dst",
    )

    def views(b: Emitter, ivs: list[SSAValue]) -> tuple[SSAValue, SSAValue]:
        return _place_views(b, dims, src_v, dst_v, ivs)

    loops = [d for d in dims if d.kind == "loop"]
    if not loops:
        src, place = views(e, [])
        sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "pad_sem")
        e.op(tpu.DMAStartOp(src, place, recv_sem=sem))
        return lambda: e.op(tpu.DMAWaitOp(sem, place)) and None
    # One DMA per kept index of the loop dimensions, all of one size: one semaphore,
    # every DMA started before the first wait.
    sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "pad_sem")
    trips = [d.count for d in loops]

    def start(b: Emitter, ivs: list[SSAValue]) -> None:
        s, d = views(b, ivs)
        b.op(tpu.DMAStartOp(s, d, recv_sem=sem))

    def wait(b: Emitter, ivs: list[SSAValue]) -> None:
        b.op(tpu.DMAWaitOp(sem, views(b, ivs)[1]))

    loop_nest(e, trips, start)
    return lambda: loop_nest(e, trips, wait)


def _place_views(
    b: Emitter, dims: Sequence[_PadDim], src_v: SSAValue, dst_v: SSAValue, ivs: list[SSAValue]
) -> tuple[SSAValue, SSAValue]:
    """The operand box and its place in the result (the split views `src_v`, `dst_v`) at
    the loop indices `ivs` of the "loop" dimensions."""
    src_at: list[SSAValue | int] = []
    dst_at: list[SSAValue | int] = []
    box: list[int] = []
    it = iter(ivs)
    for d in dims:
        if d.kind == "block":
            src_at.append(d.first)
            dst_at.append(d.at)
            box.append(d.count)
        elif d.kind == "split":
            src_at += [d.first, 0]
            dst_at += [d.at // d.every, d.at % d.every]
            box += [d.count, 1]
        else:
            i = next(it)
            src_at.append(b.add(i, b.index(d.first)) if d.first else i)
            dst_at.append(b.add(b.mul(i, b.index(d.every)), b.index(d.at)))
            box.append(1)
    return _view(b, src_v, src_at, box, "pad_block"), _view(b, dst_v, dst_at, box, "pad_place")


def _fill(ctx: LoweringContext, op: hlo.PadOp, into: SSAValue) -> None:
    """`into` (the result buffer or a box of it) filled with the padding value by a
    tiled loop: the value's one element fetched once, broadcast per block."""
    shape = memref_shape(into)
    rank = len(shape)

    def body(b: TileEmitter, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        store_block(b, broadcast_to(b, load_block(b, views[0]), memref_shape(target)), target)

    chip = ctx.target.chip
    stream = Stream(op.padding_value, (), view=lambda block: (1,) * rank)
    work = lambda blocks: vpu_time(chip, math.prod(blocks), 1)  # noqa: E731
    tile(_Into(ctx, op.result, into), Tiled(op, shape, [stream], body, work))


@dataclass(frozen=True)
class _Into:
    """`ctx` with `op`'s result buffer replaced by `into` (a box of it) for one loop."""

    ctx: LoweringContext
    result: SSAValue
    into: SSAValue

    @property
    def target(self) -> Target:
        return self.ctx.target

    @property
    def emitter(self) -> Emitter:
        return self.ctx.emitter

    @property
    def buffers(self) -> Mapping[SSAValue, SSAValue]:
        return {**self.ctx.buffers, self.result: self.into}

    @property
    def overlap(self) -> Overlap | None:
        return self.ctx.overlap


# reverse ------------------------------------------------------------------------------


def _lower_reverse(ctx: LoweringContext, op: hlo.ReverseOp) -> None:
    e = ctx.emitter
    src, dst = ctx.buffers[op.operand], ctx.buffers[op.result]
    shape = memref_shape(src)
    rdims = sorted(d for d in set(op.dims) if shape[d] > 1)
    if not rdims:
        copies(e, [(src, dst)], "reverse")
        return
    sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "reverse_sem")
    box = [1 if d in rdims else n for d, n in enumerate(shape)]

    def at(b: Emitter, ivs: list[SSAValue], flip: bool) -> list[SSAValue | int]:
        out: list[SSAValue | int] = [0] * len(shape)
        for d, i in zip(rdims, ivs, strict=True):
            out[d] = b.sub(b.index(shape[d] - 1), i) if flip else i
        return out

    def start(b: Emitter, ivs: list[SSAValue]) -> None:
        s = _view(b, src, at(b, ivs, False), box, "reverse_src")
        b.op(tpu.DMAStartOp(s, _view(b, dst, at(b, ivs, True), box, "reverse_dst"), recv_sem=sem))

    def wait(b: Emitter, ivs: list[SSAValue]) -> None:
        b.op(tpu.DMAWaitOp(sem, _view(b, dst, at(b, ivs, True), box, "reverse_dst")))

    trips = [shape[d] for d in rdims]
    _windowed(e, trips, start, wait)


IN_FLIGHT = 16
"""DMAs of a reverse in flight at once: enough to keep the DMA engines busy (each moves
a whole slab), few enough that the simulator's cost stays linear in their number."""


def _windowed(e: Emitter, trips: Sequence[int], start, wait) -> None:
    """`start` every index of the nest `trips` (row-major, one flat `scf.for`), at most
    `IN_FLIGHT` of them in flight: index j waits for index j - IN_FLIGHT first."""
    total = math.prod(trips)
    window = min(IN_FLIGHT, total)

    def indices(b: Emitter, flat: SSAValue) -> list[SSAValue]:
        out, inner = [], total
        for t in trips:
            inner //= t
            q = b.op(arith.DivSIOp(flat, b.index(inner))) if inner > 1 else flat
            out.append(b.rem(q, b.index(t)) if out else q)
        return out

    b, j = for_steps(e, 0, window, "j")
    start(b, indices(b, j))
    b.op(scf.YieldOp())
    if total > window:
        b, j = for_steps(e, window, total, "j")
        wait(b, indices(b, b.sub(j, b.index(window))))
        start(b, indices(b, j))
        b.op(scf.YieldOp())
    b, j = for_steps(e, total - window, total, "j")
    wait(b, indices(b, j))
    b.op(scf.YieldOp())


# reduce_window ----------------------------------------------------------------------------

_COMBINE = {"add": hlo.AddOp, "mul": hlo.MulOp, "max": hlo.MaxOp, "min": hlo.MinOp}
_COMBINE_BOOL = {"add": hlo.OrOp, "mul": hlo.AndOp, "max": hlo.OrOp, "min": hlo.AndOp}


class ReduceWindowToSlices(RewritePattern):
    """`hlo.reduce_window` as pad, strided slices and elementwise combines (see the
    module docstring), each new op at the reduce_window's location."""

    def __init__(self, target: Target | None = None):
        self.target = target

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hlo.ReduceWindowOp, rewriter: PatternRewriter) -> None:
        if window_kernel.takes(self.target, op):
            return  # one kernel, the operand read once (lowering/window_kernel.py)
        res = tensor_type(op.result.type)
        elem = res.element_type
        acc = accumulation_type(elem)
        new: list[Operation] = []

        def add(o: Operation) -> SSAValue:
            o.location = op.location
            new.append(o)
            return o.results[0]

        def cast(v: SSAValue) -> SSAValue:
            ty = tensor_type(v.type)
            if ty.element_type == acc:
                return v
            return add(hlo.ConvertOp(v, TensorType(acc, ty.get_shape())))

        x, init = cast(op.operand), cast(op.init_value)
        interior = [b - 1 for b in op.base_dilation]
        if any((*op.low, *op.high, *interior)):
            x = add(hlo.PadOp(x, init, op.low, op.high, interior))
        out = res.get_shape()
        total = add(hlo.BroadcastOp(init, [], TensorType(acc, out)))
        combine = (_COMBINE_BOOL if element_kind(elem) == BOOL else _COMBINE)[op.kind.data]
        for offset in itertools.product(*(range(w) for w in op.window)):
            start = [k * wd for k, wd in zip(offset, op.window_dilation, strict=True)]
            limit = [a + s * (n - 1) + 1 for a, s, n in zip(start, op.strides, out, strict=True)]
            part = add(hlo.SliceOp(x, start, limit, list(op.strides)))
            total = add(combine(total, part))
        if acc != elem:
            total = add(hlo.ConvertOp(total, res))
        check_expansion(self.target, op, new, "as strided slices and combines")
        rewriter.replace(op, new, [total])


class SelectAndScatterToSlices(RewritePattern):
    """`hlo.select_and_scatter` as `select_scatter.expansion`'s strided slices, compares,
    selects, placing pads and adds (hardware/select_scatter.py), which level S charges."""

    def __init__(self, target: Target | None = None):
        self.target = target

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hlo.SelectAndScatterOp, rewriter: PatternRewriter) -> None:
        if select_scatter_kernel.takes(self.target, op):
            return  # one kernel, the operand read once (lowering/select_scatter_kernel.py)
        if not select_scatter.expands(op):
            raise OpPassError(
                op,
                f"lower-to-tpu: {op.name} of complex values is not supported yet "
                "(a complex operand has no order)",
            )
        new, result = select_scatter.expansion(op, op.operand, op.source, op.init_value)
        check_expansion(self.target, op, new, "as strided slices, selects and placing pads")
        rewriter.replace(op, new, [result])


def check_expansion(target: Target | None, op: Operation, new: Sequence[Operation], how: str):
    """
    Raise an `OpPassError` at `op` if one of the ops it is rewritten into (`new`, `how`)
    cannot be lowered on `target` (its smallest blocks over VMEM): the message names
    `op`, then what does not fit (the blocks, the bytes, the capacity).
    """
    if target is None:
        return
    for o in new:
        try:
            if tpu_compute.handles(o):
                tpu_compute.check(target, o)
        except OpPassError as err:
            detail = err.message.removeprefix("lower-to-tpu: ")
            raise OpPassError(op, f"lower-to-tpu: {op.name} ({how}): {detail}") from None


def expand(function: Operation, target: Target | None = None) -> None:
    """Rewrite the ops of `function` that lower as other level-S ops (reduce_window,
    select_and_scatter); with a `target`, refuse (at the op) one whose parts do not fit
    its VMEM."""
    for pattern in (ReduceWindowToSlices(target), SelectAndScatterToSlices(target)):
        walker = PatternRewriteWalker(pattern, apply_recursively=False)
        for region in function.regions:
            walker.rewrite_region(region)
