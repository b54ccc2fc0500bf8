"""
`spmd-partition`: rewrite a global program, whose values all carry shardings (after
`spmd-propagate`), into the per-device program, inserting collectives.

Each op is computed on local blocks. Its factors (`sharding_rules`) decide the operand
shardings it needs: contracting/reduced factors keep the axes their operands are already
split by (a local partial result, `unreduced`), the other factors take the axes of the
result's sharding. Operands are resharded to what the op needs, the op is rewritten to
local types, and its result is resharded once to the sharding propagation chose for it, so
a partial sum becomes an all_reduce, or a reduce_scatter when the result is wanted split.
For a dot, convolution, reduce, reshape or gather that rule is only candidate 0: the
alternatives (gather a contracting dimension instead, all_to_all an operand into the
result's split, compute on the operands' splits and reshard the result, replicate) are
built and timed with the cost model of `chip` and the cheapest is taken
(`partition_cost`; `explain=true` prints each choice and the runners-up).

Two ops need more than local types. A `pad` computes its padded dimensions whole (their
factors are unsplittable: the operand is all-gathered along them first, GSPMD's simple
form without halo exchange) and passes the sharding of every other dimension through. A
`reverse` keeps its reversed dimensions split: each device reverses its block and one
`collective.permute` sends block k of N to the device holding block N - 1 - k (XLA's
partitioned reverse).

Ops with several results (`sort`, `top_k`) map every result through the rule's one
`result_dims`: each result takes its local type and is resharded to the op's chosen
sharding on its own. Their sorted dimension (top_k's last) is computed whole.

`gather` and `scatter` on a table split along its indexed dimension, and scatters of
split updates, are rewritten by `partition_gather` (shifted indices, masked rows; the
kind's identity, an all_reduce of the kind and a combine with the operand).

`hlo.while` and `hlo.case` keep their regions: each carried value (a case's result) has
the one sharding propagation gave it (`spmd.result_shardings`), the operands are resharded
to it, the ops of each region are partitioned like a function's (collectives inside a body
run every iteration), what `do` and each branch return is resharded to it, and the
predicate and the index are replicated.

Uneven splits (blocks of ceil(n / f), padded at the end): an op that `pads_safely` keeps
an uneven split and computes on the padded blocks; a reduce or dot whose reduced
(contracting) dimension is padded first sets the padding to the reduction's identity
(`padding_masks`). Every other op gets evenly split operands (the resharder gathers an
uneven dimension and slices its padding off). The function records the global shape of
an unevenly split argument or result in `spmd.global_shape`; the partitioner keeps each
value's global shape in `global_shapes` (local x split is the padded shape).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from shardc.diagnostics import OpPassError, op_position
from shardc.dialects import collective, hlo, spmd
from shardc.dialects.spmd import (
    GLOBAL_SHAPE_ATTR_NAME,
    PARTITIONED_ATTR_NAME,
    SHARDING_ATTR_NAME,
    MeshAttr,
    ShardingAttr,
)
from shardc.dialects.syntax import i64_array, i64_attr, splat_elements
from shardc.hardware.chips import CHIPS
from shardc.hardware.cost import CostModel, cached
from shardc.passes.collective_stats import CollectiveStats
from shardc.passes.padding_masks import identity, mask_padding
from shardc.passes.partition_cost import (
    CHOICE_OPS,
    Choice,
    OpPlanner,
    Plan,
    PlanCoster,
    candidate_factors,
    choose,
    explain_line,
)
from shardc.passes.partition_gather import combine_scattered, mask_gather, shift_scatter
from shardc.passes.resharding import Layout, Resharder, layout, local_type
from shardc.passes.rewrite_utils import check_option
from shardc.passes.sharding_rules import (
    Axes,
    FactorRule,
    factor_axes_from,
    factor_rule,
    fit_axes,
    make_sharding,
    pads_safely,
    project,
    replicated,
    rng_bit_generator_shardings,
    without_unreduced,
)
from shardc.passes.spmd_propagate import (
    ORIGIN_ATTR_NAME,
    RESULT_SHARDINGS_ATTR_NAME,
    global_functions,
)
from shardc.passes.spmd_reduce_body import combine_partials
from shardc.passes.spmd_windows import aligned_halo_factors, exchange_halos
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    ModuleOp,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter


def localize_conv_groups(op: hlo.ConvolutionOp, global_type: TensorType, local: TensorType) -> None:
    """
    A convolution whose group factor is split (`sharding_rules._convolution_rule`) holds
    G / n whole groups per device: its feature or batch group count becomes that.
    """
    d = op.out_dims_[1]
    blocks = global_type.get_shape()[d] // local.get_shape()[d]
    if op.feature_groups > 1:
        op.feature_group_count = i64_attr(op.feature_groups // blocks)
    elif op.batch_groups > 1:
        op.batch_group_count = i64_attr(op.batch_groups // blocks)


@dataclass
class FunctionPartitioner:
    """Partitions one function in place."""

    function: func.FuncOp
    mesh_name: str
    mesh: MeshAttr
    actual: dict[SSAValue, ShardingAttr] = field(default_factory=dict[SSAValue, ShardingAttr])
    resharder: Resharder = field(init=False)
    global_shapes: dict[SSAValue, tuple[int, ...]] = field(
        default_factory=dict[SSAValue, tuple[int, ...]]
    )
    """A value's global shape (a value whose type changes is a new SSA value)."""
    resharded: dict[tuple[SSAValue, Layout], SSAValue] = field(
        default_factory=dict[tuple[SSAValue, Layout], SSAValue]
    )
    coster: PlanCoster | None = None
    costed: bool = False
    """Whether the op being partitioned had its plans costed (its compute counted)."""
    hideable: float = 0.0
    """Compute of the ops partitioned so far with no collective under it yet: what a later
    reshard of a function argument may hide behind (`Plan.finish`)."""
    issued: bool = False
    """Whether a collective was inserted for an op partitioned so far: later candidates
    are priced as issued together with it (`OpPlanner.together`)."""
    """Prices the candidates of the ops with a choice (None: `choose_factors` as it is)."""
    explain: bool = False
    """Print each choice with its estimated time and the runners-up (stderr)."""
    chosen_factors: dict[tuple[object, ...], tuple[Axes, ...]] = field(
        default_factory=dict[tuple[object, ...], tuple[Axes, ...]]
    )
    """`choose_factors`'s answers by what they depend on."""

    def __post_init__(self) -> None:
        self.resharder = Resharder(self.mesh_name, self.mesh)

    def global_shape(self, value: SSAValue) -> tuple[int, ...]:
        shape = self.global_shapes.get(value)
        if shape is None:
            shape = _global_shape(value, self.actual.get(value), self.mesh)
            self.global_shapes[value] = shape
        return shape

    def wanted(self, value: SSAValue) -> ShardingAttr:
        """The sharding propagation chose for an op result (replicated if none)."""
        owner = value.owner
        if isinstance(owner, Operation):
            s = owner.attributes.get(SHARDING_ATTR_NAME)
            if isinstance(s, ShardingAttr):
                return s
        return replicated(self.mesh_name, len(_shape(value)))

    def run(self) -> None:
        block = self.function.body.block
        args, results = spmd.function_shardings(self.function)
        result_shapes = [_shape(v) for v in self.function.function_type.outputs.data]
        for arg, sharding in zip(list(block.args), args, strict=False):
            sharding = sharding or replicated(self.mesh_name, len(_shape(arg)))
            shape = _shape(arg)
            new = Rewriter.replace_value_with_new_type(
                arg, local_type(_tensor(arg), sharding, self.mesh)
            )
            self.actual[new] = sharding
            self.global_shapes[new] = shape
        self.partition_block(block, results)
        self.function.attributes[PARTITIONED_ATTR_NAME] = UnitAttr()
        ret = block.last_op
        assert ret is not None
        self.function.function_type = FunctionType.from_lists(
            [a.type for a in block.args], [v.type for v in ret.operands]
        )
        arg_shapes = [self.global_shapes[a] for a in block.args]
        mark_uneven(self.function, self.mesh, arg_shapes, result_shapes)

    def partition_block(self, block: Block, results: Sequence[ShardingAttr | None]) -> None:
        """Partition a block's ops; its terminator returns values sharded by `results`."""
        for op in list(block.ops):
            self.resharder.location = op.location  # what it inserts for `op` reports `op`
            if isinstance(op, func.ReturnOp | hlo.ReturnOp):
                self.partition_return(op, results)
            elif isinstance(op, spmd.ConstraintOp):
                self.partition_constraint(op)
            elif isinstance(op, spmd.ManualComputationOp):
                self.partition_manual(op)
            elif isinstance(op, hlo.PartitionIdOp | hlo.ReplicaIdOp):
                self.partition_device_id(op)
            elif isinstance(op, hlo.WhileOp | hlo.CaseOp):
                self.partition_region_op(op)
            elif isinstance(op, hlo.RngBitGeneratorOp):
                self.partition_rng(op)
            else:
                self.partition_op(op)
            if not self.issued:
                self.issued = any(
                    isinstance(o, collective.CollectiveOp) for o in self.resharder.inserted
                )

    def partition_region_op(self, op: hlo.WhileOp | hlo.CaseOp) -> None:
        """
        A while's carried value k (operand, block arguments, `do`'s returned value, result)
        and a case's result k (and what each branch returns) take result k's sharding;
        the predicate and the index are replicated. Regions are partitioned like blocks.
        """
        shardings = self.result_shardings(op)
        scalar = replicated(self.mesh_name, 0)
        if isinstance(op, hlo.WhileOp):
            for k in range(len(op.inputs)):
                self.reshard_operand(op, k, shardings[k])
            for region in op.regions:
                for arg, sharding in zip(list(region.block.args), shardings, strict=True):
                    new = Rewriter.replace_value_with_new_type(
                        arg, local_type(_tensor(arg), sharding, self.mesh)
                    )
                    self.actual[new] = sharding
            blocks = [(op.cond.block, [scalar]), (op.body.block, shardings)]
        else:
            self.reshard_operand(op, 0, scalar)
            blocks = [(region.block, shardings) for region in op.branches]
        for block, returned in blocks:
            # a value resharded inside a region is not available after it
            outside = dict(self.resharded)
            self.partition_block(block, returned)
            self.resharded = outside
        self.resharder.location = op.location
        for name in (SHARDING_ATTR_NAME, ORIGIN_ATTR_NAME, RESULT_SHARDINGS_ATTR_NAME):
            op.attributes.pop(name, None)
        for result, sharding in zip(list(op.results), shardings, strict=True):
            new = Rewriter.replace_value_with_new_type(
                result, local_type(_tensor(result), sharding, self.mesh)
            )
            self.actual[new] = sharding

    def result_shardings(self, op: Operation) -> list[ShardingAttr]:
        """Each result's sharding as propagation chose it (`spmd.result_shardings`)."""
        chosen = op.attributes.get(RESULT_SHARDINGS_ATTR_NAME)
        if isinstance(chosen, ArrayAttr) and len(chosen.data) == len(op.results):
            return [s for s in chosen.data if isinstance(s, ShardingAttr)]
        return [replicated(self.mesh_name, len(_shape(r))) for r in op.results]

    def reshard_operand(self, op: Operation, index: int, target: ShardingAttr) -> None:
        """
        Give `op` its operand laid out by `target`. A value resharded once is reused by
        later users wanting the same layout (the block is straight-line: the first reshard
        dominates them), so a value used by many ops is moved once, not once per use.
        """
        value = op.operands[index]
        key = (value, layout(target))
        new = self.resharded.get(key)
        shape = self.global_shape(value)
        if new is None:
            new = self.resharder.reshard(value, self.actual[value], target, op, shape)
            self.resharded[key] = new
        if new is not value:
            op.operands[index] = new
            self.actual[new] = target
            self.global_shapes[new] = shape

    def partition_return(
        self, op: func.ReturnOp | hlo.ReturnOp, results: Sequence[ShardingAttr | None]
    ) -> None:
        for i, (value, sharding) in enumerate(zip(op.operands, results, strict=False)):
            self.reshard_operand(op, i, sharding or replicated(self.mesh_name, len(_shape(value))))

    def partition_constraint(self, op: spmd.ConstraintOp) -> None:
        self.reshard_operand(op, 0, op.sharding)
        op.result.replace_all_uses_with(op.input)
        Rewriter.erase_op(op)

    def partition_manual(self, op: spmd.ManualComputationOp) -> None:
        """
        shard_map: operands resharded to the in-shardings' manual axes, then the body
        (already per-device code, replicated along the free axes) inlined; its results are
        the local values of the out-shardings' manual axes (users reshard them to what they
        want, the out-shardings' free axes included).
        """
        ins = [spmd.manual_part(s, op.axes) for s in op.in_shardings.data]
        outs = [spmd.manual_part(s, op.axes) for s in op.out_shardings.data]
        for i, s in enumerate(ins):
            self.reshard_operand(op, i, s)
        block = op.body.block
        ret = block.last_op
        assert isinstance(ret, spmd.ReturnOp)
        returned: list[SSAValue] = []
        for v in ret.values:
            if isinstance(v, BlockArgument) and v.owner is block:
                # an argument returned as it is: a value of its own (its sharding may differ)
                copy = hlo.ReshapeOp(op.args[v.index], v.type)
                copy.location = op.location
                Rewriter.insert_op(copy, InsertPoint.before(op))
                v = copy.result
            returned.append(v)
        Rewriter.erase_op(ret)
        Rewriter.inline_block(block, InsertPoint.before(op), op.args)
        for r, v, s in zip(op.outs, returned, outs, strict=True):
            r.replace_all_uses_with(v)
            self.actual[v] = s
        Rewriter.erase_op(op)

    def partition_device_id(self, op: hlo.PartitionIdOp | hlo.ReplicaIdOp) -> None:
        """Outside a manual computation a level-G program is one partition: the id is 0."""
        ty = _tensor(op.result)
        zero = hlo.ConstantOp(splat_elements(ty, 0))
        zero.location = op.location
        Rewriter.replace_op(op, zero)
        self.actual[zero.result] = replicated(self.mesh_name, 0)

    def partition_rng(self, op: hlo.RngBitGeneratorOp) -> None:
        """
        rng_bit_generator (`rng_bit_generator_shardings`): the state replicated, the bits
        generated whole on every device, then each result resharded to its sharding (a
        split is a local slice of the whole: no communication).
        """
        chosen = self.result_shardings(op)
        state, _, _ = rng_bit_generator_shardings(op, self.mesh_name, None)
        self.reshard_operand(op, 0, state)
        for name in (SHARDING_ATTR_NAME, ORIGIN_ATTR_NAME, RESULT_SHARDINGS_ATTR_NAME):
            op.attributes.pop(name, None)
        for result, want in zip(list(op.results), chosen, strict=True):
            whole = replicated(self.mesh_name, len(_shape(result)))
            self.actual[result] = whole
            self.global_shapes[result] = _shape(result)
            self.reshard_result(op, result, whole, without_unreduced(want))

    def partition_op(self, op: Operation) -> None:
        self.resharder.inserted.clear()
        rule = factor_rule(op, self.global_shape)
        if rule is None or not op.results:
            raise OpPassError(op, f"spmd-partition has no rule for {op.name}")
        result = op.results[0]
        want = self.wanted(result)
        factors = self.choose_factors(op, rule, want)
        self.costed = False
        if self.coster is not None and isinstance(op, CHOICE_OPS):
            factors, want = self.choose_by_cost(op, rule, want, factors)
        uneven = pads_safely(op)
        for i, (dims, operand) in enumerate(
            zip(rule.operand_dims, list(op.operands), strict=False)
        ):
            shape = self.global_shape(operand)
            target = project(self.mesh_name, dims, factors, shape, self.mesh, uneven)
            self.reshard_operand(op, i, target)
        if isinstance(op, hlo.ReduceOp) and op.has_body:
            return self.partition_reduce_body(op, rule, factors, want)
        self.mask_reduced_padding(op, rule, factors)
        if len(op.results) > 1:
            return self.localize_results(op, rule, factors, want)
        natural = project(
            self.mesh_name, rule.result_dims, factors, _shape(result), self.mesh, uneven
        )
        pending = [a for f in sorted(rule.reduction_factors) for a in factors[f]]
        shape = _shape(result)
        result = self.localize(op, natural)
        if self.coster is not None and not self.costed:  # its compute: see `hideable`
            self.hideable += self.coster.model.op_cost(op).time
        if pending:
            result = self.finish_reduction(op, result, pending)
            natural = make_sharding(
                self.mesh_name, natural.dim_axes, _pending_unreduced(op, pending)
            )
        self.global_shapes[result] = shape
        self.actual[result] = natural
        for name in (SHARDING_ATTR_NAME, ORIGIN_ATTR_NAME):
            op.attributes.pop(name, None)
        self.reshard_result(op, result, natural, want)

    def localize_results(
        self, op: Operation, rule: FactorRule, factors: list[Axes], want: ShardingAttr
    ) -> None:
        """
        An op with several results sharing `rule.result_dims` and no reduction factors
        (sort, top_k): each result takes its local type, then the sharding chosen for it.
        """
        assert not rule.reduction_factors, op.name
        uneven = pads_safely(op)
        for name in (SHARDING_ATTR_NAME, ORIGIN_ATTR_NAME):
            op.attributes.pop(name, None)
        for result in list(op.results):
            natural = project(
                self.mesh_name, rule.result_dims, factors, _shape(result), self.mesh, uneven
            )
            local = local_type(_tensor(result), natural, self.mesh)
            shape = _shape(result)
            new = Rewriter.replace_value_with_new_type(result, local)
            self.actual[new] = natural
            self.global_shapes[new] = shape
            self.reshard_result(op, new, natural, want)

    def partition_reduce_body(
        self, op: hlo.ReduceOp, rule: FactorRule, factors: list[Axes], want: ShardingAttr
    ) -> None:
        """
        A reduce with a body: each device reduces its block; partial results over split
        reduced dimensions are combined by `spmd_reduce_body.combine_partials`.
        """
        for name in (SHARDING_ATTR_NAME, ORIGIN_ATTR_NAME):
            op.attributes.pop(name, None)
        natural = project(
            self.mesh_name, rule.result_dims, factors, _shape(op.results[0]), self.mesh
        )
        results = [
            Rewriter.replace_value_with_new_type(r, local_type(_tensor(r), natural, self.mesh))
            for r in list(op.results)
        ]
        pending = tuple(a for f in sorted(rule.reduction_factors) for a in factors[f])
        if pending:
            anchor = op.next_op
            assert anchor is not None
            self.resharder.anchor = anchor
            since = len(self.resharder.inserted)
            combined = combine_partials(self.resharder, op, results, pending)
            for old, new in zip(results, combined, strict=True):
                self.redirect_uses(old, new, since)
            results = combined
        for r in results:
            self.actual[r] = natural
            self.reshard_result(op, r, natural, want)

    def choose_factors(self, op: Operation, rule: FactorRule, want: ShardingAttr) -> list[Axes]:
        """Reduced factors from the operands as they are, then the rest from `want`
        (remembered by what they depend on: a program repeats its ops, issue 14 item 7)."""
        if rule.halo_factors:  # aligned by the op's window attributes too: not remembered
            return self._choose_factors(op, rule, want)
        key = (
            rule,
            pads_safely(op),
            tuple(
                (layout(self.actual[o]), self.global_shape(o))
                for _, o in zip(rule.operand_dims, op.operands, strict=False)
            ),
            layout(want),
            tuple(self.global_shape(r) for r in op.results),
        )
        found = self.chosen_factors.get(key)
        if found is None:
            found = self.chosen_factors[key] = tuple(self._choose_factors(op, rule, want))
        return list(found)

    def _choose_factors(self, op: Operation, rule: FactorRule, want: ShardingAttr) -> list[Axes]:
        factors: list[Axes] = [()] * rule.factor_count
        used: set[str] = set()
        for dims, operand in zip(rule.operand_dims, op.operands, strict=False):
            from_operand = factor_axes_from(rule, dims, self.actual[operand])
            for f in rule.reduction_factors:
                axes = from_operand[f]
                if axes and not factors[f] and not used.intersection(axes):
                    factors[f] = axes
                    used.update(axes)
        for f, axes in enumerate(factor_axes_from(rule, rule.result_dims, want)):
            if axes and f not in rule.unsplittable_factors:
                kept = tuple(a for a in axes if a not in used)
                factors[f] = kept
                used.update(kept)
        return self.settle(op, rule, factors)

    def settle(self, op: Operation, rule: FactorRule, factors: list[Axes]) -> list[Axes]:
        """Factors fitted to the tensors' sizes, windowed ones aligned for halo exchange."""
        factors = self.fit(op, rule, factors)
        if not rule.halo_factors:
            return factors
        shape = self.global_shape(op.operands[0])
        return aligned_halo_factors(op, rule, factors, self.mesh, shape)

    def choose_by_cost(
        self, op: Operation, rule: FactorRule, want: ShardingAttr, today: list[Axes]
    ) -> tuple[list[Axes], ShardingAttr]:
        """
        The cheapest of the op's candidate factor assignments (`partition_cost`), today's
        `choose_factors` first so that a tie keeps it, and the sharding its result is
        resharded to: `want`, or the one all its users need when they agree on another
        (`users_target`). With `explain`, one line on stderr.
        """
        assert self.coster is not None
        actual = [self.actual[o] for o in op.operands]
        theirs = self.users_target(op)
        key = self.choice_key(op, rule, want, today, actual, theirs)
        choice = self.coster.choices.get(key) if key is not None else None
        if choice is None:
            choice = self.candidates(op, rule, want, today, actual, theirs)
            if key is not None:
                self.coster.choices[key] = choice
        if len(choice.options) == 1:
            return today, want
        reused = tuple(
            (operand, target) in self.resharded
            for targets in choice.targets
            for operand, target in zip(op.operands, targets, strict=False)
        )
        plans = choice.plans.get(reused)
        if plans is None:
            plans = choice.plans[reused] = self.plans(op, rule, actual, choice.options)
        chosen = choose(plans, self.hideable)
        if self.explain:
            line = explain_line(op_position(op) or "<unknown>", op, plans, chosen, self.hideable)
            print(line, file=sys.stderr)
        best = plans[chosen]
        self.hideable += best.compute - min(best.early, self.hideable)
        self.costed = True
        return list(plans[chosen].factors), choice.options[chosen][1]

    def choice_key(
        self,
        op: Operation,
        rule: FactorRule,
        want: ShardingAttr,
        today: list[Axes],
        actual: list[ShardingAttr],
        theirs: ShardingAttr | None,
    ) -> tuple[object, ...] | None:
        """
        What `candidates` and each candidate's plan (`OpPlanner.plan`'s key, but for which
        operands are resharded already: `Choice.plans`) depend on, so that a program of many
        alike ops (issue 14 item 7: a third of the pass at 10k ops) weighs each kind once.
        None where the op's window attributes matter too (halo factors: not remembered).
        """
        if rule.halo_factors:
            return None
        return (
            op.name,
            rule,
            pads_safely(op),
            tuple(o.type for o in op.operands),
            tuple(r.type for r in op.results),
            tuple(self.global_shape(o) for o in op.operands),
            tuple(layout(a) for a in actual),
            layout(want),
            None if theirs is None else layout(theirs),
            tuple(today),
            tuple(_is_argument(o) for o in op.operands),
            self.issued,
        )

    def candidates(
        self,
        op: Operation,
        rule: FactorRule,
        want: ShardingAttr,
        today: list[Axes],
        actual: list[ShardingAttr],
        theirs: ShardingAttr | None,
    ) -> Choice:
        """The op's candidates (`partition_cost.candidate_factors`, settled), each with the
        result sharding it targets, and the layouts each candidate gives the operands."""
        options: list[tuple[list[Axes], ShardingAttr]] = [(today, want)]
        targets = [want]
        if theirs is not None and theirs != want:
            targets.append(theirs)
        for target in targets:
            for f in candidate_factors(rule, actual, target, today):
                if (settled := (self.settle(op, rule, f), target)) not in options:
                    options.append(settled)
        uneven = pads_safely(op)
        layouts = [
            tuple(
                layout(
                    project(self.mesh_name, dims, factors, self.global_shape(o), self.mesh, uneven)
                )
                for dims, o in zip(rule.operand_dims, op.operands, strict=False)
            )
            for factors, _ in options
        ]
        return Choice(options, layouts)

    def plans(
        self,
        op: Operation,
        rule: FactorRule,
        actual: list[ShardingAttr],
        options: list[tuple[list[Axes], ShardingAttr]],
    ) -> list[Plan]:
        """Each candidate priced (`partition_cost.OpPlanner`)."""
        assert self.coster is not None
        uneven = pads_safely(op)
        planner = OpPlanner(
            self.coster,
            op,
            rule,
            self.global_shape,
            actual,
            lambda i, target: (op.operands[i], layout(target)) in self.resharded,
            lambda dims, factors, shape: project(
                self.mesh_name, dims, factors, shape, self.mesh, uneven
            ),
            lambda pending: _kept_pending(op, pending),
            lambda i: _is_argument(op.operands[i]),
            self.issued,
        )
        return [planner.plan(f, target) for f, target in options]

    def users_target(self, op: Operation) -> ShardingAttr | None:
        """
        The sharding every user of `op`'s one result will reshard it to, when all users
        are ops without a choice of their own (no reduced factor, not `CHOICE_OPS`: their
        operand sharding follows from their result's, `choose_factors`) and agree: the op
        may produce that sharding directly instead of `want` (a partial sum
        reduce-scattered into it rather than all-reduced and sliced again).
        """
        if len(op.results) != 1 or not op.results[0].uses:
            return None
        value = op.results[0]
        shape = self.global_shape(value)
        found: ShardingAttr | None = None
        for use in value.uses:
            user = use.operation
            if isinstance(user, CHOICE_OPS) or not user.results:
                return None
            if isinstance(user, spmd.ConstraintOp):  # resharded to its own sharding
                need = without_unreduced(user.sharding)
                if found is not None and need != found:
                    return None
                found = need
                continue
            rule = factor_rule(user, self.global_shape)
            if rule is None or rule.reduction_factors or use.index >= len(rule.operand_dims):
                return None
            factors: list[Axes] = [
                () if axes is None or f in rule.unsplittable_factors else axes
                for f, axes in enumerate(
                    factor_axes_from(rule, rule.result_dims, self.wanted(user.results[0]))
                )
            ]
            factors = self.settle(user, rule, factors)  # `choose_factors` without reductions
            dims = rule.operand_dims[use.index]
            need = project(self.mesh_name, dims, factors, shape, self.mesh, pads_safely(user))
            if found is not None and need != found:
                return None
            found = need
        return found

    def fit(self, op: Operation, rule: FactorRule, factors: list[Axes]) -> list[Axes]:
        tensors = [(rule.result_dims, r) for r in op.results] + list(
            zip(rule.operand_dims, op.operands, strict=False)
        )
        uneven = pads_safely(op)
        for dims, value in tensors:
            shape = self.global_shape(value)
            for f, d in enumerate(dims):
                if d is not None:
                    factors[f] = fit_axes(factors[f], shape[d], self.mesh, uneven)
        return factors

    def mask_reduced_padding(self, op: Operation, rule: FactorRule, factors: list[Axes]) -> None:
        """
        Before a reduce or dot whose reduced (contracting) dimension is split unevenly,
        set that dimension's padding to the reduction's identity (zero for a dot, on both
        operands), so the padding never reaches the result (`padding_masks`).
        """
        if not isinstance(op, hlo.ReduceOp | hlo.DotOp):
            return
        kind = op.kind.data if isinstance(op, hlo.ReduceOp) else "add"
        self.resharder.anchor = op
        for i, (dims, operand) in enumerate(zip(rule.operand_dims, op.operands, strict=False)):
            shape = self.global_shape(operand)
            padded = [
                (d, factors[f], shape[d])
                for f in sorted(rule.reduction_factors)
                if (d := dims[f]) is not None
                and factors[f]
                and shape[d] % self.resharder._size(factors[f])  # pyright: ignore[reportPrivateUsage]
            ]
            if not padded:
                continue
            fill = identity(kind, _tensor(operand).element_type)
            masked = mask_padding(self.resharder, operand, padded, fill)
            op.operands[i] = masked
            self.actual[masked] = self.actual[operand]
            self.global_shapes[masked] = shape

    def localize(self, op: Operation, natural: ShardingAttr) -> SSAValue:
        """Rewrite `op` in place to local types (and local attributes where they differ)."""
        result = op.results[0]
        global_type = _tensor(result)
        local = local_type(global_type, natural, self.mesh)
        if isinstance(op, hlo.SliceOp):
            limits = [
                local.get_shape()[d] if (lo, hi, st) == (0, global_type.get_shape()[d], 1) else hi
                for d, (lo, hi, st) in enumerate(op.bounds)
            ]
            op.limit_indices = i64_array(limits)
        elif isinstance(op, hlo.DynamicSliceOp):
            op.slice_sizes = i64_array(local.get_shape())
        elif isinstance(op, hlo.ConstantOp):
            return self.localize_constant(op, natural, local)
        elif isinstance(op, hlo.ConvolutionOp):
            localize_conv_groups(op, global_type, local)
        elif isinstance(op, hlo.ReduceWindowOp | hlo.SelectAndScatterOp):
            shape = self.global_shape(op.operand)
            exchange_halos(self.resharder, op, natural, self.mesh, shape)
        new = Rewriter.replace_value_with_new_type(result, local)
        if isinstance(op, hlo.IotaOp):
            return self.offset_iota(op, new, natural)
        if isinstance(op, hlo.ReverseOp):
            return self.mirror_reversed_blocks(op, new, natural)
        if isinstance(op, hlo.GatherOp | hlo.ScatterOp):
            return self.localize_indexed(op, new)
        return new

    def localize_indexed(self, op: hlo.GatherOp | hlo.ScatterOp, value: SSAValue) -> SSAValue:
        """Gather/scatter from an operand split along its indexed dim (`partition_gather`)."""
        operand = op.operands[0]
        if isinstance(op, hlo.ScatterOp):
            shift_scatter(self.resharder, op, self.actual[operand])
            return value
        sizes, whole = op.dims("slice_sizes"), self.global_shape(operand)
        op.slice_sizes = i64_array(
            [n if s == g else s for s, g, n in zip(sizes, whole, _shape(operand), strict=True)]
        )
        since = len(self.resharder.inserted)
        masked = mask_gather(self.resharder, op, self.actual[operand], self.global_shape(operand))
        if masked is None:
            return value
        self.redirect_uses(value, masked[0], since)
        return masked[0]

    def localize_constant(
        self, op: hlo.ConstantOp, natural: ShardingAttr, local: TensorType
    ) -> SSAValue:
        if natural.is_replicated():
            return op.result
        if op.value.is_splat():
            splat = splat_elements(local, next(iter(op.value.iter_values())))  # pyright: ignore
            new_op = hlo.ConstantOp(splat)
            new_op.location = op.location
            Rewriter.replace_op(op, new_op)
            return new_op.result
        # A non-splat constant: materialize it whole, then keep this device's block.
        full = replicated(self.mesh_name, local.get_num_dims())
        self.actual[op.result] = full
        anchor = op.next_op
        assert anchor is not None
        since = len(self.resharder.inserted)
        shape = _shape(op.result)
        sliced = self.resharder.reshard(op.result, full, natural, anchor, shape)
        self.redirect_uses(op.result, sliced, since)
        return sliced

    def offset_iota(self, op: hlo.IotaOp, value: SSAValue, natural: ShardingAttr) -> SSAValue:
        """Shift a local iota along a split dimension by this device's block offset."""
        dim = op.iota_dimension.value.data
        axes = natural.dim_axes[dim]
        if not axes:
            return value
        ty = _tensor(value)
        anchor = op.next_op
        assert anchor is not None
        self.resharder.anchor = anchor
        since = len(self.resharder.inserted)
        index = self.resharder.shard_index(axes)
        block = self.resharder.constant_i32(ty.get_shape()[dim])
        offset = self.resharder._insert(hlo.MulOp(index, block)).results[0]  # pyright: ignore[reportPrivateUsage]
        converted = self.resharder._insert(  # pyright: ignore[reportPrivateUsage]
            hlo.ConvertOp(offset, TensorType(ty.element_type, []))
        ).results[0]
        spread = self.resharder._insert(hlo.BroadcastOp(converted, [], ty)).results[0]  # pyright: ignore[reportPrivateUsage]
        shifted = self.resharder._insert(hlo.AddOp(value, spread)).results[0]  # pyright: ignore[reportPrivateUsage]
        self.redirect_uses(value, shifted, since)
        return shifted

    def mirror_reversed_blocks(
        self, op: hlo.ReverseOp, value: SSAValue, natural: ShardingAttr
    ) -> SSAValue:
        """
        A reverse along dimensions split by axes (XLA's partitioned reverse): each device
        reverses its own block, which is the result's block at the mirrored index (block
        k of N holds what block N - 1 - k of the result needs), then one permute over the
        reversed dimensions' axes sends every block to the device at the mirrored
        coordinates. Dimensions not reversed keep their sharding and take no part.
        """
        split = {a for d in op.dims for a in natural.dim_axes[d]}
        axes = [a for a in self.mesh.names if a in split]
        if not axes:
            return value
        anchor = op.next_op
        assert anchor is not None
        self.resharder.anchor = anchor
        since = len(self.resharder.inserted)
        mirrored = self.resharder.mirror_blocks(value, axes)
        self.redirect_uses(value, mirrored, since)
        return mirrored

    def finish_reduction(self, op: Operation, result: SSAValue, axes: list[str]) -> SSAValue:
        """
        A reduce of kind mul/max/min over split dims is all-reduced at once; so is a
        scatter of split updates (`partition_gather.combine_scattered`).
        """
        if isinstance(op, hlo.ScatterOp):
            since = len(self.resharder.inserted)
            combined = combine_scattered(self.resharder, op, axes)
            self.redirect_uses(result, combined, since)
            return combined
        if isinstance(op, hlo.ReduceOp) and op.kind.data != "add":
            anchor = op.next_op
            assert anchor is not None
            self.resharder.anchor = anchor
            since = len(self.resharder.inserted)
            reduced = self.resharder.all_reduce(result, axes, op.kind.data)
            self.redirect_uses(result, reduced, since)
            return reduced
        return result

    def reshard_result(
        self, op: Operation, result: SSAValue, natural: ShardingAttr, want: ShardingAttr
    ) -> None:
        """Reshard a result once, right after its op, to the sharding chosen for it."""
        if natural == want:
            return
        anchor = (result.owner if isinstance(result.owner, Operation) else op).next_op
        assert anchor is not None
        since = len(self.resharder.inserted)
        shape = self.global_shape(result)
        new = self.resharder.reshard(result, natural, want, anchor, shape)
        self.redirect_uses(result, new, since)
        self.actual[new] = want
        self.global_shapes[new] = shape

    def redirect_uses(self, old: SSAValue, new: SSAValue, since: int) -> None:
        """Uses of `old`, except by the ops inserted (since `since`) to compute `new`, use `new`."""
        inserted = set(self.resharder.inserted[since:])
        old.replace_uses_with_if(new, lambda use: use.operation not in inserted)


