"""
Resharding: the collectives (and local slices) that turn a value with one sharding into
the same value with another, on per-device (local) types.

Steps, in the order that moves the fewest bytes: pending partial sums become a
reduce_scatter where the target splits a dimension by that axis next, else one all_reduce;
an axis leaving one dimension for another moves with an all_to_all; axes a dimension loses
are all-gathered; axes it gains are taken by a local dynamic_slice at this device's block
(no communication).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from shardc.dialects import collective, hlo, spmd
from shardc.dialects.spmd import MeshAttr, ShardingAttr
from shardc.dialects.syntax import i64_array, i64_attr, splat_elements
from shardc.passes.sharding_rules import Axes, make_sharding
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    LocationAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnknownLoc,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

SCALAR_I32 = TensorType(i32, [])


@dataclass
class Resharder:
    """Inserts resharding ops before `anchor`; counts what it inserted."""

    mesh_name: str
    mesh: MeshAttr
    anchor: Operation | None = None
    steps: int = 0
    inserted: list[Operation] = field(default_factory=list[Operation])
    location: LocationAttr = field(default_factory=UnknownLoc)
    """The location of the op being partitioned: the ops inserted for it report it."""

    # Building blocks -----------------------------------------------------------

    def _insert(self, op: Operation) -> Operation:
        assert self.anchor is not None
        Rewriter.insert_op(op, InsertPoint.before(self.anchor))
        op.location = self.location
        self.inserted.append(op)
        return op

    def group(self, axes: Sequence[str]) -> dict[str, Attribute]:
        return dict(_group(self.mesh_name, tuple(axes)))

    def constant_i32(self, value: int) -> SSAValue:
        return self._insert(hlo.ConstantOp(_i32_literal(value))).results[0]

    def shard_index(self, axes: Sequence[str]) -> SSAValue:
        """This device's row-major index over `axes` as a tensor<i32>."""
        index: SSAValue | None = None
        for a in axes:
            coord = self._insert(spmd.AxisIndexOp(self.mesh_name, a, SCALAR_I32)).results[0]
            if index is None:
                index = coord
                continue
            size = self.constant_i32(self.mesh.axis_size(a))
            scaled = self._insert(hlo.MulOp(index, size)).results[0]
            index = self._insert(hlo.AddOp(scaled, coord)).results[0]
        assert index is not None
        return index

    def all_reduce(self, value: SSAValue, axes: Sequence[str], kind: str = "add") -> SSAValue:
        op = self._insert(collective.AllReduceOp(kind, [value], self.group(axes)))
        return op.results[0]

    def reduce_scatter(self, value: SSAValue, axes: Sequence[str], dim: int) -> SSAValue:
        ty = _tensor(value)
        shape = list(ty.get_shape())
        shape[dim] //= self._size(axes)
        op = collective.ReduceScatterOp.create(
            operands=[value],
            result_types=[_tensor_of(ty.element_type, tuple(shape))],
            properties={"kind": StringAttr("add"), "dim": i64_attr(dim), **self.group(axes)},
        )
        return self._insert(op).results[0]

    def all_gather(self, value: SSAValue, axes: Sequence[str], dim: int) -> SSAValue:
        ty = _tensor(value)
        shape = list(ty.get_shape())
        shape[dim] *= self._size(axes)
        op = collective.AllGatherOp.create(
            operands=[value],
            result_types=[_tensor_of(ty.element_type, tuple(shape))],
            properties={"dim": i64_attr(dim), **self.group(axes)},
        )
        return self._insert(op).results[0]

    def all_to_all(self, value: SSAValue, axis: str, split: int, concat: int) -> SSAValue:
        ty = _tensor(value)
        shape = list(ty.get_shape())
        g = self.mesh.axis_size(axis)
        shape[split] //= g
        shape[concat] *= g
        op = collective.AllToAllOp.create(
            operands=[value],
            result_types=[_tensor_of(ty.element_type, tuple(shape))],
            properties={
                "split_dim": i64_attr(split),
                "concat_dim": i64_attr(concat),
                **self.group([axis]),
            },
        )
        return self._insert(op).results[0]

    def local_slice(self, value: SSAValue, new_axes: Sequence[Axes]) -> SSAValue:
        """Keep this device's block of each dimension d split further by `new_axes[d]`."""
        ty = _tensor(value)
        sizes = [s // self._size(a) for s, a in zip(ty.get_shape(), new_axes, strict=False)]
        offsets: list[SSAValue] = []
        for axes, size in zip(new_axes, sizes, strict=False):
            if not axes:
                offsets.append(self.constant_i32(0))
                continue
            index = self.shard_index(axes)
            offsets.append(self._insert(hlo.MulOp(index, self.constant_i32(size))).results[0])
        return self._insert(hlo.DynamicSliceOp(value, offsets, sizes)).results[0]

    def mirror_blocks(self, value: SSAValue, axes: Sequence[str]) -> SSAValue:
        """
        Send each device's block to the device at the mirrored coordinates along `axes`
        (coordinate c of an axis of size n becomes n - 1 - c on every one of them): in a
        group over `axes`, rank r to rank G - 1 - r, whatever the axes' order. A dimension
        split by `axes` has its block index k mirrored to N - 1 - k: XLA's partitioned
        reverse.
        """
        g = self._size(axes)
        op = collective.PermuteOp.create(
            operands=[value],
            result_types=[value.type],
            properties={
                "pairs": ArrayAttr(i64_array((r, g - 1 - r)) for r in range(g)),
                **self.group(axes),
            },
        )
        return self._insert(op).results[0]

    def _size(self, axes: Sequence[str]) -> int:
        size = 1
        for a in axes:
            size *= self.mesh.axis_size(a)
        return size

    # The algorithm ----------------------------------------------------------------

    def reshard(
        self,
        value: SSAValue,
        src: ShardingAttr,
        dst: ShardingAttr,
        anchor: Operation,
        shape: Sequence[int] | None = None,
    ) -> SSAValue:
        """
        `value` (local, laid out by `src`) laid out by `dst` instead. `shape` is the
        value's global shape (default: local x split, right unless a split is uneven).
        """
        if src == dst:
            return value
        self.anchor = anchor
        self.steps += 1
        if (moved := self._permute_blocks(value, src, dst)) is not None:
            return moved
        if shape is not None and (
            src.is_uneven(shape, self.mesh) or dst.is_uneven(shape, self.mesh)
        ):
            return self._reshard_uneven(value, src, dst, shape)
        return self._reshard_even(value, src, dst)

    def _reshard_uneven(
        self, value: SSAValue, src: ShardingAttr, dst: ShardingAttr, shape: Sequence[int]
    ) -> SSAValue:
        """
        A reshard where a dimension is split unevenly (its blocks padded at the end): that
        dimension (unless it stays split the same way, `_stays_split`) is gathered whole
        and its padding sliced off, the other dimensions are
        resharded as usual, then each dimension `dst` splits unevenly is padded to a
        multiple of its shard count (with zeros: padding is never read) and this device's
        block taken. (GSPMD's simple form; no halo-aware shortcut.)
        """
        odd = [
            d
            for d, n in enumerate(shape)
            if n % src.split_factor(d, self.mesh) or n % dst.split_factor(d, self.mesh)
        ]
        odd = [d for d in odd if not self._stays_split(src, dst, d)]
        for d in odd:
            if src.dim_axes[d]:
                value = self.all_gather(value, src.dim_axes[d], d)
                value = self._trim(value, d, shape[d])
        unsplit = [() if d in odd else a for d, a in enumerate(src.dim_axes)]
        middle_src = make_sharding(self.mesh_name, unsplit, src.unreduced_axes)
        wanted = [() if d in odd else a for d, a in enumerate(dst.dim_axes)]
        middle_dst = make_sharding(self.mesh_name, wanted, dst.unreduced_axes)
        value = self._reshard_even(value, middle_src, middle_dst)
        for d in odd:
            if dst.dim_axes[d]:
                value = self._take_padded_block(value, d, dst.dim_axes[d], shape[d])
        return value

    @staticmethod
    def _stays_split(src: ShardingAttr, dst: ShardingAttr, dim: int) -> bool:
        """An uneven dimension split the same way on both sides, by axes no other dimension
        of either uses: its padded blocks stay where they are (nothing to gather)."""
        axes = tuple(src.dim_axes[dim])
        if not axes or axes != tuple(dst.dim_axes[dim]):
            return False
        others = (
            {a for s in (src, dst) for d, ax in enumerate(s.dim_axes) if d != dim for a in ax}
            | set(src.unreduced_axes)
            | set(dst.unreduced_axes)
        )
        return not others & set(axes)

    def _trim(self, value: SSAValue, dim: int, size: int) -> SSAValue:
        """The first `size` entries of dimension `dim` (padding sliced off)."""
        full = _tensor(value).get_shape()
        limit = [size if d == dim else n for d, n in enumerate(full)]
        return self._insert(hlo.SliceOp(value, [0] * len(full), limit)).results[0]

    def _take_padded_block(
        self, value: SSAValue, dim: int, axes: Sequence[str], size: int
    ) -> SSAValue:
        """This device's padded block of whole dimension `dim` split unevenly by `axes`."""
        ty = _tensor(value)
        shards = self._size(axes)
        block = -(-size // shards)
        rank = ty.get_num_dims()
        high = [block * shards - size if d == dim else 0 for d in range(rank)]
        zero = self._insert(hlo.ConstantOp(splat_elements(TensorType(ty.element_type, []), 0)))
        padded = self._insert(hlo.PadOp(value, zero.results[0], [0] * rank, high, [0] * rank))
        offset = self._insert(hlo.MulOp(self.shard_index(axes), self.constant_i32(block)))
        offsets = [offset.results[0] if d == dim else self.constant_i32(0) for d in range(rank)]
        sizes = [block if d == dim else n for d, n in enumerate(ty.get_shape())]
        return self._insert(hlo.DynamicSliceOp(padded.results[0], offsets, sizes)).results[0]

    def _reshard_even(self, value: SSAValue, src: ShardingAttr, dst: ShardingAttr) -> SSAValue:
        if src == dst:
            return value
        cur = [list(a) for a in src.dim_axes]
        value = self._reduce_pending(value, src, dst, cur)
        value = self._move_axes(value, dst, cur)
        value = self._gather(value, dst, cur)
        value = self._slice(value, dst, cur)
        value = self._make_unreduced(value, src, dst)
        return value

    def _permute_blocks(
        self, value: SSAValue, src: ShardingAttr, dst: ShardingAttr
    ) -> SSAValue | None:
        """
        When both shardings use the same axes and split each dimension into as many
        blocks (so the blocks have the same shape, even where a dimension has size 0),
        every block is held by one device before and one after: one permute moves each
        block once (cheaper than gathering and slicing again).
        """
        used = [a for a in self.mesh.names if a in src.all_axes]

        def splits(sharding: ShardingAttr) -> list[int]:
            return [math.prod(self.mesh.axis_size(a) for a in d) for d in sharding.dim_axes]

        if (
            src.unreduced_axes != dst.unreduced_axes
            or src.unreduced_axes
            or sorted(used) != sorted(dst.all_axes)
            or splits(src) != splits(dst)
        ):
            return None
        sizes = [self.mesh.axis_size(a) for a in used]
        ranks = list(itertools.product(*(range(n) for n in sizes)))

        def blocks(sharding: ShardingAttr, rank: tuple[int, ...]) -> tuple[int, ...]:
            coords = [0] * len(self.mesh.names)
            for a, c in zip(used, rank, strict=False):
                coords[self.mesh.names.index(a)] = c
            return tuple(
                sharding.shard_index(d, self.mesh, coords) for d in range(len(sharding.dim_axes))
            )

        holder = {blocks(src, r): i for i, r in enumerate(ranks)}
        pairs = [(holder[blocks(dst, r)], i) for i, r in enumerate(ranks)]
        op = collective.PermuteOp.create(
            operands=[value],
            result_types=[value.type],
            properties={
                "pairs": ArrayAttr(i64_array(p) for p in pairs),
                **self.group(used),
            },
        )
        return self._insert(op).results[0]

    def _global(self, value: SSAValue, sharding: ShardingAttr) -> tuple[int, ...]:
        return sharding.global_shape(_tensor(value).get_shape(), self.mesh)

    def _reduce_pending(
        self, value: SSAValue, src: ShardingAttr, dst: ShardingAttr, cur: list[list[str]]
    ) -> SSAValue:
        pending = [a for a in src.unreduced_axes if a not in dst.unreduced_axes]
        rest: list[str] = []
        for a in pending:
            dim = self._scatter_dim(a, dst, cur)
            if dim is None:
                rest.append(a)
                continue
            value = self.reduce_scatter(value, [a], dim)
            cur[dim].append(a)
        if rest:
            value = self.all_reduce(value, rest)
        return value

    @staticmethod
    def _scatter_dim(axis: str, dst: ShardingAttr, cur: list[list[str]]) -> int | None:
        """A dimension whose target split continues with `axis` after its current one."""
        for d, want in enumerate(dst.dim_axes):
            have = cur[d]
            if tuple(want[: len(have)]) == tuple(have) and want[len(have) : len(have) + 1] == (
                axis,
            ):
                return d
        return None

    def _move_axes(self, value: SSAValue, dst: ShardingAttr, cur: list[list[str]]) -> SSAValue:
        moved = True
        while moved:
            moved = False
            for d, have in enumerate(cur):
                if not have or _is_prefix(have, dst.dim_axes[d]):
                    continue
                axis = have[-1]
                target = self._scatter_dim(axis, dst, cur)
                if target is None or target == d:
                    continue
                if _tensor(value).get_shape()[target] % self.mesh.axis_size(axis):
                    continue
                value = self.all_to_all(value, axis, split=target, concat=d)
                have.pop()
                cur[target].append(axis)
                moved = True
        return value

    def _gather(self, value: SSAValue, dst: ShardingAttr, cur: list[list[str]]) -> SSAValue:
        for d, have in enumerate(cur):
            want = dst.dim_axes[d]
            keep = 0
            while keep < min(len(have), len(want)) and have[keep] == want[keep]:
                keep += 1
            if keep < len(have):
                value = self.all_gather(value, have[keep:], d)
                del have[keep:]
        return value

    def _slice(self, value: SSAValue, dst: ShardingAttr, cur: list[list[str]]) -> SSAValue:
        new_axes = [tuple(dst.dim_axes[d][len(have) :]) for d, have in enumerate(cur)]
        if not any(new_axes):
            return value
        value = self.local_slice(value, new_axes)
        for d, axes in enumerate(new_axes):
            cur[d].extend(axes)
        return value

    def _make_unreduced(self, value: SSAValue, src: ShardingAttr, dst: ShardingAttr) -> SSAValue:
        """A replicated value as a partial sum: kept on coordinate 0 of each new axis, 0 elsewhere."""
        new = [a for a in dst.unreduced_axes if a not in src.unreduced_axes]
        if not new:
            return value
        ty = _tensor(value)
        index = self.shard_index(new)
        is_first = self._insert(hlo.CompareOp("EQ", index, self.constant_i32(0))).results[0]
        zero_attr = splat_elements(ty, 0)
        zero = self._insert(hlo.ConstantOp(zero_attr)).results[0]
        return self._insert(hlo.SelectOp(is_first, value, zero)).results[0]


@functools.lru_cache(maxsize=256)
def _i32_literal(value: int) -> DenseIntOrFPElementsAttr:
    return DenseIntOrFPElementsAttr.from_list(SCALAR_I32, [value])


def _is_prefix(have: Sequence[str], want: Sequence[str]) -> bool:
    return tuple(want[: len(have)]) == tuple(have)


def _tensor(value: SSAValue) -> TensorType:
    ty = value.type
    assert isinstance(ty, TensorType)
    return ty


Layout = tuple[tuple[tuple[str, ...], ...], tuple[str, ...]]


def layout(sharding: ShardingAttr) -> Layout:
    """A sharding as plain tuples: cheap to hash, unlike the nested attribute (remembered
    per attribute object, kept alive in the entry so that its id is not reused: the
    partitioner asks it of every operand of every op, several times)."""
    entry = _LAYOUTS.get(id(sharding))
    if entry is not None and entry[0] is sharding:
        return entry[1]
    if len(_LAYOUTS) > 65536:
        _LAYOUTS.clear()
    found = sharding.dim_axes, sharding.unreduced_axes
    _LAYOUTS[id(sharding)] = (sharding, found)
    return found


_LAYOUTS: dict[int, tuple[ShardingAttr, Layout]] = {}


@functools.lru_cache(maxsize=1024)
def _group(mesh_name: str, axes: tuple[str, ...]) -> tuple[tuple[str, Attribute], ...]:
    """A collective's `mesh` and `mesh_axes` properties (attributes are immutable: built
    and verified once)."""
    return (
        ("mesh", SymbolRefAttr(mesh_name)),
        ("mesh_axes", ArrayAttr(StringAttr(a) for a in axes)),
    )


@functools.lru_cache(maxsize=4096)
def _tensor_of(element_type: Attribute, shape: tuple[int, ...]) -> TensorType:
    """`TensorType(element_type, shape)`, built and verified once."""
    return TensorType(element_type, shape)


_LOCAL_TYPES: dict[tuple[object, ...], tuple[TensorType, TensorType]] = {}


def local_type(ty: TensorType, sharding: ShardingAttr, mesh: MeshAttr) -> TensorType:
    """The per-device type (cached: building and verifying a TensorType is costly)."""
    key = (id(ty), layout(sharding), mesh.names, mesh.shape)
    entry = _LOCAL_TYPES.get(key)
    if entry is not None and entry[0] is ty:
        return entry[1]
    local = TensorType(ty.element_type, sharding.local_shape(ty.get_shape(), mesh))
    if len(_LOCAL_TYPES) > 65536:
        _LOCAL_TYPES.clear()
    _LOCAL_TYPES[key] = (ty, local)
    return local


__all__ = ["Resharder", "local_type", "make_sharding"]
