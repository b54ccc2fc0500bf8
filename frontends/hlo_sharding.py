"""
XLA's device-assignment notations, shared by both importers: `HloSharding` strings
(`mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"` in GSPMD StableHLO,
`sharding={...}` on HLO text parameters), replica groups (`{{0,1},{2,3}}`,
`[2,4]<=[4,2]T(1,0)`), XLA's collective group modes, and the mesh that expresses a set of
tile assignments as named axes.

Tile assignments become mesh axes this way: a tiled sharding's device array `A` (shape
= tile dims + the replicated / manual dims) must be *mixed-radix*: every tensor dimension
splits into sub-dimensions, each of which moves the device id by a fixed stride (this is
exactly what the iota form `<=[dims]T(perm)` can express, and what explicit lists of a
mesh layout are). The strides of all shardings of a module, with the device count N,
must form one divisibility chain `1 = b0 | b1 | ... | bk = N`; the mesh has one axis per
link of the chain, major first (`"a"` has the largest stride). A device id is then
row-major over the axes, as `spmd.mesh` requires, and each sub-dimension is the list of
mesh axes between its stride and stride x size.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from shardc.dialects.spmd import MAX_DEVICES

AXIS_NAMES = "abcdefghijklmnopqrstuvwxyz"


class ShardingSyntaxError(ValueError):
    """A malformed sharding / replica-group string; `offset` is where, in the string."""

    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.offset = offset


# Tile assignments ----------------------------------------------------------------------


def iota_tile_assignment(
    dims: Sequence[int], reshape: Sequence[int], perm: Sequence[int] | None
) -> np.ndarray:
    """XLA's `[dims]<=[reshape]T(perm)`: iota, reshaped, transposed, reshaped to dims."""
    n = math.prod(reshape)
    if any(d < 1 for d in [*dims, *reshape]) or n > MAX_DEVICES:
        raise ShardingSyntaxError(
            f"tile dimensions {list(dims)} <={list(reshape)}: each must be positive and "
            f"they hold at most {MAX_DEVICES} devices"
        )
    if math.prod(dims) != n:
        raise ShardingSyntaxError(
            f"tile dimensions {list(dims)} hold {math.prod(dims)} devices but "
            f"<={list(reshape)} has {n}"
        )
    a = np.arange(n, dtype=np.int64).reshape(tuple(reshape))
    if perm is not None:
        if sorted(perm) != list(range(len(reshape))):
            raise ShardingSyntaxError(
                f"T{tuple(perm)} is not a permutation of the {len(reshape)} dimensions "
                f"of <={list(reshape)}"
            )
        a = a.transpose(tuple(perm))
    return a.reshape(tuple(dims))


class _Scanner:
    """A tiny cursor over a sharding / replica-group string."""

    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t\n":
            self.pos += 1

    def peek(self, s: str) -> bool:
        self.skip()
        return self.text.startswith(s, self.pos)

    def accept(self, s: str) -> bool:
        if self.peek(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str) -> None:
        if not self.accept(s):
            got = self.text[self.pos : self.pos + 12] or "the end"
            raise ShardingSyntaxError(f"expected '{s}', got '{got}'", self.pos)

    def word(self) -> str:
        self.skip()
        m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(self.text, self.pos)
        if not m:
            raise ShardingSyntaxError("expected a keyword", self.pos)
        self.pos = m.end()
        return m.group()

    def integer(self) -> int:
        self.skip()
        m = re.compile(r"-?\d+").match(self.text, self.pos)
        if not m:
            got = self.text[self.pos : self.pos + 12] or "the end"
            raise ShardingSyntaxError(f"expected an integer, got '{got}'", self.pos)
        value = int(m.group())
        if not -(2**31) <= value < 2**31:
            raise ShardingSyntaxError(f"integer {m.group()} is out of range", self.pos)
        self.pos = m.end()
        return value

    def int_list(self, open_: str, close: str) -> list[int]:
        self.expect(open_)
        out: list[int] = []
        if self.accept(close):
            return out
        while True:
            out.append(self.integer())
            if self.accept(close):
                return out
            self.expect(",")

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)


