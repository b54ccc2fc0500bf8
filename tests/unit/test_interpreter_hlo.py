"""Level G: every hlo op on numpy, for every element type it accepts, against hand-written numpy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from shardc.dialects import hlo
from shardc.interpreter.hlo_impls import HloFunctions
from shardc.interpreter.testing import parse, run_global, run_per_device
from shardc.interpreter.values import f64_to_bf16
from xdsl.interpreter import Interpreter
from xdsl.interpreters.func import FuncFunctions

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "f16": np.dtype(np.float16),
    "bf16": BF16,
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "i1": np.dtype(np.bool_),
}
FLOATS = ["f32", "f64", "f16", "bf16"]
INTS = ["i32", "i64"]
NUMERIC = FLOATS + INTS
ALL = NUMERIC + ["i1"]
LOW = {np.dtype(np.float16), BF16}

rng = np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def _seed(request: pytest.FixtureRequest) -> None:
    """Deterministic data per test, whatever runs before it."""
    global rng
    rng = np.random.default_rng(sum(map(ord, request.node.name)))


def data(t: str, shape=(3, 4), positive: bool = False, nonzero: bool = False) -> np.ndarray:
    dt = DTYPES[t]
    if t == "i1":
        return rng.integers(0, 2, size=shape).astype(bool)
    if t in INTS:
        x = rng.integers(-20, 20, size=shape)
        if positive:
            x = np.abs(x) + 1
        if nonzero:
            x = np.where(x == 0, 3, x)
        return x.astype(dt)
    x = rng.standard_normal(size=shape) * 3
    if positive:
        x = np.abs(x) + 0.1
    return x.astype(np.float32).astype(dt)


def ty(t: str, shape=(3, 4)) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + t + ">"


def run1(body: str, args: list[tuple[str, np.ndarray]], result: str) -> np.ndarray:
    """Run `%r = <body>` in a one-op @main over `args` (name, array) returning `result` type."""
    params = ", ".join(f"%{n}: {ty_of(a)}" for n, a in args)
    text = f"""
func.func @main({params}) -> {result} {{
  %r = {body}
  func.return %r : {result}
}}"""
    (out,) = run_per_device(text, [[a for _, a in args]])[0]
    return np.asarray(out)


_NAMES = {v: k for k, v in DTYPES.items()}


def ty_of(a: np.ndarray) -> str:
    return ty(_NAMES[a.dtype], a.shape)


def in_f32(fn):
    """The numerics rule's reference: compute in f32 for bf16/f16, round once."""

    def ref(*xs):
        dt = xs[0].dtype
        if dt in LOW:
            return np.asarray(fn(*(x.astype(np.float32) for x in xs))).astype(dt)
        return np.asarray(fn(*xs))

    return ref


def assert_bits(got: np.ndarray, want: np.ndarray) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes(), (got, want)


def assert_close_ulp(got: np.ndarray, exact_f64: np.ndarray, ulps: float = 1.0) -> None:
    """got (in its dtype) within `ulps` units in the last place of the f64 truth."""
    dt = got.dtype
    eps = {
        np.dtype(np.float32): 2.0**-23,
        np.dtype(np.float64): 2.0**-52,
        np.dtype(np.float16): 2.0**-10,
        BF16: 2.0**-7,
    }[dt]
    g = got.astype(np.float64)
    tol = ulps * eps * np.maximum(np.abs(exact_f64), 2.0**-14 if dt in LOW else 1e-30)
    assert np.all(np.abs(g - exact_f64) <= tol), (got, exact_f64)


# Binary elementwise ---------------------------------------------------------------------

BINARY = {
    "add": (ALL, lambda a, b: a | b if a.dtype == bool else in_f32(np.add)(a, b)),
    "sub": (NUMERIC, in_f32(np.subtract)),
    "mul": (ALL, lambda a, b: a & b if a.dtype == bool else in_f32(np.multiply)(a, b)),
    "max": (ALL, in_f32(np.maximum)),
    "min": (ALL, in_f32(np.minimum)),
    "and": (INTS + ["i1"], np.bitwise_and),
    "or": (INTS + ["i1"], np.bitwise_or),
}


