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
are blanked out first, keeping every line and column where it was, and read on the side
(`locations.py`): every op the importer creates has `location = FusedLoc([its source op's
FileLineColLoc, JAX's loc])` (the position alone when JAX wrote none).

**Level G (no shard_map).** Each op becomes its `hlo` op (StableHLO's dot_general is
`hlo.dot`, broadcast_in_dim `hlo.broadcast`, ...; precision configs are ignored); `reduce`
names its combiner, recognized from the region or `applies` (add / multiply / maximum /
minimum, and / or on i1); an init value other than the identity is combined after the
reduction; private functions reached by `func.call` are inlined, and so is a
`stablehlo.composite` (its `decomposition` function); CHLO and the few
StableHLO ops without an `hlo` counterpart are expanded into `hlo` ops (`chlo.square` is
x*x, `chlo.is_inf` a compare); `chlo.erf` / `erfc` / `erf_inv` / `sinh` / `cosh` / `tan` /
`asin` / `acos` / `atan` / `asinh` / `acosh` / `atanh` / `lgamma` / `digamma` and
StableHLO's rounding, remainder, clamp, sign, is_finite, expm1, log1p, atan2, cbrt and bit
ops have `hlo` ops of their own (`ELEMENTWISE_13` in `stablehlo_ops`). `stablehlo.while`,
`stablehlo.case` and `stablehlo.if` (a case on 1 - convert(pred)) become `hlo.while` /
`hlo.case`, their regions converted by the same converters (`convert_region`: a region's
ops may use the values around it). Shardings:

* Shardy: `sdy.mesh` becomes `spmd.mesh` (same name, axes in the same order; a non-iota
  `device_ids` is an error); `#sdy.sharding` on arguments and results becomes
  `#spmd.sharding` with the same axes per dimension. An open dimension (`{?}`,
  `{"x", ?}`) stays open in `#spmd.sharding` (same syntax): it keeps the axes it lists and
  `spmd-propagate` may extend it, as Shardy's propagation does; an argument or result
  without a sharding is written fully open (`[{?}, {?}]`), as Shardy reads it (in a GSPMD
  module it stays unannotated: replicated). Open dimensions of a manual computation's
  in/out shardings are closed as written. User priorities (`{"x"}p1`) are kept (in
  spmd's syntax) for `spmd-propagate`, except on a manual computation's in/out shardings;
  `replicated={...}` (the default anyway) is dropped;
  `unreduced` is kept; sub-axes (`"x":(1)2`) are an error. `sdy.sharding_constraint`
  (and `sdy.reshard`) become `spmd.constraint`; a constraint that is open in every
  dimension and names no axis constrains nothing and is dropped. Shardy's explicit
  collectives (`sdy.all_gather`, `all_slice`, `all_to_all`, `collective_permute`) only
  change a global value's sharding: `spmd.constraint` to their `out_sharding`;
  `sdy.all_reduce` the same on a value declared `unreduced` over its axes, an error on
  any other.
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

**shard_map inside auto-sharded code (level G).** When other ops run outside an
`sdy.manual_computation` (an auto-sharded matmul before a shard_map, say), or the level-S
import above refuses the program (a value it would have to reshard), the function
stays level G and each manual computation becomes `spmd.manual_computation` (in/out
shardings, manual axes, its body converted as per-device code), which `spmd-propagate` and
`spmd-partition` handle (`stablehlo_manual.manual_computation`). GSPMD's custom-call form
keeps the level-S import only.

Replica groups follow XLA's group modes (`channel_handle` and `use_global_device_ids`,
see `hlo_sharding.participating_groups`) with `mhlo.num_replicas` x
`mhlo.num_partitions` devices.

