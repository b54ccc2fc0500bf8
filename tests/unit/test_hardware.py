"""The cost model against hand-computed numbers (DESIGN.md's formulas, scaling book examples)."""

from __future__ import annotations

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


def test_all_gather_without_wraparound_matches_the_scaling_book() -> None:
    # v5e {X: 8, Y: 4}, AllGather_Y of bf16[2048, 8192]: 3 hops of 8.4e6 B at 4.5e10 B/s = 560 us.
    op, mesh = first(
        gather_program('"X"=8, "Y"=4', "Y", "512x8192", "2048x8192"), collective.AllGatherOp
    )
    t = CostModel(get_chip("v5e"), mesh).collective_time(op)  # pyright: ignore
    assert t == pytest.approx(3 * 2048 * 8192 * 2 / 4 / 4.5e10)
    assert t == pytest.approx(559e-6, rel=0.01)


def test_all_gather_with_wraparound_uses_both_directions() -> None:
    op, mesh = first(
        gather_program('"X"=16', "X", "1024x1024", "16384x1024"), collective.AllGatherOp
    )
    v = 16384 * 1024 * 2
    t = CostModel(get_chip("v5e"), mesh).collective_time(op)  # pyright: ignore
    assert t == pytest.approx(v / 9e10 * 15 / 16)


def test_small_messages_are_latency_bound() -> None:
    op, mesh = first(gather_program('"X"=16', "X", "1x8", "16x8"), collective.AllGatherOp)
    assert CostModel(get_chip("v5e"), mesh).collective_time(op) == pytest.approx(8e-6)  # pyright: ignore
    op, mesh = first(gather_program('"X"=4', "X", "1x8", "4x8"), collective.AllGatherOp)
    assert CostModel(get_chip("v5e"), mesh).collective_time(op) == pytest.approx(3e-6)  # pyright: ignore


def test_all_reduce_is_twice_and_all_to_all_a_quarter_of_an_all_gather() -> None:
    text = """
spmd.mesh @m = <["X"=16]>
func.func @f(%x: tensor<16384x1024xbf16>) -> (tensor<16384x1024xbf16>, tensor<16384x1024xbf16>, tensor<16384x1024xbf16>) attributes {spmd.partitioned} {
  %s = collective.reduce_scatter add %x on @m["X"], dim = 0 : (tensor<16384x1024xbf16>) -> tensor<1024x1024xbf16>
  %g = collective.all_gather %s on @m["X"], dim = 0 : (tensor<1024x1024xbf16>) -> tensor<16384x1024xbf16>
  %a = collective.all_reduce add %x on @m["X"] : tensor<16384x1024xbf16>
  %t = collective.all_to_all %x on @m["X"], split_dim = 0, concat_dim = 1 : (tensor<16384x1024xbf16>) -> tensor<1024x16384xbf16>
  func.return %g, %a, %a : tensor<16384x1024xbf16>, tensor<16384x1024xbf16>, tensor<16384x1024xbf16>
}"""
    module = parse(text)
    mesh = next(o for o in module.walk() if o.name == "spmd.mesh").mesh  # pyright: ignore
    model = CostModel(get_chip("v5e"), mesh)
    ops = {o.name: o for o in module.walk() if isinstance(o, collective.CollectiveOp)}
    rs = model.collective_time(ops["collective.reduce_scatter"])  # pyright: ignore
    ag = model.collective_time(ops["collective.all_gather"])  # pyright: ignore
    ar = model.collective_time(ops["collective.all_reduce"])  # pyright: ignore
    a2a = model.collective_time(ops["collective.all_to_all"])  # pyright: ignore
    assert rs == pytest.approx(ag)
    assert ar == pytest.approx(2 * ag)
    assert a2a == pytest.approx(16 * ag / 4)  # all_to_all of the 16x bigger local array


def test_two_axes_at_once_halve_the_bandwidth_term() -> None:
    one = first(
        gather_program('"X"=16, "Y"=16', "X", "1024x1024", "16384x1024"), collective.AllGatherOp
    )
    text = """
spmd.mesh @m = <["X"=16, "Y"=16]>
func.func @f(%x: tensor<64x1024xbf16>) -> tensor<16384x1024xbf16> attributes {spmd.partitioned} {
  %r = collective.all_gather %x on @m["X", "Y"], dim = 0 : (tensor<64x1024xbf16>) -> tensor<16384x1024xbf16>
  func.return %r : tensor<16384x1024xbf16>
}"""
    two = first(text, collective.AllGatherOp)
    t1 = CostModel(get_chip("v5e"), one[1]).collective_time(one[0])  # pyright: ignore
    t2 = CostModel(get_chip("v5e"), two[1]).collective_time(two[0])  # pyright: ignore
    assert t2 == pytest.approx(t1 / 2 * (255 / 256) / (15 / 16))


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
    assert big.flops == 2 * 4096**3 and big.time == pytest.approx(2 * 4096**3 / 1.97e14)
    assert thin.bytes == (8 * 4096 * 2) * 2 + 4096 * 4096 * 2
    assert thin.time == pytest.approx(thin.bytes / 8.1e11)


def test_permute_cost_counts_hops() -> None:
    text = """
spmd.mesh @m = <["X"=8]>
func.func @f(%x: tensor<1024xf32>) -> tensor<1024xf32> attributes {spmd.partitioned} {
  %r = collective.permute %x on @m["X"], shift = 3 : tensor<1024xf32>
  func.return %r : tensor<1024xf32>
}"""
    op, mesh = first(text, collective.PermuteOp)
    t = CostModel(get_chip("v5e"), mesh).collective_time(op)  # pyright: ignore
    # An axis of 8 on v5e is a line: rank 5 sends to rank 0, 5 hops away.
    assert t == pytest.approx(5e-6 + 4096 / 4.5e10)
