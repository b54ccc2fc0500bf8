"""
Per-device execution: one simulated device runs a planned function as a Python generator.

Plain ops call their xDSL implementation (`HloFunctions`, ...) directly, which is cheaper
than `Interpreter.run_op` (measured in bench/interpreter.py); a collective `yield`s
`(op, operand values)` to the rendezvous (`rendezvous.py`) and receives its results;
nested regions (`scf.if`, `scf.for`, `func.call`, `hlo.while`, `hlo.case`) run with `yield from`, so a collective
inside them suspends the whole device. With a chip, each op also advances the device's
`DeviceClock` (compute time, live bytes).

The step kinds are dispatched with an `if` chain on small integers rather than a table of
callables: this loop runs once per op per device and is the interpreter's hot path; the
table lookup by op type happened once, when the op was planned (`plan.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from shardc.diagnostics import InterpreterError
from shardc.interpreter.plan import (
    A_PLAIN,
    A_WRAPPED,
    ABSTRACT,
    CALL,
    CASE,
    COLLECTIVE,
    DONE,
    FALLBACK,
    FOR,
    FUSION,
    IF,
    PLAIN,
    RETURN,
    WHILE,
    WRAPPED,
    ProgramPlan,
)
from shardc.interpreter.run_diagnostics import RunDiagnostics
from shardc.interpreter.timing import DeviceClock
from xdsl.interpreter import Interpreter
from xdsl.ir import Block, Operation

Observer = Callable[[Operation, tuple[Any, ...], tuple[Any, ...], Any, Any, Any], None]
"""(op, operand values, result values, its implementation, its functions object, device)."""

MAX_LOOP_ITERATIONS = 1_000_000
"""The most iterations the simulators run of one loop (`hlo.while`, `scf.for`), so that no
program can make a run hang: a million iterations take seconds; a longer loop (a scan
over more steps than any model has layers or micro-batches) is an error saying so."""


def too_many_iterations(what: str) -> str:
    return (
        f"{what} {MAX_LOOP_ITERATIONS:,} iterations: shardc simulates at most that many "
        "iterations of one loop"
    )


def loop_bounds_problem(lb: int, ub: int, step: int) -> str | None:
    """What is wrong with an `scf.for`'s bounds, or None."""
    if step <= 0:
        return f"the loop's step is {step}; it must be positive"
    if (ub - lb + step - 1) // step > MAX_LOOP_ITERATIONS:
        return too_many_iterations(f"the loop runs {(ub - lb + step - 1) // step:,} iterations,")
    return None


DeviceRun = Generator[tuple[Operation, tuple[Any, ...]], Any, tuple[Any, ...]]
"""A device's run: yields `(collective op, operand values)`, receives the op's results,
returns the function's results."""


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
class Device:
    """One simulated device of a run."""

    index: int
    interp: Interpreter
    futures: list[Future] = field(default_factory=list[Future])
    tm: DeviceClock | None = None


def _account(tm: DeviceClock, op: Operation, cost: float | None, alloc: int, free: int) -> None:
    """Advance a device's compute stream by an op's time and track its live bytes."""
    if cost is not None:
        start = tm.clock
        end = start + cost
        tm.clock = end
        tm.busy += cost
        tm.compute.append((op, start, end))
    if alloc or free:
        live = tm.live + alloc
        if live > tm.peak:
            tm.peak = live
            tm.peak_op = op
        tm.live = live - free


