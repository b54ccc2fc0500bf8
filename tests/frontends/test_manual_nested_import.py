"""
shard_map inside auto-sharded code, as JAX writes it (`sdy.manual_computation` between
auto-sharded ops), imports as a level-G function with an `spmd.manual_computation`; it
runs at level G (against a numpy reference written here), and after `spmd-pipeline` at
level S with the same outputs. `stablehlo.partition_id` (JAX's `lax.axis_index`) is the
device's id inside the body; `stablehlo.collective_broadcast` and a variadic
`stablehlo.all_reduce` with a max region import and run at level S.

(JAX writes `partition_id : tensor<ui32>` then a convert to i32; the programs here use
`tensor<i32>` until the element-type work of issue 13 adds ui32.)
"""

from __future__ import annotations

import numpy as np
import pytest
from shardc.diagnostics import DiagnosticError
from shardc.frontends.stablehlo import import_stablehlo
from shardc.interpreter import io
from shardc.passes.collective_stats import CollectiveStats
from shardc.passes.spmd_pipeline import SpmdPipelinePass
from shardc.tests.e2e.differential import CTX

MIXED = """module @jit_mixed attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=4]>
  func.func public @main(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) -> (tensor<8x8xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
    %1 = sdy.manual_computation(%0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%arg2: tensor<2x8xf32>) {
      %5 = "stablehlo.collective_permute"(%arg2) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>}> : (tensor<2x8xf32>) -> tensor<2x8xf32>
      %6 = stablehlo.partition_id : tensor<i32>
      %c = stablehlo.constant dense<4> : tensor<i32>
      %7 = stablehlo.remainder %6, %c : tensor<i32>
      %8 = stablehlo.convert %7 : (tensor<i32>) -> tensor<f32>
      %9 = stablehlo.broadcast_in_dim %8, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
      %10 = stablehlo.add %5, %9 : tensor<2x8xf32>
      sdy.return %10 : tensor<2x8xf32>
    } : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %2 = stablehlo.tanh %1 : tensor<8x8xf32>
    %3 = stablehlo.transpose %2, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    return %3 : tensor<8x8xf32>
  }
}
"""

BROADCAST = """module @jit_bcast attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=4]>
  func.func public @main(%arg0: tensor<8x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<8xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<8x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, tensor<8xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, tensor<8x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0:3 = sdy.manual_computation(%arg0, %arg1) in_shardings=[<@mesh, [{"x"}, {}]>, <@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}, {}]>, <@mesh, [{"x"}]>, <@mesh, [{"x"}, {}]>] manual_axes={"x"} (%arg2: tensor<2x3xf32>, %arg3: tensor<2xi32>) {
      %1 = "stablehlo.collective_broadcast"(%arg2) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[1, 0], [3, 2]]> : tensor<2x2xi64>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %2 = "stablehlo.collective_broadcast"(%arg3) <{channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, replica_groups = dense<[[2, 0, 1, 3]]> : tensor<1x4xi64>}> : (tensor<2xi32>) -> tensor<2xi32>
      %3:2 = "stablehlo.all_reduce"(%arg2, %1) <{channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}> ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %4 = stablehlo.maximum %a, %b : tensor<f32>
        stablehlo.return %4 : tensor<f32>
      }) : (tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
      sdy.return %1, %2, %3#0 : tensor<2x3xf32>, tensor<2xi32>, tensor<2x3xf32>
    } : (tensor<8x3xf32>, tensor<8xi32>) -> (tensor<8x3xf32>, tensor<8xi32>, tensor<8x3xf32>)
    return %0#0, %0#1, %0#2 : tensor<8x3xf32>, tensor<8xi32>, tensor<8x3xf32>
  }
}
"""


def mixed_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """dot, then each device's rows go to the next device, which adds its index."""
    h = a.astype(np.float64) @ b.astype(np.float64)
    blocks = np.split(h, 4, axis=0)
    moved = [blocks[(d - 1) % 4] + d for d in range(4)]
    return np.tanh(np.concatenate(moved, axis=0)).T


def test_mixed_program_is_level_g_and_runs():
    result = import_stablehlo(MIXED, "mixed.mlir")
    assert result.stats.level == "G"
    text = str(result.module)
    assert "spmd.manual_computation" in text and "hlo.partition_id" in text
    assert "collective.permute" in text
    rng = np.random.default_rng(0)
    inputs = {
        "in_0": rng.standard_normal((8, 16)).astype(np.float32),
        "in_1": rng.standard_normal((16, 8)).astype(np.float32),
    }
    level_g = io.run_module(result.module.clone(), inputs)
    want = mixed_reference(inputs["in_0"], inputs["in_1"])
    np.testing.assert_allclose(level_g["out_0"], want, rtol=1e-5, atol=1e-5)
    module = result.module
    SpmdPipelinePass().apply(CTX, module)
    module.verify()
    assert "spmd.manual_computation" not in str(module)
    level_s = io.run_module(module, inputs)
    # the partitioned dot is another shape's f32 BLAS call (its summation order depends on
    # shape and CPU): a few roundings of the 16-term sums, not bit for bit
    np.testing.assert_allclose(level_s["out_0"], level_g["out_0"], rtol=0, atol=4e-6)
    census = CollectiveStats.of(module).counts
    # the ring step's permute only: the dot computes in the in-sharding's layout and the
    # transpose turns the out-sharding's rows into the result's columns locally
    assert dict(census) == {"permute": 1}, census


