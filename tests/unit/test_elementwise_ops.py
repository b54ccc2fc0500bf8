"""
The element-wise `hlo` ops of issue 13 at level G against references written here
independently of the interpreter: transcendentals within 3 ULP of the correctly rounded
result in their own type (f64 references for f32/bf16/f16, and a 120-digit `decimal`
series for erf/erfc), rounding, remainder, sign, clamp and the integer bit ops exactly
(StableHLO's semantics: remainder takes the dividend's sign, shifts by >= the bit width give
0 or the sign fill, arithmetic wraps). Also: the cost model counts them, and lower-to-tpu
says at the op that it cannot lower them yet.
"""

from __future__ import annotations

import decimal
import math
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from shardc.diagnostics import DiagnosticError
from shardc.dialects import hlo
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel
from shardc.interpreter.testing import parse, run_global

FLOATS = {
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f16": np.dtype(np.float16),
}
INTS = {"i32": np.dtype(np.int32), "i64": np.dtype(np.int64)}


def run_unary(op: str, x: np.ndarray, elem: str, result_elem: str | None = None) -> np.ndarray:
    n = x.size
    res = result_elem or elem
    rty = f"tensor<{n}x{res}>"
    ty = f"tensor<{n}x{elem}>"
    types = f"({ty}) -> {rty}" if result_elem else ty
    text = f"""func.func @main(%x: {ty}) -> {rty} {{
  %r = hlo.{op} %x : {types}
  func.return %r : {rty}
}}"""
    return run_global(text, {"in_0": x})["out_0"]


def run_binary(op: str, a: np.ndarray, b: np.ndarray, elem: str) -> np.ndarray:
    ty = f"tensor<{a.size}x{elem}>"
    text = f"""func.func @main(%a: {ty}, %b: {ty}) -> {ty} {{
  %r = hlo.{op} %a, %b : {ty}
  func.return %r : {ty}
}}"""
    return run_global(text, {"in_0": a, "in_1": b})["out_0"]


def ordered(x: np.ndarray) -> np.ndarray:
    """Float bits as integers ordered like the floats (ULP distance = difference)."""
    bits = x.view(np.dtype(f"i{x.dtype.itemsize}")).astype(np.int64)
    top = np.int64(1) << (8 * x.dtype.itemsize - 1)
    return np.where(bits < 0, -(bits + top), bits)


def assert_ulps(got: np.ndarray, want: np.ndarray, ulps: int = 3) -> None:
    assert got.dtype == want.dtype
    both_nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
    dist = np.abs(ordered(got) - ordered(want))
    bad = ~both_nan & (dist > ulps)
    assert not bad.any(), (got[bad][:5], want[bad][:5], dist[bad][:5])


def sample(dtype: np.dtype, lo: float, hi: float, n: int = 64) -> np.ndarray:
    rng = np.random.default_rng(7)
    x = np.concatenate([np.linspace(lo, hi, n), rng.uniform(lo, hi, n), [0.0, -0.0]])
    return x.astype(dtype)


# f64 references (numpy's libm), each rounded once to the type ------------------------------

F64_REFS = {
    "cbrt": (np.cbrt, -6e4, 6e4),
    "expm1": (np.expm1, -20.0, 10.0),
    "log1p": (np.log1p, -0.99, 1e4),
    "sinh": (np.sinh, -10.0, 10.0),
    "cosh": (np.cosh, -10.0, 10.0),
    "tan": (np.tan, -10.0, 10.0),
}


@pytest.mark.parametrize("elem", ["f32", "bf16", "f16"])
@pytest.mark.parametrize("op", sorted(F64_REFS))
def test_transcendentals_within_3_ulp(op: str, elem: str) -> None:
    fn, lo, hi = F64_REFS[op]
    dtype = FLOATS[elem]
    x = sample(dtype, lo, hi)
    want = fn(x.astype(np.float64)).astype(dtype)
    assert_ulps(run_unary(op, x, elem), want)


