"""
Manual computations (shard_map): a function that contains one, imported as a partitioned
(level S) function.

Outside its manual computations such a function only moves global values in and out of
them (see `stablehlo.py`). Each global value is a `View`: the local value that holds it on
every device and how it is split, fixed for an argument by the first manual computation
that takes it. The manual bodies are converted op by op by the driver (`OpConversion`),
on local values; `sdy.manual_computation` and GSPMD's `custom_call @Sharding` /
`@SPMDFullToShardShape` / `@SPMDShardToFullShape` mark where values enter and leave.

A function whose shard_maps sit among auto-sharded ops (`moves_values_only` is false) is
imported at level G instead, each `sdy.manual_computation` as an `spmd.manual_computation`
(`manual_computation` at the end of this module).
"""

from __future__ import annotations

from typing import Protocol

from shardc.dialects import hlo, spmd
from shardc.dialects.syntax import splat_elements
from shardc.frontends.stablehlo_dialect import SdyShardingAttr
from shardc.frontends.stablehlo_ops import BINARY, ELEMENTWISE_13, UNARY, OpContext
from shardc.frontends.stablehlo_source import (
    CALLS,
    SourceErrors,
    attr_dicts,
    axes_list,
    call_target,
    get_attr,
    gspmd_string,
    rank,
    sharding_list,
    splat_value,
)
from shardc.frontends.stablehlo_views import Localizer, View
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

