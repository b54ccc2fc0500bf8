"""
The element types of issue 13 (i8 i16 i4 i2, ui8..ui64 ui4 ui2, f8E4M3FN f8E5M2,
complex<f32/f64>) and `hlo.complex` / `real` / `imag` / `bitcast_convert` at level G,
against references written here with Python integers, numpy and ml_dtypes (not the
interpreter's code): wrapping arithmetic, StableHLO's division and shifts, unsigned
compares, conversions of hard cases, int8 dot into i32, reductions. Also: byte sizes,
.npz round trips, the level-T unsigned compare, lower-to-tpu refusing the types at the op.
"""

from __future__ import annotations

import functools
import io as pyio
import math
import re

import ml_dtypes
import numpy as np
import pytest
from shardc.diagnostics import DiagnosticError
from shardc.dialects import hlo
from shardc.dialects.sizes import element_bytes, tensor_bytes
from shardc.interpreter import io
from shardc.interpreter.testing import parse, run_global
from xdsl.dialects.builtin import ComplexType, IntegerType, Signedness, TensorType, f32, f64

INTS = {
    "i8": (np.int8, 8, True),
    "i16": (np.int16, 16, True),
    "i4": (ml_dtypes.int4, 4, True),
    "i2": (ml_dtypes.int2, 2, True),
    "ui8": (np.uint8, 8, False),
    "ui16": (np.uint16, 16, False),
    "ui32": (np.uint32, 32, False),
    "ui64": (np.uint64, 64, False),
    "ui4": (ml_dtypes.uint4, 4, False),
    "ui2": (ml_dtypes.uint2, 2, False),
}


def wrap(v: int, bits: int, signed: bool) -> int:
    """Python integer `v` reduced to `bits` two's complement (or unsigned) bits."""
    v &= (1 << bits) - 1
    if signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def int_values(bits: int, signed: bool) -> list[int]:
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    cands = {lo, hi, 0, 1, lo + 1, hi - 1, 2, 3}
    if signed:
        cands |= {-1, -2, -3}
    return sorted(c for c in cands if lo <= c <= hi)


def run2(op: str, a: np.ndarray, b: np.ndarray, elem: str, res: str | None = None) -> np.ndarray:
    n = a.size
    ty = f"tensor<{n}x{elem}>"
    rty = f"tensor<{n}x{res or elem}>"
    types = f"({ty}, {ty}) -> {rty}" if res else ty
    text = f"""func.func @main(%a: {ty}, %b: {ty}) -> {rty} {{
  %r = hlo.{op} %a, %b : {types}
  func.return %r : {rty}
}}"""
    return run_global(text, {"in_0": a, "in_1": b})["out_0"]


def run1(op: str, x: np.ndarray, elem: str, res: str | None = None) -> np.ndarray:
    ty = f"tensor<{x.size}x{elem}>"
    rty = f"tensor<{x.size}x{res or elem}>"
    types = f"({ty}) -> {rty}" if res else ty
    text = f"""func.func @main(%x: {ty}) -> {rty} {{
  %r = hlo.{op} %x : {types}
  func.return %r : {rty}
}}"""
    return run_global(text, {"in_0": x})["out_0"]


def _div(a: int, b: int, bits: int, signed: bool) -> int:
    if b == 0:
        return wrap(-1, bits, signed)
    q = abs(a) // abs(b)
    return wrap(q if (a < 0) == (b < 0) else -q, bits, signed)


def _shift(a: int, s: int, bits: int, signed: bool, kind: str) -> int:
    ua, us = a & ((1 << bits) - 1), s & ((1 << bits) - 1)
    if kind == "shift_left":
        return wrap(ua << us, bits, signed) if us < bits else 0
    if kind == "shift_right_logical":
        return wrap(ua >> us, bits, signed) if us < bits else 0
    top = wrap(ua, bits, True)  # arithmetic: the top bit fills (unsigned too, as XLA)
    return wrap(top >> min(us, bits - 1), bits, signed)