@pytest.mark.parametrize("name,t", [(n, t) for n, (ts, _) in BINARY.items() for t in ts])
def test_binary(name: str, t: str) -> None:
    a, b = data(t), data(t)
    got = run1(f"hlo.{name} %a, %b : {ty(t)}", [("a", a), ("b", b)], ty(t))
    assert_bits(got, BINARY[name][1](a, b))


@pytest.mark.parametrize("t", FLOATS)
def test_div_float(t: str) -> None:
    a, b = data(t), data(t, nonzero=True)
    got = run1(f"hlo.div %a, %b : {ty(t)}", [("a", a), ("b", b)], ty(t))
    assert_bits(got, in_f32(np.divide)(a, b))


@pytest.mark.parametrize("t", INTS)
def test_div_int_truncates_toward_zero(t: str) -> None:
    dt = DTYPES[t]
    a = np.array([7, -7, 7, -7, 0, 5, -5, 1], dtype=dt)
    b = np.array([2, 2, -2, -2, 3, 0, 0, 1], dtype=dt)
    got = run1(f"hlo.div %a, %b : {ty(t, (8,))}", [("a", a), ("b", b)], ty(t, (8,)))
    # C semantics: 7/2 = 3, -7/2 = -3; x/0 = -1 (as XLA)
    assert_bits(got, np.array([3, -3, -3, 3, 0, -1, -1, 1], dtype=dt))
    lo = np.iinfo(dt).min
    got = run1(
        f"hlo.div %a, %b : {ty(t, (1,))}",
        [("a", np.array([lo], dt)), ("b", np.array([-1], dt))],
        ty(t, (1,)),
    )
    assert_bits(got, np.array([lo], dt))  # wraps


@pytest.mark.parametrize("t", FLOATS)
def test_pow_float(t: str) -> None:
    a = data(t, positive=True)
    b = (np.clip(data("f32"), -2, 2)).astype(DTYPES[t])
    got = run1(f"hlo.pow %a, %b : {ty(t)}", [("a", a), ("b", b)], ty(t))
    assert_close_ulp(got, np.power(a.astype(np.float64), b.astype(np.float64)), 2)


@pytest.mark.parametrize("t", INTS)
def test_pow_int(t: str) -> None:
    dt = DTYPES[t]
    a = np.array([2, -3, 5, 1, -1, -1, 2, 0, 0, 7], dtype=dt)
    b = np.array([10, 3, 0, -5, -3, -4, -1, 0, 3, 2], dtype=dt)
    got = run1(f"hlo.pow %a, %b : {ty(t, (10,))}", [("a", a), ("b", b)], ty(t, (10,)))
    assert_bits(got, np.array([1024, -27, 1, 1, -1, 1, 0, 1, 0, 49], dtype=dt))
    # wrapping like C: 3^40 mod 2^bits
    got = run1(
        f"hlo.pow %a, %b : {ty(t, (1,))}",
        [("a", np.array([3], dt)), ("b", np.array([40], dt))],
        ty(t, (1,)),
    )
    bits = dt.itemsize * 8
    want = pow(3, 40, 2**bits)
    want = want - 2**bits if want >= 2 ** (bits - 1) else want
    assert int(got[0]) == want


# Unary elementwise ----------------------------------------------------------------------

UNARY_FLOAT = {
    "exp": (np.exp, False),
    "log": (np.log, True),
    "tanh": (np.tanh, False),
    "sqrt": (np.sqrt, True),
    "rsqrt": (lambda x: 1 / np.sqrt(x), True),
    "sin": (np.sin, False),
    "cos": (np.cos, False),
    "logistic": (lambda x: 1 / (1 + np.exp(-x)), False),
}


@pytest.mark.parametrize("name,t", [(n, t) for n in UNARY_FLOAT for t in FLOATS])
def test_unary_float(name: str, t: str) -> None:
    fn, positive = UNARY_FLOAT[name]
    a = data(t, positive=positive)
    got = run1(f"hlo.{name} %a : {ty(t)}", [("a", a)], ty(t))
    assert got.dtype == DTYPES[t]
    assert_close_ulp(got, fn(a.astype(np.float64)), 1.5 if t != "f16" else 1.0)
    if t in ("bf16", "f16"):  # the rule: computed in f32, rounded once
        assert_bits(got, in_f32(fn)(a))


