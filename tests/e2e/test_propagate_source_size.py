"""
spmd-propagate's conflict rule on FSDP layers (a forward and backward pass whose weights
are split along their first dimension like the batch): the bigger source tensor wins a
factor whether annotated or not, ties to operand order, as Shardy's aggressive strategy.
So the hidden activations keep their batch split and the (smaller) annotated weight is
all-gathered, as XLA does, instead of the weight's split taking over the activations.

Level S against level G: the partitioned program (whole `spmd-pipeline`), run on simulated
devices, computes what the global program computes, on hypothesis-generated layers; and the
propagated shardings are the ones the rule says.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import make_context
from shardc.parsing import parse_and_verify
from shardc.passes.spmd_propagate import SpmdPropagatePass
from shardc.tests.e2e.differential import partition_and_compare

CTX = make_context()
MESHES = [(("x", 2),), (("x", 4),), (("a", 2), ("b", 2)), (("a", 2), ("b", 4))]


def fsdp_layer(mesh: tuple[tuple[str, int], ...], b: int, d: int, h: int) -> str:
    """Loss-gradient of tanh(x w1) w2 against y: the weights' gradients (split like the
    weights, as FSDP returns them) and the hidden activations' gradient."""
    axes = ", ".join(f'"{a}"' for a, _ in mesh)
    split = f"{{spmd.sharding = #spmd.sharding<@mesh, [{{{axes}}}, {{}}]>}}"
    mesh_text = ", ".join(f'"{a}"={n}' for a, n in mesh)

    def t(*shape: int) -> str:
        return f"tensor<{'x'.join(map(str, shape))}xf32>"

    def dot(lhs: str, rhs: str, c: str, types: tuple[str, str, str]) -> str:
        return (
            f"hlo.dot {lhs}, {rhs}, contracting_dims = {c} : ({types[0]}, {types[1]}) -> {types[2]}"
        )

    return f"""
spmd.mesh @mesh = <[{mesh_text}]>
func.func @main(%x: {t(b, d)} {split}, %y: {t(b, d)} {split}, %w1: {t(d, h)} {split},
                %w2: {t(h, d)} {split})
    -> ({t(d, h)} {split}, {t(h, d)} {split}, {t(b, h)} {split}) {{
  %h = {dot("%x", "%w1", "[1] x [0]", (t(b, d), t(d, h), t(b, h)))}
  %a = hlo.tanh %h : {t(b, h)}
  %o = {dot("%a", "%w2", "[1] x [0]", (t(b, h), t(h, d), t(b, d)))}
  %dy = hlo.sub %o, %y : {t(b, d)}
  %gw2 = {dot("%a", "%dy", "[0] x [0]", (t(b, h), t(b, d), t(h, d)))}
  %da = {dot("%dy", "%w2", "[1] x [1]", (t(b, d), t(h, d), t(b, h)))}
  %g = hlo.mul %da, %a : {t(b, h)}
  %gw1 = {dot("%x", "%g", "[0] x [0]", (t(b, d), t(b, h), t(d, h)))}
  %r = hlo.exp %da : {t(b, h)}
  func.return %gw1, %gw2, %r : {t(d, h)}, {t(h, d)}, {t(b, h)}
}}
"""


@st.composite
def fsdp_layers(draw: st.DrawFn) -> tuple[tuple[tuple[str, int], ...], int, int, int]:
    mesh = draw(st.sampled_from(MESHES))
    n = math.prod(s for _, s in mesh)
    b, d, h = (n * draw(st.sampled_from([1, 2, 4])) for _ in range(3))
    return mesh, b, d, h


def propagated(text: str) -> dict[str, list[list[str]]]:
    """Each named op's propagated sharding, as axes per dimension."""
    module = parse_and_verify(CTX, text, "<fsdp layer>")
    SpmdPropagatePass().apply(CTX, module)
    return {
        op.results[0].name_hint: [list(a) for a in op.attributes["spmd.sharding"].dim_axes]  # pyright: ignore[reportAttributeAccessIssue]
        for op in module.walk()
        if op.results and op.results[0].name_hint and "spmd.sharding" in op.attributes
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fsdp_layers(), st.integers(0, 3))
def test_fsdp_layers_partition_to_the_same_numbers(layer, seed: int) -> None:  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType]
    text = fsdp_layer(*layer)
    partition_and_compare(text, seed, note=text)


@settings(max_examples=40, deadline=None)
@given(fsdp_layers())
def test_the_bigger_source_wins_whether_annotated_or_not(layer) -> None:  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType]
    mesh, b, d, h = layer
    every = [a for a, _ in mesh]
    found = propagated(fsdp_layer(mesh, b, d, h))
    # %h = %x[B, D] x %w1[D, H]: x's batch split (operand 0) wins unless w1 is bigger
    assert found["h"] == found["a"] == ([every, []] if b >= h else [[], []]), found
    # %o = %a[B, H] x %w2[H, D]: a batch-split %a wins unless w2 is bigger
    assert found["o"] == ([every, []] if b >= h and b >= d else [[], []]), found
    # %da = %dy[B, D] x %w2[H, D]^T: dy (operand 0) wins unless w2 is bigger
    assert found["da"] == ([every, []] if b >= h else [[], every]), found


def test_the_activations_keep_the_batch_split_on_an_fsdp_layer() -> None:
    """The corpus's fsdp_adam_step shape: the weights gathered once, no activation moved."""
    from shardc.passes.collective_stats import CollectiveStats
    from shardc.passes.spmd_pipeline import SpmdPipelinePass

    text = fsdp_layer((("a", 2), ("b", 4)), 64, 32, 64)
    found = propagated(text)
    assert found["o"] == found["da"] == found["g"] == [["a", "b"], []], found
    module = parse_and_verify(CTX, text, "<fsdp layer>")
    SpmdPipelinePass().apply(CTX, module)
    gathered = [
        o
        for o in module.walk()
        if o.name in ("collective.all_gather", "collective.all_gather_start")
    ]
    # w1 and w2, nothing else (they may be combined into one collective)
    assert sum(len(o.operands) for o in gathered) == 2, str(module)
    partition_and_compare(text)
    assert "all_to_all" not in CollectiveStats.of(module).counts
