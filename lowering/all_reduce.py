"""
all_reduce in a `lower-to-tpu` kernel: reduce_scatter (`reduce_scatter`) over the buffer
viewed as [G, numel / G] + all_gather (`all_gather`) of the reduced chunk into the output
(2 (G-1)/G of the data per device over the ring), G the group size.

Each reduce-scatter phase leaves its result in this device's part of the output (where
the next phase, and the all-gather, find it), so every phase may run both ways and in
pieces. Over m > 1 axes of one size (a 2-D / 3-D torus) the buffer is cut into m parts,
part i reduced over the axes rotated by i (2-D: half x then y, half y then x), all parts'
rings in one loop, so every phase keeps every axis's links busy (twice a 1-D ring's
bandwidth on a 2-D torus). bf16 / f16 over several axes keep the intermediate phases'
f32 sums in VMEM instead (one rounding).

When G does not divide numel, the last numel mod G elements are pushed directly to row
`me` of every peer's [G, r] VMEM buffer and reduced there in rank order (level S's
order), the rest as above.

`all_reduce_start` runs its reduce-scatter phase at the `_start` and splits its
all-gather phase as `all_gather_start` does.
"""

from __future__ import annotations

import math

from shardc.dialects import collective, tpu
from shardc.dialects.hlo import accumulation_type
from shardc.dialects.tpu import memref_type
from shardc.lowering.all_gather import multi_all_gather
from shardc.lowering.context import Target
from shardc.lowering.emit import HBM, VMEM, Emitter, chunk, local_copy, reshape_view, span
from shardc.lowering.pair_combine import combine_parts, load_parts, store_parts
from shardc.lowering.reduce_ring import combine
from shardc.lowering.reduce_scatter import multi_reduce_scatter, torus_reduce_scatter
from shardc.lowering.topology import Axis, Topology, group_view
from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType, VectorType
from xdsl.ir import Attribute, Operation, SSAValue


