"""
Shared by the `lower-to-tpu` modules (`lower_to_tpu`: the kernel and its collectives,
`compute`: tiled hlo compute, `movement`: hlo data movement as DMAs): an emitter
that appends ops to a block, and the small type helpers they all need.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from shardc.dialects import tpu
from shardc.dialects.tpu import MemorySpace, memref_type
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, TensorType, i32
from xdsl.ir import Attribute, Block, Operation, SSAValue

INDEX = IndexType()
HBM = MemorySpace.HBM
VMEM = MemorySpace.VMEM


def tensor_type(ty: Attribute) -> TensorType:
    assert isinstance(ty, TensorType)
    return ty  # pyright: ignore


def hbm_type(ty: TensorType) -> MemRefType:
    return memref_type(ty.get_shape(), ty.element_type, HBM)


def nbytes(shape: Sequence[int], element_type: Attribute) -> int:
    return math.prod(shape) * tpu.element_bytes(element_type)


def memref_shape(ref: SSAValue) -> tuple[int, ...]:
    """The shape of a memref value (an HBM buffer, a VMEM block or a view of one)."""
    ty = ref.type
    assert isinstance(ty, MemRefType)
    return tuple(ty.get_shape())


def reshape_view(
    e: Emitter, ref: SSAValue, shape: Sequence[int], hint: str | None = None
) -> SSAValue:
    """`ref` seen with another (row-major) shape in its memory space: itself if the shape is the same."""
    ty = ref.type
    assert isinstance(ty, MemRefType)
    if tuple(ty.get_shape()) == tuple(shape):
        return ref
    space = tpu.memory_space_of(ty)
    assert space is not None
    return e.op(tpu.MemRefReshapeOp(ref, memref_type(shape, ty.element_type, space)), hint)


class Emitter:
    """Appends ops to a block; small helpers for index and i32 arithmetic."""

    def __init__(self, block: Block):
        self.block = block

    def op(self, op: Operation, hint: str | None = None) -> SSAValue:
        self.block.add_op(op)
        if op.results:
            if hint:
                op.results[0].name_hint = hint
            return op.results[0]
        return None  # type: ignore[return-value]

    def i32(self, v: int, hint: str | None = None) -> SSAValue:
        return self.op(arith.ConstantOp(IntegerAttr(v, i32)), hint)

    def index(self, v: int, hint: str | None = None) -> SSAValue:
        return self.op(arith.ConstantOp(IntegerAttr(v, INDEX)), hint)

    def to_index(self, v: SSAValue, hint: str | None = None) -> SSAValue:
        return self.op(arith.IndexCastOp(v, INDEX), hint)

    def to_i32(self, v: SSAValue, hint: str | None = None) -> SSAValue:
        return self.op(arith.IndexCastOp(v, i32), hint)

    def add(self, a: SSAValue, b: SSAValue, hint: str | None = None) -> SSAValue:
        return self.op(arith.AddiOp(a, b), hint)

    def sub(self, a: SSAValue, b: SSAValue, hint: str | None = None) -> SSAValue:
        return self.op(arith.SubiOp(a, b), hint)

    def mul(self, a: SSAValue, b: SSAValue, hint: str | None = None) -> SSAValue:
        return self.op(arith.MuliOp(a, b), hint)

    def rem(self, a: SSAValue, b: SSAValue, hint: str | None = None) -> SSAValue:
        return self.op(arith.RemSIOp(a, b), hint)

    def eq(self, a: SSAValue, b: SSAValue, hint: str | None = None) -> SSAValue:
        return self.op(arith.CmpiOp(a, b, "eq"), hint)
