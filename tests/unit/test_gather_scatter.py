"""
hlo.gather and hlo.scatter: level-G semantics against references written from StableHLO's
formulas directly (a slow loop over every result / update element, in this file), and
against numpy fancy indexing / `np.add.at` for embedding lookups and their gradients; the
builders, verifier messages, the cost model and `lower-to-tpu`'s located refusal.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.diagnostics import DiagnosticError
from shardc.dialects import hlo, make_context
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel
from shardc.interpreter.testing import parse, run_global
from shardc.lowering.lower_to_tpu import LowerToTpuPass
from xdsl.dialects.builtin import TensorType, f32, i32
from xdsl.ir import Block


def ty(shape, dtype: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>" if len(shape) else f"tensor<{dtype}>"


def lst(values) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


# A random valid gather / scatter configuration ---------------------------------------


def random_config(rng: np.random.Generator) -> dict:
    """Operand shape, batching pairs, index map, windows and the indices' layout."""
    rank = int(rng.integers(1, 4))
    operand = [int(rng.integers(1, 5)) for _ in range(rank)]
    dims = list(rng.permutation(rank))
    n_batching = int(rng.integers(0, 2)) if rank > 1 else 0
    op_batching = sorted(dims[:n_batching])
    rest = dims[n_batching:]
    k = int(rng.integers(0, len(rest) + 1))
    start_map = [int(d) for d in rng.permutation(rest)[:k]]
    collapsed = sorted(int(d) for d in rest if rng.random() < 0.4)
    window = [
        1 if d in op_batching or d in collapsed else int(rng.integers(0, operand[d] + 1))
        for d in range(rank)
    ]
    batch = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 3)))]
    # indices dims: the free batch dims, then the batching dims inserted at random places
    idx_shape = list(batch)
    idx_batching = []
    for d in op_batching:
        pos = int(rng.integers(0, len(idx_shape) + 1))
        idx_batching = [b + (b >= pos) for b in idx_batching] + [pos]
        idx_shape.insert(pos, operand[d])
    if k == 1 and rng.random() < 0.5:
        ivd = len(idx_shape)
    else:
        ivd = int(rng.integers(0, len(idx_shape) + 1))
        idx_shape.insert(ivd, k)
        idx_batching = [b + (b >= ivd) for b in idx_batching]
    return dict(
        operand=operand,
        op_batching=op_batching,
        idx_batching=idx_batching,
        start_map=start_map,
        collapsed=collapsed,
        window=window,
        idx_shape=idx_shape,
        ivd=ivd,
    )


def random_indices(rng, cfg) -> np.ndarray:
    hi = max(cfg["operand"]) + 2
    return rng.integers(-2, hi + 1, size=cfg["idx_shape"]).astype(np.int32)


def batch_of(ivd: int, shape) -> list[int]:
    return [s for d, s in enumerate(shape) if d != ivd]


def start_vector(indices, batch_index, ivd):
    if ivd < indices.ndim:
        sl = (*batch_index[:ivd], slice(None), *batch_index[ivd:])
        return [int(v) for v in indices[sl]]
    return [int(indices[tuple(batch_index)])]


# gather ---------------------------------------------------------------------------------


def reference_gather(operand, indices, cfg, offset_dims):
    """StableHLO's gather, element by element, as the spec writes it."""
    rank = operand.ndim
    dropped = set(cfg["collapsed"]) | set(cfg["op_batching"])
    offsets = [cfg["window"][d] for d in range(rank) if d not in dropped]
    batch = batch_of(cfg["ivd"], indices.shape)
    result_rank = len(batch) + len(offsets)
    shape, b, o = [], iter(batch), iter(offsets)
    for r in range(result_rank):
        shape.append(next(o) if r in offset_dims else next(b))
    out = np.zeros(shape, operand.dtype)
    batch_dims = [d for d in range(result_rank) if d not in offset_dims]
    for i in itertools.product(*(range(s) for s in shape)):
        batch_index = [i[d] for d in batch_dims]
        start = start_vector(indices, batch_index, cfg["ivd"])
        full_start = [0] * rank
        for d_start, d_op in enumerate(cfg["start_map"]):
            hi = operand.shape[d_op] - cfg["window"][d_op]
            full_start[d_op] = min(max(start[d_start], 0), hi)
        full_batching = [0] * rank
        for a, d_start in zip(cfg["op_batching"], cfg["idx_batching"], strict=True):
            full_batching[a] = batch_index[d_start - (0 if d_start < cfg["ivd"] else 1)]
        offset_index = iter(i[d] for d in offset_dims)
        full_offset = [0 if d in dropped else next(offset_index) for d in range(rank)]
        src = tuple(
            a + b + c for a, b, c in zip(full_start, full_batching, full_offset, strict=True)
        )
        out[i] = operand[src]
    return out


