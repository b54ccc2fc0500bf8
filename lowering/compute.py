"""
hlo compute ops lowered to tpu (part of `lower-to-tpu`, see lowering/lower_to_tpu.py):
operands DMA'd from HBM into VMEM blocks, `tpu.load`, `arith`/`math`/`tpu` vector ops,
`tpu.store`, DMA back to the result's HBM buffer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shardc.dialects import hlo, tpu
from shardc.dialects.hlo import element_kind
from shardc.dialects.tpu import memref_type
from shardc.lowering.emit import VMEM, nbytes, tensor_type
from shardc.passes.errors import OpPassError
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Operation

if TYPE_CHECKING:
    from shardc.lowering.lower_to_tpu import KernelLowering

_FLOAT_BINARY = {
    hlo.AddOp: arith.AddfOp, hlo.SubOp: arith.SubfOp, hlo.MulOp: arith.MulfOp,
    hlo.DivOp: arith.DivfOp, hlo.MaxOp: arith.MaximumfOp, hlo.MinOp: arith.MinimumfOp,
}
_INT_BINARY = {
    hlo.AddOp: arith.AddiOp, hlo.SubOp: arith.SubiOp, hlo.MulOp: arith.MuliOp,
    hlo.MaxOp: arith.MaxSIOp, hlo.MinOp: arith.MinSIOp,
}
_FLOAT_UNARY = {
    hlo.NegOp: arith.NegfOp, hlo.ExpOp: mathd.ExpOp, hlo.LogOp: mathd.LogOp,
    hlo.TanhOp: mathd.TanhOp, hlo.SqrtOp: mathd.SqrtOp, hlo.RsqrtOp: mathd.RsqrtOp,
    hlo.AbsOp: mathd.AbsFOp,
}




def handles(op: Operation) -> bool:
    """Whether this module lowers ops of this kind."""
    return type(op) in _FLOAT_BINARY or type(op) in _FLOAT_UNARY


def check(lowering: KernelLowering, op: Operation) -> None:
    """Raise an `OpPassError` at `op` if this variant cannot be lowered."""
    ty = tensor_type(op.results[0].type)
    kind = element_kind(ty.element_type)
    ok = (
        (kind == "float" and str(ty.element_type) in ("f32", "f64"))
        or (kind == "int" and type(op) in _INT_BINARY)
    )
    if not ok:
        raise OpPassError(op, f"lower-to-tpu: {op.name} on {ty.element_type} is not supported yet")


def lower(lowering: KernelLowering, op: Operation) -> None:
        e = lowering.e
        ty = tensor_type(op.results[0].type)
        shape, elem = list(ty.get_shape()), ty.element_type
        size = nbytes(shape, elem)
        lowering.check_vmem(op, f"{op.name} on one {'x'.join(map(str, shape))} block",
                        size * (len(op.operands) + 1))
        buf_ty = memref_type(shape, elem, VMEM)
        vty = VectorType(elem, shape)
        # One semaphore per DMA in flight (a shared one could be satisfied by the wrong DMA).
        sems = [e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "ew_sem") for _ in op.operands]
        zeros = [e.index(0) for _ in shape]
        bufs, vals = [], []
        for v, sem in zip(op.operands, sems):
            buf = e.op(tpu.AllocOp(buf_ty), "ew_in")
            e.op(tpu.DMAStartOp(lowering.buffers[v], buf, recv_sem=sem))
            bufs.append(buf)
        for buf, sem in zip(bufs, sems):
            e.op(tpu.DMAWaitOp(sem, buf))
            vals.append(e.op(tpu.LoadOp(buf, zeros, vty)))
        sem = sems[0]
        table = _FLOAT_BINARY if len(vals) == 2 else _FLOAT_UNARY
        if element_kind(elem) == "int":
            table = _INT_BINARY
        cls = table[type(op)]  # pyright: ignore
        res = e.op(cls(*vals) if len(vals) == 2 else cls(vals[0]), "ew")
        out_buf = e.op(tpu.AllocOp(buf_ty), "ew_out")
        e.op(tpu.StoreOp(res, out_buf, zeros))
        dst = lowering.buffers[op.results[0]]
        e.op(tpu.DMAStartOp(out_buf, dst, recv_sem=sem))
        e.op(tpu.DMAWaitOp(sem, dst))
        for buf in [*bufs, out_buf]:
            e.op(tpu.DeallocOp(buf))


