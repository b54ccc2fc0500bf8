"""
Differential tests of the reduce_window and select_and_scatter partitioning rules:
programs with a reduce_window (drawn kind, window, strides, dilations, padding; "same"
windows whose halo the neighbours send, pooling windows that tile the blocks, jnp.cumsum's
whole-dimension window) and a select_and_scatter, under hypothesis-generated meshes,
shapes and shardings of the arguments and results, run at level S after spmd-pipeline,
must compute exactly what level G computes (on inputs full of ties). The census checks
that a halo costs two permutes and a pooling window nothing.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import hlo, make_context
from shardc.parsing import parse_and_verify
from shardc.passes.collective_stats import CollectiveStats
from shardc.passes.spmd_partition import SpmdPartitionPass
from shardc.passes.spmd_propagate import SpmdPropagatePass
from shardc.tests.e2e.differential import partition_and_compare
from shardc.tests.e2e.test_partition_pad_reverse import MESHES, SIZES, draw_sharding, sharding_str

CTX = make_context()


def ty(shape) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>" if len(shape) else "tensor<f32>"


@st.composite
def window_dim(draw: st.DrawFn, n: int, dilate: bool) -> tuple[int, int, int, int, int, int]:
    """(window, stride, base dilation, window dilation, low, high) for a dimension of n."""
    form = draw(st.sampled_from(["batch", "same", "pool", "cumsum", "any"]))
    if form == "batch":
        return 1, 1, 1, 1, 0, 0
    if form == "same":
        w = draw(st.integers(2, 5))
        return w, 1, 1, 1, (w - 1) // 2, w // 2
    if form == "pool":
        w = draw(st.sampled_from([d for d in (1, 2, 3) if n % d == 0]))
        return w, w, 1, 1, 0, 0
    if form == "cumsum":
        return n, 1, 1, 1, n - 1, 0
    bd = draw(st.integers(1, 2)) if dilate else 1
    wd = draw(st.integers(1, 2)) if dilate else 1
    w, s = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    low, high = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    if (w - 1) * wd + 1 > low + (n - 1) * bd + 1 + high:
        w = 1
    return w, s, bd, wd, low, high


@st.composite
def window_programs(draw: st.DrawFn) -> str:
    mesh = draw(st.sampled_from(MESHES))
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from(SIZES)) for _ in range(rank))
    kind = draw(st.sampled_from(["add", "max", "min"]))
    rw = [draw(window_dim(n, True)) for n in shape]
    sas = [draw(window_dim(n, False)) for n in shape]
    w1, s1, bd1, wd1, lo1, hi1 = (list(t) for t in zip(*rw, strict=True))
    w2, s2, _, _, lo2, hi2 = (list(t) for t in zip(*sas, strict=True))
    out1 = tuple(hlo.window_result_shape(shape, w1, s1, bd1, wd1, lo1, hi1))
    out2 = tuple(hlo.window_result_shape(shape, w2, s2, [1] * rank, [1] * rank, lo2, hi2))
    pads1 = [[a, b] for a, b in zip(lo1, hi1, strict=True)]
    pads2 = [[a, b] for a, b in zip(lo2, hi2, strict=True)]
    s = lambda shp: sharding_str(draw_sharding(draw, mesh, shp))  # noqa: E731
    mesh_text = ", ".join(f'"{a}"={n}' for a, n in mesh)
    x, r, g = ty(shape), ty(out1), ty(out2)
    return f"""spmd.mesh @mesh = <[{mesh_text}]>