@pytest.mark.parametrize("t", NUMERIC)
def test_neg_abs(t: str) -> None:
    a = data(t)
    assert_bits(run1(f"hlo.neg %a : {ty(t)}", [("a", a)], ty(t)), np.negative(a))
    assert_bits(run1(f"hlo.abs %a : {ty(t)}", [("a", a)], ty(t)), np.abs(a))


@pytest.mark.parametrize("t", INTS + ["i1"])
def test_not(t: str) -> None:
    a = data(t)
    want = np.logical_not(a) if t == "i1" else np.invert(a)
    assert_bits(run1(f"hlo.not %a : {ty(t)}", [("a", a)], ty(t)), want)


# compare, select, convert, constant, iota -----------------------------------------------

CMP = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "LT": np.less,
    "LE": np.less_equal,
    "GT": np.greater,
    "GE": np.greater_equal,
}


@pytest.mark.parametrize("direction,t", [(d, t) for d in CMP for t in ALL])
def test_compare(direction: str, t: str) -> None:
    a, b = data(t), data(t)
    b[0, :2] = a[0, :2]  # some equal elements
    got = run1(
        f"hlo.compare {direction}, %a, %b : ({ty(t)}, {ty(t)}) -> {ty('i1')}",
        [("a", a), ("b", b)],
        ty("i1"),
    )
    assert_bits(got, CMP[direction](a, b))


def test_compare_nan() -> None:
    a = np.array([np.nan, 1.0, np.nan], np.float32)
    b = np.array([np.nan, np.nan, 2.0], np.float32)
    for d, want in [("EQ", [0, 0, 0]), ("NE", [1, 1, 1]), ("LT", [0, 0, 0]), ("GE", [0, 0, 0])]:
        got = run1(
            f"hlo.compare {d}, %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>",
            [("a", a), ("b", b)],
            "tensor<3xi1>",
        )
        assert_bits(got, np.array(want, bool))


@pytest.mark.parametrize("t", ALL)
def test_select(t: str) -> None:
    p, a, b = data("i1"), data(t), data(t)
    got = run1(
        f"hlo.select %p, %a, %b : {ty('i1')}, {ty(t)}",
        [("p", p), ("a", a), ("b", b)],
        ty(t),
    )
    assert_bits(got, np.where(p, a, b))
    for scalar in (True, False):
        got = run1(
            f"hlo.select %p, %a, %b : tensor<i1>, {ty(t)}",
            [("p", np.array(scalar)), ("a", a), ("b", b)],
            ty(t),
        )
        assert_bits(got, a if scalar else b)


@pytest.mark.parametrize("src,dst", [(s, d) for s in ALL for d in ALL])
def test_convert_matrix(src: str, dst: str) -> None:
    a = data(src, (16,))
    got = run1(
        f"hlo.convert %a : ({ty(src, (16,))}) -> {ty(dst, (16,))}", [("a", a)], ty(dst, (16,))
    )
    assert got.dtype == DTYPES[dst] and got.shape == (16,)
    if dst == "i1":
        want = a != 0
    elif src == "i1":
        want = a.astype(DTYPES[dst])
    elif dst in INTS:
        want = np.trunc(a.astype(np.float64)).astype(DTYPES[dst])
    elif dst == "bf16":
        want = f64_to_bf16(a.astype(np.float64))
    else:
        want = a.astype(np.float64).astype(DTYPES[dst])
    assert_bits(got, want)


def test_convert_edge_cases() -> None:
    a = np.array([2.7, -2.7, 0.5, -0.5, np.nan, 1e10, -1e10, np.inf, -np.inf], np.float32)
    got = run1("hlo.convert %a : (tensor<9xf32>) -> tensor<9xi32>", [("a", a)], "tensor<9xi32>")
    i = np.iinfo(np.int32)
    assert got.tolist() == [2, -2, 0, 0, 0, i.max, i.min, i.max, i.min]
    # int -> float rounds to nearest (even)
    a = np.array([16777217, 16777219, -16777217], np.int32)
    got = run1("hlo.convert %a : (tensor<3xi32>) -> tensor<3xf32>", [("a", a)], "tensor<3xf32>")
    assert got.tolist() == [16777216.0, 16777220.0, -16777216.0]
    # f64 -> bf16 rounds once (ml_dtypes' own cast rounds twice through f32)
    a = np.array([1 + 2**-8 + 2**-30, 1 + 2**-8, 1 + 3 * 2**-8], np.float64)
    got = run1("hlo.convert %a : (tensor<3xf64>) -> tensor<3xbf16>", [("a", a)], "tensor<3xbf16>")
    assert got.astype(np.float64).tolist() == [1 + 2**-7, 1.0, 1 + 2**-6]
    # i64 -> bf16, large
    a = np.array([2**40 + 2**32 + 1], np.int64)
    got = run1("hlo.convert %a : (tensor<1xi64>) -> tensor<1xbf16>", [("a", a)], "tensor<1xbf16>")
    assert got.astype(np.float64).tolist() == [2**40 + 2**33]


