"""
hlo.pad and hlo.reverse: level-G semantics against references written independently of
the interpreter (an element-by-element index map for pad, reversed slicing for reverse),
on hypothesis-generated shapes, paddings and element types; the builders, the cost model,
and `lower-to-tpu` lowering both.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.dialects import hlo, make_context
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel
from shardc.interpreter.testing import parse, run_global
from shardc.lowering.lower_to_tpu import LowerToTpuPass
from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Block

DTYPES = {"f32": np.float32, "i32": np.int32, "bf16": ml_dtypes.bfloat16, "i1": np.bool_}


def ty(shape: tuple[int, ...], dtype: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>" if shape else f"tensor<{dtype}>"


def reference_pad(x: np.ndarray, value, low, high, interior) -> np.ndarray:
    """Each result element, from the operand element it maps to, or the padding value."""
    shape = [
        lo + n + max(n - 1, 0) * it + hi
        for n, lo, hi, it in zip(x.shape, low, high, interior, strict=False)
    ]
    out = np.empty(shape, dtype=x.dtype)
    for index in itertools.product(*(range(n) for n in shape)):
        source = []
        for r, lo, it, n in zip(index, low, interior, x.shape, strict=False):
            offset = r - lo
            if offset < 0 or offset % (it + 1) or offset // (it + 1) >= n:
                break
            source.append(offset // (it + 1))
        out[index] = x[tuple(source)] if len(source) == x.ndim else value
    return out


def reference_reverse(x: np.ndarray, dims) -> np.ndarray:
    return x[tuple(slice(None, None, -1) if d in dims else slice(None) for d in range(x.ndim))]


def values(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    if dtype == "i1":
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype == "i32":
        return rng.integers(-1000, 1000, shape).astype(np.int32)
    return rng.standard_normal(shape).astype(DTYPES[dtype])


@st.composite
def pads(draw: st.DrawFn):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(0, 4)) for _ in range(rank))
    low = [draw(st.integers(-3, 3)) for _ in range(rank)]
    high = [draw(st.integers(-3, 3)) for _ in range(rank)]
    interior = [draw(st.integers(0, 2)) for _ in range(rank)]
    for d, n in enumerate(shape):  # keep every result dimension >= 0
        size = low[d] + n + max(n - 1, 0) * interior[d] + high[d]
        if size < 0:
            low[d] -= size
    dtype = draw(st.sampled_from(sorted(DTYPES)))
    return shape, low, high, interior, dtype


@settings(max_examples=60, deadline=None)
@given(pads(), st.integers(0, 2**32 - 1))
def test_pad_matches_the_index_map_reference(case, seed: int) -> None:
    shape, low, high, interior, dtype = case
    rng = np.random.default_rng(seed)
    x = values(rng, shape, dtype)
    v = values(rng, (), dtype)
    out_shape = tuple(
        lo + n + max(n - 1, 0) * it + hi
        for n, lo, hi, it in zip(shape, low, high, interior, strict=False)
    )
    text = f"""func.func @main(%x: {ty(shape, dtype)}, %v: {ty((), dtype)}) -> {ty(out_shape, dtype)} {{
  %r = hlo.pad %x, %v, low = {low}, high = {high}, interior = {interior} : ({ty(shape, dtype)}, {ty((), dtype)}) -> {ty(out_shape, dtype)}
  func.return %r : {ty(out_shape, dtype)}
}}"""
    out = run_global(text, {"in_0": x, "in_1": v})["out_0"]
    want = reference_pad(x, v, low, high, interior)
    assert out.dtype == want.dtype and out.shape == want.shape
    np.testing.assert_array_equal(out, want)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=0, max_size=3),
    st.data(),
    st.sampled_from(sorted(DTYPES)),
)
def test_reverse_matches_reversed_slicing(
    shape: list[int], data: st.DataObject, dtype: str
) -> None:
    dims = data.draw(
        st.lists(st.sampled_from(range(len(shape))), unique=True) if shape else st.just([])
    )
    x = values(np.random.default_rng(len(shape)), tuple(shape), dtype)
    t = ty(tuple(shape), dtype)
    text = f"""func.func @main(%x: {t}) -> {t} {{
  %r = hlo.reverse %x, dims = {dims} : {t}
  func.return %r : {t}
}}"""
    out = run_global(text, {"in_0": x})["out_0"]
    np.testing.assert_array_equal(out, reference_reverse(x, dims))


def test_builders_compute_the_result_type() -> None:
    block = Block(arg_types=[TensorType(f32, [2, 3]), TensorType(f32, [])])
    x, v = block.args
    pad = hlo.PadOp(x, v, [0, 1], [2, -1], [1, 0])
    assert pad.result.type == TensorType(f32, [5, 3])
    assert pad.padded_dims() == [0, 1]
    pad.verify()
    rev = hlo.ReverseOp(x, [1])
    assert rev.result.type == x.type and rev.dims == (1,)
    rev.verify()


PROGRAM = """spmd.mesh @mesh = <["x"=2]>
func.func @main(%x: tensor<8x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}, %v: tensor<f32>)
    -> (tensor<8x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}, tensor<8x136xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}) {
  %r = hlo.reverse %x, dims = [0] : tensor<8x128xf32>
  %p = hlo.pad %x, %v, low = [0, 4], high = [0, 4], interior = [0, 0] : (tensor<8x128xf32>, tensor<f32>) -> tensor<8x136xf32>
  func.return %r, %p : tensor<8x128xf32>, tensor<8x136xf32>
}"""


def test_cost_model_counts_pad_and_reverse_as_data_movement() -> None:
    module = parse(PROGRAM)
    model = CostModel(get_chip("v5e"))
    ops = {op.name: op for op in module.walk() if op.name in ("hlo.pad", "hlo.reverse")}
    rev = model.op_cost(ops["hlo.reverse"])
    assert rev.flops == 0 and rev.bytes == 2 * 8 * 128 * 4
    pad = model.op_cost(ops["hlo.pad"])
    assert pad.flops == 0 and pad.bytes == (8 * 128 + 1 + 8 * 136) * 4
    assert pad.time == pytest.approx(pad.bytes / get_chip("v5e").hbm_bw)


@pytest.mark.parametrize("name", ["hlo.reverse", "hlo.pad"])
def test_lower_to_tpu_lowers_them(name: str) -> None:
    from shardc.passes.spmd_pipeline import SpmdPipelinePass

    text = (
        PROGRAM
        if name == "hlo.reverse"
        else PROGRAM.replace("%r = hlo.reverse", "%r = hlo.neg").replace(
            ", dims = [0] : tensor<8x128xf32>", " : tensor<8x128xf32>"
        )
    )
    module = parse(text, "pr.mlir")
    ctx = make_context()
    SpmdPipelinePass().apply(ctx, module)
    # Both lower now (issue 15 item 3): tests/unit/test_lower_windows.py checks the values.
    LowerToTpuPass(chip="v5e").apply(ctx, module)
    assert "tpu.dma_start" in str(module) and name not in str(module).split("}}}", 1)[-1]
    assert any("pr.mlir" in str(o.location) for o in module.walk() if o.name == "tpu.dma_start")
