"""
Where `lower-to-tpu` places a pending ring's steps in the compute loops
(lowering/ring_steps.py), and which program level S times against level T (helper
biglayer, issue 15 item 5):

* one step's sends on both directions of a bidirectional ring are one chunk, started at
  one block boundary (a credit wait guards its send, it does not cut the chunk);
* rings in flight together take turns, in issue order, as level S's collective engine
  runs them (no placed step sends for two collectives);
* a chunk's estimated transfer is its share of the collective's time by the bytes it
  sends (a bf16 all_reduce's f32 partials take twice its all-gather blocks' time);
* a chunk is placed once its predecessor's transfer is estimated to have landed, or in
  the block where it lands if its ring has no slack in level S's schedule;
* `TpuPipelinePass.to_level_s` is the program `tpu-pipeline` lowers: `spmd-pipeline`
  behind its gates, not its passes applied one by one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from shardc.dialects import make_context, tpu
from shardc.dialects.tpu import memref_type
from shardc.hardware.chips import get_chip
from shardc.lowering import ring_steps
from shardc.lowering.emit import VMEM
from shardc.lowering.tpu_pipeline import TpuPipelinePass
from shardc.parsing import parse_and_verify
from shardc.passes.spmd_pipeline import SpmdPipelinePass
from xdsl.dialects import arith
from xdsl.dialects.builtin import f32, i32
from xdsl.ir import Operation

from tests.unit.test_ring_overlap import interleaved, lower, program

EXAMPLES = Path(__file__).parents[2] / "examples"


def _sends(step: Operation) -> list[tpu.DMAStartOp]:
    return [d for d in step.walk() if isinstance(d, tpu.DMAStartOp) and d.device is not None]


def test_a_bidirectional_step_sends_both_ways_from_one_block():
    """v5p's 4-ring is wrapped: the all_reduce runs both ways. Every step placed in the
    dot's loop sends on both rings (cut at the credit wait, the reduce-scatter's second
    direction went one block later, each chunk estimated at half a step)."""
    steps = interleaved(lower(program("all_reduce"), "v5p"))
    assert steps
    assert all(len(_sends(s)) == 2 for s in steps), [len(_sends(s)) for s in steps]


def two_rings() -> str:
    """Two all_reduce_starts issued together, a dot long enough for both, their dones."""
    fut = "!collective.future<tensor<512x128xf32>>"
    t, w = "tensor<512x128xf32>", "tensor<1024x1024xi32>"
    return "\n".join(
        [
            'spmd.mesh @m = <["x"=4]>',
            f"func.func @main(%x: {t}, %y: {t}, %a: {w}, %b: {w}) -> ({t}, {t}, {w}) "
            "attributes {spmd.per_device_io} {",
            f'  %f0 = collective.all_reduce_start add %x on @m["x"] : {t} -> {fut}',
            f'  %f1 = collective.all_reduce_start add %y on @m["x"] : {t} -> {fut}',
            f"  %d = hlo.dot %a, %b, contracting_dims = [1] x [0] : ({w}, {w}) -> {w}",
            f"  %g0 = collective.done %f0 : {fut} -> {t}",
            f"  %g1 = collective.done %f1 : {fut} -> {t}",
            f"  func.return %g0, %g1, %d : {t}, {t}, {w}",
            "}",
        ]
    )


@pytest.mark.parametrize(("chip", "ways"), [("v5e", 1), ("v5p", 2)])
def test_rings_in_flight_take_turns(chip, ways):
    """No step placed in the loop sends for both collectives (each ring phase has its
    own send semaphore per direction): the second ring's steps come after the first's
    transfers, as level S's engine has them; both rings still get steps in the loop."""
    steps = interleaved(lower(two_rings(), chip))
    sems = [{d.send_sem.owner for d in _sends(s) if d.send_sem is not None} for s in steps]
    assert sems and all(len(s) == ways for s in sems), sems
    assert len(set().union(*sems)) >= 4 * ways, sems  # two phases of each collective


def _send(n: int, device: Operation) -> list[Operation]:
    src = tpu.AllocOp(memref_type([n], f32, VMEM))
    dst = tpu.AllocOp(memref_type([n], f32, VMEM))
    sem = tpu.AllocOp(tpu.DMASemaphoreType())
    return [src, dst, sem, tpu.DMAStartOp(src, dst, recv_sem=sem, send_sem=sem, device=device)]


def test_chunk_times_share_the_collective_by_bytes():
    """A chunk sending twice the bytes is estimated at twice the time; a chunk that
    sends nothing remote gets none of it."""
    device = arith.ConstantOp.from_int_and_width(1, i32)
    chunks = [_send(1024, device), _send(2048, device), []]
    times = ring_steps.chunk_times(get_chip("v5e"), chunks, 3e-6)
    assert times == pytest.approx([1e-6, 2e-6, 0.0])


def test_a_chunk_stalls_the_compute_only_where_its_ring_has_no_slack():
    """A step landing inside a block (boundaries at 9 and 10, landing at 9.75) goes at
    the boundary after it (the link idles 0.25) while its ring has that much slack, at
    the one before it (the compute stalls 0.75) when it has not; a step landing beyond
    the block, or before the boundary, never stalls there."""
    roomy = ring_steps._Pending([], [], [], ready=9.75, slack=0.25)
    tight = ring_steps._Pending([], [], [], ready=9.75, slack=0.2)
    assert not ring_steps._stalls(roomy, 9.75, 9.0, 1.0)
    assert ring_steps._stalls(tight, 9.75, 9.0, 1.0)
    assert not ring_steps._stalls(tight, 10.5, 9.0, 1.0)
    assert not ring_steps._stalls(tight, 8.5, 9.0, 1.0)


def test_to_level_s_is_the_program_tpu_pipeline_lowers():
    """dp_grads.mlir on v5e: `to_level_s` leaves what `spmd-pipeline` leaves (eight
    all_reduces: merging them is slower, the gate refuses it), while its passes applied
    one by one merge them (`collective-combine` without its gate)."""
    text = (EXAMPLES / "dp_grads.mlir").read_text()
    ctx = make_context()
    gated = parse_and_verify(ctx, text, "dp_grads")
    lower_pass = TpuPipelinePass(chip="v5e").to_level_s(ctx, gated)
    assert lower_pass.chip == "v5e"
    reference = parse_and_verify(ctx, text, "dp_grads")
    SpmdPipelinePass(chip="v5e").apply(ctx, reference)
    assert str(gated) == str(reference)
    one_by_one = parse_and_verify(ctx, text, "dp_grads")
    for p in TpuPipelinePass(chip="v5e").passes()[:-1]:
        p.apply(ctx, one_by_one)

    def starts(m) -> int:
        return sum(1 for o in m.walk() if o.name == "collective.all_reduce_start")

    assert starts(gated) == 8
    assert starts(one_by_one) < 8
