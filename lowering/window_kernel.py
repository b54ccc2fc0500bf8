"""
`hlo.reduce_window` as one kernel (part of `lower-to-tpu`, reached through
lowering/windows.py): the operand read from HBM once per image, with its halo
(lowering/halo.py: a VMEM slot whose frame holds the init value, double-buffered), every
window offset a shifted VMEM load combined into a row accumulator in vector registers.

Which reduce_windows: channels-last pooling, operand [n, h, w, c] with window
[1, kh, kw, 1] (or [n, w, c] with [1, kw, 1], or [n, w] with [1, kw]), strides and
padding (>= 0) on the spatial dimensions only, any window dilation, no base dilation,
`add`/`mul`/`max`/`min` of numbers (not i1), whose slots fit half the VMEM. The others
keep the rewrite into level-S ops (`ReduceWindowToSlices` in lowering/windows.py).

Numerics are level S's (interpreter/hlo_windows.py) bit for bit: the padding is the init
value; per output row the accumulator starts at the init value in the accumulation type
(f32 for bf16/f16), each window offset in row-major order (level S's) is converted to it
and combined by the same elementwise lowering `compute` uses for the hlo op
(`vector_ops.elementwise`), and the row is converted back once.
"""

from __future__ import annotations

from shardc.dialects import hlo, tpu
from shardc.dialects.hlo import BOOL, accumulation_type, element_kind
from shardc.hardware.vmem import halo_budget, halo_spatial
from shardc.lowering.context import LoweringContext, Target
from shardc.lowering.emit import tensor_type
from shardc.lowering.halo import HaloGeometry, HaloKernel, target_vmem
from shardc.lowering.tile_index import Ix, TileEmitter
from shardc.lowering.vector_ops import broadcast_to, convert_vector, elementwise
from xdsl.dialects.builtin import TensorType, VectorType
from xdsl.ir import Operation, SSAValue

_COMBINE = {"add": hlo.AddOp, "mul": hlo.MulOp, "max": hlo.MaxOp, "min": hlo.MinOp}


def _spatial(op: hlo.ReduceWindowOp) -> list[int] | None:
    """The spatial dimensions of a channels-last pooling (see the module docstring)."""
    if any(b != 1 for b in op.base_dilation):
        return None
    return halo_spatial(op.window, op.strides, op.low, op.high)


def geometry(op: hlo.ReduceWindowOp) -> HaloGeometry | None:
    """The kernel's view of `op`, or None if this kernel does not take it."""
    x, res = tensor_type(op.operand.type), tensor_type(op.result.type)
    spatial = _spatial(op)
    if spatial is None or element_kind(x.element_type) == BOOL or 0 in res.get_shape():
        return None
    if op.kind.data not in _COMBINE:
        return None
    shape, out = x.get_shape(), res.get_shape()
    c = shape[-1] if len(shape) > 2 else 1
    hd, wd = ([None] if len(spatial) == 1 else [spatial[0]]) + [spatial[-1]]

    def at(values, d, fill):
        return fill if d is None else values[d]

    return HaloGeometry(
        shape[0],
        at(shape, hd, 1),
        shape[wd],
        c,
        at(op.window, hd, 1),
        op.window[wd],
        c,
        at(out, hd, 1),
        out[wd],
        pads=((at(op.low, hd, 0), at(op.high, hd, 0)), (op.low[wd], op.high[wd])),
        strides=(at(op.strides, hd, 1), op.strides[wd]),
        dilation=(at(op.window_dilation, hd, 1), op.window_dilation[wd]),
        elem=x.element_type,
        out_elem=res.element_type,
    )


def takes(target: Target | None, op: Operation) -> bool:
    """Whether `op` lowers as this kernel (else: as level-S ops)."""
    if not isinstance(op, hlo.ReduceWindowOp):
        return False
    g = geometry(op)
    budget = halo_budget(target_vmem(target))
    return g is not None and g.slots_bytes() <= budget


def check(target: Target, op: hlo.ReduceWindowOp) -> None:
    g = geometry(op)
    assert g is not None
    target.check_vmem(op, f"{op.name} (operand and result blocks)", g.slots_bytes())


def lower(ctx: LoweringContext, op: hlo.ReduceWindowOp) -> None:
    g = geometry(op)
    assert g is not None
    _Pool(ctx, op, g).emit()


class _Pool(HaloKernel):
    """A reduce_window's halo kernel: the init value in the frame and the accumulator."""

    def __init__(self, ctx: LoweringContext, op: hlo.ReduceWindowOp, g: HaloGeometry):
        super().__init__(ctx, op.operand, op.result, g)
        self.op = op
        self.acc = accumulation_type(g.elem)
        # Not in the IR: `elementwise` reads only its kind and its result's element type.
        self.combine = _COMBINE[op.kind.data].create(result_types=[TensorType(self.acc, [1])])
        self.start: SSAValue | None = None

    def setup(self) -> SSAValue | None:
        """The init value to VMEM, broadcast: the frame and the row accumulator's start."""
        g, e = self.g, self.e
        init = self.alloc((), g.elem, "pool_init")
        self.own.append(init)
        sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "pool_sem")
        e.op(tpu.DMAStartOp(self.ctx.buffers[self.op.init_value], init, recv_sem=sem))
        e.op(tpu.DMAWaitOp(sem, init))
        v = e.op(tpu.LoadOp(init, [], VectorType(g.elem, ())), "pool_initv")
        self.start = broadcast_to(e, convert_vector(e, v, self.acc), (g.wo, g.c))
        return broadcast_to(e, v, (g.hp, g.wq, g.strides[1] * g.c))

    def row(self, r: TileEmitter, oh: Ix, xslot: SSAValue) -> SSAValue:
        """Every window offset (row-major) converted and combined in, converted back."""
        acc = self.start
        assert acc is not None
        for i in range(self.g.kh):
            for j in range(self.g.kw):
                x = convert_vector(r, self.tap(r, xslot, oh, i, j), self.acc)
                acc = elementwise(r, self.combine, [acc, x])
        return convert_vector(r, acc, self.g.out_elem)
