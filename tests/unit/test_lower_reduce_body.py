"""
`lower-to-tpu` of `hlo.reduce` with a body (lowering/reduce_body.py, issue 15 item 3):
hypothesis-generated shapes, reduced dimensions (in any listed order), element types and
bodies (JAX's argmax / argmin pairs with ties and NaNs; an order-sensitive float fold,
(acc + x) / 2, whose result changes with any other combination order; a two-operand
sum-and-max), with the inits as arguments, lowered with the default and with a small VMEM
(many reduced blocks), simulated at level T on 2 devices and compared with level S bit
for bit. A body op that is not lowered is refused at the reduce, naming it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from shardc.diagnostics import OpPassError
from shardc.dialects import make_context
from shardc.interpreter.testing import parse
from shardc.interpreter.values import dtype_of
from shardc.lowering.lower_to_tpu import LowerToTpuPass
from shardc.tests.unit.test_lower_movement import DEVICES, check, parse_type

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLOATS = ["f32", "bf16", "f16", "f64", "f8E4M3FN", "f8E5M2"]
INTS = ["i32", "i8", "ui16", "i64"]
SIZES = [1, 3, 8, 16, 128, 256]


def ty(shape, dtype: str) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{dtype}>"


def arg_body(direction: str, v: str) -> str:
    """JAX's argmax (GT) / argmin (LT) body: NaN wins, the better value, the lower index."""
    s = "tensor<i32>"
    return f"""reducer(%a: {v}, %b: {v}) (%c: {s}, %d: {s}) {{
    %cmp = hlo.compare {direction}, %a, %b : ({v}, {v}) -> tensor<i1>
    %nan = hlo.compare NE, %a, %a : ({v}, {v}) -> tensor<i1>
    %better = hlo.or %cmp, %nan : tensor<i1>
    %eq = hlo.compare EQ, %a, %b : ({v}, {v}) -> tensor<i1>
    %lt = hlo.compare LT, %c, %d : ({s}, {s}) -> tensor<i1>
    %tie = hlo.and %eq, %lt : tensor<i1>
    %keep = hlo.or %better, %tie : tensor<i1>
    %bx = hlo.select %keep, %a, %b : tensor<i1>, {v}
    %by = hlo.select %keep, %c, %d : tensor<i1>, {s}
    hlo.return %bx, %by : {v}, {s}
  }}"""


def halving_body(v: str, dtype: str) -> str:
    """(acc + x) * 0.5 (floats) or acc * 3 + x (integers, wrapping): order-sensitive."""
    k = "5.000000e-01" if dtype in FLOATS else "3"
    return f"""reducer(%a: {v}, %b: {v}) {{
    %k = hlo.constant dense<{k}> : {v}
    %m = hlo.mul %a, %k : {v}
    %s = hlo.add %m, %b : {v}
    hlo.return %s : {v}
  }}"""


def sum_max_body(v: str, w: str) -> str:
    return f"""reducer(%a: {v}, %b: {v}) (%c: {w}, %d: {w}) {{
    %s = hlo.add %a, %b : {v}
    %m = hlo.max %c, %d : {w}
    hlo.return %s, %m : {v}, {w}
  }}"""


def reduce_program(shape, dims, dtype: str, kind: str, other: str = "i32") -> tuple[str, list]:
    """The program (inputs, then the inits as rank-0 arguments) and its argument types."""
    out = [n for d, n in enumerate(shape) if d not in dims]
    v = ty((), dtype)
    dl = ", ".join(map(str, dims))
    if kind == "halving":
        args = [ty(shape, dtype), v]
        line = (
            f"%r = hlo.reduce(%a0 init: %a1) across dims = [{dl}] : ({args[0]}, {v}) -> "
            f"{ty(out, dtype)} {halving_body(v, dtype)}"
        )
        rets = [ty(out, dtype)]
    else:
        second = "i32" if kind != "sum_max" else other
        w = ty((), second)
        args = [ty(shape, dtype), ty(shape, second), v, w]
        body = arg_body(kind, v) if kind in ("GT", "LT") else sum_max_body(v, w)
        rets = [ty(out, dtype), ty(out, second)]
        line = (
            f"%r:2 = hlo.reduce(%a0 init: %a2), (%a1 init: %a3) across dims = [{dl}] : "
            f"({', '.join(args)}) -> ({', '.join(rets)}) {body}"
        )
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(args))
    names = "%r" if len(rets) == 1 else "%r#0, %r#1"
    text = f"""spmd.mesh @m = <["x"={DEVICES}]>
func.func @main({params}) -> ({", ".join(rets)}) attributes {{spmd.per_device_io}} {{
  {line}
  func.return {names} : {", ".join(rets)}
}}"""
    return text, args


