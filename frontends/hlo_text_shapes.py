"""
Result shapes XLA's HLO text leaves out: `%s = add(%a, %b)` is valid HLO (XLA's parser
infers the shape), and XLA's own tests write many instructions so.

`infer_shape` gives the shape of an instruction from its operands' converted values and
its attributes, for the opcodes whose shape follows from them (element-wise ops, compare,
select, clamp, dot, transpose, reduce, slice, concatenate, pad, reverse, tuple,
get-tuple-element and the collectives that keep their operand's shape). An opcode whose
shape does not (broadcast, reshape, convert, iota, constant, parameter, bitcast, ...)
needs it written, as XLA's parser says too.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from shardc.frontends.hlo_text_parse import Attr, Instr, Shape
from shardc.frontends.hlo_text_source import ELEMENT_TYPES, TupleVal, Value
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

SAME_AS_FIRST = frozenset(
    """abs add and atan2 cbrt ceil copy cosine divide erf exponential exponential-minus-one
    floor log log-plus-one logistic maximum minimum multiply negate not or popcnt clz power
    remainder reverse round-nearest-afz round-nearest-even rsqrt shift-left
    shift-right-arithmetic shift-right-logical sign sine sqrt subtract tan tanh xor
    all-reduce collective-permute opt-barrier""".split()
)
"""Opcodes whose result has the shape of their first operand."""


class ShapeError(ValueError):
    """The shape cannot be inferred (the message says why)."""


def shape_of(value: Value, pos: int) -> Shape:
    """The HLO shape of a converted value (a tuple's: a tuple shape)."""
    if isinstance(value, TupleVal):
        return Shape(None, [], None, [shape_of(v, pos) for v in value.items], pos)
    assert isinstance(value, SSAValue)
    ty = value.type
    assert isinstance(ty, TensorType)
    names = [k for k, t in ELEMENT_TYPES.items() if t == ty.element_type]
    return Shape(names[0] if names else str(ty.element_type), list(ty.get_shape()), None, [], pos)


def _ints(a: Attr | None) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", a.text)] if a is not None else []


def _dot(instr: Instr, xs: list[Shape]) -> Shape:
    lhs, rhs = xs
    lb, lc = (
        _ints(instr.attrs.get("lhs_batch_dims")),
        _ints(instr.attrs.get("lhs_contracting_dims")),
    )
    rb, rc = (
        _ints(instr.attrs.get("rhs_batch_dims")),
        _ints(instr.attrs.get("rhs_contracting_dims")),
    )
    dims = [lhs.dims[d] for d in lb]
    dims += [n for d, n in enumerate(lhs.dims) if d not in lb and d not in lc]
    dims += [n for d, n in enumerate(rhs.dims) if d not in rb and d not in rc]
    return Shape(lhs.element, dims, None, [], instr.pos)


def _reduce(instr: Instr, xs: list[Shape]) -> Shape:
    half = len(xs) // 2
    dropped = set(_ints(instr.attrs.get("dimensions")))
    outs = [
        Shape(
            init.element, [n for d, n in enumerate(x.dims) if d not in dropped], None, [], instr.pos
        )
        for x, init in zip(xs[:half], xs[half:], strict=True)
    ]
    return outs[0] if half == 1 else Shape(None, [], None, outs, instr.pos)


def _slice(instr: Instr, xs: list[Shape]) -> Shape:
    a = instr.attrs.get("slice")
    if a is None:
        raise ShapeError("slice needs slice={...}")
    dims = []
    for part in re.findall(r"\[([^\]]*)\]", a.text):
        nums = [int(v) for v in part.split(":")]
        start, limit, stride = (nums + [1])[:3]
        dims.append(max(0, -(-(limit - start) // stride)))
    return Shape(xs[0].element, dims, None, [], instr.pos)


def _concatenate(instr: Instr, xs: list[Shape]) -> Shape:
    (d,) = _ints(instr.attrs.get("dimensions"))
    dims = list(xs[0].dims)
    dims[d] = sum(x.dims[d] for x in xs)
    return Shape(xs[0].element, dims, None, [], instr.pos)


def _transpose(instr: Instr, xs: list[Shape]) -> Shape:
    perm = _ints(instr.attrs.get("dimensions"))
    return Shape(xs[0].element, [xs[0].dims[p] for p in perm], None, [], instr.pos)


def _pad(instr: Instr, xs: list[Shape]) -> Shape:
    a = instr.attrs.get("padding")
    if a is None:
        raise ShapeError("pad needs padding=...")
    dims = []
    for n, part in zip(xs[0].dims, a.text.split("x"), strict=True):
        lo, hi, *interior = (int(v) for v in part.split("_"))
        inner = interior[0] if interior else 0
        dims.append(lo + hi + n + max(n - 1, 0) * inner)
    return Shape(xs[0].element, dims, None, [], instr.pos)


def _compare(instr: Instr, xs: list[Shape]) -> Shape:
    return Shape("pred", list(xs[0].dims), None, [], instr.pos)


def _get_tuple_element(instr: Instr, xs: list[Shape]) -> Shape:
    (index,) = _ints(instr.attrs.get("index"))
    return xs[0].elements[index]


RULES: dict[str, Callable[[Instr, list[Shape]], Shape]] = {
    "dot": _dot,
    "reduce": _reduce,
    "slice": _slice,
    "concatenate": _concatenate,
    "transpose": _transpose,
    "pad": _pad,
    "compare": _compare,
    "is-finite": _compare,
    "select": lambda instr, xs: xs[1],
    "clamp": lambda instr, xs: xs[1],
    "tuple": lambda instr, xs: Shape(None, [], None, list(xs), instr.pos),
    "get-tuple-element": _get_tuple_element,
}


def infer_shape(instr: Instr, operands: list[Value]) -> Shape:
    """The result shape of an instruction written without one (ShapeError if it has to be
    written)."""
    xs = [shape_of(v, instr.pos) for v in operands]
    if instr.opcode in SAME_AS_FIRST and xs:
        first = xs[0]
        return Shape(first.element, list(first.dims), None, list(first.elements), instr.pos)
    rule = RULES.get(instr.opcode)
    if rule is None:
        raise ShapeError(
            f"{instr.opcode} needs its result shape written (it does not follow from its operands)"
        )
    try:
        return rule(instr, xs)
    except (ValueError, IndexError) as e:
        raise ShapeError(f"cannot infer the shape of {instr.opcode}: {e}") from None


__all__ = ["ShapeError", "infer_shape", "shape_of"]
