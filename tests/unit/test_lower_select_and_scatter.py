"""
`lower-to-tpu` of `hlo.select_and_scatter` (its expansion, hardware/select_scatter.py,
rewritten in lowering/windows.py) against level S, bit for bit on every device, and level
S against a reference written from the StableHLO spec's loop; on hypothesis-drawn shapes,
windows, strides (smaller than the window too: an element selected by several windows),
padding, GE and GT, f32 / bf16 / f16 / i32, values full of ties, NaN, +-inf and signed
zeros. Level S costs the op as that expansion where lower-to-tpu expands it, and level
T's simulated time of a real max-pool gradient (one kernel since
lowering/select_scatter_kernel.py: tests/unit/test_select_scatter_kernel.py) agrees with
level S.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from shardc.dialects import hlo
from shardc.dialects.hlo import window_result_shape
from shardc.interpreter.testing import parse, run_per_device
from shardc.tests.unit.test_lower_movement import DEVICES, SETTINGS, check, program, tensor

NUMPY = {
    "f32": np.dtype(np.float32),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f16": np.dtype(np.float16),
    "i32": np.dtype(np.int32),
}
FLOAT_POOL = [0.0, -0.0, 1.0, 1.0, 2.0, -3.5, np.inf, -np.inf, np.nan, 0.5]
INT_POOL = [0, 1, 1, 2, -3, 7, 2**31 - 1, -(2**31)]


def reference(x, source, init, select, window, strides, low, acc):
    """
    StableHLO select_and_scatter, written from the spec: for each window position in
    row-major order, the window's elements that are not padding, in row-major order; the
    selected one starts as the first, and `select(selected, e)` false (GE: selected >= e,
    GT: selected > e; false with a NaN) makes `e` the selected one; the result starts as
    `init` and gets the position's source element added at the selected index (`acc`:
    the accumulation type, bf16/f16 rounded once at the end).
    """
    out = np.full(x.shape, init, dtype=acc)
    keep = (lambda a, b: a >= b) if select == "GE" else (lambda a, b: a > b)
    for pos in itertools.product(*(range(n) for n in source.shape)):
        selected = None
        for off in itertools.product(*(range(w) for w in window)):
            idx = tuple(p * s + k - lo for p, s, k, lo in zip(pos, strides, off, low, strict=True))
            if any(i < 0 or i >= n for i, n in zip(idx, x.shape, strict=True)):
                continue
            if selected is None or not keep(x[selected], x[idx]):
                selected = idx
        if selected is not None:
            with np.errstate(invalid="ignore", over="ignore"):
                out[selected] = out[selected] + acc.type(source[pos])
    return out.astype(source.dtype)


def values(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    pool = INT_POOL if dtype == "i32" else FLOAT_POOL
    return (
        np.array(rng.choice(np.array(pool, dtype=object), size=shape).tolist())
        .astype(NUMPY[dtype])
        .reshape(shape)
    )


@st.composite
def cases(draw):
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 6)) for _ in range(rank)]
    window = [draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [draw(st.integers(1, 3)) for _ in range(rank)]
    low = [draw(st.integers(0, 2)) for _ in range(rank)]
    high = [draw(st.integers(0, 2)) for _ in range(rank)]
    for d in range(rank):  # the window fits the padded operand
        window[d] = min(window[d], shape[d] + low[d] + high[d])
    dtype = draw(st.sampled_from(list(NUMPY)))
    src_dtype = draw(st.sampled_from([dtype, dtype, "f32"]))
    select = draw(st.sampled_from(["GE", "GT"]))
    return shape, window, strides, list(zip(low, high, strict=True)), dtype, src_dtype, select


def sas_program(shape, window, strides, padding, dtype, src_dtype, select) -> tuple[str, list[int]]:
    out = window_result_shape(
        shape, window, strides, [1] * len(shape), [1] * len(shape), *zip(*padding, strict=True)
    )
    pads = "[" + ", ".join(f"[{lo}, {hi}]" for lo, hi in padding) + "]"
    x, s, r = tensor(shape, dtype), tensor(out, src_dtype), tensor(shape, src_dtype)
    body = (
        f"%r0 = hlo.select_and_scatter %a0, %a1, %a2, select = {select}, scatter = add, "
        f"window = {window}, strides = {strides}, padding = {pads} : "
        f"({x}, {s}, tensor<{src_dtype}>) -> {r}"
    )
    return program([x, s, f"tensor<{src_dtype}>"], [r], body), out


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    return got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()


def same_values(got: np.ndarray, want: np.ndarray) -> bool:
    """Bit for bit except which NaN a NaN is: where two NaNs are added the spec (IEEE)
    leaves the payload to the implementation; level T against level S is bit for bit."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if want.dtype == NUMPY["i32"]:
        return got.tobytes() == want.tobytes()
    nan = np.isnan(want)
    return bool(np.array_equal(nan, np.isnan(got))) and got[~nan].tobytes() == want[~nan].tobytes()


