"""
Vector code for the block bodies of `compute`: loads and stores of whole VMEM blocks,
splats, broadcasts, StableHLO `convert`, and hlo elementwise ops as `arith` / `math` /
`tpu` vector ops with level S's numerics (bf16/f16 computed in f32 and rounded once).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from shardc.dialects import hlo, tpu
from shardc.dialects.hlo import BOOL, FLOAT, element_kind
from shardc.dialects.sizes import element_bytes
from shardc.hardware.cost import FMOD_STEPS
from shardc.lowering import narrow_ints
from shardc.lowering.emit import tensor_type
from shardc.lowering.f64_remainder import f64_remainder
from shardc.lowering.tile_index import TileEmitter
from xdsl.dialects import arith, vector
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    VectorType,
    f32,
    f64,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

# Vector helpers -------------------------------------------------------------------------


def zero_indices(b: TileEmitter, ref: SSAValue) -> list[SSAValue]:
    ty = ref.type
    assert isinstance(ty, MemRefType)
    return [b.index(0) for _ in ty.get_shape()]


def load_block(b: TileEmitter, ref: SSAValue) -> SSAValue:
    ty = ref.type
    assert isinstance(ty, MemRefType)
    return b.op(tpu.LoadOp(ref, zero_indices(b, ref), VectorType(ty.element_type, ty.get_shape())))


def store_block(b: TileEmitter, v: SSAValue, ref: SSAValue) -> None:
    b.op(tpu.StoreOp(v, ref, zero_indices(b, ref)))


def splat_vector(b: TileEmitter, value: float | bool, vty: VectorType) -> SSAValue:
    """A vector of one value (a scalar constant broadcast: no per-element literal)."""
    elem = vty.element_type
    if element_kind(elem) == FLOAT:
        c = arith.ConstantOp(FloatAttr(float(value), elem))  # pyright: ignore[reportArgumentType]
    elif hlo.is_unsigned(elem):  # arith.constant is signless: the same bits, converted
        assert isinstance(elem, IntegerType)
        width = elem.width.data
        bits = int(value) % (1 << width)
        signed = bits - (1 << width) if bits >= 1 << (width - 1) else bits
        signless = IntegerType(width)
        v = splat_vector(b, signed, VectorType(signless, vty.get_shape()))
        return b.op(tpu.ConvertOp(v, vty))
    else:
        c = arith.ConstantOp(IntegerAttr(int(value), elem))  # pyright: ignore[reportArgumentType]
    return b.op(vector.BroadcastOp(b.op(c), vty))


def int_bounds(elem: Attribute) -> tuple[int, int]:
    """The smallest and largest value of an integer type (signless: signed)."""
    assert isinstance(elem, IntegerType)
    width = elem.width.data
    if hlo.is_unsigned(elem):
        return 0, (1 << width) - 1
    return -(1 << (width - 1)), (1 << (width - 1)) - 1


def broadcast_to(b: TileEmitter, v: SSAValue, shape: Sequence[int]) -> SSAValue:
    ty = v.type
    assert isinstance(ty, VectorType)
    if tuple(ty.get_shape()) == tuple(shape):
        return v
    return b.op(vector.BroadcastOp(v, VectorType(ty.element_type, shape)))


def vector_type(v: SSAValue) -> VectorType:
    ty = v.type
    assert isinstance(ty, VectorType)
    return ty


def with_element(v: SSAValue, elem: Attribute) -> VectorType:
    return VectorType(elem, vector_type(v).get_shape())


def _low_precision(elem: Attribute) -> bool:
    """Floats computed in f32 and rounded once per op (level S: ml_dtypes / numpy)."""
    return isinstance(elem, BFloat16Type | Float16Type | Float8E4M3FNType | Float8E5M2Type)


def _width(elem: Attribute) -> int:
    if isinstance(elem, IntegerType):
        return elem.width.data
    return 8 * element_bytes(elem)


def convert_vector(b: TileEmitter, v: SSAValue, to: Attribute) -> SSAValue:
    """StableHLO convert of a vector (see interpreter/values.py `convert`)."""
    frm = vector_type(v).element_type
    if frm == to:
        return v
    rty = with_element(v, to)
    if element_kind(frm) == FLOAT and element_kind(to) == FLOAT:
        if _width(frm) == _width(to):  # bf16 <-> f16: through f32 (exact, then one rounding)
            v = b.op(arith.ExtFOp(v, with_element(v, f32)))
            return b.op(arith.TruncFOp(v, rty))
        cls = arith.ExtFOp if _width(frm) < _width(to) else arith.TruncFOp
        return b.op(cls(v, rty))
    return b.op(tpu.ConvertOp(v, rty))


# Elementwise ops --------------------------------------------------------------------------

_FLOAT_BINARY: dict[type[Operation], type[Operation]] = {
    hlo.AddOp: arith.AddfOp,
    hlo.SubOp: arith.SubfOp,
    hlo.MulOp: arith.MulfOp,
    hlo.DivOp: arith.DivfOp,
    hlo.MaxOp: arith.MaximumfOp,
    hlo.MinOp: arith.MinimumfOp,
    hlo.PowOp: mathd.PowFOp,
}
_INT_BINARY: dict[type[Operation], type[Operation]] = {
    hlo.AddOp: arith.AddiOp,
    hlo.SubOp: arith.SubiOp,
    hlo.MulOp: arith.MuliOp,
    hlo.DivOp: arith.DivSIOp,
    hlo.MaxOp: arith.MaxSIOp,
    hlo.MinOp: arith.MinSIOp,
    hlo.PowOp: mathd.IPowIOp,
    hlo.AndOp: arith.AndIOp,
    hlo.OrOp: arith.OrIOp,
    hlo.XorOp: arith.XOrIOp,
}
_UNSIGNED_BINARY: dict[type[Operation], type[Operation]] = _INT_BINARY | {
    hlo.DivOp: arith.DivUIOp,
    hlo.MaxOp: arith.MaxUIOp,
    hlo.MinOp: arith.MinUIOp,
}
"""Unsigned integers: the same bits as signless ones but for division, max and min."""
_BOOL_BINARY: dict[type[Operation], type[Operation]] = {
    hlo.AddOp: arith.OrIOp,
    hlo.MulOp: arith.AndIOp,
    hlo.MaxOp: arith.OrIOp,
    hlo.MinOp: arith.AndIOp,
    hlo.AndOp: arith.AndIOp,
    hlo.OrOp: arith.OrIOp,
    hlo.XorOp: arith.XOrIOp,
}
_FLOAT_UNARY: dict[type[Operation], type[Operation]] = {
    hlo.NegOp: arith.NegfOp,
    hlo.ExpOp: mathd.ExpOp,
    hlo.LogOp: mathd.LogOp,
    hlo.TanhOp: mathd.TanhOp,
    hlo.SqrtOp: mathd.SqrtOp,
    hlo.RsqrtOp: mathd.RsqrtOp,
    hlo.AbsOp: mathd.AbsFOp,
    hlo.SinOp: mathd.SinOp,
    hlo.CosOp: mathd.CosOp,
    hlo.ErfOp: mathd.ErfOp,
}
_SHIFTS: dict[type[Operation], type[Operation]] = {
    hlo.ShiftLeftOp: arith.ShLIOp,
    hlo.ShiftRightLogicalOp: arith.ShRUIOp,
    hlo.ShiftRightArithmeticOp: arith.ShRSIOp,
}
_BIT_COUNTS: dict[type[Operation], type[Operation]] = {
    hlo.PopcntOp: mathd.CtPopOp,
    hlo.CountLeadingZerosOp: mathd.CountLeadingZerosOp,
}
_UNARY_MATH: tuple[type[Operation], ...] = (
    hlo.FloorOp,
    hlo.CeilOp,
    hlo.RoundNearestEvenOp,
    hlo.RoundNearestAfzOp,
    hlo.SignOp,
    hlo.CbrtOp,
    hlo.Expm1Op,
    hlo.Log1pOp,
    hlo.TanOp,
    hlo.CoshOp,
    hlo.SinhOp,
)
"""Ops without a VPU instruction (but rounding): vector code in lowering/unary_math.py
(its `OPS`, which imports this module: the list is here, tested equal)."""
_LOWERED_13: tuple[type[Operation], ...] = (
    hlo.ErfOp,
    hlo.ErfcOp,
    hlo.Atan2Op,
    hlo.XorOp,
    hlo.ClampOp,
    hlo.RemainderOp,
    hlo.IsFiniteOp,
    *_SHIFTS,
    *_BIT_COUNTS,
    *_UNARY_MATH,
)
"""The ops of issue 13's `hlo.ELEMENTWISE_OPS_13` that `elementwise` computes."""


