"""
Differential tests of the convolution partitioning rule: programs with one
`hlo.convolution` (drawn layouts, 1D/2D windows, strides, padding, dilations, feature or
batch groups) under hypothesis-generated meshes and shardings of the input, the kernel and
the result, run at level S after spmd-pipeline, must compute what level G computes (f32
within the tolerance of a reordered sum, i32 exactly). The census checks that batch and
output-feature sharding need no collective and input-feature sharding one all_reduce;
micro-batch splits a convolution (and the all_reduce of its partial sums) along its batch.
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
from shardc.tests.e2e.test_partition_pad_reverse import MESHES, draw_sharding, sharding_str
from shardc.tests.unit.test_convolution import labels, shapes, ty

CTX = make_context()


@st.composite
def conv_programs(draw: st.DrawFn) -> str:
    mesh = draw(st.sampled_from(MESHES))
    n = draw(st.integers(1, 2))
    perm = lambda: draw(st.permutations(range(n + 2)))  # noqa: E731
    kind = draw(st.sampled_from(["none", "none", "feature", "batch"]))
    groups = draw(st.sampled_from([2, 4, 6])) if kind != "none" else 1
    fgc, bgc = (groups, 1) if kind == "feature" else (1, groups) if kind == "batch" else (1, 1)
    case = {
        "dims": (perm(), perm(), perm()),
        "fgc": fgc,
        "bgc": bgc,
        "stride": [draw(st.integers(1, 2)) for _ in range(n)],
        "pad": [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(n)],
        "ld": [draw(st.integers(1, 2)) for _ in range(n)],
        "rd": [draw(st.integers(1, 2)) for _ in range(n)],
        "reverse": [draw(st.booleans()) for _ in range(n)],
        "batch": bgc * draw(st.sampled_from([1, 2, 4])),
        "in_feats": draw(st.sampled_from([1, 2, 4] if fgc > 1 else [2, 4, 6])),
        "out_feats": fgc * bgc * draw(st.sampled_from([1, 2])),
        "sizes": [draw(st.sampled_from([4, 6, 8])) for _ in range(n)],
        "kernel": [draw(st.integers(1, 3)) for _ in range(n)],
    }
    lhs, rhs, out = shapes(case)
    if min(out) <= 0:
        case["pad"] = [(max(lo, 0), max(hi, 0)) for lo, hi in case["pad"]]
        lhs, rhs, out = shapes(case)
    dtype = draw(st.sampled_from(["f32", "f32", "i32"]))
    ld, rd, od = case["dims"]
    window = ", ".join(
        [
            f"stride = {case['stride']}",
            "pad = [" + ", ".join(f"[{lo}, {hi}]" for lo, hi in case["pad"]) + "]",
            f"lhs_dilate = {case['ld']}",
            f"rhs_dilate = {case['rd']}",
            "reverse = [" + ", ".join("true" if r else "false" for r in case["reverse"]) + "]",
        ]
    )
    s = lambda shp: sharding_str(draw_sharding(draw, mesh, tuple(shp)))  # noqa: E731
    mesh_text = ", ".join(f'"{a}"={k}' for a, k in mesh)
    tl, tr, to = ty(lhs, dtype), ty(rhs, dtype), ty(out, dtype)
    return f"""spmd.mesh @mesh = <[{mesh_text}]>
