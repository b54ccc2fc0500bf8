"""
Differential tests of `hlo.while` and `hlo.case` under partitioning: a scan-like loop (a
counter, a weight stack sliced by it with dynamic_slice, a matmul, tanh; a constraint inside
the body so that its collectives live in the body) and a case over branches computing
different things, under hypothesis-generated meshes, shapes and shardings, run at level S
after `spmd-pipeline` (every collective pass runs over them), must compute what level G
computes. The structure checks: the carried value keeps one sharding (no collective
between iterations when the body keeps it), collectives of the body stay in the body.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import hlo, make_context
from shardc.parsing import parse_and_verify
from shardc.passes.spmd_pipeline import SpmdPipelinePass
from shardc.tests.e2e.differential import partition, partition_and_compare
from shardc.tests.e2e.test_partition_pad_reverse import MESHES, draw_sharding, sharding_str

CTX = make_context()
SIZES = [2, 4, 6, 8]


def ty(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def scan_program(mesh, b: int, h: int, layers: int, s, trips: int | None = None) -> str:
    """`s(shape)` draws a sharding; x: [b, h], w: [layers, h, h]; `trips` iterations
    (default: one per layer)."""
    mesh_text = ", ".join(f'"{a}"={n}' for a, n in mesh)
    x, w = ty((b, h)), ty((layers, h, h))
    return f"""spmd.mesh @mesh = <[{mesh_text}]>
