"""
Program inputs and outputs: the arrays a runner exchanges with the world, and how they
map to devices.

A program's `Signature` says, for its entry function, how many devices it runs on and
what each input and output array is:

* level G (no `spmd.partitioned`): one device, global arrays `in_K` / `out_K`, shardings
  ignored (the program as if on one device);
* `spmd.partitioned`: global arrays `in_K` / `out_K` of the global shape (local shape x
  the product of the axes splitting each dimension). `split_inputs` gives device d the
  block `shard_index` of every split dimension (replicated axes share one read-only
  array); for an `unreduced` axis, devices at coordinate 0 on every unreduced axis hold
  the value and the others zeros (a valid partial-sum decomposition).
  `assemble_outputs` concatenates split dimensions by shard index, requires replicated
  copies to be bit-identical (else names the first device that differs) and sums
  `unreduced` axes in rank order (accumulating bf16/f16 in f32);
* `spmd.per_device_io`: per-device arrays `in_K.D` / `out_K.D` of the local shapes;
* level T, a kernel `lower-to-tpu` made (`tpu.io = [k, m, s]`): its first k buffers are
  the inputs and the next m the outputs it writes (the rest is scratch), as the level-S
  function's arguments and results were: global arrays split and assembled by the
  shardings they keep if it has `spmd.partitioned`, else per-device arrays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from shardc.diagnostics import InterpreterError
from shardc.dialects import spmd
from shardc.dialects.spmd import module_mesh
from shardc.dialects.syntax import string_list_in_braces_str
from shardc.interpreter.devices import Executor
from shardc.interpreter.values import (
    combine_in_order,
    dtype_name,
    frozen,
    random_array,
    same_bits,
    tensor_spec,
    type_str,
)
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, MemRefType, ModuleOp, TensorType
from xdsl.ir import Attribute


@dataclass(frozen=True)
class ValueSpec:
    """One argument or result of the entry function."""

    index: int
    local_shape: tuple[int, ...]
    """The function's type (global at level G, per-device at level S)."""
    dtype: np.dtype[Any]
    sharding: spmd.ShardingAttr | None
    """The declared sharding (used to split and assemble at level S only)."""
    mesh: spmd.MeshAttr | None
    global_shape: tuple[int, ...]

    @property
    def global_type(self) -> str:
        return type_str(self.global_shape, self.dtype)

    @property
    def local_type(self) -> str:
        return type_str(self.local_shape, self.dtype)


@dataclass
class Signature:
    """How the entry function's arrays map to devices (see the module docstring)."""

    function: func.FuncOp
    level: str
    """"G", "S" or "T"."""
    per_device_io: bool
    devices: int
    mesh: spmd.MeshAttr | None
    args: list[ValueSpec]
    results: list[ValueSpec]

    @property
    def name(self) -> str:
        return self.function.sym_name.data

    def input_names(self) -> list[str]:
        return self._names("in", self.args)

    def output_names(self) -> list[str]:
        return self._names("out", self.results)

    def _names(self, prefix: str, specs: list[ValueSpec]) -> list[str]:
        if self.per_device_io:
            return [f"{prefix}_{s.index}.{d}" for s in specs for d in range(self.devices)]
        return [f"{prefix}_{s.index}" for s in specs]

    def input_specs(self) -> list[tuple[str, tuple[int, ...], np.dtype[Any]]]:
        """(name, shape, dtype) of every input array, in order."""
        if self.per_device_io:
            return [
                (f"in_{s.index}.{d}", s.local_shape, s.dtype)
                for s in self.args
                for d in range(self.devices)
            ]
        return [(f"in_{s.index}", s.global_shape, s.dtype) for s in self.args]

    def output_specs(self) -> list[tuple[str, tuple[int, ...], np.dtype[Any]]]:
        if self.per_device_io:
            return [
                (f"out_{s.index}.{d}", s.local_shape, s.dtype)
                for s in self.results
                for d in range(self.devices)
            ]
        return [(f"out_{s.index}", s.global_shape, s.dtype) for s in self.results]