def mark_uneven(
    function: func.FuncOp,
    mesh: MeshAttr,
    arg_shapes: list[tuple[int, ...]],
    result_shapes: list[tuple[int, ...]],
) -> None:
    """Write `spmd.global_shape` on the arguments and results split unevenly (padded)."""
    args, results = spmd.function_shardings(function)

    def marked(
        attrs: ArrayAttr[DictionaryAttr] | None,
        shardings: list[ShardingAttr | None],
        shapes: list[tuple[int, ...]],
    ) -> ArrayAttr[DictionaryAttr] | None:
        dicts = [dict(d.data) for d in attrs.data] if attrs else [{} for _ in shapes]
        changed = False
        for i, (sharding, shape) in enumerate(zip(shardings, shapes, strict=False)):
            if sharding is not None and sharding.is_uneven(shape, mesh):
                dicts[i][GLOBAL_SHAPE_ATTR_NAME] = DenseArrayBase.from_list(i64, shape)
                changed = True
        return ArrayAttr(DictionaryAttr(d) for d in dicts) if changed else attrs

    function.arg_attrs = marked(function.arg_attrs, args, arg_shapes)
    function.res_attrs = marked(function.res_attrs, results, result_shapes)


def _pending_unreduced(op: Operation, axes: list[str]) -> list[str]:
    """Partial sums stay pending (`unreduced`) only for sums: dots and add-reduces."""
    if isinstance(op, hlo.ReduceOp) and op.kind.data != "add" or isinstance(op, hlo.ScatterOp):
        return []
    return axes


