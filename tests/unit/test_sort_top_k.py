"""
hlo.sort and hlo.top_k: level-G semantics against references written independently of
the interpreter (Python's stable `sorted` with explicit keys for each comparator, row by
row), on hypothesis-generated shapes, dimensions, element types and values with ties, NaNs
and signed zeros; the builders, verifier, cost model and `lower-to-tpu`'s located refusal.
"""

from __future__ import annotations

import itertools
import math

import ml_dtypes
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.dialects import hlo, make_context
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel
from shardc.interpreter.testing import parse, run_global
from shardc.lowering.lower_to_tpu import LowerToTpuPass
from xdsl.dialects.builtin import TensorType, f32, i32
from xdsl.ir import Block

DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "i32": np.int32, "i1": np.bool_}
COMPARATORS = ["LT", "GT", "LT TOTALORDER", "GT TOTALORDER"]


def ty(shape: tuple[int, ...], dtype: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>" if shape else f"tensor<{dtype}>"


def value_key(v) -> tuple:
    """LT/GT: numbers by value (-0 == +0), every NaN after every number."""
    v = float(v)
    return (1, 0.0) if math.isnan(v) else (0, v)


def total_key(v) -> tuple:
    """StableHLO's total order: -NaN < -inf < .. < -0 < +0 < .. < +inf < +NaN."""
    v = float(v)
    if math.isnan(v):
        return (0, 0.0, 0.0) if math.copysign(1.0, v) < 0 else (2, 0.0, 0.0)
    return (1, v, math.copysign(1.0, v))


def reference_order(row: list, comparator: str) -> list[int]:
    key = total_key if comparator.endswith("TOTALORDER") else value_key
    # Python's sort is stable, with reverse=True too (equal keys keep their order).
    return sorted(range(len(row)), key=lambda j: key(row[j]), reverse=comparator[0] == "G")


def reference_sort(xs: list[np.ndarray], dim: int, comparator: str) -> list[np.ndarray]:
    outs = [np.empty_like(x) for x in xs]
    moved = [np.moveaxis(x, dim, -1) for x in xs]
    outs_moved = [np.moveaxis(o, dim, -1) for o in outs]
    for index in itertools.product(*(range(n) for n in moved[0].shape[:-1])):
        order = reference_order(list(moved[0][index]), comparator)
        for src, dst in zip(moved, outs_moved, strict=True):
            dst[index] = [src[index][j] for j in order]
    return outs


def values(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    if dtype == "i1":
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dtype == "i32":
        return rng.integers(-3, 4, shape).astype(np.int32)  # many ties
    pool = np.array([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, np.nan, -np.nan, 0.5])
    return rng.choice(pool, shape).astype(DTYPES[dtype])


@st.composite
def sorts(draw: st.DrawFn):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 5)) for _ in range(rank))
    dim = draw(st.integers(0, rank - 1))
    key = draw(st.sampled_from(sorted(DTYPES)))
    others = draw(st.lists(st.sampled_from(sorted(DTYPES)), max_size=2))
    comparator = draw(st.sampled_from(COMPARATORS))
    stable = draw(st.booleans())
    return shape, dim, [key, *others], comparator, stable


