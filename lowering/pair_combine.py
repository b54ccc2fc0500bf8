"""
The ring combine of a complex all_reduce / reduce_scatter of kind mul, max or min (issue 15
item 3). `complex_pairs` runs such a collective on its complex operands' parts' views (a
last dimension of 2: (re, im) pairs; hardware/cost.py `PAIRS_ATTR` names those operands).
The rings move and keep those blocks as any others; only their combine differs from the
elementwise one of `reduce_ring.combine`: it takes each pair together. It loads the real
parts (index 0 of the last dimension) and the imaginary parts (index 1) of the arriving
partial and of this device's chunk as four vectors, computes `complex_pairs.combine_body`
on them through `vector_ops.elementwise` (level S's `np.multiply`: numpy's contracted
product (a c - b d, a d + b c), the products fused into the sum in f64 for complex<f32>;
`np.maximum` / `np.minimum`: numpy's lexicographic order on (real, imaginary), a NaN
part propagating), and stores the two parts back. A pair is never cut: the chunks,
pieces and directions of the rings cut only the other dimensions
(`reduce_scatter.rs_plan`, `all_reduce`'s views), and an all_reduce's tail is whole pairs.

Level S combines the devices' values in rank order, a ring along the ring (reduce_ring.py):
products agree to rounding; max / min pick the same value but of equal ones (signed zero
parts) or of several with a NaN part. Vector ops per complex element: hardware/cost.py's
`ring_combine_ops` (the elementwise op's `COMPLEX_PART_OPS`), which level S charges.
"""

from __future__ import annotations

from collections.abc import Sequence

from shardc.dialects import tpu
from shardc.lowering.complex_pairs import combine_body
from shardc.lowering.emit import Emitter
from shardc.lowering.reduce_body import evaluate
from shardc.lowering.tile_index import TileConstants, TileEmitter
from xdsl.dialects.builtin import MemRefType, VectorType
from xdsl.ir import Block, Operation, SSAValue

Place = tuple[SSAValue, Sequence[SSAValue]]
"""A block of pairs in VMEM: a memref and the indices of the block's first pair in it."""


def part_indices(e: Emitter, at: Sequence[SSAValue], which: int) -> list[SSAValue]:
    """`at` (a block's indices) moved to part `which` (0: real, 1: imaginary) of its pairs."""
    return [*at[:-1], e.index(which)] if which else list(at)


def load_parts(
    e: Emitter, place: Place, shape: Sequence[int], hint: str
) -> tuple[list[Operation], list[SSAValue]]:
    """The loads of the real and imaginary parts of the block of pairs of `shape` (its last
    dimension 2) at `place`: (the loads, the two [..., 1] vectors)."""
    ref, at = place
    ty = ref.type
    assert isinstance(ty, MemRefType) and shape[-1] == 2
    vty = VectorType(ty.element_type, [*shape[:-1], 1])
    loads = [tpu.LoadOp(ref, part_indices(e, at, w), vty) for w in (0, 1)]
    for load, part in zip(loads, ("re", "im"), strict=True):
        load.result.name_hint = f"{hint}_{part}"
    return list(loads), [load.result for load in loads]


def combine_parts(
    kind: str, at: Operation, partial: Sequence[SSAValue], own: Sequence[SSAValue]
) -> tuple[list[Operation], list[SSAValue]]:
    """
    The ops combining the complex values whose real and imaginary parts are the vectors
    `partial` (the accumulated value: numpy's first operand) and `own` by `kind` (mul,
    max, min; `complex_pairs.combine_body` for `at`, the collective): (the ops, the
    result's two parts).
    """
    part = partial[0].type
    assert isinstance(part, VectorType)
    block = Block()
    body = TileEmitter(block, TileConstants(block))
    re, im = evaluate(body, combine_body(at, kind, part.element_type), [*partial, *own])
    re.name_hint, im.name_hint = f"{kind}_re", f"{kind}_im"
    return body.detach_all(), [re, im]


def combine_pairs(
    e: Emitter, kind: str, at: Operation, partial: Place, own: Place, shape: Sequence[int]
) -> tuple[list[Operation], list[SSAValue]]:
    """
    The ops combining the blocks of pairs (`shape`, last dimension 2) at `partial` (the
    accumulated value) and `own` by complex `kind`: their parts' loads (`load_parts`) and
    `combine_parts`. Returns the ops (to emit in order) and the result's real and
    imaginary parts ([..., 1] vectors, for `store_parts`). Index constants go to `e` at
    once (pure: before the ops).
    """
    ops, a = load_parts(e, partial, shape, "partial")
    more, x = load_parts(e, own, shape, "own")
    combined, parts = combine_parts(kind, at, a, x)
    return [*ops, *more, *combined], parts


def store_parts(e: Emitter, parts: Sequence[SSAValue], place: Place) -> list[Operation]:
    """The stores of a combine's two parts into the block of pairs at `place`."""
    ref, at = place
    return [tpu.StoreOp(v, ref, part_indices(e, at, w)) for w, v in enumerate(parts)]
