"""Dependencies between the ops of a block, and re-ordering a block without breaking them."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Any

from shardc.dialects.spmd import CONTROL_AFTER_ATTR_NAME, CONTROL_ID_ATTR_NAME
from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import IsolatedFromAbove


def used_values(op: Operation) -> list[SSAValue]:
    """Operands of `op` and of the ops nested in its regions: what it reads from outside.
    An op isolated from above (a fusion) reads the outside through its operands only: its
    body is not walked (every estimate links every fusion of the module, issue 14 item 7)."""
    values = list(op.operands)
    if not op.regions or op.has_trait(IsolatedFromAbove):
        return values
    for region in op.regions:
        for nested in region.walk():
            values.extend(nested.operands)
    return values


def names(op: Operation, key: str) -> list[str]:
    """The names an op's `spmd.control_id` / `spmd.control_after` attribute lists."""
    attr = op.attributes.get(key)
    if not isinstance(attr, ArrayAttr):
        return []
    return [a.data for a in attr.data if isinstance(a, StringAttr)]


def control_predecessors(block: Block) -> dict[Operation, set[Operation]]:
    """For each op of `block` with `spmd.control_after`, the ops of `block` it names."""
    by_name: dict[str, list[Operation]] = {}
    named = [op for op in block.ops if op.attributes]  # most ops have no attribute at all
    for op in named:
        for name in names(op, CONTROL_ID_ATTR_NAME):
            by_name.setdefault(name, []).append(op)
    out: dict[Operation, set[Operation]] = {}
    for op in named:
        after = names(op, CONTROL_AFTER_ATTR_NAME)
        if after:
            out[op] = {p for n in after for p in by_name.get(n, ()) if p is not op}
    return out


def merge_control_attributes(ops: Sequence[Operation], into: Operation) -> None:
    """An op standing for `ops` (a merge) keeps their control names and predecessors."""
    for key in (CONTROL_ID_ATTR_NAME, CONTROL_AFTER_ATTR_NAME):
        merged = list(dict.fromkeys(n for op in ops for n in names(op, key)))
        if merged:
            into.attributes[key] = ArrayAttr(StringAttr(n) for n in merged)


def block_dependencies(block: Block) -> dict[Operation, set[Operation]]:
    """For each op of `block`, the ops of `block` whose results it (or its regions) uses,
    and its control predecessors (`spmd.control_after`)."""
    control = control_predecessors(block)
    deps: dict[Operation, set[Operation]] = {}
    for op in block.ops:
        # an op of `block` is an owner whose parent is `block` (a block argument's owner
        # is a block, whose parent is a region): no set of the ops, no isinstance
        values = used_values(op) if op.regions else op.operands
        found = {v.owner for v in values if v.owner.parent is block and v.owner is not op}
        if op in control:
            found |= control[op]
        deps[op] = found  # pyright: ignore[reportArgumentType]
    return deps


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


def dependency_graph(
    block: Block,
) -> tuple[dict[Operation, list[Operation]], dict[Operation, int]]:
    """Each op's users within `block`, and how many ops of `block` each op waits for."""
    deps = block_dependencies(block)
    users: dict[Operation, list[Operation]] = {op: [] for op in block.ops}
    for op, ds in deps.items():
        for d in ds:
            users[d].append(op)
    return users, {op: len(ds) for op, ds in deps.items()}


def stable_topological_order(
    block: Block, priority: Callable[[Operation, int], Any] | None = None
) -> list[Operation]:
    """
    The ops of `block` in a topological order that picks, among the ready ops, the one of
    lowest `priority(op, position)` (default: its position, so each op comes as early as
    its original place allows). The block's last op (its terminator) stays last.
    """
    if priority is None:
        return _earliest_order(block)
    ops = list(block.ops)
    position = {op: i for i, op in enumerate(ops)}

    def key(op: Operation) -> Any:
        return position[op] if priority is None else priority(op, position[op])

    users, waiting = dependency_graph(block)
    last = block.last_op
    ready = [(key(op), position[op], op) for op in ops if not waiting[op] and op is not last]
    heapq.heapify(ready)
    order: list[Operation] = []
    while ready:
        *_, op = heapq.heappop(ready)
        order.append(op)
        for user in users[op]:
            waiting[user] -= 1
            if not waiting[user] and user is not last:
                heapq.heappush(ready, (key(user), position[user], user))
    if last is not None:
        order.append(last)
    assert len(order) == len(ops), "the block's dependencies have a cycle"
    return order


def _earliest_order(block: Block) -> list[Operation]:
    """
    `stable_topological_order` by position, as one scan of the block: each op in order is
    taken if every op it waits for was, else put aside until they are; taking an op takes
    the ops put aside that now wait for nothing, lowest position first (they come before
    any op not scanned yet: that is the order's rule, the ready op of lowest position).
    Only the ops put aside are heaped, not every op of the block: `collective-combine`
    re-orders the whole program after a merge moved a few collectives (issue 14 item 7).
    """
    ops = list(block.ops)
    deps = block_dependencies(block)
    last = block.last_op
    taken: set[Operation] = set()
    waiting: dict[Operation, int] = {}
    waiters: dict[Operation, list[tuple[int, Operation]]] = {}
    order: list[Operation] = []
    ready: list[tuple[int, Operation]] = []
    for i, op in enumerate(ops):
        if op is last:
            continue
        missing = [d for d in deps[op] if d not in taken]
        if missing:
            waiting[op] = len(missing)
            for d in missing:
                waiters.setdefault(d, []).append((i, op))
            continue
        heapq.heappush(ready, (i, op))
        while ready:
            _, done = heapq.heappop(ready)
            order.append(done)
            taken.add(done)
            for j, user in waiters.pop(done, ()):
                waiting[user] -= 1
                if not waiting[user]:
                    heapq.heappush(ready, (j, user))
    if last is not None:
        order.append(last)
    assert len(order) == len(ops), "the block's dependencies have a cycle"
    return order


def topological_reorder(block: Block) -> None:
    """Stable topological sort: each op as early as its original place allows."""
    set_order(block, stable_topological_order(block))
