"""
`hlo.select_and_scatter` as level-S ops that lower (issue 15 item 3): one definition for
both levels. `lower-to-tpu` rewrites the op into `expansion`'s ops before the kernel is
built (lowering/windows.py `SelectAndScatterToSlices`), and level S charges the op what
those ops cost (`cost.CostModel.op_cost`), so that the two levels time the same work.

The expansion is level S's semantics (interpreter/hlo_windows.py `select_and_scatter`),
op for op:

* Select, per window offset in row-major order, on arrays of the window positions' shape
  (the source's): the offset's element of every window is one strided `hlo.slice` of the
  operand padded with zeros; a valid mask (`true` padded with `false`) says which are not
  padding. A window takes the offset's element where it is valid and either nothing was
  taken yet or the select does not keep the best so far (`GE`: best >= element, so a
  tie keeps the first; `GT`: best > element, a tie takes the last; a NaN on either side
  makes the comparison false, so the element is taken, as level S does). The taken
  offset's row-major index is kept in an i32 `chosen` (-1: the window is all padding).
* Scatter, per offset in REVERSE row-major order, on arrays of the operand's shape: the
  windows that chose the offset give their source element (the others `-0.0`, the
  identity of IEEE addition: `x + -0.0` is `x` for every x, -0.0 and NaN included; 0 for
  integers), placed at their operand position by one `hlo.pad` (interior padding
  stride - 1, low padding offset - low, negative edges cutting what falls in the
  padding), added to the result, which starts as `init`. An element chosen by several
  windows (stride < window) receives them one offset at a time; windows later in
  row-major order reach it through smaller offsets, so the reverse walk adds them in
  row-major window order, as level S's `np.add.at`. Where both addends are NaN, IEEE
  lets the sum be either, and neither level pins which (numpy's loops pick by index path
  and by position in the vector): the result is a NaN there, its payload unspecified.
  bf16/f16 sources accumulate in f32 (`accumulation_type`) and are rounded once at the
  end, as level S.

The select works on the operand's element type; a complex operand or source (no order,
and complex adds are split into parts before this rewrite) has no expansion.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from shardc.dialects import hlo
from shardc.dialects.hlo import BOOL, COMPLEX, FLOAT, accumulation_type, element_kind
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, i1, i32
from xdsl.ir import Attribute, Block, Operation, SSAValue


def expands(op: hlo.SelectAndScatterOp) -> bool:
    """Whether `expansion` applies: neither the operand nor the source is complex."""
    types = (op.operand.type, op.source.type)
    return all(element_kind(_tensor(t).element_type) != COMPLEX for t in types)


def _tensor(ty: Attribute) -> TensorType:
    assert isinstance(ty, TensorType)
    return ty


class _Builder:
    """The ops of an expansion, in order, each at `location`."""

    def __init__(self, location) -> None:
        self.ops: list[Operation] = []
        self.location = location
        self.indices: dict[int, SSAValue] = {}

    def index(self, index: int, shape: Sequence[int]) -> SSAValue:
        """Offset `index` broadcast to the windows' shape, made once for both walks."""
        if index not in self.indices:
            self.indices[index] = self.splat(self.scalar(i32, index), shape)
        return self.indices[index]

    def add(self, op: Operation) -> SSAValue:
        op.location = self.location
        self.ops.append(op)
        return op.results[0]

    def scalar(self, elem: Attribute, value: float | int | bool) -> SSAValue:
        ty = TensorType(elem, [])
        return self.add(hlo.ConstantOp(DenseIntOrFPElementsAttr.from_list(ty, [value])))

    def splat(self, scalar: SSAValue, shape: Sequence[int]) -> SSAValue:
        elem = _tensor(scalar.type).element_type
        return self.add(hlo.BroadcastOp(scalar, [], TensorType(elem, shape)))

    def convert(self, v: SSAValue, elem: Attribute) -> SSAValue:
        ty = _tensor(v.type)
        if ty.element_type == elem:
            return v
        return self.add(hlo.ConvertOp(v, TensorType(elem, ty.get_shape())))


def _offsets(op: hlo.SelectAndScatterOp) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(w) for w in op.window)))


