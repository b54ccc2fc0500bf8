"""
Memory of the level-T machine: allocation (`tpu.alloc`: VMEM/SMEM buffers counted against
the chip's capacity, semaphore arrays), bounds-checked views, and the same allocation or
view on another device (remote DMA targets, remote semaphores).

Scratch exists from kernel entry, as Mosaic's scratch operands: a peer may push into or
signal it before its owner reaches the `tpu.alloc` (whose bytes are counted when the owner
reaches it). A remote reference names the same allocation and offsets on the target.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from shardc.dialects import tpu
from shardc.dialects.tpu import MemorySpace
from shardc.hardware.chips import Chip
from shardc.interpreter.level_t_machine import (
    Buffer,
    DeviceState,
    Diagnostics,
    Ref,
    Semaphore,
    SemRef,
    uninitialized,
    unmaterialized,
)
from shardc.interpreter.level_t_races import record_access
from shardc.interpreter.values import dtype_of
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation


class Memory:
    """Every device's allocations; `args[d]` are device d's argument (HBM) buffers."""

    def __init__(
        self,
        chip: Chip,
        devs: Sequence[DeviceState],
        args: Sequence[Sequence[Buffer]],
        diag: Diagnostics,
        values: bool,
    ):
        self.chip = chip
        self.devs = devs
        self.args = args
        self.diag = diag
        self.values = values
        self.sems: list[Semaphore] = []
        """Every semaphore allocated, on any device (checked at exit)."""

    def view(
        self, op: Operation, d: int, ref: Ref, idx: list[int], shape: Sequence[int], what: str
    ) -> np.ndarray:
        base = ref.view.shape
        lead = len(base) - len(shape)
        for i, (o, full) in enumerate(zip(idx, base, strict=False)):
            size = 1 if i < lead else shape[i - lead]
            if o < 0 or o + size > full:
                raise self.diag.error(
                    op,
                    d,
                    f"out of bounds: {what} of {'x'.join(map(str, shape)) or 'scalar'} at "
                    f"[{', '.join(map(str, idx))}] of {ref.describe()} of shape "
                    f"{'x'.join(map(str, base))}: dimension {i} spans {o}..{o + size}, "
                    f"size {full}",
                )
        key = tuple(idx[:lead]) + tuple(
            slice(o, o + s) for o, s in zip(idx[lead:], shape, strict=False)
        )
        return ref.view[key] if key else ref.view[...]  # a rank-0 ref: its 0-d view

    def sem_slice(self, op: Operation, d: int, src: SemRef, idx: list[int]) -> SemRef:
        rshape = op.result.type.get_shape()  # type: ignore[union-attr]
        lead = len(src.shape) - len(rshape)
        grid = np.arange(len(src.sems)).reshape(src.shape) if src.shape else np.arange(1)
        for i, (o, full) in enumerate(zip(idx, src.shape, strict=False)):
            size = 1 if i < lead else rshape[i - lead]
            if o < 0 or o + size > full:
                raise self.diag.error(
                    op,
                    d,
                    f"out of bounds: slice at [{', '.join(map(str, idx))}] of semaphore "
                    f"array '{src.base}' of shape {'x'.join(map(str, src.shape))}",
                )
        key = tuple(idx[:lead]) + tuple(
            slice(o, o + s) for o, s in zip(idx[lead:], rshape, strict=False)
        )
        picked = np.asarray(grid[key]).reshape(-1)
        sems = tuple(src.sems[int(i)] for i in picked)
        return SemRef(sems, tuple(rshape), src.base, src.offset + int(picked[0]), src.alloc)

    def allocation_on(self, target: int, op: Operation) -> Any:
        """
        Device `target`'s instance of the allocation made by `op`. Scratch exists from
        kernel entry (as Mosaic's scratch operands), so a device that pushes into or
        signals a peer that has not reached the `tpu.alloc` yet still finds it; the peer's
        own `tpu.alloc` then adopts it (and counts its bytes).
        """
        dev = self.devs[target]
        found = dev.allocs.get(op)
        if found is None:
            assert isinstance(op, tpu.AllocOp)
            found = self.alloc(dev, op, early=True)
            dev.early.add(op)
        return found

    def alloc(self, dev: DeviceState, op: tpu.AllocOp, early: bool = False) -> Any:
        if op in dev.early:
            dev.early.discard(op)
            found = dev.allocs[op]
            if isinstance(found, SemRef):
                return found
            self._count(dev, op, found.buffer.space, found.buffer.name, found.buffer.array.nbytes)
            return found
        ty = op.result.type
        name = op.result.name_hint or f"alloc@{self.diag.where(op)}"
        if isinstance(ty, tpu.SemaphoreTypeBase):
            shape = tuple(ty.get_shape())
            count = math.prod(shape)
            dma = isinstance(ty, tpu.DMASemaphoreType)
            sems = tuple(
                Semaphore(dev.index, name if not shape else f"{name}[{_index(i, shape)}]", dma, op)
                for i in range(count)
            )
            self.sems.extend(sems)
            ref = SemRef(sems, shape, name, 0, op)
            dev.allocs[op] = ref
            return ref
        assert isinstance(ty, MemRefType)
        space = tpu.memory_space_of(ty) or MemorySpace.VMEM
        shape, dtype = tuple(ty.get_shape()), dtype_of(ty.element_type)
        size = tpu.ref_bytes(ty)
        if not early:
            self._count(dev, op, space, name, size)
        data = uninitialized(shape, dtype) if self.values else unmaterialized(shape, dtype)
        buf = Buffer(dev.index, name, space, data, op)
        ref = Ref(buf, buf.array, name)
        dev.allocs[op] = ref
        return ref

    def _count(
        self, dev: DeviceState, op: Operation, space: MemorySpace, name: str, size: int
    ) -> None:
        if space is MemorySpace.VMEM:
            cap, used = self.chip.vmem_bytes, dev.vmem
        else:
            cap, used = self.chip.smem_bytes, dev.smem
        if used + size > cap:
            raise self.diag.error(
                op,
                dev.index,
                f"{space.value.upper()} over capacity: allocating '{name}' ({size} bytes) with "
                f"{used} bytes in use needs {used + size} bytes, the {self.chip.name} has "
                f"{cap} bytes of {space.value.upper()}",
            )
        if space is MemorySpace.VMEM:
            dev.vmem += size
            dev.peak_vmem = max(dev.peak_vmem, dev.vmem)
        else:
            dev.smem += size

    def dealloc(self, dev: DeviceState, op: Operation, ref: Any) -> None:
        if isinstance(ref, SemRef):
            for s in ref.sems:
                self.check_sem_zero(s, op)
            return
        buf = ref.buffer
        what = f"tpu.dealloc ({self.diag.at(op)}) on device {dev.index}"
        conflict = record_access(buf, buf.array, True, dev.index, dev.vc, what)
        if conflict is not None:
            raise self.diag.error(
                op,
                dev.index,
                f"use after free: buffer '{buf.name}' ({buf.space.value}) is freed while the "
                f"{conflict.what} may still {'write' if conflict.write else 'read'} it (no "
                "wait on its semaphore orders the free after it)",
            )
        buf.freed = op
        size = buf.array.nbytes
        if ref.buffer.space is MemorySpace.VMEM:
            dev.vmem -= size
        else:
            dev.smem -= size

    def one_sem(self, ref: SemRef) -> Semaphore:
        assert len(ref.sems) == 1, "semaphore operands are single semaphores"
        return ref.sems[0]

    def device_id(self, op: Operation, d: int, target: int) -> int:
        if not 0 <= target < len(self.devs):
            raise self.diag.error(
                op, d, f"device id {target} is out of range (the mesh has {len(self.devs)} devices)"
            )
        return target

    def remote_sem(self, op: Operation, d: int, ref: SemRef, target: int) -> Semaphore:
        """The semaphore `ref` denotes in the kernel instance on device `target`."""
        if target == d:
            return self.one_sem(ref)
        assert ref.alloc is not None
        return self.allocation_on(target, ref.alloc).sems[ref.offset]

    def remote_ref(self, op: Operation, d: int, ref: Ref, target: int) -> Ref:
        """The same view of the same allocation on device `target`."""
        if target == d:
            return ref
        buf = ref.buffer
        if buf.op is None:
            other_buf = self.args[target][self.args[d].index(buf)]
        else:
            other_buf = self.allocation_on(target, buf.op).buffer
        offset = ref.view.__array_interface__["data"][0] - buf.address
        # the view's own element type (a `tpu.memref_bitcast` of the buffer: a complex
        # buffer's parts), as raw bytes: numpy cannot rebuild some ml_dtypes (f8E5M2) from
        # their interface
        dtype = ref.view.dtype
        flat = other_buf.array.reshape(-1).view(np.uint8)[offset:]
        flat = flat[: len(flat) - len(flat) % dtype.itemsize]
        raw = flat.view(np.dtype((np.void, dtype.itemsize)))
        view = np.lib.stride_tricks.as_strided(
            raw, shape=ref.view.shape, strides=ref.view.strides
        ).view(dtype)
        return Ref(other_buf, view, ref.label)

    def check_sem_zero(self, sem: Semaphore, op: Operation) -> None:
        if sem.value == 0:
            return
        if sem.dma and sem.pending:
            dma = sem.pending[0][0]
            raise self.diag.error(
                dma.op,
                dma.device,
                f"DMA never waited: the DMA from device {dma.device} '{dma.src.label}' to "
                f"device {dma.target} '{dma.dst.label}' ({dma.nbytes} bytes) signalled "
                f"{sem.describe()}, which holds {sem.value} bytes at exit",
            )
        raise self.diag.error(
            sem.op,
            sem.device,
            f"{sem.describe()} is {sem.value} at exit (semaphores must end at zero)",
        )


def _index(flat: int, shape: tuple[int, ...]) -> str:
    """ "i, j" of element `flat` of a C-order array of `shape` (as `np.unravel_index`)."""
    out = []
    for n in reversed(shape):
        flat, i = divmod(flat, n)
        out.append(str(i))
    return ", ".join(reversed(out))
