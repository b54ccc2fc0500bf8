"""
`stablehlo.convolution` (pretty form as JAX prints it, generic form with
`#stablehlo.conv<...>` in both its label and `raw` forms, a padding tensor, i1 window
reversal) and XLA's `convolution` instruction (`window={size stride pad rhs_reversal}`,
`dim_labels=`, `feature_group_count=`, `batch_group_count=`) import as `hlo.convolution`;
the imported programs run and match the spec loop of tests/unit/test_convolution.py.
Malformed dimension labels are a located import error.
"""

from __future__ import annotations

import numpy as np
import pytest
from shardc.diagnostics import DiagnosticError
from shardc.frontends.hlo_text import import_hlo_text
from shardc.frontends.stablehlo import import_stablehlo
from shardc.frontends.support import hlo_text_support, stablehlo_support
from shardc.interpreter.testing import run_global, run_per_device
from shardc.tests.unit.test_convolution import reference

STABLEHLO = """module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x8x8x4xf32>, %arg1: tensor<3x3x4x6xf32>, %arg2: tensor<2x4x9xf32>, %arg3: tensor<8x1x3xf32>, %arg4: tensor<4x5x2xf32>, %arg5: tensor<2x3x4xf32>) -> (tensor<2x4x4x6xf32>, tensor<2x8x7xf32>, tensor<2x8x4xf32>, tensor<2x3x4xf32>) {
    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x8x8x4xf32>, tensor<3x3x4x6xf32>) -> tensor<2x4x4x6xf32>
    %1 = "stablehlo.convolution"(%arg2, %arg3) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, f, 0]x[o, i, 0]->[b, f, 0]>, feature_group_count = 4 : i64, lhs_dilation = array<i64: 1>, padding = dense<[[1, -1]]> : tensor<1x2xi64>, rhs_dilation = array<i64: 1>, window_reversal = array<i1: true>, window_strides = array<i64: 1>}> : (tensor<2x4x9xf32>, tensor<8x1x3xf32>) -> tensor<2x8x7xf32>
    %2 = "stablehlo.convolution"(%arg2, %arg3) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<raw input_batch_dimension = 0, input_feature_dimension = 1, input_spatial_dimensions = [2], kernel_input_feature_dimension = 1, kernel_output_feature_dimension = 0, kernel_spatial_dimensions = [2], output_batch_dimension = 0, output_feature_dimension = 1, output_spatial_dimensions = [2]>, feature_group_count = 4 : i64, window_strides = array<i64: 2>}> : (tensor<2x4x9xf32>, tensor<8x1x3xf32>) -> tensor<2x8x4xf32>
    %3 = stablehlo.convolution(%arg4, %arg5) dim_numbers = [b, 0, f]x[i, 0, o]->[b, 0, f], window = {rhs_dilate = [1]} {batch_group_count = 2 : i64, feature_group_count = 1 : i64} : (tensor<4x5x2xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    return %0, %1, %2, %3 : tensor<2x4x4x6xf32>, tensor<2x8x7xf32>, tensor<2x8x4xf32>, tensor<2x3x4xf32>
  }
}
"""


def case(dims, n, stride=None, pad=None, reverse=None, fgc=1, bgc=1):
    return {
        "dims": dims,
        "fgc": fgc,
        "bgc": bgc,
        "stride": stride or [1] * n,
        "pad": pad or [(0, 0)] * n,
        "ld": [1] * n,
        "rd": [1] * n,
        "reverse": reverse or [False] * n,
    }


NHWC = ([0, 3, 1, 2], [2, 3, 0, 1], [0, 3, 1, 2])
NCW = ([0, 1, 2], [1, 0, 2], [0, 1, 2])


