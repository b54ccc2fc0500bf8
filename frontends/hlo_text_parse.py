"""
Reading XLA's HLO module text: lark's parse (grammar `hlo_text.lark`) as `Computation`s
of `Instr`s, each with the text positions that diagnostics point at, and lark's syntax
errors as located diagnostics saying what was expected.

Attribute values are kept as text (with their parse tree): what they mean depends on the
instruction, and the converters read them (`hlo_text_source.py`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from shardc.diagnostics import DiagnosticError, SourceText

GRAMMAR = Path(__file__).with_name("hlo_text.lark")


@cache
def parser() -> Lark:
    return Lark(
        GRAMMAR.read_text(),
        parser="lalr",
        propagate_positions=True,
        maybe_placeholders=True,
    )


# The parsed module ------------------------------------------------------------------------


@dataclass
class Shape:
    element: str | None  # None for a tuple
    dims: list[int]
    layout: list[int] | None
    elements: list[Shape]
    pos: int

    def is_tuple(self) -> bool:
        return self.element is None

    def __str__(self) -> str:
        if self.element is None:
            return "(" + ", ".join(str(e) for e in self.elements) + ")"
        return f"{self.element}[{','.join(map(str, self.dims))}]"


@dataclass
class Attr:
    text: str
    tree: Any
    pos: int


@dataclass
class Instr:
    name: str
    shape: Shape | None
    """None where the text leaves it for the importer to infer (`hlo_text_shapes`)."""
    opcode: str
    operands: list[Attr]
    attrs: dict[str, Attr]
    root: bool
    pos: int
    opcode_pos: int

    def operand_names(self) -> list[str]:
        return [operand_name(o) for o in self.operands]


@dataclass
class Computation:
    name: str
    instrs: list[Instr]
    by_name: dict[str, Instr]
    root: Instr
    entry: bool
    pos: int


def operand_name(o: Attr) -> str:
    """The instruction an operand names (`%x`, `f32[4] %x` or a bare `x`)."""
    tokens = [t for t in _leaves(o.tree) if t.type in ("PNAME", "NAME")]
    if not tokens:
        return o.text
    return tokens[-1].value.lstrip("%")


def _leaves(tree: Any) -> list[Token]:
    if isinstance(tree, Token):
        return [tree]
    out: list[Token] = []
    for c in tree.children:
        if c is not None:
            out.extend(_leaves(c))
    return out


# Errors -------------------------------------------------------------------------------------

TOKEN_NAMES = {
    "PNAME": "an instruction name (%name)",
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "STRING": "a string",
    "_NL": "the end of the line",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COMMA": "','",
    "EQUAL": "'='",
    "COLON": "':'",
    "ARROW": "'->'",
    "LE": "'<='",
    "ENTRY_KW": "ENTRY",
    "ROOT_KW": "ROOT",
    "$END": "the end of the file",
}


_FIRST = ("RPAR", "RSQB", "RBRACE", "COMMA", "EQUAL", "_NL")


def _expected(names: set[str]) -> str:
    first = [n for n in _FIRST if n in names]
    rest = sorted(n for n in names if n not in _FIRST)
    words: list[str] = []
    for n in first + rest:
        w = TOKEN_NAMES.get(n, n.strip("_").lower())
        if w not in words:
            words.append(w)
    if len(words) > 8:
        words = words[:8] + ["..."]
    return ", ".join(words)


def syntax_error(e: UnexpectedInput, text: str, filename: str) -> DiagnosticError:
    src = SourceText(filename, text)
    if isinstance(e, UnexpectedToken):
        tok = e.token
        if tok.type == "$END":
            pos, what = len(text.rstrip("\n")), "the end of the file"
        else:
            pos = tok.start_pos if tok.start_pos is not None else 0
            what = "end of line" if tok.type == "_NL" else f"'{tok.value}'"
        msg = f"malformed HLO text: unexpected {what}, expected {_expected(set(e.expected))}"
        length = 1 if tok.type in ("_NL", "$END") else len(str(tok.value))
        return DiagnosticError(src.format(min(pos, len(text)), msg, length))
    if isinstance(e, UnexpectedCharacters):
        pos = e.pos_in_stream
        ch = text[pos] if pos < len(text) else "end of file"
        expected = _expected(set(e.allowed or ()))
        msg = f"malformed HLO text: unexpected character '{ch}'" + (
            f", expected {expected}" if expected else ""
        )
        return DiagnosticError(src.format(pos, msg))
    if isinstance(e, UnexpectedEOF):
        msg = f"malformed HLO text: unexpected end of file, expected {_expected(set(e.expected))}"
        return DiagnosticError(src.format(len(text.rstrip()), msg))
    return DiagnosticError(f"{filename}: error: malformed HLO text: {e}")


# Reading the tree -------------------------------------------------------------------------


class Reader:
    """From lark's tree to `Computation`s, with positions for every diagnostic."""

    def __init__(self, text: str, filename: str):
        self.text = text
        self.filename = filename
        self.input = SourceText(filename, text)

    def error(self, pos: int, message: str, length: int = 1) -> DiagnosticError:
        return DiagnosticError(self.input.format(pos, message, length))

    def raw(self, tree: Any) -> str:
        if isinstance(tree, Token):
            return str(tree.value)
        return self.text[tree.meta.start_pos : tree.meta.end_pos]

    def pos(self, tree: Any) -> int:
        if isinstance(tree, Token):
            return tree.start_pos or 0
        return tree.meta.start_pos if not tree.meta.empty else 0

    def shape(self, tree: Tree) -> Shape:
        pos = self.pos(tree)
        if tree.data == "tuple_shape":
            return Shape(
                None, [], None, [self.shape(c) for c in tree.children if c is not None], pos
            )
        name, *rest = tree.children
        dims: list[int] = []
        layout = None
        for c in rest:
            if c is None:
                continue
            if isinstance(c, Tree) and c.data == "dim":
                dims.append(int(c.children[0]))
            elif isinstance(c, Tree) and c.data in ("bounded_dim", "unknown_dim"):
                raise self.error(
                    self.pos(c), f"dynamic dimension in {self.raw(tree)} is not supported"
                )
            elif isinstance(c, Tree) and c.data == "brace":
                layout_text = self.raw(c)[1:-1].split(":")[0]
                layout = [int(x) for x in re.findall(r"-?\d+", layout_text)]
        return Shape(str(name), dims, layout, [], pos)

    def attributes(self, children: Sequence[Any]) -> dict[str, Attr]:
        out: dict[str, Attr] = {}
        for c in children:
            if isinstance(c, Tree) and c.data == "attribute":
                key, value = c.children
                out[str(key)] = Attr(self.raw(value), value, self.pos(value))
        return out

    def module(self, tree: Tree) -> tuple[dict[str, Attr], list[Computation]]:
        header = tree.children[0]
        header_attrs = self.attributes(header.children[1:])
        comps = [self.computation(c) for c in tree.children[1:] if c.data == "computation"]
        return header_attrs, comps

    def computation(self, tree: Tree) -> Computation:
        children = [c for c in tree.children if c is not None]
        entry = False
        if isinstance(children[0], Token) and children[0].type == "ENTRY_KW":
            entry = True
            children = children[1:]
        name_tree = children[0]
        name = self.raw(name_tree).lstrip("%")
        instrs = [
            self.instruction(c) for c in children if isinstance(c, Tree) and c.data == "instruction"
        ]
        if not instrs:
            raise self.error(self.pos(tree), f"computation {name} has no instructions")
        by_name: dict[str, Instr] = {}
        for i in instrs:
            if i.name in by_name:
                raise self.error(i.pos, f"instruction name %{i.name} is defined twice in {name}")
            by_name[i.name] = i
        roots = [i for i in instrs if i.root]
        if len(roots) > 1:
            raise self.error(roots[1].pos, f"computation {name} has two ROOT instructions")
        root = roots[0] if roots else instrs[-1]
        return Computation(name, instrs, by_name, root, entry, self.pos(tree))

    def instruction(self, tree: Tree) -> Instr:
        children = [c for c in tree.children]
        root = False
        if isinstance(children[0], Token) and children[0].type == "ROOT_KW":
            root = True
            children = children[1:]
        elif children[0] is None:
            children = children[1:]
        name_tree, shape_tree, opcode_tree, *rest = children
        operands = [
            Attr(self.raw(c), c, self.pos(c))
            for c in rest
            if isinstance(c, Tree) and c.data == "operand"
        ]
        opcode_tok = opcode_tree.children[0]
        return Instr(
            name=self.raw(name_tree).lstrip("%"),
            shape=self.shape(shape_tree) if shape_tree is not None else None,
            opcode=str(opcode_tok),
            operands=operands,
            attrs=self.attributes(rest),
            root=root,
            pos=self.pos(tree),
            opcode_pos=opcode_tok.start_pos or 0,
        )
