"""
`spmd-pipeline{chip= memory-limit= combine-threshold-bytes= collective-matmul=true
combine=true reassociate=true micro-batch=true fusion=true schedule=true}`: from a global
program to the optimized, scheduled per-device program, never slower than the partitioned
program with plain sync collectives by the cost model.

The order is the data flow, each pass needing what the one before made:

1. `spmd-propagate`, `spmd-partition`: the per-device program with sync collectives;
2. `canonicalize`, `cse`: fold what partitioning left (index arithmetic, identical reshards);
3. `reduce-scatter-create`, `all-gather-slice-simplify`, `all-reduce-reassociate`: fewer,
   smaller collectives (cleanups of patterns partitioning and users write);
4. `collective-combine`: merge independent collectives of one kind — before async-split,
   which only wraps what is left;
5. `collective-matmul`: overlap an all_gather feeding a dot (or a dot feeding a
   reduce_scatter) with the dot itself, by decomposition into permutes;
6. `micro-batch`: where the cost model says it pays, cut the program into chunks along a
   dimension that flows through its collectives (the batch), so that one chunk's
   collective overlaps the next chunk's compute (tensor parallelism: the all_reduce after
   each row-parallel dot). After `collective-combine`, which can merge the chunks'
   collectives back together after the estimate counted on them apart (run before it,
   `dp_grads large` in bench/overlap.py is 3-4% slower), and after `collective-matmul`,
   whose rings it can cut too (its estimate sees them); before `async-split`, since it
   splits sync collectives and estimates each choice by running async-split and the
   scheduler on a copy;
7. `fusion` (`fusion=false` skips it): elementwise chains, reductions and dot epilogues
   as fused ops, costed by the bytes crossing them; after micro-batch (which cuts the
   unfused ops) and before async-split, so that the scheduler sees the fusions;
8. `async-split`, `schedule`: every collective as start/done, ordered by the cost model so
   communication hides behind independent compute.

`bench/overlap.py` measures the result against synchronous collectives and the roofline.
On a level-S program (already partitioned) steps 1 skip it and the rest apply.

Gates (issue 14 item 3, as XLA gates windowed einsum by size). Every optional step is
applied to a copy of the module and kept only if the cost model's step estimate
(`step_estimate.module_step_time`: per function, the better of the scheduled order and the
order as written) of the copy is not above that of the module: `all-reduce-reassociate`,
`collective-combine` (its own overlap-aware policy, then XLA's merge-what-is-independent on
top of it, each gated) and `micro-batch` when it does not get slower, `collective-matmul`
only when it gets faster (more ops for nothing otherwise). `schedule` is gated per
function: where the scheduled order is slower than the order as written, the written one
(each collective's `done` right after its start: synchronous) is put back. The estimate
is carried from one gated step to the next (`Gate`), so each costs one copy and one
estimate of its result, and nothing where the pass would change nothing (reassociate,
combine and collective-matmul say so first: `any_match`; micro-batch plans on the module
itself): compile time stays linear in the program (bench/partition_speed.py --pipeline).
`collective-matmul` runs with the cost model, so it builds rings only where one may pay. The estimate charges what the interpreter's timeline charges
(`interpreter.timing`), so the step the pipeline settles on is what `shardc-run
--timing-only` reports (tests/e2e/test_pipeline_never_slower.py checks both, on generated
programs, the examples and the JAX corpus). Each optional step has an option to switch it
off (`schedule=false` leaves the collectives synchronous: no `async-split` either).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import cast

from shardc.dialects import collective
from shardc.dialects.spmd import find_mesh
from shardc.hardware.chips import CHIPS, get_chip
from shardc.hardware.cost import CostModel, cached
from shardc.parsing import cyclic_gc_paused
from shardc.passes.all_gather_slice_simplify import AllGatherSliceSimplifyPass
from shardc.passes.all_reduce_reassociate import AllReduceReassociatePass
from shardc.passes.async_split import AsyncSplitPass
from shardc.passes.block_order import set_order
from shardc.passes.collective_combine import CollectiveCombinePass
from shardc.passes.collective_matmul import CollectiveMatmulPass
from shardc.passes.fusion import FusionPass, fuse_function
from shardc.passes.micro_batch import FusedView, MicroBatchPass
from shardc.passes.module_copy import copy_op
from shardc.passes.reduce_scatter_create import ReduceScatterCreatePass
from shardc.passes.rewrite_utils import check_option
from shardc.passes.schedule import SchedulePass, ScheduleStuck, sync_peak
from shardc.passes.spmd_partition import SpmdPartitionPass
from shardc.passes.spmd_propagate import SpmdPropagatePass
from shardc.passes.step_estimate import (
    OpCosts,
    StepGraph,
    module_step_time,
    program_order_time,
)
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination


@dataclass(frozen=True)
class SpmdPipelinePass(ModulePass):
    """The passes of the module docstring, in its order."""

    name = "spmd-pipeline"

    chip: str = "v5e"
    """The chip whose cost model drives the scheduler."""
    memory_limit: int | None = None
    """Passed to `schedule`."""
    combine_threshold_bytes: int = 32 * 1024 * 1024
    """Passed to `collective-combine`."""
    micro_batch: bool = True
    """Run `micro-batch` (false: leave the program unsplit)."""
    collective_matmul: bool = True
    """Run `collective-matmul` (gated: kept only where the step gets faster)."""
    combine: bool = True
    """Run `collective-combine` (gated: kept only where the step does not get slower)."""
    reassociate: bool = True
    """Run `all-reduce-reassociate` (gated as `combine`)."""
    schedule: bool = True
    """Run `async-split` and `schedule` (gated per function: the program order is kept
    where the scheduled order would be slower); false leaves collectives synchronous."""
    fusion: bool = True
    """Run `fusion` (false: every op its own kernel, as level T lowers them today)."""

    def __post_init__(self) -> None:
        # The pipeline's own options first (so a bad one names this pipeline), then building
        # the passes checks theirs: a bad one is a bad pipeline when it is parsed, not a
        # failure halfway through the run.
        check_option(
            self.name, "chip", self.chip in CHIPS, f"one of {', '.join(CHIPS)}", f"'{self.chip}'"
        )
        self.passes()

    def partitioning_passes(self) -> list[ModulePass]:
        """Steps 1-4: the collectives partitioning decides, cleaned up and combined."""
        return [
            SpmdPropagatePass(),
            SpmdPartitionPass(chip=self.chip),
            CanonicalizePass(),
            CommonSubexpressionElimination(),
            ReduceScatterCreatePass(),
            AllGatherSliceSimplifyPass(),
            *([AllReduceReassociatePass()] if self.reassociate else []),
            *(
                [
                    CollectiveCombinePass(
                        threshold_bytes=self.combine_threshold_bytes, chip=self.chip
                    )
                ]
                if self.combine
                else []
            ),
        ]

    def passes(self) -> list[ModulePass]:
        return [
            *self.partitioning_passes(),
            *([CollectiveMatmulPass(chip=self.chip)] if self.collective_matmul else []),
            *(
                [MicroBatchPass(chip=self.chip, memory_limit=self.memory_limit, fused=self.fusion)]
                if self.micro_batch
                else []
            ),
            *([FusionPass(chip=self.chip)] if self.fusion else []),
            *(
                [AsyncSplitPass(), SchedulePass(memory_limit=self.memory_limit, chip=self.chip)]
                if self.schedule
                else []
            ),
        ]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.run(ctx, op)

    def run(
        self,
        ctx: Context,
        op: ModuleOp,
        after: Callable[[ModulePass], None] | None = None,
        before: Callable[[ModulePass], None] | None = None,
    ) -> None:
        """`apply`, calling `before(p)` and `after(p)` around each pass `p` (the driver
        verifies and reports each pass; bench/partition_speed.py times them)."""
        gate = Gate(cached(CostModel(get_chip(self.chip), find_mesh(op))), self.memory_limit)
        with _survivors_frozen() as freeze:
            for p in self.passes():
                if before is not None:
                    before(p)
                # Python's cyclic collector, left to itself, walks the whole (large) IR
                # again and again while a pass allocates; once per pass is enough to free
                # what the pass and its gate's discarded copies left, and keeps compile time
                # linear.
                with cyclic_gc_paused():
                    self.run_one(p, gate, ctx, op)
                gc.collect(0)  # the young objects: what this pass made (the heap is not walked)
                freeze()
                if after is not None:
                    after(p)

    @staticmethod
    def run_one(p: ModulePass, gate: Gate, ctx: Context, op: ModuleOp) -> None:
        """One pass of the pipeline, behind its gate if it has one."""
        if isinstance(p, CollectiveMatmulPass):
            # the pipeline's gate instead of the pass's own (one estimate, not two), and
            # no copy at all where no site's ring may pay
            # (its rings are new ops; the ops it keeps read the same types: costed as they
            # were, `keeps_ops`)
            if p.any_match(op, gate.model):
                gate.run(lambda m, _: p.rewrite(m, gate.model), op, strict=True, keeps_ops=True)
        elif isinstance(p, MicroBatchPass):
            # planned on the module itself (its estimates leave it as it was); the copy
            # only if a split is planned
            plans, fused = p.plans_and_view(op, gate.model, gate.known_costs)
            if plans:
                # with `fused`, both sides judged as fusion will leave them (issue 14)
                view = (lambda m: fused_copy(m, gate.model)) if p.fused else None
                gate.run(lambda m, _: p.split(m, plans), op, strict=False, view=view)
            else:
                gate.fused = fused  # the module unchanged: its fused copy is fusion's result
        elif isinstance(p, FusionPass) and gate.fused is not None:
            # what `fusion` would make of the module, made already (micro-batch's view,
            # fused with the estimates' model: fusion's choices are compute costs, which
            # the mesh does not change); tests/e2e/test_micro_batch.py pins it. Its ops
            # become the module's, costed already by micro-batch's estimates.
            view = gate.fused
            _take_body(op, view.module)
            gate.forget(costs=view.costs, graphs=view.graphs)
        elif isinstance(p, AsyncSplitPass):
            # new `_start`s and `done`s for the sync collectives, their uses re-pointed at
            # values of the same types: the costs of the ops it keeps hold (`schedule`'s)
            p.apply(ctx, op)
            gate.forget(costs=gate.known_costs, graphs=gate.known_graphs)
        elif isinstance(p, CollectiveCombinePass) and p.overlap_aware:
            # its own policy first, then XLA's (merge whatever is independent) on top of
            # it, each kept only where the step does not get slower: the gate, not the
            # pass's guard, has the last word (a loss all_reduce merged with the gradient
            # all_reduces saves a latency XLA saves too)
            # A plan the gate refused is not tried again: XLA's variant often plans the
            # very groups the first one did (the module unchanged, the same copy, the same
            # estimate, refused again: at 10k ops a third of the pass, issue 14 item 7).
            # The plans cost ops as the gate does, by op (the gate's model is the pass's
            # when the module's mesh is the one the pipeline started with).
            # Where the first policy's guard refused no merge and the module is as it was
            # (nothing kept), XLA's plan is that very plan: not planned again.
            refused: list[tuple[Block, list[list[Operation]]]] | None = None
            costs = gate.costs() if find_mesh(op) == gate.model.mesh else None
            plan, guarded = p.guarded_plan(op, costs)  # planned once: applied to the copy
            for variant in (p, replace(p, overlap_aware=False)):
                if variant is not p:
                    if _planned_already(guarded, plan, refused):
                        break
                    plan = variant.plan(op, costs)
                if plan and not _same_plan(plan, refused):
                    kept = gate.run(
                        lambda m, twins, pl=plan: p.apply_plan(pl, twins),
                        op,
                        strict=False,
                        keeps_ops=True,
                    )
                    refused = None if kept else plan  # pyright: ignore[reportAssignmentType]
                    costs = gate.costs() if costs is not None else None  # the module's now
        elif isinstance(p, AllReduceReassociatePass | CollectiveCombinePass):
            if p.any_match(op):  # else no copy, no estimate
                gate.run(lambda m, _: p.apply(ctx, m), op, strict=False)
        elif isinstance(p, GATED):
            gate.run(lambda m, _: p.apply(ctx, m), op, strict=False)
        elif isinstance(p, SchedulePass):
            gate.schedule(p, ctx, op)
        else:
            p.apply(ctx, op)
            gate.forget()


GATED = (AllReduceReassociatePass, CollectiveCombinePass, MicroBatchPass)
"""Passes `spmd-pipeline` keeps only where the step does not get slower (with
`collective-matmul`: only where it gets faster, and `schedule`: per function). `fusion`
needs no gate: a fusion's cost is at most the sum of its ops' (the same FLOPs, fewer
bytes), it only contracts a chain of ops with one result (a value a collective reads stays
a result of its own), so no collective is issued later than before; the property test
(tests/e2e/test_pipeline_never_slower.py) holds it to that."""


class Gate:
    """
    The estimate of the module as it stands (`step_estimate.module_step_time`), carried
    from one gated pass to the next, so that each costs one estimate (of its result) and
    one copy of the module: linear in the program, not one estimate per candidate.
    """

    def __init__(self, model: CostModel, memory_limit: int | None):
        self.model = cached(model)
        self.memory_limit = memory_limit
        self.known: float | None = None
        """The estimate of the module as it is now; None after an ungated pass."""
        self.fused: FusedView | None = None
        """A copy of the module as it is now as `fusion` would leave it, if one was made
        (by `micro-batch`, for its estimates, when it split nothing), and its costs."""
        self._costs: OpCosts | None = None
        """The costs of the module's ops as they are now, by op (`step_estimate.OpCosts`):
        a pass's plans and estimates cost each op once; None after a pass changed ops."""
        self.known_graphs: dict[Block, StepGraph] = {}
        """`StepGraph`s of blocks of the module built by an estimate (micro-batch's, of
        fusion's result), kept through `async-split` for `schedule`
        (`StepGraph.after_split` checks that a block is still the graph's)."""

    def forget(
        self, costs: OpCosts | None = None, graphs: dict[Block, StepGraph] | None = None
    ) -> None:
        """Forget what is known of the module, a pass having changed it; `costs`: the
        costs of its ops as they are now (of this model, by op), where known: a pass that
        made the module of the ops these costed, or only added and erased ops; `graphs`:
        `known_graphs`, where known."""
        self.known = None
        self.fused = None
        self._costs = costs
        self.known_graphs = graphs if graphs is not None else {}

    @property
    def known_costs(self) -> OpCosts | None:
        """The costs of the module's ops remembered so far, if any."""
        return self._costs

    def costs(self) -> CostModel:
        """The gate's model with the costs of the module's ops as they are now remembered."""
        if self._costs is None:
            self._costs = OpCosts(self.model)
        return cast(CostModel, self._costs)

    def estimate(self, module: ModuleOp, costs: OpCosts | None = None) -> float:
        return module_step_time(module, costs or self.model, self.memory_limit)

    def run(
        self,
        transform: Callable[[ModuleOp, dict[Operation, Operation]], None],
        op: ModuleOp,
        strict: bool,
        view: Callable[[ModuleOp], ModuleOp] | None = None,
        keeps_ops: bool = False,
    ) -> bool:
        """Apply `transform` (a pass) to a copy of `op` (given the copy and each op of `op`
        mapped to its copy); keep the copy only if its step is no slower (with `strict`:
        faster); whether it was kept. With `view`, both are judged by the estimates of
        `view(op)` and `view(copy)` (micro-batch: as fusion will leave them), and what is
        known is forgotten (it is the view's). With `keeps_ops` (the transform adds and
        erases ops but changes none it keeps, re-pointing uses at values of the same types
        at most: `collective-combine`, `collective-matmul`), the copy's ops are costed as
        `op`'s were (`OpCosts.moved`), not again: `op` is estimated first (if its estimate
        is not known), so that every op's costs are known to be carried."""
        self.fused = None
        self.known_graphs = {}
        twins: dict[Operation, Operation] = {}
        candidate = copy_op(op, op_mapper=twins)
        moved = None
        if keeps_ops and view is None:
            costs = cast(OpCosts, self.costs())
            if self.known is None:
                self.known = self.estimate(op, costs)
            moved = costs.moved(twins)
        transform(candidate, twins)
        if _same_ops(op, candidate):
            return False  # nothing to gate: the pass changed nothing (`known` still holds)
        if view is not None:
            keep = self.estimate(view(candidate)) <= self.estimate(view(op))
            if keep:
                _take_body(op, candidate)
            self.forget()
            return keep
        before = self.known if self.known is not None else self.estimate(op, self._costs)
        after = self.estimate(candidate, moved)
        if after < before or (after == before and not strict):
            _take_body(op, candidate)
            self.known, self._costs = after, moved  # the candidate's ops are the module's
            return True
        self.known = before
        return False

    def schedule(self, p: SchedulePass, ctx: Context, op: ModuleOp) -> None:
        """Schedule; a function whose scheduled order is slower gets its order back (if
        that order fits the memory limit: the schedule's does)."""
        if not self._schedule_by_graph(p, op):
            self._schedule_ops(p, ctx, op)
        self.forget()

    def _schedule_by_graph(self, p: SchedulePass, op: ModuleOp) -> bool:
        """
        `_schedule_ops` without a memory limit: the scheduler's order and both orders'
        times from one `StepGraph` per block (the ops costed once, no live bytes tracked:
        at 10k ops a third of `schedule`'s time, issue 14 item 7), the same orders (the
        pass's own model is the gate's when the mesh is the one the pipeline started
        with). False, changing nothing, where it cannot (a memory limit, a report, a
        block with a sync collective or on which the scheduler is stuck).
        """
        if p.memory_limit is not None or p.report or p.max_in_flight < 1:
            return False
        if find_mesh(op) != self.model.mesh:
            return False
        costs = self._costs if self._costs is not None else OpCosts(self.model)
        planned: list[tuple[Block, list[Operation] | None]] = []
        for f in op.body.block.ops:
            if not isinstance(f, func.FuncOp):
                continue
            for block in f.body.blocks:
                known = self.known_graphs.get(block)
                graph = known.after_split(block) if known is not None else None
                if graph is None:
                    graph = StepGraph(block, cast(CostModel, costs), costs.times)
                if graph.split:
                    return False
                try:
                    order = graph.order(p.max_in_flight) if graph.kind else []
                except ScheduleStuck:
                    return False
                # a single-block function keeps its order where the schedule is slower
                slower = (
                    len(f.body.blocks) == 1
                    and bool(order)
                    and graph.scheduled_time(p.max_in_flight) > graph.written_time()
                )
                planned.append((block, None if slower else [graph.ops[n] for n in order]))
        for block, order in planned:
            if order is not None:
                set_order(block, order)
        return True

    def _schedule_ops(self, p: SchedulePass, ctx: Context, op: ModuleOp) -> None:
        """`schedule` by the pass itself, then the written order back where it is faster."""
        written = {
            f: list(f.body.block.ops)
            for f in op.body.block.ops
            if isinstance(f, func.FuncOp) and len(f.body.blocks) == 1
        }
        p.apply(ctx, op)
        for f, order in written.items():
            block = f.body.block
            scheduled = list(block.ops)
            memo: dict[Operation, float] = {}  # the same ops in both orders: costed once
            written_time = program_order_time(order, self.model, memo)
            if program_order_time(scheduled, self.model, memo) > written_time:
                set_order(block, order)
                if self.memory_limit is not None and sync_peak(block) > self.memory_limit:
                    set_order(block, scheduled)


