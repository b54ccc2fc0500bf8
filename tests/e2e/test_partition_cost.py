"""
Cost-based partitioning (issue 14 item 2, `passes/partition_cost.py`): on generated dot
programs, meshes and shardings the cost-chosen plan still computes what the global
program computes (level S vs level G), and its estimated step time is never above that of
the plan `choose_factors` alone makes (`cost-based=false`, also candidate 0 of the search).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import make_context
from shardc.hardware.chips import CHIPS
from shardc.hardware.cost import CostModel
from shardc.parsing import parse_and_verify
from shardc.passes.collective_stats import CollectiveStats
from shardc.passes.partition_cost import RELATIVE_TIE
from shardc.passes.spmd_partition import SpmdPartitionPass
from shardc.passes.spmd_propagate import SpmdPropagatePass
from shardc.passes.step_estimate import module_step_time
from shardc.tests.e2e.differential import partition_and_compare
from shardc.tests.e2e.test_partition_differential import MESHES, sharding_str, ty
from shardc.tests.unit.strategies import draw_mesh_dims
from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

CTX = make_context()
SIZES = (2, 4, 8, 16)


def random_sharding(
    draw: st.DrawFn, mesh: tuple[tuple[str, int], ...], shape: tuple[int, ...]
) -> list[list[str]]:
    """Each axis on at most one dimension, in a random order; products divide the sizes."""
    return draw_mesh_dims(draw, mesh, shape)


@st.composite
def dot_programs(
    draw: st.DrawFn, sizes: tuple[int, ...] = SIZES, dtypes: tuple[str, ...] = ("f32", "bf16")
) -> str:
    """
    One or two dots (the second consumes the first's result, batched or not) with random
    argument, intermediate (`spmd.constraint`) and result shardings on a random mesh, so
    every candidate of the search (keep a contracting split, gather it, all_to_all,
    replicate) is the cheapest somewhere.
    """
    mesh = draw(st.sampled_from(MESHES))
    batch = draw(st.sampled_from([(), (draw(st.sampled_from(sizes)),)]))
    m, k, n = (draw(st.sampled_from(sizes)) for _ in range(3))
    dtype = draw(st.sampled_from(dtypes))
    nb = len(batch)
    dims = f"batching_dims = [0] x [0], contracting_dims = [{nb + 1}] x [{nb}]"
    dims = dims if nb else f"contracting_dims = [{nb + 1}] x [{nb}]"
    args = [(batch + (m, k)), (batch + (k, n))]
    lines = [
        f"  %d0 = hlo.dot %arg0, %arg1, {dims} : ({ty(args[0], dtype)}, {ty(args[1], dtype)})"
        f" -> {ty(batch + (m, n), dtype)}"
    ]
    out = batch + (m, n)
    last = "%d0"
    if draw(st.booleans()):
        c = sharding_str(random_sharding(draw, mesh, out)).removeprefix("#spmd.sharding")
        lines.append(f"  %c0 = spmd.constraint %d0 {c} : {ty(out, dtype)}")
        p = draw(st.sampled_from(sizes))
        args.append(batch + (n, p))
        lines.append(
            f"  %d1 = hlo.dot %c0, %arg2, {dims} : ({ty(out, dtype)}, {ty(args[2], dtype)})"
            f" -> {ty(batch + (m, p), dtype)}"
        )
        out, last = batch + (m, p), "%d1"
    arg_text = ", ".join(
        f"%arg{i}: {ty(s, dtype)} {{spmd.sharding = {sharding_str(random_sharding(draw, mesh, s))}}}"
        for i, s in enumerate(args)
    )
    res = f"{ty(out, dtype)} {{spmd.sharding = {sharding_str(random_sharding(draw, mesh, out))}}}"
    mesh_text = ", ".join(f'"{a}"={s}' for a, s in mesh)
    body = "\n".join(lines)
    return (
        f"spmd.mesh @mesh = <[{mesh_text}]>\n"
        f"func.func @main({arg_text}) -> ({res}) {{\n{body}\n"
        f"  func.return {last} : {ty(out, dtype)}\n}}\n"
    )


def partitioned(text: str, cost_based: bool = True) -> ModuleOp:
    module = parse_and_verify(CTX, text, "<generated>")
    for p in (
        SpmdPropagatePass(),
        SpmdPartitionPass(cost_based=cost_based),
        CanonicalizePass(),
        CommonSubexpressionElimination(),
    ):
        p.apply(CTX, module)
    return module


def step_time(module: ModuleOp, chip: str = "v5e") -> float:
    from shardc.dialects import spmd

    mesh = spmd.module_mesh(module)
    return module_step_time(module, CostModel(CHIPS[chip], mesh[1] if mesh else None))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dot_programs(dtypes=("f32",)), st.integers(0, 3))
def test_cost_chosen_dot_plans_compute_the_same_numbers(text: str, seed: int) -> None:
    """f32 within 1e-4 of the output's scale (a split contraction sums in another order;
    bf16 would round those partial sums differently)."""
    partition_and_compare(text, seed, note=text)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dot_programs(sizes=(64, 128, 256, 512)))
def test_cost_chosen_plan_is_never_slower_than_todays(text: str) -> None:
    """The scheduled step (sync collectives, the cost model) of the cost-chosen plan is at
    most that of `choose_factors` alone, within the per-op tie margin: the old choice is a
    candidate of every op, but the choice is per op (greedy, as XLA's dot handler), so one
    op's cheaper plan can leave its result where a later op pays a little more; found by
    this test: two batched dots through a replicated constraint, 2% slower. More than the
    margin would mean the per-op estimate disagrees with the step estimate."""
    chosen = step_time(partitioned(text))
    today = step_time(partitioned(text, cost_based=False))
    assert chosen <= today * (1 + RELATIVE_TIE), text


ISSUE_EXAMPLE = """
spmd.mesh @mesh = <["X"=2, "Y"=4]>
func.func @main(%a: tensor<1024x2048x{t}> {{spmd.sharding = #spmd.sharding<@mesh, [{{"X"}}, {{"Y"}}]>}},
                %w: tensor<2048x8192x{t}> {{spmd.sharding = #spmd.sharding<@mesh, [{{}}, {{"Y"}}]>}})
    -> (tensor<1024x8192x{t}> {{spmd.sharding = #spmd.sharding<@mesh, [{{"X"}}, {{"Y"}}]>}}) {{
  %o = hlo.dot %a, %w, contracting_dims = [1] x [0] : (tensor<1024x2048x{t}>, tensor<2048x8192x{t}>) -> tensor<1024x8192x{t}>
  func.return %o : tensor<1024x8192x{t}>
}}
"""


@pytest.mark.parametrize("dtype", ["bf16", "f32"])
def test_issue_example_all_gathers_the_activations(dtype: str) -> None:
    """A[B_X, D_Y] x W[D, F_Y] (B 1024, D 2048, F 8192, 2x4 v5e): all-gather A over Y (as
    XLA and the scaling book do), 7.8x faster than all_to_all W + reduce_scatter."""
    text = ISSUE_EXAMPLE.format(t=dtype)
    chosen, today = partitioned(text), partitioned(text, cost_based=False)
    stats = CollectiveStats.of(chosen)
    assert dict(stats.counts) == {"all_gather": 1}
    assert dict(CollectiveStats.of(today).counts) == {"all_to_all": 1, "reduce_scatter": 1}
    assert step_time(chosen) * 5 < step_time(today)
    assert sum(stats.bytes.values()) < sum(CollectiveStats.of(today).bytes.values()) / 4


def test_explain_names_the_choice_and_the_runners_up(capsys: pytest.CaptureFixture[str]) -> None:
    module = parse_and_verify(CTX, ISSUE_EXAMPLE.format(t="bf16"), "issue.mlir")
    SpmdPropagatePass().apply(CTX, module)
    SpmdPartitionPass(explain=True).apply(CTX, module)
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith('issue.mlir:6:3: spmd-partition: hlo.dot: all-gather lhs over "Y" (')
    assert re.search(
        r'\(\d+(\.\d+)? us\) chosen over all-to-all rhs over "Y" \+ reduce-scatter result '
        r'over "Y" \((\d+) us\)',
        line,
    ), line
    chosen, runner_up = (float(x) for x in re.findall(r"\((\d+(?:\.\d+)?) us\)", line)[:2])
    assert runner_up > 7 * chosen  # the issue's 7.8x


def test_bad_chip_is_a_bad_pipeline() -> None:
    with pytest.raises(ValueError, match="option 'chip'"):
        SpmdPartitionPass(chip="v9")
