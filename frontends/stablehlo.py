"""
The StableHLO importer: the text `jax.jit(f, in_shardings=..., out_shardings=...)
.lower(*args).as_text()` prints, to `hlo` + `spmd` (+ `collective`).

```python
from shardc.frontends.stablehlo import import_stablehlo
result = import_stablehlo(text, "model.mlir")   # DiagnosticError on bad input
print(result.module); print(result.stats.summary())
```

**How the text is read.** With xDSL's own MLIR parser, extended by parse-only definitions
of the StableHLO / CHLO / sdy subset (`stablehlo_dialect.py`). JAX prints a mix of pretty
forms (each op its own syntax) and generic forms (collectives, regions); xDSL already reads
MLIR's lexical structure, types, `dense<...>` literals (incl. the hexadecimal `0xFF800000`
and bool forms), regions, `func.func` and attribute dictionaries, and reports errors with
locations. A separate grammar would have to re-implement all of that; the dialect
definitions only add the op-specific syntaxes, and an op nobody defined is a located parse
error naming it (never a silently dropped op). Debug locations (`loc(...)`, `#loc = ...`)
are blanked out first, keeping every line and column where it was.

**Level G (no shard_map).** Each op becomes its `hlo` op (StableHLO's dot_general is
`hlo.dot`, broadcast_in_dim `hlo.broadcast`, ...; precision configs are ignored); `reduce`
names its combiner, recognized from the region or `applies` (add / multiply / maximum /
minimum, and / or on i1); an init value other than the identity is combined after the
reduction; private functions reached by `func.call` are inlined; CHLO and the few
StableHLO ops without an `hlo` counterpart are expanded into `hlo` ops (`chlo.square` is
x*x, `chlo.erf` XLA's f32 rational approximation, `sign`, `clamp`, `is_finite`, `tan`,
`sinh`, `cosh`, `log_plus_one`, `exponential_minus_one`). Shardings:

* Shardy: `sdy.mesh` becomes `spmd.mesh` (same name, axes in the same order; a non-iota
  `device_ids` is an error); `#sdy.sharding` on arguments and results becomes
  `#spmd.sharding` with the same axes per dimension. An open dimension (`{?}`,
  `{"x", ?}`) keeps the axes it lists and is otherwise unannotated: shardc's propagation
  decides it. Priorities and `replicated={...}` (the default anyway) are dropped;
  `unreduced` is kept; sub-axes (`"x":(1)2`) are an error. `sdy.sharding_constraint`
  (and `sdy.reshard`) become `spmd.constraint`; a constraint that is open in every
  dimension and names no axis constrains nothing and is dropped.
* GSPMD: `mhlo.sharding` strings on arguments / results and `custom_call @Sharding`
  (which becomes `spmd.constraint`) are tile assignments over device ids; one mesh is
  built for all of them (`hlo_sharding.MeshBuilder`: axes `"a"`, `"b"`, ... such that
  every tile assignment is a set of mesh axes). `{replicated}` is replicated. `{maximal
  device=N}` is read as replicated: the value is the same global value, only its placement
  (one device) is lost, which changes cost, never results.

**shard_map (level S).** `sdy.manual_computation` (and GSPMD's `custom_call
@SPMDFullToShardShape` / `@SPMDShardToFullShape` around a called body) runs its body on
every device on local shapes, with StableHLO collectives inside. shardc has no op for a
manual region inside a global program, so a function that contains one is imported as a
*partitioned* (level S) function: its arguments and results take the local types of the
manual computation's `in_shardings` / `out_shardings` and keep them as `spmd.sharding`
(so `shardc-run` splits global inputs and assembles global outputs exactly as JAX does),
the body's ops become `hlo` ops and its collectives `collective` ops (`on @mesh[axes]`
when the replica groups are the groups of mesh axes, else `on groups [[...]]`;
`collective_permute` pairs become a `shift` or rank `pairs` on the matching axes). This is
exact when everything outside the manual computations only moves values in and out of
them: function arguments, constants (replicated), results of one manual computation
passed to another with the same sharding, and the function's results. Any other op
outside is an error naming it (it would need shardc to partition a mixed program).
Manual axes must be all mesh axes, or the others must appear in no in/out sharding (the
body is then replicated over them).

Replica groups follow XLA's group modes (`channel_handle` and `use_global_device_ids`,
see `hlo_sharding.participating_groups`) with `mhlo.num_replicas` x
`mhlo.num_partitions` devices.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from shardc.diagnostics import (
    DiagnosticError,
    caret_location,
    format_diagnostic,
    op_location,
    source_line,
)
from shardc.dialects import collective, hlo, spmd
from shardc.dialects.syntax import i64_array, i64_attr, splat_element, splat_elements
from shardc.frontends import hlo_sharding as hs
from shardc.frontends.common import (
    Emitter,
    ImportResult,
    ImportStats,
    check_tensor_type,
    is_bool,
    is_float,
    make_function,
    pairs_on_mesh,
    shift_of,
)
from shardc.frontends.stablehlo_dialect import (
    KeyValueAttr,
    OpaqueEnumAttr,
    SdyManualAxesAttr,
    SdyMeshAttr,
    SdyShardingAttr,
    SdyShardingPerValueAttr,
    make_import_context,
)
from shardc.parsing import parse_module, verify_module
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import Rewriter

# Op tables -------------------------------------------------------------------------------

BINARY = {
    "stablehlo.add": "add",
    "stablehlo.subtract": "sub",
    "stablehlo.multiply": "mul",
    "stablehlo.divide": "div",
    "stablehlo.maximum": "max",
    "stablehlo.minimum": "min",
    "stablehlo.power": "pow",
    "stablehlo.and": "and",
    "stablehlo.or": "or",
}
UNARY = {
    "stablehlo.negate": "neg",
    "stablehlo.exponential": "exp",
    "stablehlo.log": "log",
    "stablehlo.tanh": "tanh",
    "stablehlo.sqrt": "sqrt",
    "stablehlo.rsqrt": "rsqrt",
    "stablehlo.abs": "abs",
    "stablehlo.sine": "sin",
    "stablehlo.cosine": "cos",
    "stablehlo.logistic": "logistic",
    "stablehlo.not": "not",
}
REDUCER_KINDS = {
    "stablehlo.add": "add",
    "stablehlo.multiply": "mul",
    "stablehlo.maximum": "max",
    "stablehlo.minimum": "min",
}
BOOL_REDUCER_KINDS = {"stablehlo.or": "max", "stablehlo.and": "min"}

COMMON_ATTRS = frozenset({"mhlo.frontend_attributes", "result_accuracy"})
"""Attributes that change no value: ignored wherever they appear."""

KNOWN_ATTRS: dict[str, frozenset[str]] = {
    "stablehlo.constant": frozenset({"value"}),
    "stablehlo.iota": frozenset({"iota_dimension"}),
    "stablehlo.broadcast_in_dim": frozenset({"broadcast_dimensions"}),
    "stablehlo.transpose": frozenset({"permutation"}),
    "stablehlo.slice": frozenset({"start_indices", "limit_indices", "strides"}),
    "stablehlo.dynamic_slice": frozenset({"slice_sizes"}),
    "stablehlo.concatenate": frozenset({"dimension"}),
    "stablehlo.compare": frozenset({"comparison_direction", "compare_type"}),
    "stablehlo.dot_general": frozenset({"dot_dimension_numbers", "precision_config", "algorithm"}),
    "stablehlo.dot": frozenset({"precision_config"}),
    "stablehlo.reduce": frozenset({"dimensions", "applies"}),
    "stablehlo.custom_call": frozenset(
        {"call_target_name", "backend_config", "api_version", "mhlo.sharding", "has_side_effect"}
    ),
    "stablehlo.all_reduce": frozenset(
        {"replica_groups", "channel_handle", "use_global_device_ids"}
    ),
    "stablehlo.all_gather": frozenset(
        {"all_gather_dim", "replica_groups", "channel_handle", "use_global_device_ids"}
    ),
    "stablehlo.reduce_scatter": frozenset(
        {"scatter_dimension", "replica_groups", "channel_handle", "use_global_device_ids"}
    ),
    "stablehlo.all_to_all": frozenset(
        {"split_dimension", "concat_dimension", "split_count", "replica_groups", "channel_handle"}
    ),
    "stablehlo.collective_permute": frozenset({"source_target_pairs", "channel_handle"}),
    "sdy.sharding_constraint": frozenset({"sharding"}),
    "sdy.reshard": frozenset({"sharding"}),
    "sdy.manual_computation": frozenset({"in_shardings", "out_shardings", "manual_axes"}),
    "func.call": frozenset({"callee", "arg_attrs", "res_attrs", "no_inline"}),
}

TOPLEVEL_ELEMENTWISE = frozenset(
    set(BINARY)
    | set(UNARY)
    | {
        "stablehlo.convert",
        "stablehlo.compare",
        "stablehlo.select",
        "stablehlo.clamp",
        "stablehlo.sign",
        "stablehlo.is_finite",
        "stablehlo.exponential_minus_one",
        "stablehlo.log_plus_one",
        "stablehlo.tan",
        "stablehlo.xor",
        "stablehlo.remainder",
        "chlo.square",
        "chlo.sinh",
        "chlo.cosh",
        "chlo.tan",
        "chlo.erf",
        "chlo.erfc",
        "chlo.is_inf",
        "chlo.is_pos_inf",
        "chlo.is_neg_inf",
    }
)
"""Pointwise ops: outside a manual computation they run on local values as they are."""

LOCAL_ONLY = frozenset(
    {
        "stablehlo.all_reduce",
        "stablehlo.all_gather",
        "stablehlo.reduce_scatter",
        "stablehlo.all_to_all",
        "stablehlo.collective_permute",
    }
)

# XLA's f32 erf (xla/hlo/builder/lib/math.cc, ErfImpl32): x clamped to [-4, 4],
# x * P(x^2) / Q(x^2); absolute error below 5e-7 against JAX.
ERF_ALPHA = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
ERF_BETA = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)


# Locations ---------------------------------------------------------------------------------

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


# Attribute readers -------------------------------------------------------------------------


def ints(attr: Attribute) -> list[int]:
    if isinstance(attr, DenseArrayBase):
        return [int(v) for v in attr.get_values()]
    if isinstance(attr, DenseIntOrFPElementsAttr):
        values = [int(v) for v in attr.get_values()]
        count = math.prod(attr.get_shape())
        return values * count if len(values) == 1 and count > 1 else values  # a splat
    if isinstance(attr, ArrayAttr):
        return [int(a.value.data) if isinstance(a, IntegerAttr) else int(a.data) for a in attr.data]  # pyright: ignore
    if isinstance(attr, IntegerAttr):
        return [int(attr.value.data)]
    raise ValueError(f"expected a list of integers, got {attr}")


def one_int(attr: Attribute) -> int:
    if isinstance(attr, IntegerAttr):
        return int(attr.value.data)
    if isinstance(attr, IntAttr):
        return attr.data
    raise ValueError(f"expected an integer, got {attr}")


def enum_value(attr: Attribute) -> str:
    if isinstance(attr, OpaqueEnumAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    raise ValueError(f"expected an enum value, got {attr}")


def matrix(attr: Attribute) -> list[list[int]]:
    """A `dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>` as rows."""
    if not isinstance(attr, DenseIntOrFPElementsAttr):
        raise ValueError(f"expected a dense integer matrix, got {attr}")
    shape = attr.get_type().get_shape()
    values = [int(v) for v in attr.get_values()]
    if len(shape) != 2:
        raise ValueError(f"expected a rank-2 matrix, got shape {list(shape)}")
    if len(values) == 1 and shape[0] * shape[1] != 1:
        values = values * (shape[0] * shape[1])
    return [values[r * shape[1] : (r + 1) * shape[1]] for r in range(shape[0])]


def splat_value(attr: DenseIntOrFPElementsAttr) -> float | int | None:
    return splat_element(attr)  # reads one element, whatever the literal's size


# The importer -----------------------------------------------------------------------------


@dataclass
class View:
    """A global value of a level-S function: its local value and how it is split."""

    local: SSAValue | None
    sharding: spmd.ShardingAttr | None
    arg: int | None = None
    constant: bool = False
    declared: spmd.ShardingAttr | None = None
    """An argument's declared sharding (its layout unless a manual computation says)."""
    scalar: SSAValue | None = None
    """For a splat: its rank-0 value, broadcast to whatever layout a user needs."""
    global_type: TensorType | None = None