def find_entry(module: ModuleOp, name: str | None, filename: str) -> func.FuncOp:
    """The function to run: `name`, else `main`, else the only public function."""
    funcs = [op for op in module.body.block.ops if isinstance(op, func.FuncOp)]
    by_name = {f.sym_name.data: f for f in funcs}
    if name is not None:
        if name not in by_name:
            have = ", ".join(f"@{n}" for n in by_name) or "none"
            raise InterpreterError(
                f"{filename}: error: entry function @{name} does not exist (functions: {have})"
            )
        return by_name[name]
    if "main" in by_name:
        return by_name["main"]
    public = [
        f
        for f in funcs
        if f.body.blocks and (f.sym_visibility is None or f.sym_visibility.data == "public")
    ]
    if len(public) == 1:
        return public[0]
    if not public:
        raise InterpreterError(f"{filename}: error: the module has no function to run")
    names = ", ".join(f"@{f.sym_name.data}" for f in public)
    raise InterpreterError(
        f"{filename}: error: no @main and several public functions ({names}); "
        "choose one with --entry"
    )


KERNEL_IO_ATTR = "tpu.io"
"""On a kernel `lower-to-tpu` made: [inputs, outputs, scratch], its buffers of each kind."""


def kernel_io(function: func.FuncOp) -> tuple[int, int, int] | None:
    """(inputs, outputs, scratch) of a kernel `lower-to-tpu` made; None for any other."""
    attr = function.attributes.get(KERNEL_IO_ATTR)
    if not isinstance(attr, ArrayAttr):
        return None
    k, m, s = (a.value.data for a in attr.data)  # pyright: ignore
    return k, m, s


Shardings = list[spmd.ShardingAttr | None]


Shapes = list[tuple[int, ...] | None]


def _interface(
    function: func.FuncOp,
) -> tuple[list[Attribute], Shardings, Shapes, list[Attribute], Shardings, Shapes]:
    """The types, shardings and declared global shapes of the entry's arrays."""
    arg_shardings, res_shardings = spmd.function_shardings(function)
    arg_shapes, res_shapes = spmd.function_global_shapes(function)
    ft = function.function_type
    io = kernel_io(function)
    if io is None:
        return (
            list(ft.inputs.data),
            arg_shardings,
            arg_shapes,
            list(ft.outputs.data),
            res_shardings,
            res_shapes,
        )
    k, m, _ = io
    types: list[Attribute] = [
        TensorType(t.element_type, t.get_shape()) if isinstance(t, MemRefType) else t
        for t in ft.inputs.data
    ]
    return (
        types[:k],
        arg_shardings[:k],
        arg_shapes[:k],
        types[k : k + m],
        arg_shardings[k : k + m],
        arg_shapes[k : k + m],
    )


def signature(module: ModuleOp, function: func.FuncOp, filename: str) -> Signature:
    partitioned = spmd.PARTITIONED_ATTR_NAME in function.attributes
    per_device = spmd.PER_DEVICE_IO_ATTR_NAME in function.attributes
    level = "S" if partitioned or per_device else "G"
    found = module_mesh(module)
    mesh = found[1] if found else None
    if kernel_io(function) is not None:
        # a kernel of a mesh-less program runs on one device: its arrays are the global ones
        level, per_device = "T", not partitioned and mesh is not None
    if level == "S" and mesh is None:
        raise InterpreterError(
            f"{filename}: error: @{function.sym_name.data} is a per-device (level S) "
            "function but the module declares no spmd.mesh"
        )
    devices = mesh.device_count if (level != "G" and mesh) else 1
    arg_types, arg_shardings, arg_shapes, res_types, res_shardings, res_shapes = _interface(
        function
    )

    def specs(types: Any, shardings: Shardings, shapes: Shapes, what: str) -> list[ValueSpec]:
        out: list[ValueSpec] = []
        for i, (ty, sharding, declared) in enumerate(zip(types, shardings, shapes, strict=False)):
            if not isinstance(ty, TensorType):
                raise InterpreterError(
                    f"{filename}: error: {what} {i} of @{function.sym_name.data} has type "
                    f"{ty}; the runner exchanges tensors only"
                )
            try:
                shape, dtype = tensor_spec(ty)
            except ValueError as e:
                raise InterpreterError(
                    f"{filename}: error: {what} {i} of @{function.sym_name.data}: {e}"
                ) from None
            smesh = None
            global_shape = shape
            if sharding is not None and not per_device:
                smesh = spmd.lookup_mesh(function, sharding.mesh_name)
            if partitioned and smesh is not None and sharding is not None:
                if smesh.device_count != devices:
                    raise InterpreterError(
                        f"{filename}: error: {what} {i} is sharded over mesh "
                        f"@{sharding.mesh_name} of {smesh.device_count} devices but the "
                        f"program runs on {devices}"
                    )
                global_shape = declared or sharding.global_shape(shape, smesh)
            out.append(ValueSpec(i, shape, dtype, sharding if smesh else None, smesh, global_shape))
        return out

    return Signature(
        function,
        level,
        per_device,
        devices,
        mesh,
        specs(arg_types, arg_shardings, arg_shapes, "argument"),
        specs(res_types, res_shardings, res_shapes, "result"),
    )


