"""
The messages of a level-G/S run: where an op is, and the errors the executor reports
(an op failing on a device, a result of the wrong type, a future used twice or never, a
collective mismatch, a deadlock).

They live apart from the executor so that each of its parts (the plan, the per-device
runner, the rendezvous) can report an error without reaching into the others, and so that
the wording of every diagnostic is in one place (the tests match it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from shardc.diagnostics import InterpreterError, error_at, op_position
from shardc.interpreter.values import dtype_name
from xdsl.ir import Operation


class Waiter(Protocol):
    """What a deadlock or mismatch message needs of a device waiting at a collective."""

    device: int
    op: Operation
    group: tuple[int, ...]

    @property
    def signature(self) -> tuple[Any, ...]: ...

    @property
    def summary(self) -> str: ...


class RunDiagnostics:
    """Locations and error messages of one module's runs."""

    def __init__(self, filename: str):
        self.filename = filename

    # Locations ------------------------------------------------------------------------

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

    def error(self, message: str) -> InterpreterError:
        """An error about the run as a whole (its arguments), not about one op."""
        return InterpreterError(f"{self.filename}: error: {message}")

    # One device -----------------------------------------------------------------------

    def unknown_control(self, op: Operation, device: int, what: str) -> InterpreterError:
        return self.error_at(
            op,
            f"on device {device}: the {what} depends on values --timing-only does not "
            "compute (inputs or large tensors); run without --timing-only",
        )

    def internal(self, op: Operation, device: int, e: Exception) -> InterpreterError:
        return self.error_at(
            op, f"failed on device {device}: {type(e).__name__}: {e} (interpreter bug?)"
        )

    def check_results(self, op: Operation, device: int, out: Any, specs: tuple) -> None:
        """Raise if `out` does not match the op's result `specs` (shape, dtype)."""
        if len(out) != len(specs):
            raise self.error_at(
                op, f"produced {len(out)} values for {len(specs)} results on device {device}"
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
                    f"result {i} on device {device} is {got} but its type is "
                    f"{op.results[i].type} (interpreter bug)",
                )

    def not_a_future(self, op: Operation, device: int) -> InterpreterError:
        return self.error_at(op, f"on device {device}: the operand is not a future")

    def future_reused(
        self, op: Operation, device: int, start: Operation, first: Operation
    ) -> InterpreterError:
        return self.error_at(
            op,
            f"uses the future of '{start.name}' ({self.where(start)}) a second "
            f"time on device {device} (first consumed at {self.where(first)}); "
            "a future is consumed exactly once",
        )

    def future_unconsumed(self, op: Operation, devices: Sequence[int]) -> InterpreterError:
        return self.error_at(
            op,
            f"produces a future that is never consumed by a collective.done on "
            f"{devices_str(devices)}",
        )

    # The group ------------------------------------------------------------------------

    def mismatch(self, members: Sequence[Waiter]) -> InterpreterError:
        by_op: dict[tuple[Any, ...], list[Waiter]] = {}
        for w in members:
            by_op.setdefault((w.signature, self.where(w.op)), []).append(w)
        lines = [
            f"  {devices_str([w.device for w in ws])} at {ws[0].summary} ({self.where(ws[0].op)})"
            for ws in by_op.values()
        ]
        group = list(members[0].group)
        first = members[0].op
        head = self.error_at(
            first,
            f"collective mismatch in group {group}: its members wait at different collectives:",
        )
        return InterpreterError(str(head) + "\n" + "\n".join(lines))

    def deadlock(
        self, waiting: dict[int, Waiter], finished: dict[int, tuple[Any, ...]]
    ) -> InterpreterError:
        seen: dict[tuple[int, tuple[int, ...]], list[int]] = {}
        for d in sorted(waiting):
            w = waiting[d]
            seen.setdefault((id(w.op), w.group), []).append(d)
        lines = [self._deadlock_line(devs, waiting, finished) for devs in seen.values()]
        first = waiting[min(waiting)].op
        head = self.error_at(
            first,
            "deadlock: no device can proceed; these devices wait for group members that "
            "never arrive:",
        )
        return InterpreterError(str(head) + "\n" + "\n".join(lines))

    def _deadlock_line(
        self, devs: list[int], waiting: dict[int, Waiter], finished: dict[int, Any]
    ) -> str:
        """Why the devices `devs`, waiting at one op over one group, cannot meet."""
        w = waiting[devs[0]]
        why: list[str] = []
        done = [m for m in w.group if m in finished]
        if done:
            why.append(f"{devices_str(done)} finished")
        elsewhere: dict[str, list[int]] = {}
        for m in w.group:
            other = waiting.get(m)
            if other is not None and other.group != w.group:
                elsewhere.setdefault(
                    f"{other.summary} ({self.where(other.op)}) over group {list(other.group)}",
                    [],
                ).append(m)
        for where, ms in elsewhere.items():
            why.append(f"{devices_str(ms)} {_wait(ms)} at {where}")
        return (
            f"  {devices_str(devs)} {_wait(devs)} at {w.summary} ({self.where(w.op)}) "
            f"over group {list(w.group)}; " + "; ".join(why or ["(no reason found)"])
        )


def _wait(devices: Sequence[int]) -> str:
    return "waits" if len(devices) == 1 else "wait"


def devices_str(devices: Sequence[int]) -> str:
    """`device 3` or `devices 0, 1`."""
    devices = list(devices)
    if len(devices) == 1:
        return f"device {devices[0]}"
    return "devices " + ", ".join(str(d) for d in devices)
