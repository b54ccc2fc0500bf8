"""
`spmd-pipeline` applies `collective-matmul` only where the cost model's scheduled step gets
faster (issue 14, item 3): a small K-sharded matmul keeps its one reduce_scatter (a ring
of 7 permutes would be slower: latency dominates), a large one becomes the ring. Both
compared on the estimate the pass itself uses, and the pass alone (no chip) rewrites both.
"""

from __future__ import annotations

import pytest
from shardc.dialects import make_context
from shardc.dialects.spmd import find_mesh
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel
from shardc.parsing import parse_and_verify
from shardc.passes.collective_matmul import CollectiveMatmulPass
from shardc.passes.spmd_pipeline import SpmdPipelinePass
from shardc.passes.step_estimate import module_step_time

CTX = make_context()


def k_sharded_matmul(m: int, k: int) -> str:
    return f"""spmd.mesh @mesh = <["x"=8]>
func.func @main(%a: tensor<{m}x{k}xf32> {{spmd.sharding = #spmd.sharding<@mesh, [{{}}, {{"x"}}]>}},
                %b: tensor<{k}x{m}xf32> {{spmd.sharding = #spmd.sharding<@mesh, [{{"x"}}, {{}}]>}})
    -> (tensor<{m}x{m}xf32> {{spmd.sharding = #spmd.sharding<@mesh, [{{"x"}}, {{}}]>}}) {{
  %0 = hlo.dot %a, %b, contracting_dims = [1] x [0] : (tensor<{m}x{k}xf32>, tensor<{k}x{m}xf32>) -> tensor<{m}x{m}xf32>
  func.return %0 : tensor<{m}x{m}xf32>
}}
"""


def gathered_matmul(m: int, k: int) -> str:
    """`a` split on its contracting dimension, `b` and the result on their columns: the
    partitioner all-gathers `a` into a dot whose result differs per device, the site of
    the contracting ring. (`k_sharded_matmul` at 16x64 gathers both operands: its result
    is replicated, where a float ring over 8 devices is never built, since each device
    would sum in its own order: `collective_matmul._same_sum_everywhere`.)"""
    return k_sharded_matmul(m, k).replace('[{"x"}, {}]', '[{}, {"x"}]')


def partitioned(text: str):
    module = parse_and_verify(CTX, text, "<test>")
    for p in SpmdPipelinePass().partitioning_passes():
        p.apply(CTX, module)
    return module


def permutes(module) -> int:
    return sum(1 for op in module.walk() if op.name == "collective.permute")


@pytest.mark.parametrize(("m", "k", "ring"), [(16, 64, False), (4096, 8192, True)])
def test_collective_matmul_only_where_the_step_gets_faster(m: int, k: int, ring: bool) -> None:
    before = partitioned((gathered_matmul if m == 16 else k_sharded_matmul)(m, k))
    model = CostModel(get_chip("v5e"), find_mesh(before))
    forced = before.clone()
    CollectiveMatmulPass().apply(CTX, forced)
    assert permutes(forced) == 7  # the ungated pass always builds the ring
    gated = before.clone()
    CollectiveMatmulPass(chip="v5e").apply(CTX, gated)
    assert (permutes(gated) == 7) is ring
    t_before, t_forced = module_step_time(before, model), module_step_time(forced, model)
    assert (t_forced < t_before) is ring
    assert module_step_time(gated, model) == min(t_before, t_forced)


def test_the_pipeline_is_never_slower_than_its_input_on_the_small_matmul() -> None:
    text = k_sharded_matmul(16, 64)
    before = partitioned(text)
    model = CostModel(get_chip("v5e"), find_mesh(before))
    full = parse_and_verify(CTX, text, "<test>")
    SpmdPipelinePass().apply(CTX, full)
    assert permutes(full) == 0
    assert module_step_time(full, model) <= module_step_time(before, model)
