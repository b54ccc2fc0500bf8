"""
`spmd-propagate`: give every value of a global program a sharding.

Starting from the user's annotations (argument and result `spmd.sharding`s, and
`spmd.constraint`s), shardings flow forward and backward through each op along its
factors (`sharding_rules`) until nothing changes. Each op then carries its result's
sharding as `spmd.sharding`; with `explain=true` also `spmd.origin`, saying where it came
from.

Conflict rules, in order (deterministic):
1. a value the user annotated keeps its annotation;
2. a value, once given a sharding, keeps it (later disagreement is resolved by the
   partitioner with a reshard);
3. when neighbours disagree on a factor, the one from the bigger tensor wins, annotated or
   not (moving the smaller one moves fewer bytes; Shardy's aggressive strategy: an FSDP
   weight's annotated split must not beat the bigger activations' batch split, which XLA
   keeps too); ties go to a source with no open dimension, then results before operands,
   then operand order (not to annotations: Shardy orders by tensor index);
4. an axis goes to one factor only; a value no annotation reaches is replicated.

Ops inside the regions of `hlo.while` and `hlo.case` propagate like top-level ops. A
while's carried value has one sharding, shared by its operand, the block arguments of
`cond` and `do`, the value `do` returns and the result (Shardy ties them the same way); a
case's result shares its sharding with what each branch returns (`tied_values`).

Open dimensions (Shardy's `{"a", ?}` / `{?}`, on arguments, results and constraints) are
the user's annotation for their closed part only: the value is seeded with the axes it
lists and its open dimensions may be extended (axes appended, minor) by propagation with
axes the sharding does not use elsewhere, as Shardy does. An open dimension decides no
factor (a closed `{}` decides "unsplit"), but the axes it lists are offered to its factor
(and a later source may extend them). Afterwards no sharding is left open: an open
dimension nothing constrained is closed as it is, and constraints and function results
are rewritten closed.

Op priorities (Shardy's op-priority propagation; `op-priorities=auto`, the default, uses
them in a function with an open dimension or a user priority, which is how `shardc-import` writes a Shardy
module, and not in others, whose propagation is as before; `on` / `off` force them):
propagation runs to a fixed point three times, each stage letting more ops propagate, so that cheap, unambiguous ops decide first:
1. element-wise ops, reshape, transpose and `spmd.constraint` in both directions;
   dynamic_slice / dynamic_update_slice forward only;
2. also every other op, but only along its pass-through factors (in every operand and the
   result, with the same size: a dot's batch dimensions, a reduce's kept ones); a
   broadcast only backward (result to operand);
3. every op along every factor, in both directions.
Within a stage the conflict rules below decide.

User priorities (Shardy's `{"a"}p1`; no priority is p0): the whole propagation above runs
once per priority level, lowest first, as Shardy's user-priority propagation. Until its
level's turn a dimension of a later priority is unsplit, decides no factor, and its axes
are reserved (no open dimension of that value takes them); at its turn it takes its axes
as written (open or closed). A function with priorities uses op priorities under `auto`.

Sliced dimensions (Shardy's permutation factors; `sliced-dims=auto`, the default, where op
priorities apply, so closed programs propagate as before; `on` / `off` force it): a
slice's sliced, a pad's padded and a concatenate's concatenated dimension carry a split
between operands and result (not a dynamic_slice's, as Shardy), though the partitioner
computes such a dimension whole (gathers, computes, and slices the result back).

Constants are split per use first (Shardy's constant splitting): a constant-like
expression (an `hlo.constant` or `hlo.iota`, and a broadcast, reshape, convert or transpose
of one) used by several ops gets one copy per use, so each use's sharding is its own and
no use forces a reshard on another (copies cost nothing: every device makes its block).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from shardc.diagnostics import OpPassError
from shardc.dialects import hlo, spmd
from shardc.dialects.sizes import value_bytes
from shardc.dialects.spmd import (
    PARTITIONED_ATTR_NAME,
    PER_DEVICE_IO_ATTR_NAME,
    SHARDING_ATTR_NAME,
    MeshAttr,
    ShardingAttr,
)
from shardc.passes.rewrite_utils import sites_only
from shardc.passes.sharding_rules import (
    Axes,
    FactorRule,
    factor_axes_from,
    fit_axes,
    make_sharding,
    pads_safely,
    project,
    propagation_rule,
    replicated,
    rng_bit_generator_shardings,
)
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import PassFailedException

ORIGIN_ATTR_NAME = "spmd.origin"
RESULT_SHARDINGS_ATTR_NAME = "spmd.result_shardings"
"""On `hlo.while` / `hlo.case`: every result's sharding (`spmd.sharding` holds the first's).
A while's carried value k keeps result k's sharding in both regions and across iterations."""


def describe(value: SSAValue) -> str:
    """`%x` (argument 0) or `%h` (hlo.dot) for messages."""
    name = f"%{value.name_hint}" if value.name_hint else "a value"
    if isinstance(value, BlockArgument):
        parent = value.block.parent_op()
        if parent is not None and not isinstance(parent, func.FuncOp):
            return f"{name} (carried value {value.index} of {parent.name})"
        return f"{name} (argument {value.index})"
    assert isinstance(value.owner, Operation)
    return f"{name} ({value.owner.name})"


@dataclass(frozen=True)
class Through:
    """A sharding propagated through an op, put in words only when asked (`explain`): most
    runs never ask, and the words cost as much as the propagation (issue 14 item 7)."""

    forward: bool
    op_name: str
    value: SSAValue
    contributors: list[SSAValue]

    def describe(self) -> str:
        froms = sorted({describe(v) for v in self.contributors if v is not self.value})
        direction = "forward" if self.forward else "backward"
        return f"{direction} through {self.op_name}" + (
            f" from {', '.join(froms)}" if froms else ""
        )


@dataclass
class ShardingPropagation:
    """The propagation state of one function."""

    function: func.FuncOp
    mesh_name: str
    mesh: MeshAttr
    known: dict[SSAValue, ShardingAttr] = field(default_factory=dict[SSAValue, ShardingAttr])
    origin: dict[SSAValue, str | Through] = field(default_factory=dict[SSAValue, "str | Through"])
    """Where each value's sharding came from (`origin_of`; `Through`: said when asked)."""
    fixed: set[SSAValue] = field(default_factory=set[SSAValue])
    open: dict[SSAValue, set[int]] = field(default_factory=dict[SSAValue, set[int]])
    rules: dict[Operation, FactorRule | None] = field(
        default_factory=dict[Operation, FactorRule | None]
    )
    stage: int = 2
    """The op-priority stage running (module docstring); the last lets every op propagate."""
    deferred: dict[SSAValue, ShardingAttr] = field(default_factory=dict[SSAValue, ShardingAttr])
    """Annotations with dimensions of a user priority above 0, as written (see `seed_annotation`)."""
    reserved: dict[SSAValue, set[str]] = field(default_factory=dict[SSAValue, set[str]])
    """Axes a deferred dimension will take at its priority: no open dimension may take them."""
    pending: dict[SSAValue, set[int]] = field(default_factory=dict[SSAValue, set[int]])
    """Deferred dimensions before their priority's turn: unsplit, deciding no factor."""
    sliced_dims: bool = False
    """Propagate through sliced, padded and concatenated dimensions (Shardy's permutation
    factors; the partitioner still computes them whole)."""

    def fix(self, value: SSAValue, sharding: ShardingAttr, why: str) -> None:
        self.known[value] = sharding
        self.origin[value] = why
        self.fixed.add(value)

    def seed_annotation(self, value: SSAValue, sharding: ShardingAttr, why: str) -> None:
        """
        A user annotation: closed dimensions fixed, open ones left to propagation. A
        dimension with a user priority above 0 is closed and unsplit until its priority's
        turn (`apply_priority`), its axes reserved for it (as Shardy initializes it).
        """
        later = [d for d, p in enumerate(sharding.dim_priorities) if p]
        dims = [() if d in later else a for d, a in enumerate(sharding.dim_axes)]
        self.fix(value, ShardingAttr(self.mesh_name, dims, sharding.unreduced_axes), why)
        if sharding.is_open():
            self.open[value] = set(sharding.open_dims) - set(later)
        if later:
            self.deferred[value] = sharding
            self.pending[value] = set(later)
            self.reserved[value] = {a for d in later for a in sharding.dim_axes[d]}

    def priority_levels(self) -> list[int]:
        """The user priorities above 0 the annotations name, ascending."""
        return sorted({p for s in self.deferred.values() for p in s.dim_priorities if p})

    def apply_priority(self, level: int) -> None:
        """The dimensions of priority `level` take their annotation (Shardy's next round)."""
        for value, sharding in self.deferred.items():
            now = [d for d, p in enumerate(sharding.dim_priorities) if p == level]
            if not now:
                continue
            known = self.known[value]
            dims = [list(a) for a in known.dim_axes]
            opens = self.open.setdefault(value, set())
            for d in now:
                dims[d] = list(sharding.dim_axes[d])
                self.reserved[value].difference_update(dims[d])
                self.pending[value].discard(d)
                if d in sharding.open_dims:
                    opens.add(d)
            self.known[value] = ShardingAttr(self.mesh_name, dims, known.unreduced_axes)
            self.origin[value] = self.origin_of(value) + f", p{level} dimensions"

    def seed(self) -> None:
        """The user's annotations: arguments, constraints, then returned values."""
        args, results = spmd.function_shardings(self.function)
        block = self.function.body.block
        for i, (arg, sharding) in enumerate(zip(block.args, args, strict=False)):
            if sharding is None:
                self.fix(
                    arg,
                    replicated(self.mesh_name, _rank(arg)),
                    f"argument {i}: unannotated, replicated",
                )
            else:
                self.seed_annotation(arg, sharding, f"argument {i} annotation")
        for op in self.function.walk():
            if isinstance(op, spmd.ConstraintOp):
                self.seed_annotation(op.result, op.sharding, "spmd.constraint")
        self.seed_manual_computations()
        ret = block.last_op
        assert isinstance(ret, func.ReturnOp)
        for i, (value, sharding) in enumerate(zip(ret.arguments, results, strict=False)):
            if value in self.fixed:
                continue
            if sharding is None:
                self.fix(
                    value,
                    replicated(self.mesh_name, _rank(value)),
                    f"result {i}: unannotated, replicated",
                )
            else:
                self.seed_annotation(value, sharding, f"result {i} annotation")

    def seed_manual_computations(self) -> None:
        """
        A manual computation's boundary is fixed: its results have its out-shardings, and
        an operand no annotation fixed takes its in-sharding (so the auto-sharded code
        before it computes in the layout the shard_map wants, as Shardy propagates).
        """
        for op in self.function.body.block.ops:
            if not isinstance(op, spmd.ManualComputationOp):
                continue
            for i, (r, s) in enumerate(zip(op.outs, op.out_shardings.data, strict=True)):
                self.fix(r, s, f"spmd.manual_computation out_shardings[{i}]")
            for i, (v, s) in enumerate(zip(op.args, op.in_shardings.data, strict=True)):
                if v not in self.fixed:
                    self.fix(v, s, f"spmd.manual_computation in_shardings[{i}]")

    def run(self, op_priorities: bool | None = None, sliced_dims: bool | None = None) -> None:
        """Propagate (op priorities: None decides by whether an annotation is open or has a
        priority; sliced-dimension propagation: None as op priorities)."""
        self.seed()
        ops = propagated_ops(self.function)
        if op_priorities is None:
            op_priorities = any(self.open.values()) or bool(self.deferred)
        if sliced_dims is None:
            sliced_dims = op_priorities
        self.sliced_dims = sliced_dims
        first = 0 if op_priorities else len(OP_PRIORITY_STAGES) - 1
        self.run_stages(ops, first)
        for level in self.priority_levels():
            self.apply_priority(level)
            self.run_stages(ops, first)
        for op in ops:
            for value in (*op.operands, *op.results):
                if value not in self.known:
                    self.known[value] = replicated(self.mesh_name, _rank(value))
                    self.origin[value] = "no annotation reaches it: replicated"

    def run_stages(self, ops: list[Operation], first: int) -> None:
        """
        Propagate to a fixed point, once per op-priority stage from `first`. After each
        sweep the settled ops leave the sweeps (`settled`): within the stages a value's
        sharding is only ever completed (known values stay known, open dimensions only
        close), so `propagate` would return False on them at every later visit. The ops
        left keep their order, so what changes, and in which order, is as without it.
        """
        for stage in range(first, len(OP_PRIORITY_STAGES)):
            self.stage = stage
            changed = True
            while changed:
                changed = False
                for op in ops:
                    changed |= self.propagate(op)
                ops = [op for op in ops if not self.settled(op)]
                for op in reversed(ops):
                    changed |= self.propagate(op)
                ops = [op for op in ops if not self.settled(op)]

    def settled(self, op: Operation) -> bool:
        """Whether `propagate` returns False on `op` from now on in these stages: it has a
        rule and every operand and result is known and closed (`propagate`'s first test)."""
        return op in self.rules and all(
            v in self.known and not self.open.get(v) for v in (*op.results, *op.operands)
        )

    def propagate(self, op: Operation) -> bool:
        if isinstance(op, hlo.WhileOp | hlo.CaseOp):
            return any([self.propagate_tied(group) for group in tied_values(op)])
        if isinstance(op, hlo.RngBitGeneratorOp):
            return self.propagate_rng(op)
        if op not in self.rules:
            self.rules[op] = propagation_rule(op, self.sliced_dims)
        rule = self.rules[op]
        if rule is None:
            raise OpPassError(op, f"spmd-propagate has no sharding rule for {op.name}")
        if all(v in self.known and not self.open.get(v) for v in (*op.results, *op.operands)):
            return False
        forward, backward, only = op_priority_direction(self.stage, op, rule)
        if not forward and not backward:
            return False
        results = [(rule.result_dims, r) for r in op.results]
        operands = list(zip(rule.operand_dims, op.operands, strict=False))
        into = (results if forward else []) + (operands if backward else [])
        out_of = (results if backward else []) + (operands if forward else [])
        targets = [(d, v) for d, v in into if v not in self.known or self.open.get(v)]
        sources = [(dims, v) for dims, v in out_of if v in self.known]
        if not targets or not sources:
            return False
        # the bigger tensor first, annotated or not (conflict rule 3); among equals one
        # with no open dimension (the others decide less), then in order
        sources.sort(
            key=lambda s: (
                -value_bytes(s[1].type),
                bool(self.open.get(s[1])),
            )
        )
        factors, decided, source_of = self.choose_factors(rule, sources, only)
        factors = self.fit(rule, op, factors)
        uneven = pads_safely(op)
        changed = False
        for dims, value in targets:
            candidate = project(self.mesh_name, dims, factors, _shape(value), self.mesh, uneven)
            if value in self.known:
                if not self.refine(value, candidate):
                    continue
            else:
                self.known[value] = candidate
                self.open[value] = {
                    d for f, d in enumerate(dims) if d is not None and f not in decided
                }
            changed = True
            contributors = list(source_of.values()) or [v for _, v in sources]
            self.origin[value] = Through(value in op.results, op.name, value, contributors)
        return changed

    def origin_of(self, value: SSAValue) -> str:
        """Where `value`'s sharding came from, in words."""
        origin = self.origin[value]
        return origin if isinstance(origin, str) else origin.describe()

    def propagate_rng(self, op: hlo.RngBitGeneratorOp) -> bool:
        """
        The state (operand and output_state) is replicated (`rng_bit_generator_shardings`);
        the bits get their sharding from their users.
        """
        state, _, _ = rng_bit_generator_shardings(op, self.mesh_name, None)
        changed = False
        for value in (op.initial_state, op.output_state):
            if value not in self.known:
                self.known[value] = state
                self.origin[value] = "rng_bit_generator state: replicated"
                changed = True
        return changed

    def propagate_tied(self, group: list[SSAValue]) -> bool:
        """
        Values that must share one sharding (a while's carried value: operand, block
        arguments, returned value, result; a case's result and its branches' returned
        values): the others take the sharding of the first fixed, else known, one.
        """
        known = [v for v in group if v in self.known]
        if not known or len(known) == len(group) and not any(self.open.get(v) for v in group):
            return False
        known.sort(key=lambda v: (v not in self.fixed, len(self.open.get(v, ()))))
        source = known[0]
        changed = False
        for value in group:
            if value is source:
                continue
            if value not in self.known:
                self.known[value] = self.known[source]
                self.open[value] = set(self.open.get(source, ()))
            elif not self.open.get(value) or not self.refine(value, self.known[source]):
                continue
            changed = True
            self.origin[value] = f"tied to {describe(source)} (one sharding per carried value)"
        return changed

    def refine(self, value: SSAValue, candidate: ShardingAttr) -> bool:
        """
        Extend a value's open dimensions (ones no neighbour had decided, or the user left
        open) from `candidate`: axes appended to the ones a dimension has, none used
        elsewhere in the sharding.
        """
        known = self.known[value]
        dims = [list(a) for a in known.dim_axes]
        used = {a for d in dims for a in d} | set(known.unreduced_axes)
        used |= self.reserved.get(value, set())
        refined = False
        for d in sorted(self.open[value]):
            axes, have = list(candidate.dim_axes[d]), dims[d]
            extra = axes[len(have) :]
            if extra and axes[: len(have)] == have and not used.intersection(extra):
                dims[d] = axes
                used.update(extra)
                self.open[value].discard(d)
                refined = True
        if refined:
            self.known[value] = (
                ShardingAttr(self.mesh_name, dims, known.unreduced_axes)
                if known.unreduced_axes
                else make_sharding(self.mesh_name, dims)
            )
        return refined

    def choose_factors(
        self,
        rule: FactorRule,
        sources: list[tuple[tuple[int | None, ...], SSAValue]],
        only: frozenset[int] | None = None,
    ) -> tuple[list[Axes], set[int], dict[int, SSAValue]]:
        """
        Each factor's axes from the first source that splits it; `decided` holds the
        factors some source has a closed (not open) dimension for, split or not. Axes
        from an open dimension decide nothing, and a later source whose axes extend them
        (they are its major axes) replaces them.
        """
        factors: list[Axes | None] = [None] * rule.factor_count
        decided: set[int] = set()
        extendable: set[int] = set()
        source_of: dict[int, SSAValue] = {}
        used: set[str] = set()
        for dims, value in sources:
            open_dims = self.open.get(value, set()) | self.pending.get(value, set())
            for f, axes in enumerate(factor_axes_from(rule, dims, self.known[value])):
                if axes is None or (
                    f in rule.unsplittable_factors and f not in rule.permutation_factors
                ):
                    continue
                if only is not None and f not in only:
                    continue  # this stage does not propagate the factor (op priorities)
                is_open = dims[f] in open_dims
                if not is_open:
                    decided.add(f)
                if not axes:
                    continue
                have = factors[f]
                if have is not None:
                    if f in extendable and _extends(axes, have, used):
                        used.update(axes[len(have) :])
                        factors[f], source_of[f] = axes, value
                        if not is_open:
                            extendable.discard(f)
                    continue
                if used.intersection(axes):
                    continue
                factors[f] = axes
                source_of[f] = value
                used.update(axes)
                if is_open:
                    extendable.add(f)
        return [f or () for f in factors], decided, source_of

    def fit(self, rule: FactorRule, op: Operation, factors: list[Axes]) -> list[Axes]:
        """Each factor's axes cut to what divides every dimension it maps to."""
        fitted = list(factors)
        tensors = [(rule.result_dims, r) for r in op.results] + list(
            zip(rule.operand_dims, op.operands, strict=False)
        )
        uneven = pads_safely(op)
        for dims, value in tensors:
            shape = _shape(value)
            for f, d in enumerate(dims):
                if d is not None:
                    fitted[f] = fit_axes(fitted[f], shape[d], self.mesh, uneven)
        return fitted

    def annotate(self, explain: bool) -> None:
        """Write the result on the IR: each op's result sharding, every argument's and result's."""
        block = self.function.body.block
        for op in propagated_ops(self.function):
            if not op.results:
                continue
            op.attributes[SHARDING_ATTR_NAME] = self.known[op.results[0]]
            if isinstance(op, spmd.ConstraintOp) and (
                op.sharding.is_open() or op.sharding.has_priorities()
            ):
                op.sharding = self.known[op.result]
            if explain:
                op.attributes[ORIGIN_ATTR_NAME] = StringAttr(self.origin_of(op.results[0]))
            if isinstance(op, hlo.RngBitGeneratorOp):
                op.attributes[RESULT_SHARDINGS_ATTR_NAME] = ArrayAttr(
                    [self.known[r] for r in op.results]
                )
            if isinstance(op, hlo.WhileOp | hlo.CaseOp):
                # a while's carried sharding is its block arguments' (a result may be an
                # unannotated function result fixed replicated, resharded at the return)
                tied = op.body.block.args if isinstance(op, hlo.WhileOp) else op.results
                op.attributes[RESULT_SHARDINGS_ATTR_NAME] = ArrayAttr([self.known[v] for v in tied])
        args, results = spmd.function_shardings(self.function)
        self.function.arg_attrs = _with_shardings(
            self.function.arg_attrs, [self.known[a] for a in block.args]
        )
        ret = block.last_op
        assert isinstance(ret, func.ReturnOp)
        self.function.res_attrs = _with_shardings(
            self.function.res_attrs,
            [
                _closed_result(s, self.known[v])
                if s is not None and (s.is_open() or s.has_priorities())
                else s or replicated(self.mesh_name, _rank(v))
                for s, v in zip(results, ret.arguments, strict=False)
            ],
        )


