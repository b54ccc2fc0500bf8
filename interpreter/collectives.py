"""
The semantics of every `collective` op over one group, on numpy (DESIGN.md "Level S").

Each function takes the operands of the group's members in rank order (one tuple of
arrays per member) and returns each member's results in rank order. Reductions combine in
rank order, accumulating bf16/f16 in f32 and rounding once, and every member receives the
very same (read-only) result arrays, so replicated results are bit-identical by
construction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from shardc.dialects import collective as coll
from shardc.interpreter.values import combine_in_order, frozen

Values = tuple[np.ndarray, ...]


def all_reduce(kind: str, inputs: Sequence[Values]) -> list[Values]:
    results = tuple(
        frozen(combine_in_order(kind, [np.asarray(m[i]) for m in inputs]))
        for i in range(len(inputs[0]))
    )
    return [results] * len(inputs)


def all_gather(dim: int, inputs: Sequence[Values]) -> list[Values]:
    results = tuple(
        frozen(np.concatenate([m[i] for m in inputs], axis=dim)) for i in range(len(inputs[0]))
    )
    return [results] * len(inputs)


def reduce_scatter(kind: str, dim: int, inputs: Sequence[Values]) -> list[Values]:
    g = len(inputs)
    per_operand = []
    for i in range(len(inputs[0])):
        full = combine_in_order(kind, [np.asarray(m[i]) for m in inputs])
        per_operand.append([frozen(b) for b in np.split(full, g, axis=dim)])
    return [tuple(blocks[r] for blocks in per_operand) for r in range(g)]


def all_to_all(split_dim: int, concat_dim: int, inputs: Sequence[Values]) -> list[Values]:
    g = len(inputs)
    blocks = [np.split(np.asarray(m[0]), g, axis=split_dim) for m in inputs]
    return [
        (frozen(np.concatenate([blocks[s][r] for s in range(g)], axis=concat_dim)),)
        for r in range(g)
    ]


def permute(pairs: Sequence[tuple[int, int]], inputs: Sequence[Values]) -> list[Values]:
    g = len(inputs)
    out: list[Values | None] = [None] * g
    for source, target in pairs:
        out[target] = (inputs[source][0],)
    zeros: Values | None = None
    for r in range(g):
        if out[r] is None:
            if zeros is None:
                zeros = (frozen(np.zeros_like(np.asarray(inputs[r][0]))),)
            out[r] = zeros
    return out  # pyright: ignore[reportReturnType]


GroupFunction = Callable[[Sequence[Values]], list[Values]]
"""Runs one collective for one group: the members' operands in rank order in, each
member's results in rank order out."""

_SEMANTICS: dict[type[coll.CollectiveOp], Callable[[Any], GroupFunction]] = {}
"""Op type -> the function reading the op's attributes once and returning its
`GroupFunction` (keyed by the concrete op type, as xDSL's `@impl` is)."""


def _semantics(*op_types: type[coll.CollectiveOp]):
    """Register a `GroupFunction` maker for the sync and `_start` forms of a collective."""

    def deco(make: Callable[[Any], GroupFunction]) -> Callable[[Any], GroupFunction]:
        for op_type in op_types:
            _SEMANTICS[op_type] = make
        return make

    return deco


@_semantics(coll.AllReduceOp, coll.AllReduceStartOp)
def _prepare_all_reduce(op: coll.AllReduceBase) -> GroupFunction:
    kind = op.kind.data
    return lambda inputs: all_reduce(kind, inputs)


@_semantics(coll.AllGatherOp, coll.AllGatherStartOp)
def _prepare_all_gather(op: coll.AllGatherBase) -> GroupFunction:
    dim = op.dim.value.data
    return lambda inputs: all_gather(dim, inputs)


@_semantics(coll.ReduceScatterOp, coll.ReduceScatterStartOp)
def _prepare_reduce_scatter(op: coll.ReduceScatterBase) -> GroupFunction:
    kind, dim = op.kind.data, op.dim.value.data
    return lambda inputs: reduce_scatter(kind, dim, inputs)


@_semantics(coll.AllToAllOp, coll.AllToAllStartOp)
def _prepare_all_to_all(op: coll.AllToAllBase) -> GroupFunction:
    split, concat = op.split_dim.value.data, op.concat_dim.value.data
    return lambda inputs: all_to_all(split, concat, inputs)


@_semantics(coll.PermuteOp, coll.PermuteStartOp)
def _prepare_permute(op: coll.PermuteBase) -> GroupFunction:
    pairs = op.source_target_pairs
    return lambda inputs: permute(pairs, inputs)


def prepare(op: coll.CollectiveOp) -> GroupFunction:
    """
    The function running `op` (sync or `_start` form) for one group, with the op's
    attributes read once; it takes the members' operands in rank order.
    """
    make = _SEMANTICS.get(type(op))
    if make is None:
        raise NotImplementedError(f"no semantics for {op.name}")
    return make(op)


def execute(op: coll.CollectiveOp, inputs: Sequence[Values]) -> list[Values]:
    """Run `op` for one group; `inputs` in rank order."""
    return prepare(op)(inputs)
