"""
The XLA HLO text importer: the per-device module that `jax.jit(...).lower(...).compile()
.as_text()` prints (and `--xla_dump_to` writes), parsed with the lark grammar
`hlo_text.lark`, to a level-S `hlo` + `collective` program.

```python
from shardc.frontends.hlo_text import import_hlo_text
result = import_hlo_text(text, "module.hlo.txt")  # DiagnosticError on bad input
```

The output:

* `spmd.mesh @mesh = <["devices"=N]>`, N = `replica_count` x `num_partitions` from the
  header (device id = replica x num_partitions + partition, XLA's flattened id);
* `func.func @main` marked `spmd.per_device_io`: XLA's module text does not say how the
  results are sharded, so `shardc-run` takes `in_K.D` and writes `out_K.D`. Arguments
  are the entry's parameters numbered by `parameter(N)` (not by their order in the
  text); a parameter's `sharding={...}` is kept as the argument attribute
  `mhlo.sharding = "..."` (information: `per_device_inputs` turns global arrays into the
  per-device inputs it describes), and so is the ROOT's, when it has one, on the results;
* the entry computation's instructions reachable from ROOT, with fusions, `call`s and
  `async-start` bodies inlined; tuples and `get-tuple-element` are resolved while
  importing (a tuple-shaped ROOT gives several results);
* collectives on explicit groups (`on groups [[...]]`): `replica_groups` in the explicit
  (`{{0,1},{2,3}}`), iota (`[2,4]<=[4,2]T(1,0)`) and mesh-axes
  (`mesh['a'=2,'b'=4] {'a'}`) forms, interpreted in XLA's group mode (from `channel_id` and
  `use_global_device_ids`); `to_apply` must add, multiply, take the max or the min;
  `-start` / `-done` pairs become `collective.*_start` / `collective.done`;
  tuple all-to-all (one operand per peer) becomes one all-to-all on the concatenation;
  `collective-permute` pairs become rank pairs (or a shift) on the smallest groups that
  hold them;
* `partition-id` / `replica-id` from `spmd.axis_index`; `bitcast` as the reshape (and
  transposes) that its layouts imply, `copy` as the identity (it changes layouts only).

Element types: f32, bf16, f16, f64, s32 (i32), s64 (i64), pred (i1); u32 is read as i32
(XLA uses it for partition ids and offsets, which are small): anything else is an error.
Any problem is one located diagnostic; lark's syntax errors say what was expected.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from shardc.diagnostics import DiagnosticError, SourceText
from shardc.dialects import collective, hlo, spmd
from shardc.dialects.syntax import i64_array, i64_attr, splat_element, splat_elements
from shardc.frontends import hlo_sharding as hs
from shardc.frontends.common import (
    Emitter,
    ImportResult,
    ImportStats,
    is_bool,
    is_float,
    make_function,
    shift_of,
)
from shardc.parsing import verify_module
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, SSAValue

GRAMMAR = Path(__file__).with_name("hlo_text.lark")

ELEMENT_TYPES: dict[str, Attribute] = {
    "f32": Float32Type(),
    "bf16": BFloat16Type(),
    "f16": Float16Type(),
    "f64": Float64Type(),
    "s32": i32,
    "s64": i64,
    "pred": i1,
    "u32": i32,
}

BINARY = {
    "add": "add",
    "subtract": "sub",
    "multiply": "mul",
    "divide": "div",
    "maximum": "max",
    "minimum": "min",
    "power": "pow",
    "and": "and",
    "or": "or",
}
UNARY = {
    "negate": "neg",
    "exponential": "exp",
    "log": "log",
    "tanh": "tanh",
    "sqrt": "sqrt",
    "rsqrt": "rsqrt",
    "abs": "abs",
    "sine": "sin",
    "cosine": "cos",
    "logistic": "logistic",
    "not": "not",
}
EXPANDED = {
    "exponential-minus-one",
    "log-plus-one",
    "sign",
    "tan",
    "clamp",
    "is-finite",
    "erf",
    "xor",
    "remainder",
}
COLLECTIVES = {"all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute"}
ASYNC_STARTS = {f"{c}-start": c for c in ("all-reduce", "all-gather", "collective-permute")}
ASYNC_DONES = {f"{c}-done" for c in ("all-reduce", "all-gather", "collective-permute")}
OTHER = {
    "parameter",
    "constant",
    "compare",
    "select",
    "convert",
    "iota",
    "broadcast",
    "reshape",
    "bitcast",
    "copy",
    "transpose",
    "slice",
    "dynamic-slice",
    "dynamic-update-slice",
    "concatenate",
    "dot",
    "reduce",
    "tuple",
    "get-tuple-element",
    "fusion",
    "call",
    "partition-id",
    "replica-id",
    "opt-barrier",
    "async-start",
    "async-done",
    "async-update",
    "copy-start",
    "copy-done",
    "custom-call",
}
XLA_OPCODES = frozenset(
    """abs add add-dependency after-all all-gather all-gather-done all-gather-start
    all-reduce all-reduce-done all-reduce-start all-to-all and async-done async-start
    async-update atan2 batch-norm-grad batch-norm-inference batch-norm-training bitcast
    bitcast-convert broadcast call cbrt ceil cholesky clamp clz collective-broadcast
    collective-permute collective-permute-done collective-permute-start compare complex
    concatenate conditional constant convert convolution copy copy-done copy-start cosine
    custom-call divide domain dot dynamic-reshape dynamic-slice dynamic-update-slice erf
    exponential exponential-minus-one fft floor fusion gather get-dimension-size
    get-tuple-element imag infeed iota is-finite log log-plus-one logistic map maximum
    minimum multiply negate not opt-barrier or outfeed pad parameter partition-id popcnt
    power ragged-all-to-all real recv recv-done reduce reduce-precision reduce-scatter
    reduce-window remainder replica-id reshape reverse rng rng-bit-generator
    rng-get-and-update-state round-nearest-afz round-nearest-even rsqrt scatter select
    select-and-scatter send send-done set-dimension-size shift-left
    shift-right-arithmetic shift-right-logical sign sine slice sort sqrt stochastic-convert
    subtract tan tanh topk transpose triangular-solve tuple while xor""".split()
)
"""Every HLO opcode XLA prints (HloOpcode): the ones not handled here are "not supported"."""

KNOWN_OPCODES = (
    set(BINARY) | set(UNARY) | EXPANDED | COLLECTIVES | set(ASYNC_STARTS) | ASYNC_DONES | OTHER
)
COMMON_ATTRS = frozenset(
    {
        "metadata",
        "backend_config",
        "frontend_attributes",
        "sharding",
        "statistics",
        "statistics_viz",
        "control-predecessors",
        "origin",
        "result_accuracy",
        "parameter_replication",
        "operand_precision",
        "algorithm",
        "constrain_layout",
        "output_to_operand_aliasing",
        "schedule_name",
        "async_execution_thread",
        "custom_call_schedule",
        "api_version",
        "layout_canonicalized",
    }
)
"""Attributes that change no value (layout, scheduling and debug information)."""
COLLECTIVE_ATTRS = frozenset(
    {"channel_id", "replica_groups", "use_global_device_ids", "to_apply", "dimensions"}
)
KNOWN_ATTRS: dict[str, frozenset[str]] = {
    "compare": frozenset({"direction", "type"}),
    "iota": frozenset({"iota_dimension"}),
    "broadcast": frozenset({"dimensions"}),
    "transpose": frozenset({"dimensions"}),
    "concatenate": frozenset({"dimensions"}),
    "slice": frozenset({"slice"}),
    "dynamic-slice": frozenset({"dynamic_slice_sizes"}),
    "dot": frozenset(
        {"lhs_batch_dims", "rhs_batch_dims", "lhs_contracting_dims", "rhs_contracting_dims"}
    ),
    "reduce": frozenset({"dimensions", "to_apply"}),
    "get-tuple-element": frozenset({"index"}),
    "fusion": frozenset({"kind", "calls"}),
    "call": frozenset({"to_apply"}),
    "async-start": frozenset({"calls"}),
    "custom-call": frozenset({"custom_call_target"}),
    "collective-permute": frozenset({"channel_id", "source_target_pairs"}),
    "collective-permute-start": frozenset({"channel_id", "source_target_pairs"}),
}
for _c in (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "all-reduce-start",
    "all-gather-start",
):
    KNOWN_ATTRS[_c] = COLLECTIVE_ATTRS

REDUCERS = {"add": "add", "multiply": "mul", "maximum": "max", "minimum": "min"}
BOOL_REDUCERS = {"or": "max", "and": "min"}

# XLA's f32 erf rational approximation (see stablehlo.py)
from shardc.frontends.stablehlo import ERF_ALPHA, ERF_BETA  # noqa: E402


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
    shape: Shape
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
            shape=self.shape(shape_tree),
            opcode=str(opcode_tok),
            operands=operands,
            attrs=self.attributes(rest),
            root=root,
            pos=self.pos(tree),
            opcode_pos=opcode_tok.start_pos or 0,
        )


# Values ------------------------------------------------------------------------------------


@dataclass
class TupleVal:
    items: list[Any]


@dataclass
class FutureVal:
    """An async start: a collective future to `done`, or values a `-done` returns."""

    future: SSAValue | None
    values: list[Any] = field(default_factory=list)
    tuple_result: bool = False


Value = Any  # SSAValue | TupleVal | FutureVal


# The importer ------------------------------------------------------------------------------


class HloTextImporter:
    def __init__(self, text: str, filename: str):
        self.text = text
        self.filename = filename
        self.reader = Reader(text, filename)
        self.stats = ImportStats("xla hlo text", level="S")
        self.block = Block()
        self.emit = Emitter(self.block)
        self.computations: dict[str, Computation] = {}
        self.partitions = 1
        self.replicas = 1
        self.devices = 1
        self.depth = 0
        self.comp: Computation | None = None

    def error(self, pos: int, message: str, length: int = 1) -> DiagnosticError:
        return self.reader.error(pos, message, length)

    def located(self, pos: int) -> FileLineColLoc:
        return self.reader.input.location(pos)

    # entry ----------------------------------------------------------------------------------

    def run(self) -> ImportResult:
        try:
            tree = parser().parse(self.text + "\n")
        except UnexpectedInput as e:
            raise syntax_error(e, self.text, self.filename) from None
        header, comps = self.reader.module(tree)
        for c in comps:
            if c.name in self.computations:
                raise self.error(c.pos, f"computation {c.name} is defined twice")
            self.computations[c.name] = c
        self.partitions = self.header_int(header, "num_partitions")
        self.replicas = self.header_int(header, "replica_count")
        self.devices = self.partitions * self.replicas
        for c in comps:
            for i in c.instrs:
                if i.opcode not in KNOWN_OPCODES:
                    what = (
                        f"HLO instruction '{i.opcode}' is not supported by shardc's HLO importer"
                        if i.opcode in XLA_OPCODES
                        else f"unknown HLO instruction '{i.opcode}': shardc's HLO importer "
                        "does not support it"
                    )
                    raise self.error(i.opcode_pos, what, len(i.opcode))
                known = KNOWN_ATTRS.get(i.opcode, frozenset())
                for key, a in i.attrs.items():
                    if key not in known and key not in COMMON_ATTRS:
                        at = self.text.rfind(key, 0, a.pos)
                        raise self.error(
                            at if at >= 0 else a.pos,
                            f"unknown attribute '{key}' on {i.opcode}: shardc's HLO importer "
                            "does not support it",
                            len(key),
                        )
        entries = [c for c in comps if c.entry]
        if len(entries) > 1:
            raise self.error(entries[1].pos, "the module has two ENTRY computations")
        if not comps:
            raise DiagnosticError(f"{self.filename}: error: the module has no computations")
        entry = entries[0] if entries else comps[-1]
        function = self.convert_entry(entry)
        mesh = spmd.MeshAttr([("devices", self.devices)])
        out = ModuleOp([spmd.MeshOp("mesh", mesh), function])
        self.stats.devices = self.devices
        verify_module(out, filename=self.filename)
        return ImportResult(out, self.stats)

    def header_int(self, header: dict[str, Attr], key: str) -> int:
        a = header.get(key)
        if a is None:
            return 1
        try:
            return max(1, int(a.text))
        except ValueError:
            raise self.error(a.pos, f"{key} must be an integer, got {a.text}") from None

    def convert_entry(self, entry: Computation) -> func.FuncOp:
        params: dict[int, Instr] = {}
        for i in entry.instrs:
            if i.opcode == "parameter":
                n = self.parameter_number(i)
                if n in params:
                    raise self.error(i.pos, f"parameter({n}) is defined twice")
                params[n] = i
        if sorted(params) != list(range(len(params))):
            missing = min(set(range(len(params) + 1)) - set(params))
            raise self.error(entry.pos, f"the entry computation has no parameter({missing})")
        env: dict[str, Value] = {}
        arg_attrs: list[dict[str, Attribute]] = []
        for n in range(len(params)):
            p = params[n]
            ty = self.tensor_type(p.shape)
            env[p.name] = self.block.insert_arg(ty, n)
            attrs: dict[str, Attribute] = {}
            if "sharding" in p.attrs:
                s = p.attrs["sharding"]
                try:
                    hs.parse_hlo_sharding(s.text)
                except hs.ShardingSyntaxError as e:
                    raise self.error(s.pos + e.offset, f"bad sharding: {e}") from None
                attrs["mhlo.sharding"] = StringAttr(s.text)
                self.stats.constructs["parameter sharding="] += 1
            arg_attrs.append(attrs)
        root = self.evaluate(entry, env)
        results = self.flatten(root, entry.root)
        self.emit.location = self.located(entry.root.pos)
        self.emit.add(func.ReturnOp(*results))
        res_attrs = self.result_shardings(entry.root, len(results))
        f = make_function("main", self.block, [v.type for v in results], arg_attrs, res_attrs)
        f.attributes[spmd.PER_DEVICE_IO_ATTR_NAME] = UnitAttr()
        f.location = self.located(entry.pos)
        return f

    def result_shardings(self, root: Instr, n: int) -> list[dict[str, Attribute]]:
        """The ROOT's `sharding=` (a tuple sharding: one per result), kept as information."""
        a = root.attrs.get("sharding")
        if a is None:
            return [{} for _ in range(n)]
        try:
            s = hs.parse_hlo_sharding(a.text)
        except hs.ShardingSyntaxError as e:
            raise self.error(a.pos + e.offset, f"bad sharding: {e}") from None
        parts = list(s.elements) if s.kind == "tuple" else [s]
        if len(parts) != n:
            return [{} for _ in range(n)]
        self.stats.constructs["ROOT sharding="] += 1
        return [{"mhlo.sharding": StringAttr(p.text)} for p in parts]

    def flatten(self, value: Value, instr: Instr) -> list[SSAValue]:
        if isinstance(value, TupleVal):
            out: list[SSAValue] = []
            for v in value.items:
                out.extend(self.flatten(v, instr))
            return out
        if isinstance(value, FutureVal):
            raise self.error(instr.pos, "the ROOT is an unfinished async operation")
        return [value]

    def parameter_number(self, i: Instr) -> int:
        if len(i.operands) != 1:
            raise self.error(i.pos, "parameter takes one number")
        try:
            return int(i.operands[0].text)
        except ValueError:
            raise self.error(
                i.operands[0].pos, f"expected a parameter number, got {i.operands[0].text}"
            ) from None

    # types ----------------------------------------------------------------------------------

    def element(self, shape: Shape) -> Attribute:
        assert shape.element is not None
        ty = ELEMENT_TYPES.get(shape.element)
        if ty is None:
            raise self.error(
                shape.pos,
                f"element type {shape.element} is not supported (f32, bf16, f16, f64, s32, "
                "s64, pred; u32 as i32)",
                len(shape.element),
            )
        if shape.element == "u32":
            self.stats.constructs["u32 read as i32"] += 1
        return ty

    def tensor_type(self, shape: Shape) -> TensorType:
        if shape.is_tuple():
            raise self.error(shape.pos, f"expected an array shape, got the tuple {shape}")
        return TensorType(self.element(shape), shape.dims)

    # evaluation -----------------------------------------------------------------------------

    def evaluate(self, comp: Computation, env: dict[str, Value]) -> Value:
        """Convert the instructions the ROOT of `comp` needs; its value."""
        order: list[Instr] = []
        state: dict[str, int] = {}
        stack: list[tuple[Instr, bool]] = [(comp.root, False)]
        while stack:
            instr, done = stack.pop()
            if done:
                state[instr.name] = 2
                order.append(instr)
                continue
            if state.get(instr.name) == 2 or instr.name in env:
                continue
            if state.get(instr.name) == 1:
                raise self.error(instr.pos, f"%{instr.name} depends on itself")
            state[instr.name] = 1
            stack.append((instr, True))
            if instr.opcode in ("parameter", "constant", "iota", "partition-id", "replica-id"):
                continue
            for o, name in zip(instr.operands, instr.operand_names(), strict=False):
                dep = comp.by_name.get(name)
                if dep is None:
                    raise self.error(o.pos, f"%{name} is not defined in {comp.name}", len(o.text))
                if state.get(name) != 2 and name not in env:
                    stack.append((dep, False))
        # text order when it defines before use (XLA prints post-order), else the DFS order
        needed = {i.name for i in order}
        textual = [i for i in comp.instrs if i.name in needed]
        seen: set[str] = set(env)
        for i in textual:
            if i.opcode not in ("parameter", "constant", "iota", "partition-id", "replica-id"):
                if any(n not in seen for n in i.operand_names()):
                    break
            seen.add(i.name)
        else:
            order = textual
        for instr in order:
            if instr.name in env:
                continue
            env[instr.name] = self.convert(instr, comp, env)
        return env[comp.root.name]

    def operands(self, instr: Instr, env: dict[str, Value]) -> list[Value]:
        return [env[n] for n in instr.operand_names()]

    def arrays(self, instr: Instr, env: dict[str, Value]) -> list[SSAValue]:
        out = []
        for o, v in zip(instr.operands, self.operands(instr, env), strict=False):
            if not isinstance(v, SSAValue):
                raise self.error(
                    o.pos, f"{instr.opcode} expects an array operand, got a tuple or future"
                )
            out.append(v)
        return out

    def attr(self, instr: Instr, key: str) -> Attr:
        a = instr.attrs.get(key)
        if a is None:
            raise self.error(
                instr.opcode_pos, f"{instr.opcode} needs the attribute {key}=", len(instr.opcode)
            )
        return a

    def ints_attr(self, instr: Instr, key: str, default: list[int] | None = None) -> list[int]:
        a = instr.attrs.get(key)
        if a is None:
            if default is not None:
                return default
            a = self.attr(instr, key)
        return [int(x) for x in re.findall(r"-?\d+", a.text)]

    def int_attr(self, instr: Instr, key: str) -> int:
        values = self.ints_attr(instr, key)
        if len(values) != 1:
            a = self.attr(instr, key)
            raise self.error(a.pos, f"{key}= must be one integer, got {a.text}")
        return values[0]

    def called(self, instr: Instr, key: str) -> Computation:
        a = self.attr(instr, key)
        name = a.text.strip().lstrip("%")
        if name.startswith("{"):
            name = name.strip("{}").strip().lstrip("%")
        comp = self.computations.get(name)
        if comp is None:
            raise self.error(a.pos, f"computation {name} is not defined", len(a.text))
        return comp

    def inline(self, instr: Instr, comp: Computation, args: list[Value]) -> Value:
        params: dict[int, Instr] = {}
        for i in comp.instrs:
            if i.opcode == "parameter":
                params[self.parameter_number(i)] = i
        if len(params) != len(args):
            raise self.error(
                instr.pos,
                f"{comp.name} takes {len(params)} parameters but {instr.opcode} passes {len(args)}",
            )
        self.depth += 1
        if self.depth > 64:
            raise self.error(instr.pos, "calls nest too deeply (recursion?)")
        env = {params[n].name: a for n, a in enumerate(args)}
        value = self.evaluate(comp, env)
        self.depth -= 1
        return value

    # instructions ---------------------------------------------------------------------------

    def convert(self, instr: Instr, comp: Computation, env: dict[str, Value]) -> Value:
        op = instr.opcode
        self.stats.ops[op] += 1
        self.emit.location = self.located(instr.pos)
        if op == "parameter":
            raise self.error(
                instr.pos, f"parameter({self.parameter_number(instr)}) has no argument"
            )
        if op in ("fusion", "call"):
            key = "calls" if op == "fusion" else "to_apply"
            self.stats.constructs[f"{op} (inlined)"] += 1
            return self.inline(instr, self.called(instr, key), self.operands(instr, env))
        if op == "tuple":
            return TupleVal(self.operands(instr, env))
        if op == "get-tuple-element":
            (v,) = self.operands(instr, env)
            index = self.int_attr(instr, "index")
            if isinstance(v, FutureVal):
                return self.future_element(instr, v, index)
            if not isinstance(v, TupleVal) or not 0 <= index < len(v.items):
                raise self.error(
                    instr.pos, f"get-tuple-element index={index} of a non-tuple or out of range"
                )
            return v.items[index]
        if op == "opt-barrier":
            (v,) = self.operands(instr, env)
            return v
        if op in ("copy-start",):
            (v,) = self.operands(instr, env)
            return FutureVal(None, [v, v], tuple_result=True)
        if op in ("copy-done",):
            (v,) = self.operands(instr, env)
            assert isinstance(v, FutureVal)
            return v.values[0]
        if op in ASYNC_STARTS:
            return self.collective(instr, ASYNC_STARTS[op], self.operands(instr, env), start=True)
        if op in ASYNC_DONES or op == "async-done":
            (v,) = self.operands(instr, env)
            return self.done(instr, v)
        if op == "async-update":
            (v,) = self.operands(instr, env)
            return v
        if op == "async-start":
            return self.async_start(instr, env)
        if op in COLLECTIVES:
            return self.collective(instr, op, self.operands(instr, env), start=False)
        if op == "custom-call":
            target = instr.attrs.get("custom_call_target")
            name = target.text.strip('"') if target else "?"
            raise self.error(instr.opcode_pos, f'custom-call to "{name}" is not supported', len(op))
        leaf = op in ("constant", "iota", "partition-id", "replica-id")
        xs = [] if leaf else self.arrays(instr, env)
        self.comp = comp
        try:
            return self.array_op(instr, op, xs)
        except ValueError as e:
            raise self.error(instr.pos, str(e)) from None

    def array_op(self, instr: Instr, op: str, xs: list[SSAValue]) -> SSAValue:
        e = self.emit
        if op == "reduce" and len(xs) != 2:
            raise ValueError(
                f"a reduce of {len(xs) // 2} operands together (such as argmax) is not "
                "supported: hlo.reduce reduces one operand"
            )
        ty = self.tensor_type(instr.shape)
        if op in BINARY:
            return e.binary(BINARY[op], *xs)
        if op in UNARY:
            return e.unary(UNARY[op], xs[0])
        if op == "constant":
            return self.constant(instr, ty)
        if op == "compare":
            direction = self.attr(instr, "direction").text
            ctype = instr.attrs.get("type")
            if ctype is not None and ctype.text == "TOTALORDER":
                raise ValueError("compare type=TOTALORDER is not supported")
            if direction not in hlo.COMPARISON_DIRECTIONS:
                raise ValueError(f"unknown comparison direction {direction}")
            self.stats.constructs[f"compare {direction}"] += 1
            return e.compare(direction, xs[0], xs[1])
        if op == "select":
            return e.select(*xs)
        if op == "convert":
            return e.convert(xs[0], ty)
        if op == "iota":
            return e.value(hlo.IotaOp(self.int_attr(instr, "iota_dimension"), ty))
        if op == "broadcast":
            return e.broadcast(xs[0], self.ints_attr(instr, "dimensions", []), ty)
        if op == "reshape":
            return e.reshape(xs[0], ty)
        if op == "copy":
            return xs[0]
        if op == "bitcast":
            return self.bitcast(instr, xs[0], ty)
        if op == "transpose":
            return e.transpose(xs[0], self.ints_attr(instr, "dimensions"))
        if op == "slice":
            a = self.attr(instr, "slice")
            ranges = re.findall(r"\[\s*(-?\d+)\s*:\s*(-?\d+)\s*(?::\s*(-?\d+)\s*)?\]", a.text)
            starts = [int(r[0]) for r in ranges]
            limits = [int(r[1]) for r in ranges]
            strides = [int(r[2]) if r[2] else 1 for r in ranges]
            return e.slice(xs[0], starts, limits, strides)
        if op == "dynamic-slice":
            idx = [e.convert(i, TensorType(i32, [])) for i in xs[1:]]
            sizes = self.ints_attr(instr, "dynamic_slice_sizes")
            return e.value(hlo.DynamicSliceOp(xs[0], idx, sizes))
        if op == "dynamic-update-slice":
            idx = [e.convert(i, TensorType(i32, [])) for i in xs[2:]]
            return e.value(hlo.DynamicUpdateSliceOp(xs[0], xs[1], idx))
        if op == "concatenate":
            (dim,) = self.ints_attr(instr, "dimensions")
            return e.value(hlo.ConcatenateOp(xs, dim))
        if op == "dot":
            batching = (
                self.ints_attr(instr, "lhs_batch_dims", []),
                self.ints_attr(instr, "rhs_batch_dims", []),
            )
            contracting = (
                self.ints_attr(instr, "lhs_contracting_dims", []),
                self.ints_attr(instr, "rhs_contracting_dims", []),
            )
            return e.value(hlo.DotOp(xs[0], xs[1], contracting, batching, ty))
        if op == "reduce":
            if len(xs) != 2:
                raise ValueError(
                    f"a reduce of {len(xs) // 2} operands together is not supported "
                    "(hlo.reduce reduces one operand)"
                )
            kind = self.reducer(instr, xs[0].type.element_type)  # pyright: ignore
            self.stats.constructs[f"reduce {kind}"] += 1
            init_value = self.literal_scalar(instr, xs[1])
            return e.reduce(kind, xs[0], self.ints_attr(instr, "dimensions"), xs[1], init_value)
        if op in ("partition-id", "replica-id"):
            index = e.value(spmd.AxisIndexOp("mesh", "devices", TensorType(i32, [])))
            p = e.splat(self.partitions, TensorType(i32, []))
            if op == "replica-id":
                return (
                    e.binary("div", index, p)
                    if self.replicas > 1
                    else e.splat(0, TensorType(i32, []))
                )
            if self.replicas == 1:
                return index
            q = e.binary("div", index, p)
            return e.binary("sub", index, e.binary("mul", q, p))
        return self.expand(op, xs)

    def expand(self, op: str, xs: list[SSAValue]) -> SSAValue:
        e = self.emit
        x = xs[0]
        if op == "exponential-minus-one":
            return e.binary("sub", e.unary("exp", x), e.scalar_like(1.0, x))
        if op == "log-plus-one":
            return e.unary("log", e.binary("add", x, e.scalar_like(1.0, x)))
        if op == "tan":
            return e.binary("div", e.unary("sin", x), e.unary("cos", x))
        if op == "is-finite":
            return e.compare("LT", e.unary("abs", x), e.scalar_like(math.inf, x))
        if op == "sign":
            zero = e.scalar_like(0, x)
            elem = x.type.element_type  # pyright: ignore
            pos = e.select(
                e.compare("GT", x, zero), e.scalar_like(1, x), x if is_float(elem) else zero
            )
            return e.select(e.compare("LT", x, zero), e.scalar_like(-1, x), pos)
        if op == "clamp":
            lo, v, hi = xs
            return e.binary(
                "min", e.binary("max", v, e.broadcast_scalar(lo, v)), e.broadcast_scalar(hi, v)
            )
        if op == "remainder":
            a, b = xs
            if is_float(a.type.element_type) or is_bool(a.type.element_type):  # pyright: ignore
                raise ValueError("remainder on floats is not supported (integers only)")
            return e.binary("sub", a, e.binary("mul", e.binary("div", a, b), b))
        if op == "xor":
            if not is_bool(x.type.element_type):  # pyright: ignore
                raise ValueError("xor on integers is not supported (pred only)")
            return e.compare("NE", xs[0], xs[1])
        if op == "erf":
            four = e.scalar_like(4.0, x)
            xc = e.binary("min", e.binary("max", x, e.unary("neg", four)), four)
            x2 = e.binary("mul", xc, xc)

            def poly(coeffs: Sequence[float]) -> SSAValue:
                p = e.scalar_like(coeffs[0], x)
                for c in coeffs[1:]:
                    p = e.binary("add", e.binary("mul", p, x2), e.scalar_like(c, x))
                return p

            return e.binary("div", e.binary("mul", xc, poly(ERF_ALPHA)), poly(ERF_BETA))
        raise ValueError(f"{op} is not supported")

    def bitcast(self, instr: Instr, x: SSAValue, ty: TensorType) -> SSAValue:
        """A bitcast reinterprets the physical layout: transposes around a reshape."""
        src = x.type
        assert isinstance(src, TensorType)
        if src.element_type != ty.element_type:
            raise ValueError(
                f"bitcast from {src.element_type} to {ty.element_type} is not supported"
            )
        operand = self.operand_instr_shape(instr)
        src_layout = _layout(operand.layout if operand else None, src.get_num_dims())
        dst_layout = _layout(instr.shape.layout, ty.get_num_dims())
        perm_src = list(reversed(src_layout))  # major to minor
        perm_dst = list(reversed(dst_layout))
        if perm_src != list(range(len(perm_src))) or perm_dst != list(range(len(perm_dst))):
            self.stats.constructs["bitcast across layouts (transpose)"] += 1
        e = self.emit
        physical = e.transpose(x, perm_src)
        shape = ty.get_shape()
        r = e.reshape(physical, TensorType(ty.element_type, [shape[d] for d in perm_dst]))
        inverse = [perm_dst.index(d) for d in range(len(perm_dst))]
        return e.transpose(r, inverse)

    def operand_instr_shape(self, instr: Instr) -> Shape | None:
        """The operand's declared shape (with its layout), from its defining instruction."""
        dep = self.comp.by_name.get(instr.operand_names()[0]) if self.comp else None
        return dep.shape if dep is not None else None

    def constant(self, instr: Instr, ty: TensorType) -> SSAValue:
        text = instr.operands[0].text if instr.operands else ""
        tokens = re.findall(
            r"-?inf|-?nan|true|false|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", text
        )
        elem = ty.element_type
        n = math.prod(ty.get_shape())
        values: list[Any] = []
        for t in tokens:
            if t in ("true", "false"):
                values.append(1 if t == "true" else 0)
            elif is_float(elem):
                values.append(float(t))
            else:
                try:
                    values.append(int(float(t)) if not t.lstrip("-").isdigit() else int(t))
                except ValueError:
                    raise self.error(
                        instr.operands[0].pos, f"bad literal {t} for {instr.shape}"
                    ) from None
        if "{...}" in text.replace(" ", ""):
            raise self.error(
                instr.operands[0].pos,
                "the constant's values were elided ({...}) when the text was printed",
            )
        if len(values) != n and not (len(values) == 1):
            raise self.error(
                instr.operands[0].pos if instr.operands else instr.pos,
                f"constant has {len(values)} values but {instr.shape} holds {n}",
            )
        if is_bool(elem):
            values = [int(bool(v)) for v in values]
        if len(values) == 1:  # a splat: one stored element, whatever the shape
            attr = splat_elements(ty, values[0])
        else:
            attr = DenseIntOrFPElementsAttr.from_list(ty, values)  # pyright: ignore
        return self.emit.value(hlo.ConstantOp(attr))

    def literal_scalar(self, instr: Instr, value: SSAValue) -> float | int | bool | None:
        owner = value.owner
        if isinstance(owner, hlo.ConstantOp):
            v = splat_element(owner.value)
            if v is not None:
                return bool(v) if is_bool(owner.value.get_type().element_type) else v  # pyright: ignore
        return None

    def reducer(self, instr: Instr, element: Attribute, key: str = "to_apply") -> str:
        comp = self.called(instr, key)
        root = comp.root
        params = [i for i in comp.instrs if i.opcode == "parameter"]
        names = {p.name for p in params}
        kind = REDUCERS.get(root.opcode)
        if kind is None and is_bool(element):
            kind = BOOL_REDUCERS.get(root.opcode)
        if kind is None or len(params) != 2 or set(root.operand_names()) != names:
            ops = ", ".join(i.opcode for i in comp.instrs if i.opcode != "parameter")
            a = self.attr(instr, key)
            raise self.error(
                a.pos,
                f"{key}={comp.name} computes {ops}; shardc recognizes reductions that add, "
                "multiply, take the maximum or the minimum of their two parameters",
                len(a.text),
            )
        return kind

    # collectives ----------------------------------------------------------------------------

    def groups(self, instr: Instr, has_global_field: bool) -> list[list[int]]:
        a = instr.attrs.get("replica_groups")
        groups: list[list[int]] = []
        if a is not None:
            text = a.text.strip()
            try:
                if text.startswith("mesh"):
                    groups = mesh_axes_groups(text)
                    self.stats.constructs["replica_groups mesh axes"] += 1
                else:
                    groups = hs.parse_replica_groups(text)
                    form = "iota" if text.startswith("[") else "explicit"
                    self.stats.constructs[f"replica_groups {form}"] += 1
            except hs.ShardingSyntaxError as e:
                raise self.error(a.pos + e.offset, f"bad replica_groups: {e}") from None
        has_channel = "channel_id" in instr.attrs
        if has_channel:
            self.stats.constructs["channel_id"] += 1
        ug = instr.attrs.get("use_global_device_ids")
        use_global = ug is not None and ug.text == "true"
        if use_global:
            self.stats.constructs["use_global_device_ids"] += 1
        try:
            mode = hs.group_mode(has_channel, use_global, has_global_field)
        except hs.ShardingSyntaxError as e:
            raise self.error(instr.pos, str(e)) from None
        out = hs.participating_groups(groups, mode, self.replicas, self.partitions)
        problem = hs.check_partition(out, self.devices)
        if problem is not None:
            raise self.error(a.pos if a else instr.pos, f"replica groups {out}: {problem}")
        return out

    def group_props(self, groups: list[list[int]]) -> dict[str, Attribute]:
        return {"groups": ArrayAttr(i64_array(g) for g in groups)}

    def collective(self, instr: Instr, kind: str, args: list[Value], start: bool) -> Value:
        xs: list[SSAValue] = []
        for o, v in zip(instr.operands, args, strict=False):
            if not isinstance(v, SSAValue):
                raise self.error(o.pos, f"{instr.opcode} expects array operands")
            xs.append(v)
        e = self.emit
        self.stats.constructs[f"{kind}{' async' if start else ''}"] += 1
        result_shapes = self.collective_result_shapes(instr, kind, len(xs), start)
        rtypes = [self.tensor_type(s) for s in result_shapes]
        if kind == "all-reduce":
            groups = self.groups(instr, True)
            red = self.reducer(instr, xs[0].type.element_type)  # pyright: ignore
            props = {"kind": StringAttr(red), **self.group_props(groups)}
            cls = collective.AllReduceStartOp if start else collective.AllReduceOp
        elif kind == "all-gather":
            groups = self.groups(instr, True)
            (dim,) = self.ints_attr(instr, "dimensions")
            props = {"dim": i64_attr(dim), **self.group_props(groups)}
            cls = collective.AllGatherStartOp if start else collective.AllGatherOp
        elif kind == "reduce-scatter":
            groups = self.groups(instr, True)
            red = self.reducer(instr, xs[0].type.element_type)  # pyright: ignore
            (dim,) = self.ints_attr(instr, "dimensions")
            props = {"kind": StringAttr(red), "dim": i64_attr(dim), **self.group_props(groups)}
            cls = collective.ReduceScatterStartOp if start else collective.ReduceScatterOp
        elif kind == "all-to-all":
            groups = self.groups(instr, False)
            return self.all_to_all(instr, xs, groups, rtypes, start)
        elif kind == "collective-permute":
            return self.permute(instr, xs, rtypes, start)
        else:
            raise self.error(instr.pos, f"unsupported collective {kind}")
        if start:
            future = collective.FutureType(rtypes)
            op = e.collective(cls, xs, [future], props)
            return FutureVal(op.results[0], tuple_result=len(rtypes) > 1)
        results = list(e.collective(cls, xs, rtypes, props).results)
        return TupleVal(results) if instr.shape.is_tuple() else results[0]

    def collective_result_shapes(self, instr: Instr, kind: str, n: int, start: bool) -> list[Shape]:
        shape = instr.shape
        if start and kind == "all-gather":
            # (operand(s), result(s))
            if not shape.is_tuple() or len(shape.elements) != 2:
                raise self.error(shape.pos, "all-gather-start must produce (operand, result)")
            res = shape.elements[1]
            return res.elements if res.is_tuple() else [res]
        if start and kind == "collective-permute":
            if not shape.is_tuple() or len(shape.elements) < 2:
                raise self.error(
                    shape.pos, "collective-permute-start must produce (operand, result, ...)"
                )
            return [shape.elements[1]]
        if shape.is_tuple():
            return shape.elements
        return [shape]

    def all_to_all(
        self,
        instr: Instr,
        xs: list[SSAValue],
        groups: list[list[int]],
        rtypes: list[TensorType],
        start: bool = False,
    ) -> Value:
        e = self.emit
        size = len(groups[0])
        dims = instr.attrs.get("dimensions")
        if dims is not None:
            (dim,) = self.ints_attr(instr, "dimensions")
            props = {
                "split_dim": i64_attr(dim),
                "concat_dim": i64_attr(dim),
                **self.group_props(groups),
            }
            if start and len(xs) == 1:
                future = collective.FutureType(rtypes)
                op = e.collective(collective.AllToAllStartOp, xs, [future], props)
                return FutureVal(op.results[0])
            outs = [
                e.collective(collective.AllToAllOp, [x], [rt], props).results[0]
                for x, rt in zip(xs, rtypes, strict=False)
            ]
            return TupleVal(outs) if instr.shape.is_tuple() else outs[0]
        # tuple form: operand j goes to rank j; result j came from rank j
        if len(xs) != size:
            raise self.error(
                instr.pos,
                f"a tuple all-to-all of {len(xs)} operands needs groups of {len(xs)}, got {size}",
            )
        self.stats.constructs["tuple all-to-all"] += 1
        first = xs[0].type
        assert isinstance(first, TensorType)
        if any(x.type != first for x in xs):
            raise self.error(
                instr.pos, "tuple all-to-all operands of different types are not supported"
            )
        shape = list(first.get_shape())
        lead = [1] + shape
        stacked = [e.reshape(x, TensorType(first.element_type, lead)) for x in xs]
        cat = e.value(hlo.ConcatenateOp(stacked, 0))
        props = {"split_dim": i64_attr(0), "concat_dim": i64_attr(0), **self.group_props(groups)}
        moved = e.collective(collective.AllToAllOp, [cat], [cat.type], props).results[0]
        outs = []
        for j in range(size):
            part = e.slice(moved, [j] + [0] * len(shape), [j + 1] + shape)
            outs.append(e.reshape(part, first))
        return TupleVal(outs)

    def permute(
        self, instr: Instr, xs: list[SSAValue], rtypes: list[TensorType], start: bool
    ) -> Value:
        e = self.emit
        a = self.attr(instr, "source_target_pairs")
        try:
            raw = hs.parse_replica_groups(a.text)
        except hs.ShardingSyntaxError as err:
            raise self.error(a.pos + err.offset, f"bad source_target_pairs: {err}") from None
        if any(len(p) != 2 for p in raw):
            raise self.error(a.pos, "source_target_pairs must be pairs")
        mode = "cross_partition" if "channel_id" in instr.attrs else "cross_replica"
        pairs: list[tuple[int, int]] = []
        outer = range(self.replicas) if mode == "cross_partition" else range(self.partitions)
        for o in outer:
            for s, t in raw:
                if mode == "cross_partition":
                    pairs.append((o * self.partitions + s, o * self.partitions + t))
                else:
                    pairs.append((s * self.partitions + o, t * self.partitions + o))
        for s, t in pairs:
            if not (0 <= s < self.devices and 0 <= t < self.devices):
                raise self.error(
                    a.pos, f"source_target_pairs name device {max(s, t)} of {self.devices}"
                )
        groups, rank_pairs = permute_groups(pairs, self.devices)
        props: dict[str, Attribute] = dict(self.group_props(groups))
        k = shift_of(rank_pairs, len(groups[0]))
        if k is not None:
            props["shift"] = i64_attr(k)
        else:
            props["pairs"] = ArrayAttr(i64_array(list(p)) for p in rank_pairs)
        if len(xs) != 1:
            raise self.error(instr.pos, "collective-permute of several operands is not supported")
        if start:
            op = e.collective(
                collective.PermuteStartOp, xs, [collective.FutureType([xs[0].type])], props
            )  # pyright: ignore
            return FutureVal(op.results[0])
        return e.collective(collective.PermuteOp, xs, [xs[0].type], props).results[0]

    def done(self, instr: Instr, v: Value) -> Value:
        if not isinstance(v, FutureVal):
            raise self.error(
                instr.operands[0].pos, f"{instr.opcode} expects the result of an async start"
            )
        if v.future is None:
            return TupleVal(v.values) if len(v.values) != 1 else v.values[0]
        done = self.emit.add(collective.DoneOp(v.future))
        results = list(done.results)
        return TupleVal(results) if v.tuple_result else results[0]

    def future_element(self, instr: Instr, v: FutureVal, index: int) -> Value:
        raise self.error(
            instr.pos,
            "get-tuple-element of an async start: only its -done may use it",
        )

    def async_start(self, instr: Instr, env: dict[str, Value]) -> Value:
        """`async-start(...), calls=%c`: a `_start` collective if %c is one collective of
        its parameters, else %c inlined (run synchronously; `async-done` returns it)."""
        comp = self.called(instr, "calls")
        args = self.operands(instr, env)
        root = comp.root
        names = root.operand_names()
        if (
            root.opcode in COLLECTIVES
            and len(args) == len([i for i in comp.instrs if i.opcode == "parameter"])
            and all(n in comp.by_name and comp.by_name[n].opcode == "parameter" for n in names)
        ):
            inner_args = [args[self.parameter_number(comp.by_name[n])] for n in names]
            self.emit.location = self.located(root.pos)
            self.stats.ops[root.opcode] += 1
            value = self.collective(root, root.opcode, inner_args, start=True)
            self.stats.constructs["async-start/async-done"] += 1
            return value if isinstance(value, FutureVal) else FutureVal(None, [value])
        value = self.inline(instr, comp, args)
        return FutureVal(None, [value])