func.func @main(%x: {tl} {{spmd.sharding = #spmd.sharding{s(lhs)}}}, %w: {tr} {{spmd.sharding = #spmd.sharding{s(rhs)}}})
    -> ({to} {{spmd.sharding = #spmd.sharding{s(out)}}}) {{
  %r = hlo.convolution(%x, %w) dim_numbers = {labels(ld, "bf")}x{labels(rd, "io")}->{labels(od, "bf")}, window = {{{window}}}, feature_group_count = {fgc}, batch_group_count = {bgc} : ({tl}, {tr}) -> {to}
  %c = spmd.constraint %r {s(out)} : {to}
  %n = hlo.neg %c : {to}
  func.return %n : {to}
}}
"""


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv_programs(), st.integers(0, 3))
def test_convolution_partitions_to_the_same_numbers(text: str, seed: int) -> None:
    partition_and_compare(text, seed, note=text)


def census(text: str) -> dict[str, int]:
    module = parse_and_verify(CTX, text, "m")
    for p in (SpmdPropagatePass(), SpmdPartitionPass()):
        p.apply(CTX, module)
    return dict(CollectiveStats.of(module).counts)


NHWC = """spmd.mesh @mesh = <["data"=2, "model"=2]>
func.func @main(%x: tensor<4x8x8x4xf32> {{spmd.sharding = #spmd.sharding<@mesh, [{x}, {{}}, {{}}, {xf}]>}}, %w: tensor<3x3x4x8xf32> {{spmd.sharding = #spmd.sharding<@mesh, [{{}}, {{}}, {wi}, {wo}]>}})
    -> (tensor<4x8x8x8xf32> {{spmd.sharding = #spmd.sharding<@mesh, [{x}, {{}}, {{}}, {wo}]>}}) {{
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {{pad = [[1, 1], [1, 1]]}} : (tensor<4x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<4x8x8x8xf32>
  func.return %r : tensor<4x8x8x8xf32>
}}
"""


def test_batch_and_output_feature_sharding_stay_local() -> None:
    text = NHWC.format(x='{"data"}', xf="{}", wi="{}", wo='{"model"}')
    assert census(text) == {}
    partition_and_compare(text, 0)


def test_input_feature_sharding_gathers_both_operands() -> None:
    """Input features split: the two small operands' all_gathers (one step over "model"
    each, issued together: the second's latency under the first's, `timing.engine_window`;
    1.05 us on v5e) beat the partial result's all_reduce (two ring steps, 2.1 us) and move
    fewer bytes."""
    text = NHWC.format(x='{"data"}', xf='{"model"}', wi='{"model"}', wo="{}")
    assert census(text) == {"all_gather": 2}
    partition_and_compare(text, 1)


def test_micro_batch_splits_a_convolution_along_the_batch() -> None:
    """Input features split over "y" (8 of them, 4 output features: the partial result's
    all_reduce moves fewer bytes than gathering both operands, so it stays); micro-batch
    splits the convolution and its all_reduce in two (by batch or output features,
    whichever it estimates faster)."""
    text = """spmd.mesh @m = <["x"=2, "y"=2]>
func.func @main(%x: tensor<8x6x6x8xi32> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {}, {}, {"y"}]>}, %w: tensor<3x3x8x4xi32> {spmd.sharding = #spmd.sharding<@m, [{}, {}, {"y"}, {}]>})
    -> (tensor<8x6x6x4xi32> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {}, {}, {}]>}) {
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} : (tensor<8x6x6x8xi32>, tensor<3x3x8x4xi32>) -> tensor<8x6x6x4xi32>
  func.return %r : tensor<8x6x6x4xi32>
}
"""
    rng = np.random.default_rng(0)
    inputs = {
        "in_0": rng.integers(-9, 9, (8, 6, 6, 8)).astype(np.int32),
        "in_1": rng.integers(-9, 9, (3, 3, 8, 4)).astype(np.int32),
    }
    spec = "spmd-propagate,spmd-partition,micro-batch{chunks=2 force=true}"
    printed = compile_and_compare(text, spec, inputs)
    assert printed.count("hlo.convolution") == 2 and printed.count("collective.all_reduce") == 2


GROUPED = """spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%x: tensor<2x10x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {"a", "b"}]>}, %w: tensor<3x1x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {"a", "b"}]>},
                %y: tensor<8x10x2xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}, {}]>}, %g: tensor<2x8x8xf32>)
    -> (tensor<2x8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {"a", "b"}]>}, tensor<1x3x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {"a"}]>}) {
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {}, feature_group_count = 8 : (tensor<2x10x8xf32>, tensor<3x1x16xf32>) -> tensor<2x8x16xf32>
  %s = hlo.convolution(%y, %g) dim_numbers = [b, 0, f]x[i, 0, o]->[b, 0, f], window = {}, batch_group_count = 8 : (tensor<8x10x2xf32>, tensor<2x8x8xf32>) -> tensor<1x3x8xf32>
  func.return %r, %s : tensor<2x8x16xf32>, tensor<1x3x8xf32>
}
"""


def test_depthwise_and_its_weight_gradient_stay_local_in_whole_groups() -> None:
    module = parse_and_verify(CTX, GROUPED, "m")
    for p in (SpmdPropagatePass(), SpmdPartitionPass()):
        p.apply(CTX, module)
    printed = str(module)
    assert "feature_group_count = 2" in printed and "batch_group_count = 4" in printed
    assert "collective.all_gather" not in printed and "collective.all_reduce" not in printed
    partition_and_compare(GROUPED, 2)
