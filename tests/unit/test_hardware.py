"""The cost model against hand-computed numbers (DESIGN.md's formulas, scaling book examples)."""

from __future__ import annotations

import numpy as np
import pytest
from shardc.dialects import collective, hlo
from shardc.hardware.chips import CHIPS, UnknownChipError, get_chip
from shardc.hardware.cost import CostModel
from shardc.interpreter.testing import parse


def first(text: str, cls: type) -> tuple[object, object]:
    module = parse(text)
    op = next(o for o in module.walk() if isinstance(o, cls))
    mesh = next(o for o in module.walk() if o.name == "spmd.mesh").mesh  # pyright: ignore
    return op, mesh


def gather_program(mesh: str, axis: str, local: str, full: str, elem: str = "bf16") -> str:
    return f"""
spmd.mesh @m = <[{mesh}]>
func.func @f(%x: tensor<{local}x{elem}>) -> tensor<{full}x{elem}> attributes {{spmd.partitioned}} {{
  %r = collective.all_gather %x on @m["{axis}"], dim = 0 : (tensor<{local}x{elem}>) -> tensor<{full}x{elem}>
  func.return %r : tensor<{full}x{elem}>
}}"""


def test_presets_match_design_table() -> None:
    assert set(CHIPS) == {"v4", "v5e", "v5p", "v6e"}
    assert get_chip("v5e").flops_bf16 == 1.97e14 and get_chip("v5e").hbm_bw == 8.1e11
    assert get_chip("v5p").ici_link_bw == 9e10 and get_chip("v6e").flops_bf16 == 9.18e14
    with pytest.raises(UnknownChipError, match="unknown chip 'v9'"):
        get_chip("v9")


def test_wraparound_only_on_full_axes() -> None:
    v5e, v5p = get_chip("v5e"), get_chip("v5p")
    assert v5e.has_wraparound(16) and not v5e.has_wraparound(8) and not v5e.has_wraparound(4)
    assert v5p.has_wraparound(4) and v5p.has_wraparound(8) and not v5p.has_wraparound(2)


W5E, HBM5E, HOP = 4.5e10, 8.1e11, 1e-6
"""v5e's ICI link bandwidth per direction, HBM bandwidth, per-hop latency."""
COPY5E = 2 / HBM5E
"""Seconds per byte of a collective's own-block copy, HBM to HBM: read and write
(`hardware.cost.hbm_copy_bytes`)."""
VPU5E = 16 / 197e12
"""Seconds per vector op on v5e (a sixteenth of its 197 TFLOP/s bf16 MXU peak): a ring
reduction's combines (`hardware.cost.ring_reduction_ops`)."""


def test_all_gather_without_wraparound_matches_the_scaling_book() -> None:
    # v5e {X: 8, Y: 4}, AllGather_Y of bf16[2048, 8192]: 3 steps of 8.4e6 B at 4.5e10 B/s =
    # 560 us (the scaling book); the lowering's ring also pays a hop per step and the wrap
    # edge's 3 hops back along the line (a chain of 3 edges: 1 + 1 + 3 hops at most) and
    # copies the own block (8.4e6 B read and written at HBM bandwidth: 21 us, which with
    # the hops puts it 4.6% above the book's transfer time).
    op, mesh = first(
        gather_program('"X"=8, "Y"=4', "Y", "512x8192", "2048x8192"), collective.AllGatherOp
    )
    t = CostModel(get_chip("v5e"), mesh).collective_time(op)  # pyright: ignore
    block = 512 * 8192 * 2
    assert t == pytest.approx(3 * block / W5E + 5 * HOP + block * COPY5E)
    assert t == pytest.approx(559e-6, rel=0.05)


def test_all_gather_with_wraparound_uses_both_directions() -> None:
    op, mesh = first(
        gather_program('"X"=16', "X", "1024x1024", "16384x1024"), collective.AllGatherOp
    )
    block = 1024 * 1024 * 2
    t = CostModel(get_chip("v5e"), mesh).collective_time(op)  # pyright: ignore
    # Half of every block each way round: 15 steps of block / 2 per direction.
    assert t == pytest.approx(15 * (HOP + block / 2 / W5E) + block * COPY5E)


