"""
complex<f32> / complex<f64> in the computing ops (issue 15 item 3): `expand` rewrites each
complex op of a function into level-S ops on its real and imaginary parts, before
`lower-to-tpu` lowers them (as `gather.ScatterInF32` does for bf16 scatters). A complex
tensor is its parts interleaved: `hlo.real` / `hlo.imag` are one strided DMA each out of
it, `hlo.complex` two into it (lowering/movement.py); the parts compute as real tensors.

Numerics are level S's (numpy's complex arithmetic on this machine's build):

* add, sub, neg, real, imag, complex: part by part, bit for bit.
* mul: numpy's loop is compiled with the products contracted into fused multiply-adds:
  re = fma(ar, br, -fl(ai * bi)), im = fma(ar, bi, fl(ai * br)). For complex<f32> the
  fma is computed in f64 (ar * br is exact there; the sum rounded to f64, then to f32:
  bit for bit but when that double rounding lands on an f32 tie, about 2^-29 of the
  elements); complex<f64> has no wider type and uses ar * br - fl(ai * bi) (the product
  rounded once more: within an ulp of the larger product, not bit for bit), and where
  that is NaN, fma's: -fl(ai * bi) for finite ar, br (`_fma_infinities`: where ar * br
  overflowed to the infinity fl(ai * bi) is, the fma keeps the latter), so that every
  infinity and NaN is numpy's.
* div: numpy's Smith algorithm (the larger part of the divisor divides the other), as
  selects in the part type: bit for bit, division by 0 included (inf or NaN parts).
* abs: level S's modulus of complex<f32> is hypot in f64 rounded to f32: here
  sqrt(ar^2 + ai^2) in f64 (exact squares, two roundings) rounded to f32, an infinite
  part giving +inf as hypot does; equal but where the f64 values straddle an f32 tie.
  complex<f64>: max * sqrt(1 + (min / max)^2) (no overflow), within a few ulps.
* reduce add, dot and reducing collectives: sums of the parts (a complex dot as four
  real ones, as the cost model counts it), in level T's summation order.
* reduce mul / max / min (`_fold`): a reduce with a body on the parts, folded in level
  S's order from the identity's parts (lowering/reduce_body.py). numpy's product in a
  reduce depends on its loop (`hardware/cost.py` `complex_fold_plain`): over the innermost
  axis its reduce loop rounds every product and sum in the part type (`_plain_mul`: bit
  for bit), elsewhere its elementwise loop contracts them (`_mul`: bit for bit for
  complex<f32>, within an ulp per product for complex<f64>); max / min `_extreme`.
* all_reduce / reduce_scatter and permute: of the parts (a view of 2 parts per element);
  add sums the view elementwise, mul / max / min combine each (re, im) pair as one
  complex number (`PAIRS_ATTR`, lowering/pair_combine.py: `combine_body`, numpy's
  contracted product as `np.multiply`, `_extreme`), in the ring's order (products to
  rounding); a permute's zero fill is the complex zero. A `_start`'s operands and its
  `done`'s results are the views too; a combined collective's real operands stay.
* compare EQ / NE (both parts equal / either differs), select (each part), convert
  (level S's `convert`: complex <-> complex part by part, real -> complex with a zero
  imaginary part, complex -> i1 either part nonzero, complex -> real the real part):
  bit for bit.
* exp: e^a (cos b + i sin b); sqrt: the stable formula t = sqrt((|z| + |a|) / 2), u =
  b / 2t (a >= 0: t + i u, else |u| + i copysign(t, b)), complex<f64> scaled into range.
  complex<f32> in f64 (level S: numpy's complex128, glibc's cexp / csqrt, rounded once):
  within one f32 ulp of each part, equal in practice; complex<f64> within 4 ulps.
  C99's special values (infinities, NaN, signed zeros) as glibc's. Deviation: exp of a
  complex<f64> with a > ~709.78 gives an infinite part where glibc, scaling e^a, keeps a
  finite one (e^a * cos b overflows first).
* max / min: numpy's lexicographic order (real part, then imaginary part), a NaN part of
  the first operand propagating (`_lexicographic`): compares and selects, bit for bit.
* log: log|z| + i atan2(b, a) (`hlo.atan2`: lowering/atan2.py), log|z| without
  cancellation: where |z|^2 is in [0.5, 2], log1p(hi^2 - 1 + lo^2) / 2 (Kahan's log1p from
  log; the squares exact: in f64 for f32 parts, Dekker's for f64 ones), elsewhere
  log(a^2 + b^2) / 2 in f64 (f32 parts) or log(hi) + log(1 + (lo/hi)^2) / 2 (f64 parts).
  complex<f32> within an ulp of each part (equal in practice), complex<f64> within 4 ulps
  (and about eps^2 absolute near |z| = 1, where glibc sums the squares' low parts exactly).
  C99's special values: zero gives -inf + i arg, an infinite part +inf, NaN otherwise.

* pow (`_pow`): numpy's `nc_pow` as measured on this machine's numpy (tests/unit/
  test_lower_complex_pow.py): b = 0 gives 1; a = 0 gives 0 (Re b > 0) or NaN; an integer
  exponent (Im b = 0, |n| < 100) is multiplied out with the uncontracted product in the
  part type (n = 1, 2, 3 unrolled, else square-and-multiply over all 7 bits, Smith's
  1 / r for n < 0): bit for bit. Any other exponent: glibc's cpow (cpowf for
  complex<f32>), exp(b log a) with b log a the uncontracted product in the part type
  (measured: numpy's contracted one matches 63%, this one all): `_log` and `_exp` within
  an ulp (f32 parts) or a few (f64 parts) of glibc's, which exp turns into a few ulps of
  |a^b| per unit of b log a's product scale. Deviation: glibc's product recovers
  infinities where both of its parts come out NaN (C99 Annex G), this one does not (NaN
  where level S may give an infinity or zero); where b log a is huge, the infinities'
  signs may differ.

`RULES` holds each elementwise op's ops on the parts. A top-level op becomes ONE loop
fusion on its parts (`ComplexElementwise`); a fusion of complex ops (the fusion pass's)
becomes one fusion on the parts of its values (`ComplexFusion`), where the cost model's
`fusion_on_parts` says so, which charges it so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from shardc.dialects import collective, hlo
from shardc.dialects.hlo import COMPLEX, element_kind
from shardc.hardware.chips import Chip
from shardc.hardware.cost import (
    PAIRS_ATTR,
    complex_fold_plain,
    complex_part_ops,
    fusion_on_parts,
    touches_complex,
)
from shardc.hardware.pairs import has_view_form, on_views, pairs_fusion
from shardc.lowering.fusion import inline_fusion
from xdsl.dialects.builtin import (
    ComplexType,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f32,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)


def is_complex(value: SSAValue | Attribute) -> bool:
    ty = value.type if isinstance(value, SSAValue) else value
    return isinstance(ty, TensorType) and element_kind(ty.element_type) == COMPLEX


class _Ops:
    """New ops at one op's location, in order."""

    def __init__(self, at: Operation) -> None:
        self.at = at
        self.ops: list[Operation] = []

    def fused(self, name: str, outs: Sequence[SSAValue]) -> tuple[list[Operation], list[SSAValue]]:
        """
        The new ops with all their arithmetic in ONE loop fusion (`hardware/cost.py`
        `complex_part_ops` charges it): the parts (and the op's real operands) in, `outs`
        (the result's parts, or its real result) out, a multi-output fusion, so each part
        crosses HBM once. Grouping the arithmetic by the fusion pass instead left Smith's
        division as seven loops, the quotients and selects re-read from HBM. The parts no
        op reads are dropped (a convert to a real type reads the real part only). Returns
        the ops and the values replacing `outs`.
        """
        arith = [o for o in self.ops if not isinstance(o, hlo.RealOp | hlo.ImagOp)]
        made = {r for o in arith for r in o.results}
        inputs: list[SSAValue] = []
        for o in arith:
            inputs += [v for v in o.operands if v not in made and v not in inputs]
        read = {*inputs, *outs}
        parts = [o for o in self.ops if o not in arith and o.results[0] in read]
        inside = [v for v in outs if v in made]
        if not inside:
            return parts, list(outs)
        block = Block(arg_types=[v.type for v in inputs])
        for v, arg in zip(inputs, block.args, strict=True):
            for use in list(v.uses):
                if use.operation in arith:
                    use.operation.operands[use.index] = arg
        block.add_ops(arith)
        block.add_op(hlo.ReturnOp(inside))
        fusion = hlo.FusionOp(inputs, [v.type for v in inside], Region(block), "loop", name)
        fusion.location = self.at.location
        new = dict(zip(inside, fusion.results, strict=True))
        return [*parts, fusion], [new.get(v, v) for v in outs]

    def add(self, op: Operation) -> SSAValue:
        op.location = self.at.location
        self.ops.append(op)
        return op.results[0]

    def shape(self, v: SSAValue) -> list[int]:
        ty = v.type
        assert isinstance(ty, TensorType)
        return list(ty.get_shape())

    def elem(self, v: SSAValue) -> Attribute:
        ty = v.type
        assert isinstance(ty, TensorType)
        return ty.element_type

    def part_type(self, v: SSAValue) -> Attribute:
        elem = self.elem(v)
        return elem.element_type if isinstance(elem, ComplexType) else elem

    def pairs(self, x: SSAValue) -> SSAValue:
        """The parts of complex `x` as a tensor with a last dimension of 2 (a view)."""
        ty = TensorType(self.part_type(x), [*self.shape(x), 2])
        return self.add(hlo.BitcastConvertOp(x, ty))

    def from_pairs(self, p: SSAValue, elem: Attribute) -> SSAValue:
        return self.add(hlo.BitcastConvertOp(p, TensorType(elem, self.shape(p)[:-1])))

    def part(self, x: SSAValue, which: int) -> SSAValue:
        """`hlo.real` / `hlo.imag` (a strided DMA: lowering/movement.py)."""
        return self.add(hlo.RealOp(x) if which == 0 else hlo.ImagOp(x))

    def join(self, re: SSAValue, im: SSAValue, elem: Attribute) -> SSAValue:
        return self.add(hlo.ComplexOp(re, im))

    def convert(self, v: SSAValue, elem: Attribute) -> SSAValue:
        if self.elem(v) == elem:
            return v
        return self.add(hlo.ConvertOp(v, TensorType(elem, self.shape(v))))

    def splat(self, value: float, like: SSAValue) -> SSAValue:
        ty = TensorType(self.elem(like), self.shape(like))
        return self.add(hlo.ConstantOp(DenseIntOrFPElementsAttr.from_list(ty, [value])))

    def bin(self, cls: type[hlo.BinaryElementwiseOp], a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(cls(a, b))


def _mul(b: _Ops, x: Sequence[SSAValue], y: Sequence[SSAValue]) -> list[SSAValue]:
    """numpy's contracted complex product (module docstring)."""
    (ar, ai), (br, bi) = x, y
    part = b.elem(ar)
    wide = f64  # complex<f32>: the fma in f64; complex<f64>: one more rounding
    p, q = b.bin(hlo.MulOp, ai, bi), b.bin(hlo.MulOp, ai, br)
    w = [b.convert(v, wide) for v in (ar, br, bi, p, q)]
    re = b.bin(hlo.SubOp, b.bin(hlo.MulOp, w[0], w[1]), w[3])
    im = b.bin(hlo.AddOp, b.bin(hlo.MulOp, w[0], w[2]), w[4])
    if part == f64:
        re, im = _fma_infinities(b, (ar, br, bi), (p, q), (re, im))
    return [b.convert(re, part), b.convert(im, part)]


def _fma_infinities(
    b: _Ops,
    factors: tuple[SSAValue, SSAValue, SSAValue],
    rounded: tuple[SSAValue, SSAValue],
    sums: tuple[SSAValue, SSAValue],
) -> tuple[SSAValue, SSAValue]:
    """
    complex<f64> `_mul`'s parts where a sum of rounded products is NaN, as numpy's fma
    gives them: fma(ar, br, -p) of finite ar, br is -p where p = fl(ai bi) is infinite
    (the exact ar br is finite), also where the rounded ar br overflowed to p's infinity
    (inf - inf: NaN). So where a part is NaN it is (ar - ar) br - p: -p for finite ar, br,
    and NaN as fma's otherwise (an infinite or NaN factor); the imaginary part likewise
    with bi and +q. Without it, (2e20 + 1e300 i)(-9e9 + 1e300 i) had a NaN imaginary part
    where level S's is -inf (tests/unit/test_lower_complex.py).
    """
    ar, br, bi = factors
    p, q = rounded
    re, im = sums
    finite = b.bin(hlo.SubOp, ar, ar)  # 0 for a finite ar, else NaN
    re_nan = b.bin(hlo.SubOp, b.bin(hlo.MulOp, finite, br), p)
    im_nan = b.bin(hlo.AddOp, b.bin(hlo.MulOp, finite, bi), q)
    re = b.add(hlo.SelectOp(b.add(hlo.CompareOp("NE", re, re)), re_nan, re))
    im = b.add(hlo.SelectOp(b.add(hlo.CompareOp("NE", im, im)), im_nan, im))
    return re, im


def _plain_mul(b: _Ops, x: Sequence[SSAValue], y: Sequence[SSAValue]) -> list[SSAValue]:
    """numpy's uncontracted complex product (its reduce loop, `complex_fold_plain`): every
    product and sum rounded in the part type."""
    (ar, ai), (br, bi) = x, y
    re = b.bin(hlo.SubOp, b.bin(hlo.MulOp, ar, br), b.bin(hlo.MulOp, ai, bi))
    im = b.bin(hlo.AddOp, b.bin(hlo.MulOp, ar, bi), b.bin(hlo.MulOp, ai, br))
    return [re, im]


def _div(b: _Ops, x: Sequence[SSAValue], y: Sequence[SSAValue]) -> list[SSAValue]:
    """numpy's Smith division (module docstring), both branches computed, one selected."""
    (ar, ai), (br, bi) = x, y
    abr, abi = b.add(hlo.AbsOp(br)), b.add(hlo.AbsOp(bi))
    big = b.add(hlo.CompareOp("GE", abr, abi))
    one = b.splat(1.0, ar)
    mul, add, sub, div = hlo.MulOp, hlo.AddOp, hlo.SubOp, hlo.DivOp
    # |br| >= |bi|: rat = bi / br, scl = 1 / (br + bi * rat)
    rat = b.bin(div, bi, br)
    scl = b.bin(div, one, b.bin(add, br, b.bin(mul, bi, rat)))
    re1 = b.bin(mul, b.bin(add, ar, b.bin(mul, ai, rat)), scl)
    im1 = b.bin(mul, b.bin(sub, ai, b.bin(mul, ar, rat)), scl)
    # else: rat = br / bi, scl = 1 / (bi + br * rat)
    rat2 = b.bin(div, br, bi)
    scl2 = b.bin(div, one, b.bin(add, bi, b.bin(mul, br, rat2)))
    re2 = b.bin(mul, b.bin(add, b.bin(mul, ar, rat2), ai), scl2)
    im2 = b.bin(mul, b.bin(sub, b.bin(mul, ai, rat2), ar), scl2)
    # both parts of the divisor 0: a / |br| part by part (inf or NaN)
    both0 = b.add(hlo.CompareOp("EQ", b.bin(hlo.MaxOp, abr, abi), b.splat(0.0, ar)))
    re1 = b.add(hlo.SelectOp(both0, b.bin(div, ar, abr), re1))
    im1 = b.add(hlo.SelectOp(both0, b.bin(div, ai, abr), im1))
    return [b.add(hlo.SelectOp(big, re1, re2)), b.add(hlo.SelectOp(big, im1, im2))]


def _abs(b: _Ops, ar: SSAValue, ai: SSAValue) -> SSAValue:
    """The modulus (module docstring): f32 parts via f64, f64 parts scaled."""
    part = b.elem(ar)
    x, y = (b.add(hlo.AbsOp(v)) for v in (ar, ai))
    inf = b.splat(float("inf"), x)
    either_inf = b.bin(hlo.OrOp, *(b.add(hlo.CompareOp("EQ", v, inf)) for v in (x, y)))
    if part == f32:
        w = [b.convert(v, f64) for v in (x, y)]
        sq = b.bin(hlo.AddOp, b.bin(hlo.MulOp, w[0], w[0]), b.bin(hlo.MulOp, w[1], w[1]))
        r = b.convert(b.add(hlo.SqrtOp(sq)), part)
    else:
        hi, lo = b.bin(hlo.MaxOp, x, y), b.bin(hlo.MinOp, x, y)
        q = b.bin(hlo.DivOp, lo, hi)
        one = b.splat(1.0, q)
        root = b.add(hlo.SqrtOp(b.bin(hlo.AddOp, one, b.bin(hlo.MulOp, q, q))))
        zero = b.add(hlo.CompareOp("EQ", hi, b.splat(0.0, hi)))
        r = b.add(hlo.SelectOp(zero, hi, b.bin(hlo.MulOp, hi, root)))
    return b.add(hlo.SelectOp(either_inf, inf, r))


Value = tuple[SSAValue, SSAValue] | SSAValue
"""A value on its parts: a complex one as (real part, imaginary part), a real one itself."""
Rule = Callable[[_Ops, Operation, list[Value]], Value]


def _pair(v: Value) -> tuple[SSAValue, SSAValue]:
    assert isinstance(v, tuple)
    return v


def _real(v: Value) -> SSAValue:
    assert not isinstance(v, tuple)
    return v


def _partwise(b: _Ops, op: Operation, args: list[Value]) -> Value:
    """add, sub, neg: each part on its own."""
    if isinstance(op, hlo.NegOp):
        re, im = _pair(args[0])
        return b.add(hlo.NegOp(re)), b.add(hlo.NegOp(im))
    assert isinstance(op, hlo.BinaryElementwiseOp)
    x, y = _pair(args[0]), _pair(args[1])
    return b.bin(type(op), x[0], y[0]), b.bin(type(op), x[1], y[1])


def _product(b: _Ops, op: Operation, args: list[Value]) -> Value:
    fn = _mul if isinstance(op, hlo.MulOp) else _div
    re, im = fn(b, _pair(args[0]), _pair(args[1]))
    return re, im


def _modulus(b: _Ops, op: Operation, args: list[Value]) -> Value:
    return _abs(b, *_pair(args[0]))


def _compare(b: _Ops, op: Operation, args: list[Value]) -> Value:
    """EQ: both parts equal; NE: either differs (numpy's, NaN parts unequal). The ordered
    directions are not defined on complex numbers (the verifier refuses them)."""
    assert isinstance(op, hlo.CompareOp)
    d = op.comparison_direction.data
    (ar, ai), (br, bi) = _pair(args[0]), _pair(args[1])
    re, im = b.add(hlo.CompareOp(d, ar, br)), b.add(hlo.CompareOp(d, ai, bi))
    return b.bin(hlo.AndOp if d == "EQ" else hlo.OrOp, re, im)


def _select(b: _Ops, op: Operation, args: list[Value]) -> Value:
    pred, (xr, xi), (yr, yi) = _real(args[0]), _pair(args[1]), _pair(args[2])
    return b.add(hlo.SelectOp(pred, xr, yr)), b.add(hlo.SelectOp(pred, xi, yi))


def _convert(b: _Ops, op: Operation, args: list[Value]) -> Value:
    """Level S's (`interpreter/values.py` `convert`): complex -> complex part by part;
    real -> complex the value and a zero imaginary part; complex -> i1 `!= 0` (either part
    nonzero); complex -> other real types the real part converted."""
    res = op.results[0].type
    assert isinstance(res, TensorType)
    dst, (x,) = res.element_type, args
    if isinstance(dst, ComplexType):
        part = dst.element_type
        if isinstance(x, tuple):
            return b.convert(x[0], part), b.convert(x[1], part)
        re = b.convert(x, part)
        return re, b.splat(0.0, re)
    re, im = _pair(x)
    if dst == i1:
        nonzero = (b.add(hlo.CompareOp("NE", v, b.splat(0.0, v))) for v in (re, im))
        return b.bin(hlo.OrOp, *nonzero)
    return b.convert(re, dst)


def _exp(b: _Ops, op: Operation, args: list[Value]) -> Value:
    """e^a (cos b + i sin b), complex<f32> in f64 (as level S: complex128, rounded once),
    and C99's (glibc's, numpy's) special values: b = 0 gives the imaginary part b (also
    where e^a is infinite or NaN); a = +inf with b not finite inf + i NaN; a = -inf with
    b not finite 0 + i 0 (the sign of b's, NaN: +0)."""
    ar, ai = _pair(args[0])
    part = b.elem(ar)
    x, y = b.convert(ar, f64), b.convert(ai, f64)
    e = b.add(hlo.ExpOp(x))
    re = b.bin(hlo.MulOp, e, b.add(hlo.CosOp(y)))
    im = b.bin(hlo.MulOp, e, b.add(hlo.SinOp(y)))
    zero = b.splat(0.0, y)
    im = b.add(hlo.SelectOp(b.add(hlo.CompareOp("EQ", y, zero)), y, im))
    not_finite = b.add(hlo.CompareOp("NE", b.bin(hlo.SubOp, y, y), zero))  # inf or NaN
    inf = b.add(hlo.CompareOp("EQ", b.add(hlo.AbsOp(x)), b.splat(float("inf"), x)))
    edge = b.bin(hlo.AndOp, inf, not_finite)
    re = b.add(hlo.SelectOp(edge, e, re))  # +inf or +0: e^a itself
    vanish = b.bin(hlo.AndOp, edge, b.add(hlo.CompareOp("EQ", e, zero)))  # a = -inf
    signed = b.add(hlo.SelectOp(b.add(hlo.CompareOp("LT", y, zero)), b.add(hlo.NegOp(e)), e))
    im = b.add(hlo.SelectOp(vanish, signed, im))
    return b.convert(re, part), b.convert(im, part)


_BIG, _SMALL = 2.0**1020, 2.0**-1020
"""complex<f64> sqrt's scaling (`_sqrt`): parts at least `_BIG` are scaled by 2^-4 (the
modulus and a + |z| stay finite), parts all below `_SMALL` by 2^108 (subnormals become
normal: halving them would round their last bits away); the root by 2^2 or 2^-54."""


def _signbit(b: _Ops, v: SSAValue) -> SSAValue:
    """Whether `v`'s sign bit is set (-0 and NaNs too: the bits as a signed integer < 0)."""
    bits = IntegerType(64 if b.elem(v) == f64 else 32)
    word = b.add(hlo.BitcastConvertOp(v, TensorType(bits, b.shape(v))))
    zero = b.add(hlo.ConstantOp(DenseIntOrFPElementsAttr.from_list(word.type, [0])))
    return b.add(hlo.CompareOp("LT", word, zero))


def _scaled(b: _Ops, x: SSAValue, y: SSAValue) -> tuple[SSAValue, SSAValue, SSAValue]:
    """complex<f64> sqrt's operands scaled into range (`_BIG`) and the root's scale."""
    m = b.bin(hlo.MaxOp, b.add(hlo.AbsOp(x)), b.add(hlo.AbsOp(y)))
    big = b.add(hlo.CompareOp("GE", m, b.splat(_BIG, m)))
    small = b.add(hlo.CompareOp("LT", m, b.splat(_SMALL, m)))
    one = b.splat(1.0, m)
    s_in = b.add(
        hlo.SelectOp(
            big, b.splat(2.0**-4, m), b.add(hlo.SelectOp(small, b.splat(2.0**108, m), one))
        )
    )
    s_out = b.add(
        hlo.SelectOp(big, b.splat(4.0, m), b.add(hlo.SelectOp(small, b.splat(2.0**-54, m), one)))
    )
    return b.bin(hlo.MulOp, x, s_in), b.bin(hlo.MulOp, y, s_in), s_out


def _sqrt(b: _Ops, op: Operation, args: list[Value]) -> Value:
    """
    The principal root by the stable formula (no cancellation): t = sqrt((|z| + |a|) / 2),
    u = b / 2t; a >= 0: t + i u, else |u| + i copysign(t, b). complex<f32> in f64 (|z| =
    sqrt(a^2 + b^2) exactly enough there), complex<f64> scaled (`_scaled`) with |z| = hi
    sqrt(1 + (lo/hi)^2). C99's special values: z = 0 gives 0 + i b; b = +-inf gives
    +inf + i b; a = +inf, b NaN: +inf + i NaN; a = -inf, b NaN: NaN + i copysign(inf, b).
    """
    ar, ai = _pair(args[0])
    part = b.elem(ar)
    x, y = b.convert(ar, f64), b.convert(ai, f64)
    negative_b = _signbit(b, ai)
    xs, ys, s_out = _scaled(b, x, y) if part == f64 else (x, y, None)
    ax = b.add(hlo.AbsOp(xs))
    if part == f64:
        ay = b.add(hlo.AbsOp(ys))
        hi, lo = b.bin(hlo.MaxOp, ax, ay), b.bin(hlo.MinOp, ax, ay)
        q = b.bin(hlo.DivOp, lo, hi)
        root = b.add(hlo.SqrtOp(b.bin(hlo.AddOp, b.splat(1.0, q), b.bin(hlo.MulOp, q, q))))
        none = b.add(hlo.CompareOp("EQ", hi, b.splat(0.0, hi)))  # z = 0: 0 / 0 in q
        d = b.add(hlo.SelectOp(none, hi, b.bin(hlo.MulOp, hi, root)))
    else:
        d = b.add(hlo.SqrtOp(b.bin(hlo.AddOp, b.bin(hlo.MulOp, xs, xs), b.bin(hlo.MulOp, ys, ys))))
    half = b.splat(0.5, d)
    t = b.add(hlo.SqrtOp(b.bin(hlo.MulOp, half, b.bin(hlo.AddOp, d, ax))))
    u = b.bin(hlo.MulOp, half, b.bin(hlo.DivOp, ys, t))
    pos = b.add(hlo.CompareOp("GE", x, b.splat(0.0, x)))
    re = b.add(hlo.SelectOp(pos, t, b.add(hlo.AbsOp(u))))
    im = b.add(hlo.SelectOp(pos, u, b.add(hlo.SelectOp(negative_b, b.add(hlo.NegOp(t)), t))))
    if s_out is not None:
        re, im = b.bin(hlo.MulOp, re, s_out), b.bin(hlo.MulOp, im, s_out)
    return _sqrt_specials(b, x, y, d, pos, negative_b, re, im, part)


def _sqrt_specials(
    b: _Ops,
    x: SSAValue,
    y: SSAValue,
    d: SSAValue,
    pos: SSAValue,
    negative_b: SSAValue,
    re: SSAValue,
    im: SSAValue,
    part: Attribute,
) -> Value:
    """`_sqrt`'s special values (its docstring) over the root `re + i im` of `x + i y`
    (`d` its modulus, `pos` x >= 0, `negative_b` y's sign bit), then the part type."""
    zero = b.add(hlo.CompareOp("EQ", d, b.splat(0.0, d)))
    im = b.add(hlo.SelectOp(zero, y, im))
    inf = b.splat(float("inf"), x)
    y_inf = b.add(hlo.CompareOp("EQ", b.add(hlo.AbsOp(y)), inf))
    re, im = b.add(hlo.SelectOp(y_inf, inf, re)), b.add(hlo.SelectOp(y_inf, y, im))
    x_inf = b.add(hlo.CompareOp("EQ", b.add(hlo.AbsOp(x)), inf))
    edge = b.bin(hlo.AndOp, x_inf, b.add(hlo.CompareOp("NE", y, y)))
    re = b.add(hlo.SelectOp(edge, b.add(hlo.SelectOp(pos, x, y)), re))
    signed = b.add(hlo.SelectOp(negative_b, x, b.add(hlo.NegOp(x))))  # a = -inf here
    im = b.add(hlo.SelectOp(edge, b.add(hlo.SelectOp(pos, y, signed)), im))
    return b.convert(re, part), b.convert(im, part)


def _log1p(b: _Ops, d: SSAValue) -> SSAValue:
    """log(1 + d) to a few ulps without a log1p (Kahan): u = 1 + d, log(u) d / (u - 1),
    d itself where u rounds to 1."""
    u = b.bin(hlo.AddOp, b.splat(1.0, d), d)
    ratio = b.bin(hlo.DivOp, d, b.bin(hlo.SubOp, u, b.splat(1.0, d)))
    exact = b.add(hlo.CompareOp("EQ", u, b.splat(1.0, d)))
    return b.add(hlo.SelectOp(exact, d, b.bin(hlo.MulOp, b.add(hlo.LogOp(u)), ratio)))


def _square(b: _Ops, v: SSAValue) -> tuple[SSAValue, SSAValue]:
    """v^2 as p + e exactly (Dekker: v split in halves of 26 bits by Veltkamp's 2^27 + 1)."""
    p = b.bin(hlo.MulOp, v, v)
    c = b.bin(hlo.MulOp, b.splat(134217729.0, v), v)
    h = b.bin(hlo.SubOp, c, b.bin(hlo.SubOp, c, v))
    low = b.bin(hlo.SubOp, v, h)
    hh, hl = b.bin(hlo.MulOp, h, h), b.bin(hlo.MulOp, h, low)
    e = b.bin(hlo.AddOp, b.bin(hlo.SubOp, hh, p), b.bin(hlo.AddOp, hl, hl))
    return p, b.bin(hlo.AddOp, e, b.bin(hlo.MulOp, low, low))


def _two_sum(b: _Ops, x: SSAValue, y: SSAValue) -> tuple[SSAValue, SSAValue]:
    """x + y as s + e exactly (Knuth's two-sum: no ordering of |x|, |y| needed)."""
    s = b.bin(hlo.AddOp, x, y)
    yy = b.bin(hlo.SubOp, s, x)
    xx = b.bin(hlo.SubOp, s, yy)
    e = b.bin(hlo.AddOp, b.bin(hlo.SubOp, x, xx), b.bin(hlo.SubOp, y, yy))
    return s, e


def _log_modulus(b: _Ops, x: SSAValue, y: SSAValue, part: Attribute) -> SSAValue:
    """
    log|x + i y| (f64 `x`, `y`) without cancellation near |z| = 1: there (|z|^2 in
    [0.5, 2]) log1p(hi^2 - 1 + lo^2) / 2 with the squares exact (f32 parts: their f64
    products, hi^2 - 1 and the sum exact in f64; f64 parts: `_square`, summed by
    `_two_sum`s); elsewhere f32 parts
    log(hi^2 + lo^2) / 2 (no overflow in f64), f64 parts log(hi) + log(1 + (lo/hi)^2) / 2.
    An infinite part gives +inf (a NaN other part too, as C99's clog).
    """
    ax, ay = b.add(hlo.AbsOp(x)), b.add(hlo.AbsOp(y))
    hi, lo = b.bin(hlo.MaxOp, ax, ay), b.bin(hlo.MinOp, ax, ay)
    half = b.splat(0.5, hi)
    if part == f32:
        p1, p2 = b.bin(hlo.MulOp, hi, hi), b.bin(hlo.MulOp, lo, lo)
        d = b.bin(hlo.AddOp, b.bin(hlo.SubOp, p1, b.splat(1.0, hi)), p2)
        s = b.bin(hlo.AddOp, p1, p2)
        far = b.bin(hlo.MulOp, half, b.add(hlo.LogOp(s)))
    else:
        (p1, e1), (p2, e2) = _square(b, hi), _square(b, lo)
        # hi^2 - 1 + lo^2 as exact two-sums: hi^2 - 1 is not exact below hi^2 = 1/2
        # (|z|^2 near 1 with both parts near 0.707), nor is the sum with lo^2
        s1, r1 = _two_sum(b, p1, b.splat(-1.0, hi))
        s2, r2 = _two_sum(b, s1, p2)
        rest = b.bin(hlo.AddOp, b.bin(hlo.AddOp, r1, r2), b.bin(hlo.AddOp, e1, e2))
        d = b.bin(hlo.AddOp, s2, rest)
        s = b.bin(hlo.AddOp, p1, p2)
        q = b.bin(hlo.DivOp, lo, hi)
        rest = b.add(hlo.LogOp(b.bin(hlo.AddOp, b.splat(1.0, q), b.bin(hlo.MulOp, q, q))))
        far = b.bin(hlo.AddOp, b.add(hlo.LogOp(hi)), b.bin(hlo.MulOp, half, rest))
        zero = b.add(hlo.CompareOp("EQ", hi, b.splat(0.0, hi)))  # 0 / 0 in q
        far = b.add(hlo.SelectOp(zero, b.splat(float("-inf"), hi), far))
    near = b.bin(
        hlo.AndOp,
        b.add(hlo.CompareOp("GE", s, b.splat(0.5, s))),
        b.add(hlo.CompareOp("LE", s, b.splat(2.0, s))),
    )
    r = b.add(hlo.SelectOp(near, b.bin(hlo.MulOp, half, _log1p(b, d)), far))
    inf = b.splat(float("inf"), hi)
    either_inf = b.bin(hlo.OrOp, *(b.add(hlo.CompareOp("EQ", v, inf)) for v in (ax, ay)))
    return b.add(hlo.SelectOp(either_inf, inf, r))


def _log(b: _Ops, op: Operation, args: list[Value]) -> Value:
    """log|z| + i atan2(b, a) (module docstring), complex<f32> in f64 as level S (numpy's
    complex128 clog, rounded once)."""
    ar, ai = _pair(args[0])
    part = b.elem(ar)
    x, y = b.convert(ar, f64), b.convert(ai, f64)
    re = _log_modulus(b, x, y, part)
    im = b.add(hlo.Atan2Op(y, x))
    return b.convert(re, part), b.convert(im, part)


def _lexicographic(b: _Ops, op: Operation, args: list[Value]) -> Value:
    """max / min as numpy's (level S): `_extreme`."""
    return _extreme(b, _pair(args[0]), _pair(args[1]), isinstance(op, hlo.MaxOp))


def _extreme(
    b: _Ops, x: tuple[SSAValue, SSAValue], y: tuple[SSAValue, SSAValue], larger: bool
) -> tuple[SSAValue, SSAValue]:
    """numpy's complex maximum (`larger`) or minimum: x where x has a NaN part or x >= y
    (<= for min) in the order of (real part, imaginary part), else y; the real parts
    decide only where neither imaginary part is NaN, equal values give x (its signed
    zeros)."""
    (ar, ai), (br, bi) = x, y
    strict, weak = ("GT", "GE") if larger else ("LT", "LE")
    ordered = b.bin(
        hlo.AndOp, b.add(hlo.CompareOp("EQ", ai, ai)), b.add(hlo.CompareOp("EQ", bi, bi))
    )
    first = b.bin(hlo.AndOp, b.add(hlo.CompareOp(strict, ar, br)), ordered)
    tie = b.bin(hlo.AndOp, b.add(hlo.CompareOp("EQ", ar, br)), b.add(hlo.CompareOp(weak, ai, bi)))
    nan = b.bin(hlo.OrOp, b.add(hlo.CompareOp("NE", ar, ar)), b.add(hlo.CompareOp("NE", ai, ai)))
    pick = b.bin(hlo.OrOp, nan, b.bin(hlo.OrOp, first, tie))
    return b.add(hlo.SelectOp(pick, ar, br)), b.add(hlo.SelectOp(pick, ai, bi))


POW_INT_BITS = 7
"""Bits of an integer exponent numpy multiplies out (|n| < 100 < 2^7: `_pow`)."""


def _select_pair(
    b: _Ops, c: SSAValue, x: Sequence[SSAValue], y: Sequence[SSAValue]
) -> tuple[SSAValue, SSAValue]:
    return b.add(hlo.SelectOp(c, x[0], y[0])), b.add(hlo.SelectOp(c, x[1], y[1]))


def _int_power(b: _Ops, a: tuple[SSAValue, SSAValue], n: SSAValue) -> tuple[SSAValue, SSAValue]:
    """
    numpy's a^|n| for an integer |n| < 2^`POW_INT_BITS` (its `nc_pow` loop, every element
    taking every bit): from 1 + 0i, a multiplied in where n's bit is set, squared
    between bits, with the uncontracted product (`_plain_mul`, numpy's `nc_prod`).
    """
    k = b.add(hlo.AbsOp(n))
    aa = (b.splat(1.0, a[0]), b.splat(0.0, a[0]))
    p = a
    for level in range(POW_INT_BITS):
        bit = b.bin(hlo.AndOp, k, b.splat(1 << level, k))
        on = b.add(hlo.CompareOp("NE", bit, b.splat(0, k)))
        aa = _select_pair(b, on, _plain_mul(b, aa, p), aa)
        if level + 1 < POW_INT_BITS:
            p = tuple(_plain_mul(b, p, p))
    return aa


def _pow(b: _Ops, op: Operation, args: list[Value]) -> Value:
    """
    numpy's complex power (level S: `np.power` in the operands' type, measured on this
    machine's numpy): b = 0 gives 1 + 0i (whatever a); a = 0 gives 0 + 0i where Re b > 0,
    else NaN + i NaN; an integer exponent n (Im b = 0) with |n| < 100 is multiplied out
    with the uncontracted product: n = 1 a, n = 2 a a, n = 3 a (a a), else `_int_power`,
    then 1 / that by Smith's division (`_div`) for n < 0 (bit for bit); any other
    exponent glibc's cpow, exp(b log a) (`_log`, the uncontracted product in the part
    type, `_exp`: within a few ulps of level S's per unit of b log a's product scale).
    """
    a, e = _pair(args[0]), _pair(args[1])
    (ar, ai), (br, bi) = a, e
    zero = b.splat(0.0, ar)
    general = _exp(b, op, [tuple(_plain_mul(b, e, _pair(_log(b, op, [a]))))])
    small = b.add(hlo.CompareOp("LT", b.add(hlo.AbsOp(br)), b.splat(100.0, br)))
    n = b.convert(b.add(hlo.SelectOp(small, br, zero)), IntegerType(32))
    integral = b.bin(hlo.AndOp, small, b.add(hlo.CompareOp("EQ", b.convert(n, b.elem(br)), br)))
    integral = b.bin(hlo.AndOp, integral, b.add(hlo.CompareOp("EQ", bi, zero)))
    square = tuple(_plain_mul(b, a, a))
    looped = _int_power(b, a, n)
    one = (b.splat(1.0, ar), zero)
    negative = b.add(hlo.CompareOp("LT", br, zero))
    looped = _select_pair(b, negative, _div(b, one, looped), looped)

    def exponent(k: int) -> SSAValue:
        return b.add(hlo.CompareOp("EQ", n, b.splat(k, n)))

    whole = _select_pair(b, exponent(3), _plain_mul(b, a, square), looped)
    whole = _select_pair(b, exponent(2), square, whole)
    whole = _select_pair(b, exponent(1), a, whole)
    r = _select_pair(b, integral, whole, general)
    a_zero = b.bin(
        hlo.AndOp, b.add(hlo.CompareOp("EQ", ar, zero)), b.add(hlo.CompareOp("EQ", ai, zero))
    )
    nan = b.splat(math.nan, ar)
    to_zero = _select_pair(b, b.add(hlo.CompareOp("GT", br, zero)), (zero, zero), (nan, nan))
    r = _select_pair(b, a_zero, to_zero, r)
    b_zero = b.bin(
        hlo.AndOp, b.add(hlo.CompareOp("EQ", br, zero)), b.add(hlo.CompareOp("EQ", bi, zero))
    )
    return _select_pair(b, b_zero, one, r)


RULES: dict[type[Operation], Rule] = {
    hlo.AddOp: _partwise,
    hlo.SubOp: _partwise,
    hlo.NegOp: _partwise,
    hlo.MulOp: _product,
    hlo.DivOp: _product,
    hlo.AbsOp: _modulus,
    hlo.CompareOp: _compare,
    hlo.SelectOp: _select,
    hlo.ConvertOp: _convert,
    hlo.ExpOp: _exp,
    hlo.SqrtOp: _sqrt,
    hlo.LogOp: _log,
    hlo.MaxOp: _lexicographic,
    hlo.MinOp: _lexicographic,
    hlo.PowOp: _pow,
}
"""The elementwise ops on complex numbers `lower-to-tpu` computes on the parts: each as its
ops on the parts (module docstring)."""


def _join(
    at: Operation, outs: Sequence[SSAValue], like: Sequence[SSAValue]
) -> tuple[list[Operation], list[SSAValue]]:
    """`outs` (two parts for each complex value of `like`) joined: (the joins, the values)."""
    joins: list[Operation] = []
    values: list[SSAValue] = []
    it = iter(outs)
    for old in like:
        if not is_complex(old):
            values.append(next(it))
            continue
        join = hlo.ComplexOp(next(it), next(it))
        join.location = at.location
        joins.append(join)
        values.append(join.results[0])
    return joins, values


def _flat(values: Sequence[Value]) -> list[SSAValue]:
    return [p for v in values for p in (v if isinstance(v, tuple) else (v,))]


class ComplexElementwise(RewritePattern):
    """A complex elementwise op (`RULES`) as one loop fusion on the parts (`_Ops.fused`)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        rule = RULES.get(type(op))
        if rule is None or not touches_complex(op) or _fusion_on_parts(op.parent_op()):
            return
        b = _Ops(op)
        args: list[Value] = [
            (b.part(v, 0), b.part(v, 1)) if is_complex(v) else v for v in op.operands
        ]
        outs = _flat([rule(b, op, args)])
        ops, outs = b.fused(f"complex_{op.name.removeprefix('hlo.')}_fusion", outs)
        joins, values = _join(op, outs, op.results)
        rewriter.replace(op, [*ops, *joins], values)


_EACH_PART = (hlo.BroadcastOp, hlo.ReshapeOp, hlo.TransposeOp, hlo.SliceOp, hlo.ConcatenateOp)
"""Ops that move elements: on complex values, the same op on each part."""


def _each_part(b: _Ops, op: Operation, args: list[Value]) -> Value:
    ty = op.results[0].type
    assert isinstance(ty, TensorType)
    elem = ty.element_type
    assert isinstance(elem, ComplexType)
    part = TensorType(elem.element_type, ty.get_shape())

    def one(which: int) -> SSAValue:
        new = type(op).create(
            operands=[_pair(a)[which] for a in args],
            result_types=[part],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        return b.add(new)

    return one(0), one(1)


def _in_fusion(b: _Ops, op: Operation, args: list[Value]) -> Value:
    """A complex op of a fusion's body on the parts (no loop of its own)."""
    if isinstance(op, hlo.RealOp | hlo.ImagOp):
        return _pair(args[0])[0 if isinstance(op, hlo.RealOp) else 1]
    if isinstance(op, hlo.ComplexOp):
        return _real(args[0]), _real(args[1])
    if isinstance(op, _EACH_PART):
        return _each_part(b, op, args)
    return RULES[type(op)](b, op, args)


def _fusion_on_parts(op: Operation | None) -> bool:
    """Whether `op` is a fusion `ComplexFusion` rewrites (its ops wait for it): the cost
    model's `fusion_on_parts`, which charges it so."""
    return op is not None and fusion_on_parts(op)


class ComplexFusion(RewritePattern):
    """
    A fusion computing on complex values (the fusion pass groups complex ops like any
    other) as ONE fusion on their parts: its complex operands split outside (the strided
    DMAs), each complex op of its body on the parts in place, no loop of its own, its
    complex results joined outside. A body whose complex ops all act on the parts' views
    as real ops (moves, add, sub, neg, a reduce add: `hardware/pairs.py`) becomes that
    fusion on the views (`_on_views`). Any other (a complex dot, a product feeding a
    reduce) is left to the ops' own rewrites, and `lowering/fusion.py` inlines it (level
    S costs it op by op: `kernel.fusion_kernels`).
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, hlo.FusionOp):
            return
        if not _fusion_on_parts(op):
            self._on_views(op, rewriter)
            return
        outside = _Ops(op)
        args: list[Value] = [
            (outside.part(v, 0), outside.part(v, 1)) if is_complex(v) else v for v in op.inputs
        ]
        inputs = _flat(args)
        block = Block(arg_types=[v.type for v in inputs])
        it = iter(block.args)
        values: dict[SSAValue, Value] = {}
        for old, a in zip(op.body.block.args, args, strict=True):
            values[old] = (next(it), next(it)) if isinstance(a, tuple) else next(it)
        outs = _body_on_parts(op.body.block, block, values)
        fusion = hlo.FusionOp(inputs, [v.type for v in outs], Region(block), op.kind.data, op.label)
        fusion.location, fusion.attributes = op.location, dict(op.attributes)
        joins, results = _join(op, fusion.results, op.results)
        rewriter.replace(op, [*outside.ops, fusion, *joins], results)

    @staticmethod
    def _on_views(op: hlo.FusionOp, rewriter: PatternRewriter) -> None:
        """A fusion whose complex ops act on the parts' views as real ops (a transpose
        feeding a reduce add...: `hardware/pairs.py`) as that fusion on the views, its
        complex operands and results viewed in place."""
        if not any(is_complex(v) for v in (*op.inputs, *op.outputs)):
            return
        b = _Ops(op)
        inputs = [b.pairs(v) if is_complex(v) else v for v in op.inputs]
        fusion = pairs_fusion(op, inputs)
        if fusion is None:
            return
        fusion.location = op.location
        b.add(fusion)
        results = _from_pairs(b, list(fusion.results), list(op.results))
        rewriter.replace(op, b.ops, results)


def _body_on_parts(old: Block, new: Block, values: dict[SSAValue, Value]) -> list[SSAValue]:
    """Move `old`'s ops into `new` (their complex values on the parts, `values` mapping
    each old value to its parts); returns what `new` returns."""
    for o in list(old.ops):
        args = [values[v] for v in o.operands]
        if isinstance(o, hlo.ReturnOp):
            outs = _flat(args)
            new.add_op(hlo.ReturnOp(outs))
            return outs
        if not touches_complex(o):
            o.detach()
            for i, a in enumerate(args):
                o.operands[i] = _real(a)
            new.add_op(o)
            values |= {r: r for r in o.results}
            continue
        b = _Ops(o)
        values[o.results[0]] = _in_fusion(b, o, args)
        new.add_ops(b.ops)
    raise AssertionError("a fusion's body ends with hlo.return")


def _dot(b: _Ops, op: hlo.DotOp) -> SSAValue:
    """Four real dots: (Ar Br - Ai Bi) + i (Ar Bi + Ai Br)."""
    (ar, ai), (br, bi) = ((b.part(v, 0), b.part(v, 1)) for v in (op.lhs, op.rhs))
    res = op.result.type
    assert isinstance(res, TensorType)
    part = TensorType(b.part_type(op.result), res.get_shape())

    def dot(x: SSAValue, y: SSAValue) -> SSAValue:
        return b.add(hlo.DotOp(x, y, op.contracting, op.batching, part))

    re = b.bin(hlo.SubOp, dot(ar, br), dot(ai, bi))
    im = b.bin(hlo.AddOp, dot(ar, bi), dot(ai, br))
    return b.join(re, im, res.element_type)


def _pair_type(ty: Attribute) -> Attribute:
    """A complex tensor type's view as parts (a last dimension of 2); others unchanged."""
    if not is_complex(ty):
        return ty
    assert isinstance(ty, TensorType)
    elem = ty.element_type
    assert isinstance(elem, ComplexType)
    return TensorType(elem.element_type, [*ty.get_shape(), 2])