**Where the parts are.** This module is the driver: it parses the text, picks the level,
walks the functions and converts each op with the converter that `stablehlo_ops.OPS` /
`stablehlo_collectives.COLLECTIVES` register for its name. Reading the source IR is
`stablehlo_source`, shardings and the mesh `stablehlo_shardings`, manual computations
`stablehlo_manual`, the expansions shared with the HLO text importer `expansions`, and
JAX's `loc(...)` debug locations `locations`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from shardc.diagnostics import DiagnosticError, SourceText, caret_location, located_op
from shardc.dialects import hlo, spmd
from shardc.frontends.common import MALFORMED, Emitter, ImportResult, ImportStats, make_function
from shardc.frontends.locations import (
    JaxLocations,
    scan_locations,
    strip_locations,
    with_origin,
)
from shardc.frontends.stablehlo_collectives import COLLECTIVES
from shardc.frontends.stablehlo_dialect import SdyShardingPerValueAttr, make_import_context
from shardc.frontends.stablehlo_gspmd_manual import GspmdManualComputations
from shardc.frontends.stablehlo_manual import (
    ManualImporter,
    manual_computation,
    moves_values_only,
    shardings_name_free_axes,
)
from shardc.frontends.stablehlo_ops import OPS, OpContext
from shardc.frontends.stablehlo_shardings import SOURCE_FORMATS, ShardingConverter
from shardc.frontends.stablehlo_source import (
    CALLS,
    SourceErrors,
    attr_dicts,
    call_target,
    get_attr,
    rank,
)
from shardc.parsing import parse_module, verify_module
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, LocationAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue

Env = dict[SSAValue, SSAValue]