def test_latency_is_paid_per_ring_step() -> None:
    op, mesh = first(gather_program('"X"=16', "X", "1x8", "16x8"), collective.AllGatherOp)
    t = CostModel(get_chip("v5e"), mesh).collective_time(op)  # pyright: ignore
    assert t == pytest.approx(15 * (HOP + 8 / W5E) + 16 * COPY5E)
    # A line of 8: a block crosses 6 one-hop edges and the 7-hop wrap edge.
    op, mesh = first(gather_program('"X"=8', "X", "1x8", "8x8"), collective.AllGatherOp)
    t = CostModel(get_chip("v5e"), mesh).collective_time(op)  # pyright: ignore
    assert t == pytest.approx(13 * HOP + 7 * 16 / W5E + 16 * COPY5E)


def test_reduce_scatter_credits_cross_the_wrap_edge() -> None:
    # Two receive slots: on a line of 8, every second step waits for a credit that comes
    # back over the 7-hop wrap edge: ceil(7/2) x (7 hops + the block).
    text = """
spmd.mesh @m = <["X"=8]>
func.func @f(%x: tensor<16x256xf32>) -> tensor<2x256xf32> attributes {spmd.partitioned} {
  %r = collective.reduce_scatter add %x on @m["X"], dim = 0 : (tensor<16x256xf32>) -> tensor<2x256xf32>
  func.return %r : tensor<2x256xf32>
}"""
    op, mesh = first(text, collective.ReduceScatterOp)
    t = CostModel(get_chip("v5e"), mesh).collective_time(op)  # pyright: ignore
    block = 2 * 256 * 4
    combine = 7 * 2 * 256 * VPU5E  # each step adds the arriving block to the own chunk
    assert t == pytest.approx(4 * (7 * HOP + block / W5E) + block * COPY5E + combine)


def test_all_reduce_is_a_reduce_scatter_and_an_all_gather() -> None:
    text = """
spmd.mesh @m = <["X"=16]>
func.func @f(%x: tensor<16384x1024xf32>) -> (tensor<16384x1024xf32>, tensor<16384x1024xf32>, tensor<16384x1024xf32>) attributes {spmd.partitioned} {
  %s = collective.reduce_scatter add %x on @m["X"], dim = 0 : (tensor<16384x1024xf32>) -> tensor<1024x1024xf32>
  %g = collective.all_gather %s on @m["X"], dim = 0 : (tensor<1024x1024xf32>) -> tensor<16384x1024xf32>
  %a = collective.all_reduce add %x on @m["X"] : tensor<16384x1024xf32>
  %t = collective.all_to_all %x on @m["X"], split_dim = 0, concat_dim = 1 : (tensor<16384x1024xf32>) -> tensor<1024x16384xf32>
  func.return %g, %a, %a : tensor<16384x1024xf32>, tensor<16384x1024xf32>, tensor<16384x1024xf32>
}"""
    module = parse(text)
    mesh = next(o for o in module.walk() if o.name == "spmd.mesh").mesh  # pyright: ignore
    model = CostModel(get_chip("v5e"), mesh)
    ops = {o.name: o for o in module.walk() if isinstance(o, collective.CollectiveOp)}
    rs = model.collective_time(ops["collective.reduce_scatter"])  # pyright: ignore
    ag = model.collective_time(ops["collective.all_gather"])  # pyright: ignore
    ar = model.collective_time(ops["collective.all_reduce"])  # pyright: ignore
    a2a = model.collective_time(ops["collective.all_to_all"])  # pyright: ignore
    chunk = 1024 * 1024 * 4
    combine = 15 * 1024 * 1024 * VPU5E  # 15 steps adding a chunk of 1024 x 1024
    assert rs == pytest.approx(ag + combine)  # f32: partial sums travel in their own type
    # The all-gather phase finds its block in place: one copy fewer.
    assert ar == pytest.approx(rs + ag - chunk * COPY5E)
    # all_to_all straight to every rank on a 16-ring: the busiest link carries the blocks
    # of 1 + 2 + ... + 7 pairs one way (distance 8 goes up) plus the 8 of distance 8.
    assert a2a == pytest.approx(8 * HOP + (28 + 8) * chunk / W5E + chunk * COPY5E, rel=0.01)


