"""
hlo.convolution: level-G semantics against a direct loop written from StableHLO's spec
(every output element a sum over its window, in float64 or Python integers, independent of
the interpreter's im2col), on hypothesis-generated layouts (any dimension numbers),
1D/2D/3D windows, strides, padding (negative too), lhs/rhs dilation, window reversal,
feature groups (depthwise) and batch groups; NCHW and NHWC give the same numbers; the
verifier's inferred shapes and messages, the cost model and `lower-to-tpu` lowering it.
"""

from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from shardc.diagnostics import DiagnosticError
from shardc.dialects import make_context
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel, mxu_rate
from shardc.interpreter.testing import parse, run_global
from shardc.lowering.lower_to_tpu import LowerToTpuPass

DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "i32": np.int32, "f64": np.float64}


def ty(shape, dtype: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>"


def labels(dims, letters: str) -> str:
    out = [""] * len(dims)
    for d, name in zip(dims, [*letters, *map(str, range(len(dims) - 2))], strict=True):
        out[d] = name
    return "[" + ", ".join(out) + "]"


def spatial_out(size, kernel, stride, lo, hi, ld, rd) -> int:
    padded = lo + (size - 1) * ld + 1 + hi
    window = (kernel - 1) * rd + 1
    return 0 if padded < window else (padded - window) // stride + 1


def reference(lhs, rhs, case) -> np.ndarray:
    """The spec's convolution, one output element at a time (float64 / Python ints)."""
    ld, rd, od = case["dims"]
    n = len(ld) - 2
    fgc, bgc = case["fgc"], case["bgc"]
    big = lhs.dtype.kind == "i"
    x = lhs.astype(object if big else np.float64)
    w = rhs.astype(object if big else np.float64)
    batch = lhs.shape[ld[0]]
    in_feats, out_feats = rhs.shape[rd[0]], rhs.shape[rd[1]]
    kernel = [rhs.shape[rd[2 + i]] for i in range(n)]
    sizes = [lhs.shape[ld[2 + i]] for i in range(n)]
    outs = [
        spatial_out(
            sizes[i], kernel[i], case["stride"][i], *case["pad"][i], case["ld"][i], case["rd"][i]
        )
        for i in range(n)
    ]
    per_group = out_feats // (fgc * bgc)
    result = np.zeros([batch // bgc, out_feats, *outs], dtype=object)
    for b, o, *ys in itertools.product(range(batch // bgc), range(out_feats), *map(range, outs)):
        g = o // per_group
        xb = g * (batch // bgc) + b if bgc > 1 else b
        total = 0
        for ci, ks in itertools.product(range(in_feats), itertools.product(*map(range, kernel))):
            c = g * in_feats + ci if fgc > 1 else ci
            x_index = [0] * (n + 2)
            x_index[ld[0]], x_index[ld[1]] = xb, c
            inside = True
            for i in range(n):
                pos = ys[i] * case["stride"][i] + ks[i] * case["rd"][i] - case["pad"][i][0]
                if pos < 0 or pos > (sizes[i] - 1) * case["ld"][i] or pos % case["ld"][i]:
                    inside = False
                    break
                x_index[ld[2 + i]] = pos // case["ld"][i]
            if not inside:
                continue
            w_index = [0] * (n + 2)
            w_index[rd[0]], w_index[rd[1]] = ci, o
            for i in range(n):
                k = kernel[i] - 1 - ks[i] if case["reverse"][i] else ks[i]
                w_index[rd[2 + i]] = k
            total = total + x[tuple(x_index)] * w[tuple(w_index)]
        result[(b, o, *ys)] = total
    result = result.transpose(np.argsort(od))
    if big:
        return ((result.astype(object) + 2**31) % 2**32 - 2**31).astype(np.int32)
    return result.astype(np.float64)


@st.composite
def conv_cases(draw: st.DrawFn, max_spatial: int = 3):
    n = draw(st.integers(1, max_spatial))
    perm = lambda: draw(st.permutations(range(n + 2)))  # noqa: E731
    groups = draw(st.integers(1, 3))
    kind = draw(st.sampled_from(["none", "feature", "batch"]))
    fgc, bgc = (groups, 1) if kind == "feature" else (1, groups) if kind == "batch" else (1, 1)
    small = 4 if n < 3 else 3
    case = {
        "dims": (perm(), perm(), perm()),
        "fgc": fgc,
        "bgc": bgc,
        "stride": [draw(st.integers(1, 3)) for _ in range(n)],
        "pad": [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2))) for _ in range(n)],
        "ld": [draw(st.integers(1, 2)) for _ in range(n)],
        "rd": [draw(st.integers(1, 2)) for _ in range(n)],
        "reverse": [draw(st.booleans()) for _ in range(n)],
        "batch": bgc * draw(st.integers(1, 2)),
        "in_feats": draw(st.integers(1, 2)),
        "out_feats": fgc * bgc * draw(st.integers(1, 2)),
        "sizes": [draw(st.integers(1, small + 1)) for _ in range(n)],
        "kernel": [draw(st.integers(1, 3)) for _ in range(n)],
    }
    return case


def shapes(case):
    ld, rd, od = case["dims"]
    n = len(ld) - 2
    lhs, rhs, out = [0] * (n + 2), [0] * (n + 2), [0] * (n + 2)
    lhs[ld[0]], lhs[ld[1]] = case["batch"], case["in_feats"] * case["fgc"]
    rhs[rd[0]], rhs[rd[1]] = case["in_feats"], case["out_feats"]
    out[od[0]], out[od[1]] = case["batch"] // case["bgc"], case["out_feats"]
    for i in range(n):
        lhs[ld[2 + i]], rhs[rd[2 + i]] = case["sizes"][i], case["kernel"][i]
        out[od[2 + i]] = spatial_out(
            case["sizes"][i],
            case["kernel"][i],
            case["stride"][i],
            *case["pad"][i],
            case["ld"][i],
            case["rd"][i],
        )
    return lhs, rhs, out


def conv_text(case, dtype: str, out_dtype: str | None = None) -> str:
    lhs, rhs, out = shapes(case)
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
    groups = f", feature_group_count = {case['fgc']}, batch_group_count = {case['bgc']}"
    result = ty(out, out_dtype or dtype)
    return f"""func.func @main(%x: {ty(lhs, dtype)}, %w: {ty(rhs, dtype)}) -> {result} {{
  %r = hlo.convolution(%x, %w) dim_numbers = {labels(ld, "bf")}x{labels(rd, "io")}->{labels(od, "bf")}, window = {{{window}}}{groups} : ({ty(lhs, dtype)}, {ty(rhs, dtype)}) -> {result}
  func.return %r : {result}
}}"""


def draw_values(rng, shape, dtype: str) -> np.ndarray:
    if dtype == "i32":
        return rng.integers(-(2**20), 2**20, shape).astype(np.int32)
    return rng.standard_normal(shape).astype(DTYPES[dtype])


@settings(max_examples=120, deadline=None)
@given(conv_cases(), st.sampled_from(["f32", "bf16", "i32", "f64"]), st.integers(0, 2**32 - 1))
def test_convolution_matches_the_spec_loop(case, dtype: str, seed: int) -> None:
    lhs_shape, rhs_shape, out_shape = shapes(case)
    assume(all(s > 0 for s in out_shape))
    rng = np.random.default_rng(seed)
    x, w = draw_values(rng, lhs_shape, dtype), draw_values(rng, rhs_shape, dtype)
    got = run_global(conv_text(case, dtype), {"in_0": x, "in_1": w})["out_0"]
    want = reference(x, w, case)
    assert got.dtype == DTYPES[dtype] and got.shape == tuple(out_shape)
    if dtype == "i32":  # wraps like StableHLO's integer arithmetic
        np.testing.assert_array_equal(got, want)
    elif dtype == "bf16":  # f32 accumulation, one rounding to bf16
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=2**-7, atol=1e-5)
    else:
        tol = 1e-5 if dtype == "f32" else 1e-12
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


def test_nchw_and_nhwc_agree_and_depthwise_stays_per_channel() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 7, 6, 4)).astype(np.float32)  # NHWC
    w = rng.standard_normal((3, 3, 1, 8)).astype(np.float32)  # HWIO, 4 groups x 2
    window = "window = {stride = [2, 1], pad = [[1, 1], [0, -1]], rhs_dilate = [1, 2]}"
    nhwc = f"""func.func @main(%x: tensor<2x7x6x4xf32>, %w: tensor<3x3x1x8xf32>) -> tensor<2x4x1x8xf32> {{
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], {window}, feature_group_count = 4 : (tensor<2x7x6x4xf32>, tensor<3x3x1x8xf32>) -> tensor<2x4x1x8xf32>
  func.return %r : tensor<2x4x1x8xf32>
}}"""
    nchw = f"""func.func @main(%x: tensor<2x4x7x6xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<2x8x4x1xf32> {{
  %r = hlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], {window}, feature_group_count = 4 : (tensor<2x4x7x6xf32>, tensor<8x1x3x3xf32>) -> tensor<2x8x4x1xf32>
  func.return %r : tensor<2x8x4x1xf32>
}}"""
    a = run_global(nhwc, {"in_0": x, "in_1": w})["out_0"]
    b = run_global(nchw, {"in_0": x.transpose(0, 3, 1, 2), "in_1": w.transpose(3, 2, 0, 1)})[
        "out_0"
    ]
    np.testing.assert_allclose(a, b.transpose(0, 2, 3, 1), rtol=1e-6)
    # output channels 0, 1 see only input channel 0 (depthwise, multiplier 2)
    x2 = x.copy()
    x2[..., 1:] = 0
    c = run_global(nhwc, {"in_0": x2, "in_1": w})["out_0"]
    np.testing.assert_allclose(c[..., :2], a[..., :2] * 0 + c[..., :2])
    assert not c[..., 2:].any()


