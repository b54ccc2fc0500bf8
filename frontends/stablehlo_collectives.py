"""
StableHLO's collectives (inside manual computations) to `collective` ops.

Replica groups are read in XLA's group modes (`channel_handle`, `use_global_device_ids`;
see `hlo_sharding.participating_groups`) and written `on @mesh[axes]` when they are the
groups of mesh axes, else `on groups [[...]]`; `collective_permute` pairs become a `shift`
or rank `pairs` on the axes whose groups they permute alike. The converters are keyed by
op name in `COLLECTIVES`, like `stablehlo_ops.OPS`.
"""

from __future__ import annotations

import math

from shardc.dialects import collective
from shardc.dialects.syntax import i64_array, i64_attr
from shardc.frontends import expansions
from shardc.frontends import hlo_sharding as hs
from shardc.frontends.common import ConverterTable, pairs_on_mesh, shift_of
from shardc.frontends.stablehlo_dialect import KeyValueAttr
from shardc.frontends.stablehlo_ops import Converter, OpContext, reducer_kind
from shardc.frontends.stablehlo_source import get_attr, matrix, one_int, require
from xdsl.dialects.builtin import ArrayAttr, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute, Operation, SSAValue

COLLECTIVES: ConverterTable[Converter] = ConverterTable()


def groups_of(cx: OpContext, op: Operation, has_global_field: bool) -> list[list[int]]:
    """The device groups a collective runs over, in XLA's group mode."""
    rg = get_attr(op, "replica_groups")
    groups = matrix(rg) if rg is not None else []
    if any(d < 0 for g in groups for d in g):
        raise ValueError("replica groups of different sizes (padded with -1) are not supported")
    ch = get_attr(op, "channel_handle")
    has_channel = False
    if isinstance(ch, KeyValueAttr):
        handle = ch.get().get("handle")
        has_channel = handle is not None and one_int(handle) > 0
    use_global = (
        "use_global_device_ids" in op.properties or "use_global_device_ids" in op.attributes
    )
    mode = hs.group_mode(has_channel, use_global, has_global_field)
    cx.stats.constructs[f"replica groups ({mode.replace('_', ' ')})"] += 1
    out = hs.participating_groups(groups, mode, cx.replicas, cx.partitions)
    mesh = cx.shardings.mesh
    assert mesh is not None
    problem = hs.check_partition(out, mesh.device_count)
    if problem is not None:
        raise ValueError(f"replica groups {out}: {problem}")
    return out


def _one_op(
    cx: OpContext,
    op: Operation,
    xs: list[SSAValue],
    cls: type[collective.CollectiveOp],
    props: dict[str, Attribute],
) -> list[SSAValue]:
    rtypes = [r.type for r in op.results]
    return list(cx.emit.collective(cls, xs, rtypes, props).results)


@COLLECTIVES.converts("stablehlo.all_reduce")
def all_reduce(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    groups = groups_of(cx, op, True)
    # (a variadic all_reduce applies its one two-argument region to every operand)
    kind = reducer_kind(op, 1, xs[0].type.element_type)  # pyright: ignore
    props = {"kind": StringAttr(kind), **cx.emit.group_props(groups)}
    return _one_op(cx, op, xs, collective.AllReduceOp, props)


@COLLECTIVES.converts("stablehlo.all_gather")
def all_gather(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    groups = groups_of(cx, op, True)
    dim = i64_attr(one_int(require(op, "all_gather_dim")))
    return _one_op(cx, op, xs, collective.AllGatherOp, {"dim": dim, **cx.emit.group_props(groups)})


@COLLECTIVES.converts("stablehlo.reduce_scatter")
def reduce_scatter(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    groups = groups_of(cx, op, True)
    kind = reducer_kind(op, len(xs), xs[0].type.element_type)  # pyright: ignore
    props = {
        "kind": StringAttr(kind),
        "dim": i64_attr(one_int(require(op, "scatter_dimension"))),
        **cx.emit.group_props(groups),
    }
    return _one_op(cx, op, xs, collective.ReduceScatterOp, props)


@COLLECTIVES.converts("stablehlo.all_to_all")
def all_to_all(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    e = cx.emit
    groups = groups_of(cx, op, False)
    count = one_int(require(op, "split_count"))
    if count != len(groups[0]):
        raise ValueError(f"split_count {count} differs from the group size {len(groups[0])}")
    props = {
        "split_dim": i64_attr(one_int(require(op, "split_dimension"))),
        "concat_dim": i64_attr(one_int(require(op, "concat_dimension"))),
        **e.group_props(groups),
    }
    out: list[SSAValue] = []
    for x, r in zip(xs, op.results, strict=False):
        out.extend(e.collective(collective.AllToAllOp, [x], [r.type], props).results)
    return out


@COLLECTIVES.converts("stablehlo.collective_permute")
def collective_permute(
    cx: OpContext, op: Operation, xs: list[SSAValue], local: bool
) -> list[SSAValue]:
    if cx.replicas != 1:
        raise ValueError("collective_permute with several replicas is not supported")
    pairs = [tuple(p) for p in matrix(require(op, "source_target_pairs"))]
    return [permute(cx, xs[0], pairs)]  # pyright: ignore


def permute(cx: OpContext, x: SSAValue, pairs: list[tuple[int, int]]) -> SSAValue:
    """`collective.permute` of device pairs: a shift or rank pairs on the matching axes."""
    mesh, mesh_name = cx.shardings.mesh, cx.shardings.mesh_name
    assert mesh is not None and mesh_name is not None
    n = mesh.device_count
    for s, t in pairs:
        if not (0 <= s < n and 0 <= t < n):
            raise ValueError(f"source_target_pairs name device {max(s, t)} of {n}")
    found = pairs_on_mesh(mesh, pairs)
    if found is not None:
        axes, rank_pairs = found
        size = math.prod(mesh.axis_size(a) for a in axes)
        group = {
            "mesh": SymbolRefAttr(mesh_name),
            "mesh_axes": ArrayAttr(StringAttr(a) for a in axes),
        }
    else:
        rank_pairs = sorted(pairs)
        size = n
        group = {"groups": ArrayAttr([i64_array(list(range(n)))])}
    props: dict[str, Attribute] = dict(group)
    k = shift_of(rank_pairs, size)
    if k is not None:
        props["shift"] = i64_attr(k)
    else:
        props["pairs"] = ArrayAttr(i64_array(list(p)) for p in rank_pairs)
    cx.stats.constructs["collective_permute as " + ("shift" if k is not None else "pairs")] += 1
    return cx.emit.collective(collective.PermuteOp, [x], [x.type], props).results[0]


@COLLECTIVES.converts("stablehlo.collective_broadcast")
def collective_broadcast(
    cx: OpContext, op: Operation, xs: list[SSAValue], local: bool
) -> list[SSAValue]:
    """The first device of each group to the others (`expansions.collective_broadcast`)."""
    groups = groups_of(cx, op, False)
    cx.stats.constructs["collective_broadcast as all_gather + slice"] += 1
    return [expansions.collective_broadcast(cx.emit, xs[0], groups)]
