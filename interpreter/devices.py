"""
The N-device executor: runs one function on every simulated device, meeting at
collectives, reporting deadlocks, collective mismatches and misused futures.

Each device runs the function as a Python generator over a precomputed plan of its
blocks (one tuple per op: kind, op, implementation, operands, results, expected types).
Plain ops call their xDSL implementation (`HloFunctions`, ...) directly; a collective
`yield`s `(op, operand values)` to the scheduler, and nested regions (`scf.if`,
`scf.for`, `func.call`) are run with `yield from`, so a collective inside them suspends
the whole device.

The scheduler runs each runnable device until it blocks at a collective or finishes. A
group fires when all its members wait at a collective over that same group; if they all
do but at incompatible collectives (different kind, reduction, dims or types) that is a
mismatch error naming the devices and ops. When no device can run and some still wait,
the run is a deadlock, reported with every waiting device, the op it waits at (with its
location) and why its group cannot meet. Nothing ever hangs.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from shardc.diagnostics import InterpreterError, error_at, op_position
from shardc.dialects import collective as coll
from shardc.dialects import spmd
from shardc.dialects.collective import collective_kind
from shardc.dialects.sizes import value_bytes
from shardc.hardware.chips import Chip
from shardc.hardware.cost import CostModel, OpCost
from shardc.interpreter import collectives
from shardc.interpreter.hlo_impls import (
    DEVICE_KEY,
    RAW_IMPL_KEY,
    DeviceInfo,
    HloFunctions,
    TensorScalarFunctions,
)
from shardc.interpreter.timing import (
    CollectiveCost,
    DeviceClock,
    Timeline,
    compute_cost,
    memory_plan,
)
from shardc.interpreter.values import dtype_name, tensor_spec
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import SymbolTable

PLAIN, WRAPPED, FALLBACK, COLLECTIVE, DONE, RETURN, IF, FOR, CALL = range(9)
# timing-only (abstract) forms of PLAIN, WRAPPED, FALLBACK: run only on known small
# operands; ABSTRACT never runs (large results)
A_PLAIN, A_WRAPPED, A_FALLBACK, ABSTRACT = range(9, 13)

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


def module_mesh(module: ModuleOp) -> tuple[str, spmd.MeshAttr] | None:
    """The module's `spmd.mesh` (name, mesh); a module has at most one that matters."""
    for op in module.body.block.ops:
        if isinstance(op, spmd.MeshOp):
            return op.sym_name.data, op.mesh
    return None


class Future:
    """The pending results of one `_start` collective on one device."""

    __slots__ = ("op", "values", "done", "end")

    def __init__(self, op: Operation, values: tuple[Any, ...], end: float = 0.0):
        self.op = op
        self.values = values
        self.done: Operation | None = None
        self.end = end
        """When the collective ends on the simulated machine (timing runs)."""


@dataclass
class _Device:
    index: int
    interp: Interpreter
    futures: list[Future] = field(default_factory=list[Future])
    tm: DeviceClock | None = None


@dataclass
class _Collective:
    """What the scheduler needs of a collective op, computed once."""

    member_of: dict[int, tuple[tuple[int, ...], int]]
    """device -> (its group in rank order, its rank)."""
    signature: tuple[Any, ...]
    """Ops with equal signatures over the same group may meet."""
    summary: str
    """`all_reduce add (tensor<8xf32>)`: for messages."""
    execute: Any
    """Runs the op for one group (`collectives.prepare`)."""
    n_values: int
    """How many values it produces (inside the future for `_start`)."""
    cost: CollectiveCost | None = None
    """Kind, time and bytes on the simulated machine (timing runs)."""


@dataclass(slots=True)
class _Wait:
    device: int
    op: coll.CollectiveOp
    values: tuple[Any, ...]
    group: tuple[int, ...]
    rank: int
    info: _Collective
    arrival: float


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