def test_collective_broadcast_and_variadic_all_reduce():
    result = import_stablehlo(BROADCAST, "bcast.mlir")
    assert result.stats.level == "S"
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 3)).astype(np.float32)
    x[0, 0] = -0.0
    y = rng.integers(-100, 100, 8).astype(np.int32)
    out = io.run_module(result.module, {"in_0": x, "in_1": y})
    xb = np.split(x, 4)
    # groups [[1, 0], [3, 2]]: the first device of each group is the source
    want0 = np.concatenate([xb[1], xb[1], xb[3], xb[3]])
    np.testing.assert_array_equal(out["out_0"], want0)
    assert np.array_equal(np.signbit(out["out_0"]), np.signbit(want0))
    yb = np.split(y, 4)
    np.testing.assert_array_equal(out["out_1"], np.concatenate([yb[2]] * 4))
    # all_reduce max of x over all four devices (the first of its two operands)
    m = np.maximum.reduce(xb)
    np.testing.assert_array_equal(out["out_2"], np.concatenate([m] * 4))


PARTIAL = """module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
  func.func public @main(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %0 = stablehlo.tanh %arg0 : tensor<8x8xf32>
    %1 = sdy.manual_computation(%0) in_shardings=[<@mesh, [{"x"}, {"y"}]>] out_shardings=[<@mesh, [{"x"}, {"y"}]>] manual_axes={"x"} (%arg1: tensor<4x8xf32>) {
      sdy.return %arg1 : tensor<4x8xf32>
    } : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %2 = stablehlo.dot_general %1, %1, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    return %2 : tensor<8x8xf32>
  }
}"""


def test_partially_manual_shardings_over_free_axes_run():
    """Shardy's partially manual form: in/out shardings split over the free axis "y" too."""
    result = import_stablehlo(PARTIAL, "partial.mlir")
    assert result.stats.level == "G"
    x = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    level_g = io.run_module(result.module.clone(), {"in_0": x})
    t = np.tanh(x.astype(np.float64))
    np.testing.assert_allclose(level_g["out_0"], t @ t, rtol=1e-5, atol=1e-5)
    module = result.module
    SpmdPipelinePass().apply(CTX, module)
    module.verify()
    level_s = io.run_module(module, {"in_0": x})
    np.testing.assert_allclose(level_s["out_0"], level_g["out_0"], rtol=1e-6, atol=1e-6)


def test_free_axis_before_a_manual_axis_is_a_clear_error():
    text = PARTIAL.replace('[{"x"}, {"y"}]>] out', '[{"y", "x"}, {}]>] out').replace(
        "tensor<4x8xf32>", "tensor<8x8xf32>"
    )
    with pytest.raises(DiagnosticError, match="follows the free axis") as e:
        import_stablehlo(text, "partial.mlir")
    assert "partial.mlir:5:" in str(e.value)


def test_replica_id_imports():
    text = """module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main() -> (tensor<i32>, tensor<i32>) {
    %0 = stablehlo.replica_id : tensor<i32>
    %1 = stablehlo.partition_id : tensor<i32>
    return %0, %1 : tensor<i32>, tensor<i32>
  }
}"""
    result = import_stablehlo(text, "ids.mlir")
    assert "hlo.replica_id" in str(result.module) and "hlo.partition_id" in str(result.module)
    out = io.run_module(result.module, {})
    assert out["out_0"] == 0 and out["out_1"] == 0


def test_hlo_text_collective_broadcast() -> None:
    from shardc.frontends.hlo_text import import_hlo_text
    from shardc.interpreter.testing import run_per_device

    text = """HloModule bcast, num_partitions=4

ENTRY %main (p: f32[2,3]) -> f32[2,3] {
  %p = f32[2,3]{1,0} parameter(0)
  ROOT %b = f32[2,3]{1,0} collective-broadcast(%p), channel_id=1, replica_groups={{2,1},{0,3}}
}
"""
    result = import_hlo_text(text, "bcast.hlo")
    assert "collective.all_gather" in str(result.module)
    xs = [np.full((2, 3), d + 0.5, np.float32) for d in range(4)]
    xs[2][0, 0] = -0.0
    out = run_per_device(str(result.module), [[x] for x in xs])
    for d, src in ((0, 0), (1, 2), (2, 2), (3, 0)):
        np.testing.assert_array_equal(out[d][0], xs[src])
    assert np.signbit(out[1][0][0, 0])


