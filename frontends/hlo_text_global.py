"""
Reading an HLO module that is not partitioned yet as a level-G program with its shardings.

XLA's SPMD-partitioner tests and `jax.jit(...).lower(...).compiler_ir("hlo")` give HLO text
with global shapes and `sharding={...}` on parameters, instructions and the ROOT: the
partitioner's input. Such a module is imported as a level-G function (`spmd-pipeline`
partitions it): every HloSharding form (tile assignments, iota `<=[..]` and `T(..)`,
`last_tile_dim_replicate`, `last_tile_dims={replicated, unreduced}`, replicated, maximal
(read as replicated), tuple shardings) becomes an `#spmd.sharding` on one mesh that
expresses all of them (`hlo_sharding.MeshBuilder`), on an argument, a result, or an
`spmd.constraint` after the instruction.

A module is read per device instead (the form `compile().as_text()` prints) when it is
scheduled (`is_scheduled=true`), holds collectives, partition or replica ids or fusions,
or when the user says so (`shardc-import --per-device`); a module with no sharding at all
(or only replicated ones) is read per device too (the two readings are the same program).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from shardc.dialects import spmd
from shardc.frontends import hlo_sharding as hs
from shardc.frontends.common import Emitter
from shardc.frontends.hlo_text_parse import Attr, Computation, Instr, Shape
from shardc.frontends.hlo_text_source import TupleVal, Value
from xdsl.dialects.builtin import ArrayAttr, StringAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

PARTITIONED_OPCODES = frozenset({"partition-id", "replica-id", "fusion"})
"""Opcodes only a partitioned (or optimized) module holds, besides the collectives."""


def reads_as_global(
    header: dict[str, Attr],
    computations: Iterable[Computation],
    collective_opcodes: frozenset[str],
    per_device: bool | None,
) -> bool:
    """Whether the module is the partitioner's input (level G) rather than its output."""
    if per_device is not None:
        return not per_device
    scheduled = header.get("is_scheduled")
    if scheduled is not None and scheduled.text.strip() == "true":
        return False
    has_sharding = False
    for comp in computations:
        for i in comp.instrs:
            if i.opcode in collective_opcodes or i.opcode in PARTITIONED_OPCODES:
                return False
            a = i.attrs.get("sharding")
            has_sharding = has_sharding or (a is not None and _splits(a.text))
    return has_sharding


def _splits(text: str) -> bool:
    """Whether a sharding splits a value (tiled over more than one tile, or partial)."""
    try:
        s = hs.parse_hlo_sharding(text)
    except hs.ShardingSyntaxError:
        return True  # read at level G, where the error is reported
    parts = s.elements if s.kind == "tuple" else (s,)
    return any(p.kind == "tiled" and not p.is_replicated_like() for p in parts) or any(
        "unreduced" in p.last_tile_dims for p in parts
    )


class GlobalShardings:
    """The module's mesh, built from every `sharding=`, and each one as `#spmd.sharding`."""

    MESH = "mesh"

    def __init__(self, reader_error, devices: int):
        self.error = reader_error
        self.devices = devices
        self.builder: hs.MeshBuilder | None = None
        self.mesh: spmd.MeshAttr | None = None

    def parse(self, a: Attr) -> hs.HloSharding:
        try:
            return hs.parse_hlo_sharding(a.text)
        except hs.ShardingSyntaxError as e:
            raise self.error(a.pos + e.offset, f"bad sharding: {e}") from None

    def build_mesh(self, attrs: list[Attr]) -> spmd.MeshAttr:
        """One mesh for all the shardings (its device count from the header, else from the
        tile assignments: XLA's tests often give it only there)."""
        parsed = [(a, self.parse(a)) for a in attrs]
        if self.devices == 1:
            self.devices = max((hs.device_count(s) for _, s in parsed), default=1)
        builder = hs.MeshBuilder(self.devices)
        for a, s in parsed:
            if s.has_manual() or _has_kind(s, "manual"):
                raise self.error(
                    a.pos,
                    "a manual sharding in a module read at level G: shardc reads shard_map "
                    "from StableHLO; import the partitioned module with --per-device",
                )
            problem = builder.add(s)
            if problem is not None:
                raise self.error(a.pos, f"sharding {a.text}: {problem}")
        axes = builder.axes()
        if isinstance(axes, str):
            raise self.error(attrs[0].pos if attrs else 0, axes)
        axes = axes or [("a", self.devices)]
        self.builder = builder
        self.mesh = spmd.MeshAttr(axes)
        return self.mesh

    def shardings(self, a: Attr, count: int, ranks: list[int]) -> list[spmd.ShardingAttr]:
        """The `#spmd.sharding` of each of `count` values (a tuple sharding: one each)."""
        s = self.parse(a)
        parts = list(s.elements) if s.kind == "tuple" else [s] * count
        if len(parts) != count:
            raise self.error(a.pos, f"a tuple sharding of {len(parts)} elements for {count} values")
        return [self.sharding(a, p, r) for p, r in zip(parts, ranks, strict=True)]

    def sharding(self, a: Attr, s: hs.HloSharding, rank: int) -> spmd.ShardingAttr:
        if s.kind in ("replicated", "maximal") or s.kind != "tiled":
            return spmd.ShardingAttr(self.MESH, [[] for _ in range(rank)])
        if s.tile_rank != rank:
            raise self.error(
                a.pos,
                f"sharding {s.text} has {s.tile_rank} tile dimensions but the value has "
                f"rank {rank}",
            )
        assert self.builder is not None
        dims, _ = self.builder.dim_axes(s)
        unreduced = self.builder.last_dim_axes(s, "unreduced")
        return spmd.ShardingAttr(self.MESH, dims, unreduced)

    def constrain(self, instr: Instr, value: Value, arrays: list[SSAValue], emit: Emitter) -> Value:
        """An instruction's `sharding=`: `spmd.constraint`s on its `arrays` (`value`'s)."""
        found = self.shardings(instr.attrs["sharding"], len(arrays), [rank_of(v) for v in arrays])
        constrained = {
            v: emit.value(spmd.ConstraintOp(v, sh)) for v, sh in zip(arrays, found, strict=True)
        }
        return rebuild(value, constrained)


