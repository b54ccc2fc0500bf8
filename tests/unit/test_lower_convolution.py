"""
`lower-to-tpu` of `hlo.convolution` (lowering/convolution.py: dots over the kernel's
taps) against level S on every device, on hypothesis-drawn 1-D and 2-D convolutions
(dimension orders, strides, padding (negative too), lhs and rhs dilation, window
reversal, feature and batch groups, element types): integers bit-exact, floats to the
rounding of another summation order (a few ulps of the largest value); every dot on the
MXU (`tpu.matmul`); a conv layer partitioned and lowered with `tpu-pipeline`.
"""

from __future__ import annotations

import numpy as np
import pytest
import shardc
from hypothesis import given, reject
from hypothesis import strategies as st
from shardc.diagnostics import OpPassError
from shardc.dialects import hlo, make_context
from shardc.interpreter.level_t import run_level_t
from shardc.interpreter.testing import parse, run_per_device
from shardc.lowering.lower_to_tpu import LowerToTpuPass
from shardc.parsing import parse_module
from shardc.tests.unit.test_lower_movement import DEVICES, SETTINGS, program, randoms, tensor

ULPS = {"f32": 2e-6, "bf16": 1e-2, "f16": 2e-3}


def conv_program(lhs, rhs, dtype, dims, window, fg, bg) -> str:
    """A per-device program of one convolution; its result shape as level G infers it."""
    head = (
        f"hlo.convolution(%a0, %a1) dim_numbers = {dims}, window = {window}, "
        f"feature_group_count = {fg}, batch_group_count = {bg} : "
        f"({tensor(lhs, dtype)}, {tensor(rhs, dtype)})"
    )
    probe = parse_module(
        make_context(),
        f"func.func @f(%a0: {tensor(lhs, dtype)}, %a1: {tensor(rhs, dtype)}) {{\n"
        f"  %r = {head} -> tensor<{'1x' * len(lhs)}{dtype}>\n  func.return\n}}",
        "probe",
    )
    (op,) = [o for o in probe.walk() if isinstance(o, hlo.ConvolutionOp)]
    out = tensor(hlo.convolution_result_shape(op), dtype)
    return program([tensor(lhs, dtype), tensor(rhs, dtype)], [out], f"%r0 = {head} -> {out}")