@settings(max_examples=80, deadline=None)
@given(sorts(), st.integers(0, 2**32 - 1))
def test_sort_matches_pythons_stable_sort(case, seed: int) -> None:
    shape, dim, dtypes, comparator, stable = case
    rng = np.random.default_rng(seed)
    xs = [values(rng, shape, d) for d in dtypes]
    types = [ty(shape, d) for d in dtypes]
    args = ", ".join(f"%x{i}: {t}" for i, t in enumerate(types))
    names = ", ".join(f"%x{i}" for i in range(len(xs)))
    results = ", ".join(f"%r#{i}" for i in range(len(xs)))
    tys = ", ".join(types)
    text = f"""func.func @main({args}) -> ({tys}) {{
  %r:{len(xs)} = hlo.sort {names}, dim = {dim}, comparator = {comparator}{", stable" if stable else ""} : ({tys}) -> ({tys})
  func.return {results} : {tys}
}}"""
    if len(xs) == 1:
        text = text.replace("%r:1 =", "%r =").replace("%r#0", "%r")
    outs = run_global(text, {f"in_{i}": x for i, x in enumerate(xs)})
    for i, want in enumerate(reference_sort(xs, dim, comparator)):
        got = outs[f"out_{i}"]
        assert got.dtype == want.dtype and got.shape == want.shape
        # bit-exact: -0 vs +0 and the sign of NaN matter
        assert got.tobytes() == want.tobytes(), (i, got, want)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=0, max_size=2),
    st.integers(1, 6),
    st.data(),
    st.sampled_from(["f32", "bf16", "i32"]),
    st.integers(0, 2**32 - 1),
)
def test_top_k_matches_pythons_sort(batch, n, data, dtype: str, seed: int) -> None:
    k = data.draw(st.integers(0, n))
    shape = (*batch, n)
    x = values(np.random.default_rng(seed), shape, dtype)
    out_shape = (*batch, k)
    text = f"""func.func @main(%x: {ty(shape, dtype)}) -> ({ty(out_shape, dtype)}, {ty(out_shape, "i32")}) {{
  %v, %i = hlo.top_k %x, k = {k} : {ty(shape, dtype)} -> ({ty(out_shape, dtype)}, {ty(out_shape, "i32")})
  func.return %v, %i : {ty(out_shape, dtype)}, {ty(out_shape, "i32")}
}}"""
    outs = run_global(text, {"in_0": x})
    want_v = np.empty(out_shape, x.dtype)
    want_i = np.empty(out_shape, np.int32)
    for index in itertools.product(*(range(b) for b in batch)):
        row = list(x[index])
        order = sorted(range(n), key=lambda j: total_key(row[j]), reverse=True)[:k]
        want_i[index] = order
        want_v[index] = [row[j] for j in order]
    assert outs["out_1"].dtype == np.int32
    np.testing.assert_array_equal(outs["out_1"], want_i)
    assert outs["out_0"].tobytes() == want_v.tobytes()


def test_builders_compute_the_result_types() -> None:
    block = Block(arg_types=[TensorType(f32, [3, 5]), TensorType(i32, [3, 5])])
    x, y = block.args
    sort = hlo.SortOp([x, y], 1, "GT TOTALORDER", stable=False)
    assert [r.type for r in sort.results] == [x.type, y.type]
    assert sort.dim == 1 and sort.is_stable is None
    sort.verify()
    top = hlo.TopKOp(x, 2)
    assert top.values.type == TensorType(f32, [3, 2])
    assert top.indices.type == TensorType(i32, [3, 2])
    top.verify()


PROGRAM = """spmd.mesh @mesh = <["x"=2]>
func.func @main(%x: tensor<8x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>})
    -> (tensor<8x128xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}, tensor<8x4xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}) {
  %s = hlo.sort %x, dim = 1, comparator = LT : (tensor<8x128xf32>) -> tensor<8x128xf32>
  %v, %i = hlo.top_k %x, k = 4 : tensor<8x128xf32> -> (tensor<8x4xf32>, tensor<8x4xi32>)
  func.return %s, %i : tensor<8x128xf32>, tensor<8x4xi32>
}"""


def test_cost_model_counts_a_bitonic_network() -> None:
    """The sort: the packed network `lower-to-tpu` runs (hardware/cost.py
    `sort_network_work`: per pair and stage a compare and two selects for the key and the
    operand, counted against the lowered kernel in test_lower_sorting.py); top_k of a small
    k keeps the network estimate of a sort with an index operand."""
    from shardc.hardware.cost import sort_network_work

    module = parse(PROGRAM)
    model = CostModel(get_chip("v5e"))
    ops = {op.name: op for op in module.walk() if op.name in ("hlo.sort", "hlo.top_k")}
    stages = 7 * 8 // 2  # log2(128) = 7
    sort = model.op_cost(ops["hlo.sort"])
    assert sort.flops == sort_network_work(ops["hlo.sort"])[0]  # pyright: ignore[reportArgumentType]
    assert sort.flops > 8 * (128 // 2) * stages * (1 + 2 * 2) and sort.bytes == 2 * 8 * 128 * 4
    top = model.op_cost(ops["hlo.top_k"])
    assert top.flops == 2 * 8 * 128 * stages
    assert top.bytes == (8 * 128 + 8 * 4 * 2) * 4


def test_lower_to_tpu_lowers_both() -> None:
    """tests/unit/test_lower_sorting.py compares their level-T values with level S's."""
    from shardc.passes.spmd_pipeline import SpmdPipelinePass

    module = parse(PROGRAM, "st.mlir")
    ctx = make_context()
    SpmdPipelinePass().apply(ctx, module)
    LowerToTpuPass(chip="v5e").apply(ctx, module)
    assert "hlo." not in str(module)