INVALID = [
    (
        "[b, 0, f]x[0, i, o]->[b, 0, f]",
        "tensor<1x5x3xf32>",
        "tensor<3x2x4xf32>",
        "tensor<1x3x4xf32>",
        "",
        "lhs feature dimension (3) must be rhs input feature dimension (2) times feature_group_count (1)",
    ),
    (
        "[b, 0, f]x[0, i, o]->[b, 0, f]",
        "tensor<1x5x2xf32>",
        "tensor<3x2x4xf32>",
        "tensor<1x4x4xf32>",
        "",
        "result shape must be [1, 3, 4], got [1, 4, 4]",
    ),
    (
        "[b, 0, f]x[0, i, o]->[b, 0, f]",
        "tensor<3x5x2xf32>",
        "tensor<3x2x4xf32>",
        "tensor<1x3x4xf32>",
        ", batch_group_count = 2",
        "lhs batch dimension (3) must be divisible by batch_group_count (2)",
    ),
    (
        "[b, 0, f]x[0, i, o]->[b, 0, f]",
        "tensor<1x5x4xf32>",
        "tensor<3x2x3xf32>",
        "tensor<1x3x3xf32>",
        ", feature_group_count = 2",
        "rhs output feature dimension (3) must be divisible",
    ),
    (
        "[b, 0, f]x[0, i, o]->[b, 0, f]",
        "tensor<1x5x2xf32>",
        "tensor<3x2x4xf32>",
        "tensor<1x3x4xf32>",
        ", window = {stride = [0]}",
        "window strides [0] must be 1 positive numbers",
    ),
    (
        "[b, 0, f]x[0, i, o]->[b, 0, f]",
        "tensor<1x5x2xi1>",
        "tensor<3x2x4xi1>",
        "tensor<1x3x4xi1>",
        "",
        "does not accept element type i1",
    ),
    (
        "[b, 0, f]x[0, i, o]->[b, 0, f]",
        "tensor<1x5x2xf32>",
        "tensor<3x2x4xbf16>",
        "tensor<1x3x4xf32>",
        "",
        "operands must share an element type",
    ),
]


