"""
The level-T simulator's event loop (`level_t`'s module docstring says what it models).

`Simulator` builds the machine (`level_t_machine`, `level_t_memory`, `level_t_dma`), runs
the kernel on every device as a Python generator walking its blocks, and hands the
finished machine to `level_t_report` (report, trace, deadlock and exit checks).

A device walks its ops in order: structured control flow (`scf.for`, `scf.if`,
`scf.while`) runs its regions with `yield from`; a local op runs its `level_t_ops` implementation and advances
the device's own clock by its cost (`charge`); before an op with an effect on other
devices (`level_t_effects`) the device yields to the event loop, which resumes it when
global time reaches its clock, so every effect happens at a consistent simulated time.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from typing import Any

import numpy as np
from shardc.diagnostics import InterpreterError
from shardc.dialects import spmd, tpu
from shardc.dialects.tpu import MemorySpace
from shardc.hardware.chips import Chip, get_chip
from shardc.hardware.topology import torus_lengths
from shardc.interpreter import level_t_report
from shardc.interpreter.execution import loop_bounds_problem
from shardc.interpreter.level_t_dma import DmaEngine
from shardc.interpreter.level_t_effects import EffectFunctions, effect_table
from shardc.interpreter.level_t_machine import (
    Buffer,
    DeviceState,
    Diagnostics,
    Dma,
    Events,
    Ref,
    Semaphore,
    Torus,
    uninitialized,
    unmaterialized,
)
from shardc.interpreter.level_t_memory import Memory
from shardc.interpreter.level_t_ops import (
    DEVICE_KEY,
    MemoryFunctions,
    impl_table,
    placeholder_values,
    vector_cost,
    vector_flops,
)
from shardc.interpreter.values import dtype_of
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import MemRefType, ModuleOp, VectorType
from xdsl.interpreter import Interpreter
from xdsl.ir import Block, Operation, SSAValue

Env = dict[SSAValue, Any]

_FOR, _IF, _END, _EFFECT, _LOCAL, _PLACEHOLDER, _WHILE = range(7)

"""How an op of a block runs (`Simulator._plan`)."""


class Simulator:
    """Runs one kernel on every device of the mesh; see the module docstring."""

    def __init__(
        self,
        module: ModuleOp,
        chip: Chip | str = "v5e",
        filename: str | None = None,
        trace: bool = False,
        values: bool = True,
        torus: Sequence[int] | None = None,
    ):
        self.module = module
        self.values = values
        """False: the timing mode (see `run_level_t`); no bytes are read or written."""
        self.chip = get_chip(chip) if isinstance(chip, str) else chip
        self.diag = Diagnostics(filename)
        self.filename = self.diag.filename
        self.mesh: spmd.MeshAttr | None = spmd.find_mesh(module)
        self.n = self.mesh.device_count if self.mesh is not None else 1
        lengths = self._torus_lengths(torus)
        self.torus = Torus(
            tuple(lengths), tuple(self.chip.has_wraparound(length) for length in lengths)
        )
        self.record_trace = trace
        self.devs = [DeviceState(d) for d in range(self.n)]
        self.args: list[list[Buffer]] = []
        """Each device's argument (HBM) buffers, from `run`'s inputs."""
        self.events = Events()
        self.memory = Memory(self.chip, self.devs, self.args, self.diag, values)
        self.dma = DmaEngine(
            self.chip, self.devs, self.torus, self.events, self.diag, values, trace
        )
        self.effects = EffectFunctions(self.devs, self.memory, self.dma, self.events)
        self._effects = effect_table(self.effects)
        self._impls = impl_table(self)
        self._gens: list[Generator[None, None, None]] = []
        self._plans: dict[Block, list[tuple[int, Operation, Any]]] = {}

    def _torus_lengths(self, torus: Sequence[int] | None) -> list[int]:
        if torus is not None:
            if math.prod(torus) != self.n:
                raise InterpreterError(
                    f"{self.filename}: error: a torus of {'x'.join(map(str, torus))} chips for "
                    f"{self.n} devices"
                )
            return list(torus)
        if self.mesh is not None:
            return torus_lengths(self.chip, self.mesh.shape)
        return [1]

    # Messages and routing (for callers and tests) -----------------------------------

    def where(self, op: Operation) -> str:
        return self.diag.where(op)

    def error(self, op: Operation, device: int | None, message: str) -> InterpreterError:
        return self.diag.error(op, device, message)

    def at(self, op: Operation) -> str:
        return self.diag.at(op)

    def coords(self, device: int) -> tuple[int, ...]:
        return self.torus.coords(device)

    def route(self, src: int, dst: int) -> list[tuple[str, int, int, int]]:
        """Directed links ("ici", node, axis, direction) of the dimension-order route."""
        return self.torus.route(src, dst)

    @property
    def dmas(self) -> list[Dma]:
        return self.dma.dmas

    @property
    def sems(self) -> list[Semaphore]:
        return self.memory.sems

    # Running ------------------------------------------------------------------------

    def run(
        self, function: func.FuncOp, inputs: Sequence[Sequence[np.ndarray | None]]
    ) -> tuple[list[list[np.ndarray]], dict[str, Any]]:
        if len(inputs) != self.n:
            raise InterpreterError(
                f"{self.filename}: error: the kernel runs on {self.n} devices, got inputs "
                f"for {len(inputs)}"
            )
        if self._gens:
            raise RuntimeError("a Simulator runs its kernel once")
        self.args.extend(self._arguments(function, d, inputs[d]) for d in range(self.n))
        self._gens = [self._device(self.devs[d], function) for d in range(self.n)]
        for dev in self.devs:
            self.events.schedule(dev, 0.0)
        self._loop()
        blocked = [d for d in self.devs if not d.done]
        if blocked:
            raise level_t_report.deadlock(self, blocked)
        level_t_report.check_exit(self)
        outputs = [[b.array for b in bufs] for bufs in self.args] if self.values else []
        return outputs, self.report()

    def _arguments(
        self, function: func.FuncOp, d: int, given: Sequence[np.ndarray | None]
    ) -> list[Buffer]:
        """Device `d`'s argument buffers (HBM), from its inputs (None: uninitialized)."""
        n_args = len(function.body.block.args)
        if len(given) != n_args:
            raise InterpreterError(
                f"{self.filename}: error: @{function.sym_name.data} takes {n_args} "
                f"arguments, device {d} got {len(given)}"
            )
        bufs = []
        arg_types = function.function_type.inputs.data
        for k, (ty, arr) in enumerate(zip(arg_types, given, strict=False)):
            assert isinstance(ty, MemRefType), f"kernel argument {k} is not a memref"
            shape, dtype = tuple(ty.get_shape()), dtype_of(ty.element_type)
            if not self.values:
                data = unmaterialized(shape, dtype)
            elif arr is None:
                data = uninitialized(shape, dtype)
            else:
                data = np.array(arr, dtype=dtype, copy=True)
                if data.shape != shape:
                    raise InterpreterError(
                        f"{self.filename}: error: argument {k} on device {d} has shape "
                        f"{data.shape}, the kernel expects {shape}"
                    )
            name = function.body.block.args[k].name_hint or f"arg{k}"
            space = tpu.memory_space_of(ty) or MemorySpace.HBM
            bufs.append(Buffer(d, name, space, data, None))
        return bufs

    def _loop(self) -> None:
        while self.events.queue:
            kind, payload = self.events.pop()
            if kind == "resume":
                self._resume(payload)
            elif kind == "drain":
                self.dma.drained(*payload)
            elif kind == "complete":
                self.dma.complete(payload)

    def _resume(self, payload: tuple[int, int]) -> None:
        d, token = payload
        dev = self.devs[d]
        if dev.done or token != dev.token:
            return
        now = self.events.now
        if dev.waiting is not None:
            if self.record_trace and now > dev.wait_since:
                at = {"at": self.diag.where(dev.waiting[0])}
                dev.trace.append(("wait", dev.waiting[0].name, dev.wait_since, now, at))
            dev.waiting = None
        dev.clock = max(dev.clock, now)
        try:
            next(self._gens[d])
        except StopIteration:
            dev.done = True

    def charge(self, dev: DeviceState, op: Operation, seconds: float, flops: float = 0.0) -> None:
        """`op` keeps `dev`'s compute busy for `seconds` (a compute slice of `flops`)."""
        if seconds > 0:
            if self.record_trace:
                args = {"at": self.diag.where(op), "flops": flops}
                dev.trace.append(("compute", op.name, dev.clock, dev.clock + seconds, args))
            dev.clock += seconds
            dev.busy += seconds

    # Devices ------------------------------------------------------------------------

    def _device(self, dev: DeviceState, function: func.FuncOp) -> Generator[None, None, None]:
        interp = Interpreter(self.module)
        interp.set_data(MemoryFunctions, DEVICE_KEY, dev)
        buffers = self.args[dev.index]
        env: Env = {
            a: Ref(b, b.array, b.name)
            for a, b in zip(function.body.block.args, buffers, strict=False)
        }
        yield from self._run_block(dev, interp, function.body.block, env)

    def _plan(self, block: Block) -> list[tuple[int, Operation, Any]]:
        """
        `block`'s ops with how each runs, worked out once per block (not per op executed):
        the kind (`_FOR`, ...) and its implementation: an effect, a local op's `Impl`, or
        for a placeholder op of the timing mode its results, cost and FLOPs (placeholders
        are read-only zero-stride arrays, so one set serves every execution).
        """
        plan = self._plans.get(block)
        if plan is not None:
            return plan
        plan = []
        for op in block.ops:
            if isinstance(op, scf.ForOp):
                plan.append((_FOR, op, None))
            elif isinstance(op, scf.IfOp):
                plan.append((_IF, op, tpu.BRANCH_ON_VALUE in op.attributes))
            elif isinstance(op, scf.WhileOp):
                plan.append((_WHILE, op, None))
            elif isinstance(op, scf.YieldOp | scf.ConditionOp | func.ReturnOp):
                plan.append((_END, op, None))
            elif (effect := self._effects.get(type(op))) is not None:
                plan.append((_EFFECT, op, effect))
            else:
                entry = self._impls.get(type(op))
                if (
                    (entry is None or entry.value)
                    and not self.values
                    and any(isinstance(r.type, VectorType) for r in op.results)
                ):
                    cost = (vector_cost(self.chip, op), vector_flops(op))
                    plan.append((_PLACEHOLDER, op, (placeholder_values(op), cost)))
                else:
                    plan.append((_LOCAL, op, entry))
        self._plans[block] = plan
        return plan

    def _run_block(
        self, dev: DeviceState, interp: Interpreter, block: Block, env: Env
    ) -> Generator[None, None, Any]:
        for kind, op, how in self._plan(block):
            if kind == _PLACEHOLDER:
                values, (seconds, flops) = how
                self.charge(dev, op, seconds, flops)
                for r, v in zip(op.results, values, strict=False):
                    env[r] = v
            elif kind == _LOCAL:
                self._local(dev, interp, op, how, env)
            elif kind == _EFFECT:
                # Effects on the shared machine happen at a consistent global time.
                if dev.clock > self.events.now:
                    dev.waiting = None
                    self.events.schedule(dev, dev.clock)
                    yield
                yield from how(dev, op, env)
            elif kind == _FOR:
                yield from self._run_for(dev, interp, op, env)
            elif kind == _WHILE:
                yield from self._run_while(dev, interp, op, env)
            elif kind == _IF:
                if how and not self.values:  # a dynamic case's index, say
                    raise self.diag.error(
                        op, dev.index, "the branch depends on values: run without --timing-only"
                    )
                region = op.true_region if bool(env[op.cond]) else op.false_region
                vals = []
                if region.blocks:
                    vals = yield from self._run_block(dev, interp, region.block, env)
                for r, v in zip(op.results, vals, strict=False):
                    env[r] = v
            else:
                return [env[v] for v in op.operands]
        return []

    def _run_for(
        self, dev: DeviceState, interp: Interpreter, op: scf.ForOp, env: Env
    ) -> Generator[None, None, None]:
        lb, ub, st = (int(env[v]) for v in (op.lb, op.ub, op.step))
        problem = loop_bounds_problem(lb, ub, st)
        if problem is not None:
            raise self.diag.error(op, dev.index, problem)
        carried = [env[v] for v in op.iter_args]
        body = op.body.block
        i = lb
        while i < ub:
            env[body.args[0]] = i
            for a, v in zip(body.args[1:], carried, strict=False):
                env[a] = v
            carried = yield from self._run_block(dev, interp, body, env)
            i += st
        for r, v in zip(op.results, carried, strict=False):
            env[r] = v

    def _run_while(
        self, dev: DeviceState, interp: Interpreter, op: scf.WhileOp, env: Env
    ) -> Generator[None, None, None]:
        """`before` (ending in `scf.condition`), then while its flag holds `after` and
        `before` again. The timing mode reads no values, so it cannot know the flag."""
        if not self.values:
            raise self.diag.error(
                op, dev.index, "the loop condition depends on values: run without --timing-only"
            )
        carried = [env[v] for v in op.arguments]
        before, after = op.before_region.block, op.after_region.block
        while True:
            for a, v in zip(before.args, carried, strict=False):
                env[a] = v
            flag, *passed = yield from self._run_block(dev, interp, before, env)
            if not bool(flag):
                break
            for a, v in zip(after.args, passed, strict=False):
                env[a] = v
            carried = yield from self._run_block(dev, interp, after, env)
        for r, v in zip(op.results, passed, strict=False):
            env[r] = v

    def _local(
        self, dev: DeviceState, interp: Interpreter, op: Operation, entry: Any, env: Env
    ) -> None:
        """A local op: its `level_t_ops` implementation."""
        if entry is None:
            raise self.diag.error(op, dev.index, "is not supported by the level-T simulator")
        args = tuple(env[v] for v in op.operands)
        outs = entry.run(entry.functions, interp, op, args).values
        for r, v in zip(op.results, outs, strict=False):
            env[r] = v

    # Results ------------------------------------------------------------------------

    def report(self) -> dict[str, Any]:
        return level_t_report.report(self)

    def trace(self) -> dict[str, Any]:
        """Chrome trace events (run with `trace=True`): compute, wait and DMA slices per device."""
        return level_t_report.trace(self)


__all__ = ["Simulator"]
