"""
Differential tests of the sort and top_k partitioning rules: programs that sort two
operands by the first along a drawn dimension and take the top k of the result along its
last dimension, under hypothesis-generated meshes, shapes, comparators and shardings (of
the arguments, of the sorted values through a constraint, of the results), run at level S
after spmd-pipeline, must compute exactly what level G computes, on inputs full of ties
(a stable order is checked too). The census checks the rules' communication; micro-batch
splits both along a batch dimension.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import make_context
from shardc.parsing import parse_and_verify
from shardc.passes.collective_stats import CollectiveStats
from shardc.passes.spmd_partition import SpmdPartitionPass
from shardc.passes.spmd_propagate import SpmdPropagatePass
from shardc.tests.e2e.differential import compile_and_compare, partition_and_compare
from shardc.tests.e2e.test_partition_pad_reverse import MESHES, SIZES, draw_sharding, sharding_str

CTX = make_context()
COMPARATORS = ["LT", "GT", "LT TOTALORDER", "GT TOTALORDER"]


def ty(shape: tuple[int, ...], dtype: str = "f32") -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>"


@st.composite
def sort_top_k_programs(draw: st.DrawFn) -> tuple[str, tuple[int, ...]]:
    mesh = draw(st.sampled_from(MESHES))
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from(SIZES)) for _ in range(rank))
    dim = draw(st.integers(0, rank - 1))
    comparator = draw(st.sampled_from(COMPARATORS))
    k = draw(st.integers(1, shape[-1]))
    top = (*shape[:-1], k)
    s = lambda shp: sharding_str(draw_sharding(draw, mesh, shp))  # noqa: E731
    mesh_text = ", ".join(f'"{a}"={n}' for a, n in mesh)
    f, i = ty(shape), ty(shape, "i32")
    text = f"""spmd.mesh @mesh = <[{mesh_text}]>
func.func @main(%x: {f} {{spmd.sharding = #spmd.sharding{s(shape)}}}, %y: {i} {{spmd.sharding = #spmd.sharding{s(shape)}}})
    -> ({f} {{spmd.sharding = #spmd.sharding{s(shape)}}}, {i} {{spmd.sharding = #spmd.sharding{s(shape)}}},
        {ty(top)} {{spmd.sharding = #spmd.sharding{s(top)}}}, {ty(top, "i32")} {{spmd.sharding = #spmd.sharding{s(top)}}}) {{
  %s, %p = hlo.sort %x, %y, dim = {dim}, comparator = {comparator}, stable : ({f}, {i}) -> ({f}, {i})
  %sc = spmd.constraint %s {s(shape)} : {f}
  %v, %j = hlo.top_k %sc, k = {k} : {f} -> ({ty(top)}, {ty(top, "i32")})
  func.return %sc, %p, %v, %j : {f}, {i}, {ty(top)}, {ty(top, "i32")}
}}
"""
    return text, shape


def tied_inputs(shape: tuple[int, ...], seed: int) -> dict[str, np.ndarray]:
    """Keys from a handful of values (ties everywhere, a NaN and both zeros); the second
    operand numbers the elements, so a stable order is visible in the output."""
    rng = np.random.default_rng(seed)
    pool = np.array([0.0, -0.0, 1.0, -1.0, 2.0, np.nan], np.float32)
    x = rng.choice(pool, shape).astype(np.float32)
    y = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    return {"in_0": x, "in_1": y}


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sort_top_k_programs(), st.integers(0, 3))
def test_sort_and_top_k_partition_to_the_same_numbers(case, seed: int) -> None:
    text, shape = case
    partition_and_compare(text, exact=True, inputs=tied_inputs(shape, seed), note=text)


def census(text: str) -> dict[str, int]:
    module = parse_and_verify(CTX, text, "m")
    for p in (SpmdPropagatePass(), SpmdPartitionPass()):
        p.apply(CTX, module)
    return dict(CollectiveStats.of(module).counts)


def test_batch_sharded_sort_and_top_k_need_no_collective() -> None:
    text = """spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%x: tensor<8x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>})
    -> (tensor<8x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>}, tensor<8x2xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>}) {
  %s = hlo.sort %x, dim = 1, comparator = GT : (tensor<8x6xf32>) -> tensor<8x6xf32>
  %v, %i = hlo.top_k %x, k = 2 : tensor<8x6xf32> -> (tensor<8x2xf32>, tensor<8x2xi32>)
  func.return %s, %i : tensor<8x6xf32>, tensor<8x2xi32>
}
"""
    assert census(text) == {}
    partition_and_compare(text, 0, exact=True)


def test_split_sort_dimension_is_gathered_once_per_operand() -> None:
    text = """spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%x: tensor<8x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}, %y: tensor<8x6xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>})
    -> (tensor<8x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}, tensor<8x6xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}) {
  %s, %p = hlo.sort %x, %y, dim = 1, comparator = LT, stable : (tensor<8x6xf32>, tensor<8x6xi32>) -> (tensor<8x6xf32>, tensor<8x6xi32>)
  func.return %s, %p : tensor<8x6xf32>, tensor<8x6xi32>
}
"""
    assert census(text) == {"all_gather": 2}
    partition_and_compare(text, 0, exact=True, inputs=tied_inputs((8, 6), 0))


def test_a_sort_keeping_its_split_sorts_along_another_dimension() -> None:
    """The sorted dimension split over "b" and wanted so: the axis moves onto the other
    dimension (an all_to_all per operand there and one per result back, XLA's way: one
    round of DMAs each, issued together, `timing.engine_window`) rather than every device
    of "b" gathering and sorting all of it (a 3-step ring per operand); the results are
    level G's."""
    text = """spmd.mesh @mesh = <["a"=2, "b"=4]>
func.func @main(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}, %y: tensor<16x32xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>})
    -> (tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}, tensor<16x32xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}) {
  %s, %p = hlo.sort %x, %y, dim = 1, comparator = LT, stable : (tensor<16x32xf32>, tensor<16x32xi32>) -> (tensor<16x32xf32>, tensor<16x32xi32>)
  func.return %s, %p : tensor<16x32xf32>, tensor<16x32xi32>
}
"""
    assert census(text) == {"all_to_all": 4}
    partition_and_compare(text, 0, exact=True, inputs=tied_inputs((16, 32), 0))


