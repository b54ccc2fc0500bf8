"""
Parse-only xDSL definitions of the StableHLO, CHLO and Shardy (`sdy`) subset that JAX
prints (`jax.jit(f).lower(...).as_text()`), so that xDSL's MLIR parser reads that text
as it is: pretty forms (`stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] ...`,
`stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [1] ...`,
`sdy.manual_computation(...) in_shardings=[...] ... { ... }`) and generic forms
(`"stablehlo.all_reduce"(%x) <{replica_groups = dense<...>, ...}> ({...})`).

The ops are plain `Operation` subclasses, not IRDL definitions: they exist to be read
and converted by `shardc.frontends.stablehlo`, never verified or printed back. Every
custom syntax stores what it read under the property names of StableHLO's generic form
(`broadcast_dimensions`, `comparison_direction`, `dimensions`, ...), so the converter
reads one representation whichever form the text used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from shardc.dialects.hlo import parse_conv_dim_numbers, parse_conv_window
from shardc.dialects.syntax import i64_array, parse_while_header
from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    SpacedOpaqueSyntaxAttribute,
)
from xdsl.irdl import irdl_attr_definition, traits_def
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import IsTerminator

################################################################################
# Attributes                                                                   #
################################################################################


@irdl_attr_definition
class SdyShardingAttr(ParametrizedAttribute):
    """
    `#sdy.sharding<@mesh, [{"a", ?}p1, {}], replicated={"b"}, unreduced={"c"}>`.

    `open` has one entry per dimension (1: the dimension is open, `?`); sub-axes
    (`"x":(1)2`) are kept in their text form so the importer can name them.
    """

    name = "sdy.sharding"

    mesh: StringAttr
    dims: ArrayAttr[ArrayAttr[StringAttr]]
    open: ArrayAttr[IntAttr]
    replicated: ArrayAttr[StringAttr]
    unreduced: ArrayAttr[StringAttr]
    priorities: ArrayAttr[IntAttr]
    """One per dimension: its user priority `p<N>`, -1 where it has none."""

    @property
    def mesh_name(self) -> str:
        return self.mesh.data

    @property
    def dim_priorities(self) -> list[int | None]:
        return [None if p.data < 0 else p.data for p in self.priorities.data]

    @property
    def dim_axes(self) -> list[list[str]]:
        return [[a.data for a in d.data] for d in self.dims.data]

    @property
    def open_dims(self) -> list[bool]:
        return [bool(o.data) for o in self.open.data]

    @property
    def unreduced_axes(self) -> list[str]:
        return [a.data for a in self.unreduced.data]

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return parse_sdy_sharding_body(parser)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<@{self.mesh_name}, {self.dim_axes}>")


def _parse_axis_ref(parser: AttrParser) -> str:
    name = parser.parse_str_literal(" (a mesh axis name)")
    if parser.parse_optional_punctuation(":"):
        with parser.in_parens():
            pre = parser.parse_integer(allow_negative=False, allow_boolean=False)
        size = parser.parse_integer(allow_negative=False, allow_boolean=False)
        return f"{name}:({pre}){size}"
    return name


def _parse_axis_set(parser: AttrParser) -> list[str]:
    return parser.parse_comma_separated_list(
        parser.Delimiter.BRACES, lambda: parser.parse_str_literal(" (a mesh axis name)")
    )


def _parse_priority(parser: AttrParser) -> int:
    """A dimension's optional user priority `p<N>` (-1 when absent)."""
    tok = parser._current_token  # pyright: ignore[reportPrivateUsage]
    if tok.text.startswith("p") and tok.text[1:].isdigit():
        parser.parse_optional_identifier()
        return int(tok.text[1:])
    return -1


def parse_sdy_sharding_body(parser: AttrParser) -> Sequence[Attribute]:
    """`@mesh, [{...}, ...], replicated={...}, unreduced={...}` (without the `<>`)."""
    pos = parser.pos
    mesh = parser.parse_optional_symbol_name()
    if mesh is None:
        parser.raise_error(
            "expected @mesh: shardc reads shardings that name a declared sdy.mesh "
            "(inline meshes are not supported)",
            pos,
        )
    parser.parse_punctuation(",")
    dims: list[list[str]] = []
    opens: list[int] = []
    priorities: list[int] = []

    def parse_dim() -> None:
        parser.parse_punctuation("{")
        axes: list[str] = []
        is_open = 0
        if not parser.parse_optional_punctuation("}"):
            while True:
                if parser.parse_optional_punctuation("?"):
                    is_open = 1
                else:
                    axes.append(_parse_axis_ref(parser))
                if parser.parse_optional_punctuation("}"):
                    break
                parser.parse_punctuation(",")
        priorities.append(_parse_priority(parser))
        dims.append(axes)
        opens.append(is_open)

    parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_dim)
    replicated: list[str] = []
    unreduced: list[str] = []
    while parser.parse_optional_punctuation(","):
        key_pos = parser.pos
        key = parser.parse_optional_identifier()
        if key not in ("replicated", "unreduced"):
            parser.raise_error(
                f"unknown sharding field '{key}' (expected replicated or unreduced)",
                key_pos,
            )
        parser.parse_punctuation("=")
        axes = _parse_axis_set(parser)
        (replicated if key == "replicated" else unreduced).extend(axes)
    return (
        StringAttr(mesh.data),
        ArrayAttr(ArrayAttr(StringAttr(a) for a in d) for d in dims),
        ArrayAttr(IntAttr(o) for o in opens),
        ArrayAttr(StringAttr(a) for a in replicated),
        ArrayAttr(StringAttr(a) for a in unreduced),
        ArrayAttr(IntAttr(p) for p in priorities),
    )


