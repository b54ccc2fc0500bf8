"""Small building blocks shared by the collective optimization passes."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Sequence
from typing import TypeVar

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
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

SCALAR_I32 = TensorType(i32, [])


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


OpT = TypeVar("OpT", bound=Operation)


def clone_op(op: OpT, value_mapper: dict[SSAValue, SSAValue] | None = None) -> OpT:
    """
    What `op.clone(value_mapper)` makes (the same ops, properties, attributes, locations,
    name hints, and each value's uses in the same order), in one walk: each op is built
    with its operands, where xDSL 0.74 builds every op without them and walks both trees
    again to set them. The gates and `micro-batch` copy whole modules (at 10k ops a third
    cheaper, issue 14 item 7). An operand made later in the walk (a graph region) is set
    after the walk (its uses then come after the others', not in walk order).
    """
    mapper: dict[SSAValue, SSAValue] = {} if value_mapper is None else value_mapper
    blocks: dict[Block, Block] = {}
    later: list[tuple[Operation, Operation]] = []
    copy = _clone_into(op, mapper, blocks, later)
    for new, old in later:
        operands = tuple(mapper.get(v, v) for v in old.operands)
        if any(a is not b for a, b in zip(operands, new.operands, strict=True)):
            new.operands = operands  # a value made later in the walk
    return copy


def _clone_into(
    op: OpT,
    mapper: dict[SSAValue, SSAValue],
    blocks: dict[Block, Block],
    later: list[tuple[Operation, Operation]],
) -> OpT:
    """`op` copied (`clone_op`), its values into `mapper`, its blocks into `blocks`; the
    ops with an operand not mapped yet (made later, or outside `op`) into `later`."""
    found = mapper.get
    operands: list[SSAValue] = []
    unmapped = False
    for value in op._operands:  # pyright: ignore[reportPrivateUsage] (as xDSL's clone)
        new_value = found(value)
        if new_value is None:
            unmapped, new_value = True, value
        operands.append(new_value)
    copy = op.create(
        operands=operands,
        result_types=[r.type for r in op.results],
        properties=op.properties.copy(),
        attributes=op.attributes.copy(),
        location=op.location,
        successors=[blocks.get(b, b) for b in op._successors],  # pyright: ignore
        regions=[Region() for _ in op.regions],
    )
    if unmapped:
        later.append((copy, op))
    for old, new in zip(op.results, copy.results, strict=True):
        mapper[old] = new
        new.name_hint = old.name_hint
    for region, new_region in zip(op.regions, copy.regions, strict=True):
        new_blocks = [Block() for _ in region.blocks]
        blocks.update(zip(region.blocks, new_blocks, strict=True))
        if new_blocks:
            new_region.insert_block(new_blocks, 0)
        for block, new_block in zip(region.blocks, new_blocks, strict=True):
            for i, arg in enumerate(block.args):
                new_arg = new_block.insert_arg(arg.type, i, arg.location)
                new_arg.name_hint = arg.name_hint
                mapper[arg] = new_arg
            for inner in block.ops:
                new_block.add_op(_clone_into(inner, mapper, blocks, later))
    return copy
