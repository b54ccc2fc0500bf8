"""
`stablehlo.pad` / `stablehlo.reverse` (pretty and generic forms) and XLA's `pad` /
`reverse` instructions import as `hlo.pad` / `hlo.reverse`; the imported programs are run
and checked against numpy (an index-map reference for pad, written independently).
"""

from __future__ import annotations

import numpy as np
from shardc.frontends.hlo_text import import_hlo_text
from shardc.frontends.stablehlo import import_stablehlo
from shardc.interpreter.testing import run_global, run_per_device


def padded(x: np.ndarray, value: float, low, high, interior) -> np.ndarray:
    """Reference pad: result element r holds x[(r - lo) / (it + 1)] where that is whole."""
    shape = [
        lo + n + max(n - 1, 0) * it + hi
        for n, lo, hi, it in zip(x.shape, low, high, interior, strict=True)
    ]
    out = np.full(shape, value, dtype=x.dtype)
    for index in np.ndindex(*shape):
        src = []
        for r, lo, it, n in zip(index, low, interior, x.shape, strict=True):
            k, rem = divmod(r - lo, it + 1)
            if r - lo < 0 or rem or k >= n:
                break
            src.append(k)
        else:
            out[index] = x[tuple(src)]
    return out


STABLEHLO = """module @m attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32>) -> (tensor<5x3xf32>, tensor<2x3xf32>, tensor<4x4xf32>, tensor<2x3xf32>) {
    %cst = stablehlo.constant dense<7.500000e+00> : tensor<f32>
    %0 = stablehlo.pad %arg0, %cst, low = [0, 1], high = [2, -1], interior = [1, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<5x3xf32>
    %1 = stablehlo.reverse %arg0, dims = [1] : tensor<2x3xf32>
    %2 = "stablehlo.pad"(%arg0, %cst) <{edge_padding_high = array<i64: 1, -1>, edge_padding_low = array<i64: 1, -1>, interior_padding = array<i64: 0, 1>}> : (tensor<2x3xf32>, tensor<f32>) -> tensor<4x4xf32>
    %3 = "stablehlo.reverse"(%arg0) <{dimensions = array<i64: 0, 1>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
    return %0, %1, %2, %3 : tensor<5x3xf32>, tensor<2x3xf32>, tensor<4x4xf32>, tensor<2x3xf32>
  }
}
"""


def test_stablehlo_pad_and_reverse_import_and_run() -> None:
    program = str(import_stablehlo(STABLEHLO, "pr.mlir").module)
    assert "hlo.pad %" in program and "low = [0, 1], high = [2, -1], interior = [1, 0]" in program
    assert "hlo.reverse %" in program and "dims = [0, 1]" in program
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = run_global(program, {"in_0": x})
    np.testing.assert_array_equal(out["out_0"], padded(x, 7.5, [0, 1], [2, -1], [1, 0]))
    np.testing.assert_array_equal(out["out_1"], x[:, ::-1])
    np.testing.assert_array_equal(out["out_2"], padded(x, 7.5, [1, -1], [1, -1], [0, 1]))
    np.testing.assert_array_equal(out["out_3"], x[::-1, ::-1])


HLO_TEXT = """HloModule pad_reverse

ENTRY %main (x: s32[2,3]) -> (s32[5,3], s32[2,3], s32[3,5]) {
  %x = s32[2,3]{1,0} parameter(0)
  %z = s32[] constant(-1)
  %p = s32[5,3]{1,0} pad(%x, %z), padding=0_2_1x1_-1
  %r = s32[2,3]{1,0} reverse(%x), dimensions={0}
  %q = s32[3,5]{1,0} pad(%x, %z), padding=-1_2x0_0_1
  ROOT %t = (s32[5,3]{1,0}, s32[2,3]{1,0}, s32[3,5]{1,0}) tuple(%p, %r, %q)
}
"""


def test_hlo_text_pad_and_reverse_import_and_run() -> None:
    program = str(import_hlo_text(HLO_TEXT, "pr.hlo").module)
    assert "low = [0, 1], high = [2, -1], interior = [1, 0]" in program
    assert "low = [-1, 0], high = [2, 0], interior = [0, 1]" in program
    assert "hlo.reverse" in program
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    p, r, q = run_per_device(program, [[x]])[0]
    np.testing.assert_array_equal(p, padded(x, -1, [0, 1], [2, -1], [1, 0]))
    np.testing.assert_array_equal(r, x[::-1])
    np.testing.assert_array_equal(q, padded(x, -1, [-1, 0], [2, 0], [0, 1]))
