"""
`collective-matmul{bidirectional= min-bytes=0 f32-accumulation=false chip=}`: an all_gather feeding a dot, and a dot
feeding a reduce_scatter, become an unrolled ring of permutes and partial dots that the
scheduler can overlap (Wang et al., "Overlap Communication with Dependent Computation via
Decomposition in Large Deep Learning Models", ASPLOS 2023; XLA's windowed einsum; the
"collective matmul" of How to Scale Your Model).

all_gather + dot. `dot(all_gather(x, dim = g), w)` where `g` is a free (or batch)
dimension of that dot operand: device r holds block r of the gathered operand. Each step
computes the partial dot of the block it holds and writes it with `dynamic_update_slice`
into its place of the result (a zero buffer of the result's type), while a
`collective.permute` (shift 1) passes the block on to the next device; after G - 1
permutes every block was seen. The other operand is used whole (free `g`), or sliced to
the same block (batch `g`). Every element of the result comes from the same dot on the
same numbers as before: results are identical. A contracting `g` (the scaling book's
algorithm) multiplies each block by the same block of the other operand and sums the
products in ring order (integers identical, floats up to summation order).

dot + reduce_scatter. `reduce_scatter(dot(a, b), dim = d)` where `d` is a result dimension
from a free (or batch) dimension: each device computes, per step, the partial dot for
one block of `d` (a `dynamic_slice` of `a` or `b`, or both for a batch dimension), adds it
to the partial sum that arrived from its neighbour and passes the sum on; after G - 1
permutes each device holds the complete sum for its own block. Any reduction kind works
(add, mul, max, min: the matching `hlo` op combines). Sums are added in ring order, not
rank order: integers are identical, floats agree up to summation order. The partial sums
travel in the reduce_scatter's element type, as a ring reduce-scatter's do on hardware
(and XLA's windowed einsum): for bf16/f16 each step rounds. `f32-accumulation=true`
keeps them in f32 and rounds once at the end, as DESIGN.md's reduce_scatter does, at
twice the permute bytes.

Bidirectional (`bidirectional=true`, the default when the group size is even): two rings
at once, one passing blocks to rank + 1 and one to rank - 1, each covering about half of
the other devices, so there are about G / 2 steps instead of G - 1 (same bytes in total,
half the latency on a bidirectional ring).

Block offsets are computed from `spmd.axis_index`: `((axis_index + c) mod G) * block`, the
modulo as a compare/select (`hlo` has no remainder).

Only collectives over exactly one mesh axis are rewritten: a ring over several axes (or
explicit groups) has no single `axis_index` to count steps with, so those are left as they
are, as are `_start` forms (run before `async-split`), an
all_gather or dot result with other users (the collective would stay), and collectives whose operand (all_gather result, reduce_scatter
input) is smaller than `min-bytes` (XLA's threshold_for_windowed_einsum). One operand
of a variadic (combined) collective is taken out of it; the others stay combined.

With `chip=` (as `spmd-pipeline` runs it) only sites whose ring may pay are rewritten (the
ring's permutes one after another on the collective engine, plus the compute on the ring's
critical path besides them, and the dot must each take less than the dot and the
collective: a ring of G - 1 small permutes is slower than one collective when latency, not
bandwidth, dominates), and the rewrite is kept only if the
cost model's scheduled step of the rewritten program (collectives split async and
list-scheduled, as `micro-batch` estimates) is faster than the original's.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from shardc.dialects import collective, hlo, spmd
from shardc.dialects.sizes import tensor_bytes
from shardc.dialects.spmd import find_mesh
from shardc.dialects.syntax import i64_array, i64_attr
from shardc.hardware.chips import CHIPS, get_chip
from shardc.hardware.cost import CachedCostModel, CostModel, cached
from shardc.passes.rewrite_utils import (
    SCALAR_I32,
    check_option,
    const_i32,
    insert_from,
    sites_only,
    tensor_type,
    zeros,
)
from shardc.passes.step_estimate import module_step_time, op_time
from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i1,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

COMBINE: dict[str, type[hlo.BinaryElementwiseOp]] = {
    "add": hlo.AddOp,
    "mul": hlo.MulOp,
    "max": hlo.MaxOp,
    "min": hlo.MinOp,
}


def _with_dim(
    ty: TensorType, dim: int, size: int, element_type: Attribute | None = None
) -> TensorType:
    shape = list(ty.get_shape())
    shape[dim] = size
    return TensorType(element_type or ty.element_type, shape)


def _bytes(value: SSAValue) -> int:
    ty = tensor_type(value)
    return tensor_bytes(ty)


def ring_axis(op: collective.CollectiveOp) -> tuple[str, str, int] | None:
    """(mesh, axis, group size) of a sync collective over exactly one mesh axis."""
    if op.mesh is None or len(op.axes) != 1:
        return None
    size = op.group_size()
    if size < 2:
        return None
    return op.mesh.root_reference.data, op.axes[0], size


def peel(op: collective.CollectiveOp, k: int, rewriter: PatternRewriter) -> None:
    """
    Drop operand `k` (whose result is unused now) from the variadic `op`: the others stay
    one combined collective.
    """
    assert not op.results[k].uses
    if len(op.operands) == 1:
        rewriter.erase(op)
        return
    keep = [i for i in range(len(op.operands)) if i != k]
    rest = type(op).create(
        operands=[op.operands[i] for i in keep],
        result_types=[op.results[i].type for i in keep],
        properties=dict(op.properties),
        attributes=dict(op.attributes),
    )
    insert_from(rewriter, op, [rest])
    for new, i in zip(rest.results, keep, strict=True):
        new.name_hint = op.results[i].name_hint
        rewriter.replace_all_uses_with(op.results[i], new)
    rewriter.erase(op)


@dataclass
class RingBuilder:
    """Emits the unrolled ring before `anchor`, sharing the index computations."""

    anchor: Operation
    rewriter: PatternRewriter
    mesh: str
    axis: str
    size: int
    ops: list[Operation] = field(default_factory=list[Operation])
    _consts: dict[int, SSAValue] = field(default_factory=dict[int, SSAValue])
    _index: dict[int, SSAValue] = field(default_factory=dict[int, SSAValue])
    _offset: dict[tuple[int, int], SSAValue] = field(
        default_factory=dict[tuple[int, int], SSAValue]
    )
    _rank: SSAValue | None = None

    def emit(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def const(self, value: int) -> SSAValue:
        if value not in self._consts:
            self._consts[value] = self.emit(const_i32(value))
        return self._consts[value]

    def rank(self) -> SSAValue:
        if self._rank is None:
            self._rank = self.emit(spmd.AxisIndexOp(self.mesh, self.axis, SCALAR_I32))
        return self._rank

    def block_index(self, c: int) -> SSAValue:
        """`(rank + c) mod size` for a constant c."""
        c %= self.size
        if c not in self._index:
            if c == 0:
                self._index[c] = self.rank()
            else:
                t = self.emit(_binary(hlo.AddOp, self.rank(), self.const(c)))
                n = self.const(self.size)
                wraps = self.emit(_compare_ge(t, n))
                wrapped = self.emit(_binary(hlo.SubOp, t, n))
                self._index[c] = self.emit(_select(wraps, wrapped, t))
        return self._index[c]

    def block_offset(self, c: int, block: int) -> SSAValue:
        key = (c % self.size, block)
        if key not in self._offset:
            self._offset[key] = self.emit(
                _binary(hlo.MulOp, self.block_index(c), self.const(block))
            )
        return self._offset[key]

    def offsets(self, rank: int, dim: int, c: int, block: int) -> list[SSAValue]:
        return [self.block_offset(c, block) if d == dim else self.const(0) for d in range(rank)]

    def slice_block(self, value: SSAValue, dim: int, c: int, block: int) -> SSAValue:
        """Block `(rank + c) mod size` of `value` along `dim`."""
        ty = tensor_type(value)
        sizes = list(ty.get_shape())
        sizes[dim] = block
        return self.emit(
            _dynamic_slice(value, self.offsets(ty.get_num_dims(), dim, c, block), sizes)
        )

    def permute(self, value: SSAValue, shift: int) -> SSAValue:
        return self.emit(_permute(value, self.mesh, self.axis, shift))

    def finish(self, old: SSAValue, new: SSAValue) -> None:
        insert_from(self.rewriter, self.anchor, self.ops)
        new.name_hint = old.name_hint
        self.rewriter.replace_all_uses_with(old, new)


# The ring's ops as their constructors make them, by `create` (the same operands, result
# types and properties, without IRDL's argument checks: a few times cheaper, and a ring
# is dozens of them; at 50k ops building rings was half of collective-matmul, issue 14
# item 7). tests/e2e/test_collective_matmul.py's rings and the byte-identical outputs
# of bench/pipeline_outputs.py hold them to the constructors.


def _binary(
    cls: type[hlo.BinaryElementwiseOp], lhs: SSAValue, rhs: SSAValue
) -> hlo.BinaryElementwiseOp:
    """`cls(lhs, rhs)`."""
    return cls.create(operands=[lhs, rhs], result_types=[lhs.type])


def _compare_ge(lhs: SSAValue, rhs: SSAValue) -> hlo.CompareOp:
    """`hlo.CompareOp("GE", lhs, rhs)`."""
    return hlo.CompareOp.create(
        operands=[lhs, rhs],
        result_types=[TensorType(i1, tensor_type(lhs).get_shape())],
        properties={"comparison_direction": StringAttr("GE")},
    )


def _select(pred: SSAValue, on_true: SSAValue, on_false: SSAValue) -> hlo.SelectOp:
    """`hlo.SelectOp(pred, on_true, on_false)`."""
    return hlo.SelectOp.create(operands=[pred, on_true, on_false], result_types=[on_true.type])


def _dynamic_slice(
    value: SSAValue, indices: list[SSAValue], sizes: list[int]
) -> hlo.DynamicSliceOp:
    """`hlo.DynamicSliceOp(value, indices, sizes)`."""
    return hlo.DynamicSliceOp.create(
        operands=[value, *indices],
        result_types=[TensorType(tensor_type(value).element_type, sizes)],
        properties={"slice_sizes": i64_array(sizes)},
    )


def _update_slice(
    value: SSAValue, update: SSAValue, indices: list[SSAValue]
) -> hlo.DynamicUpdateSliceOp:
    """`hlo.DynamicUpdateSliceOp(value, update, indices)`."""
    return hlo.DynamicUpdateSliceOp.create(
        operands=[value, update, *indices], result_types=[value.type]
    )


def _permute(value: SSAValue, mesh: str, axis: str, shift: int) -> collective.PermuteOp:
    return collective.PermuteOp.create(
        operands=[value],
        result_types=[value.type],
        properties={
            "shift": i64_attr(shift),
            "mesh": SymbolRefAttr(mesh),
            "mesh_axes": ArrayAttr([StringAttr(axis)]),
        },
    )


def _ring_steps(size: int, bidirectional: bool) -> tuple[int, int]:
    """Blocks handled by the +1 ring and by the -1 ring (they add up to size - 1)."""
    if not bidirectional:
        return size - 1, 0
    return size // 2, (size - 1) // 2


# all_gather + dot -------------------------------------------------------------------------


@dataclass(frozen=True)
class RingOptions:
    bidirectional: bool | None = None
    min_bytes: int = 0
    f32_accumulation: bool = False
    model: CostModel | None = field(default=None, compare=False)
    """With a cost model, a site whose ring cannot be faster is left (`may_pay`)."""
    answers: dict[Hashable, bool] = field(default_factory=dict[Hashable, bool], compare=False)
    """`may_pay`'s answers by the site's ops' cost keys: a program repeats its layers."""

    def steps(self, size: int) -> tuple[int, int]:
        """Blocks handled by the +1 ring and by the -1 ring (module docstring)."""
        bidi = size % 2 == 0 if self.bidirectional is None else self.bidirectional
        return _ring_steps(size, bidi)

    def may_pay(
        self,
        coll: collective.CollectiveOp,
        dot: hlo.DotOp,
        block: SSAValue,
        ring: tuple,
        path: Callable[[CostModel], float] = lambda _: 0.0,
        site: Hashable = (),
    ) -> bool:
        """
        Whether the ring for `coll` and `dot` can beat them: the ring takes at least its
        permutes of `block` on the collective engine (each overlapping the one ahead by
        at most its `collective_overlap`, `timing.engine_window`) plus `path(model)`, the compute that must run before
        the first permute or after the last (the ring's steps are one after another), and
        at least the dot's time; the pair takes the dot then the collective. A site where
        that floor is not below the pair's time is left as it is, so the gate's estimate
        (a copy and two whole-module estimates) only sees sites that may pay.
        """
        if self.model is None:
            return True
        assert isinstance(self.model, CachedCostModel)  # `options` makes it one
        coll_key, dot_key = self.model.key(coll), self.model.key(dot)
        if coll_key is None or dot_key is None:
            return self._may_pay(coll, dot, block, ring, path)
        key = (coll_key, dot_key, block.type, ring, site)
        found = self.answers.get(key)
        if found is None:
            found = self.answers[key] = self._may_pay(coll, dot, block, ring, path)
        return found

    def _may_pay(
        self,
        coll: collective.CollectiveOp,
        dot: hlo.DotOp,
        block: SSAValue,
        ring: tuple,
        path: Callable[[CostModel], float],
    ) -> bool:
        assert self.model is not None
        mesh, axis, n = ring
        step = _permute(block, mesh, axis, 1)
        where = coll.parent_block()
        assert where is not None
        where.insert_op_before(step, coll)  # in the module, where its mesh resolves
        try:
            # The engine rule (`timing.engine_window`): a permute may begin its overlap
            # (its latency) before the one ahead of it ends, so k of them take at least
            # k * (t - o) + o. But each ring is a chain: a step passes on what the step
            # before received, so it is issued only once that permute ended, and a
            # collective ends its whole time after it is issued: the longer ring's
            # permutes take their whole time one after another (issue 14 item 7: with
            # the latency overlapped, 2-step rings of latency-bound permutes passed this
            # test, and the gate estimated a copy of the module to refuse them).
            # Where a permute's members end apart (a line's wrap edge,
            # `CostModel.collective_landings`), the ring's slowest device waits for the
            # long transfer once, its other steps at least the soonest member's time.
            t, o = self.model.collective_time(step), self.model.collective_overlap(step)
            soonest = self.model.collective_soonest(step)
            chain = (max(self.steps(n)) - 1) * soonest + t
            permutes = max(sum(self.steps(n)) * (t - o) + o, chain)
        finally:
            where.erase_op(step)
        dot_time = self.model.op_cost(dot).time
        pair = dot_time + self.model.collective_time(coll)
        if max(permutes, dot_time) >= pair:
            return False
        return permutes + path(self.model) < pair