func.func @main(%x: {x} {{spmd.sharding = #spmd.sharding{s(shape)}}}, %g: {g} {{spmd.sharding = #spmd.sharding{s(out2)}}})
    -> ({r} {{spmd.sharding = #spmd.sharding{s(out1)}}}, {x} {{spmd.sharding = #spmd.sharding{s(shape)}}}) {{
  %z = hlo.constant dense<0.0> : tensor<f32>
  %r = hlo.reduce_window {kind} %x, %z, window = {w1}, strides = {s1}, base_dilations = {bd1}, window_dilations = {wd1}, padding = {pads1} : ({x}, tensor<f32>) -> {r}
  %xc = spmd.constraint %x {s(shape)} : {x}
  %s = hlo.select_and_scatter %xc, %g, %z, select = {draw(st.sampled_from(["GE", "GT"]))}, scatter = add, window = {w2}, strides = {s2}, padding = {pads2} : ({x}, {g}, tensor<f32>) -> {x}
  func.return %r, %s : {r}, {x}
}}
"""


def tied_inputs(text: str, seed: int) -> dict[str, np.ndarray]:
    """Small integers in f32 (ties for the select; sums exact in any order)."""
    module = parse_and_verify(CTX, text, "m")
    func = next(op for op in module.walk() if op.name == "func.func")
    shapes = [a.type.get_shape() for a in func.body.block.args]  # pyright: ignore
    rng = np.random.default_rng(seed)
    return {f"in_{i}": rng.integers(-3, 4, shp).astype(np.float32) for i, shp in enumerate(shapes)}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(window_programs(), st.integers(0, 3))
def test_windows_partition_to_the_same_numbers(text: str, seed: int) -> None:
    partition_and_compare(text, exact=True, inputs=tied_inputs(text, seed), note=text)


def census(text: str) -> dict[str, int]:
    module = parse_and_verify(CTX, text, "m")
    for p in (SpmdPropagatePass(), SpmdPartitionPass()):
        p.apply(CTX, module)
    return dict(CollectiveStats.of(module).counts)


SAME = """spmd.mesh @mesh = <["a"=2, "b"=4]>
func.func @main(%x: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>})
    -> (tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}) {
  %z = hlo.constant dense<0.0> : tensor<f32>
  %r = hlo.reduce_window WINDOW : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  func.return %r : tensor<8x16xf32>
}
"""


def test_a_same_window_exchanges_halos_with_two_permutes() -> None:
    text = SAME.replace("WINDOW", "max %x, %z, window = [1, 5], padding = [[0, 0], [2, 2]]")
    assert census(text) == {"permute": 2}
    partition_and_compare(text, 0, exact=True)


def test_a_causal_window_needs_only_the_left_halo() -> None:
    text = SAME.replace("WINDOW", "add %x, %z, window = [1, 3], padding = [[0, 0], [2, 0]]")
    assert census(text) == {"permute": 1}
    partition_and_compare(text, 1, exact=True, inputs=tied_inputs(text, 1))


def test_cumsum_over_a_split_dimension_gathers_it() -> None:
    text = SAME.replace("WINDOW", "add %x, %z, window = [1, 16], padding = [[0, 0], [15, 0]]")
    assert census(text) == {"all_gather": 1}
    partition_and_compare(text, 2, exact=True, inputs=tied_inputs(text, 2))


@st.composite
def halo_programs(draw: st.DrawFn) -> str:
    """Windows that keep the shape (centred or causal, maybe dilated) with the result
    sharded as the operand: a split windowed dimension exchanges halos (gathered only
    where the window reaches beyond the neighbouring block)."""
    mesh = draw(st.sampled_from(MESHES))
    rank = draw(st.integers(1, 2))
    shape = tuple(draw(st.sampled_from([4, 8, 12])) for _ in range(rank))
    window, dil, pads = [], [], []
    for _ in shape:
        w, wd = draw(st.integers(1, 3)), draw(st.integers(1, 2))
        reach = (w - 1) * wd
        low = draw(st.sampled_from([reach // 2, reach]))  # centred or causal
        window.append(w), dil.append(wd), pads.append([low, reach - low])
    sharding = sharding_str(draw_sharding(draw, mesh, shape))
    mesh_text = ", ".join(f'"{a}"={n}' for a, n in mesh)
    x = ty(shape)
    kind = draw(st.sampled_from(["add", "max"]))
    return f"""spmd.mesh @mesh = <[{mesh_text}]>
func.func @main(%x: {x} {{spmd.sharding = #spmd.sharding{sharding}}}) -> ({x} {{spmd.sharding = #spmd.sharding{sharding}}}) {{
  %z = hlo.constant dense<0.0> : tensor<f32>
  %r = hlo.reduce_window {kind} %x, %z, window = {window}, window_dilations = {dil}, padding = {pads} : ({x}, tensor<f32>) -> {x}
  func.return %r : {x}
}}
"""


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(halo_programs(), st.integers(0, 3))
def test_halo_exchanges_compute_the_same_numbers(text: str, seed: int) -> None:
    partition_and_compare(text, exact=True, inputs=tied_inputs(text, seed), note=text)
