"""
`lower-to-tpu` of `hlo.pad` and `hlo.reverse` (lowering/windows.py) against level S, bit
for bit on every device, on hypothesis-drawn shapes, element types and paddings (negative
edges, interior padding whose stride does and does not divide the result) and reversed
dimensions; the pad without interior padding moves level S's bytes only (its fills write
the frame, not the whole result).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from shardc.tests.unit.test_lower_movement import DTYPES, SETTINGS, check, program, randoms, tensor


def pad_program(shape, dtype, low, high, interior) -> tuple[str, list[int]]:
    out = [
        lo + n + max(n - 1, 0) * i + hi
        for n, lo, hi, i in zip(shape, low, high, interior, strict=True)
    ]
    body = (
        f"%r0 = hlo.pad %a0, %a1, low = {low}, high = {high}, interior = {interior} : "
        f"({tensor(shape, dtype)}, tensor<{dtype}>) -> {tensor(out, dtype)}"
    )
    return program([tensor(shape, dtype), f"tensor<{dtype}>"], [tensor(out, dtype)], body), out


@st.composite
def pads(draw):
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 9)) for _ in range(rank)]
    if draw(st.booleans()):
        shape[-1] = draw(st.sampled_from([128, 256]))
    interior = [draw(st.integers(0, 2)) if draw(st.booleans()) else 0 for _ in shape]
    low, high = [], []
    for n, i in zip(shape, interior, strict=True):
        stretched = n + (n - 1) * i
        lo = draw(st.integers(-stretched, 4))
        hi = draw(st.integers(-(stretched + lo) if stretched + lo > 0 else 0, 4))
        low.append(lo)
        high.append(hi)
    return shape, draw(st.sampled_from(DTYPES)), low, high, interior


@SETTINGS
@given(pads())
def test_pad_equals_level_s(case) -> None:
    shape, dtype, low, high, interior = case
    text, out = pad_program(shape, dtype, low, high, interior)
    values = [np.asarray(v).reshape(()) for v in randoms([1], dtype, 2)]
    inputs = [[a, v] for a, v in zip(randoms(shape, dtype, 1), values, strict=True)]
    kernel = check(text, inputs)
    if all(i == 0 for i in interior) and min(*low, *high) >= 0:
        # the frame only: a fill per padded edge (none without positive padding), never
        # of the whole result
        padded = any(x > 0 for x in (*low, *high))
        assert ("pad_edge" in kernel) == padded
        assert ("pad_out" in kernel) == padded


@SETTINGS
@given(
    st.lists(st.integers(1, 6), min_size=1, max_size=3),
    st.sampled_from(DTYPES),
    st.data(),
)
def test_reverse_equals_level_s(shape: list[int], dtype: str, data) -> None:
    dims = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1))))
    if data.draw(st.booleans()):
        shape[-1] = 128
    body = f"%r0 = hlo.reverse %a0, dims = {dims} : {tensor(shape, dtype)}"
    text = program([tensor(shape, dtype)], [tensor(shape, dtype)], body)
    check(text, [[a] for a in randoms(shape, dtype, 1)])


def window_program(shape, dtype, kind, window, strides, padding, base, wdil) -> str:
    out = []
    for n, w, s, (lo, hi), b, d in zip(shape, window, strides, padding, base, wdil, strict=True):
        out.append(max(0, ((n - 1) * b + 1 + lo + hi - ((w - 1) * d + 1)) // s + 1))
    body = (
        f"%r0 = hlo.reduce_window {kind} %a0, %a1, window = {window}, strides = {strides}, "
        f"base_dilations = {base}, window_dilations = {wdil}, padding = {padding} : "
        f"({tensor(shape, dtype)}, tensor<{dtype}>) -> {tensor(out, dtype)}"
    )
    return program([tensor(shape, dtype), f"tensor<{dtype}>"], [tensor(out, dtype)], body)


@st.composite
def windows(draw):
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 7)) for _ in range(rank)]
    if draw(st.booleans()):
        shape[-1] = 128
    window, strides, padding, base, wdil = [], [], [], [], []
    for n in shape:
        b = draw(st.sampled_from([1, 1, 2]))
        lo, hi = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        d = draw(st.sampled_from([1, 1, 2]))
        span = (n - 1) * b + 1 + lo + hi
        w = draw(st.integers(1, max(1, min(3, (span - 1) // d + 1))))
        window.append(w)
        strides.append(draw(st.integers(1, 3)))
        padding.append([lo, hi])
        base.append(b)
        wdil.append(d)
    kind = draw(st.sampled_from(["add", "mul", "max", "min"]))
    return shape, draw(st.sampled_from(DTYPES)), kind, window, strides, padding, base, wdil


@SETTINGS
@given(windows())
def test_reduce_window_equals_level_s(case) -> None:
    """Every kind, element type, window, stride, padding and dilation: bit-exact (level
    S's order of combination, bf16/f16 accumulated in f32 and rounded once)."""
    shape, dtype = case[0], case[1]
    text = window_program(*case)
    values = [np.asarray(v).reshape(()) for v in randoms([1], dtype, 2)]
    inputs = [[a, v] for a, v in zip(randoms(shape, dtype, 1), values, strict=True)]
    kernel = check(text, inputs)
    assert "hlo." not in kernel.split("}}}", 1)[-1]


@st.composite
def poolings(draw):
    """Reduce_windows the one-kernel lowering takes (lowering/window_kernel.py):
    channels-last [n, h, w, c] / [n, w, c] / [n, w], windows, strides, window dilations
    and padding (halos at both edges) on the spatial dimensions only, odd sizes."""
    rank = draw(st.integers(2, 4))
    shape = [draw(st.integers(1, 3))] + [draw(st.integers(1, 9)) for _ in range(rank - 1)]
    spatial = [1] if rank < 4 else [1, 2]
    window, strides, padding, wdil = [1] * rank, [1] * rank, [[0, 0]] * rank, [1] * rank
    for d in spatial:
        lo, hi = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        wdil[d] = draw(st.sampled_from([1, 1, 2]))
        span = shape[d] + lo + hi
        window[d] = draw(st.integers(1, max(1, min(3, (span - 1) // wdil[d] + 1))))
        strides[d] = draw(st.integers(1, 3))
        padding[d] = [lo, hi]
    kind = draw(st.sampled_from(["add", "mul", "max", "min"]))
    dtype = draw(st.sampled_from(["f32", "bf16", "f16", "i32", "i64"]))
    return shape, dtype, kind, window, strides, padding, [1] * rank, wdil


@SETTINGS
@given(poolings())
def test_pooling_is_one_kernel_bit_exact_with_level_s(case) -> None:
    """The operand read once per image into an init-framed VMEM slot, each window offset
    a shifted load combined in level S's order: bit-exact, no race or bounds error (the
    simulator checks both), no strided slice through HBM."""
    shape, dtype = case[0], case[1]
    text = window_program(*case)
    values = [np.asarray(v).reshape(()) for v in randoms([1], dtype, 5)]
    inputs = [[a, v] for a, v in zip(randoms(shape, dtype, 6), values, strict=True)]
    kernel = check(text, inputs)
    assert "%halo_xv = tpu.alloc" in kernel and "slice_block" not in kernel
