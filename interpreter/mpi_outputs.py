"""
The global outputs of a level-S run under mpirun, assembled on rank 0 from one copy of
each distinct block (issue 17): `io.assemble_outputs` does the same in process from every
device's results, but gathering every device's block would put, for a replicated output
of a 64-device data-parallel step, 64 copies of it on rank 0.

* A piece is one (block, partial sum) of an output; the devices holding it are its copies,
  the lowest device id its owner. Only owners send, one piece at a time in one global order
  (output, block, partial), so rank 0 holds the global outputs plus one piece in flight
  (and one accumulator for a block summed from partials, added in partial order with f32
  accumulation: `values.combine_in_order` incrementally, so bit-identical).
* Copies must still be bit-identical, as in process: every rank hashes its copies, rank 0
  compares the digests (with the clocks' gather: no extra round) and, on a mismatch, fetches
  the two differing blocks to say where they differ, with the in-process message.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from shardc.diagnostics import InterpreterError
from shardc.dialects.syntax import string_list_in_braces_str
from shardc.interpreter import io
from shardc.interpreter.mpi import World
from shardc.interpreter.values import accumulation_dtype, reduce_ufunc

OUTPUT_TAG = 17018
"""Point-to-point tag of output pieces on COMM_WORLD (the liveness states use 17017)."""
CHECK_TAG = 17019
"""... and of the partial sums a distributed --check sums (`summed_blocks`)."""


@dataclass
class Piece:
    """One (block, partial sum) of an output and the devices holding a copy of it."""

    spec: io.ValueSpec
    name: str
    region: tuple[slice, ...]
    """Where it goes in the output array."""
    valid: tuple[slice, ...]
    """The part of a device's result that is not padding (an uneven split)."""
    devices: list[int]
    """Ascending: the first is the owner, the one that sends it."""


def pieces(sig: io.Signature) -> list[list[Piece]]:
    """Every output's pieces, grouped by the region they fill (partials in partial order),
    in the one order every rank sends and rank 0 receives."""
    groups: list[list[Piece]] = []
    for spec in sig.results:
        name = f"out_{spec.index}"
        whole = tuple(slice(0, n) for n in spec.local_shape)
        if sig.per_device_io:
            groups += [[Piece(spec, f"{name}.{d}", whole, whole, [d])] for d in range(sig.devices)]
        elif sig.level == "G" or (spec.mesh or sig.mesh) is None:
            groups.append([Piece(spec, name, whole, whole, [0])])
        else:
            groups += _sharded_pieces(sig, spec, name)
    return groups


def _sharded_pieces(sig: io.Signature, spec: io.ValueSpec, name: str) -> list[list[Piece]]:
    mesh = spec.mesh or sig.mesh
    assert mesh is not None
    sharding = spec.sharding
    unreduced = list(sharding.unreduced_axes) if sharding else []
    keyed: dict[tuple[Any, ...], dict[tuple[int, ...], Piece]] = {}
    for d in range(sig.devices):
        coords = mesh.coords(d)
        block = tuple(
            sharding.shard_index(i, mesh, coords) if sharding else 0
            for i in range(len(spec.local_shape))
        )
        partial = tuple(coords[mesh.names.index(a)] for a in unreduced)
        parts = keyed.setdefault(block, {})
        if partial in parts:
            parts[partial].devices.append(d)
            continue
        region = tuple(
            slice(b * n, min((b + 1) * n, g))
            for b, n, g in zip(block, spec.local_shape, spec.global_shape, strict=False)
        )
        valid = io.valid_region(block, spec)
        parts[partial] = Piece(spec, name, region, valid, [d])
    return [[parts[p] for p in sorted(parts)] for _, parts in sorted(keyed.items())]


def digest(value: Any) -> bytes:
    """A hash of a block's bits (copies are compared by it, not sent)."""
    a = np.ascontiguousarray(value)
    h = hashlib.blake2b(repr((a.shape, a.dtype.str)).encode(), digest_size=16)
    h.update(memoryview(a.reshape(-1).view(np.uint8)))
    return h.digest()


def local_digests(
    groups: list[list[Piece]], results: Mapping[int, Sequence[Any]]
) -> dict[tuple[int, int, int], bytes]:
    """(group, part, device) -> digest of this rank's copies of pieces held more than once."""
    out: dict[tuple[int, int, int], bytes] = {}
    for g, parts in enumerate(groups):
        for p, piece in enumerate(parts):
            if len(piece.devices) < 2:
                continue
            for d in piece.devices:
                if d in results:
                    out[(g, p, d)] = digest(np.asarray(results[d][piece.spec.index])[piece.valid])
    return out


def first_mismatch(
    groups: list[list[Piece]], digests: Mapping[tuple[int, int, int], bytes]
) -> tuple[int, int, int] | None:
    """Rank 0: (group, part, device) of the first copy that differs from its owner's, in
    the order the in-process assembly finds it (output, then device)."""
    found: list[tuple[int, int, int, int]] = []
    for g, parts in enumerate(groups):
        for p, piece in enumerate(parts):
            owner = digests.get((g, p, piece.devices[0]))
            for d in piece.devices[1:]:
                if digests[(g, p, d)] != owner:
                    found.append((piece.spec.index, d, g, p))
                    break
    if not found:
        return None
    _, d, g, p = min(found)
    return g, p, d


