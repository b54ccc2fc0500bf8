"""
A lower bound on a block's step from its chains of collectives, device by device, before
and after a `micro-batch` split, without building the split (`ChainFloor`).

Why: `micro-batch`'s `SplitFloor` bounds a split by totals (the compute stream's, the
collective engine's), which charge a collective that may be in flight with others only
what it cannot overlap. Where a program's collectives are one-round collectives whose
members end apart (a permute over a line, whose wrap edge is long:
`CostModel.collective_landings`), the engine total charges each almost nothing while the
chain the step waits on pays every landing: collective-matmul's rings of permutes on v5e's
line made every plan of bench/partition_speed.py's chain look possibly faster and all
were estimated (issue 14 item 7). The step also waits for its longest chain of dependent
collectives, which this bound follows.

The bound, by the interpreter's rules (`step_estimate.DeviceClocks`), with every compute op
free (so that it holds for the block fused or not: fusion merges compute and keeps the
collectives and the dependencies between them):

* each value is ready on each device no earlier than its operands (an op waits for them);
* a collective issued on a device no earlier than its operands are ready there: a ring
  ends for its whole group `collective_time` after its group's last member is ready; a
  one-round collective (`Landings`) ends per device as its landings from those begins;
* a split op's chunks: each value made by one is a pair (the soonest any of its chunks is
  ready, the time all are: `lo`, `hi`); a chunk of a split op reads one chunk of each
  chunked operand, so its first chunk is ready no earlier than the operands' `lo` and its
  last no earlier than their `hi`; an op that is not split reads all chunks (`hi`);
* the k chunks of a split collective pass its group's engine one after the other: a chunk
  begins no earlier than `collective_overlap` before the engine is free of the chunk ahead
  (`timing.engine_window`; the engine's free time is the group's latest member's), so the
  last of them ends no earlier than the first's end plus (k - 1) times the chunk's time
  less its overlap (a device's own end, for a one-round chunk).

A step is at least the latest end of any value on any device. Each rule keeps or lowers
the times the interpreter's would give in any order of the block, so the bound holds
for every order the scheduler may pick.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Hashable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from shardc.dialects import collective
from shardc.hardware.cost import CostModel
from xdsl.ir import Block, Operation, SSAValue

Ready = float | np.ndarray
"""When a value is ready: the same on every device (a float) or per device id."""


@dataclass(frozen=True)
class Passage:
    """
    How a collective's ends follow its members' ready times on a mesh of `devices`:
    `groups` (device ids, one row per group); a ring (`landings` None) ends `time` after its
    group's latest member; a one-round collective ends per device as `ends0` after a common
    ready time (0 on devices outside its groups), or by its landings when ready times differ.
    `step`: per device, the least a further chunk of it behind this one adds (its own end
    less its overlap, `timing.engine_window`).
    """

    groups: np.ndarray
    time: float
    ends0: np.ndarray | None
    step: Ready
    landings_ends: Callable[[np.ndarray], np.ndarray] | None

    @staticmethod
    def of(op: collective.CollectiveOp, model: CostModel, devices: int) -> Passage | None:
        """`op`'s passage, or None if its groups name a device beyond the mesh."""
        groups = model.group_array(op)
        if groups.size and int(groups.max()) >= devices:
            return None
        overlap = model.collective_overlap(op)
        landings = model.collective_landings(op)
        if landings is None:
            time = model.collective_time(op)
            return Passage(groups, time, None, max(time - overlap, 0.0), None)
        members = np.zeros(max(devices, landings.size), dtype=bool)
        members[groups.ravel()] = True
        begins = np.where(members, 0.0, -math.inf)
        ends0 = np.where(members, landings.ends(begins), 0.0)[:devices]
        step = np.where(members[:devices], np.maximum(ends0 - overlap, 0.0), 0.0)

        def ends(ready: np.ndarray) -> np.ndarray:
            begins = np.full(max(devices, landings.size), -math.inf)
            begins[:devices] = ready
            begins[~members] = -math.inf
            return np.where(members[:devices], landings.ends(begins)[:devices], ready)

        return Passage(groups, float(ends0.max(initial=0.0)), ends0, step, ends)

    @cached_property
    def _ends0_range(self) -> tuple[float, float]:
        """The least and the most of `ends0` (one-round, else (0, 0))."""
        if self.ends0 is None or not self.ends0.size:
            return 0.0, 0.0
        return float(self.ends0.min()), float(self.ends0.max())

    def end(self, ready: Ready, devices: int) -> Ready:
        """Each device's end of the collective, its members ready at `ready` (a float where
        every device ends together: the common case costs no array operation after)."""
        if isinstance(ready, float):
            ends0 = self.ends0
            if ends0 is None:
                if self.groups.size == devices:  # `_end`'s float case, before any array
                    return ready + self.time
            elif ends0.size:
                # the least and most of `ready + ends0` without the array (a float sum is
                # monotone: the least of the sums is the sum with the least)
                low, high = self._ends0_range
                if ready + low == ready + high:
                    return ready + low
                return ready + ends0
        out = self._end(ready, devices)
        if isinstance(out, np.ndarray):
            low, high = out.min(), out.max()
            if low == high:
                return float(low)
        return out

    def _end(self, ready: Ready, devices: int) -> Ready:
        if self.ends0 is not None:
            if isinstance(ready, float):
                return ready + self.ends0
            assert self.landings_ends is not None
            return np.maximum(self.landings_ends(ready), ready)
        if isinstance(ready, float) and self.groups.size == devices:
            return ready + self.time
        ready = np.full(devices, ready) if isinstance(ready, float) else ready
        out = ready.copy()
        rows = self.groups
        out[rows] = np.maximum(ready[rows].max(axis=1, keepdims=True) + self.time, ready[rows])
        return out


