"""
Parsing and verification that report errors at their source location, MLIR-style.

xDSL's parser keeps no locations on operations and `module.verify()` does not say where
the failing op was written. Every tool goes through this module instead, so that a bad
file always ends in one `file:line:col: error: message` diagnostic with the source line
and a caret, and never in a Python traceback.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from shardc.dialects.spmd import verify_function_shardings
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    ComplexType,
    IndexType,
    IntegerType,
    ModuleOp,
    RankedStructure,
    TensorType,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation
from xdsl.irdl import base
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind


class DiagnosticError(Exception):
    """One user-facing error: `str()` is the whole diagnostic, ready to print."""


@dataclass(frozen=True)
class Location:
    """Where an op was written: the file's text, the offset, and the line offset of its chunk."""

    input: Input[str]
    offset: int
    line_offset: int = 0

    def line_col(self) -> tuple[int, int]:
        text = self.input.content
        line_start = text.rfind("\n", 0, self.offset) + 1
        line = text.count("\n", 0, line_start) + 1 + self.line_offset
        return line, self.offset - line_start + 1

    def source_line(self) -> str:
        text = self.input.content
        start = text.rfind("\n", 0, self.offset) + 1
        end = text.find("\n", self.offset)
        return text[start : end if end != -1 else len(text)]

    def format(self, message: str, length: int = 1) -> str:
        """`file:line:col: error: message`, the source line and a caret line under it."""
        line, col = self.line_col()
        src = self.source_line()
        caret = " " * (col - 1) + "^" * max(1, min(length, len(src) - col + 1))
        # (xDSL's constraint messages span two lines, "... does not verify:\n<why>"; they
        # are kept as they are, the source line and caret follow them.)
        return f"{self.input.name}:{line}:{col}: error: {message}\n{src}\n{caret}"


@dataclass
class SourceMap:
    """The location of every op parsed from text (ops made by passes have none)."""

    filename: str
    locations: dict[Operation, Location] = field(default_factory=dict[Operation, Location])
    input: Input[str] | None = None
    """The parsed text: ops with no located ancestor are reported at its start."""
    line_offset: int = 0

    def location_of(self, op: Operation) -> Location | None:
        """The op's location, or its nearest located ancestor's (for ops made by passes)."""
        current: Operation | None = op
        while current is not None:
            if (loc := self.locations.get(current)) is not None:
                return loc
            current = current.parent_op()
        return None

    def error_at(self, op: Operation, message: str) -> DiagnosticError:
        loc = self.location_of(op)
        text = f"'{op.name}' op {message}"
        if loc is None and self.input is not None:
            loc = Location(self.input, 0, self.line_offset)
        if loc is None:
            return DiagnosticError(f"{self.filename}:1:1: error: {text}")
        return DiagnosticError(loc.format(text))


_DENSE_LITERAL_TYPE = base(
    RankedStructure[IntegerType | IndexType | AnyFloat | ComplexType]  # pyright: ignore
)
"""xDSL 0.74 rebuilds this constraint for every `dense<...>` literal (~150 recursive calls
each, most of the cost of parsing a constant); it never changes, so build it once."""


_STATIC_TENSOR_TYPE = re.compile(r"tensor<(?:\d+x)*(?:bf16|f16|f32|f64|i1|i8|i16|i32|i64)>")
"""A ranked tensor type of static shape and a plain element type, and nothing else."""


class SafeLexer(MLIRLexer):
    """
    xDSL's MLIR lexer with a string-literal pattern that cannot backtrack.

    xDSL 0.74 matches string literals with `"(?:[^"...]+|\\...)*"`, a nested quantifier:
    an unterminated `"` followed by a long line takes exponential time (a 60-character
    line hangs the parser for hours). The possessive form accepts exactly the same
    literals and fails in linear time.
    """

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"')


