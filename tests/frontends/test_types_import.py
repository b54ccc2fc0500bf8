"""
The element types of issue 13 and `complex` / `real` / `imag` / `bitcast_convert` import
from StableHLO (i8, ui32, i4, f8E4M3FN, complex<f32> spellings; `stablehlo.complex` with
only its result type) and from XLA's HLO text (s8, u8, c64 ... and `bitcast-convert`,
complex constants as (re, im) pairs); the imported programs run and match numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from shardc.diagnostics import DiagnosticError
from shardc.frontends.hlo_text import import_hlo_text
from shardc.frontends.stablehlo import import_stablehlo
from shardc.interpreter.testing import run_global, run_per_device

STABLEHLO = """module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<4x8xi8>, %arg3: tensor<8x2xi8>, %arg4: tensor<4xui32>) -> (tensor<4xcomplex<f32>>, tensor<4xf32>, tensor<4x2xi32>, tensor<4xi1>, tensor<4x4xui8>, tensor<4xf32>, tensor<2xi4>, tensor<f8E4M3FN>) {
    %0 = stablehlo.complex %arg0, %arg1 : tensor<4xcomplex<f32>>
    %1 = stablehlo.real %0 : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
    %2 = stablehlo.imag %0 : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
    %3 = stablehlo.dot_general %arg2, %arg3, contracting_dims = [1] x [0] : (tensor<4x8xi8>, tensor<8x2xi8>) -> tensor<4x2xi32>
    %4 = stablehlo.compare  LT, %arg4, %arg4,  UNSIGNED : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xi1>
    %5 = "stablehlo.bitcast_convert"(%arg0) : (tensor<4xf32>) -> tensor<4x4xui8>
    %6 = stablehlo.abs %0 : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
    %7 = stablehlo.constant dense<[-8, 7]> : tensor<2xi4>
    %8 = stablehlo.constant dense<4.480000e+02> : tensor<f8E4M3FN>
    return %0, %2, %3, %4, %5, %6, %7, %8 : tensor<4xcomplex<f32>>, tensor<4xf32>, tensor<4x2xi32>, tensor<4xi1>, tensor<4x4xui8>, tensor<4xf32>, tensor<2xi4>, tensor<f8E4M3FN>
  }
}
"""


def test_stablehlo_types_import_and_run() -> None:
    program = str(import_stablehlo(STABLEHLO, "types.mlir").module)
    for op in ("hlo.complex", "hlo.imag", "hlo.bitcast_convert", "hlo.abs"):
        assert op in program
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    x = rng.integers(-128, 128, (4, 8)).astype(np.int8)
    y = rng.integers(-128, 128, (8, 2)).astype(np.int8)
    u = np.array([0, 1, 2**31, 2**32 - 1], dtype=np.uint32)
    out = run_global(program, {"in_0": a, "in_1": b, "in_2": x, "in_3": y, "in_4": u})
    np.testing.assert_array_equal(out["out_0"], a + 1j * b)
    np.testing.assert_array_equal(out["out_1"], b)
    np.testing.assert_array_equal(out["out_2"], x.astype(np.int32) @ y.astype(np.int32))
    assert not out["out_3"].any()
    np.testing.assert_array_equal(out["out_4"], a.view(np.uint8).reshape(4, 4))
    np.testing.assert_allclose(out["out_5"], np.hypot(a, b), rtol=1e-6)
    assert out["out_6"].astype(int).tolist() == [-8, 7]
    assert float(out["out_7"]) == 448.0


def test_stablehlo_signed_compare_of_unsigned_is_refused() -> None:
    text = STABLEHLO.replace("UNSIGNED", "SIGNED")
    with pytest.raises(DiagnosticError, match="compare type SIGNED on unsigned integers"):
        import_stablehlo(text, "types.mlir")


HLO_TEXT = """HloModule m

ENTRY %main (a: f32[4], b: f32[4], x: s8[4,8], y: s8[8,2], u: u8[4]) -> (c64[4], s32[4,2], pred[4], u8[4,4], f32[4], c64[2]) {
  %a = f32[4]{0} parameter(0)
  %b = f32[4]{0} parameter(1)
  %x = s8[4,8]{1,0} parameter(2)
  %y = s8[8,2]{1,0} parameter(3)
  %u = u8[4]{0} parameter(4)
  %c = c64[4]{0} complex(%a, %b)
  %k = c64[2]{0} constant({(1, 2), (3, -4)})
  %re = f32[4]{0} real(%c)
  %d = s32[4,2]{1,0} dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %lt = pred[4]{0} compare(%u, %u), direction=LT
  %bc = u8[4,4]{1,0} bitcast-convert(%a)
  ROOT %t = (c64[4]{0}, s32[4,2]{1,0}, pred[4]{0}, u8[4,4]{1,0}, f32[4]{0}, c64[2]{0}) tuple(%c, %d, %lt, %bc, %re, %k)
}
"""


def test_hlo_text_types_import_and_run() -> None:
    program = str(import_hlo_text(HLO_TEXT, "types.hlo").module)
    assert "tensor<4x8xi8>" in program and "tensor<4xui8>" in program
    assert "hlo.bitcast_convert" in program and "hlo.real" in program
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    x = rng.integers(-128, 128, (4, 8)).astype(np.int8)
    y = rng.integers(-128, 128, (8, 2)).astype(np.int8)
    u = np.array([0, 200, 255, 7], dtype=np.uint8)
    c, d, lt, bc, re, k = run_per_device(program, [[a, b, x, y, u]])[0]
    np.testing.assert_array_equal(c, a + 1j * b)
    np.testing.assert_array_equal(d, x.astype(np.int32) @ y.astype(np.int32))
    assert not lt.any()
    np.testing.assert_array_equal(bc, a.view(np.uint8).reshape(4, 4))
    np.testing.assert_array_equal(re, a)
    assert k.tolist() == [1 + 2j, 3 - 4j]