@dataclass(frozen=True)
class GatherIntoDot(RewritePattern):
    """`dot(all_gather(x), w)` -> a ring of permutes and partial dots (module docstring)."""

    options: RingOptions

    def match(self, dot: hlo.DotOp) -> tuple[Any, ...] | None:
        """The rewrite for `dot` (`_rewrite_gather` or `_rewrite_gather_contracting`) and
        its arguments, or None."""
        for side in (0, 1):
            value = dot.operands[side]
            ag = value.owner
            if not isinstance(ag, collective.AllGatherOp) or not value.has_one_use():
                continue
            assert isinstance(value, OpResult)
            ring = ring_axis(ag)
            if ring is None or _bytes(value) < self.options.min_bytes:
                continue
            layout = _gather_layout(dot, side, ag.dim.value.data)
            if layout is None and not _same_sum_everywhere(dot, side, ring):
                continue
            block = ag.operands[value.index]
            # after the last permute, at least the last block's partial dot: a 1/n share
            # of the dot's time (a lower bound: a partial dot reads at least its share)
            n = ring[2]
            last = lambda model, d=dot, n=n: op_time(d, model) / n  # noqa: E731
            if not self.options.may_pay(ag, dot, block, ring, last, ("gather", value.index)):
                continue
            if layout is not None:
                return _rewrite_gather, (dot, side, ag, value.index, ring, layout, self.options)
            partner = _contracting_partner(dot, side, ag.dim.value.data)
            if partner is not None:
                args = (dot, side, ag, value.index, ring, partner, self.options)
                return _rewrite_gather_contracting, args
        return None

    @op_type_rewrite_pattern
    def match_and_rewrite(self, dot: hlo.DotOp, rewriter: PatternRewriter) -> None:
        if (found := self.match(dot)) is not None:
            rewrite, args = found
            rewrite(*args, rewriter)


