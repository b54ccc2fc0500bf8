"""
f8E4M3FN / f8E5M2 in reductions (issue 15 item 3): dot, reduce and the reducing collectives
accumulate in f32 and round once to f8 (`hlo.accumulation_type`, as XLA and StableHLO's
`ANY_F8_ANY_F8_F32` dot algorithm; the level-S interpreter's `accumulation_dtype`).
Hypothesis-drawn shapes and values, lowered, simulated at level T and compared with level
S bit for bit, and with an independent reference (ml_dtypes: the f32 sum rounded once).
The values are f8 roundings of normals scaled to [2^-4, 2^4): their f32 sums (and sums of
products) are exact in any order, so level T's summation order cannot change a bit.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.interpreter.testing import run_per_device
from shardc.tests.unit import test_lower_to_tpu as collectives
from shardc.tests.unit.test_lower_element_types import program, ty
from shardc.tests.unit.test_lower_movement import DEVICES, check

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
F8 = {"f8E4M3FN": np.dtype(ml_dtypes.float8_e4m3fn), "f8E5M2": np.dtype(ml_dtypes.float8_e5m2)}


def f8_values(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    """f8 values of magnitude in [2^-4, 2^4) (and zeros), either sign."""
    mag = 2.0 ** rng.uniform(-4, 4, size=shape) * rng.choice(
        [-1, 1, 0], size=shape, p=[0.45, 0.45, 0.1]
    )
    return mag.astype(np.float32).astype(F8[dtype])


def rounded_sum(x: np.ndarray, axis: int, dtype: str) -> np.ndarray:
    return x.astype(np.float32).sum(axis).astype(F8[dtype])


@SETTINGS
@given(
    st.sampled_from(sorted(F8)),
    st.sampled_from(["add", "max", "min", "mul"]),
    st.tuples(st.sampled_from([1, 3, 8, 16]), st.sampled_from([1, 5, 128, 512])),
    st.integers(0, 2**16),
)
def test_reduce_accumulates_in_f32(dtype: str, how: str, shape, seed: int) -> None:
    rng = np.random.default_rng(seed)
    if how == "mul":  # products of [2^-4, 2^4): a short row keeps them inside f32
        shape = (shape[0], min(shape[1], 5))
    t, r = ty(shape, dtype), ty(shape[:1], dtype)
    text = program([t], r, f"hlo.reduce {how} %a0, dims = [1] : ({t}) -> {r}")
    rows = [[f8_values(rng, shape, dtype)] for _ in range(DEVICES)]
    check(text, rows)
    if how == "add":  # independently: the f32 sum rounded once
        got = np.asarray(run_per_device(text, rows)[0][0])
        assert got.tobytes() == rounded_sum(rows[0][0], 1, dtype).tobytes()


@SETTINGS
@given(
    st.sampled_from(sorted(F8)),
    st.tuples(st.sampled_from([1, 8, 16]), st.sampled_from([1, 7, 256]), st.sampled_from([3, 128])),
    st.integers(0, 2**16),
)
def test_dot_accumulates_in_f32(dtype: str, mkn, seed: int) -> None:
    m, k, n = mkn
    rng = np.random.default_rng(seed)
    lt, rt, ot = ty((m, k), dtype), ty((k, n), dtype), ty((m, n), dtype)
    line = f"hlo.dot %a0, %a1, contracting_dims = [1] x [0] : ({lt}, {rt}) -> {ot}"
    rows = [[f8_values(rng, (m, k), dtype), f8_values(rng, (k, n), dtype)] for _ in range(DEVICES)]
    text = program([lt, rt], ot, line)
    check(text, rows)
    a, b = rows[0]
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(F8[dtype])
    assert np.asarray(run_per_device(text, rows)[0][0]).tobytes() == want.tobytes()


@SETTINGS
@given(
    st.sampled_from(sorted(F8)),
    st.sampled_from(["all_reduce", "reduce_scatter_dim0", "reduce_scatter_dim1"]),
    st.sampled_from([2, 4, 8]),
)
def test_reducing_collectives_accumulate_in_f32(dtype: str, kind: str, n: int) -> None:
    """Partials travel in f32 and round once (exact: the test's inputs are small f8s)."""
    arg, res, op = collectives.cases(n)[kind]
    collectives.check(collectives.one_op(n, dtype, arg, res, op), n, exact=True)


@SETTINGS
@given(st.sampled_from(sorted(F8)), st.sampled_from(["add", "mul"]), st.integers(0, 2**16))
def test_scatter_add_and_mul_accumulate_in_f32(dtype: str, kind: str, seed: int) -> None:
    """Duplicate indices: every update applied in f32, rounded once (`gather.ScatterInF32`)."""
    rng = np.random.default_rng(seed)
    t, u, i = ty((8, 4), dtype), ty((6, 4), dtype), "tensor<6x1xi32>"
    line = (
        f"hlo.scatter {kind} %a0, %a1, %a2, update_window_dims = [1], inserted_window_dims = [0], "
        f"scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : ({t}, {i}, {u}) -> {t}"
    )
    rows = [
        [
            f8_values(rng, (8, 4), dtype),
            rng.integers(0, 3, size=(6, 1)).astype(np.int32),
            f8_values(rng, (6, 4), dtype),
        ]
        for _ in range(DEVICES)
    ]
    check(program([t, i, u], t, line), rows)
