"""
Level S charges the vector ops a lowered ring reduction spends combining partial results
(hardware/cost.py `rs_combine_time`, its ops per element `ring_combine_ops`): for real and
complex element types, every reduction kind, one or several axes, explicit groups, sync
and `_start`, level S's collective time is the level-T simulator's step time of the
kernel `lower-to-tpu` makes; and a complex product's combine (13 vector ops per
complex<f32> element, its fma in f64) costs more than a complex sum's (2), by exactly
those ops at the VPU's rate, at both levels.
"""

from __future__ import annotations

import pytest
from shardc.dialects import collective, spmd
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel, ring_combine_ops
from shardc.interpreter.testing import parse
from shardc.tests.unit.test_lower_to_tpu import one_op, start_done
from xdsl.dialects.builtin import ComplexType, f32, f64

AR = "%r = collective.all_reduce {k} %a on {on} : tensor<{s}x{{t}}>"
RS = "%r = collective.reduce_scatter {k} %a on {on}, dim = 0 : (tensor<{s}x{{t}}>) -> tensor<{r}x{{t}}>"
CASES = [
    # (dtype, kind, mesh, on, operand shape, result shape (None: all_reduce), async)
    ("f32", "add", '"x"=4', '@m["x"]', "8x128", None, False),
    ("i32", "max", '"x"=4', '@m["x"]', "32x16", "8x16", True),
    ("bf16", "add", '"a"=2, "b"=4', '@m["a", "b"]', "8x128", None, False),
    ("f16", "add", '"a"=2, "b"=2, "c"=2', '@m["c", "a", "b"]', "32x8", "4x8", False),
    ("i32", "min", '"x"=4', "groups [[0, 2], [3, 1]]", "8x5", None, False),
    ("complex<f32>", "add", '"x"=4', '@m["x"]', "8x128", None, False),
    ("complex<f32>", "mul", '"x"=4', '@m["x"]', "8x128", None, True),
    ("complex<f64>", "mul", '"x"=4', '@m["x"]', "32x16", "8x16", False),
    ("complex<f32>", "max", '"x"=4', '@m["x"]', "8x4", None, False),
    ("complex<f32>", "mul", '"a"=2, "b"=4', '@m["a", "b"]', "8x128", None, False),
    ("complex<f64>", "min", '"a"=2, "b"=2', '@m["a", "b"]', "16x8", None, True),
    ("complex<f32>", "min", '"x"=4', "groups [[0, 2], [3, 1]]", "8x6", "4x6", False),
]


def case_text(dtype: str, kind: str, mesh: str, on: str, shape: str, res, asynchronous) -> str:
    op = (AR if res is None else RS).format(k=kind, on=on, s=shape, r=res)
    if asynchronous:
        op = start_done(op, res or shape)
    return one_op(0, dtype, shape, res or shape, op, mesh=mesh)


def level_s(text: str, chip: str = "v5e") -> float:
    """Level S's time of `text`'s one collective."""
    module = parse(text)
    (function,) = [o for o in module.walk() if o.name == "func.func"]
    model = CostModel(get_chip(chip), spmd.find_mesh(function))
    (op,) = [o for o in module.walk() if isinstance(o, collective.CollectiveOp)]
    return model.collective_time(op)


def level_t(text: str, chip: str = "v5e") -> float:
    """The level-T simulator's step time of the kernel `lower-to-tpu` makes of `text`."""
    import shardc

    kernel = shardc.compile(text, f"lower-to-tpu{{chip={chip}}}")
    return shardc.run(kernel, timing_only=True, chip=chip).report["step_time_s"]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{c[3]}-{c[4]}" for c in CASES])
def test_level_s_times_the_combines_the_lowering_emits(case) -> None:
    text = case_text(*case)
    assert level_s(text) == pytest.approx(level_t(text), rel=1e-9)


def test_ring_combine_ops_counts_a_complex_pairs_op() -> None:
    """A real sum 1 op (bf16: widened first, 2), a complex sum its two parts', a complex
    product or compare the pair's loop body."""
    assert ring_combine_ops(f32, "add") == 1
    assert ring_combine_ops(ComplexType(f32), "add") == 2
    assert ring_combine_ops(ComplexType(f32), "mul") == 13
    assert ring_combine_ops(ComplexType(f64), "mul") == 15
    assert ring_combine_ops(ComplexType(f32), "max") == 15


@pytest.mark.parametrize("dtype, per", [("complex<f32>", 13), ("complex<f64>", 15)])
def test_a_complex_product_costs_its_combine_more_than_a_sum(dtype: str, per: int) -> None:
    """Same bytes, same rings (4 devices of v5e): the all_reduce mul takes longer than its
    add by at least one ring step's (per - 2) extra vector ops per element of a quarter
    (the other steps' may hide behind transfers), and at most three steps'; level T
    agrees."""
    chip = get_chip("v5e")
    times = {}
    for kind in ("add", "mul"):
        text = case_text(dtype, kind, '"x"=4', '@m["x"]', "64x128", None, False)
        times[kind] = level_s(text)
        assert times[kind] == pytest.approx(level_t(text), rel=1e-9)
    step = 64 * 128 // 4 * (per - 2) / chip.vpu_flops
    assert step <= times["mul"] - times["add"] <= 3 * step * (1 + 1e-9)
