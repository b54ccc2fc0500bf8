"""Small building blocks shared by the collective optimization passes."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from shardc.dialects import collective, hlo
from shardc.dialects.spmd import MeshAttr
from shardc.dialects.syntax import i64_array, splat_elements
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free
from xdsl.utils.worklist import Worklist

SCALAR_I32 = TensorType(i32, [])


@dataclass(eq=False)
class KindsWorklist(Worklist[Operation]):
    """A walker's worklist that holds only ops of `kinds` (`sites_only`)."""

    kinds: tuple[type[Operation], ...] = ()

    def push(self, item: Operation) -> None:
        if isinstance(item, self.kinds):
            super().push(item)


def sites_only(walker: PatternRewriteWalker, *kinds: type[Operation]) -> PatternRewriteWalker:
    """
    `walker`, its worklist holding only the ops of `kinds`: those its pattern can act on
    (`op_type_rewrite_pattern`'s classes, or what a pattern tests first), the pattern doing
    nothing to any other op. The walk then rewrites the same ops in the same order (a
    worklist keeps the order its ops were pushed in; the others were no-ops) without
    popping every op of the module and handing each to the pattern (at 50k ops about a
    fifth of collective-matmul, issue 14 item 7). A push of another op is dropped (a
    removal of one it does not hold is one already).
    """
    walker._worklist = KindsWorklist(kinds=kinds)  # pyright: ignore[reportPrivateUsage]
    return walker


def check_option(pass_name: str, option: str, ok: bool, expected: str, got: object) -> None:
    """A bad pass option: one `ValueError` that the tools report as a bad pipeline."""
    if not ok:
        raise ValueError(f"pass '{pass_name}': option '{option}' must be {expected}, got {got}")


@functools.lru_cache(maxsize=256)
def _i32_literal(value: int) -> DenseIntOrFPElementsAttr:
    return DenseIntOrFPElementsAttr.from_list(SCALAR_I32, [value])


def const_i32(value: int) -> hlo.ConstantOp:
    return hlo.ConstantOp(_i32_literal(value))


def zeros(ty: TensorType) -> hlo.ConstantOp:
    return hlo.ConstantOp(splat_elements(ty, 0))


def tensor_type(value: SSAValue) -> TensorType:
    ty = value.type
    assert isinstance(ty, TensorType)
    return ty


def operand_bytes(op: Operation) -> int:
    """The bytes of `op`'s operands (a collective's message size)."""
    from shardc.dialects.sizes import tensor_bytes

    total = 0
    for value in op.operands:
        ty = tensor_type(value)
        total += tensor_bytes(ty)
    return total


def group_properties(op: collective.CollectiveOp) -> dict[str, Attribute]:
    """The `on ...` part of `op` as properties for a new collective."""
    return {k: v for k, v in op.properties.items() if k in ("mesh", "mesh_axes", "groups")}


def properties_for_groups(
    op: collective.CollectiveOp, groups: list[list[int]], mesh: MeshAttr | None
) -> dict[str, Attribute]:
    """
    Properties naming `groups` (each in rank order): `op`'s own if they are its groups,
    else `op`'s mesh axes in the order that gives them, else explicit groups.
    """
    want = sorted(tuple(g) for g in groups)
    if sorted(tuple(g) for g in op.device_groups()) == want:
        return group_properties(op)
    if op.mesh is not None and mesh is not None and len(op.axes) <= 4:
        for perm in itertools.permutations(op.axes):
            if sorted(tuple(g) for g in mesh.groups(perm)) == want:
                return {
                    "mesh": SymbolRefAttr(op.mesh.root_reference.data),
                    "mesh_axes": ArrayAttr(StringAttr(a) for a in perm),
                }
    return {"groups": ArrayAttr(i64_array(g) for g in sorted(groups))}


def erase_if_dead(values: Iterable[SSAValue], rewriter: PatternRewriter | None = None) -> None:
    """
    Erase the side-effect-free ops defining `values` that have no uses left, transitively
    (through `rewriter` inside a pattern, so that the walker hears of it).
    """
    work = [v.owner for v in values if isinstance(v.owner, Operation)]
    while work:
        op = work.pop()
        if op.parent is None or any(r.uses for r in op.results):
            continue
        if not is_side_effect_free(op):
            continue
        operands = [o.owner for o in op.operands if isinstance(o.owner, Operation)]
        if rewriter is None:
            Rewriter.erase_op(op)
        else:
            rewriter.erase(op)
        work.extend(operands)


def single_user(value: SSAValue) -> Operation | None:
    """The one op using `value` (possibly several times), or None."""
    user: Operation | None = None
    for use in value.uses:  # stop at a second user: a value with many stays O(1)
        if user is not None and use.operation is not user:
            return None
        user = use.operation
    return user


def replay_data_movement(op: Operation, value: SSAValue) -> Operation:
    """
    A copy of the reshape/transpose/slice/dynamic_slice/convert `op` applied to `value`
    instead (a dynamic_slice keeps its start indices).
    """
    if isinstance(op, hlo.DynamicSliceOp):
        return hlo.DynamicSliceOp(value, list(op.start_indices), op.sizes)
    if isinstance(op, hlo.ConvertOp):
        return hlo.ConvertOp(value, tensor_type(op.result))
    if isinstance(op, hlo.ReshapeOp):
        return hlo.ReshapeOp(value, tensor_type(op.result))
    if isinstance(op, hlo.TransposeOp):
        return hlo.TransposeOp(value, op.perm)
    if isinstance(op, hlo.SliceOp):
        lo, hi, st = zip(*op.bounds, strict=False) if op.bounds else ((), (), ())
        return hlo.SliceOp(value, list(lo), list(hi), list(st))
    raise AssertionError(f"not a data movement op: {op.name}")


def static_slice_or_value(
    value: SSAValue, starts: Sequence[int], sizes: Sequence[int]
) -> tuple[SSAValue, list[Operation]]:
    """`value[starts : starts + sizes]` (no op when that is all of it)."""
    shape = tensor_type(value).get_shape()
    if all(s == 0 for s in starts) and tuple(sizes) == tuple(shape):
        return value, []
    op = hlo.SliceOp(value, list(starts), [s + n for s, n in zip(starts, sizes, strict=False)])
    return op.result, [op]


def insert_from(
    rewriter: PatternRewriter,
    origin: Operation,
    ops: Sequence[Operation],
    point: InsertPoint | None = None,
) -> None:
    """
    Insert the new `ops` that a pattern made out of `origin` (before `origin` unless
    `point` says otherwise), each located where `origin` is: a diagnostic about a
    pass-created op then points at the source op it came from.
    """
    for op in ops:
        op.location = origin.location
    rewriter.insert(list(ops), point or InsertPoint.before(origin))


def replace_results(
    rewriter: PatternRewriter, op: Operation, values: Sequence[SSAValue], rename: bool = True
) -> None:
    """
    Erase `op`, its results replaced by `values` (already in the IR). With `rename`, each
    value takes the name of the result it replaces; a value that existed before the
    rewrite keeps its own name (`rename=False`).
    """
    for old, new in zip(op.results, values, strict=True):
        if rename:
            new.name_hint = old.name_hint
        rewriter.replace_all_uses_with(old, new)
    rewriter.erase(op)