def _kept_pending(op: Operation, axes: list[str]) -> list[str]:
    """`_pending_unreduced`, and none for a reduce with a body (combined at once)."""
    if isinstance(op, hlo.ReduceOp) and op.has_body:
        return []
    return _pending_unreduced(op, axes)


def _tensor(value: SSAValue) -> TensorType:
    ty = value.type
    assert isinstance(ty, TensorType)
    return ty


def _shape(value: SSAValue | Attribute) -> tuple[int, ...]:
    ty = value if isinstance(value, TensorType) else _tensor(value)  # pyright: ignore
    return ty.get_shape()


def _global_shape(value: SSAValue, actual: ShardingAttr | None, mesh: MeshAttr) -> tuple[int, ...]:
    """A value's global shape: operands are already local when their sharding is known."""
    shape = _shape(value)
    return actual.global_shape(shape, mesh) if actual is not None else shape


def refuse_open_shardings(function: func.FuncOp) -> None:
    """An open dimension (`{"a", ?}`) or a user priority (`p1`) is for `spmd-propagate`
    to decide: refuse one here."""
    args, results = spmd.function_shardings(function)
    for kind, shardings in (("argument", args), ("result", results)):
        for i, s in enumerate(shardings):
            if s is not None and (why := _undecided(s)):
                raise OpPassError(function, f"spmd-partition: the sharding of {kind} {i} {why}")
    for op in function.body.block.ops:
        s = op.attributes.get(SHARDING_ATTR_NAME)
        if isinstance(op, spmd.ConstraintOp):
            s = op.sharding
        if isinstance(s, ShardingAttr) and (why := _undecided(s)):
            raise OpPassError(op, f"spmd-partition: the sharding of {op.name} {why}")


