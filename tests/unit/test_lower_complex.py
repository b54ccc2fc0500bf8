"""
`lower-to-tpu` of complex<f32> / complex<f64> computing ops (issue 15 item 3,
lowering/complex_pairs.py: ops on the real and imaginary parts): hypothesis-drawn shapes
and values (specials included: zeros, infinities, NaN, huge and tiny magnitudes),
lowered, simulated at level T and compared with level S: bit for bit where level T
computes what numpy computes (every complex<f32> elementwise op, complex<f64> add / sub /
neg / div / real / imag / complex), within a few ulps where it cannot (complex<f64> mul:
numpy's fused multiply-add; abs: hypot) or sums in another order (dot, reduce); and the
complex<f32> product against an independent reference (complex128 rounded once).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from shardc.dialects import make_context
from shardc.interpreter.level_t import run_level_t
from shardc.interpreter.testing import parse, run_per_device
from shardc.lowering.lower_to_tpu import LowerToTpuPass
from shardc.tests.unit import test_lower_to_tpu as collectives
from shardc.tests.unit.test_lower_element_types import program, ty
from shardc.tests.unit.test_lower_movement import DEVICES, check

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TYPES = {"complex<f32>": np.complex64, "complex<f64>": np.complex128}
PART = {"complex<f32>": "f32", "complex<f64>": "f64"}
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 1e-40, 3e38, 1e300, 5e-324]


def values(rng: np.random.Generator, shape, ctype: str) -> np.ndarray:
    """Parts of every magnitude (scaled normals), some specials, some zero divisors."""
    part = np.float32 if ctype == "complex<f32>" else np.float64
    scale = 10.0 ** rng.integers(-30, 31, size=(2, *shape))
    re, im = rng.standard_normal((2, *shape)) * scale
    special = np.array(SPECIALS)[rng.integers(0, len(SPECIALS), size=(2, *shape))]
    pick = rng.random((2, *shape)) < 0.15
    re, im = np.where(pick, special, [re, im])
    out = np.empty(shape, TYPES[ctype])
    with np.errstate(over="ignore"):
        out.real, out.imag = re.astype(part), im.astype(part)
    return out


def run_both(text: str, rows: list[list[np.ndarray]]) -> tuple[list, list]:
    """(level S's outputs, level T's outputs) per device."""
    want = run_per_device(text, rows)
    module = parse(text)
    LowerToTpuPass().apply(make_context(), module)
    module.verify()
    (kernel,) = [o for o in module.body.block.ops if o.name == "func.func"]
    k, m, s = (a.value.data for a in kernel.attributes["tpu.io"].data)
    outs, _ = run_level_t(module, [list(r) + [None] * (m + s) for r in rows])
    return [[np.asarray(w) for w in dev] for dev in want], [o[k : k + m] for o in outs]


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    """Bit for bit, but a NaN part may be any NaN (numpy's loops may swap the operands of
    a commutative op, which picks another NaN's sign and payload)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    got, want = np.atleast_1d(got), np.atleast_1d(want)  # numpy views no 0-d array as bytes
    for g, w in ((np.real(got), np.real(want)), (np.imag(got), np.imag(want))):
        nan = np.isnan(g) & np.isnan(w)
        assert np.array_equal(
            np.where(nan, 0, g).view(np.uint8), np.where(nan, 0, w).view(np.uint8)
        )


def assert_close(got: np.ndarray, want: np.ndarray, ulps: float, scale=None, eps=None) -> None:
    """Within `ulps` of `eps` (the part type's) times `scale` (default: |want|), an ulp
    being at least the smallest subnormal (a product of a subnormal part rounds to
    multiples of it: (5e-324 + 5e-324 i)(1.6e14 - 1.7e7 i) one apart, seed 471)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    info = np.finfo(np.real(want).dtype)
    eps = info.eps if eps is None else eps
    scale = np.abs(want) if scale is None else scale
    scales = (np.real(scale), np.imag(scale)) if np.iscomplexobj(scale) else (scale, scale)
    for g, w, sc in (
        (np.real(got), np.real(want), scales[0]),
        (np.imag(got), np.imag(want), scales[1]),
    ):
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        close = np.abs(g - w) <= ulps * np.maximum(eps * sc, info.smallest_subnormal)
        assert np.all(same | close), (g[~(same | close)], w[~(same | close)])


def product_scale(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|ar br| + |ai bi| + i (|ar bi| + |ai br|) in complex128: what a product's rounding
    errors are relative to."""
    a, b = a.astype(np.complex128), b.astype(np.complex128)
    with np.errstate(invalid="ignore", over="ignore"):
        re = np.abs(a.real * b.real) + np.abs(a.imag * b.imag)
        im = np.abs(a.real * b.imag) + np.abs(a.imag * b.real)
    out = np.empty(a.shape, np.complex128)
    out.real, out.imag = re, im
    return out


BINARY = ["add", "sub", "mul", "div"]
UNARY = ["neg", "abs", "real", "imag"]


@SETTINGS
@given(
    st.sampled_from(sorted(TYPES)),
    st.sampled_from([*BINARY, *UNARY, "complex"]),
    st.tuples(st.sampled_from([1, 3, 8]), st.sampled_from([1, 5, 128])),
    st.integers(0, 2**16),
)
@example("complex<f64>", "mul", (1, 128), 12074)  # test_f64_product_infinities_are_numpys
def test_elementwise_is_level_s(ctype: str, op: str, shape, seed: int) -> None:
    rng = np.random.default_rng(seed)
    t, p = ty(shape, ctype), ty(shape, PART[ctype])
    if op == "complex":
        text = program([p, p], t, f"hlo.complex %a0, %a1 : ({p}, {p}) -> {t}")
        rows = [[np.real(values(rng, shape, ctype)).copy() for _ in range(2)]] * DEVICES
        check(text, rows)
        return
    if op in UNARY:
        res = p if op != "neg" else t
        line = f"hlo.{op} %a0 : ({t}) -> {res}" if op != "neg" else f"hlo.neg %a0 : {t}"
    else:
        res, line = t, f"hlo.{op} %a0, %a1 : {t}"
    text = program([t, t], res, line)
    rows = [[values(rng, shape, ctype), values(rng, shape, ctype)] for _ in range(DEVICES)]
    want, got = run_both(text, rows)
    for d in range(DEVICES):
        if ctype == "complex<f32>" or op not in ("mul", "abs"):
            assert_same(got[d][0], want[d][0])
        elif op == "mul":  # numpy fuses one product: within an ulp of the larger product
            # infinities and NaN as numpy's fma makes them (`_fma_infinities`)
            assert_close(got[d][0], want[d][0], 2, product_scale(*rows[d]))
        else:
            assert_close(got[d][0], want[d][0], 4)


def test_f64_product_infinities_are_numpys() -> None:
    """
    complex<f64> products whose plain sums of rounded products are inf - inf, where
    numpy's fma keeps one infinity: level T has numpy's parts, NaN only where numpy's
    is (seed 12074 of `test_elementwise_is_level_s`: (2e20 + 1e300 i)(-9e9 + 1e300 i) had
    the imaginary part NaN where numpy's is -inf: fl(ai br) = -inf is the fma's addend,
    the exact ar bi finite). The reference is numpy's `a * b` of this machine.
    """
    inf, nan = np.inf, np.nan
    pairs = [
        (2.1599388452513038e20 + 1e300j, -9440346932.732325 + 1e300j),  # im: -inf, not NaN
        (1e300 + 1e-40j, 26245776089.464436 + inf * 1j),  # re: an infinite factor
        (-1.2414041648894653e21 - 67207904072.072914j, complex(1e300, inf)),
        (complex(inf, 1.0), complex(2.0, 3.0)),  # inf - 3 and inf + 2: no NaN
        (complex(inf, 1e300), complex(1e10, 1e300)),  # inf - inf of an infinite factor: NaN
        (complex(nan, 1.0), complex(2.0, 3.0)),  # NaN stays NaN
        (complex(1e300, 1e300), complex(1e300, -1e300)),  # both parts overflow alone
        (complex(1.5, -2.5), complex(0.25, 4.0)),  # finite: within an ulp
    ]
    a = np.array([[x for x, _ in pairs]], np.complex128)
    b = np.array([[y for _, y in pairs]], np.complex128)
    with np.errstate(all="ignore"):
        numpy_product = a * b
    assert np.isneginf(numpy_product.imag[0, 0])  # what this machine's numpy gives
    t = ty(a.shape, "complex<f64>")
    text = program([t, t], t, f"hlo.mul %a0, %a1 : {t}")
    want, got = run_both(text, [[a, b]] * DEVICES)
    for d in range(DEVICES):
        assert_same(want[d][0], numpy_product)
        g, w = got[d][0], numpy_product
        for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
            assert np.array_equal(np.isnan(gp), np.isnan(wp))
            assert np.array_equal(gp[np.isinf(wp)], wp[np.isinf(wp)])
        assert_close(g, w, 2, product_scale(a, b))


def test_f32_product_against_complex128_rounded_once() -> None:
    """Independent of level S: complex<f32> products within an f32 ulp of the exact
    (complex128, whose products of f32 parts are exact) product."""
    rng = np.random.default_rng(3)
    a, b = (values(rng, (8, 128), "complex<f32>") for _ in range(2))
    finite = np.isfinite(a) & np.isfinite(b) & (np.abs(a) < 1e15) & (np.abs(b) < 1e15)
    a, b = np.where(finite, a, 1), np.where(finite, b, 1)
    t = ty(a.shape, "complex<f32>")
    text = program([t, t], t, f"hlo.mul %a0, %a1 : {t}")
    _, got = run_both(text, [[a, b]] * DEVICES)
    exact = a.astype(np.complex128) * b.astype(np.complex128)
    scale = np.maximum(product_scale(a, b).real, 2.0**-126) + 1j * np.maximum(
        product_scale(a, b).imag, 2.0**-126
    )
    eps = float(np.finfo(np.float32).eps)  # subnormal results: an ulp of 2^-149
    assert_close(got[0][0].astype(np.complex128), exact, 1, scale, eps)


def test_division_by_zero_and_infinities_bit_for_bit() -> None:
    s = np.array(SPECIALS[:6], np.float32)
    re, im = np.meshgrid(s, s)
    z = (re + 1j * im).astype(np.complex64).ravel()
    a, b = np.meshgrid(z, z)
    t = ty(a.shape, "complex<f32>")
    want, got = run_both(program([t, t], t, f"hlo.div %a0, %a1 : {t}"), [[a, b], [b, a]])
    for d in range(DEVICES):
        assert_same(got[d][0], want[d][0])


@SETTINGS
@given(
    st.sampled_from(sorted(TYPES)),
    st.tuples(
        st.sampled_from([1, 8, 16]), st.sampled_from([3, 128, 256]), st.sampled_from([1, 128])
    ),
    st.integers(0, 2**16),
)
def test_dot_and_reduce_are_level_s_to_rounding(ctype: str, mkn, seed: int) -> None:
    """Sums of the parts in level T's order: within a few ulps of the terms' magnitude."""
    m, k, n = mkn
    rng = np.random.default_rng(seed)

    def normal(shape):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(TYPES[ctype])

    lt, rt, ot = ty((m, k), ctype), ty((k, n), ctype), ty((m, n), ctype)
    line = f"hlo.dot %a0, %a1, contracting_dims = [1] x [0] : ({lt}, {rt}) -> {ot}"
    rows = [[normal((m, k)), normal((k, n))] for _ in range(DEVICES)]
    want, got = run_both(program([lt, rt], ot, line), rows)
    for d in range(DEVICES):
        a, b = rows[d]
        scale = np.abs(a) @ np.abs(b)
        assert_close(got[d][0], want[d][0], 4 * k, scale)
    r = ty((m,), ctype)
    text = program([lt], r, f"hlo.reduce add %a0, dims = [1] : ({lt}) -> {r}")
    rows = [[normal((m, k))] for _ in range(DEVICES)]
    want, got = run_both(text, rows)
    for d in range(DEVICES):
        assert_close(got[d][0], want[d][0], 4 * k, np.abs(rows[d][0]).sum(1))


@pytest.mark.parametrize("ctype", sorted(TYPES))
@pytest.mark.parametrize("asynchronous", [False, True])
@pytest.mark.parametrize(
    "kind", ["all_reduce", "reduce_scatter_dim0", "reduce_scatter_dim1", "permute_pairs"]
)
def test_collectives_of_complex(ctype: str, kind: str, asynchronous: bool) -> None:
    """all_reduce / reduce_scatter add and permute (its zero fill: the complex zero), sync
    or as a `_start` and its `done`."""
    n = 4
    arg, res, op = collectives.cases(n)[kind]
    if asynchronous:
        op = collectives.start_done(op, res)
    collectives.check(collectives.one_op(n, ctype, arg, res, op), n)


def test_a_combined_start_of_complex_and_real_operands() -> None:
    """One `_start` of a complex and a real operand (collective-combine's form), its `done`
    after other work: the complex one on its parts, the real one as it was."""
    c, r = "tensor<8x24xcomplex<f64>>", "tensor<8x24xf32>"
    text = f"""spmd.mesh @m = <["x"=2]>
func.func @main(%a: {c}, %b: {r}) -> ({c}, {r}, {r}) attributes {{spmd.per_device_io}} {{
  %f = collective.all_reduce_start add %a, %b on @m["x"] : {c}, {r} -> !collective.future<{c}, {r}>
  %e = hlo.exp %b : {r}
  %x, %y = collective.done %f : !collective.future<{c}, {r}> -> {c}, {r}
  func.return %x, %y, %e : {c}, {r}, {r}
}}"""
    collectives.check(text, 2)


def assert_real_same(got: np.ndarray, want: np.ndarray) -> None:
    """Bit for bit, any NaN for a NaN."""
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
        got, want = np.where(nan, 0, got).astype(want.dtype), np.where(nan, 0, want)
    assert np.array_equal(got.view(np.uint8), want.astype(want.dtype).view(np.uint8))


def real_values(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    """Reals of a real type for a real -> complex convert and a select's predicate."""
    if dtype == "i1":
        return rng.random(shape) < 0.5
    if dtype == "i32":
        return rng.integers(-(2**31), 2**31, size=shape, dtype=np.int32)
    part = np.real(values(rng, shape, "complex<f64>"))
    with np.errstate(over="ignore"):
        return part.astype(np.float32 if dtype == "f32" else np.float64)


OTHERS = ["f32", "f64", "i32", "i1"]


@st.composite
def moving_cases(draw) -> tuple[str, list[str], str]:
    """A compare EQ / NE, select or convert with complex operands or result: (the op
    line, the argument types' element types, the result's element type)."""
    ctype = draw(st.sampled_from(sorted(TYPES)))
    kind = draw(st.sampled_from(["compare", "select", "to_complex", "from_complex"]))
    if kind == "compare":
        d = draw(st.sampled_from(["EQ", "NE"]))
        return f"hlo.compare {d}, %a0, %a1 : ({{t0}}, {{t1}}) -> {{r}}", [ctype, ctype], "i1"
    if kind == "select":
        return "hlo.select %a0, %a1, %a2 : {t0}, {r}", ["i1", ctype, ctype], ctype
    other = draw(st.sampled_from([*OTHERS, *sorted(TYPES)]))
    src, dst = (other, ctype) if kind == "to_complex" else (ctype, other)
    return "hlo.convert %a0 : ({t0}) -> {r}", [src], dst


@SETTINGS
@given(
    moving_cases(),
    st.tuples(st.sampled_from([1, 3, 8]), st.sampled_from([1, 5, 128])),
    st.integers(0, 2**16),
)
def test_compare_select_convert_bit_for_bit(case, shape, seed: int) -> None:
    """Level S's numerics exactly (specials included): parts compared, selected and
    converted as level S does (`interpreter/values.py` `convert`)."""
    line, args, res = case
    rng = np.random.default_rng(seed)
    types = [ty(shape, a) for a in args]
    fmt = {f"t{i}": t for i, t in enumerate(types)} | {"r": ty(shape, res)}
    text = program(types, ty(shape, res), line.format(**fmt))

    def arg(a: str) -> np.ndarray:
        return values(rng, shape, a) if a in TYPES else real_values(rng, shape, a)

    rows = [[arg(a) for a in args] for _ in range(DEVICES)]
    if "compare" in line:  # equal elements too: every other one copied
        for row in rows:
            row[1].ravel()[::2] = row[0].ravel()[::2]
    want, got = run_both(text, rows)
    for d in range(DEVICES):
        if res in TYPES:
            assert_same(got[d][0], want[d][0])
        else:
            assert_real_same(got[d][0], want[d][0])


def test_convert_keeps_an_infinite_imaginary_part_and_signed_zeros() -> None:
    """Level S's convert of complex<f32> to complex<f64> (it made the real part NaN where
    the imaginary part is infinite, by re + 1j * im) and of a real -0 (its sign)."""
    z = np.array([[complex(1, np.inf), complex(-0.0, -0.0), complex(np.nan, 2)]], np.complex64)
    t, t64 = ty(z.shape, "complex<f32>"), ty(z.shape, "complex<f64>")
    want, got = run_both(program([t], t64, f"hlo.convert %a0 : ({t}) -> {t64}"), [[z]] * 2)
    assert_same(want[0][0], z.astype(np.complex128))
    assert_same(got[0][0], z.astype(np.complex128))
    x = np.array([[-0.0, np.inf, -np.inf]], np.float64)
    p = ty(x.shape, "f64")
    want, got = run_both(program([p], t, f"hlo.convert %a0 : ({p}) -> {t}"), [[x]] * 2)
    for w in (want[0][0], got[0][0]):
        assert_same(w, x.astype(np.complex64))


FUSED_STEPS = ["add", "sub", "mul", "div", "neg", "abs", "select", "convert", "transpose"]
EXACT_F64_STEPS = ["add", "sub", "div", "neg", "select", "convert", "transpose"]


def fused_chain(ctype: str, n: int, steps: list[tuple[str, int, int]]) -> str:
    """A chain of complex elementwise ops on n x n tensors (`steps`: the op and which of
    the values so far it reads), ending in their sum: the fusion pass fuses it whole."""
    t, p, b = ty((n, n), ctype), ty((n, n), PART[ctype]), ty((n, n), "i1")
    other = ty((n, n), "complex<f64>" if ctype == "complex<f32>" else "complex<f32>")
    lines, vals = [], ["%a0", "%a1"]
    for k, (op, i, j) in enumerate(steps):
        x, y, v = vals[i % len(vals)], vals[j % len(vals)], f"%v{k}"
        if op in ("add", "sub", "mul", "div"):
            lines.append(f"{v} = hlo.{op} {x}, {y} : {t}")
        elif op == "neg":
            lines.append(f"{v} = hlo.neg {x} : {t}")
        elif op == "abs":  # the modulus, paired with an imaginary part
            lines.append(f"%m{k} = hlo.abs {x} : ({t}) -> {p}")
            lines.append(f"%i{k} = hlo.imag {y} : ({t}) -> {p}")
            lines.append(f"{v} = hlo.complex %m{k}, %i{k} : ({p}, {p}) -> {t}")
        elif op == "select":
            lines.append(f"%c{k} = hlo.compare NE, {x}, {y} : ({t}, {t}) -> {b}")
            lines.append(f"{v} = hlo.select %c{k}, {x}, {y} : {b}, {t}")
        elif op == "convert":
            lines.append(f"%w{k} = hlo.convert {x} : ({t}) -> {other}")
            lines.append(f"{v} = hlo.convert %w{k} : ({other}) -> {t}")
        else:  # read by the add only: fused
            lines.append(f"%t{k} = hlo.transpose {x}, dims = [1, 0] : ({t}) -> {t}")
            lines.append(f"{v} = hlo.add %t{k}, {y} : {t}")
        vals.append(v)
    lines.append(f"%r = hlo.add {vals[-1]}, {vals[-2]} : {t}")
    body = "\n  ".join(lines)
    return f"""spmd.mesh @m = <["x"={DEVICES}]>
func.func @main(%a0: {t}, %a1: {t}) -> {t} attributes {{spmd.per_device_io}} {{
  {body}
  func.return %r : {t}
}}"""


@st.composite
def chains(draw) -> tuple[str, str, int]:
    ctype = draw(st.sampled_from(sorted(TYPES)))
    ops = FUSED_STEPS if ctype == "complex<f32>" else EXACT_F64_STEPS
    step = st.tuples(st.sampled_from(ops), st.integers(0, 9), st.integers(0, 9))
    steps = draw(st.lists(step, min_size=1, max_size=5))
    n = draw(st.sampled_from([1, 4, 128]))
    return fused_chain(ctype, n, steps), ctype, n


@SETTINGS
@given(chains(), st.integers(0, 2**16))
def test_a_fusion_of_complex_ops_is_one_fusion_on_the_parts(case, seed: int) -> None:
    """The fusion pass's fusions of complex ops: each one fusion on the parts (no complex
    value, no fusion of its own per op inside; real / imag / complex, which the fusion pass
    leaves out, as their DMAs), level S's numerics bit for bit (complex<f64>: the
    ops that are bit for bit alone; its product is within an ulp: test above)."""
    import shardc
    from shardc.hardware.chips import CHIPS
    from shardc.lowering import complex_pairs

    text, ctype, n = case
    fused = str(shardc.compile(text, "fusion{chip=v5e}"))
    module = parse(fused)
    (function,) = [o for o in module.body.block.ops if o.name == "func.func"]
    complex_pairs.expand(function, CHIPS["v5e"])
    for fusion in [o for o in module.walk() if o.name == "hlo.fusion"]:
        inside = [o for o in fusion.walk() if o is not fusion]
        assert not any(o.name == "hlo.fusion" for o in inside)
        assert not any(complex_pairs.is_complex(v) for o in inside for v in o.results)
    rng = np.random.default_rng(seed)
    rows = [[values(rng, (n, n), ctype) for _ in range(2)] for _ in range(DEVICES)]
    want, got = run_both(fused, rows)
    for d in range(DEVICES):
        assert_same(got[d][0], want[d][0])


@pytest.mark.parametrize("chip", ["v5e", "v5p"])
@pytest.mark.parametrize("ctype", sorted(TYPES))
def test_a_complex_fusion_step_is_level_t_step(ctype: str, chip: str) -> None:
    """Level S charges the fusion on the parts (`fusion_on_parts`: the parts' DMAs around
    its one loop): within 10% of level T (it was 2.9 times level S, 4.3 times before the
    fusion was computed on the parts)."""
    import shardc

    steps = [("mul", 0, 1), ("select", 2, 0), ("convert", 3, 1), ("abs", 4, 0)]
    fused = str(shardc.compile(fused_chain(ctype, 1024, steps), f"fusion{{chip={chip}}}"))
    s = shardc.run(fused, timing_only=True, chip=chip).report["step_time_s"]
    kernel = shardc.compile(fused, f"lower-to-tpu{{chip={chip}}}")
    t = shardc.run(kernel, timing_only=True, chip=chip).report["step_time_s"]
    assert abs(t / s - 1) < 0.1, (s, t)


def assert_parts_close(got: np.ndarray, want: np.ndarray, ulps: float) -> None:
    """Each part within `ulps` of the part type's eps times the part's own magnitude (not
    below the smallest normal), NaN where level S has NaN, zeros and infinities of level
    S's sign."""
    eps, tiny = np.finfo(np.real(want).dtype).eps, np.finfo(np.real(want).dtype).tiny
    for g, w in ((np.real(got), np.real(want)), (np.imag(got), np.imag(want))):
        assert np.array_equal(np.isnan(g), np.isnan(w))
        exact = (w == 0) | np.isinf(w)
        assert np.array_equal(g[exact], w[exact])
        assert np.array_equal(np.signbit(g[exact]), np.signbit(w[exact]))
        finite = np.isfinite(w)
        with np.errstate(over="ignore", invalid="ignore"):
            err = np.abs(g[finite].astype(np.float64) - w[finite])
        assert np.all(err <= ulps * eps * np.maximum(np.abs(w[finite]), tiny)), (
            g[finite][err > ulps * eps * np.maximum(np.abs(w[finite]), tiny)],
            w[finite][err > ulps * eps * np.maximum(np.abs(w[finite]), tiny)],
        )


EXP_ULPS = {"complex<f32>": 1, "complex<f64>": 4}
"""exp's tolerance, in ulps of each part: complex<f32> is computed in f64 at both levels
(level S: glibc's cexp on complex128; level T: exp, cos, sin and the products in f64),
both within a few f64 ulps of the exact value, so their f32 roundings differ by at most
one ulp (where the exact value lies near an f32 rounding boundary); complex<f64>: glibc's
cexp (sincos, exp, one product) and level T's three roundings (exp, cos or sin, the
product) each within about two ulps: 4."""


def exp_values(rng: np.random.Generator, shape, ctype: str) -> np.ndarray:
    """`values` with moderate real parts (e^a neither overflowing nor vanishing, mostly)
    and a tenth of the specials; complex<f64>: real parts below 709, where glibc scales
    e^a to keep a finite part that e^a * cos b (level T) overflows (the one deviation)."""
    z = values(rng, shape, ctype)
    re = np.real(z).copy()
    mild = rng.random(shape) < 0.8
    re[mild] = rng.uniform(-100, 100, size=int(mild.sum()))
    if ctype == "complex<f64>":
        re = np.where(re > 709, 709, re)
    out = z.copy()
    out.real = re
    return out


@SETTINGS
@given(
    st.sampled_from(sorted(TYPES)),
    st.tuples(st.sampled_from([1, 3, 8]), st.sampled_from([1, 5, 128])),
    st.integers(0, 2**16),
)
def test_exp_is_level_s_within_its_ulps(ctype: str, shape, seed: int) -> None:
    rng = np.random.default_rng(seed)
    t = ty(shape, ctype)
    rows = [[exp_values(rng, shape, ctype)] for _ in range(DEVICES)]
    want, got = run_both(program([t], t, f"hlo.exp %a0 : {t}"), rows)
    for d in range(DEVICES):
        assert_parts_close(got[d][0], want[d][0], EXP_ULPS[ctype])


@pytest.mark.parametrize("ctype", sorted(TYPES))
def test_exp_special_values_are_c99s(ctype: str) -> None:
    """Every pair of zeros, infinities, NaN and ordinary parts: NaN, infinities and signed
    zeros exactly as level S (numpy's complex128 exp: C99 Annex G)."""
    s = np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 80.0, -700.0])
    re, im = np.meshgrid(s, s)
    z = np.empty(re.shape, TYPES[ctype])
    z.real, z.imag = re, im
    t = ty(z.shape, ctype)
    want, got = run_both(program([t], t, f"hlo.exp %a0 : {t}"), [[z]] * DEVICES)
    assert_parts_close(got[0][0], want[0][0], EXP_ULPS[ctype])