def test_expm1_and_log1p_near_zero_keep_their_precision() -> None:
    # exp(x) - 1 and log(x + 1) lose everything here (the importers once expanded them so)
    x = np.array([1e-7, -3e-8, 1e-20, 2.5e-4], dtype=np.float32)
    assert_ulps(run_unary("expm1", x, "f32"), np.expm1(x.astype(np.float64)).astype(np.float32))
    assert_ulps(run_unary("log1p", x, "f32"), np.log1p(x.astype(np.float64)).astype(np.float32))


def decimal_erf(x: float) -> decimal.Decimal:
    """erf by its Maclaurin series in 120-digit decimal arithmetic (exact enough to |x| 9)."""
    with decimal.localcontext() as ctx:
        ctx.prec = 120
        d = decimal.Decimal(x)
        term, total, n = d, d, 0
        x2 = d * d
        while True:
            n += 1
            term = -term * x2 / n
            add = term / (2 * n + 1)
            total += add
            if add == 0 or abs(add) < decimal.Decimal(10) ** -110:
                break
        pi = decimal.Decimal(
            "3.14159265358979323846264338327950288419716939937510582097494459230781640628620899863"
        )
        return total * 2 / pi.sqrt()


@pytest.mark.parametrize("elem", ["f32", "bf16", "f16", "f64"])
def test_erf_and_erfc_within_3_ulp(elem: str) -> None:
    dtype = FLOATS[elem]
    x = sample(dtype, -6.0, 6.0, 24)
    erf = [decimal_erf(float(v)) for v in x]
    want_erf = np.array([float(e) for e in erf]).astype(dtype)
    want_erfc = np.array([float(1 - e) for e in erf]).astype(dtype)
    assert_ulps(run_unary("erf", x, elem), want_erf)
    assert_ulps(run_unary("erfc", x, elem), want_erfc)


@pytest.mark.parametrize("elem", ["f32", "bf16", "f64"])
def test_atan2_within_3_ulp(elem: str) -> None:
    dtype = FLOATS[elem]
    rng = np.random.default_rng(1)
    a = rng.uniform(-5, 5, 64).astype(dtype)
    b = rng.uniform(-5, 5, 64).astype(dtype)
    a[:4] = np.array([0.0, -0.0, 1.0, -1.0]).astype(dtype)
    b[:4] = np.array([-1.0, -1.0, 0.0, 0.0]).astype(dtype)
    want = np.arctan2(a.astype(np.float64), b.astype(np.float64)).astype(dtype)
    assert_ulps(run_binary("atan2", a, b, elem), want)


# exact float ops -------------------------------------------------------------------------

HALVES = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.49999997, 0.49999997, 3.7, -3.7, 0.0, -0.0]


@pytest.mark.parametrize("elem", ["f32", "bf16", "f64"])
def test_rounding_ops(elem: str) -> None:
    dtype = FLOATS[elem]
    x = np.array(HALVES + [np.inf, -np.inf, 1e30], dtype=np.float64).astype(dtype)
    ref = [float(v) for v in x]

    def afz(v: float) -> float:
        if not math.isfinite(v):
            return v
        r = math.floor(abs(v) + 0.5) if abs(v) % 1 != 0.5 else math.floor(abs(v)) + 1
        if abs(v) - math.floor(abs(v)) < 0.5:
            r = math.floor(abs(v))
        return math.copysign(r, v)

    def even(v: float) -> float:
        return v if not math.isfinite(v) else math.copysign(round(v), v)

    cases = {
        "floor": [v if not math.isfinite(v) else math.copysign(math.floor(v), v) for v in ref],
        "ceil": [v if not math.isfinite(v) else math.copysign(math.ceil(v), v) for v in ref],
        "round_nearest_even": [even(v) for v in ref],
        "round_nearest_afz": [afz(v) for v in ref],
    }
    for op, want in cases.items():
        got = run_unary(op, x, elem)
        np.testing.assert_array_equal(got, np.array(want).astype(dtype), err_msg=op)
        # -0.0 stays -0.0, -0.4 rounds to -0.0
        assert np.array_equal(np.signbit(got), np.signbit(np.array(want).astype(dtype))), op