def gather_text(cfg, offset_dims, result_shape, dtype="f32", extra="") -> str:
    a, i = ty(cfg["operand"], dtype), ty(cfg["idx_shape"], "i32")
    r = ty(result_shape, dtype)
    return f"""func.func @main(%a: {a}, %i: {i}) -> {r} {{
  %r = hlo.gather %a, %i, offset_dims = {lst(offset_dims)}, collapsed_slice_dims = {lst(cfg["collapsed"])}, operand_batching_dims = {lst(cfg["op_batching"])}, start_indices_batching_dims = {lst(cfg["idx_batching"])}, start_index_map = {lst(cfg["start_map"])}, index_vector_dim = {cfg["ivd"]}, slice_sizes = {lst(cfg["window"])}{extra} : ({a}, {i}) -> {r}
  func.return %r : {r}
}}"""


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_gather_matches_the_spec_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    cfg = random_config(rng)
    dropped = set(cfg["collapsed"]) | set(cfg["op_batching"])
    n_offsets = len(cfg["operand"]) - len(dropped)
    result_rank = len(batch_of(cfg["ivd"], cfg["idx_shape"])) + n_offsets
    offset_dims = sorted(int(d) for d in rng.permutation(result_rank)[:n_offsets])
    operand = rng.standard_normal(cfg["operand"]).astype(np.float32)
    indices = random_indices(rng, cfg)
    want = reference_gather(operand, indices, cfg, offset_dims)
    outs = run_global(gather_text(cfg, offset_dims, want.shape), {"in_0": operand, "in_1": indices})
    assert outs["out_0"].shape == want.shape
    assert outs["out_0"].tobytes() == want.tobytes()


EMBED = """func.func @main(%t: tensor<{V}x{D}x{dt}>, %i: tensor<{B}x{S}xi32>) -> tensor<{B}x{S}x{D}x{dt}> {{
  %r = hlo.gather %t, %i, offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2, slice_sizes = [1, {D}] : (tensor<{V}x{D}x{dt}>, tensor<{B}x{S}xi32>) -> tensor<{B}x{S}x{D}x{dt}>
  func.return %r : tensor<{B}x{S}x{D}x{dt}>
}}"""


def test_embedding_lookup_is_numpy_take_and_fast() -> None:
    """jnp.take's gather; out-of-range ids clamp (as `np.take(mode="clip")`)."""
    V, D, B, S = 32000, 4096, 8, 2048
    rng = np.random.default_rng(0)
    table = rng.standard_normal((V, D), dtype=np.float32).astype(np.float16)
    ids = rng.integers(-5, V + 5, size=(B, S)).astype(np.int32)
    text = EMBED.format(V=V, D=D, B=B, S=S, dt="f16")
    start = time.perf_counter()
    outs = run_global(text, {"in_0": table, "in_1": ids})
    elapsed = time.perf_counter() - start
    np.testing.assert_array_equal(outs["out_0"], np.take(table, ids, axis=0, mode="clip"))
    assert elapsed < 30, elapsed


# scatter --------------------------------------------------------------------------------


UFUNCS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def reference_scatter(operand, indices, updates, cfg, window_dims, kind):
    """StableHLO's scatter, update by update; a window not wholly in bounds is skipped."""
    rank = operand.ndim
    out = operand.astype(np.float64)
    dropped = set(cfg["collapsed"]) | set(cfg["op_batching"])
    scatter_dims = [d for d in range(updates.ndim) if d not in window_dims]
    for u in itertools.product(*(range(s) for s in updates.shape)):
        scatter_index = [u[d] for d in scatter_dims]
        start = start_vector(indices, scatter_index, cfg["ivd"])
        full_start = [0] * rank
        for d_start, d_op in enumerate(cfg["start_map"]):
            full_start[d_op] = start[d_start]
        if any(
            not 0 <= full_start[d] <= operand.shape[d] - cfg["window"][d] for d in cfg["start_map"]
        ):
            continue
        full_batching = [0] * rank
        for a, d_start in zip(cfg["op_batching"], cfg["idx_batching"], strict=True):
            full_batching[a] = scatter_index[d_start - (0 if d_start < cfg["ivd"] else 1)]
        window_index = iter(u[d] for d in window_dims)
        full_window = [0 if d in dropped else next(window_index) for d in range(rank)]
        dst = tuple(
            a + b + c for a, b, c in zip(full_start, full_batching, full_window, strict=True)
        )
        value = float(updates[u])
        out[dst] = value if kind == "replace" else UFUNCS[kind](out[dst], value)
    return out.astype(operand.dtype)


