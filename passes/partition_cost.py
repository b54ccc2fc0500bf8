"""
Cost-based choice of an op's factor assignment for `spmd-partition` (issue 14 item 2).

An op with a choice (a dot, convolution, reduce, reshape, gather) can be partitioned in
several ways: keep each operand's split of a contracting (reduced) factor and reduce the
partial result (all_reduce, or reduce_scatter into the wanted split); gather the
contracting factor of an operand instead; move an operand's axis into the result's split
(all_to_all); compute on the operands' own splits and reshard the result; or replicate.
XLA's dot handler weighs such strategies by their cost; so does this: each candidate is
the factor assignment it implies, costed with the cost model (`CostModel`) as the time of
the reshards of its operands (what the resharder would insert, built in a scratch block
and priced op by op, so the estimate is the plan), the local op's roofline, and the
reshard of its result to the sharding its users want. The cheapest wins; a tie keeps
candidate 0, today's `choose_factors`, so programs whose choice is already cheapest
partition as before.

The search is per op (a handful of candidates, each a few reshards): linear in the
program's size. Reshard costs are memoized by (type, source, target, global shape), so a
program of many alike ops builds each scratch reshard once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from shardc.dialects import collective, hlo
from shardc.dialects.sizes import tensor_bytes
from shardc.dialects.spmd import MeshAttr, ShardingAttr
from shardc.hardware.cost import CostModel, mxu_rate
from shardc.passes.resharding import Resharder, layout, local_type
from shardc.passes.sharding_rules import Axes, FactorRule, factor_axes_from, make_sharding
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation

CHOICE_OPS = (hlo.DotOp, hlo.ConvolutionOp, hlo.ReduceOp, hlo.ReshapeOp, hlo.GatherOp)
"""The ops whose factors `spmd-partition` chooses by cost (every other op: as today)."""

RELATIVE_TIE = 1e-9
"""A candidate must beat today's choice by more than this fraction to replace it."""

Move = tuple[str, str, Axes]
"""(what moves: `lhs`, `operand 1`, `result`; collective kind; its mesh axes)."""


@dataclass(frozen=True)
class Plan:
    """One candidate: its factors, estimated time (s) and the collectives it inserts."""

    factors: tuple[Axes, ...]
    time: float
    moves: tuple[Move, ...]

    def describe(self) -> str:
        """`all-gather lhs over "Y" + reduce-scatter result over "X"` (`local`: none)."""
        if not self.moves:
            return "local (no collective)"
        parts = [
            f"{kind.replace('_', '-')} {what} over {_quoted(axes)}"
            for what, kind, axes in self.moves
        ]
        return " + ".join(parts)


def _quoted(axes: Axes) -> str:
    return ", ".join('"' + a + '"' for a in axes)


def candidate_factors(
    rule: FactorRule,
    operands: Sequence[ShardingAttr],
    want: ShardingAttr,
    today: list[Axes],
) -> list[list[Axes]]:
    """
    Today's choice first, then: the reduced factors kept from one operand (each in turn)
    or from none (gathered), crossed with the other factors taken from the wanted result,
    from the operands' own splits, or from both (want first); and everything replicated.
    Duplicates dropped, order kept (the order is the tie-break).
    """
    sources: list[int | None] = [
        i
        for i, (dims, s) in enumerate(zip(rule.operand_dims, operands, strict=False))
        if any(factor_axes_from(rule, dims, s)[f] for f in rule.reduction_factors)
    ]
    sources.append(None)
    found = [list(today)]
    for source in sources:
        for free in ("want", "operands", "both"):
            found.append(_assign(rule, operands, want, source, free))
    found.append([()] * rule.factor_count)
    unique: list[list[Axes]] = []
    for f in found:
        if f not in unique:
            unique.append(f)
    return unique


