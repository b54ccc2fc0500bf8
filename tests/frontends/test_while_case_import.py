"""
`stablehlo.while` / `stablehlo.case` / `stablehlo.if` import as `hlo.while` / `hlo.case`
(regions converted with the same converters, values from around the op usable inside),
as JAX writes them: `lax.scan` (a counter, the carry and the stacked operand carried, a
dynamic_slice by the counter), `lax.while_loop` / `fori_loop` with a carried upper bound,
`lax.cond` (a case on the converted predicate, false branch first) and the older `if`.
The imported programs are run and checked against numpy references written here; a
sharded scan is partitioned (level S against level G). XLA's HLO text `while` (tuple
carried value flattened) and `conditional` import too.
"""

from __future__ import annotations

import numpy as np
from shardc.dialects import make_context
from shardc.frontends.hlo_text import import_hlo_text
from shardc.frontends.stablehlo import import_stablehlo
from shardc.interpreter.testing import run_global
from shardc.tests.e2e.differential import partition_and_compare

SCAN = """module @jit_scan attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<3x8x8xf32>) -> (tensor<4x8xf32>) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:3 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0, %iterArg_1 = %arg1) : tensor<i32>, tensor<4x8xf32>, tensor<3x8x8xf32>
     cond {
      %c_2 = stablehlo.constant dense<3> : tensor<i32>
      %1 = stablehlo.compare  LT, %iterArg, %c_2,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %c_2 = stablehlo.constant dense<0> : tensor<i32>
      %1 = stablehlo.compare  LT, %iterArg, %c_2,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %c_3 = stablehlo.constant dense<3> : tensor<i32>
      %2 = stablehlo.add %iterArg, %c_3 : tensor<i32>
      %3 = stablehlo.select %1, %2, %iterArg : tensor<i1>, tensor<i32>
      %4 = stablehlo.dynamic_slice %iterArg_1, %3, %c_2, %c_2, sizes = [1, 8, 8] : (tensor<3x8x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x8x8xf32>
      %5 = stablehlo.reshape %4 : (tensor<1x8x8xf32>) -> tensor<8x8xf32>
      %6 = stablehlo.dot_general %iterArg_0, %5, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
      %7 = stablehlo.tanh %6 : tensor<4x8xf32>
      %c_4 = stablehlo.constant dense<1> : tensor<i32>
      %8 = stablehlo.add %iterArg, %c_4 : tensor<i32>
      stablehlo.return %8, %7, %iterArg_1 : tensor<i32>, tensor<4x8xf32>, tensor<3x8x8xf32>
    }
    return %0#1 : tensor<4x8xf32>
  }
}
"""

SHARDED_SCAN = (
    SCAN.replace(
        "module @jit_scan attributes {",
        'module @jit_scan attributes {mhlo.frontend_attributes = {xla.sdy.meshes = "{}"}, ',
    )
    .replace("mhlo.num_partitions = 1", "mhlo.num_partitions = 4")
    .replace(
        "func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<3x8x8xf32>)",
        'func.func public @main(%arg0: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, '
        '%arg1: tensor<3x8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {"y"}]>})',
    )
    .replace("  func.func public", '  sdy.mesh @mesh = <["x"=2, "y"=2]>\n  func.func public', 1)
)

WHILE_LOOP = """module @jit_while attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5xf32>) -> (tensor<5xf32>, tensor<i32>) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<4> : tensor<i32>
    %0:3 = stablehlo.while(%iterArg = %c, %iterArg_1 = %c_0, %iterArg_2 = %arg0) : tensor<i32>, tensor<i32>, tensor<5xf32>
     cond {
      %1 = stablehlo.compare  LT, %iterArg, %iterArg_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = stablehlo.convert %iterArg : (tensor<i32>) -> tensor<f32>
      %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<5xf32>
      %3 = stablehlo.multiply %iterArg_2, %2 : tensor<5xf32>
      %4 = stablehlo.add %iterArg_2, %3 : tensor<5xf32>
      %c_3 = stablehlo.constant dense<1> : tensor<i32>
      %5 = stablehlo.add %iterArg, %c_3 : tensor<i32>
      stablehlo.return %5, %iterArg_1, %4 : tensor<i32>, tensor<i32>, tensor<5xf32>
    }
    return %0#2, %0#0 : tensor<5xf32>, tensor<i32>
  }
}
"""

