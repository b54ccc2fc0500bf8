"""
Semantics of the level-T simulator's local ops (everything but the effects on other
devices, `level_t_effects`), as xDSL interpreter functions: `@register_impls` classes of
`@impl(OpType)` methods, looked up by op type.

* `MemoryFunctions`: references and scalars, run in both modes: `tpu.load` / `tpu.store`
  (bounds-checked, race-checked, charged at VMEM bandwidth), `memref.load` / `store` (one
  element, free), `tpu.memref_slice` / `memref_reshape` (views), `tpu.alloc` / `dealloc`,
  `tpu.device_id`, `tpu.axis_index`.
* `ValueFunctions`: vector and scalar values: `tpu.matmul`, `tpu.reduce`,
  `tpu.transpose`, `tpu.iota`, `arith.constant` and every op of `level_t_arith.ELEMENTWISE`.
  In the timing mode an op of these (or an unknown op) with vector results is not run:
  its results are shape-only placeholders and only its cost counts (`placeholder_values`).

Each device has its own xDSL `Interpreter`, whose `get_data(MemoryFunctions, DEVICE_KEY)`
is the device's `DeviceState` (as `hlo_impls.DeviceInfo` for level S). The simulator's
block walker calls the implementations directly from `impl_table` (as `devices.Executor`
does: `Interpreter.run_op` would turn an `InterpreterError` into xDSL's generic
"Error while interpreting op").

Costs (`vector_cost`) come from `shardc.hardware.cost`: a matmul at the MXU rate, other
vector ops one VPU op per element, loads and stores at VMEM bandwidth.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import numpy as np
from shardc.dialects import spmd, tpu
from shardc.hardware.chips import Chip
from shardc.hardware.cost import matmul_time, vmem_time, vpu_time
from shardc.interpreter.level_t_arith import ELEMENTWISE, Elementwise, constant
from shardc.interpreter.level_t_machine import DeviceState, Diagnostics, Ref, SemRef, placeholder
from shardc.interpreter.level_t_memory import Memory
from shardc.interpreter.level_t_races import check_access
from shardc.interpreter.values import dtype_of
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import VectorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.ir import Operation

DEVICE_KEY = "device"
"""`Interpreter.get_data(MemoryFunctions, DEVICE_KEY, ...)`: the running `DeviceState`."""


class Machine(Protocol):
    """What the op implementations use of the simulator."""

    chip: Chip
    mesh: spmd.MeshAttr | None
    values: bool
    """False: the timing mode (no bytes read or written)."""
    diag: Diagnostics
    memory: Memory

    def charge(self, dev: DeviceState, op: Operation, seconds: float, flops: float = 0.0) -> None:
        """`op` keeps `dev`'s compute busy for `seconds` (a compute slice of `flops`)."""
        ...


def device_of(interpreter: Interpreter) -> DeviceState:
    return interpreter.get_data(MemoryFunctions, DEVICE_KEY, _no_device)


def _no_device() -> DeviceState:
    raise AssertionError("a level-T interpreter has its device set (DEVICE_KEY)")


def vector_cost(chip: Chip, op: Operation) -> float:
    """Seconds of a vector op, from its types alone (so both modes charge the same)."""
    if isinstance(op, tpu.MatmulOp):
        m, k = op.lhs.type.get_shape()  # type: ignore[union-attr]
        cols = op.rhs.type.get_shape()[1]  # type: ignore[union-attr]
        return matmul_time(chip, m, k, cols, op.lhs.type.element_type)  # type: ignore[union-attr]
    if isinstance(op, tpu.ReduceOp | tpu.TransposeOp):
        return vpu_time(chip, math.prod(op.source.type.get_shape()))  # type: ignore[union-attr]
    if isinstance(op, tpu.IotaOp | arith.ConstantOp):
        return 0.0
    res_ty = op.results[0].type if op.results else None
    if isinstance(res_ty, VectorType):
        return vpu_time(chip, math.prod(res_ty.get_shape()))
    return 0.0


def vector_flops(op: Operation) -> float:
    """FLOPs of a vector op (`vector_cost`'s: a matmul's 2mkn, one per element else)."""
    if isinstance(op, tpu.MatmulOp):
        m, k = op.lhs.type.get_shape()  # type: ignore[union-attr]
        return 2.0 * m * k * op.rhs.type.get_shape()[1]  # type: ignore[union-attr]
    if isinstance(op, tpu.ReduceOp | tpu.TransposeOp):
        return float(math.prod(op.source.type.get_shape()))  # type: ignore[union-attr]
    if isinstance(op, tpu.IotaOp | arith.ConstantOp):
        return 0.0
    res_ty = op.results[0].type if op.results else None
    return float(math.prod(res_ty.get_shape())) if isinstance(res_ty, VectorType) else 0.0


