"""
Source locations of imported ops, as xDSL location attributes (`Operation.location`).

Every op an importer creates gets the location of the source op it came from:
`FileLineColLoc` of that op in the text shardc read, fused with the op's own origin when
the text records one (`FusedLoc([position, origin])`, the position first: that is where a
diagnostic puts its caret):

* StableHLO printed with debug info carries JAX's locations: `loc("jit(f)/dot_general"
  (callsite("f"("m.py":12:3) at ...)))` after each op, mostly through aliases
  `#locN = loc(...)` defined at the end of the file. xDSL 0.74 cannot read those as
  written (an alias used before its definition, and MLIR's `"f.py":12:3 to :20` ranges),
  so the text is parsed with them blanked out (`strip_locations`, every other character
  where it was) and `JaxLocations` reads them on the side: it resolves the aliases, builds
  `NameLoc` / `FileLineColLoc` / `CallSiteLoc` / `FusedLoc` / `UnknownLoc` as MLIR does
  (a range keeps its start), and finds the one each op carries.
* HLO text carries `metadata={op_name="jit(f)/dot_general" source_file="m.py"
  source_line=12}`: `hlo_metadata_location` reads it as `NameLoc(op_name,
  FileLineColLoc(source_file, source_line, column))`.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    IntAttr,
    LocationAttr,
    NameLoc,
    NoneAttr,
    StringAttr,
    UnknownLoc,
)
from xdsl.utils.lexer import Input, Token
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind


def with_origin(position: FileLineColLoc, origin: LocationAttr | None) -> LocationAttr:
    """`position`, fused with the op's origin when it has one (the position first)."""
    if origin is None or isinstance(origin, UnknownLoc):
        return position
    return FusedLoc([position, origin], NoneAttr())


# StableHLO's loc(...) ----------------------------------------------------------------------

_LOC_ALIAS = re.compile(r"^(#loc[\w$.-]*)\s*=\s*loc\(", re.M)


@dataclass(frozen=True)
class WrittenLoc:
    """A `loc(...)` after an op or a block argument: where it was and what it says."""

    start: int
    body: str
    """The text inside `loc(` and `)`."""


@dataclass
class ScannedLocations:
    """A text with its `loc(...)`s blanked out, and what they said."""

    text: str
    uses: list[WrittenLoc]
    """The `loc(...)`s other than alias definitions, in text order."""
    aliases: dict[str, str]
    """`#locN` -> the body of its `loc(...)`."""


def strip_locations(text: str) -> str:
    """Blank out `loc(...)` and `#loc... = loc(...)` (same length, newlines kept)."""
    return scan_locations(text).text


def scan_locations(text: str) -> ScannedLocations:
    """`strip_locations`, keeping what each blanked `loc(...)` said."""
    found = ScannedLocations(text, [], {})
    if "loc(" not in text:
        return found
    out = list(text)
    n = len(text)
    i = 0
    while i < n:
        c = text[i]
        if c == '"':
            i = _string_end(text, i)
            continue
        if (
            c == "l"
            and text.startswith("loc(", i)
            and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_.$"))
        ):
            start = i
            j = _matching_paren(text, i + 3)
            body = text[i + 4 : j]
            # an alias definition `#locN = loc(...)` starts at its `#`
            line_start = text.rfind("\n", 0, i) + 1
            m = _LOC_ALIAS.match(text, line_start)
            if m and m.end() == i + 4:
                start = line_start
                found.aliases[m.group(1)] = body
            else:
                found.uses.append(WrittenLoc(i, body))
            for k in range(start, j + 1):
                if out[k] != "\n":
                    out[k] = " "
            i = j + 1
            continue
        i += 1
    found.text = "".join(out)
    return found


def _string_end(text: str, quote_at: int) -> int:
    """The offset after the string literal that starts at `quote_at`."""
    i = quote_at + 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            return i + 1
        i += 1
    return i


def _matching_paren(text: str, open_at: int) -> int:
    depth = 0
    i = open_at
    while i < len(text):
        c = text[i]
        if c == '"':
            i = _string_end(text, i)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text) - 1


class LocationSyntaxError(ValueError):
    """A `loc(...)` shardc cannot read (the op then keeps only its position)."""