class StablehloImporter:
    """Converts a parsed StableHLO module (its public `main`) to shardc's IR."""

    def __init__(
        self,
        module: ModuleOp,
        text: SourceText,
        origins: JaxLocations | None = None,
        manual_level_g: bool = False,
    ):
        self.src = module
        self.manual_level_g = manual_level_g
        """Import every sdy.manual_computation at level G (else only where needed)."""
        self.text = text
        """The text `module` was parsed from (its ops' offsets, for JAX's locations)."""
        self.filename = text.name
        self.origins = origins
        """JAX's `loc(...)` of each source op (None: the text was read without them)."""
        self._locations: dict[Operation, LocationAttr | None] = {}
        self.errors = SourceErrors(self.filename)
        self.stats = ImportStats("stablehlo")
        self.functions: dict[str, func.FuncOp] = {}
        for op in module.body.block.ops:
            if isinstance(op, func.FuncOp):
                self.functions[op.sym_name.data] = op
        attrs = module.attributes
        self.partitions = _module_int(attrs, "mhlo.num_partitions")
        self.replicas = _module_int(attrs, "mhlo.num_replicas")
        if self.partitions * self.replicas > spmd.MAX_DEVICES:
            raise DiagnosticError(
                f"{self.filename}: error: mhlo.num_partitions x mhlo.num_replicas = "
                f"{self.partitions * self.replicas} devices; shardc runs at most "
                f"{spmd.MAX_DEVICES}"
            )
        self.shardings = ShardingConverter(self.errors, self.stats, self.partitions * self.replicas)
        self.call_stack: list[str] = []
        self.block = Block()
        self.emit = Emitter(self.block)
        self.cx = OpContext(self.emit, self.stats, self.shardings, self.replicas, self.partitions)
        self.cx.region = self.convert_region
        self.envs: list[Env] = []
        """The environments of the blocks being converted, innermost last."""
        self.gspmd_manual = GspmdManualComputations(self, self.errors)
        """GSPMD's shard_map chains (custom calls around a body call) met at level G."""

    def error(self, op: Operation | None, message: str) -> DiagnosticError:
        return self.errors.error(op, message)

    # entry -------------------------------------------------------------------------------

    def run(self) -> ImportResult:
        main = self.entry()
        self.shardings.detect(self.src)
        mesh, mesh_name = self.shardings.mesh, self.shardings.mesh_name
        out = ModuleOp([])
        self.locate(out, self.src)
        if mesh is not None:
            assert mesh_name is not None
            mesh_op = spmd.MeshOp(mesh_name, mesh)
            mesh_source = self.shardings.mesh_op
            self.locate(mesh_op, mesh_source if mesh_source is not None else self.src)
            out.body.block.add_op(mesh_op)
            self.emit.mesh_name, self.emit.mesh = mesh_name, mesh
        manual = any(
            op.name == "sdy.manual_computation"
            or (op.name == "stablehlo.custom_call" and call_target(op) == "SPMDFullToShardShape")
            for op in self.src.walk()
        )
        sdy_manual = any(op.name == "sdy.manual_computation" for op in self.src.walk())
        level_g = (sdy_manual or (manual and self.manual_level_g)) and (
            self.manual_level_g
            or not moves_values_only(main.body.block, self.functions)
            or shardings_name_free_axes(self.src)
        )
        if manual and not level_g:
            importer = ManualImporter(self.cx, self.errors, self, self.block)
            results, arg_attrs, res_attrs = importer.convert_main(main)
            function = self.finish_main(main, results, arg_attrs, res_attrs)
            function.attributes[spmd.PARTITIONED_ATTR_NAME] = UnitAttr()
            self.stats.level = "S"
        else:
            function = self.convert_global_main(main)
        out.body.block.add_op(function)
        self.stats.devices = mesh.device_count if mesh else self.shardings.devices
        self.stats.source_format = SOURCE_FORMATS[self.shardings.mode]
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

    def at(self, op: Operation) -> None:
        """The ops emitted next come from the source op `op`."""
        self.emit.location = self.location_of(op)

    def location_of(self, op: Operation) -> LocationAttr | None:
        """`op`'s position in the text, fused with JAX's location of it if the text has one."""
        if op not in self._locations:
            # (the module itself counts here: its location is the start of the text)
            located = op if caret_location(op.location) is not None else located_op(op)
            position = caret_location(located.location) if located is not None else None
            if located is None or position is None:
                self._locations[op] = None
            else:
                origin = None
                if self.origins is not None:
                    after = op.next_op
                    after_pos = caret_location(after.location) if after is not None else None
                    next_start = self.text.offset(after_pos) if after_pos is not None else None
                    origin = self.origins.after_op(self.text.offset(position), next_start)
                self._locations[op] = with_origin(position, origin)
        return self._locations[op]

    def locate(self, new: Operation, source: Operation) -> None:
        """`new` comes from `source` (for the ops not made through the emitter)."""
        if (location := self.location_of(source)) is not None:
            new.location = location

    def finish_main(
        self,
        main: func.FuncOp,
        results: list[SSAValue],
        arg_attrs: list[dict[str, Attribute]],
        res_attrs: list[dict[str, Attribute]],
    ) -> func.FuncOp:
        """`func.func @main` around the converted body, located at the source `main`."""
        self.at(main)
        self.emit.add(func.ReturnOp(*results))
        f = make_function("main", self.block, [v.type for v in results], arg_attrs, res_attrs)
        self.locate(f, main)
        return f

    # level G -----------------------------------------------------------------------------

    def convert_global_main(self, main: func.FuncOp) -> func.FuncOp:
        src_block = main.body.block
        for arg in src_block.args:
            self.errors.check_type(main, arg.type, f"argument {arg.index} of @{main.sym_name.data}")
        env: Env = {}
        arg_attrs: list[dict[str, Attribute]] = []
        src_arg_attrs = attr_dicts(main.arg_attrs, len(src_block.args))
        for arg, attrs in zip(src_block.args, src_arg_attrs, strict=False):
            env[arg] = self.block.insert_arg(arg.type, len(self.block.args))
            arg_attrs.append(
                self.boundary_attrs(main, attrs, rank(arg.type), f"argument {arg.index}")
            )
        results = self.convert_ops(src_block, env, local=False)
        res_attrs: list[dict[str, Attribute]] = []
        src_res_attrs = attr_dicts(main.res_attrs, len(results))
        for i, (v, attrs) in enumerate(zip(results, src_res_attrs, strict=False)):
            res_attrs.append(self.boundary_attrs(main, attrs, rank(v.type), f"result {i}"))
        return self.finish_main(main, results, arg_attrs, res_attrs)

    def boundary_attrs(
        self, main: func.FuncOp, attrs: dict[str, Attribute], rank: int, what: str
    ) -> dict[str, Attribute]:
        """A level-G argument / result's attributes: the sharding it declares."""
        a: dict[str, Attribute] = {}
        sharding = self.shardings.sharding_attr_of(main, attrs, rank, what, keep_open=True)
        if sharding is None and "mhlo.sharding" not in attrs:
            sharding = self.shardings.fully_open(rank)
        if sharding is not None:
            a[spmd.SHARDING_ATTR_NAME] = sharding
        self.errors.check_function_attrs(main, attrs, what)
        return a

    # ops ---------------------------------------------------------------------------------

    def callee(self, op: Operation) -> func.FuncOp:
        """The function a `func.call` calls (or a `stablehlo.composite` decomposes into)."""
        key = "decomposition" if op.name == "stablehlo.composite" else "callee"
        callee = get_attr(op, key)
        name = callee.root_reference.data  # pyright: ignore
        if name not in self.functions:
            raise self.error(op, f"call to @{name}, which the module does not define")
        if name in self.call_stack:
            raise self.error(op, f"recursive call to @{name}")
        f = self.functions[name]
        if not f.body.blocks:
            raise self.error(op, f"call to the external function @{name}")
        return f

    def convert_region(self, src: Block, args: Sequence[SSAValue], local: bool) -> Block:
        """
        A region's block (while, case, if) converted into a new block whose arguments
        stand for `args`; its ops may use the values of the blocks around it.
        """
        block = Block(arg_types=[a.type for a in args])
        env = dict(self.envs[-1]) if self.envs else {}
        env.update(zip(src.args, block.args, strict=True))
        saved = self.emit.block, self.emit.location
        self.emit.block = block
        try:
            returned = self.convert_ops(src, env, local)
            if src.last_op is not None:
                self.at(src.last_op)
            self.emit.add(hlo.ReturnOp(returned))
        finally:
            self.emit.block, self.emit.location = saved
        return block

    def convert_ops(self, src_block: Block, env: Env, local: bool) -> list[SSAValue]:
        """Convert a block's ops; the values its terminator returns."""
        self.envs.append(env)
        try:
            return self._convert_ops(src_block, env, local)
        finally:
            self.envs.pop()

    def _convert_ops(self, src_block: Block, env: Env, local: bool) -> list[SSAValue]:
        for op in src_block.ops:
            if op.name in ("func.return", "stablehlo.return", "sdy.return"):
                try:
                    return [env[v] for v in op.operands]
                except KeyError:
                    raise self.error(op, "returns a value defined outside its body") from None
            try:
                results = self.convert_op(op, env, local)
            except MALFORMED as e:  # what no converter check foresaw: still located
                raise self.error(op, f"malformed {op.name} ({type(e).__name__}: {e})") from None
            for r, v in zip(op.results, results, strict=False):
                env[r] = v
        raise self.error(None, "a block without a terminator")

    def convert_op(self, op: Operation, env: Env, local: bool) -> list[SSAValue]:
        """One op: a call or composite inlined, any other op through its converter."""
        name = op.name
        self.stats.ops[name] += 1
        self.at(op)
        self.errors.check_attrs(op)
        if not local and self.gspmd_manual.handles(op):
            return self.gspmd_manual.convert(op, env)
        if name == "sdy.manual_computation":
            if local:
                raise self.error(op, "a shard_map nested in a manual computation is not supported")
            operands = [env[v] for v in op.operands]
            return manual_computation(self.cx, self.errors, self, op, operands)
        if name in CALLS:
            self.stats.constructs[f"{name} (inlined)"] += 1
            callee = self.callee(op)
            inner = {a: env[v] for a, v in zip(callee.body.block.args, op.operands, strict=False)}
            self.call_stack.append(callee.sym_name.data)
            results = self.convert_ops(callee.body.block, inner, local)
            self.call_stack.pop()
            return results
        for i, v in enumerate(op.operands):
            self.errors.check_type(op, v.type, f"operand {i} of {name}")
        for i, r in enumerate(op.results):
            self.errors.check_type(op, r.type, f"result {i} of {name}")
        try:
            operands = [env[v] for v in op.operands]
        except KeyError:
            raise self.error(op, "uses a value from outside its region") from None
        if name in COLLECTIVES and not local:
            raise self.error(
                op,
                f"{name} outside a manual computation (shard_map): collectives need "
                "per-device values",
            )
        converter = OPS.get(name) or COLLECTIVES.get(name)
        try:
            if converter is None:
                raise ValueError(f"{name} is not supported by shardc's StableHLO importer")
            results = converter(self.cx, op, operands, local)
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
                sh = self.shardings.sdy_to_spmd(op, s, rank(v.type), f"result {i}", True)
                out.append(self.emit.value(spmd.ConstraintOp(v, sh)) if _constrains(sh) else v)
            return out
        text = op.attributes.get("mhlo.sharding")
        if isinstance(text, StringAttr) and op.name != "stablehlo.custom_call":
            if len(results) != 1:
                raise self.error(op, "mhlo.sharding on an op with several results")
            sh = self.shardings.gspmd_to_spmd(op, text.data, rank(results[0].type), "result")
            if isinstance(sh, spmd.ShardingAttr):
                return [self.emit.value(spmd.ConstraintOp(results[0], sh))]
        return results