def test_several_axes_run_one_phase_per_axis() -> None:
    # The lowering gathers over the minor axis, then forwards the assembled blocks over
    # the major one (the scaling book's k-axes-at-once bandwidth is not built yet).
    y = first(gather_program('"X"=16, "Y"=16', "Y", "64x1024", "1024x1024"), collective.AllGatherOp)
    x = first(
        gather_program('"X"=16, "Y"=16', "X", "1024x1024", "16384x1024"), collective.AllGatherOp
    )
    text = """
spmd.mesh @m = <["X"=16, "Y"=16]>
func.func @f(%x: tensor<64x1024xbf16>) -> tensor<16384x1024xbf16> attributes {spmd.partitioned} {
  %r = collective.all_gather %x on @m["X", "Y"], dim = 0 : (tensor<64x1024xbf16>) -> tensor<16384x1024xbf16>
  func.return %r : tensor<16384x1024xbf16>
}"""
    two = first(text, collective.AllGatherOp)
    model = CostModel(get_chip("v5e"), two[1])  # pyright: ignore
    t_y, t_x = model.collective_time(y[0]), model.collective_time(x[0])  # pyright: ignore
    t2 = model.collective_time(two[0])  # pyright: ignore
    assert t2 == pytest.approx(t_y + t_x - 1024 * 1024 * 2 * COPY5E)


def test_mesh_axes_folded_onto_one_torus_axis_share_its_links() -> None:
    # v5e is 2-D: mesh [2, 2, 4] runs on a 2 x 8 torus; "Y" (stride 4) pairs devices 4
    # hops apart, and the 4 rings of a row all cross the middle links: a quarter each.
    op, mesh = first(
        gather_program('"X"=2, "Y"=2, "Z"=4', "Y", "64x64", "128x64"), collective.AllGatherOp
    )
    model = CostModel(get_chip("v5e"), mesh)  # pyright: ignore
    assert model.torus_axis_lengths() == [2, 8]
    block = 64 * 64 * 2
    t = model.collective_time(op)  # pyright: ignore
    assert t == pytest.approx(4 * HOP + 4 * block / W5E + block * COPY5E)


def test_bf16_reductions_move_f32_partial_sums() -> None:
    text = """
spmd.mesh @m = <["X"=16]>
func.func @f(%x: tensor<16384x1024xbf16>, %y: tensor<16384x1024xf32>) -> (tensor<1024x1024xbf16>, tensor<1024x1024xf32>) attributes {spmd.partitioned} {
  %a = collective.reduce_scatter add %x on @m["X"], dim = 0 : (tensor<16384x1024xbf16>) -> tensor<1024x1024xbf16>
  %b = collective.reduce_scatter add %y on @m["X"], dim = 0 : (tensor<16384x1024xf32>) -> tensor<1024x1024xf32>
  func.return %a, %b : tensor<1024x1024xbf16>, tensor<1024x1024xf32>
}"""
    module = parse(text)
    mesh = next(o for o in module.walk() if o.name == "spmd.mesh").mesh  # pyright: ignore
    model = CostModel(get_chip("v5e"), mesh)
    low, wide = [o for o in module.walk() if isinstance(o, collective.ReduceScatterOp)]
    half_copy = 1024 * 1024 * 2 * COPY5E  # the bf16 result is half the f32 one's bytes
    # bf16 widens the own chunk at each of the 15 steps, its first message and rounds once.
    widen = (15 + 2) * 1024 * 1024 * VPU5E
    assert model.collective_time(low) == pytest.approx(  # pyright: ignore
        model.collective_time(wide) - half_copy + widen  # pyright: ignore
    )