@contextmanager
def _survivors_frozen() -> Iterator[Callable[[], None]]:
    """
    Yields a function that moves every object the collector tracks out of its generations
    (`gc.freeze`), called after each pass's young collection; all are given back to the
    oldest generation at the end (`gc.unfreeze`). Without it, what each pass builds (the new
    IR: millions of objects at 50k ops) survives its young collection into the middle
    generation, and every tenth collection walks all of it again (at 50k ops about 5% of
    the pipeline's time, in one pass or another: issue 14 item 7). What a later pass erases
    of a frozen op is freed after the pipeline (with the caller's next full collection),
    not during it. A caller that froze objects of its own, or runs without the collector,
    gets the collections as they were.
    """
    if gc.get_freeze_count() or not gc.isenabled():
        yield lambda: None
        return
    gc.freeze()  # the input module (parsed with the collector paused: all young)
    try:
        yield gc.freeze
    finally:
        gc.unfreeze()


def fused_copy(module: ModuleOp, model: CostModel) -> ModuleOp:
    """A copy of `module` as `fusion` leaves it (micro-batch's gate judges by it)."""
    copy = copy_op(module)
    for function in list(copy.walk()):
        if isinstance(function, func.FuncOp):
            fuse_function(function, model)
    return copy


def _planned_already(
    guarded: bool,
    plan: list[tuple[Block, list[list[collective.CollectiveOp]]]],
    refused: list[tuple[Block, list[list[Operation]]]] | None,
) -> bool:
    """Whether XLA's `collective-combine` would plan what was planned (`plan`) again: the
    overlap-aware plan's guard refused no merge (`guarded` false: the two plans are the
    same) and the module is as it was planned on (the plan refused, or nothing planned)."""
    return not guarded and (refused is not None or not plan)