def scatter_text(cfg, window_dims, upd_shape, kind, dtype="i32", extra="") -> str:
    a, i, u = ty(cfg["operand"], dtype), ty(cfg["idx_shape"], "i32"), ty(upd_shape, dtype)
    return f"""func.func @main(%a: {a}, %i: {i}, %u: {u}) -> {a} {{
  %r = hlo.scatter {kind} %a, %i, %u, update_window_dims = {lst(window_dims)}, inserted_window_dims = {lst(cfg["collapsed"])}, input_batching_dims = {lst(cfg["op_batching"])}, scatter_indices_batching_dims = {lst(cfg["idx_batching"])}, scatter_dims_to_operand_dims = {lst(cfg["start_map"])}, index_vector_dim = {cfg["ivd"]}{extra} : ({a}, {i}, {u}) -> {a}
  func.return %r : {a}
}}"""


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["add", "mul", "max", "min", "replace"]))
def test_scatter_matches_the_spec_loop(seed: int, kind: str) -> None:
    """Integers (exact: duplicates add up in any order); replace gets unique windows."""
    rng = np.random.default_rng(seed)
    cfg = random_config(rng)
    dropped = set(cfg["collapsed"]) | set(cfg["op_batching"])
    window = [cfg["window"][d] for d in range(len(cfg["operand"])) if d not in dropped]
    batch = batch_of(cfg["ivd"], cfg["idx_shape"])
    upd_rank = len(batch) + len(window)
    window_dims = sorted(int(d) for d in rng.permutation(upd_rank)[: len(window)])
    b, w = iter(batch), iter(window)
    upd_shape = [next(w) if d in window_dims else next(b) for d in range(upd_rank)]
    operand = rng.integers(-5, 6, size=cfg["operand"]).astype(np.int32)
    updates = rng.integers(-3, 4, size=upd_shape).astype(np.int32)
    indices = random_indices(rng, cfg)
    if kind == "replace" and np.prod(batch, dtype=int) > 1:
        kind = "add"  # replace's winner among duplicates is the implementation's choice
    want = reference_scatter(operand, indices, updates, cfg, window_dims, kind)
    text = scatter_text(cfg, window_dims, upd_shape, kind)
    outs = run_global(text, {"in_0": operand, "in_1": indices, "in_2": updates})
    np.testing.assert_array_equal(outs["out_0"], want)


GRAD = """func.func @main(%t: tensor<{V}x{D}xf32>, %i: tensor<{N}xi32>, %u: tensor<{N}x{D}xf32>) -> tensor<{V}x{D}xf32> {{
  %r = hlo.scatter add %t, %i, %u, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<{V}x{D}xf32>, tensor<{N}xi32>, tensor<{N}x{D}xf32>) -> tensor<{V}x{D}xf32>
  func.return %r : tensor<{V}x{D}xf32>
}}"""


def test_embedding_gradient_is_np_add_at_with_duplicates_summed() -> None:
    V, D, N = 50, 8, 400
    rng = np.random.default_rng(1)
    table = rng.standard_normal((V, D)).astype(np.float32)
    ids = rng.integers(0, V, size=N).astype(np.int32)
    ids[:10] = 3  # many duplicates
    ids[10:12] = [-1, V]  # out of bounds: skipped
    upd = rng.standard_normal((N, D)).astype(np.float32)
    outs = run_global(GRAD.format(V=V, D=D, N=N), {"in_0": table, "in_1": ids, "in_2": upd})
    want = table.astype(np.float64)
    keep = (ids >= 0) & (ids < V)
    np.add.at(want, ids[keep], upd[keep].astype(np.float64))
    np.testing.assert_allclose(outs["out_0"], want, rtol=1e-5, atol=1e-5)