class LocatedParser(Parser):
    """An xDSL parser that remembers where each operation starts."""

    source_map: SourceMap
    line_offset: int

    def __init__(self, ctx: Context, text: str, name: str, line_offset: int = 0):
        super().__init__(ctx, "", name)
        # The same state Parser.__init__ builds, on the safe lexer.
        self._parser_state = ParserState(SafeLexer(Input(text, name)))
        self.source_map = SourceMap(name, input=self.lexer.input, line_offset=line_offset)
        self._tensor_types: dict[str, TensorType] = {}
        self.line_offset = line_offset

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        try:
            op = super().parse_operation()
        except (ParseError, RecursionError):
            raise
        except Exception as e:
            # An op or attribute constructor rejected what was parsed (an integer out of
            # range for i64, a type the declarative format's constraint refuses...): it
            # happens after the op's last token, so report it at the op's start instead
            # of wherever the parser stands by then.
            message = str(e) or type(e).__name__
            end = self._current_token.span.start
            raise ParseError(Span(start, end, self.lexer.input), message) from None
        self.source_map.locations[op] = Location(self.lexer.input, start, self.line_offset)
        return op

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        # MLIR reads a file with no operations (empty, or only comments) as an empty
        # module; xDSL refuses it ("Could not parse entire input!").
        if allow_implicit_module and self._current_token.kind is MLIRTokenKind.EOF:
            return ModuleOp([])
        return super().parse_module(allow_implicit_module)

    def parse_optional_type(self) -> Any:
        # A static tensor type is re-parsed at each of its uses (in every op's signature);
        # parsing one costs ~50 us, about half of the time to parse a typical op. The
        # parsed attribute is immutable, so a repeat of the same text reuses it.
        token = self._current_token
        if token.kind is MLIRTokenKind.BARE_IDENT and token.text == "tensor":
            found = _STATIC_TENSOR_TYPE.match(self.lexer.input.content, token.span.start)
            if found is not None:
                cached = self._tensor_types.get(found.group())
                if cached is not None:
                    self._resume_from(found.end())
                    return cached
                parsed = super().parse_optional_type()
                if isinstance(parsed, TensorType):
                    self._tensor_types[found.group()] = parsed
                return parsed
        return super().parse_optional_type()

    def _parse_dense_literal_type(self) -> Attribute:  # pyright: ignore[reportIncompatibleMethodOverride]
        # Same as xDSL's, with the type constraint built once (see _DENSE_LITERAL_TYPE).
        type = self.expect(self.parse_optional_type, "Dense attribute must be typed!")
        if not _DENSE_LITERAL_TYPE.verifies(type):
            self.raise_error(
                "Expected memref, vector or tensor type of integer, index, float, or complex type"
            )
        if any(dim == DYNAMIC_INDEX for dim in type.get_shape()):  # pyright: ignore
            self.raise_error("Dense literal attribute should have a static shape.")
        return type


_UNKNOWN_OP = re.compile(r"Operation (\S+) is not registered")
_UNKNOWN_ATTR = re.compile(r"'(\S+)' is not registered")
_UNDEFINED_VALUES = re.compile(r"values used but not defined: \[(.*)\]")


def format_parse_error(error: ParseError, line_offset: int = 0) -> str:
    span: Span[str] = error.span  # pyright: ignore[reportAssignmentType]
    start, length, message = span.start, span.end - span.start, error.msg
    text = span.input.content
    # xDSL reports an unknown op at the token after its name and an unknown attribute or
    # type at the `<` after its name; MLIR points at the name itself, and so do we
    # (keeping xDSL's wording, which tests match).
    if found := _UNKNOWN_OP.fullmatch(message):
        name = found.group(1)
        line_start = text.rfind("\n", 0, start) + 1
        at = text.rfind(name, line_start, start + 1)
        if at != -1:
            quoted = at > 0 and text[at - 1] == '"'
            start, length = at - quoted, len(name) + 2 * quoted
    elif found := _UNDEFINED_VALUES.fullmatch(message):
        # xDSL reports these at the end of the file; MLIR at the (first) use.
        name = found.group(1).split(", ")[0]
        if use := re.search(re.escape(name) + r"(?![\w.$-])", text):
            start, length = use.start(), len(name)
        message = f"use of undefined value '{name}'"
    elif not message.strip() or message.startswith(" "):
        # xDSL appends a context to an empty message (" in block definition")
        at_end = not text[start:].strip()
        what = "unexpected end of input" if at_end else "unexpected input"
        message = f"{what} {message.strip()}".strip()
    elif message == "Could not parse entire input!":
        message = "expected an operation"
    elif found := _UNKNOWN_ATTR.fullmatch(message):
        name = found.group(1)
        at = text.rfind(name, 0, start + 1)
        if at > 0 and text[at - 1] in "#!":
            start, length = at - 1, len(name) + 1
    return Location(span.input, start, line_offset).format(message, length)


