"""
Level G on boxes (issue 17's distributed `--check`): a rank that holds some devices' output
blocks evaluates the level-G reference only on the regions ("boxes") those blocks cover,
so no rank materialises a global array that none of its outputs needs.

* `plan_boxes`, a backward demand pass over the entry block: each output's box (the
  bounding box of the rank's blocks) becomes the box each op needs of its operands.
  Elementwise ops, convert, compare, select: the same box; broadcast_in_dim, transpose,
  slice, reverse: mapped boxes; dot: its batch and free ranges and the full contracting
  range; reduce: the full extent of the reduced dims; concatenate, pad: each operand's
  part of the box (possibly empty: an operand or padding the box does not reach);
  reshape: when each group of dims it splits or merges holds one contiguous flat range
  that is a box of the operand's dims too (a split or merge where the box is whole in the
  inner dims). Any other op (gather, sort, while, a reshape whose box is no box of its
  operand, ...) takes its operands whole and computes its results whole (`full_ops` says
  which, so the check can say it); `BoxedRun.run` cuts an output so computed to its box.
  An op no output needs is not run at all.
* `BoxedRun.run`, the forward pass: the ordinary level-G executor with the entry block's
  steps replaced, each box op by its kernel (the level-G implementation: these ops'
  kernels take any shape) on its operands cut to the boxes it needs, so nested regions,
  fallbacks and the `observe` hook (`driver.tolerance`'s rounding bounds) work unchanged.

A value's box is a tuple of (start, stop) per dimension; what a value holds at run time is
its box exactly (`BoxPlan.box`), and a consumer that needs less cuts it (`BoxPlan.cuts`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from shardc.dialects import hlo, spmd
from shardc.interpreter.devices import Executor
from shardc.interpreter.plan import PLAIN, WRAPPED
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue

Box = tuple[tuple[int, int], ...]

_SAME_BOX = (*hlo.ELEMENTWISE, spmd.ConstraintOp)
"""Ops whose result element i depends on operand element i only (or a scalar operand)."""


def shape_of(value: SSAValue) -> tuple[int, ...]:
    t = value.type
    return tuple(t.get_shape()) if isinstance(t, TensorType) else ()


def whole(shape: Sequence[int]) -> Box:
    return tuple((0, n) for n in shape)


def empty(box: Box) -> bool:
    """True for a box with no elements (a concatenate or pad operand none of whose
    elements a result box holds)."""
    return any(hi <= lo for lo, hi in box)


def union(a: Box | None, b: Box) -> Box:
    if a is None or empty(a):
        return b
    if empty(b):
        return a
    return tuple((min(x0, y0), max(x1, y1)) for (x0, x1), (y0, y1) in zip(a, b, strict=True))


def cut(outer: Box, inner: Box) -> tuple[slice, ...] | None:
    """The index taking `inner` out of an array holding `outer` (None: the same)."""
    if outer == inner:
        return None
    return tuple(slice(i0 - o0, i1 - o0) for (o0, _), (i0, i1) in zip(outer, inner, strict=True))


def box_elements(box: Box) -> int:
    return int(np.prod([hi - lo for lo, hi in box], dtype=np.int64))


@dataclass
class BoxPlan:
    """What the forward pass computes: each value's box, each box op's operand boxes."""

    box: dict[SSAValue, Box] = field(default_factory=dict[SSAValue, Box])
    needs: dict[Operation, list[Box]] = field(default_factory=dict[Operation, list[Box]])
    """Box ops: the box each operand must be cut to."""
    dead: set[Operation] = field(default_factory=set[Operation])
    full_ops: dict[str, int] = field(default_factory=dict[str, int])
    """Ops run on whole operands where some of a result was not needed, by name: count."""
    outputs: list[tuple[SSAValue, Box | None]] = field(
        default_factory=list[tuple[SSAValue, Box | None]]
    )
    """The returned values and the boxes asked of them."""

    def output_cuts(self) -> list[tuple[slice, ...] | None]:
        """Each output's index from what its value holds (more, if its op ran whole) to
        the box asked of it."""
        return [None if b is None else cut(self.box[v], b) for v, b in self.outputs]

    def cuts(self, op: Operation) -> list[tuple[slice, ...] | None]:
        """Each operand's index to its needed box (nothing of it, for an empty one)."""
        return [
            tuple(slice(0, 0) for _ in b) if empty(b) else cut(self.box[v], b)
            for v, b in zip(op.operands, self.needs[op], strict=True)
        ]

    def need(self, value: SSAValue, box: Box) -> None:
        old = self.box.get(value)
        self.box[value] = union(old, box) if old is not None else box