COND = """module @jit_cond attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i1>, %arg1: tensor<4xf32>, %arg2: tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %0 = stablehlo.convert %arg0 : (tensor<i1>) -> tensor<i32>
    %1 = "stablehlo.case"(%0) ({
      %4 = stablehlo.negate %arg1 : tensor<4xf32>
      stablehlo.return %4 : tensor<4xf32>
    }, {
      %4 = stablehlo.sine %arg1 : tensor<4xf32>
      stablehlo.return %4 : tensor<4xf32>
    }) : (tensor<i32>) -> tensor<4xf32>
    %2 = "stablehlo.if"(%arg0) ({
      stablehlo.return %arg1 : tensor<4xf32>
    }, {
      %4 = stablehlo.exponential %arg1 : tensor<4xf32>
      stablehlo.return %4 : tensor<4xf32>
    }) : (tensor<i1>) -> tensor<4xf32>
    %3 = "stablehlo.case"(%arg2) ({
      stablehlo.return %arg1 : tensor<4xf32>
    }, {
      %4 = stablehlo.negate %arg1 : tensor<4xf32>
      stablehlo.return %4 : tensor<4xf32>
    }, {
      %4 = stablehlo.abs %arg1 : tensor<4xf32>
      stablehlo.return %4 : tensor<4xf32>
    }) : (tensor<i32>) -> tensor<4xf32>
    return %1, %2, %3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
"""


def imported(text: str) -> str:
    return str(import_stablehlo(text, "<test>").module)


def test_scan_imports_as_a_while_and_computes_the_scan() -> None:
    out = imported(SCAN)
    assert "hlo.while(" in out and "hlo.dynamic_slice" in out
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w = rng.standard_normal((3, 8, 8)).astype(np.float32)
    got = run_global(out, {"in_0": x, "in_1": w})["out_0"]
    want = x.astype(np.float64)
    for layer in w.astype(np.float64):
        want = np.tanh(want @ layer)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_while_loop_with_a_carried_bound() -> None:
    out = imported(WHILE_LOOP)
    x = np.arange(5, dtype=np.float32)
    got = run_global(out, {"in_0": x})
    want = x.copy()
    for i in range(4):
        want = want + want * np.float32(i)
    np.testing.assert_array_equal(got["out_0"], want)
    assert int(got["out_1"]) == 4


def test_cond_and_if_import_as_case() -> None:
    out = imported(COND)
    assert out.count("hlo.case") == 3 and "stablehlo" not in out
    x = np.array([-1.5, 0.0, 0.5, 2.0], np.float32)
    for pred in (False, True):
        for index in (-1, 0, 1, 2, 7):
            got = run_global(
                out, {"in_0": np.array(pred), "in_1": x, "in_2": np.array(index, np.int32)}
            )
            np.testing.assert_array_equal(got["out_0"], np.sin(x) if pred else -x)
            np.testing.assert_array_equal(got["out_1"], x if pred else np.exp(x))
            # an index out of range runs the last branch
            want = {0: x, 1: -x}.get(index, np.abs(x))
            np.testing.assert_array_equal(got["out_2"], want)


def test_sharded_scan_partitions_like_level_g() -> None:
    out = imported(SHARDED_SCAN)
    assert "spmd.mesh" in out
    partition_and_compare(out)


HLO_WHILE = """HloModule jit_loop, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

%cond (p: (s32[], f32[4])) -> pred[] {
  %p = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (q: (s32[], f32[4])) -> (s32[], f32[4]) {
  %q = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%q), index=0
  %x = f32[4]{0} get-tuple-element(%q), index=1
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %x1 = f32[4]{0} tanh(%x)
  ROOT %t = (s32[], f32[4]{0}) tuple(%i1, %x1)
}

%neg (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%a)
}

%same (b: f32[4]) -> f32[4] {
  ROOT %b = f32[4]{0} parameter(0)
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]{0}) tuple(%zero, %x)
  %w = (s32[], f32[4]{0}) while(%init), condition=%cond, body=%body
  %r = f32[4]{0} get-tuple-element(%w), index=1
  %k = s32[] get-tuple-element(%w), index=0
  %two = s32[] constant(2)
  %pred = pred[] compare(%k, %two), direction=GT
  %c = f32[4]{0} conditional(%pred, %r, %r), true_computation=%neg, false_computation=%same
  ROOT %s = f32[4]{0} conditional(%k, %r, %c), branch_computations={%same, %neg}
}
"""


def test_hlo_text_while_and_conditional() -> None:
    result = import_hlo_text(HLO_WHILE, "<test>")
    out = str(result.module)
    assert "hlo.while(" in out and out.count("hlo.case") == 2
    x = np.array([-1.0, 0.0, 0.5, 3.0], np.float32)
    got = run_global(out, {"in_0.0": x})["out_0.0"]  # a per-device program, one device
    r = np.tanh(np.tanh(np.tanh(x.astype(np.float64)))).astype(np.float32)
    # k = 3 > 2: %c = negate(%r) (the true computation); index k = 3 is out of range:
    # the last branch, %neg of its operand %c
    np.testing.assert_allclose(got, r, rtol=1e-6)


def test_regions_parse_in_the_shardc_context() -> None:
    # the imported text is a valid shardc program (parsed back)
    from shardc.parsing import parse_and_verify

    parse_and_verify(make_context(), imported(SCAN), "<test>")