class DeviceRunner:
    """Runs planned blocks on one device at a time (shared by all devices of a run)."""

    def __init__(self, plan: ProgramPlan, diagnostics: RunDiagnostics, check_types: bool):
        self.plan = plan
        self.diagnostics = diagnostics
        self.check_types = check_types
        self.observe: Observer | None = None
        """Called after every op (not terminators) with its operand and result values:
        how `--check` bounds rounding errors (`driver.tolerance`); None costs nothing."""

    def run_block(
        self, dev: Device, block: Block, args: tuple[Any, ...], env: list[Any]
    ) -> DeviceRun:
        for slot, value in zip(self.plan.block_args[block], args, strict=False):
            env[slot] = value
        check = self.check_types
        observe = self.observe
        tm = dev.tm
        steps = self.plan.steps[block]
        for kind, op, fn, ft, operands, results, specs, cost, alloc, free in steps:
            vals = tuple([env[v] for v in operands])
            if kind == PLAIN:
                try:
                    out = fn(ft, dev.interp, op, vals)
                except InterpreterError:
                    raise
                except Exception as e:
                    raise self.diagnostics.internal(op, dev.index, e) from e
            elif kind == RETURN:
                if free:  # values of a nested block that die at its yield
                    tm.live -= free  # pyright: ignore[reportOptionalMemberAccess]
                return vals
            elif kind == COLLECTIVE:
                out = yield (op, vals)
                if op.IS_START:  # pyright: ignore[reportAttributeAccessIssue]
                    dev.futures.append(out[0])
            elif IF <= kind <= FUSION:
                out = yield from self._run_regions(dev, kind, op, fn, vals, env)
            else:
                out = self._run_leaf(dev, kind, op, fn, ft, vals, len(results))
            if tm is not None:
                _account(tm, op, cost, alloc, free)
            if check:
                if len(out) != len(specs):
                    self.diagnostics.check_results(op, dev.index, out, specs)
                for v, spec in zip(out, specs, strict=False):
                    if spec is not None and (v.shape != spec[0] or v.dtype != spec[1]):
                        self.diagnostics.check_results(op, dev.index, out, specs)
            if observe is not None:
                observe(op, vals, out, fn, ft, dev)
            for r, v in zip(results, out, strict=False):
                env[r] = v
        return ()

    def _run_regions(
        self, dev: Device, kind: int, op: Operation, fn: Any, vals: tuple, env: list[Any]
    ) -> DeviceRun:
        """`scf.if`, `scf.for`, `func.call`, `hlo.while`, `hlo.case`, `hlo.fusion`: run
        their blocks."""
        if kind >= WHILE:
            return (yield from self._run_control(dev, kind, op, vals, env))
        if kind == IF:
            if vals[0] is None:
                raise self.diagnostics.unknown_control(op, dev.index, "branch condition")
            region = op.regions[0] if vals[0] else op.regions[1]
            if region.blocks:
                return (yield from self.run_block(dev, region.block, (), env))
            return ()
        if kind == FOR:
            lb, ub, step, *carried = vals
            if lb is None or ub is None or step is None:
                raise self.diagnostics.unknown_control(op, dev.index, "loop bounds")
            problem = loop_bounds_problem(int(lb), int(ub), int(step))
            if problem is not None:
                raise self.diagnostics.error_at(op, f"on device {dev.index}: {problem}")
            body = op.regions[0].block
            carried = tuple(carried)
            for i in range(int(lb), int(ub), int(step)):
                carried = yield from self.run_block(dev, body, (i, *carried), env)
            return carried
        assert kind == CALL
        frame = [None] * self.plan.frame_size[fn]
        return (yield from self.run_block(dev, fn.body.block, vals, frame))

    def _run_control(
        self, dev: Device, kind: int, op: Operation, vals: tuple, env: list[Any]
    ) -> DeviceRun:
        """
        `hlo.while`: `cond` on the carried values, then `do` while it is true; `hlo.case`:
        the branch its index names (an index out of range runs the last one).
        """
        if kind == FUSION:  # the fused ops, in their order: bit-exact with the unfused ones
            return (yield from self.run_block(dev, op.regions[0].block, vals, env))
        if kind == CASE:
            if vals[0] is None:
                raise self.diagnostics.unknown_control(op, dev.index, "case index")
            index = int(vals[0])
            last = len(op.regions) - 1
            branch = op.regions[index if 0 <= index <= last else last].block
            return (yield from self.run_block(dev, branch, (), env))
        assert kind == WHILE
        cond, body = op.regions[0].block, op.regions[1].block
        carried = vals
        for _ in range(MAX_LOOP_ITERATIONS + 1):
            (pred,) = yield from self.run_block(dev, cond, carried, env)
            if pred is None:
                raise self.diagnostics.unknown_control(op, dev.index, "loop condition")
            if not bool(pred):
                return carried
            carried = yield from self.run_block(dev, body, carried, env)
        raise self.diagnostics.error_at(
            op, f"on device {dev.index}: {too_many_iterations('still running after')}"
        )

    def _run_leaf(
        self, dev: Device, kind: int, op: Operation, fn: Any, ft: Any, vals: tuple, n: int
    ) -> tuple[Any, ...]:
        """Ops without regions other than PLAIN: wrapped, fallback, done, --timing-only."""
        if kind == DONE:
            return self._done(dev, op, vals[0])
        if kind >= A_PLAIN:
            # --timing-only: compute small results of known operands, else unknown (None)
            if kind == ABSTRACT or any(v is None for v in vals):
                return (None,) * n
        try:
            if kind in (WRAPPED, A_WRAPPED):
                return fn(ft, dev.interp, op, vals).values
            if kind == A_PLAIN:
                return fn(ft, dev.interp, op, vals)
            return dev.interp.run_op(op, vals)
        except Exception as e:
            if isinstance(e, InterpreterError) and kind != FALLBACK:
                raise
            raise self.diagnostics.internal(op, dev.index, e) from e

    def _done(self, dev: Device, op: Operation, future: Any) -> tuple[Any, ...]:
        """`collective.done`: unwrap a future (once), waiting until its collective ends."""
        if not isinstance(future, Future):
            raise self.diagnostics.not_a_future(op, dev.index)
        if future.done is not None:
            raise self.diagnostics.future_reused(op, dev.index, future.op, future.done)
        future.done = op
        tm = dev.tm
        if tm is not None and future.end > tm.clock:
            tm.waits.append((op, tm.clock, future.end))
            tm.clock = future.end
        return future.values
