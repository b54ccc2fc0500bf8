"""
`lower-to-tpu` of a complex reduce mul / max / min (issue 15 item 3): lowering/
complex_pairs.py `_fold` makes it a reduce with a body on the parts, which lowering/
reduce_body.py folds in level S's order. Level S (numpy's `multiply.reduce`,
`maximum.reduce`, `minimum.reduce` from the identity) against level T bit for bit on
hypothesis-drawn values with infinities, NaN and signed zeros; numpy's product is
uncontracted in its reduce loop (`complex_fold_plain`) and contracted into fused
multiply-adds otherwise, which complex<f64> parts cannot reproduce (no wider type: within
an ulp per product there). The body's vector ops are `hardware/cost.py`
`complex_fold_ops`, and the step times agree.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from shardc.dialects import hlo
from shardc.hardware.chips import CHIPS
from shardc.hardware.cost import (
    COMPLEX_PART_OPS,
    PLAIN_PRODUCT_OPS,
    complex_fold_ops,
    complex_fold_plain,
    elementwise_vpu_ops,
    reduce_body_ops,
)
from shardc.interpreter.testing import parse
from shardc.lowering import complex_pairs
from shardc.tests.unit.test_lower_complex import SETTINGS, TYPES, assert_same, run_both, values
from shardc.tests.unit.test_lower_element_types import program, ty
from shardc.tests.unit.test_lower_movement import DEVICES
from xdsl.dialects import func, scf, vector
from xdsl.dialects.builtin import VectorType

CASES = [
    ((8, 6), (1,)),
    ((6, 8), (0,)),
    ((3, 4, 5), (1, 2)),
    ((3, 4, 5), (0, 2)),
    ((3, 4, 5), (0, 1)),
    ((4, 5, 1), (1,)),
    ((2, 3), (0, 1)),
]


def fold_program(ctype: str, kind: str, shape, dims) -> str:
    t = ty(shape, ctype)
    r = ty([n for d, n in enumerate(shape) if d not in dims], ctype)
    return program([t], r, f"hlo.reduce {kind} %a0, dims = {list(dims)} : ({t}) -> {r}")


def moderate(rng: np.random.Generator, shape, ctype: str) -> np.ndarray:
    """Parts near 1 in magnitude (a product of a few stays finite and normal), signed
    zeros and a few specials."""
    out = values(rng, shape, ctype)
    keep = rng.random(shape) < 0.9
    parts = rng.standard_normal((2, *shape))
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.where(keep, (parts[0] + 1j * parts[1]).astype(out.dtype), out)
    return out


@SETTINGS
@given(
    st.sampled_from(sorted(TYPES)),
    st.sampled_from(["max", "min"]),
    st.sampled_from(CASES),
    st.integers(0, 2**16),
)
def test_max_min_are_level_s(ctype: str, kind: str, case, seed: int) -> None:
    """numpy's lexicographic order, NaN parts propagating from the first found, equal
    values keeping the accumulator's signed zeros: bit for bit."""
    shape, dims = case
    rng = np.random.default_rng(seed)
    rows = [[values(rng, shape, ctype)] for _ in range(DEVICES)]
    want, got = run_both(fold_program(ctype, kind, shape, dims), rows)
    for d in range(DEVICES):
        assert got[d][0].tobytes() == want[d][0].tobytes()


@SETTINGS
@given(st.sampled_from(sorted(TYPES)), st.sampled_from(CASES), st.integers(0, 2**16))
def test_product_is_level_s(ctype: str, case, seed: int) -> None:
    """Bit for bit (NaN's bits aside) but complex<f64> parts where numpy contracts the
    products (`complex_fold_plain` false): there within an ulp per product of the
    products of the moduli, NaN and infinities where level S has them where finite."""
    shape, dims = case
    rng = np.random.default_rng(seed)
    xs = [moderate(rng, shape, ctype) for _ in range(DEVICES)]
    text = fold_program(ctype, "mul", shape, dims)
    want, got = run_both(text, [[x] for x in xs])
    (op,) = [o for o in parse(text, "f.mlir").walk() if isinstance(o, hlo.ReduceOp)]
    exact = ctype == "complex<f32>" or complex_fold_plain(op)
    for d in range(DEVICES):
        if exact:
            assert_same(got[d][0], want[d][0])
            continue
        w, g = want[d][0], got[d][0]
        with np.errstate(all="ignore"):
            scale = np.prod(np.abs(xs[d]).astype(np.float64), axis=dims)
        n = int(np.prod([shape[k] for k in dims]))
        finite = np.isfinite(w.real) & np.isfinite(w.imag) & np.isfinite(scale)
        for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
            err = np.abs(gp[finite] - wp[finite])
            assert np.all(err <= 4 * n * np.finfo(np.float64).eps * scale[finite])


