"""
Level G on boxes (`interpreter.level_g_boxes`, the distributed --check's evaluator), in
process: the demand pass maps output boxes to operand boxes through each op, and the
boxed run gives exactly the corresponding parts of the whole run's outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from shardc.dialects import make_context
from shardc.interpreter import io
from shardc.interpreter.devices import Executor
from shardc.interpreter.level_g_boxes import BoxedRun, plan_boxes
from shardc.parsing import parse_and_verify

PROGRAM = """func.func @main(%a: tensor<8x6xf32>, %b: tensor<6xf32>, %c: tensor<6x5xf32>)
    -> (tensor<4x5xf32>, tensor<8xf32>) {
  %u = hlo.exp %a : tensor<8x6xf32>
  %bb = hlo.broadcast %b, dims = [1] : (tensor<6xf32>) -> tensor<8x6xf32>
  %s = hlo.add %a, %bb : tensor<8x6xf32>
  %t = hlo.transpose %s, dims = [1, 0] : (tensor<8x6xf32>) -> tensor<6x8xf32>
  %tt = hlo.transpose %t, dims = [1, 0] : (tensor<6x8xf32>) -> tensor<8x6xf32>
  %sl = hlo.slice %tt [0:8:2, 0:6] : (tensor<8x6xf32>) -> tensor<4x6xf32>
  %d = hlo.dot %sl, %c, contracting_dims = [1] x [0] : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %i = hlo.iota dim = 0 : tensor<8x6xf32>
  %m = hlo.mul %tt, %i : tensor<8x6xf32>
  %r = hlo.reduce add %m, dims = [1] : (tensor<8x6xf32>) -> tensor<8xf32>
  func.return %d, %r : tensor<4x5xf32>, tensor<8xf32>
}
"""


def test_boxes_are_the_parts_of_the_whole_run() -> None:
    module = parse_and_verify(make_context(), PROGRAM, "<test>")
    sig = io.signature(module, io.find_entry(module, None, "<test>"), "<test>")
    inputs = io.random_inputs(sig, 5)
    whole = io.run(Executor(module, "<test>"), sig, inputs)
    boxes = (((1, 3), (0, 5)), ((2, 6),))
    plan = plan_boxes(sig.function, boxes)
    a, b, c = sig.function.body.block.args
    # rows 2..5 of %a: 2..5 for the reduce, rows 2 and 4 (slice rows 1, 2) for the dot
    assert plan.box[a] == ((2, 6), (0, 6))
    assert plan.box[b] == ((0, 6),) and plan.box[c] == ((0, 6), (0, 5))
    assert plan.full_ops == {"hlo.iota": 1}  # no box rule: whole, and said
    assert [op.name for op in plan.dead] == ["hlo.exp"]
    args = [inputs["in_0"][2:6], inputs["in_1"], inputs["in_2"]]
    fresh = parse_and_verify(make_context(), PROGRAM, "<test>")
    fsig = io.signature(fresh, io.find_entry(fresh, None, "<test>"), "<test>")
    run = BoxedRun(Executor(fresh, "<test>"), fsig.function, plan_boxes(fsig.function, boxes))
    d, r = run.run(args)
    np.testing.assert_array_equal(d, whole["out_0"][1:3])
    np.testing.assert_array_equal(r, whole["out_1"][2:6])


def _boxed_equals_whole(program: str, boxes: tuple[Any, ...], seed: int) -> dict[str, int]:
    """Run `program` whole and on `boxes`; the boxed outputs must be the slices. Returns
    the ops run whole."""
    module = parse_and_verify(make_context(), program, "<test>")
    sig = io.signature(module, io.find_entry(module, None, "<test>"), "<test>")
    inputs = io.random_inputs(sig, seed)
    full = io.run(Executor(module, "<test>"), sig, inputs)
    fresh = parse_and_verify(make_context(), program, "<test>")
    fsig = io.signature(fresh, io.find_entry(fresh, None, "<test>"), "<test>")
    plan = plan_boxes(fsig.function, boxes)
    args = []
    for spec, arg in zip(fsig.args, fsig.function.body.block.args, strict=True):
        box = plan.box.get(arg)
        value = inputs[f"in_{spec.index}"]
        args.append(None if box is None else value[tuple(slice(lo, hi) for lo, hi in box)])
    got = BoxedRun(Executor(fresh, "<test>"), fsig.function, plan).run(args)
    for i, (g, b) in enumerate(zip(got, boxes, strict=True)):
        want = full[f"out_{i}"][tuple(slice(lo, hi) for lo, hi in b)]
        assert g.shape == want.shape and g.tobytes() == want.tobytes(), (i, b)
    return plan.full_ops


def _t(shape: Sequence[int]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


@st.composite
def reshaping_programs(draw: Any) -> tuple[str, tuple[Any, ...], int]:
    """reverse -> concatenate -> pad -> reshape (split or merge dims) on random shapes, and
    a random box of the result (a box of the operands or not: right either way)."""
    rows, m, q1, q2 = (draw(st.integers(1, 4)) for _ in range(4))
    q = q1 * q2
    dims = draw(st.sampled_from([[], [0], [1], [0, 1]]))
    k = draw(st.integers(0, 1))
    b_shape = (m, q) if k == 0 else (rows, m)
    c_shape = (rows + m, q) if k == 0 else (rows, q + m)
    low = [draw(st.integers(-1, 2)) for _ in range(2)]
    interior = [draw(st.integers(0, 2)) for _ in range(2)]
    high = [draw(st.integers(0, 2)) for _ in range(2)]
    stretched = [n + (n - 1) * i for n, i in zip(c_shape, interior, strict=True)]
    p_shape = [lo + n + hi for lo, n, hi in zip(low, stretched, high, strict=True)]
    assume(min(p_shape) > 0)
    r_shape = draw(
        st.sampled_from(
            [[p_shape[0] * p_shape[1]], [p_shape[0], p_shape[1], 1], [1, *p_shape]]
            + ([[2, p_shape[0] // 2, p_shape[1]]] if p_shape[0] % 2 == 0 else [])
        )
    )
    box = []
    for n in r_shape:
        lo = draw(st.integers(0, n - 1))
        box.append((lo, draw(st.integers(lo + 1, n))))
    program = f"""func.func @main(%a: {_t((rows, q))}, %b: {_t(b_shape)}, %v: tensor<f32>)
    -> ({_t(r_shape)}) {{
  %r = hlo.reverse %a, dims = {dims} : {_t((rows, q))}
  %c = hlo.concatenate %r, %b, dim = {k} : ({_t((rows, q))}, {_t(b_shape)}) -> {_t(c_shape)}
  %p = hlo.pad %c, %v, low = {low}, high = {high}, interior = {interior} : ({_t(c_shape)}, tensor<f32>) -> {_t(p_shape)}
  %s = hlo.reshape %p : ({_t(p_shape)}) -> {_t(r_shape)}
  func.return %s : {_t(r_shape)}
}}
"""
    return program, (tuple(box),), draw(st.integers(0, 100))


@settings(max_examples=60, deadline=None)
@given(reshaping_programs())
def test_reshape_concatenate_pad_reverse_boxes(case: tuple[str, tuple[Any, ...], int]) -> None:
    _boxed_equals_whole(*case)


def test_reshape_concatenate_pad_reverse_are_box_ops() -> None:
    """Rows of a split, whole in the inner dims: a box all the way up, no op run whole."""
    program = """func.func @main(%a: tensor<6x8xf32>, %b: tensor<2x8xf32>, %v: tensor<f32>)
    -> (tensor<2x5x8xf32>, tensor<80xf32>) {
  %r = hlo.reverse %a, dims = [0, 1] : tensor<6x8xf32>
  %c = hlo.concatenate %r, %b, dim = 0 : (tensor<6x8xf32>, tensor<2x8xf32>) -> tensor<8x8xf32>
  %p = hlo.pad %c, %v, low = [1, 0], high = [1, 0], interior = [0, 0] : (tensor<8x8xf32>, tensor<f32>) -> tensor<10x8xf32>
  %s = hlo.reshape %p : (tensor<10x8xf32>) -> tensor<2x5x8xf32>
  %f = hlo.reshape %s : (tensor<2x5x8xf32>) -> tensor<80xf32>
  func.return %s, %f : tensor<2x5x8xf32>, tensor<80xf32>
}
"""
    boxes = (((1, 2), (0, 5), (0, 8)), ((16, 40),))
    assert _boxed_equals_whole(program, boxes, 3) == {}
    # not a box of the operand (half rows of a merged dim): that reshape runs whole
    assert _boxed_equals_whole(program, (boxes[0], ((4, 40),)), 3) == {"hlo.reshape": 1}
    # the last row block of %s: rows 5..9 of %p, 4..7 of %c, so rows 4, 5 of %r (0, 1 of %a)
    module = parse_and_verify(make_context(), program, "<test>")
    function = io.find_entry(module, None, "<test>")
    plan = plan_boxes(function, (((1, 2), (0, 5), (0, 8)), None))
    a, b, _ = function.body.block.args
    assert plan.box[a] == ((0, 2), (0, 8)) and plan.box[b] == ((0, 2), (0, 8)), plan.box
    assert plan.full_ops == {}
