"""
Fast paths of the estimates (issue 14 item 7) against what they shortcut: `used_values` of
an op isolated from above (its body not walked), a one-round `Passage`'s end from a
common ready time (no array reductions), `copy_op` (xDSL's clone in one walk),
`DeviceClocks` holding one float while the devices agree (against the arrays), and
`is_timed` remembered by op class.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.bench.partition_speed import program
from shardc.dialects import collective, make_context
from shardc.dialects.spmd import find_mesh
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel
from shardc.interpreter import timing
from shardc.parsing import parse_and_verify
from shardc.passes.block_order import used_values
from shardc.passes.chain_floor import Passage
from shardc.passes.module_copy import copy_op
from shardc.passes.step_estimate import DeviceClocks
from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

REPO = Path(__file__).resolve().parents[2]

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


# `module_copy.copy_op`: xDSL's clone in one walk ------------------------------------


def _uses(module: Operation) -> list[list[tuple[int, int]]]:
    """Each value's uses, in order, as (the user's place in the walk, operand index)."""
    place = {op: i for i, op in enumerate(module.walk())}
    return [[(place[u.operation], u.index) for u in v.uses] for v in _values(module)]


@pytest.mark.parametrize(
    "text",
    [
        PROGRAM,
        program(60),
        *(p.read_text() for p in sorted((REPO / "examples").glob("*.mlir"))),
    ],
)
def test_copy_op_is_xdsls_clone(text: str) -> None:
    """The same module (printed), every value's uses in the same order, and the value map
    filled as xDSL fills it (a value to its copy)."""
    module = parse_and_verify(make_context(), text, "<t>")
    theirs: dict[SSAValue, SSAValue] = {}
    mine: dict[SSAValue, SSAValue] = {}
    expected, got = module.clone(value_mapper=theirs), copy_op(module, mine)
    assert str(got) == str(expected)
    assert _uses(got) == _uses(expected)
    assert list(mine) == list(theirs)
    got_places = {v: i for i, v in enumerate(_values(got))}
    expected_places = {v: i for i, v in enumerate(_values(expected))}
    assert [got_places[mine[v]] for v in mine] == [expected_places[theirs[v]] for v in theirs]


def _values(module: Operation) -> list[SSAValue]:
    values: list[SSAValue] = []
    for op in module.walk():
        values.extend(v for r in op.regions for b in r.blocks for v in b.args)
        values.extend(op.results)
    return values


# `step_estimate.DeviceClocks`: a float while the devices agree ---------------------------

SKEWED = """
spmd.mesh @mesh = <["x"=2, "y"=4]>
func.func @main(%a: tensor<32x16xf32>) -> tensor<32x16xf32> attributes {spmd.partitioned} {
  %p = collective.permute %a on @mesh["y"], shift = 1 : tensor<32x16xf32>
  %q = collective.permute %a on @mesh["y"], shift = -1 : tensor<32x16xf32>
  %g = collective.all_gather %a on @mesh["y"], dim = 1 : (tensor<32x16xf32>) -> tensor<32x64xf32>
  %s = collective.reduce_scatter add %g on @mesh["x"], dim = 0 : (tensor<32x64xf32>) -> tensor<16x64xf32>
  %r = collective.all_reduce add %a on @mesh["x"] : tensor<32x16xf32>
  %t = collective.all_to_all %g on @mesh["x"], split_dim = 1, concat_dim = 0 : (tensor<32x64xf32>) -> tensor<64x32xf32>
  func.return %p : tensor<32x16xf32>
}
"""


class _ArrayClocks:
    """The reference: every device's compute clock and engine as arrays, always (the
    interpreter's rules, `DeviceClocks`' docstring)."""

    def __init__(self, devices: int):
        self.clock = np.zeros(devices)
        self.engine = np.zeros(devices)

    def collective(
        self, op: collective.CollectiveOp, model: CostModel, time: float, overlap: float
    ) -> np.ndarray:
        groups = model.group_array(op)
        free = self.engine[groups].max(axis=1, keepdims=True)
        landings = model.collective_landings(op)
        ends = np.full(len(self.clock), -math.inf)
        if landings is None:
            issued = self.clock[groups].max(axis=1, keepdims=True)
            ends[groups] = np.maximum(issued, free - overlap) + time
        else:
            begins = np.zeros(max(len(self.clock), landings.size))
            begins[groups] = np.maximum(self.clock[groups], free - overlap)
            ends[groups] = landings.ends(begins)[groups]
        self.engine = np.maximum(self.engine, ends)
        return ends


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("compute"), finite),
            st.tuples(st.just("collective"), st.integers(0, 5)),
            st.tuples(st.just("wait"), st.integers(0, 20)),
        ),
        max_size=30,
    ),
    st.sampled_from(["v5e", "v5p"]),
)
def test_device_clocks_float_is_the_arrays(steps: list[tuple[str, float]], chip: str) -> None:
    """Compute ops, collectives (skewed permutes on v5e's line among them) and waits for
    collectives issued before: `DeviceClocks` (one float while the devices agree) ends
    every collective and the step where the array rules do, to the bit."""
    module = parse_and_verify(make_context(), SKEWED, "<t>")
    model = CostModel(get_chip(chip), find_mesh(module))
    ops = [op for op in module.walk() if isinstance(op, collective.CollectiveOp)]
    clocks, reference = DeviceClocks(8), _ArrayClocks(8)
    issued: list[tuple[float | np.ndarray, np.ndarray]] = []
    for kind, value in steps:
        if kind == "compute":
            clocks.advance(value)
            reference.clock += value
        elif kind == "collective":
            op = ops[int(value)]
            time, overlap = model.collective_time(op), model.collective_overlap(op)
            issued.append(
                (
                    clocks.collective(op, model, time, overlap),
                    reference.collective(op, model, time, overlap),
                )
            )
        elif issued:
            ends, expected = issued[int(value) % len(issued)]
            assert np.array_equal(np.broadcast_to(ends, (8,)), expected)
            clocks.wait(ends)
            reference.clock = np.maximum(reference.clock, expected)
        assert np.array_equal(np.broadcast_to(clocks.clock, (8,)), reference.clock)
    step = float(max(reference.clock.max(), reference.engine.max()))
    assert clocks.step() == step


def test_skewed_permute_makes_device_clocks_differ() -> None:
    """The differential test above reaches the arrays: a permute on v5e's line of 4 ends
    at different times per device, and the clocks stay apart after waiting for it."""
    module = parse_and_verify(make_context(), SKEWED, "<t>")
    model = CostModel(get_chip("v5e"), find_mesh(module))
    permute = next(op for op in module.walk() if isinstance(op, collective.PermuteOp))
    clocks = DeviceClocks(8)
    clocks.wait(clocks.collective(permute, model, model.collective_time(permute), 0.0))
    assert isinstance(clocks.clock, np.ndarray)


def test_is_timed_by_class_is_the_rule() -> None:
    """`timing.is_timed`, remembered by (class, has regions), answers the rule for each op
    of the examples and of a fused, partitioned program."""
    texts = [PROGRAM, *(p.read_text() for p in sorted((REPO / "examples").glob("*.mlir")))]
    for text in texts:
        for op in parse_and_verify(make_context(), text, "<t>").walk():
            assert timing.is_timed(op) == timing._is_timed(op)  # pyright: ignore
