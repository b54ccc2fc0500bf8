"""
Fast paths of the estimates (issue 14 item 7) against what they shortcut: `used_values` of
an op isolated from above (its body not walked), and a one-round `Passage`'s end from a
common ready time (no array reductions).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.dialects import make_context
from shardc.parsing import parse_and_verify
from shardc.passes.block_order import used_values
from shardc.passes.chain_floor import Passage
from xdsl.dialects import func
from xdsl.ir import Operation

PROGRAM = """
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r = hlo.fusion(%p0 = %x, %p1 = %y) kind = loop, name = "add_fusion" : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
    %a = hlo.add %p0, %p1 : tensor<4xf32>
    %m = hlo.mul %a, %p0 : tensor<4xf32>
    hlo.return %m : tensor<4xf32>
  }
  %c = hlo.constant dense<1> : tensor<i32>
  %k = hlo.case %c -> (tensor<4xf32>) {
    hlo.return %y : tensor<4xf32>
  }, {
    hlo.return %r : tensor<4xf32>
  }
  func.return %r, %k : tensor<4xf32>, tensor<4xf32>
}
"""


def _ops() -> dict[str, Operation]:
    module = parse_and_verify(make_context(), PROGRAM, "<t>")
    main = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    return {op.name: op for op in main.body.block.ops}


def test_used_values_of_an_isolated_op_are_its_operands() -> None:
    """A fusion reads the outside through its operands only: its body's values are not
    listed (they are no value of the enclosing block)."""
    fusion = _ops()["hlo.fusion"]
    assert used_values(fusion) == list(fusion.operands)


def test_used_values_of_an_op_with_open_regions_walk_them() -> None:
    """A case's branches read %y and %r from outside: both are listed."""
    ops = _ops()
    case = ops["hlo.case"]
    main_args = case.parent_block().args  # pyright: ignore[reportOptionalMemberAccess]
    values = used_values(case)
    assert main_args[1] in values
    assert ops["hlo.fusion"].results[0] in values


finite = st.floats(min_value=0.0, max_value=1e3, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(
    ends0=st.lists(st.one_of(finite, st.sampled_from([0.0, 1.5, 2.25])), min_size=1, max_size=6),
    ready=finite,
)
def test_one_round_end_from_a_common_ready_time(ends0: list[float], ready: float) -> None:
    """`Passage.end` with a float `ready`: each device ends at `ready + ends0[d]` (numpy's
    sum), one float where all devices end together."""
    array = np.array(ends0)
    passage = Passage(np.arange(len(ends0))[None, :], float(array.max()), array, 0.0, None)
    expected = ready + array
    got = passage.end(ready, len(ends0))
    if expected.min() == expected.max():
        assert isinstance(got, float) and got == float(expected[0])
    else:
        assert isinstance(got, np.ndarray) and np.array_equal(got, expected)
