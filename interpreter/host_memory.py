"""
What a run with values needs of the host's memory, checked before anything is allocated.

A valued run holds every input and output array (global arrays at level G; at level S
each device's shard as well), so a program whose arrays do not fit in the machine's
memory would otherwise die in numpy's allocator (or be killed by the kernel) after
minutes of work. `check_fits` refuses it up front with what it needs and what the host
has, and points at `--timing-only`, which allocates nothing proportional to tensors.
The estimate is a lower bound (intermediate values come on top), so a refusal is never
wrong; a run it lets through may still be large.
"""

from __future__ import annotations

import math
import os
import resource
from collections.abc import Callable
from typing import Any

from shardc.diagnostics import DiagnosticError
from shardc.interpreter.io import Signature
from shardc.interpreter.timing import format_bytes
from shardc.interpreter.values import dtype_of
from xdsl.dialects.builtin import MemRefType


def available_bytes() -> int:
    """Memory the host can give this process now: Linux's MemAvailable (else the physical
    memory), capped by the process's address-space limit (`ulimit -v`) if it has one."""
    have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    have = int(line.split()[1]) * 1024
    except OSError:
        pass
    limit, _ = resource.getrlimit(resource.RLIMIT_AS)
    if limit != resource.RLIM_INFINITY:
        have = min(have, limit)
    return have


def arrays_needed(sig: Signature) -> list[tuple[str, int]]:
    """(what, bytes) of the arrays a valued run of `sig` holds at once, at least."""
    parts = [
        (name, math.prod(shape) * dtype.itemsize)
        for name, shape, dtype in sig.input_specs() + sig.output_specs()
    ]
    if not sig.per_device_io and sig.devices > 1 and sig.level != "G":
        for prefix, specs in (("in", sig.args), ("out", sig.results)):
            for s in specs:
                local = math.prod(s.local_shape) * s.dtype.itemsize * sig.devices
                parts.append((f"{prefix}_{s.index}'s shards on {sig.devices} devices", local))
    return parts


def check_fits(sig: Signature, filename: str, available: int | None = None) -> None:
    """Refuse a valued run of `sig` whose arrays alone exceed the host's memory."""
    _refuse_if_over(
        arrays_needed(sig),
        available,
        lambda total: (
            f"{filename}: error: running @{sig.name} with values needs at least {total} "
            "for its arrays"
        ),
        "; use --timing-only for the step time without values",
    )


def check_kernel_fits(
    function: Any, devices: int, filename: str, available: int | None = None
) -> None:
    """Refuse a valued run of a hand-written level-T kernel whose argument buffers (one
    set per device, as numpy holds them) exceed the host's memory."""
    parts = [
        (f"argument {i}", math.prod(t.get_shape()) * dtype_of(t.element_type).itemsize * devices)
        for i, t in enumerate(function.function_type.inputs.data)
        if isinstance(t, MemRefType)
    ]
    _refuse_if_over(
        parts,
        available,
        lambda total: (
            f"{filename}: error: running @{function.sym_name.data} on {devices} devices "
            f"needs at least {total} for its buffers"
        ),
        "",
    )


def _refuse_if_over(
    parts: list[tuple[str, int]], available: int | None, head: Callable[[str], str], tail: str
) -> None:
    """A `DiagnosticError` if `parts` (what, bytes) need more than the host has: `head` of
    the total, the three largest parts, what the host has, then `tail`."""
    needed = sum(b for _, b in parts)
    have = available_bytes() if available is None else available
    if needed <= have:
        return
    largest = sorted(parts, key=lambda p: -p[1])[:3]
    listed = ", ".join(f"{name} {format_bytes(b)}" for name, b in largest)
    more = ", ..." if len(parts) > len(largest) else ""
    raise DiagnosticError(
        f"{head(format_bytes(needed))} ({listed}{more}); this machine has "
        f"{format_bytes(have)} available{tail}"
    )
