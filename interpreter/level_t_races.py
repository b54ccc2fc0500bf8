"""
Data-race detection for the level-T simulator: happens-before with vector clocks, as
Pallas interpret mode, but exact (every DMA is its own thread).

A load, a store, a DMA's read of its source and its write of its target are accesses
to a buffer. A DMA's clock starts from its issuer's; its completion is released into
the semaphores it signals, a wait acquires the semaphore's clock and a barrier joins its
members' clocks (`tick`, `join`, done by the effects). Two accesses to overlapping bytes
of one buffer, at least one a write, neither happening before the other, are a race.

Cost per event, not per DMA so far (issue 15 item 4): a DMA is not a component of the
vector clocks (every clock would grow by one per DMA and every copy and join with it,
quadratic in the DMAs of a run). A DMA's completion reaches other threads only through
the semaphores it signals, whose clocks only their owner device acquires (a wait names
a local semaphore). So when the owner acquires a semaphore (`acquire`), it ticks and
every DMA that signalled it since its last acquire records (owner, that clock) in its
`release`: a thread has seen the DMA complete iff its clock reaches one of those (the
owner ticks after every copy of its clock, so only copies made after the acquire reach
it). The clocks have one component per device: copies and joins cost O(devices).
Overlaps compare boxes (a view as index intervals of its buffer's shape), not
bytes, with `np.shares_memory` only for views that are not boxes (reshaped ones).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from shardc.interpreter.level_t_machine import Buffer, Diagnostics
from xdsl.ir import Operation


@dataclass
class Access:
    """One recorded access: by which thread, at its clock, reading or writing which bytes."""

    thread: Any
    clock: int
    write: bool
    view: np.ndarray
    what: str
    """e.g. "tpu.store at f:3:4 on device 1"."""
    release: list[tuple[Any, int]] | None = None
    """A DMA's access: the (device, clock) pairs its completion was acquired at so far
    (`acquire`); a thread whose clock reaches one has seen the access."""
    box: tuple[tuple[int, int], ...] | None = None
    """The view as [lo, hi) index intervals of its buffer's shape (None: not a box)."""
    seq: int = 0
    """Its place in its buffer's `AccessIndex` (recording order)."""

    def seen_by(self, thread: Any, vc: Mapping[Any, int]) -> bool:
        """Whether `thread`, at `vc`, happens after this access."""
        if self.release is None:
            return vc.get(self.thread, 0) >= self.clock
        return thread == self.thread or any(vc.get(t, 0) >= c for t, c in self.release)


def acquire(vc: dict[Any, int], thread: Any, sem: Any) -> None:
    """
    `thread` (at `vc`) waits on `sem`, which it owns: it happens after every signal so
    far, and the DMAs that signalled since its last wait are seen from its next clock on.
    """
    assert sem.device == thread, "a wait acquires a semaphore of its own device"
    join(vc, sem.vc)
    tick(vc, thread)
    seen = (thread, vc[thread])
    for dma in sem.unjoined:
        dma.release.append(seen)
    sem.unjoined.clear()


def box_of(buf: Buffer, view: np.ndarray) -> tuple[tuple[int, int], ...] | None:
    """
    `view` as index intervals of `buf`'s (C-order) shape, or None if it is not such a box
    (a reshape that merges or splits dimensions, a view as elements of another width):
    its start offset split into buffer coordinates, each view dimension longer than one
    matched to the buffer dimension of the same stride.
    """
    base = buf.array
    offset = view.__array_interface__["data"][0] - buf.address
    if offset < 0 or not base.flags.c_contiguous:
        return None
    if view.dtype.itemsize != base.dtype.itemsize:
        return None  # a bitcast view (a complex buffer's parts): parts of one element
    lo = []
    for stride in base.strides:
        q, offset = divmod(offset, stride) if stride else (0, offset)
        lo.append(q)
    hi = [x + 1 for x in lo]
    for n, stride in zip(view.shape, view.strides, strict=True):
        if n == 1:
            continue
        if n == 0:
            return None  # empty: np.shares_memory says it overlaps nothing
        try:
            k = base.strides.index(stride)
        except ValueError:
            return None
        if hi[k] != lo[k] + 1 or lo[k] + n > base.shape[k]:
            return None
        hi[k] = lo[k] + n
    return tuple(zip(lo, hi, strict=True))


def _overlap(a: Access, view: np.ndarray, box: tuple[tuple[int, int], ...] | None) -> bool:
    if a.box is not None and box is not None:
        return all(l0 < h1 and l1 < h0 for (l0, h0), (l1, h1) in zip(a.box, box, strict=True))
    return np.shares_memory(a.view, view)


def _contains(outer: np.ndarray, box: tuple[tuple[int, int], ...] | None, inner: Access) -> bool:
    if box is not None and inner.box is not None:
        return all(l0 <= l1 and h1 <= h0 for (l0, h0), (l1, h1) in zip(box, inner.box, strict=True))
    if not outer.flags.c_contiguous:
        return False
    lo, hi = np.lib.array_utils.byte_bounds(outer)
    ilo, ihi = np.lib.array_utils.byte_bounds(inner.view)
    return lo <= ilo and ihi <= hi


def tick(vc: dict[Any, int], thread: Any) -> None:
    """`thread` did something: its own component advances."""
    vc[thread] = vc.get(thread, 0) + 1


