"""
`lower-to-tpu` of hlo.sort and hlo.top_k (lowering/sorting.py: a bitonic network in
VMEM, top_k by selection passes where that is less work): differential against level S bit for bit on hypothesis-generated shapes, sorted
dimensions, comparators (LT / GT, TOTALORDER), operand counts and element types, with
ties, NaNs, infinities and signed zeros in the keys (level S's order: stable, NaNs last
for LT and first for GT, -0 ties +0 unless TOTALORDER); the VMEM refusal names the op,
the blocks and the capacity. Longer rows (odd lengths: padding to a power of two; k
small and large: both top_k lowerings) on their own.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.diagnostics import OpPassError
from shardc.dialects import make_context
from shardc.interpreter.testing import parse
from shardc.interpreter.values import dtype_of
from shardc.lowering.lower_to_tpu import LowerToTpuPass
from shardc.tests.unit.test_lower_movement import DEVICES, check, parse_type

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEY_TYPES = ["f32", "bf16", "f16", "f64", "f8E4M3FN", "i32", "i8", "ui8", "ui32", "i64", "i1"]
SPECIAL = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.0]


def ty(shape, dtype: str) -> str:
    return f"tensor<{''.join(f'{d}x' for d in shape)}{dtype}>"


def keys(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    """Few distinct values (ties), floats with NaNs of both signs, infinities, +-0."""
    np_type = dtype_of(parse_type(dtype))
    if dtype == "i1":
        return rng.integers(0, 2, size=shape).astype(bool)
    if np.dtype(np_type).kind not in "iu":
        return rng.choice(np.array(SPECIAL, np.float64), size=shape).astype(np_type)
    info = np.iinfo(np_type)
    lo, hi = int(info.min), int(info.max)
    pool = [lo, hi, 0, 1, 3, hi // 2, max(lo, lo // 2 - 1)]
    picks = rng.integers(0, len(pool), size=shape)
    return np.array([pool[i] for i in picks.reshape(-1)], dtype=np_type).reshape(shape)


def per_device(args: list[str], results: list[str], line: str) -> str:
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(args))
    n = len(results)
    rets = ", ".join(f"%r#{i}" for i in range(n)) if n > 1 else "%r"
    head = f"%r:{n}" if n > 1 else "%r"
    return f"""spmd.mesh @m = <["x"={DEVICES}]>
func.func @main({params}) -> ({", ".join(results)}) attributes {{spmd.per_device_io}} {{
  {head} = {line}
  func.return {rets} : {", ".join(results)}
}}"""


@SETTINGS
@given(
    st.lists(st.integers(1, 6), min_size=1, max_size=3),
    st.data(),
    st.sampled_from(["LT", "GT", "LT TOTALORDER", "GT TOTALORDER"]),
    st.lists(st.sampled_from(KEY_TYPES), min_size=1, max_size=3),
    st.integers(0, 2**16),
)
def test_sort_is_level_s_bit_for_bit(shape, data, comparator, dtypes, seed) -> None:
    dim = data.draw(st.integers(0, len(shape) - 1))
    if "TOTALORDER" in comparator and dtypes[0][0] not in "fb":
        comparator = comparator.split()[0]
    types = [ty(shape, d) for d in dtypes]
    names = ", ".join(f"%a{i}" for i in range(len(types)))
    sig = f"({', '.join(types)}) -> ({', '.join(types)})"
    line = f"hlo.sort {names}, dim = {dim}, comparator = {comparator}, stable : {sig}"
    rng = np.random.default_rng(seed)
    inputs = [[keys(rng, shape, d) for d in dtypes] for _ in range(DEVICES)]
    check(per_device(types, types, line), inputs)


@SETTINGS
@given(
    st.lists(st.integers(1, 5), min_size=0, max_size=2),
    st.integers(1, 9),
    st.data(),
    st.sampled_from(["f32", "bf16", "i32", "ui8", "f64"]),
    st.integers(0, 2**16),
)
def test_top_k_is_level_s_bit_for_bit(batch, n, data, dtype, seed) -> None:
    k = data.draw(st.integers(1, n))
    src, out = ty([*batch, n], dtype), [ty([*batch, k], dtype), ty([*batch, k], "i32")]
    line = f"hlo.top_k %a0, k = {k} : {src} -> ({', '.join(out)})"
    rng = np.random.default_rng(seed)
    inputs = [[keys(rng, [*batch, n], dtype)] for _ in range(DEVICES)]
    check(per_device([src], out, line), inputs)


def test_a_row_too_long_for_vmem_is_refused_naming_the_blocks() -> None:
    t = ty([4, 65536], "f32")
    text = per_device([t], [t], f"hlo.sort %a0, dim = 1, comparator = LT : ({t}) -> ({t})")
    with pytest.raises(
        OpPassError, match=r"hlo.sort: ordering one row in VMEM \(blocks \[1, 65536, 1\]"
    ):
        LowerToTpuPass(vmem_limit=1 << 20).apply(make_context(), parse(text))


@SETTINGS
@given(
    st.integers(1, 3),
    st.integers(2, 70),
    st.integers(1, 2),
    st.sampled_from(["LT", "GT", "LT TOTALORDER", "GT TOTALORDER"]),
    st.sampled_from(["f32", "bf16", "f16", "i32", "ui8", "ui32", "i8", "i1"]),
    st.integers(0, 2**16),
)
def test_long_rows_sort_through_the_network_bit_for_bit(
    rows, n, inner, comparator, dtype, seed
) -> None:
    """Every stage of the network, padding (n not a power of two) sorted after the row,
    a payload moved with the keys, ties in their order: level S's bits."""
    if "TOTALORDER" in comparator and dtype[0] not in "fb":
        comparator = comparator.split()[0]
    shape = [rows, n, inner]
    types = [ty(shape, dtype), ty(shape, "i32")]
    sig = f"({', '.join(types)}) -> ({', '.join(types)})"
    line = f"hlo.sort %a0, %a1, dim = 1, comparator = {comparator}, stable : {sig}"
    rng = np.random.default_rng(seed)
    inputs = [
        [keys(rng, shape, dtype), rng.integers(-9, 9, size=shape).astype(np.int32)]
        for _ in range(DEVICES)
    ]
    kernel = check(per_device(types, types, line), inputs)
    assert "sort_pairs" in kernel


