"""
The collective rendezvous: the scheduler that runs every device of a level-S run until it
blocks at a collective or finishes, and fires a collective when its group has met.

A group fires when all its members wait at a collective over that same group; if they all
do but at incompatible collectives (different kind, reduction, dims or types) that is a
mismatch error naming the devices and ops. When no device can run and some still wait,
the run is a deadlock, reported with every waiting device, the op it waits at and why its
group cannot meet (`run_diagnostics`). Nothing ever hangs.

With a chip, a collective starts when the last member has issued it and every member's
collective engine can take it (`timing.engine_window`); a sync form blocks each member's compute stream until it ends,
a `_start` form only at its `done`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from shardc.dialects import collective as coll
from shardc.interpreter.execution import Device, DeviceRun, Future
from shardc.interpreter.plan import CollectiveInfo
from shardc.interpreter.run_diagnostics import RunDiagnostics
from shardc.interpreter.timing import (
    CollectiveCost,
    DeviceClock,
    InFlight,
    engine_busy,
    engine_window,
    push_in_flight,
)
from xdsl.ir import Operation


@dataclass(slots=True)
class Wait:
    """A device waiting at a collective."""

    device: int
    op: coll.CollectiveOp
    values: tuple[Any, ...]
    group: tuple[int, ...]
    rank: int
    info: CollectiveInfo
    arrival: float

    @property
    def signature(self) -> tuple[Any, ...]:
        return self.info.signature

    @property
    def summary(self) -> str:
        return self.info.summary


class Rendezvous:
    """Runs the devices of one run to completion, meeting at collectives."""

    def __init__(
        self,
        collectives: dict[Operation, CollectiveInfo],
        diagnostics: RunDiagnostics,
        timed: bool,
        abstract: bool,
    ):
        self.collectives = collectives
        self.diagnostics = diagnostics
        self.timed = timed
        self.abstract = abstract
        self.flying: dict[int, list[Flying]] = {}
        """Per device, its `_start`s not yet done (`_push_in_flight`)."""

    def run(self, gens: Sequence[DeviceRun], devices: Sequence[Device]) -> list[tuple[Any, ...]]:
        """Every device's results, in device order."""
        n = len(gens)
        clocks = [dev.tm for dev in devices]
        timed = self.timed
        inbox: list[Any] = [None] * n
        finished: dict[int, tuple[Any, ...]] = {}
        waiting: dict[int, Wait] = {}
        arrived: dict[tuple[int, ...], int] = {}
        runnable = deque(range(n))
        while runnable:
            d = runnable.popleft()
            try:
                op, values = gens[d].send(inbox[d])
            except StopIteration as stop:
                finished[d] = stop.value
                continue
            inbox[d] = None
            info = self.collectives[op]
            member = info.member_of.get(d)
            if member is None:
                raise self.diagnostics.error_at(op, f"has no group containing device {d}")
            group, rank = member
            arrival = clocks[d].clock if timed else 0.0  # pyright: ignore[reportOptionalMemberAccess]
            waiting[d] = Wait(d, op, values, group, rank, info, arrival)  # pyright: ignore
            # how many members wait at a collective over this very group
            count = arrived.get(group, 0) + 1
            if count < len(group):
                arrived[group] = count
                continue
            arrived[group] = 0
            members = [waiting.pop(m) for m in group]
            for device, out in self._fire(members, clocks):
                inbox[device] = out
                runnable.append(device)
        if waiting:
            raise self.diagnostics.deadlock(waiting, finished)  # pyright: ignore[reportArgumentType]
        return [finished[d] for d in range(n)]

    def _fire(self, members: list[Wait], clocks: list[DeviceClock | None]) -> list[tuple[int, Any]]:
        """Run a met group's collective: (device, what it receives) for each member."""
        info = members[0].info
        signature = info.signature
        for w in members:
            if w.info.signature != signature:
                raise self.diagnostics.mismatch(members)
        if self.abstract and any(v is None for w in members for v in w.values):
            outputs = [(None,) * info.n_values] * len(members)
        else:
            outputs = info.execute([w.values for w in members])
        ends = self._time_collective(members, clocks) if self.timed else {}
        return [
            (w.device, (self._future(w, out, ends, clocks),) if w.op.IS_START else out)
            for w, out in zip(members, outputs, strict=False)
        ]

    def _future(self, w: Wait, out: Any, ends: dict[int, float], clocks: Any) -> Future:
        """The future of a fired `_start` on `w`'s device, a ring's kept in flight there
        for the first steps of the `_start`s after it (`_push_in_flight`)."""
        future = Future(w.op, out, ends.get(w.device, 0.0))
        cost = w.info.cost
        if self.timed and cost is not None and cost.landings is None and self._own(w.device):
            tm = clocks[w.device]
            index = len(tm.collectives) - 1
            _, _, begin, end = tm.collectives[index]
            steps = InFlight(begin, end, cost.first_step, cost.overlap, cost.axes)
            self.flying.setdefault(w.device, []).append(Flying(future, index, steps))
        return future

    def _own(self, device: int) -> bool:
        """Whether `device`'s clock is this run's own (not a stand-in for another rank's)."""
        return True

    def _time_collective(
        self, members: list[Wait], clocks: list[DeviceClock | None]
    ) -> dict[int, float]:
        """`_time_collective`, after the `_start`'s first step has pushed the collectives
        in flight on its members (`_push_in_flight`)."""
        issued = max(w.arrival for w in members)
        cost = members[0].info.cost
        assert cost is not None
        free = {w.device: clocks[w.device].engine for w in members}  # pyright: ignore
        if cost.first_step > 0:
            for w in members:
                if self._own(w.device):
                    self._push_in_flight(w.device, clocks[w.device], issued, cost)  # pyright: ignore
        return _time_collective(members, clocks, free)

    def _push_in_flight(
        self, device: int, tm: DeviceClock, issued: float, cost: CollectiveCost
    ) -> None:
        """The `_start`s in flight on `device` end later by its first step
        (`timing.push_in_flight`); its engine is busy as much longer."""
        flying = [f for f in self.flying.get(device, []) if f.future.done is None]
        self.flying[device] = flying
        latest = push_in_flight((f.steps for f in flying), issued, cost.first_step, cost.axes)
        for f in flying:
            if f.steps.end != f.future.end:
                f.steps.end = f.future.end = float(f.steps.end)
                op, arrival, start, _ = tm.collectives[f.index]
                tm.collectives[f.index] = (op, arrival, start, f.steps.end)
        if latest > tm.engine:
            tm.comm += float(latest) - tm.engine
            tm.engine = float(latest)


