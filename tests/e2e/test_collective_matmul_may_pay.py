"""
`collective-matmul`'s site filter (`RingOptions.may_pay`, issue 14 item 7) must refuse only
rings the gate would refuse: where it says no, the ring built anyway (the pass without a
chip) is not faster by the gate's estimate. And it must say no where the ring's critical
path (first partial dot, permutes one after another, the last combine) cannot beat the dot
and its collective: otherwise the pipeline copies the module and makes two whole-module
estimates for nothing (bench/partition_speed.py's chains: 2.5 s of 7 s at 10k ops).
"""

from __future__ import annotations

import pytest
from shardc.dialects import make_context
from shardc.dialects.spmd import find_mesh
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel, cached
from shardc.parsing import parse_and_verify
from shardc.passes.collective_matmul import CollectiveMatmulPass
from shardc.passes.spmd_pipeline import SpmdPipelinePass
from shardc.passes.step_estimate import module_step_time

CTX = make_context()


def k_sharded_matmul(devices: int, m: int, k: int, bf16: bool = False) -> str:
    """A dot whose contracting dimension is sharded: a reduce_scatter of the dot's result."""
    e = "bf16" if bf16 else "f32"
    a, b, r = f"tensor<{m}x{k}x{e}>", f"tensor<{k}x{m}x{e}>", f"tensor<{m}x{m}x{e}>"
    return f"""spmd.mesh @mesh = <["x"={devices}]>
func.func @main(%a: {a} {{spmd.sharding = #spmd.sharding<@mesh, [{{}}, {{"x"}}]>}},
                %b: {b} {{spmd.sharding = #spmd.sharding<@mesh, [{{"x"}}, {{}}]>}})
    -> ({r} {{spmd.sharding = #spmd.sharding<@mesh, [{{"x"}}, {{}}]>}}) {{
  %0 = hlo.dot %a, %b, contracting_dims = [1] x [0] : ({a}, {b}) -> {r}
  %1 = hlo.add %0, %0 : {r}
  func.return %1 : {r}
}}
"""


def gathered_matmul(devices: int, m: int, k: int) -> str:
    """A dot whose row-sharded operand is gathered first (all_gather of a free dimension)."""
    a, w, r = f"tensor<{m}x{k}xf32>", f"tensor<{k}x{k}xf32>", f"tensor<{m}x{k}xf32>"
    return f"""spmd.mesh @mesh = <["x"={devices}]>
func.func @main(%a: {a} {{spmd.sharding = #spmd.sharding<@mesh, [{{"x"}}, {{}}]>}},
                %w: {w} {{spmd.sharding = #spmd.sharding<@mesh, [{{}}, {{}}]>}})
    -> ({r} {{spmd.sharding = #spmd.sharding<@mesh, [{{}}, {{}}]>}}) {{
  %g = spmd.constraint %a <@mesh, [{{}}, {{}}]> : {a}
  %0 = hlo.dot %g, %w, contracting_dims = [1] x [0] : ({a}, {w}) -> {r}
  func.return %0 : {r}
}}
"""


def partitioned(text: str):
    module = parse_and_verify(CTX, text, "<test>")
    for p in SpmdPipelinePass().partitioning_passes():
        p.apply(CTX, module)
    return module


def permutes(module) -> int:
    return sum(1 for op in module.walk() if op.name == "collective.permute")


SITES = [
    *(
        (k_sharded_matmul(d, m, k, bf16), f"rs d={d} m={m} k={k} bf16={bf16}")
        for d in (2, 4, 8)
        for m, k in ((16, 64), (64, 256), (512, 2048), (2048, 8192))
        for bf16 in (False, True)
    ),
    *(
        (gathered_matmul(d, m, k), f"ag d={d} m={m} k={k}")
        for d in (2, 4, 8)
        for m, k in ((64, 64), (1024, 1024), (8192, 4096))
    ),
]


@pytest.mark.parametrize("text", [t for t, _ in SITES], ids=[i for _, i in SITES])
def test_a_refused_site_is_one_the_gate_refuses(text: str) -> None:
    before = partitioned(text)
    model = cached(CostModel(get_chip("v5e"), find_mesh(before)))
    forced = before.clone()
    CollectiveMatmulPass().apply(CTX, forced)
    if permutes(forced) == 0:
        pytest.skip("no site: nothing to filter")
    if not CollectiveMatmulPass(chip="v5e").any_match(before, model):
        assert module_step_time(forced, model) >= module_step_time(before, model)


def test_a_small_two_device_ring_is_not_tried() -> None:
    """One permute on 2 devices costs about the reduce_scatter it replaces; the first partial
    dot (and its slice) before it and the add after it make the ring slower: refused
    without a copy (the old filter, permutes or the dot below dot + collective, let it
    through to the gate)."""
    before = partitioned(k_sharded_matmul(2, 64, 256))
    model = cached(CostModel(get_chip("v5e"), find_mesh(before)))
    forced = before.clone()
    CollectiveMatmulPass().apply(CTX, forced)
    assert permutes(forced) == 1
    assert module_step_time(forced, model) >= module_step_time(before, model)
    assert not CollectiveMatmulPass(chip="v5e").any_match(before, model)


def test_a_large_ring_is_still_tried_and_kept() -> None:
    before = partitioned(k_sharded_matmul(8, 4096, 8192))
    model = cached(CostModel(get_chip("v5e"), find_mesh(before)))
    assert CollectiveMatmulPass(chip="v5e").any_match(before, model)
    gated = before.clone()
    CollectiveMatmulPass(chip="v5e").apply(CTX, gated)
    assert permutes(gated) == 7


def test_a_ring_on_a_line_waits_for_its_wrap_edge_on_one_device_only() -> None:
    """The same site on v5e's line of 4: the all_gather ring's wrap edge (3 hops) is in
    every step, while a permute's members end per device (`CostModel.collective_landings`):
    only the device the wrap edge reaches waits 3 hops, so the scheduled ring is faster
    (level S 4.22 us, level T 4.36 us, against 5.35 us for both), the may-pay test lets it
    through (its chain floor: one long edge, the other steps the soonest member's) and
    the gate keeps it."""
    before = partitioned(gathered_matmul(4, 64, 64))
    model = cached(CostModel(get_chip("v5e"), find_mesh(before)))
    assert CollectiveMatmulPass(chip="v5e").any_match(before, model)
    gated = before.clone()
    CollectiveMatmulPass(chip="v5e").apply(CTX, gated)
    assert permutes(gated) > 0
    assert module_step_time(gated, model) < module_step_time(before, model)


def test_the_bench_chain_sites_that_may_pay_are_kept_faster() -> None:
    """bench/partition_speed.py's chain on v5e: its 4-device gather rings' sites pay now
    that a permute ends per device (the test above; before, no site passed the may-pay
    test); the gate keeps only rings that make the estimated step faster."""
    from shardc.bench.partition_speed import program

    before = partitioned(program(200))
    model = cached(CostModel(get_chip("v5e"), find_mesh(before)))
    assert CollectiveMatmulPass(chip="v5e").any_match(before, model)
    gated = before.clone()
    CollectiveMatmulPass(chip="v5e").apply(CTX, gated)
    assert permutes(gated) > 0
    assert module_step_time(gated, model) < module_step_time(before, model)
