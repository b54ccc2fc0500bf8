"""
CHLO's element-wise ops of issue 13 (erf_inv, asin, acos, atan, asinh, acosh, atanh,
lgamma, digamma) at level G against references written here independently of the
interpreter, within 3 ULP of the correctly rounded result in their own type: numpy's f64
libm for the inverse trigonometric functions, the normal quantile of Python's `statistics`
(Wichura's algorithm) and a Maclaurin series for erf_inv, closed forms at integers and
half-integers (exact rational sums) for lgamma and digamma. Also: the StableHLO importer
takes the chlo ops, level S matches level G, and lower-to-tpu says at the op that it cannot
lower them yet.
"""

from __future__ import annotations

import math
import statistics
from fractions import Fraction

import numpy as np
import pytest
from shardc.driver.compiling import compile_module
from shardc.frontends.stablehlo import import_stablehlo
from shardc.interpreter.testing import parse, run_global

from tests.e2e.differential import partition_and_compare
from tests.unit.test_elementwise_ops import FLOATS, assert_ulps, run_unary, sample

EULER_GAMMA = 0.57721566490153286061


def rounded(values: list[float], dtype: np.dtype) -> np.ndarray:
    return np.array(values, dtype=np.float64).astype(dtype)


INVERSE_TRIG = {
    "asin": (np.arcsin, -1.0, 1.0),
    "acos": (np.arccos, -1.0, 1.0),
    "atan": (np.arctan, -50.0, 50.0),
    "asinh": (np.arcsinh, -1e4, 1e4),
    "acosh": (np.arccosh, 1.0, 1e4),
    "atanh": (np.arctanh, -0.999, 0.999),
}


@pytest.mark.parametrize("elem", ["f32", "bf16", "f16", "f64"])
@pytest.mark.parametrize("op", sorted(INVERSE_TRIG))
def test_inverse_trigonometric_within_3_ulp(op: str, elem: str) -> None:
    fn, lo, hi = INVERSE_TRIG[op]
    dtype = FLOATS[elem]
    x = sample(dtype, lo, hi)
    x = x[(x.astype(np.float64) >= lo) & (x.astype(np.float64) <= hi)]
    want = fn(x.astype(np.float64)).astype(dtype)
    assert_ulps(run_unary(op, x, elem), want)


def erf_inv_reference(y: float) -> float:
    """erf_inv by the normal quantile (or, for tiny |y|, its Maclaurin series)."""
    if y == 0:
        return y
    if abs(y) < 1e-3:  # (1 + y) / 2 would lose y's low bits
        c = math.sqrt(math.pi) / 2 * y
        return c + c**3 / 3 + 7 * c**5 / 30 + 127 * c**7 / 630
    q = statistics.NormalDist().inv_cdf((1 + abs(y)) / 2) / math.sqrt(2)
    return math.copysign(q, y)


@pytest.mark.parametrize("elem", ["f32", "bf16", "f16"])
def test_erf_inv_within_3_ulp(elem: str) -> None:
    dtype = FLOATS[elem]
    y = sample(dtype, -0.9999, 0.9999)
    y = np.concatenate([y, np.array([1e-5, -3e-4, 0.5, -0.999], dtype=dtype)])
    y = y[np.abs(y.astype(np.float64)) < 1]
    want = rounded([erf_inv_reference(float(v)) for v in y.astype(np.float64)], dtype)
    assert_ulps(run_unary("erf_inv", y, elem), want)


def test_erf_inv_edges() -> None:
    y = np.array([1.0, -1.0, 1.5, -2.0, np.nan, 0.0, -0.0], dtype=np.float32)
    got = run_unary("erf_inv", y, "f32")
    np.testing.assert_array_equal(got[:2], [np.inf, -np.inf])
    assert np.isnan(got[2:5]).all()
    assert got[5] == 0 and not np.signbit(got[5]) and np.signbit(got[6])


def test_erf_inv_near_one_keeps_the_tail() -> None:
    # 1 - y is exact here; erf_inv must invert erfc, not erf (which saturates)
    y = np.array([1 - 2.0**-20, 1 - 2.0**-24, -(1 - 2.0**-23)], dtype=np.float32)
    want = rounded([erf_inv_reference(float(v)) for v in y], np.dtype(np.float32))
    assert_ulps(run_unary("erf_inv", y, "f32"), want)


def log_factorial(n: int) -> float:
    return math.log(math.factorial(n))


def lgamma_closed_forms() -> tuple[list[float], list[float]]:
    """lgamma at integers (log (n-1)!) and half-integers (Gamma(n + 1/2) = (2n)! sqrt(pi) /
    (4^n n!)), from exact integers."""
    xs, want = [], []
    for n in range(1, 40):
        xs.append(float(n))
        want.append(log_factorial(n - 1))
        xs.append(n + 0.5)
        want.append(
            log_factorial(2 * n) - n * math.log(4) - log_factorial(n) + 0.5 * math.log(math.pi)
        )
    return xs, want


@pytest.mark.parametrize("elem", ["f32", "bf16", "f64"])
def test_lgamma_closed_forms(elem: str) -> None:
    dtype = FLOATS[elem]
    xs, want = lgamma_closed_forms()
    x = np.array(xs, dtype=np.float64).astype(dtype)
    keep = x.astype(np.float64) == np.array(xs)  # bf16 cannot hold every n + 1/2
    got = run_unary("lgamma", x[keep], elem)
    want_arr = rounded(want, dtype)[keep]
    if elem == "f64":  # the reference itself cancels a little at small n
        np.testing.assert_allclose(got, want_arr, rtol=1e-14, atol=1e-15)
    else:
        assert_ulps(got, want_arr)