def _shift2(a: int, s: int, *, bits: int, signed: bool, kind: str) -> int:
    return _shift(a, s, bits, signed, kind)


@pytest.mark.parametrize("elem", list(INTS))
def test_integer_arithmetic_wraps_as_stablehlo_says(elem: str) -> None:
    dtype, bits, signed = INTS[elem]
    vals = int_values(bits, signed)
    pairs = [(a, b) for a in vals for b in vals]
    a = np.array([p[0] for p in pairs], dtype=object).astype(dtype)
    b = np.array([p[1] for p in pairs], dtype=object).astype(dtype)
    refs = {
        "add": lambda x, y: wrap(x + y, bits, signed),
        "sub": lambda x, y: wrap(x - y, bits, signed),
        "mul": lambda x, y: wrap(x * y, bits, signed),
        "div": lambda x, y: _div(x, y, bits, signed),
        "max": max,
        "min": min,
        "and": lambda x, y: wrap(x & y, bits, signed),
        "xor": lambda x, y: wrap(x ^ y, bits, signed),
    }
    refs |= {
        k: functools.partial(_shift2, bits=bits, signed=signed, kind=k)
        for k in ("shift_left", "shift_right_logical", "shift_right_arithmetic")
    }
    for op, ref in refs.items():
        got = run2(op, a, b, elem)
        assert got.dtype == np.dtype(dtype), op
        want = [ref(x, y) for x, y in pairs]
        assert [int(v) for v in got] == want, (elem, op)
    text = f"""func.func @main(%a: tensor<{a.size}x{elem}>, %b: tensor<{a.size}x{elem}>) -> tensor<{a.size}xi1> {{
  %r = hlo.compare LT, %a, %b : (tensor<{a.size}x{elem}>, tensor<{a.size}x{elem}>) -> tensor<{a.size}xi1>
  func.return %r : tensor<{a.size}xi1>
}}"""
    got = run_global(text, {"in_0": a, "in_1": b})["out_0"]
    assert [bool(v) for v in got] == [x < y for x, y in pairs]  # unsigned compare unsigned
    neg = run1("neg", a, elem)
    assert [int(v) for v in neg] == [wrap(-x, bits, signed) for x, _ in pairs]
    pop = run1("popcnt", a, elem)
    count = [wrap(bin(x & ((1 << bits) - 1)).count("1"), bits, signed) for x, _ in pairs]
    assert [int(v) for v in pop] == count  # i2: a count of 2 wraps to -2


