"""
Level G on boxes (`interpreter.level_g_boxes`, the distributed --check's evaluator), in
process: the demand pass maps output boxes to operand boxes through each op, and the
boxed run gives exactly the corresponding parts of the whole run's outputs.
"""

from __future__ import annotations

import numpy as np
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
