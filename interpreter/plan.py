"""
The program plan: what each op of a module becomes when the level-G/S executor runs it.

Planning happens once per function, before any device runs: every SSA value of a function
gets a slot in its frame, and every block becomes a list of `Step`s (kind, op, its
implementation, operand and result slots, result types and, with a chip, its compute time
and memory effect). Unsupported ops are errors here, not halfway through a run.

How an op is planned is looked up by its type, as xDSL's interpreter looks up `@impl`s:
the ops with structure (collectives, `collective.done`, terminators, `scf.if`, `scf.for`,
`func.call`, `hlo.while`, `hlo.case`) in `_PLANNERS`, every other op in the `InterpreterFunctions` of
`hlo_impls` (`HloFunctions`, `TensorScalarFunctions`) and, for scalar control flow, xDSL's
stock `arith` functions. The plan does not run the structured ops through xDSL's
`Interpreter` because a collective must suspend the whole device (see `execution`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shardc.dialects import collective as coll
from shardc.dialects import hlo, spmd
from shardc.dialects.collective import collective_kind
from shardc.hardware.cost import CostModel, OpCost
from shardc.interpreter import collectives, hlo_types
from shardc.interpreter.hlo_convolution import ConvolutionFunctions
from shardc.interpreter.hlo_elementwise import ElementwiseFunctions
from shardc.interpreter.hlo_gather import GatherScatterFunctions
from shardc.interpreter.hlo_impls import RAW_IMPL_KEY, HloFunctions, TensorScalarFunctions
from shardc.interpreter.hlo_manual import ManualFunctions
from shardc.interpreter.hlo_random import RandomFunctions
from shardc.interpreter.hlo_sorting import SortingFunctions
from shardc.interpreter.hlo_special import SpecialFunctions
from shardc.interpreter.hlo_windows import WindowFunctions
from shardc.interpreter.run_diagnostics import RunDiagnostics
from shardc.interpreter.timing import CollectiveCost, compute_cost, link_axes, memory_plan
from shardc.interpreter.values import tensor_spec
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.interpreter import InterpreterFunctions
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import SymbolTable

PLAIN, WRAPPED, FALLBACK, COLLECTIVE, DONE, RETURN, IF, FOR, CALL, WHILE, CASE, FUSION = range(12)
# timing-only (abstract) forms of PLAIN, WRAPPED, FALLBACK: run only on known small
# operands; ABSTRACT never runs (large results)
A_PLAIN, A_WRAPPED, A_FALLBACK, ABSTRACT = range(12, 16)

Step = tuple[int, Operation, Any, Any, tuple, tuple, tuple, Any, int, int]
"""kind, op, implementation, its functions object, operand slots, result slots, result
specs, compute time (None: not on the timeline), bytes allocated, bytes freed after."""

SMALL_ELEMENTS = 4096
"""--timing-only still computes results of at most this many elements (per result) whose
operands are all known: constants, iota, axis_index, scalar arith, so loop bounds and
device-dependent branches work without computing any large value."""


def is_level_s(function: func.FuncOp) -> bool:
    """A per-device function: marked `spmd.partitioned` or `spmd.per_device_io`."""
    return (
        spmd.PARTITIONED_ATTR_NAME in function.attributes
        or spmd.PER_DEVICE_IO_ATTR_NAME in function.attributes
    )


@dataclass
class CollectiveInfo:
    """What the rendezvous needs of a collective op, computed once."""

    member_of: dict[int, tuple[tuple[int, ...], int]]
    """device -> (its group in rank order, its rank)."""
    signature: tuple[Any, ...]
    """Ops with equal signatures over the same group may meet."""
    summary: str
    """`all_reduce add (tensor<8xf32>)`: for messages."""
    execute: collectives.GroupFunction
    """Runs the op for one group (`collectives.prepare`)."""
    n_values: int
    """How many values it produces (inside the future for `_start`)."""
    cost: CollectiveCost | None = None
    """Kind, time and bytes on the simulated machine (timing runs)."""


def group_members(op: coll.CollectiveOp) -> dict[int, tuple[tuple[int, ...], int]]:
    """device -> (its group in rank order, its rank) for every device in `op`'s groups."""
    groups = op.device_groups()
    return {d: (tuple(groups[g]), r) for d, (g, r) in spmd.group_ranks(groups).items()}


