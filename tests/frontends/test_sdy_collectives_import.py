"""
Shardy's explicit collectives (`sdy.all_gather`, `all_slice`, `all_to_all`,
`collective_permute`, `all_reduce`, and `sdy.reshard`) import as `spmd.constraint`s to
their `out_sharding` at level G (sharding changes on global values); `spmd-partition`
then inserts the collectives. `sdy.all_reduce` is accepted on a value unreduced over its
axes, and a clear error otherwise.
"""

from __future__ import annotations

import pytest
from shardc.diagnostics import DiagnosticError
from shardc.frontends.stablehlo import import_stablehlo
from shardc.tests.e2e.differential import partition, partition_and_compare

HEAD = """module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
"""
CHAIN = (
    HEAD
    + """  func.func public @main(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {"x"}]>}) -> (tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y"}, {}]>}) {
    %0 = sdy.all_gather [{}, {"x"}] %arg0 out_sharding=<@mesh, [{"y"}, {}]> : tensor<16x8xf32>
    %1 = sdy.all_slice [{}, {"x"}] %0 out_sharding=<@mesh, [{"y"}, {"x"}]> : tensor<16x8xf32>
    %2 = sdy.all_to_all [{"x"}: 1->0] %1 out_sharding=<@mesh, [{"y", "x"}, {}]> : tensor<16x8xf32>
    %3 = sdy.collective_permute %2 out_sharding=<@mesh, [{"x", "y"}, {}]> : tensor<16x8xf32>
    %4 = sdy.reshard %3 <@mesh, [{"x", "y"}, {}]> : tensor<16x8xf32>
    return %4 : tensor<16x8xf32>
  }
}
"""
)


def test_explicit_collectives_are_constraints_to_their_out_sharding() -> None:
    result = import_stablehlo(CHAIN, "t.mlir")
    program = str(result.module)
    for sharding in (
        '[{"y"}, {}]',
        '[{"y"}, {"x"}]',
        '[{"y", "x"}, {}]',
        '[{"x", "y"}, {}]',
    ):
        assert f"<@mesh, {sharding}> : tensor<16x8xf32>" in program
    assert program.count("spmd.constraint") == 5
    assert result.stats.constructs["sdy explicit collective (as spmd.constraint)"] == 4


def test_explicit_collectives_partition_to_the_same_numbers() -> None:
    module = import_stablehlo(CHAIN, "t.mlir").module
    partition_and_compare(str(module))
    # the all_gather / all_slice pair is a sharding change and back; each step is a collective
    assert "collective." in partition(str(module))


def test_all_reduce_of_an_unreduced_value() -> None:
    text = (
        HEAD
        + """  func.func public @main(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}], unreduced={"x"}>}) -> (tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) {
    %0 = sdy.all_reduce {"x"} %arg0 out_sharding=<@mesh, [{"y"}, {}]> : tensor<16x8xf32>
    return %0 : tensor<16x8xf32>
  }
}
"""
    )
    module = import_stablehlo(text, "t.mlir").module
    assert 'spmd.constraint %0 <@mesh, [{"y"}, {}]>' in str(module)
    partition_and_compare(str(module))


def test_all_reduce_of_a_reduced_value_is_an_error() -> None:
    text = (
        HEAD
        + """  func.func public @main(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) -> tensor<16x8xf32> {
    %0 = sdy.all_reduce {"x"} %arg0 out_sharding=<@mesh, [{"y"}, {}]> : tensor<16x8xf32>
    return %0 : tensor<16x8xf32>
  }
}
"""
    )
    with pytest.raises(DiagnosticError) as info:
        import_stablehlo(text, "t.mlir")
    message = str(info.value)
    assert message.startswith("t.mlir:4:5:")
    assert 'sdy.all_reduce over {"x"} of a value that is not unreduced over them' in message
