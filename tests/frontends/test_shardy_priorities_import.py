"""
Shardy's user priorities on import: `{"x"}p1` on arguments, results and op shardings is
kept in `#spmd.sharding` (printed in spmd's syntax) for `spmd-propagate`, which honours
them as Shardy does; a manual computation's in/out shardings drop them (they are fixed).
"""

from __future__ import annotations

from shardc.dialects import make_context, spmd
from shardc.frontends.stablehlo import import_stablehlo
from shardc.passes.spmd_propagate import SpmdPropagatePass
from shardc.tests.e2e.differential import partition_and_compare

CTX = make_context()

# Shardy's @arg_lower_priority_than_return_value: the op's p0 "c" decides before the
# argument's p1 shardings.
MODULE = """module @m attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["a"=2, "b"=2, "c"=2]>
  func.func public @main(
      %arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a", ?}p1, {"b"}p1]>},
      %arg1: tensor<8x8xf32>, %arg2: tensor<8x8xf32>) -> tensor<8x8xf32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>
    %1 = stablehlo.divide %0, %arg2 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"c"}p0, {?}]>]>} : tensor<8x8xf32>
    return %1 : tensor<8x8xf32>
  }
}
"""


def test_priorities_are_kept_in_spmd_syntax() -> None:
    result = import_stablehlo(MODULE, "t.mlir")
    text = str(result.module)
    assert '#spmd.sharding<@mesh, [{"a", ?}p1, {"b"}p1]>' in text
    assert 'spmd.constraint %4 <@mesh, [{"c"}p0, {?}]>' in text
    assert result.stats.constructs["sdy user priority"] == 2


def test_propagation_follows_shardy_priorities() -> None:
    module = import_stablehlo(MODULE, "t.mlir").module
    SpmdPropagatePass().apply(CTX, module)
    (function,) = [f for f in module.ops if f.name == "func.func"]
    args, results = spmd.function_shardings(function)  # pyright: ignore[reportArgumentType]
    # as Shardy's test: %arg0 [{"a", ?}, {"b"}], the others [{"c", ?}, {"b", ?}]
    assert [a.dim_axes if a else None for a in args] == [
        (("a",), ("b",)),
        (("c",), ("b",)),
        (("c",), ("b",)),
    ]
    assert results[0] is not None and results[0].dim_axes == (("c",), ("b",))
    assert "}p" not in str(module)


def test_imported_priorities_partition_to_the_same_numbers() -> None:
    text = str(import_stablehlo(MODULE, "t.mlir").module)
    partition_and_compare(text, 2)
