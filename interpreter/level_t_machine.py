"""
The level-T machine model (`level_t`'s module docstring says what it simulates): the
state of N chips, with no behaviour beyond bookkeeping.

* `Buffer`, `Ref`: an allocation (HBM argument or `tpu.alloc` scratch) and a view of it;
* `Semaphore`, `SemRef`: a counter (DMA or regular) and the kernel's name for one or an
  array of them;
* `Dma`, `Flows`: a transfer in flight and the shared resources it streams over (directed
  ICI links, each device's HBM), with their equal-share rates;
* `Torus` (from `hardware.topology`, the one machine model level S costs too): where
  each device sits and the dimension-order route between two of them;
* `DeviceState`: one device's clocks, counters, allocations and trace slices;
* `Events`: the event queue and the global clock;
* `Diagnostics`: an op's `file:line:col` and the `InterpreterError` raised at it;
* the array factories of the two modes (uninitialized, unmaterialized, placeholder).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from shardc.diagnostics import InterpreterError, error_at, op_position
from shardc.dialects.tpu import MemorySpace
from shardc.hardware.topology import Torus
from xdsl.ir import Operation

# Memory ---------------------------------------------------------------------------------


class Buffer:
    """One allocation on one device."""

    __slots__ = ("device", "name", "space", "array", "accesses", "op", "address", "freed")

    def __init__(self, device: int, name: str, space: MemorySpace, array: np.ndarray, op):
        self.device = device
        self.name = name
        self.space = space
        self.array = array
        self.address: int = array.__array_interface__["data"][0]
        """Where `array` starts (views' offsets are taken from it)."""
        self.accesses: list[Any] = []
        """`level_t_races.Access`es not yet superseded."""
        self.op = op
        self.freed: Operation | None = None
        """The `tpu.dealloc` that freed it (any later access is a use after free)."""

    def __repr__(self) -> str:
        return f"{self.name} ({self.space.value}) on device {self.device}"


@dataclass(frozen=True)
class Ref:
    """A view of a buffer: the numpy view and how to name it."""

    buffer: Buffer
    view: np.ndarray
    label: str

    @property
    def nbytes(self) -> int:
        return self.view.nbytes

    def describe(self) -> str:
        return f"'{self.label}' ({self.buffer.space.value}, {self.nbytes} bytes) on device {self.buffer.device}"


class Semaphore:
    __slots__ = ("device", "label", "dma", "value", "vc", "pending", "op", "unjoined")

    def __init__(self, device: int, label: str, dma: bool, op):
        self.device = device
        self.label = label
        self.dma = dma
        self.value = 0
        self.vc: dict[Any, int] = {}
        self.pending: list[list[Any]] = []
        """DMA semaphores: [dma, bytes not yet waited] in arrival order."""
        self.op = op
        self.unjoined: list[Dma] = []
        """DMAs that signalled since the owner's last wait (`level_t_races.acquire`)."""

    def describe(self) -> str:
        return f"semaphore '{self.label}' on device {self.device}"


@dataclass(frozen=True)
class SemRef:
    """A semaphore array (or one semaphore) as the kernel names it on its device."""

    sems: tuple[Semaphore, ...]
    shape: tuple[int, ...]
    base: str
    offset: int = 0
    """Flat offset of this view into the allocation (for the same slice on other devices)."""
    alloc: Operation | None = None


# DMAs and the network -------------------------------------------------------------------


class Dma:
    __slots__ = (
        "id",
        "op",
        "device",
        "target",
        "src",
        "dst",
        "send",
        "recv",
        "nbytes",
        "links",
        "hops",
        "remaining",
        "rate",
        "last",
        "version",
        "start",
        "drained",
        "data",
        "vc",
        "done",
        "release",
    )

    def __init__(
        self,
        id: int,
        op: Operation,
        device: int,
        target: int,
        src: Ref,
        dst: Ref,
        send: Semaphore | None,
        recv: Semaphore,
        links: list[Any],
        hops: int,
        now: float,
    ):
        self.id = id
        self.op = op
        self.device = device
        self.target = target
        self.src = src
        self.dst = dst
        self.send = send
        self.recv = recv
        self.nbytes = src.nbytes
        self.links = links
        self.hops = hops
        self.remaining = float(self.nbytes)
        self.rate = 0.0
        self.last = now
        self.version = 0
        self.start = now
        self.drained = now
        self.data: np.ndarray | None = None
        self.vc: dict[Any, int] = {}
        self.done = False
        self.release: list[tuple[int, int]] = []
        """(device, clock) of each wait that acquired its completion (`level_t_races.acquire`)."""


class Flows:
    """Active transfers on shared resources (directed ICI links, per-device HBM); a flow
    that lists a resource k times (an HBM-to-HBM copy: HBM twice) takes k equal shares."""

    def __init__(self, capacity: Mapping[str, float]):
        self.capacity = capacity
        self.active: list[Dma] = []

    def _advance(self, now: float) -> None:
        for f in self.active:
            f.remaining = max(0.0, f.remaining - f.rate * (now - f.last))
            f.last = now

    def _rerate(self) -> list[Dma]:
        """New rates; the flows whose rate changed (their drain events are stale)."""
        count: dict[Any, int] = {}
        for f in self.active:
            for link in f.links:
                count[link] = count.get(link, 0) + 1
        changed = []
        for f in self.active:
            rate = min(self.capacity[link[0]] / count[link] for link in f.links)
            if rate != f.rate:
                f.rate = rate
                f.version += 1
                changed.append(f)
        return changed

    def change(self, now: float, add: Dma | None = None, remove: Dma | None = None) -> list[Dma]:
        """
        Add/remove a flow at `now`; returns the flows whose drain time changed: those whose
        rate changed (a flow at its old rate keeps its drain event, so a transfer on its
        own resource costs no events when others start and end elsewhere).
        """
        self._advance(now)
        if add is not None:
            self.active.append(add)
        if remove is not None:
            self.active.remove(remove)
        return self._rerate()


# Devices --------------------------------------------------------------------------------


@dataclass
class DeviceState:
    """One device: its clocks, wait, vector clock, memory counters and trace slices."""

    index: int
    clock: float = 0.0
    busy: float = 0.0
    done: bool = False
    waiting: tuple[Operation, str, Any] | None = None
    """(op, kind, object) while blocked: kind "sem" (object: (Semaphore, amount)) or "barrier"."""
    wait_since: float = 0.0
    vc: dict[Any, int] = field(default_factory=dict)
    vmem: int = 0
    smem: int = 0
    peak_vmem: int = 0
    ici_bytes: int = 0
    local_bytes: int = 0
    token: int = 0
    """Only the latest scheduled resume of a device counts (wakes may be pushed twice)."""
    trace: list[tuple[str, str, float, float, dict[str, Any]]] = field(default_factory=list)
    allocs: dict[Operation, Any] = field(default_factory=dict)
    early: set[Operation] = field(default_factory=set)
    """Allocations a peer touched before this device reached their `tpu.alloc`."""


class Events:
    """
    The event queue of the discrete-event simulation: (time, sequence, kind, payload),
    popped in time order (ties in push order). Kinds: "resume" (a device continues),
    "drain" (a DMA's last byte leaves, if its rate has not changed since), "complete" (a
    DMA lands).
    """

    def __init__(self) -> None:
        self.now = 0.0
        self.queue: list[tuple[float, int, str, Any]] = []
        self.seq = 0
        self.popped = 0
        """Events simulated so far (bench/level_t_speed.py reports events per second)."""

    def push(self, t: float, kind: str, payload: Any) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (t, self.seq, kind, payload))

    def pop(self) -> tuple[str, Any]:
        """The next event; the clock advances to its time."""
        t, _, kind, payload = heapq.heappop(self.queue)
        self.popped += 1
        self.now = max(self.now, t)
        return kind, payload

    def schedule(self, dev: DeviceState, t: float) -> None:
        """Resume `dev` at `t` (only its latest scheduled resume counts)."""
        dev.token += 1
        self.push(t, "resume", (dev.index, dev.token))

    def wake(self, dev: DeviceState) -> None:
        """A blocked device re-checks what it waits for, now."""
        if dev.waiting is not None:
            self.schedule(dev, self.now)