def placeholder_values(op: Operation) -> tuple[Any, ...]:
    """
    Timing mode: a vector op's results as zero-stride arrays of their shape (its
    semantics are not consulted, so an op the valued mode does not know passes here);
    the simulator charges its cost (`vector_cost`).
    """
    out = []
    for r in op.results:
        ty = r.type
        assert isinstance(ty, VectorType)
        out.append(placeholder(tuple(ty.get_shape()), dtype_of(ty.element_type)))
    return tuple(out)


@register_impls
class MemoryFunctions(InterpreterFunctions):
    """References, scalars and allocations (see the module docstring)."""

    def __init__(self, machine: Machine):
        self.machine = machine

    def _view(self, op: Operation, dev: DeviceState, args: PythonValues, what: str, shape: Any):
        """The bounds-checked view `args` (ref, indices...) name, and the ref."""
        ref: Ref = args[0]
        idx = [int(v) for v in args[1:]]
        if shape is None:  # one element of a memref (memref.load / store)
            if not idx:
                return ref, ref.view[...]
            shape = [1] * len(idx)
        return ref, self.machine.memory.view(op, dev.index, ref, idx, shape, what)

    def _access(self, op: Operation, dev: DeviceState, ref: Ref, view: np.ndarray, write: bool):
        m = self.machine
        check_access(m.diag, op, dev.index, ref.buffer, view, write, dev.index, dev.vc)

    @impl(tpu.LoadOp)
    def run_load(self, interpreter: Interpreter, op: tpu.LoadOp, args: PythonValues):
        dev, m = device_of(interpreter), self.machine
        ref, view = self._view(op, dev, args, "load", op.result.type.get_shape())
        self._access(op, dev, ref, view, write=False)
        value = np.array(view, copy=True) if m.values else placeholder(view.shape, view.dtype)
        m.charge(dev, op, vmem_time(m.chip, view.nbytes))
        return (value,)

    @impl(tpu.StoreOp)
    def run_store(self, interpreter: Interpreter, op: tpu.StoreOp, args: PythonValues):
        dev, m = device_of(interpreter), self.machine
        value = args[0]
        ref, view = self._view(op, dev, args[1:], "store", value.shape)
        self._access(op, dev, ref, view, write=True)
        if m.values:
            view[...] = value
        m.charge(dev, op, vmem_time(m.chip, view.nbytes))
        return ()

    @impl(memref.LoadOp)
    def run_scalar_load(self, interpreter: Interpreter, op: memref.LoadOp, args: PythonValues):
        # A scalar (from SMEM, say: a DMA'd offset); reading it takes no time.
        dev = device_of(interpreter)
        ref, view = self._view(op, dev, args, "load", None)
        self._access(op, dev, ref, view, write=False)
        if not self.machine.values:  # a shape-only buffer has no bytes to read
            return (view.dtype.type(0).item(),)
        return (view.reshape(()).item(),)

    @impl(memref.StoreOp)
    def run_scalar_store(self, interpreter: Interpreter, op: memref.StoreOp, args: PythonValues):
        dev = device_of(interpreter)
        ref, view = self._view(op, dev, args[1:], "store", None)
        self._access(op, dev, ref, view, write=True)
        if self.machine.values:
            view[...] = args[0]
        return ()

    @impl(tpu.MemRefSliceOp)
    def run_memref_slice(self, interpreter: Interpreter, op: tpu.MemRefSliceOp, args: PythonValues):
        d = device_of(interpreter).index
        src, idx = args[0], [int(v) for v in args[1:]]
        if isinstance(src, SemRef):
            return (self.machine.memory.sem_slice(op, d, src, idx),)
        shape = op.result.type.get_shape()
        view = self.machine.memory.view(op, d, src, idx, shape, "slice")
        return (Ref(src.buffer, view, f"{src.label}[{', '.join(map(str, idx))}]"),)

    @impl(tpu.MemRefReshapeOp)
    def run_memref_reshape(
        self, interpreter: Interpreter, op: tpu.MemRefReshapeOp, args: PythonValues
    ):
        (src,) = args
        if not src.view.flags.c_contiguous:
            d = device_of(interpreter).index
            raise self.machine.diag.error(
                op, d, f"reshape of {src.describe()}, which is not contiguous"
            )
        return (Ref(src.buffer, src.view.reshape(op.result.type.get_shape()), src.label),)

    @impl(tpu.MemRefBitcastOp)
    def run_memref_bitcast(
        self, interpreter: Interpreter, op: tpu.MemRefBitcastOp, args: PythonValues
    ):
        (src,) = args
        if not src.view.flags.c_contiguous:
            d = device_of(interpreter).index
            raise self.machine.diag.error(
                op, d, f"bitcast of {src.describe()}, which is not contiguous"
            )
        ty = op.result.type
        # a rank-0 buffer (a complex scalar's parts) as one row: numpy views no 0-d array
        # as another width
        flat = src.view.reshape(src.view.shape or (1,))
        view = flat.view(dtype_of(ty.element_type)).reshape(ty.get_shape())
        return (Ref(src.buffer, view, src.label),)

    @impl(tpu.AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: tpu.AllocOp, args: PythonValues):
        return (self.machine.memory.alloc(device_of(interpreter), op),)

    @impl(tpu.DeallocOp)
    def run_dealloc(self, interpreter: Interpreter, op: tpu.DeallocOp, args: PythonValues):
        self.machine.memory.dealloc(device_of(interpreter), op, args[0])
        return ()

    @impl(tpu.DeviceIdOp)
    def run_device_id(self, interpreter: Interpreter, op: tpu.DeviceIdOp, args: PythonValues):
        return (device_of(interpreter).index,)

    @impl(tpu.AxisIndexOp)
    def run_axis_index(self, interpreter: Interpreter, op: tpu.AxisIndexOp, args: PythonValues):
        mesh = self.machine.mesh
        assert mesh is not None
        coords = np.unravel_index(device_of(interpreter).index, tuple(mesh.shape))
        return (int(coords[list(mesh.names).index(op.axis.data)]),)