def _max(a: Ready, b: Ready) -> Ready:
    if isinstance(a, float) and isinstance(b, float):
        return max(a, b)
    return np.maximum(a, b)


def _min(a: Ready, b: Ready) -> Ready:
    if isinstance(a, float) and isinstance(b, float):
        return min(a, b)
    return np.minimum(a, b)


@dataclass
class Segment:
    """
    The collectives issued between two anchors (`ChainFloor`): each is a descendant of the
    anchor before (so it begins once that one has ended, on each device) and an ancestor of
    the one after, and they pass the engine one after the other. `first`: the soonest any
    of them can end (issued at the anchor's end); `steps`: the sum of what each adds behind
    another (`Passage.step`, per chunk), `most`: the largest of them (the first issued adds
    its own end instead).
    """

    start: Ready = 0.0
    first: Ready = math.inf
    steps: Ready = 0.0
    most: Ready = 0.0

    def add(self, passage: Passage, count: int, devices: int) -> None:
        self.first = _min(self.first, passage.end(self.start, devices))
        self.steps = self.steps + count * passage.step
        self.most = _max(self.most, passage.step)

    def end(self) -> Ready:
        """The soonest the last of them can end (the anchor's begin: `start` if none)."""
        if isinstance(self.first, float) and self.first == math.inf:
            return self.start
        return _max(self.start, self.first + self.steps - self.most)


def _operands_ready(
    operands: tuple[int, ...], lo: list[Ready], hi: list[Ready]
) -> tuple[Ready, Ready]:
    """(the latest of `lo`, the latest of `hi`) over an op's `operands` (numbers of values
    made in the block; arguments are ready at 0 and not listed): values ready at 0
    (constants) are skipped and a single other operand's times are passed on as they are,
    so that a chain of compute ops costs no array operation (at 10k ops the walk was most
    of the bound)."""
    first: Ready | None = None
    last: Ready | None = None
    for v in operands:
        h = hi[v]
        if h.__class__ is float and h <= 0.0:
            continue
        f = lo[v]
        if last is None or first is None:
            first, last = f, h
        else:
            first, last = _max(first, f), _max(last, h)
    if last is None or first is None:
        return 0.0, 0.0
    return first, last


_Step = tuple[tuple[int, ...], tuple[int, ...], "collective.CollectiveOp | None", bool]
"""One op of the block as `ChainFloor.split` walks it: the numbers of its operands made in
the block and of its results, for a collective the op (else None) and whether it is
ordered (an anchor unless split). A tuple, unpacked in the walk (at 10k ops the walk's
attribute reads were a fifth of it)."""


_UNKNOWN: Any = object()
"""A collective step's passage not found yet (`ChainFloor._whole`)."""


def _latest(ready: Ready) -> float:
    return float(ready.max()) if isinstance(ready, np.ndarray) else ready


