"""
`hlo.convolution` as one kernel on the MXU (part of `lower-to-tpu`, reached through
lowering/windows.py): the lhs read from HBM once per image, with its halo
(lowering/halo.py: a zero-framed VMEM slot, double-buffered), and every kernel tap a
shifted VMEM load feeding a `tpu.matmul` that accumulates in vector registers.

Which convolutions: channels-last (`[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`, JAX's NHWC
/ HWIO, and the 1-D `[b, 0, f]x[0, i, o]->[b, 0, f]`), one feature and batch group, no lhs
dilation, padding >= 0, any stride, rhs dilation and window reversal, MXU element types,
whose buffers fit half the VMEM. The others (and those too large) keep the rewrite into
dots over the taps (lowering/convolution.py), which moves every tap's window through HBM.

Per output row: the row's accumulator (f32 for bf16/f16) starts at zero; per tap (kh,
kw, row-major) the [wo, c] lhs rows it reads times the tap's [c, o] matrix (the whole
kernel DMA'd to VMEM and its taps loaded once, before the loop; reversal picks the
flipped tap) are added into it by `tpu.matmul`; the row is rounded once to the result
type.

Numerics: each output element is the sum over taps and input features of products, in
the accumulation type, rounded once: level S's (interpreter/hlo_convolution.py) up to
the summation order for floats, integers exactly.
"""

from __future__ import annotations

from shardc.dialects import hlo, tpu
from shardc.dialects.sizes import element_bytes
from shardc.hardware.vmem import halo_budget
from shardc.lowering.context import LoweringContext, Target
from shardc.lowering.emit import reshape_view, tensor_type
from shardc.lowering.halo import HaloGeometry, HaloKernel, as_2d, target_vmem
from shardc.lowering.tile_index import Ix, TileEmitter
from shardc.lowering.vector_ops import convert_vector, splat_vector
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Operation, SSAValue

_MXU_TYPES = ("bf16", "f16", "f32", "i8", "i32", "ui8")


def _channels_last(op: hlo.ConvolutionOp) -> bool:
    rank = len(op.lhs_dims_)
    spatial = list(range(1, rank - 1))
    lhs_ok = op.lhs_dims_[:2] == (0, rank - 1) and list(op.lhs_dims_[2:]) == spatial
    out_ok = tuple(op.out_dims_) == tuple(op.lhs_dims_)
    rhs_ok = op.rhs_dims_[:2] == (rank - 2, rank - 1)
    return lhs_ok and out_ok and rhs_ok and list(op.rhs_dims_[2:]) == list(range(rank - 2))


def geometry(op: hlo.ConvolutionOp) -> HaloGeometry | None:
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
    n, *spatial, c = lhs.get_shape()
    *kernel, _, o = rhs.get_shape()
    _, *out, _ = res.get_shape()
    return HaloGeometry(
        n,
        *as_2d(one, spatial, 1),
        c,
        *as_2d(one, kernel, 1),
        o,
        *as_2d(one, out, 1),
        pads=as_2d(one, op.padding_, (0, 0)),
        strides=as_2d(one, op.strides, 1),
        dilation=as_2d(one, op.rhs_dilation_, 1),
        elem=lhs.element_type,
        out_elem=res.element_type,
    )


def _vmem_bytes(g: HaloGeometry) -> int:
    return g.slots_bytes() + g.kh * g.kw * g.c * g.o * element_bytes(g.elem)


def takes(target: Target | None, op: Operation) -> bool:
    """Whether `op` lowers as this kernel (else: as dots over its taps)."""
    if not isinstance(op, hlo.ConvolutionOp):
        return False
    g = geometry(op)
    budget = halo_budget(target_vmem(target))
    return g is not None and _vmem_bytes(g) <= budget


def check(target: Target, op: hlo.ConvolutionOp) -> None:
    g = geometry(op)
    assert g is not None
    target.check_vmem(op, f"{op.name} (lhs, result and kernel blocks)", _vmem_bytes(g))


def lower(ctx: LoweringContext, op: hlo.ConvolutionOp) -> None:
    g = geometry(op)
    assert g is not None
    _Conv(ctx, op, g).emit()


class _Conv(HaloKernel):
    """A convolution's halo kernel: the taps' matrices in VMEM, MXU rows."""

    def __init__(self, ctx: LoweringContext, op: hlo.ConvolutionOp, g: HaloGeometry):
        super().__init__(ctx, op.lhs, op.result, g)
        self.op = op
        self.taps: list[SSAValue] = []
        self.zero: SSAValue | None = None

    def setup(self) -> SSAValue | None:
        """The kernel's DMA started; the frame's zeros."""
        g, e, op = self.g, self.e, self.op
        w = reshape_view(e, self.ctx.buffers[op.rhs], (g.kh, g.kw, g.c, g.o), "conv_w")
        self.wbuf = wbuf = self.alloc((g.kh, g.kw, g.c, g.o), g.elem, "conv_wv")
        self.own.append(wbuf)
        self.wsem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "conv_wsem")
        e.op(tpu.DMAStartOp(w, wbuf, recv_sem=self.wsem))
        return splat_vector(e, 0, VectorType(g.elem, (g.hp, g.wq, g.strides[1] * g.c)))

    def ready(self) -> None:
        """The kernel arrived, its taps loaded (flipped where reversed); the accumulator's zero."""
        g, e, op, wbuf = self.g, self.e, self.op, self.wbuf
        e.op(tpu.DMAWaitOp(self.wsem, wbuf))
        flip = as_2d(len(op.reversal) == 1, op.reversal, 0)
        for i in range(g.kh):
            for j in range(g.kw):
                ki = g.kh - 1 - i if flip[0] else i
                kj = g.kw - 1 - j if flip[1] else j
                at = [e.index(ki), e.index(kj), e.index(0), e.index(0)]
                self.taps.append(e.op(tpu.LoadOp(wbuf, at, VectorType(g.elem, (g.c, g.o)))))
        self.zero = splat_vector(e, 0, VectorType(tpu.accumulation_type(g.elem), (g.wo, g.o)))

    def row(self, r: TileEmitter, oh: Ix, xslot: SSAValue) -> SSAValue:
        """The taps' loads and matmuls into one accumulator, rounded once."""
        acc = self.zero
        assert acc is not None
        for t, tap in enumerate(self.taps):
            x = self.tap(r, xslot, oh, *divmod(t, self.g.kw))
            acc = r.op(tpu.MatmulOp(x, tap, acc), "conv_acc")
        return convert_vector(r, acc, self.g.out_elem)
