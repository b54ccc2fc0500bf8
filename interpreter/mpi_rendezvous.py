"""
The collective rendezvous of a level-S run spread over MPI ranks (`interpreter.mpi`): each
rank runs its contiguous devices as `rendezvous.Rendezvous` does, and a group whose
members live on several ranks meets through messages.

Why not `MPI_Allreduce`: the result must be bit-identical to the in-process run, whose
reductions combine in the group's rank order (`collectives.combine_in_order`, f32
accumulation for bf16/f16), and MPI leaves the order of its reductions unspecified. So a
cross-rank all_reduce or reduce_scatter passes one partial sum along the group in rank
order (`mpi_chain`: O(operand) bytes per rank); every other collective sends the members'
operands to the group's other ranks, which run the very same `collectives` function on all
members' operands in group order. Every member also sends its arrival time and engine-free
time to every rank of the group, so the collective is timed exactly as in process
(`rendezvous._time_collective`).

Messages of one group travel on the communicator of the group's ranks with the group's
tag (arrivals; partial sums and results on the next two tags, numbered by meeting); MPI
keeps messages between two ranks on one communicator and tag in order, so the k-th
arrival message of a group from a rank is its k-th meeting of that group (several may be in
flight: a device runs on after a `_start` whose results it needs only at the `done`).

No progress for `timeout` seconds while devices wait, with every other rank waiting too
(not computing a long op: `mpi_liveness`), is reported as a deadlock, naming every local
device that waits, the op and the members (and their ranks) it waits for.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from shardc.diagnostics import InterpreterError
from shardc.interpreter import mpi_chain
from shardc.interpreter.execution import Device, DeviceRun, Future
from shardc.interpreter.mpi_chain import Chain
from shardc.interpreter.plan import CollectiveInfo
from shardc.interpreter.rendezvous import Rendezvous, Wait
from shardc.interpreter.run_diagnostics import RunDiagnostics, devices_str
from shardc.interpreter.timing import DeviceClock
from xdsl.ir import Operation

Group = tuple[int, ...]


class Transport(Protocol):
    """What the rendezvous needs of MPI (`mpi.World` is the implementation)."""

    rank: int

    def rank_of(self, device: int) -> int: ...

    def send(self, group: Group, payload: Any, channel: int = 0) -> None: ...

    def send_to(self, group: Group, rank: int, payload: Any, channel: int) -> None: ...

    def group_ranks(self, group: Group) -> list[int]: ...

    def receive(self, group: Group, source: int, channel: int = 0) -> Any | None: ...

    def progressed(self) -> None: ...

    def stalled(self, idle: float) -> bool: ...


@dataclass
class Meeting:
    """One meeting of a group that spans ranks: what has arrived so far."""

    group: Group
    members: dict[int, Wait] = field(default_factory=dict[int, Wait])
    engines: dict[int, float] = field(default_factory=dict[int, float])
    missing: set[int] = field(default_factory=set[int])
    """Ranks whose contributions have not arrived."""
    chain: Chain | None = None
    """A reduction's values travel along the chain (`mpi_chain`), not with the arrivals."""

    @property
    def ready(self) -> bool:
        return not self.missing and (self.chain is None or self.chain.outputs is not None)


class DeadlockError(InterpreterError):
    """No progress for the timeout: reported by every rank that waits, not an abort."""