F8 = {"f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2}


@pytest.mark.parametrize("elem", list(F8))
def test_f8_ops_compute_in_f32_and_round_once(elem: str) -> None:
    dtype = np.dtype(F8[elem])
    every = np.arange(256, dtype=np.uint8).view(dtype)  # every f8 value, NaNs included
    a = np.repeat(every, 16)
    b = np.tile(every[::16], 256)
    for op, ref in {"add": np.add, "mul": np.multiply, "div": np.divide}.items():
        with np.errstate(all="ignore"):
            want = ref(a.astype(np.float64), b.astype(np.float64)).astype(dtype)
        got = run2(op, a, b, elem)
        assert got.dtype == dtype
        same = (got.view(np.uint8) == want.view(np.uint8)) | (np.isnan(got) & np.isnan(want))
        assert same.all(), op
    x = every[np.isfinite(every.astype(np.float32))]
    with np.errstate(all="ignore"):
        want = np.exp(x.astype(np.float64))
    got = run1("exp", x, elem).astype(np.float64)
    ok = np.isclose(got, want.astype(dtype).astype(np.float64), rtol=0.13) | ~np.isfinite(got)
    assert ok.all()


CONVERT_CASES = [
    # (from, to, inputs, expected)
    (
        "f32",
        "i8",
        [1.9, -1.9, 127.5, 128.0, -129.0, np.nan, np.inf, -np.inf, -0.0],
        [1, -1, 127, 127, -128, 0, 127, -128, 0],
    ),
    ("f32", "ui8", [1.9, -1.0, 255.9, 256.0, np.nan, np.inf], [1, 0, 255, 255, 0, 255]),
    ("f64", "ui64", [2.0**64, 2.0**63, -5.0, 1e300], [2**64 - 1, 2**63, 0, 2**64 - 1]),
    ("f32", "i4", [7.9, 8.0, -8.5, -9.0, 3.5], [7, 7, -8, -8, 3]),
    ("i32", "i8", [127, 128, 255, -129, 1000], [127, -128, -1, 127, -24]),
    ("i32", "ui8", [-1, 256, 257], [255, 0, 1]),
    ("ui32", "i32", [2**32 - 1, 2**31], [-1, -(2**31)]),
    ("i8", "i4", [7, 8, -9, 16], [7, -8, 7, 0]),
    ("ui8", "f32", [255, 0], [255.0, 0.0]),
    ("i1", "ui8", [True, False], [1, 0]),
    ("ui16", "i1", [0, 256], [False, True]),
    ("f32", "f8E4M3FN", [448.0, 464.0, 1e6, np.inf, -0.0, 1.0625, 1.1875, 2.0**-10], None),
    ("f32", "f8E5M2", [57344.0, 61440.0, np.inf, 1.125, 1.375, 2.0**-17], None),
    ("i32", "f8E5M2", [1, 3, 5, 7, 9, 100000], None),
]
NP = {
    "f32": np.float32,
    "f64": np.float64,
    "i32": np.int32,
    "i1": np.bool_,
    **{k: v[0] for k, v in INTS.items()},
    **F8,
}


@pytest.mark.parametrize("src,dst,inputs,expected", CONVERT_CASES)
def test_convert_hard_cases(src: str, dst: str, inputs: list, expected: list | None) -> None:
    x = np.array(inputs, dtype=NP[src])
    got = run1("convert", x, src, dst)
    assert got.dtype == np.dtype(NP[dst])
    if (
        expected is None
    ):  # f8: ml_dtypes rounds an f64 to nearest even once (XLA: inf/overflow -> NaN for E4M3FN)
        want = np.array([float(v) for v in inputs], dtype=np.float64).astype(NP[dst])
        same = (got.view(np.uint8) == want.view(np.uint8)) | (np.isnan(got) & np.isnan(want))
        assert same.all(), (got, want)
    else:
        assert [v.item() if hasattr(v, "item") else v for v in got.tolist()] == expected


def test_convert_ties_round_to_even_and_complex() -> None:
    # 1 + 2**-4 is halfway between f8E4M3FN's 1.0 and 1.125: even is 1.0; 1 + 3 * 2**-4 -> 1.25
    got = run1("convert", np.array([1.0625, 1.1875], np.float32), "f32", "f8E4M3FN")
    assert got.astype(np.float32).tolist() == [1.0, 1.25]
    c = run1("convert", np.array([1.5, -2.0], np.float32), "f32", "complex<f64>")
    assert c.dtype == np.complex128 and c.tolist() == [1.5 + 0j, -2 + 0j]
    r = run1("convert", np.array([1.5 + 2j], np.complex64), "complex<f32>", "f64")
    assert r.tolist() == [1.5]


def test_int8_dot_accumulates_in_i32() -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, size=(3, 64)).astype(np.int8)
    b = rng.integers(-128, 128, size=(64, 5)).astype(np.int8)
    text = """func.func @main(%a: tensor<3x64xi8>, %b: tensor<64x5xi8>) -> (tensor<3x5xi32>, tensor<3x5xi8>) {
  %r = hlo.dot %a, %b, contracting_dims = [1] x [0] : (tensor<3x64xi8>, tensor<64x5xi8>) -> tensor<3x5xi32>
  %w = hlo.dot %a, %b, contracting_dims = [1] x [0] : (tensor<3x64xi8>, tensor<64x5xi8>) -> tensor<3x5xi8>
  func.return %r, %w : tensor<3x5xi32>, tensor<3x5xi8>
}"""
    out = run_global(text, {"in_0": a, "in_1": b})
    want = [
        [sum(int(a[i, k]) * int(b[k, j]) for k in range(64)) for j in range(5)] for i in range(3)
    ]
    assert out["out_0"].dtype == np.int32 and out["out_0"].tolist() == want
    assert out["out_1"].tolist() == [[wrap(v, 8, True) for v in row] for row in want]


