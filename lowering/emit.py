"""
Shared by the `lower-to-tpu` modules (the kernel, its collectives, tiled compute, data
movement as DMAs): an emitter that appends ops to a block, and the small type, view,
loop and copy helpers they all need.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from shardc.dialects import tpu
from shardc.dialects.sizes import element_bytes
from shardc.dialects.tpu import MemorySpace, memref_type
from xdsl.dialects import arith, scf
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
    """Bytes of an array of `shape` and `element_type` (`sizes.element_bytes` each)."""
    return math.prod(shape) * element_bytes(element_type)


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


def chunk(
    e: Emitter,
    ref: SSAValue,
    dim: int,
    size: int,
    c: SSAValue,
    hint: str,
    part: tuple[int, int, int] | None = None,
) -> SSAValue:
    """
    The block `c` (an index) of `size` along `dim` of `ref`: a `tpu.memref_slice`;
    with `part` = (split dim, half size, h), only half h of it along the split dim.
    """
    ty = ref.type
    assert isinstance(ty, MemRefType)
    shape = list(ty.get_shape())
    shape[dim] = size
    zero = e.index(0)
    off = e.mul(c, e.index(size)) if size != 1 else c
    idx = [off if i == dim else zero for i in range(len(shape))]
    if part is not None:
        sdim, half, h = part
        shape[sdim] = half
        if h:
            idx[sdim] = e.add(idx[sdim], e.index(h * half))
    space = tpu.memory_space_of(ty)
    assert space is not None
    return e.op(tpu.MemRefSliceOp(ref, idx, memref_type(shape, ty.element_type, space)), hint)


def span(e: Emitter, ref: SSAValue, start: int, size: int, hint: str) -> SSAValue:
    """Elements start .. start + size of a 1-D memref."""
    t = ref.type
    assert isinstance(t, MemRefType)
    space = tpu.memory_space_of(t)
    assert space is not None
    return e.op(
        tpu.MemRefSliceOp(ref, [e.index(start)], memref_type([size], t.element_type, space)),
        hint,
    )


def local_copy(e: Emitter, src: SSAValue, dst: SSAValue, hint: str) -> None:
    """One DMA from `src` to `dst` on this device, waited for."""
    sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), f"{hint}_sem")
    e.op(tpu.DMAStartOp(src, dst, recv_sem=sem))
    e.op(tpu.DMAWaitOp(sem, dst))


def for_steps(e: Emitter, lo: int, hi: int, hint: str = "s") -> tuple[Emitter, SSAValue]:
    """An `scf.for %s = lo to hi` appended to `e`; its body's emitter and `%s`."""
    body = Block(arg_types=[INDEX])
    body.args[0].name_hint = hint
    e.op(scf.ForOp(e.index(lo), e.index(hi), e.index(1), [], body))
    return Emitter(body), body.args[0]


class Emitter:
    """Appends ops to a block; small helpers for index and i32 arithmetic."""

    unroll = False
    """Ring steps as one op sequence per step instead of an `scf.for` (a `_start`'s, so
    that `ring_steps` can interleave them with compute)."""

    def __init__(self, block: Block):
        self.block = block

    def detach_all(self) -> list[Operation]:
        """Take every op out of the block (to insert or emit elsewhere)."""
        ops = list(self.block.ops)
        for o in ops:
            o.detach()
        return ops

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


def loop_nest(
    e: Emitter,
    trips: Sequence[int],
    body: Callable[[Emitter, list[SSAValue]], None],
    hint: str = "i",
) -> None:
    """`scf.for` loops over `range(t)` for each trip count (induction variables named
    `hint`), `body` in the innermost."""
    ivs = []
    bodies: list[Emitter] = []
    for t in trips:
        e, iv = for_steps(e, 0, t, hint)
        bodies.append(e)
        ivs.append(iv)
    body(e, ivs)
    for b in reversed(bodies):
        b.op(scf.YieldOp())