class Executor:
    """
    Runs functions of one module on simulated devices.

    `check_types` (default on) compares every result's shape and dtype with its op's
    result type: a cheap guard against interpreter bugs (the oracle must be right).
    An executor keeps plans and per-op constants of the module as it was when first
    run: make a new one after transforming the module.

    `chip` turns on the timing model (`interpreter.timing`): after `run`, `timeline`
    holds every device's clocks and slices (`timeline.report()`, `timeline.trace()`).
    `abstract` (--timing-only) computes no values: arguments may be None, results of more
    than `SMALL_ELEMENTS` elements (and any depending on an unknown value) are None, and
    collectives still meet and are timed; only small known values (loop bounds, device
    coordinates) are computed, for control flow.
    """

    def __init__(
        self,
        module: ModuleOp,
        filename: str | None = None,
        check_types: bool = True,
        chip: Chip | None = None,
        abstract: bool = False,
    ):
        self.module = module
        self.filename = filename or "<input>"
        self.check_types = check_types and not abstract
        self.chip = chip
        self.abstract = abstract
        self.timeline: Timeline | None = None
        """The last run's timeline (when `chip` is given)."""
        self.cost_model: CostModel | None = None
        if chip is not None:
            mesh = module_mesh(module)
            self.cost_model = CostModel(chip, mesh[1] if mesh else None)
        self._op_costs: dict[Operation, OpCost] = {}
        self._collective_costs: dict[Operation, CollectiveCost] = {}
        self._memory: dict[Operation, tuple[int, int]] = {}
        self.hlo_functions = HloFunctions()
        self.functions: list[InterpreterFunctions] = [
            self.hlo_functions,
            TensorScalarFunctions(),
        ]
        self._table: dict[type[Operation], tuple[InterpreterFunctions, Any]] = {}
        for ft in self.functions:
            for op_type, impl in type(ft)._impls():  # pyright: ignore[reportPrivateUsage]
                self._table[op_type] = (ft, impl)
        self._fallback_functions: list[InterpreterFunctions] = []
        self._fallback_types: set[type[Operation]] | None = None
        self._plans: dict[Block, list[Step]] = {}
        self._block_args: dict[Block, tuple[int, ...]] = {}
        self._frame_size: dict[func.FuncOp, int] = {}
        self._collectives: dict[Operation, _Collective] = {}
        self._prepared: set[tuple[func.FuncOp, bool]] = set()

    # Messages -------------------------------------------------------------------------

    def location(self, op: Operation) -> str | None:
        """`file:line:col` of an op, None for ops without a source location."""
        return op_position(op)

    def where(self, op: Operation) -> str:
        """`file:line:col` of an op (or just the file for ops made by passes)."""
        return op_position(op) or self.filename

    def error_at(self, op: Operation, message: str) -> InterpreterError:
        if op_position(op) is not None:
            return InterpreterError(str(error_at(op, message)))
        return InterpreterError(f"{self.filename}: error: '{op.name}' op {message}")

    # Plans ----------------------------------------------------------------------------

    def prepare(self, function: func.FuncOp) -> None:
        """Plan every block reachable from `function`; unsupported ops are errors here."""
        level_s = is_level_s(function)
        if (function, level_s) in self._prepared:
            return
        self._prepared.add((function, level_s))
        visited: set[func.FuncOp] = set()
        self._plan_function(function, level_s, visited)

    def _plan_function(
        self, function: func.FuncOp, level_s: bool, visited: set[func.FuncOp]
    ) -> None:
        if function in visited:
            return
        visited.add(function)
        if not function.body.blocks:
            raise self.error_at(function, "has no body: external functions cannot run")
        if len(function.body.blocks) > 1:
            raise self.error_at(
                function, "has several blocks, which the interpreter does not support"
            )
        # every value of the function (nested regions included) gets a slot in its frame
        slots: dict[SSAValue, int] = {}
        for op in function.walk():
            for region in op.regions:
                for block in region.blocks:
                    for arg in block.args:
                        slots[arg] = len(slots)
            for r in op.results:
                slots[r] = len(slots)
        self._frame_size[function] = len(slots)
        if self.cost_model is not None:
            self._memory.update(memory_plan(function))
        self._plan_block(function.body.block, level_s, visited, slots)

    def _plan_block(
        self,
        block: Block,
        level_s: bool,
        visited: set[func.FuncOp],
        slots: dict[SSAValue, int],
    ) -> None:
        steps: list[Step] = []
        model = self.cost_model
        for op in block.ops:
            step = self._plan_op(op, level_s, visited, slots)
            if self.abstract and step[0] <= FALLBACK:
                step = (self._abstract_kind(op, step[0]), *step[1:])
            time: float | None = None
            alloc = free = 0
            if model is not None:
                cost = compute_cost(model, op)
                if cost is not None:
                    self._op_costs[op] = cost
                    time = cost.time
                alloc, free = self._memory.get(op, (0, 0))
            steps.append((*step, time, alloc, free))
        self._plans[block] = steps
        self._block_args[block] = tuple(slots[a] for a in block.args)

    def _plan_op(
        self,
        op: Operation,
        level_s: bool,
        visited: set[func.FuncOp],
        slots: dict[SSAValue, int],
    ) -> Step:
        operands = tuple(slots[v] for v in op.operands)
        results = tuple(slots[r] for r in op.results)
        specs = _result_specs(op)
        if isinstance(op, coll.CollectiveOp):
            if not level_s:
                raise self.error_at(
                    op,
                    "needs a level-S program: the function must be marked "
                    f"{spmd.PARTITIONED_ATTR_NAME} or {spmd.PER_DEVICE_IO_ATTR_NAME}",
                )
            if op not in self._collectives:
                member_of: dict[int, tuple[tuple[int, ...], int]] = {}
                for group in op.device_groups():
                    key = tuple(group)
                    for rank, device in enumerate(group):
                        member_of[device] = (key, rank)
                cost = None
                if self.cost_model is not None:
                    cost = CollectiveCost(
                        collective_kind(op),
                        self.cost_model.collective_time(op),
                        self.cost_model.comm_bytes(op),
                    )
                    self._collective_costs[op] = cost
                self._collectives[op] = _Collective(
                    member_of,
                    _signature(op),
                    _summary(op),
                    collectives.prepare(op),
                    len(op.value_types()),
                    cost,
                )
            if op.IS_START:
                specs = (None,)
            return (COLLECTIVE, op, None, None, operands, results, specs)
        if isinstance(op, coll.DoneOp):
            return (DONE, op, None, None, operands, results, specs)
        if isinstance(op, func.ReturnOp | scf.YieldOp):
            return (RETURN, op, None, None, operands, results, specs)
        if isinstance(op, scf.IfOp):
            for region in (op.true_region, op.false_region):
                if region.blocks:
                    self._plan_block(region.block, level_s, visited, slots)
            return (IF, op, None, None, operands, results, specs)
        if isinstance(op, scf.ForOp):
            self._plan_block(op.body.block, level_s, visited, slots)
            return (FOR, op, None, None, operands, results, specs)
        if isinstance(op, func.CallOp):
            callee = SymbolTable.lookup_symbol(self.module, op.callee)
            if not isinstance(callee, func.FuncOp):
                raise self.error_at(op, f"calls {op.callee}, which is not a function")
            self._plan_function(callee, level_s, visited)
            return (CALL, op, callee, None, operands, results, specs)
        entry = self._table.get(type(op))
        if entry is not None:
            ft, impl = entry
            raw = getattr(impl, RAW_IMPL_KEY, None)
            if raw is not None:
                return (PLAIN, op, raw, ft, operands, results, specs)
            return (WRAPPED, op, impl, ft, operands, results, specs)
        if type(op) in self._load_fallbacks() and not op.regions:
            return (FALLBACK, op, None, None, operands, results, specs)
        if self.abstract and not op.regions:
            # --timing-only needs types, not implementations
            return (ABSTRACT, op, None, None, operands, results, specs)
        raise self.error_at(op, "is not supported by the interpreter")

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

            self._fallback_functions = [ArithFunctions()]
            self._fallback_types = set()
            for ft in self._fallback_functions:
                for op_type, _ in type(ft)._impls():  # pyright: ignore[reportPrivateUsage]
                    self._fallback_types.add(op_type)
        return self._fallback_types

    # Running --------------------------------------------------------------------------

    def run(
        self, function: func.FuncOp, per_device_args: Sequence[Sequence[Any]]
    ) -> list[tuple[Any, ...]]:
        """
        Run `function` on `len(per_device_args)` devices (1 for a level-G function, the
        mesh's device count for level S) and return each device's results.
        """
        self.prepare(function)
        level_s = is_level_s(function)
        n = len(per_device_args)
        if level_s:
            mesh = module_mesh(self.module)
            if mesh is None:
                raise self.error_at(
                    function, "is a level-S function but the module declares no spmd.mesh"
                )
            if n != mesh[1].device_count:
                raise InterpreterError(
                    f"{self.filename}: error: mesh @{mesh[0]} has {mesh[1].device_count} "
                    f"devices but {n} sets of arguments were given"
                )
        elif n != 1:
            raise InterpreterError(
                f"{self.filename}: error: a level-G function runs on one device, got {n} "
                "sets of arguments"
            )
        n_args = len(function.body.block.args)
        for d, args in enumerate(per_device_args):
            if len(args) != n_args:
                raise InterpreterError(
                    f"{self.filename}: error: @{function.sym_name.data} takes {n_args} "
                    f"arguments, device {d} was given {len(args)}"
                )
        timed = self.cost_model is not None
        arg_bytes = 0
        if timed:
            arg_bytes = sum(value_bytes(a.type) for a in function.body.block.args)
        self.timeline = None
        devices = []
        for d in range(n):
            interp = Interpreter(self.module)
            for ft in (*self.functions, *self._fallback_functions):
                interp.register_implementations(ft)
            if level_s:
                interp.set_data(HloFunctions, DEVICE_KEY, DeviceInfo(d, self.module))
            devices.append(_Device(d, interp, tm=DeviceClock(d, arg_bytes) if timed else None))
        size = self._frame_size[function]
        gens = [
            self._run_block(dev, function.body.block, tuple(args), [None] * size)
            for dev, args in zip(devices, per_device_args, strict=False)
        ]
        with np.errstate(all="ignore"):
            results = self._schedule(gens, devices)
        self._check_futures(devices)
        if timed:
            assert self.chip is not None
            self.timeline = Timeline(
                self.chip,
                "S" if level_s else "G",
                [dev.tm for dev in devices],  # pyright: ignore[reportArgumentType]
                self._op_costs,
                self._collective_costs,
                self.location,
            )
        return results

    def _run_block(
        self, dev: _Device, block: Block, args: tuple[Any, ...], env: list[Any]
    ) -> Generator[tuple[Operation, tuple[Any, ...]], Any, tuple[Any, ...]]:
        for slot, value in zip(self._block_args[block], args, strict=False):
            env[slot] = value
        check = self.check_types
        tm = dev.tm
        timed = tm is not None
        for kind, op, fn, ft, operands, results, specs, cost, alloc, free in self._plans[block]:
            vals = tuple([env[v] for v in operands])
            if kind == PLAIN:
                try:
                    out = fn(ft, dev.interp, op, vals)
                except InterpreterError:
                    raise
                except Exception as e:
                    raise self._internal(op, dev, e) from e
            elif kind == RETURN:
                if free:  # values of a nested block that die at its yield
                    tm.live -= free  # pyright: ignore[reportOptionalMemberAccess]
                return vals
            elif kind == WRAPPED:
                try:
                    out = fn(ft, dev.interp, op, vals).values
                except InterpreterError:
                    raise
                except Exception as e:
                    raise self._internal(op, dev, e) from e
            elif kind == COLLECTIVE:
                out = yield (op, vals)
                if op.IS_START:  # pyright: ignore[reportAttributeAccessIssue]
                    dev.futures.append(out[0])
            elif kind == DONE:
                out = self._done(dev, op, vals[0])
            elif kind == IF:
                if vals[0] is None:
                    raise self._unknown_control(op, dev, "branch condition")
                region = op.regions[0] if vals[0] else op.regions[1]
                if region.blocks:
                    out = yield from self._run_block(dev, region.block, (), env)
                else:
                    out = ()
            elif kind == FOR:
                lb, ub, step, *carried = vals
                if lb is None or ub is None or step is None:
                    raise self._unknown_control(op, dev, "loop bounds")
                body = op.regions[0].block
                carried = tuple(carried)
                for i in range(int(lb), int(ub), int(step)):
                    carried = yield from self._run_block(dev, body, (i, *carried), env)
                out = carried
            elif kind == CALL:
                frame = [None] * self._frame_size[fn]
                out = yield from self._run_block(dev, fn.body.block, vals, frame)
            elif kind == FALLBACK:
                try:
                    out = dev.interp.run_op(op, vals)
                except Exception as e:
                    raise self._internal(op, dev, e) from e
            else:  # --timing-only forms
                out = self._run_abstract(dev, kind, op, fn, ft, vals, len(results))
            if timed:
                if cost is not None:
                    start = tm.clock  # pyright: ignore[reportOptionalMemberAccess]
                    end = start + cost
                    tm.clock = end  # pyright: ignore[reportOptionalMemberAccess]
                    tm.busy += cost  # pyright: ignore[reportOptionalMemberAccess]
                    tm.compute.append((op, start, end))  # pyright: ignore[reportOptionalMemberAccess]
                if alloc or free:
                    live = tm.live + alloc  # pyright: ignore[reportOptionalMemberAccess]
                    if live > tm.peak:  # pyright: ignore[reportOptionalMemberAccess]
                        tm.peak = live  # pyright: ignore[reportOptionalMemberAccess]
                        tm.peak_op = op  # pyright: ignore[reportOptionalMemberAccess]
                    tm.live = live - free  # pyright: ignore[reportOptionalMemberAccess]
            if check:
                if len(out) != len(specs):
                    self._check_results(op, dev, out, specs)
                for v, spec in zip(out, specs, strict=False):
                    if spec is not None and (v.shape != spec[0] or v.dtype != spec[1]):
                        self._check_results(op, dev, out, specs)
            for r, v in zip(results, out, strict=False):
                env[r] = v
        return ()

    def _run_abstract(
        self, dev: _Device, kind: int, op: Operation, fn: Any, ft: Any, vals: tuple, n: int
    ) -> tuple[Any, ...]:
        """--timing-only: compute small results of known operands, else unknown (None)."""
        if kind == ABSTRACT or any(v is None for v in vals):
            return (None,) * n
        try:
            if kind == A_PLAIN:
                return fn(ft, dev.interp, op, vals)
            if kind == A_WRAPPED:
                return fn(ft, dev.interp, op, vals).values
            return dev.interp.run_op(op, vals)
        except InterpreterError:
            raise
        except Exception as e:
            raise self._internal(op, dev, e) from e

    def _unknown_control(self, op: Operation, dev: _Device, what: str) -> InterpreterError:
        return self.error_at(
            op,
            f"on device {dev.index}: the {what} depends on values --timing-only does not "
            "compute (inputs or large tensors); run without --timing-only",
        )

    def _internal(self, op: Operation, dev: _Device, e: Exception) -> InterpreterError:
        return self.error_at(
            op, f"failed on device {dev.index}: {type(e).__name__}: {e} (interpreter bug?)"
        )

    def _check_results(self, op: Operation, dev: _Device, out: Any, specs: tuple) -> None:
        if len(out) != len(specs):
            raise self.error_at(
                op, f"produced {len(out)} values for {len(specs)} results on device {dev.index}"
            )
        for i, (v, spec) in enumerate(zip(out, specs, strict=False)):
            if spec is None:
                continue
            shape, dtype = spec
            if getattr(v, "shape", None) != shape or getattr(v, "dtype", None) != dtype:  # noqa
                got = (
                    f"{dtype_name(v.dtype)}{list(v.shape)}"
                    if hasattr(v, "dtype")
                    else type(v).__name__
                )
                raise self.error_at(
                    op,
                    f"result {i} on device {dev.index} is {got} but its type is "
                    f"{op.results[i].type} (interpreter bug)",
                )

    def _done(self, dev: _Device, op: Operation, future: Any) -> tuple[Any, ...]:
        if not isinstance(future, Future):
            raise self.error_at(op, f"on device {dev.index}: the operand is not a future")
        if future.done is not None:
            raise self.error_at(
                op,
                f"uses the future of '{future.op.name}' ({self.where(future.op)}) a second "
                f"time on device {dev.index} (first consumed at {self.where(future.done)}); "
                "a future is consumed exactly once",
            )
        future.done = op
        tm = dev.tm
        if tm is not None and future.end > tm.clock:
            tm.waits.append((op, tm.clock, future.end))
            tm.clock = future.end
        return future.values

    def _check_futures(self, devices: list[_Device]) -> None:
        unconsumed: dict[Operation, list[int]] = {}
        for dev in devices:
            for f in dev.futures:
                if f.done is None:
                    unconsumed.setdefault(f.op, []).append(dev.index)
        for op, devs in unconsumed.items():
            raise self.error_at(
                op,
                f"produces a future that is never consumed by a collective.done on "
                f"{_devices_str(devs)}",
            )

    # Scheduling -----------------------------------------------------------------------

    def _schedule(self, gens: list[Generator], devices: list[_Device]) -> list[tuple[Any, ...]]:
        n = len(gens)
        clocks = [dev.tm for dev in devices]
        timed = self.cost_model is not None
        abstract = self.abstract
        inbox: list[Any] = [None] * n
        finished: dict[int, tuple[Any, ...]] = {}
        waiting: dict[int, _Wait] = {}
        arrived: dict[tuple[int, ...], int] = {}
        runnable = deque(range(n))
        while runnable:
            d = runnable.popleft()
            try:
                op, values = gens[d].send(inbox[d])
            except StopIteration as stop:
                finished[d] = stop.value
                continue
            inbox[d] = None
            info = self._collectives[op]
            member = info.member_of.get(d)
            if member is None:
                raise self.error_at(op, f"has no group containing device {d}")
            group, rank = member
            arrival = clocks[d].clock if timed else 0.0  # pyright: ignore[reportOptionalMemberAccess]
            waiting[d] = _Wait(d, op, values, group, rank, info, arrival)  # pyright: ignore
            # how many members wait at a collective over this very group
            count = arrived.get(group, 0) + 1
            if count < len(group):
                arrived[group] = count
                continue
            arrived[group] = 0
            members = [waiting[m] for m in group]
            signature = info.signature
            for w in members:
                if w.info.signature != signature:
                    raise self._mismatch(members)
            if abstract and any(v is None for w in members for v in w.values):
                outputs = [(None,) * info.n_values] * len(members)
            else:
                outputs = info.execute([w.values for w in members])
            end = 0.0
            if timed:
                end = self._time_collective(members, clocks)
            for w, out in zip(members, outputs, strict=False):
                del waiting[w.device]
                inbox[w.device] = (Future(w.op, out, end),) if w.op.IS_START else out
                runnable.append(w.device)
        if waiting:
            raise self._deadlock(waiting, finished)
        return [finished[d] for d in range(n)]

    @staticmethod
    def _time_collective(members: list[_Wait], clocks: list[Any]) -> float:
        """
        Start the group's collective when the last member has issued it and every
        member's engine is free; a sync form blocks each member's compute stream until
        it ends. Returns the end time.
        """
        cost = members[0].info.cost
        assert cost is not None
        start = 0.0
        for w in members:
            tm = clocks[w.device]
            start = max(start, w.arrival, tm.engine)
        end = start + cost.time
        kind, nbytes = cost.kind, cost.bytes
        for w in members:
            tm = clocks[w.device]
            tm.engine = end
            tm.comm += cost.time
            tm.collectives.append((w.op, w.arrival, start, end))
            tm.counts[kind] += 1
            tm.comm_bytes[kind] += nbytes
            if not w.op.IS_START and end > tm.clock:
                tm.waits.append((w.op, tm.clock, end))
                tm.clock = end
        return end

    def _mismatch(self, members: list[_Wait]) -> InterpreterError:
        by_op: dict[tuple[Any, ...], list[_Wait]] = {}
        for w in members:
            by_op.setdefault((w.info.signature, self.where(w.op)), []).append(w)
        lines = [
            f"  {_devices_str([w.device for w in ws])} at {ws[0].info.summary} "
            f"({self.where(ws[0].op)})"
            for ws in by_op.values()
        ]
        group = list(members[0].group)
        first = members[0].op
        head = self.error_at(
            first,
            f"collective mismatch in group {group}: its members wait at different collectives:",
        )
        return InterpreterError(str(head) + "\n" + "\n".join(lines))

    def _deadlock(
        self, waiting: dict[int, _Wait], finished: dict[int, tuple[Any, ...]]
    ) -> InterpreterError:
        lines: list[str] = []
        seen: dict[tuple[int, tuple[int, ...]], list[int]] = {}
        for d in sorted(waiting):
            w = waiting[d]
            seen.setdefault((id(w.op), w.group), []).append(d)
        for devs in seen.values():
            w = waiting[devs[0]]
            why: list[str] = []
            done = [m for m in w.group if m in finished]
            if done:
                why.append(f"{_devices_str(done)} finished")
            elsewhere: dict[str, list[int]] = {}
            for m in w.group:
                other = waiting.get(m)
                if other is not None and other.group != w.group:
                    elsewhere.setdefault(
                        f"{other.info.summary} ({self.where(other.op)}) over group "
                        f"{list(other.group)}",
                        [],
                    ).append(m)
            for where, ms in elsewhere.items():
                why.append(f"{_devices_str(ms)} {_wait(ms)} at {where}")
            lines.append(
                f"  {_devices_str(devs)} {_wait(devs)} at {w.info.summary} ({self.where(w.op)}) "
                f"over group {list(w.group)}; " + "; ".join(why or ["(no reason found)"])
            )
        first = waiting[min(waiting)].op
        head = self.error_at(
            first,
            "deadlock: no device can proceed; these devices wait for group members that "
            "never arrive:",
        )
        return InterpreterError(str(head) + "\n" + "\n".join(lines))


def _wait(devices: Sequence[int]) -> str:
    return "waits" if len(devices) == 1 else "wait"


def _devices_str(devices: Sequence[int]) -> str:
    devices = list(devices)
    if len(devices) == 1:
        return f"device {devices[0]}"
    return "devices " + ", ".join(str(d) for d in devices)
