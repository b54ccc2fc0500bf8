"""The scheduler re-orders, never changes: dependencies, numerics and the memory limit hold."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.dialects import make_context
from shardc.interpreter import io
from shardc.parsing import parse_and_verify
from shardc.passes.schedule import (
    MemoryTracker,
    SchedulePass,
    consumed_values,
    pair_starts_and_dones,
    sync_peak,
    use_counts,
)
from xdsl.ir import Block, Operation

CTX = make_context()
T = "tensor<64x64xf32>"


@st.composite
def async_programs(draw: st.DrawFn) -> str:
    """Level-S programs on 4 devices: matmuls, elementwise ops and start/done pairs."""
    values = ["%x", "%w"]
    body: list[str] = []
    for i in range(draw(st.integers(2, 14))):
        a = draw(st.sampled_from(values))
        b = draw(st.sampled_from(values))
        kind = draw(
            st.sampled_from(["dot", "add", "tanh", "all_reduce", "permute", "all_reduce_sync"])
        )
        if kind == "dot":
            body.append(
                f"  %v{i} = hlo.dot {a}, {b}, contracting_dims = [1] x [0] : ({T}, {T}) -> {T}"
            )
        elif kind == "add":
            body.append(f"  %v{i} = hlo.add {a}, {b} : {T}")
        elif kind == "tanh":
            body.append(f"  %v{i} = hlo.tanh {a} : {T}")
        elif kind == "all_reduce_sync":
            body.append(f'  %v{i} = collective.all_reduce add {a} on @m["x"] : {T}')
        else:
            op = "all_reduce_start add" if kind == "all_reduce" else "permute_start"
            extra = "" if kind == "all_reduce" else ", shift = 1"
            body.append(
                f'  %f{i} = collective.{op} {a} on @m["x"]{extra} : {T} -> !collective.future<{T}>'
            )
            body.append(f"  %v{i} = collective.done %f{i} : !collective.future<{T}> -> {T}")
        values.append(f"%v{i}")
    results = values[2:]
    types = ", ".join([T] * len(results))
    return "\n".join(
        [
            'spmd.mesh @m = <["x"=4]>',
            f"func.func @main(%x: {T}, %w: {T}) -> ({types}) attributes {{spmd.partitioned}} {{",
            *body,
            f"  func.return {', '.join(results)} : {types}",
            "}",
        ]
    )


def replay_peak(block: Block) -> int:
    start_of = pair_starts_and_dones(block)
    tracker = MemoryTracker.for_block(block, use_counts(block, start_of))
    for op in block.ops:
        tracker.place(op, consumed_values(op, start_of))
    return tracker.peak


def assert_defined_before_use(block: Block) -> None:
    seen: set[Operation] = set()
    for op in block.ops:
        for v in op.operands:
            if isinstance(v.owner, Operation):
                assert v.owner in seen, f"{op.name} uses a value defined after it"
        seen.add(op)


@settings(max_examples=50, deadline=None)
@given(async_programs(), st.floats(1.0, 3.0), st.integers(1, 4))
def test_schedule_keeps_dependencies_numerics_and_the_memory_limit(
    text: str, slack: float, in_flight: int
) -> None:
    module = parse_and_verify(CTX, text, "<schedule>")
    block = next(o for o in module.walk() if o.name == "func.func").body.block  # pyright: ignore
    limit = int(sync_peak(block) * slack)
    function = io.find_entry(module, None, "<schedule>")
    inputs = io.random_inputs(io.signature(module, function, "<schedule>"), 0)
    before = io.run_module(module.clone(), inputs)
    SchedulePass(memory_limit=limit, max_in_flight=in_flight).apply(CTX, module)
    module.verify()
    assert_defined_before_use(block)
    assert replay_peak(block) <= limit
    after = io.run_module(module, inputs)
    for name in before:
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)


def test_a_limit_below_the_minimum_says_the_minimum() -> None:
    text = f"""
spmd.mesh @m = <["x"=4]>
func.func @main(%x: {T}) -> {T} attributes {{spmd.partitioned}} {{
  %f = collective.all_reduce_start add %x on @m["x"] : {T} -> !collective.future<{T}>
  %r = collective.done %f : !collective.future<{T}> -> {T}
  func.return %r : {T}
}}"""
    module = parse_and_verify(CTX, text, "<schedule>")
    with pytest.raises(Exception, match="below this program's minimum of 32768 bytes"):
        SchedulePass(memory_limit=1000).apply(CTX, module)