def _parse_iota_or_list(s: _Scanner, dims: list[int]) -> np.ndarray:
    """After `[dims]`: `<=[reshape]T(perm)` or an explicit device list `0,1,2,3`."""
    if any(d < 1 for d in dims) or math.prod(dims) > MAX_DEVICES:
        raise ShardingSyntaxError(
            f"tile dimensions {dims}: each must be positive and they hold at most "
            f"{MAX_DEVICES} devices",
            s.pos,
        )
    if s.accept("<="):
        reshape = s.int_list("[", "]")
        perm = s.int_list("(", ")") if s.accept("T") else None
        return iota_tile_assignment(dims, reshape, perm)
    devices = [s.integer()]
    while s.peek(","):
        save = s.pos
        s.accept(",")
        s.skip()
        if not re.compile(r"-?\d").match(s.text, s.pos):
            s.pos = save
            break
        devices.append(s.integer())
    if len(devices) != math.prod(dims):
        raise ShardingSyntaxError(
            f"tile dimensions {dims} need {math.prod(dims)} devices, the list has {len(devices)}",
            s.pos,
        )
    return np.array(devices, dtype=np.int64).reshape(dims)


# HloSharding ---------------------------------------------------------------------------


@dataclass(frozen=True)
class HloSharding:
    """
    One `HloSharding`: `kind` is `replicated`, `maximal`, `manual`, `tiled` or `tuple`.

    For `tiled`: `devices` is the full tile assignment (tile dims, then one dim per
    entry of `last_tile_dims`); `last_tile_dims` names those extra dims (`replicated`
    for `last_tile_dim_replicate`, or the `last_tile_dims={...}` kinds).
    """

    kind: str
    devices: np.ndarray | None = None
    last_tile_dims: tuple[str, ...] = ()
    device: int | None = None
    elements: tuple[HloSharding, ...] = ()
    text: str = ""

    @property
    def tile_rank(self) -> int:
        assert self.devices is not None
        return self.devices.ndim - len(self.last_tile_dims)

    @property
    def tile_shape(self) -> tuple[int, ...]:
        assert self.devices is not None
        return tuple(self.devices.shape[: self.tile_rank])

    def is_replicated_like(self) -> bool:
        """Every device holds the whole value (replicated, maximal, or 1 tile)."""
        if self.kind in ("replicated", "maximal"):
            return True
        if self.kind == "tiled":
            return all(t == 1 for t in self.tile_shape)
        return False

    def has_manual(self) -> bool:
        return self.kind == "manual" or "manual" in self.last_tile_dims

    def __str__(self) -> str:
        return self.text or self.kind


def device_count(s: HloSharding) -> int:
    """The devices a sharding's tile assignments name (1 for replicated / maximal)."""
    if s.kind == "tiled" and s.devices is not None:
        return int(s.devices.size)
    if s.kind == "tuple":
        return max((device_count(e) for e in s.elements), default=1)
    return 1


def parse_hlo_sharding(text: str) -> HloSharding:
    """Parse an `HloSharding` string; a problem raises `ShardingSyntaxError`."""
    s = _Scanner(text)
    result = _parse_sharding(s)
    if not s.at_end():
        raise ShardingSyntaxError(
            f"unexpected '{text[s.pos : s.pos + 12]}' after the sharding", s.pos
        )
    return result


def _parse_sharding(s: _Scanner) -> HloSharding:
    start = s.pos
    s.expect("{")
    if s.peek("{") or s.peek("}"):  # a tuple sharding
        elements: list[HloSharding] = []
        if not s.accept("}"):
            while True:
                elements.append(_parse_sharding(s))
                if s.accept("}"):
                    break
                s.expect(",")
        return HloSharding("tuple", elements=tuple(elements), text=s.text[start : s.pos].strip())
    kind: str | None = None
    devices: np.ndarray | None = None
    last: list[str] = []
    device: int | None = None
    while not s.accept("}"):
        word_pos = s.pos
        word = s.word()
        if word in ("replicated", "manual", "unknown"):
            kind = word
        elif word == "maximal":
            s.word()  # device
            s.expect("=")
            device = s.integer()
            kind = "maximal"
        elif word == "devices":
            s.expect("=")
            dims = s.int_list("[", "]")
            devices = _parse_iota_or_list(s, dims)
            kind = "tiled"
        elif word == "last_tile_dim_replicate":
            last.append("replicated")
        elif word == "last_tile_dims":
            s.expect("=")
            s.expect("{")
            while not s.accept("}"):
                last.append(s.word())
                s.accept(",")
        elif word in ("metadata", "shard_as", "shard_like"):
            # `metadata={...}` and sharding groups carry no layout: skip their value
            s.expect("=")
            _skip_value(s)
        else:
            raise ShardingSyntaxError(f"unknown sharding keyword '{word}'", word_pos)
        s.accept(",")
    if kind is None:
        raise ShardingSyntaxError("empty sharding", start)
    if kind == "unknown":
        raise ShardingSyntaxError("sharding {unknown} says nothing about the layout", start)
    if kind == "tiled":
        assert devices is not None
        if devices.ndim < len(last):
            raise ShardingSyntaxError("more last_tile_dims than tile dimensions", start)
        for k in last:
            if k not in ("replicated", "manual", "unreduced"):
                raise ShardingSyntaxError(f"unsupported last tile dimension kind '{k}'", start)
    return HloSharding(kind, devices, tuple(last), device, text=s.text[start : s.pos].strip())