def _values(rng: np.random.Generator, t: str, ties: bool) -> np.ndarray:
    inner = t[len("tensor<") : -1]
    cut = inner.rfind("x") + 1
    shape = tuple(int(d) for d in inner[:cut].strip("x").split("x") if d)
    dtype = dtype_of(parse_type(inner[cut:]))
    if ties:
        a = rng.integers(-3, 4, size=shape)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    else:
        a = rng.normal(0, 4, size=shape)
    a = np.asarray(a).astype(dtype)
    if dtype.kind not in "iu" and a.size and rng.random() < 0.3:
        a.reshape(-1)[rng.integers(0, a.size)] = np.nan
    return a


@st.composite
def cases(draw):
    rank = draw(st.integers(1, 3))
    shape = [draw(st.sampled_from(SIZES)) for _ in range(rank)]
    # A body that is not associative folds one element per iteration (level S's order):
    # keep the loop within the simulator's limit of iterations per loop.
    assume(math.prod(shape) <= 1 << 19)
    dims = draw(st.permutations(range(rank)))[: draw(st.integers(1, rank))]
    kind = draw(st.sampled_from(["GT", "LT", "halving", "sum_max"]))
    dtype = draw(st.sampled_from(FLOATS + INTS))
    other = draw(st.sampled_from(FLOATS + INTS))
    return shape, list(dims), dtype, kind, other


@SETTINGS
@given(cases(), st.sampled_from([None, 96 * 1024]), st.integers(0, 2**16))
def test_reduce_with_a_body_is_level_s_bit_for_bit(case, vmem_limit, seed: int) -> None:
    shape, dims, dtype, kind, other = case
    text, args = reduce_program(shape, dims, dtype, kind, other)
    rng = np.random.default_rng(seed)
    ties = kind in ("GT", "LT")
    inputs = [[_values(rng, t, ties) for t in args] for _ in range(DEVICES)]
    check(text, inputs, vmem_limit)


def test_argmax_over_many_reduced_blocks_keeps_the_first_index() -> None:
    """A small VMEM makes the 1024 reduced elements several blocks; ties everywhere."""
    text, args = reduce_program([16, 1024], [1], "f32", "GT")
    x = np.zeros((16, 1024), np.float32)
    x[:, 700] = 1.0
    x[3, 5] = np.nan
    idx = np.tile(np.arange(1024, dtype=np.int32), (16, 1))
    init = [np.array(-np.inf, np.float32), np.array(0, np.int32)]
    out = check(text, [[x, idx, *init]] * DEVICES, vmem_limit=64 * 1024)
    assert "scf.for" in out


def test_a_body_op_not_lowered_is_refused_at_the_reduce() -> None:
    v = "tensor<f32>"
    text = f"""spmd.mesh @m = <["x"={DEVICES}]>
func.func @main(%x: tensor<8x128xf32>, %i: {v}) -> tensor<8xf32> attributes {{spmd.per_device_io}} {{
  %r = hlo.reduce(%x init: %i) across dims = [1] : (tensor<8x128xf32>, {v}) -> tensor<8xf32> reducer(%a: {v}, %b: {v}) {{
    %f = hlo.is_finite %a : ({v}) -> tensor<i1>
    %s = hlo.select %f, %a, %b : tensor<i1>, {v}
    hlo.return %s : {v}
  }}
  func.return %r : tensor<8xf32>
}}"""
    module = parse(text, "body.mlir")
    with pytest.raises(OpPassError) as info:
        LowerToTpuPass().apply(make_context(), module)
    assert "lower-to-tpu: hlo.reduce with hlo.is_finite in its body is not supported yet" in str(
        info.value
    )
    assert info.value.op.name == "hlo.reduce" and "body.mlir" in str(info.value.op.location)


def test_a_body_of_vector_code_ops_is_level_s() -> None:
    """tan and sign (lowering/unary_math.py: f64 code, no instruction) in a body: level S's
    values bit for bit (f32: the f64 quotient rounded once)."""
    v = "tensor<f32>"
    text = f"""spmd.mesh @m = <["x"={DEVICES}]>
func.func @main(%x: tensor<8x128xf32>, %i: {v}) -> tensor<8xf32> attributes {{spmd.per_device_io}} {{
  %r = hlo.reduce(%x init: %i) across dims = [1] : (tensor<8x128xf32>, {v}) -> tensor<8xf32> reducer(%a: {v}, %b: {v}) {{
    %t = hlo.tan %a : {v}
    %s = hlo.sign %b : {v}
    %m = hlo.add %t, %s : {v}
    hlo.return %m : {v}
  }}
  func.return %r : tensor<8xf32>
}}"""
    rng = np.random.default_rng(0)
    x = rng.normal(0, 2, (8, 128)).astype(np.float32)
    check(text, [[x, np.float32(0.5)]] * DEVICES)