@pytest.mark.parametrize("elem", ["i8", "ui8", "i4", "ui16", "complex<f64>"])
def test_reductions(elem: str) -> None:
    rng = np.random.default_rng(1)
    if elem.startswith("complex"):
        x = rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))
    else:
        dtype, bits, signed = INTS[elem]
        lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
        x = rng.integers(lo, hi, size=(4, 6)).astype(dtype)
    for kind in ("add", "mul", "max"):
        if kind == "max" and elem.startswith("complex"):
            continue
        text = f"""func.func @main(%x: tensor<4x6x{elem}>) -> tensor<4x{elem}> {{
  %r = hlo.reduce {kind} %x, dims = [1] : (tensor<4x6x{elem}>) -> tensor<4x{elem}>
  func.return %r : tensor<4x{elem}>
}}"""
        got = run_global(text, {"in_0": x})["out_0"]
        if elem.startswith("complex"):
            fn = {"add": sum, "mul": math.prod}[kind]
            want = [fn(complex(v) for v in row) for row in x]
            np.testing.assert_allclose(got, want, rtol=1e-12)
            continue
        fn = {"add": sum, "mul": math.prod, "max": max}[kind]
        want = [wrap(fn(int(v) for v in row), bits, signed) for row in x]
        assert [int(v) for v in got] == want, kind


def test_complex_ops_against_python_complex() -> None:
    rng = np.random.default_rng(2)
    re, im = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    text = """func.func @main(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xcomplex<f32>>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xcomplex<f32>>, tensor<8xcomplex<f32>>) {
  %c = hlo.complex %a, %b : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xcomplex<f32>>
  %r = hlo.real %c : (tensor<8xcomplex<f32>>) -> tensor<8xf32>
  %i = hlo.imag %c : (tensor<8xcomplex<f32>>) -> tensor<8xf32>
  %m = hlo.abs %c : (tensor<8xcomplex<f32>>) -> tensor<8xf32>
  %e = hlo.exp %c : tensor<8xcomplex<f32>>
  %q = hlo.div %e, %c : tensor<8xcomplex<f32>>
  func.return %c, %r, %i, %m, %e, %q : tensor<8xcomplex<f32>>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xcomplex<f32>>, tensor<8xcomplex<f32>>
}"""
    out = run_global(text, {"in_0": re, "in_1": im})
    z = [complex(float(x), float(y)) for x, y in zip(re, im, strict=True)]
    import cmath

    assert out["out_0"].dtype == np.complex64 and out["out_0"].tolist() == pytest.approx(z)
    assert out["out_1"].tolist() == re.tolist() and out["out_2"].tolist() == im.tolist()
    np.testing.assert_allclose(out["out_3"], [abs(v) for v in z], rtol=2e-7)
    np.testing.assert_allclose(out["out_4"], [cmath.exp(v) for v in z], rtol=5e-7)
    e32 = out["out_4"].astype(np.complex128)
    np.testing.assert_allclose(out["out_5"], e32 / np.array(z), rtol=1e-6)


