"""
Canonicalization patterns for `hlo` ops, run by xDSL's `canonicalize` pass through
`HasCanonicalizationPatternsTrait` (see the package docstring). Each removes something
later passes would otherwise have to see through: a broadcast of a constant, a transpose
of a transpose, a reshape or convert that changes nothing.
"""

from __future__ import annotations

import math

import numpy as np
from shardc.dialects import hlo
from shardc.dialects.syntax import splat_element, splat_elements
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

MAX_FOLDED_ELEMENTS = 1 << 16
"""A non-splat constant is broadcast at compile time only up to this many elements."""


class BroadcastOfConstant(RewritePattern):
    """`broadcast(constant c)` is a constant of the broadcast shape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hlo.BroadcastOp, rewriter: PatternRewriter) -> None:
        if not isinstance(source := op.operand.owner, hlo.ConstantOp):
            return
        result_type = op.result.type
        assert isinstance(result_type, TensorType)
        value = source.value
        if (first := splat_element(value)) is not None:
            folded = splat_elements(result_type, first)  # one element, whatever the shape
        elif math.prod(result_type.get_shape()) <= MAX_FOLDED_ELEMENTS:
            data = broadcast_values(value, op.dims, result_type)
            folded = DenseIntOrFPElementsAttr.from_list(result_type, data)  # pyright: ignore
        else:
            return
        rewriter.replace(op, hlo.ConstantOp(folded))


def broadcast_values(
    value: DenseIntOrFPElementsAttr, dims: tuple[int, ...], result_type: TensorType
) -> list[float] | list[int]:
    """The flat row-major values of broadcast_in_dim(value, dims) (StableHLO semantics)."""
    source_shape = value.get_shape()
    array = np.array(value.get_values()).reshape(source_shape)
    result_shape = result_type.get_shape()
    expanded = [1] * len(result_shape)
    for i, d in enumerate(dims):
        expanded[d] = source_shape[i]
    return np.broadcast_to(array.reshape(expanded), result_shape).ravel().tolist()


class IdentityBroadcast(RewritePattern):
    """A broadcast to its own type with dims 0..n-1 is its operand."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hlo.BroadcastOp, rewriter: PatternRewriter) -> None:
        if op.operand.type == op.result.type and op.dims == tuple(range(len(op.dims))):
            rewriter.replace(op, [], [op.operand])


class ComposeTransposes(RewritePattern):
    """`transpose(transpose(x, p1), p2)` is one transpose; the identity one disappears."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hlo.TransposeOp, rewriter: PatternRewriter) -> None:
        if op.perm == tuple(range(len(op.perm))):
            rewriter.replace(op, [], [op.operand])
            return
        if not isinstance(inner := op.operand.owner, hlo.TransposeOp):
            return
        composed = [inner.perm[p] for p in op.perm]
        if composed == list(range(len(composed))):
            rewriter.replace(op, [], [inner.operand])
        else:
            rewriter.replace(op, hlo.TransposeOp(inner.operand, composed))


class FoldReshape(RewritePattern):
    """A reshape to the same type is its operand; a reshape of a reshape is one reshape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hlo.ReshapeOp, rewriter: PatternRewriter) -> None:
        if op.operand.type == op.result.type:
            rewriter.replace(op, [], [op.operand])
        elif isinstance(inner := op.operand.owner, hlo.ReshapeOp):
            result_type = op.result.type
            assert isinstance(result_type, TensorType)
            rewriter.replace(op, hlo.ReshapeOp(inner.operand, result_type))


class FoldIdentityConvert(RewritePattern):
    """A convert to the operand's own type is its operand."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hlo.ConvertOp, rewriter: PatternRewriter) -> None:
        if op.operand.type == op.result.type:
            rewriter.replace(op, [], [op.operand])


HLO_PATTERNS: tuple[RewritePattern, ...] = (
    BroadcastOfConstant(),
    IdentityBroadcast(),
    ComposeTransposes(),
    FoldReshape(),
    FoldIdentityConvert(),
)