@SETTINGS
@given(
    st.integers(1, 4),
    st.integers(2, 80),
    st.data(),
    st.sampled_from(["f32", "bf16", "i32", "ui8", "f16"]),
    st.integers(0, 2**16),
)
def test_top_k_of_long_rows_bit_for_bit(batch, n, data, dtype, seed) -> None:
    """Small k by selection passes, k near n by the network: level S's bits and order
    (lowest index first among equal keys)."""
    k = data.draw(st.integers(1, n))
    src, out = ty([batch, n], dtype), [ty([batch, k], dtype), ty([batch, k], "i32")]
    line = f"hlo.top_k %a0, k = {k} : {src} -> ({', '.join(out)})"
    rng = np.random.default_rng(seed)
    inputs = [[keys(rng, [batch, n], dtype)] for _ in range(DEVICES)]
    check(per_device([src], out, line), inputs)


@pytest.mark.parametrize(
    "shape, dtypes, comparator",
    [
        ([8, 1024], ["f32", "i32"], "GT"),  # bench/lower_speed.py's row
        ([3, 70, 2], ["bf16"], "LT"),  # padding, inner positions
        ([2, 33], ["f16", "ui8", "f32"], "LT TOTALORDER"),  # unsigned operand's padding
        ([4, 64], ["ui32"], "GT"),
        ([5, 20], ["i8", "i32"], "LT"),
        ([16], ["f8E4M3FN"], "GT TOTALORDER"),
    ],
)
def test_level_s_charges_the_network_the_lowering_runs(shape, dtypes, comparator) -> None:
    """hardware/cost.py's `sort_network_work` (what level S charges a sort) is the lowered
    kernel's VPU ops exactly, and its VPU + VMEM time the simulator's vector compute
    time: the two cannot drift. And level S's step is level T's within 10%."""
    from shardc.dialects import hlo

    types = [ty(shape, d) for d in dtypes]
    sig = f"({', '.join(types)}) -> ({', '.join(types)})"
    names = ", ".join(f"%a{i}" for i in range(len(types)))
    dim = 1 if len(shape) > 1 else 0
    line = f"hlo.sort {names}, dim = {dim}, comparator = {comparator}, stable : {sig}"
    text = per_device(types, types, line).replace(f'"x"={DEVICES}', '"x"=1')
    _assert_network_charged(text, hlo.SortOp)


def _assert_network_charged(text: str, op_type: type) -> None:
    import shardc
    from shardc.hardware.chips import get_chip
    from shardc.hardware.cost import sort_network_work, vmem_time

    (op,) = [o for o in parse(text).walk() if isinstance(o, op_type)]
    ops, vmem = sort_network_work(op)
    chip = get_chip("v5e")
    kernel = shardc.compile(text, "lower-to-tpu{chip=v5e}")
    t = shardc.run(kernel, timing_only=True, chip="v5e").report
    assert sum(row["flops"] for row in t["ops"]) == ops
    want = ops / chip.vpu_flops + vmem_time(chip, vmem)
    assert t["vector_compute_time_s"] == pytest.approx(want, rel=1e-9)
    s = shardc.run(text, timing_only=True, chip="v5e").report
    assert s["ops"][0]["flops"] == ops
    assert 0.9 < t["step_time_s"] / s["step_time_s"] < 1.1


def test_level_s_charges_top_k_by_the_network() -> None:
    """A top_k with k near n runs the network; its index comes from the keys."""
    from shardc.dialects import hlo

    src, out = ty([4, 100], "f32"), [ty([4, 90], "f32"), ty([4, 90], "i32")]
    line = f"hlo.top_k %a0, k = 90 : {src} -> ({', '.join(out)})"
    text = per_device([src], out, line).replace(f'"x"={DEVICES}', '"x"=1')
    _assert_network_charged(text, hlo.TopKOp)
