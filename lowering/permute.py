"""
permute in a `lower-to-tpu` kernel: `shift = k` is one remote DMA from the input to the
output of device (me + k) mod N; `pairs` is one `scf.if` per pair on the sender (DMA
start) and the receiver (wait), and zeros (a VMEM store + local DMA) on ranks nobody sends
to. Each output is written by one sender once, so there is nothing to overrun.
`permute_start` issues its DMAs at the `_start` and waits for them at the `done`.
"""

from __future__ import annotations

from shardc.dialects import collective, tpu
from shardc.dialects.hlo import element_kind
from shardc.dialects.tpu import memref_type
from shardc.lowering.context import Target
from shardc.lowering.emit import INDEX, VMEM, Emitter, nbytes
from shardc.lowering.topology import Axis, Topology
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    VectorType,
    i32,
)
from xdsl.ir import Operation, SSAValue


def permute(
    topo: Topology,
    target: Target,
    e: Emitter,
    op: collective.PermuteBase,
    ax: Axis,
    x: SSAValue,
    out: SSAValue,
    later: list[Operation] | None,
) -> None:
    """Lower one operand of `op`; its waits go to `later` (a `_start`'s done) or here."""
    send_sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "pm_send_sem")
    recv_sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "pm_recv_sem")
    if op.pairs is None:
        deferred = _shift(topo, e, op, ax, x, out, send_sem, recv_sem)
    else:
        deferred = _pairs(topo, e, op, ax, x, out, send_sem, recv_sem)
        idle = [r for r in range(ax.size) if r not in {t for _, t in op.source_target_pairs}]
        if idle:
            _zero_idle(target, e, op, ax, out, idle)
    if later is not None:
        later += deferred
    else:
        for o in deferred:
            e.op(o)


def _shift(
    topo: Topology,
    e: Emitter,
    op: collective.PermuteBase,
    ax: Axis,
    x: SSAValue,
    out: SSAValue,
    send_sem: SSAValue,
    recv_sem: SSAValue,
) -> list[Operation]:
    """`shift = k`: one DMA to device (me + k) mod N; returns its waits."""
    assert op.shift is not None
    shift = op.shift.value.data % ax.size
    if shift == 0:
        e.op(tpu.DMAStartOp(x, out, recv_sem=recv_sem))
        return [tpu.DMAWaitOp(recv_sem, out)]
    target = topo.neighbour(ax, shift)
    e.op(tpu.DMAStartOp(x, out, send_sem=send_sem, recv_sem=recv_sem, device=target))
    return [tpu.DMAWaitOp(send_sem, x), tpu.DMAWaitOp(recv_sem, out)]


def _when(ax: Axis, rank: int, ops: list[Operation]) -> list[Operation]:
    """`ops` in an `scf.if` taken on rank `rank` only."""
    c = arith.ConstantOp(IntegerAttr(rank, i32))
    cond = arith.CmpiOp(ax.me, c, "eq")
    return [c, cond, scf.IfOp(cond, [], [*ops, scf.YieldOp()])]


def _pairs(
    topo: Topology,
    e: Emitter,
    op: collective.PermuteBase,
    ax: Axis,
    x: SSAValue,
    out: SSAValue,
    send_sem: SSAValue,
    recv_sem: SSAValue,
) -> list[Operation]:
    """`pairs`: each sender's DMA in an `scf.if` on its rank; returns the waits."""
    deferred: list[Operation] = []
    for src, tgt in op.source_target_pairs:
        if src == tgt:
            for o in _when(ax, src, [tpu.DMAStartOp(x, out, recv_sem=recv_sem)]):
                e.op(o)
            deferred += _when(ax, tgt, [tpu.DMAWaitOp(recv_sem, out)])
            continue
        # On rank `src`, the peer `tgt - src` ranks on is rank `tgt`.
        dev = topo.neighbour(ax, tgt - src)
        start = tpu.DMAStartOp(x, out, send_sem=send_sem, recv_sem=recv_sem, device=dev)
        for o in _when(ax, src, [start]):
            e.op(o)
        deferred += _when(ax, src, [tpu.DMAWaitOp(send_sem, x)])
        deferred += _when(ax, tgt, [tpu.DMAWaitOp(recv_sem, out)])
    return deferred


def _zero_idle(
    target: Target,
    e: Emitter,
    op: collective.PermuteBase,
    ax: Axis,
    out: SSAValue,
    idle: list[int],
) -> None:
    """Zeros into `out` on the `idle` ranks (those nobody sends to)."""
    ot = out.type
    assert isinstance(ot, MemRefType)
    shape, elem = list(ot.get_shape()), ot.element_type
    target.check_vmem(op, "zeroing a permute result", nbytes(shape, elem))
    vty = VectorType(elem, shape)
    zero_attr = (
        FloatAttr(0.0, elem) if element_kind(elem) == "float" else IntegerAttr(0, elem)  # pyright: ignore
    )
    buf_ty = memref_type(shape, elem, VMEM)
    for r in idle:
        buf = tpu.AllocOp(buf_ty)
        z = arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(vty, [zero_attr.value.data]))  # pyright: ignore
        idx = [arith.ConstantOp(IntegerAttr(0, INDEX))]
        store = tpu.StoreOp(z, buf, [idx[0].result] * len(shape))
        zs = tpu.AllocOp(tpu.DMASemaphoreType())
        ops = [
            buf,
            z,
            *idx,
            store,
            zs,
            tpu.DMAStartOp(buf, out, recv_sem=zs),
            tpu.DMAWaitOp(zs, out),
            tpu.DeallocOp(buf),
        ]
        for o in _when(ax, r, ops):
            e.op(o)