@st.composite
def convolutions(draw):
    n = draw(st.integers(1, 2))
    groups = draw(st.sampled_from([1, 1, 2]))
    batch_groups = draw(st.sampled_from([1, 1, 2])) if groups == 1 else 1
    g = groups * batch_groups
    batch = batch_groups * draw(st.integers(1, 2))
    cin = groups * draw(st.integers(1, 3))
    cout = g * draw(st.integers(1, 3))
    spatial = [draw(st.integers(3, 7)) for _ in range(n)]
    kernel = [draw(st.integers(1, 3)) for _ in range(n)]
    strides = [draw(st.integers(1, 2)) for _ in range(n)]
    lhs_dil = [draw(st.integers(1, 2)) for _ in range(n)]
    rhs_dil = [draw(st.integers(1, 2)) for _ in range(n)]
    pads = [[draw(st.integers(-1, 2)), draw(st.integers(-1, 2))] for _ in range(n)]
    rev = [draw(st.booleans()) for _ in range(n)]
    sp = "".join(str(i) for i in range(n))
    lhs_order = draw(st.permutations(["b", "f", *sp]))
    rhs_order = draw(st.permutations(["i", "o", *sp]))
    out_order = draw(st.permutations(["b", "f", *sp]))
    sizes_l = {"b": batch, "f": cin, **{str(i): s for i, s in enumerate(spatial)}}
    sizes_r = {"i": cin // groups, "o": cout, **{str(i): k for i, k in enumerate(kernel)}}
    lhs = [sizes_l[c] for c in lhs_order]
    rhs = [sizes_r[c] for c in rhs_order]
    dims = f"[{', '.join(lhs_order)}]x[{', '.join(rhs_order)}]->[{', '.join(out_order)}]"
    window = (
        f"{{stride = {strides}, pad = {pads}, lhs_dilate = {lhs_dil}, rhs_dilate = {rhs_dil}, "
        f"reverse = [{', '.join('true' if r else 'false' for r in rev)}]}}"
    )
    dtype = draw(st.sampled_from(["f32", "i32", "bf16"]))
    return lhs, rhs, dtype, dims, window, groups, batch_groups


def run_both(text: str, inputs) -> tuple[list, list, str]:
    want = run_per_device(text, inputs)
    module = parse(text)
    LowerToTpuPass().apply(make_context(), module)
    module.verify()
    (kernel,) = [o for o in module.body.block.ops if o.name == "func.func"]
    k, m, s = (a.value.data for a in kernel.attributes["tpu.io"].data)  # pyright: ignore
    outs, _ = run_level_t(module, [list(row) + [None] * (m + s) for row in inputs])
    return [o[k] for o in outs], [np.asarray(w[0]) for w in want], str(module)


@SETTINGS
@given(convolutions())
def test_convolution_equals_level_s(case) -> None:
    lhs, rhs, dtype = case[:3]
    try:
        text = conv_program(*case)
    except Exception:  # an empty result or a window larger than the input: not a program
        reject()
    inputs = [[a, w] for a, w in zip(randoms(lhs, dtype, 1), randoms(rhs, dtype, 2), strict=True)]
    got, want, kernel = run_both(text, inputs)
    if 0 not in want[0].shape:
        assert "tpu.matmul" in kernel
    for d in range(DEVICES):
        assert got[d].shape == want[d].shape and got[d].dtype == want[d].dtype
        if dtype == "i32":
            np.testing.assert_array_equal(got[d], want[d])
        else:
            g, w = got[d].astype(np.float64), want[d].astype(np.float64)
            scale = max(float(np.max(np.abs(w), initial=0.0)), 1.0)
            assert float(np.max(np.abs(g - w), initial=0.0)) <= ULPS[dtype] * scale * 4


CONV_LAYER = """spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @main(%x: tensor<8x16x16x128xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}, {}, {}]>}, %w: tensor<3x3x128x256xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {}, {"model"}]>}) -> (tensor<8x16x16x256xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}, {}, {"model"}]>}) {
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} : (tensor<8x16x16x128xbf16>, tensor<3x3x128x256xbf16>) -> tensor<8x16x16x256xbf16>
  %z = hlo.constant dense<0.0> : tensor<8x16x16x256xbf16>
  %y = hlo.max %r, %z : tensor<8x16x16x256xbf16>
  func.return %y : tensor<8x16x16x256xbf16>
}"""


def test_a_conv_layer_through_tpu_pipeline() -> None:
    """A 3x3 conv + relu, batch over "data" and output features over "model": lowered
    with tpu-pipeline, level T's values are level S's (bf16: to its rounding)."""
    level_s = shardc.compile(CONV_LAYER, "spmd-pipeline")
    want = shardc.run(level_s)
    kernel = shardc.compile(CONV_LAYER, "tpu-pipeline")
    assert str(kernel).count("tpu.matmul") >= 9
    got = shardc.run(kernel)
    assert got.report["level"] == "T"
    for name, ref in want.outputs.items():
        g, w = got.outputs[name].astype(np.float64), ref.astype(np.float64)
        assert float(np.max(np.abs(g - w))) <= 1e-2 * max(float(np.max(np.abs(w))), 1.0)


def test_a_convolution_too_large_for_vmem_names_op_blocks_and_capacity() -> None:
    """A 1-D convolution whose tap dots' smallest blocks exceed a tiny VMEM: refused at
    the convolution, naming it, the dot's blocks, the bytes and the capacity."""
    text = conv_program(
        [8, 16, 256], [3, 256, 256], "f32", "[b, 0, f]x[0, i, o]->[b, 0, f]", "{}", 1, 1
    )
    with pytest.raises(OpPassError) as info:
        LowerToTpuPass(vmem_limit=100_000).apply(make_context(), parse(text))
    message = str(info.value)
    assert info.value.op.name == "hlo.convolution"
    assert message.startswith(
        "lower-to-tpu: hlo.convolution (as dots over its kernel taps): hlo.dot"
    )
    assert "smallest blocks (result" in message and "100000 bytes available on v5e" in message


@st.composite
def channels_last(draw):
    """Convolutions the one-kernel lowering takes (lowering/conv_kernel.py): NHWC / HWIO
    (or 1-D), odd sizes, halos at both edges (padding up to the kernel's reach), strides
    up to 3 (the width stride as a reshape of the VMEM slot), rhs dilation, reversal."""
    n = draw(st.integers(1, 2))
    batch, cin, cout = draw(st.integers(1, 3)), draw(st.integers(1, 5)), draw(st.integers(1, 5))
    spatial = [draw(st.integers(1, 9)) for _ in range(n)]
    kernel = [draw(st.integers(1, 3)) for _ in range(n)]
    strides = [draw(st.integers(1, 3)) for _ in range(n)]
    rhs_dil = [draw(st.integers(1, 2)) for _ in range(n)]
    pads = [[draw(st.integers(0, 2)), draw(st.integers(0, 2))] for _ in range(n)]
    rev = [draw(st.booleans()) for _ in range(n)]
    sp = ", ".join(str(i) for i in range(n))
    dims = f"[b, {sp}, f]x[{sp}, i, o]->[b, {sp}, f]"
    window = (
        f"{{stride = {strides}, pad = {pads}, rhs_dilate = {rhs_dil}, "
        f"reverse = [{', '.join('true' if r else 'false' for r in rev)}]}}"
    )
    dtype = draw(st.sampled_from(["f32", "i32", "bf16"]))
    return [batch, *spatial, cin], [*kernel, cin, cout], dtype, dims, window, 1, 1


@SETTINGS
@given(channels_last())
def test_channels_last_convolution_is_one_kernel_equal_to_level_s(case) -> None:
    """The lhs read once per image into a zero-framed VMEM slot, each tap a shifted load
    into the MXU: level S's values (integers bit-exact, floats to the summation order),
    no race or bounds error (the simulator checks both), no dot through HBM."""
    lhs, rhs, dtype = case[:3]
    try:
        text = conv_program(*case)
    except Exception:  # a window larger than the padded input: not a program
        reject()
    inputs = [[a, w] for a, w in zip(randoms(lhs, dtype, 3), randoms(rhs, dtype, 4), strict=True)]
    got, want, kernel = run_both(text, inputs)
    if 0 in want[0].shape:
        reject()  # an empty result: nothing to compute
    assert "%halo_xv = tpu.alloc" in kernel and "tpu.matmul" in kernel
    assert "hlo.dot" not in kernel and "_slice_block" not in kernel
    assert kernel.count("tpu.dma_start %x") == 0  # the lhs moves only by `halo_img` blocks
    for d in range(DEVICES):
        assert got[d].shape == want[d].shape and got[d].dtype == want[d].dtype
        if dtype == "i32":
            np.testing.assert_array_equal(got[d], want[d])
        else:
            g, w = got[d].astype(np.float64), want[d].astype(np.float64)
            scale = max(float(np.max(np.abs(w), initial=0.0)), 1.0)
            assert float(np.max(np.abs(g - w), initial=0.0)) <= ULPS[dtype] * scale * 4


def test_a_real_resnet_convolution_lowers_to_one_kernel_at_level_s_speed() -> None:
    """8x56x56x256 * 3x3x256x256 bf16 (a ResNet stage-2 layer), timing only: one kernel
    whose simulated step is within 1.3x of level S's (the dots-over-taps rewrite was
    37x on the 64-feature layer: every tap's window through HBM)."""
    x, w = "tensor<8x56x56x256xbf16>", "tensor<3x3x256x256xbf16>"
    text = program(
        [x, w],
        [x],
        f"%r0 = hlo.convolution(%a0, %a1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->"
        f"[b, 0, 1, f], window = {{pad = [[1, 1], [1, 1]]}} : ({x}, {w}) -> {x}",
    )
    s = shardc.run(text, timing_only=True).report["step_time_s"]
    kernel = shardc.compile(text, "lower-to-tpu")
    assert "halo_xv" in str(kernel) and "hlo.dot" not in str(kernel)
    t = shardc.run(kernel, timing_only=True).report["step_time_s"]
    assert t <= 1.3 * s, (t, s)
