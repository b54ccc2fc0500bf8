"""
The N-device executor: runs one function of a module on every simulated device, meeting
at collectives, reporting deadlocks, collective mismatches and misused futures.

`Executor` is the entry point and only wires its parts together, one module each:

* `plan`: the program plan, what each op becomes (planned once per function; unsupported
  ops are errors before anything runs);
* `execution`: one device running a planned function as a generator that suspends at
  collectives;
* `rendezvous`: the scheduler that runs all devices and fires a collective when its group
  has met (and times it on the simulated machine);
* `run_diagnostics`: locations and every error message of a run (deadlocks, mismatches,
  futures, interpreter bugs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from shardc.diagnostics import InterpreterError
from shardc.dialects.sizes import value_bytes
from shardc.dialects.spmd import module_mesh
from shardc.hardware.chips import Chip
from shardc.hardware.cost import CostModel
from shardc.interpreter.execution import Device, DeviceRunner, Future, Observer
from shardc.interpreter.hlo_impls import DEVICE_KEY, DeviceInfo, HloFunctions
from shardc.interpreter.plan import SMALL_ELEMENTS, ProgramPlan, is_level_s
from shardc.interpreter.rendezvous import Rendezvous
from shardc.interpreter.run_diagnostics import RunDiagnostics
from shardc.interpreter.timing import DeviceClock, Timeline
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation

__all__ = ["SMALL_ELEMENTS", "Executor", "Future", "is_level_s", "module_mesh"]


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
        self.diagnostics = RunDiagnostics(self.filename)
        self.plan = ProgramPlan(module, self.diagnostics, self.cost_model, abstract)
        self._runner = DeviceRunner(self.plan, self.diagnostics, self.check_types)

    @property
    def observe(self) -> Observer | None:
        """Called after every op a device runs (see `DeviceRunner.observe`)."""
        return self._runner.observe

    @observe.setter
    def observe(self, observer: Observer | None) -> None:
        self._runner.observe = observer

    def location(self, op: Operation) -> str | None:
        """`file:line:col` of an op, None for ops without a source location."""
        return self.diagnostics.location(op)

    def where(self, op: Operation) -> str:
        """`file:line:col` of an op (or just the file for ops made by passes)."""
        return self.diagnostics.where(op)

    def error_at(self, op: Operation, message: str) -> InterpreterError:
        return self.diagnostics.error_at(op, message)

    def prepare(self, function: func.FuncOp) -> None:
        """Plan every block reachable from `function`; unsupported ops are errors here."""
        self.plan.prepare(function)

    def run(
        self, function: func.FuncOp, per_device_args: Sequence[Sequence[Any]]
    ) -> list[tuple[Any, ...]]:
        """
        Run `function` on `len(per_device_args)` devices (1 for a level-G function, the
        mesh's device count for level S) and return each device's results.
        """
        self.prepare(function)
        level_s = is_level_s(function)
        self._check_arguments(function, level_s, per_device_args)
        self.timeline = None
        devices = self._devices(function, level_s, range(len(per_device_args)))
        size = self.plan.frame_size[function]
        gens = [
            self._runner.run_block(dev, function.body.block, tuple(args), [None] * size)
            for dev, args in zip(devices, per_device_args, strict=False)
        ]
        rendezvous = Rendezvous(
            self.plan.collectives, self.diagnostics, self.cost_model is not None, self.abstract
        )
        with np.errstate(all="ignore"):
            results = rendezvous.run(gens, devices)
        self._check_futures(devices)
        if self.chip is not None:
            self.timeline = self.make_timeline(level_s, [dev.tm for dev in devices])  # pyright: ignore
        return results

    def run_local(
        self, function: func.FuncOp, local_args: dict[int, Sequence[Any]], rendezvous: Any
    ) -> tuple[dict[int, tuple[Any, ...]], list[Device]]:
        """
        Run a level-S `function` on the devices `local_args` names only, a slice of the
        mesh whose other devices run in other processes (`interpreter.mpi`): `rendezvous`
        meets them (`DistributedRendezvous.run_local`). Each local device's results, and
        the devices (their clocks make the timeline once every process's are together).
        """
        self.prepare(function)
        self.timeline = None
        devices = self._devices(function, True, sorted(local_args))
        size = self.plan.frame_size[function]
        gens = {
            dev.index: self._runner.run_block(
                dev, function.body.block, tuple(local_args[dev.index]), [None] * size
            )
            for dev in devices
        }
        with np.errstate(all="ignore"):
            results = rendezvous.run_local(gens, devices)
        self._check_futures(devices)
        return results, devices

    def make_timeline(self, level_s: bool, clocks: list[DeviceClock]) -> Timeline:
        """The timeline of a run from every device's clock (in device order)."""
        assert self.chip is not None
        return Timeline(
            self.chip,
            "S" if level_s else "G",
            clocks,
            self.plan.op_costs,
            self.plan.collective_costs,
            self.location,
            self.cost_model,
        )

    def _check_arguments(
        self, function: func.FuncOp, level_s: bool, per_device_args: Sequence[Sequence[Any]]
    ) -> None:
        """One set of arguments per device (the mesh's devices at level S, else one)."""
        n = len(per_device_args)
        if level_s:
            mesh = module_mesh(self.module)
            if mesh is None:
                raise self.error_at(
                    function, "is a level-S function but the module declares no spmd.mesh"
                )
            if n != mesh[1].device_count:
                raise self.diagnostics.error(
                    f"mesh @{mesh[0]} has {mesh[1].device_count} "
                    f"devices but {n} sets of arguments were given"
                )
        elif n != 1:
            raise self.diagnostics.error(
                f"a level-G function runs on one device, got {n} sets of arguments"
            )
        n_args = len(function.body.block.args)
        for d, args in enumerate(per_device_args):
            if len(args) != n_args:
                raise self.diagnostics.error(
                    f"@{function.sym_name.data} takes {n_args} "
                    f"arguments, device {d} was given {len(args)}"
                )

    def _devices(
        self, function: func.FuncOp, level_s: bool, indices: Sequence[int]
    ) -> list[Device]:
        """A fresh interpreter (and, with a chip, clock) for each device of `indices`."""
        arg_bytes = 0
        if self.cost_model is not None:
            arg_bytes = sum(value_bytes(a.type) for a in function.body.block.args)
        devices: list[Device] = []
        for d in indices:
            interp = Interpreter(self.module)
            for ft in (*self.plan.functions, *self.plan.fallback_functions):
                interp.register_implementations(ft)
            if level_s:
                interp.set_data(HloFunctions, DEVICE_KEY, DeviceInfo(d, self.module))
            clock = DeviceClock(d, arg_bytes) if self.cost_model is not None else None
            devices.append(Device(d, interp, tm=clock))
        return devices

    def _check_futures(self, devices: list[Device]) -> None:
        """Every future of a `_start` collective was consumed by a `collective.done`."""
        unconsumed: dict[Operation, list[int]] = {}
        for dev in devices:
            for f in dev.futures:
                if f.done is None:
                    unconsumed.setdefault(f.op, []).append(dev.index)
        for op, devs in unconsumed.items():
            raise self.diagnostics.future_unconsumed(op, devs)