def _undecided(s: ShardingAttr) -> str | None:
    if s.is_open():
        return "has an open dimension (`?`), which spmd-propagate decides: run spmd-propagate first"
    if s.has_priorities():
        return "has a user priority (`p<N>`), which spmd-propagate uses: run spmd-propagate first"
    return None


@dataclass(frozen=True)
class SpmdPartitionPass(ModulePass):
    """Rewrite global functions into per-device functions with collectives."""

    name = "spmd-partition"

    stats: bool = False
    """Print the collectives inserted (per kind, bytes per device) and resharding steps."""
    chip: str = "v5e"
    """The chip whose cost model prices the candidates of a dot, convolution, reduce,
    reshape or gather (`partition_cost`)."""
    explain: bool = False
    """For each op with a choice, print (stderr) the plan chosen and the runners-up, with
    their estimated times."""
    cost_based: bool = True
    """Choose by cost (false: each op keeps the contracting splits its operands have)."""

    def __post_init__(self) -> None:
        check_option(
            self.name, "chip", self.chip in CHIPS, f"one of {', '.join(CHIPS)}", f"'{self.chip}'"
        )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        mesh = spmd.module_mesh(op)
        if mesh is None:
            return
        steps = 0
        coster = None
        if self.cost_based:
            # remembered costs: the compute of every op (`hideable`) is asked for, and a
            # program repeats its ops
            coster = PlanCoster(*mesh, cached(CostModel(CHIPS[self.chip], mesh[1])))
        for function in global_functions(op):
            refuse_open_shardings(function)
            partitioner = FunctionPartitioner(function, *mesh, coster=coster, explain=self.explain)
            partitioner.run()
            steps += partitioner.resharder.steps
        if self.stats:
            summary = CollectiveStats.of(op)
            summary.reshard_steps = steps
            print(summary.format(), file=sys.stderr)


def _is_argument(value: SSAValue) -> bool:
    """A function argument: ready when the step starts."""
    return isinstance(value, BlockArgument) and isinstance(value.owner.parent_op(), func.FuncOp)