FOLD_IDENTITY = {"mul": (1.0, 0.0), "max": (-math.inf, -math.inf), "min": (math.inf, math.inf)}
"""Level S's identities of a complex reduce (interpreter `identity`): its inits' parts."""


def combine_body(at: Operation, kind: str, part: Attribute, plain: bool = False) -> Block:
    """
    One complex combine of reduction `kind` (mul, max, min) as a block on the parts:
    arguments the accumulator's (numpy's first operand) and the element's real and
    imaginary parts (rank-0 tensors of `part`), returning the result's; the product
    numpy's contracted one (`_mul`: its elementwise loop, as `np.multiply` of two arrays)
    or with `plain` its reduce loop's (`_plain_mul`), max / min `_extreme`. A complex
    reduce's body (`_fold`) and a ring collective's combine (lowering/pair_combine.py).
    """
    scalar = TensorType(part, [])
    block = Block(arg_types=[scalar] * 4)
    acc, elem = (block.args[0], block.args[1]), (block.args[2], block.args[3])
    inner = _Ops(at)
    if kind == "mul" and plain:
        outs = _plain_mul(inner, acc, elem)
    elif kind == "mul":
        outs = _mul(inner, acc, elem)
    else:
        outs = list(_extreme(inner, acc, elem, kind == "max"))
    block.add_ops(inner.ops)
    block.add_op(hlo.ReturnOp(outs))
    return block