def _gather_layout(dot: hlo.DotOp, side: int, g: int) -> tuple[int, int | None] | None:
    """
    For gathered dimension `g` of operand `side`: the result dimension it becomes, and
    the other operand's dimension to slice alike (a batch dimension), or None when `g`
    is contracting (partial sums, not blocks).
    """
    batching, contracting = dot.batching, dot.contracting
    rank = tensor_type(dot.operands[side]).get_num_dims()
    free = hlo.dot_free_dims(rank, batching[side], contracting[side])
    if g in free:
        lhs_rank = tensor_type(dot.lhs).get_num_dims()
        lhs_free = len(hlo.dot_free_dims(lhs_rank, batching[0], contracting[0]))
        return len(batching[0]) + free.index(g) + (lhs_free if side == 1 else 0), None
    if g in batching[side]:
        i = batching[side].index(g)
        return i, batching[1 - side][i]
    return None


def _rewrite_gather(
    dot: hlo.DotOp,
    side: int,
    ag: collective.AllGatherOp,
    k: int,
    ring: tuple[str, str, int],
    layout: tuple[int, int | None],
    options: RingOptions,
    rewriter: PatternRewriter,
) -> None:
    mesh, axis, n = ring
    e, other_dim = layout
    x = ag.operands[k]
    block = tensor_type(x).get_shape()[ag.dim.value.data]
    other = dot.operands[1 - side]
    out_type = tensor_type(dot.result)
    part_type = _with_dim(out_type, e, block)
    b = RingBuilder(dot, rewriter, mesh, axis, n)

    def partial(cur: SSAValue, c: int) -> SSAValue:
        """The dot of block `(rank + c) mod n`, held in `cur`."""
        o = other if other_dim is None else b.slice_block(other, other_dim, c, block)
        lhs, rhs = (cur, o) if side == 0 else (o, cur)
        return b.emit(hlo.DotOp(lhs, rhs, dot.contracting, dot.batching, part_type))

    buffer = b.emit(zeros(out_type))

    def place(cur: SSAValue, c: int) -> None:
        nonlocal buffer
        part = partial(cur, c)
        offsets = b.offsets(out_type.get_num_dims(), e, c, block)
        buffer = b.emit(_update_slice(buffer, part, offsets))

    _gather_ring(b, x, place, *options.steps(n))
    b.finish(dot.result, buffer)
    rewriter.erase(dot)
    peel(ag, k, rewriter)


