"""
The StableHLO importer on hand-written modules: op expansions against numpy, the sdy and
GSPMD sharding forms, manual computations, and every "not supported" path (one located
diagnostic each).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from shardc.diagnostics import DiagnosticError
from shardc.frontends.stablehlo import import_stablehlo, strip_locations
from shardc.interpreter.testing import run_global


def imported(text: str) -> str:
    return str(import_stablehlo(text, "test.mlir").module)


def module(body: str, args: str, results: str, mesh: str = "", attrs: str = "") -> str:
    return f"""module @m attributes {{mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32{attrs}}} {{
  {mesh}
  func.func public @main({args}) -> ({results}) {{
{body}
  }}
}}
"""


def error_of(text: str) -> str:
    with pytest.raises(DiagnosticError) as info:
        import_stablehlo(text, "test.mlir")
    message = str(info.value)
    assert message.startswith("test.mlir:"), message
    assert "Traceback" not in message
    return message


def test_expansions_match_numpy() -> None:
    body = """
    %0 = chlo.sinh %arg0 : tensor<16xf32> -> tensor<16xf32>
    %1 = chlo.cosh %arg0 : tensor<16xf32> -> tensor<16xf32>
    %2 = chlo.erf %arg0 : tensor<16xf32> -> tensor<16xf32>
    %3 = chlo.erfc %arg0 : tensor<16xf32> -> tensor<16xf32>
    %4 = stablehlo.tan %arg0 : tensor<16xf32>
    %5 = stablehlo.sign %arg0 : tensor<16xf32>
    %lo = stablehlo.constant dense<-0.5> : tensor<f32>
    %hi = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %6 = stablehlo.clamp %lo, %arg0, %hi : (tensor<f32>, tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
    %7 = stablehlo.exponential_minus_one %arg0 : tensor<16xf32>
    %a = stablehlo.abs %arg0 : tensor<16xf32>
    %8 = stablehlo.log_plus_one %a : tensor<16xf32>
    %9 = stablehlo.is_finite %arg0 : (tensor<16xf32>) -> tensor<16xi1>
    %10 = chlo.square %arg0 : tensor<16xf32> -> tensor<16xf32>
    %z = stablehlo.constant dense<0.000000e+00> : tensor<16xf32>
    %p = stablehlo.compare GT, %arg0, %z, FLOAT : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xi1>
    %n = stablehlo.not %p : tensor<16xi1>
    %11 = stablehlo.xor %p, %n : tensor<16xi1>
    %q = stablehlo.convert %arg0 : (tensor<16xf32>) -> tensor<16xi32>
    %three = stablehlo.constant dense<3> : tensor<16xi32>
    %r = stablehlo.remainder %q, %three : tensor<16xi32>
    %rf = stablehlo.convert %r : (tensor<16xi32>) -> tensor<16xf32>
    %x1 = stablehlo.convert %11 : (tensor<16xi1>) -> tensor<16xf32>
    %12 = stablehlo.add %x1, %rf : tensor<16xf32>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %12 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xi1>, tensor<16xf32>, tensor<16xf32>"""
    text = module(
        body,
        "%arg0: tensor<16xf32>",
        ", ".join(["tensor<16xf32>"] * 9 + ["tensor<16xi1>", "tensor<16xf32>", "tensor<16xf32>"]),
    )
    x = np.linspace(-7, 7, 16).astype(np.float32) / 3.5
    x[-1] = 6.5  # truncates to 6: remainder 0; the negative ones keep their sign
    out = run_global(imported(text), {"in_0": x})
    q = np.trunc(x).astype(np.int32)
    erf = np.array([math.erf(v) for v in x], dtype=np.float32)
    expect = [
        np.sinh(x),
        np.cosh(x),
        erf,
        1 - erf,
        np.tan(x),
        np.sign(x),
        np.clip(x, -0.5, 0.5),
        np.expm1(x),
        np.log1p(np.abs(x)),
        np.isfinite(x),
        x * x,
        1 + np.fmod(q, 3).astype(np.float32),
    ]
    for k, want in enumerate(expect):
        got = out[f"out_{k}"]
        if want.dtype == bool:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=f"out_{k}")


def test_reduce_region_init_and_generic_forms() -> None:
    body = """
    %init = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %init) across dimensions = [1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<4xf32>
     reducer(%a: tensor<f32>, %b: tensor<f32>)  {
      %s = stablehlo.add %b, %a : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }
    %ninf = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
    %1 = "stablehlo.reduce"(%arg0, %ninf) <{dimensions = array<i64: 0>}> ({
    ^bb0(%c: tensor<f32>, %d: tensor<f32>):
      %m = "stablehlo.maximum"(%c, %d) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%m) : (tensor<f32>) -> ()
    }) : (tensor<4x8xf32>, tensor<f32>) -> tensor<8xf32>
    %2 = "stablehlo.dot_general"(%arg0, %arg0) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision HIGHEST>]}> : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
    %3 = "stablehlo.compare"(%2, %2) <{comparison_direction = #stablehlo<comparison_direction GE>, compare_type = #stablehlo<comparison_type FLOAT>}> : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
    %i = stablehlo.iota dim = 1 : tensor<4x4xi32>
    %j = stablehlo.constant dense<2> : tensor<i64>
    %4 = stablehlo.dynamic_slice %arg0, %j, %j, sizes = [2, 3] : (tensor<4x8xf32>, tensor<i64>, tensor<i64>) -> tensor<2x3xf32>
    %5 = stablehlo.slice %arg0 [0:4:2, 1:8:3] : (tensor<4x8xf32>) -> tensor<2x3xf32>
    %6 = stablehlo.concatenate %4, %5, dim = 0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
    %7 = stablehlo.transpose %6, dims = [1, 0] : (tensor<4x3xf32>) -> tensor<3x4xf32>
    %8 = stablehlo.reshape %7 : (tensor<3x4xf32>) -> tensor<12xf32>
    return %0, %1, %3, %i, %8 : tensor<4xf32>, tensor<8xf32>, tensor<4x4xi1>, tensor<4x4xi32>, tensor<12xf32>"""
    text = module(
        body,
        "%arg0: tensor<4x8xf32>",
        "tensor<4xf32>, tensor<8xf32>, tensor<4x4xi1>, tensor<4x4xi32>, tensor<12xf32>",
    )
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    out = run_global(imported(text), {"in_0": x})
    np.testing.assert_allclose(out["out_0"], x.sum(1) + 1, rtol=1e-6)
    np.testing.assert_array_equal(out["out_1"], x.max(0))
    g = x @ x.T
    np.testing.assert_array_equal(out["out_2"], out["out_2"])
    assert out["out_2"].all()
    np.testing.assert_array_equal(out["out_3"], np.tile(np.arange(4, dtype=np.int32), (4, 1)))
    cat = np.concatenate([x[2:4, 2:5], x[0:4:2, 1:8:3]])
    np.testing.assert_array_equal(out["out_4"], cat.T.reshape(12))
    assert g.shape == (4, 4)


def test_private_functions_are_inlined() -> None:
    text = """module @m {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = call @twice(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @twice(%0) : (tensor<4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @twice(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""
    result = import_stablehlo(text, "t.mlir")
    assert result.stats.constructs["func.call (inlined)"] == 2
    program = str(result.module)
    assert "func.call" not in program and "@twice" not in program
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(run_global(program, {"in_0": x})["out_0"], 4 * x)


COMPOSITE = """module @m {
  func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<8xf32>) -> tensor<8xf32> {
    %0 = stablehlo.composite "my.scaled_tanh" %arg0, %arg1 {composite_attributes = {approximate = false}, decomposition = @my.scaled_tanh.impl, version = 1 : i32} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %1 = "stablehlo.composite"(%0, %arg1) {name = "my.scaled_tanh", decomposition = @my.scaled_tanh.impl} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    return %1 : tensor<8xf32>
  }
  func.func private @my.scaled_tanh.impl(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
    %0 = stablehlo.multiply %a, %b : tensor<8xf32>
    %1 = stablehlo.tanh %0 : tensor<8xf32>
    return %1 : tensor<8xf32>
  }
}
"""


def test_composites_are_inlined_by_their_decomposition() -> None:
    result = import_stablehlo(COMPOSITE, "t.mlir")
    assert result.stats.constructs["stablehlo.composite (inlined)"] == 2
    program = str(result.module)
    assert "composite" not in program and "@my" not in program
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    y = np.linspace(0.5, 2, 8, dtype=np.float32)
    got = run_global(program, {"in_0": x, "in_1": y})["out_0"]
    want = np.tanh(np.tanh(x.astype(np.float64) * y) * y)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_composite_without_its_decomposition_is_an_error() -> None:
    text = COMPOSITE.replace("decomposition = @my.scaled_tanh.impl}", "decomposition = @nope}")
    assert "call to @nope, which the module does not define" in error_of(text)


SDY_MESH = 'sdy.mesh @mesh = <["data"=2, "model"=4]>'


def test_sdy_shardings() -> None:
    body = """
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{?}, {?}]> : tensor<8x16xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{"model", ?}p1, {}], replicated={"data"}> : tensor<8x16xf32>
    return %1 : tensor<8x16xf32>"""
    text = module(
        body,
        '%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data", ?}p0, {?}]>, jax.buffer_donor = true}',
        'tensor<8x16xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{}, {}], unreduced={"model"}>}',
        SDY_MESH,
    )
    result = import_stablehlo(text, "t.mlir")
    program = str(result.module)
    assert 'spmd.mesh @mesh = <["data"=2, "model"=4]>' in program
    # open dims stay open (Shardy's semantics), keeping their axes and user priorities
    assert '#spmd.sharding<@mesh, [{"data", ?}p0, {?}]>' in program
    assert program.count("spmd.constraint") == 1  # the all-open constraint constrains nothing
    assert 'spmd.constraint %0 <@mesh, [{"model", ?}p1, {}]>' in program
    assert 'unreduced={"model"}' in program
    assert result.stats.constructs["sdy open dimension"] >= 2


def test_gspmd_shardings_make_one_mesh() -> None:
    text = """module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x8xf32> {mhlo.sharding = "{devices=[2,2]0,2,1,3}"}, %arg1: tensor<8xf32> {mhlo.sharding = "{maximal device=0}"}) -> (tensor<8x8xf32> {mhlo.sharding = "{devices=[1,2,2]<=[4] last_tile_dim_replicate}"}) {
    %0 = stablehlo.custom_call @Sharding(%arg0) {mhlo.sharding = "{replicated}"} : (tensor<8x8xf32>) -> tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
}
"""
    result = import_stablehlo(text, "t.mlir")
    program = str(result.module)
    assert 'spmd.mesh @mesh = <["a"=2, "b"=2]>' in program
    # devices [[0,2],[1,3]]: dim 0 moves by 1 (axis b), dim 1 by 2 (axis a)
    assert '#spmd.sharding<@mesh, [{"b"}, {"a"}]>' in program
    assert "#spmd.sharding<@mesh, [{}]>" in program  # maximal: read as replicated
    assert '#spmd.sharding<@mesh, [{}, {"a"}]>' in program  # [1,2,2]<=[4]: dim 1 moves by 2
    assert "spmd.constraint %0 <@mesh, [{}, {}]>" in program
    assert "mhlo.sharding maximal (as replicated)" in result.stats.seen()


def test_manual_computations_chain_and_elementwise_around() -> None:
    text = module(
        """
    %c = stablehlo.constant dense<3.000000e+00> : tensor<16x4xf32>
    %x = stablehlo.multiply %arg0, %c : tensor<16x4xf32>
    %0 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%a: tensor<2x4xf32>) {
      %n = stablehlo.negate %a : tensor<2x4xf32>
      sdy.return %n : tensor<2x4xf32>
    } : (tensor<16x4xf32>) -> tensor<16x4xf32>
    %1 = sdy.manual_computation(%0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{}, {}]>] manual_axes={"x"} (%b: tensor<2x4xf32>) {
      %s = "stablehlo.all_gather"(%b) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>, replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>, use_global_device_ids}> : (tensor<2x4xf32>) -> tensor<16x4xf32>
      sdy.return %s : tensor<16x4xf32>
    } : (tensor<16x4xf32>) -> tensor<16x4xf32>
    %2 = stablehlo.exponential %1 : tensor<16x4xf32>
    return %2 : tensor<16x4xf32>""",
        '%arg0: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}',
        "tensor<16x4xf32>",
        'sdy.mesh @mesh = <["x"=8]>',
    )
    result = import_stablehlo(text, "t.mlir")
    assert result.stats.level == "S"
    program = str(result.module)
    assert "spmd.partitioned" in program
    assert "collective.all_gather %" in program and 'on @mesh["x"], dim = 0' in program
    x = np.random.default_rng(1).standard_normal((16, 4)).astype(np.float32)
    out = run_global(program, {"in_0": x})
    np.testing.assert_allclose(out["out_0"], np.exp(-3 * x), rtol=1e-6)


def test_strip_locations_keeps_positions() -> None:
    text = '#loc1 = loc("x")\nfunc @f() loc(#loc1) {\n  "a(loc(" loc(callsite(#a at #b))\n}\n#loc2 = loc("y":1:2)\n'
    stripped = strip_locations(text)
    assert len(stripped) == len(text)
    assert stripped.count("\n") == text.count("\n")
    assert "loc(" not in stripped.replace('"a(loc("', "")
    assert '"a(loc("' in stripped


BAD = {
    "sub-axis": (
        module(
            "    return %arg0 : tensor<8xf32>",
            '%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x":(1)2}]>}',
            "tensor<8xf32>",
            'sdy.mesh @mesh = <["x"=8]>',
        ),
        'sub-axis "x":(1)2 is not supported',
    ),
    "device ids": (
        module(
            "    return %arg0 : tensor<8xf32>",
            "%arg0: tensor<8xf32>",
            "tensor<8xf32>",
            'sdy.mesh @mesh = <["x"=2], device_ids=[1, 0]>',
        ),
        "device_ids=[1, 0] is not supported",
    ),
    "totalorder": (
        module(
            "    %0 = stablehlo.compare LT, %arg0, %arg0, TOTALORDER : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>\n    return %0 : tensor<8xi1>",
            "%arg0: tensor<8xf32>",
            "tensor<8xi1>",
        ),
        "TOTALORDER",
    ),
    "reduce body with an unsupported op": (
        module(
            """    %c = stablehlo.constant dense<0.0> : tensor<f32>
    %i = stablehlo.iota dim = 0 : tensor<8xi32>
    %z = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.reduce(%arg0 init: %c), (%i init: %z) across dimensions = [0] : (tensor<8xf32>, tensor<8xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)
     reducer(%a: tensor<f32>, %b: tensor<f32>) (%e: tensor<i32>, %f: tensor<i32>)  {
      %l = chlo.conj %a : tensor<f32> -> tensor<f32>
      %g = stablehlo.compare GT, %l, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %h = stablehlo.select %g, %a, %b : tensor<i1>, tensor<f32>
      %k = stablehlo.select %g, %e, %f : tensor<i1>, tensor<i32>
      stablehlo.return %h, %k : tensor<f32>, tensor<i32>
    }
    return %0#1 : tensor<i32>""",
            "%arg0: tensor<8xf32>",
            "tensor<i32>",
        ),
        "the body uses chlo.conj, which shardc does not support",
    ),
    "custom call": (
        module(
            "    %0 = stablehlo.custom_call @mystery(%arg0) : (tensor<8xf32>) -> tensor<8xf32>\n    return %0 : tensor<8xf32>",
            "%arg0: tensor<8xf32>",
            "tensor<8xf32>",
        ),
        "custom_call @mystery is not supported",
    ),
    "collective outside shard_map": (
        module(
            '    %0 = "stablehlo.collective_permute"(%arg0) <{source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>}> : (tensor<8xf32>) -> tensor<8xf32>\n    return %0 : tensor<8xf32>',
            "%arg0: tensor<8xf32>",
            "tensor<8xf32>",
        ),
        "outside a manual computation",
    ),
    "unsupported element type": (
        module(
            "    %0 = stablehlo.add %arg0, %arg0 : tensor<8xsi32>\n    return %0 : tensor<8xsi32>",
            "%arg0: tensor<8xsi32>",
            "tensor<8xsi32>",
        ),
        "element type si32",
    ),
    "shard_map in a shard_map": (
        module(
            """    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %1 = sdy.manual_computation(%0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%a: tensor<1x8xf32>) {
      %2 = sdy.manual_computation(%a) in_shardings=[<@mesh, [{}, {}]>] out_shardings=[<@mesh, [{}, {}]>] manual_axes={"x"} (%b: tensor<1x8xf32>) {
        sdy.return %b : tensor<1x8xf32>
      } : (tensor<1x8xf32>) -> tensor<1x8xf32>
      sdy.return %2 : tensor<1x8xf32>
    } : (tensor<8x8xf32>) -> tensor<8x8xf32>
    return %1 : tensor<8x8xf32>""",
            "%arg0: tensor<8x8xf32>",
            "tensor<8x8xf32>",
            'sdy.mesh @mesh = <["x"=8]>',
        ),
        "a shard_map nested in a manual computation is not supported",
    ),
    "free axis before a manual axis": (
        module(
            """    %1 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"model", "data"}, {}]>] out_shardings=[<@mesh, [{"data"}, {"model"}]>] manual_axes={"data"} (%a: tensor<4x4xf32>) {
      sdy.return %a : tensor<4x4xf32>
    } : (tensor<8x16xf32>) -> tensor<8x16xf32>
    return %1 : tensor<8x16xf32>""",
            "%arg0: tensor<8x16xf32>",
            "tensor<8x16xf32>",
            SDY_MESH,
        ),
        'a manual axis follows the free axis "model"',
    ),
    "mixed sharding forms": (
        module(
            "    return %arg0 : tensor<8xf32>",
            '%arg0: tensor<8xf32> {mhlo.sharding = "{replicated}"}',
            "tensor<8xf32>",
            'sdy.mesh @mesh = <["x"=8]>',
        ),
        "mixes Shardy",
    ),
    "bad gspmd string": (
        module(
            "    return %arg0 : tensor<8xf32>",
            '%arg0: tensor<8xf32> {mhlo.sharding = "{devices=[3]<=[8]}"}',
            "tensor<8xf32>",
        ),
        "bad mhlo.sharding",
    ),
    "undefined mesh": (
        module(
            "    return %arg0 : tensor<8xf32>",
            "%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@other, [{}]>}",
            "tensor<8xf32>",
            'sdy.mesh @mesh = <["x"=8]>',
        ),
        "mesh @other, which is not declared",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_unsupported_input_is_one_located_error(case: str) -> None:
    text, expected = BAD[case]
    message = error_of(text)
    assert expected in message, message
    assert message.count("error:") == 1


def test_constant_forms() -> None:
    """Splat, dense, bool, hexadecimal elements (inf) and the hex blob MLIR prints for
    large constants."""
    blob = np.arange(300, dtype=np.float32) * 0.5
    hexblob = "0x" + blob.astype("<f4").tobytes().hex().upper()
    text = module(
        f"""
    %a = stablehlo.constant dense<[[1.5, -2.0], [3.0, 4.25]]> : tensor<2x2xf32>
    %b = stablehlo.constant dense<[true, false]> : tensor<2xi1>
    %c = stablehlo.constant dense<[0x7F800000, 0xFF800000]> : tensor<2xf32>
    %d = stablehlo.constant dense<"{hexblob}"> : tensor<300xf32>
    %e = stablehlo.constant dense<7> : tensor<3xi64>
    return %a, %b, %c, %d, %e : tensor<2x2xf32>, tensor<2xi1>, tensor<2xf32>, tensor<300xf32>, tensor<3xi64>""",
        "",
        "tensor<2x2xf32>, tensor<2xi1>, tensor<2xf32>, tensor<300xf32>, tensor<3xi64>",
    )
    out = run_global(imported(text), {})
    np.testing.assert_array_equal(out["out_0"], [[1.5, -2.0], [3.0, 4.25]])
    np.testing.assert_array_equal(out["out_1"], [True, False])
    np.testing.assert_array_equal(out["out_2"], [np.inf, -np.inf])
    np.testing.assert_array_equal(out["out_3"], blob)
    np.testing.assert_array_equal(out["out_4"], [7, 7, 7])


def test_elementwise_ops_of_issue_13_import_as_one_hlo_op_each() -> None:
    body = """
    %0 = chlo.erfc %arg0 : tensor<8xbf16> -> tensor<8xbf16>
    %1 = stablehlo.exponential_minus_one %arg0 : tensor<8xbf16>
    %2 = chlo.sinh %arg0 : tensor<8xbf16> -> tensor<8xbf16>
    %3 = stablehlo.round_nearest_afz %arg0 : tensor<8xbf16>
    %4 = stablehlo.atan2 %arg0, %arg0 : tensor<8xbf16>
    %5 = stablehlo.shift_left %arg1, %arg2 : tensor<8xi32>
    %6 = stablehlo.shift_right_logical %arg1, %arg2 : tensor<8xi32>
    %7 = stablehlo.shift_right_arithmetic %arg1, %arg2 : tensor<8xi32>
    %8 = stablehlo.xor %arg1, %arg2 : tensor<8xi32>
    %9 = stablehlo.popcnt %arg1 : tensor<8xi32>
    %10 = stablehlo.count_leading_zeros %arg1 : tensor<8xi32>
    %11 = stablehlo.remainder %arg0, %arg0 : tensor<8xbf16>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11 : tensor<8xbf16>, tensor<8xbf16>, tensor<8xbf16>, tensor<8xbf16>, tensor<8xbf16>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xbf16>"""
    text = module(
        body,
        "%arg0: tensor<8xbf16>, %arg1: tensor<8xi32>, %arg2: tensor<8xi32>",
        ", ".join(["tensor<8xbf16>"] * 5 + ["tensor<8xi32>"] * 6 + ["tensor<8xbf16>"]),
    )
    program = imported(text)
    for op in (
        "erfc",
        "expm1",
        "sinh",
        "round_nearest_afz",
        "atan2",
        "shift_left",
        "shift_right_logical",
        "shift_right_arithmetic",
        "xor",
        "popcnt",
        "count_leading_zeros",
        "remainder",
    ):
        assert program.count(f"hlo.{op} ") == 1, op
    # nothing else computes: no expansion left behind
    assert "hlo.exp " not in program and "hlo.sub " not in program
    bf16 = np.dtype(ml_dtypes.bfloat16)
    x = np.array([-4.0, -0.5, 1e-3, 2.5, 3.0, 0.75, -2.5, 5.0]).astype(bf16)
    a = np.array([1, -1, 7, -(2**31), 2**31 - 1, 12, 5, 0], dtype=np.int32)
    b = np.array([0, 31, 32, 1, -1, 3, 40, 4], dtype=np.int32)
    out = run_global(program, {"in_0": x, "in_1": a, "in_2": b})
    xf = x.astype(np.float64)
    erfc = np.array([math.erfc(v) for v in xf]).astype(bf16)
    np.testing.assert_array_equal(out["out_0"], erfc)  # the expansion was 30,000 ULP off
    np.testing.assert_array_equal(out["out_1"], np.expm1(xf).astype(bf16))
    np.testing.assert_array_equal(out["out_2"], np.sinh(xf).astype(bf16))
    np.testing.assert_array_equal(out["out_3"], np.array([-4, -1, 0, 3, 3, 1, -3, 5]).astype(bf16))
    ua, ub = a.view(np.uint32).astype(np.int64), b.astype(np.int64)
    shl = np.where((ub >= 0) & (ub < 32), (ua << np.clip(ub, 0, 31)) & 0xFFFFFFFF, 0)
    np.testing.assert_array_equal(out["out_5"], shl.astype(np.uint32).view(np.int32))
    shr = np.where((ub >= 0) & (ub < 32), ua >> np.clip(ub, 0, 31), 0)
    np.testing.assert_array_equal(out["out_6"], shr.astype(np.uint32).view(np.int32))
    sra = a.astype(np.int64) >> np.where((ub >= 0) & (ub < 32), ub, 31)
    np.testing.assert_array_equal(out["out_7"], sra.astype(np.int32))
    np.testing.assert_array_equal(out["out_8"], a ^ b)
    np.testing.assert_array_equal(out["out_9"], [bin(int(v)).count("1") for v in ua])
    np.testing.assert_array_equal(out["out_10"], [32 - int(v).bit_length() for v in ua])
    assert not np.any(out["out_11"].astype(np.float32))  # x rem x = +-0


def test_multi_operand_optimization_barrier_pretty_form() -> None:
    # jax.checkpoint's residuals: one type per operand, the results alike
    text = """module @m {
  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<2x3xf32>) -> (tensor<4xf32>, tensor<2x3xf32>) {
    %0:2 = stablehlo.optimization_barrier %arg0, %arg1 : tensor<4xf32>, tensor<2x3xf32>
    %1 = stablehlo.negate %0#1 : tensor<2x3xf32>
    return %0#0, %1 : tensor<4xf32>, tensor<2x3xf32>
  }
}
"""
    program = imported(text)
    x, y = np.arange(4, dtype=np.float32), np.ones((2, 3), np.float32)
    out = run_global(program, {"in_0": x, "in_1": y})
    np.testing.assert_array_equal(out["out_0"], x)
    np.testing.assert_array_equal(out["out_1"], -y)
