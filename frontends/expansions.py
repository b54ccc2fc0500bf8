"""
Source ops that have no `hlo` op of their own, written with `hlo` ops.

Both importers may meet the same XLA ops under two spellings; each expansion is written
once here, on the `Emitter`, so that the two importers give the same `hlo` ops for the same
source op. (erf, erfc, sinh, cosh, tan, expm1, log1p, sign, clamp, remainder, xor and
is_finite have `hlo` ops of their own since issue 13: they are no longer expanded, which
lost precision.)
"""

from __future__ import annotations

import math

from shardc.frontends.common import Emitter
from xdsl.ir import SSAValue


def square(e: Emitter, x: SSAValue) -> SSAValue:
    return e.binary("mul", x, x)


def is_inf(e: Emitter, x: SSAValue, sign: int = 0) -> SSAValue:
    """|x| == inf (`sign` 0), x == +inf (1) or x == -inf (-1)."""
    if sign == 0:
        return e.compare("EQ", e.unary("abs", x), e.scalar_like(math.inf, x))
    return e.compare("EQ", x, e.scalar_like(math.inf if sign > 0 else -math.inf, x))