def not_computed(op: Operation) -> bool:
    """An elementwise op `elementwise` does not compute yet: issue 13's others and
    `bitcast_convert` between widths (lowering/movement.py)."""
    if isinstance(op, hlo.BitcastConvertOp):
        return op.extra_dim() != 0
    return isinstance(op, hlo.ELEMENTWISE_OPS_13) and not isinstance(op, _LOWERED_13)


_FLOAT_CMP = {"EQ": "oeq", "NE": "une", "LT": "olt", "LE": "ole", "GT": "ogt", "GE": "oge"}
_INT_CMP = {"EQ": "eq", "NE": "ne", "LT": "slt", "LE": "sle", "GT": "sgt", "GE": "sge"}
_BOOL_CMP = {"EQ": "eq", "NE": "ne", "LT": "ult", "LE": "ule", "GT": "ugt", "GE": "uge"}


def _float_math(b: TileEmitter, op: Operation, vals: list[SSAValue]) -> SSAValue:
    if isinstance(op, hlo.LogisticOp):  # 1 / (1 + exp(-x)), as level S
        one = splat_vector(b, 1.0, vector_type(vals[0]))
        e = b.op(mathd.ExpOp(b.op(arith.NegfOp(vals[0]))))
        return b.op(arith.DivfOp(one, b.op(arith.AddfOp(one, e))))
    if isinstance(op, hlo.ErfcOp):  # 1 - erf(x) in f32 (f64): no erfc in `math` yet
        one = splat_vector(b, 1.0, vector_type(vals[0]))
        return b.op(arith.SubfOp(one, b.op(mathd.ErfOp(vals[0]))))
    if isinstance(op, hlo.ClampOp):  # min(max(x, lo), hi), NaN-propagating as level S
        lo, x, hi = vals
        # Of two equal values (0 and -0) numpy's f32/f64/bf16 maximum and minimum give
        # the second, its f16 ones the first: level S's choice, whatever we compute in.
        if isinstance(tensor_type(op.results[0].type).element_type, Float16Type):
            return b.op(arith.MinimumfOp(hi, b.op(arith.MaximumfOp(lo, x))))
        return b.op(arith.MinimumfOp(b.op(arith.MaximumfOp(x, lo)), hi))
    if isinstance(op, hlo.MaxOp | hlo.MinOp) and isinstance(
        tensor_type(op.results[0].type).element_type, Float16Type
    ):  # numpy's f16 maximum / minimum give the first of two equal values (clamp above)
        return b.op(_FLOAT_BINARY[type(op)](vals[1], vals[0]))  # pyright: ignore[reportCallIssue]
    if len(vals) == 2:
        return b.op(_FLOAT_BINARY[type(op)](*vals))  # pyright: ignore[reportCallIssue]
    return b.op(_FLOAT_UNARY[type(op)](vals[0]))  # pyright: ignore[reportCallIssue]