@pytest.mark.parametrize(
    "src,dst,shape_in,shape_out",
    [
        ("f32", "i32", (4,), (4,)),
        ("f32", "ui8", (4,), (4, 4)),
        ("ui8", "f32", (3, 4), (3,)),
        ("f64", "f32", (2,), (2, 2)),
        ("complex<f32>", "f32", (3,), (3, 2)),
        ("i4", "ui4", (5,), (5,)),
        ("bf16", "i16", (4,), (4,)),
    ],
)
def test_bitcast_convert_is_numpy_view(src, dst, shape_in, shape_out) -> None:
    npd = {**NP, "complex<f32>": np.complex64, "bf16": ml_dtypes.bfloat16}
    rng = np.random.default_rng(3)
    n = math.prod(shape_in)
    if src == "i4":
        x = np.array([-8, -1, 0, 7, 3], dtype=ml_dtypes.int4)
        want = np.array([8, 15, 0, 7, 3], dtype=ml_dtypes.uint4)  # the same 4 bits
    else:
        raw = rng.integers(0, 256, size=n * np.dtype(npd[src]).itemsize, dtype=np.uint8)
        x = raw.view(npd[src]).reshape(shape_in)
        want = np.ascontiguousarray(x).view(npd[dst]).reshape(shape_out)  # little-endian host
    ti = "tensor<" + "".join(f"{d}x" for d in shape_in) + src + ">"
    to = "tensor<" + "".join(f"{d}x" for d in shape_out) + dst + ">"
    text = f"""func.func @main(%x: {ti}) -> {to} {{
  %r = hlo.bitcast_convert %x : ({ti}) -> {to}
  func.return %r : {to}
}}"""
    got = run_global(text, {"in_0": x})["out_0"]
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize(
    "line,message",
    [
        (
            "hlo.bitcast_convert %x : (tensor<4xf32>) -> tensor<4xi16>",
            "result shape must be [4, 2]",
        ),
        ("hlo.bitcast_convert %x : (tensor<4xf32>) -> tensor<2xf64>", "last dimension must be 2"),
        (
            "hlo.complex %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xcomplex<f64>>",
            "result must be",
        ),
        ("hlo.real %x : (tensor<4xf32>) -> tensor<4xf64>", "result must be tensor<4xf32>"),
    ],
)
def test_verifier_messages(line: str, message: str) -> None:
    text = f"func.func @f(%x: tensor<4xf32>) {{\n  %r = {line}\n  func.return\n}}"
    with pytest.raises(DiagnosticError, match=re.escape(message)):
        parse(text)


def test_sizes_pack_sub_byte_integers() -> None:
    i4, ui2 = IntegerType(4), IntegerType(2, Signedness.UNSIGNED)
    assert element_bytes(i4) == 1 and element_bytes(ComplexType(f64)) == 16
    assert tensor_bytes(TensorType(i4, [3, 5])) == 8  # 15 nibbles -> 8 bytes
    assert tensor_bytes(TensorType(ui2, [8])) == 2
    assert tensor_bytes(TensorType(ComplexType(f32), [4])) == 32
    assert hlo.element_kind(ComplexType(f32)) == hlo.COMPLEX
    assert hlo.is_unsigned(IntegerType(8, Signedness.UNSIGNED))


@pytest.mark.parametrize("elem", ["i4", "ui8", "f8E4M3FN", "f8E5M2", "bf16", "complex<f32>"])
def test_npz_round_trip_and_random_inputs(elem: str) -> None:
    text = f"""func.func @main(%x: tensor<6x{elem}>) -> tensor<6x{elem}> {{
  func.return %x : tensor<6x{elem}>
}}"""
    module = parse(text)
    function = io.find_entry(module, None, "<t>")
    sig = io.signature(module, function, "<t>")
    inputs = io.random_inputs(sig, 0)
    buf = pyio.BytesIO()
    np.savez(buf, **{k: io.savable(v) for k, v in inputs.items()})
    buf.seek(0)
    loaded = dict(np.load(buf))
    back = io.check_inputs(sig, loaded, "<npz>")
    for k, v in inputs.items():
        assert back[k].dtype == v.dtype and back[k].tobytes() == v.tobytes()