def _fold(b: _Ops, op: hlo.ReduceOp) -> SSAValue:
    """
    A complex reduce mul / max / min as a reduce with a body on the parts (lowering/
    reduce_body.py folds it in level S's order, from the inits): inputs the real and
    imaginary parts (their strided DMAs), inits the identity's parts, the body
    `combine_body` (the product uncontracted where numpy's reduce loop runs:
    `complex_fold_plain`); the result's parts joined.
    """
    x = op.operands[0]
    kind = op.kind.data
    part = b.part_type(x)
    scalar = TensorType(part, [])
    inits = [
        b.add(hlo.ConstantOp(DenseIntOrFPElementsAttr.from_list(scalar, [v])))
        for v in FOLD_IDENTITY[kind]
    ]
    plain = kind == "mul" and complex_fold_plain(op)
    block = combine_body(op, kind, part, plain)
    fold = hlo.ReduceOp.with_body([b.part(x, 0), b.part(x, 1)], inits, op.dims, Region(block))
    b.add(fold)
    return b.join(fold.results[0], fold.results[1], b.elem(op.results[0]))


def _reduce_on_pairs(b: _Ops, op: hlo.ReduceOp) -> SSAValue:
    """A complex reduce add as the reduce add of the parts' view (2 parts per element)."""
    r = b.add(hlo.ReduceOp("add", b.pairs(op.operands[0]), op.dims))
    return b.from_pairs(r, b.elem(op.results[0]))