# Inputs ---------------------------------------------------------------------------------


def random_inputs(sig: Signature, seed: int) -> dict[str, np.ndarray]:
    """Seeded random inputs for every input array, drawn in order (see `random_array`)."""
    rng = np.random.default_rng(seed)
    return {name: random_array(rng, shape, dtype) for name, shape, dtype in sig.input_specs()}


def check_inputs(
    sig: Signature, arrays: Mapping[str, np.ndarray], source: str
) -> dict[str, np.ndarray]:
    """
    Validate input arrays against the signature: exactly the expected names, shapes and
    dtypes (ml_dtypes types, bf16 f8 int4..., may come as raw bytes `|V2`, which is how
    numpy saves them: `savable`). Returns the
    arrays (read-only) in order; a problem is one `InterpreterError` naming the array.
    """
    expected = sig.input_specs()
    names = [n for n, _, _ in expected]
    extra = [n for n in arrays if n not in names]
    if extra:
        want = _names_str(names)
        raise InterpreterError(
            f"{source}: error: unexpected input array '{extra[0]}': @{sig.name} expects {want}"
        )
    out: dict[str, np.ndarray] = {}
    for name, shape, dtype in expected:
        what = f"input '{name}' ({_describe(sig, name)})"
        if name not in arrays:
            raise InterpreterError(
                f"{source}: error: input array '{name}' is missing: expected "
                f"{type_str(shape, dtype)} for {_describe(sig, name)}"
            )
        a = from_savable(np.asarray(arrays[name]), dtype)
        if a.dtype != dtype:
            raise InterpreterError(
                f"{source}: error: {what} has dtype {_np_dtype_str(a.dtype)}, expected "
                f"{dtype_name(dtype)} ({type_str(shape, dtype)})"
            )
        if tuple(a.shape) != tuple(shape):
            raise InterpreterError(
                f"{source}: error: {what} has shape {list(a.shape)}, expected "
                f"{list(shape)} ({type_str(shape, dtype)}){_divisibility_hint(sig, name, a.shape)}"
            )
        view = a.view()
        view.flags.writeable = False
        out[name] = view
    return out


def _is_ml_dtype(dtype: np.dtype[Any]) -> bool:
    return dtype.type.__module__.startswith("ml_dtypes")


def savable(array: np.ndarray) -> np.ndarray:
    """
    `array` as `np.savez` can write and `np.load` read back: ml_dtypes arrays (bf16, f8,
    int4, ...) as raw bytes (`|V1`, `|V2`; numpy would write some of them with a
    descriptor it cannot read, `<f1`), every other array as it is (complex included).
    """
    array = np.asarray(array)
    if _is_ml_dtype(array.dtype):
        return np.ascontiguousarray(array).view(np.dtype(f"V{array.dtype.itemsize}"))
    return array


