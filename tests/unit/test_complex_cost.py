"""
Level S charges what `lower-to-tpu` computes of a complex op (issue 15 item 5): the one
loop lowering/complex_pairs.py makes of a complex elementwise op on its parts has
`hardware/cost.py` `COMPLEX_PART_OPS` vector ops per element (counted in the loop and in
the level-T simulator's charge), level S plans the same loops (`hardware/kernel.py`
`complex_kernels`) and charges the parts' DMAs (`part_dma_bytes`); the step times agree.
"""

from __future__ import annotations

import pytest
import shardc
from shardc.dialects import hlo
from shardc.hardware.chips import CHIPS
from shardc.hardware.cost import COMPLEX_PART_OPS, complex_part_ops, elementwise_vpu_ops
from shardc.hardware.kernel import complex_dot_kernels, complex_kernels
from shardc.interpreter.testing import parse
from shardc.lowering import complex_pairs
from shardc.tests.unit.test_lower_element_types import program, ty
from shardc.tests.unit.test_lower_remainder import simulated_vpu_ops
from xdsl.dialects import func

SHAPE = (16, 256)


def complex_program(name: str, part: str, shape=SHAPE) -> str:
    t, rt = ty(shape, f"complex<{part}>"), ty(shape, part)
    if name == "hlo.abs":
        return program([t], rt, f"hlo.abs %a0 : ({t}) -> {rt}")
    if name in ("hlo.compare", "hlo.select"):
        kind = name.removeprefix("hlo.")
        return moving_program(kind, f"complex<{part}>", "i1", shape)
    if name in ("hlo.neg", "hlo.exp", "hlo.sqrt", "hlo.log"):
        return program([t], t, f"{name} %a0 : {t}")
    return program([t, t], t, f"{name} %a0, %a1 : {t}")


def expanded(text: str) -> list[hlo.FusionOp]:
    module = parse(text, "complex.mlir")
    for f in list(module.walk()):
        if isinstance(f, func.FuncOp):
            complex_pairs.expand(f, CHIPS["v5e"])
    return [o for o in module.walk() if isinstance(o, hlo.FusionOp)]


@pytest.mark.parametrize(("name", "part"), sorted(COMPLEX_PART_OPS))
def test_the_table_is_the_loop_the_lowering_makes(name: str, part: str) -> None:
    """One loop (level S plans one), `COMPLEX_PART_OPS` vector ops in it (each op's
    `elementwise_vpu_ops`: a log's atan2 is its vector code), as many charged by the
    level-T simulator and by level S per element."""
    text = complex_program(name, part)
    (fusion,) = expanded(text)
    body = [o for o in fusion.body.block.ops if not isinstance(o, hlo.ReturnOp)]
    ops = sum(elementwise_vpu_ops(o) for o in body)
    assert ops == COMPLEX_PART_OPS[(name, part)]
    (op,) = [o for o in parse(text, "c.mlir").walk() if o.name == name]
    assert complex_part_ops(op) == ops
    assert len(complex_kernels(CHIPS["v5e"], op)) == 1
    n = SHAPE[0] * SHAPE[1]
    assert simulated_vpu_ops(text) == ops * n
    rows = shardc.run(text, timing_only=True, chip="v5e").report["ops"]
    assert sum(row["flops"] for row in rows) == ops * n


@pytest.mark.parametrize("chip", ["v5e", "v5p"])
@pytest.mark.parametrize(
    ("name", "part"),
    [
        ("hlo.add", "f32"),
        ("hlo.mul", "f32"),
        ("hlo.div", "f64"),
        ("hlo.abs", "f32"),
        ("hlo.exp", "f32"),
        ("hlo.exp", "f64"),
        ("hlo.sqrt", "f32"),
        ("hlo.sqrt", "f64"),
        ("hlo.log", "f32"),
        ("hlo.log", "f64"),
    ],
)
def test_level_s_step_is_level_t_step(name: str, part: str, chip: str) -> None:
    """The parts' DMAs and the loop, at a size where both matter: within 10%."""
    text = complex_program(name, part, (512, 1024))
    s = shardc.run(text, timing_only=True, chip=chip).report["step_time_s"]
    kernel = shardc.compile(text, f"lower-to-tpu{{chip={chip}}}")
    t = shardc.run(kernel, timing_only=True, chip=chip).report["step_time_s"]
    assert abs(t / s - 1) < 0.1, (s, t)


def dot_program(m: int, k: int, n: int, part: str) -> str:
    a, b, r = (ty(s, f"complex<{part}>") for s in ((m, k), (k, n), (m, n)))
    return program([a, b], r, f"hlo.dot %a0, %a1, contracting_dims = [1] x [0] : ({a}, {b}) -> {r}")