def _int_math(b: TileEmitter, op: Operation, vals: list[SSAValue], boolean: bool) -> SSAValue:
    """Integer ops wrap at the width (level S's numpy arithmetic); unsigned: `_UNSIGNED_BINARY`."""
    x = vals[0]
    if isinstance(op, hlo.NotOp):
        return b.op(arith.XOrIOp(x, splat_vector(b, -1, vector_type(x))))
    if isinstance(op, hlo.NegOp):
        return b.op(arith.SubiOp(splat_vector(b, 0, vector_type(x)), x))
    if isinstance(op, hlo.AbsOp):
        if hlo.is_unsigned(vector_type(x).element_type):
            return x  # |x| = x (math.absi takes signless integers only)
        return b.op(mathd.AbsIOp(x))
    if type(op) in _BIT_COUNTS:  # `math` takes signless integers: the same bits
        elem = vector_type(x).element_type
        signless = convert_vector(b, x, IntegerType(_width(elem)))
        counted = b.op(_BIT_COUNTS[type(op)](signless))  # pyright: ignore[reportCallIssue]
        return convert_vector(b, counted, elem)
    if type(op) in _SHIFTS:
        return _shift(b, op, x, vals[1])
    table = _BOOL_BINARY if boolean else _INT_BINARY
    if not boolean and hlo.is_unsigned(vector_type(x).element_type):
        table = _UNSIGNED_BINARY
    if isinstance(op, hlo.RemainderOp):  # a - div(a, b) * b: x % 0 = x as level S
        q = b.op(table[hlo.DivOp](*vals))  # pyright: ignore[reportCallIssue]
        return b.op(arith.SubiOp(x, b.op(arith.MuliOp(q, vals[1]))))
    if isinstance(op, hlo.ClampOp):  # min(max(x, lo), hi)
        lo, x, hi = vals
        m = b.op(table[hlo.MaxOp](x, lo))  # pyright: ignore[reportCallIssue]
        return b.op(table[hlo.MinOp](m, hi))  # pyright: ignore[reportCallIssue]
    return b.op(table[type(op)](*vals))  # pyright: ignore[reportCallIssue]