def _extends(axes: Axes, have: Axes, used: set[str]) -> bool:
    """`axes` are `have` followed by more axes, none of them used yet."""
    n = len(have)
    return len(axes) > n and tuple(axes[:n]) == tuple(have) and not used.intersection(axes[n:])


def _closed_result(declared: ShardingAttr, found: ShardingAttr) -> ShardingAttr:
    """
    An open result annotation after propagation: what propagation found for the returned
    value if that agrees with the annotation's closed part, else the annotation closed.
    """
    ok = declared.unreduced_axes == found.unreduced_axes and all(
        f[: len(d)] == d if i in declared.open_dims else f == d
        for i, (d, f) in enumerate(zip(declared.dim_axes, found.dim_axes, strict=True))
    )
    return found if ok else declared.closed()


def _with_shardings(
    attrs: ArrayAttr[DictionaryAttr] | None, shardings: list[ShardingAttr]
) -> ArrayAttr[DictionaryAttr]:
    dicts: list[dict[str, Attribute]] = (
        [dict(d.data) for d in attrs.data] if attrs is not None else [{} for _ in shardings]
    )
    for d, s in zip(dicts, shardings, strict=False):
        d[SHARDING_ATTR_NAME] = s
    return ArrayAttr(DictionaryAttr(d) for d in dicts)