@pytest.mark.parametrize("part", ["f32", "f64"])
def test_a_complex_dot_is_the_loops_level_s_plans(part: str) -> None:
    """`complex_dot_kernels`: as many real dots and combining loops as the lowering makes."""
    text = dot_program(64, 128, 256, part)
    module = parse(text, "dot.mlir")
    (op,) = [o for o in module.walk() if isinstance(o, hlo.DotOp)]
    kernels = complex_dot_kernels(CHIPS["v5e"], op)
    for f in list(module.walk()):
        if isinstance(f, func.FuncOp):
            complex_pairs.expand(f, CHIPS["v5e"])
    ops = list(module.walk())
    dots = [o for o in ops if isinstance(o, hlo.DotOp)]
    combines = [o for o in ops if isinstance(o, hlo.AddOp | hlo.SubOp)]
    assert len(kernels) == len(dots) + len(combines) == 6
    assert len({(d.lhs.type, d.rhs.type, d.result.type) for d in dots}) == 1  # one plan


@pytest.mark.parametrize("chip", ["v5e", "v5p"])
def test_complex_dot_step_is_level_t_step(chip: str) -> None:
    text = dot_program(512, 1024, 1024, "f32")
    s = shardc.run(text, timing_only=True, chip=chip).report["step_time_s"]
    kernel = shardc.compile(text, f"lower-to-tpu{{chip={chip}}}")
    t = shardc.run(kernel, timing_only=True, chip=chip).report["step_time_s"]
    assert abs(t / s - 1) < 0.1, (s, t)


def moving_program(kind: str, src: str, dst: str, shape=SHAPE) -> str:
    """A compare EQ, select or convert with complex operands or result."""
    t, r = ty(shape, src), ty(shape, dst)
    if kind == "compare":
        return program([t, t], r, f"hlo.compare EQ, %a0, %a1 : ({t}, {t}) -> {r}")
    if kind == "select":
        b = ty(shape, "i1")
        return program([b, t, t], t, f"hlo.select %a0, %a1, %a2 : {b}, {t}")
    return program([t], r, f"hlo.convert %a0 : ({t}) -> {r}")


C32, C64 = "complex<f32>", "complex<f64>"
MOVING = [
    ("compare", C32, "i1"),
    ("compare", C64, "i1"),
    ("select", C32, C32),
    ("select", C64, C64),
    *(("convert", C32, d) for d in (C64, C32, "f32", "f64", "i32", "i1", "bf16")),
    *(("convert", C64, d) for d in (C32, "f64", "f32", "i1")),
    *(("convert", s, C32) for s in ("f32", "f64", "i32", "i1")),
    *(("convert", s, C64) for s in ("f64", "f32")),
]


@pytest.mark.parametrize(("kind", "src", "dst"), MOVING)
def test_compare_select_convert_loops_are_what_level_s_charges(kind, src, dst) -> None:
    """`complex_part_ops` (the table, `complex_convert_ops`) is the loop the lowering makes
    (none where only the parts' DMAs remain), as charged by both levels."""
    text = moving_program(kind, src, dst)
    fusions = expanded(text)
    body = [o for f in fusions for o in f.body.block.ops if not isinstance(o, hlo.ReturnOp)]
    assert len(fusions) == (1 if body else 0)
    (op,) = [o for o in parse(text, "c.mlir").walk() if o.name == f"hlo.{kind}"]
    assert complex_part_ops(op) == len(body)
    assert len(complex_kernels(CHIPS["v5e"], op)) == len(fusions)
    n = SHAPE[0] * SHAPE[1]
    assert simulated_vpu_ops(text) == len(body) * n
    rows = shardc.run(text, timing_only=True, chip="v5e").report["ops"]
    assert sum(row["flops"] for row in rows) == len(body) * n


@pytest.mark.parametrize("chip", ["v5e", "v5p"])
@pytest.mark.parametrize(
    ("kind", "src", "dst"),
    [
        ("compare", C32, "i1"),
        ("select", C64, C64),
        ("convert", C32, C64),
        ("convert", C64, "f64"),
        ("convert", "f32", C32),
        ("convert", C32, "i1"),
    ],
)
def test_compare_select_convert_steps_agree(kind: str, src: str, dst: str, chip: str) -> None:
    text = moving_program(kind, src, dst, (512, 1024))
    s = shardc.run(text, timing_only=True, chip=chip).report["step_time_s"]
    kernel = shardc.compile(text, f"lower-to-tpu{{chip={chip}}}")
    t = shardc.run(kernel, timing_only=True, chip=chip).report["step_time_s"]
    assert abs(t / s - 1) < 0.1, (s, t)