@pytest.mark.parametrize("t", ALL)
def test_constant(t: str) -> None:
    if t == "i1":
        lit, want = "[[true, false], [false, true]]", np.array([[1, 0], [0, 1]], bool)
    elif t in INTS:
        lit, want = "[[1, -2], [3, -4]]", np.array([[1, -2], [3, -4]], DTYPES[t])
    else:
        lit, want = (
            "[[1.5, -2.0], [0.25, 3.0]]",
            np.array([[1.5, -2.0], [0.25, 3.0]]).astype(DTYPES[t]),
        )
    got = run1(f"hlo.constant dense<{lit}> : {ty(t, (2, 2))}", [], ty(t, (2, 2)))
    assert_bits(got, want)
    splat = "true" if t == "i1" else ("7" if t in INTS else "0.5")
    got = run1(f"hlo.constant dense<{splat}> : {ty(t, (2, 3))}", [], ty(t, (2, 3)))
    assert_bits(got, np.full((2, 3), {"true": True, "7": 7, "0.5": 0.5}[splat], DTYPES[t]))


@pytest.mark.parametrize("t,dim", [(t, d) for t in NUMERIC for d in (0, 1)])
def test_iota(t: str, dim: int) -> None:
    got = run1(f"hlo.iota dim = {dim} : {ty(t, (3, 5))}", [], ty(t, (3, 5)))
    want = np.indices((3, 5))[dim].astype(DTYPES[t])
    assert_bits(got, want)


# Shape ops ------------------------------------------------------------------------------


@pytest.mark.parametrize("t", ALL)
def test_broadcast(t: str) -> None:
    a = data(t, (4,))
    got = run1(
        f"hlo.broadcast %a, dims = [1] : ({ty(t, (4,))}) -> {ty(t, (3, 4))}",
        [("a", a)],
        ty(t, (3, 4)),
    )
    assert_bits(got, np.broadcast_to(a[None, :], (3, 4)))
    got = run1(
        f"hlo.broadcast %a, dims = [0] : ({ty(t, (4,))}) -> {ty(t, (4, 3))}",
        [("a", a)],
        ty(t, (4, 3)),
    )
    assert_bits(got, np.broadcast_to(a[:, None], (4, 3)))
    s = data(t, ())
    got = run1(
        f"hlo.broadcast %a, dims = [] : ({ty(t, ())}) -> {ty(t, (2, 3))}", [("a", s)], ty(t, (2, 3))
    )
    assert_bits(got, np.full((2, 3), s))
    b = data(t, (1, 4))  # size-1 dimension expands
    got = run1(
        f"hlo.broadcast %a, dims = [0, 2] : ({ty(t, (1, 4))}) -> {ty(t, (3, 2, 4))}",
        [("a", b)],
        ty(t, (3, 2, 4)),
    )
    assert_bits(got, np.broadcast_to(b[:, None, :], (3, 2, 4)))


@pytest.mark.parametrize("t", ALL)
def test_reshape_transpose(t: str) -> None:
    a = data(t, (2, 3, 4))
    got = run1(
        f"hlo.reshape %a : ({ty(t, (2, 3, 4))}) -> {ty(t, (6, 4))}", [("a", a)], ty(t, (6, 4))
    )
    assert_bits(got, a.reshape(6, 4))
    got = run1(
        f"hlo.transpose %a, dims = [2, 0, 1] : ({ty(t, (2, 3, 4))}) -> {ty(t, (4, 2, 3))}",
        [("a", a)],
        ty(t, (4, 2, 3)),
    )
    assert_bits(got, np.transpose(a, (2, 0, 1)))