def test_scatter_replace_and_max_on_unique_rows() -> None:
    table = np.arange(12, dtype=np.float32).reshape(6, 2)
    ids = np.array([4, 0, 9], np.int32)
    upd = np.array([[-1, -2], [30, -30], [7, 7]], np.float32)
    for kind, want in (
        ("replace", [[30, -30], [2, 3], [4, 5], [6, 7], [-1, -2], [10, 11]]),
        ("max", [[30, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]]),
    ):
        text = GRAD.format(V=6, D=2, N=3).replace("hlo.scatter add", f"hlo.scatter {kind}")
        outs = run_global(text, {"in_0": table, "in_1": ids, "in_2": upd})
        np.testing.assert_array_equal(outs["out_0"], np.array(want, np.float32))


# builders, verifier, cost, lower-to-tpu ------------------------------------------------


def test_builders_infer_the_result_types() -> None:
    block = Block(
        arg_types=[TensorType(f32, [8, 4]), TensorType(i32, [3, 5]), TensorType(f32, [3, 5, 4])]
    )
    t, i, u = block.args
    g = hlo.GatherOp(
        t,
        i,
        {
            "offset_dims": [2],
            "collapsed_slice_dims": [0],
            "start_index_map": [0],
            "slice_sizes": [1, 4],
        },
        index_vector_dim=2,
    )
    assert g.result.type == TensorType(f32, [3, 5, 4])
    g.verify()
    s = hlo.ScatterOp(
        "add",
        [t, i, u],
        {
            "update_window_dims": [2],
            "inserted_window_dims": [0],
            "scatter_dims_to_operand_dims": [0],
        },
        index_vector_dim=2,
    )
    assert s.result.type == t.type
    s.verify()


@pytest.mark.parametrize(
    "change, message",
    [
        ("slice_sizes = [1, 4]", "slice_sizes = [2, 4]|slice_sizes[0] = 2 must be <= 1"),
        ("slice_sizes = [1, 4]", "slice_sizes = [1, 5]|slice_sizes[1] = 5 must be in [0, 4]"),
        ("offset_dims = [1]", "offset_dims = [0]|result shape must be [4, 3]"),
        ("start_index_map = [0]", "start_index_map = [0, 1]|start_index_map has 2 entries"),
        ("index_vector_dim = 1", "index_vector_dim = 3|index_vector_dim 3 is out of range"),
    ],
)
def test_gather_verifier_messages(change: str, message: str) -> None:
    new, want = message.split("|")
    text = """func.func @main(%t: tensor<8x4xf32>, %i: tensor<3x1xi32>) -> tensor<3x4xf32> {
  %r = hlo.gather %t, %i, offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 4] : (tensor<8x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
  func.return %r : tensor<3x4xf32>
}""".replace(change, new)
    with pytest.raises(DiagnosticError) as info:
        parse(text)
    assert want in str(info.value)


PROGRAM = """spmd.mesh @mesh = <["x"=2]>
func.func @main(%t: tensor<64x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>}, %i: tensor<8x1xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>}, %u: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}, {}]>})
    -> (tensor<8x16xf32>, tensor<64x16xf32>) {
  %g = hlo.gather %t, %i, offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 16] : (tensor<64x16xf32>, tensor<8x1xi32>) -> tensor<8x16xf32>
  %s = hlo.scatter add %t, %i, %u, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<64x16xf32>, tensor<8x1xi32>, tensor<8x16xf32>) -> tensor<64x16xf32>
  func.return %g, %s : tensor<8x16xf32>, tensor<64x16xf32>
}"""


def test_cost_model_counts_bytes_moved() -> None:
    module = parse(PROGRAM)
    model = CostModel(get_chip("v5e"))
    ops = {op.name: op for op in module.walk() if op.name in ("hlo.gather", "hlo.scatter")}
    g = model.op_cost(ops["hlo.gather"])
    # the rows read + the indices + the result written (not the whole table)
    assert g.bytes == 8 * 16 * 4 + 8 * 4 + 8 * 16 * 4 and g.flops == 0
    s = model.op_cost(ops["hlo.scatter"])
    # the operand copied through, indices, updates read and the touched rows read-modify-written
    assert s.bytes == 2 * 64 * 16 * 4 + 8 * 4 + 3 * 8 * 16 * 4
    assert s.flops == 8 * 16


def test_lower_to_tpu_lowers_both() -> None:
    """tests/unit/test_lower_gather.py compares their level-T values with level S's."""
    from shardc.passes.spmd_pipeline import SpmdPipelinePass

    module = parse(PROGRAM, "gs.mlir")
    ctx = make_context()
    SpmdPipelinePass().apply(ctx, module)
    LowerToTpuPass(chip="v5e").apply(ctx, module)
    assert "hlo." not in str(module)
