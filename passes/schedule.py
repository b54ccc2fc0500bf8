"""
`schedule{memory-limit= max-in-flight= chip=}`: a list scheduler for per-device programs.

It re-orders each block (never changing an op) so that communication hides behind
compute: a `_start` is issued as soon as its operands exist, a `done` is placed as late as
the ops that need its results allow, and independent compute fills the time between.
Costs come from `hardware.cost` (the same model the interpreter's timing uses): the
scheduler simulates one device's compute stream and collective engine.

Rules, in priority order at each step:
1. issue a ready `_start` if fewer than `max-in-flight` collectives are in flight and the
   memory limit allows its buffers;
2. else run the ready compute op that came first in the original order, if it fits;
3. else retire the in-flight collective that finishes first (its `done`).
Live bytes are tracked (a `_start` allocates its results' buffers, its operands stay live
until its `done`); a step that would exceed `memory-limit` is not taken. If no step fits,
the limit is below what this program needs: the error says the minimum, which is the peak
of the program in its original order with every collective synchronous.
"""

from __future__ import annotations

import bisect
import sys
from dataclasses import dataclass, field

from shardc.dialects import collective, sizes
from shardc.dialects.spmd import find_mesh
from shardc.hardware.chips import UnknownChipError, get_chip
from shardc.hardware.cost import CostModel, cached
from shardc.hardware.vmem import IN_FLIGHT
from shardc.interpreter.timing import engine_window
from shardc.passes.block_order import dependency_graph, set_order
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException


def value_bytes(value: SSAValue) -> int:
    return sizes.value_bytes(value.type)


@dataclass
class MemoryTracker:
    """Live bytes of one block as ops are placed (arguments live until their last use)."""

    remaining_uses: dict[SSAValue, int]
    live: int = 0
    peak: int = 0

    @staticmethod
    def for_block(block: Block, uses: dict[SSAValue, int]) -> MemoryTracker:
        tracker = MemoryTracker(dict(uses))
        tracker.live = sum(value_bytes(a) for a in block.args)
        tracker.peak = tracker.live
        return tracker

    def delta(self, op: Operation, consumed: list[SSAValue]) -> tuple[int, int]:
        """(bytes live while `op` runs, bytes live after it)."""
        if isinstance(op, collective.DoneOp):
            # A done's results are its start's buffers: nothing new, and the future's
            # bytes live on in them.
            allocated = 0
            consumed = [v for v in consumed if v is not op.future]
        else:
            allocated = sum(value_bytes(r) for r in op.results if r.uses)
        freed = sum(
            value_bytes(v)
            for v in set(consumed)
            if self.remaining_uses.get(v, 0) == consumed.count(v)
        )
        during = self.live + allocated
        return during, during - freed

    def place(self, op: Operation, consumed: list[SSAValue]) -> None:
        during, after = self.delta(op, consumed)
        self.peak = max(self.peak, during)
        for v in consumed:
            self.remaining_uses[v] -= 1
        self.live = after


def consumed_values(op: Operation, start_of: dict[Operation, Operation]) -> list[SSAValue]:
    """The values an op uses, for liveness: a done also releases its start's operands."""
    values = list(op.operands)
    if op in start_of:
        values.extend(start_of[op].operands)
    return values


def use_counts(block: Block, start_of: dict[Operation, Operation]) -> dict[SSAValue, int]:
    counts: dict[SSAValue, int] = {}
    for op in block.ops:
        for v in consumed_values(op, start_of):
            counts[v] = counts.get(v, 0) + 1
    return counts


def pair_starts_and_dones(block: Block) -> dict[Operation, Operation]:
    """done -> its start (a start's operands stay live until the done)."""
    pairs: dict[Operation, Operation] = {}
    for op in block.ops:
        if isinstance(op, collective.DoneOp) and isinstance(op.future.owner, Operation):
            pairs[op] = op.future.owner
    return pairs


def sync_order(block: Block) -> list[Operation]:
    """The block's order with each `done` moved up to right after its start."""
    start_of = pair_starts_and_dones(block)
    done_of = {s: d for d, s in start_of.items()}
    order: list[Operation] = []
    for op in block.ops:
        if op in start_of:
            continue
        order.append(op)
        if op in done_of:
            order.append(done_of[op])
    return order


