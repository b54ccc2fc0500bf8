"""
Parsing and verification that report errors at their source location, MLIR-style.

xDSL's parser keeps no locations on operations and `module.verify()` does not say where
the failing op was written. Every tool goes through this module instead, so that a bad
file always ends in one `file:line:col: error: message` diagnostic with the source line
and a caret, and never in a Python traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span

from shardc.dialects.spmd import verify_function_shardings


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
        line, col = self.line_col()
        src = self.source_line()
        caret = " " * (col - 1) + "^" * max(1, min(length, len(src) - col + 1))
        return f"{self.input.name}:{line}:{col}: error: {message}\n{src}\n{caret}"


@dataclass
class SourceMap:
    """The location of every op parsed from text (ops made by passes have none)."""

    filename: str
    locations: dict[Operation, Location] = field(default_factory=dict[Operation, Location])

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
        if loc is None:
            return DiagnosticError(f"{self.filename}: error: {text}")
        return DiagnosticError(loc.format(text))


class LocatedParser(Parser):
    """An xDSL parser that remembers where each operation starts."""

    source_map: SourceMap
    line_offset: int

    def __init__(self, ctx: Context, text: str, name: str, line_offset: int = 0):
        super().__init__(ctx, text, name)
        self.source_map = SourceMap(name)
        self.line_offset = line_offset

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        op = super().parse_operation()
        self.source_map.locations[op] = Location(self.lexer.input, start, self.line_offset)
        return op


def format_parse_error(error: ParseError, line_offset: int = 0) -> str:
    span: Span[str] = error.span  # pyright: ignore[reportAssignmentType]
    loc = Location(span.input, span.start, line_offset)
    return loc.format(error.msg, span.end - span.start)


def parse_module(
    ctx: Context, text: str, filename: str, line_offset: int = 0
) -> tuple[ModuleOp, SourceMap]:
    """Parse `text`; a syntax error becomes a located `DiagnosticError`."""
    parser = LocatedParser(ctx, text, filename, line_offset)
    try:
        module = parser.parse_module()
    except ParseError as e:
        raise DiagnosticError(format_parse_error(e, line_offset)) from None
    except Exception as e:
        # Attribute constructors may reject values while parsing (e.g. a float literal
        # out of range for f16); report them where the parser stood.
        span = parser._current_token.span  # pyright: ignore[reportPrivateUsage]
        loc = Location(span.input, span.start, line_offset)  # pyright: ignore
        raise DiagnosticError(loc.format(f"invalid input: {e}")) from None
    return module, parser.source_map


def verify_module(module: ModuleOp, source_map: SourceMap) -> None:
    """Verify op by op so that a failure is reported at the op that failed."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
            if isinstance(op, FuncOp):
                verify_function_shardings(op)
        except VerifyException as e:
            raise source_map.error_at(op, str(e)) from None
        except Exception as e:  # a verifier that trips on malformed generic IR
            raise source_map.error_at(op, f"is malformed: {e}") from None


def parse_and_verify(
    ctx: Context, text: str, filename: str, line_offset: int = 0
) -> tuple[ModuleOp, SourceMap]:
    module, source_map = parse_module(ctx, text, filename, line_offset)
    verify_module(module, source_map)
    return module, source_map