TOPLEVEL_ELEMENTWISE = frozenset(
    set(BINARY)
    | set(UNARY)
    | set(ELEMENTWISE_13)
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

Env = dict[SSAValue, SSAValue]
Views = dict[SSAValue, View]
Pending = dict[SSAValue, spmd.ShardingAttr]


class OpConversion(Protocol):
    """What converting a level-S function needs of the importer's driver."""

    call_stack: list[str]

    def at(self, op: Operation) -> None:
        """The ops emitted next come from `op`."""
        ...

    def convert_op(self, op: Operation, env: Env, local: bool) -> list[SSAValue]: ...

    def convert_ops(self, src_block: Block, env: Env, local: bool) -> list[SSAValue]: ...

    def callee(self, op: Operation) -> func.FuncOp: ...


class ManualImporter:
    """Converts a function with manual computations to a partitioned function's body."""

    def __init__(self, cx: OpContext, errors: SourceErrors, driver: OpConversion, block: Block):
        self.cx = cx
        self.emit = cx.emit
        self.stats = cx.stats
        self.shardings = cx.shardings
        self.errors = errors
        self.driver = driver
        self.block = block
        self.layouts = Localizer(cx.shardings, errors, cx.emit)

    def error(self, op: Operation | None, message: str) -> Exception:
        return self.errors.error(op, message)

    # the function --------------------------------------------------------------------------

    def convert_main(
        self, main: func.FuncOp
    ) -> tuple[list[SSAValue], list[dict[str, Attribute]], list[dict[str, Attribute]]]:
        """The body of `main` in `block`: its results and argument / result attributes."""
        if self.shardings.mesh is None:
            raise self.error(main, "a manual computation needs a mesh")
        src_block = main.body.block
        views: Views = {}
        arg_attrs_in = attr_dicts(main.arg_attrs, len(src_block.args))
        for arg, attrs in zip(src_block.args, arg_attrs_in, strict=False):
            self.errors.check_type(main, arg.type, f"argument {arg.index} of @{main.sym_name.data}")
            self.errors.check_function_attrs(main, attrs, "an argument")
            new = self.block.insert_arg(arg.type, len(self.block.args))
            declared = self.shardings.sharding_attr_of(
                main, attrs, rank(arg.type), f"argument {arg.index}"
            )
            views[arg] = View(None, None, arg=arg.index, declared=declared)
            self.layouts.arg_values[arg.index] = new
        returned = self.convert_toplevel(src_block, views, {}, {})
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
                self.layouts.localize(view, view.declared, ret_op, value)
            if view.local is None:
                self.layouts.materialize(view, None, ret_op, value)
            assert view.local is not None
            results.append(view.local)
            res_attrs.append(_sharding_attrs(view))
        arg_attrs: list[dict[str, Attribute]] = []
        for arg in src_block.args:
            view = views[arg]
            if view.local is None:
                self.layouts.localize(view, view.declared, main, arg)
            arg_attrs.append(_sharding_attrs(view))
        return results, arg_attrs, res_attrs

    def convert_toplevel(
        self, src_block: Block, views: Views, env: Env, pending: Pending
    ) -> list[tuple[SSAValue, Operation]]:
        """The ops of a level-S function outside its manual computations."""
        for op in src_block.ops:
            self.driver.at(op)
            if op.name in ("func.return",):
                return [(v, op) for v in op.operands]
            self.toplevel_op(op, views, env, pending)
        raise self.error(None, "function without a return")

    def toplevel_op(self, op: Operation, views: Views, env: Env, pending: Pending) -> None:
        name = op.name
        takes_view = any(v in views for v in op.operands)
        if name == "sdy.manual_computation":
            self.stats.ops[name] += 1
            self.errors.check_attrs(op)
            self.convert_manual_computation(op, views)
        elif name == "stablehlo.custom_call" and (
            takes_view or call_target(op) == "SPMDShardToFullShape"
        ):
            self.stats.ops[name] += 1
            self.errors.check_attrs(op)
            self.convert_boundary_call(op, views, env, pending)
        elif name == "stablehlo.constant":
            views[op.results[0]] = self.toplevel_constant(op, env)
        elif name == "stablehlo.broadcast_in_dim" and self.splat_broadcast(op, views):
            pass
        elif name in TOPLEVEL_ELEMENTWISE and all(v in views for v in op.operands):
            self.toplevel_elementwise(op, views)
        elif name in ("sdy.sharding_constraint", "sdy.reshard") and op.operands[0] in views:
            self.toplevel_constraint(op, views)
        elif name in CALLS and takes_view:
            self.toplevel_call(op, views, env, pending)
        else:
            self.toplevel_local(op, views, env)

    def splat_broadcast(self, op: Operation, views: Views) -> bool:
        """A broadcast of a rank-0 splat stays a splat (of the broadcast's global type)."""
        src = views.get(op.operands[0])
        if src is None or src.scalar is None or rank(op.operands[0].type) != 0:
            return False
        self.stats.ops[op.name] += 1
        views[op.results[0]] = View(None, None, scalar=src.scalar, global_type=op.results[0].type)  # pyright: ignore
        return True

    def toplevel_call(self, op: Operation, views: Views, env: Env, pending: Pending) -> None:
        """A call taking global values, inlined (its body is outside manual computations)."""
        self.stats.constructs[f"{op.name} (inlined)"] += 1
        callee = self.driver.callee(op)
        inner_views = dict(views)
        inner_env = dict(env)
        for a, v in zip(callee.body.block.args, op.operands, strict=False):
            if v in views:
                inner_views[a] = views[v]
            elif v in env:
                inner_env[a] = env[v]
        self.driver.call_stack.append(callee.sym_name.data)
        returned = self.convert_toplevel(callee.body.block, inner_views, inner_env, pending)
        self.driver.call_stack.pop()
        for r, (v, _) in zip(op.results, returned, strict=False):
            if v in inner_views:
                views[r] = inner_views[v]
            elif v in inner_env:
                env[r] = inner_env[v]

    def toplevel_local(self, op: Operation, views: Views, env: Env) -> None:
        """Any other op must be a per-device op on per-device values (or constants)."""
        for v in op.operands:
            if v in views and not views[v].constant:
                raise self.error(
                    op,
                    f"'{op.name}' outside the manual computation is not supported: shardc "
                    "imports a program with shard_map (sdy.manual_computation / "
                    "SPMDFullToShardShape) as a per-device program, and only moves "
                    "values into and out of manual computations around it",
                )
        for v in op.operands:
            if v in views and v not in env:
                env[v] = views[v].local  # pyright: ignore[reportArgumentType]
        results = self.driver.convert_op(op, env, local=True)
        for r, v in zip(op.results, results, strict=False):
            env[r] = v

    def toplevel_constant(self, op: Operation, env: Env) -> View:
        self.stats.ops[op.name] += 1
        self.errors.check_attrs(op)
        value = self.errors.prop(op, "value")
        r = op.results[0]
        self.errors.check_type(op, r.type, "the constant")
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
        results = self.driver.convert_op(op, env, local=True)
        self.stats.ops[op.name] -= 1
        return View(results[0], None, constant=True)

    def toplevel_elementwise(self, op: Operation, views: Views) -> None:
        """A pointwise op outside manual computations: the op on local values, when its
        operands share one layout (splats take any)."""
        layouts: list[spmd.ShardingAttr | None] = []
        for v in op.operands:
            view = views[v]
            if view.scalar is not None:
                continue
            if view.local is None:
                self.layouts.localize(view, view.declared, op, v)
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
        env = {v: self.layouts.localize(views[v], sharding, op, v) for v in op.operands}
        self.stats.constructs["pointwise op outside shard_map"] += 1
        results = self.driver.convert_op(op, env, local=True)
        for r, v in zip(op.results, results, strict=False):
            views[r] = View(v, sharding)

    def toplevel_constraint(self, op: Operation, views: Views) -> None:
        self.stats.ops[op.name] += 1
        self.errors.check_attrs(op)
        x = op.operands[0]
        view = views[x]
        want = self.shardings.sdy_to_spmd(
            op, self.errors.prop(op, "sharding"), rank(x.type), op.name
        )
        if want is None:  # open everywhere: constrains nothing
            views[op.results[0]] = view
            return
        if view.scalar is not None:
            local = self.layouts.materialize(view, want, op, x)
            views[op.results[0]] = View(local, want)
            return
        if view.local is None:
            self.layouts.localize(view, want, op, x)
        self.layouts.localize(view, want, op, x)  # the same layout, or an error saying it differs
        views[op.results[0]] = view

    # where values enter and leave manual computations --------------------------------------

    def convert_manual_computation(self, op: Operation, views: Views) -> None:
        in_sh, out_sh = self.manual_shardings(op)
        body = op.regions[0].block
        inner: Env = {}
        for i, (v, s, barg) in enumerate(zip(op.operands, in_sh, body.args, strict=False)):
            if v not in views:
                raise self.error(op, f"operand {i} is not a global value")
            sharding = self.shardings.sdy_to_spmd(op, s, rank(v.type), f"in_shardings[{i}]")
            local = self.layouts.localize(views[v], sharding, op, v)
            if local.type != barg.type:
                raise self.error(
                    op,
                    f"operand {i}: the body takes {barg.type} but {v.type} split as "
                    f"{sharding or 'replicated'} is {local.type} per device",
                )
            inner[barg] = local
        self.stats.constructs["shard_map (manual computation)"] += 1
        manual = tuple(a.data for a in axes_list(self.errors.prop(op, "manual_axes")))
        saved_axes, self.cx.manual_axes = self.cx.manual_axes, manual
        try:
            results = self.driver.convert_ops(body, inner, local=True)
        finally:
            self.cx.manual_axes = saved_axes
        for i, (r, v, s) in enumerate(zip(op.results, results, out_sh, strict=False)):
            sharding = self.shardings.sdy_to_spmd(op, s, rank(r.type), f"out_shardings[{i}]")
            try:
                want = self.layouts.local_type(r.type, sharding)
            except ValueError as e:
                raise self.error(op, f"result {i}: {e}") from None
            if want != v.type:
                raise self.error(
                    op,
                    f"result {i}: the body returns {v.type} but {r.type} split as "
                    f"{sharding or 'replicated'} is {want} per device",
                )
            views[r] = View(v, sharding)

    def manual_shardings(self, op: Operation) -> tuple[list[Attribute], list[Attribute]]:
        """A manual computation's in / out shardings (checked to leave no axis free)."""
        mesh = self.shardings.mesh
        assert mesh is not None
        manual = [a.data for a in axes_list(self.errors.prop(op, "manual_axes"))]
        free = [a for a in mesh.names if a not in manual]
        in_sh = sharding_list(self.errors.prop(op, "in_shardings"))
        out_sh = sharding_list(self.errors.prop(op, "out_shardings"))
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
        return in_sh, out_sh

    def convert_boundary_call(
        self, op: Operation, views: Views, env: Env, pending: Pending
    ) -> None:
        """GSPMD's @Sharding / @SPMDFullToShardShape on a global value."""
        target = call_target(op)
        if len(op.operands) != 1 or len(op.results) != 1:
            raise self.error(op, f"custom_call @{target} takes one operand")
        if target == "SPMDShardToFullShape":
            self.shard_to_full(op, views, env)
        elif target == "Sharding":
            text = gspmd_string(op)
            (x,), (r,) = op.operands, op.results
            s = self.shardings.gspmd_to_spmd(op, text or "{replicated}", rank(x.type), "@Sharding")
            if s == "manual":
                raise self.error(op, "@Sharding {manual} on a global value")
            views[r] = views[x]
            if s is not None:
                pending[r] = s  # pyright: ignore[reportArgumentType]
        elif target == "SPMDFullToShardShape":
            self.full_to_shard(op, views, env, pending)
        else:
            raise self.error(op, f"custom_call @{target} on a global value is not supported")

    def shard_to_full(self, op: Operation, views: Views, env: Env) -> None:
        """`@SPMDShardToFullShape`: a per-device value leaves the manual computation."""
        (x,), (r,) = op.operands, op.results
        if x not in env:
            raise self.error(op, "@SPMDShardToFullShape of a value that is not per-device")
        text = gspmd_string(op) or "{replicated}"
        s = self.shardings.gspmd_to_spmd(op, text, rank(r.type), "@SPMDShardToFullShape")
        if s == "manual":
            raise self.error(op, "@SPMDShardToFullShape to a {manual} sharding")
        sharding = s if isinstance(s, spmd.ShardingAttr) and not s.is_replicated() else None
        try:
            want = self.layouts.local_type(r.type, sharding)
        except ValueError as e:
            raise self.error(op, str(e)) from None
        if want != x.type:
            raise self.error(
                op,
                f"{r.type} split as {sharding or 'replicated'} is {want} per device, "
                f"but the shard is {x.type}",
            )
        views[r] = View(env[x], sharding)

    def full_to_shard(self, op: Operation, views: Views, env: Env, pending: Pending) -> None:
        """`@SPMDFullToShardShape`: a global value enters, split as its @Sharding says."""
        (x,), (r,) = op.operands, op.results
        sharding = pending.get(x)
        if sharding is None and views[x].local is None:
            sharding = views[x].declared
        local = self.layouts.localize(views[x], sharding, op, x)
        if local.type != r.type:
            raise self.error(
                op,
                f"the shard shape {r.type} differs from {x.type} split as "
                f"{sharding or 'replicated'} ({local.type})",
            )
        self.stats.constructs["shard_map (SPMDFullToShardShape)"] += 1
        env[r] = local


def _sharding_attrs(view: View) -> dict[str, Attribute]:
    """A level-S argument / result's attributes: its sharding unless replicated."""
    if view.sharding is not None and not view.sharding.is_replicated():
        return {spmd.SHARDING_ATTR_NAME: view.sharding}
    return {}


# shard_map inside auto-sharded code (level G) -------------------------------------------

MOVES_VALUES = frozenset(
    {
        "sdy.manual_computation",
        "stablehlo.custom_call",
        "stablehlo.constant",
        "stablehlo.broadcast_in_dim",
        "sdy.sharding_constraint",
        "sdy.reshard",
        "func.call",
        "func.return",
    }
)
"""What the level-S import (`ManualImporter`) accepts outside manual computations."""


def moves_values_only(block: Block, functions: dict[str, func.FuncOp]) -> bool:
    """
    Whether a function with shard_maps only moves values around them (then it is imported
    as a level-S function by `ManualImporter`); otherwise its auto-sharded code stays level
    G around `spmd.manual_computation`s.
    """
    for op in block.ops:
        if op.name == "func.call":
            callee = functions.get(get_attr(op, "callee").root_reference.data)  # pyright: ignore
            body = callee.body.block if callee is not None and callee.body.blocks else None
            if body is not None and not moves_values_only(body, functions):
                return False
        elif op.name not in MOVES_VALUES and op.name not in TOPLEVEL_ELEMENTWISE:
            return False
    return True


def shardings_name_free_axes(module: Operation) -> bool:
    """
    Whether some `sdy.manual_computation`'s in/out shardings split over axes its
    manual_axes leaves free (Shardy's partially manual form): the level-S import
    (`ManualImporter`) does not take those, the level-G one does.
    """
    for op in module.walk():
        if op.name != "sdy.manual_computation":
            continue
        manual = {a.data for a in axes_list(op.properties["manual_axes"])}
        for key in ("in_shardings", "out_shardings"):
            for s in sharding_list(op.properties[key]):
                if isinstance(s, SdyShardingAttr) and any(
                    a.split(":")[0] not in manual for d in s.dim_axes for a in d
                ):
                    return True
    return False


def manual_computation(
    cx: OpContext, errors: SourceErrors, driver: OpConversion, op: Operation, xs: list[SSAValue]
) -> list[SSAValue]:
    """`sdy.manual_computation` in a level-G function: `spmd.manual_computation`."""
    shardings = cx.shardings
    mesh, mesh_name = shardings.mesh, shardings.mesh_name
    if mesh is None or mesh_name is None:
        raise errors.error(op, "a manual computation needs a mesh")
    manual = [a.data for a in axes_list(errors.prop(op, "manual_axes"))]
    in_sh = sharding_list(errors.prop(op, "in_shardings"))
    out_sh = sharding_list(errors.prop(op, "out_shardings"))
    if len(in_sh) != len(op.operands) or len(out_sh) != len(op.results):
        raise errors.error(op, "in_shardings / out_shardings do not match the operands / results")

    def boundary(s: Attribute, v: SSAValue, what: str) -> spmd.ShardingAttr:
        sharding = shardings.sdy_to_spmd(op, s, rank(v.type), what)
        sharding = sharding or spmd.ShardingAttr(mesh_name, [[] for _ in range(rank(v.type))])
        problem = spmd.manual_order_problem(sharding, manual)
        if problem is not None:
            raise errors.error(op, f"{what}: {problem}")
        return sharding

    ins = [
        boundary(s, v, f"in_shardings[{i}]")
        for i, (s, v) in enumerate(zip(in_sh, op.operands, strict=True))
    ]
    outs = [
        boundary(s, r, f"out_shardings[{i}]")
        for i, (s, r) in enumerate(zip(out_sh, op.results, strict=True))
    ]
    src = op.regions[0].block
    body = Block(arg_types=[a.type for a in src.args])
    saved, cx.emit.block = cx.emit.block, body
    saved_axes, cx.manual_axes = cx.manual_axes, tuple(manual)
    try:
        results = driver.convert_ops(src, dict(zip(src.args, body.args, strict=True)), local=True)
        driver.at(op)
        cx.emit.add(spmd.ReturnOp(results))
    finally:
        cx.emit.block = saved
        cx.manual_axes = saved_axes
    cx.stats.constructs["shard_map inside auto-sharded code (spmd.manual_computation)"] += 1
    new = spmd.ManualComputationOp(
        xs, ins, outs, manual, Region(body), [r.type for r in op.results]
    )
    return list(cx.emit.add(new).results)
