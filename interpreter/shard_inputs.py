"""
Inputs of some devices only (issue 17): under `mpirun` each rank holds the blocks of its
own devices, never a sharded input's global array.

* `--seed`: `random_blocks` draws every input's random stream in order, as
  `io.random_inputs` does, but in pieces of a few rows, keeping only the parts of this
  rank's blocks: the same values as in process (`values.random_streams` says why pieces
  give the same draws) with memory of the blocks plus one piece. Each rank still draws
  every value (a seeded stream cannot be entered in the middle), so this costs time, not
  memory.
* `--inputs IN.npz`: `load_lazily` maps each array of an uncompressed .npz (what
  `np.savez` and `shardc-run --outputs` write) from the file, so slicing a block reads
  only its pages; a compressed member is read whole (zip deflate cannot be sliced).
"""

from __future__ import annotations

import math
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from shardc.interpreter.io import Signature, _padded_block, input_block
from shardc.interpreter.values import frozen, random_array, random_streams

PIECE_BYTES = 1 << 20
"""About how much of a stream is drawn at a time."""


@dataclass(frozen=True)
class SeededInputs:
    """`--seed N` under mpirun: each rank draws its own blocks (`random_blocks`)."""

    seed: int


def random_blocks(sig: Signature, seed: int, devices: Sequence[int]) -> dict[int, list[Any]]:
    """`io.split_inputs(sig, io.random_inputs(sig, seed))`'s rows of `devices`, without
    the global arrays."""
    rng = np.random.default_rng(seed)
    rows: dict[int, list[Any]] = {d: [] for d in devices}
    if sig.per_device_io:  # in_K.D, per spec then device: keep this rank's own
        for spec in sig.args:
            for d in range(sig.devices):
                a = random_array(rng, spec.local_shape, spec.dtype)
                if d in rows:
                    rows[d].append(frozen(a))
        return rows
    for spec in sig.args:
        indices = [input_block(sig, spec, d) for d in devices]
        wanted = list({_key(ix): ix for ix in indices if ix is not None}.values())
        drawn = _draw(rng, spec.global_shape, spec.dtype, wanted)
        blocks = {_key(ix): b for ix, b in zip(wanted, drawn, strict=True)}
        zeros = None
        for d, ix in zip(devices, indices, strict=True):
            if ix is None:
                if zeros is None:
                    zeros = frozen(np.zeros(spec.local_shape, dtype=spec.dtype))
                rows[d].append(zeros)
            else:
                rows[d].append(_padded_block(blocks[_key(ix)], spec.local_shape))
    return rows


def random_boxes(
    sig: Signature, seed: int, boxes: Sequence[tuple[slice, ...] | None]
) -> list[np.ndarray | None]:
    """The parts `boxes` of `io.random_inputs(sig, seed)`'s arrays (None: not needed; its
    stream is still drawn, to keep the next input's values): what a rank's distributed
    `--check` evaluates level G on (`interpreter.level_g_boxes`)."""
    rng = np.random.default_rng(seed)
    out: list[np.ndarray | None] = []
    for spec, index in zip(sig.args, boxes, strict=True):
        drawn = _draw(rng, spec.global_shape, spec.dtype, [] if index is None else [index])
        out.append(None if index is None else drawn[0])
    return out


def _key(index: tuple[slice, ...]) -> tuple[tuple[int, int], ...]:
    return tuple((s.start, s.stop) for s in index)


def _draw(
    rng: np.random.Generator,
    shape: tuple[int, ...],
    dtype: np.dtype[Any],
    indices: list[tuple[slice, ...]],
) -> list[np.ndarray]:
    """The blocks `indices` of the array `random_array(rng, shape, dtype)` would draw."""
    streams, finish = random_streams(dtype)
    if not shape:
        whole = finish([draw(rng, 1).reshape(()) for draw in streams])
        return [frozen(whole) for _ in indices]
    row = math.prod(shape[1:])
    step = max(4, PIECE_BYTES // max(1, row * 8) // 4 * 4)  # rows: a multiple of 4
    parts: list[list[np.ndarray]] = []
    for draw in streams:
        out: list[np.ndarray] = []
        for r0 in range(0, shape[0], step):
            r1 = min(shape[0], r0 + step)
            piece = draw(rng, (r1 - r0) * row).reshape((r1 - r0, *shape[1:]))
            if not out:
                out = [np.empty([s.stop - s.start for s in ix], piece.dtype) for ix in indices]
            for block, ix in zip(out, indices, strict=True):
                lo, hi = max(ix[0].start, r0), min(ix[0].stop, r1)
                if lo < hi:
                    block[lo - ix[0].start : hi - ix[0].start] = piece[
                        (slice(lo - r0, hi - r0), *ix[1:])
                    ]
        if not out:  # no rows at all
            out = [np.empty([s.stop - s.start for s in ix], np.float32) for ix in indices]
        parts.append(out)
    return [frozen(finish([p[i] for p in parts])) for i in range(len(indices))]


def load_lazily(path: str) -> dict[str, np.ndarray]:
    """The arrays of an .npz file, each mapped from the file where it is stored
    uncompressed (nothing is read until a block is sliced), else read whole."""
    out: dict[str, np.ndarray] = {}
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            name = info.filename.removesuffix(".npy")
            if info.compress_type != zipfile.ZIP_STORED:
                with z.open(info) as f:
                    out[name] = np.lib.format.read_array(f, allow_pickle=False)
                continue
            with z.open(info) as f:
                version = np.lib.format.read_magic(f)
                read_header = (
                    np.lib.format.read_array_header_1_0
                    if version == (1, 0)
                    else np.lib.format.read_array_header_2_0
                )
                shape, fortran, dtype = read_header(f)
                header = f.tell()
            if not math.prod(shape) or dtype.hasobject:
                out[name] = np.load(path, allow_pickle=False)[name]
                continue
            with open(path, "rb") as raw:  # the member's data starts after its local header
                raw.seek(info.header_offset + 26)
                name_len, extra_len = np.frombuffer(raw.read(4), "<u2")
            offset = info.header_offset + 30 + int(name_len) + int(extra_len) + header
            out[name] = np.memmap(
                path,
                dtype=dtype,
                mode="r",
                offset=offset,
                shape=shape,
                order="F" if fortran else "C",
            )
    return out


__all__ = ["SeededInputs", "load_lazily", "random_blocks", "random_boxes"]
