"""
Differential tests of the gather and scatter partitioning rules: an embedding lookup and
its gradient-style scatter (add, max, min, replace) under hypothesis-generated meshes,
shapes and shardings of the table, the indices, the updates and the results, and gathers /
scatters with random dimension numbers (batching dims, several indexed dims, windows)
under random shardings; run at level S after spmd-pipeline they must compute what level G
computes, on indices that include out-of-range ones (clamped by gather, skipped by
scatter) and duplicates.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import make_context
from shardc.parsing import parse_and_verify
from shardc.passes.collective_stats import CollectiveStats
from shardc.passes.spmd_partition import SpmdPartitionPass
from shardc.passes.spmd_propagate import SpmdPropagatePass
from shardc.tests.e2e.differential import partition_and_compare
from shardc.tests.e2e.test_partition_pad_reverse import MESHES, SIZES, draw_sharding, sharding_str
from shardc.tests.unit.test_gather_scatter import batch_of, lst, random_config, ty

CTX = make_context()


@st.composite
def embedding_programs(draw: st.DrawFn) -> tuple[str, dict[str, np.ndarray]]:
    mesh = draw(st.sampled_from(MESHES))
    vocab, width = draw(st.sampled_from(SIZES)), draw(st.sampled_from(SIZES))
    batch = tuple(draw(st.sampled_from(SIZES)) for _ in range(draw(st.integers(1, 2))))
    kind = draw(st.sampled_from(["add", "max", "min", "replace"]))
    s = lambda shp: sharding_str(draw_sharding(draw, mesh, shp))  # noqa: E731
    mesh_text = ", ".join(f'"{a}"={n}' for a, n in mesh)
    n = len(batch)
    t, i, r = ty((vocab, width), "f32"), ty(batch, "i32"), ty((*batch, width), "f32")
    dims = f"index_vector_dim = {n}"
    text = f"""spmd.mesh @mesh = <[{mesh_text}]>
