"""
Level-S collectives in a `lower-to-tpu` kernel: which axes (or device groups) each one
runs over, which algorithm lowers it (`all_gather`, `reduce_scatter`, `all_reduce`,
`all_to_all`, `permute`), and the split of a `_start` / `done` pair.

Every collective gets its own semaphores and VMEM scratch (VMEM is released with
`tpu.dealloc` at its end), and every SSA value its own HBM buffer, so a collective never
writes into a buffer a neighbour still reads for another purpose. Several mesh axes
(`on @m["a", "b"]`) are one ring phase per axis, axes of size 1 skipped; device groups
(`on groups [[..]]`), and permute / all_to_all over several mesh axes, are a ring over
each group in rank order (one way: its members need not be torus neighbours).

A `_start` (with `interleave`, the default) is emitted whole, its ring steps unrolled, and
cut into chunks (`ring_steps`): the first DMAs start at the `_start`, the later steps are
interleaved into the tiled loops of the compute before the `done` where the cost model
says their transfers have finished, the rest run at the `done`; multi-axis and
bidirectional collectives alike. Without `interleave` (the pass option `interleave=false`,
what came before) a `_start` emits what its algorithm may issue early and hands the rest
(its waits, later ring steps) to the matching `done`; multi-axis `_start`s run whole at
the `_start`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from shardc.diagnostics import OpPassError
from shardc.dialects import collective
from shardc.hardware.cost import CostModel, pair_operands
from shardc.hardware.vmem import start_budget
from shardc.lowering.all_gather import multi_all_gather
from shardc.lowering.all_reduce import all_reduce
from shardc.lowering.all_to_all import all_to_all
from shardc.lowering.context import Target
from shardc.lowering.emit import Emitter, local_copy
from shardc.lowering.permute import permute
from shardc.lowering.reduce_scatter import multi_reduce_scatter
from shardc.lowering.ring_steps import Overlap, chunk_times, split_steps
from shardc.lowering.tile_plan import vmem_in_use
from shardc.lowering.topology import Axis, Topology
from shardc.passes.step_estimate import collective_slack
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Block, Operation, SSAValue


class CollectiveLowering:
    """The collectives of one kernel, emitted by `e` over `topology`."""

    def __init__(self, e: Emitter, topology: Topology, target: Target, interleave: bool = True):
        self.e = e
        self.topology = topology
        self.target = target
        self.overlap: Overlap | None = Overlap() if interleave else None
        """The `_start`s' pending ring steps (None: the old split at the `done`)."""
        self.cost = CostModel(target.chip, topology.mesh)
        self.pending: dict[SSAValue, list[Operation]] = {}
        """future -> ops to emit at its `done`."""
        self.start_results: dict[Operation, list[SSAValue]] = {}
        """`_start` -> the buffers it wrote (its `done`'s results')."""
        self.slack: dict[Block, dict[Operation, float]] = {}
        """Per level-S block: each collective's slack (`step_estimate.collective_slack`)."""

    def lower(self, op: collective.CollectiveOp, buffers: Mapping[SSAValue, SSAValue]) -> None:
        """Lower `op` (a collective or a `_start`) on the HBM `buffers` of its values."""
        if op.IS_START:
            (done,) = [u.operation for u in op.results[0].uses]
            outs = [buffers[r] for r in done.results]
            self.start_results[op] = outs
        else:
            outs = [buffers[r] for r in op.results]
        ins = [buffers[v] for v in op.operands]
        if op.explicit_groups is not None or (
            len(op.axes) > 1 and isinstance(op, collective.PermuteBase | collective.AllToAllBase)
        ):
            axes = [self.topology.group_axis(op)]
        else:
            axes = [self.topology.axis(op, a) for a in op.axes]
        if op.IS_START and self.overlap is not None:
            self._interleaved(op, axes, ins, outs, self.overlap)
            return
        deferred: list[Operation] | None = [] if op.IS_START else None
        for i, (x, out) in enumerate(zip(ins, outs, strict=True)):
            self._operand(op, axes, x, out, deferred, self.e, i)
        if deferred is not None:
            self.pending[op.results[0]] = deferred

    def _interleaved(
        self,
        op: collective.CollectiveOp,
        axes: list[Axis],
        ins: list[SSAValue],
        outs: list[SSAValue],
        overlap: Overlap,
    ) -> None:
        """
        A `_start` emitted whole, steps unrolled, cut into chunks for `overlap`. Its
        VMEM is held until the `done`, across the compute in between, and several may
        be in flight: each takes its share of the collectives' half of the VMEM
        (`hardware.vmem.start_budget`, the budget level S charges its pieces by; its
        reduce-scatter pieces shrink to fit), or if that is too little for it, all of
        it as without interleaving.
        """
        budget = start_budget(self.target.vmem_bytes, vmem_in_use(self.e.block))
        try:
            body = self._whole(op, axes, ins, outs, replace(self.target, vmem_bytes=budget))
        except OpPassError:
            body = self._whole(op, axes, ins, outs, self.target)
        steps = split_steps(body)
        times = chunk_times(self.target.chip, steps.chunks, self.cost.collective_time(op))
        overlap.start(op.results[0], self.e, steps, times, self._slack(op))

    def _slack(self, op: collective.CollectiveOp) -> float:
        """How much later `op` may end than level S has it without a later step
        (`step_estimate.collective_slack` of its block, computed once per block)."""
        block = op.parent_block()
        if block is None:
            return 0.0
        if block not in self.slack:
            self.slack[block] = collective_slack(block.ops, self.cost)
        return self.slack[block].get(op, 0.0)

    def _whole(
        self,
        op: collective.CollectiveOp,
        axes: list[Axis],
        ins: list[SSAValue],
        outs: list[SSAValue],
        target: Target,
    ) -> list[Operation]:
        """The ops of `op` (every step unrolled) in a detached block, for `target`."""
        body = Emitter(Block())
        body.unroll = True
        outer, self.target = self.target, target
        try:
            for i, (x, out) in enumerate(zip(ins, outs, strict=True)):
                self._operand(op, axes, x, out, None, body, i)
        finally:
            self.target = outer
        return body.detach_all()

    def done(self, op: collective.DoneOp, buffers: Mapping[SSAValue, SSAValue]) -> None:
        """The rest of the `_start` whose future `op` waits for."""
        start = op.future.owner
        assert isinstance(start, Operation)
        for later in self.pending.pop(op.future, []):
            self.e.op(later)
        if self.overlap is not None:
            self.overlap.done(op.future, self.e)
        for r, v in zip(op.results, self.start_results[start], strict=True):
            if buffers[r] is not v:
                # The _start wrote into its own buffers (not the done's): copy.
                local_copy(self.e, v, buffers[r], "done")

    def _operand(
        self,
        op: collective.CollectiveOp,
        all_axes: list[Axis],
        x: SSAValue,
        out: SSAValue,
        deferred: list[Operation] | None,
        e: Emitter,
        index: int = 0,
    ) -> None:
        """
        Lower operand `index` of `op` with `e`. `deferred` (for a `_start`): ops to emit
        at the `done` instead of here (the waits, and for all_gather every step after the
        first). Several axes: one ring phase per axis (axes of size 1 are skipped). A
        complex operand's parts' view under mul / max / min combines its (re, im) pairs
        as complex numbers (`cost.pair_operands`, lowering/pair_combine.py).
        """
        pairs = index in pair_operands(op)
        axes = [a for a in all_axes if a.size > 1]
        if not axes:
            local_copy(e, x, out, "copy")
            return
        if len(axes) > 1:
            deferred = None  # multi-phase collectives run whole at their _start
        topo, target = self.topology, self.target
        if isinstance(op, collective.AllGatherBase):
            dim = op.dim.value.data
            xt = x.type
            assert isinstance(xt, MemRefType)
            multi_all_gather(topo, e, [axes], x, [out], dim, xt.get_shape()[dim], deferred)
        elif isinstance(op, collective.ReduceScatterBase):
            dim = op.dim.value.data
            ot = out.type
            assert isinstance(ot, MemRefType)
            k = ot.get_shape()[dim]
            multi_reduce_scatter(topo, target, e, op, axes, x, dim, k, out, deferred, pairs)
        elif isinstance(op, collective.AllReduceBase):
            all_reduce(topo, target, e, op, axes, x, out, deferred, pairs)
        elif isinstance(op, collective.PermuteBase):
            permute(topo, target, e, op, axes[0], x, out, deferred)
        elif isinstance(op, collective.AllToAllBase):
            all_to_all(topo, e, op, axes[0], x, out, deferred)
        else:
            raise AssertionError(op.name)
