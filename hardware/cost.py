"""
The cost of each op on a chip: one model for the scheduler and the interpreter's timing.

Compute ops: roofline `max(flops / peak, bytes / HBM bandwidth)`, with dtype-aware bytes and
FLOPs (dots on the MXU, everything else on the VPU; see `chips`). Bytes are what the op
reads and writes in HBM: a reshape is a bitcast and moves nothing, a slice reads only what
it keeps, a dynamic_update_slice writes its update in place. An op or fusion that
`lower-to-tpu` makes one tiled loop of is charged that loop's time instead
(`hardware/kernel.py`, from its types: the first blocks' fetch, per step the longer of
compute and DMA, the last write-back), which the roofline bounds from below.

Collectives (`collective_time`): as `lower-to-tpu` builds them, on the torus of
`hardware/topology.py` (its module docstring has the model: placement, routes, ring steps
with a hop latency each, the reduce-scatter's credits, link sharing, both directions on
wrapped axes, one phase per mesh axis, all_reduce's parts over equal axes, all_to_all and
permute as concurrent DMAs), so that level S and the level-T simulator cost one machine.
bf16 / f16 reductions move f32 partial sums. A ring reduction's combines (the vector ops
adding, multiplying or comparing each arriving partial with the own chunk between its
arrival and the next send: `rs_combine_time`, `ring_combine_ops`; a complex product's
many, its pairs' max / min's compares and selects) add to its time. A variadic collective runs its
operands one after the other. Mesh axes that cross pods add the data-center network (`dcn_time`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
from shardc.diagnostics import op_position
from shardc.dialects import collective, hlo, spmd
from shardc.dialects.hlo import accumulation_type
from shardc.dialects.sizes import element_bytes, tensor_bytes
from shardc.dialects.spmd import MeshAttr
from shardc.hardware import select_scatter
from shardc.hardware.chips import Chip
from shardc.hardware.topology import (
    Phase,
    Ring,
    Torus,
    Transfer,
    axis_groups,
    dcn_axes,
    ring_phases_time,
    ring_time,
    transfer_legs,
    transfers_time,
)
from shardc.hardware.vmem import collective_budget, rs_pieces
from xdsl.dialects import func
from xdsl.dialects.builtin import ComplexType, DenseArrayBase, IntegerType, TensorType, i1
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

UNCUT = 1 << 62
"""A VMEM budget no reduce-scatter ring is cut to fit (`collective_latency`)."""

RS_CREDITS = 2
"""Receive slots of a ring reduce-scatter (lowering/reduce_ring.py's double buffer)."""

MXU_DTYPE_FACTOR = {"f64": 1 / 8}
"""Fraction of the bf16 MXU peak per element type (others: 1, see `chips`)."""


def mxu_rate(chip: Chip, element_type: Attribute) -> float:
    """
    FLOP/s of the MXU multiplying operands of `element_type` (`chips` says why): integers
    of 8 bits or fewer at the chip's int8 rate, wider ones in (bits/8)^2 int8 passes,
    complex at a quarter of its part's.
    """
    if isinstance(element_type, ComplexType):
        return mxu_rate(chip, element_type.element_type) / 4
    if isinstance(element_type, IntegerType) and 1 < element_type.width.data <= 8:
        return chip.flops_bf16 * chip.int8_factor
    if isinstance(element_type, IntegerType) and element_type.width.data > 8:
        passes = (element_type.width.data // 8) ** 2  # int8 MXU passes (`chips`)
        return chip.flops_bf16 * chip.int8_factor / passes
    return chip.flops_bf16 * MXU_DTYPE_FACTOR.get(str(element_type), 1.0)


def matmul_time(chip: Chip, m: int, k: int, n: int, element_type: Attribute) -> float:
    """Seconds of an (m x k) @ (k x n) matmul on the MXU: 2mkn FLOPs at its peak."""
    return 2.0 * m * k * n / mxu_rate(chip, element_type)


def vpu_time(chip: Chip, elements: int, ops_per_element: int = 1) -> float:
    """Seconds of `ops_per_element` VPU operations on each of `elements` elements."""
    return ops_per_element * elements / chip.vpu_flops


def vmem_time(chip: Chip, nbytes: int) -> float:
    """Seconds to load or store `nbytes` between VMEM and the vector registers."""
    return nbytes / (chip.vmem_bw_factor * chip.hbm_bw)


@dataclass(frozen=True)
class OpCost:
    flops: float
    bytes: int
    time: float


def _elements(ty: TensorType) -> int:
    return math.prod(ty.get_shape())


def _tensor_types(values: object) -> list[TensorType]:
    return [v.type for v in values if isinstance(v.type, TensorType)]  # pyright: ignore


def fusion_input_bytes(arg: SSAValue, whole: int) -> int:
    """
    What a fusion reads of one operand (`arg`: its block argument; `whole`: the operand's
    bytes): the operand once, or, when only static slices read it inside (micro-batch's
    chunks, a window), only the sliced parts, as XLA's fused slice indexes into its operand
    instead of copying it (overlapping slices are read once each, at most the whole).
    """
    users = {u.operation for u in arg.uses}
    if not users or not all(isinstance(u, hlo.SliceOp) for u in users):
        return whole
    sliced = sum(tensor_bytes(u.results[0].type) for u in users)  # pyright: ignore[reportArgumentType]
    return min(whole, sliced)


def fusion_boundary_bytes(op: hlo.FusionOp) -> int:
    """
    The HBM bytes of a fused kernel: what crosses its boundary (each operand once, or its
    sliced parts: `fusion_input_bytes`; every result once), since the values inside stay
    in VMEM and vector registers.
    """
    args = op.body.block.args if op.body.blocks else ()
    read = sum(
        fusion_input_bytes(arg, tensor_bytes(value.type))  # pyright: ignore[reportArgumentType]
        for value, arg in zip(op.inputs, args, strict=True)
        if isinstance(value.type, TensorType)
    )
    return read + sum(tensor_bytes(t) for t in _tensor_types(op.outputs))


def sort_flops(op: hlo.SortOp | hlo.TopKOp) -> float:
    """
    A bitonic sort network along the sorted dimension (how TPUs sort; top_k is costed as
    a sort of its operand with an index operand): L(L + 1)/2 compare-exchange stages,
    L = ceil(log2 n), each touching every element of every operand once.
    """
    if isinstance(op, hlo.SortOp):
        types, dim = _tensor_types(op.inputs), op.dim
    else:
        types = _tensor_types(op.operands) * 2
        dim = len(types[0].get_shape()) - 1
    n = types[0].get_shape()[dim]
    stages = math.ceil(math.log2(n)) if n > 1 else 0
    return float(sum(_elements(t) for t in types) * stages * (stages + 1) // 2)


def reduce_body_ops(op: hlo.ReduceOp) -> int:
    """
    VPU ops per reduced element of a reduce: one combine (a complex mul / max / min:
    `complex_fold_ops`), or its body's ops but the return (an argmax's compares, ands, ors and selects each run once per element, on
    every operand pair together), each its `elementwise_vpu_ops` (an atan2's or a
    remainder's vector code, not one op).
    """
    if complex_fold(op):
        return complex_fold_ops(op)
    if op.body is None:
        return plain_reduce_ops(_element(op.inputs[0]))
    ops = [o for o in op.body.block.ops if not isinstance(o, hlo.ReturnOp)]
    return max(1, sum(elementwise_vpu_ops(o) for o in ops))


RNG_CIPHER_OPS = {"THREE_FRY": 2 + 20 * 5 + 5 * 2, "PHILOX": 10 * 8}
"""
Vector ops per counter of the cipher `hlo.rng_bit_generator` runs (lowering/random.py):
Threefry-2x32 the key added, 20 rounds (add, rotate as two shifts and an or, xor) and 5
key injections (two adds: the key schedule is the scalar core's); Philox-4x32 10 rounds
of two 32x32->64 multiplies, four xors and the two key adds.
"""
RNG_KEY_OPS = {"THREE_FRY": 4 + 6 + 13, "PHILOX": 6 + 6}
"""Per counter: the state's 32-bit words broadcast, the key schedule's broadcasts
(Threefry: the third key word and 5 injections) and the splat constants (Threefry: 11
rotation amounts and the carry's 0 and 1; Philox: its 4 multipliers and key increments
and the carry's 0 and 1), one op per element each as the level-T simulator charges."""
RNG_COUNTER_OPS = {"THREE_FRY": 4, "PHILOX": 10}
"""Per counter: the 64-bit (Philox: 128-bit) counter add, each carry a compare and a
select."""
RNG_POSITION_OPS = 5
"""Per counter and output dimension but the last: the element's row-major position
(its stride's splat, a multiply, an add) and its block's offset (a broadcast, an add)."""
RNG_JOIN_OPS = 6
"""Per 64-bit output element: two words joined (two widenings, a mask, a shift, an or,
their splats shared by two elements)."""


def rng_ops_per_element(op: hlo.RngBitGeneratorOp) -> float:
    """
    VPU ops per output element of `hlo.rng_bit_generator` as `lower-to-tpu` computes it:
    the cipher, its key material and counter per counter (`RNG_*_OPS`), shared by the
    elements of one counter where they lie in whole groups along one dimension (then one
    transpose per element interleaves them), else run per element (with a select of its
    word per other word). tests/unit/test_lower_rng.py counts the lowered kernel's ops
    against this.
    """
    out = op.output.type
    assert isinstance(out, TensorType)
    shape = out.get_shape()
    wide = out.element_type.width.data == 64  # pyright: ignore[reportAttributeAccessIssue]
    alg = "THREE_FRY" if op.algorithm == "THREE_FRY" else "PHILOX"
    counter = RNG_CIPHER_OPS[alg] + RNG_KEY_OPS[alg] + RNG_COUNTER_OPS[alg]
    counter += RNG_POSITION_OPS * max(len(shape) - 1, 0)
    join = RNG_JOIN_OPS if wide else 0
    groups = rng_groups(op)
    if groups is not None:
        return counter / groups[1] + join + 1
    if alg == "PHILOX":  # the word selected: a compare and a select per other word
        return counter + join + 2 * ((2 if wide else 4) - 1)
    return counter + join + (0 if wide else 2)


def rng_groups(op: hlo.RngBitGeneratorOp) -> tuple[int, int] | None:
    """
    (dimension, elements per counter along it) when an output's elements sharing a counter
    lie in whole groups along one dimension: Philox's 4 (64-bit: 2) along the last one if
    its size is a multiple, 32-bit Threefry's 2 along the dimension XLA splits in halves
    (the first even one) if there is one. Then `lower-to-tpu` runs the cipher once per
    counter and interleaves the words (lowering/random.py `_grouped`); None: once per
    element.
    """
    out = op.output.type
    assert isinstance(out, TensorType)
    shape = out.get_shape()
    wide = out.element_type.width.data == 64  # pyright: ignore[reportAttributeAccessIssue]
    if not shape or (wide and op.algorithm == "THREE_FRY"):
        return None  # a 64-bit Threefry element is one counter's two words already
    if op.algorithm != "THREE_FRY":
        per = 2 if wide else 4
        return (len(shape) - 1, per) if shape[-1] % per == 0 else None
    even = [d for d, size in enumerate(shape) if size % 2 == 0]
    return (even[0], 2) if even else None


def rng_block_time(chip: Chip, op: hlo.RngBitGeneratorOp, blocks: Sequence[int]) -> float:
    """Seconds of the bits loop's body on an output block: its VPU ops and, grouped, the
    interleave's store of the words to a VMEM scratch and their load back."""
    n = math.prod(blocks)
    seconds = n * rng_ops_per_element(op) / chip.vpu_flops
    if rng_groups(op) is not None:
        elem = op.output.type.element_type  # pyright: ignore[reportAttributeAccessIssue]
        seconds += vmem_time(chip, 2 * n * element_bytes(elem))
    return seconds


def rng_bit_generator_flops(op: hlo.RngBitGeneratorOp) -> float:
    """VPU ops of the output (`rng_ops_per_element` per element)."""
    out = op.output.type
    assert isinstance(out, TensorType)
    return float(_elements(out) * rng_ops_per_element(op))


# VPU ops per element of an elementwise op (issue 15 item 5, helper opspeed) ----------------

FMOD_STEPS: dict[str, tuple[int, int]] = {
    "f32": (28, 11),  # significand 24 bits; |a / b| < 2^128 / 2^-149 = 2^277
    "bf16": (44, 7),  # 8 bits; < 2^128 / 2^-133
    "f16": (41, 2),  # 11 bits; < 2^16 / 2^-24
    "f8E4M3FN": (48, 2),  # 4 bits; < 2^9 / 2^-9
    "f8E5M2": (49, 2),  # 3 bits; < 2^16 / 2^-16
}
"""
A float remainder (fmod) has no VPU instruction: it is reduced in exact f64 steps
(lowering/vector_ops.py `float_remainder` has the argument), each taking `bits` quotient
bits. Per type: (quotient bits per step, steps: ceil(log2 of the largest ratio / bits) + 1).
"""
FMOD_STEP_OPS = 15
"""Vector ops of one reduction step: r / B, its exponent (bitcast, shift), the scale
2^k as max(exponent - bits, bias) shifted into place, t = B * 2^k, q = trunc(r / t),
r - q * t, and t added back where that went below zero."""
FMOD_FIXED_OPS = 29
"""Vector ops of a remainder outside its steps: the conversions to f64 and back, |a| and
|b|, the NaN / infinity / zero cases and their results, the sign of a, and the splat
constants (one op per element each, as the level-T simulator charges a splat)."""


# f64 remainder's long division (issue 15 item 5, helper dtcost) -------------------------

F64_FMOD_STEP_BITS = 10
"""Quotient bits per step of f64's remainder (lowering/f64_remainder.py): the partial
remainder r < 2^53 shifted left by 10 bits stays below 2^63, a positive i64."""
F64_FMOD_STEPS = -(-2045 // F64_FMOD_STEP_BITS)
"""Steps of f64's long division: the largest exponent difference (2046 - 1) over the bits
per step (205); every lane takes them all (a lane that is done shifts by 0)."""
F64_FMOD_STEP_OPS = 5
"""Vector ops of one step: the shift max(min(d, 10), 0) (two), r << s, r mod my, d - s."""
F64_FMOD_FIXED_OPS = 55
"""Vector ops of an f64 remainder outside its steps: the bitcasts, |x| and |y|, the
significands and exponents, the scale back to f64, the sign, the special cases, and the
splat constants (one op per element each, as the level-T simulator charges a splat)."""


ATAN2_OPS = 72
"""Vector ops of an f64 atan2 (lowering/atan2.py: no arctangent instruction): |y|, |x|,
t = min / max and its two special cases, the reduction t > 0.66, Cephes' P(z) / Q(z)
by Horner, the quadrant n pi/4 +- atan(r) by selects, y's sign, and the splat constants
(one op per element each, as the level-T simulator charges a splat)."""
ATAN2_WIDEN_OPS = 3
"""An atan2 of a narrower float: its two operands converted to f64, the result back."""


# Unary math without an instruction (issue 15 item 3, helper unarya) ------------------------

UNARY_MATH_OPS: dict[str, int] = {
    "hlo.floor": 1,  # the VPU's rounding instructions
    "hlo.ceil": 1,
    "hlo.round_nearest_even": 1,
    "hlo.round_nearest_afz": 1,
    "hlo.sign": 5,  # splats 0 and 1, x ueq 0, copysign(1, x), the select
    "hlo.tan": 3,  # sin, cos, the quotient
    "hlo.expm1": 66,  # Kahan's quotient: exp, u - 1, log, x / log(u), the product, three
    # selects and their compares (overflow, -1, u == 1), splats 1, -1, inf; Taylor's:
    # sixteen coefficients (splats; 1/2! is the threshold's 0.5 too) by Horner (30),
    # x + x (x P) (three), |x| < 0.5 (abs, compare, select)
    "hlo.log1p": 14,  # u = 1 + x and its two-sum error (five more), log, c / u, the sum,
    # two selects and compares, splat 1
    "hlo.cosh": 84,  # |x|, expm1's 66, 1 + t^2 / (2 (1 + t)) (five), e / 2 + 1 / (2 e)
    # (three: the 0.5 is Taylor's), the overflow branch (six, exp(|x| / 2)), the select by
    # ln2 / 2 (three)
    "hlo.sinh": 52,  # |x|, x^2, Taylor's eleven coefficients (splats) by Horner (20), its
    # sum (three), exp, e / 2 - 1 / (2 e) (four), the overflow branch (seven), x's sign,
    # the select by |x| < 1.5 (three)
    "hlo.cbrt": 14,  # |x|, exp(log|x| / 3) (four, splat 3), the Newton step (five), x's
    # sign, 0 and inf kept (|x| + |x| == |x|, the select)
}
"""
Vector ops per element of the elementwise ops level T has no instruction for (but the
rounding ones), as lowering/unary_math.py emits them (the value's type for floor, ceil,
the roundings and sign; f64 code for the others; a splat constant is one op per element,
as the level-T simulator charges it). A test counts the simulator's ops against this.
"""
UNARY_MATH_WIDEN_OPS = 2
"""Converts around `UNARY_MATH_OPS`: to f64 and back for the f64 code of a type other than
f64; to f32 and back for the own-type ops of bf16, f16 and f8."""
INT_SIGN_OPS = {"signed": 4, "unsigned": 3}
"""An integer sign: min(max(x, -1), 1) with its two splats; min(x, 1) with the splat of an
unsigned 1 (a signless splat and its convert). Sub-byte integers: `UNARY_MATH_WIDEN_OPS`
more (unpacked to i32 lanes, where they take the signed form, and packed back)."""
_OWN_TYPE = frozenset(
    ("hlo.floor", "hlo.ceil", "hlo.round_nearest_even", "hlo.round_nearest_afz", "hlo.sign")
)


def unary_math_ops(op: Operation) -> int | None:
    """Vector ops per element of `op` if lowering/unary_math.py computes it
    (`UNARY_MATH_OPS`, `UNARY_MATH_WIDEN_OPS`, `INT_SIGN_OPS`), else None."""
    ops = UNARY_MATH_OPS.get(op.name)
    if ops is None:
        return None
    out = op.results[0].type
    assert isinstance(out, TensorType)
    elem = out.element_type
    if isinstance(elem, IntegerType):  # sign
        width = elem.width.data
        if width < 8:
            return INT_SIGN_OPS["signed"] + UNARY_MATH_WIDEN_OPS
        return INT_SIGN_OPS["unsigned" if hlo.is_unsigned(elem) else "signed"]
    name = str(elem)
    wide = name == "f64" or (name == "f32" and op.name in _OWN_TYPE)
    return ops + (0 if wide else UNARY_MATH_WIDEN_OPS)


# CHLO's special functions as vector code (issue 15 item 3, helper unaryb) -----------------

ERF_INV_NEWTON_STEPS = 6
"""Newton steps of erf_inv after Giles' approximation (level S's, interpreter/hlo_special.py)."""
ERF_INV_STEP_OPS = 89
"""Vector ops of one erf_inv Newton step (lowering/special_functions.py): erf'(x) (4),
erf (1), Cody's erfc (75: his two rational functions, exp(-x^2) as two exact parts, the
selects of the three intervals), the log erfc residual times erfc (4), the erf residual
and the select of the two (3), the step (2)."""
DIGAMMA_STEPS = 10
"""Steps of digamma's recurrence psi(x) = psi(x + 1) - 1/x (level S's): every x >= 1/2
reaches 10, where the asymptotic series takes over."""
DIGAMMA_STEP_OPS = 6
"""x < 10, 1/x subtracted, x + 1, and the two selects that stop a lane at 10."""
SPECIAL_FUNCTION_OPS: dict[str, int] = {
    "hlo.asin": ATAN2_OPS + 4,  # atan2(x, sqrt((1 - x)(1 + x))), atan2's splats shared
    "hlo.acos": ATAN2_OPS + 4,  # atan2(sqrt((1 - x)(1 + x)), x)
    "hlo.asinh": 29,  # three branches (log1p: 6 ops), their selects, the sign; 5 splats
    "hlo.acosh": 33,  # three branches, their selects, NaN below 1; 6 splats
    "hlo.atanh": 22,  # two log1p arguments, log1p, +-inf at +-1, the sign; 4 splats
    "hlo.lgamma": 189,  # Lanczos' sum in x and in 1/x (97), |sin(pi x)| (29); 36 splats
    "hlo.digamma": 68 + DIGAMMA_STEPS * DIGAMMA_STEP_OPS,  # reflection, series; 13 splats
    "hlo.erf_inv": 113 + ERF_INV_NEWTON_STEPS * ERF_INV_STEP_OPS,  # Giles; 59 splats
}
"""
Vector ops per element of the f64 code of `lower-to-tpu`'s asin, acos, asinh, acosh,
atanh, lgamma, digamma and erf_inv (lowering/special_functions.py: level T has no
instruction for them), splat constants included (one op per element each, as the
level-T simulator charges a splat); a test counts the simulator's ops against it.
"""
SPECIAL_FUNCTION_WIDEN_OPS = UNARY_MATH_WIDEN_OPS
"""A special function of a narrower float: its operand converted to f64, the result back
(the same two converts as `UNARY_MATH_WIDEN_OPS`)."""


def elementwise_vpu_ops(op: Operation) -> int:
    """
    VPU ops per result element of an elementwise op: one, but a float remainder below f64
    takes `FMOD_FIXED_OPS + steps * FMOD_STEP_OPS`, an f64 one
    `F64_FMOD_FIXED_OPS + F64_FMOD_STEPS * F64_FMOD_STEP_OPS`, a complex op its loop on
    the parts' `complex_part_ops`, an atan2 `ATAN2_OPS` (+ `ATAN2_WIDEN_OPS` below f64; an atan one more)
    a unary op without an instruction (floor ... sinh) `unary_math_ops`, and a special
    function (asin ... erf_inv) `SPECIAL_FUNCTION_OPS` (+ the widening)
    (what `lower-to-tpu` emits: tests count the simulator's ops of the lowered kernel
    against this).
    """
    if isinstance(op, hlo.Atan2Op | hlo.AtanOp):  # atan: atan2(x, 1), the 1 a splat
        out = op.results[0].type
        assert isinstance(out, TensorType)
        wide = str(out.element_type) == "f64"
        one = 1 if isinstance(op, hlo.AtanOp) else 0
        return ATAN2_OPS + one + (0 if wide else ATAN2_WIDEN_OPS)
    unary = unary_math_ops(op)  # floor .. sinh: their vector code (unary_math.py)
    if unary is not None:
        return unary
    if op.name in SPECIAL_FUNCTION_OPS:  # f64 vector code, the converts below f64
        out = op.results[0].type
        assert isinstance(out, TensorType)
        wide = str(out.element_type) == "f64"
        return SPECIAL_FUNCTION_OPS[op.name] + (0 if wide else SPECIAL_FUNCTION_WIDEN_OPS)
    if isinstance(op, hlo.RemainderOp):
        out = op.results[0].type
        assert isinstance(out, TensorType)
        steps = FMOD_STEPS.get(str(out.element_type))
        if steps is not None:
            return FMOD_FIXED_OPS + steps[1] * FMOD_STEP_OPS
        if str(out.element_type) == "f64":
            return F64_FMOD_FIXED_OPS + F64_FMOD_STEPS * F64_FMOD_STEP_OPS
    parts = complex_part_ops(op)  # a complex op: its loop on the parts (dtcost)
    return plain_elementwise_ops(op) if parts is None else parts


# Ops computed in a wider type, and ops of a few instructions (issue 15 item 5) -------------

LOW_PRECISION_FLOATS = ("bf16", "f16", "f8E4M3FN", "f8E5M2")
"""Floats the VPU computes in f32 (lowering/vector_ops.py `elementwise`): each operand
widened (`extf`), the op in f32, the result narrowed (`truncf`): rounded once per op, as
level S's ml_dtypes / numpy arithmetic rounds. A compare, select or convert runs on them
as they are."""

FLOAT_MATH_OPS = {"hlo.logistic": 5, "hlo.erfc": 3, "hlo.clamp": 2, "hlo.is_finite": 5}
"""Float ops of several vector ops (vector_ops.py `_float_math`): logistic 1 / (1 + exp(-x))
(the 1 a splat, negate, exp, add, divide), erfc 1 - erf(x) (splat, erf, subtract), clamp
min(max(x, lo), hi), is_finite -inf < x < inf (two splats, two compares, an and); any
other float op is one."""

INT_MATH_OPS = {
    "hlo.not": 2,  # x xor -1, the -1 a splat
    "hlo.neg": 2,  # 0 - x, the 0 a splat
    "hlo.remainder": 3,  # a - div(a, b) * b
    "hlo.clamp": 2,  # min(max(x, lo), hi)
    "hlo.shift_left": 7,  # amount < width (a splat, a compare), clipped (a splat, a
    "hlo.shift_right_logical": 7,  # select), the shift, 0 beyond (a splat, a select)
    "hlo.shift_right_arithmetic": 5,  # the sign fill beyond: no final select
}
"""Signed / signless integer ops of several vector ops (vector_ops.py `_int_math`,
`_shift`); any other is one."""

UNSIGNED_INT_MATH_OPS = INT_MATH_OPS | {
    "hlo.not": 3,  # an unsigned splat is two ops: the signless bits, converted
    "hlo.neg": 3,
    "hlo.abs": 0,  # |x| = x: nothing emitted
    "hlo.popcnt": 3,  # on the signless bits: converted there and back
    "hlo.count_leading_zeros": 3,
    "hlo.shift_left": 10,  # three unsigned splats
    "hlo.shift_right_logical": 10,
    "hlo.shift_right_arithmetic": 7,  # two
}
"""`INT_MATH_OPS` of unsigned integers of a byte or more (vector_ops.py `splat_vector`)."""

NARROW_BITS_OPS = {
    "hlo.popcnt": 3,  # the w bits (a splat mask, an and), ctpop
    "hlo.count_leading_zeros": 5,  # the w bits, clz, less 32 - w (a splat, a subtract)
    "hlo.shift_left": 4,  # the w bits of both (a splat mask, two ands), the shift
    "hlo.shift_right_logical": 4,
    "hlo.shift_right_arithmetic": 9,  # the w bits sign-extended (a splat, shl, shrsi),
}  # the amount clipped to w - 1 (a splat, a min), the shift
"""Ops of a sub-byte integer's bits on its i32 unpacking (lowering/narrow_ints.py
`_bits_op`), without the unpacking and packing (`compute_widen_ops`)."""

_AS_STORED = (hlo.ConvertOp, hlo.SelectOp, hlo.BitcastConvertOp)
"""Ops the lowering runs on the stored type, never widened (vector_ops.py `elementwise`)."""


def _element(v: SSAValue) -> Attribute:
    ty = v.type
    assert isinstance(ty, TensorType)
    return ty.element_type


def _shape(v: SSAValue) -> tuple[int, ...]:
    ty = v.type
    assert isinstance(ty, TensorType)
    return ty.get_shape()


def _is_narrow_int(elem: Attribute) -> bool:
    """A sub-byte integer (i2 i4 ui2 ui4; lowering/narrow_ints.py `is_narrow`)."""
    return isinstance(elem, IntegerType) and 1 < elem.width.data < 8


def compute_widen_ops(op: Operation) -> int:
    """
    Converts per element around elementwise `op` where the VPU computes it in a wider type
    than it stores: bf16 / f16 / f8 (`LOW_PRECISION_FLOATS`, but a compare) each operand
    widened to f32 and the result narrowed; a sub-byte integer each operand unpacked to
    i32 and the result packed (a compare's i1 is not). Widened once per distinct operand
    (x * x: once), as the lowering does; in a fusion a value feeding two ops is widened
    for each (a bf16 intermediate is narrowed and widened again: the rounding level S's
    numerics need).
    """
    if isinstance(op, _AS_STORED) or not op.operands:
        return 0
    elem, out = _element(op.operands[-1]), _element(op.results[0])
    distinct = len(set(op.operands))
    if _is_narrow_int(elem):
        return distinct + (1 if _is_narrow_int(out) else 0)
    if str(elem) in LOW_PRECISION_FLOATS and isinstance(op, hlo.IsFiniteOp):
        return distinct  # widened to compare with the infinities; its i1 is not narrowed
    if str(elem) in LOW_PRECISION_FLOATS and not isinstance(op, hlo.CompareOp):
        return distinct + 1
    return 0


def operand_repeats(operands: Sequence[SSAValue]) -> tuple[int, ...]:
    """
    Where an op reads one value more than once (x * x), the position of each operand's
    first occurrence; () when every operand is a distinct value. An elementwise op's cost
    depends on it (`compute_widen_ops` widens each distinct operand once, a clamp
    broadcasts each distinct rank-0 bound once), not on its types alone, so a cost
    remembered by types (`CachedCostModel.key`, `kernel.op_kernel_time`) holds it too.
    """
    if len(operands) < 2 or len(set(operands)) == len(operands):
        return ()
    return tuple(next(j for j, w in enumerate(operands) if w is v) for v in operands)


def plain_reduce_ops(elem: Attribute) -> int:
    """
    Vector ops per reduced element of a reduce add / mul / max / min of `elem` without a
    body (lowering/compute.py `_reduce`): the fold, and the element converted to what it
    accumulates in first where that differs (bf16 / f16 / f8 to f32, a sub-byte integer
    or a predicate to i32: `accumulation_type`).
    """
    acc = accumulation_type(elem)
    return 2 if acc != elem or _is_narrow_int(elem) or elem == i1 else 1


def plain_elementwise_ops(op: Operation) -> int:
    """
    Vector ops per element of an elementwise op of real types `lower-to-tpu` computes with
    `arith` / `math` instructions (vector_ops.py `elementwise`): `FLOAT_MATH_OPS`,
    `INT_MATH_OPS` (on a sub-byte integer's unpacking `NARROW_BITS_OPS` for its bits),
    else one, plus `compute_widen_ops` (and a clamp's rank-0 bounds broadcast, one op
    each). Tests count the simulator's ops against it.
    """
    if isinstance(op, _AS_STORED) or not op.operands:
        return 1
    elem = _element(op.operands[-1])
    if _is_narrow_int(elem):  # computed on its signless i32 unpacking
        ops = NARROW_BITS_OPS.get(op.name) or INT_MATH_OPS.get(op.name, 1)
    elif isinstance(elem, IntegerType) and hlo.is_unsigned(elem):
        ops = UNSIGNED_INT_MATH_OPS.get(op.name, 1)
    elif isinstance(elem, IntegerType):
        ops = INT_MATH_OPS.get(op.name, 1)
    else:
        ops = FLOAT_MATH_OPS.get(op.name, 1)
    if isinstance(op, hlo.ClampOp) and _shape(op.operands[1]):  # rank-0 bounds broadcast
        ops += len({v for v in op.operands if not _shape(v)})
    return ops + compute_widen_ops(op)


# Complex ops on their parts (issue 15 item 5, helper dtcost) -------------------------------

COMPLEX_PART_OPS: dict[tuple[str, str], int] = {
    ("hlo.add", "f32"): 2,
    ("hlo.sub", "f32"): 2,
    ("hlo.neg", "f32"): 2,
    ("hlo.mul", "f32"): 13,  # four products, the fma's in f64: five converts in, two out
    ("hlo.div", "f32"): 33,  # Smith's two branches, the zero divisor, the selects
    ("hlo.abs", "f32"): 14,  # sqrt of the squares in f64, the infinities
    ("hlo.add", "f64"): 2,
    ("hlo.sub", "f64"): 2,
    ("hlo.neg", "f64"): 2,
    ("hlo.mul", "f64"): 15,  # six, and fma's infinities where a part is NaN (nine)
    ("hlo.div", "f64"): 33,
    ("hlo.abs", "f64"): 18,  # max * sqrt(1 + (min / max)^2), the zero and infinities
    ("hlo.compare", "f32"): 3,  # the parts compared, and (EQ) / or (NE)
    ("hlo.compare", "f64"): 3,
    ("hlo.select", "f32"): 2,
    ("hlo.select", "f64"): 2,
    ("hlo.exp", "f32"): 25,  # e^a, cos b, sin b in f64: two converts in, two out
    ("hlo.exp", "f64"): 21,  # the products and C99's special values (complex_pairs._exp)
    ("hlo.sqrt", "f32"): 43,  # the stable formula in f64, b's sign bit, C99's specials
    ("hlo.sqrt", "f64"): 67,  # the same scaled into range, the modulus without overflow
    ("hlo.log", "f32"): 111,  # log|z| in f64 (log1p near |z| = 1), atan2's ATAN2_OPS
    ("hlo.log", "f64"): 155,  # the same with Dekker's exact squares and two-sums, no overflow
    ("hlo.max", "f32"): 15,  # numpy's lexicographic order: compares, ands, ors, selects
    ("hlo.max", "f64"): 15,
    ("hlo.min", "f32"): 15,
    ("hlo.min", "f64"): 15,
    ("hlo.pow", "f32"): 353,  # exp(b log a), the exponent multiplied out, its specials
    ("hlo.pow", "f64"): 393,  # the same with f64's log and exp
}
"""
A TPU has no complex unit: `lower-to-tpu` computes a complex add, subtract, negate,
multiply, divide, abs, exp, sqrt, log, max, min, pow, compare (EQ / NE) or select as ONE loop
over the parts (lowering/complex_pairs.py: the parts in, the result's parts out). Its
vector ops per element (an atan2 counts its `elementwise_vpu_ops`), by op and part type (a splat constant is one op per element, as the level-T
simulator charges it); a test counts the loop's ops against this table. A convert's:
`complex_convert_ops`.
"""

_COMPLEX_LOOPS = (
    hlo.BinaryElementwiseOp,
    hlo.UnaryElementwiseOp,
    hlo.CompareOp,
    hlo.SelectOp,
    hlo.ConvertOp,
)


def complex_convert_ops(src: Attribute, dst: Attribute) -> int:
    """
    Vector ops per element of a convert from or to a complex type on the parts
    (lowering/complex_pairs.py `_convert`): complex -> complex each part converted (none
    between equal types: the parts' DMAs only); real -> complex the zero imaginary part (a
    splat) and the value converted unless it has the part type; complex -> i1 `re != 0 or
    im != 0` (two splats, two compares, the or); complex -> real the real part converted
    unless it has the part type (then `hlo.real` alone).
    """
    if isinstance(dst, ComplexType):
        if isinstance(src, ComplexType):
            return 0 if src == dst else 2
        return 1 if src == dst.element_type else 2
    assert isinstance(src, ComplexType)
    if dst == i1:
        return 5
    return 0 if src.element_type == dst else 1


def complex_part_ops(op: Operation) -> int | None:
    """Vector ops per element of the loop on the parts `lower-to-tpu` makes of complex
    `op` (`COMPLEX_PART_OPS`, `complex_convert_ops`); None: not a complex op lowered so."""
    if not isinstance(op, _COMPLEX_LOOPS):
        return None
    types = [t.element_type for t in _tensor_types([*op.operands, *op.results])]
    parts = [e.element_type for e in types if isinstance(e, ComplexType)]
    if not parts:
        return None
    if isinstance(op, hlo.ConvertOp):
        return complex_convert_ops(types[0], types[-1])
    return COMPLEX_PART_OPS.get((op.name, str(parts[0])))


COMPLEX_FOLDS = ("mul", "max", "min")
"""The complex reduces `lower-to-tpu` folds on the parts (lowering/complex_pairs.py `_fold`:
a reduce with a body, lowering/reduce_body.py); add sums the parts' view."""
PLAIN_PRODUCT_OPS = 6
"""Vector ops of a complex product as ar br - ai bi + i (ar bi + ai br), each product and
sum rounded in the part type (`complex_fold_plain`)."""


def complex_fold(op: Operation) -> bool:
    """Whether `op` is a complex reduce mul / max / min without a body (`COMPLEX_FOLDS`)."""
    if not isinstance(op, hlo.ReduceOp) or op.has_body:
        return False
    elem = _tensor_types(op.operands[:1])[0].element_type
    return isinstance(elem, ComplexType) and op.kind.data in COMPLEX_FOLDS


def complex_fold_plain(op: hlo.ReduceOp) -> bool:
    """
    Whether level S's numpy multiplies a complex reduce's values uncontracted: where its
    iteration's innermost axis (the operand's last of size > 1, row-major) is reduced,
    numpy's reduce loop computes ar br - ai bi + i (ar bi + ai br) with every product and
    sum rounded in the part type; otherwise its elementwise loop, whose products are
    contracted into fused multiply-adds (lowering/complex_pairs.py `_mul`). Measured on
    this machine's numpy for both part types; a level-S value that is not row-major in
    memory (a transpose's view) may take the other loop (within an ulp per product).
    """
    shape = _tensor_types(op.operands[:1])[0].get_shape()
    inner = [d for d, n in enumerate(shape) if n > 1]
    return not inner or inner[-1] in op.dims


def complex_fold_ops(op: hlo.ReduceOp) -> int:
    """Vector ops per element of a complex fold's body (`complex_fold`): the product
    (`PLAIN_PRODUCT_OPS`, or the contracted one's `COMPLEX_PART_OPS`) or max / min's."""
    part = _tensor_types(op.operands[:1])[0].element_type
    assert isinstance(part, ComplexType)
    kind = op.kind.data
    if kind == "mul" and complex_fold_plain(op):
        return PLAIN_PRODUCT_OPS
    return COMPLEX_PART_OPS[(f"hlo.{kind}", str(part.element_type))]


PAIRS_ATTR = "tpu.complex_pairs"
"""On a reducing collective of kind mul, max or min that `lower-to-tpu` runs on complex
values' parts' views (lowering/complex_pairs.py): the indices of its operands that are
such views (a last dimension of 2), whose ring combines each (re, im) pair as one complex
number (lowering/pair_combine.py); its other operands are real. Only `lower-to-tpu` makes
it; the cost model reads it to cost the rewritten collective as the complex one."""


def pair_operands(op: Operation) -> tuple[int, ...]:
    """The operands of `op` whose last dimension holds complex (re, im) pairs to combine
    as complex numbers (`PAIRS_ATTR`)."""
    attr = op.attributes.get(PAIRS_ATTR)
    if not isinstance(attr, DenseArrayBase):
        return ()
    return tuple(int(i) for i in attr.get_values())


def ring_combine_ops(elem: Attribute, kind: str) -> int:
    """
    Vector ops per element of one combine of a ring reduction (lowering/reduce_ring.py
    `combine`, an all_reduce tail's rows): the reduction's one op, the own value widened
    first where partial sums accumulate wider (bf16, f16: an `extf`); on complex values
    add sums both parts, mul / max / min take each (re, im) pair as one complex number
    (lowering/pair_combine.py): their elementwise op's loop body (`COMPLEX_PART_OPS`: 13
    for a complex<f32> product, its fma in f64; 15 for complex<f64>, its NaN parts
    recovered as numpy's fma makes them; 15 for max / min).
    """
    if isinstance(elem, ComplexType):
        if kind == "add":
            return 2
        return COMPLEX_PART_OPS[(f"hlo.{kind}", str(elem.element_type))]
    return 1 if accumulation_type(elem) == elem else 2


def combined_type(op: Operation, index: int, elem: Attribute) -> Attribute:
    """The element type collective `op`'s ring combines operand `index` as: `elem`, but a
    complex value's parts' view (`pair_operands`) as the complex number its pairs are."""
    if index in pair_operands(op):
        return ComplexType(elem)  # pyright: ignore[reportArgumentType]
    return elem


def complex_parts_read(op: Operation, value: SSAValue) -> int:
    """How many parts of complex operand `value` the loop on the parts of `op` reads: a
    convert to a real type other than i1 its real part only, else both."""
    res = _tensor_types(op.results)[0].element_type
    if isinstance(op, hlo.ConvertOp) and not isinstance(res, ComplexType) and res != i1:
        return 1
    return 2


def complex_dot(op: Operation) -> bool:
    """Whether `op` is a complex dot, which `lower-to-tpu` computes as four real dots of
    the parts, the real part's difference and the imaginary part's sum (two more loops)."""
    if not isinstance(op, hlo.DotOp):
        return False
    return isinstance(_tensor_types([op.lhs])[0].element_type, ComplexType)


_MOVES_PARTS = (
    hlo.BroadcastOp,
    hlo.ReshapeOp,
    hlo.TransposeOp,
    hlo.SliceOp,
    hlo.ConcatenateOp,
    hlo.RealOp,
    hlo.ImagOp,
    hlo.ComplexOp,
    hlo.ReturnOp,
)
"""Ops of a fusion's body that only move parts: on complex values, the same op on each
part (a broadcast ...), or picking or pairing parts (real, imag, complex: no op at all)."""


def touches_complex(op: Operation) -> bool:
    """Whether an operand or result of `op` is a complex tensor (one test for the cost
    model and `lowering/complex_pairs.py`)."""
    types = _tensor_types([*op.operands, *op.results])
    return any(isinstance(t.element_type, ComplexType) for t in types)


def fusion_on_parts(op: Operation) -> bool:
    """
    Whether `lower-to-tpu` computes fusion `op` as one fusion on the parts of its complex
    values (lowering/complex_pairs.py `ComplexFusion`): it has complex values and each of
    its complex ops is a loop on the parts (`complex_part_ops`) or moves parts. Its
    complex operands are split before it and its complex results joined after it
    (`part_dma_bytes`); inside, `hlo.real` / `imag` / `complex` cost nothing.
    """
    if not isinstance(op, hlo.FusionOp):
        return False
    ops = [o for o in op.body.block.ops if touches_complex(o)]
    return bool(ops) and all(
        isinstance(o, _MOVES_PARTS) or complex_part_ops(o) is not None for o in ops
    )


def bitcast_view(op: Operation) -> bool:
    """
    Whether `lower-to-tpu` lowers `op`, a `bitcast_convert` between widths, as a view of
    its operand's HBM buffer (`tpu.memref_bitcast`: the same bytes, read where they are)
    rather than a DMA into a buffer of its own: at the function's top level (a loop's
    carried buffers are rewritten each trip) where no `func.return` reads its result (an
    output is a buffer of its own). A complex tensor's parts' view (a last dimension of
    2: lowering/complex_pairs.py) is such a bitcast; copying it was a whole extra pass
    through HBM on both sides of a complex reduce or collective (level T 2.9x level S).
    """
    if not isinstance(op, hlo.BitcastConvertOp) or op.extra_dim() == 0:
        return False
    if not isinstance(op.parent_op(), func.FuncOp):
        return False
    return not any(isinstance(u.operation, func.ReturnOp) for u in op.result.uses)


def unviewed_result_bytes(op: Operation) -> int:
    """
    HBM traffic of copying `op`'s complex results out of the parts' views `lower-to-tpu`
    computes them in (a reduce add, a fusion on the views: lowering/complex_pairs.py),
    where the view back to the complex type is not in place (`bitcast_view`): a result
    `func.return` reads is a buffer of its own, and so is every one inside a region. An
    HBM-to-HBM DMA each (`hbm_copy_bytes`).
    """
    top = isinstance(op.parent_op(), func.FuncOp)
    moved = 0
    for r in op.results:
        if not isinstance(r.type, TensorType) or not isinstance(r.type.element_type, ComplexType):
            continue
        if not top or any(isinstance(u.operation, func.ReturnOp) for u in r.uses):
            moved += tensor_bytes(r.type)
    return hbm_copy_bytes(moved)


def part_dma_bytes(op: Operation) -> int | None:
    """
    HBM traffic of the strided DMAs between a complex tensor and its parts (lowering/
    movement.py: one HBM-to-HBM DMA per part, each part's bytes read and written:
    `dma_hbm_passes`): `hlo.real` / `hlo.imag` their result, `hlo.complex` its result; a
    complex op on its parts (`complex_part_ops`, `complex_dot`, `fusion_on_parts`) its
    complex operands (both parts out; a convert to a real type: the real part) and complex
    results (both parts in) around its loops. None: no such DMAs.
    """
    if isinstance(op, hlo.RealOp | hlo.ImagOp | hlo.ComplexOp):
        moved = sum(tensor_bytes(t) for t in _tensor_types(op.results))
    elif fusion_on_parts(op):  # every complex operand split, every complex result joined
        values = _tensor_types([*op.operands, *op.results])
        moved = sum(tensor_bytes(t) for t in values if isinstance(t.element_type, ComplexType))
    elif complex_part_ops(op) is None and not complex_dot(op) and not complex_fold(op):
        return None
    else:
        moved = 0
        for v in (*op.operands, *op.results):
            (t,) = _tensor_types([v])
            if isinstance(t.element_type, ComplexType):
                read = 2 if v in op.results else complex_parts_read(op, v)
                moved += tensor_bytes(t) * read // 2
    return dma_hbm_passes(True, True) * moved


# Sorting networks (issue 15 item 5, helper opspeed) ----------------------------------------

SORT_SELECT_OPS = 2
"""Per compare-exchange and buffer moved: the two selects (lesser first, greater second)."""
SORT_DIRECTION_OPS = 5
"""Per compare-exchange of a merge smaller than the row: whether its block runs
descending (the block index's bit: a splat, an and, a splat, a compare) and the xor."""


def sort_packs(op: Operation) -> bool:
    """
    Whether `lower-to-tpu` sorts with one 64-bit key per element (lowering/sorting.py:
    the key operand's order as 32 bits, the position as the other 32): keys of floats and
    integers up to 32 bits, not i1; then a compare-exchange is one compare of the keys and
    two selects per buffer moved (the key and every operand). top_k's selection passes
    (k small) are not a network.
    """
    elem = _tensor_types(op.operands[:1])[0].element_type
    kind = hlo.element_kind(elem)
    return kind in (hlo.FLOAT, hlo.INT) and element_bytes(elem) <= 4 and elem != i1


def sort_selects(op: Operation) -> bool:
    """Whether a top_k takes k selection passes (lowering/sorting.py `_select_top`: ~10
    VPU ops per element each) rather than the network (L(L + 1)/2 stages of ~15)."""
    if not isinstance(op, hlo.TopKOp):
        return False
    elem = _tensor_types(op.operands[:1])[0].element_type
    if hlo.element_kind(elem) == hlo.BOOL or hlo.is_unsigned(elem):
        return False  # `tpu.reduce max` of the signed keys only
    n = _tensor_types(op.operands[:1])[0].get_shape()[-1]
    levels = (1 << max(n - 1, 0).bit_length()).bit_length() - 1
    return 10 * op.count < 15 * levels * (levels + 1) // 2


def network_sort(op: Operation) -> bool:
    """A sort or top_k `lower-to-tpu` orders with the packed network (`sort_network_work`)."""
    return sort_packs(op) and not sort_selects(op)


def _sort_key_ops(elem: Attribute, total: bool, descending: bool) -> int:
    """VPU ops per position of building the packed key (lowering/sorting.py `_store_key`;
    each splat constant is one op per element, as the level-T simulator charges it)."""
    ops = 1 + 3  # widen to 64 bits; shift (its splat) and or in the position
    if hlo.element_kind(elem) == hlo.FLOAT:
        ops += 1 + (element_bytes(elem) < 4) + 5  # bitcast (sign-extend), the sign fold
        ops += 0 if total else 4 + 3  # -0 as +0, NaN the largest
        biased = True
    else:
        biased = not hlo.is_unsigned(elem)
    return ops + (2 if descending or biased else 0)


def sort_network_work(op: hlo.SortOp | hlo.TopKOp) -> tuple[float, int]:
    """
    (VPU ops, VMEM bytes loaded and stored) of the packed bitonic network `lower-to-tpu`
    runs for a sort or top_k (`sort_packs`), from its types: per row P = n rounded up to a
    power of two, L = log2 P, L(L + 1)/2 stages, each loading and storing every buffer
    (two halves) and per compare-exchange one compare, `SORT_SELECT_OPS` per buffer and,
    in merges smaller than the row, `SORT_DIRECTION_OPS`; before it the key built
    (`_sort_key_ops`) and the padding zeroed; top_k's index taken from the keys after it.
    tests/unit/test_lower_sorting.py checks the lowered kernel's ops and time against this.
    """
    types = _tensor_types(op.operands)
    shape = types[0].get_shape()
    if isinstance(op, hlo.SortOp):
        dim, words = op.dim, op.comparator.data.split()
        descending, total = words[0] == "GT", "TOTALORDER" in words
        m = shape[dim]
    else:
        dim, descending, total, m = len(shape) - 1, True, True, op.count
    n = shape[dim]
    p = 1 << max(n - 1, 0).bit_length()
    levels = p.bit_length() - 1
    stages = levels * (levels + 1) // 2
    lines = math.prod(shape) // n  # rows x inner
    widths = [8] + [element_bytes(t.element_type) for t in types]  # the key, the operands
    pair_ops = stages * (1 + SORT_SELECT_OPS * len(widths)) + (stages - levels) * SORT_DIRECTION_OPS
    ops = lines * (p // 2) * pair_ops
    vmem = lines * p * stages * 2 * sum(widths)
    elem = types[0].element_type
    ops += lines * p * _sort_key_ops(elem, total, descending)
    vmem += lines * p * (element_bytes(elem) + 8)  # the key operand loaded, the key stored
    if n < p:  # the padding's keys (a compare, two splats, a select); the operands zeroed
        ops += lines * p * 4
        for t in types:
            ops += lines * (p - n) * (2 if hlo.is_unsigned(t.element_type) else 1)
            vmem += lines * (p - n) * element_bytes(t.element_type)
    if isinstance(op, hlo.TopKOp):  # the index: the keys' low halves (an and, a splat, a convert)
        ops += lines * m * 3
        vmem += lines * m * (8 + 4)
    return float(ops), vmem


def sort_time(chip: Chip, op: hlo.SortOp | hlo.TopKOp, hbm: int) -> float:
    """Seconds of a packed network sort: its blocks fetched, ordered in VMEM and written
    back in turn (nothing overlaps: one block at a time), `hbm` bytes in all."""
    ops, vmem = sort_network_work(op)
    return hbm / chip.hbm_bw + ops / chip.vpu_flops + vmem_time(chip, vmem)


def value_vpu_ops(v: SSAValue) -> int:
    """VPU ops per element of a fused value: its op's (`elementwise_vpu_ops`); an operand
    of the fusion (a block argument) is one, its load."""
    owner = v.owner
    if not isinstance(owner, Operation):
        return 1
    if isinstance(owner, hlo.RealOp | hlo.ImagOp | hlo.ComplexOp) and touches_complex(owner):
        return 0  # a part picked or paired (`fusion_on_parts`)
    return elementwise_vpu_ops(owner)


SELECT_STEPS = 32
"""Row blocks a selecting top_k is cut into at least, where its rows allow
(lowering/sorting.py `_lower_select`): block t + 1 is fetched while block t is selected
(two VMEM slots), so only the first block's fetch and the last one's selection and
write-back are not hidden, as a real kernel's pipeline."""
SELECT_PASS_OPS = 17
"""VPU ops per element of one selection pass (the largest key not taken, its lowest
position, the value there, marking it taken: `_select_top`, splats included)."""
SELECT_FIXED_OPS = 3
"""VPU ops per element once per block (the transpose, the positions, `taken`)."""
SELECT_FLOAT_KEY_OPS = 7
"""VPU ops per element of a float key's total order as an integer (`_total_key`)."""


def select_blocks(outer: int) -> int:
    """Row blocks of a selecting top_k over `outer` rows: the fewest of at least
    `SELECT_STEPS` that divide it evenly, else one (few rows: nothing worth pipelining;
    lowering/sorting.py may take more when VMEM is short)."""
    many = [b for b in range(SELECT_STEPS, outer + 1) if outer % b == 0]
    return min(many) if many else 1


def select_time(chip: Chip, op: hlo.TopKOp) -> float:
    """
    Seconds of a top_k by selection (lowering/sorting.py `_lower_select`), its row blocks
    double-buffered: the first block's fetch, then per block the longer of its selection
    (VPU ops, the block's VMEM load) plus its result's write-back and the next fetch.
    """
    src = _tensor_types(op.operands[:1])[0]
    elems, blocks = _elements(src), select_blocks(math.prod(src.get_shape()[:-1]))
    key = SELECT_FLOAT_KEY_OPS if hlo.element_kind(src.element_type) == hlo.FLOAT else 0
    ops = elems * (SELECT_FIXED_OPS + key + SELECT_PASS_OPS * op.count)
    fetch = tensor_bytes(src) / blocks / chip.hbm_bw
    out = sum(tensor_bytes(t) for t in _tensor_types(op.results)) / blocks / chip.hbm_bw
    work = (ops / chip.vpu_flops + vmem_time(chip, tensor_bytes(src))) / blocks + out
    return fetch + (blocks - 1) * max(work, fetch) + work


def window_flops(op: hlo.ReduceWindowOp | hlo.SelectAndScatterOp) -> float:
    """
    One combine per window element per window position (reduce_window); select_and_scatter
    without an expansion (complex values, `select_scatter.expands`) compares and then
    adds: two per window element per position (the source's shape).
    """
    positions = _elements(
        _tensor_types([op.results[0] if isinstance(op, hlo.ReduceWindowOp) else op.source])[0]
    )
    per_window = math.prod(op.window)
    return float(positions * per_window * (1 if isinstance(op, hlo.ReduceWindowOp) else 2))


def dma_hbm_passes(src_in_hbm: bool, dst_in_hbm: bool) -> int:
    """
    How many times a device-local DMA's bytes cross its HBM interface: once per end in HBM.
    `Chip.hbm_bw` is the interface's total, which reads and writes share (every roofline
    here charges operands read plus results written against it), so an HBM-to-HBM copy of
    n bytes takes 2 n / hbm_bw and an HBM <-> VMEM/SMEM transfer n / hbm_bw. Level T's DMA
    engine (interpreter/level_t_dma.py) rates a local DMA by it and level S charges the
    copies the lowerings make (gather slices, scatter's operand copy, a collective's own
    block) by it. A VMEM-to-VMEM copy (no lowering makes one) counts one pass: no source
    gives the DMA engine's on-chip rate.
    """
    return max(1, int(src_in_hbm) + int(dst_in_hbm))


def hbm_copy_bytes(nbytes: float) -> float:
    """HBM traffic of copying `nbytes` from HBM to HBM (one local DMA: read and write)."""
    return dma_hbm_passes(True, True) * nbytes


def rs_combine_time(chip: Chip, elems: float, elem: Attribute, reduction: str = "add") -> float:
    """
    Seconds of one reduce-scatter ring step's reduction on a block of `elems` elements
    whose own chunk is of type `elem` (lowering/reduce_ring.py `_ring_step`): the partial
    sum received (in `elem`'s accumulation type) and the own chunk loaded from VMEM, the
    combine's vector ops (`ring_combine_ops`: the own chunk widened if narrower, the
    `reduction`; a complex pair's product or compare), the sum stored back to the
    accumulator. The next step sends that sum, so each step waits for it: a
    latency per step, on the vector unit, that no DMA overlaps (a 4 MiB f32 block on
    v5e: 0.8 us per step).
    """
    acc = accumulation_type(elem)
    own, wide = element_bytes(elem), element_bytes(acc)
    ops = ring_combine_ops(elem, reduction)
    return vmem_time(chip, int(elems * (2 * wide + own))) + vpu_time(chip, int(elems), ops)


def rs_round_combine_time(
    chip: Chip, elems: float, elem: Attribute, reduction: str = "add"
) -> float:
    """
    Seconds of a pipelined low-precision piece's last step's reduction (reduce_ring.py
    `_combine_step`, `rounds`): `rs_combine_time`'s, but the sum rounded to `elem`
    (`arith.truncf`) and stored to the rounded buffer in `elem`, not to the f32
    accumulator, which the next piece's first message already holds; its copy out
    overlaps the next piece's transfers.
    """
    own, wide = element_bytes(elem), element_bytes(accumulation_type(elem))
    ops = ring_combine_ops(elem, reduction) + 1
    return vmem_time(chip, int(elems * (wide + 2 * own))) + vpu_time(chip, int(elems), ops)


def rs_out_fetch_time(chip: Chip, elems: float, elem: Attribute) -> float:
    """
    Seconds of HBM that a pipelined low-precision piece's result copy out (`elems` of
    `elem`, VMEM to HBM) and the next piece's first own-chunk fetch (as many, HBM to
    VMEM) take, started together (reduce_ring.py `_piece_out`): local DMAs share the HBM,
    so they end together, after both's bytes.
    """
    return 2 * elems * element_bytes(elem) * dma_hbm_passes(False, True) / chip.hbm_bw


def rs_lead_time(chip: Chip, elems: float, elem: Attribute) -> float:
    """
    Seconds before a reduce-scatter ring's first send (reduce_ring.py `_first_messages`):
    none where the own chunk of `elems` elements of `elem` is sent from HBM as it is; a
    low-precision one (partial sums travel in f32) is first fetched into VMEM (a local
    DMA from HBM), loaded, widened and stored to the accumulator, and sent from there.
    """
    acc = accumulation_type(elem)
    if acc == elem:
        return 0.0
    own, wide = element_bytes(elem), element_bytes(acc)
    fetch = elems * own * dma_hbm_passes(True, False) / chip.hbm_bw
    return fetch + vmem_time(chip, int(elems * (own + wide))) + vpu_time(chip, int(elems))


def rs_tail_time(chip: Chip, elems: float, elem: Attribute, out: Attribute) -> float:
    """
    Seconds after a reduce-scatter ring's last step (reduce_ring.py `copy_out`): its
    result of `elems` elements, accumulated in `elem`'s accumulation type, copied from
    VMEM to HBM as `out` (a local DMA, waited), rounded first (loaded, `arith.truncf`,
    stored) where `out` is narrower. What an all_reduce's all-gather waits for before
    its first send (its handover), and a reduce_scatter's last act.
    """
    acc = accumulation_type(elem)
    copy = elems * element_bytes(out) * dma_hbm_passes(False, True) / chip.hbm_bw
    if out == acc:
        return copy
    rounding = vmem_time(chip, int(elems * (element_bytes(acc) + element_bytes(out))))
    return copy + rounding + vpu_time(chip, int(elems))


def scatter_in_f32(op: Operation) -> bool:
    """A bf16/f16/f8 scatter `add` / `mul`: level S accumulates it in f32 (interpreter/
    hlo_gather.py: the operand and the updates in f32, every update applied in order, one
    rounding at the end), and so does its lowering (lowering/gather.py)."""
    if not isinstance(op, hlo.ScatterOp) or op.kind.data not in ("add", "mul"):
        return False
    elem = _tensor_types(op.results[:1])[0].element_type
    return accumulation_type(elem) != elem  # bf16, f16 and f8 accumulate in f32


def gather_scatter_bytes(op: hlo.GatherOp | hlo.ScatterOp) -> int:
    """
    Bytes moved: a gather reads the indices and copies only the slices it gathers (the
    result's size) HBM to HBM; a scatter copies the operand through (HBM to HBM), reads the
    indices and updates, and reads and writes the elements it updates. One accumulated in
    f32 (`scatter_in_f32`) also moves each update's window in f32 four times, through an
    f32 HBM scratch of the touched windows (lowering/gather.py `_lower_scatter_f32`):
    widened into it, read and written back by the combine, read by the rounding.
    """
    if isinstance(op, hlo.GatherOp):
        out, idx = (tensor_bytes(t) for t in _tensor_types([op.result, op.start_indices]))
        return int(hbm_copy_bytes(out)) + idx
    operand, idx, upd = (tensor_bytes(t) for t in _tensor_types(op.operands))
    wide = 0
    if scatter_in_f32(op):
        upd_type = _tensor_types([op.updates])[0]
        wide = 4 * _elements(upd_type) * element_bytes(accumulation_type(upd_type.element_type))
    return int(hbm_copy_bytes(operand)) + idx + 3 * upd + wide


def convolution_flops(op: hlo.ConvolutionOp) -> float:
    """
    2 FLOPs per multiply-add: each output element sums (input features / feature groups)
    x kernel spatial size products, i.e. every rhs element of its output feature (an
    im2col matmul, run on the MXU like a dot).
    """
    rhs, out = op.rhs.type, op.result.type
    assert isinstance(rhs, TensorType) and isinstance(out, TensorType)
    out_features = rhs.get_shape()[op.rhs_dims_[1]]
    per_output = _elements(rhs) // out_features if out_features else 0
    return 2.0 * _elements(out) * per_output


def _int_constant(value: SSAValue) -> int | None:
    """The integer a scalar `hlo.constant` holds, None for anything else."""
    owner = value.owner
    if (
        not isinstance(owner, hlo.ConstantOp)
        or hlo.element_kind(owner.value.get_element_type()) != hlo.INT
    ):
        return None
    values = list(owner.value.iter_values())  # pyright: ignore[reportUnknownMemberType]
    return int(values[0]) if len(values) == 1 else None  # pyright: ignore


_FLIPPED = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "NE": "NE"}


def _trips(start: int, step: int, limit: int, direction: str) -> int | None:
    """How often `i direction limit` holds for i = start, start + step, ... (None: never ends)."""
    if direction == "NE":
        span = limit - start
        if step == 0 or span % step or span // step < 0:
            return None if span else 0
        return span // step
    sign = 1 if direction in ("LT", "LE") else -1
    gap = (limit - start) * sign + (1 if direction in ("LE", "GE") else 0)  # values that pass
    if gap <= 0:
        return 0
    if step * sign <= 0:
        return None
    return -(-gap // (step * sign))


def _loop_constant(op: hlo.WhileOp, value: SSAValue) -> int | None:
    """A constant, or a carried value `do` passes on unchanged whose operand is one
    (`lax.while_loop`'s upper bound)."""
    args = op.cond.block.args
    if value not in args:
        return _int_constant(value)
    j = args.index(value)  # pyright: ignore[reportArgumentType]
    body_ret = op.body.block.last_op
    assert isinstance(body_ret, hlo.ReturnOp)
    if body_ret.values[j] is not op.body.block.args[j]:
        return None
    return _int_constant(op.inputs[j])


def while_trip_count(op: hlo.WhileOp) -> int | None:
    """
    The static trip count of a loop of the common form (JAX's fori_loop and scan): a
    carried counter starting at a constant, `cond` comparing it (LT, LE, GT, GE, NE) with a
    constant (or a carried value that stays a constant), `do` returning it plus a
    constant. None when the loop is not of that form.
    """
    cond_ret, body_ret = op.cond.block.last_op, op.body.block.last_op
    assert isinstance(cond_ret, hlo.ReturnOp) and isinstance(body_ret, hlo.ReturnOp)
    compare = cond_ret.values[0].owner
    if not isinstance(compare, hlo.CompareOp):
        return None
    direction = compare.comparison_direction.data
    lhs, rhs = compare.lhs, compare.rhs
    if rhs in op.cond.block.args and _loop_constant(op, rhs) is None:
        lhs, rhs, direction = rhs, lhs, _FLIPPED.get(direction, direction)
    if lhs not in op.cond.block.args or direction not in _FLIPPED:
        return None
    k = op.cond.block.args.index(lhs)  # pyright: ignore[reportArgumentType]
    start, limit = _int_constant(op.inputs[k]), _loop_constant(op, rhs)
    step_op = body_ret.values[k].owner
    if start is None or limit is None or not isinstance(step_op, hlo.AddOp):
        return None
    counter = op.body.block.args[k]
    if step_op.lhs is counter:
        step = _int_constant(step_op.rhs)
    elif step_op.rhs is counter:
        step = _int_constant(step_op.lhs)
    else:
        return None
    return None if step is None else _trips(start, step, limit, direction)


@dataclass(frozen=True, eq=False)
class Landings:
    """
    The DMAs of a one-round collective (`CostModel.collective_landings`), by device id:
    each transfer's source and target, seconds from its source's begin until its last byte
    has left (`left`) and until it has landed (`landed`); `local`: the copy every device
    makes after.
    """

    src: np.ndarray
    dst: np.ndarray
    left: np.ndarray
    landed: np.ndarray
    local: float = 0.0

    def ends(self, begins: np.ndarray) -> np.ndarray:
        """
        When the collective is done on each device, every device beginning at `begins`
        (indexed by device id): its own sends have left and its receives have landed.
        """
        end = begins.copy()
        np.maximum.at(end, self.src, begins[self.src] + self.left)
        np.maximum.at(end, self.dst, begins[self.src] + self.landed)
        return end + self.local

    @cached_property
    def size(self) -> int:
        """How long `begins` must be: the largest device id it moves between, plus one."""
        return int(max(self.src.max(initial=0), self.dst.max(initial=0))) + 1

    @cached_property
    def skewed(self) -> bool:
        """Whether members beginning together end at different times (a line's wrap edge:
        one device waits for a long transfer, the others not), so that one device no
        longer stands for all (`passes/step_estimate.py`)."""
        members = np.union1d(self.src, self.dst)
        if not len(members):
            return False
        ends = self.ends(np.zeros(self.size))[members]
        return bool(ends.max() > ends.min())


@dataclass
class CostModel:
    """Costs on `chip` for programs over `mesh` (None: one device)."""

    chip: Chip
    mesh: MeshAttr | None = None
    notes: list[str] = field(default_factory=list[str])
    """What the static estimates could not know (a while's trip count), once each."""
    _torus: Torus | None = field(default=None, repr=False, compare=False)
    _collective_cache: dict[object, float] = field(
        default_factory=dict[object, float], repr=False, compare=False
    )

    # Compute ---------------------------------------------------------------------

    def op_cost(self, op: Operation) -> OpCost:
        """Roofline cost of a compute op (collectives: see `collective_time`)."""
        if isinstance(op, hlo.WhileOp | hlo.CaseOp):
            return self.control_cost(op)
        if isinstance(op, hlo.FusionOp):
            return self.fusion_cost(op)
        if isinstance(op, hlo.SelectAndScatterOp) and select_scatter.expands(op):
            return self.select_and_scatter_cost(op)
        flops, rate = self.flops(op)
        nbytes = self.hbm_bytes(op)
        if isinstance(op, hlo.SortOp | hlo.TopKOp) and flops and network_sort(op):
            return OpCost(flops, nbytes, sort_time(self.chip, op, nbytes))
        if isinstance(op, hlo.TopKOp) and flops and sort_selects(op):
            return OpCost(flops, nbytes, select_time(self.chip, op))
        time = max(flops / rate if flops else 0.0, nbytes / self.chip.hbm_bw)
        return OpCost(flops, nbytes, self.tiled_time(op, time))

    def select_and_scatter_cost(self, op: hlo.SelectAndScatterOp) -> OpCost:
        """
        A select_and_scatter costs what `lower-to-tpu` makes of it: a channels-last
        pooling that fits half the VMEM is one kernel (`select_scatter.kernel_pooling`),
        timed by `kernel.select_scatter_time` from the vector work `Pooling` counts, its
        bytes the operand, source and result once; any other, the ops it is rewritten
        into (`select_scatter.expansion`), one after another. Per window offset those are
        a few selects over the window positions and one placing pad and add over the
        operand, so (offsets) x (operand) bytes.
        """
        pooled = select_scatter.kernel_pooling(op, self.chip.vmem_bytes)
        if pooled is not None:
            from shardc.hardware import kernel  # kernel.py builds on this module's rates

            moved = sum(pooled.image_bytes()) * pooled.n + element_bytes(pooled.src)
            work = pooled.setup_work() + pooled.image_work() * pooled.n
            return OpCost(float(work.ops), moved, kernel.select_scatter_time(self.chip, pooled))
        flops = time = 0.0
        nbytes = 0
        for inner in select_scatter.standalone_expansion(op):
            cost = self.op_cost(inner)
            flops, nbytes, time = flops + cost.flops, nbytes + cost.bytes, time + cost.time
        return OpCost(flops, nbytes, time)

    def tiled_time(self, op: Operation, roofline: float) -> float:
        """
        Seconds of `op` as the tiled loop `lower-to-tpu` makes of it (`hardware/kernel.py`:
        the first blocks' fetch, per step the longer of compute and DMA, the last
        write-back), from its types; `roofline` where it is not such a loop.
        """
        from shardc.hardware import kernel  # kernel.py builds on this module's rates

        found = kernel.op_kernel_time(self.chip, op)
        return roofline if found is None else found

    def control_cost(self, op: hlo.WhileOp | hlo.CaseOp) -> OpCost:
        """
        Static estimate of a region op, its collectives run synchronously: a case costs its
        dearest branch; a while its body times the static trip count (`while_trip_count`)
        and its condition once more; without one, the body once (and a note says so).
        """
        if isinstance(op, hlo.CaseOp):
            return max((self.block_cost(r.block) for r in op.branches), key=lambda c: c.time)
        trips = while_trip_count(op)
        if trips is None:
            note = f"trip count of hlo.while at {op_position(op) or 'an unknown place'} unknown, body counted once"
            if note not in self.notes:
                self.notes.append(note)
            trips = 1
        cond, body = self.block_cost(op.cond.block), self.block_cost(op.body.block)
        return OpCost(
            cond.flops * (trips + 1) + body.flops * trips,
            cond.bytes * (trips + 1) + body.bytes * trips,
            cond.time * (trips + 1) + body.time * trips,
        )

    # Fusions (issue 14) ---------------------------------------------------------------

    def fusion_cost(self, op: hlo.FusionOp) -> OpCost:
        """
        A fused kernel: `max(flops / peak, boundary bytes / HBM bandwidth)`. The compute
        term is the MXU time of its dot or convolution (at its dtype's rate) plus the VPU
        time of everything else; the bytes are only what crosses the boundary
        (`fusion_boundary_bytes`: each operand once, an operand read only through slices
        by its sliced parts, every result once), since the values inside stay in VMEM and
        vector registers.
        """
        from shardc.hardware import kernel  # kernel.py builds on this module's rates

        if op.body.blocks and kernel.fusion_kernels(self.chip, op) is None:
            return self.inlined_fusion_cost(op)
        flops = sum(self.flops(i)[0] for i in op.body.block.ops if not isinstance(i, hlo.ReturnOp))
        compute = self.compute_seconds(op)
        nbytes = fusion_boundary_bytes(op)
        return OpCost(flops, nbytes, self.tiled_time(op, max(compute, nbytes / self.chip.hbm_bw)))

    def inlined_fusion_cost(self, op: hlo.FusionOp) -> OpCost:
        """
        A fusion `lower-to-tpu` does not make one loop of (`kernel.fusion_kernels`: a
        reshape, a dense constant, a reduce with a body inside...): it inlines it, each
        inner op its own kernel through HBM, so it costs its ops one after another (XLA's
        Philox expanded into one 240-op fusion, corpus `dropout_rbg`: 6 ns as one kernel,
        418 ns as level T runs it). A fusion of complex values on the parts' views
        (`pairs.on_views`) inlines as those views' ops, its complex results copied out of
        the views where they are not viewed in place (`unviewed_result_bytes`).
        """
        from shardc.hardware import pairs  # it builds on this module's predicates

        viewed = pairs.pairs_fusion(op) if pairs.on_views(op) else None
        if viewed is None:
            return self.block_cost(op.body.block)
        cost = self.block_cost(viewed.body.block)
        copy = unviewed_result_bytes(op)
        return OpCost(cost.flops, cost.bytes + copy, cost.time + copy / self.chip.hbm_bw)

    def compute_seconds(self, op: Operation) -> float:
        """
        The compute term of an op's roofline: its FLOPs at the rate of the unit that runs
        them (a fusion: each inner op's at its own; a while or case: at the MXU peak).
        """
        if isinstance(op, hlo.FusionOp):
            return sum(
                self.compute_seconds(inner)
                for inner in op.body.block.ops
                if not isinstance(inner, hlo.ReturnOp)
            )
        if isinstance(op, hlo.WhileOp | hlo.CaseOp):
            return self.op_cost(op).flops / self.chip.flops_bf16
        flops, rate = self.flops(op)
        return flops / rate if flops else 0.0

    def block_cost(self, block: Block) -> OpCost:
        """The ops of a region's block one after another (collectives synchronous)."""
        flops = time = 0.0
        nbytes = 0
        for inner in block.ops:
            if isinstance(inner, collective.CollectiveOp):
                time += self.collective_time(inner)
            elif inner.dialect_name() == "hlo" and not isinstance(inner, hlo.ReturnOp):
                cost = self.op_cost(inner)
                flops, nbytes, time = flops + cost.flops, nbytes + cost.bytes, time + cost.time
        return OpCost(flops, nbytes, time)

    def flops(self, op: Operation) -> tuple[float, float]:
        """(FLOPs, FLOP/s of the unit that runs them)."""
        if isinstance(op, hlo.DotOp):
            lhs, rhs = op.lhs.type, op.rhs.type
            assert isinstance(lhs, TensorType) and isinstance(rhs, TensorType)
            _, (lc, _) = op.batching, op.contracting
            contracted = math.prod(lhs.get_shape()[d] for d in lc)
            out = op.result.type
            assert isinstance(out, TensorType)
            return 2.0 * _elements(out) * contracted, mxu_rate(self.chip, lhs.element_type)
        if isinstance(op, hlo.ReduceOp):
            src = op.operand.type
            assert isinstance(src, TensorType)
            return float(_elements(src) * reduce_body_ops(op)), self.chip.vpu_flops
        if isinstance(op, hlo.SortOp | hlo.TopKOp):
            if network_sort(op):
                return sort_network_work(op)[0], self.chip.vpu_flops
            return sort_flops(op), self.chip.vpu_flops
        if isinstance(op, hlo.ConvolutionOp):
            lhs = op.lhs.type
            assert isinstance(lhs, TensorType)
            return convolution_flops(op), mxu_rate(self.chip, lhs.element_type)
        if isinstance(op, hlo.ScatterOp):
            # one combine per update element
            return float(_elements(_tensor_types([op.updates])[0])), self.chip.vpu_flops
        if isinstance(op, hlo.SelectAndScatterOp) and select_scatter.expands(op):
            return self.select_and_scatter_cost(op).flops, self.chip.vpu_flops
        if isinstance(op, hlo.ReduceWindowOp | hlo.SelectAndScatterOp):
            return window_flops(op), self.chip.vpu_flops
        if isinstance(op, hlo.RngBitGeneratorOp):
            return rng_bit_generator_flops(op), self.chip.vpu_flops
        if isinstance(op, hlo.ConvertOp) and complex_part_ops(op) is not None:
            return float(_elements(_tensor_types(op.results)[0]) * elementwise_vpu_ops(op)), (
                self.chip.vpu_flops
            )
        if isinstance(
            op,
            hlo.BinaryElementwiseOp
            | hlo.UnaryElementwiseOp
            | hlo.CompareOp
            | hlo.SelectOp
            | hlo.IsFiniteOp
            | hlo.ClampOp
            | hlo.ComplexOp
            | hlo.RealOp
            | hlo.ImagOp,
        ):
            out = op.results[0].type
            assert isinstance(out, TensorType)
            return float(_elements(out) * elementwise_vpu_ops(op)), self.chip.vpu_flops
        return 0.0, self.chip.vpu_flops

    def hbm_bytes(self, op: Operation) -> int:
        moved = part_dma_bytes(op)  # complex parts' DMAs (dtcost)
        if isinstance(op, hlo.RealOp | hlo.ImagOp | hlo.ComplexOp) and moved is not None:
            return moved
        if moved is not None:
            return moved + self._hbm_bytes(op)
        return self._hbm_bytes(op)

    def _hbm_bytes(self, op: Operation) -> int:
        if isinstance(op, hlo.ReshapeOp | spmd.AxisIndexOp | spmd.ConstraintOp):
            return 0
        if bitcast_view(op):  # the operand's bytes, read in place by its users
            return 0
        if isinstance(op, hlo.PartitionIdOp | hlo.ReplicaIdOp):  # a register, like axis_index
            return 0
        if isinstance(op, hlo.ConstantOp | hlo.IotaOp):
            return sum(tensor_bytes(t) for t in _tensor_types(op.results))
        if isinstance(op, hlo.SliceOp | hlo.DynamicSliceOp):
            # Reads only the slice, writes the result.
            return 2 * sum(tensor_bytes(t) for t in _tensor_types(op.results))
        if isinstance(op, hlo.GatherOp | hlo.ScatterOp):
            return gather_scatter_bytes(op)
        if isinstance(op, hlo.DynamicUpdateSliceOp):
            # In place: reads the update, writes it into the buffer.
            update = op.update.type
            assert isinstance(update, TensorType)
            return 2 * tensor_bytes(update)
        return sum(tensor_bytes(t) for t in _tensor_types(op.operands)) + sum(
            tensor_bytes(t) for t in _tensor_types(op.results)
        )

    # Communication ----------------------------------------------------------------

    def comm_bytes(self, op: collective.CollectiveOp) -> int:
        """Operand bytes one device contributes (DESIGN.md's `comm_bytes`)."""
        return sum(tensor_bytes(t) for t in op.input_types())

    def group_array(self, op: collective.CollectiveOp) -> np.ndarray:
        """`op.device_groups()` as a read-only int array, a row per group: what the clocks
        of every device (`step_estimate.DeviceClocks`, `chain_floor.Passage`) index by."""
        groups = np.array(op.device_groups(), dtype=np.int64)
        groups.flags.writeable = False
        return groups

    def torus(self) -> Torus:
        """
        The ICI torus of one pod of this model's mesh (`topology.Torus.of` over the mesh
        axes that do not cross the data-center network, `local_axes`; no mesh: one chip).
        """
        if self._torus is None:
            shape = [n for _, n in self.local_axes()] or [1]
            self._torus = Torus.of(self.chip, shape)
        return self._torus

    def local_axes(self) -> list[tuple[str, int]]:
        """(name, size) of the mesh axes within one pod (all but `topology.dcn_axes`)."""
        if self.mesh is None:
            return []
        crossing = dcn_axes(self.chip, self.mesh.shape)
        return [
            (a, n)
            for i, (a, n) in enumerate(zip(self.mesh.names, self.mesh.shape, strict=True))
            if i not in crossing
        ]

    def torus_axis_lengths(self) -> list[int]:
        return list(self.torus().lengths)

    def axis_rings(self, op: collective.CollectiveOp) -> list[tuple[int, bool]]:
        """(size, wraparound) of each ring the collective runs over."""
        if op.explicit_groups is not None or self.mesh is None:
            return [(op.group_size(), False)]
        local = dict(self.local_axes())
        return [(self.mesh.axis_size(a), a in local and self.axis_wraps(a)) for a in op.axes]

    def axis_wraps(self, axis: str) -> bool:
        """Whether mesh axis `axis`'s ring has wraparound links (its torus axis has them;
        the lowering then runs its rings both ways)."""
        names = [a for a, _ in self.local_axes()]
        torus = self.torus()
        return torus.wrap[min(names.index(axis), len(torus.lengths) - 1)]

    def _pod_local(self, groups: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
        """
        Device ids within their pod (the DCN axes are the most major: id mod pod size),
        each distinct group once: every pod runs the same rings on its own links.
        """
        size = math.prod(n for _, n in self.local_axes()) or 1
        return tuple(dict.fromkeys(tuple(d % size for d in g) for g in groups))

    def collective_latency(self, op: collective.CollectiveOp) -> float:
        """The collective's time without bytes: what combining two of them saves; its
        rings uncut (a ring's steps, not its pieces', `collective_overlap` counts)."""
        return self._collective_seconds(op, [0] * len(op.operands), UNCUT, op.IS_START)

    def collective_overlap(self, op: collective.CollectiveOp) -> float:
        """
        Seconds of `op` that may run while the collectives issued before it on the same
        device are still running (the engine rule, `interpreter.timing.engine_window`).
        Every DMA a device has started flies at once, sharing the links (ICI links carry
        the bytes of every transfer crossing them: bandwidth terms add up, latencies
        overlap), but a ring's steps are issued one after another, each after the last
        step's data arrived, and the kernel issues them in program order (a `_start`'s
        first step at the `_start`, the rest at its `done` or between compute blocks,
        lowering/ring_steps.py). So an all_to_all or a permute (one round of DMAs, all
        started at once; an all_reduce of fewer elements than its group, `_all_reduce_tail`,
        too) overlaps its whole latency with the collectives ahead of it; a
        ring overlaps its first step's latency (its latency over its steps: every
        operand's phases, an all_reduce's two passes); bytes never overlap.
        """
        latency = self.collective_latency(op)
        steps = self._ring_steps(op)
        return latency / steps if steps else latency

    def _ring_steps(self, op: collective.CollectiveOp) -> int:
        """How many ring steps `op` runs one after another (its rings' steps over every
        operand's phases, an all_reduce's two passes); 0 for a collective that is one
        round of DMAs (an all_to_all, a permute, an all_reduce of fewer elements than its
        group: `_all_reduce_tail`)."""
        kind = op.name.removeprefix("collective.").removesuffix("_start")
        one_round = kind == "all_reduce" and all(  # only its tail: pushed at once
            math.prod(t.get_shape()) < op.group_size() for t in op.input_types()
        )
        if kind in ("all_to_all", "permute") or one_round:
            return 0
        steps = sum(n - 1 for n, _ in self.axis_rings(op) if n > 1)
        return steps * (2 if kind == "all_reduce" else 1) * max(1, len(op.operands))

    def collective_first_step(
        self, op: collective.CollectiveOp, start: bool | None = None
    ) -> float:
        """
        Seconds the links carry the DMAs a ring `_start` starts at the `_start` itself:
        its first step (its bytes' time shared evenly by its steps, latency and an
        all_gather's local copy of its own block aside). lower-to-tpu emits them there
        (lowering/ring_steps.py, chunk 0), so they fly while the rings issued before it
        are still on the links and share them: those end later by as much
        (`interpreter.timing.first_step_push`), while this one ends no later (its first
        step is done by the time the engine takes it). 0 for a synchronous collective,
        one over no link, and one round of DMAs (whose members end apart,
        `collective_landings`: its whole latency already overlaps the ones ahead).
        `start`: costed as a `_start` (True) or not whatever `op` is (`collective_time`).
        """
        start = op.IS_START if start is None else start
        steps = self._ring_steps(op)
        if not start or op.group_size() < 2 or not steps:
            return 0.0
        kind = op.name.removeprefix("collective.").removesuffix("_start")
        local = 0.0
        if kind == "all_gather":  # the own block, HBM to HBM, before the first send
            sizes = sum(tensor_bytes(t) for t in op.input_types())
            local = hbm_copy_bytes(sizes) / self.chip.hbm_bw
        wire = self.collective_time(op, start) - self.collective_latency(op) - local
        return max(0.0, wire / steps)

    def collective_time(self, op: collective.CollectiveOp, start: bool | None = None) -> float:
        """
        Seconds of `op` as `lower-to-tpu` runs it on this torus (`topology`'s module
        docstring gives the algorithms and the model): every operand of a variadic
        collective one after the other, its reduce-scatters cut into the pieces that fit
        the VMEM it may hold (`hardware.vmem`: a `_start` its share, a synchronous one
        all). `start`: costed as a `_start` (True) or a synchronous collective (False)
        whatever `op` is (an estimate of a sync collective `async-split` will split);
        default: as it is. Cached per collective kind, groups, sizes and budget.
        """
        start = op.IS_START if start is None else start
        budget = collective_budget(self.chip.vmem_bytes, start)
        sizes = [tensor_bytes(t) for t in op.input_types()]
        return self._collective_seconds(op, sizes, budget, start)

    def _collective_seconds(
        self, op: collective.CollectiveOp, sizes: list[int], budget: int, start: bool
    ) -> float:
        """`collective_time` of `op` with `sizes` bytes per operand, as a `_start` or not
        (a `_start`'s reduce-scatter pieces pipelined after the last step landed:
        `topology.Phase.landed`), in `budget` bytes of VMEM."""
        kind = op.name.removeprefix("collective.").removesuffix("_start")
        types = op.input_types()
        pairs = op.source_target_pairs if isinstance(op, collective.PermuteBase) else None
        explicit = op.explicit_groups
        # The key names the groups by their spec (cheap); the device lists are built on
        # a miss only (a 1024-chip mesh has 1024 ids per collective).
        key = (
            kind,
            getattr(op, "kind", None),  # a reduction's: its combine's vector ops
            pair_operands(op),
            budget,
            start,
            tuple(op.axes),
            None if explicit is None else str(explicit),
            repr(pairs),
            tuple(sizes),
            tuple((tuple(t.get_shape()), str(t.element_type)) for t in types),
        )
        found = self._collective_cache.get(key)
        if found is None:
            low = any(accumulation_type(t.element_type) != t.element_type for t in types)
            # Partial sums travel in the accumulation type (bf16 / f16 in f32): wider rings.
            wide = max(
                element_bytes(accumulation_type(t.element_type)) / element_bytes(t.element_type)
                for t in types
            )
            groups = tuple(tuple(g) for g in op.device_groups()) if op.group_size() > 1 else ()
            found = sum(
                self._one_collective(op, kind, groups, nbytes, (i, t), (low, wide), (budget, start))
                for i, (nbytes, t) in enumerate(zip(sizes, types, strict=True))
            )
            found += self.dcn_time(op, kind, sum(sizes))
            self._collective_cache[key] = found
        return found

    def _axis_list(
        self, op: collective.CollectiveOp
    ) -> list[tuple[tuple[tuple[int, ...], ...], bool]]:
        """(rings, both ways) of each mesh axis of `op` within a pod, in order; explicit
        groups (and permutes / all_to_alls over several axes, which the lowering runs as
        one group ring): one entry, one way."""
        local = [a for a, _ in self.local_axes()]
        axes = [a for a in op.axes if a in local]
        if op.explicit_groups is None and self.mesh is not None and not axes:
            return []  # only across pods: `dcn_time`
        if op.explicit_groups is not None or self.mesh is None or len(op.axes) < 2:
            wrap = len(axes) == 1 and op.explicit_groups is None and self.axis_wraps(axes[0])
            return [(self._pod_local(op.device_groups()), wrap)]
        shape = [n for _, n in self.local_axes()]
        return [
            (self._pod_local(axis_groups(shape, local.index(a))), self.axis_wraps(a)) for a in axes
        ]

    def _one_collective(
        self,
        op: collective.CollectiveOp,
        kind: str,
        groups: tuple[tuple[int, ...], ...],
        nbytes: int,
        operand: tuple[int, TensorType],
        precision: tuple[bool, float],
        form: tuple[int, bool],
    ) -> float:
        """Seconds of one operand of `op` (`nbytes` on each device; `operand`: its index
        and type); `precision`: whether it accumulates in a wider type, and how many times
        wider its partial sums are; `form`: the bytes of VMEM the collective may hold, and
        whether it is a `_start`. A reduce-scatter phase cut into pieces to fit that VMEM
        runs them one after the other, pipelined (`topology.Phase`: in a sync collective
        a boundary costs no latency, low precision too, `Ring.last_combine`; a `_start`'s
        next piece waits for the last step to land, `Phase.landed`, its reduction still
        overlapped; lowering/reduce_ring.py)."""
        index, t = operand
        _, wide = precision
        budget, start = form
        # Pipelined pieces (a multi-axis low-precision all_reduce's one-piece phases
        # aside: `_all_reduce`); a `_start`'s after the last step has landed.
        landed = start
        shape = t.get_shape()
        vmem = (
            element_bytes(accumulation_type(t.element_type)),
            budget,
        )
        if not groups:
            return 0.0
        torus = self.torus()
        groups = self._pod_local(groups)
        if kind in ("permute", "all_to_all"):
            moves = self._round_moves(op, kind, groups, nbytes, math.prod(shape))
            return transfers_time(self.chip, torus, moves) + self._round_copy(kind, groups, nbytes)
        axes = self._axis_list(op)
        if not axes:
            return 0.0
        if kind == "all_gather":
            # The own block first, HBM to HBM.
            return self._gather_phases(axes, nbytes) + hbm_copy_bytes(nbytes) / self.chip.hbm_bw
        n = math.prod(len(g[0]) for g, _ in axes)
        elem = combined_type(op, index, t.element_type)
        reduction = op.kind.data  # pyright: ignore[reportAttributeAccessIssue]
        if kind == "reduce_scatter":
            chunk = list(shape)
            dim = op.dim.value.data  # pyright: ignore[reportAttributeAccessIssue]
            chunk[dim] //= n
            last = self._pieces(chunk, _last_ring(axes)[1], 1, vmem)
            combined = (elem, reduction)
            return self._scatter_phases(axes, nbytes * wide, last, combined, True, landed)
        numel = math.prod(shape)
        tail = self._all_reduce_tail(groups, nbytes, numel)
        if numel < len(groups[0]):
            return tail
        nbytes -= nbytes * (numel % len(groups[0])) // numel
        numel -= numel % len(groups[0])
        precision_of = (elem, wide, reduction)
        return tail + self._all_reduce(axes, nbytes, n, numel, precision_of, vmem, landed)

    @staticmethod
    def _pieces(
        chunk: Sequence[int], wrap: bool, concurrent: int, vmem: tuple[int, int]
    ) -> tuple[int, int]:
        """(pieces, directions) of a ring reduce-scatter of `chunk`-shaped chunks, as
        the lowering cuts it (`vmem.rs_pieces`; `vmem`: accumulation element bytes,
        budget): both ways on a wrapped ring, unless no dimension divides."""
        acc, budget = vmem
        _, pieces, ways = rs_pieces(chunk, acc, wrap, concurrent, budget)
        return pieces, ways

    def _all_reduce_tail(
        self, groups: tuple[tuple[int, ...], ...], nbytes: int, numel: int
    ) -> float:
        """
        The last numel mod G elements of an all_reduce the group size G does not divide
        (lowering/all_reduce.py's `all_reduce_tail`, before the rings): every device
        pushes them straight to every peer at once, one round of DMAs, as all_to_all
        does (a scalar's all_reduce is latency, not 2 (G - 1) ring steps).
        """
        if not numel % len(groups[0]):
            return 0.0
        moves = self._round_moves(None, "all_reduce", groups, nbytes, numel)
        return transfers_time(self.chip, self.torus(), moves)

    def _round_moves(
        self,
        op: collective.CollectiveOp | None,
        kind: str,
        groups: tuple[tuple[int, ...], ...],
        nbytes: float,
        numel: int,
    ) -> list[Transfer]:
        """
        The DMAs of a collective that is one round of them, all started at its `_start`
        (`nbytes` per device): a permute's pairs, an all_to_all's blocks, an all_reduce's
        last numel mod G elements pushed to every peer (`_all_reduce_tail`).
        """
        n = len(groups[0])
        if kind == "permute":
            pairs = op.source_target_pairs  # pyright: ignore[reportOptionalMemberAccess, reportAttributeAccessIssue]
            return [(g[s], g[t], nbytes) for g in groups for s, t in pairs if s != t]
        block = nbytes / n if kind == "all_to_all" else nbytes * (numel % n) / max(numel, 1)
        return [(g[a], g[b], block) for g in groups for a in range(n) for b in range(n) if a != b]

    def _round_copy(self, kind: str, groups: tuple[tuple[int, ...], ...], nbytes: float) -> float:
        """The local copy after a one-round collective: an all_to_all's own block."""
        if kind != "all_to_all":
            return 0.0
        return hbm_copy_bytes(nbytes / len(groups[0])) / self.chip.hbm_bw

    def collective_landings(self, op: collective.CollectiveOp) -> Landings | None:
        """
        When a collective that is one round of DMAs (a permute, an all_to_all, an
        all_reduce of fewer elements than its group) is done on each device, from its
        members' begins: level T starts every DMA at the sender's `_start` and a device's
        `done` waits for its own sends to leave and its own receives to land, not for the
        whole group (`topology.transfer_legs`), so a device far from nobody is not held by
        the group's longest transfer. The latest device ends `collective_time` after a
        common begin. None (the group's one end): rings (their steps couple every member),
        variadic collectives, meshes across pods.
        """
        kind = op.name.removeprefix("collective.").removesuffix("_start")
        if op.group_size() < 2 or len(op.operands) != 1 or self.dcn_time(op, kind, 1):
            return None
        ty = op.input_types()[0]
        numel = math.prod(ty.get_shape())
        one_round = kind in ("permute", "all_to_all") or (
            kind == "all_reduce" and numel < op.group_size()
        )
        if not one_round:
            return None
        groups = tuple(tuple(g) for g in op.device_groups())
        if self._pod_local(groups) != groups:  # across pods: the DCN's rings
            return None
        moves = self._round_moves(op, kind, groups, tensor_bytes(ty), numel)
        legs = transfer_legs(self.chip, self.torus(), moves)
        return Landings(
            np.array([m[0] for m in moves], dtype=np.int64),
            np.array([m[1] for m in moves], dtype=np.int64),
            np.array([left for left, _ in legs]),
            np.array([landed for _, landed in legs]),
            self._round_copy(kind, groups, tensor_bytes(ty)),
        )

    def _gather_phases(
        self, axes: list[tuple[tuple[tuple[int, ...], ...], bool]], block: float
    ) -> float:
        """all_gather of `block` bytes per device: one phase per axis, the most minor first."""
        total = 0.0
        for groups, wrap in reversed(axes):
            ways = (1, -1) if wrap else (1,)
            ring = Ring(groups, block / len(ways), ways)
            total += ring_time(self.chip, self.torus(), [ring], None)
            block *= len(groups[0])
        return total

    def _scatter_phases(
        self,
        axes: list[tuple[tuple[tuple[int, ...], ...], bool]],
        nbytes: float,
        last: tuple[int, int],
        combined: tuple[Attribute, str],
        pipelined: bool,
        landed: bool = False,
    ) -> float:
        """reduce_scatter of `nbytes` (partial sums) per device of `combined` = (element
        type, reduction) values: the most major axis first; only the last phase (of a ring
        of more than one) runs in `last` = (pieces, directions) and copies its result out,
        the others in one piece, one way (the lowering keeps their results in VMEM, in the
        accumulation type). The pieces are `pipelined` (lowering/reduce_ring.py;
        `landed`: a `_start`'s, `Phase.landed`) or one ring after the other."""
        total = 0.0
        final = _last_ring(axes)[0]
        elem, reduction = combined
        own = elem
        for j, (groups, _) in enumerate(axes):
            nbytes /= len(groups[0])
            pieces, ways = last if j == final else (1, 1)
            dirs = (1, -1) if ways == 2 else (1,)
            out = elem if j == final else None
            block = nbytes / (pieces * len(dirs))
            ring = self._rs_ring(groups, block, dirs, (own, reduction), out)
            if pipelined:
                total += ring_time(self.chip, self.torus(), [ring], RS_CREDITS, pieces, landed)
            else:
                rings = self._rs_pieces(ring, pieces, own if out is None else out)
                total += sum(ring_time(self.chip, self.torus(), [r], RS_CREDITS) for r in rings)
            if len(groups[0]) > 1:
                own = accumulation_type(elem)
        return total

    def _rs_ring(
        self,
        groups: tuple[tuple[int, ...], ...],
        block: float,
        dirs: tuple[int, ...],
        combined: tuple[Attribute, str],
        out: Attribute | None,
    ) -> Ring:
        """
        A reduce-scatter ring moving `block` bytes of partial sums per direction and step,
        its own chunks of type `combined[0]` combined by reduction `combined[1]`, with the vector work the lowering puts between its
        transfers (reduce_ring.py): the reduction every step (`rs_combine_time`), the own
        chunk widened before the first send (`rs_lead_time`), and (`out`: its result
        goes to HBM as that type) the copy out after the last (`rs_tail_time`); where
        that rounds to the own type, a pipelined piece's last step rounds its result as
        it reduces it (`rs_round_combine_time`).
        """
        if len(groups[0]) < 2:
            return Ring(groups, block, dirs)
        own, reduction = combined
        elems = block / element_bytes(accumulation_type(own))
        chip = self.chip
        tail = 0.0 if out is None else rs_tail_time(chip, elems, own, out)
        rounds = out == own and accumulation_type(own) != own
        return Ring(
            groups,
            block,
            dirs,
            rs_combine_time(chip, elems, own, reduction),
            rs_lead_time(chip, elems, own),
            tail,
            rs_round_combine_time(chip, elems, own, reduction) if rounds else None,
            rs_out_fetch_time(chip, elems, own) if rounds else 0.0,
        )

    @staticmethod
    def _rs_pieces(ring: Ring, pieces: int, out: Attribute) -> list[Ring]:
        """The `pieces` rings of a reduce-scatter cut into pieces, one after the other (not
        pipelined: a multi-axis low-precision all_reduce's phases): a piece's copy out
        overlaps the next piece's first transfers (reduce_ring.py `_piece_out`) but where
        it rounds to a narrower `out` (waited for), so only the last piece's counts then."""
        mid = ring if accumulation_type(out) != out else replace(ring, tail=0.0)
        return [mid] * (pieces - 1) + [ring]

    def _all_reduce(
        self,
        axes: list[tuple[tuple[tuple[int, ...], ...], bool]],
        nbytes: float,
        n: int,
        numel: int,
        precision: tuple[Attribute, float, str],
        vmem: tuple[int, int],
        landed: bool,
    ) -> float:
        """reduce_scatter (of `elem` values combined by `reduction`; partial sums `wide`
        times the bytes) +
        all_gather; over m axes of one size, m parts at once, each over the axes rotated
        (lowering/all_reduce.py). Every reduce-scatter phase leaves its result in HBM
        (copied out: the handover to the next phase), so each may run in pieces
        (`_pieces`, of chunks [later axes' product, numel / (parts n)])."""
        elem, wide, reduction = precision
        low = accumulation_type(elem) != elem
        m = len(axes)
        sizes = {len(g[0]) for g, _ in axes}
        parts = m if m > 1 and len(sizes) == 1 and numel % (m * n) == 0 and not low else 1
        if m > 1 and low:
            last = self._pieces([1, numel // n], _last_ring(axes)[1], 1, vmem)
            scatter = self._scatter_phases(axes, nbytes * wide, last, (elem, reduction), False)
            return scatter + self._gather_phases(axes, nbytes / n)
        orders = [axes[i:] + axes[:i] for i in range(parts)]
        phases: list[Phase] = []
        part = nbytes / parts
        for phase in range(m):  # reduce-scatter phases, each part on its own axis
            part /= len(axes[0][0][0]) if parts > 1 else len(orders[0][phase][0][0])
            later = math.prod(len(g[0]) for g, _ in orders[0][phase + 1 :])
            chunk = [later, numel // (parts * n)]
            plans = [self._pieces(chunk, order[phase][1], parts, vmem) for order in orders]
            pieces = max(p for p, _ in plans)
            rings = []
            for order, (_, ways) in zip(orders, plans, strict=True):
                dirs = (1, -1) if ways == 2 else (1,)
                block = part * wide / (pieces * len(dirs))
                ring = self._rs_ring(order[phase][0], block, dirs, (elem, reduction), elem)
                rings.append(ring)
            # Pipelined pieces (`landed`: a `_start`'s, lowering/reduce_ring.py).
            phases.append(Phase(rings, RS_CREDITS, pieces, landed))
        for phase in reversed(range(m)):  # all-gather phases, blocks growing
            rings = []
            for order in orders:
                groups, wrap = order[phase]
                ways = (1, -1) if wrap else (1,)
                rings.append(Ring(groups, part / len(ways), ways))
            phases.append(Phase(rings, None))
            part *= len(orders[0][phase][0][0])
        # Every device runs the phases one after the other, no barrier between them.
        return ring_phases_time(self.chip, self.torus(), phases)

    def collective_soonest(self, op: collective.CollectiveOp) -> float:
        """
        The soonest a member of `op` is done after a common begin: `collective_time`, but
        for a one-round collective whose members end apart (`collective_landings`) the
        earliest of them. What a lower bound on a step may charge per collective (the
        devices' clocks part where a long transfer lands on one of them only).
        """
        landings = self.collective_landings(op)
        if landings is None or not landings.skewed:
            return self.collective_time(op)
        members = np.union1d(landings.src, landings.dst)
        return float(landings.ends(np.zeros(landings.size))[members].min())

    def dcn_time(self, op: collective.CollectiveOp, kind: str, nbytes: int) -> float:
        """
        Extra seconds where `op`'s groups span pods (a mesh larger than `Chip.pod_chips`:
        its most major axes cross the data-center network, `topology.dcn_axes`): the
        group's DCN share of the data over the per-chip `dcn_bw`, as a ring over the
        pods (all_reduce twice), plus `dcn_latency` per step.
        """
        if self.mesh is None or op.explicit_groups is not None or self.chip.dcn_bw is None:
            return 0.0
        crossing = dcn_axes(self.chip, self.mesh.shape)
        pods = math.prod(self.mesh.shape[i] for i in crossing if self.mesh.names[i] in op.axes)
        if pods <= 1:
            return 0.0
        n = op.group_size()
        full = nbytes * n if kind in ("all_gather", "all_to_all") else nbytes
        share = full * (pods - 1) / pods / self.chip.dcn_bw
        steps = (pods - 1) * (2 if kind == "all_reduce" else 1)
        factor = 2 if kind == "all_reduce" else 1
        if kind == "permute":
            share, steps, factor = nbytes / self.chip.dcn_bw, 1, 1
        return factor * share + steps * self.chip.dcn_latency

    def collective_algorithm(self, op: collective.CollectiveOp) -> str:
        """
        In words, the algorithm `collective_time` costs (`topology`'s model of what
        `lower-to-tpu` runs): a permute's and an all_to_all's direct transfers, else one
        ring phase per mesh axis, both ways where its torus axis wraps around; and the
        data-center network where the group spans pods.
        """
        kind = op.name.removeprefix("collective.").removesuffix("_start")
        rings = [(n, wrap) for n, wrap in self.axis_rings(op) if n > 1]
        if not rings:
            text = "none (group of one)"
        elif kind in ("permute", "all_to_all"):
            text = f"direct transfers in a group of {op.group_size()}"
        else:
            text = " then ".join(f"ring of {n}{' both ways' if wrap else ''}" for n, wrap in rings)
        return text + (" (+ DCN across pods)" if self.dcn_time(op, kind, 1) > 0 else "")


def _last_ring(axes: list[tuple[tuple[tuple[int, ...], ...], bool]]) -> tuple[int, bool]:
    """(index, wraps) of the last phase whose rings have more than one device (the
    lowering skips axes of size 1): the one a reduce-scatter runs both ways and in pieces."""
    for j in reversed(range(len(axes))):
        if len(axes[j][0][0]) > 1:
            return j, axes[j][1]
    return len(axes) - 1, False


# Remembered costs (issue 14 item 7: estimates stay linear) ------------------------------

_MISSING: Any = object()
"""No answer (yet), or no key given (`CachedCostModel`'s questions)."""


@dataclass
class CachedCostModel(CostModel):
    """
    A `CostModel` that remembers each op's cost by what it depends on (op name, operand and
    result types, which operands are one value (`operand_repeats`), properties and
    attributes), so that the copies of a module every
    estimate works on, and the many identical ops of a real program, cost one computation
    each. A fusion is keyed by its inner ops; other ops with regions are costed each time
    (their cost depends on their regions).
    """

    _ops: dict[Hashable, OpCost] = field(default_factory=dict[Hashable, OpCost])
    _collectives: dict[Hashable, float] = field(default_factory=dict[Hashable, float])

    _seen: dict[int, tuple[Attribute | None, int]] = field(
        default_factory=dict[int, tuple[Attribute | None, int]], repr=False, compare=False
    )
    """`id(type)` (or of a property or attribute value) -> (the object, kept alive so that
    its id is not reused; its number)."""
    _numbers: dict[Attribute | None, int] = field(
        default_factory=dict[Attribute | None, int], repr=False, compare=False
    )
    """Each distinct type or attribute value (by equality) -> a small number."""

    def _number_of(self, attr: Attribute) -> int:
        """`attr`'s number: found by its id if this object was numbered before, else by
        equality (hashing it once)."""
        found = self._seen.get(id(attr))
        if found is not None:
            return found[1]
        n = self._numbers.setdefault(attr, len(self._numbers))
        self._seen[id(attr)] = (attr, n)
        return n

    def key(self, op: Operation) -> Hashable | None:
        """
        What the op's cost depends on. Its operand and result types are numbered (equal
        types, one number; this model's numbers only): hashing a tensor type walks its
        shape on every lookup, while the copies of a module the gates estimate share their
        type objects, so each object is hashed once and then found by its id. The estimates
        ask for a key per op and question (at 10k ops about a tenth of `spmd-pipeline`,
        issue 14 item 7), so this reads the op's fields directly.
        """
        seen, number = self._seen, self._number_of
        # None between operands and results (`number` inlined for the types seen before);
        # the operands' tuple itself, not the view `op.operands` builds on every call, and
        # each value's `_type`, not the property (a Python call per value)
        operands = op._operands  # pyright: ignore[reportPrivateUsage]
        types = (
            *[
                f[1] if (f := seen.get(id(t := v._type))) else number(t)  # pyright: ignore
                for v in operands
            ],
            None,
            *[
                f[1] if (f := seen.get(id(t := r._type))) else number(t)  # pyright: ignore
                for r in op.results
            ],
        )
        if op.regions:
            if isinstance(op, hlo.FusionOp):  # its inner ops' keys: a fusion's cost is theirs
                inner: list[Hashable | None] = []
                wiring: list[tuple[int, ...]] = []
                for i in op.body.block.ops:
                    wiring.append(tuple([_wire(v) for v in i._operands]))  # pyright: ignore
                    if i.__class__ is not hlo.ReturnOp:
                        k = self.key(i)
                        if k is None:
                            return None
                        inner.append(k)
                return (op.name, types, tuple(inner), tuple(wiring))
            return None
        if op.__class__ is hlo.ConstantOp:  # its bytes, not its value
            return (op.name, types)
        # properties and attributes numbered as the types are (the copies share their
        # objects too): hashing a key then hashes small ints, not attribute trees
        props = op.properties
        attrs = op.attributes
        return (
            op.name,
            types,
            operand_repeats(operands),
            tuple(sorted([(k, number(v)) for k, v in props.items()])) if props else (),
            tuple(sorted([(k, number(v)) for k, v in attrs.items()])) if attrs else (),
        )

    # Each question below takes the op's key if the caller has it (`step_estimate.OpCosts`
    # asks several about one op: its key computed once), else computes it.

    def _memo(
        self, cache: dict[Hashable, Any], op: Operation, compute: Callable[[], Any], key: Any
    ) -> Any:
        """`compute()` remembered in `cache` by `op`'s key (`key`, or `_MISSING`: compute it;
        not remembered: no key)."""
        if key is _MISSING:
            key = self.key(op)
        if key is None:
            return compute()
        found = cache.get(key, _MISSING)
        if found is _MISSING:
            found = cache[key] = compute()
        return found

    def op_cost(self, op: Operation, *, key: Any = _MISSING) -> OpCost:
        return self._memo(self._ops, op, lambda: super(CachedCostModel, self).op_cost(op), key)

    _other_form: dict[Hashable, float] = field(default_factory=dict[Hashable, float])
    """`collective_time` of a collective costed as its other form (a sync one as its
    `_start`): keyed by the op's key too, which names the form it is."""

    def collective_time(
        self, op: collective.CollectiveOp, start: bool | None = None, *, key: Any = _MISSING
    ) -> float:
        cache = self._collectives if start in (None, op.IS_START) else self._other_form
        return self._memo(
            cache, op, lambda: super(CachedCostModel, self).collective_time(op, start), key
        )

    _groups: dict[Hashable, np.ndarray] = field(default_factory=dict[Hashable, np.ndarray])

    def group_array(self, op: collective.CollectiveOp, *, key: Any = _MISSING) -> np.ndarray:
        return self._memo(
            self._groups, op, lambda: super(CachedCostModel, self).group_array(op), key
        )

    _overlaps: dict[Hashable, float] = field(default_factory=dict[Hashable, float])
    _first_steps: dict[Hashable, float] = field(default_factory=dict[Hashable, float])
    _landings: dict[Hashable, Landings | None] = field(
        default_factory=dict[Hashable, "Landings | None"]
    )

    def collective_landings(
        self, op: collective.CollectiveOp, *, key: Any = _MISSING
    ) -> Landings | None:
        return self._memo(
            self._landings, op, lambda: super(CachedCostModel, self).collective_landings(op), key
        )

    def collective_overlap(self, op: collective.CollectiveOp, *, key: Any = _MISSING) -> float:
        return self._memo(
            self._overlaps, op, lambda: super(CachedCostModel, self).collective_overlap(op), key
        )

    def collective_first_step(
        self, op: collective.CollectiveOp, start: bool | None = None, *, key: Any = _MISSING
    ) -> float:
        if start not in (None, op.IS_START):  # the other form: not remembered
            return super().collective_first_step(op, start)
        return self._memo(
            self._first_steps,
            op,
            lambda: super(CachedCostModel, self).collective_first_step(op),
            key,
        )


def _wire(value: SSAValue) -> int:
    """Which block argument an operand of a fusion's inner op is (-1: a value made inside):
    what a fusion reads through slices only (`fusion_input_bytes`) depends on it, not only
    on types, so a fusion's key holds it for every operand of every inner op."""
    return value.index if value.__class__ is BlockArgument else -1  # pyright: ignore


def cached(model: CostModel) -> CachedCostModel:
    """`model` with its costs remembered (itself if it already is)."""
    if isinstance(model, CachedCostModel):
        return model
    return CachedCostModel(model.chip, model.mesh)
