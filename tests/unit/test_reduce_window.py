"""
hlo.reduce_window and hlo.select_and_scatter: level-G semantics against references written
independently of the interpreter (explicit loops over window positions and window offsets,
an index map for dilation and padding, Python scalars), on hypothesis-generated shapes,
windows, strides, dilations and paddings; jnp.cumsum's form against np.cumsum, max-pooling's
gradient against np.argmax; the builders, the verifier, the cost model and `lower-to-tpu`'s
located refusal.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.dialects import hlo
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel
from shardc.interpreter.testing import parse, run_global
from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Block

DTYPES = {"f32": np.float32, "i32": np.int32, "bf16": ml_dtypes.bfloat16}
COMBINE = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "max": max, "min": min}


def ty(shape, dtype: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>" if len(shape) else f"tensor<{dtype}>"


def window_positions(n: int, w: int, s: int, bd: int, wd: int, lo: int, hi: int) -> int:
    """How many window positions fit, by trying them one by one."""
    size = lo + hi + (bd * (n - 1) + 1 if n else 0)
    count = 0
    while count * s + (w - 1) * wd < size:
        count += 1
    return count


def padded_element(x, index, init, bd, low):
    """The element of the dilated, padded operand at `index` (init where there is none)."""
    source = []
    for q, b, lo, n in zip(index, bd, low, x.shape, strict=True):
        p = q - lo
        if p < 0 or p % b or p // b >= n:
            return init
        source.append(p // b)
    return x[tuple(source)].item()


def reference_reduce_window(x, init, kind, window, strides, bd, wd, low, high):
    shape = [
        window_positions(n, *params)
        for n, params in zip(
            x.shape, zip(window, strides, bd, wd, low, high, strict=True), strict=True
        )
    ]
    out = np.empty(
        shape, dtype=np.float64 if x.dtype.kind == "f" or x.dtype == DTYPES["bf16"] else object
    )
    for pos in itertools.product(*(range(n) for n in shape)):
        acc = init
        for offset in itertools.product(*(range(w) for w in window)):
            index = [p * s + k * d for p, s, k, d in zip(pos, strides, offset, wd, strict=True)]
            acc = COMBINE[kind](acc, padded_element(x, index, init, bd, low))
        out[pos] = acc
    return out


def values(rng: np.random.Generator, shape, dtype: str, kind: str = "add") -> np.ndarray:
    high = 3 if kind == "mul" else 20
    return rng.integers(-high, high, shape).astype(DTYPES[dtype])


@st.composite
def windows(draw: st.DrawFn, dilate: bool = True):
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(0 if dilate else 1, 5)) for _ in range(rank)]
    window = [draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [draw(st.integers(1, 3)) for _ in range(rank)]
    bd = [draw(st.integers(1, 2)) if dilate else 1 for _ in range(rank)]
    wd = [draw(st.integers(1, 2)) if dilate else 1 for _ in range(rank)]
    low = [draw(st.integers(-1 if dilate else 0, 2)) for _ in range(rank)]
    high = [draw(st.integers(-1 if dilate else 0, 2)) for _ in range(rank)]
    return shape, window, strides, bd, wd, low, high


def reduce_window_text(shape, dtype, kind, window, strides, bd, wd, low, high) -> str:
    out = hlo.window_result_shape(shape, window, strides, bd, wd, low, high)
    pads = [[lo, hi] for lo, hi in zip(low, high, strict=True)]
    t, r = ty(shape, dtype), ty(out, dtype)
    return f"""func.func @main(%x: {t}, %i: {ty((), dtype)}) -> {r} {{
  %r = hlo.reduce_window {kind} %x, %i, window = {window}, strides = {strides}, base_dilations = {bd}, window_dilations = {wd}, padding = {pads} : ({t}, {ty((), dtype)}) -> {r}
  func.return %r : {r}
}}"""


@settings(max_examples=60, deadline=None)
@given(
    windows(),
    st.sampled_from(sorted(COMBINE)),
    st.sampled_from(sorted(DTYPES)),
    st.integers(0, 2**32 - 1),
)
def test_reduce_window_matches_the_loop_reference(case, kind: str, dtype: str, seed: int) -> None:
    shape, window, strides, bd, wd, low, high = case
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype, kind)
    init = values(rng, (), dtype, kind)
    text = reduce_window_text(shape, dtype, kind, window, strides, bd, wd, low, high)
    out = run_global(text, {"in_0": x, "in_1": init})["out_0"]
    want = reference_reduce_window(x, init.item(), kind, window, strides, bd, wd, low, high)
    assert out.dtype == x.dtype and out.shape == want.shape
    if dtype == "bf16":  # rounded once from an exact f32 accumulation
        want = want.astype(np.float32).astype(ml_dtypes.bfloat16)
    if dtype == "i32":  # wraps as int32
        want = (
            np.array([int(v) for v in want.flat], dtype=np.int64)
            .astype(np.int32)
            .reshape(want.shape)
        )
    np.testing.assert_array_equal(out.astype(np.float64), np.asarray(want, dtype=np.float64))


@pytest.mark.parametrize("n", [1, 5, 8])
def test_cumsum_as_jax_writes_it(n: int) -> None:
    """jnp.cumsum: reduce_window add, window n along the axis, padding (n - 1, 0)."""
    x = np.arange(1, 3 * n + 1, dtype=np.float32).reshape(3, n)
    t = ty((3, n), "f32")
    text = f"""func.func @main(%x: {t}) -> {t} {{
  %z = hlo.constant dense<0.0> : tensor<f32>
  %r = hlo.reduce_window add %x, %z, window = [1, {n}], padding = [[0, 0], [{n - 1}, 0]] : ({t}, tensor<f32>) -> {t}
  func.return %r : {t}
}}"""
    out = run_global(text, {"in_0": x})["out_0"]
    np.testing.assert_array_equal(out, np.cumsum(x, axis=1))


def reference_select_and_scatter(x, source, init, select, window, strides, low):
    out = np.full(x.shape, init, dtype=np.float64)
    for pos in itertools.product(*(range(n) for n in source.shape)):
        best = None
        for offset in itertools.product(*(range(w) for w in window)):
            index = tuple(
                p * s + k - lo for p, s, k, lo in zip(pos, strides, offset, low, strict=True)
            )
            if any(i < 0 or i >= n for i, n in zip(index, x.shape, strict=True)):
                continue  # padding is never selected
            v = x[index].item()
            if best is None or not (best[0] >= v if select == "GE" else best[0] > v):
                best = (v, index)
        if best is not None:
            out[best[1]] += source[pos].item()
    return out


@settings(max_examples=50, deadline=None)
@given(
    windows(dilate=False),
    st.sampled_from(["GE", "GT"]),
    st.sampled_from(["f32", "i32"]),
    st.integers(0, 2**32 - 1),
)
def test_select_and_scatter_matches_the_loop_reference(
    case, select: str, dtype: str, seed: int
) -> None:
    shape, window, strides, _, _, low, high = case
    out_shape = hlo.window_result_shape(
        shape, window, strides, [1] * len(shape), [1] * len(shape), low, high
    )
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 3, shape).astype(DTYPES[dtype])  # many ties: GE and GT differ
    source = values(rng, out_shape, dtype)
    init = values(rng, (), dtype)
    pads = [[lo, hi] for lo, hi in zip(low, high, strict=True)]
    t, s, i = ty(shape, dtype), ty(out_shape, dtype), ty((), dtype)
    text = f"""func.func @main(%x: {t}, %s: {s}, %i: {i}) -> {t} {{
  %r = hlo.select_and_scatter %x, %s, %i, select = {select}, scatter = add, window = {window}, strides = {strides}, padding = {pads} : ({t}, {s}, {i}) -> {t}
  func.return %r : {t}
}}"""
    out = run_global(text, {"in_0": x, "in_1": source, "in_2": init})["out_0"]
    want = reference_select_and_scatter(x, source, init.item(), select, window, strides, low)
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(out.astype(np.float64), want)


def test_max_pool_gradient_against_argmax() -> None:
    """2x2 max pooling's gradient: each window's source value lands on its argmax."""
    rng = np.random.default_rng(0)
    x = rng.permutation(64).astype(np.float32).reshape(8, 8)
    g = rng.standard_normal((4, 4)).astype(np.float32)
    text = """func.func @main(%x: tensor<8x8xf32>, %g: tensor<4x4xf32>) -> tensor<8x8xf32> {
  %z = hlo.constant dense<0.0> : tensor<f32>
  %r = hlo.select_and_scatter %x, %g, %z, select = GE, scatter = add, window = [2, 2], strides = [2, 2] : (tensor<8x8xf32>, tensor<4x4xf32>, tensor<f32>) -> tensor<8x8xf32>
  func.return %r : tensor<8x8xf32>
}"""
    out = run_global(text, {"in_0": x, "in_1": g})["out_0"]
    want = np.zeros((8, 8), np.float32)
    blocks = x.reshape(4, 2, 4, 2).transpose(0, 2, 1, 3).reshape(4, 4, 4)
    arg = np.argmax(blocks, axis=-1)
    for i, j in itertools.product(range(4), range(4)):
        want[2 * i + arg[i, j] // 2, 2 * j + arg[i, j] % 2] = g[i, j]
    np.testing.assert_array_equal(out, want)


def test_builders_compute_the_result_type() -> None:
    block = Block(arg_types=[TensorType(f32, [4, 6]), TensorType(f32, []), TensorType(f32, [2, 3])])
    x, init, src = block.args
    rw = hlo.ReduceWindowOp("max", x, init, [2, 3], [2, 2], [(0, 0), (1, 1)])
    assert rw.result.type == TensorType(f32, [2, 3])
    assert rw.windowed_dims() == [0, 1]
    rw.verify()
    sas = hlo.SelectAndScatterOp(x, src, init, [2, 2], [2, 2])
    assert sas.result.type == x.type
    sas.verify()
    assert hlo.ReduceWindowOp("add", x, init, [1, 6]).windowed_dims() == [1]


PROGRAM = """func.func @main(%x: tensor<8x128xf32>, %g: tensor<4x64xf32>) -> (tensor<4x64xf32>, tensor<8x128xf32>) {
  %z = hlo.constant dense<0.0> : tensor<f32>
  %r = hlo.reduce_window max %x, %z, window = [2, 2], strides = [2, 2] : (tensor<8x128xf32>, tensor<f32>) -> tensor<4x64xf32>
  %s = hlo.select_and_scatter %x, %g, %z, select = GE, scatter = add, window = [2, 2], strides = [2, 2] : (tensor<8x128xf32>, tensor<4x64xf32>, tensor<f32>) -> tensor<8x128xf32>
  func.return %r, %s : tensor<4x64xf32>, tensor<8x128xf32>
}"""


def test_cost_model_counts_one_operation_per_window_element() -> None:
    module = parse(PROGRAM)
    model = CostModel(get_chip("v5e"))
    ops = {op.name: op for op in module.walk()}
    rw = model.op_cost(ops["hlo.reduce_window"])
    assert rw.flops == 4 * 64 * 4 and rw.bytes == (8 * 128 + 1 + 4 * 64) * 4
    # select_and_scatter costs the ops lower-to-tpu rewrites it into
    # (test_lower_select_and_scatter.py): more than one pass over its operands
    sas = model.op_cost(ops["hlo.select_and_scatter"])
    assert sas.bytes > (8 * 128 + 4 * 64 + 1 + 8 * 128) * 4 and sas.flops > 0


def test_lower_to_tpu_lowers_both_window_ops() -> None:
    """reduce_window and select_and_scatter both lower (issue 15 item 3:
    test_lower_windows.py, test_lower_select_and_scatter.py)."""
    from shardc.dialects import make_context
    from shardc.lowering.lower_to_tpu import LowerToTpuPass
    from shardc.passes.spmd_pipeline import SpmdPipelinePass

    module = parse('spmd.mesh @mesh = <["x"=2]>\n' + PROGRAM, "win.mlir")
    ctx = make_context()
    SpmdPipelinePass().apply(ctx, module)
    LowerToTpuPass(chip="v5e").apply(ctx, module)
    names = {op.name for op in module.walk()}
    assert not names & {"hlo.reduce_window", "hlo.select_and_scatter"}
