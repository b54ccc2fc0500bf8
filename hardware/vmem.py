"""
The VMEM a collective of `lower-to-tpu` may hold, and how a ring reduce-scatter cuts its
chunks to fit it: one definition for the lowering (`lowering/collectives.py`,
`lowering/reduce_scatter.py`) and level S's cost of the same collective
(`cost.CostModel.collective_time`), so that level S charges the pieces level T runs.

Budget. A collective run synchronously has the kernel's whole VMEM (nothing else is live
while it runs). A `_start` holds its VMEM until its `done`, across the compute in between,
and several may be in flight: collectives in flight keep to half the VMEM (the tiled
compute keeps the other half), each taking a fixed share of it, `1 / IN_FLIGHT` of the
half: what the `schedule` pass's default `max-in-flight` collectives need, each as much as
the next. The share does not depend on what else is in flight, so a `_start`'s level-S
cost is its types' alone (a cost model's cache by types stays exact, and every scheduler
sees one cost per collective). Only a program with more than `IN_FLIGHT` collectives in
flight at once (the scheduler never makes one; a hand-written program may) leaves a later
`_start` less than its share: it takes half of what is left of the half (at least
1/64 of the VMEM), and level T cuts it into more pieces than level S charges.

(The rule before gave each `_start` half of what was left of the half: the first one a
quarter of the VMEM, the fourth 1/32, so the gradient all_reduces of a data-parallel
step, four in flight on v5p, were cut into 2, 4, 8 and 16 pieces, each piece a whole
ring of latencies, while level S charged each as one: level T 1.21x level S.)

Pieces (`rs_pieces`). A ring reduce-scatter keeps 4 VMEM blocks per ring (receive double
buffer, own chunk, accumulator; in the accumulation type, f32 for bf16/f16) for each of
the `concurrent` phases run at once (a torus all_reduce's parts); bidirectional halves
each piece (ways = 2). If that does not fit the budget the chunk is cut into pieces
(halving until they fit), run one after the other through the same buffers. Pieces and
halves cut the same dimension, the first one they divide; if none does, one piece, one
way. Pipelining the pieces (a piece's first step in flight with the previous piece's
last, lowering/reduce_ring.py) needs no fifth block: the two messages use the two
receive slots and the first is sent from HBM (low precision: widened into the
accumulator, which the previous piece's last step no longer writes, as it rounds its
result into the buffer the result leaves through), so the rule is the same with or
without.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

IN_FLIGHT = 4
"""Collectives in flight at once that each get a full share of the collectives' half of
the VMEM: the default `max-in-flight` of `schedule`, `micro-batch` and the step estimate,
which use this constant."""

RS_BLOCKS = 4
"""VMEM blocks a ring reduce-scatter keeps per ring: a double-buffered receive slot, the
own chunk, the accumulator."""


def in_flight_share(vmem: int) -> int:
    """The VMEM bytes each of `IN_FLIGHT` `_start`s in flight may hold (module docstring)."""
    return vmem // 2 // IN_FLIGHT


def start_budget(vmem: int, in_use: int) -> int:
    """
    The VMEM a `_start` may use when the collectives in flight already hold `in_use` bytes
    of the kernel's `vmem`: its share, or past `IN_FLIGHT` of them half of what is left of
    the collectives' half (at least 1/64 of the VMEM).
    """
    share = in_flight_share(vmem)
    if in_use + share <= vmem // 2:
        return share
    return max(vmem // 64, (vmem // 2 - in_use) // 2)


def collective_budget(vmem: int, is_start: bool) -> int:
    """The VMEM level S gives a collective: a `_start` its share, a synchronous one all."""
    return in_flight_share(vmem) if is_start else vmem


def rs_pieces(
    shape: Sequence[int], acc_bytes: int, bidirectional: bool, concurrent: int, budget: int
) -> tuple[int | None, int, int]:
    """
    How a ring reduce-scatter of chunks of `shape` (elements of `acc_bytes` bytes in the
    accumulation type) splits them to fit `budget` bytes of VMEM with `concurrent` phases
    at once: (split dim, pieces, ways), as the module docstring says; (None, 1, 1) if
    nothing is cut.
    """
    total = math.prod(shape) * acc_bytes * concurrent
    for ways in (2, 1) if bidirectional else (1,):
        pieces = 1
        while RS_BLOCKS * total // pieces > budget:
            pieces *= 2
        for d, size in enumerate(shape):
            if size > 1 and size % (ways * pieces) == 0 and (ways, pieces) != (1, 1):
                return d, pieces, ways
        if (ways, pieces) == (1, 1):
            break
    return None, 1, 1


def halo_slot(
    h: int, w: int, pads: tuple[tuple[int, int], tuple[int, int]], strides: tuple[int, int]
) -> tuple[int, int]:
    """
    (rows, width in units of the width stride) of the VMEM slot a halo kernel reads an
    [h, w] image into (lowering/halo.py): the padded height, and the padded width rounded
    up to a multiple of the width stride (the stride is a reshape of the slot). One
    definition for the lowering's slots and level S's count of their bytes.
    """
    return h + sum(pads[0]), -(-(w + sum(pads[1])) // strides[1])


def halo_budget(vmem: int) -> int:
    """The bytes of a kernel's `vmem` a halo kernel's slots may take (lowering/halo.py):
    half, the other half left for what runs beside it (rings in flight, their buffers)."""
    return vmem // 2


def halo_spatial(
    window: Sequence[int], strides: Sequence[int], low: Sequence[int], high: Sequence[int]
) -> list[int] | None:
    """
    The spatial dimensions of a channels-last windowed op a halo kernel takes: [n, w],
    [n, w, c] or [n, h, w, c], its window, strides and padding (>= 0) on those only
    (window 1, stride 1, no padding on the others); None for any other layout.
    """
    rank = len(window)
    spatial = {2: [1], 3: [1], 4: [1, 2]}.get(rank)
    if spatial is None or any(p < 0 for p in (*low, *high)):
        return None
    for d in range(rank):
        if d not in spatial and (window[d], strides[d], low[d], high[d]) != (1, 1, 0, 0):
            return None
    return spatial
