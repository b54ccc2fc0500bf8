"""
`stablehlo.reduce_window` (jnp.cumsum's form, max pooling), `stablehlo.select_and_scatter`
(max pooling's gradient, as JAX writes them) and XLA's `reduce-window` /
`select-and-scatter` import as `hlo.reduce_window` / `hlo.select_and_scatter`; the imported
programs run and are checked against numpy (np.cumsum, pooling by reshaping, argmax). A
body of another form is an import error at the op that names what it computes.
"""

from __future__ import annotations

import numpy as np
import pytest
from shardc.diagnostics import DiagnosticError
from shardc.frontends.hlo_text import import_hlo_text
from shardc.frontends.stablehlo import import_stablehlo
from shardc.interpreter.testing import run_global, run_per_device

X = np.random.default_rng(0).permutation(48).astype(np.float32).reshape(4, 12)
G = np.arange(1, 13, dtype=np.float32).reshape(2, 6)


def max_pool(x: np.ndarray) -> np.ndarray:
    return x.reshape(2, 2, 6, 2).max(axis=(1, 3))


def max_pool_grad(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    for i in range(2):
        for j in range(6):
            block = x[2 * i : 2 * i + 2, 2 * j : 2 * j + 2]
            a, b = np.unravel_index(np.argmax(block), (2, 2))
            out[2 * i + a, 2 * j + b] += g[i, j]
    return out


def region(op: str, t: str = "tensor<f32>") -> str:
    return f"""{{
    ^bb0(%a: {t}, %b: {t}):
      %r = {op} %a, %b : {t}
      stablehlo.return %r : {t}
    }}"""


STABLEHLO = f"""module @m attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main(%arg0: tensor<4x12xf32>, %arg1: tensor<2x6xf32>) -> (tensor<4x12xf32>, tensor<2x6xf32>, tensor<4x12xf32>) {{
    %z = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = "stablehlo.reduce_window"(%arg0, %z) <{{padding = dense<[[0, 0], [11, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 1, 12>}}> ({region("stablehlo.add")}) : (tensor<4x12xf32>, tensor<f32>) -> tensor<4x12xf32>
    %1 = "stablehlo.reduce_window"(%arg0, %ninf) <{{window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>}}> ({region("stablehlo.maximum")}) : (tensor<4x12xf32>, tensor<f32>) -> tensor<2x6xf32>
    %2 = "stablehlo.select_and_scatter"(%arg0, %arg1, %z) <{{padding = dense<0> : tensor<2x2xi64>, window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>}}> ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.compare  GE, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }}, {region("stablehlo.add")}) : (tensor<4x12xf32>, tensor<2x6xf32>, tensor<f32>) -> tensor<4x12xf32>
    return %0, %1, %2 : tensor<4x12xf32>, tensor<2x6xf32>, tensor<4x12xf32>
  }}
}}
"""


def test_stablehlo_reduce_window_and_select_and_scatter_import_and_run() -> None:
    program = str(import_stablehlo(STABLEHLO, "w.mlir").module)
    assert "window = [1, 12], padding = [[0, 0], [11, 0]]" in program
    assert "hlo.reduce_window max" in program and "strides = [2, 2]" in program
    assert "select = GE, scatter = add" in program
    out = run_global(program, {"in_0": X, "in_1": G})
    np.testing.assert_array_equal(out["out_0"], np.cumsum(X, axis=1))
    np.testing.assert_array_equal(out["out_1"], max_pool(X))
    np.testing.assert_array_equal(out["out_2"], max_pool_grad(X, G))


def test_a_reduce_window_body_of_another_form_is_an_error_naming_it() -> None:
    text = STABLEHLO.replace(region("stablehlo.maximum"), region("stablehlo.subtract"))
    with pytest.raises(DiagnosticError) as info:
        import_stablehlo(text, "w.mlir")
    assert "w.mlir:10:" in str(info.value)  # at the op
    assert "stablehlo.subtract" in str(info.value)


def test_a_select_of_another_form_is_an_error_naming_it() -> None:
    text = STABLEHLO.replace("compare  GE, %a, %b", "compare  EQ, %a, %b")
    with pytest.raises(DiagnosticError, match="the select region computes stablehlo.compare"):
        import_stablehlo(text, "w.mlir")
    swapped = STABLEHLO.replace("compare  GE, %a, %b", "compare  LT, %b, %a")
    assert "select = GT" in str(import_stablehlo(swapped, "w.mlir").module)


HLO_TEXT = """HloModule windows

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}

%ge (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %c = pred[] compare(f32[] %a, f32[] %b), direction=GE
}

ENTRY %main (x: f32[4,12], g: f32[2,6]) -> (f32[4,12], f32[2,6], f32[4,12]) {
  %x = f32[4,12]{1,0} parameter(0)
  %g = f32[2,6]{1,0} parameter(1)
  %z = f32[] constant(0)
  %ninf = f32[] constant(-inf)
  %cum = f32[4,12]{1,0} reduce-window(f32[4,12]{1,0} %x, f32[] %z), window={size=1x12 pad=0_0x11_0}, to_apply=%add
  %pool = f32[2,6]{1,0} reduce-window(f32[4,12]{1,0} %x, f32[] %ninf), window={size=2x2 stride=2x2}, to_apply=%max
  %grad = f32[4,12]{1,0} select-and-scatter(f32[4,12]{1,0} %x, f32[2,6]{1,0} %g, f32[] %z), window={size=2x2 stride=2x2}, select=%ge, scatter=%add
  ROOT %r = (f32[4,12]{1,0}, f32[2,6]{1,0}, f32[4,12]{1,0}) tuple(%cum, %pool, %grad)
}
"""


def test_hlo_text_reduce_window_and_select_and_scatter_import_and_run() -> None:
    program = str(import_hlo_text(HLO_TEXT, "w.hlo").module)
    assert "window = [1, 12], padding = [[0, 0], [11, 0]]" in program
    assert "select = GE, scatter = add, window = [2, 2], strides = [2, 2]" in program
    cum, pool, grad = run_per_device(program, [[X, G]])[0]
    np.testing.assert_array_equal(cum, np.cumsum(X, axis=1))
    np.testing.assert_array_equal(pool, max_pool(X))
    np.testing.assert_array_equal(grad, max_pool_grad(X, G))


def test_hlo_text_window_with_reversal_is_refused() -> None:
    text = HLO_TEXT.replace(
        "size=2x2 stride=2x2}, to_apply", "size=2x2 stride=2x2 rhs_reversal=1x1}, to_apply"
    )
    with pytest.raises(DiagnosticError, match="rhs_reversal is not supported"):
        import_hlo_text(text, "w.hlo")