def _signature(op: coll.CollectiveOp) -> tuple[Any, ...]:
    props: list[tuple[str, str]] = []
    for name, value in sorted(op.properties.items()):
        if name in ("mesh", "mesh_axes", "groups", "shift", "pairs"):
            continue
        props.append((name, str(value)))
    if isinstance(op, coll.PermuteBase):
        props.append(("pairs", str(sorted(op.source_target_pairs))))
    return (
        op.name,
        tuple(props),
        tuple(str(o.type) for o in op.operands),
        tuple(str(r.type) for r in op.results),
    )


def _summary(op: coll.CollectiveOp) -> str:
    kind = getattr(op, "kind", None)
    text = op.name.removeprefix("collective.")
    if kind is not None:
        text += f" {kind.data}"
    types = ", ".join(str(o.type) for o in op.operands)
    return f"{text} ({types})"


def _result_specs(op: Operation) -> tuple:
    specs = []
    for r in op.results:
        if isinstance(r.type, TensorType):
            specs.append(tensor_spec(r.type))
        else:
            specs.append(None)
    return tuple(specs)


@dataclass
class _Scope:
    """What planning one function's blocks shares: its level, its frame, the call graph."""

    level_s: bool
    visited: set[func.FuncOp]
    slots: dict[SSAValue, int]


Planner = Callable[["ProgramPlan", Any, _Scope], tuple[int, Any]]
"""Plans an op with structure: (step kind, implementation or callee)."""

_PLANNERS: dict[type[Operation], Planner] = {}


def _plans(*op_types: type[Operation]) -> Callable[[Planner], Planner]:
    def deco(planner: Planner) -> Planner:
        for op_type in op_types:
            _PLANNERS[op_type] = planner
        return planner

    return deco


@_plans(*(t for t in coll.Collective.operations if issubclass(t, coll.CollectiveOp)))
def _plan_collective(plan: ProgramPlan, op: coll.CollectiveOp, scope: _Scope) -> tuple[int, Any]:
    if not scope.level_s:
        raise plan.diagnostics.error_at(
            op,
            "needs a level-S program: the function must be marked "
            f"{spmd.PARTITIONED_ATTR_NAME} or {spmd.PER_DEVICE_IO_ATTR_NAME}",
        )
    if op not in plan.collectives:
        cost = None
        if plan.cost_model is not None:
            cost = CollectiveCost(
                collective_kind(op),
                plan.cost_model.collective_time(op),
                plan.cost_model.comm_bytes(op),
                plan.cost_model.collective_algorithm(op),
                plan.cost_model.collective_overlap(op),
                plan.cost_model.collective_landings(op),
                plan.cost_model.collective_first_step(op),
                link_axes(op),
            )
            plan.collective_costs[op] = cost
        plan.collectives[op] = CollectiveInfo(
            group_members(op),
            _signature(op),
            _summary(op),
            collectives.prepare(op),
            len(op.value_types()),
            cost,
        )
    return COLLECTIVE, None


@_plans(coll.DoneOp)
def _plan_done(plan: ProgramPlan, op: coll.DoneOp, scope: _Scope) -> tuple[int, Any]:
    return DONE, None


@_plans(func.ReturnOp, scf.YieldOp, hlo.ReturnOp)
def _plan_return(plan: ProgramPlan, op: Operation, scope: _Scope) -> tuple[int, Any]:
    return RETURN, None


@_plans(scf.IfOp)
def _plan_if(plan: ProgramPlan, op: scf.IfOp, scope: _Scope) -> tuple[int, Any]:
    for region in (op.true_region, op.false_region):
        if region.blocks:
            plan.plan_block(region.block, scope)
    return IF, None


