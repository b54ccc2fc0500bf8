"""
The halo pipeline shared by the one-kernel lowerings of windowed ops (part of
`lower-to-tpu`): `hlo.convolution` (lowering/conv_kernel.py), `hlo.reduce_window`
(lowering/window_kernel.py) and `hlo.select_and_scatter` (lowering/select_scatter_kernel.py,
which also streams its source and keeps an operand-shaped accumulator), each on
channels-last data seen as [n, h, w, c] (a 1-D op has h = 1), read from HBM once.

Per image n of the batch (an `scf.for`, double-buffered), `HaloKernel.emit`:

* the image [h, w, c] is DMA'd into the interior of a VMEM slot [hp, wq, s * c] (s: the
  width stride; wq * s >= the padded width), whose frame was filled once before the loop
  with the padding value (`frame`: zeros for a convolution, the init value for a
  reduce_window), and the next image's DMA is started into the other slot;
* per output row (an `scf.for`) the op's `row` combines its window taps, each one
  `tpu.load` of [wo, c] at [oh * sh + i * dh, q, r * c] where j * dw = q * s + r (`tap`:
  the width stride is a reshape of the slot, so no strided load is needed), and the row
  is stored into a VMEM output slot, DMA'd to the result when the image is done (its slot
  reused two images later, after waiting for that DMA).

HBM traffic is the operand and the result once, what level S's roofline charges; the
extra work is the taps' VMEM loads (taps x the operand bytes, at VMEM bandwidth). The
DMAs, their semaphores and the VMEM bounds are checked by the level-T simulator as any
kernel's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shardc.dialects import tpu
from shardc.dialects.sizes import element_bytes
from shardc.dialects.tpu import memref_type
from shardc.hardware.vmem import halo_slot
from shardc.lowering.context import LoweringContext, Target
from shardc.lowering.emit import HBM, VMEM, reshape_view
from shardc.lowering.tile_index import (
    Ix,
    TileConstants,
    TileEmitter,
    emit_if,
    ix_add,
    ix_cmp,
    ix_mul,
    ix_rem,
    ix_value,
)
from xdsl.dialects import scf
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Attribute, SSAValue

NO_TARGET_VMEM = 128 * 2**20
"""The VMEM a halo kernel assumes when asked without a target (a v5e's)."""


def target_vmem(target: Target | None) -> int:
    """The VMEM bytes of `target` (`NO_TARGET_VMEM` without one), of which a halo kernel's
    slots may take `vmem.halo_budget`."""
    return target.vmem_bytes if target is not None else NO_TARGET_VMEM


@dataclass(frozen=True)
class HaloGeometry:
    """An op on channels-last data seen as 2-D: operand [n, h, w, c], window [kh, kw],
    result [n, ho, wo, o]; a 1-D one has h = kh = ho = 1."""

    n: int
    h: int
    w: int
    c: int
    kh: int
    kw: int
    o: int
    ho: int
    wo: int
    pads: tuple[tuple[int, int], tuple[int, int]]
    strides: tuple[int, int]
    dilation: tuple[int, int]
    elem: Attribute
    out_elem: Attribute

    @property
    def hp(self) -> int:
        """Rows of the VMEM slot: the padded height (`vmem.halo_slot`)."""
        return halo_slot(self.h, self.w, self.pads, self.strides)[0]

    @property
    def wq(self) -> int:
        """Width of the VMEM slot in units of the width stride (`vmem.halo_slot`)."""
        return halo_slot(self.h, self.w, self.pads, self.strides)[1]

    def slots_bytes(self) -> int:
        """Two operand slots and two result slots."""
        x = self.hp * self.wq * self.strides[1] * self.c * element_bytes(self.elem)
        return 2 * x + 2 * self.ho * self.wo * self.o * element_bytes(self.out_elem)

    def framed(self) -> bool:
        """Whether the slot has a frame around the image (filled once)."""
        return (self.hp, self.wq * self.strides[1]) != (self.h, self.w)


def as_2d(one: bool, values, fill):
    """A 1-D op's spatial values with the missing leading dimension's `fill`."""
    return (fill, *values) if one else tuple(values)


class HaloKernel:
    """The buffers and the loop of one halo kernel; subclasses give `setup` (what is
    loaded before the loop; returns the frame's value as a vector of the slot's shape,
    or None), `ready` (waits for what `setup` started, after the first image's DMA is
    on its way), `row` (one output row as a [wo, o] vector) and `buffers` (their own VMEM,
    deallocated at the end)."""

    def __init__(self, ctx: LoweringContext, x: SSAValue, out: SSAValue, g: HaloGeometry):
        self.g = g
        top = ctx.emitter.block
        self.e = e = TileEmitter(top, TileConstants(top))
        self.ctx = ctx
        sw = g.strides[1]
        self.x = reshape_view(e, ctx.buffers[x], (g.n, g.h, g.w, g.c), "halo_x")
        self.out = reshape_view(e, ctx.buffers[out], (g.n, g.ho, g.wo, g.o), "halo_out")
        self.xbuf = self.alloc((2, g.hp, g.wq, sw * g.c), g.elem, "halo_xv")
        self.obuf = self.alloc((2, g.ho, g.wo, g.o), g.out_elem, "halo_ov")
        self.xsems = e.op(tpu.AllocOp(tpu.DMASemaphoreType([2])), "halo_xsems")
        self.osems = e.op(tpu.AllocOp(tpu.DMASemaphoreType([2])), "halo_osems")
        self.own: list[SSAValue] = []

    def alloc(self, shape, elem: Attribute, hint: str) -> SSAValue:
        return self.e.op(tpu.AllocOp(memref_type(shape, elem, VMEM)), hint)

    def setup(self) -> SSAValue | None:
        raise NotImplementedError

    def ready(self) -> None:
        """After the first image's DMA has started: what `setup` started, waited for."""

    def row(self, r: TileEmitter, oh: Ix, xslot: SSAValue) -> SSAValue:
        raise NotImplementedError

    def _slice(self, b: TileEmitter, ref: SSAValue, at, shape, elem, space, hint) -> SSAValue:
        idx = [ix_value(b, i) for i in at]
        return b.op(tpu.MemRefSliceOp(ref, idx, memref_type(shape, elem, space)), hint)

    def _sem(self, b: TileEmitter, sems: SSAValue, slot: Ix) -> SSAValue:
        return b.op(tpu.MemRefSliceOp(sems, [ix_value(b, slot)], tpu.DMASemaphoreType()))

    def _x_slot(self, b: TileEmitter, slot: Ix) -> tuple[SSAValue, SSAValue]:
        """Slot `slot` of the operand as [hp, wq, s * c] and its interior as [h, w, c]."""
        g = self.g
        sw = g.strides[1]
        whole = self._slice(
            b, self.xbuf, [slot, 0, 0, 0], (g.hp, g.wq, sw * g.c), g.elem, VMEM, "halo_xslot"
        )
        flat = reshape_view(b, whole, (g.hp, g.wq * sw, g.c), "halo_xrows")
        inner = (g.pads[0][0], g.pads[1][0], 0)
        return whole, self._slice(b, flat, inner, (g.h, g.w, g.c), g.elem, VMEM, "halo_xin")

    def _fetch(self, b: TileEmitter, image: Ix) -> None:
        g = self.g
        slot = ix_rem(b, image, 2)
        src = self._slice(b, self.x, [image, 0, 0, 0], (g.h, g.w, g.c), g.elem, HBM, "halo_img")
        _, inner = self._x_slot(b, slot)
        b.op(tpu.DMAStartOp(src, inner, recv_sem=self._sem(b, self.xsems, slot)))

    def _o_slot(self, b: TileEmitter, slot: Ix) -> SSAValue:
        g = self.g
        shape = (g.ho, g.wo, g.o)
        return self._slice(b, self.obuf, [slot, 0, 0, 0], shape, g.out_elem, VMEM, "halo_oslot")

    def _wait_out(self, b: TileEmitter, image: Ix) -> None:
        self._wait_slot(b, image, self.osems, self._o_slot)

    def _wait_slot(
        self,
        b: TileEmitter,
        image: Ix,
        sems: SSAValue,
        view: Callable[[TileEmitter, Ix], SSAValue],
    ) -> None:
        """Wait for the DMA of `image`'s double-buffered slot (`view` of slot image % 2,
        under that slot's semaphore of `sems`)."""
        slot = ix_rem(b, image, 2)
        b.op(tpu.DMAWaitOp(self._sem(b, sems, slot), view(b, slot)))

    def tap(self, r: TileEmitter, xslot: SSAValue, oh: Ix, i: int, j: int) -> SSAValue:
        """The [wo, c] operand elements that window tap (i, j) reads for output row `oh`."""
        g = self.g
        (sh, sw), (dh, dw) = g.strides, g.dilation
        q, rem = divmod(j * dw, sw)
        row = ix_value(r, ix_add(r, ix_mul(r, oh, sh), i * dh))
        at = [row, r.index(q), r.index(rem * g.c)]
        return r.op(tpu.LoadOp(xslot, at, VectorType(g.elem, (g.wo, g.c))), "halo_tap")

    def emit(self) -> None:
        g, e = self.g, self.e
        frame = self.setup()
        if frame is not None and g.framed():
            for slot in (0, 1):
                e.op(tpu.StoreOp(frame, self._x_slot(e, slot)[0], [e.index(0)] * 3))
        self._fetch(e, 0)
        self.ready()
        b, n = e.loop(g.n, "img") if g.n > 1 else (e, 0)
        slot = ix_rem(b, n, 2)
        xslot, inner = self._x_slot(b, slot)
        b.op(tpu.DMAWaitOp(self._sem(b, self.xsems, slot), inner))
        emit_if(b, ix_cmp(b, n, "slt", g.n - 1), lambda t: self._fetch(t, ix_add(t, n, 1)))
        emit_if(b, ix_cmp(b, n, "sge", 2), lambda t: self._wait_out(t, n))
        oslot = self._o_slot(b, slot)
        r, oh = b.loop(g.ho, "oh") if g.ho > 1 else (b, 0)
        r.op(tpu.StoreOp(self.row(r, oh, xslot), oslot, [ix_value(r, oh), r.index(0), r.index(0)]))
        if g.ho > 1:
            r.op(scf.YieldOp())
        dst = self._slice(
            b, self.out, [n, 0, 0, 0], (g.ho, g.wo, g.o), g.out_elem, HBM, "halo_oimg"
        )
        b.op(tpu.DMAStartOp(oslot, dst, recv_sem=self._sem(b, self.osems, slot)))
        if g.n > 1:
            b.op(scf.YieldOp())
        for image in range(max(g.n - 2, 0), g.n):
            self._wait_out(e, image)
        for buf in (self.xbuf, self.obuf, *self.own):
            e.op(tpu.DeallocOp(buf))
