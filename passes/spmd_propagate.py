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
3. when neighbours disagree on a factor, the one from the bigger tensor wins (moving the
   smaller one moves fewer bytes); ties go to results before operands, then operand order;
4. an axis goes to one factor only; a value no annotation reaches is replicated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shardc.diagnostics import OpPassError
from shardc.dialects import spmd
from shardc.dialects.sizes import value_bytes
from shardc.dialects.spmd import (
    PARTITIONED_ATTR_NAME,
    PER_DEVICE_IO_ATTR_NAME,
    SHARDING_ATTR_NAME,
    MeshAttr,
    ShardingAttr,
)
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
)
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

ORIGIN_ATTR_NAME = "spmd.origin"


def describe(value: SSAValue) -> str:
    """`%x` (argument 0) or `%h` (hlo.dot) for messages."""
    name = f"%{value.name_hint}" if value.name_hint else "a value"
    if isinstance(value, BlockArgument):
        return f"{name} (argument {value.index})"
    assert isinstance(value.owner, Operation)
    return f"{name} ({value.owner.name})"


@dataclass
class ShardingPropagation:
    """The propagation state of one function."""

    function: func.FuncOp
    mesh_name: str
    mesh: MeshAttr
    known: dict[SSAValue, ShardingAttr] = field(default_factory=dict[SSAValue, ShardingAttr])
    origin: dict[SSAValue, str] = field(default_factory=dict[SSAValue, str])
    fixed: set[SSAValue] = field(default_factory=set[SSAValue])
    open: dict[SSAValue, set[int]] = field(default_factory=dict[SSAValue, set[int]])
    rules: dict[Operation, FactorRule | None] = field(
        default_factory=dict[Operation, FactorRule | None]
    )
    """Dimensions of a propagated value that no neighbour decided: later ones may split them."""

    def fix(self, value: SSAValue, sharding: ShardingAttr, why: str) -> None:
        self.known[value] = sharding
        self.origin[value] = why
        self.fixed.add(value)

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
                self.fix(arg, sharding, f"argument {i} annotation")
        for op in block.ops:
            if isinstance(op, spmd.ConstraintOp):
                self.fix(op.result, op.sharding, "spmd.constraint")
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
                self.fix(value, sharding, f"result {i} annotation")

    def run(self) -> None:
        self.seed()
        ops = [op for op in self.function.body.block.ops if not isinstance(op, func.ReturnOp)]
        changed = True
        while changed:
            changed = False
            for op in ops:
                changed |= self.propagate(op)
            for op in reversed(ops):
                changed |= self.propagate(op)
        for op in ops:
            for value in (*op.operands, *op.results):
                if value not in self.known:
                    self.known[value] = replicated(self.mesh_name, _rank(value))
                    self.origin[value] = "no annotation reaches it: replicated"

    def propagate(self, op: Operation) -> bool:
        if op not in self.rules:
            self.rules[op] = factor_rule(op)
        rule = self.rules[op]
        if rule is None:
            raise OpPassError(op, f"spmd-propagate has no sharding rule for {op.name}")
        if all(v in self.known and not self.open.get(v) for v in (*op.results, *op.operands)):
            return False
        tensors = [(rule.result_dims, r) for r in op.results] + [
            (dims, operand) for dims, operand in zip(rule.operand_dims, op.operands, strict=False)
        ]
        targets = [(d, v) for d, v in tensors if v not in self.known or self.open.get(v)]
        sources = [(dims, v) for dims, v in tensors if v in self.known]
        if not targets or not sources:
            return False
        sources.sort(key=lambda s: (s[1] not in self.fixed, -value_bytes(s[1].type)))
        factors, decided, source_of = self.choose_factors(rule, sources)
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
            contributors = source_of.values() or [v for _, v in sources]
            froms = sorted({describe(v) for v in contributors if v is not value})
            direction = "forward" if value in op.results else "backward"
            self.origin[value] = f"{direction} through {op.name}" + (
                f" from {', '.join(froms)}" if froms else ""
            )
        return changed

    def refine(self, value: SSAValue, candidate: ShardingAttr) -> bool:
        """Fill a value's open dimensions (ones no neighbour had decided) from `candidate`."""
        dims = [list(a) for a in self.known[value].dim_axes]
        used = {a for d in dims for a in d}
        refined = False
        for d in sorted(self.open[value]):
            axes = candidate.dim_axes[d]
            if axes and not used.intersection(axes):
                dims[d] = list(axes)
                used.update(axes)
                self.open[value].discard(d)
                refined = True
        if refined:
            self.known[value] = make_sharding(self.mesh_name, dims)
        return refined

    def choose_factors(
        self, rule: FactorRule, sources: list[tuple[tuple[int | None, ...], SSAValue]]
    ) -> tuple[list[Axes], set[int], dict[int, SSAValue]]:
        """
        Each factor's axes from the first source that splits it; `decided` holds the
        factors some source has a closed (not open) dimension for, split or not.
        """
        factors: list[Axes | None] = [None] * rule.factor_count
        decided: set[int] = set()
        source_of: dict[int, SSAValue] = {}
        used: set[str] = set()
        for dims, value in sources:
            open_dims = self.open.get(value, set())
            for f, axes in enumerate(factor_axes_from(rule, dims, self.known[value])):
                if f in rule.unsplittable_factors or axes is None or dims[f] in open_dims:
                    continue
                decided.add(f)
                if not axes or factors[f] is not None or used.intersection(axes):
                    continue
                factors[f] = axes
                source_of[f] = value
                used.update(axes)
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
        for op in block.ops:
            if isinstance(op, func.ReturnOp) or not op.results:
                continue
            op.attributes[SHARDING_ATTR_NAME] = self.known[op.results[0]]
            if explain:
                op.attributes[ORIGIN_ATTR_NAME] = StringAttr(self.origin[op.results[0]])
        args, results = spmd.function_shardings(self.function)
        self.function.arg_attrs = _with_shardings(
            self.function.arg_attrs, [self.known[a] for a in block.args]
        )
        ret = block.last_op
        assert isinstance(ret, func.ReturnOp)
        self.function.res_attrs = _with_shardings(
            self.function.res_attrs,
            [
                s or replicated(self.mesh_name, _rank(v))
                for s, v in zip(results, ret.arguments, strict=False)
            ],
        )


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


@dataclass(frozen=True)
class SpmdPropagatePass(ModulePass):
    """Complete the sharding of every value (see the module docstring for the rules)."""

    name = "spmd-propagate"

    explain: bool = False
    """Also record, per op, where its sharding came from (`spmd.origin`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        mesh = spmd.module_mesh(op)
        if mesh is None:
            return
        for function in global_functions(op):
            state = ShardingPropagation(function, *mesh)
            state.run()
            state.annotate(self.explain)