def _layout(layout: list[int] | None, rank: int) -> list[int]:
    if layout is None or len(layout) != rank:
        return list(range(rank - 1, -1, -1))
    return layout


def permute_groups(
    pairs: list[tuple[int, int]], n: int
) -> tuple[list[list[int]], list[tuple[int, int]]]:
    """
    The smallest equal groups that hold every pair with the same rank pairs in each
    (connected components, ranks in device order), else one group of all devices.
    """
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for s, t in pairs:
        parent[find(s)] = find(t)
    comps: dict[int, list[int]] = {}
    for d in range(n):
        comps.setdefault(find(d), []).append(d)
    groups = sorted(comps.values())
    if len({len(g) for g in groups}) == 1 and len(groups) > 1:
        rank = {d: (gi, g.index(d)) for gi, g in enumerate(groups) for d in g}
        per: list[set[tuple[int, int]]] = [set() for _ in groups]
        for s, t in pairs:
            per[rank[s][0]].add((rank[s][1], rank[t][1]))
        if all(p == per[0] for p in per):
            return groups, sorted(per[0])
    return [list(range(n))], sorted(pairs)


_MESH_AXIS = re.compile(r"'([^']*)'|([A-Za-z_][\w.]*)")


def mesh_axes_groups(text: str) -> list[list[int]]:
    """
    `mesh['a'=2,'b'=4] {'a'}` (XLA's MeshAxesReplicaGroupList, optionally with
    `, device_ids=(...)` after the axes): devices that share every coordinate but the
    listed axes form a group, ranked row-major over the listed axes in their order.
    Sub-axes (`'a':(1)2`) split their axis as Shardy's sub-axes do.
    """
    m = re.match(
        r"\s*mesh\s*\[(.*?)\]\s*(?:,\s*device_ids\s*=\s*\((.*?)\))?\s*\{(.*)\}\s*$", text, re.S
    )
    if not m:
        raise hs.ShardingSyntaxError("expected mesh[axes] {group axes}")
    names: list[str] = []
    sizes: list[int] = []
    for part in m.group(1).split(","):
        if not part.strip():
            continue
        name, _, size = part.partition("=")
        names.append(name.strip().strip("'"))
        try:
            sizes.append(int(size))
        except ValueError:
            raise hs.ShardingSyntaxError(f"bad mesh axis '{part.strip()}'") from None
    n = math.prod(sizes)
    if m.group(2):
        ids_text = m.group(2).strip()
        if "<=" in ids_text:
            dims = [int(x) for x in re.findall(r"-?\d+", ids_text.split("<=")[0])]
            rest = ids_text.split("<=")[1]
            reshape = [int(x) for x in re.findall(r"-?\d+", rest.split("T")[0])]
            perm = (
                [int(x) for x in re.findall(r"-?\d+", rest.split("T")[1])] if "T" in rest else None
            )
            devices = hs.iota_tile_assignment(dims, reshape, perm).reshape(sizes)
        else:
            devices = np.array([int(x) for x in re.findall(r"-?\d+", ids_text)]).reshape(sizes)
    else:
        devices = np.arange(n).reshape(sizes)
    # expand sub-axes: axis i becomes [pre, size, rest] when a sub-axis of it is named
    group_axes: list[tuple[int, int | None, int | None]] = []
    for item in [s.strip() for s in m.group(3).split(",") if s.strip()]:
        sm = re.match(r"'?([^':]+)'?(?::\((\d+)\)(\d+))?$", item)
        if not sm or sm.group(1) not in names:
            raise hs.ShardingSyntaxError(f"unknown mesh axis {item}")
        i = names.index(sm.group(1))
        pre = int(sm.group(2)) if sm.group(2) else None
        sub = int(sm.group(3)) if sm.group(3) else None
        group_axes.append((i, pre, sub))
    split_shape: list[int] = []
    where: dict[tuple[int, int | None], int] = {}
    subs = {i: (pre, sub) for i, pre, sub in group_axes if pre is not None}
    for i, size in enumerate(sizes):
        if i in subs:
            pre, sub = subs[i]
            assert pre is not None and sub is not None
            if size % (pre * sub):
                raise hs.ShardingSyntaxError(
                    f"sub-axis ({pre}){sub} does not divide axis {names[i]}={size}"
                )
            where[(i, pre)] = len(split_shape) + 1
            split_shape += [pre, sub, size // (pre * sub)]
        else:
            where[(i, None)] = len(split_shape)
            split_shape.append(size)
    expanded = devices.reshape(split_shape)
    grouped = [where[(i, pre)] for i, pre, _ in group_axes]
    others = [d for d in range(len(split_shape)) if d not in grouped]
    arr = expanded.transpose(others + grouped)
    group_size = math.prod(split_shape[d] for d in grouped)
    return arr.reshape(-1, group_size).tolist()


def per_device_inputs(
    function: func.FuncOp, arrays: Sequence[np.ndarray], devices: int
) -> dict[str, np.ndarray]:
    """
    `in_K.D` arrays for an imported per-device function from global arrays: argument K
    is split as its `mhlo.sharding` attribute says (replicated if it has none).
    """
    attrs = function.arg_attrs.data if function.arg_attrs is not None else []
    out: dict[str, np.ndarray] = {}
    for k, array in enumerate(arrays):
        sharding = None
        if k < len(attrs):
            s = attrs[k].data.get("mhlo.sharding")  # pyright: ignore
            if isinstance(s, StringAttr):
                sharding = hs.parse_hlo_sharding(s.data)
        for d, part in enumerate(hs.split_global(np.asarray(array), sharding, devices)):
            out[f"in_{k}.{d}"] = part
    return out


def global_outputs(
    outputs: dict[str, np.ndarray],
    shardings: Sequence[str | None],
    global_shapes: Sequence[Sequence[int]],
    devices: int,
) -> list[np.ndarray]:
    """Global arrays from `out_K.D` arrays, given each result's HloSharding string."""
    result = []
    for k, (text, shape) in enumerate(zip(shardings, global_shapes, strict=False)):
        sharding = hs.parse_hlo_sharding(text) if text else None
        parts = [outputs[f"out_{k}.{d}"] for d in range(devices)]
        result.append(hs.assemble_global(parts, sharding, shape))
    return result


def import_hlo_text(text: str, filename: str = "<hlo>") -> ImportResult:
    """Import XLA HLO module text; any problem is one located `DiagnosticError`."""
    return HloTextImporter(text, filename).run()


def looks_like_hlo_text(text: str) -> bool:
    """True for HLO module text (`HloModule name, ...`), as opposed to MLIR."""
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("//"):
            continue
        return s.startswith("HloModule")
    return False


__all__ = [
    "global_outputs",
    "import_hlo_text",
    "looks_like_hlo_text",
    "mesh_axes_groups",
    "per_device_inputs",
    "permute_groups",
]
