"""
`hlo.select_and_scatter` as one kernel (lowering/select_scatter_kernel.py): channels-last
max-pool gradients, the operand read once per image with its halo, the source added into
a VMEM accumulator. Bit for bit with level S (interpreter/hlo_windows.py) and with an
independent numpy reference of the channels-last case, on hypothesis-drawn shapes,
windows (overlapping and not), strides, padding, GE / GT and element types, with values
full of ties, NaN, +-inf and signed zeros; no simulator diagnostic (a race, a bounds
error, an unwaited DMA raises); a kernel missing one DMA wait is reported. Level S
charges the kernel (`select_scatter.Pooling`, hardware/kernel.py `select_scatter_time`):
within a few % of level T's simulated step, at real sizes on v5e and v5p.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from shardc.diagnostics import InterpreterError
from shardc.dialects import hlo, make_context, tpu
from shardc.hardware import select_scatter
from shardc.interpreter.level_t import run_level_t
from shardc.interpreter.testing import parse
from shardc.lowering.lower_to_tpu import LowerToTpuPass
from shardc.tests.unit.test_lower_movement import DEVICES, SETTINGS, tensor
from shardc.tests.unit.test_lower_select_and_scatter import (
    check_values,
    same_values,
    sas_program,
)

NUMPY = {
    "f32": np.dtype(np.float32),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f16": np.dtype(np.float16),
    "f64": np.dtype(np.float64),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "i8": np.dtype(np.int8),
    "ui16": np.dtype(np.uint16),
    "f8E4M3FN": np.dtype(ml_dtypes.float8_e4m3fn),
    "f8E5M2": np.dtype(ml_dtypes.float8_e5m2),
}
WIDENED = {NUMPY[t] for t in ("bf16", "f16", "f8E4M3FN", "f8E5M2")}
"""Accumulated in f32, rounded once at the end."""
FLOATS = [0.0, -0.0, 1.0, 1.0, 2.0, -3.5, np.inf, -np.inf, np.nan, 0.5]
INTS = [0, 1, 1, 2, -3, 7, 100, -100]
UINTS = [0, 1, 1, 2, 3, 7, 100, 65535]


def values(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    """Few distinct values (ties in every window), NaN and infinities for floats."""
    pool = FLOATS if NUMPY[dtype].kind == "f" or NUMPY[dtype] in WIDENED else INTS
    pool = UINTS if dtype.startswith("ui") else pool
    with np.errstate(over="ignore", invalid="ignore"):
        picked = np.array(rng.choice(np.array(pool, dtype=object), size=shape).tolist())
        return picked.astype(np.float64 if pool is FLOATS else np.int64).astype(NUMPY[dtype])


def reference(x, src, init, select, window, strides, low) -> np.ndarray:
    """
    Channels-last select_and_scatter written from the spec, independently of level S:
    per image and window position (row-major) and channel, the first element of the
    window (row-major, padding skipped) that the select keeps against every later one
    is where the source adds (in f32 for bf16/f16, rounded once at the end; integers
    wrap). `x` is [n, h, w, c] (1-D forms have h = 1 or c = 1 inserted by the caller).
    """
    n, h, w, c = x.shape
    acc = np.float32 if src.dtype in WIDENED else src.dtype
    out = np.full(x.shape, np.asarray(init).astype(acc), dtype=acc)
    keep = (lambda a, b: a >= b) if select == "GE" else (lambda a, b: a > b)
    (kh, kw), (sh, sw), (lh, lw) = window, strides, low
    for b, oh, ow in np.ndindex(n, src.shape[1], src.shape[2]):
        for ch in range(c):
            best = None
            for i in range(kh):
                for j in range(kw):
                    r, q = oh * sh + i - lh, ow * sw + j - lw
                    if (
                        0 <= r < h
                        and 0 <= q < w
                        and (best is None or not keep(x[best], x[b, r, q, ch]))
                    ):
                        best = (b, r, q, ch)
            if best is not None:
                with np.errstate(invalid="ignore", over="ignore"):
                    out[best] = out[best] + np.asarray(src[b, oh, ow, ch]).astype(acc)
    return out.astype(src.dtype)


@st.composite
def poolings(draw):
    """Select_and_scatters the kernel takes: [n, h, w, c] / [n, w, c] / [n, w], windows
    up to 3 (overlapping: stride < window; or gaps: stride > window), padding at both
    edges up to 2 (windows of padding only too), odd sizes."""
    rank = draw(st.integers(2, 4))
    shape = [draw(st.integers(1, 3))] + [draw(st.integers(1, 7)) for _ in range(rank - 1)]
    spatial = [1] if rank < 4 else [1, 2]
    window, strides, padding = [1] * rank, [1] * rank, [(0, 0)] * rank
    for d in spatial:
        lo, hi = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        window[d] = draw(st.integers(1, min(3, shape[d] + lo + hi)))
        strides[d] = draw(st.integers(1, 3))
        padding[d] = (lo, hi)
    dtype = draw(st.sampled_from(["f32", "bf16", "f16", "i32", "f32", "bf16", *NUMPY]))
    src_dtype = draw(st.sampled_from([dtype, dtype, "f32"]))
    select = draw(st.sampled_from(["GE", "GT"]))
    return shape, window, strides, padding, dtype, src_dtype, select


def as_nhwc(a: np.ndarray, rank: int) -> np.ndarray:
    return (
        a.reshape(a.shape[0], 1, *a.shape[1:])
        if rank == 3
        else (a.reshape(a.shape[0], 1, a.shape[1], 1) if rank == 2 else a)
    )


def spatial(values_: list[int], rank: int, fill: int) -> tuple[int, int]:
    return (values_[1], values_[2]) if rank == 4 else (fill, values_[1])


@SETTINGS
@given(poolings(), st.integers(0, 2**16))
def test_kernel_is_bit_exact_with_level_s_and_the_spec(case, seed: int) -> None:
    """Lowered as the kernel (no expansion: no placing pad, no strided slice), level T's
    result is level S's on every device, and level S the independent reference's."""
    shape, window, strides, padding, dtype, src_dtype, select = case
    text, out = sas_program(shape, window, strides, padding, dtype, src_dtype, select)
    rng = np.random.default_rng(seed)
    inputs = [
        [values(rng, shape, dtype), values(rng, out, src_dtype), values(rng, (), src_dtype)]
        for _ in range(DEVICES)
    ]
    lowered = check_values(text, inputs)  # level T == level S, no diagnostic
    assert "sas_acc" in lowered and "hlo.pad" not in lowered and "hlo.slice" not in lowered
    rank = len(shape)
    low = [lo for lo, _ in padding]
    for x, src, init in inputs[:1]:
        want = reference(
            as_nhwc(x, rank),
            as_nhwc(src, rank),
            init,
            select,
            spatial(window, rank, 1),
            spatial(strides, rank, 1),
            spatial(low, rank, 0),
        )
        got = run_level_s(text, [x, src, init])
        assert same_values(as_nhwc(got, rank), want), (got, want)


def run_level_s(text: str, args: list[np.ndarray]) -> np.ndarray:
    from shardc.interpreter.testing import run_per_device

    return np.asarray(run_per_device(text, [args] * DEVICES)[0][0])


def test_window_order_ties_and_nans_by_hand() -> None:
    """[n, w, c] rows, window 3, stride 1. The 9 is the max of three windows, whose
    sources (2^-24, 2^-24, 1) only sum to 1 + 2^-23 added in window order; an element no
    window selects keeps a -0.0 init. A tie: GE takes the first, GT the last. A NaN is
    taken over the best, and the next element over the NaN (the compare is false)."""

    def run(x, src, select):
        text, out = sas_program(
            [1, len(x), 1], [1, 3, 1], [1, 1, 1], [(0, 0)] * 3, "f32", "f32", select
        )
        x = np.array(x, np.float32).reshape(1, -1, 1)
        src = np.array(src, np.float32).reshape(1, -1, 1)
        assert "sas_acc" in check_values(text, [[x, src, np.float32(-0.0)]] * DEVICES)
        return run_level_s(text, [x, src, np.float32(-0.0)]).reshape(-1)

    tiny = 2.0**-24
    got = run([0, 0, 9, 0, -1], [tiny, tiny, 1.0], "GE")
    assert same_values(got, np.array([-0.0, -0.0, 1 + 2.0**-23, -0.0, -0.0], np.float32)), got
    assert same_values(run([5, 5, 5], [1.0], "GE"), np.array([1, -0.0, -0.0], np.float32))
    assert same_values(run([5, 5, 5], [1.0], "GT"), np.array([-0.0, -0.0, 1], np.float32))
    got = run([1, np.nan, 0, 7], [1.0, 2.0], "GE")  # windows [1 nan 0], [nan 0 7]
    assert same_values(got, np.array([-0.0, -0.0, 1, 2], np.float32)), got


def lower(text: str):
    module = parse(text)
    LowerToTpuPass().apply(make_context(), module)
    return module


def test_a_kernel_missing_a_dma_wait_is_reported() -> None:
    """Seeded bug: without the wait for an image's source DMA, the row loads read a slot
    the DMA is still writing: the simulator reports it (a race, or bytes never waited
    for)."""
    text, out = sas_program(
        [3, 5, 4, 2], [1, 2, 2, 1], [1, 2, 2, 1], [(0, 0)] * 4, "f32", "f32", "GE"
    )
    module = lower(text)
    waits = [o for o in module.walk() if isinstance(o, tpu.DMAWaitOp)]
    sources = [w for w in waits if "halo_ov" in str(w.ref) or "halo_oslot" in str(w.ref)]
    assert sources, "the source slot's wait"
    sources[0].detach()
    sources[0].erase()
    rng = np.random.default_rng(0)
    args = [[values(rng, [3, 5, 4, 2], "f32"), values(rng, out, "f32"), np.float32(0)]] * DEVICES
    (kernel,) = [o for o in module.body.block.ops if o.name == "func.func"]
    k, m, s = (a.value.data for a in kernel.attributes["tpu.io"].data)
    with pytest.raises(InterpreterError, match="data race on buffer 'halo_ov'"):
        run_level_t(module, [list(row) + [None] * (m + s) for row in args])


def test_too_large_for_vmem_keeps_the_expansion() -> None:
    """An image whose slots exceed half the VMEM: the expansion, as before."""
    text, _ = sas_program(
        [1, 8, 8, 4], [1, 2, 2, 1], [1, 2, 2, 1], [(0, 0)] * 4, "f32", "f32", "GE"
    )
    (op,) = [o for o in parse(text).walk() if isinstance(o, hlo.SelectAndScatterOp)]
    p = select_scatter.pooling(op)
    assert p is not None and select_scatter.kernel_pooling(op, 2 * p.slots_bytes()) is not None
    assert select_scatter.kernel_pooling(op, 2 * p.slots_bytes() - 2) is None
    module = parse(text)
    LowerToTpuPass(vmem_limit=2 * p.slots_bytes() - 2).apply(make_context(), module)
    assert "sas_acc" not in str(module)


def plain_program(shape, window, strides, padding, dtype: str) -> str:
    """One device's select_and_scatter (GE, zero init)."""
    out = hlo.window_result_shape(
        shape, window, strides, [1] * len(shape), [1] * len(shape), *zip(*padding, strict=True)
    )
    x, g = tensor(shape, dtype), tensor(out, dtype)
    pads = "[" + ", ".join(f"[{lo}, {hi}]" for lo, hi in padding) + "]"
    return f"""func.func @main(%x: {x}, %g: {g}, %z: tensor<{dtype}>) -> {x} {{
  %r = hlo.select_and_scatter %x, %g, %z, select = GE, scatter = add, window = {window}, strides = {strides}, padding = {pads} : ({x}, {g}, tensor<{dtype}>) -> {x}
  func.return %r : {x}
}}"""


