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
* `while` and `conditional` as `hlo.while` / `hlo.case` (`hlo_text_control`: a tuple
  carried value flattened);
* `partition-id` / `replica-id` from `spmd.axis_index`; `bitcast` as the reshape (and
  transposes) that its layouts imply, `copy` as the identity (it changes layouts only).

Element types: f32, bf16, f16, f64, f8e4m3fn, f8e5m2, s64 s32 s16 s8 s4 s2 (i64 ... i2),
u64 u32 u16 u8 u4 u2 (ui64 ... ui2), c64 c128 (complex<f32/f64>), pred (i1) (a u32
partition id is computed in i32 and converted): anything else is an error.
Any problem is one located diagnostic; lark's syntax errors say what was expected.

**Where the parts are.** This module is the driver: it reads the module
(`hlo_text_parse`), checks every opcode and attribute, evaluates the entry computation
from its ROOT (inlining calls, resolving tuples and async pairs) and converts each
instruction on arrays with the converter `hlo_text_ops.ARRAY_OPS` registers for its
opcode, and each collective with `hlo_text_collectives`. `hlo_text_source` is what those
converters see of the module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from lark.exceptions import UnexpectedInput
from shardc.diagnostics import DiagnosticError
from shardc.dialects import hlo, spmd
from shardc.frontends import hlo_sharding as hs
from shardc.frontends.common import MALFORMED, Emitter, ImportResult, ImportStats, make_function
from shardc.frontends.hlo_text_collectives import (
    ASYNC_DONES,
    ASYNC_STARTS,
    COLLECTIVES,
    convert_collective,
    done,
    future_element,
    mesh_axes_groups,
    permute_groups,
)
from shardc.frontends.hlo_text_control import (
    CONTROL_ATTRS,
    convert_conditional,
    convert_while,
)
from shardc.frontends.hlo_text_global import (
    GlobalShardings,
    boundary_attrs,
    control_predecessors,
    keep_order,
    leaf_shapes,
    reads_as_global,
    sharding_attrs,
    tuple_of,
)
from shardc.frontends.hlo_text_ops import (
    ARRAY_OPS,
    LEAVES,
    TUPLE_OPS,
    convert_array,
    custom_top_k,
)
from shardc.frontends.hlo_text_parse import Attr, Computation, Instr, Reader, parser, syntax_error
from shardc.frontends.hlo_text_shapes import ShapeError, infer_shape
from shardc.frontends.hlo_text_source import (
    COMMON_ATTRS,
    KNOWN_ATTRS,
    XLA_OPCODES,
    FutureVal,
    HloSource,
    TupleVal,
    Value,
)
from shardc.frontends.locations import hlo_metadata_location, with_origin
from shardc.parsing import verify_module
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Attribute, Block, Region, SSAValue

STRUCTURAL = {
    "parameter",
    "tuple",
    "get-tuple-element",
    "fusion",
    "call",
    "opt-barrier",
    "async-start",
    "async-done",
    "async-update",
    "copy-start",
    "copy-done",
    "custom-call",
}
"""Instructions the driver resolves itself (calls, tuples, async pairs)."""

PER_DEVICE_OPCODES = frozenset(COLLECTIVES | set(ASYNC_STARTS) | ASYNC_DONES)
"""Opcodes that make a module per-device (with `hlo_text_global.PARTITIONED_OPCODES`)."""

KNOWN_OPCODES = (
    set(ARRAY_OPS) | set(TUPLE_OPS) | STRUCTURAL | COLLECTIVES | set(ASYNC_STARTS) | ASYNC_DONES
) | set(CONTROL_ATTRS)

Env = dict[str, Value]