REDUCE_UFUNCS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
"""`tpu.reduce`'s kinds."""


class ValueFunctions(InterpreterFunctions):
    """
    Vector and scalar values (see the module docstring); `register_impls` is applied
    below, once the `ELEMENTWISE` implementations are attached.
    """

    def __init__(self, machine: Machine):
        self.machine = machine

    def _charge(self, interpreter: Interpreter, op: Operation) -> None:
        dev, chip = device_of(interpreter), self.machine.chip
        self.machine.charge(dev, op, vector_cost(chip, op), vector_flops(op))

    @impl(tpu.MatmulOp)
    def run_matmul(self, interpreter: Interpreter, op: tpu.MatmulOp, args: PythonValues):
        lhs, rhs, acc = args
        prod = np.matmul(lhs.astype(acc.dtype), rhs.astype(acc.dtype))
        out = (acc + prod).astype(acc.dtype)
        self._charge(interpreter, op)
        return (out,)

    @impl(tpu.ReduceOp)
    def run_reduce(self, interpreter: Interpreter, op: tpu.ReduceOp, args: PythonValues):
        src, acc = args
        ufunc = REDUCE_UFUNCS[op.kind.data]
        red = ufunc.reduce(src, axis=tuple(op.reduced_dims))
        out = np.asarray(ufunc(acc, red)).astype(acc.dtype)
        self._charge(interpreter, op)
        return (out,)

    @impl(tpu.TransposeOp)
    def run_transpose(self, interpreter: Interpreter, op: tpu.TransposeOp, args: PythonValues):
        self._charge(interpreter, op)  # one VPU op per element, as the timing mode charges
        return (np.transpose(args[0], op.dims),)

    @impl(tpu.IotaOp)
    def run_iota(self, interpreter: Interpreter, op: tpu.IotaOp, args: PythonValues):
        ty = op.result.type
        shape = tuple(ty.get_shape())
        dim = op.dim.value.data
        arr = np.arange(shape[dim]).reshape([-1 if i == dim else 1 for i in range(len(shape))])
        return (np.broadcast_to(arr, shape).astype(dtype_of(ty.element_type)),)

    @impl(arith.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues):
        return (constant(op),)


def _elementwise_impl(op_type: type[Operation], fn: Elementwise) -> Callable[..., Any]:
    """The `@impl(op_type)` of one `ELEMENTWISE` entry: its value, then its VPU cost."""

    def run(self: ValueFunctions, interpreter: Interpreter, op: Operation, args: PythonValues):
        out = fn(op, list(args), op.results[0].type)
        self._charge(interpreter, op)
        return out if len(op.results) > 1 else (out,)  # several: a tuple (mului_extended)

    run.__name__ = f"run_{op_type.name.replace('.', '_')}"
    return impl(op_type)(run)


for _op_type, _fn in ELEMENTWISE.items():
    setattr(
        ValueFunctions, f"run_{_op_type.name.replace('.', '_')}", _elementwise_impl(_op_type, _fn)
    )
del _op_type, _fn
register_impls(ValueFunctions)


class Impl(NamedTuple):
    """One op type's implementation: its functions object, the `@impl`, and whether it is
    a value op (replaced by placeholders in the timing mode)."""

    functions: InterpreterFunctions
    run: Callable[..., Any]
    value: bool


def impl_table(machine: Machine) -> dict[type[Operation], Impl]:
    """Every local op's implementation, by op type."""
    table: dict[type[Operation], Impl] = {}
    for ft, value in ((MemoryFunctions(machine), False), (ValueFunctions(machine), True)):
        for op_type, run in type(ft)._impls():  # pyright: ignore[reportPrivateUsage]
            table[op_type] = Impl(ft, run, value)
    return table


__all__ = [
    "DEVICE_KEY",
    "Impl",
    "Machine",
    "MemoryFunctions",
    "ValueFunctions",
    "device_of",
    "impl_table",
    "placeholder_values",
    "vector_flops",
    "vector_cost",
]
