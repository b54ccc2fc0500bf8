"""
Every change shardc makes to xDSL's own parser, lexer and printer, in one place, each
saying why it exists (at the bottom layer: no shardc imports; a patch that needs a
dialect's attribute takes it as a parameter and the dialect applies it at import).

They are written against xDSL 0.74.0 (pinned in pyproject.toml): they replace or wrap
private methods whose shape changes between releases, so importing this module with any
other xDSL is an error that says so, instead of a parser that silently misreads.

* `patch_hex_float_elements`: `dense<0xFF800000> : tensor<f32>` is -inf, as MLIR reads it
  (xDSL 0.74 reads the element as an integer). Applied by `dialects.hlo`.
* `patch_compact_splats`: a splat `dense<...>` stays one stored element when read,
  printed and tested (xDSL 0.74 expands it). Applied by `dialects.hlo`.
* `patch_memref_memory_spaces`: the generic form of a `#tpu.memory_space` reads back as
  that attribute. Applied by `dialects.tpu`.
* `SafeLexer`: string literals lexed in linear time (xDSL 0.74's pattern backtracks
  exponentially on an unterminated string). Used by `parsing.LocatedParser`.
"""

from __future__ import annotations

import importlib.metadata
import math
import re
from collections.abc import Callable
from typing import Any

from xdsl.dialects.builtin import (
    AnyFloat,
    BytesAttr,
    ComplexType,
    DenseIntOrFPElementsAttr,
    MemRefType,
    StringAttr,
)
from xdsl.ir import Attribute
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.mlir_lexer import MLIRLexer

XDSL_VERSION = "0.74.0"
"""The xDSL release these patches are written against."""


class XdslVersionError(ImportError):
    """shardc runs on an xDSL other than the one its patches are written for."""


def check_xdsl_version(found: str | None = None) -> None:
    """Raise `XdslVersionError` unless xDSL is `XDSL_VERSION` (`found`: for tests)."""
    if found is None:
        found = importlib.metadata.version("xdsl")
    if found != XDSL_VERSION:
        raise XdslVersionError(
            f"shardc needs xdsl=={XDSL_VERSION} (its parser and printer patches, "
            f"shardc/xdsl_patches.py, are written for it), but xdsl {found} is installed: "
            f"pip install 'xdsl=={XDSL_VERSION}'"
        )


check_xdsl_version()


def patch_hex_float_elements() -> None:
    """
    Read a hexadecimal element of a float `dense<...>` literal as the value's bits, and
    refuse a complex element that is not a (re, im) pair with a message (xDSL 0.74
    asserts).

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
        if isinstance(type, ComplexType) and not isinstance(self.value, tuple):
            # xDSL 0.74 asserts here; MLIR wants a pair for each complex element
            parser.raise_error(f"expected a complex literal (re, im) for {type}", self.span)
        return to_type(self, parser, type)

    element.to_type = to_type_reading_hex_bits
    element._shardc_hex_floats = True  # pyright: ignore[reportAttributeAccessIssue]


def patch_compact_splats(
    splat_elements: Callable[[Any, Any], DenseIntOrFPElementsAttr],
    splat_element: Callable[[DenseIntOrFPElementsAttr], Any],
) -> None:
    """
    Keep splat literals one element: xDSL's reader of `dense<...>` (a splat literal,
    `dense<1.0>` or a one-element hex string, becomes one stored element, made by
    `splat_elements(type, value)`), and its printer and `is_splat` (they test the splat on
    the bytes with `splat_element(attr)`, the element or None, instead of unpacking every
    element). Patched once, for every parser and printer.

    Why: xDSL 0.74's `dense<...>` parser repeats a splat's element prod(shape) times and
    its printer unpacks every element into a Python tuple twice (`get_values`,
    `is_splat`): gigabytes and minutes for one big splat such as
    `dense<0.0> : tensor<8192x16384xbf16>`.
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


def patch_memref_memory_spaces(names: set[str], space: Callable[[str], Attribute]) -> None:
    """
    Read a memref whose memory space is one of the strings `names` (`"hbm"`, `"vmem"`,
    `"smem"`, `"semaphore"`: the generic form of `#tpu.memory_space<...>`, see
    `tpu.MemorySpaceAttr`) with the attribute `space(name)`, so that generic and custom
    forms give the same IR. Patched once, for every parser.

    Why: MLIR accepts as a memref's memory space only integer, string and dictionary
    attributes or attributes of a registered dialect, so the generic form prints the
    space as a string; xDSL has no hook to map it back.
    """
    parse = AttrParser._parse_memref_attrs  # pyright: ignore[reportPrivateUsage]
    if getattr(parse, "_shardc_tpu_spaces", False):
        return
    space_of = space

    def parse_memref_with_tpu_space(self: AttrParser) -> Attribute:
        ty = parse(self)
        space = getattr(ty, "memory_space", None)
        if isinstance(ty, MemRefType) and isinstance(space, StringAttr) and space.data in names:
            return MemRefType(ty.element_type, ty.shape, ty.layout, space_of(space.data))
        return ty

    parse_memref_with_tpu_space._shardc_tpu_spaces = True  # pyright: ignore[reportFunctionMemberAccess]
    AttrParser._parse_memref_attrs = parse_memref_with_tpu_space  # pyright: ignore


class SafeLexer(MLIRLexer):
    """
    xDSL's MLIR lexer with a string-literal pattern that cannot backtrack (a subclass,
    not a patch: `shardc.parsing.LocatedParser` lexes with it).

    xDSL 0.74 matches string literals with `"(?:[^"...]+|\\...)*"`, a nested quantifier:
    an unterminated `"` followed by a long line takes exponential time (a 60-character
    line hangs the parser for hours). The possessive form accepts exactly the same
    literals and fails in linear time.
    """

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')