def _skip_value(s: _Scanner) -> None:
    s.skip()
    depth = 0
    while s.pos < len(s.text):
        c = s.text[s.pos]
        if c == '"':
            end = s.text.find('"', s.pos + 1)
            s.pos = len(s.text) if end < 0 else end + 1
            continue
        if c in "{[(":
            depth += 1
        elif c in "}])":
            if depth == 0:
                return
            depth -= 1
            if depth == 0:
                s.pos += 1
                return
        elif c in ", " and depth == 0:
            return
        s.pos += 1


# Replica groups and group modes ---------------------------------------------------------


def parse_replica_groups(text: str) -> list[list[int]]:
    """`{{0,1},{2,3}}`, `{}` (all) or the iota form `[2,4]<=[4,2]T(1,0)`."""
    s = _Scanner(text)
    if s.peek("["):
        dims = s.int_list("[", "]")
        if len(dims) != 2:
            raise ShardingSyntaxError(f"iota replica groups need [groups,size], got {dims}", 0)
        s.expect("<=")
        reshape = s.int_list("[", "]")
        perm = s.int_list("(", ")") if s.accept("T") else None
        groups = iota_tile_assignment(dims, reshape, perm).tolist()
    else:
        s.expect("{")
        groups = []
        if not s.accept("}"):
            while True:
                groups.append(s.int_list("{", "}"))
                if s.accept("}"):
                    break
                s.expect(",")
    if not s.at_end():
        raise ShardingSyntaxError(f"unexpected '{text[s.pos : s.pos + 12]}'", s.pos)
    return groups


def participating_groups(
    groups: Sequence[Sequence[int]],
    mode: str,
    replicas: int,
    partitions: int,
) -> list[list[int]]:
    """
    Device groups (ids `replica * partitions + partition`, rank order) of a collective in
    XLA's group `mode`: `cross_replica`, `cross_partition`, `cross_replica_and_partition`
    or `flattened_id` (xla/hlo/ir/collective_op_group_mode.h). Empty `groups` = all.
    """
    n = replicas * partitions
    if mode == "flattened_id":
        if not groups:
            return [list(range(n))]
        return [list(g) for g in groups]
    if mode == "cross_replica":
        gs = [list(g) for g in groups] or [list(range(replicas))]
        return [[r * partitions + p for r in g] for p in range(partitions) for g in gs]
    if mode == "cross_partition":
        gs = [list(g) for g in groups] or [list(range(partitions))]
        return [[r * partitions + p for p in g] for r in range(replicas) for g in gs]
    if mode == "cross_replica_and_partition":
        gs = [list(g) for g in groups] or [list(range(replicas))]
        return [[r * partitions + p for r in g for p in range(partitions)] for g in gs]
    raise ValueError(mode)


def group_mode(has_channel: bool, use_global_device_ids: bool, has_global_field: bool) -> str:
    """XLA's CollectiveOpGroupMode from channel_id / use_global_device_ids."""
    if not has_channel:
        if use_global_device_ids:
            raise ShardingSyntaxError("use_global_device_ids needs a channel_id")
        return "cross_replica"
    if not has_global_field:  # all-to-all, collective-permute
        return "cross_partition"
    return "flattened_id" if use_global_device_ids else "cross_replica_and_partition"