def from_savable(array: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """The inverse of `savable` for an array expected to have `dtype`."""
    if array.dtype.kind == "V" and _is_ml_dtype(dtype) and array.dtype.itemsize == dtype.itemsize:
        return array.view(dtype)
    return array


def _names_str(names: list[str]) -> str:
    if not names:
        return "no input arrays"
    if len(names) <= 4:
        return ", ".join(f"'{n}'" for n in names)
    return f"'{names[0]}' .. '{names[-1]}' ({len(names)} arrays)"


def _np_dtype_str(dtype: np.dtype[Any]) -> str:
    try:
        return dtype_name(dtype)
    except Exception:
        return str(dtype)


def _spec_of(sig: Signature, name: str) -> ValueSpec:
    k = int(name.split("_", 1)[1].split(".")[0])
    return sig.args[k]


def _describe(sig: Signature, name: str) -> str:
    spec = _spec_of(sig, name)
    text = f"argument {spec.index} of @{sig.name}"
    if sig.per_device_io:
        text += f" on device {name.split('.')[1]}"
    elif spec.sharding is not None:
        text += f", sharded {spec.sharding}"
    return text


def _divisibility_hint(sig: Signature, name: str, shape: tuple[int, ...]) -> str:
    spec = _spec_of(sig, name)
    if spec.sharding is None or spec.mesh is None or len(shape) != len(spec.global_shape):
        return ""
    for d, size in enumerate(shape):
        factor = spec.sharding.split_factor(d, spec.mesh)
        if size % factor:
            axes = string_list_in_braces_str(spec.sharding.dim_axes[d])
            return (
                f"; dimension {d} of size {size} is not divisible by {factor}, the "
                f"product of the mesh axes {axes} splitting it (an uneven split needs "
                f"{spmd.GLOBAL_SHAPE_ATTR_NAME} on the argument)"
            )
    return ""


def split_inputs(sig: Signature, inputs: Mapping[str, np.ndarray]) -> list[list[np.ndarray]]:
    """Every device's argument values, from validated input arrays."""
    rows = split_inputs_for(sig, inputs, range(sig.devices))
    return [rows[d] for d in range(sig.devices)]


def split_inputs_for(
    sig: Signature, inputs: Mapping[str, np.ndarray], devices: Sequence[int]
) -> dict[int, list[np.ndarray]]:
    """The argument values of `devices` only (a rank under mpirun holds its own)."""
    per_device: dict[int, list[np.ndarray]] = {d: [] for d in devices}
    for spec in sig.args:
        zeros: np.ndarray | None = None
        for d in devices:
            if sig.per_device_io:
                per_device[d].append(inputs[f"in_{spec.index}.{d}"])
                continue
            index = input_block(sig, spec, d)
            if index is None:
                if zeros is None:
                    zeros = frozen(np.zeros(spec.local_shape, dtype=spec.dtype))
                per_device[d].append(zeros)
                continue
            value = inputs[f"in_{spec.index}"]
            per_device[d].append(_padded_block(value[index], spec.local_shape))
    return per_device


def input_block(sig: Signature, spec: ValueSpec, d: int) -> tuple[slice, ...] | None:
    """
    The part of global input `spec` that device `d` holds (the whole array when it is
    replicated, or at level G), or None where the device holds zeros (a non-first
    coordinate of an unreduced axis). Clipped to the array: an uneven split's last
    block is padded afterwards (`_padded_block`).
    """
    whole = tuple(slice(0, n) for n in spec.global_shape)
    if sig.level == "G" or spec.sharding is None or spec.mesh is None:
        return whole
    sharding, mesh = spec.sharding, spec.mesh
    coords = mesh.coords(d)
    if any(coords[mesh.names.index(a)] for a in sharding.unreduced_axes):
        return None
    return tuple(
        slice(min(b * n, g), min((b + 1) * n, g))
        for b, n, g in (
            (sharding.shard_index(i, mesh, coords), n, g)
            for i, (n, g) in enumerate(zip(spec.local_shape, spec.global_shape, strict=True))
        )
    )


def padding_value(dtype: np.dtype[Any]) -> Any:
    """
    What fills the padding of an unevenly split input: NaN for floats, the largest value
    for integers, True for i1. Padding is never read into a result or a reduction, and a
    value that shows if it were is what proves it (the differential tests rely on it).
    """
    if dtype.kind == "b":
        return True
    if dtype.kind in "iu":
        return np.iinfo(dtype).max
    if dtype.kind == "c":
        return complex(np.nan, np.nan)
    return np.nan


def _padded_block(block: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A block of an uneven split, padded at the end of each dimension to `shape`."""
    if tuple(block.shape) == tuple(shape):
        return block
    out = np.full(shape, padding_value(block.dtype), dtype=block.dtype)
    out[tuple(slice(0, n) for n in block.shape)] = block
    return frozen(out)


# Outputs --------------------------------------------------------------------------------


def assemble_outputs(
    sig: Signature, per_device: list[tuple[Any, ...]], source: str
) -> dict[str, np.ndarray]:
    """Global (or per-device) output arrays from every device's results."""
    out: dict[str, np.ndarray] = {}
    for spec in sig.results:
        values = [np.asarray(r[spec.index]) for r in per_device]
        if sig.per_device_io:
            for d, v in enumerate(values):
                out[f"out_{spec.index}.{d}"] = v
            continue
        name = f"out_{spec.index}"
        if sig.level == "G" or (spec.mesh or sig.mesh) is None:  # one device, no mesh
            out[name] = values[0]
            continue
        out[name] = _assemble(sig, spec, values, name, source)
    return out


def _assemble(
    sig: Signature, spec: ValueSpec, values: list[np.ndarray], name: str, source: str
) -> np.ndarray:
    mesh = spec.mesh or sig.mesh
    assert mesh is not None
    sharding = spec.sharding
    split_axes = [a for d in (sharding.dim_axes if sharding else ()) for a in d]
    unreduced_axes = list(sharding.unreduced_axes) if sharding else []
    # devices holding the same block and the same partial sum must agree bit for bit
    copies: dict[tuple[Any, ...], int] = {}
    partials: dict[tuple[int, ...], list[tuple[tuple[int, ...], np.ndarray]]] = {}
    for d, v in enumerate(values):
        coords = mesh.coords(d)
        block = tuple(
            sharding.shard_index(i, mesh, coords) if sharding else 0
            for i in range(len(spec.local_shape))
        )
        v = values[d] = v[valid_region(block, spec)]  # an uneven split's padding is dropped
        partial = tuple(coords[mesh.names.index(a)] for a in unreduced_axes)
        key = (block, partial)
        first = copies.get(key)
        if first is None:
            copies[key] = d
            partials.setdefault(block, []).append((partial, v))
        elif not same_bits(values[first], v):
            replicated = [a for a in mesh.names if a not in split_axes and a not in unreduced_axes]
            raise InterpreterError(
                f"{source}: error: output '{name}': device {d} holds a copy that differs "
                f"from device {first}'s, but result {spec.index} of @{sig.name} is "
                f"replicated over mesh axes {string_list_in_braces_str(replicated)} "
                f"({first_difference(values[first], v)})"
            )
    result = np.empty(spec.global_shape, dtype=spec.dtype)
    for block, parts in partials.items():
        parts.sort(key=lambda p: p[0])
        value = parts[0][1] if len(parts) == 1 else combine_in_order("add", [p[1] for p in parts])
        index = tuple(
            slice(b * n, min((b + 1) * n, g))
            for b, n, g in zip(block, spec.local_shape, spec.global_shape, strict=False)
        )
        result[index] = value
    return result


def valid_region(block: tuple[int, ...], spec: ValueSpec) -> tuple[slice, ...]:
    """The part of a device's block that is not padding (block b of c rows of g)."""
    return tuple(
        slice(0, max(0, min(c, g - b * c)))
        for b, c, g in zip(block, spec.local_shape, spec.global_shape, strict=False)
    )


def first_difference(a: np.ndarray, b: np.ndarray) -> str:
    a_bits = np.ascontiguousarray(a).view(np.uint8).reshape(a.shape + (-1,))
    b_bits = np.ascontiguousarray(b).view(np.uint8).reshape(b.shape + (-1,))
    diff = np.argwhere(np.any(a_bits != b_bits, axis=-1))
    if not len(diff):
        return "same values"
    idx = tuple(int(i) for i in diff[0])
    return f"first at index {list(idx)}: {str(a[idx])} vs {str(b[idx])}"


# Running --------------------------------------------------------------------------------


def run(
    executor: Executor,
    sig: Signature,
    inputs: Mapping[str, np.ndarray],
    source: str = "<inputs>",
) -> dict[str, np.ndarray]:
    """Validate, split, run on every device and assemble: output arrays by name."""
    checked = check_inputs(sig, inputs, source)
    per_device = executor.run(sig.function, split_inputs(sig, checked))
    return assemble_outputs(sig, per_device, executor.filename)


def run_module(
    module: ModuleOp,
    inputs: Mapping[str, np.ndarray] | None = None,
    *,
    entry: str | None = None,
    seed: int = 0,
    filename: str = "<input>",
) -> dict[str, np.ndarray]:
    """Convenience: run a parsed module's entry function on arrays (random if None)."""
    function = find_entry(module, entry, filename)
    sig = signature(module, function, filename)
    if inputs is None:
        inputs = random_inputs(sig, seed)
    executor = Executor(module, filename)
    return run(executor, sig, inputs)


__all__ = [
    "Signature",
    "ValueSpec",
    "assemble_outputs",
    "check_inputs",
    "find_entry",
    "kernel_io",
    "random_inputs",
    "run",
    "run_module",
    "signature",
    "split_inputs",
]
