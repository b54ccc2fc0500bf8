"""
f64 `hlo.remainder` (fmod, exact as level S's numpy) as vector code (issue 15 item 3).

The narrower floats reduce the remainder in exact f64 steps (lowering/vector_ops.py
`float_remainder`); f64 has nothing wider, so its remainder is an integer long division of
the significands: |x| = mx * 2^ex, |y| = my * 2^ey (53-bit integers, the biased exponents,
1 for subnormals), and fmod(|x|, |y|) = (mx * 2^(ex - ey) mod my) * 2^ey. Each step shifts
the partial remainder r (< my < 2^53) left by up to 10 bits (< 2^63: no i64 overflow) and
takes `arith.remsi` by my, so 205 steps cover the largest exponent difference (2045);
lanes that are done shift by 0 (r mod my = r). The result r * 2^(ey - 1075) is exact: r
converts exactly (< 2^53) and the product is the true remainder, a representable value.
"""

from __future__ import annotations

from shardc.dialects import tpu
from shardc.hardware.cost import F64_FMOD_STEP_BITS, F64_FMOD_STEPS
from shardc.lowering.tile_index import TileEmitter
from xdsl.dialects import arith
from xdsl.dialects.builtin import VectorType, f64, i64
from xdsl.ir import SSAValue

STEP_BITS = F64_FMOD_STEP_BITS
"""Bits shifted per step (hardware/cost.py, which charges the steps: one definition)."""
STEPS = F64_FMOD_STEPS
"""The largest exponent difference (2046 - 1) over the bits per step."""
_FRACTION = (1 << 52) - 1


class _Ints:
    """Splats of i64 constants (one per value) and i64 vector ops on one shape."""

    def __init__(self, b: TileEmitter, shape: tuple[int, ...]) -> None:
        self.b = b
        self.ity = VectorType(i64, shape)
        self.fty = VectorType(f64, shape)
        self._splats: dict[int, SSAValue] = {}

    def c(self, value: int) -> SSAValue:
        from shardc.lowering.vector_ops import splat_vector

        if value not in self._splats:
            self._splats[value] = splat_vector(self.b, value, self.ity)
        return self._splats[value]

    def op(self, cls, *args: SSAValue | int) -> SSAValue:
        vals = [self.c(a) if isinstance(a, int) else a for a in args]
        return self.b.op(cls(*vals))

    def cmp(self, pred: str, x: SSAValue, y: SSAValue | int) -> SSAValue:
        return self.b.op(tpu.CmpOp(pred, x, self.c(y) if isinstance(y, int) else y))

    def select(self, c: SSAValue, x: SSAValue | int, y: SSAValue | int) -> SSAValue:
        x, y = (self.c(v) if isinstance(v, int) else v for v in (x, y))
        return self.b.op(tpu.SelectOp(c, x, y))


def _significand(n: _Ints, bits: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(53-bit significand, exponent at least 1) of |value| from its i64 bits."""
    exp = n.op(arith.ShRUIOp, bits, 52)
    normal = n.cmp("ne", exp, 0)
    frac = n.op(arith.AndIOp, bits, _FRACTION)
    sig = n.select(normal, n.op(arith.OrIOp, frac, 1 << 52), frac)
    return sig, n.op(arith.MaxSIOp, exp, 1)


def _long_division(n: _Ints, mx: SSAValue, my: SSAValue, d: SSAValue) -> SSAValue:
    """mx * 2^d mod my for 0 <= d <= 2045 (lanes with d < 0: mx mod my, unused)."""
    r = mx
    for _ in range(STEPS):
        s = n.op(arith.MinSIOp, n.op(arith.MaxSIOp, d, 0), STEP_BITS)
        r = n.op(arith.RemSIOp, n.op(arith.ShLIOp, r, s), my)
        d = n.op(arith.SubiOp, d, s)
    return r


def _scale(n: _Ints, r: SSAValue, ey: SSAValue) -> SSAValue:
    """r * 2^(ey - 1075) in f64: the power of two normal (ey >= 53) or subnormal."""
    normal = n.op(arith.ShLIOp, n.op(arith.SubiOp, ey, 52), 52)
    sub = n.op(arith.ShLIOp, 1, n.op(arith.MinSIOp, n.op(arith.SubiOp, ey, 1), 52))
    scale = n.b.op(arith.BitcastOp(n.select(n.cmp("sge", ey, 53), normal, sub), n.fty))
    return n.b.op(arith.MulfOp(n.b.op(tpu.ConvertOp(r, n.fty)), scale))


def f64_remainder(b: TileEmitter, x: SSAValue, y: SSAValue) -> SSAValue:
    """
    fmod(x, y) of f64 vectors, exactly, with the sign of x; the specials as
    `vector_ops.float_remainder` gives them (a NaN operand: x's first, quieted; an
    infinite x or y = 0: the default NaN; an infinite y: x).
    """
    xty = x.type
    assert isinstance(xty, VectorType)
    n = _Ints(b, tuple(xty.get_shape()))
    xb, yb = (b.op(arith.BitcastOp(v, n.ity)) for v in (x, y))
    ax, ay = (n.op(arith.AndIOp, v, (1 << 63) - 1) for v in (xb, yb))
    mx, ex = _significand(n, ax)
    my, ey = _significand(n, ay)
    inf = 0x7FF << 52
    invalid = n.op(arith.OrIOp, n.cmp("sge", ax, inf), n.cmp("eq", ay, 0))
    my = n.select(invalid, 1, my)  # no division by 0 in lanes replaced below
    r = _scale(n, _long_division(n, mx, my, n.op(arith.SubiOp, ex, ey)), ey)
    r = b.op(tpu.SelectOp(n.cmp("slt", xb, 0), b.op(arith.NegfOp(r)), r))
    r = b.op(tpu.SelectOp(n.cmp("slt", ex, ey), x, r))  # |x| < |y| (y infinite too)
    inf_f = b.op(arith.BitcastOp(n.c(inf), n.fty))
    r = b.op(tpu.SelectOp(invalid, b.op(arith.SubfOp(inf_f, inf_f)), r))  # the default NaN
    x_nan, y_nan = n.cmp("sgt", ax, inf), n.cmp("sgt", ay, inf)
    quiet = b.op(tpu.SelectOp(x_nan, b.op(arith.AddfOp(x, x)), b.op(arith.AddfOp(y, y))))
    return b.op(tpu.SelectOp(n.op(arith.OrIOp, x_nan, y_nan), quiet, r))