class StablehloImporter:
    def __init__(self, module: ModuleOp, filename: str):
        self.src = module
        self.filename = filename
        self.stats = ImportStats("stablehlo")
        self.functions: dict[str, func.FuncOp] = {}
        for op in module.body.block.ops:
            if isinstance(op, func.FuncOp):
                self.functions[op.sym_name.data] = op
        attrs = module.attributes
        self.partitions = self._module_int(attrs, "mhlo.num_partitions")
        self.replicas = self._module_int(attrs, "mhlo.num_replicas")
        self.devices = self.partitions * self.replicas
        self.mesh_name: str | None = None
        self.mesh: spmd.MeshAttr | None = None
        self.mode = "none"  # "sdy", "gspmd" or "none"
        self.mesh_builder: hs.MeshBuilder | None = None
        self.call_stack: list[str] = []
        self.block = Block()
        self.emit = Emitter(self.block)
        self._arg_values: dict[int, SSAValue] = {}

    @staticmethod
    def _module_int(attrs: dict[str, Attribute], key: str) -> int:
        a = attrs.get(key)
        if isinstance(a, IntegerAttr):
            return max(1, int(a.value.data))
        return 1

    # errors ------------------------------------------------------------------------------

    def error(self, op: Operation | None, message: str) -> DiagnosticError:
        loc = op_location(op) if op is not None else None
        pos = caret_location(loc) if loc is not None else None
        if pos is None:
            return DiagnosticError(f"{self.filename}: error: {message}")
        return DiagnosticError(format_diagnostic(pos, message))

    # entry -------------------------------------------------------------------------------

    def run(self) -> ImportResult:
        main = self.entry()
        self.detect_mode()
        out = ModuleOp([])
        if self.mesh is not None:
            assert self.mesh_name is not None
            out.body.block.add_op(spmd.MeshOp(self.mesh_name, self.mesh))
            self.emit.mesh_name, self.emit.mesh = self.mesh_name, self.mesh
        manual = any(
            op.name == "sdy.manual_computation"
            or (op.name == "stablehlo.custom_call" and _target(op) == "SPMDFullToShardShape")
            for op in self.src.walk()
        )
        if manual:
            function = self.convert_manual_main(main)
            self.stats.level = "S"
        else:
            function = self.convert_global_main(main)
        out.body.block.add_op(function)
        self.stats.devices = self.mesh.device_count if self.mesh else self.devices
        self.stats.source_format = {
            "sdy": "stablehlo (shardy)",
            "gspmd": "stablehlo (gspmd mhlo.sharding)",
            "none": "stablehlo",
        }[self.mode]
        verify_module(out, filename=self.filename)
        return ImportResult(out, self.stats)

    def entry(self) -> func.FuncOp:
        if "main" in self.functions:
            return self.functions["main"]
        public = [
            f
            for f in self.functions.values()
            if f.sym_visibility is None or f.sym_visibility.data == "public"
        ]
        if len(public) != 1:
            raise DiagnosticError(
                f"{self.filename}: error: expected a public @main function (found "
                f"{', '.join('@' + n for n in self.functions) or 'no functions'})"
            )
        return public[0]

    # mesh and shardings --------------------------------------------------------------------

    def detect_mode(self) -> None:
        meshes = [op for op in self.src.body.block.ops if op.name == "sdy.mesh"]
        gspmd_strings: list[tuple[Operation, str]] = []
        for op in self.src.walk():
            for attrs in _all_attr_dicts(op):
                s = attrs.get("mhlo.sharding")
                if isinstance(s, StringAttr):
                    gspmd_strings.append((op, s.data))
        if meshes and gspmd_strings:
            raise self.error(
                gspmd_strings[0][0],
                "the module mixes Shardy (sdy.mesh) and GSPMD (mhlo.sharding) "
                "shardings; export it with one of them",
            )
        if meshes:
            self.mode = "sdy"
            if len(meshes) > 1:
                raise self.error(
                    meshes[1],
                    "shardc programs have one mesh, this module declares several sdy.mesh",
                )
            m = meshes[0]
            self.stats.ops["sdy.mesh"] += 1
            generic = m.properties.get("mesh")
            if isinstance(generic, SdyMeshAttr):  # "sdy.mesh"() <{mesh = #sdy.mesh<...>}>
                m.properties["axis_names"] = generic.axis_names
                m.properties["axis_sizes"] = generic.axis_sizes
                if generic.device_ids.data:
                    m.properties["device_ids"] = generic.device_ids
                del m.properties["mesh"]
            if "axis_names" not in m.properties or not isinstance(
                m.properties.get("sym_name"), StringAttr
            ):
                raise self.error(m, "sdy.mesh needs a name and axes")
            names = [a.data for a in m.properties["axis_names"].data]  # pyright: ignore
            sizes = [a.data for a in m.properties["axis_sizes"].data]  # pyright: ignore
            if "device_ids" in m.properties:
                ids = ints(m.properties["device_ids"])
                if ids != list(range(len(ids))):
                    raise self.error(
                        m,
                        f"sdy.mesh with device_ids={ids} is not supported: shardc numbers "
                        "devices row-major over the mesh axes",
                    )
            if not names:
                raise self.error(m, "an empty sdy.mesh (maximal sharding) is not supported")
            for attrs in _all_attr_dicts(m):
                for k in attrs:
                    if k not in (
                        "sym_name",
                        "axis_names",
                        "axis_sizes",
                        "device_ids",
                        "stablehlo.mesh",
                    ):
                        raise self.error(m, f"unknown attribute '{k}' on sdy.mesh")
            self.mesh_name = m.properties["sym_name"].data  # pyright: ignore
            self.mesh = spmd.MeshAttr(list(zip(names, sizes, strict=False)))
            if self.devices > 1 and self.mesh.device_count != self.devices:
                raise self.error(
                    m,
                    f"sdy.mesh has {self.mesh.device_count} devices but the module says "
                    f"mhlo.num_partitions x mhlo.num_replicas = {self.devices}",
                )
            return
        if gspmd_strings:
            self.mode = "gspmd"
            self.stats.constructs["mhlo.sharding"] += len(gspmd_strings)
            builder = hs.MeshBuilder(self.devices)
            for op, text in gspmd_strings:
                sharding = self.parse_gspmd(op, text)
                if sharding.kind in ("tiled", "tuple") and self.devices == 1:
                    builder = hs.MeshBuilder(_device_count(sharding))
                    self.devices = builder.devices
                problem = builder.add(sharding)
                if problem is not None:
                    raise self.error(op, f'mhlo.sharding "{text}": {problem}')
            axes = builder.axes()
            if isinstance(axes, str):
                raise self.error(gspmd_strings[0][0], axes)
            self.mesh_builder = builder
            self.mesh_name = "mesh"
            self.mesh = spmd.MeshAttr(axes)
            return
        if self.devices > 1:
            self.mesh_name = "mesh"
            self.mesh = spmd.MeshAttr([("a", self.devices)])

    def parse_gspmd(self, op: Operation, text: str) -> hs.HloSharding:
        try:
            return hs.parse_hlo_sharding(text)
        except hs.ShardingSyntaxError as e:
            raise self.error_at_name(op, text, f'bad mhlo.sharding "{text}": {e}') from None

    def sdy_to_spmd(
        self, op: Operation, attr: Attribute, rank: int, what: str
    ) -> spmd.ShardingAttr | None:
        """An sdy sharding as `#spmd.sharding`; None when it constrains nothing."""
        if not isinstance(attr, SdyShardingAttr):
            raise self.error(op, f"{what}: expected a #sdy.sharding, got {attr}")
        if self.mesh is None or attr.mesh_name != self.mesh_name:
            raise self.error_at_name(
                op,
                "@" + attr.mesh_name,
                f"{what}: sharding names mesh @{attr.mesh_name}, which is not declared",
            )
        dims = attr.dim_axes
        if len(dims) != rank:
            raise self.error(
                op, f"{what}: sharding has {len(dims)} dimensions but the tensor has rank {rank}"
            )
        for d in dims + [attr.unreduced_axes]:
            for a in d:
                if ":" in a:
                    name, _, sub = a.partition(":")
                    raise self.error_at_name(
                        op,
                        f'"{name}":{sub}',
                        f'{what}: sub-axis "{name}":{sub} is not supported (shardc splits '
                        "a dimension by whole mesh axes)",
                    )
                if a not in self.mesh.names:
                    raise self.error_at_name(
                        op, f'"{a}"', f'{what}: mesh @{self.mesh_name} has no axis "{a}"'
                    )
        if any(attr.open_dims):
            self.stats.constructs["sdy open dimension"] += 1
        if all(attr.open_dims) and not any(dims) and not attr.unreduced_axes and rank:
            return None
        return spmd.ShardingAttr(self.mesh_name, dims, attr.unreduced_axes)  # pyright: ignore

    def gspmd_to_spmd(
        self, op: Operation, text: str, rank: int, what: str
    ) -> spmd.ShardingAttr | None | str:
        """A GSPMD sharding as `#spmd.sharding` (None: replicated); "manual" for {manual}."""
        s = self.parse_gspmd(op, text)
        if s.kind == "manual":
            return "manual"
        if s.kind in ("replicated", "maximal"):
            if s.kind == "maximal":
                self.stats.constructs["mhlo.sharding maximal (as replicated)"] += 1
            assert self.mesh_name is not None
            return spmd.ShardingAttr(self.mesh_name, [[] for _ in range(rank)])
        if s.kind != "tiled":
            raise self.error(op, f'{what}: a {s.kind} sharding "{text}" is not supported here')
        if "manual" in s.last_tile_dims:
            raise self.error(
                op,
                f'{what}: partially manual sharding "{text}" is not supported '
                "(shard_map must be manual over every mesh axis)",
            )
        if s.tile_rank != rank:
            raise self.error(
                op,
                f'{what}: sharding "{text}" has {s.tile_rank} tile dimensions but the '
                f"tensor has rank {rank}",
            )
        assert self.mesh_builder is not None and self.mesh_name is not None
        dims, _ = self.mesh_builder.dim_axes(s)
        return spmd.ShardingAttr(self.mesh_name, dims)

    def sharding_attr_of(
        self, op: Operation, attrs: dict[str, Attribute], rank: int, what: str
    ) -> spmd.ShardingAttr | None:
        """The sharding an argument / result attribute dictionary declares."""
        if "sdy.sharding" in attrs:
            self.stats.constructs["sdy.sharding"] += 1
            return self.sdy_to_spmd(op, attrs["sdy.sharding"], rank, what)
        s = attrs.get("mhlo.sharding")
        if isinstance(s, StringAttr):
            r = self.gspmd_to_spmd(op, s.data, rank, what)
            if r == "manual":
                raise self.error(op, f"{what}: {{manual}} sharding on a function boundary")
            return r  # pyright: ignore[reportReturnType]
        return None

    # level G ---------------------------------------------------------------------------------

    def convert_global_main(self, main: func.FuncOp) -> func.FuncOp:
        src_block = main.body.block
        for arg in src_block.args:
            self.check_type(main, arg.type, f"argument {arg.index} of @{main.sym_name.data}")
        block = self.block
        env: dict[SSAValue, SSAValue] = {}
        arg_attrs: list[dict[str, Attribute]] = []
        src_arg_attrs = _dicts(main.arg_attrs, len(src_block.args))
        for arg, attrs in zip(src_block.args, src_arg_attrs, strict=False):
            new = block.insert_arg(arg.type, len(block.args))
            env[arg] = new
            a: dict[str, Attribute] = {}
            sharding = self.sharding_attr_of(main, attrs, _rank(arg.type), f"argument {arg.index}")
            if sharding is not None:
                a[spmd.SHARDING_ATTR_NAME] = sharding
            self.check_function_attrs(main, attrs, f"argument {arg.index}")
            arg_attrs.append(a)
        results = self.convert_ops(src_block, env, local=False)
        res_attrs: list[dict[str, Attribute]] = []
        src_res_attrs = _dicts(main.res_attrs, len(results))
        for i, (v, attrs) in enumerate(zip(results, src_res_attrs, strict=False)):
            a = {}
            sharding = self.sharding_attr_of(main, attrs, _rank(v.type), f"result {i}")
            if sharding is not None:
                a[spmd.SHARDING_ATTR_NAME] = sharding
            self.check_function_attrs(main, attrs, f"result {i}")
            res_attrs.append(a)
        self.emit.location = op_location(main)
        self.emit.add(func.ReturnOp(*results))
        f = make_function("main", block, [v.type for v in results], arg_attrs, res_attrs)
        f.location = main.location
        return f

    def check_function_attrs(self, op: Operation, attrs: dict[str, Attribute], what: str) -> None:
        for k in attrs:
            if k in ("sdy.sharding", "mhlo.sharding") or k.split(".")[0] in (
                "jax",
                "mhlo",
                "tf",
                "sdy",
            ):
                continue
            raise self.error(op, f"unknown attribute '{k}' on {what}")

    # level S (shard_map) -----------------------------------------------------------------

    def convert_manual_main(self, main: func.FuncOp) -> func.FuncOp:
        if self.mesh is None:
            raise self.error(main, "a manual computation needs a mesh")
        src_block = main.body.block
        block = self.block
        views: dict[SSAValue, View] = {}
        arg_attrs_in = _dicts(main.arg_attrs, len(src_block.args))
        for arg, attrs in zip(src_block.args, arg_attrs_in, strict=False):
            self.check_type(main, arg.type, f"argument {arg.index} of @{main.sym_name.data}")
            self.check_function_attrs(main, attrs, "an argument")
            new = block.insert_arg(arg.type, len(block.args))
            declared = self.sharding_attr_of(main, attrs, _rank(arg.type), f"argument {arg.index}")
            views[arg] = View(None, None, arg=arg.index, declared=declared)
            self._arg_values[arg.index] = new
        env: dict[SSAValue, SSAValue] = {}
        pending: dict[SSAValue, spmd.ShardingAttr] = {}
        returned = self.convert_toplevel(src_block, views, env, pending)
        results: list[SSAValue] = []
        res_attrs: list[dict[str, Attribute]] = []
        for i, (value, ret_op) in enumerate(returned):
            view = views.get(value)
            if view is None:
                raise self.error(
                    ret_op,
                    f"result {i} is a per-device value returned without leaving the "
                    "manual computation",
                )
            if view.local is None and view.scalar is None:  # an argument returned untouched
                self.localize(view, view.declared, ret_op, value)
            if view.local is None:
                self.materialize(view, None, ret_op, value)
            assert view.local is not None
            results.append(view.local)
            a: dict[str, Attribute] = {}
            if view.sharding is not None and not view.sharding.is_replicated():
                a[spmd.SHARDING_ATTR_NAME] = view.sharding
            res_attrs.append(a)
        arg_attrs: list[dict[str, Attribute]] = []
        for arg in src_block.args:
            view = views[arg]
            if view.local is None:
                self.localize(view, view.declared, main, arg)
            a = {}
            if view.sharding is not None and not view.sharding.is_replicated():
                a[spmd.SHARDING_ATTR_NAME] = view.sharding
            arg_attrs.append(a)
        self.emit.location = op_location(main)
        self.emit.add(func.ReturnOp(*results))
        f = make_function("main", block, [v.type for v in results], arg_attrs, res_attrs)
        f.attributes[spmd.PARTITIONED_ATTR_NAME] = UnitAttr()
        f.location = main.location
        return f

    def local_type(self, ty: Attribute, sharding: spmd.ShardingAttr | None) -> TensorType:
        assert isinstance(ty, TensorType) and self.mesh is not None
        if sharding is None:
            return ty
        shape = ty.get_shape()
        for d, n in enumerate(shape):
            f = sharding.split_factor(d, self.mesh)
            if n % f:
                raise ValueError(
                    f"dimension {d} of size {n} is not divisible by {f}, the product of "
                    f"its mesh axes"
                )
        return TensorType(ty.element_type, sharding.local_shape(shape, self.mesh))

    def localize(
        self,
        view: View,
        sharding: spmd.ShardingAttr | None,
        op: Operation,
        value: SSAValue,
    ) -> SSAValue:
        """`view`'s local value under `sharding` (fixing an argument's split on first use)."""
        if sharding is not None and sharding.is_replicated():
            sharding = None
        if view.scalar is not None:
            return self.materialize(view, sharding, op, value)
        if view.local is None:
            assert view.arg is not None
            try:
                ty = self.local_type(value.type, sharding)
            except ValueError as e:
                raise self.error(op, f"argument {view.arg}: {e}") from None
            old = self._arg_values[view.arg]
            new = Rewriter.replace_value_with_new_type(old, ty)
            self._arg_values[view.arg] = new
            view.local, view.sharding = new, sharding
            return new
        current = view.sharding
        if current is not None and current.is_replicated():
            current = None
        if current != sharding:
            raise self.error(
                op,
                f"this value is split as {current or 'replicated'} but the manual "
                f"computation takes it as {sharding or 'replicated'}; shardc imports "
                "shard_map programs as per-device programs and does not reshard between "
                "manual computations",
            )
        return view.local

    def convert_toplevel(
        self,
        src_block: Block,
        views: dict[SSAValue, View],
        env: dict[SSAValue, SSAValue],
        pending: dict[SSAValue, spmd.ShardingAttr],
    ) -> list[tuple[SSAValue, Operation]]:
        """The ops of a level-S function outside its manual computations."""
        for op in src_block.ops:
            name = op.name
            self.emit.location = op_location(op)
            if name in ("func.return",):
                return [(v, op) for v in op.operands]
            if name == "sdy.manual_computation":
                self.stats.ops[name] += 1
                self.check_attrs(op)
                self.convert_manual_computation(op, views)
                continue
            if name == "stablehlo.custom_call" and (
                any(v in views for v in op.operands) or _target(op) == "SPMDShardToFullShape"
            ):
                self.stats.ops[name] += 1
                self.check_attrs(op)
                self.convert_boundary_call(op, views, env, pending)
                continue
            if name == "stablehlo.constant":
                views[op.results[0]] = self.toplevel_constant(op, env)
                continue
            if name == "stablehlo.broadcast_in_dim" and op.operands[0] in views:
                src = views[op.operands[0]]
                if src.scalar is not None and _rank(op.operands[0].type) == 0:
                    self.stats.ops[name] += 1
                    views[op.results[0]] = View(
                        None, None, scalar=src.scalar, global_type=op.results[0].type
                    )  # pyright: ignore
                    continue
            if name in TOPLEVEL_ELEMENTWISE and all(v in views for v in op.operands):
                self.toplevel_elementwise(op, views)
                continue
            if name in ("sdy.sharding_constraint", "sdy.reshard") and op.operands[0] in views:
                self.toplevel_constraint(op, views)
                continue
            if name == "func.call" and any(v in views for v in op.operands):
                self.stats.constructs["func.call (inlined)"] += 1
                callee = self.callee(op)
                inner_views = dict(views)
                inner_env = dict(env)
                for a, v in zip(callee.body.block.args, op.operands, strict=False):
                    if v in views:
                        inner_views[a] = views[v]
                    elif v in env:
                        inner_env[a] = env[v]
                self.call_stack.append(callee.sym_name.data)
                returned = self.convert_toplevel(callee.body.block, inner_views, inner_env, pending)
                self.call_stack.pop()
                for r, (v, _) in zip(op.results, returned, strict=False):
                    if v in inner_views:
                        views[r] = inner_views[v]
                    elif v in inner_env:
                        env[r] = inner_env[v]
                continue
            # any other op must be a per-device op on per-device values
            for v in op.operands:
                if v in views and not views[v].constant:
                    raise self.error(
                        op,
                        f"'{name}' outside the manual computation is not supported: shardc "
                        "imports a program with shard_map (sdy.manual_computation / "
                        "SPMDFullToShardShape) as a per-device program, and only moves "
                        "values into and out of manual computations around it",
                    )
            for v in op.operands:
                if v in views and v not in env:
                    env[v] = views[v].local  # pyright: ignore[reportArgumentType]
            results = self.convert_op(op, env, local=True)
            for r, v in zip(op.results, results, strict=False):
                env[r] = v
        raise self.error(None, "function without a return")

    def materialize(
        self, view: View, sharding: spmd.ShardingAttr | None, op: Operation, value: SSAValue
    ) -> SSAValue:
        """A splat view as a local value under `sharding` (a broadcast of its scalar)."""
        assert view.scalar is not None
        ty = view.global_type or value.type
        try:
            local = self.local_type(ty, sharding)
        except ValueError as e:
            raise self.error(op, str(e)) from None
        if local == view.scalar.type:
            return view.scalar
        return self.emit.broadcast(view.scalar, [], local)

    def toplevel_constant(self, op: Operation, env: dict[SSAValue, SSAValue]) -> View:
        self.stats.ops[op.name] += 1
        self.check_attrs(op)
        value = self.prop(op, "value")
        r = op.results[0]
        self.check_type(op, r.type, "the constant")
        if isinstance(value, DenseIntOrFPElementsAttr) and splat_value(value) is not None:
            ty = r.type
            assert isinstance(ty, TensorType)
            scalar_ty = TensorType(ty.element_type, [])
            attr = splat_elements(scalar_ty, splat_value(value))  # pyright: ignore
            scalar = self.emit.value(hlo.ConstantOp(attr))
            return View(
                scalar if not ty.get_shape() else None,
                None,
                constant=True,
                scalar=scalar,
                global_type=ty,
            )
        results = self.convert_op(op, env, local=True)
        self.stats.ops[op.name] -= 1
        return View(results[0], None, constant=True)

    def toplevel_elementwise(self, op: Operation, views: dict[SSAValue, View]) -> None:
        """A pointwise op outside manual computations: the op on local values, when its
        operands share one layout (splats take any)."""
        layouts: list[spmd.ShardingAttr | None] = []
        for v in op.operands:
            view = views[v]
            if view.scalar is not None:
                continue
            if view.local is None:
                self.localize(view, view.declared, op, v)
            s = (
                view.sharding
                if view.sharding is not None and not view.sharding.is_replicated()
                else None
            )
            if s not in layouts:
                layouts.append(s)
        if len(layouts) > 1:
            raise self.error(
                op,
                f"'{op.name}' outside the manual computation combines values split as "
                f"{' and '.join(str(s or 'replicated') for s in layouts)}; shardc imports "
                "shard_map programs as per-device programs and does not reshard there",
            )
        sharding = layouts[0] if layouts else None
        env = {v: self.localize(views[v], sharding, op, v) for v in op.operands}
        self.stats.constructs["pointwise op outside shard_map"] += 1
        results = self.convert_op(op, env, local=True)
        for r, v in zip(op.results, results, strict=False):
            views[r] = View(v, sharding)

    def toplevel_constraint(self, op: Operation, views: dict[SSAValue, View]) -> None:
        self.stats.ops[op.name] += 1
        self.check_attrs(op)
        x = op.operands[0]
        view = views[x]
        want = self.sdy_to_spmd(op, self.prop(op, "sharding"), _rank(x.type), op.name)
        if want is None:  # open everywhere: constrains nothing
            views[op.results[0]] = view
            return
        if view.scalar is not None:
            local = self.materialize(view, want, op, x)
            views[op.results[0]] = View(local, want)
            return
        if view.local is None:
            self.localize(view, want, op, x)
        self.localize(view, want, op, x)  # the same layout, or an error saying it differs
        views[op.results[0]] = view

    def convert_manual_computation(self, op: Operation, views: dict[SSAValue, View]) -> None:
        assert self.mesh is not None
        manual = [a.data for a in _axes_list(self.prop(op, "manual_axes"))]
        free = [a for a in self.mesh.names if a not in manual]
        in_sh = _sharding_list(self.prop(op, "in_shardings"))
        out_sh = _sharding_list(self.prop(op, "out_shardings"))
        for s in in_sh + out_sh:
            assert isinstance(s, SdyShardingAttr)
            used = {a.split(":")[0] for d in s.dim_axes for a in d} | set(s.unreduced_axes)
            if free and used & set(free):
                raise self.error(
                    op,
                    f"manual_axes={{{', '.join(manual)}}} leaves mesh axes "
                    f"{free} free and a sharding splits over them: partially manual "
                    "computations are not supported",
                )
        if free:
            self.stats.constructs["manual computation replicated over free axes"] += 1
        if len(in_sh) != len(op.operands) or len(out_sh) != len(op.results):
            raise self.error(op, "in_shardings / out_shardings do not match the operands / results")
        body = op.regions[0].block
        inner: dict[SSAValue, SSAValue] = {}
        for i, (v, s, barg) in enumerate(zip(op.operands, in_sh, body.args, strict=False)):
            if v not in views:
                raise self.error(op, f"operand {i} is not a global value")
            sharding = self.sdy_to_spmd(op, s, _rank(v.type), f"in_shardings[{i}]")
            local = self.localize(views[v], sharding, op, v)
            if local.type != barg.type:
                raise self.error(
                    op,
                    f"operand {i}: the body takes {barg.type} but {v.type} split as "
                    f"{sharding or 'replicated'} is {local.type} per device",
                )
            inner[barg] = local
        self.stats.constructs["shard_map (manual computation)"] += 1
        results = self.convert_ops(body, inner, local=True)
        for i, (r, v, s) in enumerate(zip(op.results, results, out_sh, strict=False)):
            sharding = self.sdy_to_spmd(op, s, _rank(r.type), f"out_shardings[{i}]")
            try:
                want = self.local_type(r.type, sharding)
            except ValueError as e:
                raise self.error(op, f"result {i}: {e}") from None
            if want != v.type:
                raise self.error(
                    op,
                    f"result {i}: the body returns {v.type} but {r.type} split as "
                    f"{sharding or 'replicated'} is {want} per device",
                )
            views[r] = View(v, sharding)

    def convert_boundary_call(
        self,
        op: Operation,
        views: dict[SSAValue, View],
        env: dict[SSAValue, SSAValue],
        pending: dict[SSAValue, spmd.ShardingAttr],
    ) -> None:
        """GSPMD's @Sharding / @SPMDFullToShardShape on a global value."""
        target = _target(op)
        text = _gspmd_string(op)
        if len(op.operands) != 1 or len(op.results) != 1:
            raise self.error(op, f"custom_call @{target} takes one operand")
        (x,) = op.operands
        (r,) = op.results
        rank = _rank(x.type)
        if target == "SPMDShardToFullShape":
            if x not in env:
                raise self.error(op, "@SPMDShardToFullShape of a value that is not per-device")
            s = self.gspmd_to_spmd(
                op, text or "{replicated}", _rank(r.type), "@SPMDShardToFullShape"
            )
            if s == "manual":
                raise self.error(op, "@SPMDShardToFullShape to a {manual} sharding")
            sharding = s if isinstance(s, spmd.ShardingAttr) and not s.is_replicated() else None
            try:
                want = self.local_type(r.type, sharding)
            except ValueError as e:
                raise self.error(op, str(e)) from None
            if want != x.type:
                raise self.error(
                    op,
                    f"{r.type} split as {sharding or 'replicated'} is {want} per device, "
                    f"but the shard is {x.type}",
                )
            views[r] = View(env[x], sharding)
            return
        if target == "Sharding":
            s = self.gspmd_to_spmd(op, text or "{replicated}", rank, "@Sharding")
            if s == "manual":
                raise self.error(op, "@Sharding {manual} on a global value")
            views[r] = views[x]
            if s is not None:
                pending[r] = s  # pyright: ignore[reportArgumentType]
            return
        if target == "SPMDFullToShardShape":
            sharding = pending.get(x)
            if sharding is None and views[x].local is None:
                sharding = views[x].declared
            local = self.localize(views[x], sharding, op, x)
            if local.type != r.type:
                raise self.error(
                    op,
                    f"the shard shape {r.type} differs from {x.type} split as "
                    f"{sharding or 'replicated'} ({local.type})",
                )
            self.stats.constructs["shard_map (SPMDFullToShardShape)"] += 1
            env[r] = local
            return
        raise self.error(op, f"custom_call @{target} on a global value is not supported")

    # ops -----------------------------------------------------------------------------------

    def callee(self, op: Operation) -> func.FuncOp:
        callee = _get(op, "callee")
        name = callee.root_reference.data  # pyright: ignore
        if name not in self.functions:
            raise self.error(op, f"call to @{name}, which the module does not define")
        if name in self.call_stack:
            raise self.error(op, f"recursive call to @{name}")
        f = self.functions[name]
        if not f.body.blocks:
            raise self.error(op, f"call to the external function @{name}")
        return f

    def convert_ops(
        self, src_block: Block, env: dict[SSAValue, SSAValue], local: bool
    ) -> list[SSAValue]:
        """Convert a block's ops; the values its terminator returns."""
        for op in src_block.ops:
            if op.name in ("func.return", "stablehlo.return", "sdy.return"):
                try:
                    return [env[v] for v in op.operands]
                except KeyError:
                    raise self.error(op, "returns a value defined outside its body") from None
            results = self.convert_op(op, env, local)
            for r, v in zip(op.results, results, strict=False):
                env[r] = v
        raise self.error(None, "a block without a terminator")

    def check_type(self, op: Operation, ty: Attribute, what: str) -> TensorType:
        try:
            return check_tensor_type(ty, what)
        except ValueError as e:
            raise self.error(op, str(e)) from None

    def check_attrs(self, op: Operation) -> None:
        known = KNOWN_ATTRS.get(op.name, frozenset())
        for k in list(op.properties) + list(op.attributes):
            if k in known or k in COMMON_ATTRS or k in ("mhlo.sharding", "sdy.sharding"):
                continue
            raise self.error_at_name(op, k, f"unknown attribute '{k}' on {op.name}")

    def error_at_name(self, op: Operation, name: str, message: str) -> DiagnosticError:
        """An error at `name` as written in `op`'s text (else at the op)."""
        loc = op_location(op)
        pos = caret_location(loc) if loc is not None else None
        line = source_line(pos.filename.data, pos.line.data) if pos is not None else None
        if pos is not None and line is not None:
            at = line.find(name, pos.column.data - 1)
            if at >= 0:
                pos = FileLineColLoc(pos.filename, pos.line, IntAttr(at + 1))
                return DiagnosticError(format_diagnostic(pos, message, len(name)))
        return self.error(op, message)

    def prop(self, op: Operation, key: str) -> Attribute:
        a = _get(op, key)
        if a is None:
            raise self.error(op, f"{op.name} needs the attribute '{key}'")
        return a

    def convert_op(
        self, op: Operation, env: dict[SSAValue, SSAValue], local: bool
    ) -> list[SSAValue]:
        name = op.name
        self.stats.ops[name] += 1
        self.emit.location = op_location(op)
        self.check_attrs(op)
        if name == "func.call":
            self.stats.constructs["func.call (inlined)"] += 1
            callee = self.callee(op)
            inner = {a: env[v] for a, v in zip(callee.body.block.args, op.operands, strict=False)}
            self.call_stack.append(callee.sym_name.data)
            results = self.convert_ops(callee.body.block, inner, local)
            self.call_stack.pop()
            return results
        for i, v in enumerate(op.operands):
            self.check_type(op, v.type, f"operand {i} of {name}")
        for i, r in enumerate(op.results):
            self.check_type(op, r.type, f"result {i} of {name}")
        try:
            operands = [env[v] for v in op.operands]
        except KeyError:
            raise self.error(op, "uses a value from outside its region") from None
        if name in LOCAL_ONLY and not local:
            raise self.error(
                op,
                f"{name} outside a manual computation (shard_map): collectives need "
                "per-device values",
            )
        try:
            results = self.dispatch(op, name, operands, local)
        except ValueError as e:
            raise self.error(op, str(e)) from None
        if not local:
            results = self.result_constraints(op, results)
        return results

    def result_constraints(self, op: Operation, results: list[SSAValue]) -> list[SSAValue]:
        """`sdy.sharding` / `mhlo.sharding` on an op: constraints on its results."""
        sdy = op.attributes.get("sdy.sharding")
        if isinstance(sdy, SdyShardingPerValueAttr):
            out = []
            for i, (v, s) in enumerate(zip(results, sdy.shardings.data, strict=False)):
                sh = self.sdy_to_spmd(op, s, _rank(v.type), f"result {i}")
                out.append(self.emit.value(spmd.ConstraintOp(v, sh)) if sh else v)
            return out
        text = op.attributes.get("mhlo.sharding")
        if isinstance(text, StringAttr) and op.name != "stablehlo.custom_call":
            if len(results) != 1:
                raise self.error(op, "mhlo.sharding on an op with several results")
            sh = self.gspmd_to_spmd(op, text.data, _rank(results[0].type), "result")
            if isinstance(sh, spmd.ShardingAttr):
                return [self.emit.value(spmd.ConstraintOp(results[0], sh))]
        return results

    def dispatch(self, op: Operation, name: str, xs: list[SSAValue], local: bool) -> list[SSAValue]:
        e = self.emit
        rtypes = [r.type for r in op.results]
        if name in BINARY:
            return [e.binary(BINARY[name], *xs)]
        if name in UNARY:
            return [e.unary(UNARY[name], xs[0])]
        if name == "stablehlo.constant":
            value = self.prop(op, "value")
            if not isinstance(value, DenseIntOrFPElementsAttr):
                raise ValueError(f"expected a dense constant, got {value}")
            return [e.value(hlo.ConstantOp(value))]
        if name == "stablehlo.convert":  # the operand's (maybe local) shape
            shape = xs[0].type.get_shape()  # pyright: ignore
            return [e.convert(xs[0], TensorType(rtypes[0].element_type, shape))]  # pyright: ignore
        if name == "stablehlo.iota":
            dim = one_int(self.prop(op, "iota_dimension"))
            return [e.value(hlo.IotaOp(dim, rtypes[0]))]  # pyright: ignore
        if name == "stablehlo.broadcast_in_dim":
            dims = ints(self.prop(op, "broadcast_dimensions"))
            return [e.broadcast(xs[0], dims, rtypes[0])]  # pyright: ignore
        if name == "stablehlo.reshape":
            return [e.reshape(xs[0], rtypes[0])]  # pyright: ignore
        if name == "stablehlo.transpose":
            return [e.transpose(xs[0], ints(self.prop(op, "permutation")))]
        if name == "stablehlo.select":
            return [e.select(*xs)]
        if name == "stablehlo.compare":
            return [self.compare(op, xs)]
        if name == "stablehlo.slice":
            return [
                e.slice(
                    xs[0],
                    ints(self.prop(op, "start_indices")),
                    ints(self.prop(op, "limit_indices")),
                    ints(self.prop(op, "strides")),
                )
            ]
        if name == "stablehlo.dynamic_slice":
            idx = [e.convert(i, TensorType(i32, [])) for i in xs[1:]]
            sizes = ints(self.prop(op, "slice_sizes"))
            return [e.value(hlo.DynamicSliceOp(xs[0], idx, sizes))]
        if name == "stablehlo.dynamic_update_slice":
            idx = [e.convert(i, TensorType(i32, [])) for i in xs[2:]]
            return [e.value(hlo.DynamicUpdateSliceOp(xs[0], xs[1], idx))]
        if name == "stablehlo.concatenate":
            return [e.value(hlo.ConcatenateOp(xs, one_int(self.prop(op, "dimension"))))]
        if name == "stablehlo.dot_general":
            dn = self.prop(op, "dot_dimension_numbers")
            if not isinstance(dn, KeyValueAttr):
                raise ValueError(f"expected #stablehlo.dot<...>, got {dn}")
            d = {k: ints(v) for k, v in dn.get().items()}
            batching = (d.get("lhs_batching_dimensions", []), d.get("rhs_batching_dimensions", []))
            contracting = (
                d.get("lhs_contracting_dimensions", []),
                d.get("rhs_contracting_dimensions", []),
            )
            return [e.value(hlo.DotOp(xs[0], xs[1], contracting, batching, rtypes[0]))]  # pyright: ignore
        if name == "stablehlo.dot":
            lr, rr = _rank(xs[0].type), _rank(xs[1].type)
            if lr not in (1, 2) or rr not in (1, 2):
                raise ValueError("stablehlo.dot takes vectors or matrices")
            return [e.value(hlo.DotOp(xs[0], xs[1], ([lr - 1], [0]), ((), ()), rtypes[0]))]  # pyright: ignore
        if name == "stablehlo.reduce":
            return self.reduce(op, xs)
        if name == "stablehlo.optimization_barrier":
            return list(xs)
        if name == "stablehlo.custom_call":
            return self.custom_call(op, xs, local)
        if name in ("sdy.sharding_constraint", "sdy.reshard"):
            if local:
                raise ValueError(f"{name} inside a manual computation is not supported")
            sh = self.sdy_to_spmd(op, self.prop(op, "sharding"), _rank(xs[0].type), name)
            return [e.value(spmd.ConstraintOp(xs[0], sh))] if sh is not None else xs
        if name in LOCAL_ONLY:
            return self.collective(op, name, xs)
        return self.expand(op, name, xs, rtypes)

    def compare(self, op: Operation, xs: list[SSAValue]) -> SSAValue:
        direction = enum_value(self.prop(op, "comparison_direction"))
        if direction not in hlo.COMPARISON_DIRECTIONS:
            raise ValueError(f"unknown comparison direction {direction}")
        ctype_attr = _get(op, "compare_type")
        ctype = enum_value(ctype_attr) if ctype_attr is not None else "NOTYPE"
        elem = xs[0].type.element_type  # pyright: ignore
        if ctype == "TOTALORDER":
            raise ValueError(
                "compare type TOTALORDER (orders NaNs and -0.0) is not supported: "
                "hlo.compare compares floats as FLOAT"
            )
        if ctype == "UNSIGNED" and not is_bool(elem):
            raise ValueError("compare type UNSIGNED on signed integers is not supported")
        if ctype not in ("FLOAT", "SIGNED", "UNSIGNED", "NOTYPE"):
            raise ValueError(f"unknown compare type {ctype}")
        self.stats.constructs[f"compare {direction}"] += 1
        return self.emit.compare(direction, xs[0], xs[1])

    def reducer_kind(self, op: Operation, n: int, element: Attribute) -> str:
        """add / mul / max / min from `applies` or the reduction region."""
        applies = op.properties.get("applies")
        if isinstance(applies, StringAttr):
            body_ops = [applies.data]
        else:
            if not op.regions or not op.regions[0].blocks:
                raise ValueError(f"{op.name} has no reduction body")
            block = op.regions[0].block
            body = list(block.ops)
            if len(block.args) != 2 * n:
                raise ValueError(
                    f"the reduction body takes {len(block.args)} arguments, expected {2 * n}"
                )
            names = list(dict.fromkeys(o.name for o in body))
            if (
                n == 1
                and len(body) == 2
                and body[1].name in ("stablehlo.return",)
                and set(body[0].operands) == set(block.args)
                and len(body[0].operands) == 2
                and body[1].operands[0] is body[0].results[0]
            ):
                body_ops = [body[0].name]
            else:
                raise ValueError(
                    "the reduction body computes "
                    + ", ".join(names)
                    + "; shardc recognizes bodies that add, multiply, take the maximum or "
                    "the minimum of their two arguments"
                )
        kind = REDUCER_KINDS.get(body_ops[0])
        if kind is None and is_bool(element):
            kind = BOOL_REDUCER_KINDS.get(body_ops[0])
        if kind is None:
            raise ValueError(
                f"the reduction body applies {body_ops[0]}; shardc recognizes add, "
                "multiply, maximum and minimum (and, or on i1)"
            )
        return kind

    def reduce(self, op: Operation, xs: list[SSAValue]) -> list[SSAValue]:
        n = len(xs) // 2
        if n != 1:
            names = (
                list(dict.fromkeys(o.name for o in op.regions[0].block.ops))
                if op.regions and op.regions[0].blocks
                else []
            )
            raise ValueError(
                f"a reduce of {n} operands together (such as argmax; its body computes "
                f"{', '.join(names)}) is not supported: hlo.reduce reduces one operand"
            )
        x, init = xs
        elem = x.type.element_type  # pyright: ignore
        kind = self.reducer_kind(op, 1, elem)
        self.stats.constructs[f"reduce {kind}"] += 1
        dims = ints(self.prop(op, "dimensions"))
        init_src = op.operands[1].owner
        init_value = None
        if isinstance(init_src, Operation) and init_src.name == "stablehlo.constant":
            v = init_src.properties.get("value")
            if isinstance(v, DenseIntOrFPElementsAttr):
                init_value = splat_value(v)
                if is_bool(elem) and init_value is not None:
                    init_value = bool(init_value)
        return [self.emit.reduce(kind, x, dims, init, init_value)]

    def custom_call(self, op: Operation, xs: list[SSAValue], local: bool) -> list[SSAValue]:
        target = _target(op)
        text = _gspmd_string(op)
        if target == "Sharding":
            self.stats.constructs["custom_call @Sharding"] += 1
            if text is None:
                return xs
            sh = self.gspmd_to_spmd(op, text, _rank(xs[0].type), "@Sharding")
            if sh == "manual":
                if not local:
                    raise ValueError("@Sharding {manual} outside a manual computation")
                return xs
            if local:
                raise ValueError("@Sharding with a global sharding inside a manual computation")
            return [self.emit.value(spmd.ConstraintOp(xs[0], sh))]  # pyright: ignore
        if target == "SPMDShardToFullShape":
            raise ValueError(
                "@SPMDShardToFullShape must take the result of a manual computation and "
                "give a result of the function"
            )
        raise ValueError(f"custom_call @{target} is not supported")

    def groups(self, op: Operation, has_global_field: bool) -> list[list[int]]:
        rg = _get(op, "replica_groups")
        groups = matrix(rg) if rg is not None else []
        if any(d < 0 for g in groups for d in g):
            raise ValueError("replica groups of different sizes (padded with -1) are not supported")
        ch = _get(op, "channel_handle")
        has_channel = False
        if isinstance(ch, KeyValueAttr):
            handle = ch.get().get("handle")
            has_channel = handle is not None and one_int(handle) > 0
        use_global = (
            "use_global_device_ids" in op.properties or "use_global_device_ids" in op.attributes
        )
        mode = hs.group_mode(has_channel, use_global, has_global_field)
        self.stats.constructs[f"replica groups ({mode.replace('_', ' ')})"] += 1
        out = hs.participating_groups(groups, mode, self.replicas, self.partitions)
        assert self.mesh is not None
        problem = hs.check_partition(out, self.mesh.device_count)
        if problem is not None:
            raise ValueError(f"replica groups {out}: {problem}")
        return out

    def collective(self, op: Operation, name: str, xs: list[SSAValue]) -> list[SSAValue]:
        e = self.emit
        rtypes = [r.type for r in op.results]
        if name == "stablehlo.all_reduce":
            groups = self.groups(op, True)
            kind = self.reducer_kind(op, len(xs), xs[0].type.element_type)  # pyright: ignore
            props = {"kind": StringAttr(kind), **e.group_props(groups)}
            return list(e.collective(collective.AllReduceOp, xs, rtypes, props).results)
        if name == "stablehlo.all_gather":
            groups = self.groups(op, True)
            props = {
                "dim": i64_attr(one_int(self.prop(op, "all_gather_dim"))),
                **e.group_props(groups),
            }
            return list(e.collective(collective.AllGatherOp, xs, rtypes, props).results)
        if name == "stablehlo.reduce_scatter":
            groups = self.groups(op, True)
            kind = self.reducer_kind(op, len(xs), xs[0].type.element_type)  # pyright: ignore
            props = {
                "kind": StringAttr(kind),
                "dim": i64_attr(one_int(self.prop(op, "scatter_dimension"))),
                **e.group_props(groups),
            }
            return list(e.collective(collective.ReduceScatterOp, xs, rtypes, props).results)
        if name == "stablehlo.all_to_all":
            groups = self.groups(op, False)
            count = one_int(self.prop(op, "split_count"))
            if count != len(groups[0]):
                raise ValueError(
                    f"split_count {count} differs from the group size {len(groups[0])}"
                )
            props = {
                "split_dim": i64_attr(one_int(self.prop(op, "split_dimension"))),
                "concat_dim": i64_attr(one_int(self.prop(op, "concat_dimension"))),
                **e.group_props(groups),
            }
            out = []
            for x, rt in zip(xs, rtypes, strict=False):
                out.extend(e.collective(collective.AllToAllOp, [x], [rt], props).results)
            return out
        if name == "stablehlo.collective_permute":
            if self.replicas != 1:
                raise ValueError("collective_permute with several replicas is not supported")
            pairs = [tuple(p) for p in matrix(self.prop(op, "source_target_pairs"))]
            return [self.permute(xs[0], pairs)]  # pyright: ignore
        raise ValueError(f"unsupported collective {name}")

    def permute(self, x: SSAValue, pairs: list[tuple[int, int]]) -> SSAValue:
        e = self.emit
        assert self.mesh is not None and self.mesh_name is not None
        n = self.mesh.device_count
        for s, t in pairs:
            if not (0 <= s < n and 0 <= t < n):
                raise ValueError(f"source_target_pairs name device {max(s, t)} of {n}")
        found = pairs_on_mesh(self.mesh, pairs)
        if found is not None:
            axes, rank_pairs = found
            size = math.prod(self.mesh.axis_size(a) for a in axes)
            group = {
                "mesh": SymbolRefAttr(self.mesh_name),
                "mesh_axes": ArrayAttr(StringAttr(a) for a in axes),
            }
        else:
            rank_pairs = sorted(pairs)
            size = n
            group = {"groups": ArrayAttr([i64_array(list(range(n)))])}
        props: dict[str, Attribute] = dict(group)
        k = shift_of(rank_pairs, size)
        if k is not None:
            props["shift"] = i64_attr(k)
        else:
            props["pairs"] = ArrayAttr(i64_array(list(p)) for p in rank_pairs)
        self.stats.constructs[
            "collective_permute as " + ("shift" if k is not None else "pairs")
        ] += 1
        return e.collective(collective.PermuteOp, [x], [x.type], props).results[0]

    def expand(
        self, op: Operation, name: str, xs: list[SSAValue], rtypes: list[Attribute]
    ) -> list[SSAValue]:
        """StableHLO / CHLO ops without an `hlo` op of their own, in `hlo` ops."""
        e = self.emit
        x = xs[0] if xs else None
        if name == "chlo.square":
            return [e.binary("mul", x, x)]  # pyright: ignore
        if name in ("chlo.tan", "stablehlo.tan"):
            return [e.binary("div", e.unary("sin", x), e.unary("cos", x))]  # pyright: ignore
        if name in ("chlo.sinh", "chlo.cosh"):
            assert x is not None
            a, b = e.unary("exp", x), e.unary("exp", e.unary("neg", x))
            s = e.binary("sub" if name == "chlo.sinh" else "add", a, b)
            return [e.binary("mul", s, e.scalar_like(0.5, x))]
        if name in ("chlo.erf", "chlo.erfc"):
            assert x is not None
            y = self.erf(x)
            if name == "chlo.erfc":
                y = e.binary("sub", e.scalar_like(1.0, x), y)
            return [y]
        if name == "stablehlo.exponential_minus_one":
            return [e.binary("sub", e.unary("exp", x), e.scalar_like(1.0, x))]  # pyright: ignore
        if name == "stablehlo.log_plus_one":
            return [e.unary("log", e.binary("add", x, e.scalar_like(1.0, x)))]  # pyright: ignore
        if name == "stablehlo.is_finite":
            assert x is not None
            return [e.compare("LT", e.unary("abs", x), e.scalar_like(math.inf, x))]
        if name in ("chlo.is_inf", "chlo.is_pos_inf", "chlo.is_neg_inf"):
            assert x is not None
            if name == "chlo.is_inf":
                return [e.compare("EQ", e.unary("abs", x), e.scalar_like(math.inf, x))]
            inf = math.inf if name == "chlo.is_pos_inf" else -math.inf
            return [e.compare("EQ", x, e.scalar_like(inf, x))]
        if name == "stablehlo.sign":
            assert x is not None
            elem = x.type.element_type  # pyright: ignore
            zero = e.scalar_like(0, x)
            pos = e.select(
                e.compare("GT", x, zero), e.scalar_like(1, x), x if is_float(elem) else zero
            )
            return [e.select(e.compare("LT", x, zero), e.scalar_like(-1, x), pos)]
        if name == "stablehlo.clamp":
            lo, v, hi = xs
            lo, hi = e.broadcast_scalar(lo, v), e.broadcast_scalar(hi, v)
            return [e.binary("min", e.binary("max", v, lo), hi)]
        if name == "stablehlo.remainder":
            a, b = xs
            if is_float(a.type.element_type) or is_bool(a.type.element_type):  # pyright: ignore
                raise ValueError(
                    "stablehlo.remainder on floats is not supported (hlo has no trunc); "
                    "integers only"
                )
            # a - trunc(a / b) * b: hlo.div truncates toward zero, as StableHLO does
            return [e.binary("sub", a, e.binary("mul", e.binary("div", a, b), b))]
        if name == "stablehlo.xor":
            if not is_bool(xs[0].type.element_type):  # pyright: ignore
                raise ValueError("stablehlo.xor on integers is not supported (i1 only)")
            return [e.compare("NE", xs[0], xs[1])]
        raise ValueError(f"{name} is not supported by shardc's StableHLO importer")

    def erf(self, x: SSAValue) -> SSAValue:
        e = self.emit
        four = e.scalar_like(4.0, x)
        xc = e.binary("min", e.binary("max", x, e.unary("neg", four)), four)
        x2 = e.binary("mul", xc, xc)

        def poly(coeffs: Sequence[float]) -> SSAValue:
            p = e.scalar_like(coeffs[0], x)
            for c in coeffs[1:]:
                p = e.binary("add", e.binary("mul", p, x2), e.scalar_like(c, x))
            return p

        return e.binary("div", e.binary("mul", xc, poly(ERF_ALPHA)), poly(ERF_BETA))


