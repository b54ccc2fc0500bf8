"""
Small parse/print helpers shared by the hand-written op syntaxes of our dialects.

DESIGN.md's forms (`dims = [1, 0]`, `[1] x [0]`, `{"a", "b"}`) are not expressible with
xDSL's declarative assembly format, so the ops that use them parse and print by hand;
these helpers keep those hand-written parts short and uniform.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    i64,
)
from xdsl.ir import Attribute
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.mlir_lexer import MLIRLexer

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def parse_i64(parser: AttrParser) -> int:
    """An integer literal that fits an i64 (else an error at the literal, not a wrap)."""
    start = parser.pos
    value = parser.parse_integer(allow_boolean=False)
    if not I64_MIN <= value <= I64_MAX:
        parser.raise_error(f"integer {value} does not fit in 64 bits", start, parser.pos)
    return value


def parse_int_list(parser: AttrParser) -> list[int]:
    """Parse `[1, 2, 3]` (possibly empty)."""
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: parse_i64(parser))


def int_list_str(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def parse_keyword_int(parser: AttrParser, keyword: str) -> int:
    """Parse `keyword = 3`."""
    parser.parse_keyword(keyword)
    parser.parse_punctuation("=")
    return parse_i64(parser)


def parse_keyword_int_list(parser: AttrParser, keyword: str) -> list[int]:
    """Parse `keyword = [1, 2]`."""
    parser.parse_keyword(keyword)
    parser.parse_punctuation("=")
    return parse_int_list(parser)


def parse_string_list_in_braces(parser: AttrParser) -> list[str]:
    """
    Parse `{"a", "b"}` as an ordered list of strings.

    Not an attribute dictionary: order matters and duplicates must be reported, so it is
    never handed to `parse_attribute`.
    """
    return parser.parse_comma_separated_list(parser.Delimiter.BRACES, parser.parse_str_literal)


def quote(text: str) -> str:
    """
    `text` as an MLIR string literal that parses back unchanged: `\\`, `"` and control
    characters escaped (`\\\\`, `\\22`, `\\0A`). Other non-ASCII characters stay as
    they are: xDSL reads an escaped non-ASCII byte as a bytes literal, not a string.
    """
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    out: list[str] = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif char == '"' or ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\{ord(char):02X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def symbol(name: str) -> str:
    """`@name`, quoted when it is not a bare identifier (`@"my mesh"`)."""
    if MLIRLexer.bare_identifier_regex.fullmatch(name):
        return f"@{name}"
    return f"@{quote(name)}"


def string_list_in_braces_str(values: Sequence[str]) -> str:
    return "{" + ", ".join(quote(v) for v in values) + "}"


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    return _i64_array(tuple(int(v) for v in values))


def i64_attr(value: int) -> IntegerAttr:
    return _i64_attr(int(value))


# Building an attribute verifies it (~15 us in xDSL 0.74) and the passes build the same few
# (dimensions, offsets, shapes) thousands of times (issue 14 item 7): each is built once.
# Attributes are immutable values, so sharing one object changes nothing.


@functools.lru_cache(maxsize=4096)
def _i64_array(values: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


@functools.lru_cache(maxsize=4096)
def _i64_attr(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)


def print_keyword_value(printer: Printer, keyword: str, value: str) -> None:
    printer.print_string(f"{keyword} = {value}")


# Splat literals ---------------------------------------------------------------------------
#
# A splat `dense<v> : tensor<8192x16384xbf16>` is held as ONE packed element under its
# full-shaped type (xDSL prints, and shardc's readers read, a one-element literal of any
# shape as a splat: see `interpreter.values.array_from_dense`). xDSL 0.74's own
# `DenseIntOrFPElementsAttr.from_list(ty, [v])` and its `dense<...>` parser repeat the
# element prod(shape) times, and its printer then unpacks every element into a Python
# tuple twice (`get_values`, `is_splat`): gigabytes and minutes for one big splat.


def splat_elements(ty: Any, value: float) -> DenseIntOrFPElementsAttr:
    """`dense<value> : ty` holding one element, whatever the size of `ty`."""
    elem = ty.get_element_type()
    if isinstance(elem, IntegerType):
        value = elem.get_normalized_value(int(value))
    if math.prod(ty.get_shape()) == 0:  # an empty tensor holds no element
        return DenseIntOrFPElementsAttr.from_list(ty, [])
    return DenseIntOrFPElementsAttr(ty, BytesAttr(elem.pack([value])))


def splat_element(attr: DenseIntOrFPElementsAttr) -> Any:
    """
    The element of a splat literal (one stored element, or all stored elements the same
    bits), else None; reads one element, never unpacks the whole literal.
    """
    raw = attr.data.data
    size = attr.get_element_type().compile_time_size
    if not raw or len(raw) % size:
        return None
    first = raw[:size]
    # n non-overlapping occurrences of an n-th of the bytes tile them exactly
    if len(raw) != size and raw.count(first) != len(raw) // size:
        return None
    return next(iter(attr.get_element_type().iter_unpack(first)))


def parse_bound_operands(parser: Any) -> tuple[list[Any], list[Any]]:
    """`(%i = %c, %x = %a)`: the block-argument names and the unresolved operands they
    stand for (a while loop's header, a fusion's operands)."""
    names: list[Any] = []
    operands: list[Any] = []

    def parse_pair() -> None:
        names.append(parser.parse_argument(expect_type=False))
        parser.parse_punctuation("=")
        operands.append(parser.parse_unresolved_operand())

    parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_pair)
    return names, operands


def parse_while_header(parser: Any) -> tuple[list[Any], list[Any], list[Attribute], Any]:
    """
    A while loop's header as StableHLO prints it, `(%i = %c, %x = %a) : T, U` then an
    optional `attributes {..}`: the block-argument names, the unresolved operands, their
    types and the attribute dictionary (None if absent). Shared by `hlo.while` and the
    StableHLO importer's `stablehlo.while`.
    """
    names, operands = parse_bound_operands(parser)
    types: list[Attribute] = []
    if operands:
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
    return names, operands, types, parser.parse_optional_attr_dict_with_keyword()