def sync_peak(block: Block) -> int:
    """Peak live bytes of the block in its order with each collective synchronous."""
    start_of = pair_starts_and_dones(block)
    tracker = MemoryTracker.for_block(block, use_counts(block, start_of))
    for op in sync_order(block):
        tracker.place(op, consumed_values(op, start_of))
    return tracker.peak


class ScheduleStuck(Exception):
    """No step fits the memory limit."""


@dataclass
class BlockScheduler:
    block: Block
    model: CostModel
    memory_limit: int | None
    max_in_flight: int
    clock: float = 0.0
    engine_free: float = 0.0
    in_flight: dict[Operation, float] = field(default_factory=dict[Operation, float])
    position: dict[Operation, int] = field(default_factory=dict[Operation, int])
    start_of: dict[Operation, Operation] = field(default_factory=dict[Operation, Operation])
    memory: MemoryTracker = field(default_factory=lambda: MemoryTracker({}))
    peak: bool = True
    """Whether `run` reports the peak (false: live bytes are tracked only if a memory limit
    needs them, and the peak reported is 0; the step estimates want only the order)."""

    def run(self) -> tuple[list[Operation], int, float]:
        ops = list(self.block.ops)
        self.position = {op: i for i, op in enumerate(ops)}
        users, waiting = dependency_graph(self.block)
        self.start_of = pair_starts_and_dones(self.block)
        track = self.peak or self.memory_limit is not None
        if track:
            self.memory = MemoryTracker.for_block(self.block, use_counts(self.block, self.start_of))
        terminator = self.block.last_op
        # the ready ops by kind, each in original order: choosing is then O(1) per step
        # (a scan of one list only while the memory limit refuses its first ops)
        ready = Ready(self.position)
        for op in ops:
            if not waiting[op] and op is not terminator:
                ready.add(op)
        order: list[Operation] = []
        while ready:
            step = self.choose(ready)
            ready.remove(step)
            self.advance(step)
            if track:
                self.memory.place(step, consumed_values(step, self.start_of))
            order.append(step)
            for user in users[step]:
                waiting[user] -= 1
                if not waiting[user] and user is not terminator:
                    ready.add(user)
        if terminator is not None:
            order.append(terminator)
        return order, self.memory.peak, self.clock

    def fits(self, op: Operation) -> bool:
        if self.memory_limit is None:
            return True
        during, _ = self.memory.delta(op, consumed_values(op, self.start_of))
        return during <= self.memory_limit

    def choose(self, ready: Ready) -> Operation:
        """The next op to place, by the module docstring's rules."""
        slot_free = len(self.in_flight) < self.max_in_flight
        starts, dones = ready.starts, ready.dones
        if slot_free:
            if (start := next((s for s in starts if self.fits(s)), None)) is not None:
                return start
        elif starts:
            # A start waits for a slot: a collective that has already finished frees one
            # at no cost, so the waiting start begins earlier.
            finished = [d for d in dones if self.finish_of(self.start_of.get(d)) <= self.clock]
            if finished:
                return finished[0]
        if (compute := next((c for c in ready.computes if self.fits(c)), None)) is not None:
            return compute
        if not dones:
            raise ScheduleStuck
        return min(dones, key=lambda d: (self.finish_of(self.start_of.get(d)), self.position[d]))

    def advance(self, op: Operation) -> None:
        """Move the simulated clocks past `op`."""
        kind = _kind(op)
        if kind == START:
            self.issue(op)
        elif kind == DONE:
            self.retire(self.start_of.get(op))
        else:
            self.run_compute(op)

    def finish_of(self, start: Operation | None) -> float:
        return self.in_flight.get(start, self.clock) if start is not None else self.clock

    def issue(self, start: Operation) -> None:
        assert isinstance(start, collective.CollectiveOp)
        _, end = self._window(start)
        self.engine_free = max(self.engine_free, end)
        self.in_flight[start] = end

    def retire(self, start: Operation | None) -> None:
        if start is not None and start in self.in_flight:
            self.clock = max(self.clock, self.in_flight.pop(start))

    def _window(self, op: collective.CollectiveOp) -> tuple[float, float]:
        """(begin, end) of `op` issued now (the interpreter's rule, `timing.engine_window`)."""
        time, overlap = self.model.collective_time(op), self.model.collective_overlap(op)
        return engine_window(self.clock, self.engine_free, time, overlap)

    def run_compute(self, op: Operation) -> None:
        if isinstance(op, collective.CollectiveOp):  # a sync collective blocks the stream
            _, self.clock = self._window(op)
            self.engine_free = max(self.engine_free, self.clock)
        else:
            self.clock += self.model.op_cost(op).time


