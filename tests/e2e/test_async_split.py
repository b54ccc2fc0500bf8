"""async-split changes when a collective may run, never what it computes; inverse undoes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.dialects import collective
from shardc.parsing import parse_and_verify
from shardc.passes.async_split import AsyncSplitPass
from shardc.tests.e2e.differential import CTX, check_pass, partition
from shardc.tests.unit.strategies import DrawChooser, build_collective_program

FILECHECK = Path(__file__).parents[1] / "filecheck" / "transforms" / "async-split.mlir"
CHUNKS = FILECHECK.read_text().split("// -----")
EXAMPLES = Path(__file__).parents[2] / "examples"


def sync_count(module) -> int:  # noqa: ANN001
    return sum(isinstance(op, collective.SYNC_OPS) for op in module.walk())


@pytest.mark.parametrize("index", range(len(CHUNKS)))
def test_filecheck_programs_keep_their_values(index: int) -> None:
    check_pass(CHUNKS[index], AsyncSplitPass())
    check_pass(CHUNKS[index], AsyncSplitPass(inverse=True))


@pytest.mark.parametrize("name", ["megatron_mlp.mlir", "dp_grads.mlir", "attention.mlir"])
def test_partitioned_examples(name: str) -> None:
    text = partition((EXAMPLES / name).read_text())
    split = check_pass(text, AsyncSplitPass())
    assert sync_count(split) == 0
    joined = check_pass(text, [AsyncSplitPass(), AsyncSplitPass(inverse=True)])
    assert str(joined) == text


@st.composite
def per_device_collective_programs(draw: st.DrawFn) -> str:
    text = build_collective_program(DrawChooser(draw), max_ops=8)
    return text.replace(
        "attributes {spmd.partitioned}", "attributes {spmd.partitioned, spmd.per_device_io}"
    )


@settings(max_examples=25, deadline=None)
@given(per_device_collective_programs(), st.sampled_from([0, 0, 64, 1 << 20]))
def test_generated_programs(text: str, min_bytes: int) -> None:
    """
    Random level-S programs (every collective kind, variadic, mesh and explicit groups,
    some `_start`/`done` pairs already): values kept; the inverse after the split gives
    what the inverse alone gives (every new pair is adjacent).
    """
    split = check_pass(text, AsyncSplitPass(min_bytes=min_bytes))
    if min_bytes == 0:
        assert sync_count(split) == 0
    joined = check_pass(text, [AsyncSplitPass(min_bytes=min_bytes), AsyncSplitPass(inverse=True)])
    module = parse_and_verify(CTX, text, "<t>")
    AsyncSplitPass(inverse=True).apply(CTX, module)
    assert str(joined) == str(module)
