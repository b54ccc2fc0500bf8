"""
The VMEM a collective holds and the reduce-scatter pieces it is cut into (`hardware.vmem`):
the lowering and level S's cost use one rule, so collectives in flight together (each a
`_start` holding its share until its `done`) cost at level S what level T runs.
"""

from __future__ import annotations

import pytest
import shardc
from shardc.dialects import collective, make_context, tpu
from shardc.dialects.spmd import find_mesh
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CachedCostModel, CostModel
from shardc.hardware.vmem import (
    IN_FLIGHT,
    collective_budget,
    in_flight_share,
    rs_pieces,
    start_budget,
)
from shardc.interpreter.testing import parse
from shardc.lowering.emit import VMEM
from shardc.lowering.lower_to_tpu import LowerToTpuPass
from shardc.lowering.tpu_pipeline import TpuPipelinePass
from shardc.parsing import parse_and_verify
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

T = "tensor<2048x1024xbf16>"
"""4 MiB of bf16 over 8 devices: 1 MiB of f32 partial sums per chunk, 4 MiB of ring
buffers, twice a v4 `_start`'s share (16 MiB / 8)."""


def _program(starts: int, sync: int = 0) -> str:
    """`starts` all_reduce_starts of `T` in flight together, then `sync` sync ones."""
    body = [
        f'  %s{i} = collective.all_reduce_start add %x on @m["d"] : {T} -> !collective.future<{T}>'
        for i in range(starts)
    ]
    body += [
        f"  %r{i} = collective.done %s{i} : !collective.future<{T}> -> {T}" for i in range(starts)
    ]
    body += [f'  %q{i} = collective.all_reduce add %x on @m["d"] : {T}' for i in range(sync)]
    results = [f"%r{i}" for i in range(starts)] + [f"%q{i}" for i in range(sync)]
    types = ", ".join([T] * len(results))
    return "\n".join(
        [
            'spmd.mesh @m = <["d"=8]>',
            f"func.func @main(%x: {T}) -> ({types}) attributes {{spmd.partitioned}} {{",
            *body,
            f"  func.return {', '.join(results)} : {types}",
            "}",
        ]
    )


def test_the_share_does_not_shrink_until_more_than_in_flight() -> None:
    vmem = 64 << 20
    share = in_flight_share(vmem)
    assert share * IN_FLIGHT == vmem // 2
    held = 0
    for _ in range(IN_FLIGHT):
        assert start_budget(vmem, held) == share
        held += share
    assert start_budget(vmem, held) == vmem // 64  # a fifth: what is left, at least 1/64
    assert collective_budget(vmem, True) == share and collective_budget(vmem, False) == vmem


def test_pieces_halve_until_four_accumulation_blocks_fit() -> None:
    # 1 MiB of f32 chunks: 4 MiB of ring buffers
    assert rs_pieces([1, 256 * 1024], 4, True, 1, 8 << 20) == (1, 1, 2)
    assert rs_pieces([1, 256 * 1024], 4, True, 1, 2 << 20) == (1, 2, 2)
    assert rs_pieces([1, 256 * 1024], 4, False, 1, 1 << 20) == (1, 4, 1)
    # nothing divides: one piece, one way (the lowering then checks the whole fits)
    assert rs_pieces([1, 3], 4, True, 1, 4) == (None, 1, 1)


def _rounding_copies(kernel_module: ModuleOp) -> int:
    """The bf16 reduce-scatter's copies out of its accumulators: one per piece per ring
    (a pipelined piece's from its rounded buffer under the ring's `piece_sem`, the last
    piece's through `copy_out`'s own semaphore)."""
    return sum(
        1
        for o in kernel_module.walk()
        if (isinstance(o, tpu.AllocOp) and (o.result.name_hint or "").startswith("rs_out_sem"))
        or (
            isinstance(o, tpu.DMAStartOp)
            and (o.recv_sem.name_hint or "").endswith("_piece_sem")
            and (o.src.name_hint or "") == "rs_rounded"
        )
    )


@pytest.mark.parametrize(("starts", "sync"), [(1, 0), (0, 1)])
def test_level_s_charges_the_pieces_the_lowering_cuts(starts: int, sync: int) -> None:
    """A `_start` is cut to its share, a sync collective to the whole VMEM: the lowering's
    pieces are `rs_pieces`' for `collective_budget`, and level S's cost of the same op
    grows with them (before, a `_start` cost what its sync form cost whatever its cut)."""
    chip = get_chip("v4")
    module = parse(_program(starts, sync))
    (op,) = [o for o in module.walk() if isinstance(o, collective.CollectiveOp)]
    budget = collective_budget(chip.vmem_bytes, op.IS_START)
    _, pieces, ways = rs_pieces([1, 2048 * 1024 // 8], 4, True, 1, budget)
    assert (pieces, ways) == ((2, 2) if starts else (1, 2))
    model = CostModel(chip, find_mesh(module))
    as_start, as_sync = model.collective_time(op, start=True), model.collective_time(op, False)
    assert as_start > as_sync  # the start's two pieces: twice the ring's latencies
    assert model.collective_time(op) == (as_start if starts else as_sync)
    cached = CachedCostModel(chip, model.mesh)
    for form in (None, True, False, None):  # one cache per form: never the other's answer
        assert cached.collective_time(op, form) == model.collective_time(op, form)
    LowerToTpuPass(chip="v4").apply(make_context(), module)
    assert _rounding_copies(module) == pieces * ways


def test_starts_in_flight_hold_their_share_and_agree_with_level_s() -> None:
    """Four all_reduce_starts in flight on v4: each holds its share of the VMEM (before,
    the first a quarter, each next half of what was left, and a bf16 ring one more
    rounding buffer per piece: the fourth cut in 8 pieces), and level T runs what level
    S charges (before 1.30x)."""
    chip = "v4"
    ctx = make_context()
    module = parse_and_verify(ctx, _program(IN_FLIGHT), "in_flight")
    lower = TpuPipelinePass(chip=chip).to_level_s(ctx, module)
    s = shardc.run(module.clone(), timing_only=True, chip=chip).report["step_time_s"]
    lower.apply(ctx, module)
    assert _peak_vmem(module) <= get_chip(chip).vmem_bytes // 2
    t = shardc.run(module, timing_only=True, chip=chip).report["step_time_s"]
    assert 0.98 <= t / s <= 1.03


def _peak_vmem(module: ModuleOp) -> int:
    """The most VMEM bytes allocated and not yet deallocated along the kernel's ops."""
    live, peak = 0, 0
    sizes: dict[SSAValue, int] = {}
    for o in module.walk():
        if isinstance(o, tpu.AllocOp) and tpu.memory_space_of(o.result.type) is VMEM:
            sizes[o.result] = tpu.ref_bytes(o.result.type)
            live += sizes[o.result]
            peak = max(peak, live)
        elif isinstance(o, tpu.DeallocOp) and o.ref in sizes:
            live -= sizes.pop(o.ref)
    return peak
