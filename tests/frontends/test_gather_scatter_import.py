"""
`stablehlo.gather` / `stablehlo.dynamic_gather` / `stablehlo.scatter` (update regions as
JAX emits them for `x.at[i].set/add/mul/max/min`) and XLA's `gather` / `scatter`
instructions import as `hlo.gather` / `hlo.scatter`; the imported programs run and are
checked against numpy (fancy indexing, `ufunc.at`). An update computation of another form
is an import error at the op that names what it computes.
"""

from __future__ import annotations

import numpy as np
import pytest
from shardc.diagnostics import DiagnosticError
from shardc.frontends.hlo_text import import_hlo_text
from shardc.frontends.stablehlo import import_stablehlo
from shardc.interpreter.testing import run_global, run_per_device

T = np.arange(32, dtype=np.float32).reshape(8, 4) - 10
IDS = np.array([5, 1, 5], np.int32)
ROWS = np.array([[1, 2, 3, 4], [-50, 50, 0, 7], [10, 20, 30, 40]], np.float32)

REGIONS = {
    "add": "%r = stablehlo.add %x, %y : tensor<f32>\n      stablehlo.return %r : tensor<f32>",
    "mul": "%r = stablehlo.multiply %y, %x : tensor<f32>\n      stablehlo.return %r : tensor<f32>",
    "max": "%r = stablehlo.maximum %x, %y : tensor<f32>\n      stablehlo.return %r : tensor<f32>",
    "min": "%r = stablehlo.minimum %x, %y : tensor<f32>\n      stablehlo.return %r : tensor<f32>",
    "replace": "stablehlo.return %y : tensor<f32>",
}


def stablehlo_program(region: str) -> str:
    return f"""module @m attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main(%arg0: tensor<8x4xf32>, %arg1: tensor<3xi32>, %arg2: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x2xf32>, tensor<8x4xf32>) {{
    %0 = stablehlo.reshape %arg1 : (tensor<3xi32>) -> tensor<3x1xi32>
    %1 = "stablehlo.gather"(%arg0, %0) <{{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 4>}}> : (tensor<8x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
    %c = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
    %2 = "stablehlo.dynamic_gather"(%arg0, %0, %c) <{{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>}}> : (tensor<8x4xf32>, tensor<3x1xi32>, tensor<2xi32>) -> tensor<3x2xf32>
    %3 = "stablehlo.scatter"(%arg0, %0, %arg2) <{{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}}> ({{
    ^bb0(%x: tensor<f32>, %y: tensor<f32>):
      {region}
    }}) : (tensor<8x4xf32>, tensor<3x1xi32>, tensor<3x4xf32>) -> tensor<8x4xf32>
    return %1, %2, %3 : tensor<3x4xf32>, tensor<3x2xf32>, tensor<8x4xf32>
  }}
}}
"""


UFUNCS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def expected_scatter(kind: str, ids: np.ndarray) -> np.ndarray:
    want = T.copy()
    if kind == "replace":
        want[ids[1]] = ROWS[1]  # row 5 is written twice: tested on the unique row only
        return want
    UFUNCS[kind].at(want, ids, ROWS)
    return want


@pytest.mark.parametrize("kind", list(REGIONS))
def test_stablehlo_gather_and_scatter_import_and_run(kind: str) -> None:
    program = str(import_stablehlo(stablehlo_program(REGIONS[kind]), "gs.mlir").module)
    assert f"hlo.scatter {kind} " in program and program.count("hlo.gather") == 2
    outs = run_global(program, {"in_0": T, "in_1": IDS, "in_2": ROWS})
    np.testing.assert_array_equal(outs["out_0"], T[IDS])
    np.testing.assert_array_equal(outs["out_1"], T[IDS][:, :2])
    got = outs["out_2"]
    if kind == "replace":
        rest = [r for r in range(8) if r != 5]
        np.testing.assert_array_equal(got[rest], expected_scatter(kind, IDS)[rest])
        assert any(np.array_equal(got[5], ROWS[r]) for r in (0, 2))
    else:
        np.testing.assert_array_equal(got, expected_scatter(kind, IDS))


def test_another_update_computation_is_an_error_naming_it() -> None:
    region = "%r = stablehlo.subtract %x, %y : tensor<f32>\n      stablehlo.return %r : tensor<f32>"
    with pytest.raises(DiagnosticError) as info:
        import_stablehlo(stablehlo_program(region), "gs.mlir")
    message = str(info.value)
    assert "gs.mlir:7:" in message
    assert "stablehlo.subtract, stablehlo.return" in message


HLO_TEXT = """HloModule jit_f, entry_computation_layout={(f32[8,4]{1,0}, s32[3,1]{1,0}, f32[3,4]{1,0})->(f32[3,4]{1,0}, f32[8,4]{1,0})}

%combine (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] maximum(f32[] %a, f32[] %b)
}

ENTRY %main (p0: f32[8,4], p1: s32[3,1], p2: f32[3,4]) -> (f32[3,4], f32[8,4]) {
  %p0 = f32[8,4]{1,0} parameter(0)
  %p1 = s32[3,1]{1,0} parameter(1)
  %p2 = f32[3,4]{1,0} parameter(2)
  %g = f32[3,4]{1,0} gather(f32[8,4]{1,0} %p0, s32[3,1]{1,0} %p1), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}, indices_are_sorted=true
  %s = f32[8,4]{1,0} scatter(f32[8,4]{1,0} %p0, s32[3,1]{1,0} %p1, f32[3,4]{1,0} %p2), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%combine
  ROOT %t = (f32[3,4]{1,0}, f32[8,4]{1,0}) tuple(%g, %s)
}
"""


def test_hlo_text_gather_and_scatter_import_and_run() -> None:
    program = str(import_hlo_text(HLO_TEXT, "gs.hlo").module)
    assert "indices_are_sorted" in program and "hlo.scatter max" in program
    g, s = run_per_device(program, [[T, IDS[:, None], ROWS]])[0]
    np.testing.assert_array_equal(g, T[IDS])
    np.testing.assert_array_equal(s, expected_scatter("max", IDS))


def test_hlo_text_scatter_of_another_computation_is_refused() -> None:
    text = HLO_TEXT.replace("maximum(f32[] %a, f32[] %b)", "subtract(f32[] %a, f32[] %b)")
    with pytest.raises(DiagnosticError, match="to_apply=combine computes subtract"):
        import_hlo_text(text, "gs.hlo")


def test_batching_dims_import_from_both_forms() -> None:
    text = HLO_TEXT.replace(
        "offset_dims={1}, collapsed_slice_dims={0}",
        "offset_dims={1}, collapsed_slice_dims={0}, operand_batching_dims={}",
    )
    program = str(import_hlo_text(text, "gs.hlo").module)
    assert "operand_batching_dims" not in program  # empty: left out when printed
