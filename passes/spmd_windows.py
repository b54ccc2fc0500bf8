"""
Partitioning `hlo.reduce_window` and `hlo.select_and_scatter` along a windowed dimension
(XLA's windowed partitioning): each device keeps its block of the operand and gets the
elements its windows reach beyond the block (the *halo*) from its neighbours with
`collective.permute`, then runs the op locally on the extended block; the global padding
only applies at the first and last device.

A split dimension of n elements into N blocks of b gives result blocks of c = m / N (m:
the result's size): it is exchangeable when the result blocks line up with the operand's
(c * stride == b, no base dilation), so that every device needs the same halo: `low`
elements from its left neighbour and (c - 1) * stride + reach - low - b from its right
(reach: the dilated window size), each at most one block. A negative halo is local
negative padding. select_and_scatter is split only where no halo is needed (windows
that tile the blocks, as in max-pooling with stride = window): its padding is never
selected and its scatter would need the halo's results sent back. Otherwise the factor
is computed whole (`jnp.cumsum`'s window of the whole dimension: gathered).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from shardc.dialects import collective, hlo
from shardc.dialects.spmd import MeshAttr, ShardingAttr
from shardc.dialects.syntax import i64_array
from shardc.passes.resharding import Resharder
from shardc.passes.sharding_rules import Axes, FactorRule
from xdsl.dialects.builtin import ArrayAttr, TensorType
from xdsl.ir import Operation, SSAValue

WindowOp = hlo.ReduceWindowOp | hlo.SelectAndScatterOp


def halo_plan(op: WindowOp, dim: int, shards: int, shape: Sequence[int]) -> tuple[int, int] | None:
    """(left, right) halo sizes for `dim` of the operand (global `shape`) split in `shards`."""
    n, m = shape[dim], op.result_shape(shape)[dim]
    if op.base_dilation[dim] != 1 or n % shards or m % shards or not n or not m:
        return None
    b, c, s = n // shards, m // shards, op.strides[dim]
    if c * s != b:
        return None
    reach = (op.window[dim] - 1) * op.window_dilation[dim] + 1
    left = op.low[dim]
    right = (c - 1) * s + reach - left - b
    if max(left, 0) > b or max(right, 0) > b:
        return None
    if isinstance(op, hlo.SelectAndScatterOp) and (left, right) != (0, 0):
        return None
    return left, right


def aligned_halo_factors(
    op: Operation, rule: FactorRule, factors: list[Axes], mesh: MeshAttr, shape: Sequence[int]
) -> list[Axes]:
    """`factors` with the windowed factors no halo exchange can split left whole."""
    if not rule.halo_factors:
        return factors
    assert isinstance(op, WindowOp)
    out = list(factors)
    for f in rule.halo_factors:
        shards = math.prod(mesh.axis_size(a) for a in out[f])
        if shards > 1 and halo_plan(op, f, shards, shape) is None:
            out[f] = ()
    return out


def exchange_halos(
    rs: Resharder, op: WindowOp, natural: ShardingAttr, mesh: MeshAttr, shape: Sequence[int]
) -> None:
    """
    Before `op` (its operand already local): extend the operand's block along every split
    windowed dimension by its halos and set the local padding (`shape`: the global one).
    """
    rs.anchor = op
    value, low, high = op.operand, list(op.low), list(op.high)
    for d in op.windowed_dims():
        axes = natural.dim_axes[d]
        shards = math.prod(mesh.axis_size(a) for a in axes)
        if shards == 1:  # not split (no axes, or axes of size 1): nothing to exchange
            continue
        plan = halo_plan(op, d, shards, shape)
        assert plan is not None, "aligned_halo_factors admits only exchangeable splits"
        left, right = plan
        value = _with_halos(rs, value, d, axes, shards, (left, right), op.init_value)
        low[d], high[d] = min(left, 0), min(right, 0)
    op.operands[0] = value
    op.padding_low, op.padding_high = i64_array(low), i64_array(high)


def _with_halos(
    rs: Resharder,
    x: SSAValue,
    dim: int,
    axes: Axes,
    shards: int,
    halo: tuple[int, int],
    init: SSAValue,
) -> SSAValue:
    """[left neighbour's last `left`, x, right neighbour's first `right`] along `dim`."""
    left, right = halo
    size = _shape(x)[dim]
    parts = []
    if left > 0:
        tail = _slice(rs, x, dim, size - left, size)
        pairs = [(r, r + 1) for r in range(shards - 1)]
        parts.append(_init_at_edge(rs, _permute(rs, tail, axes, pairs), axes, 0, init))
    parts.append(x)
    if right > 0:
        head = _slice(rs, x, dim, 0, right)
        pairs = [(r + 1, r) for r in range(shards - 1)]
        parts.append(_init_at_edge(rs, _permute(rs, head, axes, pairs), axes, shards - 1, init))
    if len(parts) == 1:
        return x
    return rs._insert(hlo.ConcatenateOp(parts, dim)).results[0]  # pyright: ignore[reportPrivateUsage]


def _shape(value: SSAValue) -> tuple[int, ...]:
    ty = value.type
    assert isinstance(ty, TensorType)
    return ty.get_shape()


def _slice(rs: Resharder, x: SSAValue, dim: int, start: int, limit: int) -> SSAValue:
    shape = _shape(x)
    lo = [start if d == dim else 0 for d in range(len(shape))]
    hi = [limit if d == dim else n for d, n in enumerate(shape)]
    return rs._insert(hlo.SliceOp(x, lo, hi)).results[0]  # pyright: ignore[reportPrivateUsage]


def _permute(rs: Resharder, x: SSAValue, axes: Axes, pairs: list[tuple[int, int]]) -> SSAValue:
    op = collective.PermuteOp.create(
        operands=[x],
        result_types=[x.type],
        properties={"pairs": ArrayAttr(i64_array(p) for p in pairs), **rs.group(axes)},
    )
    return rs._insert(op).results[0]  # pyright: ignore[reportPrivateUsage]


def _init_at_edge(
    rs: Resharder, received: SSAValue, axes: Axes, edge: int, init: SSAValue
) -> SSAValue:
    """The device at block `edge` (which received nothing) holds padding: `init`."""
    ins = rs._insert  # pyright: ignore[reportPrivateUsage]
    ty = received.type
    assert isinstance(ty, TensorType)
    at_edge = ins(hlo.CompareOp("EQ", rs.shard_index(axes), rs.constant_i32(edge))).results[0]
    fill = ins(hlo.BroadcastOp(init, [], ty)).results[0]
    return ins(hlo.SelectOp(at_edge, fill, received)).results[0]