def join(into: dict[Any, int], other: Mapping[Any, int]) -> None:
    """`into` now happens after everything `other` has seen (component-wise max)."""
    for k, v in other.items():
        if into.get(k, 0) < v:
            into[k] = v


class AccessIndex:
    """
    A buffer's recorded accesses, indexed by the rows (first dimension) their boxes
    cover, so that an access is compared only with those that may overlap it: a program
    that touches N distinct rows (a gather's DMA per row) costs O(N) comparisons in all,
    not O(N^2). Rows are grouped in `_BUCKETS` buckets; an access that is not a box, or
    spans more than `_WIDE` buckets, is in `wide` and compared with every access.
    """

    __slots__ = ("buckets", "rows", "seq", "wide", "width")

    def __init__(self, shape: tuple[int, ...]):
        self.rows = shape[0] if shape else 1
        self.width = max(1, -(-self.rows // _BUCKETS))
        self.buckets: dict[int, dict[int, Access]] = {}
        self.wide: dict[int, Access] = {}
        self.seq = 0

    def _keys(self, box: tuple[tuple[int, int], ...] | None) -> range | None:
        if box is None or not box:
            return None
        lo, hi = box[0]
        keys = range(lo // self.width, (hi - 1) // self.width + 1)
        return keys if len(keys) <= _WIDE else None

    def candidates(self, box: tuple[tuple[int, int], ...] | None) -> list[Access]:
        """The accesses that may overlap `box` (all, for a wide one), oldest first."""
        keys = self._keys(box)
        if keys is None:
            found = {a.seq: a for b in self.buckets.values() for a in b.values()}
        else:
            found = {a.seq: a for k in keys for a in self.buckets.get(k, {}).values()}
        found.update((a.seq, a) for a in self.wide.values())
        return [found[k] for k in sorted(found)]

    def add(self, a: Access) -> None:
        self.seq += 1
        a.seq = self.seq
        keys = self._keys(a.box)
        if keys is None:
            self.wide[a.seq] = a
            return
        for k in keys:
            self.buckets.setdefault(k, {})[a.seq] = a

    def remove(self, a: Access) -> None:
        keys = self._keys(a.box)
        if keys is None:
            del self.wide[a.seq]
            return
        for k in keys:
            bucket = self.buckets[k]
            del bucket[a.seq]
            if not bucket:
                del self.buckets[k]

    def __len__(self) -> int:
        return len(self.wide) + sum(len(b) for b in self.buckets.values())


_BUCKETS = 1024
"""Row buckets of an `AccessIndex` (buffers of fewer rows: one row per bucket)."""
_WIDE = 8
"""An access spanning more buckets than this is compared with every access."""


def record_access(
    buf: Buffer,
    view: np.ndarray,
    write: bool,
    thread: Any,
    vc: Mapping[Any, int],
    what: str,
    dma_release: list[Any] | None = None,
) -> Access | None:
    """
    Record an access of `view` of `buf` by `thread` at vector clock `vc` (a DMA's: its
    `dma_release` list). Returns the earlier access it races with (nothing is recorded
    then), else None. Earlier accesses this one supersedes are dropped: whatever races
    with them also races with this one (it happens after them, covers their bytes, and
    writes if they did). Only the accesses whose rows may overlap are compared
    (`AccessIndex`).
    """
    mine = vc.get(thread, 0)
    box = box_of(buf, view)
    if not isinstance(buf.accesses, AccessIndex):
        buf.accesses = AccessIndex(buf.array.shape)
    index = buf.accesses
    dropped: list[Access] = []
    for a in index.candidates(box):
        ordered = a.seen_by(thread, vc)
        if not ordered and (write or a.write) and a.thread != thread and _overlap(a, view, box):
            return a
        if ordered and (write or not a.write) and _contains(view, box, a):
            dropped.append(a)
    for a in dropped:
        index.remove(a)
    index.add(Access(thread, mine, write, view, what, dma_release, box))
    return None


def check_access(
    diag: Diagnostics,
    op: Operation,
    device: int,
    buf: Buffer,
    view: np.ndarray,
    write: bool,
    thread: Any,
    vc: Mapping[Any, int],
    what: str | None = None,
    dma_release: list[Any] | None = None,
) -> None:
    """`record_access`, raising the data-race error at `op` (on `device`) if it races."""
    desc = what or f"{'store' if write else 'load'} ({diag.at(op)}) on device {buf.device}"
    if buf.freed is not None:
        raise diag.error(
            op,
            device,
            f"use after free: the {desc} {'writes' if write else 'reads'} buffer "
            f"'{buf.name}' ({buf.space.value}) of device {buf.device}, freed by the "
            f"{diag.at(buf.freed)}",
        )
    a = record_access(buf, view, write, thread, vc, desc, dma_release)
    if a is not None:
        raise diag.error(
            op,
            device,
            f"data race on buffer '{buf.name}' ({buf.space.value}) of device "
            f"{buf.device}: the {desc} {'writes' if write else 'reads'} bytes that the "
            f"{a.what} {'writes' if a.write else 'reads'}, and neither happens "
            "before the other (no wait, semaphore or barrier orders them)",
        )


__all__ = [
    "Access",
    "AccessIndex",
    "acquire",
    "box_of",
    "check_access",
    "join",
    "record_access",
    "tick",
]