def test_float_sign_remainder_clamp_is_finite() -> None:
    x = np.array([-2.0, -0.0, 0.0, 3.5, np.nan, -np.inf, np.inf, 1e-40], dtype=np.float32)
    s = run_unary("sign", x, "f32")
    np.testing.assert_array_equal(s, np.array([-1, -0.0, 0, 1, np.nan, -1, 1, 1], np.float32))
    assert np.signbit(s[1]) and not np.signbit(s[2])
    fin = run_unary("is_finite", x, "f32", "i1")
    np.testing.assert_array_equal(fin, [True, True, True, True, False, False, False, True])
    a = np.array([5.5, -5.5, 5.5, -5.5, 1.0, 7.0], dtype=np.float32)
    b = np.array([2.0, 2.0, -2.0, -2.0, 0.0, np.inf], dtype=np.float32)
    r = run_binary("remainder", a, b, "f32")
    np.testing.assert_array_equal(r, np.array([1.5, -1.5, 1.5, -1.5, np.nan, 7.0], np.float32))
    text = """func.func @main(%x: tensor<8xf32>, %lo: tensor<f32>, %hi: tensor<8xf32>) -> tensor<8xf32> {
  %r = hlo.clamp %lo, %x, %hi : (tensor<f32>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}"""
    hi = np.full(8, 2.0, dtype=np.float32)
    got = run_global(text, {"in_0": x, "in_1": np.float32(-1.0), "in_2": hi})["out_0"]
    want = [-1.0, -0.0, 0.0, 2.0, np.nan, -1.0, 2.0, 1e-40]
    np.testing.assert_array_equal(got, np.array(want, dtype=np.float32))


# integer ops, exact ----------------------------------------------------------------------


