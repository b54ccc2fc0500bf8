"""
all_to_all in a `lower-to-tpu` kernel: direct, block t of the input straight to rank t's
output slot `me`, N-1 remote DMAs (non-neighbours are routed through intermediate chips),
one receive semaphore per step; each slot is written once, so nothing can be overrun.
Over device groups (or several mesh axes) the peers come from a table and the steps are
unrolled. `all_to_all_start` issues every DMA at the `_start` and waits at the `done`.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.dialects import collective, tpu
from shardc.lowering.emit import Emitter, chunk, for_steps
from shardc.lowering.topology import Axis, Topology
from xdsl.dialects import scf
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block, Operation, SSAValue


@dataclass(frozen=True)
class _Exchange:
    """One operand's all-to-all: blocks of `bs` along `split` of `x` to slots of `cs`
    along `concat` of `out`, and its semaphores."""

    ax: Axis
    x: SSAValue
    out: SSAValue
    split: int
    concat: int
    bs: int
    cs: int
    me: SSAValue
    """index: this device's rank."""
    send_sem: SSAValue
    recv_sems: SSAValue


def all_to_all(
    topo: Topology,
    e: Emitter,
    op: collective.AllToAllBase,
    ax: Axis,
    x: SSAValue,
    out: SSAValue,
    later: list[Operation] | None,
) -> None:
    """
    Direct all-to-all: block t (along split_dim) of `x` goes straight to rank t's output
    slot `me` (along concat_dim), steps s = 1..N-1 to rank (me + s) mod N (routed
    through intermediate chips beyond the neighbours), one receive semaphore per step;
    the own block is a local copy. All DMAs are independent, so a `_start` (`later`:
    the ops for its `done`) issues them all and its `done` waits.
    """
    n = ax.size
    split, concat = op.split_dim.value.data, op.concat_dim.value.data
    xt = x.type
    assert isinstance(xt, MemRefType)
    bs = xt.get_shape()[split] // n
    cs = xt.get_shape()[concat] if split != concat else bs
    copy_sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "a2a_copy_sem")
    send_sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "a2a_send_sem")
    recv_sems = e.op(tpu.AllocOp(tpu.DMASemaphoreType([n - 1])), "a2a_recv_sems")
    me = e.to_index(ax.me, "me_index")
    ex = _Exchange(ax, x, out, split, concat, bs, cs, me, send_sem, recv_sems)
    own_src = chunk(e, x, split, bs, me, "a2a_own_src")
    own_dst = chunk(e, out, concat, cs, me, "a2a_own_dst")
    e.op(tpu.DMAStartOp(own_src, own_dst, recv_sem=copy_sem))
    if ax.groups is not None:
        # A group ring's peers come from a table: one step per peer, unrolled.
        for k in range(1, n):
            _send(topo, ex, e, e.index(k), k)
    else:
        b, s = for_steps(e, 1, n)
        _send(topo, ex, b, s, None)
        b.op(scf.YieldOp())
    waits = _waits(ex, copy_sem, own_src, own_dst)
    if later is not None:
        later += waits
    else:
        for o in waits:
            e.op(o)


def _send(topo: Topology, ex: _Exchange, b: Emitter, s: SSAValue, k: int | None) -> None:
    """Step s: my block for rank t = (me + s) mod N to its slot `me` (`k`: s, known)."""
    ax = ex.ax
    t = b.rem(b.add(ax.me, b.to_i32(s)), ax.n, "a2a_target")
    if k is not None:
        dev = topo.neighbour(ax, k)
    else:
        delta = b.sub(t, ax.me)
        if ax.stride != 1:
            delta = b.mul(delta, b.i32(ax.stride))
        dev = b.add(topo.dev, delta, "a2a_device")
    src = chunk(b, ex.x, ex.split, ex.bs, b.to_index(t), "a2a_block")
    dst = chunk(b, ex.out, ex.concat, ex.cs, ex.me, "a2a_slot")
    step = b.sub(s, b.index(1))
    sem = b.op(tpu.MemRefSliceOp(ex.recv_sems, [step], tpu.DMASemaphoreType()), "a2a_recv_sem")
    b.op(tpu.DMAStartOp(src, dst, send_sem=ex.send_sem, recv_sem=sem, device=dev))


def _waits(
    ex: _Exchange, copy_sem: SSAValue, own_src: SSAValue, own_dst: SSAValue
) -> list[Operation]:
    """The waits for every DMA (detached: for here, or for the `done` of a `_start`)."""
    ax = ex.ax
    w = Emitter(Block())
    w.op(tpu.DMAWaitOp(copy_sem, own_dst))
    b, s = for_steps(w, 1, ax.size)
    src_c = b.rem(b.add(b.sub(ax.me, b.to_i32(s)), ax.n), ax.n)
    incoming = chunk(b, ex.out, ex.concat, ex.cs, b.to_index(src_c), "a2a_incoming")
    sem = b.op(
        tpu.MemRefSliceOp(ex.recv_sems, [b.sub(s, b.index(1))], tpu.DMASemaphoreType()),
        "a2a_recv_sem",
    )
    # Every block has the same size: the send semaphore's waits take them in order.
    b.op(tpu.DMAWaitOp(ex.send_sem, own_src))
    b.op(tpu.DMAWaitOp(sem, incoming))
    b.op(scf.YieldOp())
    return w.detach_all()