class DistributedRendezvous(Rendezvous):
    """Runs this rank's devices to completion, meeting local and remote group members."""

    def __init__(
        self,
        collectives: dict[Operation, CollectiveInfo],
        diagnostics: RunDiagnostics,
        timed: bool,
        abstract: bool,
        transport: Transport,
        ops: Sequence[Operation],
        timeout: float,
    ):
        super().__init__(collectives, diagnostics, timed, abstract)
        self.transport = transport
        self.ops = ops
        self.op_index = {op: i for i, op in enumerate(ops)}
        self.timeout = timeout
        self.meetings: dict[Group, deque[Meeting]] = {}
        self.waiting: dict[int, Wait] = {}
        self.finished: dict[int, tuple[Any, ...]] = {}
        self.posted: dict[Group, int] = {}
        """Meetings of each group posted so far (a meeting's number, `Chain.seq`)."""
        self.early: dict[tuple[Group, int], list[tuple[int, Any]]] = {}
        """Chain messages of meetings not posted yet."""
        self.steps = 0
        self.sleeps = _test_sleeps(transport.rank)

    def run_local(
        self, gens: dict[int, DeviceRun], devices: Sequence[Device]
    ) -> dict[int, tuple[Any, ...]]:
        """Every local device's results, by device."""
        self.clocks = {dev.index: dev.tm for dev in devices}
        self.local = set(gens)
        self.inbox: dict[int, Any] = dict.fromkeys(gens)
        self.runnable = deque(sorted(gens))
        self.arrived: dict[Group, int] = {}
        idle_since = time.monotonic()
        pause = 1e-5
        while True:
            progressed = bool(self.runnable)
            while self.runnable:
                self._step(gens, self.runnable.popleft())
            progressed = self._receive() or progressed
            if not self.waiting and not self.runnable:
                return self.finished
            if progressed:
                idle_since, pause = time.monotonic(), 1e-5
                self.transport.progressed()
                continue
            if self.transport.stalled(time.monotonic() - idle_since):
                raise self.deadlock_report()
            time.sleep(pause)
            pause = min(pause * 2, 2e-3)

    def _step(self, gens: dict[int, DeviceRun], d: int) -> None:
        """Run device `d` to its next collective (or its end)."""
        self.steps += 1
        if self.steps in self.sleeps:  # a test's stand-in for a long op
            time.sleep(self.sleeps[self.steps])
        try:
            op, values = gens[d].send(self.inbox[d])
        except StopIteration as stop:
            self.finished[d] = stop.value
            return
        self.inbox[d] = None
        info = self.collectives[op]
        member = info.member_of.get(d)
        if member is None:
            raise self.diagnostics.error_at(op, f"has no group containing device {d}")
        group, rank = member
        tm = self.clocks[d]
        arrival = tm.clock if self.timed else 0.0  # pyright: ignore[reportOptionalMemberAccess]
        self.waiting[d] = Wait(d, op, values, group, rank, info, arrival)  # pyright: ignore
        local = [m for m in group if m in self.local]
        count = self.arrived.get(group, 0) + 1
        if count < len(local):
            self.arrived[group] = count
            return
        self.arrived[group] = 0
        if len(local) == len(group):
            self._deliver(self._fire([self.waiting.pop(m) for m in group], self.clocks))  # pyright: ignore
            return
        self._post(group, local)

    def _post(self, group: Group, local: list[int]) -> None:
        """Send the local members' contributions to the group's other ranks."""
        meeting = Meeting(group)
        meeting.missing = {self.transport.rank_of(m) for m in group} - {self.transport.rank}
        first = self.waiting[local[0]]
        if mpi_chain.chained(first.op) and not self.abstract:
            meeting.chain = Chain(
                group,
                [self.transport.rank_of(m) for m in group],
                self.posted.get(group, 0),
                first.op.kind.data,  # pyright: ignore[reportAttributeAccessIssue]
                [np.asarray(v).dtype for v in first.values],
            )
        self.posted[group] = self.posted.get(group, 0) + 1
        contributions = []
        for m in local:
            w = self.waiting[m]
            tm = self.clocks[m]
            engine = tm.engine if tm is not None else 0.0
            meeting.members[m] = w
            meeting.engines[m] = engine
            values = None if meeting.chain is not None else w.values
            contributions.append((m, self.op_index[w.op], values, w.arrival, engine))
        self.transport.send(group, contributions)
        self.meetings.setdefault(group, deque()).append(meeting)
        if meeting.chain is not None:
            for channel, payload in self.early.pop((group, meeting.chain.seq), []):
                self._send_chain(
                    group, mpi_chain.take(meeting.chain, channel, payload, self.transport.rank)
                )
            self._advance(meeting)

    def _advance(self, meeting: Meeting) -> None:
        """Add this rank's members to the chain's sum when it holds it; pass it on."""
        chain = meeting.chain
        assert chain is not None
        values = {d: meeting.members[d].values for d in meeting.group if d in self.local}
        op = meeting.members[next(iter(values))].op
        self._send_chain(meeting.group, mpi_chain.advance(chain, self.transport.rank, values, op))

    def _send_chain(self, group: Group, messages: list[Any]) -> None:
        """Send a chain's messages: (channel, rank or None for every other rank, payload)."""
        for channel, rank, payload in messages:
            if rank is None:
                self.transport.send(group, payload, channel)
            else:
                self.transport.send_to(group, rank, payload, channel)

    def _receive_chain(self, group: Group, queue: deque[Meeting]) -> bool:
        """Take the partial sums and results that have arrived for `group`'s meetings."""
        progressed = False
        me = self.transport.rank
        for source in self.transport.group_ranks(group):
            for channel in (mpi_chain.PARTIAL, mpi_chain.RESULT):
                if source == me:
                    continue
                while (payload := self.transport.receive(group, source, channel)) is not None:
                    progressed = True
                    seq = payload[0]
                    meeting = next((m for m in queue if m.chain and m.chain.seq == seq), None)
                    if meeting is None:
                        self.early.setdefault((group, seq), []).append((channel, payload))
                        continue
                    assert meeting.chain is not None
                    self._send_chain(group, mpi_chain.take(meeting.chain, channel, payload, me))
                    if channel == mpi_chain.PARTIAL:
                        self._advance(meeting)
        return progressed

    def _receive(self) -> bool:
        """Take what has arrived; fire every meeting that is complete. True if any was."""
        progressed = False
        for group, queue in self.meetings.items():
            for source in {r for m in queue for r in m.missing}:
                payload = self.transport.receive(group, source)
                if payload is None:
                    continue
                progressed = True
                meeting = next(m for m in queue if source in m.missing)
                meeting.missing.discard(source)
                for device, index, values, arrival, engine in payload:
                    op = self.ops[index]
                    info = self.collectives[op]
                    rank = info.member_of[device][1]
                    meeting.members[device] = Wait(
                        device,
                        op,
                        values,
                        group,
                        rank,
                        info,
                        arrival,  # pyright: ignore
                    )
                    meeting.engines[device] = engine
            if any(m.chain is not None for m in queue):
                progressed = self._receive_chain(group, queue) or progressed
            while queue and queue[0].ready:
                self._fire_meeting(queue.popleft())
        return progressed

    def _fire_meeting(self, meeting: Meeting) -> None:
        members = [meeting.members[m] for m in meeting.group]
        clocks: dict[int, Any] = {}
        for m in meeting.group:
            if m in self.local:
                clocks[m] = self.clocks[m]
                del self.waiting[m]
            elif self.timed:  # a stand-in: _time_collective reads its engine
                stand_in = clocks[m] = DeviceClock(m)
                stand_in.engine = meeting.engines[m]
        if meeting.chain is not None:
            assert meeting.chain.outputs is not None
            outputs = self._fire_chained(members, clocks, meeting.chain.outputs)
        else:
            outputs = self._fire(members, clocks)  # pyright: ignore[reportArgumentType]
        self._deliver([(d, out) for d, out in outputs if d in self.local])

    def _fire_chained(
        self, members: list[Wait], clocks: dict[int, Any], outputs: dict[int, tuple[Any, ...]]
    ) -> list[tuple[int, Any]]:
        """`_fire` of a chained reduction, whose results the chain computed."""
        signature = members[0].info.signature
        if any(w.info.signature != signature for w in members):
            raise self.diagnostics.mismatch(members)
        ends = self._time_collective(members, clocks) if self.timed else {}
        return [
            (
                w.device,
                (self._future(w, outputs[w.device], ends, clocks),)
                if w.op.IS_START
                else outputs[w.device],
            )
            for w in members
            if w.device in outputs
        ]

    def _own(self, device: int) -> bool:
        return device in self.local

    def _deliver(self, outputs: list[tuple[int, Any]]) -> None:
        for device, out in outputs:
            self.inbox[device] = out
            self.runnable.append(device)

    def deadlock_report(self) -> DeadlockError:
        """Every local waiting device, the op it waits at and who it waits for."""
        first = self.waiting[min(self.waiting)].op
        head = self.diagnostics.error_at(
            first,
            f"deadlock: no progress for {self.timeout:g} s on rank {self.transport.rank}; "
            "its devices wait for group members that never arrive:",
        )
        lines = [self._waits_for(d) for d in sorted(self.waiting)]
        return DeadlockError(str(head) + "\n" + "\n".join(lines))

    def _waits_for(self, d: int) -> str:
        w = self.waiting[d]
        posted = any(d in m.members for q in self.meetings.values() for m in q)
        why: list[str] = []
        for m in w.group:
            if m == d:
                continue
            if m in self.finished:
                why.append(f"device {m} finished")
            elif m in self.waiting and self.waiting[m].group != w.group:
                other = self.waiting[m]
                where = self.diagnostics.where(other.op)
                why.append(
                    f"device {m} waits at {other.summary} ({where}) over {list(other.group)}"
                )
            elif m not in self.local and posted:
                meeting = next(x for q in self.meetings.values() for x in q if d in x.members)
                if m not in meeting.members:
                    why.append(f"device {m} (rank {self.transport.rank_of(m)}) has not arrived")
        return (
            f"  {devices_str([d])} waits at {w.summary} ({self.diagnostics.where(w.op)}) "
            f"over group {list(w.group)}; " + "; ".join(why or ["(no reason found)"])
        )


def _test_sleeps(rank: int) -> dict[int, float]:
    """
    SHARDC_MPI_TEST_SLEEP=RANK:STEP:SECONDS[,...] (tests only): rank RANK sleeps SECONDS
    before its STEP-th device step (1-based), as if it computed a long op.
    """
    sleeps: dict[int, float] = {}
    for item in filter(None, os.environ.get("SHARDC_MPI_TEST_SLEEP", "").split(",")):
        r, step, seconds = item.split(":")
        if int(r) == rank:
            sleeps[int(step)] = float(seconds)
    return sleeps


__all__ = ["DeadlockError", "DistributedRendezvous", "Future", "Transport"]