def parse_sdy_sharding(parser: AttrParser) -> SdyShardingAttr:
    """`<@mesh, [...]>` as written after `sdy.sharding_constraint %x` and in lists."""
    with parser.in_angle_brackets():
        return SdyShardingAttr.new(parse_sdy_sharding_body(parser))


@irdl_attr_definition
class SdyShardingPerValueAttr(ParametrizedAttribute):
    """`#sdy.sharding_per_value<[<@mesh, [...]>, ...]>`: one sharding per op result."""

    name = "sdy.sharding_per_value"

    shardings: ArrayAttr[SdyShardingAttr]

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            items = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parse_sdy_sharding(parser)
            )
        return (ArrayAttr(items),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<...>")


@irdl_attr_definition
class SdyMeshAttr(ParametrizedAttribute):
    """`#sdy.mesh<["a"=2, "b"=4], device_ids=[...]>` (the generic form of sdy.mesh)."""

    name = "sdy.mesh"

    axis_names: ArrayAttr[StringAttr]
    axis_sizes: ArrayAttr[IntAttr]
    device_ids: ArrayAttr[IntAttr]

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        names, sizes, ids = _parse_mesh_body(parser)
        return (
            ArrayAttr(StringAttr(n) for n in names),
            ArrayAttr(IntAttr(s) for s in sizes),
            ArrayAttr(IntAttr(i) for i in (ids or [])),
        )

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<...>")


def _parse_mesh_body(parser: AttrParser) -> tuple[list[str], list[int], list[int] | None]:
    """`<["a"=2, "b"=4]>` or `<[...], device_ids=[...]>`."""
    names: list[str] = []
    sizes: list[int] = []
    device_ids: list[int] | None = None

    def parse_axis() -> None:
        names.append(parser.parse_str_literal(" (a mesh axis name)"))
        parser.parse_punctuation("=")
        sizes.append(parser.parse_integer(allow_negative=False, allow_boolean=False))

    with parser.in_angle_brackets():
        parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_axis)
        if parser.parse_optional_punctuation(","):
            parser.parse_keyword("device_ids")
            parser.parse_punctuation("=")
            device_ids = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, parser.parse_integer
            )
    return names, sizes, device_ids


@irdl_attr_definition
class SdyManualAxesAttr(ParametrizedAttribute, SpacedOpaqueSyntaxAttribute):
    """`#sdy<manual_axes{"a", "b"}>` (the generic form of `manual_axes={...}`)."""

    name = "sdy.manual_axes"

    axes: ArrayAttr[StringAttr]

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        return (ArrayAttr(StringAttr(a) for a in _parse_axis_set(parser)),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("{...}")


class KeyValueAttr(ParametrizedAttribute):
    """
    A `#dialect.name<key = value, ...>` attribute whose values are integers, integer
    lists or attributes: `#stablehlo.channel_handle<handle = 1, type = 1>`,
    `#stablehlo.dot<lhs_batching_dimensions = [0], ...>`.
    """

    keys: ArrayAttr[StringAttr]
    values: ArrayAttr[Attribute]

    def get(self) -> dict[str, Attribute]:
        return {k.data: v for k, v in zip(self.keys.data, self.values.data, strict=False)}

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        keys: list[StringAttr] = []
        values: list[Attribute] = []

        def entry() -> None:
            key = parser.parse_identifier(" (a field name)")
            parser.parse_punctuation("=")
            keys.append(StringAttr(key))
            if parser._current_token.text == "[":  # pyright: ignore[reportPrivateUsage]
                ints = parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, parser.parse_integer
                )
                values.append(i64_array(ints))
            elif (n := parser.parse_optional_integer(allow_boolean=True)) is not None:
                values.append(IntegerAttr(n, i64))
            else:
                values.append(parser.parse_attribute())

        parser.parse_comma_separated_list(parser.Delimiter.ANGLE, entry)
        return (ArrayAttr(keys), ArrayAttr(values))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<...>")


@irdl_attr_definition
class ChannelHandleAttr(KeyValueAttr):
    name = "stablehlo.channel_handle"


@irdl_attr_definition
class DotDimensionNumbersAttr(KeyValueAttr):
    name = "stablehlo.dot"


@irdl_attr_definition
class GatherDimensionNumbersAttr(KeyValueAttr):
    name = "stablehlo.gather"


@irdl_attr_definition
class ScatterDimensionNumbersAttr(KeyValueAttr):
    name = "stablehlo.scatter"


@irdl_attr_definition
class DotAlgorithmAttr(KeyValueAttr):
    name = "stablehlo.dot_algorithm"


@irdl_attr_definition
class ResultAccuracyAttr(KeyValueAttr):
    name = "stablehlo.result_accuracy"


class OpaqueEnumAttr(ParametrizedAttribute, SpacedOpaqueSyntaxAttribute):
    """`#stablehlo<comparison_direction GT>`: one keyword."""

    value: StringAttr

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        return (StringAttr(parser.parse_identifier(" (an enum value)")),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f" {self.value.data}")


@irdl_attr_definition
class ComparisonDirectionAttr(OpaqueEnumAttr):
    name = "stablehlo.comparison_direction"


@irdl_attr_definition
class ComparisonTypeAttr(OpaqueEnumAttr):
    name = "stablehlo.comparison_type"


@irdl_attr_definition
class PrecisionAttr(OpaqueEnumAttr):
    name = "stablehlo.precision"