def test_meshes_larger_than_a_pod_cross_the_data_center_network() -> None:
    text = """
spmd.mesh @m = <["P"=2, "X"=16, "Y"=16]>
func.func @f(%x: tensor<1024x1024xbf16>) -> (tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) attributes {spmd.partitioned} {
  %a = collective.all_reduce add %x on @m["P"] : tensor<1024x1024xbf16>
  %b = collective.all_reduce add %x on @m["X"] : tensor<1024x1024xbf16>
  func.return %a, %b : tensor<1024x1024xbf16>, tensor<1024x1024xbf16>
}"""
    module = parse(text)
    mesh = next(o for o in module.walk() if o.name == "spmd.mesh").mesh  # pyright: ignore
    chip = get_chip("v5e")
    model = CostModel(chip, mesh)
    assert model.torus_axis_lengths() == [16, 16]
    across, within = [o for o in module.walk() if isinstance(o, collective.AllReduceOp)]
    v = 1024 * 1024 * 2
    assert chip.dcn_bw is not None
    # The combine: half the elements widened and added, the first half widened, all rounded.
    combine = (2 + 1 + 1) * 1024 * 1024 / 2 / chip.vpu_flops
    assert model.collective_time(across) == pytest.approx(  # pyright: ignore
        2 * v / 2 / chip.dcn_bw + 2 * chip.dcn_latency + combine
    )
    assert model.collective_time(within) < model.collective_time(across) / 3  # pyright: ignore


def test_dot_roofline_is_compute_bound_for_big_matmuls_and_memory_bound_for_thin_ones() -> None:
    text = """
func.func @f(%a: tensor<4096x4096xbf16>, %b: tensor<4096x4096xbf16>, %c: tensor<8x4096xbf16>) -> (tensor<4096x4096xbf16>, tensor<8x4096xbf16>) {
  %d = hlo.dot %a, %b, contracting_dims = [1] x [0] : (tensor<4096x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
  %e = hlo.dot %c, %b, contracting_dims = [1] x [0] : (tensor<8x4096xbf16>, tensor<4096x4096xbf16>) -> tensor<8x4096xbf16>
  func.return %d, %e : tensor<4096x4096xbf16>, tensor<8x4096xbf16>
}"""
    module = parse(text)
    d, e = [o for o in module.walk() if isinstance(o, hlo.DotOp)]
    model = CostModel(get_chip("v5e"))
    big, thin = model.op_cost(d), model.op_cost(e)
    # Each is charged as its tiled loop (hardware/kernel.py): its roofline bound plus the
    # first blocks' fetch, the last write-back and the VMEM loads and stores, a few %.
    mxu = 2 * 4096**3 / 1.97e14
    assert big.flops == 2 * 4096**3 and mxu < big.time < 1.1 * mxu
    assert thin.bytes == (8 * 4096 * 2) * 2 + 4096 * 4096 * 2
    assert thin.bytes / 8.1e11 < thin.time < 1.05 * thin.bytes / 8.1e11


def test_permute_cost_counts_hops_and_link_sharing() -> None:
    text = """
spmd.mesh @m = <["X"=8]>
func.func @f(%x: tensor<1024xf32>) -> tensor<1024xf32> attributes {spmd.partitioned} {
  %r = collective.permute %x on @m["X"], shift = 3 : tensor<1024xf32>
  func.return %r : tensor<1024xf32>
}"""
    op, mesh = first(text, collective.PermuteOp)
    t = CostModel(get_chip("v5e"), mesh).collective_time(op)  # pyright: ignore
    # An axis of 8 on v5e is a line: rank 5 sends to rank 0, 5 hops away, and the link
    # 3 -> 2 carries the messages of 5 -> 0, 6 -> 1 and 7 -> 2 at a third each.
    assert t == pytest.approx(5 * HOP + 3 * 4096 / W5E)


def test_wide_integer_matmuls_are_int8_passes() -> None:
    # (bits / 8)^2 int8 passes at twice the bf16 peak: i32 at 1/8 of it, i16 at 1/2.
    from shardc.hardware.cost import mxu_rate
    from xdsl.dialects.builtin import IntegerType

    v5e = get_chip("v5e")
    assert mxu_rate(v5e, IntegerType(32)) == pytest.approx(v5e.flops_bf16 / 8)
    assert mxu_rate(v5e, IntegerType(16)) == pytest.approx(v5e.flops_bf16 / 2)
    assert mxu_rate(v5e, IntegerType(8)) == pytest.approx(v5e.flops_bf16 * 2)