SQRT_ULPS = {"complex<f32>": 1, "complex<f64>": 4}
"""sqrt's tolerance, in ulps of each part: complex<f32> computed in f64 at both levels
(level S: glibc's csqrt on complex128) rounds to the same f32 but near a rounding
boundary; complex<f64>: level T's modulus hi sqrt(1 + (lo/hi)^2) (a few ulps, glibc's
hypot is within one), then a sum, a halving, a root and a quotient, against glibc's own
rounding: 4 (2 seen over the drawn values)."""


@SETTINGS
@given(
    st.sampled_from(sorted(TYPES)),
    st.tuples(st.sampled_from([1, 3, 8]), st.sampled_from([1, 5, 128])),
    st.integers(0, 2**16),
)
def test_sqrt_is_level_s_within_its_ulps(ctype: str, shape, seed: int) -> None:
    """Every magnitude (`values`: huge, tiny and subnormal parts, specials)."""
    rng = np.random.default_rng(seed)
    t = ty(shape, ctype)
    rows = [[values(rng, shape, ctype)] for _ in range(DEVICES)]
    want, got = run_both(program([t], t, f"hlo.sqrt %a0 : {t}"), rows)
    for d in range(DEVICES):
        assert_parts_close(got[d][0], want[d][0], SQRT_ULPS[ctype])


@pytest.mark.parametrize("ctype", sorted(TYPES))
def test_sqrt_special_values_are_c99s(ctype: str) -> None:
    """Every pair of signed zeros, infinities, NaNs of both signs and ordinary, huge and
    subnormal parts: as level S (C99 Annex G: the sign of a NaN b gives -inf's)."""
    big = 1.7e308 if ctype == "complex<f64>" else 3.4e38
    s = np.array([0.0, -0.0, 4.0, -2.5, np.inf, -np.inf, np.nan, -np.nan, big, -big, 5e-324])
    re, im = np.meshgrid(s, s)
    z = np.empty(re.shape, TYPES[ctype])
    with np.errstate(over="ignore"):
        z.real, z.imag = re, im
    t = ty(z.shape, ctype)
    want, got = run_both(program([t], t, f"hlo.sqrt %a0 : {t}"), [[z]] * DEVICES)
    assert_parts_close(got[0][0], want[0][0], SQRT_ULPS[ctype])
    g, w = np.imag(got[0][0]), np.imag(want[0][0])
    assert np.array_equal(np.signbit(g[~np.isnan(w)]), np.signbit(w[~np.isnan(w)]))