@pytest.mark.parametrize("dims, lhs, rhs, out, extra, message", INVALID)
def test_verifier_says_what_is_wrong(dims, lhs, rhs, out, extra, message) -> None:
    text = f"""func.func @main(%x: {lhs}, %w: {rhs}) -> {out} {{
  %r = hlo.convolution(%x, %w) dim_numbers = {dims}{extra} : ({lhs}, {rhs}) -> {out}
  func.return %r : {out}
}}"""
    with pytest.raises(DiagnosticError) as info:
        parse(text)
    assert message in str(info.value)


def test_malformed_dimension_labels_are_refused_at_parse() -> None:
    text = """func.func @main(%x: tensor<1x5x2xf32>, %w: tensor<3x2x4xf32>) -> tensor<1x3x4xf32> {
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, 0]x[0, i, o]->[b, 0, f] : (tensor<1x5x2xf32>, tensor<3x2x4xf32>) -> tensor<1x3x4xf32>
  func.return %r : tensor<1x3x4xf32>
}"""
    with pytest.raises(DiagnosticError) as info:
        parse(text)
    assert "must be b, f and the spatial dimensions 0..0, each once" in str(info.value)


PROGRAM = """spmd.mesh @mesh = <["x"=2]>
func.func @main(%x: tensor<8x32x32x16xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}, {}, {}]>}, %w: tensor<3x3x8x64xbf16>)
    -> (tensor<8x16x16x64xbf16> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}, {}, {}]>}) {
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]]}, feature_group_count = 2 : (tensor<8x32x32x16xbf16>, tensor<3x3x8x64xbf16>) -> tensor<8x16x16x64xbf16>
  func.return %r : tensor<8x16x16x64xbf16>
}"""


def test_cost_model_counts_macs_on_the_mxu() -> None:
    module = parse(PROGRAM)
    model = CostModel(get_chip("v5e"))
    (op,) = [o for o in module.walk() if o.name == "hlo.convolution"]
    cost = model.op_cost(op)
    assert cost.flops == 2 * (8 * 16 * 16 * 64) * (16 // 2) * 9
    assert cost.bytes == (8 * 32 * 32 * 16 + 3 * 3 * 8 * 64 + 8 * 16 * 16 * 64) * 2
    rate = mxu_rate(model.chip, op.lhs.type.element_type)
    assert math.isclose(cost.time, max(cost.flops / rate, cost.bytes / model.chip.hbm_bw))


def test_lower_to_tpu_lowers_it_on_the_mxu() -> None:
    """Issue 15 item 3 (tests/unit/test_lower_convolution.py checks the values): dots
    over the kernel's taps, each kernel op at the convolution's location."""
    from shardc.passes.spmd_pipeline import SpmdPipelinePass

    module = parse(PROGRAM, "conv.mlir")
    ctx = make_context()
    SpmdPipelinePass().apply(ctx, module)
    LowerToTpuPass(chip="v5e").apply(ctx, module)
    matmuls = [o for o in module.walk() if o.name == "tpu.matmul"]
    assert matmuls and all("conv.mlir" in str(o.location) for o in matmuls)
