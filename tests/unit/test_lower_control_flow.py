"""
`lower-to-tpu` of `hlo.while` and `hlo.case` (lowering/control_flow.py) against level S,
bit for bit, on every device (each with its own inputs): counted loops of hypothesis-drawn
starts, limits, steps and directions (`scf.for`), loops whose limit is a per-device input
(`scf.while`, the predicate read from SMEM), carried values swapped (staged in VMEM),
cases of every index in and out of range, a case in a loop and a loop in a case; a
partitioned scan with an all_gather in its body through `tpu-pipeline`; the VMEM error of
swapped values too large; `--timing-only` refusing a dynamic loop.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import shardc
from hypothesis import assume, given
from hypothesis import strategies as st
from shardc.diagnostics import InterpreterError, OpPassError
from shardc.dialects import make_context
from shardc.hardware.cost import while_trip_count
from shardc.interpreter.level_t import run_level_t
from shardc.interpreter.testing import parse
from shardc.lowering.lower_to_tpu import LowerToTpuPass
from shardc.tests.unit.test_lower_movement import SETTINGS, check, randoms, scalars, tensor

LOOP = """spmd.mesh @m = <["x"=2]>
func.func @main(%a: {t}, %lim: tensor<i32>) -> ({t}, tensor<i32>) attributes {{spmd.per_device_io}} {{
  %c0 = hlo.constant dense<{start}> : tensor<i32>
  %r:2 = hlo.while(%i = %c0, %x = %a) : tensor<i32>, {t} cond {{
    {limit}
    %p = hlo.compare {direction}, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    hlo.return %p : tensor<i1>
  }} do {{
    %step = hlo.constant dense<{step}> : tensor<i32>
    %i1 = hlo.add %i, %step : tensor<i32>
    %ib = hlo.broadcast %i, dims = [] : (tensor<i32>) -> tensor<{shape}xi32>
    %ic = hlo.convert %ib : (tensor<{shape}xi32>) -> {t}
    %y = hlo.mul %x, %x : {t}
    %x1 = hlo.add %y, %ic : {t}
    hlo.return %i1, %x1 : tensor<i32>, {t}
  }}
  func.return %r#1, %r#0 : {t}, tensor<i32>
}}"""

DIRECTIONS = ["LT", "LE", "GT", "GE", "NE"]


def loop(shape: list[int], dtype: str, start: int, step: int, direction: str, limit: int | None):
    """The loop program: a constant limit (counted) or the argument %lim (dynamic)."""
    text = f"%n = hlo.constant dense<{limit}> : tensor<i32>" if limit is not None else ""
    program = LOOP.format(
        t=tensor(shape, dtype),
        shape="x".join(map(str, shape)),
        start=start,
        step=step,
        direction=direction,
        limit=text,
    )
    return program if limit is not None else program.replace("%i, %n", "%i, %lim")


def _terminates(start: int, step: int, direction: str, limit: int) -> bool:
    i = start
    for _ in range(8):
        ok = {"LT": i < limit, "LE": i <= limit, "GT": i > limit, "GE": i >= limit}
        if not ok.get(direction, i != limit):
            return True
        i += step
    return False


@st.composite
def loops(draw):
    shape = draw(st.sampled_from([[8, 128], [16, 256], [3, 5], [4]]))
    dtype = draw(st.sampled_from(["i32", "f32", "i64"]))
    start = draw(st.integers(-3, 3))
    step = draw(st.sampled_from([-2, -1, 1, 2, 3]))
    direction = draw(st.sampled_from(DIRECTIONS))
    limits = [draw(st.integers(-6, 6)) for _ in range(2)]
    for lim in limits:
        assume(_terminates(start, step, direction, lim))
    return shape, dtype, start, step, direction, limits


@SETTINGS
@given(loops(), st.booleans())
def test_while_equals_level_s(case, counted: bool) -> None:
    shape, dtype, start, step, direction, limits = case
    text = loop(shape, dtype, start, step, direction, limits[0] if counted else None)
    inputs = [[a, s] for a, s in zip(randoms(shape, dtype), scalars(limits), strict=True)]
    kernel = check(text, inputs)
    if counted:
        assert "scf.while" not in kernel
        (op,) = [o for o in parse(text).walk() if o.name == "hlo.while"]
        assert (while_trip_count(op) == 0) == ("scf.for %trip" not in kernel)  # pyright: ignore
    else:
        assert "scf.while" in kernel and "memref.load %while_pred_smem" in kernel


SWAP = """spmd.mesh @m = <["x"=2]>
func.func @main(%a: tensor<8x128xf32>, %b: tensor<8x128xf32>, %lim: tensor<i32>) -> (tensor<8x128xf32>, tensor<8x128xf32>) attributes {spmd.per_device_io} {
  %c0 = hlo.constant dense<0> : tensor<i32>
  %r:3 = hlo.while(%i = %c0, %x = %a, %y = %b) : tensor<i32>, tensor<8x128xf32>, tensor<8x128xf32> cond {
    %p = hlo.compare LT, %i, %lim : (tensor<i32>, tensor<i32>) -> tensor<i1>
    hlo.return %p : tensor<i1>
  } do {
    %one = hlo.constant dense<1> : tensor<i32>
    %i1 = hlo.add %i, %one : tensor<i32>
    %z = hlo.add %x, %y : tensor<8x128xf32>
    hlo.return %i1, %y, %z : tensor<i32>, tensor<8x128xf32>, tensor<8x128xf32>
  }
  func.return %r#1, %r#2 : tensor<8x128xf32>, tensor<8x128xf32>
}"""


@pytest.mark.parametrize("limits", [[0, 1], [2, 5]])
def test_while_with_a_swap_stages_through_vmem(limits: list[int]) -> None:
    """Fibonacci-like: y moves to x's place while x + y goes to y's (the old y read
    before either carried buffer is overwritten)."""
    a, b = randoms([8, 128], "f32", 1), randoms([8, 128], "f32", 2)
    inputs = [[x, y, s] for x, y, s in zip(a, b, scalars(limits), strict=True)]
    kernel = check(SWAP, inputs)
    assert "while_swap" in kernel


def test_swapped_values_too_large_for_vmem_name_op_and_capacity() -> None:
    module = parse(SWAP.replace("8x128", "128x128"))
    with pytest.raises(OpPassError) as info:
        LowerToTpuPass(vmem_limit=40000).apply(make_context(), module)
    message = str(info.value)
    assert info.value.op.name == "hlo.while"
    assert "swapped carried values" in message and "65536 bytes" in message
    assert "40000 bytes available" in message


CASE = """spmd.mesh @m = <["x"=2]>
func.func @main(%a: tensor<16x128xf32>, %k: tensor<i32>) -> (tensor<16x128xf32>, tensor<16x128xf32>) attributes {spmd.per_device_io} {
  %r:2 = hlo.case %k -> (tensor<16x128xf32>, tensor<16x128xf32>) {
    %y = hlo.add %a, %a : tensor<16x128xf32>
    hlo.return %y, %a : tensor<16x128xf32>, tensor<16x128xf32>
  }, {
    %y = hlo.mul %a, %a : tensor<16x128xf32>
    hlo.return %a, %y : tensor<16x128xf32>, tensor<16x128xf32>
  }, {
    %y = hlo.neg %a : tensor<16x128xf32>
    hlo.return %y, %y : tensor<16x128xf32>, tensor<16x128xf32>
  }
  func.return %r#0, %r#1 : tensor<16x128xf32>, tensor<16x128xf32>
}"""


@SETTINGS
@given(st.lists(st.integers(-4, 5), min_size=2, max_size=2))
def test_case_equals_level_s_for_every_index(indices: list[int]) -> None:
    inputs = [[a, k] for a, k in zip(randoms([16, 128], "f32"), scalars(indices), strict=True)]
    kernel = check(CASE, inputs)
    assert kernel.count("scf.if") == 2


NESTED = """spmd.mesh @m = <["x"=2]>
func.func @main(%a: tensor<8x128xi32>, %k: tensor<i32>) -> tensor<8x128xi32> attributes {spmd.per_device_io} {
  %c0 = hlo.constant dense<0> : tensor<i32>
  %r:2 = hlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<8x128xi32> cond {
    %n = hlo.constant dense<4> : tensor<i32>
    %p = hlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    hlo.return %p : tensor<i1>
  } do {
    %one = hlo.constant dense<1> : tensor<i32>
    %i1 = hlo.add %i, %one : tensor<i32>
    %sel = hlo.add %i, %k : tensor<i32>
    %x1 = hlo.case %sel -> (tensor<8x128xi32>) {
      %y = hlo.add %x, %x : tensor<8x128xi32>
      hlo.return %y : tensor<8x128xi32>
    }, {
      %three = hlo.constant dense<3> : tensor<8x128xi32>
      %y = hlo.mul %x, %three : tensor<8x128xi32>
      hlo.return %y : tensor<8x128xi32>
    }
    hlo.return %i1, %x1 : tensor<i32>, tensor<8x128xi32>
  }
  %out = hlo.case %k -> (tensor<8x128xi32>) {
    hlo.return %r#1 : tensor<8x128xi32>
  }, {
    %c1 = hlo.constant dense<1> : tensor<i32>
    %s:2 = hlo.while(%j = %c1, %z = %r#1) : tensor<i32>, tensor<8x128xi32> cond {
      %p = hlo.compare GE, %j, %k : (tensor<i32>, tensor<i32>) -> tensor<i1>
      hlo.return %p : tensor<i1>
    } do {
      %m1 = hlo.constant dense<-1> : tensor<i32>
      %j1 = hlo.add %j, %m1 : tensor<i32>
      %z1 = hlo.sub %z, %a : tensor<8x128xi32>
      hlo.return %j1, %z1 : tensor<i32>, tensor<8x128xi32>
    }
    hlo.return %s#1 : tensor<8x128xi32>
  }
  func.return %out : tensor<8x128xi32>
}"""


@pytest.mark.parametrize("indices", [[0, 1], [1, 0], [-1, 3]])
def test_a_case_in_a_loop_and_a_loop_in_a_case(indices: list[int]) -> None:
    inputs = [[a, k] for a, k in zip(randoms([8, 128], "i32"), scalars(indices), strict=True)]
    kernel = check(NESTED, inputs)
    assert "scf.for" in kernel and "scf.while" in kernel and "scf.if" in kernel


def test_timing_only_refuses_a_dynamic_loop() -> None:
    module = parse(loop([8, 128], "i32", 0, 1, "LT", None))
    LowerToTpuPass().apply(make_context(), module)
    (kernel,) = [o for o in module.body.block.ops if o.name == "func.func"]
    n = sum(a.value.data for a in kernel.attributes["tpu.io"].data)  # pyright: ignore
    rows = [[None] * n for _ in range(2)]
    with pytest.raises(InterpreterError, match="loop condition depends on values"):
        run_level_t(module, rows, values=False)


def test_timing_only_refuses_a_dynamic_case_index() -> None:
    """The index is a tensor's value: the branch chain is marked `tpu.branch_on_value`
    and the timing mode, which reads no values, refuses it (it used to take branch 0)."""
    module = parse(CASE)
    LowerToTpuPass().apply(make_context(), module)
    (kernel,) = [o for o in module.body.block.ops if o.name == "func.func"]
    assert "tpu.branch_on_value" in str(kernel)
    n = sum(a.value.data for a in kernel.attributes["tpu.io"].data)  # pyright: ignore
    rows = [[None] * n for _ in range(2)]
    with pytest.raises(InterpreterError, match="branch depends on values"):
        run_level_t(module, rows, values=False)


SCAN = """spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @main(%0: tensor<16x256xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>}, %1: tensor<4x256x256xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}, {"model"}]>}) -> (tensor<16x256xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>}) {
  %2 = hlo.constant dense<0> : tensor<i32>
  %3, %4, %5 = hlo.while(%6 = %1, %7 = %2, %8 = %0) : tensor<4x256x256xf32>, tensor<i32>, tensor<16x256xf32> cond {
    %9 = hlo.constant dense<4> : tensor<i32>
    %10 = hlo.compare LT, %7, %9 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    hlo.return %10 : tensor<i1>
  } do {
    %11 = hlo.constant dense<0> : tensor<i32>
    %13 = hlo.dynamic_slice %6 [%7, %11, %11] sizes = [1, 256, 256] : (tensor<4x256x256xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x256x256xf32>
    %14 = hlo.reshape %13 : (tensor<1x256x256xf32>) -> tensor<256x256xf32>
    %15 = hlo.dot %8, %14, contracting_dims = [1] x [0] : (tensor<16x256xf32>, tensor<256x256xf32>) -> tensor<16x256xf32>
    %16 = hlo.tanh %15 : tensor<16x256xf32>
    %17 = hlo.constant dense<1> : tensor<i32>
    %18 = hlo.add %7, %17 : tensor<i32>
    hlo.return %6, %18, %16 : tensor<4x256x256xf32>, tensor<i32>, tensor<16x256xf32>
  }
  func.return %5 : tensor<16x256xf32>
}"""


def test_partitioned_scan_with_a_collective_in_its_body() -> None:
    """JAX's scan of a model-sharded MLP (as tests/frontends/corpus/scan_mlp, larger):
    spmd-pipeline puts an all_gather in the loop body; tpu-pipeline lowers it as a ring
    inside the scf.for, run by every device each iteration, and level T equals level S."""
    level_s = shardc.compile(SCAN, "spmd-pipeline")
    assert "collective.all_gather" in str(level_s)
    want = shardc.run(level_s)
    kernel = shardc.compile(SCAN, "tpu-pipeline")
    text = str(kernel)
    assert "scf.for %trip" in text and "tpu.barrier" in text.split("scf.for %trip", 1)[1]
    # the stacked weights pass through the body unchanged and their result is unused:
    # read in place, never copied (only the counter and the activations are)
    assert len(re.findall(r"%while_init_sem(_\d+)? = tpu.alloc", text)) == 2
    got = shardc.run(kernel)
    assert got.report["level"] == "T"
    for name, ref in want.outputs.items():
        np.testing.assert_allclose(got.outputs[name], ref, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("index", [0, 1, 7, -2])
def test_a_constant_case_index_lowers_only_its_branch(index: int) -> None:
    """A jit-time branch choice: no index read, no scf.if, one branch's ops (also what
    keeps timing-only runs right, which read no values)."""
    text = CASE.replace("%a: tensor<16x128xf32>, %k: tensor<i32>", "%a: tensor<16x128xf32>")
    text = text.replace(
        "  %r:2 = hlo.case %k",
        f"  %k = hlo.constant dense<{index}> : tensor<i32>\n  %r:2 = hlo.case %k",
    )
    kernel = check(text, [[a] for a in randoms([16, 128], "f32")])
    assert "scf.if" not in kernel and "case_index" not in kernel
