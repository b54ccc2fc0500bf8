"""
`hlo.atan2` as vector code (issue 15 item 3): level T has no arctangent instruction, so
atan2(y, x) is computed in f64 from the ops it has, with level S's numerics (numpy's
arctan2 in f64, rounded once to f32 / bf16 / f16 / f8: `interpreter/hlo_elementwise.py`).

Range reduction to [0, 1] and Cephes' rational approximation of atan (P(z) / Q(z) of
degrees 4 and 5 in z = r^2, relative error about 1e-16 on |r| <= 0.4142):

* t = min(|y|, |x|) / max(|y|, |x|) in [0, 1] (no overflow whatever the magnitudes);
* t > 0.66: atan(t) = pi/4 + atan(r), r = (t - 1) / (t + 1) (|r| <= 0.205), else r = t;
* |y| > |x|: pi/2 - atan(t); x's sign bit set (-0 too): pi - that; the sign of y's.

So atan2 = n pi/4 +- atan(r) with n in 0..4: n times pi/4's f64 value is exact, and its
rounding error (Cephes' MOREBITS / 2, times n) is added to +-atan(r) before it, so the
result is within 2 f64 ulps of arctan2 (tests: tests/unit/test_lower_atan2.py), and
rounds to level S's value in the narrower types but where f64's result straddles a tie.
C99's (numpy's) special values fall out of the same ops with two selects: both zero
(t = 0 / 0) takes t = 0, giving +-0 or +-pi by x's sign bit; both infinite (t = inf / inf)
takes t = 1, giving +-pi/4 or +-3pi/4; one infinite gives t = 0 (x infinite: +-0 or +-pi)
or the swap (+-pi/2); a NaN operand propagates through max / min to the result.

`hlo.atan` is atan2(x, 1) (lowering/vector_ops.py: the 1 a splat, one op more).
Level S charges the ops emitted here: hardware/cost.py `ATAN2_OPS` (f64) plus
`ATAN2_WIDEN_OPS` (the converts of the narrower types), tested against the simulator.
"""

from __future__ import annotations

from shardc.dialects import tpu
from shardc.lowering.tile_index import TileEmitter
from shardc.lowering.vector_ops import Splats, convert_vector, vector_type
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import f64
from xdsl.ir import SSAValue

ATAN_P = (
    -8.750608600031904122785e-1,
    -1.615753718733365076637e1,
    -7.500855792314704667340e1,
    -1.228866684490136173410e2,
    -6.485021904942025371773e1,
)
"""Cephes' atan numerator in z = r^2, highest degree first."""
ATAN_Q = (
    2.485846490142306297962e1,
    1.650270098316988542046e2,
    4.328810604912902668951e2,
    4.853903996359136964868e2,
    1.945506571482613964425e2,
)
"""Cephes' monic atan denominator (z^5 + ...), without its leading 1, highest first."""
MOREBITS = 6.123233995736765886130e-17
"""pi/2 less its f64 rounding (Cephes): pi/4's error is half, pi's twice."""
PIO4, PIO2, PI = 0.7853981633974483, 1.5707963267948966, 3.141592653589793
BIG = 0.66
"""Above it, t is reduced by atan(t) = pi/4 + atan((t - 1) / (t + 1)) (Cephes)."""


def _horner(b: TileEmitter, c: Splats, z: SSAValue, coefs: tuple[float, ...], monic: bool):
    """sum coefs[i] z^(n - i), with a leading z^(n + 1) when `monic`."""
    acc = b.op(arith.AddfOp(z, c(coefs[0]))) if monic else c(coefs[0])
    for k in coefs[1:]:
        acc = b.op(arith.AddfOp(b.op(arith.MulfOp(acc, z)), c(k)))
    return acc


def _atan01(b: TileEmitter, c: Splats, t: SSAValue) -> tuple[SSAValue, SSAValue]:
    """atan(t) for t in [0, 1] (or NaN) as (atan(r), n): atan(t) = n pi/4 + atan(r), n = 1
    where t was reduced, else 0 (module docstring); atan(r) to about 1e-16 relative."""
    one = c(1.0)
    big = b.op(tpu.CmpOp("ogt", t, c(BIG)))
    reduced = b.op(arith.DivfOp(b.op(arith.SubfOp(t, one)), b.op(arith.AddfOp(t, one))))
    r = b.op(tpu.SelectOp(big, reduced, t))
    z = b.op(arith.MulfOp(r, r))
    p, q = _horner(b, c, z, ATAN_P, False), _horner(b, c, z, ATAN_Q, True)
    tail = b.op(arith.DivfOp(b.op(arith.MulfOp(z, p)), q))
    a = b.op(arith.AddfOp(r, b.op(arith.MulfOp(r, tail))))
    return a, b.op(tpu.SelectOp(big, one, c(0.0)))


def atan2(b: TileEmitter, y: SSAValue, x: SSAValue, c: Splats | None = None) -> SSAValue:
    """atan2(y, x) of two float vectors of one type, in f64 and rounded once (module
    docstring); `c`: the splats of the f64 code it is part of (lowering/special_functions.py),
    shared."""
    elem = vector_type(y).element_type
    y, x = convert_vector(b, y, f64), convert_vector(b, x, f64)
    c = Splats(b, vector_type(y).get_shape()) if c is None else c
    ay, ax = b.op(mathd.AbsFOp(y)), b.op(mathd.AbsFOp(x))
    hi, lo = b.op(arith.MaximumfOp(ay, ax)), b.op(arith.MinimumfOp(ay, ax))
    t = b.op(arith.DivfOp(lo, hi))
    t = b.op(tpu.SelectOp(b.op(tpu.CmpOp("oeq", hi, c(0.0))), c(0.0), t))  # 0 / 0
    t = b.op(tpu.SelectOp(b.op(tpu.CmpOp("oeq", lo, c(float("inf")))), c(1.0), t))  # inf/inf
    a, n = _atan01(b, c, t)
    one, minus = c(1.0), c(-1.0)
    swap = b.op(tpu.CmpOp("ogt", ay, ax))  # pi/2 - atan(t)
    n = b.op(tpu.SelectOp(swap, b.op(arith.SubfOp(c(2.0), n)), n))
    s = b.op(tpu.SelectOp(swap, minus, one))
    flip = b.op(tpu.CmpOp("olt", b.op(mathd.CopySignOp(one, x)), c(0.0)))  # pi - that
    n = b.op(tpu.SelectOp(flip, b.op(arith.SubfOp(c(4.0), n)), n))
    s = b.op(tpu.SelectOp(flip, b.op(arith.NegfOp(s)), s))
    # n pi/4 = n PIO4 (exact for n = 0..4) + n MOREBITS / 2, added to +-atan(r) first
    low = b.op(arith.AddfOp(b.op(arith.MulfOp(s, a)), b.op(arith.MulfOp(n, c(0.5 * MOREBITS)))))
    a = b.op(arith.AddfOp(b.op(arith.MulfOp(n, c(PIO4))), low))
    return convert_vector(b, b.op(mathd.CopySignOp(a, y)), elem)
