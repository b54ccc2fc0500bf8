"""
Which element types `lower-to-tpu` lowers for which op (issue 15 item 3): level T holds
every element type level S runs (`tpu.element_kind` = `hlo.element_kind`: f64 f32 bf16
f16 f8E4M3FN f8E5M2, signless and unsigned integers of 2 to 64 bits, i1, complex<f32>
and complex<f64>), but not every op computes in every one of them yet.

* Ops that only move bytes take every type: data movement (lowering/movement.py),
  gather and scatter `replace` (lowering/gather.py), all_gather and all_to_all (DMAs of
  whole blocks), and the function's arguments and results. A DMA copies bytes whatever
  they mean; the simulator keeps them in the type's numpy dtype (ml_dtypes for bf16, f8
  and sub-byte integers).
* Ops that compute (lowering/compute.py, scatter's combiners, reducing collectives) take
  `COMPUTED`: the original f32 bf16 f16 f64 i32 i64 i1, plus i8 i16 and the unsigned
  ui8 ui16 ui32 ui64 (integer ops wrap at the width, as level S's numpy arithmetic;
  unsigned division, max, min and comparisons are the unsigned `arith` / `tpu.cmp`
  forms), plus f8E4M3FN and f8E5M2 (elementwise ops computed in f32 and rounded once per
  op, as ml_dtypes does at level S; dot, reduce and the reducing collectives accumulate in
  f32 and round once: `hlo.accumulation_type`, docs/dialects.md says why), plus the
  sub-byte integers i2 i4 ui2 ui4
  (lowering/narrow_ints.py: unpacked to i32 lanes, computed, packed back wrapping at the
  width; dots and reduces accumulate in i32; reducing collectives and scatter combiners
  combine them with `arith` at their width).
* complex<f32> and complex<f64>: `lower-to-tpu` first rewrites add, sub, mul, div, neg,
  abs, exp, sqrt, log, max, min, pow, compare EQ / NE, select, convert (complex <-> complex,
  real -> complex, complex -> real and i1), real, imag, complex, dot, reduce add, mul,
  max and min (mul, max, min: a reduce with a body on the parts in level S's order, bit
  for bit but complex<f64> products numpy contracts), all_reduce / reduce_scatter (add,
  mul, max, min: the ring's combine takes each (re, im) pair as one complex number,
  lowering/pair_combine.py; products to rounding, the ring multiplying in its order)
  and permute (sync, or a `_start` and its `done`s) of
  them into ops on the real and imaginary parts, and a fusion of such ops (with
  broadcast, reshape, transpose, slice, concatenate) into one fusion on the parts; a
  fusion of moves, add, sub, neg, complex converts and a reduce add (a transpose feeding
  a reduce) into that fusion on the parts' views, one loop reading each operand in place
  (`hardware/pairs.py`); any other complex fusion (a dot, a product feeding a reduce) is
  inlined and its ops lowered one by one, as level S costs it
  (lowering/complex_pairs.py, with level S's numpy numerics; exp, sqrt and log within an
  ulp or a few, max / min bit for bit in numpy's lexicographic order, pow bit for bit
  for integer exponents below 100 and otherwise exp(b log a) within a few ulps per unit
  of b log a's product scale; log's argument is
  the real `hlo.atan2`, lowering/atan2.py); what remains of them only moves bytes:
  a transpose or broadcast outside a fusion moves whole elements (compute.py's loop, one
  vector op per element, as `hardware/kernel.py` plans), a constant's blocks are stored
  through the parts' view (a splat as its (re, im) pair broadcast), and the parts' view
  a reduce or collective reads is its operand's buffer viewed in place
  (`hardware/cost.py` `bitcast_view`, which level S charges nothing for either).
* The other transcendentals on complex numbers (tanh, rsqrt, sin, cos, sign, expm1,
  log1p ...) are real-only at level S too (the verifier refuses them).
* Ops without a VPU instruction (lowering/unary_math.py, helper unarya): level T's vector
  unit has the instructions the simulator executes (interpreter/level_t_arith.py: exp,
  log, sqrt, rsqrt, tanh, sin, cos, erf, powf, trunc, abs, copysign, the `arith` ops,
  `tpu.cmp` / `tpu.select`) plus the rounding instructions `math.floor`, `math.ceil`,
  `math.roundeven`, `math.round`; everything else is vector code over those, as XLA
  expands it (lowering/atan2.py likewise). floor, ceil, round_nearest_even,
  round_nearest_afz and sign compute in the value's type (bf16 f16 f8 in f32, exact),
  bit for bit with level S, sign of integers in every width too; cbrt, expm1, log1p,
  tan, cosh and sinh are f64 code rounded once to the value's type (level S's `in_f64`):
  bit for bit in bf16 f16 f8, within an ulp in f32, within 1-2 ulps of numpy in f64
  (unary_math.py states and tests the bound per op).
* CHLO's asin, acos, asinh, acosh, atanh, lgamma, digamma and erf_inv compute in every
  float type as f64 vector code rounded once (lowering/special_functions.py).
* `moves_bytes` also takes a `bitcast_convert` between widths (a DMA, or a view:
  `bitcast_view`), `real` / `imag` / `complex` of complex tensors (strided DMAs of the
  parts), and a complex transpose, broadcast or constant.
"""

