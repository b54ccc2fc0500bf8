"""
The DMA engines of the level-T machine: a DMA's life from `tpu.dma_start` to landing.

A local DMA streams over its device's HBM (once per end there: an HBM-to-HBM copy reads
and writes it, `hardware.cost.dma_hbm_passes`), a remote one over the ICI links of its route
(`Torus.route`); concurrent transfers share each resource equally (`Flows`), so every
start or end re-rates the others and reschedules their drain events. When its last byte
leaves, the source bytes are read and the send semaphore counts them; `hops *
chip.hop_latency` later (cut-through) the bytes land in the target and the receive
semaphore counts them. A DMA is a thread of the race detector: its clock starts from its
issuer's and is released into the semaphores it signals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from shardc.dialects import tpu
from shardc.hardware.chips import Chip
from shardc.hardware.cost import dma_hbm_passes
from shardc.interpreter.level_t_machine import (
    DeviceState,
    Diagnostics,
    Dma,
    Events,
    Flows,
    Ref,
    Semaphore,
    Torus,
)
from shardc.interpreter.level_t_races import acquire, check_access, join, tick
from xdsl.ir import Operation


class DmaEngine:
    """Every DMA of a run (`dmas`, in issue order) and the flows in flight."""

    def __init__(
        self,
        chip: Chip,
        devs: Sequence[DeviceState],
        torus: Torus,
        events: Events,
        diag: Diagnostics,
        values: bool,
        record_trace: bool,
    ):
        self.chip = chip
        self.devs = devs
        self.torus = torus
        self.events = events
        self.diag = diag
        self.values = values
        self.record_trace = record_trace
        self.dmas: list[Dma] = []
        self.flows = Flows({"ici": chip.ici_link_bw, "hbm": chip.hbm_bw})

    def start(
        self,
        dev: DeviceState,
        op: tpu.DMAStartOp,
        src: Ref,
        dst: Ref,
        target: int,
        send: Semaphore | None,
        recv: Semaphore,
    ) -> None:
        """Issue a DMA from `dev`'s `src` to `dst` on device `target` (already remote)."""
        d = dev.index
        now = self.events.now
        if target == d:
            # One share of the device's HBM per end there (`dma_hbm_passes`): an HBM-to-HBM
            # copy reads and writes it, so it drains at half the rate of a fetch.
            hbm = tpu.MemorySpace.HBM
            passes = dma_hbm_passes(src.buffer.space == hbm, dst.buffer.space == hbm)
            links: list[Any] = [("hbm", d)] * passes
            hops = 0
        else:
            links = self.torus.route(d, target)
            hops = len(links)
        dma = Dma(len(self.dmas), op, d, target, src, dst, send, recv, links, hops, now)
        self.dmas.append(dma)
        thread = ("dma", dma.id)
        dma.vc = dict(dev.vc)  # no component of its own: see `level_t_races`
        tick(dev.vc, d)
        label = (
            f"DMA ({self.diag.at(op)}) from device {d} '{src.label}' to device {target} "
            f"'{dst.label}'"
        )
        for ref, write in ((src, False), (dst, True)):
            buf = ref.buffer
            check_access(
                self.diag, op, buf.device, buf, ref.view, write, thread, dma.vc, label, dma.release
            )
        if target == d:
            dev.local_bytes += dma.nbytes
        else:
            dev.ici_bytes += dma.nbytes
        if dma.nbytes == 0:
            self.events.push(now, "complete", dma)
            dma.data = np.array(src.view, copy=True) if self.values else None
            return
        self._reflow(self.flows.change(now, add=dma))

    def _reflow(self, flows: list[Dma]) -> None:
        now = self.events.now
        for f in flows:
            t = now + (f.remaining / f.rate if f.rate > 0 else math.inf)
            self.events.push(t, "drain", (f, f.version))

    def drained(self, dma: Dma, version: int) -> None:
        """A "drain" event: the last byte left, unless the DMA was re-rated since."""
        if version != dma.version or dma.done:
            return
        now = self.events.now
        dma.drained = now
        if self.values:
            dma.data = np.array(dma.src.view, copy=True)
        if dma.send is not None:
            self._signal(dma.send, dma)
        self._reflow(self.flows.change(now, remove=dma))
        self.events.push(now + dma.hops * self.chip.hop_latency, "complete", dma)

    def complete(self, dma: Dma) -> None:
        """A "complete" event: the bytes land and the receive semaphore counts them."""
        dma.done = True
        if self.values:
            assert dma.data is not None
            dma.dst.view[...] = dma.data
            dma.data = None
        self._signal(dma.recv, dma)
        if self.record_trace:
            dev = self.devs[dma.device]
            kind = "local DMA" if dma.target == dma.device else f"DMA to {dma.target}"
            args = {"bytes": dma.nbytes, "at": self.diag.where(dma.op)}
            dev.trace.append(("dma", kind, dma.start, self.events.now, args))

    def _signal(self, sem: Semaphore, dma: Dma) -> None:
        sem.value += dma.nbytes
        sem.pending.append([dma, dma.nbytes])
        join(sem.vc, dma.vc)
        sem.unjoined.append(dma)
        wake_waiters(self.devs, self.events, sem)

    def take(self, dev: DeviceState, op: Operation, sem: Semaphore, amount: int) -> None:
        """`tpu.dma_wait` takes `amount` bytes: whole DMAs, in arrival order."""
        if not sem.dma:
            raise self.diag.error(
                op, dev.index, f"waits with tpu.dma_wait on regular {sem.describe()}"
            )
        need = amount
        while need > 0 and sem.pending:
            entry = sem.pending[0]
            if entry[1] > need:
                dma = entry[0]
                raise self.diag.error(
                    op,
                    dev.index,
                    f"byte count mismatch: waits for {amount} bytes on {sem.describe()}, but "
                    f"the DMA there ({self.diag.at(dma.op)} on device {dma.device}, "
                    f"'{dma.src.label}' -> '{dma.dst.label}') moved {dma.nbytes} bytes; a wait "
                    "takes whole DMAs",
                )
            need -= entry[1]
            sem.pending.pop(0)
        sem.value -= amount
        acquire(dev.vc, dev.index, sem)


def wake_waiters(devs: Sequence[DeviceState], events: Events, sem: Semaphore) -> None:
    """Every device blocked on `sem` re-checks it."""
    for other in devs:
        if other.waiting is not None and other.waiting[1] == "sem" and other.waiting[2][0] is sem:
            events.wake(other)


__all__ = ["DmaEngine", "wake_waiters"]
