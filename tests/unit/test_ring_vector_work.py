"""
Level S charges the vector work a lowered reduce-scatter ring does between its transfers
(issue 15 item 5): each step's reduction in VMEM before the next send
(`cost.rs_combine_time`), a low-precision own chunk widened before the first send
(`rs_lead_time`) and the result copied out of VMEM after the last step (`rs_tail_time`:
in an all_reduce, the handover to the all-gather). Each is checked against what the
level-T simulator charges for the kernel `lower-to-tpu` makes (its trace's vector ops,
its step time), and each is shown to matter: level S without it misses level T.
"""

from __future__ import annotations

import json
import math

import pytest
from shardc.dialects import collective, make_context
from shardc.dialects.sizes import element_bytes
from shardc.hardware import cost
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel, rs_combine_time, rs_lead_time, rs_tail_time
from shardc.interpreter.devices import module_mesh
from shardc.interpreter.level_t import run_level_t
from shardc.interpreter.testing import parse
from shardc.lowering.lower_to_tpu import LowerToTpuPass
from xdsl.dialects.builtin import bf16, f32

ELEMS = 256 * 1024
"""Elements per device (1 MiB of f32)."""


def program(kind: str, dtype: str, mesh: str, n: int) -> str:
    """One collective over every axis of `mesh` (n devices) on ELEMS `dtype` elements."""
    axes = ", ".join(a.split("=")[0] for a in mesh.split(", "))
    if kind == "all_reduce":
        res = ELEMS
        line = f"collective.all_reduce add %a on @m[{axes}] : tensor<{ELEMS}x{dtype}>"
    else:
        res = ELEMS // n
        line = (
            f"collective.reduce_scatter add %a on @m[{axes}], dim = 0 : "
            f"(tensor<{ELEMS}x{dtype}>) -> tensor<{res}x{dtype}>"
        )
    return f"""
spmd.mesh @m = <[{mesh}]>
func.func @main(%a: tensor<{ELEMS}x{dtype}>) -> tensor<{res}x{dtype}> attributes {{spmd.per_device_io}} {{
  %r = {line}
  func.return %r : tensor<{res}x{dtype}>
}}
"""


def level_s(text: str, chip: str) -> float:
    module = parse(text)
    op = next(o for o in module.walk() if isinstance(o, collective.CollectiveOp))
    mesh = module_mesh(module)
    assert mesh is not None
    return CostModel(get_chip(chip), mesh[1]).collective_time(op)  # pyright: ignore


def level_t(text: str, chip: str, n: int, trace: bool = False) -> dict:
    module = parse(text)
    LowerToTpuPass(chip=chip).apply(make_context(), module)
    _, report = run_level_t(module, [[None, None]] * n, chip=chip, values=False, trace=trace)
    return report


def vector_seconds(report: dict, device: int = 0) -> float:
    """Seconds the simulator charged `device` for vector ops (loads, stores, arith)."""
    events = report["trace"]
    events = json.loads(events) if isinstance(events, str) else events
    events = events["traceEvents"] if isinstance(events, dict) else events
    return sum(
        e["dur"] * 1e-6
        for e in events
        if e.get("pid") == device
        and e.get("ph") == "X"
        and e.get("name", "").startswith(("tpu.load", "tpu.store", "arith."))
    )


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_a_ring_steps_vector_work_is_what_the_simulator_charges(dtype: str) -> None:
    """A one-way reduce_scatter over 4 devices (v5e: no wraparound): the vector ops the
    simulator charges device 0 are 3 steps' reductions (bf16: widening the own chunk
    too) and, in bf16, the first chunk's widening and the result's rounding."""
    chip = get_chip("v5e")
    elem = {"f32": f32, "bf16": bf16}[dtype]
    text = program("reduce_scatter", dtype, '"x"=4', 4)
    got = vector_seconds(level_t(text, "v5e", 4, trace=True))
    block = ELEMS // 4
    want = 3 * rs_combine_time(chip, block, elem)
    if dtype == "bf16":
        fetch = block * element_bytes(elem) / chip.hbm_bw  # the DMAs are not vector work
        want += rs_lead_time(chip, block, elem) - fetch
        want += rs_tail_time(chip, block, elem, elem) - fetch
    assert want > 0.1e-6
    assert got == pytest.approx(want, rel=1e-9)


CASES = [
    ("reduce_scatter", "f32", "v5e", '"x"=4', 4),
    ("reduce_scatter", "bf16", "v5e", '"x"=4', 4),
    ("reduce_scatter", "bf16", "v5e", '"a"=2, "b"=4', 8),
    ("reduce_scatter", "f32", "v5p", '"x"=4', 4),
    ("all_reduce", "f32", "v5e", '"x"=4', 4),
    ("all_reduce", "bf16", "v5p", '"x"=4', 4),
    ("all_reduce", "f32", "v5e", '"a"=4, "b"=4', 16),
    ("all_reduce", "bf16", "v5e", '"a"=2, "b"=4', 8),
]


@pytest.mark.parametrize(("kind", "dtype", "chip", "mesh", "n"), CASES)
def test_level_s_times_a_reduction_ring_as_level_t(
    kind: str, dtype: str, chip: str, mesh: str, n: int
) -> None:
    """One and two axes, one way and both, f32 and bf16: level S's time of the
    collective is the simulated time of the kernel `lower-to-tpu` makes of it."""
    text = program(kind, dtype, mesh, n)
    assert level_s(text, chip) == pytest.approx(level_t(text, chip, n)["step_time_s"], rel=1e-9)


@pytest.mark.parametrize(
    ("term", "kind", "dtype"),
    [
        ("rs_combine_time", "reduce_scatter", "f32"),
        ("rs_combine_time", "all_reduce", "f32"),
        ("rs_lead_time", "reduce_scatter", "bf16"),
        ("rs_tail_time", "reduce_scatter", "f32"),
        ("rs_tail_time", "all_reduce", "f32"),  # the handover to the all-gather
        ("rs_tail_time", "all_reduce", "bf16"),
    ],
)
def test_without_each_term_level_s_misses_level_t(
    term: str, kind: str, dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each term is needed: with it zero, level S is off level T's time by more than
    the tolerance the agreement test above allows, a million times over."""
    text = program(kind, dtype, '"x"=4', 4)
    simulated = level_t(text, "v5e", 4)["step_time_s"]
    monkeypatch.setattr(cost, term, lambda *args: 0.0)
    without = level_s(text, "v5e")
    assert not math.isclose(without, simulated, rel_tol=1e-3)
