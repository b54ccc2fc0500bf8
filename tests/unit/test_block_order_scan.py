"""`block_order.stable_topological_order` by position (one scan, `_earliest_order`) is the
heap definition: among the ready ops, the one of lowest position, the terminator last;
checked on partitioned examples and the bench chain with their ops shuffled."""

from __future__ import annotations

import heapq
import random
from pathlib import Path

import pytest
from shardc.bench.partition_speed import program as bench_program
from shardc.dialects import make_context
from shardc.parsing import parse_and_verify
from shardc.passes.block_order import dependency_graph, set_order, stable_topological_order
from shardc.passes.spmd_pipeline import SpmdPipelinePass
from xdsl.dialects import func
from xdsl.ir import Block, Operation

CTX = make_context()
EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.mlir"))


def _by_heap(block: Block) -> list[Operation]:
    """Kahn's algorithm over every op, the ready op of lowest position first."""
    ops = list(block.ops)
    position = {op: i for i, op in enumerate(ops)}
    users, waiting = dependency_graph(block)
    last = block.last_op
    ready = [(position[op], op) for op in ops if not waiting[op] and op is not last]
    heapq.heapify(ready)
    order: list[Operation] = []
    while ready:
        _, op = heapq.heappop(ready)
        order.append(op)
        for user in users[op]:
            waiting[user] -= 1
            if not waiting[user] and user is not last:
                heapq.heappush(ready, (position[user], user))
    if last is not None:
        order.append(last)
    return order


def _check_shuffled(text: str, seed: int) -> None:
    module = parse_and_verify(CTX, text, "test")
    SpmdPipelinePass(micro_batch=False, fusion=False, schedule=False).apply(CTX, module)
    rng = random.Random(seed)
    for f in module.walk():
        if not isinstance(f, func.FuncOp) or len(f.body.blocks) != 1:
            continue
        block = f.body.block
        ops = list(block.ops)
        for trial in range(8):
            body = ops[:-1]
            if trial:  # the written order first, then shuffles (most ops out of place)
                rng.shuffle(body)
            set_order(block, [*body, ops[-1]])
            assert stable_topological_order(block) == _by_heap(block)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_scan_is_the_heap_order_on_examples(path: Path) -> None:
    _check_shuffled(path.read_text(), 0)


def test_scan_is_the_heap_order_on_the_bench_chain() -> None:
    _check_shuffled(bench_program(200), 1)
