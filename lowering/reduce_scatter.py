"""
reduce_scatter in a `lower-to-tpu` kernel: ring phases over mesh axes, each chunk cut into
the pieces and directions that fit VMEM (the steps themselves: `reduce_ring`).

On a ring with wraparound it is bidirectional like the all_gather: the first half of
every chunk is reduced on a rightward ring, the second half on a leftward one (each with
its own buffers, semaphores and credits), the two rings' steps interleaved. A chunk whose
4 VMEM blocks per ring do not fit the kernel's VMEM (or a `_start`'s share of it) is
reduced in pieces (halving along the first dimension they divide until they fit), one
piece after the other through the same buffers (in a sync collective pipelined: a
piece's first step starts while the previous piece's last step runs, `reduce_ring`): `hardware.vmem`, whose rule level S's cost of the collective charges
too.

Several mesh axes (rank row-major over the listed axes): one ring phase per axis, the
most major first, each phase reduce-scattering the previous phase's VMEM result (only the
last phase may be bidirectional or cut into pieces). A torus all-reduce instead leaves
every phase's result in HBM (`torus_reduce_scatter`), so every phase may run both ways
and in pieces.

`reduce_scatter_start` sends step 0's messages at the `_start` and does everything else
(receive, add, later steps, copy out) at the `done` (later steps each need the previous
step's data, so only one step overlaps the compute in between).
"""

from __future__ import annotations

import math

from shardc.dialects import tpu
from shardc.dialects.hlo import accumulation_type
from shardc.dialects.sizes import element_bytes
from shardc.hardware.vmem import rs_pieces
from shardc.lowering.context import Target
from shardc.lowering.emit import Emitter
from shardc.lowering.reduce_ring import run_rs_rings
from shardc.lowering.rings import Ring
from shardc.lowering.topology import Axis, Topology, group_view
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Attribute, Operation, SSAValue

Job = tuple[Axis, SSAValue, int, SSAValue]
"""One ring phase of a reduce-scatter: (axis, input, chunk size, HBM destination)."""


def multi_reduce_scatter(
    topo: Topology,
    target: Target,
    e: Emitter,
    op: Operation,
    axes: list[Axis],
    x: SSAValue,
    dim: int,
    k: int,
    out: SSAValue,
    deferred: list[Operation] | None = None,
    pairs: bool = False,
) -> None:
    """
    reduce_scatter of `x` over `axes` into `out` (HBM): one ring per axis, the most
    major first, each phase reduce-scattering the previous one's result, which stays
    in VMEM (those phases run one way, in one piece); the last phase writes `out`.
    `deferred` (a `_start` over one axis): where the ops after step 0's sends go.
    `pairs`: `x`'s last dimension holds complex pairs (lowering/pair_combine.py).
    """
    m = len(axes)
    cur, vmem = x, None
    for j, ax in enumerate(axes):
        kj = k * math.prod(a.size for a in axes[j + 1 :])
        if j == m - 1:
            phase_deferred = deferred if m == 1 else None
            job = (ax, cur, kj, out)
            reduce_scatter_phase(topo, target, e, op, [job], dim, phase_deferred, pairs)
        else:
            ring = Ring(ax, cur, dim, kj, 1, None, "rs")
            ((_, cur),) = run_rs_rings(topo, target, e, op, [[ring]], None, pairs)
        if vmem is not None:
            e.op(tpu.DeallocOp(vmem))
        vmem = cur if j < m - 1 else None