def test_device_ids_with_replicas_and_partitions() -> None:
    """Device d of 2 replicas x 2 partitions is replica d // 2, partition d % 2."""
    text = """module @m attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 2 : i32} {
  sdy.mesh @mesh = <["x"=4]>
  func.func public @main(%arg0: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) {
    %0 = stablehlo.negate %arg0 : tensor<4xi32>
    %1:2 = sdy.manual_computation(%0) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>, <@mesh, [{"x"}]>] manual_axes={"x"} (%arg1: tensor<1xi32>) {
      %p = stablehlo.partition_id : tensor<i32>
      %r = stablehlo.replica_id : tensor<i32>
      %pb = stablehlo.broadcast_in_dim %p, dims = [] : (tensor<i32>) -> tensor<1xi32>
      %rb = stablehlo.broadcast_in_dim %r, dims = [] : (tensor<i32>) -> tensor<1xi32>
      %a = stablehlo.add %arg1, %pb : tensor<1xi32>
      sdy.return %a, %rb : tensor<1xi32>, tensor<1xi32>
    } : (tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>)
    return %1#0, %1#1 : tensor<4xi32>, tensor<4xi32>
  }
}"""
    result = import_stablehlo(text, "ids.mlir")
    assert result.stats.level == "G"
    x = np.array([10, 20, 30, 40], np.int32)
    out = io.run_module(result.module.clone(), {"in_0": x})
    np.testing.assert_array_equal(out["out_0"], -x + np.array([0, 1, 0, 1]))
    np.testing.assert_array_equal(out["out_1"], [0, 0, 1, 1])
    module = result.module
    SpmdPipelinePass().apply(CTX, module)
    level_s = io.run_module(module, {"in_0": x})
    np.testing.assert_array_equal(level_s["out_0"], out["out_0"])
    np.testing.assert_array_equal(level_s["out_1"], out["out_1"])


REGIONS = [
    ("stablehlo.add", "f32", np.add),
    ("stablehlo.multiply", "i32", np.multiply),
    ("stablehlo.maximum", "f32", np.maximum),
    ("stablehlo.minimum", "i32", np.minimum),
    ("stablehlo.and", "i1", np.logical_and),
    ("stablehlo.or", "i1", np.logical_or),
]


@pytest.mark.parametrize(("body", "dtype", "ufunc"), REGIONS)
@pytest.mark.parametrize("swapped", [False, True])
def test_all_reduce_regions_jax_emits(body: str, dtype: str, ufunc, swapped: bool) -> None:
    """psum / pmax / pmin / a product, and and / or on booleans, in either argument order."""
    args = "%b, %a" if swapped else "%a, %b"
    t = f"tensor<2x{dtype}>"
    text = f"""module @m attributes {{mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32}} {{
  sdy.mesh @mesh = <["x"=4]>
  func.func public @main(%arg0: tensor<8x{dtype}> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}]>}}) -> (tensor<8x{dtype}> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}]>}}) {{
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{{"x"}}]>] out_shardings=[<@mesh, [{{"x"}}]>] manual_axes={{"x"}} (%arg1: {t}) {{
      %1 = "stablehlo.all_reduce"(%arg1) <{{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}}> ({{
      ^bb0(%a: tensor<{dtype}>, %b: tensor<{dtype}>):
        %2 = {body} {args} : tensor<{dtype}>
        stablehlo.return %2 : tensor<{dtype}>
      }}) : ({t}) -> {t}
      sdy.return %1 : {t}
    }} : (tensor<8x{dtype}>) -> tensor<8x{dtype}>
    return %0 : tensor<8x{dtype}>
  }}
}}"""
    result = import_stablehlo(text, "ar.mlir")
    rng = np.random.default_rng(3)
    if dtype == "i1":
        x = rng.integers(0, 2, 8).astype(bool)
    elif dtype == "i32":
        x = rng.integers(-5, 6, 8).astype(np.int32)
    else:
        x = rng.standard_normal(8).astype(np.float32)
    out = io.run_module(result.module, {"in_0": x})
    blocks = np.split(x, 4)
    want = blocks[0]
    for blk in blocks[1:]:
        want = ufunc(want, blk)
    want = np.asarray(want, dtype=x.dtype)
    if dtype == "f32" and body == "stablehlo.add":
        np.testing.assert_allclose(out["out_0"], np.tile(want, 4), rtol=1e-6)
    else:
        np.testing.assert_array_equal(out["out_0"], np.tile(want, 4))