@pytest.mark.parametrize("t", ALL)
def test_slice(t: str) -> None:
    a = data(t, (6, 9))
    got = run1(
        f"hlo.slice %a [1:5, 0:9:3] : ({ty(t, (6, 9))}) -> {ty(t, (4, 3))}",
        [("a", a)],
        ty(t, (4, 3)),
    )
    assert_bits(got, a[1:5, 0:9:3])
    got = run1(
        f"hlo.slice %a [0:6:4, 2:7:2] : ({ty(t, (6, 9))}) -> {ty(t, (2, 3))}",
        [("a", a)],
        ty(t, (2, 3)),
    )
    assert_bits(got, a[0:6:4, 2:7:2])


@pytest.mark.parametrize("t", ALL)
def test_dynamic_slice_clamps(t: str) -> None:
    a = data(t, (6, 8))
    text_op = (
        f"hlo.dynamic_slice %a [%i, %j] sizes = [2, 3] : ({ty(t, (6, 8))}, tensor<i32>, "
        f"tensor<i32>) -> {ty(t, (2, 3))}"
    )
    for i, j, ci, cj in [(1, 2, 1, 2), (-3, 7, 0, 5), (5, -1, 4, 0), (100, 100, 4, 5)]:
        got = run1(
            text_op,
            [("a", a), ("i", np.array(i, np.int32)), ("j", np.array(j, np.int32))],
            ty(t, (2, 3)),
        )
        assert_bits(got, a[ci : ci + 2, cj : cj + 3])


@pytest.mark.parametrize("t", ALL)
def test_dynamic_update_slice_clamps(t: str) -> None:
    a, u = data(t, (5, 6)), data(t, (2, 4))
    text_op = (
        f"hlo.dynamic_update_slice %a, %u [%i, %j] : ({ty(t, (5, 6))}, {ty(t, (2, 4))}, "
        f"tensor<i64>, tensor<i64>) -> {ty(t, (5, 6))}"
    )
    for i, j, ci, cj in [(0, 0, 0, 0), (2, 1, 2, 1), (4, 5, 3, 2), (-2, -9, 0, 0)]:
        got = run1(
            text_op,
            [("a", a), ("u", u), ("i", np.array(i, np.int64)), ("j", np.array(j, np.int64))],
            ty(t, (5, 6)),
        )
        want = a.copy()
        want[ci : ci + 2, cj : cj + 4] = u
        assert_bits(got, want)
    assert a.flags.writeable  # the operand was not modified in place: a fresh copy
    assert_bits(a, a.copy())


@pytest.mark.parametrize("t", ALL)
def test_concatenate(t: str) -> None:
    a, b, c = data(t, (2, 3)), data(t, (2, 1)), data(t, (2, 2))
    got = run1(
        f"hlo.concatenate %a, %b, %c, dim = 1 : ({ty(t, (2, 3))}, {ty(t, (2, 1))}, "
        f"{ty(t, (2, 2))}) -> {ty(t, (2, 6))}",
        [("a", a), ("b", b), ("c", c)],
        ty(t, (2, 6)),
    )
    assert_bits(got, np.concatenate([a, b, c], axis=1))


# dot and reduce -------------------------------------------------------------------------


def ref_dot(a, b, out_dtype, subscripts):
    acc = np.float32 if a.dtype in LOW else a.dtype
    if a.dtype == bool:
        return np.einsum(subscripts, a.astype(np.int64), b.astype(np.int64)) != 0
    r = np.einsum(subscripts, a.astype(acc), b.astype(acc))
    return np.asarray(r).astype(out_dtype)


DOTS = [
    # (lhs shape, rhs shape, batching, contracting, result shape, einsum)
    ((4, 5), (5, 3), ([], []), ([1], [0]), (4, 3), "mk,kn->mn"),
    ((5, 4), (5, 3), ([], []), ([0], [0]), (4, 3), "km,kn->mn"),
    ((4, 5), (3, 5), ([], []), ([1], [1]), (4, 3), "mk,nk->mn"),
    ((2, 4, 5), (2, 5, 3), ([0], [0]), ([2], [1]), (2, 4, 3), "bmk,bkn->bmn"),
    ((4, 2, 5), (5, 3, 2), ([1], [2]), ([2], [0]), (2, 4, 3), "mbk,knb->bmn"),
    ((2, 3, 4), (3, 4, 5), ([], []), ([1, 2], [0, 1]), (2, 5), "mkl,kln->mn"),
    ((3,), (4,), ([], []), ([], []), (3, 4), "m,n->mn"),
    ((6,), (6,), ([], []), ([0], [0]), (), "k,k->"),
]