@_plans(scf.ForOp)
def _plan_for(plan: ProgramPlan, op: scf.ForOp, scope: _Scope) -> tuple[int, Any]:
    plan.plan_block(op.body.block, scope)
    return FOR, None


@_plans(hlo.WhileOp, hlo.CaseOp)
def _plan_control(plan: ProgramPlan, op: Operation, scope: _Scope) -> tuple[int, Any]:
    """`hlo.while` (cond and do blocks) and `hlo.case` (one block per branch)."""
    for region in op.regions:
        plan.plan_block(region.block, scope)
    return (WHILE if isinstance(op, hlo.WhileOp) else CASE), None


@_plans(hlo.FusionOp)
def _plan_fusion(plan: ProgramPlan, op: hlo.FusionOp, scope: _Scope) -> tuple[int, Any]:
    """`hlo.fusion`: its block runs like a function body; the fusion alone takes time and
    memory (its inside stays in VMEM), so the inner steps carry neither."""
    plan.plan_block(op.body.block, scope, untimed=True)
    return FUSION, None


@_plans(func.CallOp)
def _plan_call(plan: ProgramPlan, op: func.CallOp, scope: _Scope) -> tuple[int, Any]:
    callee = SymbolTable.lookup_symbol(plan.module, op.callee)
    if not isinstance(callee, func.FuncOp):
        raise plan.diagnostics.error_at(op, f"calls {op.callee}, which is not a function")
    plan.plan_function(callee, scope.level_s, scope.visited)
    return CALL, callee