def test_which_loop_numpy_runs() -> None:
    """The premise of `complex_fold_plain`, independently of the lowering: numpy's
    product of a reduce over the innermost axis is the uncontracted formula rounded in the
    part type, over an outer axis its elementwise (contracted) product."""
    rng = np.random.default_rng(0)
    for dt, part in ((np.complex64, np.float32), (np.complex128, np.float64)):
        x = (rng.standard_normal((4096, 2)) + 1j * rng.standard_normal((4096, 2))).astype(dt)
        a, b = x[:, 0], x[:, 1]
        plain = np.empty_like(a)
        plain.real = a.real * b.real - a.imag * b.imag
        plain.imag = a.real * b.imag + a.imag * b.real
        assert plain.real.dtype == part
        assert np.array_equal(np.multiply.reduce(x, axis=1), plain)
        assert np.array_equal(np.multiply.reduce(x.T.copy(), axis=0), a * b)
        assert not np.array_equal(a * b, plain)  # the two loops differ on this machine


def expanded_fold(text: str) -> hlo.ReduceOp:
    module = parse(text, "fold.mlir")
    for f in list(module.walk()):
        if isinstance(f, func.FuncOp):
            complex_pairs.expand(f, CHIPS["v5e"])
    (fold,) = [o for o in module.walk() if isinstance(o, hlo.ReduceOp)]
    return fold


@pytest.mark.parametrize("part", ["f32", "f64"])
@pytest.mark.parametrize("kind", ["mul", "max", "min"])
@pytest.mark.parametrize(("shape", "dims"), [((16, 256), (1,)), ((16, 256), (0,))])
def test_the_body_is_what_level_s_charges(part: str, kind: str, shape, dims) -> None:
    """The fold's body has `complex_fold_ops` vector ops (the table's product, max or min;
    the uncontracted product `PLAIN_PRODUCT_OPS`): the lowered fold loop runs them on each
    element (besides its `vector.extract` of the element of each part, as any reduce with
    a body), and level S charges them per element."""
    text = fold_program(f"complex<{part}>", kind, shape, dims)
    fold = expanded_fold(text)
    body = [o for o in fold.body.block.ops if not isinstance(o, hlo.ReturnOp)]  # pyright: ignore
    ops = sum(elementwise_vpu_ops(o) for o in body)
    (op,) = [o for o in parse(text, "f.mlir").walk() if isinstance(o, hlo.ReduceOp)]
    assert ops == complex_fold_ops(op) == reduce_body_ops(op)
    plain = kind == "mul" and complex_fold_plain(op)
    assert ops == (PLAIN_PRODUCT_OPS if plain else COMPLEX_PART_OPS[(f"hlo.{kind}", part)])
    import shardc

    kernel = shardc.compile(text, "lower-to-tpu{chip=v5e}")
    (loop,) = [o for o in kernel.walk() if isinstance(o, scf.ForOp)]
    inner = [
        o for o in loop.body.block.ops if any(isinstance(r.type, VectorType) for r in o.results)
    ]
    extracts = [o for o in inner if isinstance(o, vector.ExtractOp)]
    assert len(extracts) == 2  # the element of each part, then the body on vectors
    assert len(inner) - len(extracts) == ops
    n = shape[0] * shape[1]
    rows = shardc.run(text, timing_only=True, chip="v5e").report["ops"]
    assert sum(row["flops"] for row in rows) == n * ops


@pytest.mark.parametrize("chip", ["v5e", "v5p"])
@pytest.mark.parametrize("ctype", sorted(TYPES))
@pytest.mark.parametrize("kind", ["mul", "max", "min"])
@pytest.mark.parametrize("dim", [0, 1])
def test_level_s_step_is_level_t_step(dim: int, kind: str, ctype: str, chip: str) -> None:
    import shardc

    text = fold_program(ctype, kind, (512, 1024), (dim,))
    s = shardc.run(text, timing_only=True, chip=chip).report["step_time_s"]
    kernel = shardc.compile(text, f"lower-to-tpu{{chip={chip}}}")
    t = shardc.run(kernel, timing_only=True, chip=chip).report["step_time_s"]
    assert abs(t / s - 1) < 0.1, (s, t)
