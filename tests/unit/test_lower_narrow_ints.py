"""
`lower-to-tpu` of sub-byte integers (i4 ui4 i2 ui2) in every computing op (issue 15 item 3,
lowering/narrow_ints.py): elementwise ops on every pair of values of the type (where the
width matters: wrapping, INT_MIN / -1, division by 0, shifts by >= the width, popcnt and
clz of the w bits), reduce, dot (into the narrow type and into i32), all_reduce and
reduce_scatter, scatter combiners; hypothesis-drawn shapes and values, lowered, simulated
at level T and compared with level S bit for bit, and with an independent reference
(the exact result in int64 wrapped at the width).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.interpreter.testing import run_per_device
from shardc.tests.unit import test_lower_to_tpu as collectives
from shardc.tests.unit.test_lower_element_types import program, ty
from shardc.tests.unit.test_lower_gather import scatter_case
from shardc.tests.unit.test_lower_movement import DEVICES, check

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NARROW = {
    "i4": np.dtype(ml_dtypes.int4),
    "ui4": np.dtype(ml_dtypes.uint4),
    "i2": np.dtype(ml_dtypes.int2),
    "ui2": np.dtype(ml_dtypes.uint2),
}
BINARY = [
    "add", "sub", "mul", "div", "remainder", "max", "min", "pow", "and", "or", "xor",
    "shift_left", "shift_right_logical", "shift_right_arithmetic",
]  # fmt: skip
UNARY = ["neg", "abs", "not", "popcnt", "count_leading_zeros"]


def width(dtype: str) -> int:
    return int(dtype.lstrip("ui"))  # i4 -> 4, ui2 -> 2


def every_pair(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Every (a, b) of the type, flattened (16 x 16 for 4 bits)."""
    info = ml_dtypes.iinfo(NARROW[dtype])
    v = np.arange(info.min, info.max + 1)
    a, b = np.meshgrid(v, v)
    return a.ravel().astype(NARROW[dtype]), b.ravel().astype(NARROW[dtype])


def wrapped(x: np.ndarray, dtype: str) -> np.ndarray:
    """The exact int64 result wrapped at the type's width (the independent reference)."""
    w = width(dtype)
    x = np.asarray(x, np.int64) % (1 << w)
    if not dtype.startswith("u"):
        x = np.where(x >= 1 << (w - 1), x - (1 << w), x)
    return x


@pytest.mark.parametrize("dtype", sorted(NARROW))
@pytest.mark.parametrize("op", BINARY + UNARY)
def test_elementwise_on_every_pair_is_level_s_bit_for_bit(dtype: str, op: str) -> None:
    a, b = every_pair(dtype)
    t = ty(a.shape, dtype)
    line = f"hlo.{op} %a0 : {t}" if op in UNARY else f"hlo.{op} %a0, %a1 : {t}"
    text = program([t, t], t, line)
    check(text, [[a, b], [b, a]])
    reference = {
        "add": lambda x, y: x + y,
        "sub": lambda x, y: x - y,
        "mul": lambda x, y: x * y,
        "neg": lambda x, y: -x,
        "abs": lambda x, y: np.abs(x),
        "xor": lambda x, y: x ^ y,
    }
    if op in reference:  # independently of level S: int64, wrapped at the width
        got = np.asarray(run_per_device(text, [[a, b]] * DEVICES)[0][0]).astype(np.int64)
        want = wrapped(reference[op](a.astype(np.int64), b.astype(np.int64)), dtype)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", sorted(NARROW))
@pytest.mark.parametrize("direction", ["EQ", "LT", "GE"])
def test_compare_and_clamp(dtype: str, direction: str) -> None:
    a, b = every_pair(dtype)
    t, p = ty(a.shape, dtype), ty(a.shape, "i1")
    line = f"hlo.compare {direction}, %a0, %a1 : ({t}, {t}) -> {p}"
    check(program([t, t], p, line), [[a, b], [b, a]])
    c = a[::-1].copy()
    line = f"hlo.clamp %a0, %a1, %a2 : ({t}, {t}, {t}) -> {t}"
    check(program([t, t, t], t, line), [[a, b, c], [c, a, b]])


@pytest.mark.parametrize("pair", [("i4", "ui4"), ("ui4", "i4"), ("i2", "ui2"), ("ui2", "i2")])
def test_bitcast_convert_between_signednesses(pair) -> None:
    src, dst = pair
    a, b = every_pair(src)
    t, r = ty(a.shape, src), ty(a.shape, dst)
    check(program([t], r, f"hlo.bitcast_convert %a0 : ({t}) -> {r}"), [[a], [b]])