def _assign(
    rule: FactorRule,
    operands: Sequence[ShardingAttr],
    want: ShardingAttr,
    source: int | None,
    free: str,
) -> list[Axes]:
    factors: list[Axes] = [()] * rule.factor_count
    used: set[str] = set()

    def take(f: int, axes: Axes | None) -> None:
        if not axes or factors[f] or f in rule.unsplittable_factors:
            return
        kept = tuple(a for a in axes if a not in used)
        factors[f] = kept
        used.update(kept)

    if source is not None:
        from_operand = factor_axes_from(rule, rule.operand_dims[source], operands[source])
        for f in sorted(rule.reduction_factors):
            take(f, from_operand[f])
    if free in ("want", "both"):
        for f, axes in enumerate(factor_axes_from(rule, rule.result_dims, want)):
            take(f, axes)
    if free in ("operands", "both"):
        for dims, s in zip(rule.operand_dims, operands, strict=False):
            for f, axes in enumerate(factor_axes_from(rule, dims, s)):
                if f not in rule.reduction_factors:
                    take(f, axes)
    return factors


@dataclass
class PlanCoster:
    """Prices candidate factor assignments of ops on one mesh with one cost model."""

    mesh_name: str
    mesh: MeshAttr
    model: CostModel
    _reshards: dict[tuple[object, ...], tuple[float, tuple[tuple[str, Axes], ...]]] = field(
        default_factory=dict[tuple[object, ...], tuple[float, tuple[tuple[str, Axes], ...]]]
    )

    def reshard(
        self, ty: TensorType, src: ShardingAttr, dst: ShardingAttr, shape: tuple[int, ...]
    ) -> tuple[float, tuple[tuple[str, Axes], ...]]:
        """
        (seconds, collectives) of resharding a value of local type `ty` from `src` to
        `dst`: the resharder's own ops, inserted into a scratch block and priced.
        """
        if layout(src) == layout(dst):
            return 0.0, ()
        key = (ty, layout(src), layout(dst), shape)
        known = self._reshards.get(key)
        if known is not None:
            return known
        block = Block(arg_types=[ty])
        anchor = hlo.ReturnOp()
        block.add_op(anchor)
        resharder = Resharder(self.mesh_name, self.mesh)
        resharder.reshard(block.args[0], src, dst, anchor, shape)
        time = 0.0
        moves: list[tuple[str, Axes]] = []
        for op in resharder.inserted:
            if isinstance(op, collective.CollectiveOp):
                time += self.model.collective_time(op)
                kind = op.name.removeprefix("collective.")
                moves.append((kind, tuple(op.axes)))
            else:
                time += self.model.op_cost(op).time
        found = (time, tuple(moves))
        self._reshards[key] = found
        return found

    def compute_time(
        self, op: Operation, sizes: list[int], factors: Sequence[Axes], tensors: list[TensorType]
    ) -> float:
        """
        The local op's roofline: its global FLOPs (2 per multiply-add over every factor
        for a dot or convolution on the MXU, one per element otherwise) over the devices
        its factors split it across, and the bytes of its local `tensors`.
        """
        if isinstance(op, hlo.ReshapeOp):
            return 0.0  # a bitcast: moves nothing (`CostModel.hbm_bytes`)
        split = math.prod(self.mesh.axis_size(a) for axes in factors for a in axes)
        chip = self.model.chip
        if isinstance(op, hlo.DotOp | hlo.ConvolutionOp):
            element = tensors[0].element_type
            flops, rate = 2.0 * math.prod(sizes), mxu_rate(chip, element)
        else:
            flops, rate = float(math.prod(sizes)), chip.vpu_flops
        nbytes = sum(tensor_bytes(t) for t in tensors)
        return max(flops / split / rate, nbytes / chip.hbm_bw)


def factor_sizes(rule: FactorRule, shapes: Sequence[tuple[int, ...]]) -> list[int]:
    """Each factor's global size from the first tensor mapping it (`shapes`: the result's,
    then each operand's), 1 if none does."""
    sizes = [1] * rule.factor_count
    dims_list = [rule.result_dims, *rule.operand_dims]
    for f in range(rule.factor_count):
        for dims, shape in zip(dims_list, shapes, strict=False):
            if dims[f] is not None:
                sizes[f] = shape[dims[f]]
                break
    return sizes


