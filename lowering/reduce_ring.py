"""
The ring reduce-scatter steps of `lower-to-tpu` (partial sums travel right, in VMEM).

Step s sends the running partial sum of chunk (me - s - 1) mod N to the right
neighbour's receive buffer, then adds its own chunk (me - s - 2) mod N (a local DMA from
HBM) to what arrived from the left; after N-1 steps rank r holds the sum of chunk r.
Step 0 sends the own chunk straight from HBM.

Double-buffered receive slots with a credit handshake (Pallas's capacity semaphore): each
device first signals its left neighbour min(2, N-1) credits (its free receive slots); a
sender waits for one credit before each remote DMA; a receiver signals one credit back to
its left neighbour after it has consumed a slot; at the end each device waits for the
min(2, N-1) credits still owed to it, so every semaphore ends at zero and no device
leaves while its right neighbour still reads its last message. The send buffer is
overwritten only after `dma_wait` on the send semaphore.

Sums run along the ring (rank r+1, r+2, ..., r), not in rank order: integers are exact,
floats agree to rounding. The reduction is level S's: add / mul / max / min as
`arith.addf|mulf|maximumf|minimumf` (ints: addi, muli, maxsi, minsi; i1: ori for add/max,
andi for mul/min); bf16 / f16 partials travel and accumulate in f32 (receive buffers and
accumulator in f32, the own chunk widened with `arith.extf`) and are rounded once
(`arith.truncf`) when the result is copied out. A complex value's parts' view under mul,
max or min (`_Run.pairs`) combines each (re, im) pair as one complex number
(lowering/pair_combine.py).

Several rings (both directions, the parts of a torus all-reduce) run their steps
interleaved; a chunk cut into pieces (see `reduce_scatter.rs_plan`) runs the pieces one
after the other through the same buffers: the credits run on (no drain between pieces)
and a piece's result is copied out while the next piece's first messages travel.

Pieces are software-pipelined, as a hand-written Pallas kernel does: piece p+1's step 0
(its messages into the receiver's other slot, under its own receive semaphore) starts as
soon as piece p's last messages have left (their send waits), not after they landed and
were reduced, so the link is busy again while piece p's last step's latency, reduction
and copy out run. This needs no VMEM beyond the 4 blocks `hardware.vmem.rs_pieces`
counts: the two messages in flight use the two receive slots (two credits, also on a
ring of 2, whose steps are all a step 0), and step 0's local DMA into `mine` waits until
piece p's last step has read `mine` (it is started first thing after that step, with
piece p's copy out).
- Full precision: step 0 sends the own chunk straight from HBM.
- Low precision (bf16 / f16, `_Run.rounds`): step 0 sends the own chunk widened to f32
  in `acc`, which used to hold piece p's result. Piece p's last step instead rounds its
  sum straight into `rounded` (`arith.truncf` on the combined vector, stored in the
  element type) and its copy out to HBM starts from there, so `acc` is free once piece
  p's last message has left. Piece p+1's own chunk is fetched through `rounded` (free:
  piece p-1's copy out was waited just before; `mine` is still being filled), under
  the copies out's semaphore (`copy_sem` counts that DMA into `mine` too), widened
  into `acc` and sent, before piece p's last step's rest. No fifth block, so no more
  pieces than unpipelined; the last piece keeps the unpipelined end (its sum in `acc`,
  rounded by `copy_out`). Level S charges it (`topology.Ring.last_combine`, `lead`
  again at each boundary, `out_fetch`: the copy out and the next own-chunk fetch share
  the HBM, and the next piece's first reduction and the piece after's fetch wait for
  them); it is never slower than unpipelined (tests/unit/test_rs_pieces_low.py).
Level S charges the same (`topology.Phase` of pieces: a boundary saves one step's
latency and reduction).
A `_start`'s pieces are pipelined too, but its steps are interleaved into the compute
(`ring_steps`), chunk by chunk at block boundaries, and `split_steps` cuts a chunk before
every wait that follows a DMA start: piece p+1's first sends before piece p's last
receive wait would put that wait, the reduction and the copy out a block boundary later.
So a `_start` (`_Run.interleaved`) sends piece p+1's first messages after all of piece
p's last waits (receive, own chunk, send), before its reduction and copy out: one chunk,
placed where the unpipelined order placed it, its sends a reduction sooner (level S:
`topology.Phase.landed`; the real-size transformer layer on v5e 9307 -> 9298 us, the
large DP step 16549 -> 16524 us; sending them once the last messages had left, as a
sync collective does, moved the layer to 9315 us instead). Not pipelined: a
low-precision piece whose result stays in f32 (a multi-axis reduction's VMEM phases, one
piece each anyway).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shardc.dialects import collective, tpu
from shardc.dialects.hlo import accumulation_type, element_kind
from shardc.dialects.tpu import memref_type
from shardc.lowering.context import Target
from shardc.lowering.emit import VMEM, Emitter, for_steps, local_copy, nbytes
from shardc.lowering.pair_combine import combine_pairs, store_parts
from shardc.lowering.rings import Ring
from shardc.lowering.topology import Topology
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import MemRefType, VectorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

_COMBINE: dict[str, dict[str, type[Operation]]] = {
    "float": {
        "add": arith.AddfOp,
        "mul": arith.MulfOp,
        "max": arith.MaximumfOp,
        "min": arith.MinimumfOp,
    },
    "int": {"add": arith.AddiOp, "mul": arith.MuliOp, "max": arith.MaxSIOp, "min": arith.MinSIOp},
    "bool": {"add": arith.OrIOp, "mul": arith.AndIOp, "max": arith.OrIOp, "min": arith.AndIOp},
}
"""The arith op combining two partials, per element kind and reduction kind (as level S's
`reduce_ufunc`: max/min propagate NaN; on i1 add/max are or, mul/min and)."""


def combine(op: Operation, a: SSAValue, b: SSAValue) -> list[Operation]:
    """
    The ops combining a partial `a` with this device's `b` (low precision: widened to
    `a`'s accumulation type first) by `op`'s reduction kind; the last one's result is
    the combination.
    """
    assert isinstance(op, collective.AllReduceBase | collective.ReduceScatterBase)
    ty = a.type
    assert isinstance(ty, VectorType)
    ops: list[Operation] = []
    if b.type != ty:
        widen = arith.ExtFOp(b, ty)
        ops.append(widen)
        b = widen.result
    kind = op.kind.data
    total = _COMBINE[element_kind(ty.element_type) or "int"][kind](a, b)
    total.results[0].name_hint = {"add": "sum", "mul": "product"}.get(kind, kind)
    return [*ops, total]


def copy_out(e: Emitter, acc: SSAValue, target: SSAValue, buf: SSAValue | None) -> None:
    """Copy a reduced VMEM block to `target` (HBM), rounding once to its element type
    if the block accumulated in a wider one (bf16 / f16 reduce in f32, as level S)
    through `buf` (VMEM of the block's shape in the target's type; the copy is waited
    for, so every piece reuses the ring's one buffer)."""
    at, tt = acc.type, target.type
    assert isinstance(at, MemRefType) and isinstance(tt, MemRefType)
    if at.element_type == tt.element_type:
        local_copy(e, acc, target, "rs_out")
        return
    assert buf is not None
    shape = list(at.get_shape())
    zeros = [e.index(0) for _ in shape]
    wide = e.op(tpu.LoadOp(acc, zeros, VectorType(at.element_type, shape)), "wide")
    narrow = e.op(arith.TruncFOp(wide, VectorType(tt.element_type, shape)), "rounded")
    e.op(tpu.StoreOp(narrow, buf, zeros))
    local_copy(e, buf, target, "rs_out")


@dataclass
class _RingState:
    """The VMEM buffers and semaphores of one reduce-scatter ring."""

    bshape: list[int]
    to: SSAValue
    back: SSAValue
    rbuf: SSAValue
    mine: SSAValue
    acc: SSAValue
    copy_sem: SSAValue
    send_sem: SSAValue
    recv_sems: SSAValue
    credits: SSAValue
    out_sem: SSAValue | None
    """Copies of a piece's result out of `acc` (with several pieces)."""
    rounded: SSAValue | None
    """Low precision: `acc` rounded to the element type on its way out (`copy_out`)."""


@dataclass(frozen=True)
class _Run:
    """What every step of one `run_rs_rings` shares."""

    op: Operation
    n: int
    elem: Attribute
    wide: Attribute
    """The accumulation type of `elem` (f32 for bf16/f16)."""
    one: SSAValue
    credit0: SSAValue
    """i32: the receive slots (2, or 1 for a ring of 2 whose pieces are not pipelined),
    and the credits owed at the end."""
    overlap: bool
    """Pieces overlap: each piece's first step starts while the previous piece's last
    step runs (`run_rs_rings`)."""
    rounds: bool
    """Overlapping low-precision pieces: a piece's last step (but the last piece's)
    rounds its result straight into `rounded`, which also stages the next piece's first
    message (module docstring)."""
    pairs: bool = False
    """The blocks' last dimension holds complex (re, im) pairs combined as complex numbers
    (lowering/pair_combine.py)."""
    interleaved: bool = False
    """A `_start`: its steps are interleaved into the compute (lowering/ring_steps.py),
    so a pipelined piece boundary waits for the last step's messages to land before the
    next piece's first sends (`_start_early`)."""


def run_rs_rings(
    topo: Topology,
    target: Target,
    e: Emitter,
    op: Operation,
    pieces: list[list[Ring]],
    deferred: list[Operation] | None = None,
    pairs: bool = False,
) -> list[tuple[Ring, SSAValue]]:
    """
    Ring reduce-scatter steps of the rings of each piece (one axis size), the rings
    of a piece interleaved, the pieces one after the other through the same VMEM
    buffers (a piece's rings are the previous piece's on the next part of every
    chunk). With a `dst` (HBM) per ring, each piece's result is copied there while the
    next piece's first messages travel; without (one piece), the VMEM buffers holding
    this rank's reduced parts are returned, for the caller to use and deallocate.
    `deferred` (a `_start`): everything after step 0's sends goes there (emitted at
    the done). `pairs`: the blocks are complex (re, im) pairs (`_Run.pairs`).
    Pipelined pieces (`_Run.overlap`): piece p+1's step 0 starts within piece p's last
    step (`_start_early`), once its messages have left (module docstring).
    """
    run = _start_run(target, e, op, pieces, pairs)
    state = [_ring_buffers(topo, e, run, r, len(pieces) > 1) for r in pieces[0]]
    later = Emitter(Block()) if deferred is not None else None
    pending: list[Operation] = []
    """Waits for the previous piece's copies out (of the accumulators; rounding early,
    `_Run.rounds`: of the rounded buffers, waited before they are next written)."""
    early: _Early | None = None
    """This piece's step 0, started during the previous piece's last step."""
    final = len(pieces) - 1
    for p, rings in enumerate(pieces):
        nxt = pieces[p + 1] if run.overlap and p < final else None
        # A _start sends step 0's messages now, and the rest of the collective goes to a
        # block emitted at the done.
        rest, pending = _piece_start(run, e, (p, nxt is not None), rings, state, pending, early)
        if later is not None and p == 0:
            e = later
        if run.n > 2:
            _emit(e, rest)
            _later_steps(run, e, p, rings, state, nxt is None)
            if nxt is not None:  # the last step, its rest after the next piece's sends
                accs = [st.acc for st in state]
                n2 = e.index(run.n - 2)
                rest = _step(run, e, n2, p, rings, state, accs, [], rounds=run.rounds)
        early = None
        if nxt is not None:
            # Of a ring of 2, the next piece's step 0 is its last step too.
            last = run.rounds and run.n == 2 and p + 1 < final
            rest, early = _start_early(run, e, (p + 1, last), nxt, state, rest, pending)
            if run.rounds:
                pending = []
        if run.n == 2 or nxt is not None:
            _emit(e, rest)
        if p < final:
            pending = _piece_out(e, run, rings, state)
    result = _finish(e, run, pieces[-1], state, pending)
    if deferred is not None and later is not None:
        deferred += later.detach_all()
    return result


def _piece_start(
    run: _Run,
    e: Emitter,
    piece: tuple[int, bool],
    rings: list[Ring],
    state: list[_RingState],
    pending: list[Operation],
    early: _Early | None,
) -> tuple[list[Operation], list[Operation]]:
    """
    Step 0 of piece `piece[0]` (`piece[1]`: a next piece overlaps it): started now
    (peeled: it sends from HBM, or low precision the widened own chunk), or already
    started `early` (its local DMAs go now: the last step has read `mine`, and its
    copies out, just started, share the HBM with them). Returns its rest (with
    `pending`, the previous piece's copies out, before its stores) and what stays
    pending (`_Run.rounds`: those copies out, until `rounded` is next written).
    """
    p, overlapped = piece
    if early is not None:
        _emit(e, early.local)
        if run.rounds:
            return early.rest, pending
        return [*pending, *early.rest], []
    firsts = _first_messages(e, run, rings, state, pending)
    if run.wide != run.elem:
        pending = []
    last = run.rounds and run.n == 2 and overlapped
    return _step(run, e, e.index(0), p, rings, state, firsts, pending, rounds=last), []


@dataclass
class _Early:
    """A piece's step 0 started early (during the previous piece's last step): its
    remote DMAs are in flight; its local DMAs into `mine` wait until the previous
    piece's last step has read `mine`."""

    local: list[Operation]
    rest: list[Operation]


def _start_early(
    run: _Run,
    e: Emitter,
    piece: tuple[int, bool],
    rings: list[Ring],
    state: list[_RingState],
    last: list[Operation],
    pending: list[Operation],
) -> tuple[list[Operation], _Early]:
    """
    Start step 0 of piece `piece[0]` within piece p-1's last step, whose rest is
    `last`: the link is free once that step's messages have left (its send waits,
    taken out of `last` and emitted now), so piece p's first messages go then, while
    the last ones travel and are reduced. Low precision (`_Run.rounds`) first widens
    them into the accumulators (free: the last step rounds its result into `rounded`),
    through the rounded buffers (after `pending`, the copies out of them). `piece[1]`:
    piece p's step 0 is its last step (`_step`'s `rounds`). Returns the rest of `last`
    and piece p's early step 0.
    """
    p, rounds = piece
    sends = {st.send_sem for st in state}
    sent = {
        id(o) for o in last if isinstance(o, tpu.DMAWaitOp) and (run.interleaved or o.sem in sends)
    }
    for o in last:
        if id(o) in sent:
            e.op(o)
    early = _Early([], [])
    firsts = _first_messages(e, run, rings, state, pending, run.rounds)
    early.rest = _step(run, e, e.index(0), p, rings, state, firsts, [], early.local, rounds)
    return [o for o in last if id(o) not in sent], early


def _later_steps(
    run: _Run, e: Emitter, p: int, rings: list[Ring], state: list[_RingState], last: bool
) -> None:
    """Steps 1 .. N-2 of piece `p` (`last`: else 1 .. N-3, the caller runs the last one):
    an `scf.for`, or (`e.unroll`) one after the other."""
    accs = [st.acc for st in state]
    hi = run.n - 1 if last else run.n - 2
    if e.unroll:
        for k in range(1, hi):
            _emit(e, _step(run, e, e.index(k), p, rings, state, accs, []))
        return
    if hi <= 1:
        return
    b, s = for_steps(e, 1, hi)
    _emit(b, _step(run, b, s, p, rings, state, accs, []))
    b.op(scf.YieldOp())


def _start_run(
    target: Target, e: Emitter, op: Operation, pieces: list[list[Ring]], pairs: bool
) -> _Run:
    """Check that the rings' blocks fit VMEM; the constants every step uses."""
    n = pieces[0][0].ax.size
    blocks = [r.block_type() for r in pieces[0]]
    elem = blocks[0][1]
    wide = accumulation_type(elem)
    target.check_vmem(
        op,
        "a ring reduce_scatter step (4 blocks of "
        + " + ".join("x".join(map(str, b)) for b, _ in blocks)
        + ")",
        sum(4 * nbytes(b, wide) for b, _ in blocks),
    )
    one = e.i32(1, "one")
    # Pipelined where the steps run back to back: a sync collective; at low precision
    # where each piece's result is rounded to the element type (module docstring).
    start = isinstance(op, collective.CollectiveOp) and op.IS_START
    rounded = all(
        isinstance(r.dst, SSAValue)
        and isinstance(r.dst.type, MemRefType)
        and r.dst.type.element_type == elem
        for r in pieces[0]
    )
    overlap = target.pipeline_pieces and len(pieces) > 1
    overlap = overlap and (wide == elem or (rounded and not pairs))
    # Two receive slots, as many credits as messages in flight at once: pipelined, a
    # piece's last message and the next piece's first (of a ring of 2, both a step 0).
    credit0 = e.i32(min(2, (n - 1) * (2 if overlap else 1)), "rs_slots")
    rounds = overlap and wide != elem
    return _Run(op, n, elem, wide, one, credit0, overlap, rounds, pairs, start)


def _emit(e: Emitter, ops: Sequence[Operation]) -> None:
    for o in ops:
        e.op(o)


def _ring_buffers(topo: Topology, e: Emitter, run: _Run, r: Ring, pieces: bool) -> _RingState:
    """A reduce-scatter ring's VMEM buffers and semaphores (`pieces`: one for the copies
    out between pieces too); its first credits sent. A `dst` narrower than the
    accumulator (low precision): one buffer for the rounded result too, which every
    piece reuses, so a ring of bf16 from HBM holds the 4 f32 blocks
    `hardware.vmem.rs_pieces` counts (two f32 receive slots and accumulator, the own
    chunk and the rounded result in bf16; the last phase of several, whose own chunk
    is the previous phase's f32, half a block more)."""
    tag = r.tag
    bshape, _ = r.block_type()
    wide, elem = run.wide, run.elem
    dst = None if r.dst is None else r.dst.type
    out = dst.element_type if isinstance(dst, MemRefType) else None
    # Partials travel and accumulate in the accumulation type (f32 for bf16/f16).
    st = _RingState(
        bshape,
        topo.neighbour(r.ax, r.direction),
        topo.neighbour(r.ax, -r.direction),
        e.op(tpu.AllocOp(memref_type([2, *bshape], wide, VMEM)), f"{tag}_recv_buf"),
        e.op(tpu.AllocOp(memref_type(bshape, elem, VMEM)), f"{tag}_mine"),
        e.op(tpu.AllocOp(memref_type(bshape, wide, VMEM)), f"{tag}_acc"),
        e.op(tpu.AllocOp(tpu.DMASemaphoreType()), f"{tag}_copy_sem"),
        e.op(tpu.AllocOp(tpu.DMASemaphoreType()), f"{tag}_send_sem"),
        e.op(tpu.AllocOp(tpu.DMASemaphoreType([2])), f"{tag}_recv_sems"),
        e.op(tpu.AllocOp(tpu.SemaphoreType()), f"{tag}_credits"),
        e.op(tpu.AllocOp(tpu.DMASemaphoreType()), f"{tag}_piece_sem") if pieces else None,
        None
        if out in (None, wide)
        else e.op(tpu.AllocOp(memref_type(bshape, out, VMEM)), "rs_rounded"),
    )
    # My receive slots are free: tell the neighbour who sends into them.
    e.op(tpu.SemSignalOp(st.credits, run.credit0, st.back))
    return st


def _first_messages(
    e: Emitter,
    run: _Run,
    rings: list[Ring],
    state: list[_RingState],
    pending: list[Operation],
    early: bool = False,
) -> list[SSAValue]:
    """
    Each ring's first message, my own chunk (me - direction) mod N, sent straight from
    HBM; low precision widens it into `acc` first (after `pending`, the previous
    piece's copies out of `acc`) and sends it from there. It is fetched into `mine`,
    or (`early`: `mine` is still in use, `_start_early`) into `rounded`.
    """
    firsts = []
    for r, st in zip(rings, state, strict=False):
        first = e.to_index(
            e.rem(e.add(r.ax.me, e.i32((-r.direction) % run.n)), r.ax.n), f"{r.tag}_first"
        )
        block = r.block(e, first, f"{r.tag}_first_block")
        if run.wide != run.elem:
            for w in pending:
                e.op(w)
            pending = []
            # Early, `mine` is still being filled under `copy_sem`: the own chunk goes
            # through `rounded` under the copies out's semaphore (they were waited).
            via, sem = (st.rounded, st.out_sem) if early else (st.mine, st.copy_sem)
            assert via is not None and sem is not None
            e.op(tpu.DMAStartOp(block, via, recv_sem=sem))
            e.op(tpu.DMAWaitOp(sem, via))
            zeros = [e.index(0) for _ in st.bshape]
            low = e.op(
                tpu.LoadOp(via, zeros, VectorType(run.elem, st.bshape)),
                f"{r.tag}_first_low",
            )
            e.op(
                tpu.StoreOp(e.op(arith.ExtFOp(low, VectorType(run.wide, st.bshape))), st.acc, zeros)
            )
            block = st.acc
        firsts.append(block)
    return firsts


def _step(
    run: _Run,
    b: Emitter,
    s: SSAValue,
    p: int,
    rings: list[Ring],
    state: list[_RingState],
    srcs: Sequence[SSAValue],
    before_store: list[Operation],
    local: list[Operation] | None = None,
    rounds: bool = False,
) -> list[Operation]:
    """Start step `s` of piece `p`'s DMAs (after their credits); return the rest of the
    step (`before_store`: to emit before the first ring overwrites its accumulator).
    `local`: the local DMAs of the chunks to add go there, not started (`_Early`).
    `rounds`: the piece's last step, its result rounded into `rounded`, not `acc`."""
    s32 = b.to_i32(s)
    n = run.n
    slot = b.rem(b.add(s, b.index(p * (n - 1))) if p else s, b.index(2), "slot")
    later: list[Operation] = []
    for r, st, src in zip(rings, state, srcs, strict=False):
        later += _ring_step(run, b, (s32, slot, rounds), r, st, src, before_store, local)
        before_store = []
    return later


def _ring_step(
    run: _Run,
    b: Emitter,
    where: tuple[SSAValue, SSAValue, bool],
    r: Ring,
    st: _RingState,
    src: SSAValue,
    before_store: list[Operation],
    local: list[Operation] | None,
) -> list[Operation]:
    """One ring of reduce_scatter step s (`where`: s as i32, its receive slot, whether
    the result is rounded into `rounded`): send `src` (the running partial in `acc`, or
    at step 0 my own chunk in HBM), start the local DMA of the chunk to add (or append
    it to `local`); return the rest (`before_store` just before the accumulator is
    overwritten)."""
    s32, slot, rounds = where
    ax, n, tag = r.ax, r.ax.size, r.tag
    bshape, rbuf, mine, acc = st.bshape, st.rbuf, st.mine, st.acc
    block_v = memref_type(bshape, run.wide, VMEM)
    # The partial arriving at step s is for chunk (me - direction (s + 2)) mod N.
    if r.direction == 1:
        mine_c = b.add(b.sub(ax.me, s32), b.i32(2 * n - 2))
    else:
        mine_c = b.add(b.add(ax.me, s32), b.i32(2))
    mine_i = b.to_index(b.rem(mine_c, ax.n), f"{tag}_mine_chunk")
    zeros = [b.index(0) for _ in bshape]
    dst = b.op(tpu.MemRefSliceOp(rbuf, [slot, *zeros], block_v), f"{tag}_slot")
    rsem = b.op(tpu.MemRefSliceOp(st.recv_sems, [slot], tpu.DMASemaphoreType()), f"{tag}_recv_sem")
    # Handshake: one credit = one free receive slot on the receiving neighbour.
    b.op(tpu.SemWaitOp(st.credits, run.one))
    b.op(tpu.DMAStartOp(src, dst, send_sem=st.send_sem, recv_sem=rsem, device=st.to))
    xs = r.block(b, mine_i, f"{tag}_x_block")
    fetch = tpu.DMAStartOp(xs, mine, recv_sem=st.copy_sem)
    if local is None:
        b.op(fetch)
    else:
        local.append(fetch)
    combined, stores = _combine_step(run, b, st, (slot, zeros), rounds)
    return [
        tpu.DMAWaitOp(st.copy_sem, mine),
        tpu.DMAWaitOp(rsem, dst),
        *combined,
        # The send buffer is free once the outgoing message has left.
        tpu.DMAWaitOp(st.send_sem, acc),
        *before_store,
        *stores,
        # My slot is consumed: one more credit for the sending neighbour.
        tpu.SemSignalOp(st.credits, run.one, st.back),
    ]


def _combine_step(
    run: _Run,
    b: Emitter,
    st: _RingState,
    at: tuple[SSAValue, list[SSAValue]],
    rounds: bool = False,
) -> tuple[list[Operation], list[Operation]]:
    """The ops combining the partial in receive slot `at[0]` with the own chunk (`at[1]`:
    the zero indices), and those storing the result to the accumulator (`rounds`:
    rounded to the element type, to `rounded`): one op per element, or (`run.pairs`) a
    complex (re, im) pair's combine (pair_combine.py)."""
    slot, zeros = at
    bshape, rbuf, mine, acc = st.bshape, st.rbuf, st.mine, st.acc
    if run.pairs:  # complex (re, im) pairs combined as complex numbers
        assert isinstance(run.op, collective.AllReduceBase | collective.ReduceScatterBase)
        kind = run.op.kind.data
        combined, parts = combine_pairs(
            b, kind, run.op, (rbuf, [slot, *zeros]), (mine, zeros), bshape
        )
        return combined, store_parts(b, parts, (acc, zeros))
    got = tpu.LoadOp(rbuf, [slot, *zeros], VectorType(run.wide, bshape))
    got.result.name_hint = "partial"
    own = tpu.LoadOp(mine, zeros, VectorType(run.elem, bshape))
    own.result.name_hint = "own"
    combined = [got, own, *combine(run.op, got.result, own.result)]
    total = combined[-1].results[0]
    if rounds:
        assert st.rounded is not None
        narrow = arith.TruncFOp(total, VectorType(run.elem, bshape))
        narrow.result.name_hint = "rounded"
        return combined, [narrow, tpu.StoreOp(narrow.result, st.rounded, zeros)]
    return combined, [tpu.StoreOp(total, acc, zeros)]


def _piece_out(
    e: Emitter, run: _Run, rings: list[Ring], state: list[_RingState]
) -> list[Operation]:
    """
    A piece's result (not the last piece's) leaves while the next piece's first
    messages travel: its waits are returned, for before `acc` (`run.rounds`: `rounded`)
    is next overwritten. Low precision not overlapped rounds it first, which waits here.
    """
    pending: list[Operation] = []
    if run.rounds:  # the last step rounded it into `rounded`
        for r, st in zip(rings, state, strict=False):
            assert r.dst is not None and st.out_sem is not None and st.rounded is not None
            target = r.target(e)
            e.op(tpu.DMAStartOp(st.rounded, target, recv_sem=st.out_sem))
            pending.append(tpu.DMAWaitOp(st.out_sem, target))
    elif run.wide == run.elem:
        for r, st in zip(rings, state, strict=False):
            assert r.dst is not None and st.out_sem is not None
            target = r.target(e)
            e.op(tpu.DMAStartOp(st.acc, target, recv_sem=st.out_sem))
            pending.append(tpu.DMAWaitOp(st.out_sem, target))
    else:
        for r, st in zip(rings, state, strict=False):
            copy_out(e, st.acc, r.target(e), st.rounded)
    return pending


def _finish(
    e: Emitter, run: _Run, rings: list[Ring], state: list[_RingState], pending: list[Operation]
) -> list[tuple[Ring, SSAValue]]:
    """Wait for the credits still owed, free the buffers; the last piece's result out
    to its `dst` (after `pending`, the previous piece's copies out of `rounded`), or (no
    `dst`) the accumulators returned."""
    for st in state:
        # The credits still owed to me: my receiver has consumed every message.
        e.op(tpu.SemWaitOp(st.credits, run.credit0))
        e.op(tpu.DeallocOp(st.rbuf))
        e.op(tpu.DeallocOp(st.mine))
    if rings[0].dst is None:
        return [(r, st.acc) for r, st in zip(rings, state, strict=False)]
    _emit(e, pending)
    for r, st in zip(rings, state, strict=False):
        copy_out(e, st.acc, r.target(e), st.rounded)
        e.op(tpu.DeallocOp(st.acc))
        if st.rounded is not None:
            e.op(tpu.DeallocOp(st.rounded))
    return []