def gather_outputs(
    sig: io.Signature,
    world: World,
    results: Mapping[int, Sequence[Any]],
    mismatch: tuple[int, int, int] | None,
    source: str,
) -> dict[str, np.ndarray] | None:
    """
    Every rank: send the pieces it owns; rank 0: the output arrays (None elsewhere).
    `mismatch` (the same on every rank) makes the job fail as in process instead.
    """
    groups = pieces(sig)
    if mismatch is not None:
        _report_mismatch(sig, world, results, groups, mismatch, source)
    stats = {"received": 0, "largest_piece": 0}
    out: dict[str, np.ndarray] = {}
    for parts in groups:
        placed = _gather_group(world, results, parts, stats)
        if placed is None:
            continue
        piece = parts[0]
        if sig.per_device_io:
            out[piece.name] = placed
            continue
        if piece.name not in out:
            out[piece.name] = np.empty(piece.spec.global_shape, dtype=piece.spec.dtype)
        out[piece.name][piece.region] = placed
        del placed  # one piece in flight at a time
    world.output_stats = stats
    return out if world.is_root else None


def _gather_group(
    world: World, results: Mapping[int, Sequence[Any]], parts: list[Piece], stats: dict[str, int]
) -> np.ndarray | None:
    """The value of one region on rank 0 (its partials summed in order); owners send."""
    return sum_in_order(_piece(world, results, p, 0, OUTPUT_TAG, stats) for p in parts)


def sum_in_order(values: Iterable[np.ndarray | None]) -> np.ndarray | None:
    """
    The partials of one block (None where not here) summed in order, bit-identical to
    `values.combine_in_order` (one partial: itself); pulled one at a time, so one is in
    flight next to the accumulator.
    """
    acc: np.ndarray | None = None
    only: np.ndarray | None = None
    dtype: np.dtype[Any] | None = None
    for n, value in enumerate(values):
        if value is None:
            continue
        if n == 0:
            only = value
        elif only is not None:
            dtype, acc, only = (
                only.dtype,
                np.array(only, dtype=accumulation_dtype(only.dtype)),
                None,
            )
        if acc is not None:
            with np.errstate(all="ignore"):
                reduce_ufunc("add", value.dtype)(acc, value.astype(acc.dtype, copy=False), out=acc)
        del value  # one piece in flight at a time
    if acc is None:
        return only
    assert dtype is not None
    return acc.astype(dtype, copy=False)


def _piece(
    world: World,
    results: Mapping[int, Sequence[Any]],
    piece: Piece,
    to: int,
    tag: int,
    stats: dict[str, int],
) -> np.ndarray | None:
    """Rank `to`: the owner's copy of `piece`; the owner's rank: sends it; others: nothing."""
    owner = piece.devices[0]
    holder = world.rank_of(owner)
    if world.rank == holder:
        value = np.asarray(results[owner][piece.spec.index])[piece.valid]
        if world.rank == to:
            return value
        world.send_block(to, value, tag)
        return None
    if world.rank != to:
        return None
    shape = tuple(s.stop - s.start for s in piece.region)
    value = world.receive_block(holder, shape, piece.spec.dtype, tag)
    stats["received"] += value.nbytes
    stats["largest_piece"] = max(stats["largest_piece"], value.nbytes)
    return value


def summed_blocks(
    sig: io.Signature, world: World, results: Mapping[int, Sequence[Any]]
) -> dict[int, list[tuple[tuple[slice, ...], np.ndarray]]]:
    """
    Each partial-sum output's blocks that this rank checks (`driver.mpi_checking`): a
    block's partials go to the rank of its checker (the lowest device holding its first
    partial), one at a time in one global order, and are summed there in partial order,
    as the assembly sums them. By output index: (region, summed block).
    """
    out: dict[int, list[tuple[tuple[slice, ...], np.ndarray]]] = {}
    stats = {"received": 0, "largest_piece": 0}
    for parts in pieces(sig):
        spec = parts[0].spec
        if spec.sharding is None or not spec.sharding.unreduced_axes or sig.per_device_io:
            continue
        to = world.rank_of(parts[0].devices[0])
        value = sum_in_order(_piece(world, results, p, to, CHECK_TAG, stats) for p in parts)
        if world.rank == to:
            assert value is not None
            out.setdefault(spec.index, []).append((parts[0].region, value))
    return out


def _report_mismatch(
    sig: io.Signature,
    world: World,
    results: Mapping[int, Sequence[Any]],
    groups: list[list[Piece]],
    mismatch: tuple[int, int, int],
    source: str,
) -> None:
    """Rank 0 raises the in-process error with the two copies' first difference; the other
    ranks send their copy if it is one of them, then exit quietly (as `World.agree`)."""
    g, p, d = mismatch
    piece = groups[g][p]
    shape = tuple(s.stop - s.start for s in piece.region)
    copies: list[np.ndarray] = []
    for device in (piece.devices[0], d):
        holder = world.rank_of(device)
        if world.rank == holder:
            value = np.asarray(results[device][piece.spec.index])[piece.valid]
            if not world.is_root:
                world.send_block(0, value, OUTPUT_TAG)
            copies.append(value)
        elif world.is_root:
            copies.append(world.receive_block(holder, shape, piece.spec.dtype, OUTPUT_TAG))
    if not world.is_root:
        raise SystemExit(1)
    spec, mesh = piece.spec, piece.spec.mesh or sig.mesh
    assert mesh is not None
    sharding = spec.sharding
    split = [a for dim in (sharding.dim_axes if sharding else ()) for a in dim]
    unreduced = list(sharding.unreduced_axes) if sharding else []
    replicated = [a for a in mesh.names if a not in split and a not in unreduced]
    raise InterpreterError(
        f"{source}: error: output '{piece.name}': device {d} holds a copy that differs "
        f"from device {piece.devices[0]}'s, but result {spec.index} of @{sig.name} is "
        f"replicated over mesh axes {string_list_in_braces_str(replicated)} "
        f"({io.first_difference(copies[0], copies[1])})"
    )


__all__ = [
    "Piece",
    "digest",
    "first_mismatch",
    "gather_outputs",
    "local_digests",
    "pieces",
    "sum_in_order",
    "summed_blocks",
]