def _constrains(sharding: spmd.ShardingAttr | None) -> bool:
    """A constraint open in every dimension and naming no axis constrains nothing."""
    if sharding is None:
        return False
    rank = len(sharding.dim_axes)
    return not (rank and len(sharding.open_dims) == rank and sharding.is_replicated())


def _module_int(attrs: dict[str, Attribute], key: str) -> int:
    a = attrs.get(key)
    if isinstance(a, IntegerAttr):
        return max(1, int(a.value.data))
    return 1


def import_stablehlo(text: str, filename: str = "<stablehlo>") -> ImportResult:
    """Import StableHLO text; any problem is one located `DiagnosticError`."""
    ctx = make_import_context()
    scanned = scan_locations(text)
    try:
        module = parse_module(ctx, scanned.text, filename, import_hint=False)
    except DiagnosticError as e:
        raise DiagnosticError(_reword(str(e))) from None
    source = SourceText(filename, scanned.text)
    try:
        return _unforeseen_as_diagnostic(
            filename, lambda: StablehloImporter(module, source, JaxLocations(scanned)).run()
        )
    except DiagnosticError:
        if not any(
            op.name == "sdy.manual_computation"
            or (op.name == "stablehlo.custom_call" and call_target(op) == "SPMDFullToShardShape")
            for op in module.walk()
        ):
            raise
        # The exact level-S import of shard_maps refused (a value it would have to
        # reshard, say): import at level G, where spmd-partition reshards; if that fails
        # too, the level-S error stands.
        retry = StablehloImporter(module, source, JaxLocations(scanned), manual_level_g=True)
        try:
            return _unforeseen_as_diagnostic(filename, retry.run)
        except DiagnosticError:
            pass
        raise


