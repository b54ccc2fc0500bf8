"""Integer literals out of i64 range and misplaced types are errors at the literal."""

from __future__ import annotations

import pytest
from shardc.diagnostics import DiagnosticError
from shardc.dialects import make_context
from shardc.parsing import parse_and_verify

CTX = make_context()


@pytest.mark.parametrize(
    ("line", "at", "message"),
    [
        (
            "%t = hlo.transpose %a, dims = [18446744073709551616] : (tensor<4xf32>) -> tensor<4xf32>",
            "18446744073709551616",
            "integer 18446744073709551616 does not fit in 64 bits",
        ),
        (
            "%t = hlo.slice %a [0:9223372036854775808] : (tensor<4xf32>) -> tensor<4xf32>",
            "9223372036854775808",
            "does not fit in 64 bits",
        ),
        (
            "%t = hlo.iota dim = 99999999999999999999 : tensor<4xf32>",
            "9999",
            "does not fit in 64 bits",
        ),
        (
            '%t = collective.permute %a on @m["x"], shift = -9223372036854775809 : tensor<4xf32>',
            "-9223",
            "does not fit in 64 bits",
        ),
        ("%t = hlo.iota dim = 0 : f32", "f32", "hlo.iota produces a tensor, got f32"),
        ('%t = spmd.axis_index @m["x"] : i32', "i32", "spmd.axis_index must produce a tensor type"),
    ],
)
def test_error_is_at_the_literal(line: str, at: str, message: str) -> None:
    column = 3 + line.index(at)
    text = (
        'spmd.mesh @m = <["x"=2]>\n'
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> attributes {spmd.partitioned} {\n"
        f"  {line}\n"
        "  func.return %a : tensor<4xf32>\n}\n"
    )
    with pytest.raises(DiagnosticError) as e:
        parse_and_verify(CTX, text, "r.mlir")
    first = str(e.value).splitlines()[0]
    assert first.startswith(f"r.mlir:3:{column}: error: "), first
    assert message in first
