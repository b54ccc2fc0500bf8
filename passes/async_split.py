"""
`async-split{inverse=false min-bytes=0}`: every sync collective becomes its `_start` form
and one `collective.done` right after it (XLA's AsyncCollectiveCreator); the `schedule`
pass then moves the two apart so that compute runs while the collective is in flight.

    %r = collective.all_reduce add %x on @mesh["data"] : tensor<8xf32>
  ->
    %0 = collective.all_reduce_start add %x on @mesh["data"] : tensor<8xf32> -> !collective.future<tensor<8xf32>>
    %r = collective.done %0 : !collective.future<tensor<8xf32>> -> tensor<8xf32>

Variadic collectives become one `_start` whose future holds every result and one `done`
with as many results. Collectives whose operands total fewer than `min-bytes` stay sync
(XLA's *_min_threshold_in_bytes: a tiny collective is latency, there is nothing to hide).
Discardable attributes move to the `_start`.

`inverse=true` is the opposite (XLA's ConvertAsyncCollectivesToSync, for after
scheduling): a `_start` whose `done` follows it with nothing in between but free ops
(`hlo.constant`, `spmd.axis_index`), so that no compute overlaps it, becomes the sync
collective again, at the place of the `done`. Pairs with real work between them, and
futures used by anything but one `done` in the same block, stay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from shardc.dialects import collective, hlo, spmd
from shardc.passes.rewrite_utils import check_option, insert_from, operand_bytes, replace_results
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

TO_START: dict[type[collective.CollectiveOp], type[collective.CollectiveOp]] = dict(
    zip(collective.SYNC_OPS, collective.START_OPS, strict=True)
)
TO_SYNC = {start: sync for sync, start in TO_START.items()}

FREE_OPS = (hlo.ConstantOp, spmd.AxisIndexOp)
"""Ops that take no time: a start/done pair with only these between them overlaps nothing."""


def start_and_done(
    op: collective.CollectiveOp, futures: dict[tuple[Attribute, ...], collective.FutureType] | None
) -> tuple[Operation, collective.DoneOp]:
    """The `_start` form of the sync `op` and the `done` of its future, located where
    `op` is (not inserted). `futures`: future types already made, by the types they hold
    (shared by the ops of one pass: an attribute is immutable)."""
    types = tuple(r.type for r in op.results)
    future = futures.get(types) if futures is not None else None
    if future is None:
        future = collective.FutureType(types)  # pyright: ignore[reportArgumentType]
        if futures is not None:
            futures[types] = future
    start = TO_START[type(op)].create(
        operands=list(op.operands),
        result_types=[future],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
        location=op.location,
    )
    # what `DoneOp(start.results[0])` builds, by `create` (its types are the future's)
    done = collective.DoneOp.create(
        operands=start.results, result_types=types, location=op.location
    )
    return start, done


def split(op: collective.CollectiveOp, rewriter: PatternRewriter) -> collective.DoneOp:
    """Replace the sync `op` by its `_start` and a `done` right after it."""
    start, done = start_and_done(op, None)
    insert_from(rewriter, op, [start, done])
    replace_results(rewriter, op, done.results)
    return done


def split_in_place(
    op: collective.CollectiveOp,
    futures: dict[tuple[Attribute, ...], collective.FutureType] | None = None,
) -> collective.DoneOp:
    """`split` without a pattern rewriter (no listener to tell): what `async-split` does
    to each sync collective, in one walk over the module instead of a pattern walker's
    worklist (at 10k ops the worklist was most of the pass, issue 14 item 7)."""
    start, done = start_and_done(op, futures)
    Rewriter.insert_op([start, done], InsertPoint.before(op))
    for old, new in zip(op.results, done.results, strict=True):
        new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    Rewriter.erase_op(op)
    return done


def join(done: collective.DoneOp, rewriter: PatternRewriter) -> Operation | None:
    """The sync form of `done`'s `_start` if nothing but free ops lies between them."""
    start = done.future.owner
    if not isinstance(start, collective.START_OPS) or start.parent is not done.parent:
        return None
    if not start.results[0].has_one_use():
        return None
    between = start.next_op
    while between is not None and between is not done:
        if not isinstance(between, FREE_OPS):
            return None
        between = between.next_op
    if between is None:
        return None
    sync = TO_SYNC[type(start)].create(
        operands=list(start.operands),
        result_types=[r.type for r in done.results],
        properties=dict(start.properties),
        attributes=dict(start.attributes),
    )
    insert_from(rewriter, start, [sync], InsertPoint.before(done))
    replace_results(rewriter, done, sync.results)
    rewriter.erase(start)
    return sync


@dataclass(frozen=True)
class SplitCollective(RewritePattern):
    """A sync collective of at least `min_bytes` -> `_start` + `done`."""

    min_bytes: int = 0

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: collective.CollectiveOp, rewriter: PatternRewriter) -> None:
        if type(op) in TO_START and operand_bytes(op) >= self.min_bytes:
            split(op, rewriter)


class JoinAdjacentPair(RewritePattern):
    """A `done` with nothing but free ops since its `_start` -> the sync collective."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: collective.DoneOp, rewriter: PatternRewriter) -> None:
        join(op, rewriter)


@dataclass(frozen=True)
class AsyncSplitPass(ModulePass):
    """Sync collectives -> `_start` + `done` pairs, or back (see the module docstring)."""

    name = "async-split"

    inverse: bool = False
    """Join `_start`/`done` pairs with nothing between them into sync collectives."""
    min_bytes: int = 0
    """Collectives with fewer operand bytes stay sync."""

    def __post_init__(self) -> None:
        check_option(self.name, "min-bytes", self.min_bytes >= 0, "at least 0", self.min_bytes)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # one walk: neither rewrite makes an op the other walk could match (a split leaves
        # a start and a done, a join a sync collective: not a `done`, and not a free op
        # that could let another pair join), so the fixpoint's second walk over the whole
        # module would find nothing (issue 14 item 7)
        if self.inverse:
            PatternRewriteWalker(JoinAdjacentPair(), apply_recursively=False).rewrite_module(op)
            return
        # `SplitCollective`'s rewrite on each sync collective (a split changes no other op)
        futures: dict[tuple[Attribute, ...], collective.FutureType] = {}
        for sync in sync_collectives(op):
            if operand_bytes(sync) >= self.min_bytes:
                split_in_place(sync, futures)


def sync_collectives(op: Operation) -> list[collective.CollectiveOp]:
    """The sync collectives with a `_start` form inside `op`, in walk order. A fusion's
    body is not walked: it holds hlo ops only (`hlo.FusionOp`'s verifier), and at 10k ops
    the fusions' bodies were half of the ops a walk visits."""
    found: list[collective.CollectiveOp] = []

    def visit(parent: Operation) -> None:
        for region in parent.regions:
            for block in region.blocks:
                for inner in block.ops:
                    if type(inner) in TO_START:
                        found.append(cast(collective.CollectiveOp, inner))
                    elif inner.regions and not isinstance(inner, hlo.FusionOp):
                        visit(inner)

    visit(op)
    return found