def test_every_pod_runs_its_rings_on_its_own_links() -> None:
    text = """
spmd.mesh @m = <[MESH]>
func.func @f(%x: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> attributes {spmd.partitioned} {
  %r = collective.permute %x on @m["X"], shift = 1 : tensor<1024x1024xf32>
  func.return %r : tensor<1024x1024xf32>
}"""
    one = first(text.replace("MESH", '"X"=16, "Y"=16'), collective.PermuteOp)
    four = first(text.replace("MESH", '"P"=4, "X"=16, "Y"=16'), collective.PermuteOp)
    t1 = CostModel(get_chip("v5e"), one[1]).collective_time(one[0])  # pyright: ignore
    t4 = CostModel(get_chip("v5e"), four[1]).collective_time(four[0])  # pyright: ignore
    assert t4 == pytest.approx(t1)


# Collectives in flight (issue 15 item 5: `collective_overlap`, `timing.engine_window`) -----


def test_overlap_is_a_one_round_collectives_latency_or_a_rings_first_step() -> None:
    # v5e line of 4: an all_gather's chain of hops is 1 + 1 + 3 = 5 us over 3 steps; an
    # all_to_all's DMAs all fly at once (its farthest peer 3 hops away); bytes never overlap
    op, mesh = first(gather_program('"x"=4', "x", "256", "1024"), collective.AllGatherOp)
    model = CostModel(get_chip("v5e"), mesh)  # pyright: ignore
    assert model.collective_overlap(op) == pytest.approx(5 * HOP / 3)  # pyright: ignore
    big, _ = first(gather_program('"x"=4', "x", "1048576", "4194304"), collective.AllGatherOp)
    assert model.collective_overlap(big) == pytest.approx(5 * HOP / 3)  # pyright: ignore
    a2a, mesh = first(
        """spmd.mesh @m = <["x"=4]>
func.func @f(%x: tensor<8x8xf32>) -> tensor<32x2xf32> attributes {spmd.partitioned} {
  %r = collective.all_to_all %x on @m["x"], split_dim = 1, concat_dim = 0 : (tensor<8x8xf32>) -> tensor<32x2xf32>
  func.return %r : tensor<32x2xf32>
}""",
        collective.AllToAllOp,
    )
    model = CostModel(get_chip("v5e"), mesh)  # pyright: ignore
    assert model.collective_overlap(a2a) == pytest.approx(3 * HOP)  # pyright: ignore
    assert model.collective_overlap(a2a) == model.collective_latency(a2a)  # pyright: ignore


def test_a_one_round_collective_ends_on_each_device_by_its_own_transfers() -> None:
    # v5e line of 8 (no wraparound): a permute shift 1 sends 7 -> 0 back over 7 hops, the
    # others 1 hop. Level T's kernel waits at the `done` for its own send to leave and its
    # own receive to land, so only device 0 waits 7 hops; each device ends by when *its*
    # sources began (`Landings.end`). A common begin: the latest device ends after
    # `collective_time`, the group's old single end.
    op, mesh = first(
        """spmd.mesh @m = <["x"=8]>
func.func @f(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {spmd.partitioned} {
  %r = collective.permute %x on @m["x"], shift = 1 : tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}""",
        collective.PermuteOp,
    )
    model = CostModel(get_chip("v5e"), mesh)  # pyright: ignore
    landings = model.collective_landings(op)  # pyright: ignore
    assert landings is not None
    send = 32 / get_chip("v5e").ici_link_bw  # 2x4 f32 on one link
    begins = np.zeros(8)
    ends = landings.ends(begins)
    assert ends[0] == pytest.approx(7 * HOP + send)
    assert list(ends[1:]) == pytest.approx([HOP + send] * 7)
    assert ends.max() == model.collective_time(op)  # pyright: ignore
    assert landings.skewed
    # device 7 began 3 us late: device 0 waits for it, device 1 not (its source is 0)
    begins[7] = 3e-6
    ends = landings.ends(begins)
    assert ends[0] == pytest.approx(3e-6 + 7 * HOP + send)
    assert ends[1] == pytest.approx(HOP + send)
    assert ends[7] == pytest.approx(3e-6 + send)  # its send has left
    # rings couple every member through their steps: one end for the group
    ring, mesh = first(gather_program('"x"=4', "x", "256", "1024"), collective.AllGatherOp)
    assert CostModel(get_chip("v5e"), mesh).collective_landings(ring) is None  # pyright: ignore