def _gather_ring(
    b: RingBuilder, x: SSAValue, place: Callable[[SSAValue, int], None], k1: int, k2: int
) -> None:
    """Each step first sends on what it holds, then computes with it (overlap)."""
    cw_next = b.permute(x, 1) if k1 >= 1 else None
    ccw_next = b.permute(x, -1) if k2 >= 1 else None
    place(x, 0)
    cw = ccw = x
    for s in range(1, max(k1, k2) + 1):
        if s <= k1:
            assert cw_next is not None
            cw = cw_next
            if s + 1 <= k1:
                cw_next = b.permute(cw, 1)
        if s <= k2:
            assert ccw_next is not None
            ccw = ccw_next
            if s + 1 <= k2:
                ccw_next = b.permute(ccw, -1)
        if s <= k1:
            place(cw, -s)  # after s shifts by +1: block rank - s
        if s <= k2:
            place(ccw, s)  # after s shifts by -1: block rank + s


# all_gather of a contracting dimension + dot (the scaling book's collective matmul) -------


def _contracting_partner(dot: hlo.DotOp, side: int, g: int) -> int | None:
    """The other operand's dimension contracted with dimension `g` of operand `side`."""
    contracting = dot.contracting
    if g not in contracting[side]:
        return None
    return contracting[1 - side][contracting[side].index(g)]