def inputs(*shapes):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def test_stablehlo_convolution_imports_and_runs() -> None:
    program = str(import_stablehlo(STABLEHLO, "conv.mlir").module)
    assert "window = {stride = [2, 2], pad = [[1, 1], [1, 1]]}" in program
    assert "window = {pad = [[1, -1]], reverse = [true]}, feature_group_count = 4" in program
    assert "dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {stride = [2]}" in program
    assert "batch_group_count = 2" in program
    xs = inputs((2, 8, 8, 4), (3, 3, 4, 6), (2, 4, 9), (8, 1, 3), (4, 5, 2), (2, 3, 4))
    out = run_global(program, {f"in_{i}": x for i, x in enumerate(xs)})
    wants = [
        reference(xs[0], xs[1], case(NHWC, 2, stride=[2, 2], pad=[(1, 1), (1, 1)])),
        reference(xs[2], xs[3], case(NCW, 1, pad=[(1, -1)], reverse=[True], fgc=4)),
        reference(xs[2], xs[3], case(NCW, 1, stride=[2], fgc=4)),
        reference(xs[4], xs[5], case(([0, 2, 1], [0, 2, 1], [0, 2, 1]), 1, bgc=2)),
    ]
    for i, want in enumerate(wants):
        np.testing.assert_allclose(out[f"out_{i}"], want, rtol=1e-5, atol=1e-5)


HLO_TEXT = """HloModule conv

ENTRY %main (p0: f32[2,8,8,4], p1: f32[3,3,4,6], p2: f32[2,4,9], p3: f32[8,1,3]) -> (f32[2,4,4,6], f32[2,8,7]) {
  %p0 = f32[2,8,8,4]{3,2,1,0} parameter(0)
  %p1 = f32[3,3,4,6]{3,2,1,0} parameter(1)
  %p2 = f32[2,4,9]{2,1,0} parameter(2)
  %p3 = f32[8,1,3]{2,1,0} parameter(3)
  %c0 = f32[2,4,4,6]{3,2,1,0} convolution(f32[2,8,8,4]{3,2,1,0} %p0, f32[3,3,4,6]{3,2,1,0} %p1), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, operand_precision={default,default}
  %c1 = f32[2,8,7]{2,1,0} convolution(f32[2,4,9]{2,1,0} %p2, f32[8,1,3]{2,1,0} %p3), window={size=3 pad=1_-1 rhs_reversal=1}, dim_labels=bf0_oi0->bf0, feature_group_count=4
  ROOT %t = (f32[2,4,4,6]{3,2,1,0}, f32[2,8,7]{2,1,0}) tuple(%c0, %c1)
}
"""


def test_hlo_text_convolution_imports_and_runs() -> None:
    program = str(import_hlo_text(HLO_TEXT, "conv.hlo").module)
    assert "feature_group_count = 4" in program and "reverse = [true]" in program
    xs = inputs((2, 8, 8, 4), (3, 3, 4, 6), (2, 4, 9), (8, 1, 3))
    (out,) = run_per_device(program, [xs])
    np.testing.assert_allclose(
        out[0], reference(xs[0], xs[1], case(NHWC, 2, [2, 2], [(1, 1), (1, 1)])), rtol=1e-5
    )
    want = reference(xs[2], xs[3], case(NCW, 1, pad=[(1, -1)], reverse=[True], fgc=4))
    np.testing.assert_allclose(out[1], want, rtol=1e-5, atol=1e-5)


def test_malformed_dim_labels_are_a_located_error() -> None:
    text = HLO_TEXT.replace("dim_labels=bf0_oi0->bf0", "dim_labels=bf0_oi1->bf0")
    with pytest.raises(DiagnosticError) as info:
        import_hlo_text(text, "conv.hlo")
    assert "conv.hlo:9:" in str(info.value)
    assert "dimension labels [o, i, 1] must be i, o and the spatial dimensions 0..0" in str(
        info.value
    )


def test_check_support_knows_convolution() -> None:
    assert not stablehlo_support(STABLEHLO, "conv.mlir").gaps
    assert not hlo_text_support(HLO_TEXT, "conv.hlo").gaps
