"""
Small parse/print helpers shared by the hand-written op syntaxes of our dialects.

DESIGN.md's forms (`dims = [1, 0]`, `[1] x [0]`, `{"a", "b"}`) are not expressible with
xDSL's declarative assembly format, so the ops that use them parse and print by hand;
these helpers keep those hand-written parts short and uniform.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, i64
from xdsl.parser import AttrParser
from xdsl.printer import Printer


def parse_int_list(parser: AttrParser) -> list[int]:
    """Parse `[1, 2, 3]` (possibly empty)."""
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, parser.parse_integer
    )


def int_list_str(values: Sequence[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def parse_keyword_int(parser: AttrParser, keyword: str) -> int:
    """Parse `keyword = 3`."""
    parser.parse_keyword(keyword)
    parser.parse_punctuation("=")
    return parser.parse_integer()


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
    return parser.parse_comma_separated_list(
        parser.Delimiter.BRACES, parser.parse_str_literal
    )


def string_list_in_braces_str(values: Sequence[str]) -> str:
    return "{" + ", ".join(f'"{v}"' for v in values) + "}"


def i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def i64_attr(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)


def print_keyword_value(printer: Printer, keyword: str, value: str) -> None:
    printer.print_string(f"{keyword} = {value}")