def _select(b: _Builder, op: hlo.SelectAndScatterOp, x: SSAValue) -> SSAValue:
    """The i32 row-major index of each window's selected offset (-1: none)."""
    shape = _tensor(op.source.type).get_shape()
    elem = _tensor(x.type).element_type
    padded = any(op.low) or any(op.high)
    zeros = [0] * len(shape)
    valid = None
    if padded:
        x = b.add(hlo.PadOp(x, b.scalar(elem, 0), op.low, op.high, zeros))
        true = b.splat(b.scalar(i1, True), _tensor(op.operand.type).get_shape())
        valid = b.add(hlo.PadOp(true, b.scalar(i1, False), op.low, op.high, zeros))
    keep = "GE" if op.select.data == "GE" else "GT"
    best = have = chosen = None  # None: nothing taken yet anywhere
    offsets = _offsets(op)
    last = len(offsets) - 1
    for index, offset in enumerate(offsets):
        limit = [k + s * (n - 1) + 1 for k, s, n in zip(offset, op.strides, shape, strict=True)]
        cand = b.add(hlo.SliceOp(x, offset, limit, list(op.strides)))
        ok = b.add(hlo.SliceOp(valid, offset, limit, list(op.strides))) if valid else None
        at = b.index(index, shape)
        if have is None:
            # Nothing taken yet: every valid element is; where none is, `have` stays
            # false, so `best` there is never compared.
            best = cand
            chosen = (
                at if ok is None else b.add(hlo.SelectOp(ok, at, b.splat(b.scalar(i32, -1), shape)))
            )
            have = ok if ok is not None else "all"
            continue
        assert best is not None and chosen is not None
        take = b.add(hlo.NotOp(b.add(hlo.CompareOp(keep, best, cand))))
        if have != "all":
            assert isinstance(have, SSAValue)
            take = b.add(hlo.OrOp(b.add(hlo.NotOp(have)), take))
        if ok is not None:
            take = b.add(hlo.AndOp(ok, take))
        chosen = b.add(hlo.SelectOp(take, at, chosen))
        if index == last:
            break  # no later offset reads `best` or `have`
        best = b.add(hlo.SelectOp(take, cand, best))
        if have != "all":
            assert isinstance(have, SSAValue)
            have = b.add(hlo.OrOp(have, take))
    assert isinstance(chosen, SSAValue)
    return chosen


def _identity(elem: Attribute) -> float | int | bool:
    """What adding leaves every value of `elem` unchanged with (see the module docstring)."""
    kind = element_kind(elem)
    if kind == FLOAT:
        return -0.0
    return False if kind == BOOL else 0


def _scatter(
    b: _Builder, op: hlo.SelectAndScatterOp, chosen: SSAValue, source: SSAValue, init: SSAValue
) -> SSAValue:
    """The result (in the accumulation type): `init` plus, per offset in reverse row-major
    order, the source of the windows that chose it, placed at its operand position."""
    out = _tensor(op.operand.type).get_shape()
    shape = _tensor(op.source.type).get_shape()
    elem = _tensor(init.type).element_type
    total = b.splat(init, out)
    zero = b.scalar(elem, _identity(elem))
    zeros = b.splat(zero, shape)
    combine = hlo.OrOp if element_kind(elem) == BOOL else hlo.AddOp
    offsets = _offsets(op)
    for index in reversed(range(len(offsets))):
        offset = offsets[index]
        hit = b.add(hlo.CompareOp("EQ", chosen, b.index(index, shape)))
        part = b.add(hlo.SelectOp(hit, source, zeros))
        low = [k - lo for k, lo in zip(offset, op.low, strict=True)]
        high = [
            size - at - s * (n - 1) - 1
            for size, at, s, n in zip(out, low, op.strides, shape, strict=True)
        ]
        interior = [s - 1 for s in op.strides]
        placed = b.add(hlo.PadOp(part, zero, low, high, interior))
        total = b.add(combine(total, placed))
    return total


def expansion(
    op: hlo.SelectAndScatterOp, operand: SSAValue, source: SSAValue, init: SSAValue
) -> tuple[list[Operation], SSAValue]:
    """
    The ops computing `op` from `operand`, `source` and `init` (the op's own, or stand-ins
    of their types for costing), in order, and the value that replaces its result.
    """
    b = _Builder(op.location)
    res = _tensor(op.result.type)
    if 0 in res.get_shape() or 0 in _tensor(op.source.type).get_shape():
        return b.ops, b.splat(init, res.get_shape())
    acc = accumulation_type(res.element_type)
    chosen = _select(b, op, operand)
    total = _scatter(b, op, chosen, b.convert(source, acc), b.convert(init, acc))
    return b.ops, b.convert(total, res.element_type)


def standalone_expansion(op: hlo.SelectAndScatterOp) -> list[Operation]:
    """`expansion` on stand-ins of `op`'s operands (block arguments of a detached block),
    so that costing it leaves the program's use lists alone."""
    block = Block(arg_types=[v.type for v in op.operands])
    ops, _ = expansion(op, *block.args)
    return ops