class ChainFloor:
    """
    The module docstring's bound for one block: `whole()` for the block as it is,
    `split(ops, k, chunk)` for it split into k chunks at `ops` (a `micro-batch` class's
    split ops), `chunk(op)` giving the passage of one chunk of a split collective.
    Passages are remembered by the cost model's key of the op where it has one.
    """

    def __init__(
        self, block: Block, model: CostModel, devices: int, ordered: set[Operation] | None = None
    ):
        self.block = block
        self.ordered = ordered if ordered is not None else set()
        """The block's ordered collectives (`micro_batch.ordered_collectives`): those not
        split are the anchors of `Segment`s."""
        self.model = model
        self.devices = devices
        self.passages: dict[Hashable, Passage | None] = {}
        self.by_op: dict[Operation, Passage | None] = {}
        self.whole_bound: float | None = None
        self._steps: list[_Step] | None = None
        self._whole: list[Passage | None] = []
        """Each collective step's passage (`passage`), by step number, found on the first
        walk (None for a compute op; `_UNKNOWN` until found)."""
        self._numbers: dict[Operation, int] = {}
        self._values = 0

    def steps(self) -> list[_Step]:
        """The block's ops numbered, their values numbered, once for every `split` (the
        walk then reads lists, not the block's linked ops and hashed values: it runs once
        per (class, chunk count)). The block must not change between calls: `micro-batch`
        estimates its splits on copies and restores what it touches in place."""
        if self._steps is None:
            values: dict[SSAValue, int] = {}
            steps: list[_Step] = []
            for i, op in enumerate(self.block.ops):
                operands = tuple(values[v] for v in op.operands if v in values)
                results: list[int] = []
                for r in op.results:
                    results.append(values.setdefault(r, len(values)))
                coll = op if isinstance(op, collective.CollectiveOp) else None
                steps.append((operands, tuple(results), coll, op in self.ordered))
                self._numbers[op] = i
            self._steps, self._values = steps, len(values)
            self._whole = [_UNKNOWN if step[2] is not None else None for step in steps]
        return self._steps

    def passage(self, op: collective.CollectiveOp) -> Passage | None:
        """`op`'s passage, remembered by op and by the cost model's key of it."""
        if op in self.by_op:
            return self.by_op[op]
        found = self.by_op[op] = self._passage(op)
        return found

    def _passage(self, op: collective.CollectiveOp) -> Passage | None:
        key_of = getattr(self.model, "key", None)
        key = key_of(op) if key_of is not None else None
        if key is not None and key in self.passages:
            return self.passages[key]
        found = Passage.of(op, self.model, self.devices)
        if key is not None:
            self.passages[key] = found
        return found

    def whole(self) -> float:
        """The bound for the block as it is (remembered)."""
        if self.whole_bound is None:
            self.whole_bound = self.split(set(), 1, lambda op: None)
        return self.whole_bound

    def split(
        self,
        split_ops: Collection[Operation],
        k: int,
        chunk: Callable[[collective.CollectiveOp], Passage | None],
    ) -> float:
        """The bound for the block with `split_ops` made k chunks each (`chunk`: a split
        collective's chunk passage); 0.0 where a collective's passage is unknown."""
        steps = self.steps()
        split_at = [False] * len(steps)
        for op in split_ops:
            i = self._numbers.get(op)
            if i is not None:
                split_at[i] = True
        whole, devices = self._whole, self.devices
        lo: list[Ready] = [0.0] * self._values
        hi: list[Ready] = [0.0] * self._values
        latest = 0.0
        segment = Segment()
        for i, (operands, results, op, ordered) in enumerate(steps):
            split = split_at[i]
            if op is None:
                # a free compute op: `_operands_ready` inlined (a whole op reads whole
                # operands: `hi` for both), for most of the block's ops (at 10k ops the
                # walk was most of micro-batch's floor)
                first = last = None
                for v in operands:
                    h = hi[v]
                    if h.__class__ is float and h <= 0.0:
                        continue
                    f = lo[v] if split else h
                    if last is None or first is None:
                        first, last = f, h
                    else:
                        first, last = _max(first, f), _max(last, h)
                if last is None or first is None:
                    first = last = 0.0
                for r in results:
                    lo[r], hi[r] = first, last
                continue
            first, last = _operands_ready(operands, lo if split else hi, hi)
            if split:
                passage = chunk(op)
            else:
                passage = whole[i]
                if passage is _UNKNOWN:
                    passage = whole[i] = self.passage(op)
            if passage is None:
                return 0.0
            if split:
                segment.add(passage, k, devices)
                end_first = passage.end(first, devices)
                last = _max(passage.end(last, devices), end_first + (k - 1) * passage.step)
                first = end_first
            elif ordered:  # an anchor: it waits for the segment before it
                last = passage.end(_max(last, segment.end()), devices)
                first = last
                segment = Segment(start=last)
            else:  # a whole op's first chunk is its whole (`first` unused)
                segment.add(passage, 1, devices)
                last = passage.end(last, devices)
                first = last
            # a free compute op adds nothing
            latest = max(latest, last if last.__class__ is float else float(last.max()))
            for r in results:
                lo[r], hi[r] = first, last
        return max(latest, _latest(segment.end()))
