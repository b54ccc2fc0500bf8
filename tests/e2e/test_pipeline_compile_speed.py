"""
The invariants issue 14 item 7's compile-time changes rely on (bench/partition_speed.py
--pipeline measures the time): each shortcut gives what the long way gives.
"""

from __future__ import annotations

import gc

from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.bench.partition_speed import program
from shardc.parsing import parse_and_verify
from shardc.passes.async_split import AsyncSplitPass, JoinAdjacentPair, SplitCollective
from shardc.passes.block_order import used_values
from shardc.passes.collective_combine import COMBINABLE, dependency_masks
from shardc.passes.spmd_pipeline import SpmdPipelinePass
from shardc.tests.e2e.differential import CTX
from shardc.tests.e2e.test_async_split import per_device_collective_programs
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriteWalker, RewritePattern


def _walked(text: str, pattern: RewritePattern, recursively: bool) -> str:
    module = parse_and_verify(CTX, text, "<t>")
    PatternRewriteWalker(pattern, apply_recursively=recursively).rewrite_module(module)
    return str(module)


@settings(max_examples=25, deadline=None)
@given(per_device_collective_programs(), st.sampled_from([0, 64, 1 << 20]))
def test_async_split_one_walk_is_the_fixpoint(text: str, min_bytes: int) -> None:
    """`async-split` walks once: a second walk (the fixpoint) would change nothing, for the
    split and for the join (also on the split's output, where every pair joins)."""
    pattern = SplitCollective(min_bytes)
    split = _walked(text, pattern, recursively=False)
    assert split == _walked(text, pattern, recursively=True)
    for source in (text, split):
        assert _walked(source, JoinAdjacentPair(), False) == _walked(
            source, JoinAdjacentPair(), True
        )


@settings(max_examples=25, deadline=None)
@given(per_device_collective_programs(), st.sampled_from([0, 64, 1 << 20]))
def test_async_split_without_a_walker_is_the_pattern(text: str, min_bytes: int) -> None:
    """`async-split` rewrites each sync collective itself (no pattern walker, a fusion's
    body not walked): the module the pattern walk makes, name hints and uses alike."""
    module = parse_and_verify(CTX, text, "<t>")
    AsyncSplitPass(min_bytes=min_bytes).apply(CTX, module)
    assert str(module) == _walked(text, SplitCollective(min_bytes), recursively=False)


def _naive_masks(block, index) -> dict[Operation, int]:  # noqa: ANN001
    masks: dict[Operation, int] = {}
    for op in block.ops:
        mask = 1 << index[op] if op in index else 0
        for value in used_values(op):
            if isinstance(value.owner, Operation) and value.owner in masks:
                mask |= masks[value.owner]
        masks[op] = mask
    return masks


@settings(max_examples=25, deadline=None)
@given(per_device_collective_programs())
def test_dependency_masks_share_without_changing(text: str) -> None:
    """`dependency_masks` reuses an operand's mask object instead of or-ing it with 0: the
    same sets as or-ing every operand's."""
    module = parse_and_verify(CTX, text, "<t>")
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                index = {
                    o: i for i, o in enumerate(o for o in block.ops if isinstance(o, COMBINABLE))
                }
                assert dependency_masks(block, index) == _naive_masks(block, index)


def test_pipeline_freezes_only_during_its_run() -> None:
    """`spmd-pipeline` freezes what survives each pass (so the collector does not walk the
    new IR again) and gives it all back: the collector's state after is as before, and the
    output is the one a run with a caller's own frozen objects (no freezing) gives."""
    text = program(200)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    fast = parse_and_verify(CTX, text, "<t>")
    SpmdPipelinePass().apply(CTX, fast)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    plain = parse_and_verify(CTX, text, "<t>")
    gc.freeze()  # a caller's own frozen objects: the pipeline leaves the collector alone
    try:
        frozen = gc.get_freeze_count()
        SpmdPipelinePass().apply(CTX, plain)
        assert gc.get_freeze_count() <= frozen  # (some freed: fewer, never more)
    finally:
        gc.unfreeze()
    assert str(fast) == str(plain)