func.func @main(%t: {t} {{spmd.sharding = #spmd.sharding{s((vocab, width))}}}, %i: {i} {{spmd.sharding = #spmd.sharding{s(batch)}}}, %u: {r} {{spmd.sharding = #spmd.sharding{s((*batch, width))}}})
    -> ({r} {{spmd.sharding = #spmd.sharding{s((*batch, width))}}}, {t} {{spmd.sharding = #spmd.sharding{s((vocab, width))}}}) {{
  %g = hlo.gather %t, %i, offset_dims = [{n}], collapsed_slice_dims = [0], start_index_map = [0], {dims}, slice_sizes = [1, {width}] : ({t}, {i}) -> {r}
  %gc = spmd.constraint %g {s((*batch, width))} : {r}
  %s = hlo.scatter {kind} %t, %i, %gc, update_window_dims = [{n}], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], {dims} : ({t}, {i}, {r}) -> {t}
  %sc = spmd.constraint %s {s((vocab, width))} : {t}
  %s2 = hlo.scatter {kind} %sc, %i, %u, update_window_dims = [{n}], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], {dims} : ({t}, {i}, {r}) -> {t}
  func.return %gc, %s2 : {r}, {t}
}}
"""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    inputs = {
        "in_0": rng.standard_normal((vocab, width)).astype(np.float32),
        "in_1": rng.integers(-2, vocab + 2, size=batch).astype(np.int32),
        "in_2": rng.standard_normal((*batch, width)).astype(np.float32),
    }
    if kind == "replace":  # one update per row: which duplicate wins is unspecified
        flat = rng.permutation(vocab + 4)[: int(np.prod(batch))] - 2
        inputs["in_1"] = np.resize(flat, batch).astype(np.int32)
        if int(np.prod(batch)) > vocab + 4:
            inputs["in_1"] = np.full(batch, vocab + 5, np.int32)  # all skipped
    return text, inputs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(embedding_programs())
def test_embedding_gather_and_scatter_partition_to_the_same_numbers(case) -> None:
    text, inputs = case
    partition_and_compare(text, inputs=inputs, note=text)


@st.composite
def general_programs(draw: st.DrawFn) -> tuple[str, dict[str, np.ndarray]]:
    """Random dimension numbers (the unit test's generator), random shardings of everything."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    cfg = random_config(rng)
    mesh = draw(st.sampled_from(MESHES))
    s = lambda shp: sharding_str(draw_sharding(draw, mesh, tuple(shp)))  # noqa: E731
    dropped = set(cfg["collapsed"]) | set(cfg["op_batching"])
    window = [cfg["window"][d] for d in range(len(cfg["operand"])) if d not in dropped]
    batch = batch_of(cfg["ivd"], cfg["idx_shape"])
    rank = len(batch) + len(window)
    offset_dims = sorted(int(d) for d in rng.permutation(rank)[: len(window)])
    b, w = iter(batch), iter(window)
    res = [next(w) if d in offset_dims else next(b) for d in range(rank)]
    kind = draw(st.sampled_from(["add", "max"]))
    a, i, r = ty(cfg["operand"], "i32"), ty(cfg["idx_shape"], "i32"), ty(res, "i32")
    common = (
        f"operand_batching_dims = {lst(cfg['op_batching'])}, "
        f"start_indices_batching_dims = {lst(cfg['idx_batching'])}, "
        f"start_index_map = {lst(cfg['start_map'])}, index_vector_dim = {cfg['ivd']}"
    )
    scatter_common = (
        common.replace("operand_batching_dims", "input_batching_dims")
        .replace("start_indices_batching_dims", "scatter_indices_batching_dims")
        .replace("start_index_map", "scatter_dims_to_operand_dims")
    )
    mesh_text = ", ".join(f'"{x}"={n}' for x, n in mesh)
    text = f"""spmd.mesh @mesh = <[{mesh_text}]>
func.func @main(%a: {a} {{spmd.sharding = #spmd.sharding{s(cfg["operand"])}}}, %i: {i} {{spmd.sharding = #spmd.sharding{s(cfg["idx_shape"])}}})
    -> ({r} {{spmd.sharding = #spmd.sharding{s(res)}}}, {a} {{spmd.sharding = #spmd.sharding{s(cfg["operand"])}}}) {{
  %g = hlo.gather %a, %i, offset_dims = {lst(offset_dims)}, collapsed_slice_dims = {lst(cfg["collapsed"])}, {common}, slice_sizes = {lst(cfg["window"])} : ({a}, {i}) -> {r}
  %gc = spmd.constraint %g {s(res)} : {r}
  %s = hlo.scatter {kind} %a, %i, %gc, update_window_dims = {lst(offset_dims)}, inserted_window_dims = {lst(cfg["collapsed"])}, {scatter_common} : ({a}, {i}, {r}) -> {a}
  func.return %gc, %s : {r}, {a}
}}
"""
    hi = max(cfg["operand"]) + 2
    inputs = {
        "in_0": rng.integers(-50, 50, size=cfg["operand"]).astype(np.int32),
        "in_1": rng.integers(-2, hi + 1, size=cfg["idx_shape"]).astype(np.int32),
    }
    return text, inputs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(general_programs())
def test_general_gather_and_scatter_partition_exactly(case) -> None:
    text, inputs = case
    partition_and_compare(text, inputs=inputs, exact=True, note=text)


INDEXED_WHOLE_WINDOW = """spmd.mesh @mesh = <["x"=2]>
func.func @main(%a: tensor<2xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}]>}, %i: tensor<1xi32> {spmd.sharding = #spmd.sharding<@mesh, [{}]>})
    -> (tensor<2xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}]>}, tensor<2xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}]>}) {
  %g = hlo.gather %a, %i, offset_dims = [0], collapsed_slice_dims = [], operand_batching_dims = [], start_indices_batching_dims = [], start_index_map = [0], index_vector_dim = 0, slice_sizes = [2] : (tensor<2xi32>, tensor<1xi32>) -> tensor<2xi32>
  %gc = spmd.constraint %g <@mesh, [{}]> : tensor<2xi32>
  %s = hlo.scatter add %a, %i, %gc, update_window_dims = [0], inserted_window_dims = [], input_batching_dims = [], scatter_indices_batching_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 0 : (tensor<2xi32>, tensor<1xi32>, tensor<2xi32>) -> tensor<2xi32>
  func.return %gc, %s : tensor<2xi32>, tensor<2xi32>
}
"""


@pytest.mark.parametrize("start", [0, 1, -1])
def test_scatter_whole_window_on_an_indexed_split_dimension(start: int) -> None:
    """A window as wide as its dimension, which an index points into: any start but 0 puts
    it out of bounds and scatter skips it, although a device's local window would fit (found
    by the generated test above: device 1 added its half)."""
    inputs = {"in_0": np.array([32, 41], np.int32), "in_1": np.array([start], np.int32)}
    partition_and_compare(INDEXED_WHOLE_WINDOW, inputs=inputs, exact=True)


def census(text: str) -> dict[str, int]:
    """Collectives per kind of the partitioning rules as written (`cost-based=false`: at
    these sizes the cost model prefers all-gathering a 512-byte table to an all_reduce)."""
    module = parse_and_verify(CTX, text, "m")
    for p in (SpmdPropagatePass(), SpmdPartitionPass(cost_based=False)):
        p.apply(CTX, module)
    return dict(CollectiveStats.of(module).counts)


def test_vocab_split_lookup_is_one_all_reduce() -> None:
    """XLA's embedding partitioning: no all_gather of the table, one all_reduce."""
    text = """spmd.mesh @mesh = <["v"=4]>
func.func @main(%t: tensor<64x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"v"}, {}]>}, %i: tensor<16xi32>) -> tensor<16x8xf32> {
  %g = hlo.gather %t, %i, offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 8] : (tensor<64x8xf32>, tensor<16xi32>) -> tensor<16x8xf32>
  func.return %g : tensor<16x8xf32>
}"""
    assert census(text) == {"all_reduce": 1}


WHOLE_SLICE_OF_AN_INDEXED_DIM = """spmd.mesh @mesh = <["x"=2]>
func.func @main(%a: tensor<2xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}]>}, %i: tensor<1x3x3xi32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {}]>})
    -> (tensor<2x3x3xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}, {}]>}, tensor<2xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}]>}) {
  %g = hlo.gather %a, %i, offset_dims = [0], collapsed_slice_dims = [], start_index_map = [0], index_vector_dim = 0, slice_sizes = [2] : (tensor<2xi32>, tensor<1x3x3xi32>) -> tensor<2x3x3xi32>
  %gc = spmd.constraint %g <@mesh, [{"x"}, {}, {}]> : tensor<2x3x3xi32>
  %s = hlo.scatter add %a, %i, %gc, update_window_dims = [0], inserted_window_dims = [], scatter_dims_to_operand_dims = [0], index_vector_dim = 0 : (tensor<2xi32>, tensor<1x3x3xi32>, tensor<2x3x3xi32>) -> tensor<2xi32>
  func.return %gc, %s : tensor<2x3x3xi32>, tensor<2xi32>
}
"""


def test_an_indexed_dimension_sliced_whole_is_split_as_an_offset_dimension() -> None:
    # found by hypothesis: the vocabulary rule (shift + mask) once fired on a dimension
    # that is indexed but sliced whole (its start clamped to 0), losing half the rows
    inputs = {
        "in_0": np.array([4, -3], dtype=np.int32),
        "in_1": np.array([[[0, 1, 2], [1, 0, 5], [-1, 1, 0]]], dtype=np.int32),
    }
    partition_and_compare(WHOLE_SLICE_OF_AN_INDEXED_DIM, exact=True, inputs=inputs)
