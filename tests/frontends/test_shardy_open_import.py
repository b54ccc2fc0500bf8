"""
Shardy's semantics on import: open dimensions (`{"x", ?}`, `{?}`) stay open in
`#spmd.sharding`, and an argument or result without a sharding is fully open, so that
`spmd-propagate` decides them as Shardy's propagation does; GSPMD's `mhlo.sharding` and
unannotated values of a GSPMD module stay closed.
"""

from __future__ import annotations

from shardc.dialects import make_context, spmd
from shardc.frontends.stablehlo import import_stablehlo
from shardc.passes.spmd_propagate import SpmdPropagatePass
from shardc.tests.e2e.differential import partition_and_compare

CTX = make_context()
MESH = 'sdy.mesh @mesh = <["data"=2, "model"=4]>'


def sdy_module(args: str, results: str, body: str) -> str:
    return f"""module @m attributes {{mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32}} {{
  {MESH}
  func.func public @main({args}) -> ({results}) {{
{body}
  }}
}}
"""


def shardings(text: str, propagate: bool):
    module = import_stablehlo(text, "t.mlir").module
    if propagate:
        SpmdPropagatePass().apply(CTX, module)
    (function,) = [f for f in module.ops if f.name == "func.func"]
    return module, spmd.function_shardings(function)  # pyright: ignore[reportArgumentType]


ANNOTATED_AND_NOT = sdy_module(
    '%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"model"}]>}, '
    "%arg1: tensor<8x16xf32>",
    "tensor<8x16xf32>",
    """    %0 = stablehlo.add %arg0, %arg1 : tensor<8x16xf32>
    return %0 : tensor<8x16xf32>""",
)


def test_unannotated_argument_and_result_are_open() -> None:
    result = import_stablehlo(ANNOTATED_AND_NOT, "t.mlir")
    text = str(result.module)
    assert "%1: tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>}" in text
    assert "-> (tensor<8x16xf32> {spmd.sharding = #spmd.sharding<@mesh, [{?}, {?}]>})" in text
    assert result.stats.constructs["sdy unannotated (open)"] == 2


def test_propagation_decides_unannotated_values_as_shardy() -> None:
    _, (args, results) = shardings(ANNOTATED_AND_NOT, propagate=True)
    # Shardy: the unannotated argument and result take the annotated argument's sharding
    assert args[1] is not None and args[1].dim_axes == (("data",), ("model",))
    assert results[0] is not None and results[0].dim_axes == (("data",), ("model",))
    assert not any(s is not None and s.is_open() for s in [*args, *results])


def test_unannotated_values_partition_to_the_same_numbers() -> None:
    module = import_stablehlo(ANNOTATED_AND_NOT, "t.mlir").module
    partition_and_compare(str(module))


def test_open_dimension_is_extended_closed_is_not() -> None:
    text = sdy_module(
        '%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data", ?}, {?}]>}, '
        '%arg1: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>}, '
        '%arg2: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}',
        "tensor<8x16xf32>",
        """    %0 = stablehlo.add %arg0, %arg2 : tensor<8x16xf32>
    %1 = stablehlo.add %0, %arg1 : tensor<8x16xf32>
    return %1 : tensor<8x16xf32>""",
    )
    module, (args, _) = shardings(text, propagate=False)
    assert args[0] is not None and args[0].open_dims == (0, 1)
    assert args[1] is not None and not args[1].is_open()
    _, (args, _) = shardings(text, propagate=True)
    assert [a.dim_axes for a in args if a] == [
        (("data",), ("model",)),  # open: extended by %arg2's "model"
        (("data",), ()),  # closed: kept
        ((), ("model",)),
    ]
    partition_and_compare(str(module))


def test_open_constraint_is_kept_open() -> None:
    text = sdy_module(
        "%arg0: tensor<8x16xf32>",
        "tensor<8x16xf32>",
        """    %0 = sdy.sharding_constraint %arg0 <@mesh, [{"data", ?}, {?}]> : tensor<8x16xf32>
    return %0 : tensor<8x16xf32>""",
    )
    program = str(import_stablehlo(text, "t.mlir").module)
    assert 'spmd.constraint %0 <@mesh, [{"data", ?}, {?}]>' in program


def test_gspmd_shardings_and_unannotated_values_stay_closed() -> None:
    text = """module @m attributes {mhlo.num_partitions = 2 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x8xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"}, %arg1: tensor<8x8xf32>) -> (tensor<8x8xf32>) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
}
"""
    program = str(import_stablehlo(text, "t.mlir").module)
    assert "?" not in program
    assert "%1: tensor<8x8xf32>)" in program or "%1: tensor<8x8xf32>," in program
