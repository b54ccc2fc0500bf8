"""
`spmd-propagate` drops settled ops from its sweeps (`ShardingPropagation.run_stages`,
issue 14 item 7): the propagated module must be byte for byte what the plain sweeps (every
op visited in every sweep until nothing changes, the pass before the change) give, on the
examples, the spmd-propagate lit inputs (open dimensions, user and op priorities, while /
case, sliced dimensions), the bench's generated chain and hypothesis-generated programs with
and without open dimensions.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.bench.partition_speed import program as bench_program
from shardc.dialects import make_context
from shardc.parsing import parse_and_verify
from shardc.passes import spmd_propagate
from shardc.passes.spmd_propagate import OP_PRIORITY_STAGES, SpmdPropagatePass
from shardc.tests.e2e.test_partition_differential import partitionable_programs
from xdsl.ir import Operation

ROOT = Path(__file__).parents[2]
EXAMPLES = sorted((ROOT / "examples").rglob("*.mlir"))
LIT = sorted((ROOT / "tests" / "filecheck" / "transforms").glob("spmd-propagate*.mlir"))
CASES = [t for p in LIT for t in p.read_text().split("// -----")]
OPTIONS = [{}, {"op_priorities": "on"}, {"op_priorities": "off", "sliced_dims": "on"}]


def plain_sweeps(self: spmd_propagate.ShardingPropagation, ops: list[Operation], first: int):  # type: ignore[no-untyped-def]
    """The sweeps as they were: every op in every sweep until nothing changes."""
    for stage in range(first, len(OP_PRIORITY_STAGES)):
        self.stage = stage
        changed = True
        while changed:
            changed = False
            for op in ops:
                changed |= self.propagate(op)
            for op in reversed(ops):
                changed |= self.propagate(op)


def propagated(text: str, options: dict[str, str]) -> str:
    """The module after spmd-propagate (with origins), or the error's text."""
    ctx = make_context()
    try:
        module = parse_and_verify(ctx, text, "input")
    except Exception as e:  # noqa: BLE001 - inputs that do not parse are compared as such
        return f"parse: {type(e).__name__}"
    try:
        SpmdPropagatePass(explain=True, **options).apply(ctx, module)
    except Exception as e:  # noqa: BLE001 - a refusal must be the same refusal
        return f"error: {type(e).__name__}: {e}"
    return str(module)


def both(text: str, options: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    new = propagated(text, options)
    with monkeypatch.context() as m:
        m.setattr(spmd_propagate.ShardingPropagation, "run_stages", plain_sweeps)
        old = propagated(text, options)
    return new, old


@pytest.mark.parametrize("options", OPTIONS, ids=["auto", "priorities", "sliced"])
def test_examples_and_lit_inputs_propagate_as_with_plain_sweeps(
    options: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [p.read_text() for p in EXAMPLES] + CASES + [bench_program(300)]
    compared = 0
    for text in texts:
        new, old = both(text, options, monkeypatch)
        assert new == old
        compared += not new.startswith(("parse:", "error:"))
    assert compared >= 40


def _opened(text: str, which: int) -> str:
    """Open the annotations' dimensions: none, the empty ones, or all of them."""
    if which == 1:
        return text.replace("{}", "{?}")
    if which == 2:
        return re.sub(
            r'\{("[^{}]*")?\}', lambda m: "{" + (m[1] + ", ?" if m[1] else "?") + "}", text
        )
    return text


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partitionable_programs(), st.integers(0, 2), st.sampled_from(OPTIONS))
def test_generated_programs_propagate_as_with_plain_sweeps(
    text: str, which: int, options: dict[str, str]
) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        new, old = both(_opened(text, which), options, monkeypatch)
    assert new == old


def test_the_chain_takes_one_sweep() -> None:
    """On the bench's chain every op settles in the first forward sweep: each op is
    propagated once (four times with the plain sweeps)."""
    calls: list[int] = []
    original = spmd_propagate.ShardingPropagation.propagate

    def counting(self: spmd_propagate.ShardingPropagation, op: Operation) -> bool:
        calls.append(1)
        return original(self, op)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(spmd_propagate.ShardingPropagation, "propagate", counting)
        assert not propagated(bench_program(200), {}).startswith(("parse:", "error:"))
    assert len(calls) == 200
