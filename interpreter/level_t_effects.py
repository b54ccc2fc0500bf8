"""
Semantics of the level-T ops with an effect on other devices: `tpu.dma_start`,
`tpu.dma_wait`, `tpu.sem_signal`, `tpu.sem_wait`, `tpu.barrier`.

Why not xDSL's `@impl`: an xDSL implementation runs its op to completion in one call
(`Interpreter.run_ssacfg_region` is a plain loop), but a wait must suspend its device in
the middle of a block until a peer or a DMA has caught up, and the discrete-event loop
resumes it at a later simulated time. So these are generator methods registered the same
way, `@effect(OpType)` on an `EffectFunctions` class, looked up by op type
(`effect_table`): `yield` suspends the device (its `DeviceState.waiting` says on what),
the block walker runs them with `yield from`. They take the device and the walker's
environment, because their optional operands (a remote `device`, a `send_sem`) make
positional arguments ambiguous.

The simulator only calls them when global time has reached the device's clock, so every
effect happens at a consistent simulated time.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any

from shardc.dialects import spmd, tpu
from shardc.interpreter.level_t_dma import DmaEngine, wake_waiters
from shardc.interpreter.level_t_machine import DeviceState, Events, Ref, Semaphore
from shardc.interpreter.level_t_memory import Memory
from shardc.interpreter.level_t_races import acquire, join, tick
from xdsl.ir import Operation, SSAValue

Env = dict[SSAValue, Any]
Effect = Callable[[Any, DeviceState, Any, Env], Generator[None, None, None]]

_EFFECT_KEY = "__level_t_effect_op_type"


def effect(op_type: type[Operation]) -> Callable[[Effect], Effect]:
    """Marks a generator method as the semantics of `op_type` (see `effect_table`)."""

    def annot(fn: Effect) -> Effect:
        setattr(fn, _EFFECT_KEY, op_type)
        return fn

    return annot


class EffectFunctions:
    """The effects, over the machine's memory, DMA engines, devices and barriers."""

    def __init__(self, devs: Sequence[DeviceState], memory: Memory, dma: DmaEngine, events: Events):
        self.devs = devs
        self.memory = memory
        self.dma = dma
        self.events = events
        self.barriers: dict[tuple[Operation, tuple[int, ...]], set[int]] = {}
        """Who has arrived at each barrier (op, group) not yet released."""

    def _target(self, op: Operation, d: int, device: SSAValue | None, env: Env) -> int:
        return d if device is None else self.memory.device_id(op, d, int(env[device]))

    def _block_on(
        self, dev: DeviceState, op: Operation, kind: str, obj: Any
    ) -> Generator[None, None, None]:
        dev.waiting = (op, kind, obj)
        dev.wait_since = self.events.now
        yield

    @effect(tpu.DMAStartOp)
    def dma_start(
        self, dev: DeviceState, op: tpu.DMAStartOp, env: Env
    ) -> Generator[None, None, None]:
        d = dev.index
        src: Ref = env[op.src]
        target = self._target(op, d, op.device, env)
        dst = self.memory.remote_ref(op, d, env[op.dst], target)
        recv = self.memory.remote_sem(op, d, env[op.recv_sem], target)
        send = self.memory.one_sem(env[op.send_sem]) if op.send_sem is not None else None
        self.dma.start(dev, op, src, dst, target, send, recv)
        yield from ()

    @effect(tpu.DMAWaitOp)
    def dma_wait(
        self, dev: DeviceState, op: tpu.DMAWaitOp, env: Env
    ) -> Generator[None, None, None]:
        sem = self.memory.one_sem(env[op.sem])
        amount = env[op.ref].nbytes
        while sem.value < amount:
            yield from self._block_on(dev, op, "sem", (sem, amount))
        self.dma.take(dev, op, sem, amount)

    @effect(tpu.SemSignalOp)
    def sem_signal(
        self, dev: DeviceState, op: tpu.SemSignalOp, env: Env
    ) -> Generator[None, None, None]:
        d = dev.index
        amount = int(env[op.amount])
        target = self._target(op, d, op.device, env)
        sem: Semaphore = self.memory.remote_sem(op, d, env[op.sem], target)
        sem.value += amount
        join(sem.vc, dev.vc)
        tick(dev.vc, d)
        wake_waiters(self.devs, self.events, sem)
        yield from ()

    @effect(tpu.SemWaitOp)
    def sem_wait(
        self, dev: DeviceState, op: tpu.SemWaitOp, env: Env
    ) -> Generator[None, None, None]:
        sem = self.memory.one_sem(env[op.sem])
        amount = int(env[op.amount])
        while sem.value < amount:
            yield from self._block_on(dev, op, "sem", (sem, amount))
        sem.value -= amount
        acquire(dev.vc, dev.index, sem)

    @effect(tpu.BarrierOp)
    def barrier(self, dev: DeviceState, op: tpu.BarrierOp, env: Env) -> Generator[None, None, None]:
        d = dev.index
        groups = op.device_groups(len(self.devs))
        where = spmd.group_ranks(groups).get(d)
        if where is None:
            return
        group = tuple(groups[where[0]])
        key = (op, group)
        arrived = self.barriers.setdefault(key, set())
        arrived.add(d)
        if len(arrived) == len(group):
            self._release(key, group, d)
            return
        while d in self.barriers.get(key, ()):
            yield from self._block_on(dev, op, "barrier", (key, group))

    def _release(self, key: Any, group: tuple[int, ...], last: int) -> None:
        """Everyone has arrived: join the members' clocks and wake the others."""
        del self.barriers[key]
        merged: dict[Any, int] = {}
        for m in group:
            join(merged, self.devs[m].vc)
        for m in group:
            self.devs[m].vc = dict(merged)
            tick(self.devs[m].vc, m)
            if m != last:
                self.events.wake(self.devs[m])


def effect_table(functions: EffectFunctions) -> dict[type[Operation], Callable[..., Any]]:
    """Every effect op type's bound generator method."""
    table: dict[type[Operation], Callable[..., Any]] = {}
    for cls in reversed(type(functions).mro()):
        for name, val in cls.__dict__.items():
            op_type = getattr(val, _EFFECT_KEY, None)
            if op_type is not None:
                table[op_type] = getattr(functions, name)
    return table


__all__ = ["EffectFunctions", "effect", "effect_table"]