def _same_sum_everywhere(dot: hlo.DotOp, side: int, ring: tuple[str, str, int]) -> bool:
    """
    Whether the contracting ring leaves no replicated result whose copies differ: device r
    adds the products in ring order starting at block r. Integers (exact) and two blocks
    (one add, commutative) give every device the same bits. Floats over more blocks differ
    in the last bits, which is only allowed where the devices of the ring hold different
    results anyway: the other operand differs across the ring's axis (the scaling book's
    `A[B, D_Y] x W[D, F_Y]`). Where it may be the same on every device (a replicated or
    gathered `w`), the result is replicated and its copies would differ (which
    `shardc-run` rejects and later collectives would mix): the all_gather stays.
    """
    n = ring[2]
    if n <= 2 or isinstance(tensor_type(dot.result).element_type, IntegerType):
        return True
    return _differs_across(dot.operands[1 - side], ring[1], 8)


def _differs_across(value: SSAValue, axis: str, depth: int) -> bool:
    """
    Whether `value` is known to be a different block on each device of mesh `axis`: a
    function argument split over it, `spmd.axis_index` of it, or an `hlo` op on such a
    value (`depth` ops deep). Collectives and anything else: not known (False).
    """
    if isinstance(value, BlockArgument):
        function = value.block.parent_op()
        if not isinstance(function, FuncOp) or value.block is not function.body.blocks.first:
            return False
        sharding = spmd.function_shardings(function)[0][value.index]
        if sharding is None:
            return False
        return axis in sharding.unreduced_axes or any(axis in a for a in sharding.dim_axes)
    owner = value.owner
    if isinstance(owner, spmd.AxisIndexOp):
        return owner.axis.data == axis
    if depth == 0 or not owner.name.startswith("hlo."):
        return False
    return any(_differs_across(o, axis, depth - 1) for o in owner.operands)


