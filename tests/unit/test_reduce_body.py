"""
hlo.reduce with a body (several operands reduced together): argmax / argmin as JAX writes
them (value and index, NaN-propagating compares, lowest index on ties) against np.argmax /
np.argmin on hypothesis-generated shapes, reduced dimensions and tie-heavy values; a body
that sums two operands at once against numpy; the named-combiner form is unchanged; the
cost model and `lower-to-tpu`'s located refusal.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.diagnostics import OpPassError
from shardc.dialects import hlo, make_context
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel
from shardc.interpreter.testing import parse, run_global
from shardc.lowering.lower_to_tpu import LowerToTpuPass


def ty(shape, dtype: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>" if len(shape) else f"tensor<{dtype}>"


def arg_body(direction: str, dtype: str = "f32") -> str:
    """JAX's argmax (GT) / argmin (LT) body: NaN wins, then the better value, then the
    lower index on equal values."""
    v, i = f"tensor<{dtype}>", "tensor<i32>"
    nan = (
        f"""    %nan = hlo.compare NE, %a, %a : ({v}, {v}) -> tensor<i1>
    %better = hlo.or %cmp, %nan : tensor<i1>
"""
        if dtype != "i32"
        else "    %better = hlo.or %cmp, %cmp : tensor<i1>\n"
    )
    return f"""reducer(%a: {v}, %b: {v}) (%c: {i}, %d: {i}) {{
    %cmp = hlo.compare {direction}, %a, %b : ({v}, {v}) -> tensor<i1>
{nan}    %eq = hlo.compare EQ, %a, %b : ({v}, {v}) -> tensor<i1>
    %lt = hlo.compare LT, %c, %d : ({i}, {i}) -> tensor<i1>
    %tie = hlo.and %eq, %lt : tensor<i1>
    %keep = hlo.or %better, %tie : tensor<i1>
    %bx = hlo.select %keep, %a, %b : tensor<i1>, {v}
    %by = hlo.select %keep, %c, %d : tensor<i1>, {i}
    hlo.return %bx, %by : {v}, {i}
  }}"""


def argmax_program(shape, dim: int, direction: str, dtype: str = "f32") -> str:
    out = [n for d, n in enumerate(shape) if d != dim]
    x, i, r, ri = ty(shape, dtype), ty(shape, "i32"), ty(out, dtype), ty(out, "i32")
    init = {
        "f32": "0xFF800000" if direction == "GT" else "0x7F800000",
        "i32": "-2147483648" if direction == "GT" else "2147483647",
    }[dtype]
    return f"""func.func @main(%x: {x}) -> ({r}, {ri}) {{
  %v0 = hlo.constant dense<{init}> : tensor<{dtype}>
  %i0 = hlo.constant dense<0> : tensor<i32>
  %iota = hlo.iota dim = {dim} : {i}
  %r:2 = hlo.reduce(%x init: %v0), (%iota init: %i0) across dims = [{dim}] : ({x}, {i}, tensor<{dtype}>, tensor<i32>) -> ({r}, {ri}) {arg_body(direction, dtype)}
  func.return %r#0, %r#1 : {r}, {ri}
}}"""


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 5), min_size=1, max_size=3),
    st.data(),
    st.sampled_from(["GT", "LT"]),
    st.sampled_from(["f32", "i32"]),
    st.integers(0, 2**32 - 1),
)
def test_argmax_and_argmin_match_numpy(shape, data, direction: str, dtype: str, seed: int) -> None:
    dim = data.draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, shape).astype(np.float32 if dtype == "f32" else np.int32)  # ties
    if dtype == "f32" and data.draw(st.booleans()):
        x[tuple(rng.integers(0, n) for n in shape)] = np.nan  # jnp.argmax: the first NaN
    out = run_global(argmax_program(shape, dim, direction, dtype), {"in_0": x})
    pick = np.argmax if direction == "GT" else np.argmin  # the first index on ties, NaN first
    want = pick(x, axis=dim)
    np.testing.assert_array_equal(out["out_1"], want.astype(np.int32))
    np.testing.assert_array_equal(
        out["out_0"], np.take_along_axis(x, np.expand_dims(want, dim), dim).squeeze(dim)
    )


def test_a_body_summing_two_operands_over_two_dims() -> None:
    text = """func.func @main(%x: tensor<3x4x5xf32>, %y: tensor<3x4x5xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %z = hlo.constant dense<1.0> : tensor<f32>
  %zi = hlo.constant dense<0> : tensor<i32>
  %r:2 = hlo.reduce(%x init: %z), (%y init: %zi) across dims = [0, 2] : (tensor<3x4x5xf32>, tensor<3x4x5xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>) reducer(%a: tensor<f32>, %b: tensor<f32>) (%c: tensor<i32>, %d: tensor<i32>) {
    %s = hlo.add %a, %b : tensor<f32>
    %m = hlo.max %c, %d : tensor<i32>
    hlo.return %s, %m : tensor<f32>, tensor<i32>
  }
  func.return %r#0, %r#1 : tensor<4xf32>, tensor<4xi32>
}"""
    rng = np.random.default_rng(0)
    x = rng.integers(-5, 5, (3, 4, 5)).astype(np.float32)
    y = rng.integers(-100, 100, (3, 4, 5)).astype(np.int32)
    out = run_global(text, {"in_0": x, "in_1": y})
    np.testing.assert_array_equal(out["out_0"], 1 + x.sum(axis=(0, 2)))
    np.testing.assert_array_equal(out["out_1"], np.maximum(0, y.max(axis=(0, 2))))


def test_named_form_is_unchanged_and_the_region_form_has_no_kind() -> None:
    module = parse(argmax_program((4, 8), 1, "GT"))
    (op,) = [o for o in module.walk() if isinstance(o, hlo.ReduceOp)]
    assert op.has_body and op.kind is None and len(op.inputs) == 2 and len(op.inits) == 2
    named = parse("""func.func @main(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %r = hlo.reduce max %x, dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}""")
    (red,) = [o for o in named.walk() if isinstance(o, hlo.ReduceOp)]
    assert not red.has_body and red.kind is not None and red.inits == () and red.body is None
    assert "hlo.reduce max %x, dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>" in str(named)


def test_cost_counts_the_body_ops_per_element() -> None:
    module = parse(argmax_program((4, 8), 1, "GT"))
    (op,) = [o for o in module.walk() if isinstance(o, hlo.ReduceOp)]
    cost = CostModel(get_chip("v5e")).op_cost(op)
    assert cost.flops == 32 * 9  # nine body ops before hlo.return


def test_lower_to_tpu_refuses_a_body_op_it_does_not_lower_at_the_reduce() -> None:
    """(A body of lowered ops lowers: tests/unit/test_lower_reduce_body.py.)"""
    from shardc.passes.spmd_pipeline import SpmdPipelinePass

    select = "%bx = hlo.select %keep, %a, %b : tensor<i1>, tensor<f32>"
    odd = (
        select.replace("%bx", "%bx0")
        + "\n    %fin = hlo.is_finite %bx0 : (tensor<f32>) -> tensor<i1>"
    )
    odd += "\n    %bx = hlo.select %fin, %bx0, %b : tensor<i1>, tensor<f32>"
    program = argmax_program((8, 128), 1, "GT").replace(select, odd)
    text = 'spmd.mesh @mesh = <["x"=2]>\n' + program
    module = parse(text, "am.mlir")
    ctx = make_context()
    SpmdPipelinePass().apply(ctx, module)
    with pytest.raises(OpPassError) as info:
        LowerToTpuPass(chip="v5e").apply(ctx, module)
    assert "lower-to-tpu: hlo.reduce with hlo.is_finite in its body is not supported yet" in str(
        info.value
    )
    assert info.value.op.name == "hlo.reduce" and "am.mlir" in str(info.value.op.location)
