"""
`hlo.partition_id` / `hlo.replica_id` and `spmd.manual_computation` (issue 13), registered
with the plan next to `HloFunctions` (`plan.py`).

At level S `partition_id` is the running device's id and `replica_id` 0 (shardc's devices
are the partitions of one replica); at level G, a one-device run, both are 0.

A manual computation at level G (shard_map inside auto-sharded code) runs as JAX runs it:
its operands are split per `in_shardings` (their manual axes: free axes only lay out the
global value) into every device's local values, its body (a per-device program) runs on
all the mesh's devices with the level-S executor (as a partitioned function of a module
made of the mesh and the body), and each result is assembled per `out_shardings` (their
manual axes). Devices that hold the same block of a result must agree bit for bit (a
shard_map result is replicated over the axes its out-sharding's manual part leaves out).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from shardc.diagnostics import InterpreterError
from shardc.dialects import hlo, spmd
from shardc.interpreter.hlo_impls import DEVICE_KEY, DeviceInfo, HloFunctions, fast_impl
from shardc.interpreter.values import same_bits, tensor_spec
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, UnitAttr
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, register_impls
from xdsl.ir import Block, Region


def _device(interp: Interpreter) -> DeviceInfo | None:
    return interp.get_data(HloFunctions, DEVICE_KEY, lambda: None)


def _dtype(op: hlo.PartitionIdOp | hlo.ReplicaIdOp) -> Any:
    return tensor_spec(op.result.type)[1]


@register_impls
class ManualFunctions(InterpreterFunctions):
    """hlo.partition_id, hlo.replica_id, spmd.manual_computation."""

    def __init__(self) -> None:
        super().__init__()
        self._bodies: dict[spmd.ManualComputationOp, tuple[Any, func.FuncOp, spmd.MeshAttr]] = {}

    @fast_impl(hlo.PartitionIdOp)
    def run_partition_id(self, interp: Interpreter, op: hlo.PartitionIdOp, args: PythonValues):
        info = _device(interp)
        return (np.array(info.device if info is not None else 0, dtype=_dtype(op)),)

    @fast_impl(hlo.ReplicaIdOp)
    def run_replica_id(self, interp: Interpreter, op: hlo.ReplicaIdOp, args: PythonValues):
        return (np.array(0, dtype=_dtype(op)),)

    @fast_impl(spmd.ManualComputationOp)
    def run_manual(self, interp: Interpreter, op: spmd.ManualComputationOp, args: PythonValues):
        if _device(interp) is not None:
            raise InterpreterError(
                "spmd.manual_computation runs at level G (spmd-partition inlines its body)"
            )
        executor, body, mesh = self._body(op)
        n = mesh.device_count
        ins = [spmd.manual_part(s, op.axes) for s in op.in_shardings.data]
        outs = [spmd.manual_part(s, op.axes) for s in op.out_shardings.data]
        per_device = [
            [_shard(v, s, mesh, d) for v, s in zip(args, ins, strict=True)] for d in range(n)
        ]
        results = executor.run(body, per_device)
        return tuple(_assemble(op, i, [r[i] for r in results], s, mesh) for i, s in enumerate(outs))

    def _body(self, op: spmd.ManualComputationOp) -> tuple[Any, func.FuncOp, spmd.MeshAttr]:
        """An executor of a module holding the mesh and the body as a partitioned function."""
        if op not in self._bodies:
            from shardc.interpreter.devices import Executor  # (devices imports the plan)

            mesh_op = spmd.find_mesh_op(op)
            assert mesh_op is not None
            block = Block(arg_types=[a.type for a in op.body.block.args])
            mapping = dict(zip(op.body.block.args, block.args, strict=True))
            for inner in op.body.block.ops:
                if isinstance(inner, spmd.ReturnOp):
                    block.add_op(func.ReturnOp(*[mapping[v] for v in inner.values]))
                else:
                    block.add_op(inner.clone(value_mapper=mapping))  # pyright: ignore
            ret = block.last_op
            assert ret is not None
            body = func.FuncOp(
                "manual_computation",
                ([a.type for a in block.args], [v.type for v in ret.operands]),
                Region(block),
            )
            body.attributes[spmd.PARTITIONED_ATTR_NAME] = UnitAttr()
            module = ModuleOp([mesh_op.clone(), body])
            self._bodies[op] = (Executor(module), body, mesh_op.mesh)
        return self._bodies[op]


def _block_index(
    sharding: spmd.ShardingAttr, mesh: spmd.MeshAttr, d: int, local: tuple[int, ...]
) -> tuple[slice, ...]:
    coords = mesh.coords(d)
    return tuple(
        slice(b * n, (b + 1) * n)
        for b, n in ((sharding.shard_index(i, mesh, coords), n) for i, n in enumerate(local))
    )


def _shard(value: Any, sharding: spmd.ShardingAttr, mesh: spmd.MeshAttr, d: int) -> Any:
    """Device `d`'s block of a global value split as `sharding`."""
    value = np.asarray(value)
    local = sharding.local_shape(value.shape, mesh)
    return value[_block_index(sharding, mesh, d, local)]


def _assemble(
    op: spmd.ManualComputationOp,
    index: int,
    values: list[Any],
    sharding: spmd.ShardingAttr,
    mesh: spmd.MeshAttr,
) -> Any:
    """A global result from every device's block; copies of one block must agree."""
    ty = op.outs[index].type
    assert isinstance(ty, TensorType)
    first = np.asarray(values[0])
    out = np.empty(ty.get_shape(), dtype=first.dtype)
    holder: dict[tuple[int, ...], int] = {}
    for d, v in enumerate(values):
        v = np.asarray(v)
        coords = mesh.coords(d)
        block = tuple(sharding.shard_index(i, mesh, coords) for i in range(len(v.shape)))
        if block in holder:
            if not same_bits(np.asarray(values[holder[block]]), v):
                raise InterpreterError(
                    f"spmd.manual_computation result {index}: devices {holder[block]} and "
                    f"{d} hold different values of one block, but out_shardings[{index}] "
                    f"= {sharding} replicates it over the other mesh axes"
                )
            continue
        holder[block] = d
        out[_block_index(sharding, mesh, d, v.shape)] = v
    return out