_RAW_CONV_KEYS = {
    "input_batch_dimension": (0, 0),
    "input_feature_dimension": (0, 1),
    "input_spatial_dimensions": (0, 2),
    "kernel_input_feature_dimension": (1, 0),
    "kernel_output_feature_dimension": (1, 1),
    "kernel_spatial_dimensions": (1, 2),
    "output_batch_dimension": (2, 0),
    "output_feature_dimension": (2, 1),
    "output_spatial_dimensions": (2, 2),
}


@irdl_attr_definition
class ConvDimensionNumbersAttr(ParametrizedAttribute):
    """
    `#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>` or its `raw` form
    (`#stablehlo.conv<raw input_batch_dimension = 0, ...>`): the lhs, rhs and result
    dimension lists as `hlo.ConvolutionOp` holds them ((batch, feature, spatial...) and
    (input feature, output feature, spatial...)).
    """

    name = "stablehlo.conv"

    lhs: DenseArrayBase
    rhs: DenseArrayBase
    out: DenseArrayBase

    @property
    def dims(self) -> list[list[int]]:
        return [list(a.get_values()) for a in (self.lhs, self.rhs, self.out)]  # pyright: ignore

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            if parser.parse_optional_keyword("raw"):
                dims = parse_raw_conv_dims(parser)
            else:
                dims = parse_conv_dim_numbers(parser)  # pyright: ignore[reportArgumentType]
        return [i64_array(d) for d in dims]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.dims}>")


def parse_raw_conv_dims(parser: AttrParser) -> list[list[int]]:
    """`input_batch_dimension = 0, input_feature_dimension = 3, input_spatial_dimensions =
    [1, 2], kernel_..., output_...` as (lhs, rhs, out) dimension lists."""
    parts: list[list[list[int]]] = [[[], [], []] for _ in range(3)]

    def entry() -> None:
        pos = parser.pos
        key = parser.parse_identifier(" (a convolution dimension field)")
        if key not in _RAW_CONV_KEYS:
            parser.raise_error(f"unknown convolution dimension field '{key}'", pos, parser.pos)
        parser.parse_punctuation("=")
        which, slot = _RAW_CONV_KEYS[key]
        if slot == 2:
            parts[which][2] = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, parser.parse_integer
            )
        else:
            parts[which][slot] = [parser.parse_integer()]

    parser.parse_comma_separated_list(parser.Delimiter.NONE, entry)
    return [[*p[0], *p[1], *p[2]] for p in parts]


@irdl_attr_definition
class ResultAccuracyModeAttr(OpaqueEnumAttr):
    name = "stablehlo.result_accuracy_mode"


################################################################################
# Operations                                                                   #
################################################################################


class ImportedOp(Operation):
    """Base of the parse-only ops: `SYNTAX` selects the custom format."""

    name: ClassVar[str] = "stablehlo.unknown"
    traits = traits_def()
    SYNTAX: ClassVar[str] = "simple"
    RESULTS: ClassVar[int] = 1
    """Results of the `simple` syntax (0 for terminators)."""

    @classmethod
    def parse(cls, parser: Parser) -> ImportedOp:
        return _SYNTAXES[cls.SYNTAX](cls, parser)

    def print(self, printer: Printer) -> None:
        printer.print_op_with_default_format(self)


class ImportedTerminator(ImportedOp):
    traits = traits_def(IsTerminator())
    RESULTS: ClassVar[int] = 0


def _operand_list(parser: Parser) -> list[UnresolvedOperand]:
    """`%a, %b` (possibly none), stopping before anything that is not an operand."""
    first = parser.parse_optional_unresolved_operand()
    if first is None:
        return []
    operands = [first]
    while True:
        pos = parser.pos
        if not parser.parse_optional_punctuation(","):
            break
        nxt = parser.parse_optional_unresolved_operand()
        if nxt is None:  # a `, keyword = ...` follows: give the comma back
            parser._resume_from(pos)  # pyright: ignore[reportPrivateUsage]
            break
        operands.append(nxt)
    return operands


def _parse_types(parser: Parser) -> tuple[list[Attribute], list[Attribute] | None]:
    """
    After `:`: a function type `(T, U) -> R`, or `T, U` optionally followed by
    `-> R` / `-> (R, S)`. Returns (input types, result types or None if no arrow).
    """
    if parser._current_token.text == "(":  # pyright: ignore[reportPrivateUsage]
        ft = parser.parse_function_type()
        return list(ft.inputs.data), list(ft.outputs.data)
    types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
    if parser.parse_optional_punctuation("->") is None:
        return types, None
    if parser._current_token.text == "(":  # pyright: ignore[reportPrivateUsage]
        outs = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
    else:
        outs = [parser.parse_type()]
    return types, outs


def _finish(
    cls: type[ImportedOp],
    parser: Parser,
    operands: list[UnresolvedOperand],
    pos: int,
    inputs: Sequence[Attribute],
    outputs: Sequence[Attribute],
    properties: dict[str, Attribute] | None = None,
    attributes: dict[str, Attribute] | None = None,
    regions: Sequence = (),
) -> ImportedOp:
    values = parser.resolve_operands(operands, inputs, pos)
    return cls.create(
        operands=values,
        result_types=outputs,
        properties=properties or {},
        attributes=attributes or {},
        regions=list(regions),
    )