def _shift(b: TileEmitter, op: Operation, x: SSAValue, amount: SSAValue) -> SSAValue:
    """
    hlo shifts (level S's `_shift`): the amount is read as unsigned; one >= the bit width
    gives 0 (left, logical) or the sign fill (arithmetic: a shift by width - 1). The
    `arith` shift itself only sees amounts below the width (larger ones are poison).
    """
    vty = vector_type(x)
    width = _width(vty.element_type)
    inside = b.op(tpu.CmpOp("ult", amount, splat_vector(b, width, vty)))
    clipped = b.op(tpu.SelectOp(inside, amount, splat_vector(b, width - 1, vty)))
    moved = b.op(_SHIFTS[type(op)](x, clipped))  # pyright: ignore[reportCallIssue]
    if isinstance(op, hlo.ShiftRightArithmeticOp):
        return moved
    return b.op(tpu.SelectOp(inside, moved, splat_vector(b, 0, vty)))


def elementwise(b: TileEmitter, op: Operation, vals: list[SSAValue]) -> SSAValue:
    """One hlo elementwise op on loaded blocks; bf16/f16 computed in f32, rounded once."""
    res_elem = tensor_type(op.results[0].type).element_type
    if isinstance(op, hlo.ConvertOp):
        return convert_vector(b, vals[0], res_elem)
    if isinstance(op, hlo.SelectOp):
        pred = broadcast_to(b, vals[0], vector_type(vals[1]).get_shape())
        return b.op(tpu.SelectOp(pred, vals[1], vals[2]))
    if isinstance(op, hlo.BitcastConvertOp):  # one width: the same bits, another type
        return b.op(arith.BitcastOp(vals[0], with_element(vals[0], res_elem)))
    if isinstance(op, hlo.ClampOp):  # rank-0 bounds: broadcast to the operand's block
        vals = once(vals, lambda v: broadcast_to(b, v, vector_type(vals[1]).get_shape()))
    elem = vector_type(vals[0]).element_type
    if narrow_ints.is_narrow(elem):  # sub-byte integers: unpacked to i32 and packed back
        return narrow_ints.elementwise(b, op, vals, elementwise)
    kind = element_kind(elem)
    if isinstance(op, hlo.CompareOp):
        d = op.comparison_direction.data
        if kind == FLOAT:
            return b.op(tpu.CmpOp(_FLOAT_CMP[d], vals[0], vals[1]))
        unsigned = kind == BOOL or hlo.is_unsigned(elem)
        return b.op(tpu.CmpOp((_BOOL_CMP if unsigned else _INT_CMP)[d], vals[0], vals[1]))
    if isinstance(op, hlo.IsFiniteOp):
        return _is_finite(b, vals[0])
    if isinstance(op, _UNARY_MATH):  # no instruction (but rounding): unary_math.py
        from shardc.lowering import unary_math  # it builds on this module

        return unary_math.lower(b, op, vals[0])
    if kind != FLOAT:
        return _int_math(b, op, vals, kind == BOOL)
    if isinstance(op, hlo.Atan2Op):  # no arctangent instruction: in f64 (atan2.py)
        from shardc.lowering.atan2 import atan2  # atan2.py builds on this module

        return atan2(b, vals[0], vals[1])
    if isinstance(op, hlo.AtanOp):  # atan2(x, 1): the same vector code
        from shardc.lowering.atan2 import atan2

        return atan2(b, vals[0], splat_vector(b, 1.0, vector_type(vals[0])))
    if isinstance(op, hlo.CHLO_OPS_13):  # the others: f64 vector code (special_functions.py)
        from shardc.lowering.special_functions import special_function  # builds on this

        return special_function(b, op, vals[0])
    if isinstance(op, hlo.RemainderOp):  # f64: an integer long division
        if isinstance(elem, Float64Type):
            return f64_remainder(b, vals[0], vals[1])
        return float_remainder(b, vals[0], vals[1])
    if not _low_precision(elem):
        return _float_math(b, op, vals)
    wide = once(vals, lambda v: b.op(arith.ExtFOp(v, with_element(v, f32))))
    r = _float_math(b, op, wide)
    return b.op(arith.TruncFOp(r, with_element(r, elem)))


