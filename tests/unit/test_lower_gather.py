"""
`lower-to-tpu` of hlo.gather and hlo.scatter (lowering/gather.py): DMA programs with the
indices in SMEM, differential against level S bit for bit on hypothesis-generated
dimension numbers, shapes, indices (out of range ones included: gather clamps, scatter
skips) and element types, on 2 devices with different inputs each, with none of the
simulator's diagnostics (a race between two DMAs, an unwaited DMA, a non-zero
semaphore raise).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.interpreter.testing import run_per_device
from shardc.tests.unit.test_gather_scatter import (
    batch_of,
    gather_text,
    random_config,
    random_indices,
    scatter_text,
)
from shardc.tests.unit.test_lower_movement import DEVICES, check

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NUMPY = {
    "f32": np.float32,
    "i32": np.int32,
    "f64": np.float64,
    "i64": np.int64,
    "bf16": ml_dtypes.bfloat16,
    "f16": np.float16,
}


def per_device(text: str) -> str:
    """A level-G test program as a per-device one on DEVICES devices."""
    head, rest = text.split(" {\n", 1)
    mesh = f'spmd.mesh @m = <["x"={DEVICES}]>\n'
    return mesh + head + " attributes {spmd.per_device_io} {\n" + rest


def values(rng, shape, dtype: str) -> np.ndarray:
    if dtype.startswith("f"):
        return rng.standard_normal(shape).astype(NUMPY[dtype])
    return rng.integers(-50, 50, size=shape).astype(NUMPY[dtype])


def gather_case(rng, dtype: str) -> tuple[str, list[list[np.ndarray]]]:
    cfg = random_config(rng)
    dropped = set(cfg["collapsed"]) | set(cfg["op_batching"])
    window = [cfg["window"][d] for d in range(len(cfg["operand"])) if d not in dropped]
    batch = batch_of(cfg["ivd"], cfg["idx_shape"])
    rank = len(batch) + len(window)
    offset_dims = sorted(int(d) for d in rng.permutation(rank)[: len(window)])
    b, w = iter(batch), iter(window)
    shape = [next(w) if d in offset_dims else next(b) for d in range(rank)]
    text = per_device(gather_text(cfg, offset_dims, shape, dtype))
    inputs = [
        [values(rng, cfg["operand"], dtype), random_indices(rng, cfg)] for _ in range(DEVICES)
    ]
    return text, inputs


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(["f32", "i32", "f64", "i64"]))
def test_gather_is_level_s_bit_for_bit(seed: int, dtype: str) -> None:
    text, inputs = gather_case(np.random.default_rng(seed), dtype)
    check(text, inputs)


@SETTINGS
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from(["add", "mul", "max", "min", "replace"]),
    st.sampled_from(["f32", "i32", "i64"]),
)
def test_scatter_is_level_s_bit_for_bit(seed: int, kind: str, dtype: str) -> None:
    """Updates in index order, duplicates included (replace: unique windows only, as level
    S leaves the winner among duplicates to the implementation)."""
    rng = np.random.default_rng(seed)
    cfg = random_config(rng)
    dropped = set(cfg["collapsed"]) | set(cfg["op_batching"])
    window = [cfg["window"][d] for d in range(len(cfg["operand"])) if d not in dropped]
    batch = batch_of(cfg["ivd"], cfg["idx_shape"])
    rank = len(batch) + len(window)
    window_dims = sorted(int(d) for d in rng.permutation(rank)[: len(window)])
    b, w = iter(batch), iter(window)
    upd_shape = [next(w) if d in window_dims else next(b) for d in range(rank)]
    if kind == "replace" and np.prod(batch, dtype=int) > 1:
        kind = "max"
    text = per_device(scatter_text(cfg, window_dims, upd_shape, kind, dtype))
    inputs = [
        [
            values(rng, cfg["operand"], dtype),
            random_indices(rng, cfg),
            values(rng, upd_shape, dtype),
        ]
        for _ in range(DEVICES)
    ]
    check(text, inputs)


EMBED = """spmd.mesh @m = <["x"=2]>
func.func @main(%t: tensor<{V}x{D}xf32>, %i: tensor<{N}xi32>) -> tensor<{N}x{D}xf32> attributes {{spmd.per_device_io}} {{
  %r = hlo.gather %t, %i, offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, {D}] : (tensor<{V}x{D}xf32>, tensor<{N}xi32>) -> tensor<{N}x{D}xf32>
  func.return %r : tensor<{N}x{D}xf32>
}}"""


def test_embedding_lookup_is_one_dma_per_row_and_indices_in_smem() -> None:
    rng = np.random.default_rng(0)
    V, D, N = 40, 256, 24
    text = EMBED.format(V=V, D=D, N=N)
    inputs = [
        [
            rng.standard_normal((V, D)).astype(np.float32),
            rng.integers(-3, V + 3, N).astype(np.int32),
        ]
        for _ in range(DEVICES)
    ]
    lowered = check(text, inputs)
    assert "memref<24xi32, #tpu.memory_space<smem>>" in lowered
    # The indices, then one per row: a loop over the first IN_FLIGHT rows, then a loop
    # waiting for the oldest before each next row; no constant inside either loop.
    assert lowered.count("tpu.dma_start") == 3
    loops = lowered.split("scf.for")[1:]
    assert all("arith.constant" not in body.split("}")[0] for body in loops)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(["add", "mul"]), st.sampled_from(["bf16", "f16"]))
def test_narrow_float_scatter_add_mul_accumulate_in_f32(seed: int, kind: str, dtype: str):
    """bf16/f16 add / mul (lowering/gather.py `_lower_scatter_f32`): level S's f32 accumulation
    in update order, rounded once, bit for bit (duplicates included)."""
    check(*scatter_case(np.random.default_rng(seed), kind, dtype, values))


def scatter_case(rng: np.random.Generator, kind: str, dtype: str, make) -> tuple[str, list]:
    """A generated per-device scatter of `kind` on `dtype` and its inputs (`make(rng, shape,
    dtype)`: the operand's and the updates' values) for every device."""
    cfg = random_config(rng)
    dropped = set(cfg["collapsed"]) | set(cfg["op_batching"])
    window = [cfg["window"][d] for d in range(len(cfg["operand"])) if d not in dropped]
    batch = batch_of(cfg["ivd"], cfg["idx_shape"])
    rank = len(batch) + len(window)
    window_dims = sorted(int(d) for d in rng.permutation(rank)[: len(window)])
    b, w = iter(batch), iter(window)
    upd_shape = [next(w) if d in window_dims else next(b) for d in range(rank)]
    text = per_device(scatter_text(cfg, window_dims, upd_shape, kind, dtype))
    inputs = [
        [make(rng, cfg["operand"], dtype), random_indices(rng, cfg), make(rng, upd_shape, dtype)]
        for _ in range(DEVICES)
    ]
    return text, inputs


BF16_ADD = """spmd.mesh @m = <["x"=2]>
func.func @main(%t: tensor<8x4xbf16>, %i: tensor<3x1xi32>, %u: tensor<3x4xbf16>) -> tensor<8x4xbf16> attributes {spmd.per_device_io} {
  %r = hlo.scatter add %t, %i, %u, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<8x4xbf16>, tensor<3x1xi32>, tensor<3x4xbf16>) -> tensor<8x4xbf16>
  func.return %r : tensor<8x4xbf16>
}"""


def test_bf16_scatter_add_rounds_once_as_level_s() -> None:
    """Two updates of 2^-8 to a row of ones: rounded after each, 1 + 2^-8 would round
    back to 1 (to even) every time; accumulated in f32 and rounded once (level S) they
    give 1 + 2^-7. The touched windows accumulate in an f32 scratch."""
    t = np.ones((8, 4), ml_dtypes.bfloat16)
    u = np.full((3, 4), 2.0**-8, ml_dtypes.bfloat16)
    i = np.array([[2], [5], [2]], np.int32)
    want = run_per_device(BF16_ADD, [[t, i, u]] * DEVICES)[0][0]
    assert float(want[2, 0]) == 1.0 + 2.0**-7 and float(want[5, 0]) == 1.0
    lowered = check(BF16_ADD, [[t, i, u]] * DEVICES)  # level T: the same bits
    assert "memref<8x4xf32, #tpu.memory_space<hbm>>" in lowered  # the f32 accumulator


PARTITIONED = """spmd.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%t: tensor<64x256xf32> {{spmd.sharding = #spmd.sharding<@mesh, [{table}]>}}, %i: tensor<8x16xi32> {{spmd.sharding = #spmd.sharding<@mesh, [{ids}]>}}) -> tensor<8x16x256xf32> {{
  %r = hlo.gather %t, %i, offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2, slice_sizes = [1, 256] : (tensor<64x256xf32>, tensor<8x16xi32>) -> tensor<8x16x256xf32>
  func.return %r : tensor<8x16x256xf32>
}}"""


@pytest.mark.parametrize(
    "table, ids",
    [
        ("{}, {}", '{"x"}, {"y"}'),  # replicated table, ids split: a local lookup
        ('{"x"}, {}', '{}, {"y"}'),  # vocab split: shifted ids, masks, an all_reduce
        ('{}, {"y"}', '{"x"}, {}'),  # model dim split: each device gathers its columns
    ],
)
def test_partitioned_embedding_lookup_through_tpu_pipeline(table: str, ids: str) -> None:
    import shardc

    text = PARTITIONED.format(table=table, ids=ids)
    rng = np.random.default_rng(3)
    inputs = {
        "in_0": rng.standard_normal((64, 256)).astype(np.float32),
        "in_1": rng.integers(-4, 70, (8, 16)).astype(np.int32),
    }
    want = shardc.run(shardc.compile(text, "spmd-pipeline"), inputs=inputs)
    got = shardc.run(shardc.compile(text, "tpu-pipeline"), inputs=inputs)
    assert got.report["level"] == "T"
    np.testing.assert_array_equal(got.outputs["out_0"], want.outputs["out_0"])
    np.testing.assert_array_equal(
        got.outputs["out_0"], np.take(inputs["in_0"], inputs["in_1"], axis=0, mode="clip")
    )


def test_indices_larger_than_smem_go_in_chunks(monkeypatch) -> None:
    """Half the SMEM is the budget; here 64 bytes: 24 i32 ids in chunks of 8."""
    from shardc.lowering import gather

    monkeypatch.setattr(gather, "smem_budget", lambda chip: 32)
    rng = np.random.default_rng(1)
    text = EMBED.format(V=16, D=128, N=24)
    inputs = [
        [
            rng.standard_normal((16, 128)).astype(np.float32),
            rng.integers(-2, 18, 24).astype(np.int32),
        ]
        for _ in range(DEVICES)
    ]
    lowered = check(text, inputs)
    assert "memref<8xi32, #tpu.memory_space<smem>>" in lowered


def test_at_most_in_flight_slices_then_the_oldest_is_waited(monkeypatch) -> None:
    """A window of 4 DMAs in flight over 24 rows: the first 4 started, then each later
    start first waits one (a second loop; a multi-dimensional batch: an `scf.if`)."""
    from shardc.lowering import gather

    monkeypatch.setattr(gather, "IN_FLIGHT", 4)
    rng = np.random.default_rng(2)
    text = EMBED.format(V=16, D=128, N=24)
    inputs = [
        [
            rng.standard_normal((16, 128)).astype(np.float32),
            rng.integers(-2, 18, 24).astype(np.int32),
        ]
        for _ in range(DEVICES)
    ]
    lowered = check(text, inputs)
    assert "arith.constant 4 : index" in lowered and lowered.count("tpu.dma_start") == 3
    second = lowered.split("scf.for")[2]
    assert second.index("tpu.dma_wait") < second.index("tpu.dma_start")


def test_bf16_scatter_add_widens_only_the_touched_windows() -> None:
    """The f32 accumulation touches the updated windows only: the kernel moves the
    table once (the operand's copy) and a few bytes per update window, not the whole
    table widened to f32 and rounded back (5x the table's bytes)."""
    import shardc

    rows, width, n = 4096, 256, 8
    t, u = f"tensor<{rows}x{width}xbf16>", f"tensor<{n}x{width}xbf16>"
    text = f"""func.func @main(%t: {t}, %i: tensor<{n}x1xi32>, %u: {u}) -> {t} {{
  %r = hlo.scatter add %t, %i, %u, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : ({t}, tensor<{n}x1xi32>, {u}) -> {t}
  func.return %r : {t}
}}"""
    kernel = shardc.compile(text, "lower-to-tpu{chip=v5e}")
    report = shardc.run(kernel, timing_only=True, chip="v5e").report
    table, window = rows * width * 2, width * 2
    moved = report["local_dma_bytes"]
    assert table <= moved <= table + n * 16 * window + 4 * n