@dataclass(slots=True)
class Flying:
    """A `_start` in flight on one device: its future, its entry in the device's
    `DeviceClock.collectives`, its steps on the links."""

    future: Future
    index: int
    steps: InFlight


def _time_collective(
    members: list[Wait], clocks: Any, free_before: dict[int, float]
) -> dict[int, float]:
    """
    Start the group's collective when the last member has issued it and every
    member's engine can take it (`timing.engine_window`); a sync form blocks each
    member's compute stream until it ends. A collective that is one round of DMAs
    (`CostModel.collective_landings`) begins on each member at its own issue (the
    engine term stays the group's: their transfers share the links) and ends there when
    its own sends have left and its receives landed, as level T's kernel waits.
    `free_before`: each member's engine free time before this collective's first step
    pushed the ones in flight (`timing.first_step_push`: this one ends no later).
    Returns each member's end.
    """
    cost = members[0].info.cost
    assert cost is not None
    free = max(free_before.values())
    if cost.landings is not None:
        begins = {
            w.device: engine_window(w.arrival, free, cost.time, cost.overlap)[0] for w in members
        }
        at = np.zeros(max(cost.landings.size, max(begins) + 1))
        at[list(begins)] = list(begins.values())
        landed = cost.landings.ends(at)
        ends = {w.device: float(landed[w.device]) for w in members}
    else:
        issued = max(w.arrival for w in members)
        start, end = engine_window(issued, free, cost.time, cost.overlap)
        begins = dict.fromkeys((w.device for w in members), start)
        ends = dict.fromkeys((w.device for w in members), end)
    kind, nbytes = cost.kind, cost.bytes
    for w in members:
        tm = clocks[w.device]
        start, end = begins[w.device], ends[w.device]
        tm.comm += engine_busy(tm.engine, start, end)
        tm.engine = max(tm.engine, end)
        tm.collectives.append((w.op, w.arrival, start, end))
        tm.counts[kind] += 1
        tm.comm_bytes[kind] += nbytes
        if not w.op.IS_START and end > tm.clock:
            tm.waits.append((w.op, tm.clock, end))
            tm.clock = end
    return ends