@dataclass
class OpPlanner:
    """Prices each candidate of one op (the partitioner gives shapes and shardings)."""

    coster: PlanCoster
    op: Operation
    rule: FactorRule
    global_shape: Callable[[object], tuple[int, ...]]
    actual: Sequence[ShardingAttr]
    reused: Callable[[int, ShardingAttr], bool]
    """Whether operand i is already resharded to that sharding (no new collective)."""
    project: Callable[[Sequence[int | None], Sequence[Axes], tuple[int, ...]], ShardingAttr]
    pending_kept: Callable[[list[str]], list[str]]
    """The reduced axes left pending (`unreduced`) by the op (the rest all-reduced now)."""

    def plan(self, factors: list[Axes], want: ShardingAttr) -> Plan:
        op, rule, coster = self.op, self.rule, self.coster
        time = 0.0
        moves: list[Move] = []
        tensors: list[TensorType] = []
        shapes: list[tuple[int, ...]] = []
        for i, (dims, operand) in enumerate(zip(rule.operand_dims, op.operands, strict=False)):
            shape = self.global_shape(operand)
            shapes.append(shape)
            target = self.project(dims, factors, shape)
            ty = operand.type
            assert isinstance(ty, TensorType)
            tensors.append(local_type(_global_type(ty, shape), target, coster.mesh))
            if self.reused(i, target):
                continue
            t, ms = coster.reshard(ty, self.actual[i], target, shape)
            time += t
            moves += [(_operand_name(op, i), k, a) for k, a in ms]
        result = op.results[0]
        rshape = self.global_shape(result)
        natural = self.project(rule.result_dims, factors, rshape)
        rtype = local_type(_tensor(result), natural, coster.mesh)
        tensors.append(rtype)
        pending = [a for f in sorted(rule.reduction_factors) for a in factors[f]]
        kept = self.pending_kept(pending)
        count = len(op.results)
        if pending and not kept:  # all-reduced right after the op (max, min, a body, ...)
            partial = make_sharding(coster.mesh_name, natural.dim_axes, pending)
            t, ms = coster.reshard(rtype, partial, natural, rshape)
            time += t * count
            moves += [("result", k, a) for k, a in ms]
        start = make_sharding(coster.mesh_name, natural.dim_axes, kept)
        t, ms = coster.reshard(rtype, start, want, rshape)
        time += t * count
        moves += [("result", k, a) for k, a in ms]
        sizes = factor_sizes(rule, [rshape, *shapes])
        time += coster.compute_time(op, sizes, factors, tensors)
        return Plan(tuple(factors), time, tuple(moves))


def _global_type(local: TensorType, shape: tuple[int, ...]) -> TensorType:
    return TensorType(local.element_type, shape)


def _tensor(value: object) -> TensorType:
    ty = value.type
    assert isinstance(ty, TensorType)
    return ty


def _operand_name(op: Operation, index: int) -> str:
    if isinstance(op, hlo.DotOp | hlo.ConvolutionOp):
        return ("lhs", "rhs")[index] if index < 2 else f"operand {index}"
    return "operand" if index == 0 and len(op.operands) == 1 else f"operand {index}"


def choose(plans: list[Plan]) -> int:
    """The cheapest plan's index; plan 0 (today's) unless another beats it clearly."""
    best = 0
    for i, p in enumerate(plans[1:], start=1):
        if p.time < plans[best].time * (1 - RELATIVE_TIE) - 1e-15:
            best = i
    return best


def explain_line(position: str, op: Operation, plans: list[Plan], chosen: int) -> str:
    """`file:line:col: spmd-partition: hlo.dot: <chosen> (57.1 us) chosen over <others> (...)`."""
    others = sorted((p for i, p in enumerate(plans) if i != chosen), key=lambda p: p.time)
    seen: set[str] = {plans[chosen].describe()}
    rest: list[str] = []
    for p in others:
        if (d := p.describe()) not in seen:
            seen.add(d)
            rest.append(f"{d} ({_us(p.time)})")
    head = f"{position}: spmd-partition: {op.name}: {plans[chosen].describe()} ({_us(plans[chosen].time)})"
    return f"{head} chosen over {', '.join(rest)}" if rest else f"{head} (the only plan)"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} us"
