"""
Parsing and verification that report errors at their source location, MLIR-style
(above `dialects/`; the diagnostics themselves are `shardc.diagnostics`).

xDSL's parser keeps no source positions on operations and `module.verify()` does not say
where the failing op was written. Every tool goes through this module instead: the
located parser gives every op it reads the `FileLineColLoc` of its first token (in
`Operation.location`, which xDSL keeps on `clone()`; the line counts a
`--split-input-file` chunk's offset) unless the text gives one, and registers the text
for the source line of diagnostics. A bad file always ends in one
`file:line:col: error: message` diagnostic with the source line and a caret, never in a
Python traceback.
"""

from __future__ import annotations

import gc
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from shardc.diagnostics import (
    DiagnosticError,
    SourceText,
    error_at,
    module_checks,
)
from shardc.xdsl_patches import SafeLexer
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    ComplexType,
    IndexType,
    IntegerType,
    ModuleOp,
    RankedStructure,
    ShapedType,
    TensorType,
    UnknownLoc,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult
from xdsl.irdl import base
from xdsl.parser import Parser
from xdsl.parser.generic_parser import ParserState
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRTokenKind

_DENSE_LITERAL_TYPE = base(
    RankedStructure[IntegerType | IndexType | AnyFloat | ComplexType]  # pyright: ignore
)
"""xDSL 0.74 rebuilds this constraint for every `dense<...>` literal (~150 recursive calls
each, most of the cost of parsing a constant); it never changes, so build it once."""


MAX_ELEMENTS = 2**48
"""The most elements a tensor, memref or vector type may have (and so any dimension):
2^48 elements is 1 PiB of f32, beyond any pod; the bound keeps every size computation in
i64 and numpy's index range, so no type can make a tool fail inside numpy."""

_STATIC_TENSOR_TYPE = re.compile(r"tensor<(?:\d+x)*(?:bf16|f16|f32|f64|i1|i8|i16|i32|i64)>")
"""A ranked tensor type of static shape and a plain element type, and nothing else."""


class LocatedParser(Parser):
    """An xDSL parser that gives every op the location of its first token."""

    source: SourceText
    """The text being parsed (registered for diagnostics), offsets to locations."""

    def __init__(self, ctx: Context, text: str, name: str, line_offset: int = 0):
        super().__init__(ctx, "", name)
        # The same state Parser.__init__ builds, on the safe lexer.
        self._parser_state = ParserState(SafeLexer(Input(text, name)))
        self.source = SourceText(name, text, line_offset)
        self._tensor_types: dict[str, TensorType] = {}

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
        if isinstance(op.location, UnknownLoc):  # the text gave no `loc(...)`
            op.location = self.source.location(start)
        return op

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        # MLIR reads a file with no operations (empty, or only comments) as an empty
        # module; xDSL refuses it ("Could not parse entire input!").
        if allow_implicit_module and self._current_token.kind is MLIRTokenKind.EOF:
            module = ModuleOp([])
        else:
            module = super().parse_module(allow_implicit_module)
        if isinstance(module.location, UnknownLoc):
            # An implicit module is where its text starts (as in MLIR): diagnostics about
            # ops that nothing nearer locates are reported there.
            module.location = self.source.location(0)
        return module

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
                parsed = self._checked_size(super().parse_optional_type(), token.span)
                if isinstance(parsed, TensorType):
                    self._tensor_types[found.group()] = parsed
                return parsed
        return self._checked_size(super().parse_optional_type(), token.span)

    def _checked_size(self, parsed: Any, at: Span) -> Any:
        """A shaped type no machine could hold is an error where it is written."""
        if isinstance(parsed, ShapedType):
            shape = [d for d in parsed.get_shape() if d >= 0]
            if any(d > MAX_ELEMENTS for d in shape) or math.prod(shape) > MAX_ELEMENTS:
                self.raise_error(
                    f"{parsed} has {math.prod(shape)} elements; a shaped type has at most "
                    f"2^48 ({MAX_ELEMENTS})",
                    at.start,
                    self.pos,
                )
        return parsed

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


_FOREIGN_DIALECTS = {
    "stablehlo": "StableHLO",
    "chlo": "StableHLO (CHLO)",
    "mhlo": "StableHLO (MHLO)",
    "sdy": "StableHLO with Shardy shardings",
}
"""Dialects of the programs `shardc-import` reads: their text is not shardc IR."""

_HLO_MODULE_TEXT = re.compile(r"\A\s*(?://[^\n]*\n\s*)*HloModule\b")


def _import_hint(name: str) -> str:
    """What to say when `name` (an op, attribute or type) is from an importable dialect."""
    what = _FOREIGN_DIALECTS.get(name.partition(".")[0])
    if what is None:
        return ""
    return (
        f": this file is {what}, not shardc IR; import it first with "
        "`shardc-import FILE -o OUT.mlir` and give OUT.mlir to shardc-opt, shardc-run or "
        "shardc.compile"
    )


