"""
Data-race detection for the level-T simulator: happens-before with vector clocks, as
Pallas interpret mode, but exact (every DMA is its own thread).

A load, a store, a DMA's read of its source and its write of its target are accesses
to a buffer. A DMA's clock starts from its issuer's; its completion is released into
the semaphores it signals, a wait acquires the semaphore's clock and a barrier joins its
members' clocks (`tick`, `join`, done by the effects). Two accesses to overlapping bytes
of one buffer, at least one a write, neither happening before the other, are a race.
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


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    return np.shares_memory(a, b)


def _contains(outer: np.ndarray, inner: np.ndarray) -> bool:
    if not outer.flags.c_contiguous:
        return False
    lo, hi = np.lib.array_utils.byte_bounds(outer)
    ilo, ihi = np.lib.array_utils.byte_bounds(inner)
    return lo <= ilo and ihi <= hi


def tick(vc: dict[Any, int], thread: Any) -> None:
    """`thread` did something: its own component advances."""
    vc[thread] = vc.get(thread, 0) + 1


def join(into: dict[Any, int], other: Mapping[Any, int]) -> None:
    """`into` now happens after everything `other` has seen (component-wise max)."""
    for k, v in other.items():
        if into.get(k, 0) < v:
            into[k] = v


def record_access(
    buf: Buffer,
    view: np.ndarray,
    write: bool,
    thread: Any,
    vc: Mapping[Any, int],
    what: str,
) -> Access | None:
    """
    Record an access of `view` of `buf` by `thread` at vector clock `vc`. Returns the
    earlier access it races with (nothing is recorded then), else None. Earlier accesses
    this one supersedes are dropped: whatever races with them also races with this one (it
    happens after them, covers their bytes, and writes if they did).
    """
    mine = vc.get(thread, 0)
    keep: list[Access] = []
    for a in buf.accesses:
        ordered = vc.get(a.thread, 0) >= a.clock
        if not ordered and (write or a.write) and a.thread != thread and _overlap(a.view, view):
            return a
        if ordered and (write or not a.write) and _contains(view, a.view):
            continue
        keep.append(a)
    keep.append(Access(thread, mine, write, view, what))
    buf.accesses = keep
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
) -> None:
    """`record_access`, raising the data-race error at `op` (on `device`) if it races."""
    desc = what or f"{'store' if write else 'load'} ({diag.at(op)}) on device {buf.device}"
    a = record_access(buf, view, write, thread, vc, desc)
    if a is not None:
        raise diag.error(
            op,
            device,
            f"data race on buffer '{buf.name}' ({buf.space.value}) of device "
            f"{buf.device}: the {desc} {'writes' if write else 'reads'} bytes that the "
            f"{a.what} {'writes' if a.write else 'reads'}, and neither happens "
            "before the other (no wait, semaphore or barrier orders them)",
        )


__all__ = ["Access", "check_access", "join", "record_access", "tick"]