def plan_boxes(function: func.FuncOp, outputs: Sequence[Box | None]) -> BoxPlan:
    """The backward demand pass (module docstring); `outputs[i]` None: not needed."""
    plan = BoxPlan()
    block = function.body.block
    ret = block.last_op
    assert ret is not None
    for value, box in zip(ret.operands, outputs, strict=True):
        plan.outputs.append((value, box))
        if box is not None:
            plan.need(value, box)
    for op in reversed(list(block.ops)[:-1]):
        wanted = [plan.box.get(r) for r in op.results]
        if all(b is None for b in wanted):
            plan.dead.add(op)
            continue
        if not _plan_box_op(plan, op, wanted):
            _plan_whole(plan, op, block)
    return plan


def _plan_box_op(plan: BoxPlan, op: Operation, wanted: list[Box | None]) -> bool:
    """`op` on the union of its results' boxes, if it has a box rule that maps that box
    to boxes of its operands (a rule may say None: not a box, e.g. a reshape's)."""
    rule = None if _captures(op) else _RULES.get(type(op)) or _same_box_rule(op)
    if rule is None or len({shape_of(r) for r in op.results}) != 1:
        return False
    result_box: Box | None = None
    for b in wanted:
        if b is not None:
            result_box = union(result_box, b)
    assert result_box is not None
    needs = [rule(op, i, result_box) for i in range(len(op.operands))]
    if any(b is None for b in needs):
        return False
    for r in op.results:
        plan.box[r] = result_box
    plan.needs[op] = [b for b in needs if b is not None]
    for v, b in zip(op.operands, plan.needs[op], strict=True):
        plan.need(v, b)
    return True


def _plan_whole(plan: BoxPlan, op: Operation, block: Block) -> None:
    """An op without a box rule: every operand (and captured value) whole."""
    partly = any(r in plan.box and plan.box[r] != whole(shape_of(r)) for r in op.results)
    for r in op.results:
        plan.box[r] = whole(shape_of(r))
    if partly:
        plan.full_ops[op.name] = plan.full_ops.get(op.name, 0) + 1
    for inner in op.walk():
        for v in inner.operands:
            if _defined_in(v, block):
                plan.need(v, whole(shape_of(v)))


def _defined_in(value: SSAValue, block: Block) -> bool:
    owner = value.owner
    if isinstance(owner, Block):
        return owner is block
    return owner.parent_block() is block


def _captures(op: Operation) -> bool:
    """True for an op with regions (its body may read values of the entry block)."""
    return bool(op.regions) and not isinstance(op, hlo.ReduceOp)


Rule = Callable[[Operation, int, Box], Box | None]
"""(op, operand index, result box) -> the box of that operand the op needs (None: the
result box needs no box of it: the op runs whole)."""


def _same_box_rule(op: Operation) -> Rule | None:
    if not isinstance(op, _SAME_BOX):
        return None
    return lambda op, i, r: (
        r if len(shape_of(op.operands[i])) == len(r) else whole(shape_of(op.operands[i]))
    )


def _broadcast(op: Operation, i: int, r: Box) -> Box:
    v = op.operands[i]
    assert isinstance(op, hlo.BroadcastOp)
    src, out = shape_of(v), shape_of(op.result)
    return tuple(
        (0, 1) if n == 1 and out[d] != 1 else r[d] for n, d in zip(src, op.dims, strict=True)
    )


def _transpose(op: Operation, i: int, r: Box) -> Box:
    assert isinstance(op, hlo.TransposeOp)
    box = [(0, 0)] * len(r)
    for i, p in enumerate(op.perm):
        box[p] = r[i]
    return tuple(box)