def format_parse_error(error: ParseError, line_offset: int = 0, import_hint: bool = True) -> str:
    """
    The located diagnostic of a parse error. With `import_hint`, an op, attribute or
    type of a dialect `shardc-import` reads (stablehlo, chlo, mhlo, sdy) says the file is
    StableHLO and must be imported first.
    """
    span: Span[str] = error.span  # pyright: ignore[reportAssignmentType]
    start, length, message = span.start, span.end - span.start, error.msg
    text = span.input.content
    if import_hint and _HLO_MODULE_TEXT.match(text):
        message = (
            "this file is XLA HLO module text, not shardc IR; import it first "
            "(`shardc-import FILE -o OUT.mlir`)"
        )
        return SourceText(span.input.name, text, line_offset).format(0, message, 9)
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
        if import_hint:
            message += _import_hint(name)
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
        if import_hint:
            message += _import_hint(name)
    return SourceText(span.input.name, text, line_offset).format(start, message, length)


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """
    Pause Python's cyclic garbage collector while a large IR is built. Building ops creates
    no garbage cycles worth collecting, but every allocation counts towards the collector's
    thresholds, and its full collections walk the whole (growing) heap: parsing 50k ops
    became ~7% slower per op than 10k (bench/parse_print.py's linearity 5.57, target 5.5).
    Reference counting still frees everything acyclic; the collector resumes afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_module(
    ctx: Context, text: str, filename: str, line_offset: int = 0, import_hint: bool = True
) -> ModuleOp:
    """
    Parse `text`; a syntax error becomes a located `DiagnosticError` (saying to run
    `shardc-import` first on StableHLO or HLO text, unless `import_hint` is False: the
    importer's own parse).
    """
    parser: LocatedParser | None = None
    try:
        with cyclic_gc_paused():
            parser = LocatedParser(ctx, text, filename, line_offset)  # lexes the first token
            return parser.parse_module()
    except ParseError as e:
        raise DiagnosticError(format_parse_error(e, line_offset, import_hint)) from None
    except RecursionError:
        raise DiagnosticError(
            _position(parser, text, filename, line_offset, "nesting is too deep")
        ) from None
    except Exception as e:
        # Attribute constructors may reject values while parsing (e.g. a float literal
        # out of range for f16); report them where the parser stood.
        message = f"invalid input: {e}"
        raise DiagnosticError(_position(parser, text, filename, line_offset, message)) from None


def _position(
    parser: Parser | None, text: str, filename: str, line_offset: int, message: str
) -> str:
    """`message` where `parser` stands (the start of the text if it could not even start)."""
    offset = 0 if parser is None else parser._current_token.span.start  # pyright: ignore[reportPrivateUsage]
    return SourceText(filename, text, line_offset).format(offset, message)


def verify_module(module: ModuleOp, note: str = "", filename: str = "<unknown>") -> None:
    """
    Verify op by op so that a failure is reported at the op that failed (its location,
    see `shardc.diagnostics`), running the checks dialects registered
    (`register_module_check`) after each op's own verifier; `note` (such as "after pass
    'canonicalize'") is appended to the message in parentheses; `filename` names a
    module nothing of which is located.
    """
    suffix = f" ({note})" if note else ""
    dominance = _Dominance()
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
            dominance.check(op)
            for check in module_checks(op):
                check(op)
        except VerifyException as e:
            raise error_at(op, f"{e}{suffix}", filename) from None
        except RecursionError:
            raise error_at(op, f"is nested too deeply to verify{suffix}", filename) from None
        except Exception as e:  # a verifier that trips on malformed generic IR
            raise error_at(op, f"is malformed: {e}{suffix}", filename) from None


class _Dominance:
    """
    MLIR's operand dominance for the single-block regions shardc's programs are made of:
    a value is used below its definition in the same block, or inside an op nested below
    it. xDSL's `verify()` does not check this, and a program that uses a value above its
    definition would otherwise be reordered by passes or fail in the interpreter.
    Regions of several blocks (CFG regions) and module bodies (graph regions) are not
    checked. Op positions are numbered once per block, so a module is checked in linear
    time.
    """

    def __init__(self) -> None:
        self.positions: dict[Block, dict[Operation, int]] = {}

    def position(self, op: Operation, block: Block) -> int:
        table = self.positions.get(block)
        if table is None:
            table = self.positions[block] = {o: i for i, o in enumerate(block.ops)}
        return table[op]

    def check(self, op: Operation) -> None:
        for index, value in enumerate(op.operands):
            if isinstance(value, OpResult):
                block = value.op.parent_block()
                defining: Operation | None = value.op
            elif isinstance(value, BlockArgument):
                block, defining = value.block, None
            else:
                continue
            if block is None or isinstance(block.parent_op(), ModuleOp):
                continue
            user: Operation | None = op
            while user is not None and user.parent is not block:
                user = user.parent_op()
            if user is None:
                region = block.parent
                if region is not None and len(region.blocks) > 1:
                    continue
                raise VerifyException(
                    f"operand #{index} is used outside the region that defines it"
                )
            if defining is not None and (
                user is defining or self.position(defining, block) > self.position(user, block)
            ):
                raise VerifyException(
                    f"operand #{index} does not dominate this use (it is defined below it)"
                )


def parse_and_verify(ctx: Context, text: str, filename: str, line_offset: int = 0) -> ModuleOp:
    module = parse_module(ctx, text, filename, line_offset)
    verify_module(module)
    return module
