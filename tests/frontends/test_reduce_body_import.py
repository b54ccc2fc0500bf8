"""
`stablehlo.reduce` and XLA's `reduce` of several operands (argmax as JAX writes it: value
and iota index, a NaN-propagating compare, lowest index on ties) import as `hlo.reduce`
with the body converted op by op, and run to np.argmax's answer; a body using an op
shardc does not support is an error at the op naming it.
"""

from __future__ import annotations

import numpy as np
import pytest
from shardc.diagnostics import DiagnosticError
from shardc.frontends.hlo_text import import_hlo_text
from shardc.frontends.stablehlo import import_stablehlo
from shardc.interpreter.testing import run_global, run_per_device

X = np.array(
    [
        [1, 3, 3, 0, 2, 3, 1, 0],
        [0, 0, 0, 0, 0, 0, 0, 0],
        [-1, np.nan, 2, np.nan, 5, 5, 1, 0],
        [4, 1, 4, 2, 0, 4, 1, 3],
    ],
    np.float32,
)

STABLEHLO = """module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32>) -> (tensor<4xi32>) {
    %0 = stablehlo.iota dim = 1 : tensor<4x8xi32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [1] : (tensor<4x8xf32>, tensor<4x8xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
     reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %2 = stablehlo.compare  GT, %arg1, %arg3,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.compare  NE, %arg1, %arg1,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %4 = stablehlo.or %2, %3 : tensor<i1>
      %5 = stablehlo.compare  EQ, %arg1, %arg3,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %6 = stablehlo.compare  LT, %arg2, %arg4,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %7 = stablehlo.and %5, %6 : tensor<i1>
      %8 = stablehlo.or %4, %7 : tensor<i1>
      %9 = stablehlo.select %8, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>
      stablehlo.return %9, %10 : tensor<f32>, tensor<i32>
    }
    return %1#1 : tensor<4xi32>
  }
}
"""

HLO_TEXT = """HloModule argmax

%argmax (p0: f32[], p1: s32[], p2: f32[], p3: s32[]) -> (f32[], s32[]) {
  %p0 = f32[] parameter(0)
  %p1 = s32[] parameter(1)
  %p2 = f32[] parameter(2)
  %p3 = s32[] parameter(3)
  %gt = pred[] compare(f32[] %p0, f32[] %p2), direction=GT
  %nan = pred[] compare(f32[] %p0, f32[] %p0), direction=NE
  %better = pred[] or(pred[] %gt, pred[] %nan)
  %eq = pred[] compare(f32[] %p0, f32[] %p2), direction=EQ
  %lt = pred[] compare(s32[] %p1, s32[] %p3), direction=LT
  %tie = pred[] and(pred[] %eq, pred[] %lt)
  %keep = pred[] or(pred[] %better, pred[] %tie)
  %v = f32[] select(pred[] %keep, f32[] %p0, f32[] %p2)
  %i = s32[] select(pred[] %keep, s32[] %p1, s32[] %p3)
  ROOT %t = (f32[], s32[]) tuple(f32[] %v, s32[] %i)
}

ENTRY %main (x: f32[4,8]) -> (f32[4], s32[4]) {
  %x = f32[4,8]{1,0} parameter(0)
  %iota = s32[4,8]{1,0} iota(), iota_dimension=1
  %ninf = f32[] constant(-inf)
  %zero = s32[] constant(0)
  %r = (f32[4]{0}, s32[4]{0}) reduce(f32[4,8]{1,0} %x, s32[4,8]{1,0} %iota, f32[] %ninf, s32[] %zero), dimensions={1}, to_apply=%argmax
  %rv = f32[4]{0} get-tuple-element(%r), index=0
  %ri = s32[4]{0} get-tuple-element(%r), index=1
  ROOT %out = (f32[4]{0}, s32[4]{0}) tuple(%rv, %ri)
}
"""


def test_stablehlo_argmax_imports_as_a_reduce_with_a_body() -> None:
    program = str(import_stablehlo(STABLEHLO, "am.mlir").module)
    assert "hlo.reduce(" in program and "reducer(" in program and "hlo.return" in program
    out = run_global(program, {"in_0": X})
    np.testing.assert_array_equal(out["out_0"], np.argmax(X, axis=1).astype(np.int32))


def test_hlo_text_variadic_reduce_imports_as_a_reduce_with_a_body() -> None:
    program = str(import_hlo_text(HLO_TEXT, "am.hlo").module)
    assert "hlo.reduce(" in program and "across dims = [1]" in program
    values, indices = run_per_device(program, [[X]])[0]
    want = np.argmax(X, axis=1)
    np.testing.assert_array_equal(indices, want.astype(np.int32))
    np.testing.assert_array_equal(values, X[np.arange(4), want])


def test_a_body_with_an_unsupported_op_is_an_error_naming_it() -> None:
    text = HLO_TEXT.replace(
        "%nan = pred[] compare(f32[] %p0, f32[] %p0), direction=NE",
        "%nan = pred[] is-finite(f32[] %p0)",
    ).replace(
        "%better = pred[] or(pred[] %gt, pred[] %nan)",
        "%fft = f32[] fft(f32[] %p0)\n  %better = pred[] or(pred[] %gt, pred[] %nan)",
    )
    with pytest.raises(DiagnosticError, match="fft"):
        import_hlo_text(text, "am.hlo")


def test_the_reduce_keeps_its_own_location() -> None:
    module = import_hlo_text(HLO_TEXT, "am.hlo").module
    (red,) = [op for op in module.walk() if op.name == "hlo.reduce"]
    assert 'am.hlo":25:' in str(red.location)  # the reduce instruction's line, not its body's