def all_reduce(
    topo: Topology,
    target: Target,
    e: Emitter,
    op: collective.AllReduceBase,
    axes: list[Axis],
    x: SSAValue,
    out: SSAValue,
    deferred: list[Operation] | None,
    pairs: bool = False,
) -> None:
    """
    reduce_scatter + all_gather over the buffer viewed as [G, numel / G], every phase
    leaving its result in this device's part of the output (where the all-gather
    finds the reduced chunk in place). Over m > 1 axes of one size (a 2-D / 3-D
    torus) the buffer is cut into m parts reduced at once, part i over the axes
    rotated by i (2-D: half the data x then y, the other half y then x), so every
    phase keeps the links of every axis busy. `pairs` (the last dimension holds
    complex (re, im) pairs, lowering/pair_combine.py): numel counts pairs, the views
    are [G, numel / G, 2], the tail is whole pairs.
    """
    xt = x.type
    assert isinstance(xt, MemRefType)
    unit = 2 if pairs else 1
    numel = math.prod(xt.get_shape()) // unit
    n = math.prod(a.size for a in axes)
    if numel % n:
        head = _split_tail(topo, e, op, axes, x, out, numel, n, unit)
        if head is None:
            return
        x, out = head
        numel -= numel % n
    m = len(axes)
    elem = xt.element_type
    low = accumulation_type(elem) != elem
    parts = (
        m if m > 1 and len({a.size for a in axes}) == 1 and numel % (m * n) == 0 and not low else 1
    )
    flat = memref_type([parts * n, numel // (parts * n), *([2] if pairs else [])], elem, HBM)
    xr = e.op(tpu.MemRefReshapeOp(x, flat), "ar_in")
    outr = e.op(tpu.MemRefReshapeOp(out, flat), "ar_out")
    if low and m > 1:
        # Rounded once, at the end: the phases before the last keep their f32
        # partial sums in VMEM (not in the bf16/f16 output).
        own = group_view(e, outr, 0, 1, axes, "ar_own")
        multi_reduce_scatter(topo, target, e, op, axes, xr, 0, 1, own)
        multi_all_gather(topo, e, [axes], None, [outr], 0, 1, deferred)
        return
    orders = [axes[i:] + axes[:i] for i in range(parts)]
    xs, outs = [xr], [outr]
    if parts > 1:
        xs = [chunk(e, xr, 0, n, e.index(i), f"ar_in{i}") for i in range(parts)]
        outs = [chunk(e, outr, 0, n, e.index(i), f"ar_out{i}") for i in range(parts)]
    torus_reduce_scatter(topo, target, e, op, orders, xs, outs, 0, 1, pairs)
    multi_all_gather(topo, e, orders, None, outs, 0, 1, deferred)


def _split_tail(
    topo: Topology,
    e: Emitter,
    op: collective.AllReduceBase,
    axes: list[Axis],
    x: SSAValue,
    out: SSAValue,
    numel: int,
    n: int,
    unit: int,
) -> tuple[SSAValue, SSAValue] | None:
    """
    All-reduce the last numel mod G elements (of `unit` values each: 2 for complex
    pairs) on their own (`all_reduce_tail`); the 1-D views of the rest of `x` and `out`
    (None if there is no rest).
    """
    xt = x.type
    assert isinstance(xt, MemRefType)
    rest = (numel - numel % n) * unit
    numel *= unit
    x1 = e.op(tpu.MemRefReshapeOp(x, memref_type([numel], xt.element_type, HBM)), "ar_flat_in")
    o1 = e.op(tpu.MemRefReshapeOp(out, memref_type([numel], xt.element_type, HBM)), "ar_flat_out")
    tail = [span(e, v, rest, numel - rest, "ar_tail") for v in (x1, o1)]
    all_reduce_tail(topo, e, op, axes, *tail, unit == 2)
    if rest == 0:
        return None
    x_head, out_head = (span(e, v, 0, rest, "ar_head") for v in (x1, o1))
    return x_head, out_head


def all_reduce_tail(
    topo: Topology,
    e: Emitter,
    op: collective.AllReduceBase,
    axes: list[Axis],
    x: SSAValue,
    out: SSAValue,
    pairs: bool = False,
) -> None:
    """
    The r = numel mod G elements of an all_reduce that G does not divide (1-D `x`,
    `out` in HBM): every device pushes its r elements straight to row `me` of every
    peer's [G, r] VMEM buffer (G - 1 remote DMAs, one receive semaphore each, as
    all_to_all), then reduces the rows in rank order, as level S does (bit-identical
    results, low precision accumulated in f32 and rounded once; `pairs`: r / 2 complex
    numbers, `_combine_pair_rows`). r < G: latency, not bandwidth.
    """
    ax = axes[0] if len(axes) == 1 else topo.group_axis(op)
    n = ax.size
    xt = x.type
    assert isinstance(xt, MemRefType)
    r, elem = xt.get_shape()[0], xt.element_type
    rows = e.op(tpu.AllocOp(memref_type([n, r], elem, VMEM)), "tail_rows")
    zero = _exchange_rows(topo, e, ax, x, rows, r, elem)
    res = e.op(tpu.AllocOp(memref_type([1, r], elem, VMEM)), "tail_result")
    if pairs:
        _combine_pair_rows(e, op, rows, res, n, r)
    else:
        e.op(tpu.StoreOp(_sum_rows(e, op, rows, zero, n, r, elem), res, [zero, zero]))
    local_copy(
        e,
        res,
        e.op(tpu.MemRefReshapeOp(out, memref_type([1, r], elem, HBM)), "tail_out"),
        "tail_out",
    )
    e.op(tpu.DeallocOp(res))
    e.op(tpu.DeallocOp(rows))


def _exchange_rows(
    topo: Topology,
    e: Emitter,
    ax: Axis,
    x: SSAValue,
    rows: SSAValue,
    r: int,
    elem: Attribute,
) -> SSAValue:
    """
    Put my `x` into row `me` of my and every peer's `rows`; wait for every row. Returns
    the index 0 it made (for the caller's indices).
    """
    n = ax.size
    row_t = memref_type([1, r], elem, VMEM)
    copy_sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "tail_copy_sem")
    send_sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "tail_send_sem")
    recv_sems = e.op(tpu.AllocOp(tpu.DMASemaphoreType([n - 1])), "tail_recv_sems")
    mine = e.op(tpu.MemRefReshapeOp(x, memref_type([1, r], elem, HBM)), "tail_in")
    zero = e.index(0)

    def row(i: SSAValue) -> SSAValue:
        return e.op(tpu.MemRefSliceOp(rows, [i, zero], row_t), "tail_row")

    me_row = row(e.to_index(ax.me))
    e.op(tpu.DMAStartOp(mine, me_row, recv_sem=copy_sem))
    sems = [
        e.op(
            tpu.MemRefSliceOp(recv_sems, [e.index(k - 1)], tpu.DMASemaphoreType()),
            "tail_recv_sem",
        )
        for k in range(1, n)
    ]
    for k in range(1, n):
        e.op(
            tpu.DMAStartOp(
                mine,
                me_row,
                send_sem=send_sem,
                recv_sem=sems[k - 1],
                device=topo.neighbour(ax, k),
            )
        )
    e.op(tpu.DMAWaitOp(copy_sem, me_row))
    for k in range(1, n):
        # Step k's message came from rank (me - k) mod N.
        src = e.to_index(e.rem(e.add(ax.me, e.i32(n - k)), ax.n))
        e.op(tpu.DMAWaitOp(send_sem, mine))
        e.op(tpu.DMAWaitOp(sems[k - 1], row(src)))
    return zero


