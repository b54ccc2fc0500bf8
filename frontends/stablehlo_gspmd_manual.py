"""
GSPMD's form of a shard_map inside auto-sharded code, read at level G.

With `jax_use_shardy_partitioner` off, JAX writes a shard_map as a chain of custom calls
around a call of its body:

    %s = custom_call @Sharding(%x) {mhlo.sharding = "{devices=[8,1]<=[8]}"}
    %l = custom_call @SPMDFullToShardShape(%s) {mhlo.sharding = "{manual}"}
    %r = call @shmap_body(%l)
    %m = custom_call @Sharding(%r) {mhlo.sharding = "{manual}"}
    %y = custom_call @SPMDShardToFullShape(%m) {mhlo.sharding = "{devices=[8,1]<=[8]}"}

`GspmdManualComputations` turns each such chain into one `spmd.manual_computation` (the
Shardy form's level-G op): its operands are the global values entering
`SPMDFullToShardShape`, with their shardings as in_shardings; its body is the called
function converted as per-device code; its out_shardings are the
`SPMDShardToFullShape` shardings, and its results the global values those give. Every
mesh axis is manual (GSPMD's `{manual}`).
"""

from __future__ import annotations

from shardc.dialects import spmd
from shardc.frontends.stablehlo_source import SourceErrors, call_target, gspmd_string, rank
from xdsl.ir import Block, Operation, Region, SSAValue

Env = dict[SSAValue, SSAValue]


class GspmdManualComputations:
    """The GSPMD shard_map chains of one function, converted as they are reached."""

    def __init__(self, driver, errors: SourceErrors):
        self.driver = driver
        self.errors = errors
        self.views: dict[SSAValue, tuple[SSAValue, spmd.ShardingAttr]] = {}
        """A `SPMDFullToShardShape` result: the global value it views and its sharding."""
        self.globals: dict[SSAValue, SSAValue] = {}
        """A manual body's result (and its `@Sharding {manual}`): the global result."""

    def handles(self, op: Operation) -> bool:
        """Whether `op` is a link of a chain (converted by `convert`)."""
        if op.name == "stablehlo.custom_call":
            target = call_target(op)
            if target == "SPMDFullToShardShape":
                return True
            if target in ("Sharding", "SPMDShardToFullShape"):
                return bool(op.operands) and op.operands[0] in self.globals
            return False
        return op.name == "func.call" and any(v in self.views for v in op.operands)

    def convert(self, op: Operation, env: Env) -> list[SSAValue]:
        if op.name == "func.call":
            return self.manual_computation(op, env)
        if call_target(op) == "SPMDFullToShardShape":
            global_value = env[op.operands[0]]
            sharding = self.input_sharding(op)
            self.views[op.results[0]] = (global_value, sharding)
            return [global_value]  # a stand-in: only the body call reads a view
        result = self.globals[op.operands[0]]
        self.globals[op.results[0]] = result
        return [result]

    def input_sharding(self, op: Operation) -> spmd.ShardingAttr:
        """The sharding a `SPMDFullToShardShape` splits by: its operand's `@Sharding`."""
        src = op.operands[0].owner
        text = gspmd_string(src) if isinstance(src, Operation) else None
        if text is None or call_target(src) != "Sharding":  # pyright: ignore[reportArgumentType]
            raise self.errors.error(
                op, "@SPMDFullToShardShape must take a @Sharding custom call's result"
            )
        return self.sharding(op, text, rank(op.operands[0].type), "in")

    def sharding(self, op: Operation, text: str, r: int, what: str) -> spmd.ShardingAttr:
        sh = self.driver.shardings.gspmd_to_spmd(op, text, r, f"shard_map {what}_sharding")
        if not isinstance(sh, spmd.ShardingAttr):
            raise self.errors.error(op, f"shard_map {what}_sharding {text} is not a tiling")
        return sh

    def output(self, call: Operation, result: SSAValue) -> Operation:
        """The `SPMDShardToFullShape` a body result reaches (through `@Sharding {manual}`)."""
        value = result
        for _ in range(2):
            users = [u.operation for u in value.uses]
            if len(users) != 1 or users[0].name != "stablehlo.custom_call":
                break
            user = users[0]
            if call_target(user) == "SPMDShardToFullShape":
                return user
            value = user.results[0]
        raise self.errors.error(
            call, "a shard_map body result must reach one @SPMDShardToFullShape"
        )

    def manual_computation(self, call: Operation, env: Env) -> list[SSAValue]:
        if not all(v in self.views for v in call.operands):
            raise self.errors.error(call, "a shard_map body takes only manual values")
        callee = self.driver.callee(call)
        args = [self.views[v][0] for v in call.operands]
        ins = [self.views[v][1] for v in call.operands]
        outs, types = [], []
        for r in call.results:
            full = self.output(call, r)
            text = gspmd_string(full) or "{replicated}"
            types.append(full.results[0].type)
            outs.append(self.sharding(full, text, rank(full.results[0].type), "out"))
        body = self.body(callee.body.block, call)
        mesh = self.driver.shardings.mesh
        manual = list(mesh.names) if mesh is not None else []
        new = spmd.ManualComputationOp(args, ins, outs, manual, Region(body), types)
        self.driver.stats.constructs["shard_map inside auto-sharded code (GSPMD form)"] += 1
        results = list(self.driver.emit.add(new).results)
        self.globals.update(zip(call.results, results, strict=True))
        return results

    def body(self, src: Block, call: Operation) -> Block:
        """The called function's block converted as per-device code, ending in spmd.return."""
        body = Block(arg_types=[a.type for a in src.args])
        emit = self.driver.emit
        saved, emit.block = emit.block, body
        try:
            self.driver.call_stack.append(self.driver.callee(call).sym_name.data)
            results = self.driver.convert_ops(
                src, dict(zip(src.args, body.args, strict=True)), local=True
            )
            self.driver.call_stack.pop()
            self.driver.at(call)
            emit.add(spmd.ReturnOp(results))
        finally:
            emit.block = saved
        return body


__all__ = ["GspmdManualComputations"]
