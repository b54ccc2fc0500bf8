"""
micro-batch's `SplitFloor` is a lower bound: no split it skips could have been chosen.
On generated partitioned programs and batch programs, every candidate class and chunk
count: the floor is at most the estimate of either block order (the fused estimate, as
`spmd-pipeline` runs it, and the unfused one). `ordered_collectives` finds exactly the
collectives every other one precedes or follows.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import collective, make_context
from shardc.dialects.spmd import find_mesh
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel, cached
from shardc.parsing import parse_and_verify
from shardc.passes.micro_batch import (
    MicroBatchPass,
    Plan,
    SplitFloor,
    _function_blocks,
    _LazyView,
    candidates,
    ordered_collectives,
)
from shardc.passes.step_estimate import per_op
from shardc.tests.e2e.differential import partition
from shardc.tests.e2e.test_micro_batch import batch_programs
from shardc.tests.e2e.test_partition_differential import partitionable_programs
from xdsl.ir import Block, Operation

CTX = make_context()


def _floor_holds(text: str, fused: bool) -> None:
    module = parse_and_verify(CTX, text, "<generated>")
    model = cached(CostModel(get_chip("v5e"), find_mesh(module)))
    owner = MicroBatchPass(fused=fused)
    for index, block in enumerate(_function_blocks(module)):
        view_block = _function_blocks(_LazyView(module, model).get())[index] if fused else block
        floor = SplitFloor.of(view_block, per_op(model), block)
        for cand in candidates(block):
            for k in owner.counts(cand.size):
                bound = floor.bound(cand, k)
                for chunk_major in (True, False):
                    t = owner.estimate(module, index, Plan(cand.key, k, chunk_major), model, cand)
                    assert bound <= t * (1 + 1e-9), (k, chunk_major, bound, t, text)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partitionable_programs(), st.booleans())
def test_floor_below_every_estimate_partitioned(text: str, fused: bool) -> None:
    _floor_holds(partition(text), fused)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch_programs(), st.booleans())
def test_floor_below_every_estimate_batch(case: tuple[str, int], fused: bool) -> None:
    _floor_holds(case[0], fused)


def _reaches(graph: dict[Operation, set[Operation]], a: Operation, b: Operation) -> bool:
    """Whether `b` depends on `a` (a path of uses from `a` to `b`)."""
    seen, todo = set(), [b]
    while todo:
        op = todo.pop()
        if op is a:
            return True
        for dep in graph.get(op, ()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return False


def _ordered_by_definition(block: Block) -> set[Operation]:
    graph = {op: {v.owner for v in op.operands if v.owner.parent is block} for op in block.ops}
    colls = [op for op in block.ops if isinstance(op, collective.CollectiveOp)]
    return {
        c
        for c in colls
        if all(d is c or _reaches(graph, d, c) or _reaches(graph, c, d) for d in colls)
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partitionable_programs())
def test_ordered_collectives_as_defined(text: str) -> None:
    module = parse_and_verify(CTX, partition(text), "<generated>")
    for block in _function_blocks(module):
        assert ordered_collectives(block) == _ordered_by_definition(block)


@pytest.mark.parametrize(
    ("body", "ordered"),
    [
        # a chain: each collective reads the last one's result
        (
            '%a = collective.all_reduce add %x on @mesh["x"] : tensor<4xf32>\n'
            '%b = collective.all_reduce add %a on @mesh["x"] : tensor<4xf32>\n'
            "func.return %b : tensor<4xf32>",
            {0, 1},
        ),
        # two independent collectives, then one that reads both
        (
            '%a = collective.all_reduce add %x on @mesh["x"] : tensor<4xf32>\n'
            '%b = collective.all_reduce add %x on @mesh["x"] : tensor<4xf32>\n'
            "%c = hlo.add %a, %b : tensor<4xf32>\n"
            '%d = collective.all_reduce add %c on @mesh["x"] : tensor<4xf32>\n'
            "func.return %d : tensor<4xf32>",
            {2},
        ),
    ],
)
def test_ordered_collectives_small(body: str, ordered: set[int]) -> None:
    text = (
        'spmd.mesh @mesh = <["x"=2]>\n'
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> "
        "attributes {spmd.partitioned, spmd.per_device_io} {\n" + body + "\n}"
    )
    block = _function_blocks(parse_and_verify(CTX, text, "<t>"))[0]
    colls = [op for op in block.ops if isinstance(op, collective.CollectiveOp)]
    assert ordered_collectives(block) == {colls[i] for i in ordered}