def test_micro_batch_splits_sort_and_top_k_along_a_batch_dimension() -> None:
    text = """spmd.mesh @m = <["x"=2, "y"=2]>
func.func @main(%a: tensor<16x8xf32> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {"y"}]>}, %b: tensor<16x8xi32> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {"y"}]>})
    -> (tensor<16x8xf32> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {}]>},
        tensor<16x8xi32> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {}]>},
        tensor<16x3xi32> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {}]>}) {
  %s, %p = hlo.sort %a, %b, dim = 1, comparator = GT, stable : (tensor<16x8xf32>, tensor<16x8xi32>) -> (tensor<16x8xf32>, tensor<16x8xi32>)
  %v, %i = hlo.top_k %s, k = 3 : tensor<16x8xf32> -> (tensor<16x3xf32>, tensor<16x3xi32>)
  func.return %s, %p, %i : tensor<16x8xf32>, tensor<16x8xi32>, tensor<16x3xi32>
}
"""
    spec = "spmd-propagate,spmd-partition,micro-batch{chunks=2 force=true}"
    printed = compile_and_compare(text, spec, tied_inputs((16, 8), 1))
    assert printed.count("hlo.sort") == 2 and printed.count("hlo.top_k") == 2


def test_propagation_carries_a_sharding_between_the_results_of_one_op() -> None:
    """top_k's values and indices share their factors: a sharding wanted for the indices
    reaches the values (and what uses them) through the op."""
    text = """spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%x: tensor<8x6xf32>) -> (tensor<8x2xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>}, tensor<8x2xf32>) {
  %v, %i = hlo.top_k %x, k = 2 : tensor<8x6xf32> -> (tensor<8x2xf32>, tensor<8x2xi32>)
  %c = hlo.abs %v : tensor<8x2xf32>
  %r = hlo.reduce add %c, dims = [0, 1] : (tensor<8x2xf32>) -> tensor<f32>
  %s = hlo.broadcast %r, dims = [] : (tensor<f32>) -> tensor<8x2xf32>
  func.return %i, %s : tensor<8x2xi32>, tensor<8x2xf32>
}
"""
    module = parse_and_verify(CTX, text, "m")
    SpmdPropagatePass().apply(CTX, module)
    printed = str(module)
    assert 'hlo.abs %v {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>}' in printed
    partition_and_compare(text, 0)