_NOT_REGISTERED_OP = re.compile(
    r"error: (?:Operation (\S+) is not registered|unknown operation '(\S+)')$"
)
_NOT_REGISTERED_ATTR = re.compile(
    r"error: (?:'(\S+)' is not registered|unknown attribute or type '(\S+)')$"
)


_SHARDC_DIALECTS = ("hlo", "spmd", "collective", "tpu")
"""shardc's own dialects: a file using them is already shardc IR, not StableHLO."""


def _reword(diagnostic: str) -> str:
    """Say which op / attribute shardc's importer does not know, in its own words."""
    first, _, rest = diagnostic.partition("\n")
    if m := _NOT_REGISTERED_OP.search(first):
        name = m.group(1) or m.group(2)
        first = first[: m.start()] + (
            _already_shardc("operation", name)
            or f"error: unknown operation '{name}': shardc's StableHLO importer does not support it"
        )
    elif m := _NOT_REGISTERED_ATTR.search(first):
        name = m.group(1) or m.group(2)
        first = first[: m.start()] + (
            _already_shardc("attribute", name)
            or f"error: unknown attribute '{name}': shardc's StableHLO importer does not support it"
        )
    return first + ("\n" + rest if rest else "")


def _already_shardc(kind: str, name: str) -> str:
    """The diagnostic for a shardc op or attribute in the importer's input, or ''."""
    if name.partition(".")[0] not in _SHARDC_DIALECTS:
        return ""
    return (
        f"error: '{name}' is a shardc {kind}: this file is already shardc IR (imported, or "
        "written by hand), not StableHLO, so there is nothing to import; give it to "
        "shardc-opt, shardc-run or shardc.compile as it is"
    )


__all__ = ["import_stablehlo", "strip_locations", "StablehloImporter"]


def _unforeseen_as_diagnostic(filename: str, run: Callable[[], ImportResult]) -> ImportResult:
    """`run()`, where what a converter trips on outside any op's conversion (a module or
    function attribute no check foresaw) is one diagnostic naming the file, not an
    internal error; the per-op ones are located at their op."""
    try:
        return run()
    except MALFORMED as e:
        raise DiagnosticError(
            f"{filename}: error: cannot import this module ({type(e).__name__}: {e})"
        ) from None