def _rewrite_gather_contracting(
    dot: hlo.DotOp,
    side: int,
    ag: collective.AllGatherOp,
    k: int,
    ring: tuple[str, str, int],
    partner: int,
    options: RingOptions,
    rewriter: PatternRewriter,
) -> None:
    """
    `dot(all_gather(x, dim = g), w)` with `g` contracting (How to Scale Your Model's
    all-gather collective matmul): device r holds block r of the contracted dimension; each
    step multiplies the block it holds by the same block of `w` (a `dynamic_slice` of the
    dimension contracted with `g`) and adds the product to a running sum while a permute
    passes the block on. The sum is in the dot's result type and in ring order: integers are
    identical, floats agree up to summation order (bf16 rounds at every step, as XLA's
    windowed einsum accumulating in the output type does).
    """
    mesh, axis, n = ring
    x = ag.operands[k]
    block = tensor_type(x).get_shape()[ag.dim.value.data]
    other = dot.operands[1 - side]
    out_type = tensor_type(dot.result)
    b = RingBuilder(dot, rewriter, mesh, axis, n)
    total: SSAValue | None = None

    def place(cur: SSAValue, c: int) -> None:
        nonlocal total
        o = b.slice_block(other, partner, c, block)
        lhs, rhs = (cur, o) if side == 0 else (o, cur)
        part = b.emit(hlo.DotOp(lhs, rhs, dot.contracting, dot.batching, out_type))
        total = part if total is None else b.emit(_binary(hlo.AddOp, total, part))

    _gather_ring(b, x, place, *options.steps(n))
    assert total is not None
    b.finish(dot.result, total)
    rewriter.erase(dot)
    peel(ag, k, rewriter)


# dot + reduce_scatter -----------------------------------------------------------------


