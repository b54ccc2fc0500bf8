"""
Issue 13, item 8: `collective-combine` against XLA's combiner tests. reduce_scatters on
different scatter dimensions combine (aligned by transposes, as all_gathers do with
`align-dims`), and no merge ever leaves a dependency cycle: XLA's cross-group cycle case
(two groups whose members depend on each other crosswise) is refused, and so is any cycle
in hypothesis-generated dependency graphs. After the pass the module verifies and
computes, on every device, exactly what it computed before (level S).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import make_context
from shardc.interpreter import io
from shardc.parsing import parse_and_verify
from shardc.passes.collective_combine import CollectiveCombinePass
from shardc.passes.collective_stats import CollectiveStats
from xdsl.dialects.builtin import ModuleOp

CTX = make_context()


def combine_and_compare(text: str, **options: object) -> tuple[ModuleOp, int, int]:
    """Run before and after collective-combine{options}: values equal, module valid."""
    module = parse_and_verify(CTX, text, "<combine>")
    function = io.find_entry(module, None, "<combine>")
    inputs = io.random_inputs(io.signature(module, function, "<combine>"), 0)
    before = io.run_module(module.clone(), inputs)
    count_before = sum(CollectiveStats.of(module).counts.values())
    CollectiveCombinePass(**options).apply(CTX, module)  # pyright: ignore[reportArgumentType]
    module.verify()
    after = io.run_module(module, inputs)
    assert before.keys() == after.keys()
    for name in before:
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)
    return module, count_before, sum(CollectiveStats.of(module).counts.values())


def ops_named(module: ModuleOp, name: str) -> list[object]:
    return [op for op in module.walk() if op.name == name]


# XLA's cross-group cycle: a1 and a2 share a key, b1 and b2 another; a2 needs b1 and b2
# needs a1. Merging both pairs would make each merged op wait for the other.
CROSS_GROUP_CYCLE = """spmd.mesh @mesh = <["x"=2, "y"=2]>
func.func @cycle(%p: tensor<8xf32>, %q: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
    attributes {spmd.partitioned} {
  %a1 = collective.all_reduce add %p on @mesh["x"] : tensor<8xf32>
  %b1 = collective.all_reduce add %q on @mesh["y"] : tensor<8xf32>
  %e1 = hlo.exp %b1 : tensor<8xf32>
  %a2 = collective.all_reduce add %e1 on @mesh["x"] : tensor<8xf32>
  %e2 = hlo.exp %a1 : tensor<8xf32>
  %b2 = collective.all_reduce add %e2 on @mesh["y"] : tensor<8xf32>
  func.return %a2, %b2 : tensor<8xf32>, tensor<8xf32>
}
"""


@pytest.mark.parametrize("overlap_aware", [False, True])
def test_cross_group_cycle_is_refused(overlap_aware: bool) -> None:
    module, before, after = combine_and_compare(CROSS_GROUP_CYCLE, overlap_aware=overlap_aware)
    assert before == 4
    if not overlap_aware:
        assert after == 3  # the first pair merges, the crosswise second one does not


def test_cross_group_cycle_through_a_third_group_is_refused() -> None:
    """a -> c -> b crosswise through a group that is merged itself."""
    text = """spmd.mesh @mesh = <["x"=2, "y"=2]>
func.func @cycle3(%p: tensor<8xf32>, %q: tensor<8xf32>, %r: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) attributes {spmd.partitioned} {
  %a1 = collective.all_reduce add %p on @mesh["x"] : tensor<8xf32>
  %c1 = collective.all_reduce max %r on @mesh["x"] : tensor<8xf32>
  %b1 = collective.all_reduce add %q on @mesh["y"] : tensor<8xf32>
  %c2 = collective.all_reduce max %b1 on @mesh["x"] : tensor<8xf32>
  %a2 = collective.all_reduce add %c2 on @mesh["x"] : tensor<8xf32>
  %b2 = collective.all_reduce add %a1 on @mesh["y"] : tensor<8xf32>
  func.return %a2, %b2, %c1, %c2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
"""
    combine_and_compare(text, overlap_aware=False)


REDUCE_SCATTERS = """spmd.mesh @mesh = <["x"=4]>
func.func @scatters(%a: tensor<8x4xf32>, %b: tensor<4x8xf32>, %c: tensor<8x8xf32>)
    -> (tensor<8x4xf32>, tensor<4x8xf32>, tensor<8x8xf32>) attributes {spmd.partitioned} {
  %sa = collective.reduce_scatter add %a on @mesh["x"], dim = 0 : (tensor<8x4xf32>) -> tensor<2x4xf32>
  %sb = collective.reduce_scatter add %b on @mesh["x"], dim = 1 : (tensor<4x8xf32>) -> tensor<4x2xf32>
  %sc = collective.reduce_scatter add %c on @mesh["x"], dim = 1 : (tensor<8x8xf32>) -> tensor<8x2xf32>
  %ea = hlo.exp %sa : tensor<2x4xf32>
  %eb = hlo.exp %sb : tensor<4x2xf32>
  %ec = hlo.exp %sc : tensor<8x2xf32>
  %ga = collective.all_gather %ea on @mesh["x"], dim = 0 : (tensor<2x4xf32>) -> tensor<8x4xf32>
  %gb = collective.all_gather %eb on @mesh["x"], dim = 1 : (tensor<4x2xf32>) -> tensor<4x8xf32>
  %gc = collective.all_gather %ec on @mesh["x"], dim = 1 : (tensor<8x2xf32>) -> tensor<8x8xf32>
  func.return %ga, %gb, %gc : tensor<8x4xf32>, tensor<4x8xf32>, tensor<8x8xf32>
}
"""


def test_reduce_scatters_on_different_dims_combine_aligned_by_transposes() -> None:
    module, before, after = combine_and_compare(REDUCE_SCATTERS, overlap_aware=False)
    assert (before, after) == (6, 2)
    (merged,) = ops_named(module, "collective.reduce_scatter")
    assert merged.properties["dim"].value.data == 1  # pyright: ignore  # the most frequent
    assert len(merged.results) == 3  # pyright: ignore
    # %sa's transposes before and after, and %ga's
    assert len(ops_named(module, "hlo.transpose")) == 4


def test_reduce_scatters_keep_their_dims_without_align_dims() -> None:
    module, _, after = combine_and_compare(REDUCE_SCATTERS, overlap_aware=False, align_dims=False)
    assert after == 4 and not ops_named(module, "hlo.transpose")


################################################################################
# Generated dependency graphs                                                  #
################################################################################

KEYS = [
    ("all_reduce add", '"a"'),
    ("all_reduce add", '"b"'),
    ("all_reduce max", '"a"'),
    ("all_reduce add", '"a", "b"'),
]


@st.composite
def dependency_graphs(draw: st.DrawFn) -> str:
    """
    Level-S programs on a 2x2 mesh whose collectives (all_reduces of a few keys,
    reduce_scatter + all_gather pairs on either dimension) use earlier results, often
    several at once: the crosswise dependencies between groups that make cycles.
    """
    values = ["%x", "%y", "%z"]
    body: list[str] = []
    t = "tensor<4x4xf32>"
    for i in range(draw(st.integers(2, 14))):
        srcs = draw(st.lists(st.sampled_from(values), min_size=1, max_size=3))
        src = srcs[0]
        for j, other in enumerate(srcs[1:]):
            body.append(f"  %s{i}_{j} = hlo.add {src}, {other} : {t}")
            src = f"%s{i}_{j}"
        if draw(st.booleans()):
            kind, axes = draw(st.sampled_from(KEYS))
            body.append(f"  %v{i} = collective.{kind} {src} on @mesh[{axes}] : {t}")
        else:
            axis = draw(st.sampled_from(['"a"', '"b"']))
            dim = draw(st.integers(0, 1))
            half = "tensor<2x4xf32>" if dim == 0 else "tensor<4x2xf32>"
            body.append(
                f"  %r{i} = collective.reduce_scatter add {src} on @mesh[{axis}], "
                f"dim = {dim} : ({t}) -> {half}"
            )
            body.append(
                f"  %v{i} = collective.all_gather %r{i} on @mesh[{axis}], dim = {dim} : "
                f"({half}) -> {t}"
            )
        values.append(f"%v{i}")
    results = values[3:]
    types = ", ".join([t] * len(results))
    return "\n".join(
        [
            'spmd.mesh @mesh = <["a"=2, "b"=2]>',
            f"func.func @main(%x: {t}, %y: {t}, %z: {t}) -> ({types}) "
            "attributes {spmd.partitioned} {",
            *body,
            f"  func.return {', '.join(results)} : {types}",
            "}",
        ]
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dependency_graphs(), st.integers(2, 8), st.booleans())
def test_no_merge_makes_a_cycle(text: str, max_count: int, align_dims: bool) -> None:
    combine_and_compare(text, overlap_aware=False, max_count=max_count, align_dims=align_dims)
