"""
Canonicalization patterns for `collective` ops, run by xDSL's `canonicalize` pass through
`HasCanonicalizationPatternsTrait` (see the package docstring): a collective over a
group of one device is no collective.
"""

from __future__ import annotations

from shardc.dialects import collective
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)


class RemoveTrivialCollective(RewritePattern):
    """
    A collective over groups of one device returns its operands unchanged (a permute
    only when its one rank sends to itself; with no pairs it would produce zeros).
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: collective.CollectiveOp, rewriter: PatternRewriter) -> None:
        if op.IS_START or op.group_size() != 1:
            return
        if isinstance(op, collective.PermuteOp) and op.source_target_pairs != [(0, 0)]:
            return
        if tuple(op.input_types()) != tuple(op.value_types()):
            return
        rewriter.replace(op, [], list(op.operands))
