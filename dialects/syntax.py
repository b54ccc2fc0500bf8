"""
Small parse/print helpers shared by the hand-written op syntaxes of our dialects.

DESIGN.md's forms (`dims = [1, 0]`, `[1] x [0]`, `{"a", "b"}`) are not expressible with
xDSL's declarative assembly format, so the ops that use them parse and print by hand;
these helpers keep those hand-written parts short and uniform.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import (
    AnyFloat,
    BytesAttr,
    ComplexType,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    i64,
)
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
                parser.raise_error(f"hexadecimal literal {text} does not fit in {type}", self.span)
            raw = bits.to_bytes(type.compile_time_size, "little")
            return next(iter(type.iter_unpack(raw)))
        return to_type(self, parser, type)

    element.to_type = to_type_reading_hex_bits
    element._shardc_hex_floats = True  # pyright: ignore[reportAttributeAccessIssue]


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


def patch_compact_splats() -> None:
    """
    Keep splat literals one element: xDSL's reader of `dense<...>` (a splat literal,
    `dense<1.0>` or a one-element hex string, becomes one stored element, see
    `splat_elements`), and its printer and `is_splat` (they test the splat on the bytes
    instead of unpacking every element). Patched once, for every parser and printer.
    """
    if getattr(DenseIntOrFPElementsAttr, "_shardc_compact_splats", False):
        return
    parse_dense = AttrParser.parse_dense_int_or_fp_elements_attr
    print_without_type = DenseIntOrFPElementsAttr.print_without_type

    def parse_dense_compact(self: AttrParser, type: Any) -> DenseIntOrFPElementsAttr:
        start = self.pos
        self.parse_punctuation("<", " in dense attribute")
        contents: Any = None
        if self.parse_optional_punctuation(">") is None:
            contents = self.parse_optional_str_literal()
            if contents is None:
                contents = self._parse_tensor_literal()  # pyright: ignore[reportPrivateUsage]
            self.parse_punctuation(">", " in dense attribute")
        ty = type
        if ty is None:
            self.parse_punctuation(":", " in dense attribute")
            ty = self._parse_dense_literal_type()  # pyright: ignore[reportPrivateUsage]
        count = math.prod(ty.get_shape())
        elem = ty.get_element_type()
        complex_elem = isinstance(elem, ComplexType)  # xDSL's reader for those
        if count > 1 and isinstance(contents, str) and not complex_elem:
            try:
                raw = bytes.fromhex(contents[2:])
            except ValueError:
                self.raise_error("Hex string in denseAttr is invalid")
            if len(raw) == elem.compile_time_size:
                return DenseIntOrFPElementsAttr(ty, BytesAttr(raw))
        elif count > 1 and isinstance(contents, tuple) and not contents[1] and not complex_elem:
            return splat_elements(ty, contents[0][0].to_type(self, elem))
        # anything else (not a splat): xDSL's own reader, from the start again
        self._resume_from(start)  # pyright: ignore[reportPrivateUsage]
        return parse_dense(self, type)

    def print_compact(self: DenseIntOrFPElementsAttr, printer: Printer) -> None:
        value = splat_element(self)
        if value is None:
            print_without_type(self, printer)
            return
        printer.print_string("dense<")
        self._print_one_elem(value, printer)  # pyright: ignore[reportPrivateUsage]
        printer.print_string(">")

    def is_splat(self: DenseIntOrFPElementsAttr) -> bool:
        return splat_element(self) is not None

    AttrParser.parse_dense_int_or_fp_elements_attr = parse_dense_compact
    DenseIntOrFPElementsAttr.print_without_type = print_compact
    DenseIntOrFPElementsAttr.is_splat = is_splat
    DenseIntOrFPElementsAttr._shardc_compact_splats = True  # pyright: ignore[reportAttributeAccessIssue]