def boundary_attrs(
    shardings: GlobalShardings | None,
    error: Callable[..., Exception],
    a: Attr | None,
    values: list[SSAValue],
) -> list[dict[str, Attribute]]:
    """
    The attributes of the arguments (results) a parameter's (the ROOT's) `sharding=` gives
    `values` (a tuple sharding: one element each): their `#spmd.sharding` at level G; per
    device, the HloSharding text as `mhlo.sharding` (information for `per_device_inputs`),
    none where a tuple sharding does not match the values.
    """
    n = len(values)
    if a is None:
        return [{} for _ in range(n)]
    if shardings is not None:
        found = shardings.shardings(a, n, [rank_of(v) for v in values])
        return [{spmd.SHARDING_ATTR_NAME: sh} for sh in found]
    try:
        s = hs.parse_hlo_sharding(a.text)
    except hs.ShardingSyntaxError as e:
        raise error(a.pos + e.offset, f"bad sharding: {e}") from None
    parts = list(s.elements) if s.kind == "tuple" else [s] * n
    if len(parts) != n:
        return [{} for _ in range(n)]
    return [{"mhlo.sharding": StringAttr(p.text or a.text)} for p in parts]


def sharding_attrs(
    entry_params: Iterable[Instr], computations: Iterable[Computation]
) -> list[Attr]:
    """Every `sharding=` of the module (parameters first)."""
    out = [p.attrs["sharding"] for p in entry_params if "sharding" in p.attrs]
    for comp in computations:
        for i in comp.instrs:
            if "sharding" in i.attrs and i.opcode != "parameter":
                out.append(i.attrs["sharding"])
    return out


def _has_kind(s: hs.HloSharding, kind: str) -> bool:
    if s.kind == "tuple":
        return any(_has_kind(e, kind) for e in s.elements)
    return s.kind == kind


def leaf_shapes(shape: Shape) -> list[Shape]:
    """A shape's arrays in order (a tuple-shaped parameter becomes several arguments)."""
    if not shape.is_tuple():
        return [shape]
    return [leaf for e in shape.elements for leaf in leaf_shapes(e)]


def tuple_of(shape: Shape, leaves: list[SSAValue]) -> Value:
    """The tuple value of `shape` over its `leaves` (as `leaf_shapes` ordered them)."""
    it = iter(leaves)

    def build(s: Shape) -> Value:
        return TupleVal([build(e) for e in s.elements]) if s.is_tuple() else next(it)

    return build(shape)


def rebuild(value: Value, replaced: dict[SSAValue, SSAValue]) -> Value:
    """`value` with its arrays replaced (tuples keep their structure)."""
    if isinstance(value, TupleVal):
        return TupleVal([rebuild(v, replaced) for v in value.items])
    return replaced.get(value, value)  # pyright: ignore[reportArgumentType, reportCallIssue]


def leaves(value: Value) -> list[SSAValue]:
    """The arrays of a value (a tuple's in order; a future's: none)."""
    if isinstance(value, TupleVal):
        return [leaf for v in value.items for leaf in leaves(v)]
    return [value] if isinstance(value, SSAValue) else []


def control_predecessors(instr: Instr) -> list[tuple[Attr, str]]:
    """`control-predecessors={%a, %b}`: each name (with the attribute, for errors)."""
    a = instr.attrs.get("control-predecessors")
    if a is None:
        return []
    found = re.findall(r"%?([A-Za-z_$][A-Za-z0-9_.$-]*)", a.text.strip().strip("{}"))
    return [(a, name) for name in found]


def keep_order(instr: Instr, value: Value, env: dict[str, Value]) -> None:
    """`control-predecessors={%a, ..}`: the ops of `value` run after those of %a, ..
    (`spmd.control_after` naming their `spmd.control_id`), which passes keep."""
    names: list[str] = []
    for _, name in control_predecessors(instr):
        before = [v.owner for v in leaves(env[name]) if isinstance(v.owner, Operation)]
        for op in before:
            add_name(op, spmd.CONTROL_ID_ATTR_NAME, name)  # pyright: ignore[reportArgumentType]
        if before:
            names.append(name)
    for v in leaves(value):
        if isinstance(v.owner, Operation):
            for name in names:
                add_name(v.owner, spmd.CONTROL_AFTER_ATTR_NAME, name)


def add_name(op: Operation, key: str, name: str) -> None:
    """Add `name` to the list attribute `key` of `op` (once)."""
    old = op.attributes.get(key)
    items = list(old.data) if isinstance(old, ArrayAttr) else []
    if StringAttr(name) not in items:
        op.attributes[key] = ArrayAttr([*items, StringAttr(name)])


def rank_of(value: SSAValue) -> int:
    ty = value.type
    assert isinstance(ty, TensorType)
    return ty.get_num_dims()


__all__ = [
    "GlobalShardings",
    "add_name",
    "boundary_attrs",
    "control_predecessors",
    "keep_order",
    "leaves",
    "leaf_shapes",
    "rank_of",
    "reads_as_global",
    "rebuild",
    "sharding_attrs",
    "tuple_of",
]