class LocationReader:
    """
    MLIR location syntax to xDSL location attributes, resolving `#locN` aliases:
    `unknown`, `"name"`, `"name"(loc)`, `"file":line:col` (and MLIR's ranges `... to
    line:col` / `to :col`, read as their start: xDSL 0.74 has no FileLineColRange),
    `callsite(loc at loc)`, `fused[loc, ...]` (a `<metadata>` is dropped) and `#alias`.
    """

    def __init__(self, aliases: dict[str, str]):
        self.aliases = aliases
        self.resolved: dict[str, LocationAttr] = {}
        self.resolving: set[str] = set()

    def read(self, body: str) -> LocationAttr:
        """The location `loc(body)` says; `LocationSyntaxError` if it cannot be read."""
        tokens = list(_tokens(body))
        loc, i = self.location(tokens, 0)
        if tokens[i].kind is not MLIRTokenKind.EOF:
            raise LocationSyntaxError(f"unexpected '{tokens[i].text}' in loc({body})")
        return loc

    def alias(self, name: str) -> LocationAttr:
        if name in self.resolved:
            return self.resolved[name]
        if name not in self.aliases or name in self.resolving:
            raise LocationSyntaxError(f"undefined or recursive location alias {name}")
        self.resolving.add(name)
        try:
            loc = self.read(self.aliases[name])
        finally:
            self.resolving.discard(name)
        self.resolved[name] = loc
        return loc

    def location(self, tokens: list[_Token], i: int) -> tuple[LocationAttr, int]:
        t = tokens[i]
        if t.kind is MLIRTokenKind.HASH_IDENT:
            return self.alias(t.text), i + 1
        if t.kind is MLIRTokenKind.STRING_LIT:
            return self.named_or_file(tokens, i)
        if t.kind is MLIRTokenKind.BARE_IDENT and t.text == "unknown":
            return UnknownLoc(), i + 1
        if t.kind is MLIRTokenKind.BARE_IDENT and t.text == "callsite":
            i = _expect(tokens, i + 1, "(")
            callee, i = self.location(tokens, i)
            if tokens[i].text != "at":
                raise LocationSyntaxError("expected 'at' in callsite(...)")
            caller, i = self.location(tokens, i + 1)
            return CallSiteLoc(callee, caller), _expect(tokens, i, ")")
        if t.kind is MLIRTokenKind.BARE_IDENT and t.text == "fused":
            return self.fused(tokens, i + 1)
        raise LocationSyntaxError(f"unexpected '{t.text}' in a location")

    def named_or_file(self, tokens: list[_Token], i: int) -> tuple[LocationAttr, int]:
        name = tokens[i].kind.get_string_literal_value(tokens[i].span)
        i += 1
        if tokens[i].kind is MLIRTokenKind.L_PAREN:
            inner, i = self.location(tokens, i + 1)
            return NameLoc(StringAttr(name), inner), _expect(tokens, i, ")")
        if tokens[i].kind is not MLIRTokenKind.COLON:
            return NameLoc(StringAttr(name), NoneAttr()), i
        line, i = _integer(tokens, i + 1)
        column = 0
        if tokens[i].kind is MLIRTokenKind.COLON:
            column, i = _integer(tokens, i + 1)
        if tokens[i].kind is MLIRTokenKind.BARE_IDENT and tokens[i].text == "to":
            i += 1  # a range: `to line:col`, `to :col` or `to line`
            if tokens[i].kind is MLIRTokenKind.INTEGER_LIT:
                i += 1
            if tokens[i].kind is MLIRTokenKind.COLON:
                _, i = _integer(tokens, i + 1)
        return FileLineColLoc(StringAttr(name), IntAttr(line), IntAttr(column)), i

    def fused(self, tokens: list[_Token], i: int) -> tuple[LocationAttr, int]:
        if tokens[i].kind is MLIRTokenKind.LESS:  # fused<metadata>[...]: skip the metadata
            depth = 0
            while tokens[i].kind is not MLIRTokenKind.EOF:
                depth += {MLIRTokenKind.LESS: 1, MLIRTokenKind.GREATER: -1}.get(tokens[i].kind, 0)
                i += 1
                if depth == 0:
                    break
        i = _expect(tokens, i, "[")
        locations: list[LocationAttr] = []
        while True:
            loc, i = self.location(tokens, i)
            locations.append(loc)
            if tokens[i].kind is not MLIRTokenKind.COMMA:
                break
            i += 1
        return FusedLoc(locations, NoneAttr()), _expect(tokens, i, "]")