def parse_module(
    ctx: Context, text: str, filename: str, line_offset: int = 0
) -> tuple[ModuleOp, SourceMap]:
    """Parse `text`; a syntax error becomes a located `DiagnosticError`."""
    parser: LocatedParser | None = None
    try:
        parser = LocatedParser(ctx, text, filename, line_offset)  # lexes the first token
        module = parser.parse_module()
    except ParseError as e:
        raise DiagnosticError(format_parse_error(e, line_offset)) from None
    except RecursionError:
        raise DiagnosticError(
            _location_of_parser(parser, text, filename, line_offset).format("nesting is too deep")
        ) from None
    except Exception as e:
        # Attribute constructors may reject values while parsing (e.g. a float literal
        # out of range for f16); report them where the parser stood.
        loc = _location_of_parser(parser, text, filename, line_offset)
        raise DiagnosticError(loc.format(f"invalid input: {e}")) from None
    return module, parser.source_map


def _location_of_parser(
    parser: Parser | None, text: str, filename: str, line_offset: int
) -> Location:
    """Where `parser` stands (the start of the text if it could not even start)."""
    if parser is None:
        return Location(Input(text, filename), 0, line_offset)
    span = parser._current_token.span  # pyright: ignore[reportPrivateUsage]
    return Location(span.input, span.start, line_offset)  # pyright: ignore[reportArgumentType]


def verify_module(module: ModuleOp, source_map: SourceMap, note: str = "") -> None:
    """
    Verify op by op so that a failure is reported at the op that failed; `note` (such as
    "after pass 'canonicalize'") is appended to the message in parentheses.
    """
    suffix = f" ({note})" if note else ""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
            if isinstance(op, FuncOp):
                verify_function_shardings(op)
        except VerifyException as e:
            raise source_map.error_at(op, f"{e}{suffix}") from None
        except RecursionError:
            raise source_map.error_at(op, f"is nested too deeply to verify{suffix}") from None
        except Exception as e:  # a verifier that trips on malformed generic IR
            raise source_map.error_at(op, f"is malformed: {e}{suffix}") from None


def parse_and_verify(
    ctx: Context, text: str, filename: str, line_offset: int = 0
) -> tuple[ModuleOp, SourceMap]:
    module, source_map = parse_module(ctx, text, filename, line_offset)
    verify_module(module, source_map)
    return module, source_map


def run_tool(prog: str, body: Callable[[], int]) -> int:
    """
    Run a command-line tool's body: every user error ends as one message and exit status 1
    (argparse's usage errors too), never a Python traceback. A bug in shardc is one line
    saying so; `SHARDC_DEBUG=1` shows its traceback.
    """
    try:
        return body()
    except DiagnosticError as e:
        print(e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except SystemExit as e:  # argparse: --help exits 0, a usage error 2 (bad input: 1 here)
        code = e.code if isinstance(e.code, int) else 1
        return 1 if code == 2 else code
    except RecursionError:
        print(f"{prog}: error: the input nests too deeply", file=sys.stderr)
        return 1
    except Exception as e:
        if os.environ.get("SHARDC_DEBUG"):
            traceback.print_exc()
        print(
            f"{prog}: internal error: {type(e).__name__}: {e} (set SHARDC_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1
