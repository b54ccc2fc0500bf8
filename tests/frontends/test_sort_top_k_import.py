"""
`stablehlo.sort` (comparator regions as JAX emits them: plain LT/GT, TOTALORDER, keys
canonicalized as jnp.sort does, arguments swapped), `chlo.top_k`, and XLA's `sort` /
`topk` instructions import as `hlo.sort` / `hlo.top_k`; the imported programs are run and
checked against Python's stable sort (tests/unit/test_sort_top_k.py's references). A
comparator of another form is an import error at the op that names what it computes.
"""

from __future__ import annotations

import numpy as np
import pytest
from shardc.diagnostics import DiagnosticError
from shardc.frontends.hlo_text import import_hlo_text
from shardc.frontends.stablehlo import import_stablehlo
from shardc.interpreter.testing import run_global, run_per_device
from shardc.tests.unit.test_sort_top_k import reference_sort, total_key

X = np.array(
    [[3.0, 1.0, np.nan, 1.0, -0.0], [0.0, -0.0, 2.0, -1.0, 2.0], [5.0, 4.0, 3.0, 2.0, 1.0]],
    np.float32,
)
Y = np.arange(15, dtype=np.int32).reshape(3, 5)


def canonical_keys(arg: str, tag: str) -> str:
    """jnp.sort's comparator prologue for one key: -0 made +0, every NaN one NaN."""
    return f"""      %z{tag} = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %e{tag} = stablehlo.compare  EQ, {arg}, %z{tag},  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %s{tag} = stablehlo.select %e{tag}, %z{tag}, {arg} : tensor<i1>, tensor<f32>
      %n{tag} = stablehlo.compare  NE, {arg}, {arg},  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %q{tag} = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %c{tag} = stablehlo.select %n{tag}, %q{tag}, %s{tag} : tensor<i1>, tensor<f32>
"""


STABLEHLO = f"""module @m attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main(%arg0: tensor<3x5xf32>, %arg1: tensor<3x5xi32>) -> (tensor<3x5xf32>, tensor<3x5xi32>, tensor<3x5xf32>, tensor<3x5xi32>, tensor<3x2xf32>, tensor<3x2xi32>) {{
    %0:2 = "stablehlo.sort"(%arg0, %arg1) <{{dimension = 1 : i64, is_stable = true}}> ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
{canonical_keys("%a", "0")}{canonical_keys("%b", "1")}      %lt = stablehlo.compare  LT, %c0, %c1,  TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    }}) : (tensor<3x5xf32>, tensor<3x5xi32>) -> (tensor<3x5xf32>, tensor<3x5xi32>)
    %1 = "stablehlo.sort"(%arg0) <{{dimension = -2 : i64, is_stable = false}}> ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %gt = stablehlo.compare  GT, %a, %b,  TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %gt : tensor<i1>
    }}) : (tensor<3x5xf32>) -> tensor<3x5xf32>
    %2 = "stablehlo.sort"(%arg1) <{{dimension = 1 : i64, is_stable = true}}> ({{
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %lt = stablehlo.compare  LT, %b, %a,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    }}) : (tensor<3x5xi32>) -> tensor<3x5xi32>
    %3:2 = chlo.top_k(%arg0, k = 2) : tensor<3x5xf32> -> (tensor<3x2xf32>, tensor<3x2xi32>)
    return %0#0, %0#1, %1, %2, %3#0, %3#1 : tensor<3x5xf32>, tensor<3x5xi32>, tensor<3x5xf32>, tensor<3x5xi32>, tensor<3x2xf32>, tensor<3x2xi32>
  }}
}}
"""