class Ready:
    """The ops ready to be placed: `_start`s, `done`s and the rest, each in original order."""

    def __init__(self, position: dict[Operation, int]):
        self.position = position
        self.starts: list[Operation] = []
        self.dones: list[Operation] = []
        self.computes: list[Operation] = []

    def __bool__(self) -> bool:
        return bool(self.starts or self.dones or self.computes)

    def _list(self, op: Operation) -> list[Operation]:
        kind = _kind(op)
        if kind == START:
            return self.starts
        return self.dones if kind == DONE else self.computes

    def add(self, op: Operation) -> None:
        bisect.insort(self._list(op), op, key=self.position.get)

    def remove(self, op: Operation) -> None:
        ops = self._list(op)
        del ops[bisect.bisect_left(ops, self.position[op], key=self.position.get)]


START, DONE, COMPUTE = 0, 1, 2
_KINDS: dict[type[Operation], int] = {}
"""Op class -> its kind for the scheduler (`_kind`): the isinstance checks against the
dialect's abstract classes, done once per class rather than per op and step."""


def _kind(op: Operation) -> int:
    kind = _KINDS.get(type(op))
    if kind is None:
        if isinstance(op, collective.CollectiveOp) and op.IS_START:
            kind = START
        else:
            kind = DONE if isinstance(op, collective.DoneOp) else COMPUTE
        kind = _KINDS[type(op)] = kind
    return kind


def _is_start(op: Operation) -> bool:
    return _kind(op) == START


@dataclass(frozen=True)
class SchedulePass(ModulePass):
    """Order each function's ops so collectives overlap compute (see the module docstring)."""

    name = "schedule"

    memory_limit: int | None = None
    """Bytes one device may hold live at once (default: no limit)."""
    max_in_flight: int = IN_FLIGHT
    """Collectives started and not yet done, at most."""
    chip: str = "v5e"
    """The chip whose costs drive the schedule."""
    report: bool = False
    """Print each function's peak memory and estimated time to stderr."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.memory_limit is not None and self.memory_limit <= 0:
            raise PassFailedException(
                f"schedule: memory-limit must be positive, got {self.memory_limit}"
            )
        if self.max_in_flight < 1:
            raise PassFailedException(
                f"schedule: max-in-flight must be at least 1, got {self.max_in_flight}"
            )
        try:
            chip = get_chip(self.chip)
        except UnknownChipError as e:
            raise PassFailedException(f"schedule: {e}") from None
        model = cached(CostModel(chip, find_mesh(op)))
        for function in op.ops:
            if not isinstance(function, func.FuncOp) or not function.body.blocks:
                continue
            for block in function.body.blocks:
                order, peak, time = self.schedule_block(block, model)
                set_order(block, order)
                if self.report:
                    print(
                        f"schedule @{function.sym_name.data}: peak memory {peak} bytes, "
                        f"estimated time {time:.3g} s",
                        file=sys.stderr,
                    )
        if self.report:
            for note in model.notes:
                print(f"schedule: note: {note}", file=sys.stderr)

    def schedule_block(self, block: Block, model: CostModel) -> tuple[list[Operation], int, float]:
        """The overlapping schedule; if it cannot fit the limit, the original order if that fits."""
        try:
            return BlockScheduler(block, model, self.memory_limit, self.max_in_flight).run()
        except ScheduleStuck:
            minimum = sync_peak(block)
            if self.memory_limit is not None and minimum > self.memory_limit:
                raise PassFailedException(
                    f"schedule: memory-limit={self.memory_limit} is below this program's "
                    f"minimum of {minimum} bytes (its peak in program order with "
                    "synchronous collectives)"
                ) from None
            return sync_order(block), minimum, float("nan")
