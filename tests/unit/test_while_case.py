"""
`hlo.while` and `hlo.case` at level G against numpy references written here (integer loops
(exact) of hypothesis-drawn trip counts and directions, every case index in and out of range), the
builders and verifier, the cost model's static trip count (and its note when it cannot find
one), the timing run summing the loop's iterations, --timing-only's counter and its
"unknown control" error, and `lower-to-tpu` lowering both (and refusing an op inside).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.diagnostics import InterpreterError, OpPassError
from shardc.dialects import hlo, make_context
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel, while_trip_count
from shardc.interpreter.testing import parse, run_global, time_program
from shardc.lowering.lower_to_tpu import LowerToTpuPass

LOOP = """func.func @main(%a: tensor<4x128xi32>) -> (tensor<4x128xi32>, tensor<i32>) {{
  %c0 = hlo.constant dense<{start}> : tensor<i32>
  %r:2 = hlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<4x128xi32> cond {{
    %n = hlo.constant dense<{limit}> : tensor<i32>
    %p = hlo.compare {direction}, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    hlo.return %p : tensor<i1>
  }} do {{
    %step = hlo.constant dense<{step}> : tensor<i32>
    %i1 = hlo.add %i, %step : tensor<i32>
    %ib = hlo.broadcast %i, dims = [] : (tensor<i32>) -> tensor<4x128xi32>
    %three = hlo.constant dense<3> : tensor<4x128xi32>
    %y = hlo.mul %x, %three : tensor<4x128xi32>
    %x1 = hlo.add %y, %ib : tensor<4x128xi32>
    hlo.return %i1, %x1 : tensor<i32>, tensor<4x128xi32>
  }}
  func.return %r#1, %r#0 : tensor<4x128xi32>, tensor<i32>
}}"""

PASSES = {
    "LT": lambda i, n: i < n,
    "LE": lambda i, n: i <= n,
    "GT": lambda i, n: i > n,
    "GE": lambda i, n: i >= n,
    "NE": lambda i, n: i != n,
}


def reference_loop(x: np.ndarray, start: int, limit: int, step: int, direction: str):
    """The loop in Python integers, wrapped to int32 at the end (as int32 arithmetic wraps)."""
    i, trips = start, 0
    values = x.astype(np.int64)
    while PASSES[direction](i, limit):
        values = values * 3 + i
        i, trips = i + step, trips + 1
    x = ((values + 2**31) % 2**32 - 2**31).astype(np.int32)
    return x, i, trips


@st.composite
def loops(draw: st.DrawFn) -> tuple[int, int, int, str]:
    direction = draw(st.sampled_from(sorted(PASSES)))
    start = draw(st.integers(-5, 5))
    step = draw(st.sampled_from([1, 2, 3, -1, -2]))
    if direction in ("LT", "LE"):
        step = abs(step)
    elif direction in ("GT", "GE"):
        step = -abs(step)
    trips = draw(st.integers(0, 5))
    limit = start + step * trips + draw(st.integers(0, abs(step) - 1)) * (1 if step > 0 else -1)
    if direction == "NE":
        limit = start + step * trips
    return start, limit, step, direction


@settings(max_examples=40, deadline=None)
@given(loops(), st.integers(0, 3))
def test_while_matches_the_reference_and_the_trip_count(loop, seed: int) -> None:
    start, limit, step, direction = loop
    text = LOOP.format(start=start, limit=limit, step=step, direction=direction)
    x = np.random.default_rng(seed).integers(-(2**31), 2**31, (4, 128), dtype=np.int32)
    got = run_global(text, {"in_0": x})
    want, counter, trips = reference_loop(x, start, limit, step, direction)
    np.testing.assert_array_equal(got["out_0"], want)
    assert int(got["out_1"]) == counter
    (op,) = [o for o in parse(text).walk() if isinstance(o, hlo.WhileOp)]
    assert while_trip_count(op) == trips


CASE = """func.func @main(%k: tensor<i32>, %a: tensor<3xi32>) -> (tensor<3xi32>, tensor<i32>) {
  %r:2 = hlo.case %k -> (tensor<3xi32>, tensor<i32>) {
    %z = hlo.constant dense<0> : tensor<i32>
    hlo.return %a, %z : tensor<3xi32>, tensor<i32>
  }, {
    %n = hlo.neg %a : tensor<3xi32>
    %o = hlo.constant dense<1> : tensor<i32>
    hlo.return %n, %o : tensor<3xi32>, tensor<i32>
  }, {
    %m = hlo.mul %a, %a : tensor<3xi32>
    %t = hlo.constant dense<2> : tensor<i32>
    hlo.return %m, %t : tensor<3xi32>, tensor<i32>
  }
  func.return %r#0, %r#1 : tensor<3xi32>, tensor<i32>
}"""


@pytest.mark.parametrize("index", [-(2**31), -1, 0, 1, 2, 3, 2**31 - 1])
def test_case_runs_the_indexed_branch_or_the_last(index: int) -> None:
    a = np.array([3, -4, 5], np.int32)
    got = run_global(CASE, {"in_0": np.array(index, np.int32), "in_1": a})
    branch = index if 0 <= index <= 2 else 2
    want = [a, -a, a * a][branch]
    np.testing.assert_array_equal(got["out_0"], want)
    assert int(got["out_1"]) == branch


def test_builders_make_verified_ops() -> None:
    text = LOOP.format(start=0, limit=3, step=1, direction="LT")
    module = parse(text)
    (op,) = [o for o in module.walk() if isinstance(o, hlo.WhileOp)]
    clone = hlo.WhileOp(list(op.inputs), op.cond.clone(), op.body.clone())
    assert [r.type for r in clone.results] == [r.type for r in op.results]
    block = hlo.region_block([])
    block.add_op(hlo.ReturnOp([op.inputs[0]]))
    from xdsl.ir import Region

    case = hlo.CaseOp(op.inputs[0], [Region(block)], [op.inputs[0].type])
    assert case.results[0].type == op.inputs[0].type


def test_timing_sums_the_iterations_and_the_cost_model_multiplies() -> None:
    def compute(trips: int) -> float:
        text = LOOP.format(start=0, limit=trips, step=1, direction="LT")
        return time_program(text).report()["compute_time_s"]

    one, two, ten = compute(1), compute(2), compute(10)
    body = two - one  # one more iteration: the body and the condition once more
    assert body > 0
    assert ten == pytest.approx(one + 9 * body, rel=1e-9)
    module = parse(LOOP.format(start=0, limit=10, step=1, direction="LT"))
    (op,) = [o for o in module.walk() if isinstance(o, hlo.WhileOp)]
    model = CostModel(get_chip("v5e"))
    once = model.block_cost(op.body.block).time
    cond = model.block_cost(op.cond.block).time
    assert model.op_cost(op).time == pytest.approx(10 * once + 11 * cond)
    assert not model.notes
    # the timing run and the static estimate agree on the loop's compute
    static = model.op_cost(op).time
    assert ten == pytest.approx(static, rel=0.05)


UNKNOWN = """func.func @main(%a: tensor<4xf32>, %n: tensor<i32>) -> tensor<4xf32> {
  %c0 = hlo.constant dense<0> : tensor<i32>
  %r:2 = hlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<4xf32> cond {
    %p = hlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    hlo.return %p : tensor<i1>
  } do {
    %one = hlo.constant dense<1> : tensor<i32>
    %i1 = hlo.add %i, %one : tensor<i32>
    %x1 = hlo.tanh %x : tensor<4xf32>
    hlo.return %i1, %x1 : tensor<i32>, tensor<4xf32>
  }
  func.return %r#1 : tensor<4xf32>
}"""


def test_unknown_trip_count_is_counted_once_with_a_note() -> None:
    module = parse(UNKNOWN, "loop.mlir")
    (op,) = [o for o in module.walk() if isinstance(o, hlo.WhileOp)]
    assert while_trip_count(op) is None
    model = CostModel(get_chip("v5e"))
    body = model.block_cost(op.body.block).time
    cond = model.block_cost(op.cond.block).time
    assert model.op_cost(op).time == pytest.approx(body + 2 * cond)
    assert model.notes == ["trip count of hlo.while at loop.mlir:3:3 unknown, body counted once"]


def test_timing_only_runs_a_counted_loop_and_refuses_an_unknown_predicate() -> None:
    known = time_program(LOOP.format(start=0, limit=4, step=1, direction="LT"), abstract=True)
    exact = time_program(LOOP.format(start=0, limit=4, step=1, direction="LT"))
    assert known.report()["compute_time_s"] == pytest.approx(exact.report()["compute_time_s"])
    with pytest.raises(InterpreterError, match="the loop condition depends on values"):
        time_program(UNKNOWN, abstract=True)


@pytest.mark.parametrize("name", ["hlo.while", "hlo.case"])
def test_lower_to_tpu_lowers_them(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 15 item 3: both lower now (tests/unit/test_lower_control_flow.py checks the
    values); an op inside a region is checked like one outside."""
    text = """spmd.mesh @mesh = <["x"=2]>
func.func @main(%a: tensor<4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}]>}) -> (tensor<4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"x"}]>}) attributes {spmd.partitioned} {
  %k = hlo.constant dense<1> : tensor<i32>
  %c = hlo.case %k -> (tensor<4xf32>) {
    hlo.return %a : tensor<4xf32>
  }
  func.return %c : tensor<4xf32>
}"""
    if name == "hlo.while":
        text = 'spmd.mesh @mesh = <["x"=2]>\n' + UNKNOWN.replace(
            "-> tensor<4xf32> {", "-> tensor<4xf32> attributes {spmd.partitioned} {", 1
        )
    module = parse(text, "wc.mlir")
    LowerToTpuPass(chip="v5e").apply(make_context(), module)
    assert ("scf.while" if name == "hlo.while" else "case_result") in str(module)
    # An op in a region level T cannot lower is refused at that op (here: hlo.tanh, as
    # if `compute` had no lowering for it).
    from shardc.lowering import compute

    handles = compute.handles
    monkeypatch.setattr(compute, "handles", lambda op: op.name != "hlo.tanh" and handles(op))
    tanh = "%s = hlo.tanh %a : tensor<4xf32>\n    hlo.return %s :"
    inner = parse(text.replace("hlo.return %a :", tanh, 1), "wc.mlir")
    with pytest.raises(OpPassError) as info:
        LowerToTpuPass(chip="v5e").apply(make_context(), inner)
    assert info.value.op.name == "hlo.tanh"
    assert info.value.op.parent_op().name == name  # pyright: ignore