def _parse_simple(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    """`op %a, %b {attrs} : types` in the forms StableHLO's pretty printer uses."""
    pos = parser.pos
    operands = _operand_list(parser)
    attrs = parser.parse_optional_attr_dict()
    if parser.parse_optional_punctuation(":") is None:
        if operands:
            parser.raise_error(f"expected ':' and the types of {cls.name}")
        return _finish(cls, parser, [], pos, [], [], attributes=attrs)
    types, outs = _parse_types(parser)
    n = len(operands)
    if outs is not None:
        inputs = types if len(types) == n else types * n if len(types) == 1 else types
        return _finish(cls, parser, operands, pos, inputs, outs, attributes=attrs)
    if cls.RESULTS == 0:
        return _finish(cls, parser, operands, pos, types, [], attributes=attrs)
    if cls.name == "stablehlo.optimization_barrier" and len(types) == n:  # one per operand
        return _finish(cls, parser, operands, pos, types, types, attributes=attrs)
    if len(types) == 2 and n == 3:  # select: pred type, value type
        inputs = [types[0], types[1], types[1]]
        return _finish(cls, parser, operands, pos, inputs, [types[1]], attributes=attrs)
    if len(types) != 1:
        parser.raise_error(f"expected one type for {cls.name} or a function type", pos)
    return _finish(cls, parser, operands, pos, types * n, types, attributes=attrs)


def _parse_complex(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    """`stablehlo.complex %a, %b : tensor<4xcomplex<f32>>` (the parts are f32) or functional."""
    pos = parser.pos
    operands = _operand_list(parser)
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    types, outs = _parse_types(parser)
    if outs is None:
        if len(types) != 1 or not isinstance(types[0], TensorType):
            parser.raise_error("expected the complex result type or a function type", pos)
        res = types[0]
        part = res.element_type
        part = getattr(part, "element_type", part)
        types, outs = [TensorType(part, res.get_shape())] * 2, [res]
    return _finish(cls, parser, operands, pos, types, outs, attributes=attrs)


def _parse_keyword_ints(parser: Parser, keyword: str) -> list[int]:
    parser.parse_keyword(keyword)
    parser.parse_punctuation("=")
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)


def _parse_functional(parser: Parser) -> tuple[list[Attribute], list[Attribute]]:
    parser.parse_punctuation(":")
    types, outs = _parse_types(parser)
    if outs is None:
        outs = list(types)
    return types, outs


def _parse_constant(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    pos = parser.pos
    attrs = parser.parse_optional_attr_dict()
    try:
        value = parser.parse_attribute()
    except (OverflowError, ValueError) as e:
        parser.raise_error(f"invalid constant: {e}", pos, parser.pos)
    ty = getattr(value, "type", None)
    if ty is None:
        parser.raise_error("expected a dense literal such as dense<1.0> : tensor<f32>", pos)
    return cls.create(result_types=[ty], properties={"value": value}, attributes=attrs)


def _parse_iota(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    parser.parse_keyword("dim")
    parser.parse_punctuation("=")
    dim = parser.parse_integer()
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    ty = parser.parse_type()
    return cls.create(
        result_types=[ty],
        properties={"iota_dimension": IntegerAttr(dim, i64)},
        attributes=attrs,
    )


def _dims_syntax(prop: str, keyword: str) -> Callable[[type[ImportedOp], Parser], ImportedOp]:
    """`op %x, dims = [..] : (T) -> R` (broadcast_in_dim, transpose)."""

    def parse(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
        pos = parser.pos
        operands = _operand_list(parser)
        parser.parse_punctuation(",")
        dims = _parse_keyword_ints(parser, keyword)
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_functional(parser)
        return _finish(cls, parser, operands, pos, inputs, outputs, {prop: i64_array(dims)}, attrs)

    return parse


def _parse_concatenate(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    pos = parser.pos
    operands = _operand_list(parser)
    parser.parse_punctuation(",")
    parser.parse_keyword("dim")
    parser.parse_punctuation("=")
    dim = parser.parse_integer()
    attrs = parser.parse_optional_attr_dict()
    inputs, outputs = _parse_functional(parser)
    props = {"dimension": IntegerAttr(dim, i64)}
    return _finish(cls, parser, operands, pos, inputs, outputs, props, attrs)


def _parse_dynamic_slice(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    pos = parser.pos
    operands = _operand_list(parser)
    parser.parse_punctuation(",")
    sizes = _parse_keyword_ints(parser, "sizes")
    attrs = parser.parse_optional_attr_dict()
    inputs, outputs = _parse_functional(parser)
    props = {"slice_sizes": i64_array(sizes)}
    return _finish(cls, parser, operands, pos, inputs, outputs, props, attrs)


def _parse_slice(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    pos = parser.pos
    operands = _operand_list(parser)
    starts: list[int] = []
    limits: list[int] = []
    strides: list[int] = []

    def parse_range() -> None:
        starts.append(parser.parse_integer())
        parser.parse_punctuation(":")
        limits.append(parser.parse_integer())
        strides.append(parser.parse_integer() if parser.parse_optional_punctuation(":") else 1)

    parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_range)
    attrs = parser.parse_optional_attr_dict()
    inputs, outputs = _parse_functional(parser)
    props = {
        "start_indices": i64_array(starts),
        "limit_indices": i64_array(limits),
        "strides": i64_array(strides),
    }
    return _finish(cls, parser, operands, pos, inputs, outputs, props, attrs)


def _parse_pad(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    """`stablehlo.pad %x, %v, low = [..], high = [..], interior = [..] : (T, S) -> R`."""
    pos = parser.pos
    operands = _operand_list(parser)
    props: dict[str, Attribute] = {}
    for keyword, prop in (
        ("low", "edge_padding_low"),
        ("high", "edge_padding_high"),
        ("interior", "interior_padding"),
    ):
        parser.parse_punctuation(",")
        props[prop] = i64_array(_parse_keyword_ints(parser, keyword))
    attrs = parser.parse_optional_attr_dict()
    inputs, outputs = _parse_functional(parser)
    return _finish(cls, parser, operands, pos, inputs, outputs, props, attrs)


def _parse_top_k(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    """`chlo.top_k(%x, k = 2) : tensor<..> -> (tensor<..>, tensor<..xi32>)`."""
    parser.parse_punctuation("(")
    pos = parser.pos
    operands = [parser.parse_unresolved_operand()]
    parser.parse_punctuation(",")
    parser.parse_keyword("k")
    parser.parse_punctuation("=")
    props: dict[str, Attribute] = {"k": IntegerAttr(parser.parse_integer(), 64)}
    parser.parse_punctuation(")")
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    ty = parser.parse_type()
    parser.parse_punctuation("->")
    outputs = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
    return _finish(cls, parser, operands, pos, [ty], outputs, props, attrs)


def _parse_compare(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    dir_pos = parser.pos
    direction = parser.parse_optional_identifier()
    if direction is None:
        parser.raise_error("expected a comparison direction (EQ, NE, LT, LE, GT, GE)", dir_pos)
    parser.parse_punctuation(",")
    pos = parser.pos
    operands = _operand_list(parser)
    props: dict[str, Attribute] = {
        "comparison_direction": ComparisonDirectionAttr(StringAttr(direction))
    }
    if parser.parse_optional_punctuation(","):
        props["compare_type"] = ComparisonTypeAttr(StringAttr(parser.parse_identifier()))
    attrs = parser.parse_optional_attr_dict()
    inputs, outputs = _parse_functional(parser)
    return _finish(cls, parser, operands, pos, inputs, outputs, props, attrs)


def _parse_dot_general(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    pos = parser.pos
    operands = _operand_list(parser)
    props: dict[str, Attribute] = {}
    dims = {"batching_dims": ([], []), "contracting_dims": ([], [])}
    while parser.parse_optional_punctuation(","):
        key_pos = parser.pos
        key = parser.parse_optional_identifier()
        if key in dims:
            parser.parse_punctuation("=")
            lhs = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
            parser.parse_keyword("x")
            rhs = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
            dims[key] = (lhs, rhs)
        elif key == "precision":
            parser.parse_punctuation("=")
            values = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, parser.parse_identifier
            )
            props["precision_config"] = ArrayAttr(PrecisionAttr(StringAttr(v)) for v in values)
        elif key == "algorithm":
            parser.parse_punctuation("=")
            props["algorithm"] = DotAlgorithmAttr.new(DotAlgorithmAttr.parse_parameters(parser))
        else:
            parser.raise_error(
                f"unknown dot_general field '{key}' (expected batching_dims, "
                "contracting_dims, precision or algorithm)",
                key_pos,
            )
    attrs = parser.parse_optional_attr_dict()
    inputs, outputs = _parse_functional(parser)
    (lb, rb), (lc, rc) = dims["batching_dims"], dims["contracting_dims"]
    props["dot_dimension_numbers"] = DotDimensionNumbersAttr(
        ArrayAttr(
            StringAttr(k)
            for k in (
                "lhs_batching_dimensions",
                "rhs_batching_dimensions",
                "lhs_contracting_dimensions",
                "rhs_contracting_dimensions",
            )
        ),
        ArrayAttr([i64_array(lb), i64_array(rb), i64_array(lc), i64_array(rc)]),
    )
    return _finish(cls, parser, operands, pos, inputs, outputs, props, attrs)


def _parse_dot(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    """The legacy `stablehlo.dot %a, %b, precision = [..] : (..) -> ..`."""
    pos = parser.pos
    operands = _operand_list(parser)
    props: dict[str, Attribute] = {}
    if parser.parse_optional_punctuation(","):
        parser.parse_keyword("precision")
        parser.parse_punctuation("=")
        values = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_identifier)
        props["precision_config"] = ArrayAttr(PrecisionAttr(StringAttr(v)) for v in values)
    attrs = parser.parse_optional_attr_dict()
    inputs, outputs = _parse_functional(parser)
    return _finish(cls, parser, operands, pos, inputs, outputs, props, attrs)


def _parse_reduce(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    """
    `stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [1] : ...`
    or `stablehlo.reduce(%x init: %c), (%y init: %d) across dimensions = [0] : ...
    reducer(%a: T, %b: T) (%c: U, %d: U) { ... }`.
    """
    pos = parser.pos
    pairs: list[tuple[UnresolvedOperand, UnresolvedOperand]] = []

    def parse_pair() -> None:
        x = parser.parse_unresolved_operand()
        parser.parse_keyword("init")
        parser.parse_punctuation(":")
        pairs.append((x, parser.parse_unresolved_operand()))

    if parser._current_token.text == "(":  # pyright: ignore[reportPrivateUsage]
        # the generic form `"stablehlo.reduce"(...)` never reaches here; this is pretty
        while True:
            parser.parse_punctuation("(")
            parse_pair()
            parser.parse_punctuation(")")
            if not parser.parse_optional_punctuation(","):
                break
    props: dict[str, Attribute] = {}
    if parser.parse_optional_keyword("applies"):
        body_pos = parser.pos
        body = parser.parse_optional_identifier()
        if body is None:
            tok = parser._current_token  # pyright: ignore[reportPrivateUsage]
            body = tok.text
            parser.raise_error("expected the name of the reduction op after 'applies'", body_pos)
        props["applies"] = StringAttr(body)
    parser.parse_keyword("across")
    dims = _parse_keyword_ints(parser, "dimensions")
    props["dimensions"] = i64_array(dims)
    attrs = parser.parse_optional_attr_dict()
    inputs, outputs = _parse_functional(parser)
    operands = [p[0] for p in pairs] + [p[1] for p in pairs]
    regions = []
    if "applies" not in props:
        parser.parse_keyword("reducer")
        lhs: list[Parser.Argument] = []
        rhs: list[Parser.Argument] = []
        while parser._current_token.text == "(":  # pyright: ignore[reportPrivateUsage]
            args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_argument)
            if len(args) != 2:
                parser.raise_error("each reducer argument group has two arguments")
            lhs.append(args[0])
            rhs.append(args[1])
        regions.append(parser.parse_region(lhs + rhs))
    return _finish(cls, parser, operands, pos, inputs, outputs, props, attrs, regions)


def _parse_custom_call(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    target = parser.parse_symbol_name()
    pos = parser.pos
    parser.parse_punctuation("(")
    operands = _operand_list(parser)
    parser.parse_punctuation(")")
    attrs = parser.parse_optional_attr_dict()
    inputs, outputs = _parse_functional(parser)
    props = {"call_target_name": StringAttr(target.data)}
    return _finish(cls, parser, operands, pos, inputs, outputs, props, attrs)


def _parse_sdy_mesh(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    sym = parser.parse_symbol_name()
    parser.parse_punctuation("=")
    names, sizes, device_ids = _parse_mesh_body(parser)
    attrs = parser.parse_optional_attr_dict()
    props: dict[str, Attribute] = {
        "sym_name": StringAttr(sym.data),
        "axis_names": ArrayAttr(StringAttr(n) for n in names),
        "axis_sizes": ArrayAttr(IntAttr(s) for s in sizes),
    }
    if device_ids is not None:
        props["device_ids"] = i64_array(device_ids)
    return cls.create(properties=props, attributes=attrs)


def _parse_sdy_constraint(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    """`sdy.sharding_constraint %x <@mesh, [...]> : T` (also `sdy.reshard`)."""
    pos = parser.pos
    operands = _operand_list(parser)
    sharding = parse_sdy_sharding(parser)
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    ty = parser.parse_type()
    return _finish(cls, parser, operands, pos, [ty], [ty], {"sharding": sharding}, attrs)


# Shardy's explicit collectives ----------------------------------------------------------
# `sdy.all_gather [{}, {"x"}] %x out_sharding=<@mesh, [...]> : T` (also sdy.all_slice),
# `sdy.all_reduce {"x"} %x out_sharding=<...> : T`, `sdy.all_to_all [{"x"}: 0->1] %x
# out_sharding=<...> : T`, `sdy.collective_permute %x out_sharding=<...> : T`.


def _parse_axes_per_dim(parser: Parser) -> Attribute:
    dims = parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE,
        lambda: parser.parse_comma_separated_list(
            parser.Delimiter.BRACES, lambda: _parse_axis_ref(parser)
        ),
    )
    return ArrayAttr(ArrayAttr(StringAttr(a) for a in d) for d in dims)


def _parse_all_to_all_params(parser: Parser) -> Attribute:
    def param() -> Attribute:
        axes = parser.parse_comma_separated_list(
            parser.Delimiter.BRACES, lambda: _parse_axis_ref(parser)
        )
        parser.parse_punctuation(":")
        src = parser.parse_integer(allow_negative=False, allow_boolean=False)
        parser.parse_punctuation("->")
        tgt = parser.parse_integer(allow_negative=False, allow_boolean=False)
        return ArrayAttr([ArrayAttr(StringAttr(a) for a in axes), IntAttr(src), IntAttr(tgt)])

    return ArrayAttr(parser.parse_comma_separated_list(parser.Delimiter.SQUARE, param))


_SDY_COLLECTIVE_AXES: dict[str, tuple[str, Callable[[Parser], Attribute]] | None] = {
    "sdy.all_gather": ("gathering_axes", _parse_axes_per_dim),
    "sdy.all_slice": ("slicing_axes", _parse_axes_per_dim),
    "sdy.all_reduce": (
        "reduction_axes",
        lambda p: ArrayAttr(
            StringAttr(a)
            for a in p.parse_comma_separated_list(p.Delimiter.BRACES, lambda: _parse_axis_ref(p))
        ),
    ),
    "sdy.all_to_all": ("params", _parse_all_to_all_params),
    "sdy.collective_permute": None,
}


def _parse_sdy_collective(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    """Shardy's explicit collectives: `[axes] %x out_sharding=<@mesh, [...]> : T`."""
    pos = parser.pos
    props: dict[str, Attribute] = {}
    axes = _SDY_COLLECTIVE_AXES[cls.name]
    if axes is not None:
        props[axes[0]] = axes[1](parser)
    operands = _operand_list(parser)
    parser.parse_keyword("out_sharding")
    parser.parse_punctuation("=")
    props["out_sharding"] = parse_sdy_sharding(parser)
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    ty = parser.parse_type()
    return _finish(cls, parser, operands, pos, [ty], [ty], props, attrs)


def _parse_manual_computation(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    pos = parser.pos
    parser.parse_punctuation("(")
    operands = _operand_list(parser)
    parser.parse_punctuation(")")
    props: dict[str, Attribute] = {}
    for key in ("in_shardings", "out_shardings"):
        parser.parse_keyword(key)
        parser.parse_punctuation("=")
        items = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parse_sdy_sharding(parser)
        )
        props[key] = ArrayAttr(items)
    parser.parse_keyword("manual_axes")
    parser.parse_punctuation("=")
    props["manual_axes"] = ArrayAttr(StringAttr(a) for a in _parse_axis_set(parser))
    args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_argument)
    region = parser.parse_region(args)
    attrs = parser.parse_optional_attr_dict()
    inputs, outputs = _parse_functional(parser)
    return _finish(cls, parser, operands, pos, inputs, outputs, props, attrs, [region])


def _parse_composite(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    """`stablehlo.composite "name" %a, %b {decomposition = @f, ...} : (..) -> ..`."""
    name = parser.parse_str_literal()
    pos = parser.pos
    operands = _operand_list(parser)
    attrs = parser.parse_optional_attr_dict()
    inputs, outputs = _parse_functional(parser)
    props = {"name": StringAttr(name)}
    return _finish(cls, parser, operands, pos, inputs, outputs, props, attrs)


def _parse_convolution(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    """`stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
    window = {stride = [..], pad = [[..]], lhs_dilate = [..], rhs_dilate = [..], reverse =
    [..]} {feature_group_count = 1 : i64, ...} : (...) -> ...`, stored as the generic form's
    properties (`dimension_numbers`, `window_strides`, `padding` flat, ...)."""
    parser.parse_punctuation("(")
    pos = parser.pos
    operands = _operand_list(parser)
    parser.parse_punctuation(")")
    parser.parse_keyword("dim_numbers")
    parser.parse_punctuation("=")
    dims = parse_conv_dim_numbers(parser)
    props: dict[str, Attribute] = {
        "dimension_numbers": ConvDimensionNumbersAttr(*(i64_array(d) for d in dims))
    }
    names = {
        "stride": "window_strides",
        "pad": "padding",
        "lhs_dilate": "lhs_dilation",
        "rhs_dilate": "rhs_dilation",
        "reverse": "window_reversal",
    }
    if parser.parse_optional_punctuation(","):
        parser.parse_keyword("window")
        parser.parse_punctuation("=")
        for key, values in parse_conv_window(parser).items():
            props[names[key]] = i64_array(values)
    attrs = parser.parse_optional_attr_dict()
    inputs, outputs = _parse_functional(parser)
    return _finish(cls, parser, operands, pos, inputs, outputs, props, attrs)


def _parse_generic_only(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    parser.raise_error(
        f"{cls.name} is read in MLIR's generic form only "
        f'("{cls.name}"(...) <{{...}}> ... : (...) -> ...)'
    )


_SYNTAXES: dict[str, Callable[[type[ImportedOp], Parser], ImportedOp]] = {
    "simple": _parse_simple,
    "constant": _parse_constant,
    "iota": _parse_iota,
    "broadcast_in_dim": _dims_syntax("broadcast_dimensions", "dims"),
    "transpose": _dims_syntax("permutation", "dims"),
    "concatenate": _parse_concatenate,
    "dynamic_slice": _parse_dynamic_slice,
    "slice": _parse_slice,
    "pad": _parse_pad,
    "reverse": _dims_syntax("dimensions", "dims"),
    "top_k": _parse_top_k,
    "convolution": _parse_convolution,
    "compare": _parse_compare,
    "dot_general": _parse_dot_general,
    "dot": _parse_dot,
    "reduce": _parse_reduce,
    "custom_call": _parse_custom_call,
    "sdy_mesh": _parse_sdy_mesh,
    "sdy_constraint": _parse_sdy_constraint,
    "manual_computation": _parse_manual_computation,
    "composite": _parse_composite,
    "sdy_collective": _parse_sdy_collective,
    "generic": _parse_generic_only,
    "complex": _parse_complex,
}

# while, case, if (issue 13) -----------------------------------------------------------------


def _parse_while(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    """
    `stablehlo.while(%iterArg = %c, %iterArg_0 = %x) : tensor<i32>, tensor<4xf32>
    attributes {..} cond { .. } do { .. }`: both regions take the carried values, named as
    in the header.
    """
    pos = parser.pos
    names, operands, types, attrs = parse_while_header(parser)
    regions = []
    for keyword in ("cond", "do"):
        parser.parse_keyword(keyword)
        args = [n.resolve(t) for n, t in zip(names, types, strict=True)]
        regions.append(parser.parse_region(args))
    attributes = dict(attrs.data) if attrs is not None else {}
    return _finish(cls, parser, operands, pos, types, types, {}, attributes, regions)


_SYNTAXES["while"] = _parse_while
CONTROL_SYNTAXES = {"while": "while", "case": "generic", "if": "generic"}
"""StableHLO's ops with regions for control flow (case and if have no pretty form)."""


STABLEHLO_SIMPLE = (
    "add subtract multiply divide maximum minimum power remainder atan2 and or xor "
    "not negate exponential exponential_minus_one log log_plus_one tanh sqrt rsqrt "
    "cbrt abs sine cosine tan logistic sign floor ceil round_nearest_even "
    "round_nearest_afz is_finite convert reshape select clamp bitcast_convert "
    "optimization_barrier dynamic_update_slice"
).split()
STABLEHLO_SIMPLE += (
    "shift_left shift_right_logical shift_right_arithmetic popcnt count_leading_zeros".split()
)
STABLEHLO_SIMPLE += ["real", "imag"]
STABLEHLO_CUSTOM = {
    "constant": "constant",
    "iota": "iota",
    "broadcast_in_dim": "broadcast_in_dim",
    "transpose": "transpose",
    "concatenate": "concatenate",
    "dynamic_slice": "dynamic_slice",
    "slice": "slice",
    "pad": "pad",
    "reverse": "reverse",
    "sort": "generic",
    "convolution": "convolution",
    "gather": "generic",
    "dynamic_gather": "generic",
    "scatter": "generic",
    "reduce_window": "generic",
    "select_and_scatter": "generic",
    "compare": "compare",
    "dot_general": "dot_general",
    "dot": "dot",
    "reduce": "reduce",
    "complex": "complex",
    "custom_call": "custom_call",
    "all_reduce": "generic",
    "all_gather": "generic",
    "reduce_scatter": "generic",
    "all_to_all": "generic",
    "collective_permute": "generic",
    "broadcast": "generic",
    "composite": "composite",
}
# shard_map device ids and collectives (issue 13)
STABLEHLO_SIMPLE += ["partition_id", "replica_id"]
STABLEHLO_CUSTOM["collective_broadcast"] = "generic"
CHLO_UNARY = (
    "square erf erfc erf_inv sinh cosh tan asin acos atan asinh acosh atanh "
    "is_inf is_neg_inf is_pos_inf lgamma digamma conj"
).split()


# rng_bit_generator (issue 13) ----------------------------------------------------------------


@irdl_attr_definition
class RngAlgorithmAttr(OpaqueEnumAttr):
    """`#stablehlo<rng_algorithm THREE_FRY>`."""

    name = "stablehlo.rng_algorithm"


def _parse_rng_bit_generator(cls: type[ImportedOp], parser: Parser) -> ImportedOp:
    """`stablehlo.rng_bit_generator %s, algorithm = DEFAULT : (tensor<2xui64>) -> (.., ..)`."""
    pos = parser.pos
    operands = [parser.parse_unresolved_operand()]
    parser.parse_punctuation(",")
    parser.parse_keyword("algorithm")
    parser.parse_punctuation("=")
    algorithm = parser.parse_identifier(" (DEFAULT, THREE_FRY or PHILOX)")
    props: dict[str, Attribute] = {"rng_algorithm": RngAlgorithmAttr(StringAttr(algorithm))}
    attrs = parser.parse_optional_attr_dict()
    inputs, outputs = _parse_functional(parser)
    return _finish(cls, parser, operands, pos, inputs, outputs, props, attrs)


_SYNTAXES["rng_bit_generator"] = _parse_rng_bit_generator
STABLEHLO_CUSTOM["rng_bit_generator"] = "rng_bit_generator"


def _op_class(name: str, syntax: str, base: type[ImportedOp] = ImportedOp) -> type[ImportedOp]:
    cls_name = "".join(p.capitalize() for p in name.replace(".", "_").split("_")) + "Op"
    return type(cls_name, (base,), {"name": name, "SYNTAX": syntax})


def _dialects() -> list[Dialect]:
    stablehlo_ops = [_op_class(f"stablehlo.{n}", "simple") for n in STABLEHLO_SIMPLE]
    stablehlo_ops += [_op_class(f"stablehlo.{n}", s) for n, s in STABLEHLO_CUSTOM.items()]
    stablehlo_ops += [_op_class(f"stablehlo.{n}", s) for n, s in CONTROL_SYNTAXES.items()]
    stablehlo_ops.append(_op_class("stablehlo.return", "simple", ImportedTerminator))
    chlo_ops = [_op_class(f"chlo.{n}", "simple") for n in CHLO_UNARY]
    chlo_ops.append(_op_class("chlo.top_k", "top_k"))
    sdy_ops = [
        _op_class("sdy.mesh", "sdy_mesh", ImportedTerminator),
        _op_class("sdy.sharding_constraint", "sdy_constraint"),
        _op_class("sdy.reshard", "sdy_constraint"),
        _op_class("sdy.manual_computation", "manual_computation"),
        _op_class("sdy.return", "simple", ImportedTerminator),
    ]
    sdy_ops += [_op_class(n, "sdy_collective") for n in _SDY_COLLECTIVE_AXES]
    return [
        Dialect(
            "stablehlo",
            stablehlo_ops,
            [
                ChannelHandleAttr,
                DotDimensionNumbersAttr,
                DotAlgorithmAttr,
                GatherDimensionNumbersAttr,
                ScatterDimensionNumbersAttr,
                ResultAccuracyAttr,
                ComparisonDirectionAttr,
                ComparisonTypeAttr,
                PrecisionAttr,
                ResultAccuracyModeAttr,
                RngAlgorithmAttr,
                ConvDimensionNumbersAttr,
            ],
        ),
        Dialect("chlo", chlo_ops, []),
        Dialect(
            "sdy",
            sdy_ops,
            [SdyShardingAttr, SdyShardingPerValueAttr, SdyMeshAttr, SdyManualAxesAttr],
        ),
    ]


_DIALECTS: list[Dialect] | None = None


def make_import_context() -> Context:
    """builtin + func + the StableHLO / CHLO / sdy subset (no unregistered ops)."""
    global _DIALECTS
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func

    if _DIALECTS is None:
        _DIALECTS = _dialects()
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Func)
    for d in _DIALECTS:
        ctx.load_dialect(d)
    return ctx


def known_ops() -> list[str]:
    make_import_context()  # loads the dialects into _DIALECTS
    return sorted(op.name for d in (_DIALECTS or []) for op in d.operations)


__all__ = [
    "ImportedOp",
    "SdyShardingAttr",
    "SdyShardingPerValueAttr",
    "make_import_context",
    "known_ops",
]