def _slice(op: Operation, i: int, r: Box) -> Box:
    assert isinstance(op, hlo.SliceOp)
    return tuple(
        (s + lo * t, s + (hi - 1) * t + 1) if hi > lo else (s, s)
        for (s, _, t), (lo, hi) in zip(op.bounds, r, strict=True)
    )


def _dot(op: Operation, i: int, r: Box) -> Box:
    v = op.operands[i]
    assert isinstance(op, hlo.DotOp)
    side = i
    batch, contracting = op.batching[side], op.contracting[side]
    shape = shape_of(v)
    free = hlo.dot_free_dims(len(shape), batch, contracting)
    box = list(whole(shape))
    for k, d in enumerate(batch):
        box[d] = r[k]
    offset = len(batch)  # the result: batch, lhs free, rhs free dims
    if side == 1:
        offset += len(hlo.dot_free_dims(len(shape_of(op.lhs)), op.batching[0], op.contracting[0]))
    for j, d in enumerate(free):
        box[d] = r[offset + j]
    return tuple(box)


def _reduce(op: Operation, i: int, r: Box) -> Box:
    v = op.operands[i]
    assert isinstance(op, hlo.ReduceOp)
    shape = shape_of(v)
    if len(shape) != len(r) + len(op.dims):  # an init value
        return whole(shape)
    kept = iter(r)
    return tuple((0, n) if d in op.dims else next(kept) for d, n in enumerate(shape))


def _reverse(op: Operation, i: int, r: Box) -> Box:
    assert isinstance(op, hlo.ReverseOp)
    shape = shape_of(op.operands[0])
    return tuple(
        (n - hi, n - lo) if d in op.dims else (lo, hi)
        for d, ((lo, hi), n) in enumerate(zip(r, shape, strict=True))
    )


def _concatenate(op: Operation, i: int, r: Box) -> Box:
    """Operand i's part of the result box along the dimension (empty if none)."""
    assert isinstance(op, hlo.ConcatenateOp)
    k = op.dimension.value.data
    offset = sum(shape_of(v)[k] for v in op.operands[:i])
    n = shape_of(op.operands[i])[k]
    lo, hi = max(r[k][0] - offset, 0), min(r[k][1] - offset, n)
    return tuple(((lo, hi) if hi > lo else (0, 0)) if d == k else b for d, b in enumerate(r))


def _pad(op: Operation, i: int, r: Box) -> Box:
    """The operand elements the result box holds (empty if only padding)."""
    assert isinstance(op, hlo.PadOp)
    shape = shape_of(op.operands[i])
    if i == 1:
        return whole(shape)
    box = [
        _padded_range(lo, hi, low, step + 1, n)
        for (lo, hi), low, step, n in zip(r, op.low, op.interior, shape, strict=True)
    ]
    return tuple((0, 0) for _ in box) if empty(tuple(box)) else tuple(box)


