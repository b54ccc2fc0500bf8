"""Dependencies between the ops of a block, and re-ordering a block without breaking them."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from xdsl.ir import Block, Operation, SSAValue


def used_values(op: Operation) -> list[SSAValue]:
    """Operands of `op` and of the ops nested in its regions."""
    values = list(op.operands)
    for region in op.regions:
        for nested in region.walk():
            values.extend(nested.operands)
    return values


def block_dependencies(block: Block) -> dict[Operation, set[Operation]]:
    """For each op of `block`, the ops of `block` whose results it (or its regions) uses."""
    ops = set(block.ops)
    return {
        op: {
            v.owner
            for v in used_values(op)
            if isinstance(v.owner, Operation) and v.owner in ops and v.owner is not op
        }
        for op in block.ops
    }


def set_order(block: Block, order: Sequence[Operation]) -> None:
    """Put the ops of `block` in `order` (a permutation of them)."""
    ops = list(block.ops)
    assert len(order) == len(ops) and set(order) == set(ops)
    if list(order) == ops:
        return
    for op in ops:
        block.detach_op(op)
    for op in order:
        block.add_op(op)


def topological_reorder(block: Block) -> None:
    """Stable topological sort: each op as early as its original place allows."""
    ops = list(block.ops)
    position = {op: i for i, op in enumerate(ops)}
    deps = block_dependencies(block)
    users: dict[Operation, list[Operation]] = {op: [] for op in ops}
    waiting = {op: len(d) for op, d in deps.items()}
    for op, ds in deps.items():
        for d in ds:
            users[d].append(op)
    ready = [(position[op], op) for op in ops if waiting[op] == 0]
    heapq.heapify(ready)
    order: list[Operation] = []
    while ready:
        _, op = heapq.heappop(ready)
        order.append(op)
        for user in users[op]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, (position[user], user))
    assert len(order) == len(ops), "the block's dependencies have a cycle"
    set_order(block, order)