MAX_POOL = (
    [8, 112, 112, 64],
    [1, 3, 3, 1],
    [1, 2, 2, 1],
    [(0, 0), (1, 1), (1, 1), (0, 0)],
)


@pytest.mark.parametrize("chip", ["v5e", "v5p"])
@pytest.mark.parametrize(
    "shape, window, strides, padding, dtype",
    [
        (*MAX_POOL, "bf16"),
        (*MAX_POOL, "f32"),
        ([4, 56, 56, 128], [1, 3, 3, 1], [1, 1, 1, 1], [(0, 0), (1, 1), (1, 1), (0, 0)], "bf16"),
        ([2, 32, 32, 256], [1, 2, 2, 1], [1, 2, 2, 1], [(0, 0)] * 4, "f32"),
        ([16, 1000, 64], [1, 3, 1], [1, 2, 1], [(0, 0), (1, 1), (0, 0)], "bf16"),
    ],
)
def test_level_s_charges_the_kernel(chip, shape, window, strides, padding, dtype) -> None:
    """Level S's step (the kernel's time from `Pooling`'s counts) within 2% of level T's
    simulated step of the kernel, on real sizes: the max-pool gradient of ResNet's stem
    and others, HBM-bound and compute-bound (before: level S charged the expansion,
    40-75x the HBM roofline)."""
    s, t = level_s_and_t(plain_program(shape, window, strides, padding, dtype), chip)
    assert abs(t - s) <= 0.02 * t, (t, s)


def level_s_and_t(text: str, chip: str) -> tuple[float, float]:
    """Level S's step and level T's simulated step of the kernel (timing only)."""
    import shardc

    s = shardc.run(text, timing_only=True, chip=chip).report["step_time_s"]
    kernel = shardc.compile(text, f"lower-to-tpu{{chip={chip}}}")
    assert "sas_acc" in str(kernel)
    return s, shardc.run(kernel, timing_only=True, chip=chip).report["step_time_s"]


@SETTINGS
@given(poolings(), st.sampled_from(["v5e", "v5p", "v4"]))
def test_level_s_charges_the_kernel_on_drawn_poolings(case, chip: str) -> None:
    """Every drawn pooling (few or many images, masked columns, edge rows, types whose
    accumulator is wider): level S's step within 2% of level T's."""
    shape, window, strides, padding, dtype, _, _ = case
    s, t = level_s_and_t(plain_program(shape, window, strides, padding, dtype), chip)
    assert abs(t - s) <= 0.02 * t, (t, s)