def _shape(value: SSAValue) -> tuple[int, ...]:
    ty = value.type
    assert isinstance(ty, TensorType)
    return ty.get_shape()


def _rank(value: SSAValue) -> int:
    return len(_shape(value))


def propagated_ops(function: func.FuncOp) -> list[Operation]:
    """Every op of `function` but terminators, nested ones (in while / case regions) too;
    not a manual computation nor its per-device body (its boundary is fixed)."""
    out: list[Operation] = []

    def visit(block: Block) -> None:
        for op in block.ops:
            if isinstance(op, func.ReturnOp | hlo.ReturnOp | spmd.ManualComputationOp):
                continue
            out.append(op)
            for region in op.regions:
                for nested in region.blocks:
                    visit(nested)

    visit(function.body.block)
    return out


def tied_values(op: hlo.WhileOp | hlo.CaseOp) -> list[list[SSAValue]]:
    """The groups of values of a region op that carry one sharding (see `propagate_tied`)."""
    if isinstance(op, hlo.WhileOp):
        # the operand first: among fixed values (an annotated argument, a result), the
        # loop keeps its input's sharding
        groups: list[list[SSAValue]] = [[v] for v in op.inputs]
        for region in op.regions:
            groups_add(groups, region.block.args)
        groups_add(groups, _returned(op.body))
        groups_add(groups, op.results)
        return groups
    groups = [[r] for r in op.results]
    for region in op.branches:
        groups_add(groups, _returned(region))
    return groups