def py_wrap(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def int_cases(dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    bits = dtype.itemsize * 8
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    a = [7, -7, 7, -7, lo, lo, hi, 0, 1, -1, 12345, -1, 5, lo, 3, hi]
    b = [3, 3, -3, -3, -1, 1, 0, 5, bits - 1, bits, 7, 64, -1, 2 * bits, 0, 33]
    return np.array(a, dtype=dtype), np.array(b, dtype=dtype)


@pytest.mark.parametrize("elem", sorted(INTS))
def test_integer_binary_ops(elem: str) -> None:
    dtype = INTS[elem]
    bits = dtype.itemsize * 8
    a, b = int_cases(dtype)
    pairs = [(int(x), int(y)) for x, y in zip(a, b, strict=True)]
    mask = (1 << bits) - 1

    def rem(x: int, y: int) -> int:
        if y == 0:
            return x
        r = abs(x) % abs(y)
        return py_wrap(-r if x < 0 else r, bits)

    def shl(x: int, y: int) -> int:
        return 0 if not 0 <= y < bits else py_wrap(x << y, bits)

    def shrl(x: int, y: int) -> int:
        return 0 if not 0 <= y < bits else py_wrap((x & mask) >> y, bits)

    def shra(x: int, y: int) -> int:
        return x >> (y if 0 <= y < bits else bits - 1)

    refs = {
        "remainder": rem,
        "xor": lambda x, y: x ^ y,
        "shift_left": shl,
        "shift_right_logical": shrl,
        "shift_right_arithmetic": shra,
    }
    for op, fn in refs.items():
        want = np.array([fn(x, y) for x, y in pairs], dtype=dtype)
        np.testing.assert_array_equal(run_binary(op, a, b, elem), want, err_msg=op)


@pytest.mark.parametrize("elem", sorted(INTS))
def test_integer_unary_ops(elem: str) -> None:
    dtype = INTS[elem]
    bits = dtype.itemsize * 8
    a, _ = int_cases(dtype)
    vals = [int(x) & ((1 << bits) - 1) for x in a]
    popcnt = np.array([bin(v).count("1") for v in vals], dtype=dtype)
    clz = np.array([bits - v.bit_length() for v in vals], dtype=dtype)
    sign = np.array([(x > 0) - (x < 0) for x in a.tolist()], dtype=dtype)
    np.testing.assert_array_equal(run_unary("popcnt", a, elem), popcnt)
    np.testing.assert_array_equal(run_unary("count_leading_zeros", a, elem), clz)
    np.testing.assert_array_equal(run_unary("sign", a, elem), sign)


def test_bool_xor_and_int_clamp() -> None:
    p = np.array([True, True, False, False])
    q = np.array([True, False, True, False])
    np.testing.assert_array_equal(run_binary("xor", p, q, "i1"), p != q)
    x = np.array([-9, -1, 0, 4, 9, 2**31 - 1], dtype=np.int32)
    lo, hi = np.full(6, -2, np.int32), np.full(6, 5, np.int32)
    text = """func.func @main(%lo: tensor<6xi32>, %x: tensor<6xi32>, %hi: tensor<6xi32>) -> tensor<6xi32> {
  %r = hlo.clamp %lo, %x, %hi : (tensor<6xi32>, tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  func.return %r : tensor<6xi32>
}"""
    got = run_global(text, {"in_0": lo, "in_1": x, "in_2": hi})["out_0"]
    np.testing.assert_array_equal(got, [-2, -1, 0, 4, 5, 5])


# verifier, cost model, lower-to-tpu ------------------------------------------------------


@pytest.mark.parametrize(
    "line, message",
    [
        ("%r = hlo.erf %i : tensor<4xi32>", "does not accept element type i32"),
        ("%r = hlo.shift_left %x, %x : tensor<4xf32>", "does not accept element type f32"),
        ("%r = hlo.popcnt %p : tensor<4xi1>", "does not accept element type i1"),
        ("%r = hlo.is_finite %x : (tensor<4xf32>) -> tensor<4xi32>", "result must be"),
        (
            "%r = hlo.clamp %x, %x, %y : (tensor<4xf32>, tensor<4xf32>, tensor<2xf32>) -> tensor<4xf32>",
            "max must have the operand's type",
        ),
    ],
)
def test_verifier_messages(line: str, message: str) -> None:
    text = f"""func.func @main(%x: tensor<4xf32>, %y: tensor<2xf32>, %i: tensor<4xi32>, %p: tensor<4xi1>) {{
  {line}
  func.return
}}"""
    with pytest.raises(DiagnosticError, match=message):
        parse(text)


def test_cost_model_counts_the_vpu_ops_the_lowering_emits() -> None:
    """erfc is 1 - erf(x) (a splat, erf, a subtract: 3 ops per element), is_finite five
    (-inf < x < inf: two splats, two compares, an and), a clamp with rank-0 bounds max, min and its one bound broadcast (3)."""
    module = parse("""func.func @main(%x: tensor<8x128xf32>, %s: tensor<f32>) {
  %a = hlo.erfc %x : tensor<8x128xf32>
  %b = hlo.is_finite %a : (tensor<8x128xf32>) -> tensor<8x128xi1>
  %c = hlo.clamp %s, %a, %s : (tensor<f32>, tensor<8x128xf32>, tensor<f32>) -> tensor<8x128xf32>
  func.return
}""")
    model = CostModel(get_chip("v5e"))
    ops = [op for op in module.walk() if isinstance(op, hlo.HloOp)]
    assert len(ops) == 3
    for op, per_element in zip(ops, [3, 5, 3], strict=True):
        n = 8 * 128
        assert model.flops(op)[0] == per_element * n, op.name
        assert model.op_cost(op).time > 0, op.name


ERF_KERNEL = """spmd.mesh @m = <["x"=2]>
func.func @main(%a: tensor<16x128xf32> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {}]>},
                %h: tensor<16x128xbf16> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {}]>})
    -> (tensor<16x128xf32> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {}]>},
        tensor<16x128xbf16> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {}]>}) {
  %0 = hlo.erf %a : tensor<16x128xf32>
  %1 = hlo.erfc %h : tensor<16x128xbf16>
  func.return %0, %1 : tensor<16x128xf32>, tensor<16x128xbf16>
}
"""


def test_erf_and_erfc_lower_to_tpu_and_match_level_g(tmp_path) -> None:
    # exact gelu (chlo.erfc) keeps running at level T: math.erf, and 1 - erf for erfc
    path = tmp_path / "erf.mlir"
    path.write_text(ERF_KERNEL)
    bin_ = Path(sys.executable).parent / "shardc-run"
    proc = subprocess.run(
        [str(bin_), str(path), "-p", "tpu-pipeline", "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "check against the level-G program before -p: pass" in proc.stdout
