"""
What of a file the importers cannot take yet, all at once (`shardc-import --check-support`).

An import stops at the first op it cannot convert; a user porting a model wants the whole
gap: every op, `custom_call` target and element type the importer does not support, how
often each occurs and where it first does. This reads the text itself rather than parsing
it, because a parser stops at the first op it does not know too:

* StableHLO / MLIR text: the op name at the start of every statement (`%r = name ...`,
  `name ...`, `"name"(...)` in generic form), with `loc(...)`s blanked first; the target of
  every `custom_call`; the element type of every `tensor<...>`. Supported means an entry of
  the importer's converter tables (`stablehlo_ops.OPS`, `stablehlo_collectives.COLLECTIVES`),
  an op the importer handles itself (functions, calls, terminators, meshes, manual
  computations), a `custom_call` target it converts, an element type `hlo` has.
* HLO module text: each instruction's opcode against the HLO importer's (parsed with its own
  grammar, so a syntax error is still reported as one located diagnostic).

What this cannot see: an op that is supported in general but not with the attributes this
file gives it (dimension numbers, a comparator the importer does not recognise); the import
itself reports those, one at a time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from shardc.diagnostics import SourceText
from shardc.frontends.common import supported_element
from xdsl.dialects.builtin import FileLineColLoc

STRUCTURAL_OPS = frozenset(
    {
        "builtin.module",
        "module",
        "func.func",
        "func.return",
        "func.call",
        "stablehlo.composite",
        "stablehlo.return",
        "sdy.return",
        "sdy.mesh",
        "sdy.manual_computation",
    }
)
"""Ops the StableHLO importer handles itself, outside its converter tables."""

CUSTOM_CALL_TARGETS = frozenset(
    {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "mhlo.topk"}
)
"""The `custom_call` targets the StableHLO importer converts."""

_STATEMENT = re.compile(
    r'^[ \t]*(?:%[^=\n"]*=[ \t]*)?"?(?P<name>[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_.]*)"?(?=[\s(<{@:]|$)',
    re.M,
)
_CUSTOM_CALL = re.compile(
    r'stablehlo\.custom_call"?\s*(?:@(?P<pretty>[\w.$-]+)|[^\n]*?call_target_name\s*=\s*"(?P<attr>[^"]*)")'
)
_TENSOR = re.compile(r"tensor<(?:[0-9?]+x)*(?P<element>[a-zA-Z][\w]*(?:<[^>]*>)?)")


@dataclass
class Gap:
    """One unsupported thing: what it is, how often it occurs, where it first does."""

    kind: str
    """`op`, `custom_call` or `element type`."""
    name: str
    first: FileLineColLoc
    count: int = 1


@dataclass
class SupportReport:
    """Every gap of one file (printed in the order of their first places)."""

    filename: str
    format: str
    gaps: dict[tuple[str, str], Gap] = field(default_factory=dict[tuple[str, str], Gap])

    def add(self, kind: str, name: str, where: FileLineColLoc) -> None:
        gap = self.gaps.get((kind, name))
        if gap is None:
            self.gaps[(kind, name)] = Gap(kind, name, where)
        else:
            gap.count += 1

    def format_text(self) -> str:
        """One line a gap (`file:line:col: unsupported op stablehlo.while (3x)`), then a
        summary line; a file with none says so."""
        if not self.gaps:
            return f"{self.filename}: every op and type is supported by the {self.format} importer"
        lines = []
        by_place = sorted(
            self.gaps.values(), key=lambda g: (g.first.line.data, g.first.column.data)
        )
        for gap in by_place:
            at = f"{gap.first.filename.data}:{gap.first.line.data}:{gap.first.column.data}"
            times = "" if gap.count == 1 else f" ({gap.count}x)"
            lines.append(f"{at}: unsupported {gap.kind} {gap.name}{times}")
        total = sum(g.count for g in self.gaps.values())
        lines.append(
            f"{self.filename}: {len(self.gaps)} unsupported op(s)/type(s), {total} "
            f"occurrence(s), for the {self.format} importer"
        )
        return "\n".join(lines)


def stablehlo_support(text: str, filename: str) -> SupportReport:
    """The gaps of a StableHLO (MLIR) text; see the module docstring."""
    from shardc.frontends.locations import strip_locations
    from shardc.frontends.stablehlo_collectives import COLLECTIVES
    from shardc.frontends.stablehlo_ops import OPS

    plain = strip_locations(text)
    source = SourceText(filename, text)
    report = SupportReport(filename, "StableHLO")
    supported = set(OPS) | set(COLLECTIVES) | STRUCTURAL_OPS
    for m in _STATEMENT.finditer(plain):
        if m.group("name") not in supported:
            report.add("op", m.group("name"), source.location(m.start("name")))
    for m in _CUSTOM_CALL.finditer(plain):
        target = m.group("pretty") or m.group("attr")
        if target not in CUSTOM_CALL_TARGETS:
            report.add("custom_call", f"@{target}", source.location(m.start()))
    _element_types(plain, source, report)
    return report


def _element_types(plain: str, source: SourceText, report: SupportReport) -> None:
    """Every `tensor<...>` element type `hlo` does not have."""
    from shardc.dialects import make_context
    from xdsl.parser import Parser

    ctx = make_context()
    known: dict[str, bool] = {}
    for m in _TENSOR.finditer(plain):
        name = m.group("element")
        if name not in known:
            try:
                attr = Parser(ctx, name).parse_type()
                known[name] = supported_element(attr)
            except Exception:  # a type xDSL cannot even read is not supported either
                known[name] = False
        if not known[name]:
            report.add("element type", name, source.location(m.start("element")))


def hlo_text_support(text: str, filename: str) -> SupportReport:
    """The gaps of an HLO module text: opcodes the HLO importer does not convert."""
    from lark.exceptions import UnexpectedInput
    from shardc.frontends.hlo_text import KNOWN_OPCODES
    from shardc.frontends.hlo_text_parse import Reader, parser, syntax_error

    try:
        tree = parser().parse(text + "\n")
    except UnexpectedInput as e:
        raise syntax_error(e, text, filename) from None
    _, computations = Reader(text, filename).module(tree)
    source = SourceText(filename, text)
    report = SupportReport(filename, "HLO text")
    for computation in computations:
        for instr in computation.instrs:
            if instr.opcode not in KNOWN_OPCODES:
                report.add("op", instr.opcode, source.location(instr.opcode_pos))
    return report


__all__ = ["Gap", "SupportReport", "hlo_text_support", "stablehlo_support"]
