"""
The pattern-based passes run their patterns to a fixpoint (xDSL's `PatternRewriteWalker`
with `apply_recursively`): a second run over their output changes nothing. Checked on
every program of each pass's FileCheck test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from shardc.parsing import parse_and_verify
from shardc.passes.all_gather_slice_simplify import AllGatherSliceSimplifyPass
from shardc.passes.all_reduce_reassociate import AllReduceReassociatePass
from shardc.passes.async_split import AsyncSplitPass
from shardc.passes.collective_matmul import CollectiveMatmulPass
from shardc.passes.reduce_scatter_create import ReduceScatterCreatePass
from shardc.tests.e2e.differential import CTX
from xdsl.passes import ModulePass

TRANSFORMS = Path(__file__).parents[1] / "filecheck" / "transforms"

PASSES: dict[str, list[ModulePass]] = {
    "reduce-scatter-create": [ReduceScatterCreatePass()],
    "all-gather-slice-simplify": [AllGatherSliceSimplifyPass()],
    "all-reduce-reassociate": [
        AllReduceReassociatePass(),
        AllReduceReassociatePass(reassociate_converted=True),
    ],
    "async-split": [AsyncSplitPass(), AsyncSplitPass(min_bytes=64), AsyncSplitPass(inverse=True)],
    "collective-matmul": [
        CollectiveMatmulPass(),
        CollectiveMatmulPass(bidirectional=False),
        CollectiveMatmulPass(f32_accumulation=True),
    ],
}

CASES = [
    pytest.param(p, chunk, id=f"{str(p)}-{i}")
    for name, passes in PASSES.items()
    for i, chunk in enumerate((TRANSFORMS / f"{name}.mlir").read_text().split("// -----"))
    if "func.func" in chunk
    for p in passes
]


@pytest.mark.parametrize(("pass_", "text"), CASES)
def test_second_run_changes_nothing(pass_: ModulePass, text: str) -> None:
    module = parse_and_verify(CTX, text, "<test>")
    pass_.apply(CTX, module)
    module.verify()
    once = str(module)
    pass_.apply(CTX, module)
    assert str(module) == once
