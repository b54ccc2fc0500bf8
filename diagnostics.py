"""
User-facing errors and where they point, MLIR-style, at the bottom of shardc (no shardc
imports: every layer may raise and format these).

A diagnostic is one `file:line:col: error: message`, the source line and a caret under
the column. Positions come from xDSL's own mechanism, `Operation.location`: the located
parser (`shardc.parsing`) gives every op it reads a `FileLineColLoc`, importers give the
ops they make the location of the op they come from, and xDSL keeps locations on
`clone()`, so an op a pass copied or rebuilt from another still names its line.

* An op with no location of its own (made from scratch by a pass) is reported at its
  nearest located ancestor (usually its function); the top-level module's location is the
  start of the text it was read from (MLIR gives the implicit module the same), used only
  when nothing nearer is located.
* A `FusedLoc([FileLineColLoc(where shardc read it), <origin>...])` carries an origin, such
  as JAX's `loc("jit(f)/dot_general"("model.py":12:3))`: the caret goes at the first
  element and the origin is a `note:` line after it (and in traces and reports).
* The source line under the caret is read through Python's `linecache`: every text shardc
  parses is registered there under its file name (`SourceText`), as IPython registers its
  cells, so no side table is kept and a real file not registered is read from disk.

`register_module_check` is the hook through which dialects add checks that xDSL's
`verify()` has no place for (for example `spmd`'s function shardings, which live in
argument attributes); `shardc.parsing.verify_module` runs them.
"""

from __future__ import annotations

