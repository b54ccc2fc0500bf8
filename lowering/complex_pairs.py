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
  rounded once more: within an ulp of the larger product, not bit for bit).
* div: numpy's Smith algorithm (the larger part of the divisor divides the other), as
  selects in the part type: bit for bit, division by 0 included (inf or NaN parts).
* abs: level S's modulus of complex<f32> is hypot in f64 rounded to f32: here
  sqrt(ar^2 + ai^2) in f64 (exact squares, two roundings) rounded to f32, an infinite
  part giving +inf as hypot does; equal but where the f64 values straddle an f32 tie.
  complex<f64>: max * sqrt(1 + (min / max)^2) (no overflow), within a few ulps.
* reduce add, dot and reducing collectives: sums of the parts (a complex dot as four
  real ones, as the cost model counts it), in level T's summation order.
* all_reduce / reduce_scatter add and permute: of the parts (a view of 2 parts per
  element); a permute's zero fill is the complex zero.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardc.dialects import collective, hlo
from shardc.dialects.hlo import COMPLEX, element_kind
from shardc.hardware.chips import Chip
from xdsl.dialects.builtin import (
    ComplexType,
    DenseIntOrFPElementsAttr,
    StringAttr,
    TensorType,
    f32,
    f64,
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

    def fused(self, name: str) -> tuple[list[Operation], SSAValue]:
        """
        The new ops with all their arithmetic in ONE loop fusion (`hardware/cost.py`
        `complex_part_ops` charges it): the parts in, the result's parts out (a multi-output
        fusion), so each part crosses HBM once; then the join. Grouping the arithmetic by
        the fusion pass instead left Smith's division as seven loops, the quotients and
        selects re-read from HBM. Returns the ops and the value replacing the op's result.
        """
        parts = [o for o in self.ops if isinstance(o, hlo.RealOp | hlo.ImagOp)]
        join = self.ops[-1] if isinstance(self.ops[-1], hlo.ComplexOp) else None
        arith = [o for o in self.ops if o not in parts and o is not join]
        outs = list(join.operands) if join is not None else [arith[-1].results[0]]
        block = Block(arg_types=[p.results[0].type for p in parts])
        inside = set(arith)
        for p, arg in zip(parts, block.args, strict=True):
            for use in list(p.results[0].uses):
                if use.operation in inside:
                    use.operation.operands[use.index] = arg
        block.add_ops(arith)
        block.add_op(hlo.ReturnOp(outs))
        inputs = [p.results[0] for p in parts]
        fusion = hlo.FusionOp(inputs, [v.type for v in outs], Region(block), "loop", name)
        fusion.location = self.at.location
        ops: list[Operation] = [*parts, fusion]
        if join is None:
            return ops, fusion.results[0]
        for i, r in enumerate(fusion.results):
            join.operands[i] = r
        return [*ops, join], join.results[0]

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
    return [b.convert(re, part), b.convert(im, part)]


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


_PARTWISE = (hlo.AddOp, hlo.SubOp)


class ComplexArithmetic(RewritePattern):
    """Complex add / sub / neg / mul / div / abs as ops on the parts (module docstring)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, (*_PARTWISE, hlo.MulOp, hlo.DivOp, hlo.NegOp, hlo.AbsOp)):
            return
        if not is_complex(op.operands[0]):
            return
        b = _Ops(op)
        parts = [(b.part(v, 0), b.part(v, 1)) for v in op.operands]
        if isinstance(op, hlo.AbsOp):
            _abs(b, *parts[0])
            ops, r = b.fused("complex_abs_fusion")
            rewriter.replace(op, ops, [r])
            return
        if isinstance(op, hlo.NegOp):
            re, im = (b.add(hlo.NegOp(v)) for v in parts[0])
        elif isinstance(op, _PARTWISE):
            re, im = (b.bin(type(op), x, y) for x, y in zip(*parts, strict=True))
        else:
            re, im = (_mul if isinstance(op, hlo.MulOp) else _div)(b, *parts)
        b.join(re, im, b.elem(op.results[0]))
        ops, r = b.fused(f"complex_{op.name.removeprefix('hlo.')}_fusion")
        rewriter.replace(op, ops, [r])


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
a reduction adding the parts (kind add only), a permute moving them."""


def _collective_on_pairs(b: _Ops, op: Operation) -> Operation:
    """`op` on the parts' view of its complex operands (its real ones as they are); the new
    op's results (a `_start`'s: its future) hold the parts' views."""
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
    b.add(new)
    return new


def _from_pairs(b: _Ops, values: Sequence[SSAValue], like: Sequence[SSAValue]) -> list[SSAValue]:
    """`values` (parts' views where `like` is complex) as `like`'s types."""
    return [
        b.from_pairs(v, b.elem(old)) if is_complex(old) else v
        for v, old in zip(values, like, strict=True)
    ]


class ComplexReductions(RewritePattern):
    """Complex dot, reduce add, all_reduce / reduce_scatter add and permute (sync, or a
    `_start` with its `done`s) on the parts."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not any(is_complex(v) for v in op.operands):
            return
        b = _Ops(op)
        if isinstance(op, hlo.DotOp):
            rewriter.replace(op, b.ops, [_dot(b, op)])
        elif isinstance(op, hlo.ReduceOp) and not op.has_body and op.kind.data == "add":
            rewriter.replace(op, b.ops, [_reduce_on_pairs(b, op)])
        elif isinstance(op, _ON_PAIRS) and getattr(op, "kind", StringAttr("add")).data == "add":
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


def expand(function: Operation, chip: Chip) -> None:
    """Rewrite the complex ops of `function` into ops on their parts (module docstring);
    the parts' arithmetic is one loop fusion (`_Ops.fused`) whatever `chip`."""
    del chip  # the parts' arithmetic is one loop on every chip (`_Ops.fused`)
    patterns = [ComplexArithmetic(), ComplexReductions()]
    walker = PatternRewriteWalker(GreedyRewritePatternApplier(patterns), apply_recursively=False)
    for region in function.regions:
        walker.rewrite_region(region)