from __future__ import annotations

from shardc.dialects import collective, hlo
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute, Operation

_BYTE_MOVERS = (
    hlo.ReshapeOp,
    hlo.SliceOp,
    hlo.ConcatenateOp,
    hlo.DynamicSliceOp,
    hlo.DynamicUpdateSliceOp,
    hlo.GatherOp,
    collective.AllGatherBase,
    collective.AllToAllBase,
    collective.DoneOp,
    func.ReturnOp,
    func.FuncOp,
)
"""Ops that only copy bytes (the function itself: its arguments)."""
_INT_WIDTHS = (1, 2, 4, 8, 16, 32, 64)
"""Integer widths the computing ops take (i1 is only signless; 2 and 4: narrow_ints.py)."""
_F8 = Float8E4M3FNType | Float8E5M2Type

SUPPORTED_TEXT = (
    "f32, bf16, f16, f64, f8E4M3FN, f8E5M2, i1, i2 to i64 and ui2 to ui64; complex numbers "
    "in the ops lowering/complex_pairs.py rewrites"
)


def _is_complex(ty: Attribute) -> bool:
    return isinstance(ty, TensorType) and hlo.element_kind(ty.element_type) == hlo.COMPLEX


def moves_bytes(op: Operation) -> bool:
    """An op whose lowering only copies bytes (any element type)."""
    if isinstance(op, hlo.ScatterOp):
        return op.kind.data == "replace"
    if isinstance(op, hlo.BitcastConvertOp):  # between widths: a DMA view (movement.py)
        return op.extra_dim() != 0
    if isinstance(op, hlo.RealOp | hlo.ImagOp | hlo.ComplexOp):  # complex: strided DMAs
        return any(_is_complex(v.type) for v in (*op.operands, *op.results))
    if isinstance(op, hlo.TransposeOp | hlo.BroadcastOp | hlo.ConstantOp):
        return _is_complex(op.results[0].type)  # whole elements moved or written (compute.py)
    return isinstance(op, _BYTE_MOVERS)


def computed(op: Operation, elem: Attribute) -> bool:
    """Whether `op` (a computing op) is lowered for `elem` (see the module docstring)."""
    if isinstance(elem, IntegerType):
        width = elem.width.data
        unsigned = elem.signedness.data.name == "UNSIGNED"
        return width in _INT_WIDTHS and not (unsigned and width == 1)
    return isinstance(elem, Float16Type | BFloat16Type | Float32Type | Float64Type | _F8)


def lowered(op: Operation, elem: Attribute) -> bool:
    """Whether `lower-to-tpu` lowers `op` with a value of element type `elem`."""
    if hlo.element_kind(elem) is None:
        return False
    if moves_bytes(op):
        return True
    if isinstance(op, collective.PermuteBase):
        return hlo.element_kind(elem) != hlo.COMPLEX
    return computed(op, elem)
