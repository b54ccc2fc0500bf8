"""
`hlo.convolution` as one kernel on the MXU (part of `lower-to-tpu`, reached through
lowering/windows.py): the lhs read from HBM once, with its halo, and every kernel tap a
shifted VMEM load feeding a `tpu.matmul` that accumulates in vector registers.

Which convolutions: channels-last (`[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`, JAX's NHWC
/ HWIO, and the 1-D `[b, 0, f]x[0, i, o]->[b, 0, f]`), one feature and batch group, no lhs
dilation, padding >= 0, any stride, rhs dilation and window reversal, MXU element types,
whose buffers fit half the VMEM. The others (and those too large) keep the rewrite into
dots over the taps (lowering/convolution.py), which moves every tap's window through HBM.

The kernel (`_Conv`), per image n of the batch (an `scf.for`, double-buffered):

* the image [H, W, C] is DMA'd into the interior of a VMEM slot [Hp, Wq, s * C] (s: the
  width stride; Wq * s >= the padded width), whose frame was zeroed once before the loop
  (padding is zeros, as level S's pad), and the next image's DMA is started into the
  other slot;
* per output row (an `scf.for`), per tap (kh, kw): the [Wo, C] lhs rows it reads are
  one `tpu.load` at [oh * sh + kh * dh, q, r * C] where kw * dw = q * s + r (the width
  stride is a reshape of the slot, so no strided load is needed), multiplied with the
  tap's [C, O] matrix (loaded from VMEM once, before the loop) into the row's
  accumulator (f32 for bf16/f16; `tpu.matmul` adds into it);
* the row is rounded once to the result type and stored into a VMEM output slot, which
  is DMA'd to the result when the image is done (its slot reused two images later,
  after waiting for that DMA).

Numerics: each output element is the sum over taps and input features of products, in
the accumulation type, rounded once: level S's (interpreter/hlo_convolution.py) up to
the summation order for floats, integers exactly. HBM traffic is the lhs, the kernel and
the result once, as level S's roofline charges; the extra work is the taps' VMEM loads
(taps x the lhs bytes, at VMEM bandwidth).
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.dialects import hlo, tpu
from shardc.dialects.hlo import accumulation_type
from shardc.dialects.sizes import element_bytes
from shardc.dialects.tpu import memref_type
from shardc.lowering.context import LoweringContext, Target
from shardc.lowering.emit import HBM, VMEM, reshape_view, tensor_type
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
from shardc.lowering.vector_ops import convert_vector, splat_vector
from xdsl.dialects import scf
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Attribute, Operation, SSAValue

_MXU_TYPES = ("bf16", "f16", "f32", "i8", "i32", "ui8")


@dataclass(frozen=True)
class ConvGeometry:
    """A channels-last convolution seen as 2-D: lhs [n, h, w, c], rhs [kh, kw, c, o],
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
    reverse: tuple[bool, bool]
    elem: Attribute
    out_elem: Attribute

    @property
    def hp(self) -> int:
        """Rows of the VMEM slot: the padded height."""
        return self.h + sum(self.pads[0])

    @property
    def wq(self) -> int:
        """Width of the VMEM slot in units of the width stride."""
        return -(-(self.w + sum(self.pads[1])) // self.strides[1])

    def vmem_bytes(self) -> int:
        """Two lhs slots, two result slots and the whole kernel."""
        eb, ob = element_bytes(self.elem), element_bytes(self.out_elem)
        x = self.hp * self.wq * self.strides[1] * self.c * eb
        out = self.ho * self.wo * self.o * ob
        return 2 * x + 2 * out + self.kh * self.kw * self.c * self.o * eb

    def framed(self) -> bool:
        """Whether the slot has a frame around the image (zeroed once)."""
        return (self.hp, self.wq * self.strides[1]) != (self.h, self.w)


def _channels_last(op: hlo.ConvolutionOp) -> bool:
    rank = len(op.lhs_dims_)
    spatial = list(range(1, rank - 1))
    lhs_ok = op.lhs_dims_[:2] == (0, rank - 1) and list(op.lhs_dims_[2:]) == spatial
    out_ok = tuple(op.out_dims_) == tuple(op.lhs_dims_)
    rhs_ok = op.rhs_dims_[:2] == (rank - 2, rank - 1)
    return lhs_ok and out_ok and rhs_ok and list(op.rhs_dims_[2:]) == list(range(rank - 2))


def geometry(op: hlo.ConvolutionOp) -> ConvGeometry | None:
    """The kernel's view of `op`, or None if this kernel does not take it."""
    lhs, rhs, res = (tensor_type(v.type) for v in (op.lhs, op.rhs, op.result))
    if len(lhs.get_shape()) not in (3, 4) or not _channels_last(op):
        return None
    if op.feature_groups != 1 or op.batch_groups != 1 or any(d != 1 for d in op.lhs_dilation_):
        return None
    if any(p < 0 for pair in op.padding_ for p in pair) or lhs.element_type != rhs.element_type:
        return None
    if str(lhs.element_type) not in _MXU_TYPES or 0 in (*res.get_shape(), *rhs.get_shape()):
        return None
    one = len(lhs.get_shape()) == 3

    def two(values, pad):
        return (pad, *values) if one else tuple(values)

    n, *spatial, c = lhs.get_shape()
    *kernel, _, o = rhs.get_shape()
    _, *out, _ = res.get_shape()
    pads = tuple(op.padding_)
    return ConvGeometry(
        n,
        *two(spatial, 1),
        c,
        *two(kernel, 1),
        o,
        *two(out, 1),
        pads=((0, 0), *pads) if one else pads,  # pyright: ignore[reportArgumentType]
        strides=two(op.strides, 1),  # pyright: ignore[reportArgumentType]
        dilation=two(op.rhs_dilation_, 1),  # pyright: ignore[reportArgumentType]
        reverse=two((bool(r) for r in op.reversal), False),  # pyright: ignore[reportArgumentType]
        elem=lhs.element_type,
        out_elem=res.element_type,
    )


def takes(target: Target | None, op: Operation) -> bool:
    """Whether `op` lowers as this kernel (else: as dots over its taps)."""
    if not isinstance(op, hlo.ConvolutionOp):
        return False
    g = geometry(op)
    budget = (target.vmem_bytes if target is not None else 128 * 2**20) // 2
    return g is not None and g.vmem_bytes() <= budget


def check(target: Target, op: hlo.ConvolutionOp) -> None:
    g = geometry(op)
    assert g is not None
    target.check_vmem(op, f"{op.name} (lhs, result and kernel blocks)", g.vmem_bytes())


def lower(ctx: LoweringContext, op: hlo.ConvolutionOp) -> None:
    g = geometry(op)
    assert g is not None
    _Conv(ctx, op, g).emit()


class _Conv:
    """The buffers and the pieces of one convolution kernel (see the module docstring)."""

    def __init__(self, ctx: LoweringContext, op: hlo.ConvolutionOp, g: ConvGeometry):
        self.g = g
        top = ctx.emitter.block
        self.e = e = TileEmitter(top, TileConstants(top))
        sw = g.strides[1]
        self.x = reshape_view(e, ctx.buffers[op.lhs], (g.n, g.h, g.w, g.c), "conv_x")
        self.w = reshape_view(e, ctx.buffers[op.rhs], (g.kh, g.kw, g.c, g.o), "conv_w")
        self.out = reshape_view(e, ctx.buffers[op.result], (g.n, g.ho, g.wo, g.o), "conv_out")
        self.xbuf = self._alloc((2, g.hp, g.wq, sw * g.c), g.elem, "conv_xv")
        self.obuf = self._alloc((2, g.ho, g.wo, g.o), g.out_elem, "conv_ov")
        self.wbuf = self._alloc((g.kh, g.kw, g.c, g.o), g.elem, "conv_wv")
        self.xsems = e.op(tpu.AllocOp(tpu.DMASemaphoreType([2])), "conv_xsems")
        self.osems = e.op(tpu.AllocOp(tpu.DMASemaphoreType([2])), "conv_osems")
        self.wsem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "conv_wsem")

    def _alloc(self, shape, elem: Attribute, hint: str) -> SSAValue:
        return self.e.op(tpu.AllocOp(memref_type(shape, elem, VMEM)), hint)

    def _slice(self, b: TileEmitter, ref: SSAValue, at, shape, elem, space, hint) -> SSAValue:
        idx = [ix_value(b, i) for i in at]
        return b.op(tpu.MemRefSliceOp(ref, idx, memref_type(shape, elem, space)), hint)

    def _sem(self, b: TileEmitter, sems: SSAValue, slot: Ix) -> SSAValue:
        return b.op(tpu.MemRefSliceOp(sems, [ix_value(b, slot)], tpu.DMASemaphoreType()))

    def _x_slot(self, b: TileEmitter, slot: Ix) -> tuple[SSAValue, SSAValue]:
        """Slot `slot` of the lhs as [Hp, Wq, s * C] and its interior as [H, W, C]."""
        g = self.g
        sw = g.strides[1]
        whole = self._slice(
            b, self.xbuf, [slot, 0, 0, 0], (g.hp, g.wq, sw * g.c), g.elem, VMEM, "conv_xslot"
        )
        flat = reshape_view(b, whole, (g.hp, g.wq * sw, g.c), "conv_xrows")
        inner = (g.pads[0][0], g.pads[1][0], 0)
        return whole, self._slice(b, flat, inner, (g.h, g.w, g.c), g.elem, VMEM, "conv_xin")

    def _fetch(self, b: TileEmitter, image: Ix) -> None:
        g = self.g
        slot = ix_rem(b, image, 2)
        src = self._slice(b, self.x, [image, 0, 0, 0], (g.h, g.w, g.c), g.elem, HBM, "conv_img")
        _, inner = self._x_slot(b, slot)
        b.op(tpu.DMAStartOp(src, inner, recv_sem=self._sem(b, self.xsems, slot)))

    def _o_slot(self, b: TileEmitter, slot: Ix) -> SSAValue:
        g = self.g
        shape = (g.ho, g.wo, g.o)
        return self._slice(b, self.obuf, [slot, 0, 0, 0], shape, g.out_elem, VMEM, "conv_oslot")

    def _wait_out(self, b: TileEmitter, image: Ix) -> None:
        slot = ix_rem(b, image, 2)
        b.op(tpu.DMAWaitOp(self._sem(b, self.osems, slot), self._o_slot(b, slot)))

    def _prologue(self) -> list[SSAValue]:
        """The kernel DMA'd and its taps loaded; the frames zeroed; image 0 started."""
        g, e = self.g, self.e
        e.op(tpu.DMAStartOp(self.w, self.wbuf, recv_sem=self.wsem))
        if g.framed():
            shape = (g.hp, g.wq, g.strides[1] * g.c)
            zero = splat_vector(e, 0, VectorType(g.elem, shape))
            for slot in (0, 1):
                e.op(tpu.StoreOp(zero, self._x_slot(e, slot)[0], [e.index(0)] * 3))
        self._fetch(e, 0)
        e.op(tpu.DMAWaitOp(self.wsem, self.wbuf))
        taps = []
        for i in range(g.kh):
            for j in range(g.kw):
                ki = g.kh - 1 - i if g.reverse[0] else i
                kj = g.kw - 1 - j if g.reverse[1] else j
                at = [e.index(ki), e.index(kj), e.index(0), e.index(0)]
                taps.append(e.op(tpu.LoadOp(self.wbuf, at, VectorType(g.elem, (g.c, g.o)))))
        return taps

    def emit(self) -> None:
        g = self.g
        taps = self._prologue()
        b, n = self.e.loop(g.n, "img") if g.n > 1 else (self.e, 0)
        slot = ix_rem(b, n, 2)
        xslot, inner = self._x_slot(b, slot)
        b.op(tpu.DMAWaitOp(self._sem(b, self.xsems, slot), inner))
        emit_if(b, ix_cmp(b, n, "slt", g.n - 1), lambda t: self._fetch(t, ix_add(t, n, 1)))
        emit_if(b, ix_cmp(b, n, "sge", 2), lambda t: self._wait_out(t, n))
        oslot = self._o_slot(b, slot)
        self._rows(b, xslot, oslot, taps)
        dst = self._slice(
            b, self.out, [n, 0, 0, 0], (g.ho, g.wo, g.o), g.out_elem, HBM, "conv_oimg"
        )
        b.op(tpu.DMAStartOp(oslot, dst, recv_sem=self._sem(b, self.osems, slot)))
        if g.n > 1:
            b.op(scf.YieldOp())
        for image in range(max(g.n - 2, 0), g.n):
            self._wait_out(self.e, image)
        for buf in (self.xbuf, self.obuf, self.wbuf):
            self.e.op(tpu.DeallocOp(buf))

    def _rows(self, b: TileEmitter, xslot: SSAValue, oslot: SSAValue, taps) -> None:
        """Per output row: the taps' loads and matmuls into one accumulator, rounded once."""
        g = self.g
        (sh, sw), (dh, dw) = g.strides, g.dilation
        acc_elem = accumulation_type(g.elem)
        acc = splat_vector(b, 0, VectorType(acc_elem, (g.wo, g.o)))
        r, oh = b.loop(g.ho, "oh") if g.ho > 1 else (b, 0)
        base = ix_mul(r, oh, sh)
        vty = VectorType(g.elem, (g.wo, g.c))
        for t, tap in enumerate(taps):
            i, j = divmod(t, g.kw)
            q, rem = divmod(j * dw, sw)
            row = ix_value(r, ix_add(r, base, i * dh))
            at = [row, r.index(q), r.index(rem * g.c)]
            x = r.op(tpu.LoadOp(xslot, at, vty), "conv_tap")
            acc = r.op(tpu.MatmulOp(x, tap, acc), "conv_acc")
        out = convert_vector(r, acc, g.out_elem)
        r.op(tpu.StoreOp(out, oslot, [ix_value(r, oh), r.index(0), r.index(0)]))
        if g.ho > 1:
            r.op(scf.YieldOp())