class ProgramPlan:
    """
    The plans of one module's functions (as the module was when first planned), with
    the per-op constants the executor and the timing model need.
    """

    def __init__(
        self,
        module: ModuleOp,
        diagnostics: RunDiagnostics,
        cost_model: CostModel | None = None,
        abstract: bool = False,
    ):
        self.module = module
        self.diagnostics = diagnostics
        self.cost_model = cost_model
        self.abstract = abstract
        self.functions: list[InterpreterFunctions] = [
            HloFunctions(),
            TensorScalarFunctions(),
            ElementwiseFunctions(),
            SortingFunctions(),
            ConvolutionFunctions(),
            GatherScatterFunctions(),
            SpecialFunctions(),
            ManualFunctions(),
            hlo_types.TypeFunctions(),
            WindowFunctions(),
            RandomFunctions(),
        ]
        """The implementations of plain ops (registered with each device's interpreter)."""
        self.fallback_functions: list[InterpreterFunctions] = []
        """xDSL's stock implementations, once loaded (`_load_fallbacks`)."""
        self._fallback_types: set[type[Operation]] | None = None
        self._table: dict[type[Operation], tuple[InterpreterFunctions, Any]] = {}
        for ft in self.functions:
            for op_type, impl in type(ft)._impls():  # pyright: ignore[reportPrivateUsage]
                self._table[op_type] = (ft, impl)
        self.steps: dict[Block, list[Step]] = {}
        self.block_args: dict[Block, tuple[int, ...]] = {}
        """Each block's argument slots."""
        self.frame_size: dict[func.FuncOp, int] = {}
        self.collectives: dict[Operation, CollectiveInfo] = {}
        self.op_costs: dict[Operation, OpCost] = {}
        self.collective_costs: dict[Operation, CollectiveCost] = {}
        self._memory: dict[Operation, tuple[int, int]] = {}
        self._prepared: set[tuple[func.FuncOp, bool]] = set()

    def prepare(self, function: func.FuncOp) -> None:
        """Plan every block reachable from `function`; unsupported ops are errors here."""
        level_s = is_level_s(function)
        if (function, level_s) in self._prepared:
            return
        self._prepared.add((function, level_s))
        self.plan_function(function, level_s, set())

    def plan_function(
        self, function: func.FuncOp, level_s: bool, visited: set[func.FuncOp]
    ) -> None:
        if function in visited:
            return
        visited.add(function)
        error_at = self.diagnostics.error_at
        if not function.body.blocks:
            raise error_at(function, "has no body: external functions cannot run")
        if len(function.body.blocks) > 1:
            raise error_at(function, "has several blocks, which the interpreter does not support")
        # every value of the function (nested regions included) gets a slot in its frame
        slots: dict[SSAValue, int] = {}
        for op in function.walk():
            for region in op.regions:
                for block in region.blocks:
                    for arg in block.args:
                        slots[arg] = len(slots)
            for r in op.results:
                slots[r] = len(slots)
        self.frame_size[function] = len(slots)
        if self.cost_model is not None:
            self._memory.update(memory_plan(function))
        self.plan_block(function.body.block, _Scope(level_s, visited, slots))

    def plan_block(self, block: Block, scope: _Scope, untimed: bool = False) -> None:
        steps: list[Step] = []
        model = None if untimed else self.cost_model
        for op in block.ops:
            step = self._plan_op(op, scope)
            if self.abstract and step[0] <= FALLBACK:
                step = (self._abstract_kind(op, step[0]), *step[1:])
            time: float | None = None
            alloc = free = 0
            if model is not None:
                cost = compute_cost(model, op)
                if cost is not None:
                    self.op_costs[op] = cost
                    time = cost.time
                alloc, free = self._memory.get(op, (0, 0))
            steps.append((*step, time, alloc, free))
        self.steps[block] = steps
        self.block_args[block] = tuple(scope.slots[a] for a in block.args)

    def _plan_op(self, op: Operation, scope: _Scope) -> tuple:
        operands = tuple(scope.slots[v] for v in op.operands)
        results = tuple(scope.slots[r] for r in op.results)
        specs = _result_specs(op)
        kind, fn, ft = self._implementation(op, scope)
        if kind == COLLECTIVE and op.IS_START:  # pyright: ignore[reportAttributeAccessIssue]
            specs = (None,)
        return (kind, op, fn, ft, operands, results, specs)

    def _implementation(self, op: Operation, scope: _Scope) -> tuple[int, Any, Any]:
        """(kind, implementation, its functions object) of one op."""
        planner = _PLANNERS.get(type(op))
        if planner is not None:
            kind, fn = planner(self, op, scope)
            return kind, fn, None
        entry = self._table.get(type(op))
        if entry is not None:
            ft, impl = entry
            raw = getattr(impl, RAW_IMPL_KEY, None)
            if raw is not None:
                return PLAIN, hlo_types.adapt(op, raw), ft
            return WRAPPED, impl, ft
        if type(op) in self._load_fallbacks() and not op.regions:
            return FALLBACK, None, None
        if self.abstract and not op.regions:
            # --timing-only needs types, not implementations
            return ABSTRACT, None, None
        raise self.diagnostics.error_at(op, "is not supported by the interpreter")

    def _abstract_kind(self, op: Operation, kind: int) -> int:
        """--timing-only: small results still run (on known operands), others never do."""
        for r in op.results:
            if isinstance(r.type, TensorType) and math.prod(r.type.get_shape()) > SMALL_ELEMENTS:
                return ABSTRACT
        return {PLAIN: A_PLAIN, WRAPPED: A_WRAPPED, FALLBACK: A_FALLBACK}[kind]

    def _load_fallbacks(self) -> set[type[Operation]]:
        """
        xDSL's stock scalar `arith` implementations, for control flow on device values
        (loaded on first need: importing `xdsl.interpreters` costs half a second).
        """
        if self._fallback_types is None:
            from xdsl.interpreters.arith import ArithFunctions

            self.fallback_functions = [ArithFunctions()]
            self._fallback_types = set()
            for ft in self.fallback_functions:
                for op_type, _ in type(ft)._impls():  # pyright: ignore[reportPrivateUsage]
                    self._fallback_types.add(op_type)
        return self._fallback_types