_Token = Token[MLIRTokenKind, str]


def _tokens(body: str) -> list[_Token]:
    lexer = MLIRLexer(Input(body, "<loc>"))
    out = [lexer.lex()]
    while out[-1].kind is not MLIRTokenKind.EOF:
        out.append(lexer.lex())
    return out


def _expect(tokens: list[_Token], i: int, punctuation: str) -> int:
    if tokens[i].text != punctuation:
        raise LocationSyntaxError(f"expected '{punctuation}' in a location")
    return i + 1


def _integer(tokens: list[_Token], i: int) -> tuple[int, int]:
    if tokens[i].kind is not MLIRTokenKind.INTEGER_LIT:
        raise LocationSyntaxError("expected a line or column number in a location")
    return int(tokens[i].text), i + 1


_BRACKET = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|[\[({]|[\])}]')


class Nesting:
    """Bracket depths in MLIR text (outside strings and comments), for finding which
    `loc(...)` belongs to which op: an op's own location follows its last token at the
    depth where the op starts, before the next op and before its block ends."""

    def __init__(self, text: str):
        self.positions: list[int] = []
        self.depths: list[int] = []
        """The depth after each bracket."""
        self.ends: list[int] = []
        """After each bracket: where the innermost bracket still open there closes."""
        opened: list[int] = []  # (the indices of the open brackets)
        closes: dict[int, int] = {}
        for m in _BRACKET.finditer(text):
            c = m.group()
            if c in "([{":
                opened.append(len(self.positions))
            elif c in ")]}":
                if opened:
                    closes[opened.pop()] = m.start()
            else:
                continue  # a string or a comment
            self.positions.append(m.start())
            self.depths.append(len(opened))
            self.ends.append(opened[-1] if opened else -1)
        self.ends = [closes.get(k, len(text)) if k >= 0 else len(text) for k in self.ends]
        self.length = len(text)

    def depth(self, offset: int) -> int:
        k = bisect.bisect_left(self.positions, offset)
        return self.depths[k - 1] if k else 0

    def block_end(self, offset: int) -> int:
        """Where the innermost bracket open at `offset` closes (the end of the text if none)."""
        k = bisect.bisect_left(self.positions, offset)
        return self.ends[k - 1] if k else self.length


class JaxLocations:
    """The location JAX wrote after each op of a StableHLO text (see the module docstring)."""

    def __init__(self, scanned: ScannedLocations):
        self.uses = scanned.uses
        self.starts = [u.start for u in scanned.uses]
        self.reader = LocationReader(scanned.aliases)
        self.nesting = Nesting(scanned.text) if scanned.uses else None

    def after_op(self, start: int, next_op: int | None) -> LocationAttr | None:
        """The location written after the op that starts at `start` (the next op at the
        same level starts at `next_op`), or None if it has none or it cannot be read."""
        if self.nesting is None:
            return None
        depth = self.nesting.depth(start)
        limit = self.nesting.block_end(start)
        if next_op is not None:
            limit = min(limit, next_op)
        k = bisect.bisect_left(self.starts, start)
        while k < len(self.uses) and self.uses[k].start < limit:
            if self.nesting.depth(self.uses[k].start) == depth:
                try:
                    return self.reader.read(self.uses[k].body)
                except (LocationSyntaxError, ValueError, IndexError):
                    return None
            k += 1
        return None


# HLO text's metadata={...} -----------------------------------------------------------------

_METADATA_FIELD = re.compile(r'(\w+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,}]+)')


def hlo_metadata_location(metadata: str) -> LocationAttr | None:
    """
    The origin an HLO instruction's `metadata={op_name="..." source_file="..."
    source_line=N source_column=N}` records: `NameLoc(op_name, FileLineColLoc(...))`,
    either part alone if the other is missing, None if it records neither.
    """
    fields: dict[str, str] = {}
    for key, value in _METADATA_FIELD.findall(metadata):
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        fields[key] = value
    file: LocationAttr | None = None
    if "source_file" in fields:
        line = _int_or_zero(fields.get("source_line", "0"))
        column = _int_or_zero(fields.get("source_column", "0"))
        file = FileLineColLoc(StringAttr(fields["source_file"]), IntAttr(line), IntAttr(column))
    if "op_name" in fields:
        return NameLoc(StringAttr(fields["op_name"]), file if file is not None else NoneAttr())
    return file


def _int_or_zero(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0