def test_lgamma_poles_and_edges() -> None:
    x = np.array([0.0, -1.0, -7.0, np.inf, -np.inf, np.nan, 1e30], dtype=np.float32)
    got = run_unary("lgamma", x, "f32")
    np.testing.assert_array_equal(got[:5], [np.inf] * 5)
    assert np.isnan(got[5])
    assert got[6] == np.float32(1e30 * (math.log(1e30) - 1) - 0.5 * math.log(1e30))


def harmonic(n: int) -> Fraction:
    return sum((Fraction(1, k) for k in range(1, n + 1)), Fraction(0))


def digamma_closed_forms() -> tuple[list[float], list[float]]:
    """psi(n) = -gamma + H(n-1); psi(n + 1/2) = -gamma - 2 log 2 + sum_k<=n 2/(2k-1);
    psi(1/2 - n) = psi(1/2 + n) (reflection: cot(pi (1/2 - n)) = 0)."""
    xs, want = [], []
    log4 = 2 * math.log(2)
    for n in range(1, 30):
        xs.append(float(n))
        want.append(float(harmonic(n - 1)) - EULER_GAMMA)
        odd = float(sum((Fraction(2, 2 * k - 1) for k in range(1, n + 1)), Fraction(0)))
        xs.append(n + 0.5)
        want.append(odd - EULER_GAMMA - log4)
        xs.append(0.5 - n)
        want.append(odd - EULER_GAMMA - log4)
    return xs, want


@pytest.mark.parametrize("elem", ["f32", "f16"])
def test_digamma_closed_forms(elem: str) -> None:
    dtype = FLOATS[elem]
    xs, want = digamma_closed_forms()
    x = np.array(xs, dtype=np.float64).astype(dtype)
    keep = x.astype(np.float64) == np.array(xs)
    assert_ulps(run_unary("digamma", x[keep], elem), rounded(want, dtype)[keep])


def test_digamma_recurrence_on_random_points() -> None:
    # psi(x + 1) = psi(x) + 1/x everywhere off the poles (f64, so the check is tight)
    x = np.random.default_rng(3).uniform(-20, 20, 200)
    got = run_unary("digamma", np.concatenate([x, x + 1]), "f64")
    np.testing.assert_allclose(got[200:], got[:200] + 1 / x, rtol=1e-9, atol=1e-9)


def test_digamma_poles_are_nan_as_xla() -> None:
    x = np.array([0.0, -1.0, -5.0, -np.inf, np.inf], dtype=np.float32)
    got = run_unary("digamma", x, "f32")
    assert np.isnan(got[:4]).all() and got[4] == np.inf


OPS = ["erf_inv", "asin", "acos", "atan", "asinh", "acosh", "atanh", "lgamma", "digamma"]


def test_stablehlo_chlo_ops_import_and_run() -> None:
    lines = "\n".join(
        f"    %{i} = chlo.{op} %arg0 : tensor<8xf32> -> tensor<8xf32>" for i, op in enumerate(OPS)
    )
    results = ", ".join(f"%{i}" for i in range(len(OPS)))
    types = ", ".join(["tensor<8xf32>"] * len(OPS))
    text = f"""module @jit_f {{
  func.func public @main(%arg0: tensor<8xf32>) -> ({types}) {{
{lines}
    return {results} : {types}
  }}
}}"""
    module = import_stablehlo(text).module
    names = [op.name for op in module.walk() if op.name.startswith("hlo.")]
    assert names == [f"hlo.{op}" for op in OPS]
    x = np.linspace(0.1, 0.9, 8, dtype=np.float32) + np.float32(0)
    x[-1] = 1.5  # acosh's domain
    got = run_global(str(module), {"in_0": x})
    assert np.isclose(got["out_0"][3], erf_inv_reference(float(x[3])), rtol=1e-6)


@pytest.mark.parametrize("op", OPS)
def test_level_s_matches_level_g(op: str) -> None:
    text = f"""spmd.mesh @m = <["x"=2, "y"=2]>
func.func @main(%a: tensor<8x6xf32> {{spmd.sharding = #spmd.sharding<@m, [{{"x"}}, {{"y"}}]>}})
    -> (tensor<8x6xf32> {{spmd.sharding = #spmd.sharding<@m, [{{}}, {{"y"}}]>}}) {{
  %r = hlo.{op} %a : tensor<8x6xf32>
  func.return %r : tensor<8x6xf32>
}}"""
    x = np.random.default_rng(1).uniform(0.05, 0.95, (8, 6)).astype(np.float32)
    if op == "acosh":
        x = x + np.float32(1)
    partition_and_compare(text, seed=0, exact=True, inputs={"in_0": x})


@pytest.mark.parametrize("op", ["hlo.erf_inv", "hlo.lgamma"])
def test_the_tpu_pipeline_lowers_them(op: str) -> None:
    """Partitioned and lowered: f64 vector code, no hlo op left (lowering/
    special_functions.py; its values against level S: test_lower_special_functions.py)."""
    text = f"""spmd.mesh @m = <["x"=2]>
func.func @main(%x: tensor<8x128xf32> {{spmd.sharding = #spmd.sharding<@m, [{{"x"}}, {{}}]>}})
    -> tensor<8x128xf32> {{
  %r = {op} %x : tensor<8x128xf32>
  func.return %r : tensor<8x128xf32>
}}"""
    module = parse(text, "chlo.mlir")
    compile_module(module, "tpu-pipeline", "chlo.mlir")
    names = {o.name for o in module.walk()}
    assert op not in names and {"math.log", "arith.extf", "arith.truncf"} <= names
