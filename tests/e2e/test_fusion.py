"""
The `fusion` pass: fused programs compute bit-exactly what the unfused ones did (the ops
inside a fusion keep their order), on hypothesis-generated programs at level G and after
partitioning (level S), and on every example through `spmd-pipeline`; and the real-size
transformer layer's fused compute is close to its matmul time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import shardc
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from shardc.tests.unit.strategies import hlo_programs

EXAMPLES = Path(__file__).parents[2] / "examples"
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _run(text: str, pipeline: str) -> dict[str, np.ndarray]:
    return shardc.run(shardc.compile(text, pipeline), seed=3).outputs


def _same(unfused: dict[str, np.ndarray], fused: dict[str, np.ndarray]) -> None:
    assert unfused.keys() == fused.keys()
    for name, a in unfused.items():
        b = fused[name]
        assert a.dtype == b.dtype and a.shape == b.shape, name
        if a.dtype.kind in "fc":
            np.testing.assert_array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))
        else:
            np.testing.assert_array_equal(a, b)


def _differential(text: str, before: str) -> None:
    try:
        unfused = _run(text, before)
    except Exception:  # noqa: BLE001 - the unfused program must run (partitioning's business)
        assume(False)
        return
    _same(unfused, _run(text, f"{before},fusion" if before else "fusion"))


@SETTINGS
@given(hlo_programs(max_ops=15))
def test_fused_equals_unfused_at_level_g(text: str) -> None:
    _differential(text, "")


@SETTINGS
@given(hlo_programs(max_ops=15))
def test_fused_equals_unfused_after_partitioning(text: str) -> None:
    _differential(text, "spmd-propagate,spmd-partition")


def test_the_pass_fuses_something_in_generated_programs() -> None:
    """The differential tests above are not vacuous: fusion happens in such programs."""
    from shardc.tests.unit.strategies import RandomChooser, build_hlo_program

    fused = 0
    for seed in range(30):
        text = build_hlo_program(RandomChooser(seed), max_ops=15)
        fused += str(shardc.compile(text, "fusion")).count("hlo.fusion(")
    assert fused >= 10


@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in EXAMPLES.glob("*.mlir") if "partitioned" not in p.read_text()),
)
def test_examples_through_spmd_pipeline_with_fusion_are_bit_exact(name: str) -> None:
    text = (EXAMPLES / name).read_text()
    fused = shardc.compile(text, "spmd-pipeline")
    _same(_run(text, "spmd-pipeline{fusion=false}"), shardc.run(fused, seed=3).outputs)


def _layer_times(options: str) -> tuple[float, float, float]:
    """(unfused compute, its matmuls' time, fused compute) of the real-size layer."""
    text = (EXAMPLES / "real_size" / "transformer_layer.mlir").read_text()
    runs = []
    for fusion in ("false", "true"):
        module = shardc.compile(text, f"spmd-pipeline{{fusion={fusion}{options}}}")
        runs.append(shardc.run(module, timing_only=True))
    slow = runs[0].report["slowest_device"]
    matmuls = sum(
        s.end - s.start
        for s in runs[0].timeline.slices()
        if s.device == slow and s.stream == "compute" and s.op.name == "hlo.dot"
    )
    return runs[0].report["compute_time_s"], matmuls, runs[1].report["compute_time_s"]


@pytest.mark.parametrize(("options", "bound"), [(" micro-batch=false", 1.26), ("", 1.27)])
def test_real_size_layer_compute_is_close_to_its_matmuls(options: str, bound: float) -> None:
    """
    Issue 14's target is 1.3x; the model gets 1.24x with and without micro-batch
    (bench/fusion.py, RESULTS.md: micro-batch's slices are read in place by the fusions
    that use them and its concatenate is a loop fusion with the residual adds; what is
    left is the softmax's and layer norms' reductions and the first layer norm's
    normalization). This pins what is reached, and that fusion cuts the unfused 27 ms by
    more than 3x. With micro-batch 1.264x since level S charges bf16 ops their widening
    and rounding (hardware/cost.py `compute_widen_ops`, as the lowering runs them).
    """
    unfused, matmuls, fused = _layer_times(options)
    assert fused < unfused / 3
    assert fused <= bound * matmuls, (fused, matmuls)


FUSED = """
func.func @main(%x: tensor<512x1024xbf16>, %w: tensor<1024x2048xbf16>, %b: tensor<2048xf32>) -> tensor<512x2048xf32> {
  %d = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<512x1024xbf16>, tensor<1024x2048xbf16>) -> tensor<512x2048xbf16>
  %c = hlo.convert %d : (tensor<512x2048xbf16>) -> tensor<512x2048xf32>
  %bb = hlo.broadcast %b, dims = [1] : (tensor<2048xf32>) -> tensor<512x2048xf32>
  %y = hlo.add %c, %bb : tensor<512x2048xf32>
  %t = hlo.tanh %y : tensor<512x2048xf32>
  func.return %t : tensor<512x2048xf32>
}
"""


def test_fusion_cost_is_mxu_plus_vpu_time_against_boundary_bytes() -> None:
    from shardc.dialects import hlo
    from shardc.hardware.chips import CHIPS
    from shardc.hardware.cost import CostModel

    chip = CHIPS["v5e"]
    module = shardc.compile(FUSED, "fusion")
    (fusion,) = [op for op in module.walk() if isinstance(op, hlo.FusionOp)]
    assert (fusion.kind.data, fusion.label) == ("output", "dot_tanh_fusion")
    cost = CostModel(chip).op_cost(fusion)
    mxu = 2.0 * 512 * 1024 * 2048
    vpu = 2 * 512 * 2048  # the add and the tanh; convert and broadcast move data only
    boundary = 512 * 1024 * 2 + 1024 * 2048 * 2 + 2048 * 4 + 512 * 2048 * 4
    assert cost.bytes == boundary
    assert cost.flops == mxu + vpu
    roofline = max(mxu / chip.flops_bf16 + vpu / chip.vpu_flops, boundary / chip.hbm_bw)
    # charged as its one tiled loop (hardware/kernel.py): the roofline plus the first
    # blocks' fetch, the last write-back and the VMEM loads and stores
    assert roofline < cost.time < 1.5 * roofline  # 1.38: few, large blocks


def test_trace_names_the_fusion() -> None:
    result = shardc.run(shardc.compile(FUSED, "fusion"), timing_only=True)
    names = [e["name"] for e in result.timeline.trace()["traceEvents"] if e.get("ph") == "X"]
    assert names == ["dot_tanh_fusion"]


SLICED = """
func.func @main(%x: tensor<4x256x512xbf16>, %y: tensor<4x256x512xbf16>) -> (tensor<1x256xf32>, tensor<4x256x512xbf16>, tensor<1x256xbf16>) {
  %x0 = hlo.slice %x [0:1, 0:256, 0:512] : (tensor<4x256x512xbf16>) -> tensor<1x256x512xbf16>
  %x1 = hlo.slice %x [1:2, 0:256, 0:512] : (tensor<4x256x512xbf16>) -> tensor<1x256x512xbf16>
  %x0f = hlo.convert %x0 : (tensor<1x256x512xbf16>) -> tensor<1x256x512xf32>
  %r = hlo.reduce add %x0f, dims = [2] : (tensor<1x256x512xf32>) -> tensor<1x256xf32>
  %e = hlo.exp %y : tensor<4x256x512xbf16>
  %a = hlo.add %x0, %x1 : tensor<1x256x512xbf16>
  %r2 = hlo.reduce add %a, dims = [2] : (tensor<1x256x512xbf16>) -> tensor<1x256xbf16>
  func.return %r, %e, %r2 : tensor<1x256xf32>, tensor<4x256x512xbf16>, tensor<1x256xbf16>
}
"""


def test_a_fusion_reading_an_operand_through_slices_is_charged_the_slices() -> None:
    """Micro-batch's chunks: the slices fused into their readers, each fusion charged for
    the part of %x it reads (one or two of its four chunks), not all of it; the cached
    model (keyed by inner ops) agrees with the plain one."""
    from shardc.dialects import hlo
    from shardc.hardware.chips import CHIPS
    from shardc.hardware.cost import CostModel, cached

    module = shardc.compile(SLICED, "fusion")
    ops = list(module.walk())
    assert not any(
        isinstance(op, hlo.SliceOp)
        and op.parent_op() is not None
        and not isinstance(op.parent_op(), hlo.FusionOp)
        for op in ops
    )
    fusions = {op.label: op for op in ops if isinstance(op, hlo.FusionOp)}
    chunk = 256 * 512 * 2
    model, memo = CostModel(CHIPS["v5e"]), cached(CostModel(CHIPS["v5e"]))
    expected = {"reduce_fusion": chunk + 256 * 4, "reduce_fusion.1": 2 * chunk + 256 * 2}
    for name, nbytes in expected.items():
        assert model.op_cost(fusions[name]).bytes == nbytes, name
        assert memo.op_cost(fusions[name]).bytes == nbytes, name


@st.composite
def dot_consumer_programs(draw: st.DrawFn) -> str:
    """A dot whose result is returned and read by 1-3 elementwise chains (multi-output
    fusion's case: the chains become outputs of the dot's kernel), random sizes and
    dtypes."""
    dtype = draw(st.sampled_from(["bf16", "f32"]))
    m, k, n = (draw(st.sampled_from([8, 64, 256])) for _ in range(3))
    ty = f"tensor<{m}x{n}x{dtype}>"
    lines = [
        f"  %y = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<{m}x{k}x{dtype}>, "
        f"tensor<{k}x{n}x{dtype}>) -> {ty}"
    ]
    outs = ["%y"]
    for i in range(draw(st.integers(1, 3))):
        prev = "%y"
        for j, unary in enumerate(
            draw(st.lists(st.sampled_from(["neg", "tanh", "exp", "abs"]), min_size=1, max_size=3))
        ):
            lines.append(f"  %c{i}_{j} = hlo.{unary} {prev} : {ty}")
            prev = f"%c{i}_{j}"
        if draw(st.booleans()):
            lines.append(f"  %s{i} = hlo.add {prev}, %y : {ty}")
            prev = f"%s{i}"
        outs.append(prev)
    types = ", ".join([ty] * len(outs))
    return (
        f"func.func @main(%x: tensor<{m}x{k}x{dtype}>, %w: tensor<{k}x{n}x{dtype}>) -> ({types}) {{\n"
        + "\n".join(lines)
        + f"\n  func.return {', '.join(outs)} : {types}\n}}\n"
    )


@SETTINGS
@given(dot_consumer_programs())
def test_multi_output_fusions_are_bit_exact(text: str) -> None:
    from shardc.dialects import hlo

    fused = shardc.compile(text, "fusion")
    assert any(isinstance(op, hlo.FusionOp) and len(op.results) > 1 for op in fused.walk())
    _same(_run(text, ""), shardc.run(fused, seed=3).outputs)