def _is_finite(b: TileEmitter, x: SSAValue) -> SSAValue:
    """-inf < x < inf (ordered compares: false for NaN too), in f32 below it: f8E4M3FN
    has no infinity to compare with (its NaN compares false), and a widened value keeps
    its infinities and NaNs."""
    if _low_precision(vector_type(x).element_type):
        x = b.op(arith.ExtFOp(x, with_element(x, f32)))
    ty = vector_type(x)
    below = b.op(tpu.CmpOp("olt", x, splat_vector(b, math.inf, ty)))
    above = b.op(tpu.CmpOp("ogt", x, splat_vector(b, -math.inf, ty)))
    return b.op(arith.AndIOp(below, above))


def once(vals: list[SSAValue], convert: Callable[[SSAValue], SSAValue]) -> list[SSAValue]:
    """`convert` of each of `vals`, a value repeated (x * x) converted once: the widening
    hardware/cost.py `compute_widen_ops` charges per distinct operand."""
    made: dict[SSAValue, SSAValue] = {}
    for v in vals:
        if v not in made:
            made[v] = convert(v)
    return [made[v] for v in vals]


# Float remainder ---------------------------------------------------------------------------
#
# fmod (level S: numpy's, exact) of f32, bf16, f16 and f8 without a `remf` (xDSL 0.74's arith
# has none): a - trunc(a / b) * b is not exact, so the remainder is reduced in f64 in exact
# steps. With r = |a| and B = |b| in f64, each step takes t = B * 2^k, k the exponent of
# r / B less `bits` (0 at least), q = trunc(r / t) < 2^(bits + 1), and r -= q * t: q * t
# has at most bits + 1 + m bits (m: the type's significand), 53 with bits = 52 - m, so it
# is exact in f64, and so is the difference (the true remainder, or it less t if r / t
# rounded up to the next integer: then t is added back). A step divides r / B by 2^bits.
# The steps per type and the ops they take are hardware/cost.py's (`FMOD_STEPS`,
# `elementwise_vpu_ops`), which level S charges; the splat constants are made once.