class Diagnostics:
    """Where an op is (`file:line:col`) and the `InterpreterError` raised at it."""

    def __init__(self, filename: str | None):
        self.filename = filename or "<input>"
        self._where: dict[Operation, str] = {}

    def where(self, op: Operation) -> str:
        """`file:line:col` of `op` (worked out once per op: every trace slice names one)."""
        found = self._where.get(op)
        if found is None:
            found = self._where[op] = op_position(op) or self.filename
        return found

    def error(self, op: Operation, device: int | None, message: str) -> InterpreterError:
        prefix = f"on device {device}: " if device is not None else ""
        text = prefix + message
        if op_position(op) is not None:
            return InterpreterError(str(error_at(op, text)))
        return InterpreterError(f"{self.filename}: error: '{op.name}' op {text}")

    def at(self, op: Operation) -> str:
        return f"{op.name} at {self.where(op)}"


# Arrays ---------------------------------------------------------------------------------


_NO_BYTES = np.zeros(16, dtype=np.uint8)
"""The one real allocation every shape-only buffer of the timing mode points into."""


def unmaterialized(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """
    A buffer for the timing mode: shape, dtype and C-order strides over no storage (issue
    15 item 4: nothing proportional to tensor sizes is allocated, not even address space).
    Slices, reshapes, remote views and the race detector's byte overlaps
    (`np.shares_memory`, byte bounds) read only the array's metadata, so they stay exact;
    its bytes are never read or written (read-only, and the timing mode reads no values:
    `tpu.load` yields a placeholder, `memref.load` 0, DMAs move nothing). Every such
    buffer starts at the same fake address: byte overlaps are only compared within one
    buffer, and offsets are taken from a buffer's own start.
    """
    dtype = np.dtype(dtype)
    strides = []
    step = dtype.itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    # strided over raw bytes of the same width, then viewed as the dtype: numpy's
    # array interface (as_strided's path) cannot name ml_dtypes' f8E5M2 ('<f1')
    base = _NO_BYTES[: dtype.itemsize].view(np.dtype((np.void, dtype.itemsize)))
    out = np.lib.stride_tricks.as_strided(
        base, shape=shape, strides=tuple(reversed(strides)), writeable=False
    )
    return out.view(dtype)


def placeholder(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """A vector value in the timing mode: its shape and dtype, no storage (stride 0)."""
    return np.broadcast_to(np.zeros((), dtype=dtype), shape)


def uninitialized(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        return np.full(shape, np.iinfo(dtype).max, dtype=dtype)
    if dtype == np.bool_:
        return np.zeros(shape, dtype=dtype)
    return np.full(shape, np.nan, dtype=dtype)


__all__ = [
    "Buffer",
    "DeviceState",
    "Diagnostics",
    "Dma",
    "Events",
    "Flows",
    "Ref",
    "SemRef",
    "Semaphore",
    "Torus",
]
