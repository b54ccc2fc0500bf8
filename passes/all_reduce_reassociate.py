"""
`all-reduce-reassociate{reassociate-converted=false}`: `add(all_reduce(x), all_reduce(y))`
becomes `all_reduce(add(x, y))`: one collective instead of two (XLA's
AllReduceReassociate).

The elementwise op must match the reduction kind (`hlo.add` / `add`, `hlo.mul` / `mul`,
`hlo.max` / `max`, `hlo.min` / `min`); both all_reduces must have one operand, the same
kind, the same groups (mesh axes in the same order, or the same explicit groups) and the
same discardable attributes, and be used by nothing else. Chains and trees of such ops
collapse in one run (`add(add(ar0, ar1), ar2)` -> one all_reduce), and `add(ar, ar)`
(one all_reduce used twice) becomes `all_reduce(add(x, x))`.

Between an all_reduce and the op, XLA's cases are looked through:
- reshape, transpose, static slice, and a dynamic_slice whose offsets are the same on
  every device (`device_values`): pure data movement commutes with an elementwise
  reduction, so it moves before the new all_reduce (a slice then also shrinks it);
- a dynamic_slice with the same start indices on both sides right below the op (XLA's
  AllReduceDynamicSlicePattern): it may take a different block on every device, so it
  stays after the new all_reduce;
- with `reassociate-converted=true`, a widening float convert (bf16/f16 -> f32 -> f64):
  the new all_reduce then reduces the wider type, which rounds less than the original
  (an improvement, but not bit-identical; XLA's reassociate_converted_ar).

Integers give identical results (wrapping add and mul associate); floats may differ in
the last bits for add and mul (summation order), max and min are exact.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.dialects import collective, hlo
from shardc.dialects.spmd import MeshAttr, find_mesh
from shardc.passes.device_values import device_values, is_invariant
from shardc.passes.rewrite_utils import (
    erase_if_dead,
    group_properties,
    insert_from,
    replace_results,
    replay_data_movement,
    single_user,
    tensor_type,
)
from xdsl.context import Context
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    ModuleOp,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

KINDS: dict[type[Operation], str] = {
    hlo.AddOp: "add",
    hlo.MulOp: "mul",
    hlo.MaxOp: "max",
    hlo.MinOp: "min",
}
OPS = {kind: cls for cls, kind in KINDS.items()}

FLOAT_WIDTH: dict[type[Attribute], int] = {
    BFloat16Type: 16,
    Float16Type: 16,
    Float32Type: 32,
    Float64Type: 64,
}


def _widening_float(op: hlo.ConvertOp) -> bool:
    src = FLOAT_WIDTH.get(type(tensor_type(op.operand).element_type))
    dst = FLOAT_WIDTH.get(type(tensor_type(op.result).element_type))
    return src is not None and dst is not None and dst > src


@dataclass
class Side:
    all_reduce: collective.AllReduceOp
    chain: list[Operation]
    """Ops from the all_reduce up to the binary op, to replay before the new all_reduce."""


@dataclass
class Match:
    op: Operation
    """The elementwise op combining the two sides."""
    kind: str
    left: Side
    right: Side
    same_operand: bool
    """`op(ar, ar)`: one all_reduce used twice, replayed once."""
    post: list[hlo.DynamicSliceOp]
    """Identical dynamic_slices right below `op` (left side), kept after the new all_reduce."""


def identical_slices_below(
    op: Operation,
) -> tuple[SSAValue, SSAValue, Operation, Operation, list[hlo.DynamicSliceOp]]:
    """
    Look through the dynamic_slices with the same start indices on both sides right below
    `op`: the two values left, their users, and the left side's slices (outermost first).
    """
    lhs, rhs = op.operands
    post: list[hlo.DynamicSliceOp] = []
    user_l = user_r = op
    while True:
        dl, dr = lhs.owner, rhs.owner
        if not (
            isinstance(dl, hlo.DynamicSliceOp)
            and isinstance(dr, hlo.DynamicSliceOp)
            and list(dl.start_indices) == list(dr.start_indices)
            and dl.sizes == dr.sizes
            and dl.operand.type == dr.operand.type
            and single_user(lhs) is user_l
            and single_user(rhs) is user_r
        ):
            return lhs, rhs, user_l, user_r, post
        post.append(dl)
        user_l, user_r = dl, dr
        lhs, rhs = dl.operand, dr.operand


def combinable(left: Side, right: Side, kind: str) -> bool:
    """Both all_reduces reduce with `kind` over the same groups, with the same attributes."""
    al, ar = left.all_reduce, right.all_reduce
    if al.kind.data != kind or ar.kind.data != kind:
        return False
    return group_properties(al) == group_properties(ar) and al.attributes == ar.attributes


@dataclass(frozen=True)
class ReassociateAllReduce(RewritePattern):
    """`op(all_reduce(x), all_reduce(y))` -> `all_reduce(op(x, y))` (module docstring)."""

    mesh: MeshAttr | None
    converted: bool

    def _invariant_indices(self, op: hlo.DynamicSliceOp) -> bool:
        if self.mesh is None:
            return False
        for index in op.start_indices:
            values = device_values(index, self.mesh)
            if values is None or not is_invariant(values):
                return False
        return True

    def _movable(self, op: Operation) -> bool:
        """Data movement that commutes with an elementwise reduction."""
        if isinstance(op, hlo.ReshapeOp | hlo.TransposeOp | hlo.SliceOp):
            return True
        if isinstance(op, hlo.DynamicSliceOp) and self._invariant_indices(op):
            return True
        return self.converted and isinstance(op, hlo.ConvertOp) and _widening_float(op)

    def trace(self, value: SSAValue, user: Operation) -> Side | None:
        """`value` (used only by `user`) as data movement of a one-operand all_reduce."""
        chain: list[Operation] = []
        while True:
            if single_user(value) is not user:
                return None
            op = value.owner
            if isinstance(op, collective.AllReduceOp):
                if len(op.operands) != 1:
                    return None
                chain.reverse()
                return Side(op, chain)
            if not isinstance(op, Operation) or not self._movable(op):
                return None
            chain.append(op)
            user = op
            value = op.operands[0]

    def match(self, op: Operation) -> Match | None:
        kind = KINDS.get(type(op))
        if kind is None:
            return None
        lhs, rhs, user_l, user_r, post = identical_slices_below(op)
        left = self.trace(lhs, user_l)
        right = self.trace(rhs, user_r)
        if left is None or right is None or not combinable(left, right, kind):
            return None
        return Match(op, kind, left, right, lhs is rhs, post)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        found = self.match(op)
        if found is not None:
            rewrite(found, rewriter)


def _replay(chain: list[Operation], value: SSAValue, new_ops: list[Operation]) -> SSAValue:
    """`chain` applied to `value` (the copies appended to `new_ops`)."""
    for moved in chain:
        copy = replay_data_movement(moved, value)
        new_ops.append(copy)
        value = copy.results[0]
    return value


def rewrite(m: Match, rewriter: PatternRewriter) -> None:
    new_ops: list[Operation] = []
    x = _replay(m.left.chain, m.left.all_reduce.operands[0], new_ops)
    if m.same_operand:
        y = x
    else:
        y = _replay(m.right.chain, m.right.all_reduce.operands[0], new_ops)
    combined = OPS[m.kind](x, y)
    new_ops.append(combined)
    al = m.left.all_reduce
    reduced = collective.AllReduceOp(m.kind, [combined.results[0]], group_properties(al))
    reduced.attributes = dict(al.attributes)
    new_ops.append(reduced)
    result = _replay(list(reversed(m.post)), reduced.results[0], new_ops)
    insert_from(rewriter, m.op, new_ops)
    operands = list(m.op.operands)
    replace_results(rewriter, m.op, [result])
    erase_if_dead(operands, rewriter)


@dataclass(frozen=True)
class AllReduceReassociatePass(ModulePass):
    """op(all_reduce(x), all_reduce(y)) -> all_reduce(op(x, y)) (see the module docstring)."""

    name = "all-reduce-reassociate"

    reassociate_converted: bool = False
    """Also look through widening float converts (XLA's reassociate_converted_ar)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = ReassociateAllReduce(find_mesh(op), self.reassociate_converted)
        PatternRewriteWalker(pattern).rewrite_module(op)

    def any_match(self, op: ModuleOp) -> bool:
        """Whether `apply` would change anything (a walk, no copy: `spmd-pipeline`'s gate
        copies the module only if so)."""
        pattern = ReassociateAllReduce(find_mesh(op), self.reassociate_converted)
        return any(pattern.match(inner) is not None for inner in op.walk())
