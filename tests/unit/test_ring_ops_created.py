"""collective-matmul builds its rings' ops by `create` (without IRDL's argument checks):
each is the op its constructor makes, the same name, operands, result types, properties
(in order) and attributes."""

from __future__ import annotations

from shardc.dialects import hlo
from shardc.passes import collective_matmul as cm
from shardc.passes.rewrite_utils import SCALAR_I32
from xdsl.dialects.builtin import TensorType, bf16, f32
from xdsl.ir import Block, Operation


def _same(made: Operation, built: Operation) -> None:
    assert type(made) is type(built)
    assert list(made.operands) == list(built.operands)
    assert made.result_types == built.result_types
    assert list(made.properties.items()) == list(built.properties.items())
    assert list(made.attributes.items()) == list(built.attributes.items())
    assert str(made) == str(built)


def test_ring_ops_are_their_constructors() -> None:
    block = Block(
        arg_types=[
            SCALAR_I32,
            SCALAR_I32,
            TensorType(f32, [8, 16]),
            TensorType(f32, [2, 16]),
            TensorType(bf16, [4, 6, 8]),
        ]
    )
    i, j, x, part, y = block.args
    for cls in (hlo.AddOp, hlo.SubOp, hlo.MulOp, hlo.MaxOp, hlo.MinOp):
        _same(cm._binary(cls, i, j), cls(i, j))
        _same(cm._binary(cls, x, x), cls(x, x))
    _same(cm._compare_ge(i, j), hlo.CompareOp("GE", i, j))
    cond = hlo.CompareOp("GE", i, j).results[0]
    _same(cm._select(cond, i, j), hlo.SelectOp(cond, i, j))
    _same(cm._dynamic_slice(x, [i, j], [2, 16]), hlo.DynamicSliceOp(x, [i, j], [2, 16]))
    _same(cm._dynamic_slice(y, [i, j, j], [4, 3, 8]), hlo.DynamicSliceOp(y, [i, j, j], [4, 3, 8]))
    _same(cm._update_slice(x, part, [i, j]), hlo.DynamicUpdateSliceOp(x, part, [i, j]))
