"""
`collective-combine{threshold-bytes= max-count=}`: merge independent collectives of one
kind into one variadic collective (XLA's AllReduce/AllGather/ReduceScatterCombiner).

A collective has a fixed latency whatever its size, so one combined op beats many small
ones. Two collectives combine only when their key matches (op, reduction kind, groups,
gather/scatter dimension, element type) and neither depends on the other; a group never
exceeds `threshold-bytes` of operands or `max-count` ops, and an op bigger than the
threshold alone is left as it is. Greedy in program order, like XLA's
CombineInstructionsByKey; a merge that would make two groups depend on each other (a
cycle once merged) is refused (`MergedGraph`). The block is then re-ordered (a stable topological sort) so that
every combined op comes after its operands and before its users.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass, field

from shardc.dialects import collective, hlo
from shardc.dialects.sizes import tensor_bytes
from shardc.dialects.spmd import find_mesh
from shardc.dialects.syntax import i64_attr
from shardc.hardware.chips import UnknownChipError, get_chip
from shardc.hardware.cost import CostModel, cached
from shardc.passes.block_order import (
    control_predecessors,
    merge_control_attributes,
    topological_reorder,
    used_values,
)
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

COMBINABLE = (collective.AllReduceOp, collective.AllGatherOp, collective.ReduceScatterOp)
ALIGNABLE = (collective.AllGatherOp, collective.ReduceScatterOp)
"""Collectives along one dimension: with `align-dims`, different dimensions merge."""


def combine_key(op: collective.CollectiveOp, align_dims: bool = False) -> Hashable:
    """
    What must agree for two collectives to become one. With `align_dims`, all_gathers
    (and reduce_scatters) on different dimensions may merge too (aligned by transposes,
    see `combine`).
    """
    props = op.properties
    dtypes = tuple(t.element_type for t in op.input_types())
    same_dim = not (align_dims and isinstance(op, ALIGNABLE))
    return (
        op.name,
        props.get("kind"),
        props.get("dim") if same_dim else None,
        props.get("mesh"),
        props.get("mesh_axes"),
        props.get("groups"),
        dtypes[0] if len(set(dtypes)) == 1 else dtypes,
    )


def operand_bytes(op: Operation) -> int:
    total = 0
    for value in op.operands:
        ty = value.type
        assert isinstance(ty, TensorType)
        total += tensor_bytes(ty)
    return total


@dataclass
class Group:
    ops: list[collective.CollectiveOp] = field(default_factory=list[collective.CollectiveOp])
    mask: int = 0
    bytes: int = 0
    deps: int = 0
    """The collectives its members depend on (transitively, before any merge)."""


@dataclass
class MergedGraph:
    """
    The dependencies between collectives once the planned groups are merged: a merged op
    depends on whatever any of its members depends on. A merge that makes a collective
    depend on its own group (through another group: XLA's cross-group cycle, a1 -> b1
    and b2 -> a1 planned as {a1, a2} and {b1, b2} with a2 -> b1) would leave no order in
    which to place the merged ops, so `would_cycle` refuses it.
    """

    masks: dict[Operation, int]
    group_of: dict[int, Group] = field(default_factory=dict[int, Group])
    merged: int = 0
    """The collectives in a group of two or more."""

    def join(self, group: Group, op: collective.CollectiveOp, bit: int) -> None:
        group.ops.append(op)
        group.mask |= bit
        group.deps |= self.masks[op]
        self.group_of[bit.bit_length() - 1] = group
        if len(group.ops) > 1:
            self.merged |= group.mask

    def depends_on(self, op: Operation) -> int:
        """The collectives `op` depends on once the planned groups are merged."""
        seen = self.masks[op]
        frontier = seen & self.merged
        while frontier:
            new = 0
            groups = {id(g): g for i in _bits(frontier) if (g := self.group_of.get(i))}
            for g in groups.values():
                new |= g.mask | g.deps
            new &= ~seen
            seen |= new
            frontier = new & self.merged
        return seen

    def would_cycle(self, group: Group, op: Operation, bit: int) -> bool:
        """
        Whether `op` joining `group` closes a cycle. Ops are planned in program order, so
        no planned op depends on `op`: only `op` depending on the group can.
        """
        return bool(self.depends_on(op) & ~bit & group.mask)


def _bits(mask: int) -> Iterator[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def dependency_masks(block: Block, index: dict[Operation, int]) -> dict[Operation, int]:
    """For each op, a bit set of the collectives (by `index`) it depends on, transitively."""
    masks: dict[Operation, int] = {}
    control = control_predecessors(block)
    for op in block.ops:
        mask = 0
        for value in used_values(op):
            owner = value.owner
            if isinstance(owner, Operation) and (found := masks.get(owner)):
                # `|` makes a new int even when one side is 0: reuse the one set instead,
                # or every op of a long chain copies a mask as long as the chain's
                # collectives (quadratic; issue 14 item 7)
                mask = found if not mask or mask is found else mask | found
        for pred in control.get(op, ()):
            if found := masks.get(pred, 0):
                mask = found if not mask or mask is found else mask | found
        if op in index:
            mask |= 1 << index[op]
        masks[op] = mask
    return masks


@dataclass
class OverlapGuard:
    """
    Keeps the combiner from destroying overlap, using the cost model: a collective joins a
    group only if (1) the compute between the group's first member and it takes no longer
    than the latency combining saves (else the earlier members would start late), and (2)
    no member's result is used before it (else that user would wait for the whole group).
    """

    clock: dict[Operation, float]
    first_use: dict[Operation, int]
    position: dict[Operation, int]
    model: CostModel
    refused: bool = False
    """Whether `allows` refused a merge (else the plan is the one without the guard)."""

    @staticmethod
    def for_block(block: Block, model: CostModel) -> OverlapGuard:
        clock: dict[Operation, float] = {}
        position: dict[Operation, int] = {}
        now = 0.0
        for i, op in enumerate(block.ops):
            clock[op], position[op] = now, i
            if not isinstance(op, collective.CollectiveOp) and op.name.startswith("hlo."):
                now += model.op_cost(op).time
        first_use = {
            op: min(
                (
                    position[u.operation]
                    for r in op.results
                    for u in r.uses
                    if u.operation in position
                ),
                default=len(position),
            )
            for op in block.ops
            if isinstance(op, COMBINABLE)  # `allows` asks only for members of a group
        }
        return OverlapGuard(clock, first_use, position, model)

    def allows(self, group: Group, op: collective.CollectiveOp) -> bool:
        saved = self.model.collective_latency(op)
        if self.clock[op] - self.clock[group.ops[0]] > saved or not all(
            self.first_use[m] > self.position[op] for m in group.ops
        ):
            self.refused = True
            return False
        return True


def plan_groups(
    block: Block,
    threshold_bytes: int,
    max_count: int,
    guard: OverlapGuard | None = None,
    align_dims: bool = False,
) -> list[list[collective.CollectiveOp]]:
    candidates = [op for op in block.ops if isinstance(op, COMBINABLE)]
    index = {op: i for i, op in enumerate(candidates)}
    masks = dependency_masks(block, index)
    graph = MergedGraph(masks)
    open_groups: dict[Hashable, Group] = {}
    done: list[list[collective.CollectiveOp]] = []
    for op in candidates:
        size = operand_bytes(op)
        if size > threshold_bytes:
            continue
        key = combine_key(op, align_dims)
        group = open_groups.get(key)
        bit = 1 << index[op]
        if group is not None and (
            masks[op] & group.mask
            or group.bytes + size > threshold_bytes
            or len(group.ops) >= max_count
            or (guard is not None and not guard.allows(group, op))
            or graph.would_cycle(group, op, bit)
        ):
            done.append(group.ops)
            group = None
        if group is None:
            group = open_groups[key] = Group()
        graph.join(group, op, bit)
        group.bytes += size
    done.extend(g.ops for g in open_groups.values())
    return [g for g in done if len(g) > 1]


def gather_dim(ops: list[collective.CollectiveOp]) -> int:
    """
    The dimension a merged all_gather gathers (or reduce_scatter scatters) along: the
    most frequent among the members that every operand has (XLA's
    FindMostFrequentGatherDim / FindMostFrequentScatterDim), else 0.
    """
    rank = min(len(t.get_shape()) for op in ops for t in op.input_types())
    dims = [op.properties["dim"].value.data for op in ops]  # pyright: ignore
    valid = [d for d in dims if d < rank]
    return max(set(valid), key=lambda d: (valid.count(d), -d)) if valid else 0


def _swap(rank: int, a: int, b: int) -> list[int]:
    perm = list(range(rank))
    perm[a], perm[b] = b, a
    return perm


def combine(ops: list[collective.CollectiveOp]) -> Operation:
    """
    One variadic op computing all of `ops`, inserted before the first; uses redirected.
    All_gathers (reduce_scatters) on another dimension than the merged one are aligned by
    a transpose that swaps the two dimensions before, and the same transpose after. The combined op (and
    each transpose) reports at the first collective it merges (`location`), as a pass-made
    op reports the op it came from.
    """
    first = ops[0]
    props = dict(first.properties)
    operands: list[SSAValue] = []
    result_types: list[Attribute] = []
    swaps: list[list[int] | None] = []
    dim = gather_dim(ops) if isinstance(first, ALIGNABLE) else None
    for op in ops:
        for value, result in zip(op.operands, op.results, strict=False):
            own = op.properties["dim"].value.data if dim is not None else None  # pyright: ignore
            if dim is None or own == dim:
                operands.append(value)
                result_types.append(result.type)
                swaps.append(None)
                continue
            perm = _swap(len(_shape(value)), dim, own)
            moved = hlo.TransposeOp(value, perm)
            moved.location = op.location
            Rewriter.insert_op(moved, InsertPoint.before(first))
            operands.append(moved.result)
            out = _shape(result)
            result_types.append(TensorType(_element(result), [out[p] for p in perm]))
            swaps.append(perm)
    if dim is not None:
        props["dim"] = i64_attr(dim)
    combined = type(first).create(
        operands=operands,
        result_types=result_types,
        properties=props,
        attributes=dict(first.attributes),
    )
    combined.location = first.location
    merge_control_attributes(ops, combined)
    Rewriter.insert_op(combined, InsertPoint.before(first))
    results = iter(zip(combined.results, swaps, strict=False))
    for op in ops:
        for old in op.results:
            new, perm = next(results)
            if perm is not None:
                back = hlo.TransposeOp(new, perm)
                back.location = op.location
                Rewriter.insert_op(back, InsertPoint.after(combined))
                new = back.result
            new.name_hint = old.name_hint
            old.replace_all_uses_with(new)
        Rewriter.erase_op(op)
    return combined


def _shape(value: SSAValue) -> tuple[int, ...]:
    ty = value.type
    assert isinstance(ty, TensorType)
    return ty.get_shape()


def _element(value: SSAValue) -> Attribute:
    ty = value.type
    assert isinstance(ty, TensorType)
    return ty.element_type


@dataclass(frozen=True)
class CollectiveCombinePass(ModulePass):
    """Merge independent same-kind collectives into variadic ones (see the module docstring)."""

    name = "collective-combine"

    threshold_bytes: int = 32 * 1024 * 1024
    """Largest total operand size of one combined collective (XLA's default order)."""
    max_count: int = 256
    """Most collectives merged into one (XLA's kMaxCombineCount)."""
    overlap_aware: bool = True
    """Refuse merges that would delay a collective or its users (false: XLA's behaviour)."""
    chip: str = "v5e"
    """The chip whose costs `overlap-aware` weighs."""
    align_dims: bool = True
    """Merge all_gathers (reduce_scatters) on different dimensions too, aligned by transposes."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.threshold_bytes < 0 or self.max_count < 1:
            raise PassFailedException(
                "collective-combine: threshold-bytes must be >= 0 and max-count >= 1"
            )
        try:
            model = cached(CostModel(get_chip(self.chip), find_mesh(op)))
        except UnknownChipError as e:
            raise PassFailedException(f"collective-combine: {e}") from None
        for block in _blocks(op):
            groups = self.groups(block, model)
            for group in groups:
                combine(group)
            if groups:
                topological_reorder(block)

    def groups(
        self, block: Block, model: CostModel, guards: list[OverlapGuard] | None = None
    ) -> list[list[collective.CollectiveOp]]:
        """The block's groups; with `guards`, the overlap guard used (if any) appended."""
        guard = OverlapGuard.for_block(block, model) if self.overlap_aware else None
        if guard is not None and guards is not None:
            guards.append(guard)
        return plan_groups(block, self.threshold_bytes, self.max_count, guard, self.align_dims)

    def any_match(self, op: ModuleOp) -> bool:
        """Whether `apply` would merge anything (planned, not done: `spmd-pipeline`'s gate
        copies the module only if so)."""
        return bool(self.plan(op))

    def plan(
        self, op: ModuleOp, model: CostModel | None = None
    ) -> list[tuple[Block, list[list[collective.CollectiveOp]]]]:
        """What `apply` would merge, block by block (nothing is changed). `model`: this
        pass's cost model (`spmd-pipeline` passes its gate's, which remembers costs by op)."""
        return self.guarded_plan(op, model)[0]

    def guarded_plan(
        self, op: ModuleOp, model: CostModel | None = None
    ) -> tuple[list[tuple[Block, list[list[collective.CollectiveOp]]]], bool]:
        """`plan`, and whether its overlap guard refused a merge: if not, the plan is the
        one without the guard (`overlap-aware=false`) too (`spmd-pipeline` then does not
        plan that one again, issue 14 item 7)."""
        if model is None:
            model = cached(CostModel(get_chip(self.chip), find_mesh(op)))
        guards: list[OverlapGuard] = []
        planned = [(block, self.groups(block, model, guards)) for block in _blocks(op)]
        return [(block, groups) for block, groups in planned if groups], any(
            g.refused for g in guards
        )

    @staticmethod
    def apply_plan(
        plan: list[tuple[Block, list[list[collective.CollectiveOp]]]],
        twin: Mapping[Operation, Operation],
    ) -> None:
        """Merge `plan`'s groups in a copy of the module they were planned on (`twin`: each
        op of that module mapped to its copy, `module_copy.copy_op`'s `op_mapper`), so
        that `spmd-pipeline`'s gate plans once, not once to ask and once to apply."""
        for block, groups in plan:
            for group in groups:
                combine([twin[o] for o in group])  # pyright: ignore[reportArgumentType]
            owner = twin[block.parent_op()]  # pyright: ignore[reportArgumentType]
            topological_reorder(_twin_block(owner, block))


def _blocks(op: ModuleOp) -> list[Block]:
    return [
        block
        for function in op.walk()
        if isinstance(function, func.FuncOp) and function.body.blocks
        for block in function.body.blocks
    ]


def _twin_block(owner: Operation, block: Block) -> Block:
    """The block of `owner` (a clone of `block`'s parent op) at `block`'s position."""
    parent = block.parent_op()
    assert parent is not None
    for region, twin_region in zip(parent.regions, owner.regions, strict=True):
        for b, twin in zip(region.blocks, twin_region.blocks, strict=True):
            if b is block:
                return twin
    raise AssertionError("the block is not in its parent")
