"""
The machine both timing levels run on: where each device sits on the ICI torus, which
links a transfer crosses, and what a ring collective as `lower-to-tpu` builds it costs.
Level S (`cost.CostModel.collective_time`) evaluates the formulas below; level T
(`interpreter/level_t_*`) simulates the same torus, routes and latencies DMA by DMA, so
the two describe one machine (issue 14 item 4) and differ only where level S sums up.

Placement. Device d (row-major over the mesh axes) sits at torus coordinates
`unravel(d, lengths)`: mesh axes map onto torus axes in order, mesh axes beyond the
chip's torus dimensions fold into its last axis (`torus_lengths`), so mesh axes folded
together share that torus axis's links. A torus axis has wraparound links per
`Chip.has_wraparound` (v4/v5p: lengths that are multiples of 4; v5e/v6e: only a full 16).
Meshes larger than one pod (`Chip.pod_chips`) span several pods: the most major mesh
axes whose product is the pod count cross the data-center network (`dcn_axes`).

Routing. Dimension order (torus axis 0 first); on an axis with wraparound the shorter
way round (ties going up), else the direct way (`Torus.route`). A transfer of b bytes
over h hops that shares its most crowded directed link with c - 1 other transfers takes
`h * hop_latency + b * c / ici_link_bw` (cut-through, equal shares: `transfers_time`).

Rings (`lower-to-tpu`'s algorithms, lowering/all_gather.py, reduce_ring.py,
all_reduce.py): a ring over a group of n devices runs n - 1 steps; each step every
device sends one block to its ring neighbour (coordinate + 1, and - 1 as well when the
ring runs both ways: on axes with wraparound, each direction carrying half the block).
An edge's step time is its transfer's (`transfers_time` over every edge of the step,
so rings folded onto one torus axis share its links). On a line the ring's wrap edge
crosses n - 1 hops (routed back along the line).
- all_gather (N-buffered, no handshake): a block travels n - 1 consecutive edges, so a
  ring takes the sum of its edges' step times less the cheapest edge (`ring_time`);
- reduce_scatter (double-buffered receive slots, credits): the same chain, but a sender
  may run only 2 steps ahead of its receiver, so also at least ceil((n-1)/2) times the
  dearest edge's step time (a credit round trip crosses the wrap edge); and the vector
  work between its transfers, which no DMA overlaps (`Ring.combine`, `lead`, `tail`):
  every step the received partial sum is added to the own chunk in VMEM before the next
  send (a slot is freed after it), a low-precision own chunk is fetched and widened to
  f32 before the first send, and the result is copied out of VMEM after the last step
  (before an all_reduce's all-gather phase begins); a chunk cut into pieces runs them
  one after the other, software-pipelined (lowering/reduce_ring.py): a sync collective's
  device starts the next piece's first step when its last step's messages have left,
  not landed (low precision: and the next own chunk is fetched and widened, `lead`), so
  a piece boundary costs no latency (and the last step's reduction, low precision
  rounding its result as it goes, `Ring.last_combine`, overlaps the next piece's first
  transfers); a `_start`'s when they have landed too (`Phase.landed`: its steps are
  interleaved into the compute, and the reduction still overlaps); those pieces are
  stepped device by device (`ring_phases_time`, a `Phase` of `pieces`);
- over several mesh axes: one phase per axis, all_gather the most minor first (blocks
  growing), reduce_scatter the most major first (only the last phase both ways);
  all_reduce = reduce_scatter + all_gather, and over m axes of one size the buffer is cut
  into m parts whose phases run on the m axes at once (every phase both ways); rings run
  at once couple through every device's waits, and phases follow each other per device
  without a barrier, so those are stepped device by device (`ring_phases_time`);
- all_to_all: every block straight to its rank at once (`transfers_time`);
- permute: every pair's DMA at once (`transfers_time`).
Local copies (an all_gather's own block, a reduce_scatter's result) stream at HBM
bandwidth. Per-DMA issue and semaphore signals cost nothing at either level.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
from shardc.hardware.chips import Chip

Link = tuple[str, int, int, int]
"""A directed ICI link: ("ici", node, torus axis, direction +-1)."""


def torus_lengths(chip: Chip, mesh_shape: Sequence[int]) -> list[int]:
    """Torus axis lengths for a mesh: its axes in order, the extra ones folded into the last."""
    shape = list(mesh_shape) or [1]
    dims = chip.torus_dims
    if len(shape) <= dims:
        return shape
    return shape[: dims - 1] + [math.prod(shape[dims - 1 :])]


@dataclass(frozen=True)
class Torus:
    """
    The physical machine: device d at coordinates `unravel(d, lengths)`, wraparound per
    axis; routes are dimension-order (axis 0 first), on a ring the shorter way round,
    ties going up.
    """

    lengths: tuple[int, ...]
    wrap: tuple[bool, ...]

    @classmethod
    def of(cls, chip: Chip, mesh_shape: Sequence[int]) -> Torus:
        """The torus a mesh of `mesh_shape` runs on (`torus_lengths`, `Chip.has_wraparound`)."""
        lengths = torus_lengths(chip, mesh_shape)
        return cls(tuple(lengths), tuple(chip.has_wraparound(n) for n in lengths))

    def coords(self, device: int) -> tuple[int, ...]:
        out: list[int] = []
        for n in reversed(self.lengths):
            out.append(device % n)
            device //= n
        return tuple(reversed(out))

    def node(self, coords: Sequence[int]) -> int:
        d = 0
        for c, n in zip(coords, self.lengths, strict=True):
            d = d * n + c
        return d

    def route(self, src: int, dst: int) -> list[Link]:
        """Directed links ("ici", node, axis, direction) of the dimension-order route."""
        here = list(self.coords(src))
        goal = self.coords(dst)
        links: list[Link] = []
        for axis, length in enumerate(self.lengths):
            d = goal[axis] - here[axis]
            if d == 0:
                continue
            if self.wrap[axis]:
                up = d % length
                step = 1 if up <= length - up else -1
                count = up if step == 1 else length - up
            else:
                step = 1 if d > 0 else -1
                count = abs(d)
            for _ in range(count):
                links.append(("ici", self.node(here), axis, step))
                here[axis] = (here[axis] + step) % length
        return links

    def hops(self, src: int, dst: int) -> int:
        return len(self.route(src, dst))


Transfer = tuple[int, int, float]
"""(source device, target device, bytes) of one DMA."""


def transfer_legs(
    chip: Chip, torus: Torus, transfers: Sequence[Transfer]
) -> list[tuple[float, float]]:
    """
    (left, landed) of each of `transfers` when all start at once, in seconds: its last byte
    leaves the source after its bytes at its share of its most crowded directed link
    (equal shares, as level T's `Flows`, not re-rated as others finish: an upper bound
    within the larger share), and lands its hops' latency later (cut-through). Level T's
    DMA signals the sender's semaphore when the last byte leaves and the receiver's when
    it lands (`interpreter/level_t_dma.py`), so a sender waits for `left`, a receiver for
    `landed`.
    """
    routes = [torus.route(s, t) for s, t, _ in transfers]
    count: dict[Link, int] = {}
    for r in routes:
        for link in r:
            count[link] = count.get(link, 0) + 1
    out = []
    for (_, _, nbytes), r in zip(transfers, routes, strict=True):
        if not r:
            out.append((0.0, 0.0))
            continue
        left = nbytes * max(count[link] for link in r) / chip.ici_link_bw
        out.append((left, len(r) * chip.hop_latency + left))
    return out


def transfer_times(chip: Chip, torus: Torus, transfers: Sequence[Transfer]) -> list[float]:
    """Seconds until each of `transfers` (all started at once) has landed (`transfer_legs`)."""
    return [landed for _, landed in transfer_legs(chip, torus, transfers)]


def transfers_time(chip: Chip, torus: Torus, transfers: Sequence[Transfer]) -> float:
    """Seconds until the last of `transfers` (all started at once) has landed."""
    return max(transfer_times(chip, torus, transfers), default=0.0)


@dataclass(frozen=True)
class Ring:
    """
    One ring phase: every group (device ids in ring order) sends `block` bytes per step
    to its neighbour in each of `directions` (+1 and/or -1).
    """

    groups: tuple[tuple[int, ...], ...]
    block: float
    directions: tuple[int, ...] = (1,)
    combine: float = 0.0
    """Seconds a device computes on each step's block of one direction once it has
    landed, before its next step's sends: a reduce-scatter adds the received partial
    sum to its own chunk on the vector unit, in VMEM (`cost.rs_combine_time`); an
    all-gather forwards what it received (0)."""
    lead: float = 0.0
    """Seconds per direction before the first send (`cost.rs_lead_time`: a
    low-precision reduce-scatter's own chunk fetched and widened in VMEM)."""
    tail: float = 0.0
    """Seconds per direction after the last step (`cost.rs_tail_time`: a
    reduce-scatter's result copied out of VMEM)."""
    last_combine: float | None = None
    """Seconds of the reduction of a piece's last step where the next piece is
    pipelined, if not `combine` (`cost.rs_round_combine_time`: a low-precision piece's
    result rounded straight into VMEM, its copy out overlapping the next piece)."""
    out_fetch: float = 0.0
    """Seconds of HBM per direction that such a piece's copy out and the next piece's
    first own-chunk fetch, started together, take (`cost.rs_out_fetch_time`): the next
    piece's first reduction waits for that fetch, and the piece after it fetches its
    first message into the buffer being copied out."""


def _edges(ring: Ring) -> list[tuple[int, int, int, int]]:
    """(group index, direction, rank, peer device) of every edge of one step."""
    out = []
    for g, group in enumerate(ring.groups):
        n = len(group)
        for direction in ring.directions:
            for r in range(n):
                out.append((g, direction, r, group[(r + direction) % n]))
    return out


def ring_time(
    chip: Chip,
    torus: Torus,
    rings: Sequence[Ring],
    credits: int | None,
    pieces: int = 1,
    landed: bool = False,
) -> float:
    """
    Seconds of `rings` running their n - 1 steps at once (module docstring): per ring
    and direction the chain of n - 1 consecutive edges; with `credits` (a
    reduce-scatter's receive slots) at least ceil((n-1)/credits) dearest edges. Several
    rings at once (a torus all_reduce's parts) couple through every device's waits, and
    `pieces` pipelined one after the other couple through each device's sends
    (`landed`: `Phase.landed`): `ring_phases_time` steps them.
    """
    if len(rings) > 1 or pieces > 1:
        return ring_phases_time(chip, torus, [Phase(rings, credits, pieces, landed)])
    edges = [(i, e) for i, ring in enumerate(rings) for e in _edges(ring)]
    transfers = [(rings[i].groups[g][r], peer, rings[i].block) for i, (g, _, r, peer) in edges]
    times = transfer_times(chip, torus, transfers)
    per_ring: dict[tuple[int, int, int], list[float]] = {}
    for (i, (g, direction, _, _)), t in zip(edges, times, strict=True):
        per_ring.setdefault((i, g, direction), []).append(t)
    worst = 0.0
    for (i, _, _), ts in per_ring.items():
        n, ring = len(ts), rings[i]
        if n < 2:
            continue
        # A device combines every direction's block before its next sends.
        work = len(ring.directions) * ring.combine
        chain = sum(ts) - min(ts) + (n - 1) * work
        if credits is not None:
            chain = max(chain, math.ceil((n - 1) / credits) * (max(ts) + work))
        worst = max(worst, chain + len(ring.directions) * (ring.lead + ring.tail))
    return worst


class Phase(NamedTuple):
    """One ring phase: its rings, run at once in lockstep, their credits (`ring_time`),
    and the pieces its chunks are cut into (run one after the other, pipelined)."""

    rings: Sequence[Ring]
    credits: int | None
    pieces: int = 1
    landed: bool = False
    """A `_start`'s pieces (lowering/reduce_ring.py `_Run.interleaved`): a piece's first
    sends wait until the previous piece's last messages have landed, not only left;
    the last step's reduction still runs under them."""


def ring_phases_time(
    chip: Chip, torus: Torus, phases: Sequence[Phase | tuple[Sequence[Ring], int | None]]
) -> float:
    """
    Seconds of ring phases run one after the other on every device, each phase's rings
    at once, step by step as lower-to-tpu's kernel runs them (lowering/all_gather.py
    `run_ag_rings`, reduce_ring.py `run_rs_rings`): at step s a device starts every
    ring's DMA (a reduce-scatter's after a credit from its receiver, who frees a slot
    when it has taken that ring's step s - credits; the first `credits` steps' credits
    come when the receiver begins the phase), then waits for every ring's step-s block;
    it ends a reduce-scatter phase when its receiver has taken its last `credits`
    messages, and begins the next phase then. No barrier between phases: a device's
    phase begins when it ended the last. The rings of a phase couple through each
    device's waits: on a line without wraparound (v5e 4x4) a torus all_reduce's two
    parts put every device behind a wrap edge on one axis or the other, so each step
    waits for the longest edge of either ring (level T's 3 + 3 + 1 us per phase, not
    the 2-D chain's 3 + 1 + 1); phases chained per device are cheaper than summing
    their slowest devices. A phase of several pieces runs them as the kernel pipelines
    them: a device sends a piece's first step when its previous step's messages have
    left (`transfer_legs`), and takes it after the previous piece's last step.
    """
    whole = [Phase(*p) for p in phases]
    if not all(_covers_alike(p.rings) for p in whole):  # explicit groups: apart
        return sum(_apart(chip, torus, p) for p in whole)
    ready: dict[int, float] = {}
    for p in whole:
        ready = _phase(chip, torus, p, ready)
    return max(ready.values(), default=0.0)


def _apart(chip: Chip, torus: Torus, phase: Phase) -> float:
    """A phase whose rings do not line up (explicit groups), each ring's chain on its own:
    its pieces one after the other, each boundary saving the latency of the cheapest
    edge (the next piece's first step goes when the last step's messages have left) and
    each but the last piece's copy out (`Ring.tail`)."""
    chain = max(ring_time(chip, torus, [r], phase.credits) for r in phase.rings)
    if phase.pieces == 1:
        return chain
    # A piece's copy out overlaps the next piece (low precision: rounded in its last step).
    mid = max(ring_time(chip, torus, [replace(r, tail=0.0)], phase.credits) for r in phase.rings)
    if phase.landed:  # the next piece's first sends wait for the last step to land
        return chain + (phase.pieces - 1) * mid
    saved = min(
        landed - left
        for r in phase.rings
        for left, landed in transfer_legs(
            chip, torus, [(r.groups[g][k], peer, r.block) for g, _, k, peer in _edges(r)]
        )
    )
    return chain + (phase.pieces - 1) * (mid - saved)


def _covers_alike(rings: Sequence[Ring]) -> bool:
    """Every ring has every device of the phase exactly once (the lanes line up)."""
    members = [sorted(d for g in ring.groups for d in g) for ring in rings]
    return all(m == members[0] and len(set(m)) == len(m) for m in members)


def _phase(chip: Chip, torus: Torus, phase: Phase, ready: dict[int, float]) -> dict[int, float]:
    """Every device's end of one phase begun at `ready` (`ring_phases_time`), stepped
    for all devices at once: lane j of a device is its j-th (ring, direction), in the
    kernel's order (every ring of a phase covers every device); its pieces one after
    the other, pipelined (`_steps`)."""
    rings = phase.rings
    edges = [(i, e) for i, ring in enumerate(rings) for e in _edges(ring)]
    transfers = [(rings[i].groups[g][r], peer, rings[i].block) for i, (g, _, r, peer) in edges]
    lanes: dict[int, list[tuple[int, float, float, Ring]]] = {}
    legs = transfer_legs(chip, torus, transfers)
    for (i, (g, _, r, peer)), (left, t) in zip(edges, legs, strict=True):
        lanes.setdefault(rings[i].groups[g][r], []).append((peer, left, t, rings[i]))
    devices = sorted(lanes)
    at = {d: k for k, d in enumerate(devices)}
    peer = np.array([[at[p] for p, _, _, _ in lanes[d]] for d in devices])
    n = max(len(g) for ring in rings for g in ring.groups)
    # Once per device and lane: before the first send, after the last step; the local
    # DMAs between pipelined pieces (sharing the HBM, so their seconds add up).
    lead, tail, hbm = (
        np.array([sum(getattr(ring, f) for _, _, _, ring in lanes[d]) for d in devices])
        for f in ("lead", "tail", "out_fetch")
    )
    lane = _Lanes(
        peer,
        np.array([[left for _, left, _, _ in lanes[d]] for d in devices]),
        np.array([[t for _, _, t, _ in lanes[d]] for d in devices]),
        np.array([[ring.combine for _, _, _, ring in lanes[d]] for d in devices]),
        np.array([[_last_combine(ring) for _, _, _, ring in lanes[d]] for d in devices]),
        hbm if any(ring.last_combine is not None for ring in rings) else None,
    )
    begin = np.array([ready.get(d, 0.0) for d in devices])
    now = _steps(lane, (begin, lead), n - 1, phase) + tail
    return {**ready, **{d: float(t) for d, t in zip(devices, now, strict=True)}}


def _last_combine(ring: Ring) -> float:
    return ring.combine if ring.last_combine is None else ring.last_combine


@dataclass(frozen=True)
class _Lanes:
    """A phase's lanes, per device (row) and lane (column): the receiving device's row,
    the seconds from a send until its last byte has left and until it has landed, the
    seconds the receiver computes on what landed before its next sends (`Ring.combine`),
    and those of a pipelined piece's last step (`Ring.last_combine`); per device, where
    that step rounds, the seconds of its local DMAs (`Ring.out_fetch`)."""

    peer: np.ndarray
    left: np.ndarray
    edge: np.ndarray
    work: np.ndarray
    last: np.ndarray
    hbm: np.ndarray | None = None


def _steps(
    lane: _Lanes, begun: tuple[np.ndarray, np.ndarray], steps: int, phase: Phase
) -> np.ndarray:
    """
    When each device ends `phase.pieces` pieces of `steps` steps, `begun` = (when it
    began, the seconds before its first send: `Ring.lead`; its first credits come at the
    begin): at each step a device sends on every lane (a reduce-scatter's after a credit: the receiver
    took that lane's message `credits` messages earlier, or began), in lane order, then
    takes each lane's arrival and combines it. A piece's first step is sent when the
    previous step's messages have left (`Phase.landed`: and those to the device have
    landed) and (low precision) its own chunks have been
    fetched and widened (`lead` again), and taken after the previous piece's last step,
    which itself is taken after these sends (`Ring.last_combine`; the kernel's order,
    lowering/reduce_ring.py). Where the last step rounds (`_Lanes.hbm`), the local DMAs
    after it (`outs`) hold up the next piece's first reduction and the first send of the
    piece after.
    """
    peer, credits = lane.peer, phase.credits
    assert phase.pieces == 1 or (credits or 0) >= 2, "pipelined pieces need two slots"
    cols = np.arange(peer.shape[1])
    sender = _senders(peer)
    begin, lead = begun
    now = begin + lead
    start = now.copy()
    taken: list[np.ndarray] = []  # per message: when each device took each lane's block
    held: np.ndarray | None = None  # a piece's last arrivals, taken after the next sends
    outs: list[np.ndarray] = []
    """Per piece: when its copy out and the next piece's own-chunk fetch are done."""
    total = steps * phase.pieces
    for g in range(total):
        q, k = divmod(g, steps)
        send = np.broadcast_to(start[:, None], peer.shape)
        if credits is not None:  # a slot the receiver freed, or its first credits
            freed = taken[g - credits][peer, cols] if g >= credits else begin[peer]
            send = np.maximum(send, freed)
        send = np.maximum.accumulate(send, axis=1)  # the sends go in lane order
        arrive = send[sender, cols] + lane.edge[sender, cols]
        if held is not None:
            after = np.maximum(send[:, -1], now)
            if steps == 1 and q >= 2 and outs:  # its own chunk came after q-2's copy out
                after = np.maximum(after, outs[q - 2])
            now, got = _take(after, held, lane.last)
            taken.append(got)
            held = None
            if lane.hbm is not None:
                outs.append(now + lane.hbm)
        if k == steps - 1 and g + 1 < total:
            held = arrive  # pipelined: the next piece goes when these have left
            start = (send + lane.left).max(axis=1)
            if phase.landed:  # and (a `_start`'s) when mine have landed
                start = np.maximum(start, arrive.max(axis=1))
            if q >= 1 and outs:  # fetched into the buffer piece q-1 was copied out of
                start = np.maximum(start, outs[q - 1])
            start = start + lead
            continue
        after = np.maximum(send[:, -1], now)
        if k == 0 and q >= 1 and outs:  # its own chunk fetched after q-1's copy out
            after = np.maximum(after, outs[q - 1])
        now, got = _take(after, arrive, lane.work)
        taken.append(got)
        start = now
    if credits is not None:  # the credits still owed: the receiver took the last messages
        for step in taken[max(0, total - credits) :]:
            now = np.maximum(now, step[peer, cols].max(axis=1))
    return now


def _senders(peer: np.ndarray) -> np.ndarray:
    """sender[receiver, j]: the device that sends into the receiver's lane j."""
    sender = np.empty_like(peer)
    for j in range(peer.shape[1]):
        sender[peer[:, j], j] = np.arange(len(peer))
    return sender


def _take(after: np.ndarray, arrive: np.ndarray, work: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each device takes its lanes' arrivals in lane order, not before `after`, and
    combines each (`work`: the slot is free after): (when it is done, when it took each
    lane)."""
    got = np.empty_like(arrive)
    t = after
    for j in range(arrive.shape[1]):
        t = got[:, j] = np.maximum(t, arrive[:, j]) + work[:, j]
    return t, got


def axis_groups(mesh_shape: Sequence[int], axis: int) -> list[list[int]]:
    """
    The rings of mesh axis `axis`: for every setting of the other coordinates, the device
    ids along `axis` in coordinate order.
    """
    shape = list(mesh_shape)
    stride = math.prod(shape[axis + 1 :])
    n = shape[axis]
    groups = []
    for d in range(math.prod(shape)):
        if (d // stride) % n == 0:
            groups.append([d + k * stride for k in range(n)])
    return groups


def dcn_axes(chip: Chip, mesh_shape: Sequence[int]) -> list[int]:
    """
    The mesh axes that cross the data-center network: where the mesh has more devices
    than one pod, the most major axes whose product is the number of pods it spans
    (the rest of the mesh is one pod's ICI torus); none for a mesh within one pod.
    """
    total = math.prod(mesh_shape)
    if total <= chip.pod_chips:
        return []
    out, across = [], 1
    for i, n in enumerate(mesh_shape):
        if total // (across * n) < 1 or across * chip.pod_chips >= total:
            break
        out.append(i)
        across *= n
    return out