def groups_add(groups: list[list[SSAValue]], values: Sequence[SSAValue]) -> None:
    for group, value in zip(groups, values, strict=False):
        group.append(value)


def _returned(region: Region) -> Sequence[SSAValue]:
    last = region.block.last_op
    assert isinstance(last, hlo.ReturnOp)
    return last.values


def global_functions(module: ModuleOp) -> list[func.FuncOp]:
    """Functions at level G: with a body, not partitioned, not per-device."""
    return [
        op
        for op in module.ops
        if isinstance(op, func.FuncOp)
        and op.body.blocks
        and PARTITIONED_ATTR_NAME not in op.attributes
        and PER_DEVICE_IO_ATTR_NAME not in op.attributes
    ]


# Op priorities ------------------------------------------------------------------------------

OP_PRIORITY_STAGES = ("pass-through ops", "pass-through factors", "every op")
_PASS_THROUGH_OPS = (
    *hlo.ELEMENTWISE,
    hlo.ReshapeOp,
    hlo.TransposeOp,
    spmd.ConstraintOp,
)


def op_priority_direction(
    stage: int, op: Operation, rule: FactorRule
) -> tuple[bool, bool, frozenset[int] | None]:
    """
    (forward, backward, factors) `op` propagates along in op-priority `stage` (module
    docstring); factors None: all of them. Stages are cumulative, as Shardy's.
    """
    if stage >= 2 or isinstance(op, _PASS_THROUGH_OPS):
        return True, True, None
    if isinstance(op, hlo.DynamicSliceOp | hlo.DynamicUpdateSliceOp):
        return True, False, None
    if stage == 0:
        return False, False, None
    through = pass_through_factors(op, rule)
    if isinstance(op, hlo.BroadcastOp):
        return False, True, through
    return True, True, through