def _sum_rows(
    e: Emitter,
    op: collective.AllReduceBase,
    rows: SSAValue,
    zero: SSAValue,
    n: int,
    r: int,
    elem: Attribute,
) -> SSAValue:
    """The n rows of `rows` combined in rank order (low precision in f32, rounded once)."""
    wide = accumulation_type(elem)
    total = e.op(tpu.LoadOp(rows, [zero, zero], VectorType(elem, [1, r])), "tail_first")
    if wide != elem:
        total = e.op(arith.ExtFOp(total, VectorType(wide, [1, r])))
    for i in range(1, n):
        got = e.op(tpu.LoadOp(rows, [e.index(i), zero], VectorType(elem, [1, r])), "tail_part")
        for o in combine(op, total, got):
            e.op(o)
        total = o.results[0]  # pyright: ignore[reportPossiblyUnboundVariable]
    if wide != elem:
        total = e.op(arith.TruncFOp(total, VectorType(elem, [1, r])), "rounded")
    return total


def _combine_pair_rows(
    e: Emitter, op: collective.AllReduceBase, rows: SSAValue, res: SSAValue, n: int, r: int
) -> None:
    """The n rows of `rows` ([n, r] VMEM, r / 2 complex (re, im) pairs each) combined as
    complex numbers in rank order into `res` ([1, r] VMEM): lowering/pair_combine.py (max
    / min as level S's; a product as numpy's contracted array loop, which level S's 0-d
    values may not take: to rounding)."""
    shape = [1, r // 2, 2]
    pairs = reshape_view(e, rows, [n, *shape[1:]], "tail_pairs")
    zero = e.index(0)
    parts = []
    for i in range(n):
        loads, row = load_parts(e, (pairs, [e.index(i), zero, zero]), shape, "tail_part")
        for o in loads:
            e.op(o)
        if i:
            combined, row = combine_parts(op.kind.data, op, parts, row)
            for o in combined:
                e.op(o)
        parts = row
    for o in store_parts(e, parts, (reshape_view(e, res, shape, "tail_result_pairs"), [zero] * 3)):
        e.op(o)