def narrow_values(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    info = ml_dtypes.iinfo(NARROW[dtype])
    return rng.integers(int(info.min), int(info.max) + 1, size=shape).astype(NARROW[dtype])


@SETTINGS
@given(
    st.sampled_from(sorted(NARROW)),
    st.sampled_from(["add", "mul", "max", "min"]),
    st.tuples(st.sampled_from([1, 3, 8, 16]), st.sampled_from([1, 5, 128, 300])),
    st.integers(0, 2**16),
)
def test_reduce_is_level_s_and_wraps(dtype: str, how: str, shape, seed: int) -> None:
    rng = np.random.default_rng(seed)
    t, r = ty(shape, dtype), ty(shape[:1], dtype)
    text = program([t], r, f"hlo.reduce {how} %a0, dims = [1] : ({t}) -> {r}")
    rows = [[narrow_values(rng, shape, dtype)] for _ in range(DEVICES)]
    check(text, rows)
    if how == "add":
        got = np.asarray(run_per_device(text, rows)[0][0]).astype(np.int64)
        np.testing.assert_array_equal(got, wrapped(rows[0][0].astype(np.int64).sum(1), dtype))


@SETTINGS
@given(
    st.sampled_from(sorted(NARROW)),
    st.sampled_from(["same", "i32"]),
    st.tuples(st.sampled_from([1, 8, 16]), st.sampled_from([1, 7, 256]), st.sampled_from([3, 128])),
    st.integers(0, 2**16),
)
def test_dot_is_level_s_and_wraps(dtype: str, result: str, mkn, seed: int) -> None:
    """Into the narrow type (the exact sum wrapped) or into i32 (exact)."""
    m, k, n = mkn
    rng = np.random.default_rng(seed)
    out = dtype if result == "same" else "i32"
    lt, rt, ot = ty((m, k), dtype), ty((k, n), dtype), ty((m, n), out)
    line = f"hlo.dot %a0, %a1, contracting_dims = [1] x [0] : ({lt}, {rt}) -> {ot}"
    rows = [[narrow_values(rng, (m, k), dtype), narrow_values(rng, (k, n), dtype)]]
    rows *= DEVICES
    text = program([lt, rt], ot, line)
    check(text, rows)
    exact = rows[0][0].astype(np.int64) @ rows[0][1].astype(np.int64)
    got = np.asarray(run_per_device(text, rows)[0][0]).astype(np.int64)
    np.testing.assert_array_equal(got, exact if out == "i32" else wrapped(exact, dtype))


@pytest.mark.parametrize("dtype, out", [("i8", "i32"), ("ui8", "ui32"), ("i4", "i8")])
def test_byte_dots_into_a_wider_type_accumulate_in_32_bits(dtype: str, out: str) -> None:
    """The MXU's int8 path accumulates in 32 bits (`tpu.accumulation_type`): i8 x i8 ->
    i32 is the exact sum (it wrapped at 8 bits before), i4 x i4 -> i8 the sum mod 2^8."""
    rng = np.random.default_rng(7)
    np_dt = NARROW.get(dtype, np.dtype(dtype.replace("ui", "uint").replace("i8", "int8")))
    info = ml_dtypes.iinfo(np_dt)
    a, b = (
        rng.integers(int(info.min), int(info.max) + 1, size=s).astype(np_dt)
        for s in ((8, 512), (512, 128))
    )
    lt, rt, ot = ty(a.shape, dtype), ty(b.shape, dtype), ty((8, 128), out)
    line = f"hlo.dot %a0, %a1, contracting_dims = [1] x [0] : ({lt}, {rt}) -> {ot}"
    text = program([lt, rt], ot, line)
    check(text, [[a, b]] * DEVICES)
    exact = a.astype(np.int64) @ b.astype(np.int64)
    got = np.asarray(run_per_device(text, [[a, b]] * DEVICES)[0][0]).astype(np.int64)
    np.testing.assert_array_equal(got, wrapped(exact, out) if out == "i8" else exact)


@pytest.mark.parametrize("dtype", sorted(NARROW))
@pytest.mark.parametrize("kind", ["all_reduce", "reduce_scatter_dim0", "reduce_scatter_dim1"])
@pytest.mark.parametrize("how", ["add", "max", "mul"])
def test_reducing_collectives(dtype: str, kind: str, how: str) -> None:
    n = 4
    arg, res, op = collectives.cases(n)[kind]
    text = collectives.one_op(n, dtype, arg, res, op.replace(" add ", f" {how} "))
    collectives.check(text, n)


@SETTINGS
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from(["add", "mul", "max", "min"]),
    st.sampled_from(sorted(NARROW)),
)
def test_scatter_combiners(seed: int, kind: str, dtype: str) -> None:
    check(*scatter_case(np.random.default_rng(seed), kind, dtype, narrow_values))