def pass_through_factors(op: Operation, rule: FactorRule) -> frozenset[int]:
    """Factors in the result and every operand, with the same size everywhere."""
    found: set[int] = set()
    for f, d in enumerate(rule.result_dims):
        if d is None or f in rule.reduction_factors or f in rule.unsplittable_factors:
            continue
        size = _shape(op.results[0])[d]
        if all(
            dims[f] is not None and _shape(v)[dims[f]] == size  # pyright: ignore[reportArgumentType]
            for dims, v in zip(rule.operand_dims, op.operands, strict=False)
        ):
            found.add(f)
    return frozenset(found)


_CONSTANT_SOURCES = (hlo.ConstantOp, hlo.IotaOp)
_CONSTANT_CARRIERS = (hlo.BroadcastOp, hlo.ReshapeOp, hlo.ConvertOp, hlo.TransposeOp)


def _is_constant_like(op: Operation) -> bool:
    """A constant, an iota, or a broadcast/reshape/convert/transpose of one (recursively)."""
    if isinstance(op, _CONSTANT_SOURCES):
        return True
    return (
        isinstance(op, _CONSTANT_CARRIERS)
        and len(op.operands) == 1
        and isinstance(op.operands[0].owner, Operation)
        and _is_constant_like(op.operands[0].owner)
    )