import bisect
import linecache
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects.builtin import (
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    IntAttr,
    NameLoc,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import PassFailedException

# Errors ---------------------------------------------------------------------------------


class DiagnosticError(Exception):
    """One user-facing error: `str()` is the whole diagnostic, ready to print."""


class OpPassError(PassFailedException):
    """A pass cannot handle `op`: the message says why (never a silently wrong program)."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op
        self.message = message


class InterpreterError(DiagnosticError):
    """
    A run that cannot complete (deadlock, collective mismatch, a future used twice or
    never, a bad input array, ...): `str()` is the whole diagnostic, ready to print.
    """


# Source texts ---------------------------------------------------------------------------


def register_source(name: str, text: str, line_offset: int = 0) -> None:
    """
    Make `text` the source of `name` for diagnostics (through `linecache`); its first line
    is line `line_offset + 1` (a `--split-input-file` chunk keeps the file's numbering).
    Lines are split at `\\n` only, as positions are counted.
    """
    lines = [""] * line_offset + [line + "\n" for line in text.split("\n")]
    # mtime None: `linecache.checkcache` leaves the entry alone (as for loader sources)
    linecache.cache[name] = (len(text), None, lines, name)


def source_line(name: str, line: int) -> str | None:
    """Line `line` (1-based) of the registered text (or file) `name`, None if unknown."""
    lines = linecache.getlines(name)
    if 1 <= line <= len(lines):
        return lines[line - 1].removesuffix("\n")
    return None


@dataclass
class SourceText:
    """A text shardc reads, registered for diagnostics: offsets to `FileLineColLoc`s."""

    name: str
    text: str
    line_offset: int = 0
    _line_starts: list[int] = field(default_factory=list[int], init=False, repr=False)

    def __post_init__(self) -> None:
        register_source(self.name, self.text, self.line_offset)

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of `offset`, the line counting the chunk's offset."""
        if not self._line_starts:
            starts = [0]
            at = self.text.find("\n")
            while at != -1:
                starts.append(at + 1)
                at = self.text.find("\n", at + 1)
            self._line_starts = starts
        index = bisect.bisect_right(self._line_starts, offset) - 1
        return index + 1 + self.line_offset, offset - self._line_starts[index] + 1

    def offset(self, loc: FileLineColLoc) -> int:
        """The offset of a position in this text (the inverse of `location`)."""
        self.line_col(0)  # finds the line starts
        return self._line_starts[loc.line.data - 1 - self.line_offset] + loc.column.data - 1

    def location(self, offset: int) -> FileLineColLoc:
        line, col = self.line_col(offset)
        return FileLineColLoc(StringAttr(self.name), IntAttr(line), IntAttr(col))

    def format(self, offset: int, message: str, length: int = 1) -> str:
        """The diagnostic `message` at `offset` (a caret `length` characters long)."""
        return format_diagnostic(self.location(offset), message, length)


# Locations ------------------------------------------------------------------------------


def caret_location(loc: Attribute) -> FileLineColLoc | None:
    """Where a diagnostic puts its caret: the first file position `loc` holds."""
    if isinstance(loc, FileLineColLoc):
        return loc
    if isinstance(loc, FusedLoc):
        for inner in loc.locations.data:  # pyright: ignore[reportAttributeAccessIssue]
            if (found := caret_location(inner)) is not None:
                return found
        return None
    if isinstance(loc, NameLoc):
        return caret_location(loc.location)
    if isinstance(loc, CallSiteLoc):
        return caret_location(loc.callee)
    return None


def describe_location(loc: Attribute) -> str | None:
    """`file:line:col (name)` of a location as a user reads it (None if it says nothing)."""
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    if isinstance(loc, NameLoc):
        inner = describe_location(loc.location)
        return f"{inner} ({loc.desc.data})" if inner else loc.desc.data
    if isinstance(loc, CallSiteLoc):
        return describe_location(loc.callee)
    if isinstance(loc, FusedLoc):
        parts = [d for inner in loc.locations.data if (d := describe_location(inner))]  # pyright: ignore
        return "; ".join(parts) or None
    return None


def origin(loc: Attribute) -> str | None:
    """
    The origin a `FusedLoc` carries after its first element (JAX's own location of an
    imported op: `model.py:12:3 (jit(f)/dot_general)`), None for a plain position.
    """
    if not isinstance(loc, FusedLoc):
        return None
    rest = loc.locations.data[1:]  # pyright: ignore[reportAttributeAccessIssue]
    parts = [d for inner in rest if (d := describe_location(inner))]
    return "; ".join(parts) or None


def located_op(op: Operation) -> Operation | None:
    """
    `op` if its location holds a file position, else its nearest ancestor whose location
    does; the top-level op (the module, whose location is the start of its text) does not
    count.
    """
    current: Operation | None = op
    while current is not None and current.parent_op() is not None:
        if not isinstance(current.location, UnknownLoc) and caret_location(current.location):
            return current
        current = current.parent_op()
    return None


def op_location(op: Operation) -> Attribute | None:
    """The location of `located_op(op)`, None if it has none."""
    found = located_op(op)
    return found.location if found is not None else None


def op_position(op: Operation) -> str | None:
    """`file:line:col` of an op (or its nearest located ancestor), None if unknown."""
    loc = op_location(op)
    pos = caret_location(loc) if loc is not None else None
    if pos is None:
        return None
    return f"{pos.filename.data}:{pos.line.data}:{pos.column.data}"


def op_origin(op: Operation) -> str | None:
    """The origin of an op's location (see `origin`), None if it has none."""
    loc = op_location(op)
    return origin(loc) if loc is not None else None


def _top_level(op: Operation) -> Operation:
    while (parent := op.parent_op()) is not None:
        op = parent
    return op


# Formatting -----------------------------------------------------------------------------


def format_diagnostic(loc: FileLineColLoc, message: str, length: int = 1) -> str:
    """`file:line:col: error: message`, the source line and a caret line under it."""
    name, line, col = loc.filename.data, loc.line.data, loc.column.data
    head = f"{name}:{line}:{col}: error: {message}"
    src = source_line(name, line)
    if src is None:
        return head
    caret = " " * (col - 1) + "^" * max(1, min(length, len(src) - col + 1))
    # (xDSL's constraint messages span two lines, "... does not verify:\n<why>"; they
    # are kept as they are, the source line and caret follow them.)
    return f"{head}\n{src}\n{caret}"


def diagnostic_at(op: Operation, message: str) -> str | None:
    """
    The diagnostic `'op' op message` at the op's location (see the module docstring:
    nearest located ancestor, else the start of the module's text), with a `note:` line
    for an origin; None if nothing about the op is located.
    """
    loc = op_location(op)
    if loc is None:
        loc = _top_level(op).location
    pos = caret_location(loc)
    if pos is None:
        return None
    text = format_diagnostic(pos, f"'{op.name}' op {message}")
    if (source := origin(loc)) is not None:
        text += f"\nnote: from {source}"
    return text


def error_at(op: Operation, message: str, filename: str = "<unknown>") -> DiagnosticError:
    """`diagnostic_at`, or `filename:1:1: error: ...` if nothing about the op is located."""
    text = diagnostic_at(op, message)
    if text is None:
        text = f"{filename}:1:1: error: '{op.name}' op {message}"
    return DiagnosticError(text)


# Module checks --------------------------------------------------------------------------

ModuleCheck = Callable[[Operation], None]

_MODULE_CHECKS: list[tuple[type[Operation], ModuleCheck]] = []


def register_module_check(op_type: type[Operation], check: ModuleCheck) -> None:
    """
    Have `shardc.parsing.verify_module` call `check(op)` on every `op_type` op after its
    own verifier: a dialect's checks xDSL has no hook for. `check` raises
    `VerifyException`. Registering the same check twice has no effect.
    """
    if (op_type, check) not in _MODULE_CHECKS:
        _MODULE_CHECKS.append((op_type, check))


def module_checks(op: Operation) -> list[ModuleCheck]:
    """The registered checks that apply to `op`."""
    return [check for op_type, check in _MODULE_CHECKS if isinstance(op, op_type)]


__all__ = [
    "DiagnosticError",
    "InterpreterError",
    "OpPassError",
    "SourceText",
    "caret_location",
    "diagnostic_at",
    "error_at",
    "format_diagnostic",
    "located_op",
    "module_checks",
    "op_location",
    "op_origin",
    "op_position",
    "origin",
    "register_module_check",
    "register_source",
    "source_line",
]