def check_partition(groups: Sequence[Sequence[int]], n: int) -> str | None:
    """None if `groups` partition devices 0..n-1 into equal groups, else the problem."""
    if not groups or not groups[0]:
        return "the groups are empty"
    if any(len(g) != len(groups[0]) for g in groups):
        return "the groups have different sizes"
    flat = sorted(d for g in groups for d in g)
    if flat != list(range(n)):
        return f"the groups do not cover each of the {n} devices exactly once"
    return None


# Mesh axes from tile assignments ---------------------------------------------------------


@dataclass(frozen=True)
class Piece:
    """A sub-dimension of a tile assignment: `size` blocks, device-id `stride` apart."""

    size: int
    stride: int


def decompose(devices: np.ndarray) -> list[list[Piece]] | None:
    """
    Each dimension of a mixed-radix device array as its pieces, major first, or None
    when the array is not mixed-radix (no mesh can express it).
    """
    n = devices.size
    if sorted(devices.reshape(-1).tolist()) != list(range(n)):
        return None
    origin = int(devices.reshape(-1)[0]) if n else 0
    if origin != 0:
        return None
    result: list[list[Piece]] = []
    for d, size in enumerate(devices.shape):
        index = [0] * devices.ndim
        line = []
        for k in range(size):
            index[d] = k
            line.append(int(devices[tuple(index)]))
        pieces: list[Piece] = []  # minor first while building
        block = 1
        while block < size:
            stride = line[block]
            # the largest sub-dimension that divides what is left and moves linearly
            best = 1
            for cand in range(2, size // block + 1):
                if (size // block) % cand:
                    continue
                if all(line[block * j] == j * stride for j in range(cand)):
                    best = cand
            if best == 1:
                return None
            pieces.append(Piece(best, stride))
            block *= best
        result.append(list(reversed(pieces)))
    # verify the whole array
    strides = [[(p.size, p.stride) for p in dim] for dim in result]
    for idx in itertools.product(*(range(s) for s in devices.shape)):
        dev = 0
        for i, dim in zip(idx, strides, strict=False):
            for size, stride in reversed(dim):  # minor first
                dev += (i % size) * stride
                i //= size
        if dev != int(devices[idx]):
            return None
    return result


@dataclass
class MeshBuilder:
    """Collects the tile assignments of a module and builds one mesh for all of them."""

    devices: int
    boundaries: set[int] = field(default_factory=set[int])

    def add(self, sharding: HloSharding) -> str | None:
        """Register a sharding's strides; the reason if it cannot live on a mesh."""
        if sharding.kind == "tuple":
            for e in sharding.elements:
                if (problem := self.add(e)) is not None:
                    return problem
            return None
        if sharding.kind != "tiled":
            return None
        assert sharding.devices is not None
        if sharding.devices.size != self.devices:
            return (
                f"its tile assignment has {sharding.devices.size} devices but the "
                f"program runs on {self.devices}"
            )
        pieces = decompose(sharding.devices)
        if pieces is None:
            return "its device order is not a mesh layout (not mixed-radix)"
        for dim in pieces:
            for p in dim:
                self.boundaries.add(p.stride)
                self.boundaries.add(p.stride * p.size)
        return None

    def axes(self) -> list[tuple[str, int]] | str:
        """The mesh axes (name, size), major first; or why there is none."""
        points = sorted(self.boundaries | {1, self.devices})
        for a, b in zip(points, points[1:], strict=False):
            if b % a:
                return (
                    f"the shardings split the {self.devices} devices at strides {a} and "
                    f"{b}, and {a} does not divide {b}: no single mesh expresses them"
                )
        sizes = [b // a for a, b in zip(points, points[1:], strict=False)]
        sizes.reverse()  # major first
        if len(sizes) > len(AXIS_NAMES):
            return "too many mesh axes"
        return [(AXIS_NAMES[i], s) for i, s in enumerate(sizes)]

    def axis_strides(self) -> dict[str, tuple[int, int]]:
        axes = self.axes()
        assert not isinstance(axes, str)
        out: dict[str, tuple[int, int]] = {}
        stride = 1
        for name, size in reversed(axes):
            out[name] = (stride, size)
            stride *= size
        return out

    def dim_axes(self, sharding: HloSharding) -> tuple[list[list[str]], list[str]]:
        """
        For a tiled sharding (registered with `add`): the mesh axes splitting each tensor
        dimension (major first), and the axes of its manual last-tile dims.
        """
        assert sharding.kind == "tiled" and sharding.devices is not None
        pieces = decompose(sharding.devices)
        assert pieces is not None
        strides = self.axis_strides()

        def axes_of(p: Piece) -> list[str]:
            found = [
                (stride, name)
                for name, (stride, _) in strides.items()
                if p.stride <= stride < p.stride * p.size
            ]
            return [name for _, name in sorted(found, reverse=True)]

        dims: list[list[str]] = []
        manual: list[str] = []
        for i, dim in enumerate(pieces):
            axes = [a for p in dim for a in axes_of(p)]
            if i < sharding.tile_rank:
                dims.append(axes)
            elif sharding.last_tile_dims[i - sharding.tile_rank] == "manual":
                manual.extend(axes)
        return dims, manual

    def last_dim_axes(self, sharding: HloSharding, kind: str) -> list[str]:
        """The mesh axes of a tiled sharding's last tile dims of `kind` (`unreduced`...)."""
        assert sharding.kind == "tiled" and sharding.devices is not None
        pieces = decompose(sharding.devices)
        assert pieces is not None
        strides = self.axis_strides()
        out: list[str] = []
        for i, dim in enumerate(pieces[sharding.tile_rank :]):
            if sharding.last_tile_dims[i] != kind:
                continue
            for p in dim:
                found = [
                    (stride, name)
                    for name, (stride, _) in strides.items()
                    if p.stride <= stride < p.stride * p.size
                ]
                out.extend(name for _, name in sorted(found, reverse=True))
        return out


# Per-device blocks -------------------------------------------------------------------------


def device_blocks(
    sharding: HloSharding | None, global_shape: Sequence[int], devices: int
) -> list[tuple[slice, ...]]:
    """The block of a global array each device holds (replicated / maximal: all of it)."""
    full = tuple(slice(0, n) for n in global_shape)
    if sharding is None or sharding.kind in ("replicated", "maximal", "manual"):
        return [full] * devices
    if sharding.kind != "tiled":
        raise ValueError(f"no per-device blocks for a {sharding.kind} sharding")
    assert sharding.devices is not None
    if "unreduced" in sharding.last_tile_dims:
        raise ValueError(f"sharding {sharding} holds partial sums: no per-device blocks of a value")
    tile = sharding.tile_shape
    if len(tile) != len(global_shape):
        raise ValueError(
            f"sharding {sharding} has {len(tile)} tile dimensions but the array has rank "
            f"{len(global_shape)}"
        )
    for d, (n, t) in enumerate(zip(global_shape, tile, strict=False)):
        if n % t:
            raise ValueError(f"dimension {d} of size {n} does not split into {t} tiles")
    blocks: list[tuple[slice, ...] | None] = [None] * devices
    for idx in itertools.product(*(range(s) for s in sharding.devices.shape)):
        dev = int(sharding.devices[idx])
        if dev >= devices:
            raise ValueError(f"sharding {sharding} names device {dev} of {devices}")
        blocks[dev] = tuple(
            slice(i * (n // t), (i + 1) * (n // t))
            for i, n, t in zip(idx[: len(tile)], global_shape, tile, strict=False)
        )
    if any(b is None for b in blocks):
        raise ValueError(f"sharding {sharding} leaves some of the {devices} devices out")
    return blocks  # pyright: ignore[reportReturnType]


def split_global(array: np.ndarray, sharding: HloSharding | None, devices: int) -> list[np.ndarray]:
    """Each device's block of a global array."""
    return [np.ascontiguousarray(array[b]) for b in device_blocks(sharding, array.shape, devices)]


def assemble_global(
    parts: Sequence[np.ndarray],
    sharding: HloSharding | None,
    global_shape: Sequence[int],
) -> np.ndarray:
    """The global array from every device's block (the first copy of each block wins)."""
    blocks = device_blocks(sharding, global_shape, len(parts))
    out = np.empty(tuple(global_shape), dtype=parts[0].dtype)
    for part, block in zip(parts, blocks, strict=False):
        out[block] = part
    return out


def local_shape(sharding: HloSharding | None, global_shape: Sequence[int]) -> tuple[int, ...]:
    if sharding is None or sharding.kind != "tiled":
        return tuple(global_shape)
    return tuple(n // t for n, t in zip(global_shape, sharding.tile_shape, strict=False))


def all_groups_of(axes_groups: Iterable[Sequence[int]]) -> list[list[int]]:
    return [list(g) for g in axes_groups]