def check_values(text: str, inputs: list[list[np.ndarray]]) -> str:
    """`test_lower_movement.check` with `same_values`: lower, run at level T, compare with
    level S bit for bit but for which NaN a NaN + NaN is (numpy picks by loop and by
    position in the vector at both levels); the lowered text."""
    return check(text, inputs, same=same_values)


@SETTINGS
@given(cases(), st.integers(0, 2**16))
def test_select_and_scatter_equals_level_s_and_the_spec(case, seed: int) -> None:
    shape, window, strides, padding, dtype, src_dtype, select = case
    text, out = sas_program(shape, window, strides, padding, dtype, src_dtype, select)
    rng = np.random.default_rng(seed)
    inputs = []
    for _ in range(DEVICES):
        init = values(rng, (), src_dtype)
        inputs.append([values(rng, shape, dtype), values(rng, out, src_dtype), init])
    level_s = run_per_device(text, inputs)
    acc = np.dtype(np.int32 if src_dtype == "i32" else np.float32)
    for d, (x, src, init) in enumerate(inputs):
        low = [lo for lo, _ in padding]
        want = reference(x, src, init, select, window, strides, low, acc)
        assert same_values(np.asarray(level_s[d][0]), want), (d, level_s[d][0], want)
    lowered = check_values(text, inputs)  # level T with level S
    assert "hlo.select_and_scatter" not in lowered


def test_overlapping_windows_add_in_row_major_window_order() -> None:
    """stride 1 < window 3: the middle element is the max of three windows, whose
    sources (1, 2^-24, 2^-24 in f32) only sum to 1 + 2^-23 exactly if added in window
    order; and an element for an element no window selects keeps a -0.0
    init (not +0.0 from adding zeros)."""
    text, out = sas_program([5], [3], [1], [(0, 0)], "f32", "f32", "GE")
    assert out == [3]
    x = np.array([0, 0, 9, 0, -1], np.float32)
    src = np.array([2.0**-24, 2.0**-24, 1.0], np.float32)
    init = np.float32(-0.0)
    lowered_inputs = [[x, src, init]] * DEVICES
    level_s = run_per_device(text, lowered_inputs)
    want = np.array([-0.0, -0.0, np.float32(np.float32(2.0**-24 + 2.0**-24) + 1), -0.0, -0.0])
    assert same_bits(np.asarray(level_s[0][0]), want.astype(np.float32))
    check(text, lowered_inputs)


def test_level_s_costs_the_expansion() -> None:
    """Level S charges a select_and_scatter the one kernel doesn't take (NCHW: the window
    over the last dimension, not channels-last) what its expansion's ops cost, the ops
    level T runs (one definition: hardware/select_scatter.py)."""
    from shardc.hardware.chips import get_chip
    from shardc.hardware.cost import CostModel
    from shardc.hardware.select_scatter import pooling, standalone_expansion

    text, _ = sas_program(
        [8, 128, 12, 12],
        [1, 1, 3, 3],
        [1, 1, 2, 2],
        [(0, 0), (0, 0), (1, 1), (1, 1)],
        "bf16",
        "bf16",
        "GE",
    )
    (op,) = [o for o in parse(text).walk() if isinstance(o, hlo.SelectAndScatterOp)]
    assert pooling(op) is None
    model = CostModel(get_chip("v5e"))
    parts = [model.op_cost(o) for o in standalone_expansion(op)]
    cost = model.op_cost(op)
    assert cost.time == sum(p.time for p in parts) and cost.bytes == sum(p.bytes for p in parts)
    # one placing pad and one add over the operand per window offset
    names = [o.name for o in standalone_expansion(op)]
    assert names.count("hlo.add") == 9 and names.count("hlo.pad") == 9 + 2


def test_a_real_max_pool_gradient_times_as_level_s_says() -> None:
    """ResNet's stem max pool's gradient (8x112x112x64 bf16, window 3x3, stride 2, padding
    1) laid out NCHW, which the one kernel does not take, on v5e, timing only: level T's
    simulated step within 10% of level S's, which charges the expansion level T runs
    (before: level S charged one pass over the operand, ~60x less than the lowering
    moves). NHWC: tests/unit/test_select_scatter_kernel.py."""
    import shardc

    x, g = "tensor<8x64x112x112xbf16>", "tensor<8x64x56x56xbf16>"
    body = (
        "%r0 = hlo.select_and_scatter %a0, %a1, %a2, select = GE, scatter = add, "
        "window = [1, 1, 3, 3], strides = [1, 1, 2, 2], padding = [[0, 0], [0, 0], [1, 1], "
        f"[1, 1]] : ({x}, {g}, tensor<bf16>) -> {x}"
    )
    text = program([x, g, "tensor<bf16>"], [x], body)
    s = shardc.run(text, timing_only=True, chip="v5e").report["step_time_s"]
    kernel = shardc.compile(text, "lower-to-tpu")
    assert "hlo.select_and_scatter" not in str(kernel) and "sas_acc" not in str(kernel)
    t = shardc.run(kernel, timing_only=True, chip="v5e").report["step_time_s"]
    assert abs(t - s) <= 0.1 * s, (t, s)
