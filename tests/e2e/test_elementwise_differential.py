"""
Level S against level G for the element-wise ops of issue 13: hypothesis draws a mesh,
shapes, argument / result shardings and resharding constraints, and a chain of the ops
(floats and integers, clamp with rank-0 and full bounds, is_finite into xor);
`spmd-pipeline` partitions it with the element-wise rule and the partitioned program must
give the same numbers, bit for bit (the ops are element-wise: each element is computed the
same way on whichever device holds it).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import make_context
from shardc.interpreter import io
from shardc.parsing import parse_and_verify
from shardc.passes.spmd_pipeline import SpmdPipelinePass
from shardc.tests.e2e.differential import compile_and_compare, partition_and_compare
from shardc.tests.unit.strategies import draw_mesh_dims

CTX = make_context()

MESHES = [
    (("x", 2),),
    (("x", 4),),
    (("a", 2), ("b", 2)),
    (("a", 2), ("b", 4)),
    (("a", 2), ("b", 2), ("c", 2)),
]
SIZES = [2, 4, 8]
FLOAT_UNARY = [
    "ceil",
    "floor",
    "round_nearest_even",
    "round_nearest_afz",
    "sign",
    "cbrt",
    "expm1",
    "log1p",
    "erf",
    "erfc",
    "sinh",
    "cosh",
    "tan",
]
FLOAT_BINARY = ["remainder", "atan2"]
INT_UNARY = ["popcnt", "count_leading_zeros", "sign"]
INT_BINARY = ["xor", "shift_left", "shift_right_logical", "shift_right_arithmetic", "remainder"]


def ty(shape: tuple[int, ...], elem: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{elem}>" if shape else f"tensor<{elem}>"


def sharding(draw: st.DrawFn, mesh: tuple[tuple[str, int], ...], shape: tuple[int, ...]) -> str:
    """A random valid sharding: each axis at most once, products divide the sizes."""
    dims = draw_mesh_dims(draw, mesh, shape)
    inner = ", ".join("{" + ", ".join(f'"{a}"' for a in d) + "}" for d in dims)
    return f"<@mesh, [{inner}]>"


@st.composite
def elementwise_programs(draw: st.DrawFn) -> str:
    mesh = draw(st.sampled_from(MESHES))
    shape = tuple(draw(st.sampled_from(SIZES)) for _ in range(draw(st.integers(1, 3))))
    args = [("%f0", "f32"), ("%f1", "f32"), ("%i0", "i32"), ("%i1", "i32")]
    values = {"f32": ["%f0", "%f1"], "i32": ["%i0", "%i1"], "i1": []}
    lines: list[str] = []

    def emit(text: str, elem: str) -> None:
        name = f"%v{len(lines)}"
        lines.append(f"  {name} = {text}")
        values[elem].append(name)

    def pick(elem: str) -> str:
        return draw(st.sampled_from(values[elem]))

    t = {e: ty(shape, e) for e in ("f32", "i32", "i1")}
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["fu", "fb", "iu", "ib", "clamp", "fin", "constraint"]))
        if kind == "fu":
            emit(f"hlo.{draw(st.sampled_from(FLOAT_UNARY))} {pick('f32')} : {t['f32']}", "f32")
        elif kind == "fb":
            op = draw(st.sampled_from(FLOAT_BINARY))
            emit(f"hlo.{op} {pick('f32')}, {pick('f32')} : {t['f32']}", "f32")
        elif kind == "iu":
            emit(f"hlo.{draw(st.sampled_from(INT_UNARY))} {pick('i32')} : {t['i32']}", "i32")
        elif kind == "ib":
            op = draw(st.sampled_from(INT_BINARY))
            emit(f"hlo.{op} {pick('i32')}, {pick('i32')} : {t['i32']}", "i32")
        elif kind == "clamp":
            if draw(st.booleans()):
                types = f"(tensor<f32>, {t['f32']}, tensor<f32>) -> {t['f32']}"
                emit(f"hlo.clamp %lo, {pick('f32')}, %hi : {types}", "f32")
            else:
                types = f"({t['f32']}, {t['f32']}, {t['f32']}) -> {t['f32']}"
                emit(f"hlo.clamp {pick('f32')}, {pick('f32')}, {pick('f32')} : {types}", "f32")
        elif kind == "fin":
            emit(f"hlo.is_finite {pick('f32')} : ({t['f32']}) -> {t['i1']}", "i1")
            if len(values["i1"]) > 1:
                emit(f"hlo.xor {pick('i1')}, {pick('i1')} : {t['i1']}", "i1")
        else:
            elem = draw(st.sampled_from(["f32", "i32"]))
            sh = sharding(draw, mesh, shape)
            emit(f"spmd.constraint {pick(elem)} {sh} : {t[elem]}", elem)
    produced = [(v, e) for e in ("f32", "i32", "i1") for v in values[e] if v.startswith("%v")]
    results = produced[-3:] or [("%f0", "f32")]
    mesh_text = ", ".join(f'"{a}"={n}' for a, n in mesh)
    arg_text = ", ".join(
        f"{n}: {t[e]} {{spmd.sharding = #spmd.sharding{sharding(draw, mesh, shape)}}}"
        for n, e in args
    )
    arg_text += ", %lo: tensor<f32>, %hi: tensor<f32>"
    res_text = ", ".join(
        f"{t[e]} {{spmd.sharding = #spmd.sharding{sharding(draw, mesh, shape)}}}"
        for _, e in results
    )
    body = "\n".join(lines)
    ret = ", ".join(v for v, _ in results)
    ret_types = ", ".join(t[e] for _, e in results)
    return (
        f"spmd.mesh @mesh = <[{mesh_text}]>\n"
        f"func.func @main({arg_text}) -> ({res_text}) {{\n{body}\n"
        f"  func.return {ret} : {ret_types}\n}}\n"
    )


def inputs_for(module, seed: int) -> dict[str, np.ndarray]:
    function = io.find_entry(module, None, "<generated>")
    inputs = io.random_inputs(io.signature(module, function, "<generated>"), seed)
    rng = np.random.default_rng(seed)
    for name, x in inputs.items():
        if x.dtype == np.float32 and x.ndim:
            # halves, zeros, large and non-finite values exercise rounding, clamp, is_finite
            x = x * 3
            x.flat[:: max(1, x.size // 3)] = rng.choice([0.5, -2.5, -0.0, 40.0, np.inf, np.nan])
            inputs[name] = x.astype(np.float32)
        elif x.dtype == np.int32:
            inputs[name] = rng.integers(-(2**31), 2**31, x.shape, dtype=np.int64).astype(np.int32)
            inputs[name].flat[::2] = rng.integers(-40, 40, inputs[name].flat[::2].shape)
    return inputs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(elementwise_programs(), st.integers(0, 3))
def test_elementwise_ops_partition_to_the_same_numbers(text: str, seed: int) -> None:
    module = parse_and_verify(CTX, text, "<generated>")
    partition_and_compare(text, exact=True, inputs=inputs_for(module, seed), note=text)


def test_partitioned_elementwise_chain_keeps_the_sharding_and_needs_no_collective() -> None:
    text = """spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%x: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>},
                %n: tensor<8x4xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>},
                %s: tensor<f32>)
    -> (tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>},
        tensor<8x4xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}) {
  %0 = hlo.erfc %x : tensor<8x4xf32>
  %1 = hlo.clamp %s, %0, %s : (tensor<f32>, tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
  %2 = hlo.shift_right_arithmetic %n, %n : tensor<8x4xi32>
  %3 = hlo.popcnt %2 : tensor<8x4xi32>
  func.return %1, %3 : tensor<8x4xf32>, tensor<8x4xi32>
}
"""
    module = parse_and_verify(CTX, text, "<test>")
    SpmdPipelinePass(fusion=False).apply(CTX, module)  # the unfused ops, by name
    printed = str(module)
    assert "collective." not in printed
    assert "hlo.erfc %x : tensor<4x2xf32>" in printed
    assert "(tensor<f32>, tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>" in printed


def test_micro_batch_splits_clamp_and_is_finite_into_chunks() -> None:
    text = """spmd.mesh @m = <["x"=2, "y"=2]>
func.func @main(%a: tensor<16x128xf32> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {"y"}]>}, %s: tensor<f32>)
    -> (tensor<16x128xf32> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {}]>},
        tensor<16x128xi1> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {}]>}) {
  %0 = hlo.expm1 %a : tensor<16x128xf32>
  %1 = hlo.clamp %s, %0, %s : (tensor<f32>, tensor<16x128xf32>, tensor<f32>) -> tensor<16x128xf32>
  %2 = spmd.constraint %1 <@m, [{"x"}, {}]> : tensor<16x128xf32>
  %3 = hlo.is_finite %2 : (tensor<16x128xf32>) -> tensor<16x128xi1>
  %4 = hlo.erfc %2 : tensor<16x128xf32>
  func.return %4, %3 : tensor<16x128xf32>, tensor<16x128xi1>
}
"""
    inputs = inputs_for(parse_and_verify(CTX, text, "<test>"), 0)
    spec = "spmd-propagate,spmd-partition,micro-batch{chunks=2 force=true}"
    printed = compile_and_compare(text, spec, inputs)
    assert printed.count("hlo.clamp") == 2 and printed.count("hlo.is_finite") == 2