func.func @main(%a: {x} {{spmd.sharding = #spmd.sharding{s((b, h))}}}, %w: {w} {{spmd.sharding = #spmd.sharding{s((layers, h, h))}}})
    -> ({x} {{spmd.sharding = #spmd.sharding{s((b, h))}}}) {{
  %c0 = hlo.constant dense<0> : tensor<i32>
  %r:3 = hlo.while(%i = %c0, %x = %a, %ws = %w) : tensor<i32>, {x}, {w} cond {{
    %n = hlo.constant dense<{layers if trips is None else trips}> : tensor<i32>
    %p = hlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    hlo.return %p : tensor<i1>
  }} do {{
    %z = hlo.constant dense<0> : tensor<i32>
    %one = hlo.constant dense<1> : tensor<i32>
    %slice = hlo.dynamic_slice %ws [%i, %z, %z] sizes = [1, {h}, {h}] : ({w}, tensor<i32>, tensor<i32>, tensor<i32>) -> {ty((1, h, h))}
    %layer = hlo.reshape %slice : ({ty((1, h, h))}) -> {ty((h, h))}
    %xc = spmd.constraint %x {s((b, h))} : {x}
    %y = hlo.dot %xc, %layer, contracting_dims = [1] x [0] : ({x}, {ty((h, h))}) -> {x}
    %t = hlo.tanh %y : {x}
    %i1 = hlo.add %i, %one : tensor<i32>
    hlo.return %i1, %t, %ws : tensor<i32>, {x}, {w}
  }}
  func.return %r#1 : {x}
}}
"""


@st.composite
def scans(draw: st.DrawFn) -> str:
    mesh = draw(st.sampled_from(MESHES))
    b, h = draw(st.sampled_from(SIZES)), draw(st.sampled_from(SIZES))
    layers = draw(st.integers(1, 3))
    trips = draw(st.integers(0, layers))
    s = lambda shape: sharding_str(draw_sharding(draw, mesh, shape))  # noqa: E731
    return scan_program(mesh, b, h, layers, s, trips)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scans(), st.integers(0, 3))
def test_scan_partitions_to_the_same_numbers(text: str, seed: int) -> None:
    partition_and_compare(text, seed, note=text)


def case_program(mesh, n: int, s) -> str:
    mesh_text = ", ".join(f'"{a}"={k}' for a, k in mesh)
    v, m = ty((n, n)), ty((n, n))
    return f"""spmd.mesh @mesh = <[{mesh_text}]>
func.func @main(%k: tensor<i32>, %a: {v} {{spmd.sharding = #spmd.sharding{s((n, n))}}}, %b: {m} {{spmd.sharding = #spmd.sharding{s((n, n))}}})
    -> ({v} {{spmd.sharding = #spmd.sharding{s((n, n))}}}) {{
  %c = hlo.case %k -> ({v}) {{
    %d = hlo.dot %a, %b, contracting_dims = [1] x [0] : ({v}, {m}) -> {v}
    hlo.return %d : {v}
  }}, {{
    %e = hlo.exp %a : {v}
    %t = hlo.transpose %e, dims = [1, 0] : ({v}) -> {v}
    hlo.return %t : {v}
  }}, {{
    %cc = spmd.constraint %b {s((n, n))} : {m}
    %g = hlo.add %cc, %a : {v}
    hlo.return %g : {v}
  }}
  func.return %c : {v}
}}
"""


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, int]:
    mesh = draw(st.sampled_from(MESHES))
    n = draw(st.sampled_from(SIZES))
    text = case_program(mesh, n, lambda shape: sharding_str(draw_sharding(draw, mesh, shape)))
    return text, n


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.integers(-1, 3), st.integers(0, 2))
def test_case_partitions_to_the_same_numbers(case, index: int, seed: int) -> None:
    text, n = case
    rng = np.random.default_rng(seed)
    inputs = {
        "in_0": np.array(index, np.int32),
        "in_1": rng.standard_normal((n, n)).astype(np.float32),
        "in_2": rng.standard_normal((n, n)).astype(np.float32),
    }
    partition_and_compare(text, inputs=inputs, note=text)


def body_and_outside(text: str) -> tuple[int, int]:
    """(collectives inside the while's regions, collectives outside) after spmd-pipeline."""
    module = parse_and_verify(CTX, text, "<test>")
    SpmdPipelinePass().apply(CTX, module)
    (loop,) = [op for op in module.walk() if isinstance(op, hlo.WhileOp)]
    inside = {op for op in loop.walk() if op.name.startswith("collective.")}
    total = {op for op in module.walk() if op.name.startswith("collective.")}
    return len(inside), len(total - inside)


def test_carried_sharding_is_kept_and_the_body_collectives_stay_in_the_body() -> None:
    # x split on rows by "x", the weight stack on its output features by "y": each
    # iteration's dot gathers its output columns (inside the body); the carry keeps
    # its sharding, so nothing is moved around the loop
    shardings = iter(
        [
            '<@mesh, [{"x"}, {}]>',
            '<@mesh, [{}, {}, {"y"}]>',
            '<@mesh, [{"x"}, {}]>',
            '<@mesh, [{"x"}, {}]>',
        ]
    )
    text = scan_program((("x", 2), ("y", 2)), 4, 8, 3, lambda shape: next(shardings))
    inside, outside = body_and_outside(text)
    assert inside >= 1 and outside == 0
    partitioned = partition(text)
    assert "hlo.while(" in partitioned and "tensor<2x8xf32>" in partitioned
    partition_and_compare(text)


PASSES = [
    "async-split",
    "collective-combine",
    "collective-combine{overlap-aware=false}",
    "micro-batch",
    "collective-matmul",
    "reduce-scatter-create",
    "all-gather-slice-simplify",
    "all-reduce-reassociate",
    "schedule",
    "canonicalize",
    "cse",
]


def test_each_collective_pass_leaves_a_while_program_computing_the_same() -> None:
    """Each pass of spmd-pipeline alone on a level-S program with collectives inside and
    outside a loop computes the same; the body's collectives stay in the body."""
    from shardc.driver.compiling import compile_module
    from shardc.interpreter import io

    shardings = iter(
        [
            '<@mesh, [{"x"}, {}]>',
            '<@mesh, [{}, {}, {"y"}]>',
            "<@mesh, [{}, {}]>",
            "<@mesh, [{}, {}]>",
        ]
    )
    level_s = partition(scan_program((("x", 2), ("y", 2)), 4, 8, 3, lambda _: next(shardings)))
    reference = parse_and_verify(CTX, level_s, "<s>")
    inside_before = _inside(reference)
    outside = [op for op in reference.walk() if op.name.startswith("collective.")]
    assert inside_before and len(outside) > len(_inside_ops(reference))
    inputs = io.random_inputs(
        io.signature(reference, io.find_entry(reference, None, "<s>"), "<s>"), 0
    )
    want = io.run_module(reference.clone(), inputs)
    for spec in PASSES:
        module = parse_and_verify(CTX, level_s, "<s>")
        compile_module(module, spec, "<s>")
        got = io.run_module(module, inputs)
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-5, err_msg=spec)
        # the body keeps its communication (collective-matmul may rewrite a gathered
        # dot into permutes, inside the body); the combiner merges nothing across it
        assert _inside_ops(module), spec
        if spec.startswith("collective-combine"):
            kinds = {op.name.removesuffix("_start") for op in _inside_ops(module)}
            assert kinds == inside_before, spec


def _inside_ops(module) -> list:
    (loop,) = [op for op in module.walk() if isinstance(op, hlo.WhileOp)]
    return [
        op
        for op in loop.walk()
        if op.name.startswith("collective.") and op.name != "collective.done"
    ]


def _inside(module) -> set[str]:
    return {op.name for op in _inside_ops(module)}


def test_level_s_timing_runs_every_iteration() -> None:
    """The timing run executes the loop: its collectives and compute add up per iteration."""
    from shardc.interpreter.testing import time_program

    def report(trips: int) -> dict:
        shardings = iter(
            ['<@mesh, [{"x"}, {}]>', '<@mesh, [{}, {}, {"y"}]>', "<@mesh, [{}, {}]>"] * 2
        )
        text = scan_program((("x", 2), ("y", 2)), 4, 8, 3, lambda _: next(shardings), trips)
        return time_program(partition(text)).report()

    one, two, five = report(1), report(2), report(5)
    per_iteration = sum(two["collectives"].values()) - sum(one["collectives"].values())
    assert per_iteration >= 1
    assert sum(five["collectives"].values()) == sum(one["collectives"].values()) + 4 * per_iteration
    step = two["compute_time_s"] - one["compute_time_s"]
    assert five["compute_time_s"] == pytest.approx(one["compute_time_s"] + 4 * step)
