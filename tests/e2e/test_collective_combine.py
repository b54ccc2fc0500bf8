"""collective-combine changes how collectives are grouped, never what any device computes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.dialects import make_context
from shardc.interpreter import io
from shardc.parsing import parse_and_verify
from shardc.passes.collective_combine import CollectiveCombinePass
from shardc.passes.collective_stats import CollectiveStats

EXAMPLES = Path(__file__).parents[2] / "examples"
CTX = make_context()


def run_before_and_after(text: str, threshold: int, max_count: int) -> tuple[int, int]:
    module = parse_and_verify(CTX, text, "<combine>")
    function = io.find_entry(module, None, "<combine>")
    inputs = io.random_inputs(io.signature(module, function, "<combine>"), 0)
    before = io.run_module(module.clone(), inputs)
    count_before = sum(CollectiveStats.of(module).counts.values())
    CollectiveCombinePass(threshold_bytes=threshold, max_count=max_count).apply(CTX, module)
    module.verify()
    after = io.run_module(module, inputs)
    for name in before:
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)
    return count_before, sum(CollectiveStats.of(module).counts.values())


def test_dp_grads_combines_all_eight_all_reduces() -> None:
    text = (EXAMPLES / "dp_grads.mlir").read_text()
    assert run_before_and_after(text, 32 << 20, 256) == (8, 1)


@pytest.mark.parametrize(("threshold", "count", "expected"), [(600_000, 256, 4), (32 << 20, 3, 3)])
def test_dp_grads_respects_threshold_and_count(threshold: int, count: int, expected: int) -> None:
    text = (EXAMPLES / "dp_grads.mlir").read_text()
    assert run_before_and_after(text, threshold, count)[1] == expected


@st.composite
def collective_chains(draw: st.DrawFn) -> str:
    """Random level-S programs: collectives of mixed kinds on a 2x2 mesh, some dependent."""
    lines = ['spmd.mesh @mesh = <["a"=2, "b"=2]>']
    values = ["%x", "%y"]
    body: list[str] = []
    gathered: list[tuple[str, str]] = []  # all_gather results (other shapes) are returned only
    for i in range(draw(st.integers(2, 10))):
        src = draw(st.sampled_from(values))
        axis = draw(st.sampled_from(['"a"', '"b"', '"a", "b"']))
        kind = draw(
            st.sampled_from(["all_reduce add", "all_reduce max", "elementwise", "all_gather"])
        )
        if kind == "elementwise":
            body.append(f"  %v{i} = hlo.tanh {src} : tensor<4x4xf32>")
        elif kind == "all_gather":
            dim = draw(st.integers(0, 1))
            n = 4 if axis == '"a", "b"' else 2
            shape = ["4", "4"]
            shape[dim] = str(4 * n)
            out = f"tensor<{'x'.join(shape)}xf32>"
            body.append(
                f"  %v{i} = collective.all_gather {src} on @mesh[{axis}], dim = {dim} : "
                f"(tensor<4x4xf32>) -> {out}"
            )
            gathered.append((f"%v{i}", out))
            continue
        else:
            body.append(f"  %v{i} = collective.{kind} {src} on @mesh[{axis}] : tensor<4x4xf32>")
        values.append(f"%v{i}")
    results = values[2:] + [v for v, _ in gathered]
    types = ", ".join(["tensor<4x4xf32>"] * len(values[2:]) + [t for _, t in gathered])
    if not results:
        results, types = ["%x"], "tensor<4x4xf32>"
    lines.append(
        "func.func @main(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> "
        f"({types}) attributes {{spmd.partitioned}} {{"
    )
    lines += body
    lines.append(f"  func.return {', '.join(results)} : {types}")
    lines.append("}")
    return "\n".join(lines)


@settings(max_examples=40, deadline=None)
@given(collective_chains(), st.sampled_from([64, 200, 1 << 20]), st.integers(1, 4))
def test_combining_keeps_every_value(text: str, threshold: int, count: int) -> None:
    run_before_and_after(text, threshold, count)
