"""
HLO collectives to `collective` ops: replica groups in XLA's three text forms and group
modes, `-start` / `-done` pairs as `collective.*_start` / `collective.done`, tuple
all-to-alls, and collective-permute pairs as rank pairs (or a shift) on the smallest
groups that hold them.

Groups are always explicit (`on groups [[...]]`): the imported program's mesh is one axis
of all devices (XLA's flattened device ids), and the groups say which devices talk.
"""

from __future__ import annotations

import math
import re

import numpy as np
from shardc.dialects import collective, hlo, spmd
from shardc.dialects.syntax import i64_array, i64_attr
from shardc.frontends import expansions
from shardc.frontends import hlo_sharding as hs
from shardc.frontends.common import shift_of
from shardc.frontends.hlo_text_parse import Instr, Shape
from shardc.frontends.hlo_text_source import FutureVal, HloSource, TupleVal, Value
from xdsl.dialects.builtin import ArrayAttr, StringAttr, TensorType
from xdsl.ir import Attribute, SSAValue

COLLECTIVES = {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute"}
COLLECTIVES.add("collective-broadcast")  # (issue 13)
ASYNC_STARTS = {f"{c}-start": c for c in ("all-reduce", "all-gather", "collective-permute")}
ASYNC_DONES = {f"{c}-done" for c in ("all-reduce", "all-gather", "collective-permute")}


def replica_groups(cx: HloSource, instr: Instr, has_global_field: bool) -> list[list[int]]:
    a = instr.attrs.get("replica_groups")
    groups: list[list[int]] = []
    if a is not None:
        text = a.text.strip()
        ids = instr.attrs.get("device_ids")
        if ids is not None:  # `mesh[..], device_ids=(..) {axes}`, split at its comma
            text = f"{text}, device_ids={ids.text.strip()}"
        try:
            if text.startswith("mesh"):
                groups = mesh_axes_groups(text)
                cx.stats.constructs["replica_groups mesh axes"] += 1
            else:
                groups = hs.parse_replica_groups(text)
                form = "iota" if text.startswith("[") else "explicit"
                cx.stats.constructs[f"replica_groups {form}"] += 1
        except hs.ShardingSyntaxError as e:
            raise cx.error(a.pos + e.offset, f"bad replica_groups: {e}") from None
    has_channel = "channel_id" in instr.attrs
    if has_channel:
        cx.stats.constructs["channel_id"] += 1
    ug = instr.attrs.get("use_global_device_ids")
    use_global = ug is not None and ug.text == "true"
    if use_global:
        cx.stats.constructs["use_global_device_ids"] += 1
    try:
        mode = hs.group_mode(has_channel, use_global, has_global_field)
    except hs.ShardingSyntaxError as e:
        raise cx.error(instr.pos, str(e)) from None
    out = hs.participating_groups(groups, mode, cx.replicas, cx.partitions)
    problem = hs.check_partition(out, cx.devices)
    if problem is not None:
        raise cx.error(a.pos if a else instr.pos, f"replica groups {out}: {problem}")
    return out


def convert_collective(
    cx: HloSource, instr: Instr, kind: str, args: list[Value], start: bool
) -> Value:
    xs: list[SSAValue] = []
    for o, v in zip(instr.operands, args, strict=False):
        if not isinstance(v, SSAValue):
            raise cx.error(o.pos, f"{instr.opcode} expects array operands")
        xs.append(v)
    e = cx.emit
    cx.stats.constructs[f"{kind}{' async' if start else ''}"] += 1
    result_shapes = collective_result_shapes(cx, instr, kind, len(xs), start)
    rtypes = [cx.tensor_type(s) for s in result_shapes]
    if kind == "all-reduce":
        groups = replica_groups(cx, instr, True)
        red = cx.reducer(instr, xs[0].type.element_type)  # pyright: ignore
        props = {"kind": StringAttr(red), **cx.emit.group_props(groups)}
        cls = collective.AllReduceStartOp if start else collective.AllReduceOp
    elif kind == "all-gather":
        groups = replica_groups(cx, instr, True)
        (dim,) = cx.ints_attr(instr, "dimensions")
        props = {"dim": i64_attr(dim), **cx.emit.group_props(groups)}
        cls = collective.AllGatherStartOp if start else collective.AllGatherOp
    elif kind == "reduce-scatter":
        groups = replica_groups(cx, instr, True)
        red = cx.reducer(instr, xs[0].type.element_type)  # pyright: ignore
        (dim,) = cx.ints_attr(instr, "dimensions")
        props = {"kind": StringAttr(red), "dim": i64_attr(dim), **cx.emit.group_props(groups)}
        cls = collective.ReduceScatterStartOp if start else collective.ReduceScatterOp
    elif kind == "all-to-all":
        groups = replica_groups(cx, instr, False)
        return all_to_all(cx, instr, xs, groups, rtypes, start)
    elif kind == "collective-permute":
        return permute(cx, instr, xs, rtypes, start)
    elif kind == "collective-broadcast" and not start and len(xs) == 1:
        cx.stats.constructs["collective-broadcast as all-gather + slice"] += 1
        return expansions.collective_broadcast(e, xs[0], replica_groups(cx, instr, False))
    else:
        raise cx.error(instr.pos, f"unsupported collective {kind}")
    if start:
        future = collective.FutureType(rtypes)
        op = e.collective(cls, xs, [future], props)
        return FutureVal(op.results[0], tuple_result=len(rtypes) > 1)
    results = list(e.collective(cls, xs, rtypes, props).results)
    return TupleVal(results) if instr.shape.is_tuple() else results[0]


def collective_result_shapes(
    cx: HloSource, instr: Instr, kind: str, n: int, start: bool
) -> list[Shape]:
    shape = instr.shape
    if start and kind == "all-gather":
        # (operand(s), result(s))
        if not shape.is_tuple() or len(shape.elements) != 2:
            raise cx.error(shape.pos, "all-gather-start must produce (operand, result)")
        res = shape.elements[1]
        return res.elements if res.is_tuple() else [res]
    if start and kind == "collective-permute":
        if not shape.is_tuple() or len(shape.elements) < 2:
            raise cx.error(
                shape.pos, "collective-permute-start must produce (operand, result, ...)"
            )
        return [shape.elements[1]]
    if shape.is_tuple():
        return shape.elements
    return [shape]


def all_to_all(
    cx: HloSource,
    instr: Instr,
    xs: list[SSAValue],
    groups: list[list[int]],
    rtypes: list[TensorType],
    start: bool = False,
) -> Value:
    e = cx.emit
    size = len(groups[0])
    dims = instr.attrs.get("dimensions")
    if dims is not None:
        (dim,) = cx.ints_attr(instr, "dimensions")
        props = {
            "split_dim": i64_attr(dim),
            "concat_dim": i64_attr(dim),
            **cx.emit.group_props(groups),
        }
        if start and len(xs) == 1:
            future = collective.FutureType(rtypes)
            op = e.collective(collective.AllToAllStartOp, xs, [future], props)
            return FutureVal(op.results[0])
        outs = [
            e.collective(collective.AllToAllOp, [x], [rt], props).results[0]
            for x, rt in zip(xs, rtypes, strict=False)
        ]
        return TupleVal(outs) if instr.shape.is_tuple() else outs[0]
    # tuple form: operand j goes to rank j; result j came from rank j
    if len(xs) != size:
        raise cx.error(
            instr.pos,
            f"a tuple all-to-all of {len(xs)} operands needs groups of {len(xs)}, got {size}",
        )
    cx.stats.constructs["tuple all-to-all"] += 1
    first = xs[0].type
    assert isinstance(first, TensorType)
    if any(x.type != first for x in xs):
        raise cx.error(instr.pos, "tuple all-to-all operands of different types are not supported")
    shape = list(first.get_shape())
    lead = [1] + shape
    stacked = [e.reshape(x, TensorType(first.element_type, lead)) for x in xs]
    cat = e.value(hlo.ConcatenateOp(stacked, 0))
    props = {"split_dim": i64_attr(0), "concat_dim": i64_attr(0), **cx.emit.group_props(groups)}
    moved = e.collective(collective.AllToAllOp, [cat], [cat.type], props).results[0]
    outs = []
    for j in range(size):
        part = e.slice(moved, [j] + [0] * len(shape), [j + 1] + shape)
        outs.append(e.reshape(part, first))
    return TupleVal(outs)


def permute(
    cx: HloSource, instr: Instr, xs: list[SSAValue], rtypes: list[TensorType], start: bool
) -> Value:
    e = cx.emit
    a = cx.attr(instr, "source_target_pairs")
    try:
        raw = hs.parse_replica_groups(a.text)
    except hs.ShardingSyntaxError as err:
        raise cx.error(a.pos + err.offset, f"bad source_target_pairs: {err}") from None
    if any(len(p) != 2 for p in raw):
        raise cx.error(a.pos, "source_target_pairs must be pairs")
    mode = "cross_partition" if "channel_id" in instr.attrs else "cross_replica"
    pairs: list[tuple[int, int]] = []
    outer = range(cx.replicas) if mode == "cross_partition" else range(cx.partitions)
    for o in outer:
        for s, t in raw:
            if mode == "cross_partition":
                pairs.append((o * cx.partitions + s, o * cx.partitions + t))
            else:
                pairs.append((s * cx.partitions + o, t * cx.partitions + o))
    for s, t in pairs:
        if not (0 <= s < cx.devices and 0 <= t < cx.devices):
            raise cx.error(a.pos, f"source_target_pairs name device {max(s, t)} of {cx.devices}")
    groups, rank_pairs = permute_groups(pairs, cx.devices)
    props: dict[str, Attribute] = dict(cx.emit.group_props(groups))
    k = shift_of(rank_pairs, len(groups[0]))
    if k is not None:
        props["shift"] = i64_attr(k)
    else:
        props["pairs"] = ArrayAttr(i64_array(list(p)) for p in rank_pairs)
    if len(xs) != 1:
        raise cx.error(instr.pos, "collective-permute of several operands is not supported")
    if start:
        op = e.collective(
            collective.PermuteStartOp, xs, [collective.FutureType([xs[0].type])], props
        )  # pyright: ignore
        return FutureVal(op.results[0])
    return e.collective(collective.PermuteOp, xs, [xs[0].type], props).results[0]


def done(cx: HloSource, instr: Instr, v: Value) -> Value:
    if not isinstance(v, FutureVal):
        raise cx.error(
            instr.operands[0].pos, f"{instr.opcode} expects the result of an async start"
        )
    if v.future is None:
        return TupleVal(v.values) if len(v.values) != 1 else v.values[0]
    done = cx.emit.add(collective.DoneOp(v.future))
    results = list(done.results)
    return TupleVal(results) if v.tuple_result else results[0]


def future_element(cx: HloSource, instr: Instr, v: FutureVal, index: int) -> Value:
    raise cx.error(
        instr.pos,
        "get-tuple-element of an async start: only its -done may use it",
    )


def permute_groups(
    pairs: list[tuple[int, int]], n: int
) -> tuple[list[list[int]], list[tuple[int, int]]]:
    """
    The smallest equal groups that hold every pair with the same rank pairs in each
    (connected components, ranks in device order), else one group of all devices.
    """
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for s, t in pairs:
        parent[find(s)] = find(t)
    comps: dict[int, list[int]] = {}
    for d in range(n):
        comps.setdefault(find(d), []).append(d)
    groups = sorted(comps.values())
    if len({len(g) for g in groups}) == 1 and len(groups) > 1:
        rank = spmd.group_ranks(groups)
        per: list[set[tuple[int, int]]] = [set() for _ in groups]
        for s, t in pairs:
            per[rank[s][0]].add((rank[s][1], rank[t][1]))
        if all(p == per[0] for p in per):
            return groups, sorted(per[0])
    return [list(range(n))], sorted(pairs)


def mesh_axes_groups(text: str) -> list[list[int]]:
    """
    `mesh['a'=2,'b'=4] {'a'}` (XLA's MeshAxesReplicaGroupList, optionally with
    `, device_ids=(...)` after the axes): devices that share every coordinate but the
    listed axes form a group, ranked row-major over the listed axes in their order.
    Sub-axes (`'a':(1)2`) split their axis as Shardy's sub-axes do.
    """
    m = re.match(
        r"\s*mesh\s*\[(.*?)\]\s*(?:,\s*device_ids\s*=\s*\((.*?)\))?\s*\{(.*)\}\s*$", text, re.S
    )
    if not m:
        raise hs.ShardingSyntaxError("expected mesh[axes] {group axes}")
    names, sizes = _mesh_axes(m.group(1))
    devices = _mesh_devices(m.group(2), sizes)
    group_axes = _group_axes(m.group(3), names)
    # expand sub-axes: axis i becomes [pre, size, rest] when a sub-axis of it is named
    split_shape: list[int] = []
    where: dict[tuple[int, int | None], int] = {}
    subs = {i: (pre, sub) for i, pre, sub in group_axes if pre is not None}
    for i, size in enumerate(sizes):
        if i in subs:
            pre, sub = subs[i]
            assert pre is not None and sub is not None
            if size % (pre * sub):
                raise hs.ShardingSyntaxError(
                    f"sub-axis ({pre}){sub} does not divide axis {names[i]}={size}"
                )
            where[(i, pre)] = len(split_shape) + 1
            split_shape += [pre, sub, size // (pre * sub)]
        else:
            where[(i, None)] = len(split_shape)
            split_shape.append(size)
    expanded = devices.reshape(split_shape)
    grouped = [where[(i, pre)] for i, pre, _ in group_axes]
    others = [d for d in range(len(split_shape)) if d not in grouped]
    arr = expanded.transpose(others + grouped)
    group_size = math.prod(split_shape[d] for d in grouped)
    return arr.reshape(-1, group_size).tolist()


def _mesh_axes(text: str) -> tuple[list[str], list[int]]:
    """`'a'=2,'b'=4` as names and sizes."""
    names: list[str] = []
    sizes: list[int] = []
    for part in text.split(","):
        if not part.strip():
            continue
        name, _, size = part.partition("=")
        names.append(name.strip().strip("'"))
        try:
            sizes.append(int(size))
        except ValueError:
            raise hs.ShardingSyntaxError(f"bad mesh axis '{part.strip()}'") from None
    problem = spmd.mesh_problem(list(zip(names, sizes, strict=True)))
    if problem is not None:
        raise hs.ShardingSyntaxError(f"replica_groups mesh: {problem}")
    return names, sizes


def _mesh_devices(ids_text: str | None, sizes: list[int]) -> np.ndarray:
    """The device at each mesh coordinate: `device_ids=(...)` (a list or iota), else iota."""
    if not ids_text:
        return np.arange(math.prod(sizes)).reshape(sizes)
    ids_text = ids_text.strip()
    if "<=" in ids_text:
        dims = [int(x) for x in re.findall(r"-?\d+", ids_text.split("<=")[0])]
        rest = ids_text.split("<=")[1]
        reshape = [int(x) for x in re.findall(r"-?\d+", rest.split("T")[0])]
        perm = [int(x) for x in re.findall(r"-?\d+", rest.split("T")[1])] if "T" in rest else None
        return hs.iota_tile_assignment(dims, reshape, perm).reshape(sizes)
    if ids_text.startswith("["):  # `[2,4]T(1,0)`: an iota reshaped (and transposed)
        reshape = [int(x) for x in re.findall(r"-?\d+", ids_text.split("]")[0])]
        rest = ids_text.split("]", 1)[1]
        perm = [int(x) for x in re.findall(r"-?\d+", rest)] if "T" in rest else None
        return hs.iota_tile_assignment([math.prod(sizes)], reshape, perm).reshape(sizes)
    return np.array([int(x) for x in re.findall(r"-?\d+", ids_text)]).reshape(sizes)


def _group_axes(text: str, names: list[str]) -> list[tuple[int, int | None, int | None]]:
    """The listed axes: (axis index, sub-axis pre-size, sub-axis size) each."""
    group_axes: list[tuple[int, int | None, int | None]] = []
    for item in [s.strip() for s in text.split(",") if s.strip()]:
        sm = re.match(r"'?([^':]+)'?(?::\((\d+)\)(\d+))?$", item)
        if not sm or sm.group(1) not in names:
            raise hs.ShardingSyntaxError(f"unknown mesh axis {item}")
        i = names.index(sm.group(1))
        pre = int(sm.group(2)) if sm.group(2) else None
        sub = int(sm.group(3)) if sm.group(3) else None
        group_axes.append((i, pre, sub))
    return group_axes