@dataclass(frozen=True)
class DotIntoScatter(RewritePattern):
    """`reduce_scatter(dot(a, b))` -> a ring of partial dots and permutes (module docstring)."""

    options: RingOptions

    def match(self, rs: collective.ReduceScatterOp) -> tuple[Any, ...] | None:
        """The arguments of `_rewrite_scatter` for `rs`, or None."""
        ring = ring_axis(rs)
        if ring is None:
            return None
        for k, value in enumerate(rs.operands):
            dot = value.owner
            if (
                isinstance(dot, hlo.DotOp)
                and value.has_one_use()
                and _bytes(value) >= self.options.min_bytes
                and self.options.may_pay(
                    rs,
                    dot,
                    rs.results[k],
                    ring,
                    lambda m, k=k: self.path(m, rs, k, ring[2]),
                    ("scatter", k),
                )
            ):
                return rs, k, dot, ring, self.options
        return None

    def path(self, model: CostModel, rs: collective.ReduceScatterOp, k: int, n: int) -> float:
        """
        Compute on the ring's critical path besides its permutes: the first partial dot
        (after its operand slices) before the first permute, and the combine of what
        arrived after the last one. Costed on detached ops of the ring's types (nothing
        is inserted in the module).
        """
        dot = rs.operands[k].owner
        assert isinstance(dot, hlo.DotOp)
        d = rs.dim.value.data
        y_type = tensor_type(rs.operands[k])
        block = y_type.get_shape()[d] // n
        elem = y_type.element_type
        part_elem = hlo.accumulation_type(elem) if self.options.f32_accumulation else elem
        part_type = _with_dim(y_type, d, block, part_elem)
        types = [tensor_type(dot.lhs), tensor_type(dot.rhs)]
        scratch = Block(arg_types=[SCALAR_I32, *types])
        index, *operands = scratch.args
        ops: list[Operation] = []
        for i, dim in enumerate(_scattered_operand_dims(dot, d)):
            if dim is not None:
                sizes = list(types[i].get_shape())
                sizes[dim] = block
                ops.append(hlo.DynamicSliceOp(operands[i], [index] * len(sizes), sizes))
                operands[i] = ops[-1].results[0]
        ops.append(hlo.DotOp(*operands, dot.contracting, dot.batching, part_type))
        part = ops[-1].results[0]
        ops.append(COMBINE[rs.kind.data](part, part))
        return sum(op_time(op, model) for op in ops)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, rs: collective.ReduceScatterOp, rewriter: PatternRewriter) -> None:
        if (found := self.match(rs)) is not None:
            _rewrite_scatter(*found, rewriter)


def _scattered_operand_dims(dot: hlo.DotOp, d: int) -> tuple[int | None, int | None]:
    """The lhs and rhs dimensions that result dimension `d` comes from (None: not sliced)."""
    batching, contracting = dot.batching, dot.contracting
    nb = len(batching[0])
    lf = hlo.dot_free_dims(tensor_type(dot.lhs).get_num_dims(), batching[0], contracting[0])
    rf = hlo.dot_free_dims(tensor_type(dot.rhs).get_num_dims(), batching[1], contracting[1])
    if d < nb:
        return batching[0][d], batching[1][d]
    if d < nb + len(lf):
        return lf[d - nb], None
    return None, rf[d - nb - len(lf)]


def _rewrite_scatter(
    rs: collective.ReduceScatterOp,
    k: int,
    dot: hlo.DotOp,
    ring: tuple[str, str, int],
    options: RingOptions,
    rewriter: PatternRewriter,
) -> None:
    mesh, axis, n = ring
    d = rs.dim.value.data
    slice_lhs, slice_rhs = _scattered_operand_dims(dot, d)
    y_type = tensor_type(rs.operands[k])
    block = y_type.get_shape()[d] // n
    elem = y_type.element_type
    part_elem = hlo.accumulation_type(elem) if options.f32_accumulation else elem
    part_type = _with_dim(y_type, d, block, part_elem)
    b = RingBuilder(rs, rewriter, mesh, axis, n)

    def partial(c: int) -> SSAValue:
        """This device's partial result for block `(rank + c) mod n`."""
        lhs = dot.lhs if slice_lhs is None else b.slice_block(dot.lhs, slice_lhs, c, block)
        rhs = dot.rhs if slice_rhs is None else b.slice_block(dot.rhs, slice_rhs, c, block)
        return b.emit(hlo.DotOp(lhs, rhs, dot.contracting, dot.batching, part_type))

    result = _scatter_ring(b, partial, COMBINE[rs.kind.data], *options.steps(n))
    if part_elem != elem:
        result = b.emit(hlo.ConvertOp(result, tensor_type(rs.results[k])))
    b.finish(rs.results[k], result)
    peel(rs, k, rewriter)
    rewriter.erase(dot)


def _scatter_ring(
    b: RingBuilder,
    partial: Callable[[int], SSAValue],
    combine: type[hlo.BinaryElementwiseOp],
    k1: int,
    k2: int,
) -> SSAValue:
    """
    The +1 ring: the sum for block t starts k1 devices before t (device t - k1 adds
    block t first) and reaches t after k1 permutes; the -1 ring likewise from t + k2.
    """
    cw = partial(k1) if k1 >= 1 else None
    ccw = partial(-k2) if k2 >= 1 else None
    cw_in = ccw_in = None
    for s in range(1, max(k1, k2) + 1):
        if s <= k1:
            assert cw is not None
            moved = b.permute(cw, 1)
            if s < k1:
                cw = b.emit(_binary(combine, moved, partial(k1 - s)))
            else:
                cw_in = moved
        if s <= k2:
            assert ccw is not None
            moved = b.permute(ccw, -1)
            if s < k2:
                ccw = b.emit(_binary(combine, moved, partial(s - k2)))
            else:
                ccw_in = moved
    result = partial(0)
    for arrived in (cw_in, ccw_in):
        if arrived is not None:
            result = b.emit(_binary(combine, result, arrived))
    return result