def test_an_all_reduce_smaller_than_its_group_is_one_round_of_pushes() -> None:
    # lowering/all_reduce.py's tail: a scalar over 2x4 (v5e, 8 devices) goes straight to
    # every peer (the farthest 1 + 3 hops away), not 2 x 7 ring steps; 9 elements: the
    # tail's element first, then the rings over the other 8
    def all_reduce(shape: str) -> tuple[float, float]:
        t = f"tensor<{shape}f32>"
        op, mesh = first(
            f"""spmd.mesh @m = <["a"=2, "b"=4]>
func.func @f(%x: {t}) -> {t} attributes {{spmd.partitioned}} {{
  %r = collective.all_reduce add %x on @m["a", "b"] : {t}
  func.return %r : {t}
}}""",
            collective.AllReduceOp,
        )
        model = CostModel(get_chip("v5e"), mesh)  # pyright: ignore
        return model.collective_time(op), model.collective_overlap(op)  # pyright: ignore

    scalar, overlap = all_reduce("")
    assert scalar == pytest.approx(4 * HOP, rel=1e-3) and overlap == pytest.approx(4 * HOP)
    eight, _ = all_reduce("8x")
    nine, _ = all_reduce("9x")
    assert nine == pytest.approx(scalar + eight, rel=1e-3)


# Ring phases stepped per device (helper smallrows, issue 15 item 5) -----------------------


@pytest.mark.parametrize("chip", ["v5e", "v5p", "v4"])
@pytest.mark.parametrize("n", [2, 3, 4, 8, 16])
@pytest.mark.parametrize("credits", [None, 2])
@pytest.mark.parametrize("block", [64.0, 1 << 20])
def test_one_ring_stepped_is_its_chain(
    chip: str, n: int, credits: int | None, block: float
) -> None:
    """`ring_phases_time` on one ring (every device waiting for its step's block, a
    reduce-scatter's sends for their credits) is `ring_time`'s chain formula."""
    from shardc.hardware.topology import Ring, Torus, ring_phases_time, ring_time

    c = get_chip(chip)
    torus = Torus.of(c, [n])
    ways = (1, -1) if c.has_wraparound(n) else (1,)
    ring = Ring((tuple(range(n)),), block / len(ways), ways)
    want = ring_time(c, torus, [ring], credits)
    assert ring_phases_time(c, torus, [([ring], credits)]) == pytest.approx(want, rel=1e-9)


def test_torus_parts_couple_through_the_waits() -> None:
    """v5e 4x4 (no wraparound): the two parts' reduce-scatter rings in one loop. Every
    device is behind a 3-hop wrap edge on one axis or the other, so each of the first two
    steps waits 3 hops (3 + 3 + 1), not one ring's chain (3 + 1 + 1); chained phases (no
    barrier between them) end before the sum of their slowest devices."""
    from shardc.hardware.topology import Ring, Torus, axis_groups, ring_phases_time, ring_time

    c = get_chip("v5e")
    torus = Torus.of(c, [4, 4])
    a, b = (tuple(tuple(g) for g in axis_groups([4, 4], i)) for i in (0, 1))
    rings = [Ring(a, 8.0), Ring(b, 8.0)]
    hop = c.hop_latency
    assert ring_time(c, torus, [rings[0]], 2) == pytest.approx(6 * hop, rel=1e-3)
    assert ring_time(c, torus, rings, 2) == pytest.approx(7 * hop, rel=1e-3)
    phases = [(rings, 2), ([Ring(b, 8.0), Ring(a, 8.0)], 2)]
    chained = ring_phases_time(c, torus, phases)
    assert chained <= 2 * ring_time(c, torus, rings, 2)