def test_level_t_unsigned_integer_predicates() -> None:
    from shardc.interpreter.level_t_arith import ELEMENTWISE
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import i32
    from xdsl.utils.test_value import create_ssa_value

    a, b = create_ssa_value(i32), create_ssa_value(i32)
    fn = ELEMENTWISE[arith.CmpiOp]
    for pred, want in (("ult", False), ("ugt", True), ("slt", True), ("uge", True)):
        op = arith.CmpiOp(a, b, pred)
        assert fn(op, (-1, 1), None) is want, pred  # -1 is 0xffffffff unsigned
    vec = np.array([-1, 1], dtype=np.int32)
    op = arith.CmpiOp(a, b, "ult")
    assert not fn(op, (vec[:1], vec[1:]), None).any()


def test_lower_to_tpu_lowers_a_complex_max_ring_after_a_convert() -> None:
    """Refused at the all_reduce until issue 15 item 3: the convert on the parts, the
    complex max ring combining (re, im) pairs (lowering/pair_combine.py), the real part's
    strided DMA; level T gives level S's values exactly (a max picks, it rounds nothing)."""
    import numpy as np
    from shardc.tests.unit.test_lower_complex_collectives import run_levels

    text = """spmd.mesh @m = <["x"=2]>
func.func @main(%a: tensor<8x128xi32>) -> tensor<8x128xf32> attributes {spmd.per_device_io} {
  %c = hlo.convert %a : (tensor<8x128xi32>) -> tensor<8x128xcomplex<f32>>
  %p = collective.all_reduce max %c on @m["x"] : tensor<8x128xcomplex<f32>>
  %e = hlo.real %p : (tensor<8x128xcomplex<f32>>) -> tensor<8x128xf32>
  func.return %e : tensor<8x128xf32>
}"""
    rng = np.random.default_rng(5)
    rows = [[rng.integers(-1000, 1000, (8, 128)).astype(np.int32)] for _ in range(2)]
    level_s, level_t = run_levels(text, rows, "v5e")
    want = np.maximum(rows[0][0], rows[1][0]).astype(np.float32)
    for s, t in zip(level_s, level_t, strict=True):
        assert np.array_equal(s, want) and np.array_equal(t, want)


def test_rank_0_results_keep_rank_0() -> None:
    # found by the generated-program tests: np.ascontiguousarray makes rank 0 rank 1
    from shardc.interpreter.testing import run_global

    text = """func.func @main(%a: tensor<i32>, %f: tensor<f32>) -> (tensor<i32>, tensor<i32>, tensor<i32>, tensor<f32>, tensor<f32>) {
  %0 = hlo.count_leading_zeros %a : tensor<i32>
  %1 = hlo.popcnt %a : tensor<i32>
  %2 = hlo.bitcast_convert %f : (tensor<f32>) -> tensor<i32>
  %c = hlo.complex %f, %f : (tensor<f32>, tensor<f32>) -> tensor<complex<f32>>
  %3 = hlo.real %c : (tensor<complex<f32>>) -> tensor<f32>
  %4 = hlo.imag %c : (tensor<complex<f32>>) -> tensor<f32>
  func.return %0, %1, %2, %3, %4 : tensor<i32>, tensor<i32>, tensor<i32>, tensor<f32>, tensor<f32>
}"""
    a, f = np.array(5, dtype=np.int32), np.array(1.5, dtype=np.float32)
    out = run_global(text, {"in_0": a, "in_1": f})
    assert all(v.shape == () for v in out.values())
    assert int(out["out_0"]) == 29 and int(out["out_1"]) == 2
    assert int(out["out_2"]) == int(f.view(np.int32)) and float(out["out_3"]) == 1.5


def test_convert_to_bf16_keeps_a_scalar_a_scalar():
    """int / f64 -> bf16 rounds through f32-to-odd; a 0-d value stays 0-d (a bf16 iota on
    a sharded dimension converts its device offset, a tensor<i32>)."""
    import ml_dtypes
    from shardc.interpreter.values import convert

    bf16 = np.dtype(ml_dtypes.bfloat16)
    for x in (np.array(3, dtype=np.int32), np.float64(0.1), np.zeros((2, 0, 3))):
        assert convert(np.asarray(x), bf16).shape == np.shape(x)
