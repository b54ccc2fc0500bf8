"""
Differential tests of partitioning `hlo.reduce` with a body: argmax / argmin (value and
iota index, lowest index on ties) over hypothesis-generated meshes, shapes, reduced
dimensions and shardings of the operand and results, run at level S after spmd-pipeline,
must compute exactly what level G computes on tie-heavy inputs. A split reduced dimension
costs one all_gather per result of the partial results (census).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import make_context
from shardc.parsing import parse_and_verify
from shardc.passes.collective_stats import CollectiveStats
from shardc.passes.spmd_partition import SpmdPartitionPass
from shardc.passes.spmd_propagate import SpmdPropagatePass
from shardc.tests.e2e.differential import partition_and_compare
from shardc.tests.e2e.test_partition_pad_reverse import MESHES, SIZES, draw_sharding, sharding_str
from shardc.tests.unit.test_reduce_body import argmax_program

CTX = make_context()


def with_mesh(text: str, mesh, x: str, r: str) -> str:
    """`text` (argmax_program) with a mesh and shardings on its argument and results."""
    mesh_text = ", ".join(f'"{a}"={n}' for a, n in mesh)
    head, rest = text.split(") -> (", 1)
    results, body = rest.split(") {", 1)
    r0, r1 = results.split(", ")
    return (
        f"spmd.mesh @mesh = <[{mesh_text}]>\n"
        + head
        + f" {{spmd.sharding = #spmd.sharding{x}}}) -> ({r0} {{spmd.sharding = #spmd.sharding{r}}}, "
        + f"{r1} {{spmd.sharding = #spmd.sharding{r}}}) {{"
        + body
    )


@st.composite
def argmax_programs(draw: st.DrawFn) -> tuple[str, tuple[int, ...]]:
    mesh = draw(st.sampled_from(MESHES))
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from(SIZES)) for _ in range(rank))
    dim = draw(st.integers(0, rank - 1))
    out = tuple(n for d, n in enumerate(shape) if d != dim)
    direction = draw(st.sampled_from(["GT", "LT"]))
    x = sharding_str(draw_sharding(draw, mesh, shape))
    r = sharding_str(draw_sharding(draw, mesh, out))
    return with_mesh(argmax_program(shape, dim, direction), mesh, x, r), shape


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(argmax_programs(), st.integers(0, 3))
def test_argmax_partitions_to_the_same_numbers(case, seed: int) -> None:
    text, shape = case
    x = np.random.default_rng(seed).integers(-2, 3, shape).astype(np.float32)
    partition_and_compare(text, exact=True, inputs={"in_0": x}, note=text)


def test_a_split_reduced_dimension_gathers_the_partials_once_per_result() -> None:
    text = with_mesh(
        argmax_program((8, 12), 1, "GT"),
        (("a", 2), ("b", 2)),
        '<@mesh, [{"a"}, {"b"}]>',
        '<@mesh, [{"a"}]>',
    )
    module = parse_and_verify(CTX, text, "m")
    for p in (SpmdPropagatePass(), SpmdPartitionPass()):
        p.apply(CTX, module)
    assert dict(CollectiveStats.of(module).counts) == {"all_gather": 2}
    x = np.random.default_rng(0).integers(-1, 2, (8, 12)).astype(np.float32)
    partition_and_compare(text, exact=True, inputs={"in_0": x})
