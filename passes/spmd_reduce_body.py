"""
Partitioning `hlo.reduce` with a body (argmax / argmin) over split reduced dimensions:
each device reduces its block with the body, then the partial results are all-gathered
along the reduced dimensions' axes (stacked on a new leading dimension) and reduced again
with the same body and inits (XLA's approach). The body combines partial results as it
combines elements, so argmax stays exact, first index on ties included.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardc.dialects import hlo
from shardc.passes.resharding import Resharder
from shardc.passes.sharding_rules import Axes
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue


def combine_partials(
    rs: Resharder, op: hlo.ReduceOp, partials: Sequence[SSAValue], axes: Axes
) -> list[SSAValue]:
    """The reduction of `op`'s per-device `partials` over the devices along `axes`."""
    ins = rs._insert  # pyright: ignore[reportPrivateUsage]
    stacked = []
    for p in partials:
        ty = p.type
        assert isinstance(ty, TensorType)
        one = ins(hlo.ReshapeOp(p, TensorType(ty.element_type, [1, *ty.get_shape()])))
        stacked.append(rs.all_gather(one.results[0], axes, 0))
    assert op.body is not None
    again = hlo.ReduceOp.with_body(stacked, op.inits, [0], op.body.clone())
    return list(ins(again).results)
