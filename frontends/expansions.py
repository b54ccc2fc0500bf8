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

from shardc.dialects import collective
from shardc.dialects.syntax import i64_attr
from shardc.frontends.common import Emitter
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue


def square(e: Emitter, x: SSAValue) -> SSAValue:
    return e.binary("mul", x, x)


def is_inf(e: Emitter, x: SSAValue, sign: int = 0) -> SSAValue:
    """|x| == inf (`sign` 0), x == +inf (1) or x == -inf (-1)."""
    if sign == 0:
        return e.compare("EQ", e.unary("abs", x), e.scalar_like(math.inf, x))
    return e.compare("EQ", x, e.scalar_like(math.inf if sign > 0 else -math.inf, x))


def collective_broadcast(e: Emitter, x: SSAValue, groups: list[list[int]]) -> SSAValue:
    """
    StableHLO's `collective_broadcast` / XLA's `collective-broadcast`: every device gets the
    value of the first device of its group (the source). An all_gather over the groups in
    their order (the source is rank 0), then block 0 of it: exact for every value (a
    masked all_reduce would turn -0.0 into +0.0).
    """
    ty = x.type
    assert isinstance(ty, TensorType)
    shape = list(ty.get_shape())
    size = len(groups[0])
    if size == 1:
        return x
    one = e.reshape(x, TensorType(ty.element_type, [1, *shape]))
    props = {"dim": i64_attr(0), **e.group_props(groups)}
    gathered = TensorType(ty.element_type, [size, *shape])
    (all_,) = e.collective(collective.AllGatherOp, [one], [gathered], props).results
    first = e.slice(all_, [0] * (len(shape) + 1), [1, *shape])
    return e.reshape(first, ty)