class SplitConstantPerUse(RewritePattern):
    """
    A constant-like op with several uses in its block: one copy per further use (the
    copies use the same operands, which the walk, going backwards, splits next).
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if len(op.results) != 1 or not _is_constant_like(op):
            return
        block = op.parent_block()
        uses = [u for u in op.results[0].uses if u.operation.parent_block() is block]
        if len(uses) < 2 or block is None:
            return
        order = {o: i for i, o in enumerate(block.ops)}
        for use in sorted(uses, key=lambda u: (order[u.operation], u.index))[1:]:
            copy = op.clone()
            copy.location = op.location
            rewriter.insert(copy, InsertPoint.after(op))
            use.operation.operands[use.index] = copy.results[0]


def split_constants(function: func.FuncOp) -> None:
    """Shardy's constant splitting (module docstring), before propagation."""
    walker = PatternRewriteWalker(SplitConstantPerUse(), walk_reverse=True, apply_recursively=False)
    # the pattern acts on constant-like ops only (the others leave it at once)
    sites_only(walker, *_CONSTANT_SOURCES, *_CONSTANT_CARRIERS).rewrite_region(function.body)


@dataclass(frozen=True)
class SpmdPropagatePass(ModulePass):
    """Complete the sharding of every value (see the module docstring for the rules)."""

    name = "spmd-propagate"

    explain: bool = False
    """Also record, per op, where its sharding came from (`spmd.origin`)."""

    op_priorities: str = "auto"
    """Shardy's op priorities (module docstring): `auto` (where a sharding is open or has a
    user priority), `on`, `off`."""

    sliced_dims: str = "auto"
    """Propagate through sliced / padded / concatenated dimensions as Shardy (module
    docstring): `auto` (where op priorities apply), `on`, `off`."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        mesh = spmd.module_mesh(op)
        if mesh is None:
            return
        for name, value in (
            ("op-priorities", self.op_priorities),
            ("sliced-dims", self.sliced_dims),
        ):
            if value not in ("auto", "on", "off"):
                raise PassFailedException(
                    f"spmd-propagate: {name} must be auto, on or off, not {value}"
                )
        for function in global_functions(op):
            split_constants(function)
            state = ShardingPropagation(function, *mesh)
            flag = {"on": True, "off": False}
            state.run(flag.get(self.op_priorities), flag.get(self.sliced_dims))
            state.annotate(self.explain)
