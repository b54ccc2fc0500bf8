"""
all_gather in a `lower-to-tpu` kernel: Pallas's ring all-gather, HBM to HBM.

A local DMA puts the own shard into its slot of the output; then N-1 steps (`scf.for`)
each forward slot (me - s) mod N to the right neighbour's same slot, receiving slot
(me - s - 1) mod N from the left on receive semaphore s (N-1 of them). Each slot is
written once: N-buffering, no sender can overrun a receiver, no handshake is needed.

On a ring with wraparound links (as `CostModel.axis_rings` decides: v5e/v6e axes of 16,
v4/v5p multiples of 4) it is bidirectional: the first half of every slot (along its first
even dimension) travels right, the second half left, both DMAs of a step in flight at
once, so both directions of every link carry data (on a line the wrap hop would share the
links: one way only). The pass option `bidirectional` overrides that choice.

Several mesh axes (rank row-major over the listed axes): one ring phase per axis, the
most minor first, each later phase forwarding, in place, the blocks the earlier ones
assembled (within the part of the output that belongs to this device's coordinates on
the axes before it).

`all_gather_start` does its local copy and starts step 0's DMAs at the `_start`, and
waits for them and runs steps 1..N-2 at the `done` (for N = 2 the whole transfer overlaps
the compute in between).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from shardc.dialects import tpu
from shardc.lowering.emit import Emitter, for_steps, local_copy
from shardc.lowering.rings import Ring
from shardc.lowering.topology import Axis, Topology, group_view
from xdsl.dialects import scf
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block, Operation, SSAValue


def multi_all_gather(
    topo: Topology,
    e: Emitter,
    orders: list[list[Axis]],
    src: SSAValue | None,
    outs: list[SSAValue],
    dim: int,
    k: int,
    deferred: list[Operation] | None,
) -> None:
    """
    all_gather into each of `outs` (HBM) over its order of the axes (rank row-major,
    first major): one ring phase per axis, the most minor first, each later phase
    forwarding, in place, the blocks the earlier ones assembled. `src` (one order
    only): the own block, copied in first; None: it is in place already. Several
    orders (the parts of a torus all_reduce) run their phase j's rings at once.
    `deferred` (a `_start` over one axis): the ops to emit at the `done`.
    """
    if src is not None:
        (order,) = orders
        own = group_view(e, outs[0], dim, k, order, "ag_own")
        local_copy(e, src, own, "ag_own")
    m = len(orders[0])
    for j in reversed(range(m)):
        rings: list[Ring] = []
        for i, order in enumerate(orders):
            kj = k * math.prod(a.size for a in order[j + 1 :])
            view = group_view(e, outs[i], dim, kj * order[j].size, order[:j])
            rings += ag_rings(topo, order[j], view, dim, kj, f"ag{i or ''}")
        run_ag_rings(topo, e, rings, deferred if m == 1 else None)


def ag_rings(topo: Topology, ax: Axis, out: SSAValue, dim: int, k: int, tag: str) -> list[Ring]:
    """
    The rings of an all-gather over `ax` into `out`, slot c = block c of `k` along
    `dim`: one rightward; or (`two_way`) half of every slot rightward and half
    leftward (both directions of every link carry data: twice the bandwidth on a ring
    with wraparound), which needs an even dimension in the slot.
    """
    ot = out.type
    assert isinstance(ot, MemRefType)
    slot = list(ot.get_shape())
    slot[dim] = k
    split = None
    if topo.two_way(ax):
        split = next((d for d, size in enumerate(slot) if size % 2 == 0 and size > 1), None)
    if split is None:
        return [Ring(ax, out, dim, k, 1, None, tag)]
    half = slot[split] // 2
    return [
        Ring(ax, out, dim, k, 1, (split, half, 0), f"{tag}_r"),
        Ring(ax, out, dim, k, -1, (split, half, 1), f"{tag}_l"),
    ]


def run_ag_rings(
    topo: Topology, e: Emitter, rings: list[Ring], deferred: list[Operation] | None = None
) -> None:
    """
    Ring all-gather steps (every own slot in place), the steps of all `rings` (one axis
    size) interleaved. With `deferred` (a `_start`), step 0's DMAs start here and
    everything after them (their waits, steps 1..N-2) goes to `deferred`, emitted at
    the `done`.
    """
    n = rings[0].ax.size
    sems = []
    for r in rings:
        peer = topo.neighbour(r.ax, r.direction)
        send = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), f"{r.tag}_send_sem")
        recv = e.op(tpu.AllocOp(tpu.DMASemaphoreType([n - 1])), f"{r.tag}_recv_sems")
        sems.append((peer, send, recv))

    def step(b: Emitter, s: SSAValue) -> list[Operation]:
        """Start step `s`'s DMAs; return its waits."""
        s32 = b.to_i32(s)
        waits: list[Operation] = []
        for r, (peer, send, recv) in zip(rings, sems, strict=False):
            waits += _ag_step(b, r, s, s32, peer, send, recv)
        return waits

    if deferred is None:
        _steps_loop(e, 0, n - 1, step)
        return
    later = Emitter(Block())
    for w in step(e, e.index(0)):
        later.op(w)
    if n > 2:
        _steps_loop(later, 1, n - 1, step)
    deferred += later.detach_all()


def _steps_loop(
    e: Emitter, lo: int, hi: int, step: Callable[[Emitter, SSAValue], list[Operation]]
) -> None:
    """Steps lo .. hi - 1 as an `scf.for` (`e.unroll`: one after the other), each
    step's waits at the end of its body."""
    if e.unroll:
        for k in range(lo, hi):
            for w in step(e, e.index(k)):
                e.op(w)
        return
    b, s = for_steps(e, lo, hi)
    for w in step(b, s):
        b.op(w)
    b.op(scf.YieldOp())


def _ag_step(
    b: Emitter,
    r: Ring,
    s: SSAValue,
    s32: SSAValue,
    peer: SSAValue,
    send: SSAValue,
    recv: SSAValue,
) -> list[Operation]:
    """One ring of all_gather step `s`: start the DMA, return its two waits."""
    ax, n, tag = r.ax, r.ax.size, r.tag
    # Rightwards, step s forwards slot (me - s) mod N to the right neighbour's same
    # slot and receives slot (me - s - 1) mod N from the left on recv_sems[s];
    # leftwards the mirror image: (me + s) out, (me + s + 1) in.
    if r.direction == 1:
        base = b.add(b.sub(ax.me, s32), ax.n)
        out_c = b.rem(base, ax.n)
        in_c = b.rem(b.add(base, b.i32(n - 1)), ax.n)
    else:
        base = b.add(ax.me, s32)
        out_c = b.rem(base, ax.n)
        in_c = b.rem(b.add(base, b.i32(1)), ax.n)
    send_slot = b.to_index(out_c, f"{tag}_send_slot")
    recv_slot = b.to_index(in_c, f"{tag}_recv_slot")
    block = r.block(b, send_slot, f"{tag}_block")
    incoming = r.block(b, recv_slot, f"{tag}_incoming")
    sem = b.op(tpu.MemRefSliceOp(recv, [s], tpu.DMASemaphoreType()), f"{tag}_recv_sem")
    b.op(tpu.DMAStartOp(block, block, send_sem=send, recv_sem=sem, device=peer))
    return [tpu.DMAWaitOp(send, block), tpu.DMAWaitOp(sem, incoming)]
