"""
HLO instructions on arrays to `hlo` (+ `spmd.axis_index`) ops: one converter per opcode,
in a table (`ARRAY_OPS`).

A converter gets the instruction, its array operands (already converted) and its result
type, and returns the converted value; it reads the instruction through `HloSource`. A
`ValueError` it raises becomes a diagnostic at the instruction. Opcodes without an `hlo`
op of their own are written with `hlo` ops (`expansions.py`, shared with the StableHLO
importer). Tuples, calls, async pairs and collectives are the driver's and
`hlo_text_collectives`'s.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from shardc.dialects import hlo, spmd
from shardc.dialects.syntax import splat_element, splat_elements
from shardc.frontends.common import ConverterTable, is_bool, is_float
from shardc.frontends.hlo_text_parse import Computation, Instr
from shardc.frontends.hlo_text_source import HloSource, TupleVal
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, i32
from xdsl.ir import Attribute, SSAValue

BINARY = {
    "add": "add",
    "subtract": "sub",
    "multiply": "mul",
    "divide": "div",
    "maximum": "max",
    "minimum": "min",
    "power": "pow",
    "and": "and",
    "or": "or",
}
UNARY = {
    "negate": "neg",
    "exponential": "exp",
    "log": "log",
    "tanh": "tanh",
    "sqrt": "sqrt",
    "rsqrt": "rsqrt",
    "abs": "abs",
    "sine": "sin",
    "cosine": "cos",
    "logistic": "logistic",
    "not": "not",
}
LEAVES = frozenset({"constant", "iota", "partition-id", "replica-id"})
"""Instructions without operands (or whose operand is a literal)."""

_FIXED_ARITY = {
    **dict.fromkeys(BINARY, 2),
    **dict.fromkeys(UNARY, 1),
    **dict.fromkeys(
        (
            "atan2 complex remainder shift-left shift-right-arithmetic shift-right-logical "
            "xor compare dot convolution pad"
        ).split(),
        2,
    ),
    **dict.fromkeys(
        (
            "bitcast bitcast-convert broadcast cbrt ceil convert copy count-leading-zeros "
            "erf exponential-minus-one floor imag is-finite log-plus-one popcnt real "
            "reshape reverse round-nearest-afz round-nearest-even sign slice tan "
            "transpose"
        ).split(),
        1,
    ),
    **dict.fromkeys(("select", "clamp", "select-and-scatter"), 3),
    "gather": 2,
}
"""Operand counts of the fixed-arity opcodes (XLA's HLO verifier checks the same), so a
malformed operand list is a diagnostic at the instruction, not a converter's crash."""
_MIN_ARITY = {
    "concatenate": 1,
    "dynamic-slice": 1,
    "dynamic-update-slice": 2,
    "scatter": 3,
    "reduce": 2,
    "reduce-window": 2,
}
"""Variadic opcodes: the fewest operands they take."""


def check_operand_count(opcode: str, count: int) -> None:
    """Raise `ValueError` if `opcode` cannot take `count` operands."""
    fixed = _FIXED_ARITY.get(opcode)
    if fixed is not None and count != fixed:
        raise ValueError(f"{opcode} takes {fixed} operand{'s' * (fixed != 1)}, got {count}")
    least = _MIN_ARITY.get(opcode)
    if least is not None and count < least:
        raise ValueError(f"{opcode} takes at least {least} operands, got {count}")


ArrayConverter = Callable[[HloSource, Instr, list[SSAValue], TensorType], SSAValue]
"""(the module, the instruction, its converted operands, its result type) -> its value."""


ARRAY_OPS: ConverterTable[ArrayConverter] = ConverterTable()


def convert_array(cx: HloSource, instr: Instr, xs: list[SSAValue]) -> SSAValue | TupleVal:
    """The converted value of an instruction on arrays (a tuple for sort and topk)."""
    op = instr.opcode
    check_operand_count(op, len(xs))
    if op in TUPLE_OPS:
        return TUPLE_OPS[op](cx, instr, xs)
    if op == "reduce" and len(xs) != 2:
        return variadic_reduce(cx, instr, xs)
    ty = cx.tensor_type(instr.shape)
    converter = ARRAY_OPS.get(op)
    if converter is None:
        raise ValueError(f"{op} is not supported")
    return converter(cx, instr, xs, ty)


# elementwise -------------------------------------------------------------------------------


def _binary(kind: str) -> ArrayConverter:
    return lambda cx, instr, xs, ty: cx.emit.binary(kind, *xs)


def _unary(kind: str) -> ArrayConverter:
    return lambda cx, instr, xs, ty: cx.emit.unary(kind, xs[0])


for _name, _kind in BINARY.items():
    ARRAY_OPS[_name] = _binary(_kind)
for _name, _kind in UNARY.items():
    ARRAY_OPS[_name] = _unary(_kind)


@ARRAY_OPS.converts("compare")
def compare(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    direction = cx.attr(instr, "direction").text
    ctype = instr.attrs.get("type")
    if ctype is not None and ctype.text == "TOTALORDER":
        raise ValueError("compare type=TOTALORDER is not supported")
    if direction not in hlo.COMPARISON_DIRECTIONS:
        raise ValueError(f"unknown comparison direction {direction}")
    cx.stats.constructs[f"compare {direction}"] += 1
    return cx.emit.compare(direction, xs[0], xs[1])


@ARRAY_OPS.converts("select")
def select(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    return cx.emit.select(*xs)


@ARRAY_OPS.converts("convert")
def convert(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    return cx.emit.convert(xs[0], ty)


# leaves ------------------------------------------------------------------------------------


@ARRAY_OPS.converts("constant")
def constant(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    """A literal: one value (a splat, stored once) or one per element."""
    text = instr.operands[0].text if instr.operands else ""
    values = _literal_values(cx, instr, text, ty)
    if hlo.element_kind(ty.element_type) == hlo.COMPLEX:  # XLA writes (re, im) pairs
        values = [(values[i], values[i + 1]) for i in range(0, len(values) - 1, 2)]
    if "{...}" in text.replace(" ", ""):
        raise cx.error(
            instr.operands[0].pos,
            "the constant's values were elided ({...}) when the text was printed",
        )
    n = math.prod(ty.get_shape())
    if len(values) != n and not (len(values) == 1):
        raise cx.error(
            instr.operands[0].pos if instr.operands else instr.pos,
            f"constant has {len(values)} values but {instr.shape} holds {n}",
        )
    if is_bool(ty.element_type):
        values = [int(bool(v)) for v in values]
    if len(values) == 1:  # a splat: one stored element, whatever the shape
        attr = splat_elements(ty, values[0])
    else:
        attr = DenseIntOrFPElementsAttr.from_list(ty, values)  # pyright: ignore
    return cx.emit.value(hlo.ConstantOp(attr))


def _literal_values(cx: HloSource, instr: Instr, text: str, ty: TensorType) -> list[Any]:
    tokens = re.findall(r"-?inf|-?nan|true|false|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", text)
    values: list[Any] = []
    for t in tokens:
        if t in ("true", "false"):
            values.append(1 if t == "true" else 0)
        elif is_float(ty.element_type):
            values.append(float(t))
        else:
            try:
                values.append(int(float(t)) if not t.lstrip("-").isdigit() else int(t))
            except ValueError:
                raise cx.error(
                    instr.operands[0].pos, f"bad literal {t} for {instr.shape}"
                ) from None
    return values


@ARRAY_OPS.converts("iota")
def iota(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    return cx.emit.value(hlo.IotaOp(cx.int_attr(instr, "iota_dimension"), ty))


@ARRAY_OPS.converts("partition-id", "replica-id")
def device_id(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    """XLA's flattened device id is replica x num_partitions + partition (computed in i32,
    converted to the instruction's type: u32 as XLA writes it)."""
    e = cx.emit
    index = e.value(spmd.AxisIndexOp("mesh", "devices", TensorType(i32, [])))
    p = e.splat(cx.partitions, TensorType(i32, []))
    if instr.opcode == "replica-id":
        value = e.binary("div", index, p) if cx.replicas > 1 else e.splat(0, TensorType(i32, []))
    elif cx.replicas == 1:
        value = index
    else:
        value = e.binary("sub", index, e.binary("mul", e.binary("div", index, p), p))
    return value if value.type == ty else e.convert(value, ty)


# shapes and data movement ------------------------------------------------------------------


@ARRAY_OPS.converts("broadcast")
def broadcast(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    return cx.emit.broadcast(xs[0], cx.ints_attr(instr, "dimensions", []), ty)


@ARRAY_OPS.converts("reshape")
def reshape(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    return cx.emit.reshape(xs[0], ty)


@ARRAY_OPS.converts("copy")
def copy(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    return xs[0]  # it changes the layout only


@ARRAY_OPS.converts("bitcast")
def bitcast(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    """A bitcast reinterprets the physical layout: transposes around a reshape."""
    x = xs[0]
    src = x.type
    assert isinstance(src, TensorType)
    if src.element_type != ty.element_type:
        raise ValueError(f"bitcast from {src.element_type} to {ty.element_type} is not supported")
    dep = cx.comp.by_name.get(instr.operand_names()[0]) if cx.comp else None
    src_layout = _layout(dep.shape.layout if dep and dep.shape else None, src.get_num_dims())
    dst_layout = _layout(instr.shape.layout, ty.get_num_dims())
    perm_src = list(reversed(src_layout))  # major to minor
    perm_dst = list(reversed(dst_layout))
    if perm_src != list(range(len(perm_src))) or perm_dst != list(range(len(perm_dst))):
        cx.stats.constructs["bitcast across layouts (transpose)"] += 1
    e = cx.emit
    physical = e.transpose(x, perm_src)
    shape = ty.get_shape()
    r = e.reshape(physical, TensorType(ty.element_type, [shape[d] for d in perm_dst]))
    inverse = [perm_dst.index(d) for d in range(len(perm_dst))]
    return e.transpose(r, inverse)


def _layout(layout: list[int] | None, rank: int) -> list[int]:
    if layout is None or len(layout) != rank:
        return list(range(rank - 1, -1, -1))
    return layout


@ARRAY_OPS.converts("transpose")
def transpose(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    return cx.emit.transpose(xs[0], cx.ints_attr(instr, "dimensions"))


@ARRAY_OPS.converts("slice")
def slice_(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    a = cx.attr(instr, "slice")
    ranges = re.findall(r"\[\s*(-?\d+)\s*:\s*(-?\d+)\s*(?::\s*(-?\d+)\s*)?\]", a.text)
    starts = [int(r[0]) for r in ranges]
    limits = [int(r[1]) for r in ranges]
    strides = [int(r[2]) if r[2] else 1 for r in ranges]
    return cx.emit.slice(xs[0], starts, limits, strides)


@ARRAY_OPS.converts("dynamic-slice")
def dynamic_slice(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    idx = [cx.emit.convert(i, TensorType(i32, [])) for i in xs[1:]]
    sizes = cx.ints_attr(instr, "dynamic_slice_sizes")
    return cx.emit.value(hlo.DynamicSliceOp(xs[0], idx, sizes))


@ARRAY_OPS.converts("dynamic-update-slice")
def dynamic_update_slice(
    cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType
) -> SSAValue:
    idx = [cx.emit.convert(i, TensorType(i32, [])) for i in xs[2:]]
    return cx.emit.value(hlo.DynamicUpdateSliceOp(xs[0], xs[1], idx))


@ARRAY_OPS.converts("concatenate")
def concatenate(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    (dim,) = cx.ints_attr(instr, "dimensions")
    return cx.emit.value(hlo.ConcatenateOp(xs, dim))


# pad and reverse ---------------------------------------------------------------------------


@ARRAY_OPS.converts("pad")
def pad(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    """`padding=lo_hi[_interior]x...`, one entry per dimension (edges may be negative)."""
    a = cx.attr(instr, "padding")
    entries = [e.split("_") for e in a.text.replace(" ", "").split("x")] if a.text else []
    if len(entries) != len(ty.get_shape()) or any(len(e) not in (2, 3) for e in entries):
        raise ValueError(f"padding={a.text} must give lo_hi[_interior] for each dimension")
    low = [int(e[0]) for e in entries]
    high = [int(e[1]) for e in entries]
    interior = [int(e[2]) if len(e) == 3 else 0 for e in entries]
    return cx.emit.value(hlo.PadOp(xs[0], xs[1], low, high, interior))


@ARRAY_OPS.converts("reverse")
def reverse(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    return cx.emit.value(hlo.ReverseOp(xs[0], cx.ints_attr(instr, "dimensions")))


# contractions and reductions ---------------------------------------------------------------


@ARRAY_OPS.converts("dot")
def dot(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    batching = (
        cx.ints_attr(instr, "lhs_batch_dims", []),
        cx.ints_attr(instr, "rhs_batch_dims", []),
    )
    contracting = (
        cx.ints_attr(instr, "lhs_contracting_dims", []),
        cx.ints_attr(instr, "rhs_contracting_dims", []),
    )
    return cx.emit.value(hlo.DotOp(xs[0], xs[1], contracting, batching, ty))


@ARRAY_OPS.converts("reduce")
def reduce(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    root = cx.called(instr, "to_apply").root.opcode
    if root in BITWISE_REDUCERS and not is_bool(xs[0].type.element_type):  # pyright: ignore
        # an integer or / and / xor (XLA's expanded rng-bit-generator): a reduce with a body
        return variadic_reduce(cx, instr, xs).items[0]
    kind = cx.reducer(instr, xs[0].type.element_type)  # pyright: ignore
    cx.stats.constructs[f"reduce {kind}"] += 1
    init_value = _literal_scalar(xs[1])
    return cx.emit.reduce(kind, xs[0], cx.ints_attr(instr, "dimensions"), xs[1], init_value)


BITWISE_REDUCERS = ("or", "and", "xor")
"""Integer reducers that hlo.reduce's kinds do not name: imported with their body."""


def _literal_scalar(value: SSAValue) -> float | int | bool | None:
    """The value of a splat constant (None if `value` is not one)."""
    owner = value.owner
    if isinstance(owner, hlo.ConstantOp):
        v = splat_element(owner.value)
        if v is not None:
            return bool(v) if is_bool(owner.value.get_type().element_type) else v  # pyright: ignore
    return None


# element-wise opcodes of issue 13 (one hlo op each) -----------------------------------------

ELEMENTWISE_13: dict[str, type[hlo.HloOp]] = {
    "clamp": hlo.ClampOp,
    "remainder": hlo.RemainderOp,
    "ceil": hlo.CeilOp,
    "floor": hlo.FloorOp,
    "round-nearest-even": hlo.RoundNearestEvenOp,
    "round-nearest-afz": hlo.RoundNearestAfzOp,
    "sign": hlo.SignOp,
    "atan2": hlo.Atan2Op,
    "cbrt": hlo.CbrtOp,
    "exponential-minus-one": hlo.Expm1Op,
    "log-plus-one": hlo.Log1pOp,
    "erf": hlo.ErfOp,
    "tan": hlo.TanOp,
    "is-finite": hlo.IsFiniteOp,
    "xor": hlo.XorOp,
    "shift-left": hlo.ShiftLeftOp,
    "shift-right-logical": hlo.ShiftRightLogicalOp,
    "shift-right-arithmetic": hlo.ShiftRightArithmeticOp,
    "popcnt": hlo.PopcntOp,
    "count-leading-zeros": hlo.CountLeadingZerosOp,
}


def _one_op(cls: type[hlo.HloOp]) -> ArrayConverter:
    return lambda cx, instr, xs, ty: cx.emit.value(cls(*xs))  # pyright: ignore[reportCallIssue]


for _name, _cls in ELEMENTWISE_13.items():
    ARRAY_OPS[_name] = _one_op(_cls)


# element types of issue 13: complex numbers and bitcasts -----------------------------------

for _name, _cls in {"complex": hlo.ComplexOp, "real": hlo.RealOp, "imag": hlo.ImagOp}.items():
    ARRAY_OPS[_name] = _one_op(_cls)


@ARRAY_OPS.converts("bitcast-convert")
def bitcast_convert(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    """XLA's bitcast-convert: the result's element type, its shape from the operand's."""
    src = xs[0].type
    assert isinstance(src, TensorType)
    a, b = hlo.bit_width(src.element_type), hlo.bit_width(ty.element_type)
    shape = list(src.get_shape())
    shape = shape + [a // b] if a > b else shape[:-1] if a < b else shape
    return cx.emit.value(hlo.BitcastConvertOp(xs[0], TensorType(ty.element_type, shape)))


# sort and topk (tuple-shaped results) -----------------------------------------------------

TupleConverter = Callable[[HloSource, Instr, list[SSAValue]], SSAValue | TupleVal]


def _peel_canonicalization(comp: Computation, name: str) -> tuple[str, bool]:
    """The instruction under jnp.sort's key canonicalization (`select(compare, constant, y)`
    repeated), and whether there was any."""
    peeled = False
    while (i := comp.by_name.get(name)) is not None and i.opcode == "select":
        pred, const, rest = (comp.by_name.get(n) for n in i.operand_names())
        if pred is None or const is None or rest is None:
            break
        if pred.opcode != "compare" or const.opcode not in ("constant", "broadcast"):
            break
        name, peeled = rest.name, True
    return name, peeled


def _peel_total_order(comp: Computation, name: str) -> tuple[str, bool]:
    """The float under XLA's total-order key (`select(compare(b, 0, LT), xor(max, b), b)`
    with `b = bitcast(x)`: what an optimized TOTALORDER compare becomes), and whether
    there was one."""
    i = comp.by_name.get(name)
    if i is None or i.opcode != "select":
        return name, False
    pred, flipped, bits = (comp.by_name.get(n) for n in i.operand_names())
    if pred is None or flipped is None or bits is None:
        return name, False
    if (
        pred.opcode == "compare"
        and flipped.opcode == "xor"
        and bits.opcode in ("bitcast", "bitcast-convert")
        and bits.name in pred.operand_names()
        and bits.name in flipped.operand_names()
    ):
        return bits.operand_names()[0], True
    return name, False


def sort_comparator(cx: HloSource, instr: Instr, n: int) -> str:
    """hlo.sort's comparator from `to_apply`: compare LT/GT of parameters 0 and 1 (the
    key's pair), directly, in TOTALORDER, or on keys canonicalized as jnp.sort does."""
    comp = cx.called(instr, "to_apply")
    params = {cx.parameter_number(i): i.name for i in comp.instrs if i.opcode == "parameter"}
    root = comp.root
    if len(params) == 2 * n and root.opcode == "compare" and len(root.operands) == 2:
        (lt, lo), (rt, ro) = (_peel_total_order(comp, o) for o in root.operand_names())
        (lhs, lc), (rhs, rc) = (_peel_canonicalization(comp, o) for o in (lt, rt))
        direction = cx.attr(root, "direction").text.strip()
        kind = root.attrs.get("type")
        total = (kind is not None and kind.text.strip() == "TOTALORDER") or (lo and ro)
        if direction in ("LT", "GT") and lc == rc and {lhs, rhs} == {params[0], params[1]}:
            if lhs == params[1]:
                direction = "GT" if direction == "LT" else "LT"
            return direction + (" TOTALORDER" if total and not lc else "")
    ops = ", ".join(i.opcode for i in comp.instrs if i.opcode != "parameter")
    raise ValueError(
        f"the sort comparator {comp.name} computes {ops}; shardc recognizes one that compares "
        "parameters 0 and 1 (the key) with LT or GT (TOTALORDER or not, keys canonicalized "
        "as jnp.sort does or not)"
    )


def sort(cx: HloSource, instr: Instr, xs: list[SSAValue]) -> SSAValue | TupleVal:
    comparator = sort_comparator(cx, instr, len(xs))
    stable = instr.attrs.get("is_stable")
    is_stable = stable is not None and stable.text.strip() == "true"
    cx.stats.constructs[f"sort {comparator}"] += 1
    (dim,) = cx.ints_attr(instr, "dimensions")
    op = cx.emit.add(hlo.SortOp(xs, dim, comparator, is_stable))
    return TupleVal(list(op.results)) if instr.shape.is_tuple() else op.results[0]


def topk(cx: HloSource, instr: Instr, xs: list[SSAValue]) -> SSAValue | TupleVal:
    largest = instr.attrs.get("largest")
    if largest is not None and largest.text.strip() != "true":
        raise ValueError("topk with largest=false is not supported (hlo.top_k takes the largest)")
    op = cx.emit.add(hlo.TopKOp(xs[0], cx.int_attr(instr, "k")))
    return TupleVal(list(op.results))


def _parameters_used(comp: Computation, name: str, cx: HloSource) -> set[int]:
    """The parameter numbers an instruction of `comp` depends on."""
    seen: set[str] = set()
    stack, found = [name], set()
    while stack:
        i = comp.by_name.get(stack.pop())
        if i is None or i.name in seen:
            continue
        seen.add(i.name)
        if i.opcode == "parameter":
            found.add(cx.parameter_number(i))
        stack.extend(i.operand_names())
    return found


def custom_top_k(cx: HloSource, instr: Instr, xs: list[SSAValue]) -> SSAValue | TupleVal:
    """`custom-call(x), custom_call_target="TopK", called_computations={%greater}`: the
    (values, indices) of the k largest along the last dimension, k from the result shape.
    The comparator must compare GT a function of parameter 0 with the same of parameter 1
    (directly, or XLA's total-order form through bitcasts and sign flips)."""
    comp = cx.called(instr, "called_computations")
    root = comp.root
    direction = root.attrs.get("direction")
    sides = [_parameters_used(comp, n, cx) for n in root.operand_names()]
    if (
        root.opcode != "compare"
        or direction is None
        or direction.text.strip() != "GT"
        or sides != [{0}, {1}]
    ):
        raise ValueError(
            f"custom-call TopK with comparator {comp.name}: shardc takes the largest "
            "(compare GT of parameter 0 against parameter 1)"
        )
    shape = instr.shape
    if len(xs) != 1 or shape is None or not shape.is_tuple() or len(shape.elements) != 2:
        raise ValueError("custom-call TopK takes one operand and gives (values, indices)")
    cx.stats.constructs["custom-call TopK"] += 1
    op = cx.emit.add(hlo.TopKOp(xs[0], shape.elements[0].dims[-1]))
    return TupleVal(list(op.results))


TUPLE_OPS: dict[str, TupleConverter] = {"sort": sort, "topk": topk}


# convolution --------------------------------------------------------------------------------

_XLA_WINDOW = {"stride": "stride", "lhs_dilate": "lhs_dilate", "rhs_dilate": "rhs_dilate"}


def conv_window(text: str, n: int) -> dict[str, list[int]]:
    """`{size=3x3 stride=2x2 pad=1_1x0_-1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=1x0}`
    as `hlo.parse_conv_window` gives it (`size` is the kernel's, checked by the verifier)."""
    window: dict[str, list[int]] = {}
    for item in text.strip().strip("{}").split():
        key, _, value = item.partition("=")
        entries = value.split("x") if value else []
        if len(entries) != n:
            raise ValueError(f"window {key}={value} must have {n} entries (the spatial dims)")
        if key == "pad":
            pairs = [e.split("_") for e in entries]
            if any(len(p) != 2 for p in pairs):
                raise ValueError(f"window pad={value} must give lo_hi for each spatial dim")
            window["pad"] = [int(v) for p in pairs for v in p]
        elif key == "rhs_reversal":
            window["reverse"] = [int(e) for e in entries]
        elif key in _XLA_WINDOW:
            window[key] = [int(e) for e in entries]
        elif key != "size":
            raise ValueError(f"unknown window field {key}=")
    return window


def conv_dim_labels(text: str) -> list[list[int]]:
    """`b01f_01io->b01f` as (lhs, rhs, out) dimension lists."""
    m = re.fullmatch(r"(\w+)_(\w+)->(\w+)", text.strip())
    if m is None:
        raise ValueError(f"dim_labels={text} must read like b01f_01io->b01f")
    return [
        hlo.conv_dims_from_labels(list(part), letters)
        for part, letters in zip(m.groups(), ("bf", "io", "bf"), strict=True)
    ]


@ARRAY_OPS.converts("convolution")
def convolution(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    dims = conv_dim_labels(cx.attr(instr, "dim_labels").text)
    n = len(dims[0]) - 2
    window = instr.attrs.get("window")
    groups = [
        cx.int_attr(instr, k) if k in instr.attrs else 1
        for k in ("feature_group_count", "batch_group_count")
    ]
    parsed = conv_window(window.text, n) if window is not None else {}
    return cx.emit.value(hlo.ConvolutionOp(xs[0], xs[1], dims, ty, parsed, *groups))


# gather and scatter -----------------------------------------------------------------------

SCATTER_COMBINERS = {"add": "add", "multiply": "mul", "maximum": "max", "minimum": "min"}
"""XLA's scatter update computations of one op of the two parameters."""


@ARRAY_OPS.converts("gather")
def gather(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    dims = {
        key: cx.ints_attr(instr, key, [])
        for key in ("offset_dims", "collapsed_slice_dims", "start_index_map", "slice_sizes")
    }
    dims["operand_batching_dims"] = cx.ints_attr(instr, "operand_batching_dims", [])
    dims["start_indices_batching_dims"] = cx.ints_attr(instr, "start_indices_batching_dims", [])
    sorted_flag = instr.attrs.get("indices_are_sorted")
    is_sorted = sorted_flag is not None and sorted_flag.text.strip() == "true"
    ivd = cx.int_attr(instr, "index_vector_dim")
    return cx.emit.value(hlo.GatherOp(xs[0], xs[1], dims, ivd, is_sorted))


def scatter_kind(cx: HloSource, instr: Instr) -> str:
    """
    `to_apply`'s update computation: the second parameter returned (replace: `x.at[i].set`)
    or one add / multiply / maximum / minimum of the two parameters.
    """
    comp = cx.called(instr, "to_apply")
    params = {cx.parameter_number(i): i.name for i in comp.instrs if i.opcode == "parameter"}
    root = comp.root
    if len(params) == 2:
        if root.name == params[1]:
            return "replace"
        kind = SCATTER_COMBINERS.get(root.opcode)
        if kind is not None and set(root.operand_names()) == set(params.values()):
            if len(comp.instrs) == 3:
                return kind
    ops = ", ".join(i.opcode for i in comp.instrs if i.opcode != "parameter") or "nothing"
    a = cx.attr(instr, "to_apply")
    raise cx.error(
        a.pos,
        f"to_apply={comp.name} computes {ops}; shardc recognizes scatter update computations "
        "that return the second parameter (replace) or add, multiply, take the maximum or "
        "the minimum of the two parameters",
        len(a.text),
    )


@ARRAY_OPS.converts("scatter")
def scatter(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    if len(xs) != 3:
        raise ValueError(
            f"a scatter of {len(xs) // 2} operands together is not supported (hlo.scatter "
            "updates one operand)"
        )
    kind = scatter_kind(cx, instr)
    keys = (
        "update_window_dims",
        "inserted_window_dims",
        "input_batching_dims",
        "scatter_indices_batching_dims",
        "scatter_dims_to_operand_dims",
    )
    dims = {key: cx.ints_attr(instr, key, []) for key in keys}
    flags = [
        f
        for f in ("indices_are_sorted", "unique_indices")
        if (a := instr.attrs.get(f)) is not None and a.text.strip() == "true"
    ]
    cx.stats.constructs[f"scatter {kind}"] += 1
    ivd = cx.int_attr(instr, "index_vector_dim")
    return cx.emit.value(hlo.ScatterOp(kind, xs, dims, ivd, flags))


# reduce-window and select-and-scatter ----------------------------------------------------

_WINDOW_KEYS = {"size", "stride", "pad", "lhs_dilate", "rhs_dilate"}


def window_attr(cx: HloSource, instr: Instr, rank: int) -> dict[str, object]:
    """`window={size=2x2 stride=2x2 pad=0_1x1_1 lhs_dilate=1x1 rhs_dilate=1x1}` as
    hlo.ReduceWindowOp's keywords (stride, dilations 1 and pad 0_0 by default)."""
    a = cx.attr(instr, "window")
    fields = dict(f.split("=", 1) for f in a.text.strip().strip("{}").split())
    unknown = sorted(set(fields) - _WINDOW_KEYS)
    if unknown:
        raise ValueError(f"window={a.text}: {', '.join(unknown)} is not supported")

    def each(key: str, default: str) -> list[str]:
        values = fields[key].split("x") if key in fields else [default] * rank
        if len(values) != rank:
            raise ValueError(f"window={a.text}: {key} needs {rank} entries")
        return values

    pads = [p.split("_") for p in each("pad", "0_0")]
    if any(len(p) != 2 for p in pads):
        raise ValueError(f"window={a.text}: pad entries are low_high")
    return {
        "window": [int(v) for v in each("size", "1")],
        "strides": [int(v) for v in each("stride", "1")],
        "padding": [(int(lo), int(hi)) for lo, hi in pads],
        "base_dilations": [int(v) for v in each("lhs_dilate", "1")],
        "window_dilations": [int(v) for v in each("rhs_dilate", "1")],
    }


@ARRAY_OPS.converts("reduce-window")
def reduce_window(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    if len(xs) != 2:
        raise ValueError(
            f"a reduce-window of {len(xs) // 2} operands together is not supported: "
            "hlo.reduce_window reduces one operand"
        )
    kind = cx.reducer(instr, xs[0].type.element_type)  # pyright: ignore
    cx.stats.constructs[f"reduce_window {kind}"] += 1
    w = window_attr(cx, instr, len(ty.get_shape()))
    return cx.emit.value(hlo.ReduceWindowOp(kind, xs[0], xs[1], **w))  # pyright: ignore[reportArgumentType]


def window_select(cx: HloSource, instr: Instr) -> str:
    """GE / GT from `select=`: a compare of parameters 0 and 1 (either way round)."""
    comp = cx.called(instr, "select")
    params = {cx.parameter_number(i): i.name for i in comp.instrs if i.opcode == "parameter"}
    root = comp.root
    if len(params) == 2 and root.opcode == "compare":
        direction = cx.attr(root, "direction").text.strip()
        names = root.operand_names()
        if names == [params[0], params[1]] and direction in ("GE", "GT"):
            return direction
        if names == [params[1], params[0]] and direction in ("LE", "LT"):
            return {"LE": "GE", "LT": "GT"}[direction]
    ops = ", ".join(i.opcode for i in comp.instrs if i.opcode != "parameter")
    raise ValueError(
        f"select={comp.name} computes {ops}; shardc recognizes a compare GE or GT of "
        "parameters 0 and 1 (max-pooling's gradient)"
    )


@ARRAY_OPS.converts("select-and-scatter")
def select_and_scatter(cx: HloSource, instr: Instr, xs: list[SSAValue], ty: TensorType) -> SSAValue:
    select = window_select(cx, instr)
    scatter = cx.reducer(instr, xs[1].type.element_type, "scatter")  # pyright: ignore
    if scatter != "add":
        raise ValueError(f"scatter= computes {scatter}; shardc recognizes add")
    w = window_attr(cx, instr, len(ty.get_shape()))
    if any(d != 1 for d in [*w["base_dilations"], *w["window_dilations"]]):  # pyright: ignore
        raise ValueError("select-and-scatter has no dilations")
    cx.stats.constructs[f"select_and_scatter {select}"] += 1
    op = hlo.SelectAndScatterOp(
        xs[0],
        xs[1],
        xs[2],
        w["window"],  # pyright: ignore[reportArgumentType]
        w["strides"],  # pyright: ignore[reportArgumentType]
        w["padding"],  # pyright: ignore[reportArgumentType]
        select,
    )
    return cx.emit.value(op)


# variadic reduce (argmax / argmin) ----------------------------------------------------------


def variadic_reduce(cx: HloSource, instr: Instr, xs: list[SSAValue]) -> TupleVal:
    """`reduce` of N operands and N inits: hlo.reduce with `to_apply` as its body."""
    n = len(xs) // 2
    if len(xs) % 2 or not n or cx.body_region is None:
        raise ValueError(f"reduce takes N operands and N inits, got {len(xs)} operands")
    scalars: list[Attribute] = [TensorType(x.type.element_type, []) for x in xs[:n]]  # pyright: ignore
    region = cx.body_region(instr, cx.called(instr, "to_apply"), scalars * 2)
    dims = cx.ints_attr(instr, "dimensions")
    cx.stats.constructs["reduce with a body"] += 1
    op = cx.emit.add(hlo.ReduceOp.with_body(xs[:n], xs[n:], dims, region))
    return TupleVal(list(op.results))


# rng-bit-generator (issue 13) ---------------------------------------------------------------

XLA_RNG_ALGORITHMS = {
    "rng_default": "DEFAULT",
    "rng_three_fry": "THREE_FRY",
    "rng_philox": "PHILOX",
}
"""XLA's `algorithm=` spellings: StableHLO's rng_algorithm."""


def rng_bit_generator(cx: HloSource, instr: Instr, xs: list[SSAValue]) -> TupleVal:
    """`(u64[2], u32[8,16]) rng-bit-generator(%state), algorithm=rng_three_fry`."""
    attr = instr.attrs.get("algorithm")
    text = attr.text.strip() if attr is not None else "rng_default"
    algorithm = XLA_RNG_ALGORITHMS.get(text)
    if algorithm is None:
        raise ValueError(f"algorithm={text} is not one of {', '.join(XLA_RNG_ALGORITHMS)}")
    if not instr.shape.is_tuple() or len(instr.shape.elements) != 2 or len(xs) != 1:
        raise ValueError("rng-bit-generator takes a state and produces a (state, bits) tuple")
    bits = cx.tensor_type(instr.shape.elements[1])
    cx.stats.constructs[f"rng-bit-generator {algorithm}"] += 1
    op = cx.emit.add(hlo.RngBitGeneratorOp(xs[0], algorithm, bits))
    return TupleVal(list(op.results))


TUPLE_OPS["rng-bit-generator"] = rng_bit_generator