class HloTextImporter:
    """Converts HLO module text (its ENTRY computation) to a per-device `func.func`."""

    def __init__(self, text: str, filename: str, per_device: bool | None = None):
        self.text = text
        self.filename = filename
        self.per_device = per_device
        """True / False: read per device / at level G; None: decide from the module."""
        self.root: Instr | None = None
        """The entry computation's ROOT (its sharding is the results')."""
        self.shardings: GlobalShardings | None = None
        """At level G: the mesh and the `#spmd.sharding` of every `sharding=`."""
        self.reader = Reader(text, filename)
        self.stats = ImportStats("xla hlo text", level="S")
        self.block = Block()
        self.emit = Emitter(self.block)
        self.src = HloSource(self.reader, self.emit, self.stats)
        self.src.body_region = self.body_region
        self.depth = 0
        self.structural: dict[str, Callable[[Instr, Env], Value]] = {
            "parameter": self.unbound_parameter,
            "fusion": self.call,
            "call": self.call,
            "tuple": lambda instr, env: TupleVal(self.operands(instr, env)),
            "get-tuple-element": self.get_tuple_element,
            "opt-barrier": self.only_operand,
            "async-update": self.only_operand,
            "copy-start": lambda instr, env: FutureVal(
                None, [self.only_operand(instr, env)] * 2, tuple_result=True
            ),
            "copy-done": self.copy_done,
            "async-start": self.async_start,
            "async-done": lambda instr, env: done(self.src, instr, self.only_operand(instr, env)),
            "custom-call": self.custom_call,
            "while": lambda instr, env: convert_while(self, instr, env),
            "conditional": lambda instr, env: convert_conditional(self, instr, env),
        }

    def error(self, pos: int, message: str, length: int = 1) -> DiagnosticError:
        return self.reader.error(pos, message, length)

    def at(self, pos: int, instr: Instr | None = None) -> None:
        """The ops emitted next come from the text at `pos` (the instruction `instr`)."""
        metadata = instr.attrs.get("metadata") if instr is not None else None
        origin = hlo_metadata_location(metadata.text) if metadata is not None else None
        self.emit.location = with_origin(self.src.located(pos), origin)

    # entry ----------------------------------------------------------------------------------

    def run(self) -> ImportResult:
        try:
            tree = parser().parse(self.text + "\n")
        except UnexpectedInput as e:
            raise syntax_error(e, self.text, self.filename) from None
        header, comps = self.reader.module(tree)
        for c in comps:
            if c.name in self.src.computations:
                raise self.error(c.pos, f"computation {c.name} is defined twice")
            self.src.computations[c.name] = c
        self.src.partitions = self.header_int(header, "num_partitions")
        self.src.replicas = self.header_int(header, "replica_count")
        self.src.devices = self.src.partitions * self.src.replicas
        if self.src.devices > spmd.MAX_DEVICES:
            a = header.get("num_partitions") or header["replica_count"]
            raise self.error(
                a.pos,
                f"replica_count x num_partitions = {self.src.devices} devices; "
                f"shardc runs at most {spmd.MAX_DEVICES}",
            )
        for c in comps:
            for i in c.instrs:
                self.check_instruction(i)
        entries = [c for c in comps if c.entry]
        if len(entries) > 1:
            raise self.error(entries[1].pos, "the module has two ENTRY computations")
        if not comps:
            raise DiagnosticError(f"{self.filename}: error: the module has no computations")
        entry = entries[0] if entries else comps[-1]
        if reads_as_global(header, comps, PER_DEVICE_OPCODES, self.per_device):
            self.stats.level = "G"
            self.shardings = GlobalShardings(self.error, self.src.devices)
            params = self.entry_parameters(entry).values()
            mesh = self.shardings.build_mesh(sharding_attrs(params, comps))
            self.src.devices = mesh.device_count
        else:
            self.src.devices = max(self.src.devices, self.sharding_devices(comps))
            mesh = spmd.MeshAttr([("devices", self.src.devices)])
        function = self.convert_entry(entry)
        mesh_op = spmd.MeshOp("mesh", mesh)
        out = ModuleOp([mesh_op, function])
        mesh_op.location = out.location = self.src.located(0)  # from the module's header
        self.stats.devices = self.src.devices
        verify_module(out, filename=self.filename)
        return ImportResult(out, self.stats)

    def sharding_devices(self, comps: list[Computation]) -> int:
        """The devices the `sharding=` tile assignments name (when the header says none)."""
        if self.src.devices > 1:
            return 1
        shardings = GlobalShardings(self.error, 1)
        attrs = sharding_attrs((), comps)
        return max((hs.device_count(shardings.parse(a)) for a in attrs), default=1)

    def check_instruction(self, i: Instr) -> None:
        """An opcode shardc converts, with attributes it knows (else an error naming them)."""
        if i.opcode not in KNOWN_OPCODES:
            what = (
                f"HLO instruction '{i.opcode}' is not supported by shardc's HLO importer"
                if i.opcode in XLA_OPCODES
                else f"unknown HLO instruction '{i.opcode}': shardc's HLO importer "
                "does not support it"
            )
            raise self.error(i.opcode_pos, what, len(i.opcode))
        known = KNOWN_ATTRS.get(i.opcode, CONTROL_ATTRS.get(i.opcode, frozenset()))
        for key, a in i.attrs.items():
            if key not in known and key not in COMMON_ATTRS:
                at = self.text.rfind(key, 0, a.pos)
                raise self.error(
                    at if at >= 0 else a.pos,
                    f"unknown attribute '{key}' on {i.opcode}: shardc's HLO importer "
                    "does not support it",
                    len(key),
                )

    def header_int(self, header: dict[str, Attr], key: str) -> int:
        a = header.get(key)
        if a is None:
            return 1
        try:
            return max(1, int(a.text))
        except ValueError:
            raise self.error(a.pos, f"{key} must be an integer, got {a.text}") from None

    def convert_entry(self, entry: Computation) -> func.FuncOp:
        self.root = entry.root
        params = self.entry_parameters(entry)
        env: Env = {}
        arg_attrs: list[dict[str, Attribute]] = []
        for n in range(len(params)):
            p = params[n]
            if p.shape is None:
                raise self.error(p.opcode_pos, "parameter needs its shape written", 9)
            leaves = leaf_shapes(p.shape)
            args = [
                self.block.insert_arg(self.src.tensor_type(s), len(arg_attrs) + k)
                for k, s in enumerate(leaves)
            ]
            env[p.name] = tuple_of(p.shape, args) if p.shape.is_tuple() else args[0]
            if p.shape.is_tuple():
                self.stats.constructs["tuple parameter (flattened)"] += 1
            attrs = boundary_attrs(self.shardings, self.error, p.attrs.get("sharding"), args)
            if "sharding" in p.attrs:
                self.stats.constructs["parameter sharding="] += 1
            arg_attrs.extend(attrs)
        root = self.evaluate(entry, env)
        results = self.flatten(root, entry.root)
        self.at(entry.root.pos, entry.root)
        self.emit.add(func.ReturnOp(*results))
        res_attrs = boundary_attrs(
            self.shardings, self.error, entry.root.attrs.get("sharding"), results
        )
        if any(res_attrs):
            self.stats.constructs["ROOT sharding="] += 1
        f = make_function("main", self.block, [v.type for v in results], arg_attrs, res_attrs)
        if self.shardings is None:
            f.attributes[spmd.PER_DEVICE_IO_ATTR_NAME] = UnitAttr()
        f.location = self.src.located(entry.pos)
        return f

    def entry_parameters(self, entry: Computation) -> dict[int, Instr]:
        """The entry's `parameter(N)` instructions by N (which must be 0, 1, ...)."""
        params: dict[int, Instr] = {}
        for i in entry.instrs:
            if i.opcode == "parameter":
                n = self.src.parameter_number(i)
                if n in params:
                    raise self.error(i.pos, f"parameter({n}) is defined twice")
                params[n] = i
        if sorted(params) != list(range(len(params))):
            missing = min(set(range(len(params) + 1)) - set(params))
            raise self.error(entry.pos, f"the entry computation has no parameter({missing})")
        return params

    def flatten(self, value: Value, instr: Instr) -> list[SSAValue]:
        if isinstance(value, TupleVal):
            out: list[SSAValue] = []
            for v in value.items:
                out.extend(self.flatten(v, instr))
            return out
        if isinstance(value, FutureVal):
            raise self.error(instr.pos, "the ROOT is an unfinished async operation")
        return [value]

    # evaluation -----------------------------------------------------------------------------

    def evaluate(self, comp: Computation, env: Env) -> Value:
        """Convert the instructions the ROOT of `comp` needs; its value."""
        for instr in self.evaluation_order(comp, env):
            if instr.name in env:
                continue
            try:
                value = self.convert(instr, comp, env)
            except ValueError as e:  # the converters' own diagnostics (and numpy's)
                raise self.error(instr.pos, str(e)) from None
            except MALFORMED as e:  # what no check above foresaw: still located
                raise self.error(
                    instr.pos, f"malformed {instr.opcode} instruction ({type(e).__name__}: {e})"
                ) from None
            if self.shardings is not None and "sharding" in instr.attrs and instr is not self.root:
                leaves_ = self.flatten(value, instr)
                value = self.shardings.constrain(instr, value, leaves_, self.emit)
                self.stats.constructs["instruction sharding="] += 1
            if "control-predecessors" in instr.attrs:
                keep_order(instr, value, env)
                self.stats.constructs["control-predecessors"] += 1
            env[instr.name] = value
        return env[comp.root.name]

    def evaluation_order(self, comp: Computation, env: Env) -> list[Instr]:
        """The instructions ROOT needs: in text order when it defines before use (XLA
        prints post-order), else in depth-first order."""
        order: list[Instr] = []
        state: dict[str, int] = {}
        stack: list[tuple[Instr, bool]] = [(comp.root, False)]
        while stack:
            instr, finished = stack.pop()
            if finished:
                state[instr.name] = 2
                order.append(instr)
                continue
            if state.get(instr.name) == 2 or instr.name in env:
                continue
            if state.get(instr.name) == 1:
                raise self.error(instr.pos, f"%{instr.name} depends on itself")
            state[instr.name] = 1
            stack.append((instr, True))
            if instr.opcode in ("parameter", *LEAVES):
                continue
            deps = list(zip(instr.operands, instr.operand_names(), strict=False))
            deps += control_predecessors(instr)
            for o, name in deps:
                dep = comp.by_name.get(name)
                if dep is None:
                    raise self.error(o.pos, f"%{name} is not defined in {comp.name}", len(o.text))
                if state.get(name) != 2 and name not in env:
                    stack.append((dep, False))
        needed = {i.name for i in order}
        textual = [i for i in comp.instrs if i.name in needed]
        seen: set[str] = set(env)
        for i in textual:
            if i.opcode not in ("parameter", *LEAVES):
                before = i.operand_names() + [n for _, n in control_predecessors(i)]
                if any(n not in seen for n in before):
                    return order
            seen.add(i.name)
        return textual

    def operands(self, instr: Instr, env: Env) -> list[Value]:
        return [env[n] for n in instr.operand_names()]

    def only_operand(self, instr: Instr, env: Env) -> Value:
        (v,) = self.operands(instr, env)
        return v

    def arrays(self, instr: Instr, env: Env) -> list[SSAValue]:
        out = []
        for o, v in zip(instr.operands, self.operands(instr, env), strict=False):
            if not isinstance(v, SSAValue):
                raise self.error(
                    o.pos, f"{instr.opcode} expects an array operand, got a tuple or future"
                )
            out.append(v)
        return out

    def inline(self, instr: Instr, comp: Computation, args: list[Value]) -> Value:
        params: dict[int, Instr] = {}
        for i in comp.instrs:
            if i.opcode == "parameter":
                params[self.src.parameter_number(i)] = i
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

    def body_region(self, instr: Instr, comp: Computation, arg_types: list[Attribute]) -> Region:
        """`comp` inlined into a new block of `arg_types` ending in `hlo.return`."""
        block = Block(arg_types=arg_types)
        saved = self.emit.block, self.emit.location, self.src.comp
        self.emit.block = block
        try:
            value = self.inline(instr, comp, list(block.args))
            self.emit.add(hlo.ReturnOp(self.flatten(value, instr)))
        finally:  # the reduce itself is located at its own instruction again
            self.emit.block, self.emit.location, self.src.comp = saved
        return Region(block)

    # instructions ---------------------------------------------------------------------------

    def convert(self, instr: Instr, comp: Computation, env: Env) -> Value:
        op = instr.opcode
        self.stats.ops[op] += 1
        self.at(instr.pos, instr)
        if instr.shape is None and op != "parameter":
            try:
                instr.shape = infer_shape(instr, self.operands(instr, env))
            except ShapeError as e:
                raise self.error(instr.opcode_pos, str(e), len(op)) from None
            self.stats.constructs["inferred result shape"] += 1
        if op in self.structural:
            return self.structural[op](instr, env)
        if op in ASYNC_STARTS:
            operands = self.operands(instr, env)
            return convert_collective(self.src, instr, ASYNC_STARTS[op], operands, start=True)
        if op in ASYNC_DONES:
            return done(self.src, instr, self.only_operand(instr, env))
        if op in COLLECTIVES:
            return convert_collective(self.src, instr, op, self.operands(instr, env), start=False)
        xs = [] if op in LEAVES else self.arrays(instr, env)
        self.src.comp = comp
        try:
            return convert_array(self.src, instr, xs)
        except ValueError as e:
            raise self.error(instr.pos, str(e)) from None

    def unbound_parameter(self, instr: Instr, env: Env) -> Value:
        raise self.error(
            instr.pos, f"parameter({self.src.parameter_number(instr)}) has no argument"
        )

    def call(self, instr: Instr, env: Env) -> Value:
        """`fusion` / `call`: the called computation, inlined."""
        key = "calls" if instr.opcode == "fusion" else "to_apply"
        self.stats.constructs[f"{instr.opcode} (inlined)"] += 1
        return self.inline(instr, self.src.called(instr, key), self.operands(instr, env))

    def get_tuple_element(self, instr: Instr, env: Env) -> Value:
        v = self.only_operand(instr, env)
        index = self.src.int_attr(instr, "index")
        if isinstance(v, FutureVal):
            return future_element(self.src, instr, v, index)
        if not isinstance(v, TupleVal) or not 0 <= index < len(v.items):
            raise self.error(
                instr.pos, f"get-tuple-element index={index} of a non-tuple or out of range"
            )
        return v.items[index]

    def copy_done(self, instr: Instr, env: Env) -> Value:
        v = self.only_operand(instr, env)
        assert isinstance(v, FutureVal)
        return v.values[0]

    def custom_call(self, instr: Instr, env: Env) -> Value:
        """`custom-call`: XLA's CPU `TopK` (what `lax.top_k` compiles to) as hlo.top_k;
        any other target is an error naming it."""
        target = instr.attrs.get("custom_call_target")
        name = target.text.strip('"') if target else "?"
        if name == "TopK":
            self.src.comp = None
            try:
                return custom_top_k(self.src, instr, self.arrays(instr, env))
            except ValueError as e:
                raise self.error(instr.pos, str(e)) from None
        raise self.error(
            instr.opcode_pos, f'custom-call to "{name}" is not supported', len(instr.opcode)
        )

    def async_start(self, instr: Instr, env: Env) -> Value:
        """`async-start(...), calls=%c`: a `_start` collective if %c is one collective of
        its parameters, else %c inlined (run synchronously; `async-done` returns it)."""
        comp = self.src.called(instr, "calls")
        args = self.operands(instr, env)
        root = comp.root
        names = root.operand_names()
        if (
            root.opcode in COLLECTIVES
            and len(args) == len([i for i in comp.instrs if i.opcode == "parameter"])
            and all(n in comp.by_name and comp.by_name[n].opcode == "parameter" for n in names)
        ):
            inner_args = [args[self.src.parameter_number(comp.by_name[n])] for n in names]
            self.at(root.pos, root)
            self.stats.ops[root.opcode] += 1
            value = convert_collective(self.src, root, root.opcode, inner_args, start=True)
            self.stats.constructs["async-start/async-done"] += 1
            return value if isinstance(value, FutureVal) else FutureVal(None, [value])
        value = self.inline(instr, comp, args)
        return FutureVal(None, [value])


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


def import_hlo_text(
    text: str, filename: str = "<hlo>", per_device: bool | None = None
) -> ImportResult:
    """
    Import XLA HLO module text; any problem is one located `DiagnosticError`.
    `per_device`: True reads the module per device, False at level G; None decides from
    the module (`hlo_text_global.reads_as_global`).
    """
    try:
        return HloTextImporter(text, filename, per_device).run()
    except MALFORMED as e:  # outside any instruction's conversion (those are located)
        raise DiagnosticError(
            f"{filename}: error: cannot import this module ({type(e).__name__}: {e})"
        ) from None


def looks_like_hlo_text(text: str) -> bool:
    """True for HLO module text (`HloModule name, ...`), as opposed to MLIR."""
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("//"):
            continue
        return s.startswith("HloModule")
    return False


__all__ = [
    "HloTextImporter",
    "global_outputs",
    "import_hlo_text",
    "looks_like_hlo_text",
    "mesh_axes_groups",
    "per_device_inputs",
    "permute_groups",
]
