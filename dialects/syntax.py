"""
Small parse/print helpers shared by the hand-written op syntaxes of our dialects.

DESIGN.md's forms (`dims = [1, 0]`, `[1] x [0]`, `{"a", "b"}`) are not expressible with
xDSL's declarative assembly format, so the ops that use them parse and print by hand;
these helpers keep those hand-written parts short and uniform.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import AnyFloat, DenseArrayBase, IntegerAttr, i64
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
    return parser.parse_comma_separated_list(
        parser.Delimiter.BRACES, parser.parse_str_literal
    )


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
    return DenseArrayBase.from_list(i64, list(values))


def i64_attr(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)


def print_keyword_value(printer: Printer, keyword: str, value: str) -> None:
    printer.print_string(f"{keyword} = {value}")


def patch_hex_float_elements() -> None:
    """
    Read a hexadecimal element of a float `dense<...>` literal as the value's bits.

    That is how MLIR (and xDSL's printer) writes inf and nan: `dense<0xff800000> :
    tensor<f32>` is -inf. xDSL 0.74 reads a hexadecimal scalar float attribute this way
    but converts a hexadecimal `dense` element as an integer (2.14e9), so printing a
    constant holding inf or nan and reading it back changed its value. Patched once, for
    every parser (custom and generic forms alike).
    """
    element = AttrParser._TensorLiteralElement  # pyright: ignore[reportPrivateUsage]
    if getattr(element, "_shardc_hex_floats", False):
        return
    to_type = element.to_type

    def to_type_reading_hex_bits(self: Any, parser: AttrParser, type: Any) -> Any:
        text = self.span.text.lstrip("-").strip()
        if isinstance(type, AnyFloat) and text[:2] in ("0x", "0X"):
            if self.is_negative:
                parser.raise_error(
                    "a hexadecimal float literal gives the bits and takes no sign",
                    self.span,
                )
            bits = int(text, 16)
            if bits >= 1 << (8 * type.compile_time_size):
                parser.raise_error(
                    f"hexadecimal literal {text} does not fit in {type}", self.span
                )
            raw = bits.to_bytes(type.compile_time_size, "little")
            return next(iter(type.iter_unpack(raw)))
        return to_type(self, parser, type)

    element.to_type = to_type_reading_hex_bits
    element._shardc_hex_floats = True  # pyright: ignore[reportAttributeAccessIssue]