class Splats:
    """Splat f64 (i64) constants of one kernel body (a remainder, an atan2), each made once:
    a splat is a VPU op per element."""

    def __init__(self, b: TileEmitter, shape: Sequence[int]):
        self.b, self.shape = b, tuple(shape)
        self.made: dict[tuple[type, float | int], SSAValue] = {}

    def __call__(self, value: float | int) -> SSAValue:
        key = (type(value), value)
        if key not in self.made:
            elem = f64 if isinstance(value, float) else i64
            self.made[key] = splat_vector(self.b, value, VectorType(elem, self.shape))
        return self.made[key]


def _rem_step(b: TileEmitter, c: Splats, r: SSAValue, big: SSAValue, bits: int) -> SSAValue:
    """One exact reduction step of r (f64, >= 0) by big = |b| (see above): the exponent
    field of r / B (>= 0: no sign bit) less `bits`, at least the bias, is 2^k's."""
    vty = vector_type(r)
    ity = with_element(r, i64)
    ratio = b.op(arith.BitcastOp(b.op(arith.DivfOp(r, big)), ity))
    exp = b.op(arith.ShRUIOp(ratio, c(52)))
    field = b.op(arith.MaxSIOp(b.op(arith.SubiOp(exp, c(bits))), c(1023)))
    scale = b.op(arith.BitcastOp(b.op(arith.ShLIOp(field, c(52))), vty))
    t = b.op(arith.MulfOp(big, scale))
    q = b.op(mathd.TruncOp(b.op(arith.DivfOp(r, t))))
    r = b.op(arith.SubfOp(r, b.op(arith.MulfOp(q, t))))
    under = b.op(tpu.CmpOp("olt", r, c(0.0)))
    return b.op(tpu.SelectOp(under, b.op(arith.AddfOp(r, t)), r))


def float_remainder(b: TileEmitter, x: SSAValue, y: SSAValue) -> SSAValue:
    """
    fmod(x, y) of f32 / bf16 / f16 / f8 vectors, exactly (see above), with the sign of x;
    x for an infinite y. NaNs as level S's fmod gives them: a NaN operand propagates (x's
    first, quieted, as glibc's (x*y)/(x*y) on x86 gives it: chosen by a select, not by
    `x + y`, whose NaN operand order the simulator's numpy does not fix), an infinite x or
    y = 0 is the default NaN (what `inf - inf` gives).
    """
    elem = vector_type(x).element_type
    a, d = (convert_vector(b, v, f64) for v in (x, y))
    c = Splats(b, vector_type(a).get_shape())
    zero, inf = c(0.0), c(float("inf"))
    r, big = b.op(mathd.AbsFOp(a)), b.op(mathd.AbsFOp(d))
    nan = b.op(tpu.CmpOp("uno", a, d))
    invalid = b.op(arith.OrIOp(b.op(tpu.CmpOp("oeq", r, inf)), b.op(tpu.CmpOp("oeq", d, zero))))
    inf_d = b.op(tpu.CmpOp("oeq", big, inf))
    odd = b.op(arith.OrIOp(b.op(arith.OrIOp(nan, invalid)), inf_d))
    r = b.op(tpu.SelectOp(odd, zero, r))  # the steps on finite values only
    big = b.op(tpu.SelectOp(odd, c(1.0), big))
    bits, steps = FMOD_STEPS[str(elem)]
    for _ in range(steps):
        r = _rem_step(b, c, r, big, bits)
    r = b.op(mathd.CopySignOp(r, a))  # fmod(-0, y) = -0: the sign bit, not a < 0
    r = b.op(tpu.SelectOp(inf_d, a, r))
    r = b.op(tpu.SelectOp(invalid, b.op(arith.SubfOp(inf, inf)), r))
    a_nan = b.op(tpu.CmpOp("uno", a, a))
    quiet = b.op(tpu.SelectOp(a_nan, b.op(arith.AddfOp(a, a)), b.op(arith.AddfOp(d, d))))
    r = b.op(tpu.SelectOp(nan, quiet, r))
    return convert_vector(b, r, elem)
