"""
Overlap in the kernel: the ring steps of a `_start` interleaved into the tiled loops of
the compute between it and its `done`, as a hand-written Pallas collective matmul does.

At a `_start` the whole collective is emitted (its ring steps unrolled, `Emitter.unroll`)
into a detached block, and `split_steps` cuts it into:

* the address arithmetic, views and allocations (pure: `arith`, `tpu.memref_slice`,
  `tpu.memref_reshape`, `tpu.alloc`, ... whose operands are available), hoisted to the
  `_start`, so that every later piece sees them (they dominate the rest of the kernel);
* chunks: the side-effecting ops cut before every wait that follows a DMA start, so a
  chunk is "wait for step k-1's DMAs, reduce, start step k's DMAs" (chunk 0: the first
  starts, emitted at the `_start`); a chunk that would use a value another chunk defines
  (a load in one, its use in the next) is merged with it, and one that starts no remote
  DMA (a local copy) with the next;
* the `tpu.dealloc`s, moved to the `done` (a buffer lives at least as long as before, and
  the VMEM the compute in between may use stays what `tile_plan.vmem_in_use` counts).

`Overlap` places the chunks: each tiled compute loop lowered while a ring is pending
calls `Overlap.place` with its step count and block time (`tile_plan.plan_time`: the
loop's time as the kernel runs it);
chunk k+1 of a ring goes before the first block boundary at or after where chunk k's
transfer (the cost model's time for the collective, `CostModel.collective_time`, shared
by its remote chunks by the bytes they send; local DMAs at HBM bandwidth) finishes,
the link idling until then, unless the ring has no slack for that in level S's schedule
(`step_estimate.collective_slack`): then before the last boundary ahead of it, its wait
stalling the compute until the transfer lands (`_stalls`; later boundaries move by the
stall); one chunk per ring per block; the rings pending go one after the other, in
issue order (`_engine_free`). A chunk placed at block j runs under `scf.if %t == j` at
the top of the loop body (predication, not peeling: the body stays one loop whatever the
placement, each chunk appears once, and the loop's blocks, double-buffering and
write-backs are untouched). `Overlap.wanted_steps` tells the tile plan how many blocks a
loop needs for the chunks that fit under it (two per chunk, so a chunk lands within half
a transfer of its time). Chunks not placed run at the `done`, in
order, as before. Rings in flight together take the links one after another, in issue
order, as level S's engine has them (`timing.engine_window`): a ring's chunks are placed
only after the previous ring's last transfer, never in the same blocks (placed together
they shared the links, each step ran slower than placed and its wait stalled the compute:
the FSDP step's four all_gathers, level T 1.2x level S).

A chunk that starts no remote DMA (a permute's or an all_to_all's waits, a ring's last
waits and reduction) is never placed: it starts no transfer, so nothing is gained by
running it before the `done`, and waiting there for DMAs the placement estimated done
stalls the compute when they land later (the estimate is the loop's tile-plan time and
the collective alone, while collectives in flight together share the links:
`timing.engine_window`). Collectives in flight thus run as level S has them: every
`_start`'s first DMAs started at the `_start`, together, each waited at its `done`.

Buffer lifetimes: a chunk only touches the collective's own buffers, semaphores and
VMEM, and every level-S value has its own HBM buffer, so the compute in between reads
nothing a step writes; the done's results are read only after the `done`, where the last
chunk (every wait) has run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from shardc.dialects import tpu
from shardc.hardware.chips import Chip
from shardc.lowering.emit import Emitter, nbytes
from shardc.lowering.tile_index import Ix, TileEmitter, emit_if, ix_cmp
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue

_PURE = (
    tpu.MemRefSliceOp,
    tpu.MemRefReshapeOp,
    tpu.MemRefBitcastOp,
    tpu.AllocOp,
    tpu.AxisIndexOp,
    tpu.DeviceIdOp,
)


def _pure(op: Operation) -> bool:
    """No effect but its results: safe to emit earlier than written."""
    if op.regions:
        return False
    return isinstance(op, _PURE) or op.name.startswith("arith.")


def _kind(op: Operation) -> str:
    """
    'wait' (waits for a DMA), 'start' (starts DMAs, or waits for a credit to start one),
    or 'other'. A credit wait (`tpu.sem_wait`: a free receive slot on the neighbour) is
    part of the start it guards, not a step boundary: a bidirectional ring's step is
    "wait for both directions, start the right one, take a credit, start the left one",
    and cutting at the left credit put the two directions' transfers in different blocks,
    half a step apart, each step then waiting for the later one (v5p's rings ran at
    0.6x their speed under compute; level S has both directions in flight together).
    """
    inner = list(op.walk())
    if any(isinstance(o, tpu.DMAWaitOp) for o in inner):
        return "wait"
    if any(isinstance(o, tpu.SemWaitOp) for o in inner):
        return "other"
    if any(isinstance(o, tpu.DMAStartOp) for o in inner):
        return "start"
    return "other"


@dataclass
class RingSteps:
    """A collective cut for interleaving (see the module docstring)."""

    hoisted: list[Operation]
    chunks: list[list[Operation]]
    frees: list[Operation]


def split_steps(ops: Sequence[Operation]) -> RingSteps:
    """Cut the ops of one collective (detached, in order) as the module docstring says."""
    hoisted: list[Operation] = []
    frees: list[Operation] = []
    kept: list[Operation] = []
    local: set[SSAValue] = set()
    """Results of kept (not hoisted) ops."""
    for op in ops:
        if isinstance(op, tpu.DeallocOp):
            frees.append(op)
        elif _pure(op) and not any(v in local for v in op.operands):
            hoisted.append(op)
        else:
            kept.append(op)
            local.update(op.results)
    chunks: list[list[Operation]] = [[]]
    prev = "other"
    for i, op in enumerate(kept):
        kind = "other" if _guards_send(kept, i) else _kind(op)
        if kind == "wait" and prev == "start":
            chunks.append([])
        chunks[-1].append(op)
        if kind != "other":
            prev = kind
    return RingSteps(hoisted, _merge_local(_merge_dependent(chunks)), frees)


def _guards_send(kept: Sequence[Operation], i: int) -> bool:
    """
    Whether `kept[i]` is a credit wait guarding the remote DMA after it (a ring step's
    handshake, reduce_ring `_ring_step`): it belongs to that send's chunk, so that the
    sends of one step on several rings (both directions, a torus's parts) are one chunk,
    started at one block boundary. Cut there, a bidirectional reduce_scatter's two
    directions went to different blocks, one after the other: each chunk was estimated
    at half a step while each transfer takes a whole one, so its ring took 1.3x level S's
    time under compute (an 8 MiB bf16 all_reduce over 4 devices on v5p under two dots:
    148 us against 112 us; helper biglayer).
    """
    if not isinstance(kept[i], tpu.SemWaitOp):
        return False
    for op in kept[i + 1 :]:
        if isinstance(op, tpu.DMAStartOp):
            return op.device is not None
        if not _pure(op):
            return False
    return False


def _merge_local(chunks: list[list[Operation]]) -> list[list[Operation]]:
    """A chunk that starts no remote DMA (a local copy, a reduction) goes with the next
    one: waiting for a local DMA costs little, and the remote transfer starts sooner."""
    merged: list[list[Operation]] = []
    carry: list[Operation] = []
    for c in chunks:
        carry = carry + c
        if _starts(c, remote=True):
            merged.append(carry)
            carry = []
    if carry:
        merged.append(carry)
    return merged


def _merge_dependent(chunks: list[list[Operation]]) -> list[list[Operation]]:
    """Merge runs of chunks where one uses a value defined in an earlier one (a chunk
    is emitted in its own `scf.if`, whose results do not reach the others)."""
    owner: dict[SSAValue, int] = {}
    for c, chunk in enumerate(chunks):
        for op in chunk:
            for inner in op.walk():
                owner.update(dict.fromkeys(inner.results, c))
    lo = list(range(len(chunks)))
    for c, chunk in enumerate(chunks):
        for op in chunk:
            for inner in op.walk():
                for v in inner.operands:
                    d = owner.get(v)
                    if d is not None and d < c:
                        lo[c] = min(lo[c], d)
    merged: list[list[Operation]] = []
    c = len(chunks) - 1
    while c >= 0:
        start, j = lo[c], c
        while j >= start:
            start = min(start, lo[j])
            j -= 1
        merged.append([op for chunk in chunks[start : c + 1] for op in chunk])
        c = start - 1
    merged.reverse()
    return [m for m in merged if m] or [[]]


def chunk_times(chip: Chip, chunks: list[list[Operation]], remote_total: float) -> list[float]:
    """Seconds the DMAs each chunk starts take: its remote ones a share of the
    collective's time (`remote_total`) by the bytes they send, its local ones their
    bytes at HBM bandwidth. By bytes, not evenly: a bf16 all_reduce's reduce-scatter
    steps send f32 partials in pieces, its all-gather steps bf16 blocks, so its chunks'
    transfers differ 2x and more; an even share placed the all-gather's waits half a
    transfer early, stalling the compute (megatron4 8192x4096x16384 on v5p: 6.6 us per
    step; helper biglayer)."""
    remote = [sum(_bytes(d.dst) for d in _starts(c, remote=True)) for c in chunks]
    total = sum(remote)
    times = []
    for c, sent in zip(chunks, remote, strict=True):
        local = sum(_bytes(d.dst) for d in _starts(c, remote=False))
        times.append((remote_total * sent / total if total else 0.0) + local / chip.hbm_bw)
    return times


def _starts(chunk: list[Operation], remote: bool) -> list[tpu.DMAStartOp]:
    return [
        o
        for op in chunk
        for o in op.walk()
        if isinstance(o, tpu.DMAStartOp) and (o.device is not None) == remote
    ]


def _bytes(ref: SSAValue) -> int:
    t = ref.type
    assert isinstance(t, MemRefType)
    return nbytes(t.get_shape(), t.element_type)


@dataclass
class _Pending:
    """A `_start`'s chunks not placed yet."""

    chunks: list[list[Operation]]
    times: list[float]
    frees: list[Operation]
    ready: float
    """Overlap clock at which the DMAs of the last chunk placed are done."""
    slack: float = 0.0
    """Seconds its link may still idle without a later step (`_idle_or_stall`)."""


@dataclass
class Overlap:
    """The pending rings of one kernel and where their chunks go (module docstring)."""

    clock: float = 0.0
    """Estimated seconds of compute lowered so far (tile-plan estimates)."""
    rings: dict[SSAValue, _Pending] = field(default_factory=dict[SSAValue, _Pending])

    def start(
        self,
        future: SSAValue,
        e: Emitter,
        steps: RingSteps,
        times: list[float],
        slack: float = 0.0,
    ) -> None:
        """Emit the hoisted ops and chunk 0 at the `_start`; keep the rest for later.
        `slack`: by how much level S's schedule lets the collective end later
        (`step_estimate.collective_slack`)."""
        for op in [*steps.hoisted, *steps.chunks[0]]:
            e.op(op)
        self.rings[future] = _Pending(
            steps.chunks[1:], times[1:], steps.frees, self.clock + times[0], slack
        )

    def done(self, future: SSAValue, e: Emitter) -> None:
        """The chunks of `future`'s ring not placed, in order, then its deallocs."""
        ring = self.rings.pop(future, None)
        if ring is None:
            return
        for op in [*(o for c in ring.chunks for o in c), *ring.frees]:
            e.op(op)
        self.clock = max(self.clock, ring.ready + sum(ring.times))

    def wanted_steps(self, op_time: float) -> int:
        """Blocks a loop of `op_time` seconds needs to take every chunk that fits under it."""
        want = 1
        for ring in self.rings.values():
            if ring.times:
                each = max(sum(ring.times) / len(ring.times), 1e-9)
                want = max(want, 2 * min(len(ring.times), int(op_time / each)) + 1)
        return min(want, 64)

    def place(self, b: TileEmitter, step: Ix, steps: int, block_time: float) -> None:
        """Put pending chunks at the top of the loop body `b` (block `step` of `steps`)."""
        for j, ops in sorted(self._placements(steps, block_time).items()):

            def emit(w: TileEmitter, ops: list[Operation] = ops) -> None:
                for op in ops:
                    w.op(op)

            emit_if(b, ix_cmp(b, step, "eq", j), emit)

    def place_before(self, e: Emitter, time: float) -> None:
        """Put pending chunks before an op of `time` seconds about to be emitted by `e`
        (one block: a movement op's DMAs)."""
        for op in self._placements(1, time).get(0, []):
            e.op(op)

    def _placements(self, steps: int, block_time: float) -> dict[int, list[Operation]]:
        """The chunks going at each of `steps` block boundaries `block_time` apart, from
        the clock on (which moves past them and the stalls they cause)."""
        at: dict[int, list[Operation]] = {}
        stalls = [0.0] * (steps + 1)
        """Seconds the chunks placed stall the compute before each block boundary (so far,
        summed: a stall delays every block after it)."""
        free = 0.0
        """When the rings issued before this one are done with their transfers (engine
        order, `_engine_free`)."""
        for ring in self.rings.values():
            for j in range(steps):
                if not _transfers_left(ring):
                    break  # only waits left: they go at the `done`
                t = self.clock + j * block_time + stalls[j]
                lands = max(ring.ready, free)
                if lands > t and not _stalls(ring, lands, t, block_time):
                    continue
                at.setdefault(j, []).extend(ring.chunks.pop(0))
                ring.slack -= max(0.0, t - lands)
                for k in range(j, steps + 1):
                    stalls[k] += max(0.0, lands - t)
                ring.ready = max(t, lands) + ring.times.pop(0)
            free = _engine_free(free, ring)
        self.clock += steps * block_time + stalls[steps]
        return at


def _transfers_left(ring: _Pending) -> bool:
    """Whether `ring`'s next chunk starts a transfer (else only waits are left)."""
    return bool(ring.chunks) and bool(_starts(ring.chunks[0], remote=True))


def _engine_free(free: float, ring: _Pending) -> float:
    """
    When the next ring pending may place a chunk, after `ring` (issued before it): once
    `ring` has started its last transfer and that transfer is done (never, in this
    loop, while it has transfers left). The rings in flight go in issue order, each
    after the one before it, as level S's collective engine runs them
    (`interpreter.timing.engine_window`: a ring begins when the engine is free, less
    its first step's latency; its first chunk is emitted at its `_start`). Placed as if
    each ring ran alone, the chunks of rings in flight together overlapped their
    latencies, which level S's engine does not (examples/dp_grads.mlir on v5e through
    `tpu-pipeline`: level S 372 us, level T 329 us, 0.88; helper biglayer).
    """
    return float("inf") if _transfers_left(ring) else max(free, ring.ready)


def _stalls(ring: _Pending, lands: float, t: float, block_time: float) -> bool:
    """
    Whether `ring`'s next chunk goes at the block boundary at `t`, before its previous
    transfer (or its turn on the engine) lands at `lands`: its wait then holds the
    compute until the transfer lands and the next transfer starts at once; else it goes
    at the first boundary after `lands`, the link idling until then while the compute
    runs on. Only in the block where it lands (a stall of less than a block). A ring
    runs at the speed level S's engine has it only if it never idles, a compute loop only
    if it never stalls: the one that may wait is the one with slack in level S's schedule.
    Idle while the ring has slack for it (`step_estimate.collective_slack`, less what it
    idled already): then it still ends before anything waits for it, as level S has it
    (megatron4 at 8192x4096x16384 on v5p, compute-bound, stalled 1.8 us per step when
    every chunk went to the nearest boundary: level T 3.18 ms against level S's 2.72 ms;
    helper biglayer). Else stall: a ring with no slack keeps the engine busy up to a
    `done` that waits, so each second it idles comes out of the step, while the compute
    waits there anyway (dp_grads 2048x4096 on v5p, communication-bound: 12.9 us steps
    under 5 us dot blocks idled the link 2-3 us each, level T 4.75 ms against level S's
    4.27 ms; with the stalls 4.37 ms).
    """
    return t < lands < t + block_time and ring.slack < t + block_time - lands