def _axes_list(attr: Attribute) -> list[StringAttr]:
    if isinstance(attr, SdyManualAxesAttr):
        return list(attr.axes.data)
    return list(attr.data)  # pyright: ignore


def _sharding_list(attr: Attribute) -> list[Attribute]:
    if isinstance(attr, SdyShardingPerValueAttr):
        return list(attr.shardings.data)
    return list(attr.data)  # pyright: ignore


def _get(op: Operation, key: str) -> Attribute | None:
    a = op.properties.get(key)
    return a if a is not None else op.attributes.get(key)


def _target(op: Operation) -> str:
    t = _get(op, "call_target_name")
    return t.data if isinstance(t, StringAttr) else "?"


def _gspmd_string(op: Operation) -> str | None:
    s = op.attributes.get("mhlo.sharding")
    return s.data if isinstance(s, StringAttr) else None


def _rank(ty: Attribute) -> int:
    assert isinstance(ty, TensorType)
    return ty.get_num_dims()


def _dicts(attr: ArrayAttr | None, n: int) -> list[dict[str, Attribute]]:
    if attr is None:
        return [{} for _ in range(n)]
    return [dict(d.data) for d in attr.data]  # pyright: ignore


def _all_attr_dicts(op: Operation) -> list[dict[str, Attribute]]:
    out = [dict(op.attributes), dict(op.properties)]
    if isinstance(op, func.FuncOp):
        out += _dicts(op.arg_attrs, len(op.function_type.inputs.data))
        out += _dicts(op.res_attrs, len(op.function_type.outputs.data))
    return out


