"""
Level S charges the vector ops a lowered ring reduction spends combining partial results
(hardware/cost.py `ring_reduction_ops`, `CostModel.combine_ops`): each test counts the
level-T simulator's vector ops of the lowered kernel (the collective's row of its report)
against the cost model's count, for real and complex element types, every reduction kind,
one or several axes, groups, tails, sync and `_start`; and checks that level S's
collective time carries them: a complex product's combine (13 vector ops per complex<f32>
element, its fma in f64) costs more than a complex sum's (2), at both levels.
"""

from __future__ import annotations

import pytest
from shardc.dialects import collective, spmd
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel
from shardc.interpreter.testing import parse
from shardc.tests.unit.test_lower_remainder import simulated_vpu_ops
from shardc.tests.unit.test_lower_to_tpu import one_op, start_done

AR = "%r = collective.all_reduce {k} %a on {on} : tensor<{s}x{{t}}>"
RS = "%r = collective.reduce_scatter {k} %a on {on}, dim = 0 : (tensor<{s}x{{t}}>) -> tensor<{r}x{{t}}>"
CASES = [
    # (dtype, kind, mesh, on, operand shape, result shape (None: all_reduce), async)
    ("f32", "add", '"x"=4', '@m["x"]', "8x128", None, False),
    ("i32", "max", '"x"=4', '@m["x"]', "32x16", "8x16", True),
    ("bf16", "add", '"a"=2, "b"=4', '@m["a", "b"]', "8x128", None, False),
    ("bf16", "max", '"x"=4', '@m["x"]', "5x3", None, False),
    ("f16", "add", '"a"=2, "b"=2, "c"=2', '@m["c", "a", "b"]', "32x8", "4x8", False),
    ("i32", "min", '"x"=4', "groups [[0, 2], [3, 1]]", "6x5", None, False),
    ("complex<f32>", "add", '"x"=4', '@m["x"]', "8x128", None, False),
    ("complex<f32>", "mul", '"x"=4', '@m["x"]', "8x128", None, True),
    ("complex<f64>", "mul", '"x"=4', '@m["x"]', "32x16", "8x16", False),
    ("complex<f32>", "max", '"x"=4', '@m["x"]', "5x3", None, False),
    ("complex<f32>", "mul", '"a"=2, "b"=4', '@m["a", "b"]', "8x128", None, False),
    ("complex<f64>", "min", '"a"=2, "b"=2', '@m["a", "b"]', "16x8", None, True),
    ("complex<f32>", "min", '"x"=4', "groups [[0, 2], [3, 1]]", "8x6", "4x6", False),
]


def case_text(dtype: str, kind: str, mesh: str, on: str, shape: str, res, asynchronous) -> str:
    op = (AR if res is None else RS).format(k=kind, on=on, s=shape, r=res)
    if asynchronous:
        op = start_done(op, res or shape)
    devices = 1
    for part in mesh.split(","):
        devices *= int(part.split("=")[1])
    return one_op(devices, dtype, shape, res or shape, op, mesh=mesh)


def combine_ops(text: str, chip: str = "v5e") -> float:
    """Level S's count of the combine vector ops of `text`'s collectives, per device."""
    module = parse(text)
    (function,) = [o for o in module.walk() if o.name == "func.func"]
    model = CostModel(get_chip(chip), spmd.find_mesh(function))
    return sum(
        model.combine_ops(op, i)
        for op in module.walk()
        if isinstance(op, collective.CollectiveOp)
        for i in range(len(op.operands))
    )


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{c[3]}-{c[4]}" for c in CASES])
def test_level_s_counts_the_combines_the_lowering_emits(case) -> None:
    text = case_text(*case)
    ops = combine_ops(text)
    assert ops > 0
    assert simulated_vpu_ops(text) == ops


@pytest.mark.parametrize("dtype, per", [("complex<f32>", 13), ("complex<f64>", 6)])
def test_a_complex_product_costs_its_combine_more_than_a_sum(dtype: str, per: int) -> None:
    """Same bytes, same rings: level S's all_reduce mul takes (per - 2) vector ops per
    combined element longer than its add (the parts' two sums), at the VPU's rate."""
    chip = get_chip("v5e")
    times = {}
    for kind in ("add", "mul"):
        text = case_text(dtype, kind, '"x"=4', '@m["x"]', "64x128", None, False)
        module = parse(text)
        (function,) = [o for o in module.walk() if o.name == "func.func"]
        (op,) = [o for o in module.walk() if isinstance(o, collective.CollectiveOp)]
        times[kind] = CostModel(chip, spmd.find_mesh(function)).collective_time(op)
        assert combine_ops(text) == 3 * 64 * 128 // 4 * (per if kind == "mul" else 2)
    extra = 3 * 64 * 128 // 4 * (per - 2) / chip.vpu_flops
    assert times["mul"] - times["add"] == pytest.approx(extra, rel=1e-9)
