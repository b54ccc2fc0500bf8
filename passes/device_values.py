"""
What a small integer expression evaluates to on every device: the shared matcher of the
"this device's block" patterns (`reduce-scatter-create`, `all-gather-slice-simplify`,
`all-reduce-reassociate`).

The partitioner computes a device's block offset as `spmd.axis_index * block` (several
axes: the row-major shard index times the block); imported XLA programs use lookup tables
(`dynamic_slice` of a constant table at the device's index), `iota`, subtraction, and so
on. Rather than match each spelling, `device_values` evaluates the expression once per
device of the mesh (an abstract interpretation over the device id) and the passes check
the per-device numbers against the collective's groups and ranks. An expression that
reads anything else (a function argument, a float, an op not listed) is unknown: None.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from shardc.dialects import collective, hlo, spmd
from shardc.dialects.spmd import MeshAttr, group_ranks
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import Operation, SSAValue

MAX_ELEMENTS = 4096
"""Bigger index tensors are not evaluated (they are no offsets)."""
MAX_DEPTH = 64


def device_values(value: SSAValue, mesh: MeshAttr) -> np.ndarray | None:
    """
    `value` on every device as an int64 array of shape (devices, *value's shape), or None
    when it is not a function of the device's mesh coordinates alone.
    """
    got = _Evaluator(mesh).eval(value, 0)
    if got is None:
        return None
    return np.broadcast_to(got, (mesh.device_count, *got.shape[1:]))


def scalar_device_values(value: SSAValue, mesh: MeshAttr) -> np.ndarray | None:
    """A rank-0 integer `value` on every device: shape (devices,)."""
    got = device_values(value, mesh)
    if got is None:
        return None
    return got.reshape(got.shape[0])


def device_ranks(op: collective.CollectiveOp) -> tuple[list[list[int]], np.ndarray]:
    """The op's groups and each device's rank in its group (indexed by device id)."""
    groups = op.device_groups()
    ranks = np.zeros(sum(len(g) for g in groups), dtype=np.int64)
    for d, (_, r) in group_ranks(groups).items():
        ranks[d] = r
    return groups, ranks


def clamped_offsets(
    indices: Sequence[SSAValue], shape: Sequence[int], sizes: Sequence[int], mesh: MeshAttr
) -> list[np.ndarray] | None:
    """
    The start offsets of a dynamic_slice (or dynamic_update_slice) on every device, each
    clamped into bounds as StableHLO does; None when one is not device-computable.
    """
    out: list[np.ndarray] = []
    for index, dim, size in zip(indices, shape, sizes, strict=True):
        values = scalar_device_values(index, mesh)
        if values is None:
            return None
        out.append(np.clip(values, 0, dim - size))
    return out


def is_invariant(values: np.ndarray) -> bool:
    return bool(np.all(values == values[0]))


def _int_type(value: SSAValue) -> tuple[TensorType, int, int] | None:
    """The tensor type and the value range [lo, hi) of an i1/i32/i64 tensor."""
    ty = value.type
    if not isinstance(ty, TensorType) or not isinstance(ty.element_type, IntegerType):
        return None
    width = ty.element_type.width.data
    if width == 1:
        return ty, 0, 2
    if width not in (32, 64):
        return None
    return ty, -(1 << (width - 1)), 1 << (width - 1)


_COMPARE = {
    "EQ": np.equal,
    "NE": np.not_equal,
    "LT": np.less,
    "LE": np.less_equal,
    "GT": np.greater,
    "GE": np.greater_equal,
}


@functools.lru_cache(maxsize=16)
def _mesh_coords(mesh: MeshAttr) -> np.ndarray:
    """(devices, axes): every device's coordinates (row-major ids)."""
    grids = np.meshgrid(*(np.arange(n, dtype=np.int64) for n in mesh.shape), indexing="ij")
    return np.stack([g.reshape(-1) for g in grids], axis=1).reshape(
        mesh.device_count, len(mesh.shape)
    )


class _Evaluator:
    """
    Values have a leading device axis of size `devices`, or 1 when the same on every
    device (constants and what is computed from them only), so that big meshes and
    lookup tables stay cheap; numpy broadcasting mixes the two.
    """

    def __init__(self, mesh: MeshAttr):
        self.mesh = mesh
        self.devices = mesh.device_count
        self.memo: dict[SSAValue, np.ndarray | None] = {}

    def eval(self, value: SSAValue, depth: int) -> np.ndarray | None:
        if value in self.memo:
            return self.memo[value]
        result = None
        if depth < MAX_DEPTH:
            result = self._eval(value, depth)
        if result is not None:
            typed = _int_type(value)
            if typed is None:
                result = None
            else:
                ty, lo, hi = typed
                if (
                    result.shape[1:] != tuple(ty.get_shape())
                    or result.size > MAX_ELEMENTS * 64
                    or np.any(result < lo)
                    or np.any(result >= hi)
                ):
                    result = None  # overflow: the program's values would wrap
        self.memo[value] = result
        return result

    def _eval(self, value: SSAValue, depth: int) -> np.ndarray | None:
        op = value.owner
        if not isinstance(op, Operation) or _int_type(value) is None:
            return None
        if isinstance(op, spmd.AxisIndexOp):
            if op.axis.data not in self.mesh.names:
                return None
            return _mesh_coords(self.mesh)[:, self.mesh.names.index(op.axis.data)].copy()
        if isinstance(op, hlo.ConstantOp):
            return _constant(op)
        if isinstance(op, hlo.IotaOp):
            return _iota(op)
        # The start indices of a dynamic_slice are evaluated by `_dynamic_slice`.
        operands = op.operands[:1] if isinstance(op, hlo.DynamicSliceOp) else op.operands
        args: list[np.ndarray] = []
        for operand in operands:
            got = self.eval(operand, depth + 1)
            if got is None:
                return None
            args.append(got)
        if isinstance(op, hlo.DynamicSliceOp):
            return self._dynamic_slice(op, args[0], depth)
        rule = _RULES.get(type(op))
        return rule(op, args) if rule is not None else None

    def _dynamic_slice(
        self, op: hlo.DynamicSliceOp, src: np.ndarray, depth: int
    ) -> np.ndarray | None:
        shape = src.shape[1:]
        offsets: list[np.ndarray] = []
        for i, (dim, size) in enumerate(zip(shape, op.sizes, strict=False)):
            off = self.eval(op.start_indices[i], depth + 1)
            if off is None:
                return None
            offsets.append(np.clip(off.reshape(off.shape[0]), 0, dim - size))
        lead = max([src.shape[0], *(o.shape[0] for o in offsets)])
        if lead == 1:
            index = tuple(slice(o[0], o[0] + s) for o, s in zip(offsets, op.sizes, strict=False))
            return src[(slice(None), *index)].copy()
        out = np.empty((lead, *op.sizes), dtype=np.int64)
        for d in range(lead):
            row = src[d if src.shape[0] > 1 else 0]
            index = tuple(
                slice(o[d if o.shape[0] > 1 else 0], o[d if o.shape[0] > 1 else 0] + s)
                for o, s in zip(offsets, op.sizes, strict=False)
            )
            out[d] = row[index]
        return out


# Leaves: what a value is on every device without evaluating operands.


def _constant(op: hlo.ConstantOp) -> np.ndarray | None:
    attr = op.value
    shape = tuple(attr.get_type().get_shape())
    count = int(np.prod(shape, dtype=np.int64))
    if count > MAX_ELEMENTS:
        return None
    data = np.array([int(v) for v in attr.get_values()], dtype=np.int64)
    return np.broadcast_to(data, (count,)).reshape((1, *shape)).copy()


def _iota(op: hlo.IotaOp) -> np.ndarray | None:
    shape = tuple(op.result.type.get_shape())  # pyright: ignore
    if np.prod(shape, dtype=np.int64) > MAX_ELEMENTS:
        return None
    dim = op.iota_dimension.value.data
    ramp = np.arange(shape[dim], dtype=np.int64)
    ramp = ramp.reshape([shape[dim] if d == dim else 1 for d in range(len(shape))])
    return np.broadcast_to(ramp, (1, *shape)).copy()


# Rules: an op's value on every device from its operands' (leading device axis).


def _div(op: Operation, args: list[np.ndarray]) -> np.ndarray | None:
    a, b = args
    if np.any(b == 0):
        return None
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def _reshape(op: Operation, args: list[np.ndarray]) -> np.ndarray:
    shape = tuple(op.results[0].type.get_shape())  # pyright: ignore
    return args[0].reshape((args[0].shape[0], *shape))


def _broadcast(op: hlo.BroadcastOp, args: list[np.ndarray]) -> np.ndarray:
    res = tuple(op.result.type.get_shape())  # pyright: ignore
    src = args[0]
    lead = src.shape[0]
    expanded = [1] * len(res)
    for i, d in enumerate(op.dims):
        expanded[d] = src.shape[1 + i]
    return np.broadcast_to(src.reshape((lead, *expanded)), (lead, *res)).copy()


def _slice(op: hlo.SliceOp, args: list[np.ndarray]) -> np.ndarray:
    index = tuple(slice(lo, hi, st) for lo, hi, st in op.bounds)
    return args[0][(slice(None), *index)]


def _concatenate(op: hlo.ConcatenateOp, args: list[np.ndarray]) -> np.ndarray:
    lead = max(a.shape[0] for a in args)
    parts = [np.broadcast_to(a, (lead, *a.shape[1:])) for a in args]
    return np.concatenate(parts, axis=1 + op.dimension.value.data)


def _compare(op: hlo.CompareOp, args: list[np.ndarray]) -> np.ndarray:
    return _COMPARE[op.comparison_direction.data](args[0], args[1]).astype(np.int64)


_RULES: dict[type[Operation], Callable[[Any, list[np.ndarray]], np.ndarray | None]] = {
    hlo.AddOp: lambda op, a: a[0] + a[1],
    hlo.SubOp: lambda op, a: a[0] - a[1],
    hlo.MulOp: lambda op, a: a[0] * a[1],
    hlo.MaxOp: lambda op, a: np.maximum(a[0], a[1]),
    hlo.MinOp: lambda op, a: np.minimum(a[0], a[1]),
    hlo.DivOp: _div,
    hlo.ConvertOp: _reshape,
    hlo.ReshapeOp: _reshape,
    hlo.BroadcastOp: _broadcast,
    hlo.TransposeOp: lambda op, a: a[0].transpose([0, *(p + 1 for p in op.perm)]),
    hlo.SliceOp: _slice,
    hlo.ConcatenateOp: _concatenate,
    hlo.CompareOp: _compare,
    hlo.SelectOp: lambda op, a: np.where(a[0] != 0, a[1], a[2]),
}