def _list(xs):
    return "[" + ", ".join(map(str, xs)) + "]"


@pytest.mark.parametrize("case", range(len(DOTS)))
@pytest.mark.parametrize("t", ALL)
def test_dot(case: int, t: str) -> None:
    ls, rs, (lb, rb), (lc, rc), out, sub = DOTS[case]
    a, b = data(t, ls), data(t, rs)
    batching = f", batching_dims = {_list(lb)} x {_list(rb)}" if lb else ""
    got = run1(
        f"hlo.dot %a, %b{batching}, contracting_dims = {_list(lc)} x {_list(rc)} : "
        f"({ty(t, ls)}, {ty(t, rs)}) -> {ty(t, out)}",
        [("a", a), ("b", b)],
        ty(t, out),
    )
    want = ref_dot(a, b, DTYPES[t], sub)
    if t in ("f32", "f64", "f16", "bf16"):
        # summation order may differ from einsum's: within a few ulp of the f64 truth
        exact = np.einsum(sub, a.astype(np.float64), b.astype(np.float64))
        scale = np.einsum(sub, np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
        eps = {"f32": 2.0**-23, "f64": 2.0**-52, "f16": 2.0**-10, "bf16": 2.0**-7}[t]
        assert got.dtype == DTYPES[t] and got.shape == out
        assert np.all(np.abs(got.astype(np.float64) - exact) <= eps * (scale + 1e-30) + 1e-300)
    else:
        assert_bits(got, want)


def test_dot_bf16_to_f32_result_and_accumulation() -> None:
    # 256 + 1 + 1 + ... in bf16 would stay 256 (ulp 2); accumulated in f32 it is 264
    a = np.array([[256.0] + [1.0] * 8], dtype=BF16)
    b = np.ones((9, 1), dtype=BF16)
    got = run1(
        "hlo.dot %a, %b, contracting_dims = [1] x [0] : (tensor<1x9xbf16>, tensor<9x1xbf16>) -> tensor<1x1xbf16>",
        [("a", a), ("b", b)],
        "tensor<1x1xbf16>",
    )
    assert got.astype(np.float32)[0, 0] == 264.0
    got = run1(
        "hlo.dot %a, %b, contracting_dims = [1] x [0] : (tensor<1x9xbf16>, tensor<9x1xbf16>) -> tensor<1x1xf32>",
        [("a", a), ("b", b)],
        "tensor<1x1xf32>",
    )
    assert got.dtype == np.float32 and got[0, 0] == 264.0


REDUCE_REF = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


@pytest.mark.parametrize("kind,t", [(k, t) for k in REDUCE_REF for t in ALL])
def test_reduce(kind: str, t: str) -> None:
    a = data(t, (3, 4, 5))
    if kind == "mul" and t in FLOATS:
        a = (np.abs(a.astype(np.float32)) * 0.1 + 0.9).astype(DTYPES[t])
    got = run1(
        f"hlo.reduce {kind} %a, dims = [0, 2] : ({ty(t, (3, 4, 5))}) -> {ty(t, (4,))}",
        [("a", a)],
        ty(t, (4,)),
    )
    if t == "i1":
        fn = np.logical_or if kind in ("add", "max") else np.logical_and
        assert_bits(got, fn.reduce(a, axis=(0, 2)))
        return
    if t in INTS:
        want = REDUCE_REF[kind].reduce(a, axis=(0, 2), dtype=DTYPES[t])
        assert_bits(got, want)
    elif kind in ("max", "min"):
        assert_bits(got, REDUCE_REF[kind].reduce(a, axis=(0, 2)))
    else:
        exact = REDUCE_REF[kind].reduce(a.astype(np.float64), axis=(0, 2))
        scale = REDUCE_REF[kind].reduce(np.abs(a.astype(np.float64)), axis=(0, 2))
        assert got.dtype == DTYPES[t]
        # accumulated in f32 (f64 for f64), rounded once: within one ulp of the type plus
        # the accumulation error of 15 terms
        eps = {"f32": 2.0**-23, "f64": 2.0**-52, "f16": 2.0**-10, "bf16": 2.0**-7}[t]
        acc_eps = 2.0**-52 if t == "f64" else 2.0**-23
        err = np.abs(got.astype(np.float64) - exact)
        assert np.all(err <= eps * np.abs(exact) + 16 * acc_eps * scale), (got, exact)


@pytest.mark.parametrize("t", NUMERIC)
def test_reduce_identities(t: str) -> None:
    dt = DTYPES[t]
    a = np.zeros((0, 3), dt)
    want = {
        "add": 0,
        "mul": 1,
        "max": -np.inf if t in FLOATS else np.iinfo(dt).min,
        "min": np.inf if t in FLOATS else np.iinfo(dt).max,
    }
    for kind, value in want.items():
        got = run1(
            f"hlo.reduce {kind} %a, dims = [0] : ({ty(t, (0, 3))}) -> {ty(t, (3,))}",
            [("a", a)],
            ty(t, (3,)),
        )
        assert_bits(got, np.full((3,), value, dt))


def test_reduce_bf16_accumulates_in_f32() -> None:
    a = np.array([256.0] + [1.0] * 8, dtype=BF16)
    sequential = np.array(0, BF16)
    for x in a:
        sequential = np.array(sequential + x, BF16)
    assert float(sequential) == 256.0  # what bf16 accumulation would give
    got = run1(
        "hlo.reduce add %a, dims = [0] : (tensor<9xbf16>) -> tensor<bf16>",
        [("a", a)],
        "tensor<bf16>",
    )
    assert float(got) == 264.0


def test_reduce_no_dims_and_scalar() -> None:
    a = data("f32", (2, 3))
    got = run1(
        "hlo.reduce add %a, dims = [] : (tensor<2x3xf32>) -> tensor<2x3xf32>",
        [("a", a)],
        "tensor<2x3xf32>",
    )
    assert_bits(got, a)


def test_bf16_chain_rounds_after_every_op() -> None:
    # (a + b) - a in bf16: a + b rounds to a, so the result is 0, not b
    text = """
func.func @main(%a: tensor<1xbf16>, %b: tensor<1xbf16>) -> tensor<1xbf16> {
  %s = hlo.add %a, %b : tensor<1xbf16>
  %d = hlo.sub %s, %a : tensor<1xbf16>
  func.return %d : tensor<1xbf16>
}"""
    out = run_global(text, {"in_0": np.array([256.0], BF16), "in_1": np.array([1.0], BF16)})
    assert float(out["out_0"][0]) == 0.0


def test_megatron_level_g_runs_on_one_device() -> None:
    text = open(_example("megatron_mlp.mlir")).read()
    x = data("f32", (16, 32))
    w1, b1, w2 = data("f32", (32, 128)), data("f32", (128,)), data("f32", (128, 32))
    out = run_global(text, {"in_0": x, "in_1": w1, "in_2": b1, "in_3": w2})["out_0"]
    want = np.maximum(x @ w1 + b1, 0) @ w2
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


def test_spmd_constraint() -> None:
    text = """
spmd.mesh @mesh = <["a"=2]>
func.func @main(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %r = spmd.constraint %x <@mesh, [{"a"}, {}]> : tensor<4x2xf32>
  func.return %r : tensor<4x2xf32>
}"""
    x = data("f32", (4, 2))
    assert_bits(run_global(text, {"in_0": x})["out_0"], x)


def _example(name: str) -> str:
    import os

    return os.path.join(os.path.dirname(__file__), "..", "..", "examples", name)


# xDSL's interpreter framework runs the same implementations ----------------------------


def test_xdsl_interpreter_run_op_and_call_op() -> None:
    text = """
func.func @main(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %s = hlo.add %a, %b : tensor<3xf32>
  %e = hlo.exp %s : tensor<3xf32>
  func.return %e : tensor<3xf32>
}"""
    module = parse(text)
    interp = Interpreter(module)
    interp.register_implementations(HloFunctions())
    interp.register_implementations(FuncFunctions())
    a = np.array([0.0, 1.0, 2.0], np.float32)
    b = np.array([1.0, 1.0, -2.0], np.float32)
    add = next(op for op in module.walk() if isinstance(op, hlo.AddOp))
    (s,) = interp.run_op(add, (a, b))
    assert_bits(s, a + b)
    (e,) = interp.call_op("main", (a, b))
    assert_bits(e, np.exp(a + b))
