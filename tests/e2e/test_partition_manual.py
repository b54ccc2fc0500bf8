"""
Differential tests of shard_map inside auto-sharded code: hypothesis-generated meshes,
shapes, argument / result shardings, manual axes (all or some of the mesh's) and in/out
shardings of an `spmd.manual_computation` whose body permutes over a manual axis (and adds
`hlo.partition_id` when its blocks are per device), between auto-sharded ops. Level S after
spmd-pipeline must compute exactly what level G computes (the level-G interpreter runs the
body on the mesh's devices itself).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.diagnostics import InterpreterError
from shardc.interpreter.testing import run_global
from shardc.tests.e2e.differential import partition_and_compare
from shardc.tests.e2e.test_partition_pad_reverse import (
    MESHES,
    SIZES,
    draw_sharding,
    sharding_str,
    ty,
)


def local(shape: tuple[int, ...], dims: list[list[str]], mesh) -> tuple[int, ...]:
    sizes = dict(mesh)
    return tuple(n // math.prod(sizes[a] for a in d) for n, d in zip(shape, dims, strict=True))


@st.composite
def mixed_programs(draw: st.DrawFn) -> str:
    mesh = draw(st.sampled_from(MESHES))
    names = [a for a, _ in mesh]
    manual = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    manual_mesh = [(a, n) for a, n in mesh if a in manual]
    shape = tuple(draw(st.sampled_from(SIZES)) for _ in range(2))
    s = lambda m: sharding_str(draw_sharding(draw, m, shape))  # noqa: E731
    in1 = draw_sharding(draw, manual_mesh, shape)
    in2 = draw_sharding(draw, manual_mesh, shape)
    l1, l2 = local(shape, in1, mesh), local(shape, in2, mesh)
    axis = draw(st.sampled_from(manual))
    shift = draw(st.sampled_from([1, -1, 2]))
    per_device = sorted(a for d in in1 for a in d) == sorted(names)
    ids = ""
    result = "%p"
    if per_device:
        ids = f"""    %id = hlo.partition_id : tensor<i32>
    %f = hlo.convert %id : (tensor<i32>) -> tensor<f32>
    %b = hlo.broadcast %f, dims = [] : (tensor<f32>) -> {ty(l1)}
    %q = hlo.add %p, %b : {ty(l1)}
"""
        result = "%q"
    mesh_text = ", ".join(f'"{a}"={n}' for a, n in mesh)
    axes_text = ", ".join(f'"{a}"' for a in manual)
    t = ty(shape)
    return f"""spmd.mesh @mesh = <[{mesh_text}]>
func.func @main(%x: {t} {{spmd.sharding = #spmd.sharding{s(mesh)}}}, %w: {t} {{spmd.sharding = #spmd.sharding{s(mesh)}}})
    -> ({t} {{spmd.sharding = #spmd.sharding{s(mesh)}}}, {t} {{spmd.sharding = #spmd.sharding{s(mesh)}}}) {{
  %a = hlo.mul %x, %w : {t}
  %m, %n = spmd.manual_computation(%a, %x) in_shardings=[{sharding_str(in1)}, {sharding_str(in2)}] out_shardings=[{sharding_str(in1)}, {sharding_str(in2)}] manual_axes={{{axes_text}}} (%l: {ty(l1)}, %k: {ty(l2)}) {{
    %p = collective.permute %l on @mesh["{axis}"], shift = {shift} : {ty(l1)}
{ids}    spmd.return {result}, %k : {ty(l1)}, {ty(l2)}
  }} : ({t}, {t}) -> ({t}, {t})
  %e = hlo.tanh %m : {t}
  %u = hlo.add %e, %n : {t}
  func.return %u, %m : {t}, {t}
}}
"""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_programs(), st.integers(0, 3))
def test_manual_computation_partitions_to_the_same_numbers(text: str, seed: int) -> None:
    partition_and_compare(text, seed, exact=True, note=text)


RING = """spmd.mesh @mesh = <["x"=4]>
func.func @main(%x: tensor<8x3xf32>) -> (tensor<8x3xf32>, tensor<i32>) {
  %m = spmd.manual_computation(%x) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%l: tensor<2x3xf32>) {
    %p = collective.permute %l on @mesh["x"], shift = 1 : tensor<2x3xf32>
    %id = hlo.partition_id : tensor<i32>
    %f = hlo.convert %id : (tensor<i32>) -> tensor<f32>
    %b = hlo.broadcast %f, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %q = hlo.add %p, %b : tensor<2x3xf32>
    spmd.return %q : tensor<2x3xf32>
  } : (tensor<8x3xf32>) -> tensor<8x3xf32>
  %o = hlo.partition_id : tensor<i32>
  func.return %m, %o : tensor<8x3xf32>, tensor<i32>
}
"""


def test_level_g_runs_the_body_on_every_device() -> None:
    """Against numpy: block d moves to device d + 1, which adds its id; outside, the id is 0."""
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    out = run_global(RING, {"in_0": x})
    blocks = np.split(x, 4)
    want = np.concatenate([blocks[(d - 1) % 4] + d for d in range(4)])
    np.testing.assert_array_equal(out["out_0"], want)
    assert out["out_1"] == 0
    partition_and_compare(RING, 0, exact=True)


def test_replicated_result_that_differs_is_an_error() -> None:
    text = RING.replace('out_shardings=[<@mesh, [{"x"}, {}]>]', "out_shardings=[<@mesh, [{}, {}]>]")
    text = text.replace("(%l: tensor<2x3xf32>)", "(%l: tensor<2x3xf32>)").replace(
        "-> tensor<8x3xf32>\n  %o", "-> tensor<2x3xf32>\n  %o"
    )
    text = text.replace("%m, %o : tensor<8x3xf32>", "%m, %o : tensor<2x3xf32>").replace(
        "-> (tensor<8x3xf32>, tensor<i32>)", "-> (tensor<2x3xf32>, tensor<i32>)"
    )
    with pytest.raises(InterpreterError, match="hold different values of one block"):
        run_global(text, {"in_0": np.zeros((8, 3), np.float32)})


def test_device_ids_cost_nothing_and_lower_to_tpu() -> None:
    from shardc.dialects import make_context
    from shardc.hardware.chips import get_chip
    from shardc.hardware.cost import CostModel
    from shardc.interpreter.testing import parse
    from shardc.lowering.lower_to_tpu import LowerToTpuPass
    from shardc.passes.spmd_pipeline import SpmdPipelinePass

    module = parse(RING, "ring.mlir")
    ctx = make_context()
    SpmdPipelinePass(fusion=False).apply(ctx, module)
    ids = [op for op in module.walk() if op.name == "hlo.partition_id"]
    assert ids and CostModel(get_chip("v5e")).op_cost(ids[0]).time == 0.0
    LowerToTpuPass(chip="v5e").apply(ctx, module)  # partition_id: tpu.device_id
    assert "tpu.device_id" in str(module)
