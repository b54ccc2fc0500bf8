"""
StableHLO and CHLO ops to `hlo` (+ `spmd.constraint`) ops: one converter per op name, in
a table (`OPS`), as MLIR's conversion patterns are keyed by op.

A converter gets the op, its converted operands and whether it runs inside a manual
computation (on per-device values), and returns the converted results. It sees the
importer only through `OpContext` (the emitter, statistics, the sharding converter and the
device counts). A `ValueError` it raises becomes a diagnostic at the op. Ops without an
`hlo` op of their own are written with `hlo` ops (`expansions.py`); the collectives are
in `stablehlo_collectives.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shardc.dialects import hlo, spmd
from shardc.frontends import expansions as ex
from shardc.frontends.common import ConverterTable, Emitter, ImportStats, is_bool
from shardc.frontends.stablehlo_dialect import ConvDimensionNumbersAttr, KeyValueAttr
from shardc.frontends.stablehlo_shardings import ShardingConverter
from shardc.frontends.stablehlo_source import (
    call_target,
    enum_value,
    get_attr,
    gspmd_string,
    ints,
    one_int,
    rank,
    require,
    splat_value,
)
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

BINARY = {
    "stablehlo.add": "add",
    "stablehlo.subtract": "sub",
    "stablehlo.multiply": "mul",
    "stablehlo.divide": "div",
    "stablehlo.maximum": "max",
    "stablehlo.minimum": "min",
    "stablehlo.power": "pow",
    "stablehlo.and": "and",
    "stablehlo.or": "or",
}
UNARY = {
    "stablehlo.negate": "neg",
    "stablehlo.exponential": "exp",
    "stablehlo.log": "log",
    "stablehlo.tanh": "tanh",
    "stablehlo.sqrt": "sqrt",
    "stablehlo.rsqrt": "rsqrt",
    "stablehlo.abs": "abs",
    "stablehlo.sine": "sin",
    "stablehlo.cosine": "cos",
    "stablehlo.logistic": "logistic",
    "stablehlo.not": "not",
}
REDUCER_KINDS = {
    "stablehlo.add": "add",
    "stablehlo.multiply": "mul",
    "stablehlo.maximum": "max",
    "stablehlo.minimum": "min",
}
BOOL_REDUCER_KINDS = {"stablehlo.or": "max", "stablehlo.and": "min"}


@dataclass
class OpContext:
    """What an op converter may use of the importer."""

    emit: Emitter
    stats: ImportStats
    shardings: ShardingConverter
    replicas: int
    partitions: int
    region: RegionConverter | None = None
    """Converts the block of a region (while, case, if) with the same converters."""
    manual_axes: tuple[str, ...] = ()
    """Inside a manual computation, its manual axes (the others are free: auto axes)."""


RegionConverter = Callable[[Block, Sequence[SSAValue], bool], Block]
"""(source block, values of its arguments, inside a manual computation) -> a new block
holding the converted ops and an `hlo.return` of what the source block returns."""

Converter = Callable[[OpContext, Operation, list[SSAValue], bool], list[SSAValue]]
"""(context, source op, converted operands, inside a manual computation) -> results."""


OPS: ConverterTable[Converter] = ConverterTable()


# elementwise -------------------------------------------------------------------------------


def _binary(kind: str) -> Converter:
    return lambda cx, op, xs, local: [cx.emit.binary(kind, *xs)]


def _unary(kind: str) -> Converter:
    return lambda cx, op, xs, local: [cx.emit.unary(kind, xs[0])]


for _name, _kind in BINARY.items():
    OPS[_name] = _binary(_kind)
for _name, _kind in UNARY.items():
    OPS[_name] = _unary(_kind)


@OPS.converts("stablehlo.convert")
def convert(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    shape = xs[0].type.get_shape()  # pyright: ignore  (the operand's, maybe local, shape)
    return [cx.emit.convert(xs[0], TensorType(op.results[0].type.element_type, shape))]  # pyright: ignore


@OPS.converts("stablehlo.select")
def select(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    return [cx.emit.select(*xs)]


@OPS.converts("stablehlo.compare")
def compare(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    direction = enum_value(require(op, "comparison_direction"))
    if direction not in hlo.COMPARISON_DIRECTIONS:
        raise ValueError(f"unknown comparison direction {direction}")
    ctype_attr = get_attr(op, "compare_type")
    ctype = enum_value(ctype_attr) if ctype_attr is not None else "NOTYPE"
    elem = xs[0].type.element_type  # pyright: ignore
    if ctype == "TOTALORDER":
        raise ValueError(
            "compare type TOTALORDER (orders NaNs and -0.0) is not supported: "
            "hlo.compare compares floats as FLOAT"
        )
    if ctype == "UNSIGNED" and not is_bool(elem) and not hlo.is_unsigned(elem):
        raise ValueError("compare type UNSIGNED on signed integers is not supported")
    if ctype == "SIGNED" and hlo.is_unsigned(elem):
        raise ValueError("compare type SIGNED on unsigned integers is not supported")
    if ctype not in ("FLOAT", "SIGNED", "UNSIGNED", "NOTYPE"):
        raise ValueError(f"unknown compare type {ctype}")
    cx.stats.constructs[f"compare {direction}"] += 1
    return [cx.emit.compare(direction, xs[0], xs[1])]


# shapes and data movement ------------------------------------------------------------------


@OPS.converts("stablehlo.constant")
def constant(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    value = require(op, "value")
    if not isinstance(value, DenseIntOrFPElementsAttr):
        raise ValueError(f"expected a dense constant, got {value}")
    return [cx.emit.value(hlo.ConstantOp(value))]


@OPS.converts("stablehlo.iota")
def iota(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    dim = one_int(require(op, "iota_dimension"))
    return [cx.emit.value(hlo.IotaOp(dim, op.results[0].type))]  # pyright: ignore


@OPS.converts("stablehlo.broadcast_in_dim")
def broadcast(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    dims = ints(require(op, "broadcast_dimensions"))
    return [cx.emit.broadcast(xs[0], dims, op.results[0].type)]  # pyright: ignore


@OPS.converts("stablehlo.reshape")
def reshape(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    return [cx.emit.reshape(xs[0], op.results[0].type)]  # pyright: ignore


@OPS.converts("stablehlo.transpose")
def transpose(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    return [cx.emit.transpose(xs[0], ints(require(op, "permutation")))]


@OPS.converts("stablehlo.slice")
def slice_(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    start = ints(require(op, "start_indices"))
    limit = ints(require(op, "limit_indices"))
    strides = ints(require(op, "strides"))
    return [cx.emit.slice(xs[0], start, limit, strides)]


@OPS.converts("stablehlo.dynamic_slice")
def dynamic_slice(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    idx = [cx.emit.convert(i, TensorType(i32, [])) for i in xs[1:]]
    sizes = ints(require(op, "slice_sizes"))
    return [cx.emit.value(hlo.DynamicSliceOp(xs[0], idx, sizes))]


@OPS.converts("stablehlo.dynamic_update_slice")
def dynamic_update_slice(
    cx: OpContext, op: Operation, xs: list[SSAValue], local: bool
) -> list[SSAValue]:
    idx = [cx.emit.convert(i, TensorType(i32, [])) for i in xs[2:]]
    return [cx.emit.value(hlo.DynamicUpdateSliceOp(xs[0], xs[1], idx))]


@OPS.converts("stablehlo.concatenate")
def concatenate(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    return [cx.emit.value(hlo.ConcatenateOp(xs, one_int(require(op, "dimension"))))]


@OPS.converts("stablehlo.optimization_barrier")
def optimization_barrier(
    cx: OpContext, op: Operation, xs: list[SSAValue], local: bool
) -> list[SSAValue]:
    return list(xs)


# pad and reverse ---------------------------------------------------------------------------


@OPS.converts("stablehlo.pad")
def pad(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    low = ints(require(op, "edge_padding_low"))
    high = ints(require(op, "edge_padding_high"))
    interior = ints(require(op, "interior_padding"))
    return [cx.emit.value(hlo.PadOp(xs[0], xs[1], low, high, interior))]


@OPS.converts("stablehlo.reverse")
def reverse(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    return [cx.emit.value(hlo.ReverseOp(xs[0], ints(require(op, "dimensions"))))]


# sort and top_k ----------------------------------------------------------------------------

_CANONICALIZING = ("stablehlo.constant", "stablehlo.broadcast_in_dim")


def _peel_canonicalization(value: SSAValue) -> tuple[SSAValue, bool]:
    """
    The value under jnp.sort's key canonicalization: `select(pred, constant, y)` (-0 made
    +0, NaNs made one NaN), repeated; and whether there was any.
    """
    peeled = False
    while isinstance(op := value.owner, Operation) and op.name == "stablehlo.select":
        pred, const = op.operands[0].owner, op.operands[1].owner
        if not (
            isinstance(pred, Operation)
            and pred.name == "stablehlo.compare"
            and isinstance(const, Operation)
            and const.name in _CANONICALIZING
        ):
            break
        value, peeled = op.operands[2], True
    return value, peeled


def sort_comparator(op: Operation, n: int) -> str:
    """
    hlo.sort's comparator from a sort region that compares its first two arguments (operand
    0's pair) with LT or GT, directly, in TOTALORDER, or on keys canonicalized as jnp.sort
    does (which orders as plain LT/GT: NaNs last, -0 equal to +0).
    """
    block = op.regions[0].block if op.regions and op.regions[0].blocks else None
    if block is None or len(block.args) != 2 * n:
        raise ValueError(f"stablehlo.sort needs a comparator region of {2 * n} arguments")
    ret = block.last_op
    cmp = ret.operands[0].owner if ret is not None and len(ret.operands) == 1 else None
    if isinstance(cmp, Operation) and cmp.name == "stablehlo.compare":
        (lhs, lhs_canon), (rhs, rhs_canon) = map(_peel_canonicalization, cmp.operands)
        direction = enum_value(require(cmp, "comparison_direction"))
        compare_type = get_attr(cmp, "compare_type")
        total = compare_type is not None and enum_value(compare_type) == "TOTALORDER"
        args = (block.args[0], block.args[1])
        if direction in ("LT", "GT") and lhs_canon == rhs_canon and {lhs, rhs} == set(args):
            if lhs is args[1]:
                direction = "GT" if direction == "LT" else "LT"
            return direction + (" TOTALORDER" if total and not lhs_canon else "")
    names = ", ".join(dict.fromkeys(o.name for o in block.ops))
    raise ValueError(
        f"the sort comparator computes {names}; shardc recognizes a comparator that "
        "compares the first two arguments (operand 0, the key) with LT or GT (FLOAT, "
        "SIGNED or TOTALORDER, keys canonicalized as jnp.sort does or not)"
    )


@OPS.converts("stablehlo.sort")
def sort(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    comparator = sort_comparator(op, len(xs))
    dim = one_int(require(op, "dimension"))
    dim = dim + rank(xs[0].type) if dim < 0 else dim
    stable = get_attr(op, "is_stable")
    is_stable = isinstance(stable, IntegerAttr) and bool(stable.value.data)
    cx.stats.constructs[f"sort {comparator}"] += 1
    return list(cx.emit.add(hlo.SortOp(xs, dim, comparator, is_stable)).results)


@OPS.converts("chlo.top_k")
def top_k(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    return _top_k(cx, xs[0], require(op, "k"), get_attr(op, "largest"))


def mhlo_topk(cx: OpContext, op: Operation, xs: list[SSAValue]) -> list[SSAValue]:
    """`custom_call @mhlo.topk(%x) {mhlo.attributes = {k = 2 : i64[, largest = true]}}`:
    how JAX writes `lax.top_k` (CHLO's top_k wrapped for serialization)."""
    attrs = get_attr(op, "mhlo.attributes")
    if not isinstance(attrs, DictionaryAttr) or "k" not in attrs.data or len(xs) != 1:
        raise ValueError("custom_call @mhlo.topk needs one operand and mhlo.attributes = {k = ..}")
    return _top_k(cx, xs[0], attrs.data["k"], attrs.data.get("largest"))


def _top_k(cx: OpContext, x: SSAValue, k: Attribute, largest: Attribute | None) -> list[SSAValue]:
    if isinstance(largest, IntegerAttr) and not largest.value.data:
        raise ValueError(
            "top_k with largest = false is not supported (hlo.top_k takes the largest)"
        )
    return list(cx.emit.add(hlo.TopKOp(x, one_int(k))).results)


# convolution --------------------------------------------------------------------------------

_CONV_WINDOW = {
    "stride": "window_strides",
    "pad": "padding",
    "lhs_dilate": "lhs_dilation",
    "rhs_dilate": "rhs_dilation",
    "reverse": "window_reversal",
}


@OPS.converts("stablehlo.convolution")
def convolution(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    """Pretty or generic form (`#stablehlo.conv<...>`, window arrays or a padding tensor,
    entries left out at their defaults); precision_config changes nothing here."""
    dims = require(op, "dimension_numbers")
    if not isinstance(dims, ConvDimensionNumbersAttr):
        raise ValueError(f"expected #stablehlo.conv<...>, got {dims}")
    window = {k: ints(a) for k, name in _CONV_WINDOW.items() if (a := get_attr(op, name))}
    groups = [
        one_int(a) if (a := get_attr(op, name)) is not None else 1
        for name in ("feature_group_count", "batch_group_count")
    ]
    result = op.results[0].type
    conv = hlo.ConvolutionOp(xs[0], xs[1], dims.dims, result, window, *groups)  # pyright: ignore
    return [cx.emit.value(conv)]


# contractions and reductions ---------------------------------------------------------------


@OPS.converts("stablehlo.dot_general")
def dot_general(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    dn = require(op, "dot_dimension_numbers")
    if not isinstance(dn, KeyValueAttr):
        raise ValueError(f"expected #stablehlo.dot<...>, got {dn}")
    d = {k: ints(v) for k, v in dn.get().items()}
    batching = (d.get("lhs_batching_dimensions", []), d.get("rhs_batching_dimensions", []))
    contracting = (
        d.get("lhs_contracting_dimensions", []),
        d.get("rhs_contracting_dimensions", []),
    )
    result = op.results[0].type
    return [cx.emit.value(hlo.DotOp(xs[0], xs[1], contracting, batching, result))]  # pyright: ignore


@OPS.converts("stablehlo.dot")
def dot(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    lr, rr = rank(xs[0].type), rank(xs[1].type)
    if lr not in (1, 2) or rr not in (1, 2):
        raise ValueError("stablehlo.dot takes vectors or matrices")
    result = op.results[0].type
    return [cx.emit.value(hlo.DotOp(xs[0], xs[1], ([lr - 1], [0]), ((), ()), result))]  # pyright: ignore


def reducer_kind(op: Operation, n: int, element: Attribute) -> str:
    """add / mul / max / min from `applies` or the reduction region."""
    applies = op.properties.get("applies")
    applied = applies.data if isinstance(applies, StringAttr) else _region_reducer(op, n)
    kind = REDUCER_KINDS.get(applied)
    if kind is None and is_bool(element):
        kind = BOOL_REDUCER_KINDS.get(applied)
    if kind is None:
        raise ValueError(
            f"the reduction body applies {applied}; shardc recognizes add, "
            "multiply, maximum and minimum (and, or on i1)"
        )
    return kind


def _region_reducer(op: Operation, n: int) -> str:
    """The op a reduction region applies to its two arguments."""
    if not op.regions or not op.regions[0].blocks:
        raise ValueError(f"{op.name} has no reduction body")
    block = op.regions[0].block
    body, alias = _without_scalar_constraints(list(block.ops))
    if len(block.args) != 2 * n:
        raise ValueError(f"the reduction body takes {len(block.args)} arguments, expected {2 * n}")
    if (
        n == 1
        and len(body) == 2
        and body[1].name in ("stablehlo.return",)
        and set(body[0].operands) == set(block.args)
        and len(body[0].operands) == 2
        and alias.get(body[1].operands[0], body[1].operands[0]) is body[0].results[0]
    ):
        return body[0].name
    names = list(dict.fromkeys(o.name for o in body))
    raise ValueError(
        "the reduction body computes "
        + ", ".join(names)
        + "; shardc recognizes bodies that add, multiply, take the maximum or "
        "the minimum of their two arguments"
    )


def _without_scalar_constraints(body: list[Operation]) -> tuple[list[Operation], dict]:
    """
    A reduction body without the `sdy.sharding_constraint`s JAX puts on its scalars inside
    a partially manual shard_map (`<@mesh, []>`: they constrain nothing), and what each
    dropped constraint's result stands for (its operand).
    """
    kept: list[Operation] = []
    alias: dict[SSAValue, SSAValue] = {}
    for o in body:
        if o.name == "sdy.sharding_constraint" and not rank(o.results[0].type):
            alias[o.results[0]] = alias.get(o.operands[0], o.operands[0])
        else:
            kept.append(o)
    return kept, alias


@OPS.converts("stablehlo.reduce")
def reduce(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    n = len(xs) // 2
    if n != 1:
        return reduce_with_body(cx, op, xs, local)
    x, init = xs
    elem = x.type.element_type  # pyright: ignore
    kind = reducer_kind(op, 1, elem)
    cx.stats.constructs[f"reduce {kind}"] += 1
    dims = ints(require(op, "dimensions"))
    init_src = op.operands[1].owner
    init_value = None
    if isinstance(init_src, Operation) and init_src.name == "stablehlo.constant":
        v = init_src.properties.get("value")
        if isinstance(v, DenseIntOrFPElementsAttr):
            init_value = splat_value(v)
            if is_bool(elem) and init_value is not None:
                init_value = bool(init_value)
    return [cx.emit.reduce(kind, x, dims, init, init_value)]


# shardings ---------------------------------------------------------------------------------


@OPS.converts("stablehlo.custom_call")
def custom_call(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    target = call_target(op)
    text = gspmd_string(op)
    if target == "Sharding":
        cx.stats.constructs["custom_call @Sharding"] += 1
        if text is None:
            return xs
        sh = cx.shardings.gspmd_to_spmd(op, text, rank(xs[0].type), "@Sharding")
        if sh == "manual":
            if not local:
                raise ValueError("@Sharding {manual} outside a manual computation")
            return xs
        if local:
            raise ValueError("@Sharding with a global sharding inside a manual computation")
        return [cx.emit.value(spmd.ConstraintOp(xs[0], sh))]  # pyright: ignore
    if target == "mhlo.topk":
        return mhlo_topk(cx, op, xs)
    if target == "SPMDShardToFullShape":
        raise ValueError(
            "@SPMDShardToFullShape must take the result of a manual computation and "
            "give a result of the function"
        )
    raise ValueError(f"custom_call @{target} is not supported")


@OPS.converts("sdy.sharding_constraint", "sdy.reshard")
def sdy_constraint(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    if local:
        return _free_axes_constraint(cx, op, xs)
    sh = cx.shardings.sdy_to_spmd(op, require(op, "sharding"), rank(xs[0].type), op.name, True)
    if sh is None or (sh.is_replicated() and len(sh.open_dims) == len(sh.dim_axes) > 0):
        return xs  # open in every dimension, naming no axis: constrains nothing
    return [cx.emit.value(spmd.ConstraintOp(xs[0], sh))]


def _free_axes_constraint(cx: OpContext, op: Operation, xs: list[SSAValue]) -> list[SSAValue]:
    """
    A constraint inside a (partially) manual computation may name only its free axes. The
    body runs replicated along the free axes (`spmd.manual_computation`), so a constraint
    over them is a layout hint that changes no value: it is dropped (and counted).
    """
    if op.name != "sdy.sharding_constraint":
        raise ValueError(f"{op.name} inside a manual computation is not supported")
    sh = cx.shardings.sdy_to_spmd(op, require(op, "sharding"), rank(xs[0].type), op.name, True)
    named = [] if sh is None else list(sh.all_axes)
    manual = [a for a in named if a in cx.manual_axes]
    if manual:
        raise ValueError(
            f"{op.name} inside a manual computation names its manual axes {manual}: only "
            "free (auto) axes may be constrained there"
        )
    if named:
        cx.stats.constructs[
            "sharding over free axes in a partially manual shard_map (dropped: the body "
            "runs replicated along them)"
        ] += 1
    return xs


# ops without an hlo op of their own --------------------------------------------------------


def _expansion(expand: Callable[[Emitter, SSAValue], SSAValue]) -> Converter:
    return lambda cx, op, xs, local: [expand(cx.emit, xs[0])]


UNARY_EXPANSIONS: dict[str, Callable[[Emitter, SSAValue], SSAValue]] = {
    "chlo.square": ex.square,
    "chlo.is_inf": ex.is_inf,
    "chlo.is_pos_inf": lambda e, x: ex.is_inf(e, x, 1),
    "chlo.is_neg_inf": lambda e, x: ex.is_inf(e, x, -1),
}
for _name, _expand in UNARY_EXPANSIONS.items():
    OPS[_name] = _expansion(_expand)


# element-wise ops of issue 13 (one hlo op each) ---------------------------------------------

ELEMENTWISE_13: dict[str, type[hlo.HloOp]] = {
    "stablehlo.clamp": hlo.ClampOp,
    "stablehlo.remainder": hlo.RemainderOp,
    "stablehlo.ceil": hlo.CeilOp,
    "stablehlo.floor": hlo.FloorOp,
    "stablehlo.round_nearest_even": hlo.RoundNearestEvenOp,
    "stablehlo.round_nearest_afz": hlo.RoundNearestAfzOp,
    "stablehlo.sign": hlo.SignOp,
    "stablehlo.atan2": hlo.Atan2Op,
    "stablehlo.cbrt": hlo.CbrtOp,
    "stablehlo.exponential_minus_one": hlo.Expm1Op,
    "stablehlo.log_plus_one": hlo.Log1pOp,
    "chlo.erf": hlo.ErfOp,
    "chlo.erfc": hlo.ErfcOp,
    "chlo.sinh": hlo.SinhOp,
    "chlo.cosh": hlo.CoshOp,
    "chlo.tan": hlo.TanOp,
    "stablehlo.tan": hlo.TanOp,
    "stablehlo.is_finite": hlo.IsFiniteOp,
    "stablehlo.xor": hlo.XorOp,
    "stablehlo.shift_left": hlo.ShiftLeftOp,
    "stablehlo.shift_right_logical": hlo.ShiftRightLogicalOp,
    "stablehlo.shift_right_arithmetic": hlo.ShiftRightArithmeticOp,
    "stablehlo.popcnt": hlo.PopcntOp,
    "stablehlo.count_leading_zeros": hlo.CountLeadingZerosOp,
    "chlo.erf_inv": hlo.ErfInvOp,
    "chlo.asin": hlo.AsinOp,
    "chlo.acos": hlo.AcosOp,
    "chlo.atan": hlo.AtanOp,
    "chlo.asinh": hlo.AsinhOp,
    "chlo.acosh": hlo.AcoshOp,
    "chlo.atanh": hlo.AtanhOp,
    "chlo.lgamma": hlo.LgammaOp,
    "chlo.digamma": hlo.DigammaOp,
}


def _one_op(cls: type[hlo.HloOp]) -> Converter:
    return lambda cx, op, xs, local: [cx.emit.value(cls(*xs))]  # pyright: ignore[reportCallIssue]


for _name, _cls in ELEMENTWISE_13.items():
    OPS[_name] = _one_op(_cls)


# gather and scatter ------------------------------------------------------------------------

_GATHER_KEYS = (
    "offset_dims",
    "collapsed_slice_dims",
    "operand_batching_dims",
    "start_indices_batching_dims",
    "start_index_map",
)
_SCATTER_KEYS = (
    "update_window_dims",
    "inserted_window_dims",
    "input_batching_dims",
    "scatter_indices_batching_dims",
    "scatter_dims_to_operand_dims",
)
SCATTER_COMBINERS = {
    "stablehlo.add": "add",
    "stablehlo.multiply": "mul",
    "stablehlo.maximum": "max",
    "stablehlo.minimum": "min",
}
"""Update computations of one op of the two block arguments (`x.at[i].add/mul/max/min`)."""


def _dimension_numbers(op: Operation, attr: str, keys: tuple[str, ...]) -> tuple[dict, int]:
    """A `#stablehlo.gather<..>` / `#stablehlo.scatter<..>`: the lists and index_vector_dim."""
    numbers = require(op, attr)
    fields = numbers.get() if hasattr(numbers, "get") else {}  # pyright: ignore
    dims = {k: ints(fields[k]) for k in keys if k in fields}
    ivd = one_int(fields["index_vector_dim"]) if "index_vector_dim" in fields else 0
    return dims, ivd


def _flag(op: Operation, key: str) -> bool:
    value = get_attr(op, key)
    return isinstance(value, IntegerAttr) and bool(value.value.data)


@OPS.converts("stablehlo.gather")
def gather(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    dims, ivd = _dimension_numbers(op, "dimension_numbers", _GATHER_KEYS)
    dims["slice_sizes"] = ints(require(op, "slice_sizes"))
    return [cx.emit.value(hlo.GatherOp(xs[0], xs[1], dims, ivd, _flag(op, "indices_are_sorted")))]


@OPS.converts("stablehlo.dynamic_gather")
def dynamic_gather(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    """A dynamic_gather whose slice sizes are a constant (as JAX emits them) is a gather."""
    dims, ivd = _dimension_numbers(op, "dimension_numbers", _GATHER_KEYS)
    src = op.operands[2].owner
    value = src.properties.get("value") if isinstance(src, Operation) else None
    if not (isinstance(src, Operation) and src.name == "stablehlo.constant") or not isinstance(
        value, DenseIntOrFPElementsAttr
    ):
        raise ValueError("stablehlo.dynamic_gather needs constant slice sizes")
    dims["slice_sizes"] = [int(v) for v in value.get_values()]  # pyright: ignore
    return [cx.emit.value(hlo.GatherOp(xs[0], xs[1], dims, ivd, _flag(op, "indices_are_sorted")))]


def scatter_kind(op: Operation) -> str:
    """
    The named update computation of a scatter region JAX emits: a return of the update
    argument (`replace`: `x.at[i].set`) or one add / multiply / maximum / minimum of the
    two arguments (`x.at[i].add/mul/max/min`).
    """
    block = op.regions[0].block if op.regions and op.regions[0].blocks else None
    if block is not None and len(block.args) == 2:
        ret = block.last_op
        value = ret.operands[0] if ret is not None and len(ret.operands) == 1 else None
        if value is block.args[1]:
            return "replace"
        owner = value.owner if value is not None else None
        if (
            isinstance(owner, Operation)
            and owner.name in SCATTER_COMBINERS
            and set(owner.operands) == set(block.args)
            and len(list(block.ops)) == 2
        ):
            return SCATTER_COMBINERS[owner.name]
    names = ", ".join(dict.fromkeys(o.name for o in block.ops)) if block is not None else "nothing"
    raise ValueError(
        f"the scatter update computation computes {names}; shardc recognizes a return of "
        "the update argument (replace) or one stablehlo.add, multiply, maximum or minimum "
        "of the two arguments"
    )


@OPS.converts("stablehlo.scatter")
def scatter(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    if len(xs) != 3:
        raise ValueError(
            f"a scatter of {len(xs) // 2} operands together is not supported (hlo.scatter "
            "updates one operand)"
        )
    kind = scatter_kind(op)
    dims, ivd = _dimension_numbers(op, "scatter_dimension_numbers", _SCATTER_KEYS)
    flags = [f for f in ("indices_are_sorted", "unique_indices") if _flag(op, f)]
    cx.stats.constructs[f"scatter {kind}"] += 1
    return [cx.emit.value(hlo.ScatterOp(kind, xs, dims, ivd, flags))]


# Device ids (issue 13) ------------------------------------------------------------------


@OPS.converts("stablehlo.partition_id", "stablehlo.replica_id")
def device_id(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    """
    shardc's device id is XLA's replica x num_partitions + partition (`hlo.partition_id` at
    level S); with one replica, partition_id is the device id and replica_id 0.
    """
    e = cx.emit
    ty = op.results[0].type
    assert isinstance(ty, TensorType)
    if cx.replicas == 1:
        cls = hlo.PartitionIdOp if op.name == "stablehlo.partition_id" else hlo.ReplicaIdOp
        return [e.value(cls(ty))]
    index = e.value(hlo.PartitionIdOp(ty))
    p = e.splat(cx.partitions, ty)
    q = e.binary("div", index, p)
    if op.name == "stablehlo.replica_id":
        return [q]
    return [e.binary("sub", index, e.binary("mul", q, p))]


# element types of issue 13: complex numbers and bitcasts -----------------------------------

for _name, _cls in {
    "stablehlo.complex": hlo.ComplexOp,
    "stablehlo.real": hlo.RealOp,
    "stablehlo.imag": hlo.ImagOp,
}.items():
    OPS[_name] = _one_op(_cls)


@OPS.converts("stablehlo.bitcast_convert")
def bitcast_convert(
    cx: OpContext, op: Operation, xs: list[SSAValue], local: bool
) -> list[SSAValue]:
    """The result's element type; its shape from the (maybe local) operand's."""
    src = xs[0].type
    res = op.results[0].type
    assert isinstance(src, TensorType) and isinstance(res, TensorType)
    a, b = hlo.bit_width(src.element_type), hlo.bit_width(res.element_type)
    shape = list(src.get_shape())
    shape = shape + [a // b] if a > b else shape[:-1] if a < b else shape
    return [cx.emit.value(hlo.BitcastConvertOp(xs[0], TensorType(res.element_type, shape)))]


# reduce_window and select_and_scatter ------------------------------------------------------


def window_attrs(op: Operation, rank: int) -> dict[str, object]:
    """hlo.ReduceWindowOp's window keywords from StableHLO's attributes (defaults: 1, 0)."""

    def optional(key: str, default: int) -> list[int]:
        a = get_attr(op, key)
        return ints(a) if a is not None else [default] * rank

    flat = optional("padding", 0) if get_attr(op, "padding") is not None else [0] * 2 * rank
    if len(flat) != 2 * rank:
        raise ValueError(f"padding has {len(flat)} entries, expected {rank} [low, high] pairs")
    return {
        "window": ints(require(op, "window_dimensions")),
        "strides": optional("window_strides", 1),
        "padding": [(flat[2 * d], flat[2 * d + 1]) for d in range(rank)],
        "base_dilations": optional("base_dilations", 1),
        "window_dilations": optional("window_dilations", 1),
    }


@OPS.converts("stablehlo.reduce_window")
def reduce_window(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    if len(xs) != 2:
        raise ValueError(
            f"a reduce_window of {len(xs) // 2} operands together is not supported: "
            "hlo.reduce_window reduces one operand"
        )
    x, init = xs
    kind = reducer_kind(op, 1, x.type.element_type)  # pyright: ignore
    cx.stats.constructs[f"reduce_window {kind}"] += 1
    w = window_attrs(op, rank(x.type))
    return [cx.emit.value(hlo.ReduceWindowOp(kind, x, init, **w))]  # pyright: ignore[reportArgumentType]


def window_select(op: Operation) -> str:
    """GE / GT from a select region comparing its two arguments (either way round)."""
    block = op.regions[0].block if op.regions and op.regions[0].blocks else None
    body = list(block.ops) if block is not None else []
    if block is not None and len(body) == 2 and body[0].name == "stablehlo.compare":
        direction = enum_value(require(body[0], "comparison_direction"))
        swapped = {"LE": "GE", "LT": "GT"}
        if tuple(body[0].operands) == tuple(block.args) and direction in ("GE", "GT"):
            return direction
        if tuple(body[0].operands) == tuple(block.args)[::-1] and direction in swapped:
            return swapped[direction]
    names = ", ".join(dict.fromkeys(o.name for o in body)) or "nothing"
    raise ValueError(
        f"the select region computes {names}; shardc recognizes a compare GE or GT of its "
        "two arguments (max-pooling's gradient)"
    )


def _check_scatter_adds(op: Operation) -> None:
    """The scatter region (the second) must add its two arguments."""
    block = op.regions[1].block if len(op.regions) > 1 and op.regions[1].blocks else None
    body = list(block.ops) if block is not None else []
    if (
        block is not None
        and len(body) == 2
        and body[0].name == "stablehlo.add"
        and set(body[0].operands) == set(block.args)
        and len(block.args) == 2
    ):
        return
    names = ", ".join(dict.fromkeys(o.name for o in body)) or "nothing"
    raise ValueError(f"the scatter region computes {names}; shardc recognizes an add")


@OPS.converts("stablehlo.select_and_scatter")
def select_and_scatter(
    cx: OpContext, op: Operation, xs: list[SSAValue], local: bool
) -> list[SSAValue]:
    select = window_select(op)
    _check_scatter_adds(op)
    w = window_attrs(op, rank(xs[0].type))
    if w["base_dilations"] != [1] * rank(xs[0].type):
        raise ValueError("select_and_scatter has no dilations")
    cx.stats.constructs[f"select_and_scatter {select}"] += 1
    new = hlo.SelectAndScatterOp(
        xs[0],
        xs[1],
        xs[2],
        w["window"],
        w["strides"],
        w["padding"],
        select,  # pyright: ignore[reportArgumentType]
    )
    return [cx.emit.value(new)]


# reduce with a body (several operands: argmax / argmin) -------------------------------------


def reduce_with_body(
    cx: OpContext, op: Operation, xs: list[SSAValue], local: bool
) -> list[SSAValue]:
    """`stablehlo.reduce` of N operands: hlo.reduce with the body converted op by op."""
    n = len(xs) // 2
    if not op.regions or not op.regions[0].blocks:
        raise ValueError(f"a reduce of {n} operands together needs a body")
    region = convert_body(cx, op.regions[0].block, local)
    cx.stats.constructs["reduce with a body"] += 1
    dims = ints(require(op, "dimensions"))
    return list(cx.emit.add(hlo.ReduceOp.with_body(xs[:n], xs[n:], dims, region)).results)


def convert_body(cx: OpContext, src: Block, local: bool) -> Region:
    """A region's block converted with the op table, ending in `hlo.return`."""
    block = Block(arg_types=[a.type for a in src.args])
    env: dict[SSAValue, SSAValue] = dict(zip(src.args, block.args, strict=True))
    saved = cx.emit.block
    cx.emit.block = block
    try:
        for inner in src.ops:
            try:
                operands = [env[v] for v in inner.operands]
            except KeyError:
                raise ValueError(f"the body's {inner.name} uses a value from outside it") from None
            if inner.name == "stablehlo.return":
                cx.emit.add(hlo.ReturnOp(operands))
                break
            converter = OPS.get(inner.name)
            if converter is None:
                raise ValueError(f"the body uses {inner.name}, which shardc does not support")
            env.update(zip(inner.results, converter(cx, inner, operands, local), strict=True))
    finally:
        cx.emit.block = saved
    return Region(block)


# while, case, if (regions converted with the same converters) -----------------------------


def _region(
    cx: OpContext, op: Operation, index: int, args: Sequence[SSAValue], local: bool
) -> Region:
    if cx.region is None or len(op.regions) <= index or not op.regions[index].blocks:
        raise ValueError(f"{op.name} needs region {index} with a block")
    return Region(cx.region(op.regions[index].block, args, local))


@OPS.converts("stablehlo.while")
def while_(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    cond, body = (_region(cx, op, i, xs, local) for i in (0, 1))
    return list(cx.emit.add(hlo.WhileOp(xs, cond, body)).results)


@OPS.converts("stablehlo.case")
def case(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    branches = [_region(cx, op, i, [], local) for i in range(len(op.regions))]
    return list(cx.emit.add(hlo.CaseOp(xs[0], branches, op.result_types)).results)


@OPS.converts("stablehlo.if")
def if_(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    """`if %pred` is a case on 1 - convert(pred): branch 0 (the true one) when it holds."""
    scalar = TensorType(i32, [])
    index = cx.emit.binary("sub", cx.emit.splat(1, scalar), cx.emit.convert(xs[0], scalar))
    branches = [_region(cx, op, i, [], local) for i in (0, 1)]
    cx.stats.constructs["stablehlo.if (as hlo.case)"] += 1
    return list(cx.emit.add(hlo.CaseOp(index, branches, op.result_types)).results)


# Shardy's explicit collectives ---------------------------------------------------------------
# At level G a value is its global value: `sdy.all_gather`, `all_slice`, `all_to_all`,
# `collective_permute` (and `sdy.reshard`, above) only change its sharding, so each becomes
# an `spmd.constraint` to its `out_sharding`, and `spmd-partition` inserts the collective
# the change needs. `sdy.all_reduce` sums a value's pending partial sums: a global value
# holds none unless its sharding says `unreduced` over the reduction axes, so it is a
# constraint to `out_sharding` on such a value and an error on any other.

SDY_COLLECTIVES = (
    "sdy.all_gather",
    "sdy.all_slice",
    "sdy.all_to_all",
    "sdy.collective_permute",
    "sdy.all_reduce",
)


def _source_sdy_sharding(value: SSAValue) -> Attribute | None:
    """The sdy sharding the source IR states for `value` (argument, constraint, collective)."""
    from xdsl.dialects import func as func_dialect
    from xdsl.ir import BlockArgument

    if isinstance(value, BlockArgument):
        parent = value.block.parent_op()
        if isinstance(parent, func_dialect.FuncOp) and parent.arg_attrs is not None:
            return parent.arg_attrs.data[value.index].data.get("sdy.sharding")
        return None
    owner = value.owner
    assert isinstance(owner, Operation)
    return owner.properties.get("out_sharding") or owner.properties.get("sharding")


@OPS.converts(*SDY_COLLECTIVES)
def sdy_collective(cx: OpContext, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
    if local:
        raise ValueError(f"{op.name} inside a manual computation is not supported")
    cx.stats.constructs["sdy explicit collective (as spmd.constraint)"] += 1
    if op.name == "sdy.all_reduce":
        axes = [a.data for a in require(op, "reduction_axes").data]  # pyright: ignore
        have = _source_sdy_sharding(op.operands[0])
        pending = getattr(have, "unreduced_axes", [])
        missing = [a for a in axes if a not in pending]
        if missing:
            listed = ", ".join(f'"{a}"' for a in missing)
            raise ValueError(
                f"sdy.all_reduce over {{{listed}}} of a value that is not unreduced over "
                "them: at level G a value holds no partial sums unless its sharding says "
                "unreduced={...}, so shardc cannot give this all_reduce a global meaning"
            )
    sh = cx.shardings.sdy_to_spmd(op, require(op, "out_sharding"), rank(xs[0].type), op.name, True)
    assert sh is not None
    return [cx.emit.value(spmd.ConstraintOp(xs[0], sh))]


# rng_bit_generator (issue 13) ----------------------------------------------------------------


@OPS.converts("stablehlo.rng_bit_generator")
def rng_bit_generator(
    cx: OpContext, op: Operation, xs: list[SSAValue], local: bool
) -> list[SSAValue]:
    algorithm = enum_value(require(op, "rng_algorithm"))
    cx.stats.constructs[f"rng_bit_generator {algorithm}"] += 1
    new = hlo.RngBitGeneratorOp(xs[0], algorithm, op.results[1].type)
    return list(cx.emit.add(new).results)
