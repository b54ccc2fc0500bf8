"""
What both importers share: the statistics they report, building `hlo` / `spmd` /
`collective` ops with the source location of the op they come from (so that a verifier
failure in the output points at the input line), element types, reduction kinds, and
turning device groups into a collective's `on @mesh[...]` or `on groups [[...]]`.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from shardc.diagnostics import DiagnosticError, caret_location, format_diagnostic
from shardc.dialects import collective, hlo, spmd
from shardc.dialects.syntax import i64_array, i64_attr, splat_elements
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    LocationAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i1,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

REDUCTION_KINDS = ("add", "mul", "max", "min")


@dataclass
class ImportStats:
    """What an import saw: the source format, the output level and the ops it converted."""

    source_format: str
    level: str = "G"
    devices: int = 1
    ops: Counter[str] = field(default_factory=Counter[str])
    constructs: Counter[str] = field(default_factory=Counter[str])
    """Non-op constructs: sharding forms, inlined calls, fusions, async pairs..."""

    def seen(self) -> set[str]:
        return set(self.ops) | set(self.constructs)

    def summary(self) -> str:
        ops = ", ".join(f"{k} x{v}" for k, v in sorted(self.ops.items()))
        lines = [
            f"format: {self.source_format}",
            f"level: {self.level} ({self.devices} device{'s' if self.devices != 1 else ''})",
            f"ops: {ops or 'none'}",
        ]
        if self.constructs:
            lines.append(
                "constructs: " + ", ".join(f"{k} x{v}" for k, v in sorted(self.constructs.items()))
            )
        return "\n".join(lines)


@dataclass
class ImportResult:
    module: ModuleOp
    stats: ImportStats


# Converter tables --------------------------------------------------------------------------

ConverterT = TypeVar("ConverterT", bound=Callable[..., Any])


MALFORMED = (
    IndexError,
    KeyError,
    TypeError,
    AttributeError,
    OverflowError,
    ZeroDivisionError,
    VerifyException,
)
"""What a converter raises on an op malformed in a way no check foresaw (an operand list,
an attribute of the wrong kind or out of range): the importers report it as a diagnostic
at the op, never as an internal error (issue 16). The checks themselves raise located
`ValueError`s."""


class ConverterTable(dict[str, ConverterT]):
    """Source op name -> converter, filled by the `converts` decorator (MLIR's conversion
    patterns are keyed by op the same way)."""

    def converts(self, *names: str) -> Callable[[ConverterT], ConverterT]:
        def register(converter: ConverterT) -> ConverterT:
            for name in names:
                self[name] = converter
            return converter

        return register


# Element types -----------------------------------------------------------------------------


def supported_element(ty: Attribute) -> bool:
    return hlo.element_kind(ty) is not None


def check_tensor_type(ty: Attribute, what: str) -> TensorType:
    """A supported tensor type, or a `ValueError` saying what is wrong."""
    if not isinstance(ty, TensorType):
        raise ValueError(f"{what} has type {ty}; shardc imports ranked tensors only")
    if not supported_element(ty.element_type):
        raise ValueError(
            f"{what} has element type {ty.element_type}, which shardc does not support "
            f"({hlo.SUPPORTED_TYPES})"
        )
    if any(d < 0 for d in ty.get_shape()):
        raise ValueError(f"{what} has a dynamic shape {ty}")
    return ty


def is_float(ty: Attribute) -> bool:
    return isinstance(ty, Float16Type | BFloat16Type | Float32Type | Float64Type)


def is_bool(ty: Attribute) -> bool:
    return isinstance(ty, IntegerType) and ty.width.data == 1


def identity_value(kind: str, element: Attribute) -> float | int | bool:
    """The identity of a reduction kind for an element type."""
    if is_bool(element):
        return {"add": False, "mul": True, "max": False, "min": True}[kind]
    if is_float(element):
        return {"add": 0.0, "mul": 1.0, "max": -math.inf, "min": math.inf}[kind]
    assert isinstance(element, IntegerType)
    bits = element.width.data
    return {"add": 0, "mul": 1, "max": -(1 << (bits - 1)), "min": (1 << (bits - 1)) - 1}[kind]


# Building ops ------------------------------------------------------------------------------


class Emitter:
    """Appends ops to a block; every op gets the location of the source op being converted."""

    def __init__(self, block: Block):
        self.block = block
        self.location: LocationAttr | None = None
        """`Operation.location` of the ops added next: the source op's (`locations.py`)."""
        self.mesh_name: str | None = None
        self.mesh: spmd.MeshAttr | None = None

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        if self.location is not None:
            op.location = self.location
        return op

    def value(self, op: Operation) -> SSAValue:
        self.add(op)
        return op.results[0]

    # constants ---------------------------------------------------------------------------

    def splat(self, value: float | int | bool, ty: TensorType) -> SSAValue:
        if is_bool(ty.element_type):
            value = int(bool(value))
        elif not is_float(ty.element_type):
            value = int(value)
        else:
            value = float(value)
        # one stored element whatever the shape (from_list would repeat it prod(shape) times)
        return self.value(hlo.ConstantOp(splat_elements(ty, value)))

    def scalar_like(self, value: float | int | bool, like: SSAValue) -> SSAValue:
        ty = like.type
        assert isinstance(ty, TensorType)
        return self.splat(value, ty)

    # elementwise --------------------------------------------------------------------------

    BINARY = {
        "add": hlo.AddOp,
        "sub": hlo.SubOp,
        "mul": hlo.MulOp,
        "div": hlo.DivOp,
        "max": hlo.MaxOp,
        "min": hlo.MinOp,
        "pow": hlo.PowOp,
        "and": hlo.AndOp,
        "or": hlo.OrOp,
    }
    UNARY = {
        "neg": hlo.NegOp,
        "exp": hlo.ExpOp,
        "log": hlo.LogOp,
        "tanh": hlo.TanhOp,
        "sqrt": hlo.SqrtOp,
        "rsqrt": hlo.RsqrtOp,
        "abs": hlo.AbsOp,
        "sin": hlo.SinOp,
        "cos": hlo.CosOp,
        "logistic": hlo.LogisticOp,
        "not": hlo.NotOp,
    }

    def binary(self, kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.value(self.BINARY[kind](a, b))

    def unary(self, kind: str, a: SSAValue) -> SSAValue:
        return self.value(self.UNARY[kind](a))

    def compare(self, direction: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.value(hlo.CompareOp(direction, a, b))

    def select(self, p: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.value(hlo.SelectOp(p, a, b))

    def convert(self, a: SSAValue, ty: Attribute) -> SSAValue:
        if a.type == ty:
            return a
        assert isinstance(ty, TensorType)
        return self.value(hlo.ConvertOp(a, ty))

    def broadcast(self, a: SSAValue, dims: Sequence[int], ty: TensorType) -> SSAValue:
        if a.type == ty and list(dims) == list(range(len(dims))):
            return a
        return self.value(hlo.BroadcastOp(a, dims, ty))

    def broadcast_scalar(self, a: SSAValue, like: SSAValue) -> SSAValue:
        """A rank-0 value broadcast to `like`'s shape (with `a`'s element type)."""
        a_ty, l_ty = a.type, like.type
        assert isinstance(a_ty, TensorType) and isinstance(l_ty, TensorType)
        if a_ty.get_shape() == l_ty.get_shape():
            return a
        return self.broadcast(a, [], TensorType(a_ty.element_type, l_ty.get_shape()))

    def reshape(self, a: SSAValue, ty: TensorType) -> SSAValue:
        if a.type == ty:
            return a
        return self.value(hlo.ReshapeOp(a, ty))

    def transpose(self, a: SSAValue, perm: Sequence[int]) -> SSAValue:
        if list(perm) == list(range(len(perm))):
            return a
        return self.value(hlo.TransposeOp(a, perm))

    def slice(
        self,
        a: SSAValue,
        start: Sequence[int],
        limit: Sequence[int],
        strides: Sequence[int] | None = None,
    ) -> SSAValue:
        return self.value(hlo.SliceOp(a, start, limit, strides))

    def reduce(
        self,
        kind: str,
        a: SSAValue,
        dims: Sequence[int],
        init: SSAValue | None = None,
        init_value: float | int | bool | None = None,
    ) -> SSAValue:
        """`hlo.reduce` from the kind's identity, combined with `init` unless it is that identity."""
        result = self.value(hlo.ReduceOp(kind, a, dims))
        ty = a.type
        assert isinstance(ty, TensorType)
        if init is None:
            return result
        ident = identity_value(kind, ty.element_type)
        if init_value is not None and _same_value(init_value, ident):
            return result
        return self.binary(kind, result, self.broadcast_scalar(init, result))

    # collectives --------------------------------------------------------------------------

    def group_props(self, groups: list[list[int]]) -> dict[str, Attribute]:
        """`on @mesh[axes]` when the groups are a mesh's axis groups, else explicit groups."""
        if self.mesh is not None and self.mesh_name is not None:
            axes = mesh_axes_for_groups(self.mesh, groups)
            if axes is not None:
                return {
                    "mesh": SymbolRefAttr(self.mesh_name),
                    "mesh_axes": ArrayAttr(StringAttr(a) for a in axes),
                }
        return {"groups": ArrayAttr(i64_array(g) for g in groups)}

    def collective(
        self,
        cls: type[collective.CollectiveOp],
        operands: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        props: dict[str, Attribute],
    ) -> Operation:
        op = cls.create(operands=list(operands), result_types=list(result_types), properties=props)
        return self.add(op)


def _same_value(a: float | int | bool, b: float | int | bool) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return False
    return a == b


def mesh_axes_for_groups(mesh: spmd.MeshAttr, groups: list[list[int]]) -> list[str] | None:
    """Mesh axes whose groups (with rank order) are exactly `groups`, if any."""
    want = sorted(tuple(g) for g in groups)
    names = mesh.names
    for k in range(1, len(names) + 1):
        for axes in itertools.permutations(names, k):
            if sorted(tuple(g) for g in mesh.groups(list(axes))) == want:
                return list(axes)
    return None


def pairs_on_mesh(
    mesh: spmd.MeshAttr, pairs: list[tuple[int, int]]
) -> tuple[list[str], list[tuple[int, int]]] | None:
    """
    Mesh axes and rank pairs such that every group of those axes permutes the same way
    as the device pairs say (and no pair crosses groups), if any.
    """
    names = mesh.names
    for k in range(1, len(names) + 1):
        for axes in itertools.permutations(names, k):
            groups = mesh.groups(list(axes))
            where = spmd.group_ranks(groups)
            per_group: dict[int, set[tuple[int, int]]] = {i: set() for i in range(len(groups))}
            ok = True
            for s, t in pairs:
                gs, rs = where[s]
                gt, rt = where[t]
                if gs != gt:
                    ok = False
                    break
                per_group[gs].add((rs, rt))
            if not ok:
                continue
            sets = list(per_group.values())
            if all(s == sets[0] for s in sets):
                return list(axes), sorted(sets[0])
    return None


def shift_of(pairs: list[tuple[int, int]], size: int) -> int | None:
    """k if the pairs are exactly r -> (r + k) mod size for every rank."""
    if len(pairs) != size or not pairs:
        return None
    k = (pairs[0][1] - pairs[0][0]) % size
    if sorted(pairs) == sorted((r, (r + k) % size) for r in range(size)):
        return k if k <= size // 2 else k - size
    return None


def scalar_i32() -> TensorType:
    return TensorType(i32, [])


def with_shape(ty: TensorType, shape: Sequence[int]) -> TensorType:
    return TensorType(ty.element_type, list(shape))


def bool_type(like: TensorType) -> TensorType:
    return TensorType(i1, like.get_shape())


def located_error(location: LocationAttr | None, filename: str, message: str) -> DiagnosticError:
    pos = caret_location(location) if location is not None else None
    if pos is None:
        return DiagnosticError(f"{filename}: error: {message}")
    return DiagnosticError(format_diagnostic(pos, message))


def make_function(
    name: str,
    block: Block,
    result_types: Sequence[Attribute],
    arg_attrs: Sequence[dict[str, Attribute]] | None = None,
    res_attrs: Sequence[dict[str, Attribute]] | None = None,
) -> func.FuncOp:
    from xdsl.dialects.builtin import DictionaryAttr, FunctionType
    from xdsl.ir import Region

    ft = FunctionType.from_lists([a.type for a in block.args], list(result_types))
    f = func.FuncOp(name, ft, Region(block))
    if arg_attrs is not None and any(arg_attrs):
        f.arg_attrs = ArrayAttr(DictionaryAttr(d) for d in arg_attrs)
    if res_attrs is not None and any(res_attrs):
        f.res_attrs = ArrayAttr(DictionaryAttr(d) for d in res_attrs)
    return f


__all__ = [
    "ConverterTable",
    "Emitter",
    "ImportResult",
    "ImportStats",
    "check_tensor_type",
    "i64_attr",
    "identity_value",
    "mesh_axes_for_groups",
]