def top_k(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    rows = [sorted(range(len(r)), key=lambda j, r=r: total_key(r[j]), reverse=True)[:k] for r in x]
    idx = np.array(rows, np.int32)
    return np.take_along_axis(x, idx, axis=-1), idx


def test_stablehlo_sort_and_top_k_import_and_run() -> None:
    program = str(import_stablehlo(STABLEHLO, "st.mlir").module)
    assert "dim = 1, comparator = LT, stable" in program  # canonicalized keys: plain LT
    assert "dim = 0, comparator = GT TOTALORDER :" in program  # dimension -2 of rank 2
    assert "dim = 1, comparator = GT, stable" in program  # LT with the arguments swapped
    assert "hlo.top_k" in program and "k = 2" in program
    out = run_global(program, {"in_0": X, "in_1": Y})
    s, p = reference_sort([X, Y], 1, "LT")
    assert out["out_0"].tobytes() == s.tobytes()
    np.testing.assert_array_equal(out["out_1"], p)
    assert out["out_2"].tobytes() == reference_sort([X], 0, "GT TOTALORDER")[0].tobytes()
    np.testing.assert_array_equal(out["out_3"], reference_sort([Y], 1, "GT")[0])
    values, indices = top_k(X, 2)
    assert out["out_4"].tobytes() == values.tobytes()
    np.testing.assert_array_equal(out["out_5"], indices)


def test_a_comparator_of_another_form_is_an_error_naming_it() -> None:
    two_keys = """module @m {
  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> tensor<4xf32> {
    %0:2 = "stablehlo.sort"(%arg0, %arg1) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>, %d: tensor<f32>):
      %lt = stablehlo.compare  LT, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %eq = stablehlo.compare  EQ, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %lt2 = stablehlo.compare  LT, %c, %d,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %and = stablehlo.and %eq, %lt2 : tensor<i1>
      %or = stablehlo.or %lt, %and : tensor<i1>
      stablehlo.return %or : tensor<i1>
    }) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    return %0#0 : tensor<4xf32>
  }
}
"""
    with pytest.raises(DiagnosticError) as info:
        import_stablehlo(two_keys, "keys.mlir")
    message = str(info.value)
    assert "keys.mlir:3:" in message
    assert "the sort comparator computes stablehlo.compare, stablehlo.and, stablehlo.or" in message


HLO_TEXT = """HloModule sort_topk

%cmp (p.0: f32[], p.1: f32[], p.2: s32[], p.3: s32[]) -> pred[] {
  %p.0 = f32[] parameter(0)
  %p.1 = f32[] parameter(1)
  %p.2 = s32[] parameter(2)
  %p.3 = s32[] parameter(3)
  ROOT %lt = pred[] compare(f32[] %p.1, f32[] %p.0), direction=LT, type=TOTALORDER
}

%icmp (a: s32[], b: s32[]) -> pred[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %lt = pred[] compare(s32[] %a, s32[] %b), direction=LT
}

ENTRY %main (x: f32[3,5], y: s32[3,5]) -> (f32[3,5], s32[3,5], s32[3,5], f32[3,2], s32[3,2]) {
  %x = f32[3,5]{1,0} parameter(0)
  %y = s32[3,5]{1,0} parameter(1)
  %s = (f32[3,5]{1,0}, s32[3,5]{1,0}) sort(f32[3,5]{1,0} %x, s32[3,5]{1,0} %y), dimensions={1}, is_stable=true, to_apply=%cmp
  %a = f32[3,5]{1,0} get-tuple-element(%s), index=0
  %b = s32[3,5]{1,0} get-tuple-element(%s), index=1
  %i = s32[3,5]{1,0} sort(s32[3,5]{1,0} %y), dimensions={0}, to_apply=%icmp
  %t = (f32[3,2]{1,0}, s32[3,2]{1,0}) topk(f32[3,5]{1,0} %x), k=2, largest=true
  %tv = f32[3,2]{1,0} get-tuple-element(%t), index=0
  %ti = s32[3,2]{1,0} get-tuple-element(%t), index=1
  ROOT %r = (f32[3,5]{1,0}, s32[3,5]{1,0}, s32[3,5]{1,0}, f32[3,2]{1,0}, s32[3,2]{1,0}) tuple(%a, %b, %i, %tv, %ti)
}
"""


def test_hlo_text_sort_and_topk_import_and_run() -> None:
    program = str(import_hlo_text(HLO_TEXT, "st.hlo").module)
    assert "dim = 1, comparator = GT TOTALORDER, stable" in program  # parameters swapped
    assert "dim = 0, comparator = LT :" in program
    a, b, i, tv, ti = run_per_device(program, [[X, Y]])[0]
    s, p = reference_sort([X, Y], 1, "GT TOTALORDER")
    assert a.tobytes() == s.tobytes()
    np.testing.assert_array_equal(b, p)
    np.testing.assert_array_equal(i, reference_sort([Y], 0, "LT")[0])
    values, indices = top_k(X, 2)
    assert tv.tobytes() == values.tobytes()
    np.testing.assert_array_equal(ti, indices)


def test_hlo_text_topk_of_the_smallest_is_refused() -> None:
    text = HLO_TEXT.replace("largest=true", "largest=false")
    with pytest.raises(DiagnosticError, match="largest=false is not supported"):
        import_hlo_text(text, "st.hlo")


MHLO_TOPK = """module @m {
  func.func public @main(%arg0: tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xi32>, tensor<3x3xi32>) {
    %0:2 = stablehlo.custom_call @mhlo.topk(%arg0) {mhlo.attributes = {k = 2 : i64}, mhlo.version = 1 : i64} : (tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xi32>)
    %values, %indices = chlo.top_k(%arg0, k = 3) {largest = true} : tensor<3x5xf32> -> (tensor<3x3xf32>, tensor<3x3xi32>)
    return %0#0, %0#1, %indices : tensor<3x2xf32>, tensor<3x2xi32>, tensor<3x3xi32>
  }
}
"""


def test_jax_custom_call_mhlo_topk_imports_as_top_k() -> None:
    """JAX writes lax.top_k as `custom_call @mhlo.topk` (CHLO's top_k, serialized)."""
    program = str(import_stablehlo(MHLO_TOPK, "tk.mlir").module)
    assert program.count("hlo.top_k") == 2 and "custom_call" not in program
    out = run_global(program, {"in_0": X})
    values, indices = top_k(X, 2)
    assert out["out_0"].tobytes() == values.tobytes()
    np.testing.assert_array_equal(out["out_1"], indices)
    np.testing.assert_array_equal(out["out_2"], top_k(X, 3)[1])
    smallest = MHLO_TOPK.replace("{k = 2 : i64}", "{k = 2 : i64, largest = false}")
    with pytest.raises(DiagnosticError, match="largest = false is not supported"):
        import_stablehlo(smallest, "tk.mlir")


XLA_CPU_TOPK = """HloModule m, is_scheduled=true

%greater (p.0.lhs: f32[], p.0.rhs: f32[], p.1.lhs: s32[], p.1.rhs: s32[]) -> pred[] {
  %p.0.lhs = f32[] parameter(0)
  %p.0.rhs = f32[] parameter(1)
  %p.1.lhs = s32[] parameter(2)
  %p.1.rhs = s32[] parameter(3)
  %zero = s32[] constant(0)
  %max = s32[] constant(2147483647)
  %bl = s32[] bitcast(%p.0.lhs)
  %br = s32[] bitcast(%p.0.rhs)
  %xl = s32[] xor(%max, %bl)
  %nl = pred[] compare(%bl, %zero), direction=LT
  %xr = s32[] xor(%max, %br)
  %nr = pred[] compare(%br, %zero), direction=LT
  %sl = s32[] select(%nl, %xl, %bl)
  %sr = s32[] select(%nr, %xr, %br)
  ROOT %gt = pred[] compare(%sl, %sr), direction=GT
}

ENTRY %main (x: f32[3,5]) -> (f32[3,2], s32[3,2]) {
  %x = f32[3,5]{1,0} parameter(0)
  ROOT %topk = (f32[3,2]{1,0}, s32[3,2]{1,0}) custom-call(%x), custom_call_target="TopK", called_computations={%greater}
}
"""


def test_xla_cpu_custom_call_topk_with_the_total_order_comparator() -> None:
    # what XLA's CPU compiler makes of lax.top_k (seen in the corpus's MoE program)
    result = import_hlo_text(XLA_CPU_TOPK, "t.hlo")
    assert result.stats.constructs["custom-call TopK"] == 1
    got_values, got_indices = run_per_device(str(result.module), [[X]])[0]
    values, indices = top_k(X, 2)
    assert got_values.tobytes() == values.tobytes()
    np.testing.assert_array_equal(got_indices, indices)


def test_custom_call_topk_of_another_comparator_is_refused() -> None:
    text = XLA_CPU_TOPK.replace(
        "compare(%sl, %sr), direction=GT", "compare(%sr, %sl), direction=GT"
    )
    with pytest.raises(DiagnosticError, match="custom-call TopK with comparator greater"):
        import_hlo_text(text, "t.hlo")
