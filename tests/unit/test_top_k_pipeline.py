"""
top_k by selection over double-buffered row blocks (lowering/sorting.py `_lower_select`,
issue 15 item 5): block t + 1's fetch runs under block t's selection, as a real kernel
pipelines it, so level T is within 10% of level S's roofline (it was 1.75 fetching,
selecting and writing back one block at a time); the values stay level S's bit for bit
across blocks (the prefetch into the other slot, the last block without one).
"""

from __future__ import annotations

import numpy as np
import pytest
import shardc
from hypothesis import given
from hypothesis import strategies as st
from shardc.hardware.cost import SELECT_STEPS
from shardc.tests.unit.test_lower_movement import DEVICES
from shardc.tests.unit.test_lower_sorting import SETTINGS, check, keys, per_device, ty


@SETTINGS
@given(
    st.sampled_from([SELECT_STEPS, 2 * SELECT_STEPS, 3 * SELECT_STEPS + 1, 7]),
    st.integers(4, 40),  # k <= 3 of n >= 4: selection, not the network
    st.integers(1, 3),
    st.sampled_from(["f32", "bf16", "i32"]),
    st.integers(0, 2**16),
)
def test_top_k_over_many_row_blocks_is_level_s_bit_for_bit(rows, n, k, dtype, seed) -> None:
    k = min(k, n)
    src, out = ty([rows, n], dtype), [ty([rows, k], dtype), ty([rows, k], "i32")]
    line = f"hlo.top_k %a0, k = {k} : {src} -> ({', '.join(out)})"
    rng = np.random.default_rng(seed)
    inputs = [[keys(rng, [rows, n], dtype)] for _ in range(DEVICES)]
    kernel = check(per_device([src], out, line), inputs)
    assert "topk_slot" in kernel  # the double-buffered loop


ROUTER = per_device(
    [ty([2048, 128], "f32")],
    [ty([2048, 2], "f32"), ty([2048, 2], "i32")],
    "hlo.top_k %a0, k = 2 : tensor<2048x128xf32> -> (tensor<2048x2xf32>, tensor<2048x2xi32>)",
).replace(f'"x"={DEVICES}', '"x"=1')
"""bench/lowered_ops.py's row: a MoE router's top 2 of 128 experts, 2048 tokens."""


@pytest.mark.parametrize("chip", ["v5e", "v5p"])
def test_router_top_k_level_t_is_within_10_percent_of_level_s(chip: str) -> None:
    s = shardc.run(ROUTER, timing_only=True, chip=chip).report["step_time_s"]
    kernel = shardc.compile(ROUTER, "lower-to-tpu", chip=chip)
    assert str(kernel).count("topk_slot") >= 1
    t = shardc.run(kernel, timing_only=True, chip=chip).report["step_time_s"]
    assert 0.9 <= t / s <= 1.1, (s, t)
