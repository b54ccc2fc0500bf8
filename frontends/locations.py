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

import re

_LOC_ALIAS = re.compile(r"^#loc[\w$.-]*\s*=\s*loc\(", re.M)


def strip_locations(text: str) -> str:
    """Blank out `loc(...)` and `#loc... = loc(...)` (same length, newlines kept)."""
    if "loc(" not in text:
        return text
    out = list(text)
    n = len(text)
    i = 0
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
            continue
        if c == '"':
            in_string = True
            i += 1
            continue
        if (
            c == "l"
            and text.startswith("loc(", i)
            and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_.$"))
        ):
            start = i
            # an alias definition `#locN = loc(...)` starts at its `#`
            line_start = text.rfind("\n", 0, i) + 1
            m = _LOC_ALIAS.match(text, line_start)
            if m and m.end() == i + 4:
                start = line_start
            j = _matching_paren(text, i + 3)
            for k in range(start, j + 1):
                if out[k] != "\n":
                    out[k] = " "
            i = j + 1
            continue
        i += 1
    return "".join(out)


def _matching_paren(text: str, open_at: int) -> int:
    depth = 0
    i = open_at
    in_string = False
    while i < len(text):
        c = text[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text) - 1