def _same_plan(
    plan: list[tuple[Block, list[list[collective.CollectiveOp]]]],
    other: list[tuple[Block, list[list[Operation]]]] | None,
) -> bool:
    """Whether `plan` merges the very groups `other` did (the same op objects, in order)."""
    if other is None or len(plan) != len(other):
        return False
    return all(
        b is c and len(gs) == len(hs) and all(map(_same_list, gs, hs))
        for (b, gs), (c, hs) in zip(plan, other, strict=True)
    )


def _same_list(a: list[collective.CollectiveOp], b: list[Operation]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def _same_ops(a: ModuleOp, b: ModuleOp) -> bool:
    """Whether the two modules have the same ops with the same result types, in order (a
    pass that changed nothing; cheaper than an estimate)."""
    for x, y in zip(a.walk(), b.walk(), strict=False):
        if x.name != y.name or x.result_types != y.result_types:
            return False
    return sum(1 for _ in a.walk()) == sum(1 for _ in b.walk())


def _take_body(module: ModuleOp, candidate: ModuleOp) -> None:
    """
    Replace `module`'s ops by `candidate`'s (moved, not copied). The old ops are detached,
    not erased: nothing outside them reads their values (the candidate is a copy with
    values of its own), and erasing drops every reference of every op inside (at 50k ops
    about 0.1 s per gate, issue 14 item 7) without freeing anything: an op and its results
    refer to each other either way, so the cyclic collector frees them (the pipeline froze
    them: after it, `_survivors_frozen`).
    """
    block = module.body.block
    for old in list(block.ops):
        block.detach_op(old)
    for new in list(candidate.body.block.ops):
        block.add_op(candidate.body.block.detach_op(new))