def torus_reduce_scatter(
    topo: Topology,
    target: Target,
    e: Emitter,
    op: Operation,
    orders: list[list[Axis]],
    xs: list[SSAValue],
    homes: list[SSAValue],
    dim: int,
    k: int,
    pairs: bool = False,
) -> None:
    """
    reduce_scatter of each of `xs` over its order of the axes; phase j leaves its
    result in this device's part of the matching `homes` buffer (for its coordinates
    on order[:j+1]), where phase j+1 reads it (so every phase may run both ways and
    in pieces). The orders' phase j run at once: with the orders rotations of the
    axes, every phase keeps every axis's links busy. `pairs`: complex pairs.
    """
    curs = list(xs)
    for j in range(len(orders[0])):
        jobs: list[Job] = []
        for i, order in enumerate(orders):
            kj = k * math.prod(a.size for a in order[j + 1 :])
            jobs.append((order[j], curs[i], kj, group_view(e, homes[i], dim, kj, order[: j + 1])))
        reduce_scatter_phase(topo, target, e, op, jobs, dim, None, pairs)
        curs = [dst for *_, dst in jobs]


def reduce_scatter_phase(
    topo: Topology,
    target: Target,
    e: Emitter,
    op: Operation,
    jobs: list[Job],
    dim: int,
    deferred: list[Operation] | None,
    pairs: bool = False,
) -> None:
    """
    One ring reduce-scatter phase per job, all at once (their axes have one size), each
    chunk cut into the pieces and ways of `rs_plan`, the pieces one after the other
    (`run_rs_rings`). `pairs`: the last dimension holds complex pairs, never cut.
    """
    plans = []
    for ax, x, k, _ in jobs:
        xt = x.type
        assert isinstance(xt, MemRefType)
        shape = list(xt.get_shape())
        shape[dim] = k
        plans.append(rs_plan(target, shape, xt.element_type, topo.two_way(ax), len(jobs), pairs))
    if len({p[1] for p in plans}) > 1 or len({ax.size for ax, *_ in jobs}) > 1:
        for job in jobs:  # nothing to keep in step: one after the other
            reduce_scatter_phase(topo, target, e, op, [job], dim, deferred, pairs)
        return
    pieces = []
    for p in range(plans[0][1]):
        rings: list[Ring] = []
        for i, ((ax, x, k, dst), plan) in enumerate(zip(jobs, plans, strict=False)):
            rings += rs_rings(ax, x, dim, k, dst, plan, p, f"rs{i or ''}")
        pieces.append(rings)
    run_rs_rings(topo, target, e, op, pieces, deferred, pairs)


def rs_plan(
    target: Target,
    shape: list[int],
    elem: Attribute,
    bidirectional: bool,
    concurrent: int = 1,
    pairs: bool = False,
) -> tuple[int | None, int, int]:
    """
    How a ring reduce-scatter of chunks of `shape` splits them to fit the kernel's VMEM:
    (split dim, pieces, ways), `hardware.vmem.rs_pieces` (the rule level S charges too);
    if nothing divides, one piece, one way (and `Target.check_vmem` says if that does
    not fit). `pairs` (a last dimension of complex (re, im) pairs): the chunks of the
    complex values, as level S sees them, so a pair is never cut.
    """
    acc = element_bytes(accumulation_type(elem))  # bf16 partials are f32
    if pairs:
        return rs_pieces(shape[:-1], 2 * acc, bidirectional, concurrent, target.vmem_bytes)
    return rs_pieces(shape, acc, bidirectional, concurrent, target.vmem_bytes)


def rs_rings(
    ax: Axis,
    x: SSAValue,
    dim: int,
    k: int,
    dst: SSAValue,
    plan: tuple[int | None, int, int],
    piece: int,
    tag: str,
) -> list[Ring]:
    """The rings reducing piece `piece` (of `plan`) of every chunk of `x` over `ax`."""
    split, pieces, ways = plan
    if split is None:
        return [Ring(ax, x, dim, k, 1, None, tag, dst)]
    xt = x.type
    assert isinstance(xt, MemRefType)
    size = (k if split == dim else xt.get_shape()[split]) // (pieces * ways)
    first = piece * ways
    if ways == 1:
        return [Ring(ax, x, dim, k, 1, (split, size, first), tag, dst)]
    return [
        Ring(ax, x, dim, k, 1, (split, size, first), f"{tag}_r", dst),
        Ring(ax, x, dim, k, -1, (split, size, first + 1), f"{tag}_l", dst),
    ]
