"""
Propagation through sliced, padded and concatenated dimensions (Shardy's permutation
factors, `spmd-propagate{sliced-dims=on}`): level S against level G on hypothesis-generated
programs (with slices and pads) propagated that way, then partitioned (the partitioner
computes such a dimension whole and reshards); and closed programs are unchanged under
`auto`.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import make_context
from shardc.interpreter import io
from shardc.parsing import parse_and_verify
from shardc.passes.spmd_partition import SpmdPartitionPass
from shardc.passes.spmd_propagate import SpmdPropagatePass
from shardc.tests.e2e.test_partition_differential import partitionable_programs

CTX = make_context()


def propagate_partition_compare(text: str, seed: int) -> None:
    module = parse_and_verify(CTX, text, "<generated>")
    inputs = io.random_inputs(
        io.signature(module, io.find_entry(module, None, "<generated>"), "<generated>"), seed
    )
    with np.errstate(all="ignore"):
        expected = io.run_module(module.clone(), inputs)
        SpmdPropagatePass(sliced_dims="on").apply(CTX, module)
        SpmdPartitionPass().apply(CTX, module)
        module.verify()
        got = io.run_module(module, inputs)
    for name, want in expected.items():
        have = got[name]
        assert want.shape == have.shape and want.dtype == have.dtype, text
        if np.issubdtype(want.dtype, np.floating):
            scale = max(1.0, float(np.max(np.abs(want.astype(np.float64)), initial=0.0)))
            np.testing.assert_allclose(have, want, rtol=1e-4, atol=1e-4 * scale, err_msg=text)
        else:
            np.testing.assert_array_equal(have, want, err_msg=text)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partitionable_programs(), st.integers(0, 3))
def test_sliced_dims_propagation_partitions_to_the_same_numbers(text: str, seed: int) -> None:
    propagate_partition_compare(text, seed)


CONCAT = """spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%x: tensor<8x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>},
                %y: tensor<4x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>})
    -> (tensor<12x4xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}) {
  %c = hlo.concatenate %x, %y, dim = 0 : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<12x4xf32>
  %s = hlo.slice %c [2:10, 0:4] : (tensor<12x4xf32>) -> tensor<8x4xf32>
  %p = hlo.pad %s, %v, low = [2, 0], high = [2, 0], interior = [0, 0] : (tensor<8x4xf32>, tensor<f32>) -> tensor<12x4xf32>
  func.return %p : tensor<12x4xf32>
}
"""


def test_concatenate_slice_pad_chain() -> None:
    text = CONCAT.replace(
        "%p = hlo.pad %s, %v", "%v = hlo.constant dense<1.5> : tensor<f32>\n  %p = hlo.pad %s, %v"
    )
    for seed in range(3):
        propagate_partition_compare(text, seed)