@dataclass(frozen=True)
class CollectiveMatmulPass(ModulePass):
    """all_gather + dot and dot + reduce_scatter -> rings of permutes (module docstring)."""

    name = "collective-matmul"

    bidirectional: bool | None = None
    """Two rings in opposite directions; default: when the group size is even."""
    min_bytes: int = 0
    """Only collectives moving at least this many bytes (gathered / scattered array)."""
    f32_accumulation: bool = False
    """bf16/f16 partial sums in f32 (the reduce_scatter's numerics, twice the bytes)."""
    chip: str | None = None
    """Cost gate: rewrite only if the scheduled step on this chip gets faster (as XLA gates
    windowed einsum by size; `spmd-pipeline` sets it); None rewrites every match."""

    def __post_init__(self) -> None:
        check_option(self.name, "min-bytes", self.min_bytes >= 0, "at least 0", self.min_bytes)
        if self.chip is not None:
            check_option(
                self.name, "chip", self.chip in CHIPS, f"one of {', '.join(CHIPS)}", self.chip
            )

    def options(self, model: CostModel | None) -> RingOptions:
        keyed = None if model is None else cached(model)  # `may_pay` keys its answers by it
        return RingOptions(self.bidirectional, self.min_bytes, self.f32_accumulation, keyed)

    def rewrite(self, op: ModuleOp, model: CostModel | None = None) -> None:
        """
        Rewrite every match (with `model`: every match whose ring may pay): xDSL's
        `PatternRewriteWalker.rewrite_module`, sweep after sweep until one changes nothing,
        but for that last sweep, which is `_matches` (the same patterns asked of the same
        ops in the same order, without a rewriter per op: at 10k ops a fifth of the pass,
        issue 14 item 7); where that finds a match, the walker sweeps again. The walker's
        worklist holds only the ops a pattern can match (`rewrite_utils.sites_only`).
        """
        options = self.options(model)
        gather, scatter = GatherIntoDot(options), DotIntoScatter(options)
        walker = sites_only(
            PatternRewriteWalker(GreedyRewritePatternApplier([gather, scatter], dce_enabled=False)),
            hlo.DotOp,
            collective.ReduceScatterOp,
        )
        listener = walker._get_rewriter_listener()  # pyright: ignore[reportPrivateUsage]
        while True:
            walker._populate_worklist(op.body)  # pyright: ignore[reportPrivateUsage]
            changed = walker._process_worklist(listener)  # pyright: ignore[reportPrivateUsage]
            if not changed or not _matches(op, gather, scatter):
                return

    def any_match(self, op: ModuleOp, model: CostModel | None = None) -> bool:
        """Whether `rewrite` would change anything (a walk, no copy: the gate's fast path)."""
        options = self.options(model)
        return _matches(op, GatherIntoDot(options), DotIntoScatter(options))

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.chip is None:
            self.rewrite(op)
            return
        model = cached(CostModel(get_chip(self.chip), find_mesh(op)))
        if not self.any_match(op, model):
            return
        candidate = op.clone()
        self.rewrite(candidate, model)
        if module_step_time(candidate, model) < module_step_time(op, model):
            # keep the rewritten copy (rewriting the original again would repeat the work)
            block = op.body.block
            for old in list(block.ops):
                block.detach_op(old).erase()
            for new in list(candidate.body.block.ops):
                block.add_op(candidate.body.block.detach_op(new))


def _matches(op: ModuleOp, gather: GatherIntoDot, scatter: DotIntoScatter) -> bool:
    """Whether a pattern matches an op of `op` (asked in the walker's order)."""
    for inner in op.walk():
        if isinstance(inner, hlo.DotOp) and gather.match(inner) is not None:
            return True
        if isinstance(inner, collective.ReduceScatterOp) and scatter.match(inner):
            return True
    return False