def _padded_range(lo: int, hi: int, low: int, stride: int, n: int) -> tuple[int, int]:
    """Operand positions p (of n) with lo <= low + p * stride < hi."""
    first = max(0, -((low - lo) // stride))
    last = min(n, (hi - 1 - low) // stride + 1)
    return (first, last) if last > first else (0, 0)


def _reshape(op: Operation, i: int, r: Box) -> Box | None:
    """
    A box when each group of dims the reshape splits or merges holds a contiguous range
    of the group's flattened elements in the result box (dims after one are whole, dims
    before it single indices) that is a box of the operand's dims too; else None.
    """
    src, out = shape_of(op.operands[0]), shape_of(op.results[0])
    if 0 in src or 0 in out or empty(r):
        return None
    box: list[tuple[int, int]] = []
    for a, b in reshape_groups(src, out):
        flat = _flat_range([r[d] for d in b], [out[d] for d in b])
        part = None if flat is None else _range_box(flat, [src[d] for d in a])
        if part is None:
            return None
        box += part
    return tuple(box)


def reshape_groups(src: Sequence[int], out: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """The dims of `src` and `out` (no zero sizes) in groups of equal element counts."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src) or j < len(out):
        a, b, pa, pb = [], [], 1, 1
        if i < len(src):
            a, pa, i = [i], src[i], i + 1
        if j < len(out):
            b, pb, j = [j], out[j], j + 1
        while pa != pb:
            if pa < pb:
                a, pa, i = [*a, i], pa * src[i], i + 1
            else:
                b, pb, j = [*b, j], pb * out[j], j + 1
        groups.append((a, b))
    return groups


def _flat_range(box: list[tuple[int, int]], sizes: list[int]) -> tuple[int, int] | None:
    """The flat (row-major) element range `box` covers, if it is one range."""
    partial = [
        d for d, ((lo, hi), n) in enumerate(zip(box, sizes, strict=True)) if (lo, hi) != (0, n)
    ]
    j = partial[-1] if partial else -1
    if any(box[d][1] - box[d][0] != 1 for d in range(j)):
        return None
    strides = [math.prod(sizes[d + 1 :]) for d in range(len(sizes))]
    start = sum(lo * s for (lo, _), s in zip(box, strides, strict=True))
    if j < 0:
        return (0, math.prod(sizes))
    return (start, start + (box[j][1] - box[j][0]) * strides[j])


def _range_box(flat: tuple[int, int], sizes: list[int]) -> list[tuple[int, int]] | None:
    """The box of dims `sizes` whose flat elements are exactly `flat`, if there is one."""
    f0, f1 = flat
    for j, n in enumerate(sizes):
        stride = math.prod(sizes[j + 1 :])
        if f0 % stride or f1 % stride or f0 // (stride * n) != (f1 - 1) // (stride * n):
            continue
        box = [(x, x + 1) for x in (f0 // math.prod(sizes[d + 1 :]) % sizes[d] for d in range(j))]
        box.append((f0 // stride % n, (f1 - 1) // stride % n + 1))
        return box + [(0, m) for m in sizes[j + 1 :]]
    return [] if flat == (0, 1) and not sizes else None


_RULES: dict[type[Operation], Rule] = {
    hlo.ReverseOp: _reverse,
    hlo.ConcatenateOp: _concatenate,
    hlo.PadOp: _pad,
    hlo.ReshapeOp: _reshape,
    hlo.BroadcastOp: _broadcast,
    hlo.TransposeOp: _transpose,
    hlo.SliceOp: _slice,
    hlo.DotOp: _dot,
    hlo.ReduceOp: _reduce,
    hlo.ConstantOp: lambda op, i, r: r,  # no operands
}


# The forward pass -------------------------------------------------------------------


class BoxedRun:
    """The level-G executor of `function` with its entry block evaluated on `plan`'s boxes."""

    def __init__(self, executor: Executor, function: func.FuncOp, plan: BoxPlan):
        self.executor = executor
        self.plan = plan
        self.inner: dict[Operation, Any] = {}
        """Each box op's kernel on operands already cut (what `observe` may re-run)."""
        executor.prepare(function)
        steps = executor.plan.steps[function.body.block]
        executor.plan.steps[function.body.block] = [self._step(s) for s in steps]
        self.function = function

    def run(self, args: Sequence[Any]) -> tuple[Any, ...]:
        """The outputs on the boxes asked of them."""
        values = self.executor.run(self.function, [list(args)])[0]
        return tuple(_cut(x, c) for x, c in zip(values, self.plan.output_cuts(), strict=True))

    def _step(self, step: tuple[Any, ...]) -> tuple[Any, ...]:
        kind, op, fn, ft, operands, results, specs, *rest = step
        if op in self.plan.dead:
            n = len(results)
            return (PLAIN, op, lambda ft, interp, op, vals: (None,) * n, ft, operands, results,
                    (None,) * n, *rest)  # fmt: skip
        if op not in self.plan.needs:
            return step
        if kind not in (PLAIN, WRAPPED) and not isinstance(op, hlo.ConstantOp):
            raise AssertionError(f"{op.name}: no kernel to run on a box")
        inner = self._kernel(op, kind, fn)
        self.inner[op] = inner
        cuts = self.plan.cuts(op)

        def on_box(ft: Any, interp: Any, op: Operation, vals: tuple[Any, ...]) -> Any:
            return inner(ft, interp, op, tuple(_cut(x, c) for x, c in zip(vals, cuts, strict=True)))

        return (PLAIN, op, on_box, ft, operands, results, (None,) * len(results), *rest)

    def _kernel(self, op: Operation, kind: int, fn: Any) -> Any:
        box = self.plan.box[op.results[0]]
        if isinstance(op, hlo.ConstantOp):  # the whole constant (it is in the module), cut
            return lambda ft, interp, op, vals: tuple(
                np.asarray(x)[cut(whole(np.shape(x)), box) or ()]
                for x in (fn(ft, interp, op, vals) if kind == PLAIN else interp.run_op(op, vals))
            )
        if isinstance(op, hlo.BroadcastOp):
            return lambda ft, interp, op, vals: (_broadcast_box(op, vals[0], box),)
        if isinstance(op, hlo.SliceOp):
            steps = tuple(slice(None, None, t) for _, _, t in op.bounds)
            return lambda ft, interp, op, vals: (np.asarray(vals[0])[steps],)
        if isinstance(op, hlo.ReshapeOp):
            shape = tuple(hi - lo for lo, hi in box)
            return lambda ft, interp, op, vals: (np.reshape(vals[0], shape),)
        if isinstance(op, hlo.ConcatenateOp | hlo.PadOp):
            needs = self.plan.needs[op]
            place = _concatenate_box if isinstance(op, hlo.ConcatenateOp) else _pad_box
            return lambda ft, interp, op, vals: (place(op, vals, needs, box),)
        if kind == WRAPPED:
            return lambda ft, interp, op, vals: fn(ft, interp, op, vals).values
        return fn


def _cut(x: Any, c: tuple[slice, ...] | None) -> Any:
    return x if c is None or x is None else np.asarray(x)[c]


def _concatenate_box(op: Operation, vals: Sequence[Any], needs: list[Box], box: Box) -> Any:
    """hlo.concatenate's result on `box`, from the operands' parts in it."""
    assert isinstance(op, hlo.ConcatenateOp)
    k = op.dimension.value.data
    dtype = np.asarray(vals[0]).dtype
    out = np.empty(tuple(hi - lo for lo, hi in box), dtype=dtype)
    at = 0
    for x, need in zip(vals, needs, strict=True):
        if not empty(need):
            n = need[k][1] - need[k][0]
            index = [slice(None)] * len(box)
            index[k] = slice(at, at + n)
            out[tuple(index)] = x
            at += n
    return out


def _pad_box(op: Operation, vals: Sequence[Any], needs: list[Box], box: Box) -> Any:
    """hlo.pad's result on `box`: the padding value, the operand's part placed in it."""
    assert isinstance(op, hlo.PadOp)
    x = np.asarray(vals[0])
    out = np.full(tuple(hi - lo for lo, hi in box), np.asarray(vals[1], dtype=x.dtype), x.dtype)
    if empty(needs[0]):
        return out
    index = []
    for (p0, p1), (lo, _), low, interior in zip(needs[0], box, op.low, op.interior, strict=True):
        start = low + p0 * (interior + 1) - lo
        index.append(slice(start, start + (p1 - p0 - 1) * (interior + 1) + 1, interior + 1))
    out[tuple(index)] = x
    return out


def _broadcast_box(op: hlo.BroadcastOp, x: Any, box: Box) -> np.ndarray:
    """hlo.broadcast_in_dim's result on `box`, from its operand on the mapped box."""
    shape = tuple(hi - lo for lo, hi in box)
    view = [1] * len(shape)
    src = np.shape(x)
    for i, d in enumerate(op.dims):
        view[d] = src[i]
    return np.broadcast_to(np.reshape(x, view), shape)


__all__ = [
    "Box",
    "BoxPlan",
    "BoxedRun",
    "box_elements",
    "cut",
    "empty",
    "plan_boxes",
    "reshape_groups",
    "union",
    "whole",
]
