"""
Sub-byte integers (i2 i4 ui2 ui4) in the computing ops (issue 15 item 3).

HBM and VMEM hold them packed (`dialects/sizes.py`: two i4 or four i2 per byte); the
vector unit has no 4-bit lanes, so a TPU unpacks them into 32-bit lanes, computes and
packs the result back. That is the vector code here: each operand block is converted to
signless i32 (value-preserving: ui4 15 is 15), the op computed in i32 by
`vector_ops.elementwise`, and the result converted back (StableHLO's integer convert
wraps at the width: level S's wrapping arithmetic). In i32 every value of the four types
is far from the sign bit, so the signed forms of division, remainder, max, min, compare
and pow agree with the unsigned ones (division by 0 gives -1, which wraps to the largest
value, as level S's). Only ops that see the bits, not the value, need the width: the
shifts (the amount read as w unsigned bits; >= w: 0 or the sign fill) and the bit
counts, computed here on the w bits zero-extended.

Dots multiply their int8 unpacking on the MXU, accumulated in i32 (`tpu.accumulation_type`);
reduces accumulate in i32 too (`wide`): the sum wrapped at the width at the end
is level S's (which accumulates in a byte, or in the result type: the same value modulo
2^w). Reducing collectives and scatter combiners combine the narrow vectors with `arith`
directly (MLIR's `arith` wraps at any width).
"""

from __future__ import annotations

from collections.abc import Callable

from shardc.dialects import hlo, tpu
from shardc.lowering.tile_index import TileEmitter
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import IntegerType, VectorType, i32
from xdsl.ir import Attribute, Operation, SSAValue

Compute = Callable[[TileEmitter, Operation, list[SSAValue]], SSAValue]


def is_narrow(elem: Attribute) -> bool:
    """An integer type narrower than a byte (i1, a predicate, is not one)."""
    return isinstance(elem, IntegerType) and 1 < elem.width.data < 8


def wide(elem: Attribute) -> Attribute:
    """The type a sub-byte integer computes and accumulates in (i32); others: themselves."""
    return i32 if is_narrow(elem) else elem


def mxu_operand(elem: Attribute) -> Attribute:
    """What the MXU multiplies for sub-byte integers: their int8 / uint8 unpacking (which
    `tpu.accumulation_type` accumulates in i32 / ui32); others: themselves."""
    if is_narrow(elem):
        assert isinstance(elem, IntegerType)
        return IntegerType(8, elem.signedness.data)
    return elem


def _i32(b: TileEmitter, v: SSAValue) -> SSAValue:
    ty = v.type
    assert isinstance(ty, VectorType)
    return b.op(tpu.ConvertOp(v, VectorType(i32, ty.get_shape())))


def _splat(b: TileEmitter, value: int, like: SSAValue) -> SSAValue:
    from shardc.lowering.vector_ops import splat_vector, vector_type

    return splat_vector(b, value, vector_type(like))


def _bits_op(b: TileEmitter, op: Operation, vals: list[SSAValue], w: int) -> SSAValue:
    """Shifts and bit counts of the w bits (zero-extended into i32 lanes)."""
    mask = _splat(b, (1 << w) - 1, vals[0])
    u = b.op(arith.AndIOp(vals[0], mask))
    if isinstance(op, hlo.PopcntOp):
        return b.op(mathd.CtPopOp(u))
    if isinstance(op, hlo.CountLeadingZerosOp):
        return b.op(arith.SubiOp(b.op(mathd.CountLeadingZerosOp(u)), _splat(b, 32 - w, u)))
    amount = b.op(arith.AndIOp(vals[1], mask))  # < 2^w <= 16: never poison in i32
    if isinstance(op, hlo.ShiftLeftOp):
        return b.op(arith.ShLIOp(u, amount))
    if isinstance(op, hlo.ShiftRightLogicalOp):
        return b.op(arith.ShRUIOp(u, amount))
    up = _splat(b, 32 - w, u)  # the w bits as a signed number, shifted by at most w - 1
    s = b.op(arith.ShRSIOp(b.op(arith.ShLIOp(u, up)), up))
    return b.op(arith.ShRSIOp(s, b.op(arith.MinSIOp(amount, _splat(b, w - 1, u)))))


_BITS = (
    hlo.PopcntOp,
    hlo.CountLeadingZerosOp,
    hlo.ShiftLeftOp,
    hlo.ShiftRightLogicalOp,
    hlo.ShiftRightArithmeticOp,
)


def elementwise(b: TileEmitter, op: Operation, vals: list[SSAValue], compute: Compute) -> SSAValue:
    """`op` on sub-byte operand blocks: unpacked to i32, computed, packed back (above)."""
    from shardc.lowering.emit import tensor_type

    w = vals[-1].type.element_type.width.data  # pyright: ignore[reportAttributeAccessIssue]
    from shardc.lowering.vector_ops import once

    widened = once(vals, lambda v: _i32(b, v))
    r = _bits_op(b, op, widened, w) if isinstance(op, _BITS) else compute(b, op, widened)
    res = tensor_type(op.results[0].type).element_type
    if not is_narrow(res):
        return r  # a compare's i1
    rty = r.type
    assert isinstance(rty, VectorType)
    return b.op(tpu.ConvertOp(r, VectorType(res, rty.get_shape())))