_ON_PAIRS = (
    collective.AllReduceBase,
    collective.ReduceScatterBase,
    collective.PermuteBase,
)
"""Collectives (sync and `_start`) that run on the parts' view of their complex operands:
a reduction adding the parts, or (mul, max, min: `PAIRS_ATTR`) combining them a pair at a
time, a permute moving them."""


def _collective_on_pairs(b: _Ops, op: Operation) -> Operation:
    """`op` on the parts' view of its complex operands (its real ones as they are); the new
    op's results (a `_start`'s: its future) hold the parts' views. A reduction other than
    add lists those operands in `PAIRS_ATTR` (add sums the parts' view elementwise)."""
    inputs = [b.pairs(v) if is_complex(v) else v for v in op.operands]
    if isinstance(op, collective.CollectiveOp) and op.IS_START:
        future = op.results[0].type
        assert isinstance(future, collective.FutureType)
        types = [collective.FutureType([_pair_type(t) for t in future.value_types])]
    else:
        types = [_pair_type(r.type) for r in op.results]
    new = type(op).create(
        operands=inputs,
        result_types=types,
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    if getattr(op, "kind", StringAttr("add")).data != "add":
        pairs = [i for i, v in enumerate(op.operands) if is_complex(v)]
        new.attributes[PAIRS_ATTR] = DenseArrayBase.from_list(i64, pairs)
    b.add(new)
    return new


def _from_pairs(b: _Ops, values: Sequence[SSAValue], like: Sequence[SSAValue]) -> list[SSAValue]:
    """`values` (parts' views where `like` is complex) as `like`'s types."""
    return [
        b.from_pairs(v, b.elem(old)) if is_complex(old) else v
        for v, old in zip(values, like, strict=True)
    ]


class ComplexReductions(RewritePattern):
    """Complex dot, reduce add, all_reduce / reduce_scatter (add; mul, max, min combining
    pairs: `PAIRS_ATTR`) and permute (sync, or a `_start` with its `done`s) on the parts."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not any(is_complex(v) for v in op.operands):
            return
        b = _Ops(op)
        if isinstance(op, hlo.DotOp):
            rewriter.replace(op, b.ops, [_dot(b, op)])
        elif isinstance(op, hlo.ReduceOp) and not op.has_body and op.kind.data == "add":
            rewriter.replace(op, b.ops, [_reduce_on_pairs(b, op)])
        elif isinstance(op, hlo.ReduceOp) and not op.has_body and op.kind.data in FOLD_IDENTITY:
            rewriter.replace(op, b.ops, [_fold(b, op)])
        elif isinstance(op, _ON_PAIRS) and getattr(op, "kind", StringAttr("add")).data in (
            "add",
            *FOLD_IDENTITY,
        ):
            new = _collective_on_pairs(b, op)
            if not (isinstance(op, collective.CollectiveOp) and op.IS_START):
                results = _from_pairs(b, new.results, op.results)
                rewriter.replace(op, b.ops, results)
                return
            for use in list(op.results[0].uses):  # the `done`s of the future
                done = use.operation
                assert isinstance(done, collective.DoneOp)
                after = _Ops(done)
                wait = collective.DoneOp(new.results[0])
                after.add(wait)
                results = _from_pairs(after, wait.results, done.results)
                rewriter.replace(done, after.ops, results)
            rewriter.replace(op, b.ops, [new.results[0]])


def _moves_parts(op: Operation) -> bool:
    return isinstance(op, (*_EACH_PART, hlo.RealOp, hlo.ImagOp, hlo.ComplexOp, hlo.ReturnOp))


def _inline_unfusable(function: Operation) -> list[str]:
    """
    Inline (unfused) each fusion with complex values that is neither one fusion
    on the parts (`fusion_on_parts`) nor one on their views (`hardware/pairs.py`): a
    complex dot is four real dots and a reduce mul a reduce with a body, more than one
    loop holds. Its ops then lower one by one as at the top level, which is what level S
    charges for it (`kernel.fusion_kernels` None: `inlined_fusion_cost`). `name: why`
    for each, for the kernel's `tpu.unfused` and the level-S summary line.
    """
    remarks = []
    for op in [o for o in function.walk() if isinstance(o, hlo.FusionOp)]:
        if fusion_on_parts(op) or on_views(op):
            continue
        ops = [o for o in op.body.block.ops if touches_complex(o)]
        if not ops:
            continue
        names = [
            o.name
            for o in ops
            if not has_view_form(o) or (complex_part_ops(o) is None and not _moves_parts(o))
        ]
        names = ", ".join(dict.fromkeys(names))
        remarks.append(f"{op.label}: complex {names}: not one loop on the parts or their views")
        inline_fusion(op)
    return remarks


def expand(function: Operation, chip: Chip) -> list[str]:
    """Rewrite the complex ops of `function` into ops on their parts (module docstring);
    the parts' arithmetic is one loop fusion (`_Ops.fused`) whatever `chip`. Returns the
    fusions inlined (`_inline_unfusable`)."""
    del chip  # the parts' arithmetic is one loop on every chip (`_Ops.fused`)
    remarks = _inline_unfusable(function)
    patterns = [ComplexFusion(), ComplexElementwise(), ComplexReductions()]
    walker = PatternRewriteWalker(GreedyRewritePatternApplier(patterns), apply_recursively=False)
    for region in function.regions:
        walker.rewrite_region(region)
    return remarks