def _device_count(s: hs.HloSharding) -> int:
    if s.kind == "tiled" and s.devices is not None:
        return int(s.devices.size)
    if s.kind == "tuple":
        return max((_device_count(e) for e in s.elements), default=1)
    return 1


def import_stablehlo(text: str, filename: str = "<stablehlo>") -> ImportResult:
    """Import StableHLO text; any problem is one located `DiagnosticError`."""
    ctx = make_import_context()
    try:
        module = parse_module(ctx, strip_locations(text), filename)
    except DiagnosticError as e:
        raise DiagnosticError(_reword(str(e))) from None
    return StablehloImporter(module, filename).run()


_NOT_REGISTERED_OP = re.compile(
    r"error: (?:Operation (\S+) is not registered|unknown operation '(\S+)')$"
)
_NOT_REGISTERED_ATTR = re.compile(
    r"error: (?:'(\S+)' is not registered|unknown attribute or type '(\S+)')$"
)


def _reword(diagnostic: str) -> str:
    """Say which op / attribute shardc's importer does not know, in its own words."""
    first, _, rest = diagnostic.partition("\n")
    if m := _NOT_REGISTERED_OP.search(first):
        name = m.group(1) or m.group(2)
        first = first[: m.start()] + (
            f"error: unknown operation '{name}': shardc's StableHLO importer does not support it"
        )
    elif m := _NOT_REGISTERED_ATTR.search(first):
        name = m.group(1) or m.group(2)
        first = first[: m.start()] + (
            f"error: unknown attribute '{name}': shardc's StableHLO importer does not support it"
        )
    return first + ("\n" + rest if rest else "")


__all__ = ["import_stablehlo", "strip_locations", "StablehloImporter"]
