"""
`lower-to-tpu` of complex ops that move or write whole elements (issue 15 item 3): a
complex transpose or broadcast outside a fusion (compute.py's loop, each element's bytes
moved whole), a complex constant (its block stored through the parts' view, a splat as
its (re, im) pair broadcast), and the parts' view a complex reduce or collective reads
(`hardware/cost.py` `bitcast_view`: a view of the operand's buffer, no copy). Level T vs
level S bit for bit on hypothesis-drawn values with infinities, NaN and signed zeros, and
the step times within 10% (the complex reduce add was 2.9 times level S: the parts' view
was copied through HBM on both sides).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from shardc.tests.unit.test_lower_complex import SETTINGS, TYPES, assert_same, run_both, values
from shardc.tests.unit.test_lower_element_types import program, ty
from shardc.tests.unit.test_lower_movement import DEVICES
from shardc.tests.unit.test_lower_remainder import simulated_vpu_ops


def transpose_program(ctype: str, shape, perm) -> str:
    a, r = ty(shape, ctype), ty([shape[p] for p in perm], ctype)
    return program([a], r, f"hlo.transpose %a0, dims = {list(perm)} : ({a}) -> {r}")


def broadcast_program(ctype: str, shape, dims, out) -> str:
    a, r = ty(shape, ctype), ty(out, ctype)
    return program([a], r, f"hlo.broadcast %a0, dims = {list(dims)} : ({a}) -> {r}")


def constant_program(ctype: str, value: np.ndarray, splat: bool) -> str:
    """`dense<"0x..">` (the literal's bytes: the interleaved parts, any NaN or signed
    zero) added to the argument, or returned as it is."""
    t = ty(value.shape, ctype)
    raw = (value.ravel()[:1] if splat else value).tobytes().hex().upper()
    return program([t], t, f'hlo.constant dense<"0x{raw}"> : {t}')


@SETTINGS
@given(
    st.sampled_from(sorted(TYPES)),
    st.sampled_from([((3, 5), (1, 0)), ((8, 128), (1, 0)), ((2, 3, 128), (2, 0, 1))]),
    st.integers(0, 2**16),
)
def test_transpose_is_level_s(ctype: str, case, seed: int) -> None:
    shape, perm = case
    rng = np.random.default_rng(seed)
    rows = [[values(rng, shape, ctype)] for _ in range(DEVICES)]
    want, got = run_both(transpose_program(ctype, shape, perm), rows)
    for d in range(DEVICES):
        assert got[d][0].tobytes() == want[d][0].tobytes()


@SETTINGS
@given(
    st.sampled_from(sorted(TYPES)),
    st.sampled_from(
        [
            ((), (), (4, 128)),
            ((128,), (1,), (8, 128)),
            ((8,), (0,), (8, 128)),
            ((3, 1), (0, 1), (3, 5)),
        ]
    ),
    st.integers(0, 2**16),
)
def test_broadcast_is_level_s(ctype: str, case, seed: int) -> None:
    shape, dims, out = case
    rng = np.random.default_rng(seed)
    rows = [[values(rng, shape, ctype)] for _ in range(DEVICES)]
    want, got = run_both(broadcast_program(ctype, shape, dims, out), rows)
    for d in range(DEVICES):
        assert got[d][0].tobytes() == want[d][0].tobytes()


@SETTINGS
@given(
    st.sampled_from(sorted(TYPES)),
    st.sampled_from([(1,), (3, 5), (8, 128)]),
    st.booleans(),
    st.integers(0, 2**16),
)
def test_constant_is_level_s(ctype: str, shape, splat: bool, seed: int) -> None:
    """Splat and dense literals of any parts (NaN, infinities, signed zeros)."""
    rng = np.random.default_rng(seed)
    value = values(rng, shape, ctype)
    text = constant_program(ctype, value, splat)
    rows = [[np.zeros(shape, TYPES[ctype])] for _ in range(DEVICES)]
    want, got = run_both(text, rows)
    expect = np.broadcast_to(value.ravel()[:1], shape) if splat else value
    for d in range(DEVICES):
        assert_same(want[d][0], np.ascontiguousarray(expect).reshape(shape))
        assert_same(got[d][0], want[d][0])


def test_constant_nan_parts_keep_their_bits() -> None:
    """The literal's bytes are stored as they are: a NaN's sign and payload too."""
    value = np.array([complex(0, 0)] * 2, np.complex128)
    value.view(np.uint64)[:] = [0xFFF8000000000001, 0x8000000000000000, 0x7FF0000000000000, 0]
    rows = [[np.zeros(2, np.complex128)] for _ in range(DEVICES)]
    want, got = run_both(constant_program("complex<f64>", value, False), rows)
    assert got[0][0].tobytes() == want[0][0].tobytes() == value.tobytes()


SHAPE = (512, 1024)


def moving_programs(ctype: str) -> dict[str, str]:
    n, m = SHAPE
    t, r = ty(SHAPE, ctype), ty((n,), ctype)
    value = np.full((1,), 1.5 - 2j, TYPES[ctype])
    splat = constant_program(ctype, np.broadcast_to(value, SHAPE), True)
    return {
        "transpose": transpose_program(ctype, SHAPE, (1, 0)),
        "broadcast": broadcast_program(ctype, (m,), (1,), SHAPE),
        "constant": splat,
        "reduce": program([t], r, f"hlo.reduce add %a0, dims = [1] : ({t}) -> {r}"),
    }


@pytest.mark.parametrize("chip", ["v5e", "v5p"])
@pytest.mark.parametrize("ctype", sorted(TYPES))
@pytest.mark.parametrize("kind", ["transpose", "broadcast", "constant", "reduce"])
def test_level_s_step_is_level_t_step(kind: str, ctype: str, chip: str) -> None:
    import shardc

    text = moving_programs(ctype)[kind]
    s = shardc.run(text, timing_only=True, chip=chip).report["step_time_s"]
    kernel = shardc.compile(text, f"lower-to-tpu{{chip={chip}}}")
    t = shardc.run(kernel, timing_only=True, chip=chip).report["step_time_s"]
    assert abs(t / s - 1) < 0.1, (s, t)


@pytest.mark.parametrize("ctype", sorted(TYPES))
def test_vector_ops_are_what_level_s_plans(ctype: str) -> None:
    """A transpose and a broadcast: one vector op per element (`hardware/kernel.py`
    `_simple` plans 1, the loop's `tpu.transpose` / `vector.broadcast` of whole elements);
    a splat constant: its pair broadcast, one per part (level S plans 0 for every
    constant's store, as for a real splat, whose broadcast the simulator charges 1)."""
    n = SHAPE[0] * SHAPE[1]
    programs = moving_programs(ctype)
    assert simulated_vpu_ops(programs["transpose"]) == n
    assert simulated_vpu_ops(programs["broadcast"]) == n
    assert simulated_vpu_ops(programs["constant"]) == 2 * n


def test_the_parts_view_is_not_copied() -> None:
    """A complex reduce reads its operand's parts in place: no DMA before its loop."""
    import shardc

    text = moving_programs("complex<f32>")["reduce"]
    kernel = str(shardc.compile(text, "lower-to-tpu{chip=v5e}"))
    head = kernel.split("tpu.load")[0]
    assert "tpu.memref_bitcast" in head
    assert head.count("tpu.dma_start") == 1  # the loop's fetch of the operand only
