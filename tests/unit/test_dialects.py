"""
Unit tests of the `hlo`, `spmd` and `collective` dialects through their Python API:
constructors and the types they infer, the custom syntax they print, the helpers the
passes share (mesh groups, local shapes, shard indices, device groups), and one test per
verifier rule of DESIGN.md with the message it gives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from shardc.diagnostics import DiagnosticError
from shardc.dialects import collective, hlo, spmd
from shardc.dialects.syntax import i64_array
from shardc.tests.unit.strategies import parse, print_module
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float8E4M3FNUZType,
    IntegerType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value


def t(*shape: int, dtype: Attribute = f32) -> TensorType:
    return TensorType(dtype, shape)


def val(*shape: int, dtype: Attribute = f32) -> SSAValue:
    return create_ssa_value(t(*shape, dtype=dtype))


def module_with(
    arg_types: Sequence[Attribute],
    body: Callable[[list[SSAValue]], list[Operation]],
    mesh: spmd.MeshAttr | None = None,
    mesh_name: str = "mesh",
    partitioned: bool = True,
) -> tuple[ModuleOp, list[Operation]]:
    """A module `[spmd.mesh] func.func @main(args) { body; return last }`."""
    block = Block(arg_types=arg_types)
    ops = body(list(block.args))
    block.add_ops(ops)
    results = list(ops[-1].results) if ops else []
    block.add_op(ReturnOp(*results))
    func = FuncOp("main", (list(arg_types), [r.type for r in results]), Region(block))
    if partitioned:
        func.attributes[spmd.PARTITIONED_ATTR_NAME] = UnitAttr()
    top: list[Operation] = [spmd.MeshOp(mesh_name, mesh)] if mesh is not None else []
    return ModuleOp([*top, func]), ops


MESH_2x4 = spmd.MeshAttr([("data", 2), ("model", 4)])
RING_8 = spmd.MeshAttr([("x", 8)])


################################################################################
# hlo: elementwise                                                             #
################################################################################


@pytest.mark.parametrize(
    "cls", [hlo.AddOp, hlo.SubOp, hlo.MulOp, hlo.DivOp, hlo.MaxOp, hlo.MinOp, hlo.PowOp]
)
@pytest.mark.parametrize("dtype", [f32, bf16, f16, f64, i32, i64])
def test_binary_numeric(cls: type[hlo.BinaryElementwiseOp], dtype: Attribute):
    a, b = val(4, 8, dtype=dtype), val(4, 8, dtype=dtype)
    op = cls(a, b)
    op.verify()
    assert op.result.type == t(4, 8, dtype=dtype)
    assert str(op) == f"%0 = {op.name} %1, %2 : {t(4, 8, dtype=dtype)}"


@pytest.mark.parametrize("cls", [hlo.AndOp, hlo.OrOp, hlo.AddOp, hlo.MaxOp])
def test_binary_on_i1(cls: type[hlo.BinaryElementwiseOp]):
    cls(val(3, dtype=i1), val(3, dtype=i1)).verify()


@pytest.mark.parametrize("cls", [hlo.SubOp, hlo.DivOp, hlo.PowOp])
def test_binary_numeric_rejects_i1(cls: type[hlo.BinaryElementwiseOp]):
    with pytest.raises(VerifyException, match="does not accept element type i1"):
        cls(val(3, dtype=i1), val(3, dtype=i1)).verify()


@pytest.mark.parametrize("cls", [hlo.AndOp, hlo.OrOp])
def test_logical_rejects_floats(cls: type[hlo.BinaryElementwiseOp]):
    with pytest.raises(VerifyException, match="does not accept element type f32"):
        cls(val(3), val(3)).verify()


def test_binary_operand_types_must_match():
    op = hlo.AddOp.create(operands=[val(4), val(5)], result_types=[t(4)])
    with pytest.raises(VerifyException, match="rhs"):
        op.verify()
    op = hlo.AddOp.create(operands=[val(4), val(4)], result_types=[t(4, dtype=f16)])
    with pytest.raises(VerifyException, match="result"):
        op.verify()


@pytest.mark.parametrize(
    "cls",
    [
        hlo.ExpOp,
        hlo.LogOp,
        hlo.TanhOp,
        hlo.SqrtOp,
        hlo.RsqrtOp,
        hlo.SinOp,
        hlo.CosOp,
        hlo.LogisticOp,
    ],
)
def test_unary_float_only(cls: type[hlo.UnaryElementwiseOp]):
    op = cls(val(2, 3, dtype=bf16))
    op.verify()
    assert op.result.type == t(2, 3, dtype=bf16)
    assert str(op) == f"%0 = {cls.name} %1 : tensor<2x3xbf16>"
    with pytest.raises(VerifyException, match="does not accept element type i32"):
        cls(val(2, dtype=i32)).verify()


def test_unary_numeric_and_logical():
    hlo.NegOp(val(2, dtype=i64)).verify()
    hlo.AbsOp(val(2, dtype=f16)).verify()
    hlo.NotOp(val(2, dtype=i1)).verify()
    hlo.NotOp(val(2, dtype=i32)).verify()
    with pytest.raises(VerifyException, match="does not accept element type i1"):
        hlo.NegOp(val(2, dtype=i1)).verify()
    with pytest.raises(VerifyException, match="does not accept element type f32"):
        hlo.NotOp(val(2)).verify()


def test_unsupported_element_types_and_dynamic_shapes():
    with pytest.raises(VerifyException, match="unsupported element type i7"):
        hlo.AddOp(val(4, dtype=IntegerType(7)), val(4, dtype=IntegerType(7))).verify()
    f8 = Float8E4M3FNUZType()  # not one of the f8 types JAX emits by default
    with pytest.raises(VerifyException, match="unsupported element type f8E4M3FNUZ"):
        hlo.AddOp(val(4, dtype=f8), val(4, dtype=f8)).verify()
    dyn = create_ssa_value(TensorType(f32, [-1, 4]))
    with pytest.raises(VerifyException, match="dynamic dimensions are not supported"):
        hlo.ExpOp(dyn).verify()


################################################################################
# hlo: compare, select, convert, constant, iota                                #
################################################################################


def test_compare():
    op = hlo.CompareOp("GT", val(4), val(4))
    op.verify()
    assert op.result.type == t(4, dtype=i1)
    assert str(op) == (
        "%0 = hlo.compare GT, %1, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>"
    )
    with pytest.raises(VerifyException, match='unknown comparison direction "XX"'):
        hlo.CompareOp("XX", val(4), val(4)).verify()
    with pytest.raises(VerifyException, match="operands must have one type"):
        hlo.CompareOp("EQ", val(4), val(4, dtype=f16)).verify()
    bad = hlo.CompareOp.create(
        operands=[val(4), val(4)],
        result_types=[t(4)],
        properties={"comparison_direction": StringAttr("LT")},
    )
    with pytest.raises(VerifyException, match=r"result must be tensor<4xi1>"):
        bad.verify()


def test_select():
    op = hlo.SelectOp(val(4, dtype=i1), val(4), val(4))
    op.verify()
    assert str(op) == "%0 = hlo.select %1, %2, %3 : tensor<4xi1>, tensor<4xf32>"
    hlo.SelectOp(val(dtype=i1), val(4), val(4)).verify()  # rank-0 predicate
    with pytest.raises(VerifyException, match="predicate must have element type i1"):
        hlo.SelectOp(val(4, dtype=i32), val(4), val(4)).verify()
    with pytest.raises(
        VerifyException, match=r"predicate shape \[3\] must equal the result shape \[4\]"
    ):
        hlo.SelectOp(val(3, dtype=i1), val(4), val(4)).verify()


def test_convert():
    op = hlo.ConvertOp(val(4), t(4, dtype=bf16))
    op.verify()
    assert str(op) == "%0 = hlo.convert %1 : (tensor<4xf32>) -> tensor<4xbf16>"
    with pytest.raises(VerifyException, match="convert keeps the shape"):
        hlo.ConvertOp(val(4), t(8, dtype=bf16)).verify()


def test_constant():
    value = DenseIntOrFPElementsAttr.from_list(t(2), [1.0, 2.0])
    op = hlo.ConstantOp(value)
    op.verify()
    assert op.result.type == t(2)
    assert str(op) == "%0 = hlo.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>"
    bad = hlo.ConstantOp.create(properties={"value": value}, result_types=[t(3)])
    with pytest.raises(VerifyException, match="differs from result type"):
        bad.verify()


def test_iota():
    op = hlo.IotaOp(1, t(8, 4, dtype=i32))
    op.verify()
    assert str(op) == "%0 = hlo.iota dim = 1 : tensor<8x4xi32>"
    with pytest.raises(VerifyException, match="iota dim 2 is out of range"):
        hlo.IotaOp(2, t(8, 4)).verify()
    with pytest.raises(VerifyException, match="does not accept element type i1"):
        hlo.IotaOp(0, t(8, dtype=i1)).verify()


################################################################################
# hlo: shape ops                                                               #
################################################################################


def test_broadcast():
    op = hlo.BroadcastOp(val(128), [1], t(16, 128))
    op.verify()
    assert op.dims == (1,)
    assert str(op) == "%0 = hlo.broadcast %1, dims = [1] : (tensor<128xf32>) -> tensor<16x128xf32>"
    hlo.BroadcastOp(val(1, 128), [0, 1], t(16, 128)).verify()  # size 1 expands
    hlo.BroadcastOp(val(), [], t(2, 3)).verify()  # scalar


@pytest.mark.parametrize(
    ("shape", "dims", "result", "message"),
    [
        ((128,), [0, 1], (16, 128), "dims has 2 entries but the operand has rank 1"),
        ((4, 8), [1, 0], (8, 4), r"dims \[1, 0\] must be strictly increasing"),
        ((4, 4), [0, 0], (4, 4), "strictly increasing"),
        ((128,), [2], (16, 128), "dims\\[0\\] = 2 is out of range for result rank 2"),
        ((3,), [1], (16, 128), "operand dimension 0 has size 3, which must be 1 or 128"),
    ],
)
def test_broadcast_invalid(shape, dims, result, message):
    with pytest.raises(VerifyException, match=message):
        hlo.BroadcastOp(val(*shape), dims, t(*result)).verify()


def test_broadcast_keeps_element_type():
    with pytest.raises(VerifyException, match="broadcast keeps the element type"):
        hlo.BroadcastOp(val(4), [0], t(4, dtype=f16)).verify()


def test_reshape():
    op = hlo.ReshapeOp(val(16, 128), t(2048))
    op.verify()
    assert str(op) == "%0 = hlo.reshape %1 : (tensor<16x128xf32>) -> tensor<2048xf32>"
    hlo.ReshapeOp(val(1), t()).verify()
    with pytest.raises(
        VerifyException, match="reshape must keep the element count: 4 elements to 8"
    ):
        hlo.ReshapeOp(val(4), t(8)).verify()
    with pytest.raises(VerifyException, match="reshape keeps the element type"):
        hlo.ReshapeOp(val(4), t(4, dtype=i32)).verify()


def test_transpose():
    op = hlo.TransposeOp(val(16, 128, 2), [2, 0, 1])
    op.verify()
    assert op.result.type == t(2, 16, 128)
    assert op.perm == (2, 0, 1)
    assert str(op) == (
        "%0 = hlo.transpose %1, dims = [2, 0, 1] : (tensor<16x128x2xf32>) -> tensor<2x16x128xf32>"
    )
    bad = hlo.TransposeOp.create(
        operands=[val(4, 8)], result_types=[t(4, 8)], properties={"permutation": i64_array([1, 1])}
    )
    with pytest.raises(VerifyException, match=r"dims \[1, 1\] is not a permutation of 0..1"):
        bad.verify()
    bad = hlo.TransposeOp.create(
        operands=[val(4, 8)], result_types=[t(4, 8)], properties={"permutation": i64_array([1, 0])}
    )
    with pytest.raises(VerifyException, match="result must be tensor<8x4xf32>"):
        bad.verify()


def test_slice():
    op = hlo.SliceOp(val(16, 128), [0, 0], [8, 128], [1, 2])
    op.verify()
    assert op.result.type == t(8, 64)
    assert op.bounds == [(0, 8, 1), (0, 128, 2)]
    assert str(op) == "%0 = hlo.slice %1 [0:8, 0:128:2] : (tensor<16x128xf32>) -> tensor<8x64xf32>"
    assert hlo.SliceOp(val(7), [1], [7], [3]).result.type == t(2)  # ceil((7-1)/3)
    hlo.SliceOp(val(7), [1], [7], [3]).verify()


@pytest.mark.parametrize(
    ("start", "limit", "strides", "message"),
    [
        ([0, 0], [17, 4], [1, 1], "slice 0:17 of dimension 0 is out of bounds for size 16"),
        ([5, 0], [4, 4], [1, 1], "slice 5:4 of dimension 0"),
        ([-1, 0], [4, 4], [1, 1], "slice -1:4 of dimension 0"),
        ([0, 0], [4, 4], [1, 0], "stride 0 of dimension 1 must be positive"),
        ([0], [4], [1], r"slice needs one range per dimension \(2\), got 1"),
    ],
)
def test_slice_invalid(start, limit, strides, message):
    op = hlo.SliceOp.create(
        operands=[val(16, 4)],
        result_types=[t(4, 4)],
        properties={
            "start_indices": i64_array(start),
            "limit_indices": i64_array(limit),
            "strides": i64_array(strides),
        },
    )
    with pytest.raises(VerifyException, match=message):
        op.verify()


def test_slice_result_type_checked():
    op = hlo.SliceOp.create(
        operands=[val(16, 4)],
        result_types=[t(8, 4)],
        properties={
            "start_indices": i64_array([0, 0]),
            "limit_indices": i64_array([16, 4]),
            "strides": i64_array([1, 1]),
        },
    )
    with pytest.raises(
        VerifyException, match="result must be tensor<16x4xf32>, got tensor<8x4xf32>"
    ):
        op.verify()


def test_dynamic_slice():
    i, j = val(dtype=i32), val(dtype=i32)
    op = hlo.DynamicSliceOp(val(16, 128), [i, j], [2, 128])
    op.verify()
    assert op.result.type == t(2, 128)
    assert op.sizes == (2, 128)
    assert str(op) == (
        "%0 = hlo.dynamic_slice %1 [%2, %3] sizes = [2, 128] : "
        "(tensor<16x128xf32>, tensor<i32>, tensor<i32>) -> tensor<2x128xf32>"
    )
    with pytest.raises(
        VerifyException, match=r"expected 2 start indices \(one per dimension\), got 1"
    ):
        hlo.DynamicSliceOp(val(16, 128), [i], [2, 128]).verify()
    with pytest.raises(VerifyException, match="start index 1 must be a rank-0 integer tensor"):
        hlo.DynamicSliceOp(val(16, 128), [i, val(dtype=f32)], [2, 128]).verify()
    with pytest.raises(VerifyException, match="start index 0 must be a rank-0 integer tensor"):
        hlo.DynamicSliceOp(val(16, 128), [val(1, dtype=i32), j], [2, 128]).verify()
    with pytest.raises(
        VerifyException, match="slice size 17 of dimension 0 exceeds the operand size 16"
    ):
        hlo.DynamicSliceOp(val(16, 128), [i, j], [17, 128]).verify()


def test_dynamic_update_slice():
    i, j = val(dtype=i32), val(dtype=i64)
    op = hlo.DynamicUpdateSliceOp(val(16, 128), val(2, 128), [i, j])
    op.verify()
    assert op.result.type == t(16, 128)
    assert str(op) == (
        "%0 = hlo.dynamic_update_slice %1, %2 [%3, %4] : "
        "(tensor<16x128xf32>, tensor<2x128xf32>, tensor<i32>, tensor<i64>) -> tensor<16x128xf32>"
    )
    with pytest.raises(
        VerifyException, match="update dimension 0 of size 17 exceeds the operand size 16"
    ):
        hlo.DynamicUpdateSliceOp(val(16, 128), val(17, 128), [i, j]).verify()
    with pytest.raises(VerifyException, match="must match the operand's rank and element type"):
        hlo.DynamicUpdateSliceOp(val(16, 128), val(2, 128, dtype=f16), [i, j]).verify()
    with pytest.raises(VerifyException, match="expected 2 start indices"):
        hlo.DynamicUpdateSliceOp(val(16, 128), val(2, 128), [i]).verify()


def test_concatenate():
    op = hlo.ConcatenateOp([val(8, 4), val(2, 4), val(8, 4)], 0)
    op.verify()
    assert op.result.type == t(18, 4)
    assert str(op) == (
        "%0 = hlo.concatenate %1, %2, %3, dim = 0 : "
        "(tensor<8x4xf32>, tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<18x4xf32>"
    )
    bad = hlo.ConcatenateOp.create(
        operands=[val(8, 4), val(8, 5)],
        result_types=[t(16, 4)],
        properties={"dimension": hlo.i64_attr(0)},
    )
    with pytest.raises(
        VerifyException, match=r"operand 1 \(tensor<8x5xf32>\) must match operand 0"
    ):
        bad.verify()
    bad = hlo.ConcatenateOp.create(
        operands=[val(8, 4)], result_types=[t(8, 4)], properties={"dimension": hlo.i64_attr(2)}
    )
    with pytest.raises(VerifyException, match="dim 2 is out of range"):
        bad.verify()
    bad = hlo.ConcatenateOp.create(
        operands=[val(8, 4), val(8, 4)],
        result_types=[t(8, 8)],
        properties={"dimension": hlo.i64_attr(0)},
    )
    with pytest.raises(VerifyException, match="result must be tensor<16x4xf32>"):
        bad.verify()


################################################################################
# hlo: dot and reduce                                                          #
################################################################################


def test_dot_matmul():
    op = hlo.DotOp(val(16, 32), val(32, 128), contracting=([1], [0]))
    op.verify()
    assert op.result.type == t(16, 128)
    assert op.batching == ((), ())
    assert op.contracting == ((1,), (0,))
    assert str(op) == (
        "%0 = hlo.dot %1, %2, contracting_dims = [1] x [0] : "
        "(tensor<16x32xf32>, tensor<32x128xf32>) -> tensor<16x128xf32>"
    )


def test_dot_general():
    op = hlo.DotOp(val(4, 16, 32), val(4, 32, 8), contracting=([2], [1]), batching=([0], [0]))
    op.verify()
    assert op.result.type == t(4, 16, 8)
    assert "batching_dims = [0] x [0], contracting_dims = [2] x [1]" in str(op)
    # batch dims first, then lhs free, then rhs free, each in operand order
    op = hlo.DotOp(val(3, 5, 7), val(7, 2, 3), contracting=([2], [0]), batching=([0], [2]))
    assert op.result.type == t(3, 5, 2)
    # outer product: no contracting dims
    assert hlo.DotOp(val(3), val(5), contracting=([], [])).result.type == t(3, 5)


@pytest.mark.parametrize(
    ("lhs", "rhs", "contracting", "batching", "message"),
    [
        (
            (4, 16),
            (32, 8),
            ([1], [0]),
            ([], []),
            "contracting dims have different sizes: lhs dim 1 is 16, rhs dim 0 is 32",
        ),
        ((4, 16), (16, 8), ([1], []), ([], []), r"contracting dims differ in number: \[1\] x \[\]"),
        (
            (4, 16),
            (16, 8),
            ([2], [0]),
            ([], []),
            "lhs contracting dim 2 is out of range for rank 2",
        ),
        (
            (4, 16),
            (16, 8),
            ([1], [5]),
            ([], []),
            "rhs contracting dim 5 is out of range for rank 2",
        ),
        (
            (3, 4, 16),
            (2, 16, 8),
            ([2], [1]),
            ([0], [0]),
            "batching dims have different sizes: lhs dim 0 is 3, rhs dim 0 is 2",
        ),
        (
            (4, 16),
            (4, 16),
            ([0], [0]),
            ([0], [0]),
            "lhs batching and contracting dims must be distinct",
        ),
    ],
)
def test_dot_invalid(lhs, rhs, contracting, batching, message):
    props = {
        "lhs_batching_dimensions": i64_array(batching[0]),
        "rhs_batching_dimensions": i64_array(batching[1]),
        "lhs_contracting_dimensions": i64_array(contracting[0]),
        "rhs_contracting_dimensions": i64_array(contracting[1]),
    }
    op = hlo.DotOp.create(operands=[val(*lhs), val(*rhs)], result_types=[t(4, 8)], properties=props)
    with pytest.raises(VerifyException, match=message):
        op.verify()
    with pytest.raises(VerifyException, match=message):
        hlo.DotOp(val(*lhs), val(*rhs), contracting=contracting, batching=batching)


def test_dot_result_and_element_types():
    op = hlo.DotOp(val(16, 32), val(32, 128), contracting=([1], [0]), result_type=t(128, 16))
    with pytest.raises(
        VerifyException,
        match=r"result shape must be \[16, 128\] \(batch, lhs free, rhs free\), got \[128, 16\]",
    ):
        op.verify()
    op = hlo.DotOp(
        val(16, 32), val(32, 128, dtype=bf16), contracting=([1], [0]), result_type=t(16, 128)
    )
    with pytest.raises(
        VerifyException, match="operands must share an element type, got f32 and bf16"
    ):
        op.verify()
    op = hlo.DotOp(
        val(16, 32), val(32, 128), contracting=([1], [0]), result_type=t(16, 128, dtype=i32)
    )
    with pytest.raises(
        VerifyException, match="result element type i32 is not of the operands' kind"
    ):
        op.verify()
    # a wider float result is allowed (accumulation type)
    hlo.DotOp(
        val(16, 32, dtype=bf16),
        val(32, 128, dtype=bf16),
        contracting=([1], [0]),
        result_type=t(16, 128),
    ).verify()


def test_reduce():
    op = hlo.ReduceOp("add", val(16, 128, 4), [2, 0])
    op.verify()
    assert op.result.type == t(128)
    assert op.dims == (2, 0)
    assert (
        str(op)
        == "%0 = hlo.reduce add %1, dims = [2, 0] : (tensor<16x128x4xf32>) -> tensor<128xf32>"
    )
    hlo.ReduceOp("max", val(4), []).verify()
    with pytest.raises(VerifyException, match=r"dims \[1, 1\] must be distinct"):
        hlo.ReduceOp.create(
            operands=[val(4, 4)],
            result_types=[t(4)],
            properties={"kind": StringAttr("add"), "dimensions": i64_array([1, 1])},
        ).verify()
    with pytest.raises(VerifyException, match="dim 2 is out of range for tensor<4x4xf32>"):
        hlo.ReduceOp("add", val(4, 4), [2]).verify()
    with pytest.raises(VerifyException, match='unknown reduction kind "sum"'):
        hlo.ReduceOp("sum", val(4, 4), [1]).verify()
    with pytest.raises(VerifyException, match="result must be tensor<4xf32>, got tensor<4x4xf32>"):
        hlo.ReduceOp.create(
            operands=[val(4, 4)],
            result_types=[t(4, 4)],
            properties={"kind": StringAttr("add"), "dimensions": i64_array([1])},
        ).verify()


################################################################################
# spmd                                                                         #
################################################################################


def test_mesh_attr_arithmetic():
    m = MESH_2x4
    assert m.names == ("data", "model")
    assert m.shape == (2, 4)
    assert m.device_count == 8
    assert m.axis_size("model") == 4
    assert m.coords(6) == (1, 2)
    assert m.device_id((1, 2)) == 6
    assert all(m.device_id(m.coords(d)) == d for d in range(8))


def test_mesh_groups():
    m = MESH_2x4
    assert m.groups(["model"]) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert m.groups(["data"]) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert m.groups(["data", "model"]) == [list(range(8))]
    # the first listed axis is major: rank = coord_model * 2 + coord_data
    assert m.groups(["model", "data"]) == [[0, 4, 1, 5, 2, 6, 3, 7]]
    m3 = spmd.MeshAttr([("a", 2), ("b", 3), ("c", 2)])
    groups = m3.groups(["c", "a"])
    assert len(groups) == 3 and all(len(g) == 4 for g in groups)
    assert sorted(d for g in groups for d in g) == list(range(12))
    assert groups[0] == [0, 6, 1, 7]


def test_mesh_op_and_attr_print():
    op = spmd.MeshOp("mesh", MESH_2x4)
    assert str(op) == 'spmd.mesh @mesh = <["data"=2, "model"=4]>'
    with pytest.raises(VerifyException, match='mesh axis "a" must have a positive size'):
        spmd.MeshAttr([("a", 0)])
    with pytest.raises(VerifyException, match="a mesh has at most 65536"):
        spmd.MeshAttr([("a", 2**31 - 1)])
    with pytest.raises(VerifyException, match="the mesh has 131072 devices"):
        spmd.MeshAttr([("a", 512), ("b", 256)])
    with pytest.raises(VerifyException, match="must be an identifier"):
        spmd.MeshAttr([("", 2)])
    with pytest.raises(VerifyException, match="mesh axis declared twice"):
        spmd.MeshAttr([("a", 2), ("a", 2)])


def test_sharding_attr():
    s = spmd.ShardingAttr("mesh", [["data"], []], unreduced=["model"])
    assert s.mesh_name == "mesh"
    assert s.dim_axes == (("data",), ())
    assert s.unreduced_axes == ("model",)
    assert s.all_axes == ("data", "model")
    assert not s.is_replicated()
    assert spmd.ShardingAttr("mesh", [[], []]).is_replicated()
    assert str(s) == '#spmd.sharding<@mesh, [{"data"}, {}], unreduced={"model"}>'
    assert str(spmd.ShardingAttr("m", [])) == "#spmd.sharding<@m, []>"
    with pytest.raises(VerifyException, match="appears more than once"):
        spmd.ShardingAttr("mesh", [["data"], ["data"]])
    with pytest.raises(VerifyException, match="appears more than once"):
        spmd.ShardingAttr("mesh", [["data"], []], unreduced=["data"])


def test_sharding_local_global_shape_and_index():
    m = MESH_2x4
    s = spmd.ShardingAttr("mesh", [["data"], ["model"]])
    assert s.local_shape((16, 128), m) == (8, 32)
    assert s.global_shape((8, 32), m) == (16, 128)
    both = spmd.ShardingAttr("mesh", [["data", "model"], []])
    assert both.local_shape((16, 5), m) == (2, 5)
    assert both.split_factor(0, m) == 8
    # {"data", "model"}: index = coord_data * 4 + coord_model
    assert both.shard_index(0, m, (1, 2)) == 6
    # {"model", "data"}: index = coord_model * 2 + coord_data
    rev = spmd.ShardingAttr("mesh", [["model", "data"], []])
    assert rev.shard_index(0, m, (1, 2)) == 5
    assert rev.shard_index(1, m, (1, 2)) == 0


def test_sharding_check():
    m = MESH_2x4
    s = spmd.ShardingAttr("mesh", [["data"], ["model"]])
    s.check((16, 128), m, is_global=True)
    s.check((16, 6), m, is_global=True)  # uneven: padded blocks of 2 (the last holds 0)
    with pytest.raises(
        VerifyException,
        match=r"dimension 1 of size 3 is split into 4 shards \(the product of its mesh axes "
        r'\{"model"\}\): a split dimension needs at least as many elements as shards',
    ):
        s.check((16, 3), m, is_global=True)
    s.check((16, 3), m, is_global=False)  # local shapes are not checked
    s.check((0, 0), m, is_global=True)  # zero-size dimensions split into empty blocks
    assert s.local_shape((16, 6), m) == (8, 2) and s.local_shape((15, 7), m) == (8, 2)
    assert s.is_uneven((15, 8), m) and not s.is_uneven((16, 8), m)
    with pytest.raises(
        VerifyException, match="sharding has 2 dimension entries but the tensor has rank 3"
    ):
        s.check((16, 128, 2), m, is_global=True)
    bad = spmd.ShardingAttr("mesh", [["pipe"], []])
    with pytest.raises(
        VerifyException, match='sharding names axis "pipe", which mesh @mesh does not have'
    ):
        bad.check((16, 128), m, is_global=True)
    both = spmd.ShardingAttr("mesh", [["data", "model"]])
    with pytest.raises(VerifyException, match=r"dimension 0 of size 4 is split into 8 shards"):
        both.check((4,), m, is_global=True)


def test_constraint_op():
    sharding = spmd.ShardingAttr("mesh", [["data"], ["model"]])
    module, (op,) = module_with(
        [t(16, 128)], lambda a: [spmd.ConstraintOp(a[0], sharding)], MESH_2x4, partitioned=False
    )
    module.verify()
    assert op.result.type == t(16, 128)
    assert (
        '= spmd.constraint %0 <@mesh, [{"data"}, {"model"}]> : tensor<16x128xf32>'
        in print_module(module)
    )
    module, _ = module_with(
        [t(15, 128)], lambda a: [spmd.ConstraintOp(a[0], sharding)], MESH_2x4, partitioned=False
    )
    module.verify()  # an uneven split (padded)
    module, _ = module_with(
        [t(1, 128)], lambda a: [spmd.ConstraintOp(a[0], sharding)], MESH_2x4, partitioned=False
    )
    with pytest.raises(VerifyException, match="dimension 0 of size 1 is split into 2 shards"):
        module.verify()
    # after partitioning, shapes are local: no rule
    module, _ = module_with(
        [t(1, 128)], lambda a: [spmd.ConstraintOp(a[0], sharding)], MESH_2x4, partitioned=True
    )
    module.verify()
    module, _ = module_with(
        [t(16, 128)], lambda a: [spmd.ConstraintOp(a[0], sharding)], MESH_2x4, mesh_name="other"
    )
    with pytest.raises(VerifyException, match="@mesh does not name an spmd.mesh"):
        module.verify()


def test_axis_index_op():
    module, (op,) = module_with(
        [], lambda a: [spmd.AxisIndexOp("mesh", "model", t(dtype=i32))], MESH_2x4
    )
    module.verify()
    assert str(op) == '%0 = spmd.axis_index @mesh["model"] : tensor<i32>'
    module, _ = module_with(
        [], lambda a: [spmd.AxisIndexOp("mesh", "pipe", t(dtype=i32))], MESH_2x4
    )
    with pytest.raises(VerifyException, match='mesh @mesh has no axis "pipe"'):
        module.verify()
    module, _ = module_with(
        [], lambda a: [spmd.AxisIndexOp("mesh", "data", t(2, dtype=i32))], MESH_2x4
    )
    with pytest.raises(VerifyException, match="result must be a rank-0 integer tensor"):
        module.verify()


def test_function_shardings():
    sharding = spmd.ShardingAttr("mesh", [["data"], []])
    module, _ = module_with([t(16, 6)], lambda a: [hlo.NegOp(a[0])], MESH_2x4, partitioned=False)
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    func.arg_attrs = ArrayAttr([DictionaryAttr({spmd.SHARDING_ATTR_NAME: sharding})])
    assert spmd.function_shardings(func) == ([sharding], [None])
    spmd.verify_function_shardings(func)
    bad = spmd.ShardingAttr("mesh", [[], ["data", "model"]])
    func.res_attrs = ArrayAttr([DictionaryAttr({spmd.SHARDING_ATTR_NAME: bad})])
    with pytest.raises(
        VerifyException, match="result 0 of @main: dimension 1 of size 6 is split into 8 shards"
    ):
        spmd.verify_function_shardings(func)
    func.attributes[spmd.PARTITIONED_ATTR_NAME] = UnitAttr()  # local shapes: no rule
    spmd.verify_function_shardings(func)
    func.res_attrs = ArrayAttr([DictionaryAttr({spmd.SHARDING_ATTR_NAME: StringAttr("x")})])
    with pytest.raises(VerifyException, match="spmd.sharding must be a #spmd.sharding"):
        spmd.verify_function_shardings(func)
    func.res_attrs = None
    func.attributes[spmd.PER_DEVICE_IO_ATTR_NAME] = StringAttr("yes")
    with pytest.raises(VerifyException, match="spmd.per_device_io must be a unit attribute"):
        spmd.verify_function_shardings(func)


################################################################################
# collective                                                                   #
################################################################################


def mesh_axes(*axes: str, mesh: str = "mesh") -> dict[str, Attribute]:
    return {"mesh": SymbolRefAttr(mesh), "mesh_axes": ArrayAttr(StringAttr(a) for a in axes)}


def explicit_groups(groups: list[list[int]]) -> dict[str, Attribute]:
    return {"groups": ArrayAttr(i64_array(g) for g in groups)}


def test_all_reduce():
    module, (op,) = module_with(
        [t(8, 32), t(32)],
        lambda a: [collective.AllReduceOp("add", a, mesh_axes("data"))],
        MESH_2x4,
    )
    module.verify()
    assert isinstance(op, collective.AllReduceOp)
    assert [r.type for r in op.results] == [t(8, 32), t(32)]
    assert op.device_groups() == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert op.group_size() == 2
    assert op.axes == ("data",)
    assert str(op) == (
        '%0, %1 = collective.all_reduce add %2, %3 on @mesh["data"] : tensor<8x32xf32>, tensor<32xf32>'
    )


def test_collective_group_rules():
    def make(group: dict[str, Attribute], mesh=MESH_2x4):
        return module_with([t(8)], lambda a: [collective.AllReduceOp("max", a, group)], mesh)

    make(mesh_axes("model", "data"))[0].verify()
    with pytest.raises(VerifyException, match='mesh @mesh has no axis "pipe"'):
        make(mesh_axes("pipe"))[0].verify()
    with pytest.raises(VerifyException, match='mesh axis "data" is named twice'):
        make(mesh_axes("data", "data"))[0].verify()
    with pytest.raises(VerifyException, match="must name at least one axis"):
        make(mesh_axes())[0].verify()
    with pytest.raises(VerifyException, match="either `on @mesh"):
        make({})[0].verify()
    with pytest.raises(VerifyException, match="either `on @mesh"):
        make({**mesh_axes("data"), **explicit_groups([[0, 1]])})[0].verify()
    with pytest.raises(VerifyException, match="@nomesh does not name an spmd.mesh"):
        make(mesh_axes("data", mesh="nomesh"))[0].verify()


def test_explicit_groups():
    module, (op,) = module_with(
        [t(8)],
        lambda a: [collective.AllReduceOp("add", a, explicit_groups([[0, 2, 4, 6], [1, 3, 5, 7]]))],
        RING_8,
    )
    module.verify()
    assert isinstance(op, collective.AllReduceOp)
    assert op.device_groups() == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert op.group_size() == 4
    assert "on groups [[0, 2, 4, 6], [1, 3, 5, 7]]" in str(op)
    for groups, message in [
        ([[0, 1, 2], [3, 4], [5, 6, 7]], "must all have the same size"),
        ([[0, 1], [2, 3]], "must partition the 8 devices 0..7"),
        ([[0, 1, 2, 3], [3, 4, 5, 6]], "must partition"),
        ([[]], "must be non-empty"),
    ]:
        module, _ = module_with(
            [t(8)],
            lambda a, groups=groups: [collective.AllReduceOp("add", a, explicit_groups(groups))],
            RING_8,
        )
        with pytest.raises(VerifyException, match=message):
            module.verify()


def test_all_reduce_kind_and_types():
    module, _ = module_with(
        [t(8)], lambda a: [collective.AllReduceOp("avg", a, mesh_axes("x"))], RING_8
    )
    with pytest.raises(VerifyException, match='unknown reduction kind "avg"'):
        module.verify()
    module, _ = module_with(
        [t(8)],
        lambda a: [
            collective.AllReduceOp.create(
                operands=a,
                result_types=[t(4)],
                properties={"kind": StringAttr("add"), **mesh_axes("x")},
            )
        ],
        RING_8,
    )
    with pytest.raises(
        VerifyException, match="result 0 must have type tensor<8xf32>, got tensor<4xf32>"
    ):
        module.verify()


def gather(shapes_in, shapes_out, dim, axes=("model",), start=False):
    cls = collective.AllGatherStartOp if start else collective.AllGatherOp
    results = (
        [collective.FutureType([t(*s) for s in shapes_out])]
        if start
        else [t(*s) for s in shapes_out]
    )

    def body(a):
        return [
            cls.create(
                operands=a,
                result_types=results,
                properties={"dim": hlo.i64_attr(dim), **mesh_axes(*axes)},
            )
        ]

    return module_with([t(*s) for s in shapes_in], body, MESH_2x4)


def test_all_gather():
    module, (op,) = gather([(8, 8)], [(8, 32)], 1)
    module.verify()
    assert (
        str(op)
        == '%0 = collective.all_gather %1 on @mesh["model"], dim = 1 : (tensor<8x8xf32>) -> tensor<8x32xf32>'
    )
    module, (op,) = gather([(2, 8), (2,)], [(8, 8), (8,)], 0)
    module.verify()
    assert "(tensor<2x8xf32>, tensor<2xf32>) -> (tensor<8x8xf32>, tensor<8xf32>)" in str(op)
    module, (op,) = gather([(2, 8)], [(16, 8)], 0, axes=("model", "data"))
    module.verify()
    module, _ = gather([(8, 8)], [(8, 16)], 1)
    with pytest.raises(
        VerifyException, match="result 0 must have type tensor<8x32xf32>, got tensor<8x16xf32>"
    ):
        module.verify()
    module, _ = gather([(8, 8)], [(8, 8)], 2)
    with pytest.raises(VerifyException, match="dim 2 is out of range for tensor<8x8xf32>"):
        module.verify()


def test_all_gather_start_and_done():
    module, (op,) = gather([(8, 8)], [(8, 32)], 1, start=True)
    module.verify()
    assert str(op) == (
        '%0 = collective.all_gather_start %1 on @mesh["model"], dim = 1 : '
        "(tensor<8x8xf32>) -> !collective.future<tensor<8x32xf32>>"
    )
    assert isinstance(op, collective.CollectiveOp)
    assert op.value_types() == (t(8, 32),)
    done = collective.DoneOp(op.results[0])
    assert [r.type for r in done.results] == [t(8, 32)]
    done.verify()
    assert str(done).endswith(
        "= collective.done %1 : !collective.future<tensor<8x32xf32>> -> tensor<8x32xf32>"
    )


def test_done_types_must_match_future():
    future = create_ssa_value(collective.FutureType([t(8, 32), t(32)]))
    done = collective.DoneOp(future)
    assert [r.type for r in done.results] == [t(8, 32), t(32)]
    assert str(done) == (
        "%0, %1 = collective.done %2 : !collective.future<tensor<8x32xf32>, tensor<32xf32>> "
        "-> tensor<8x32xf32>, tensor<32xf32>"
    )
    bad = collective.DoneOp.create(operands=[future], result_types=[t(8, 32)])
    with pytest.raises(VerifyException, match="do not match the future's"):
        bad.verify()
    bad = collective.DoneOp.create(operands=[future], result_types=[t(8, 32), t(16)])
    with pytest.raises(VerifyException, match="do not match the future's"):
        bad.verify()


def test_future_type():
    ft = collective.FutureType([t(8, 32), t(32, dtype=bf16)])
    assert ft.value_types == (t(8, 32), t(32, dtype=bf16))
    assert str(ft) == "!collective.future<tensor<8x32xf32>, tensor<32xbf16>>"


def test_all_reduce_start():
    def body(a):
        return [
            collective.AllReduceStartOp.create(
                operands=a,
                result_types=[collective.FutureType([t(8, 32), t(32)])],
                properties={"kind": StringAttr("add"), **mesh_axes("data")},
            )
        ]

    module, (op,) = module_with([t(8, 32), t(32)], body, MESH_2x4)
    module.verify()
    assert str(op) == (
        '%0 = collective.all_reduce_start add %1, %2 on @mesh["data"] : tensor<8x32xf32>, '
        "tensor<32xf32> -> !collective.future<tensor<8x32xf32>, tensor<32xf32>>"
    )

    def bad_body(a):
        return [
            collective.AllReduceStartOp.create(
                operands=a,
                result_types=[collective.FutureType([t(8, 32)])],
                properties={"kind": StringAttr("add"), **mesh_axes("data")},
            )
        ]

    module, _ = module_with([t(8, 32), t(32)], bad_body, MESH_2x4)
    with pytest.raises(VerifyException, match="expected 2 results, got 1"):
        module.verify()


def test_reduce_scatter():
    def make(shape_in, shape_out, dim, kind="add"):
        return module_with(
            [t(*shape_in)],
            lambda a: [
                collective.ReduceScatterOp.create(
                    operands=a,
                    result_types=[t(*shape_out)],
                    properties={
                        "kind": StringAttr(kind),
                        "dim": hlo.i64_attr(dim),
                        **mesh_axes("model"),
                    },
                )
            ],
            MESH_2x4,
        )

    module, (op,) = make((8, 32), (8, 8), 1)
    module.verify()
    assert str(op) == (
        '%0 = collective.reduce_scatter add %1 on @mesh["model"], dim = 1 : (tensor<8x32xf32>) -> tensor<8x8xf32>'
    )
    with pytest.raises(
        VerifyException, match="dimension 1 of size 30 is not divisible by the group size 4"
    ):
        make((8, 30), (8, 7), 1)[0].verify()
    with pytest.raises(VerifyException, match="result 0 must have type tensor<2x32xf32>"):
        make((8, 32), (8, 8), 0)[0].verify()
    with pytest.raises(VerifyException, match='unknown reduction kind "or"'):
        make((8, 32), (8, 8), 1, kind="or")[0].verify()


def test_all_to_all():
    def make(shape_in, shape_out, split, concat):
        return module_with(
            [t(*shape_in)],
            lambda a: [
                collective.AllToAllOp.create(
                    operands=a,
                    result_types=[t(*shape_out)],
                    properties={
                        "split_dim": hlo.i64_attr(split),
                        "concat_dim": hlo.i64_attr(concat),
                        **mesh_axes("x", mesh="ring"),
                    },
                )
            ],
            RING_8,
            mesh_name="ring",
        )

    module, (op,) = make((8, 64), (64, 8), 1, 0)
    module.verify()
    assert str(op) == (
        '%0 = collective.all_to_all %1 on @ring["x"], split_dim = 1, concat_dim = 0 : '
        "(tensor<8x64xf32>) -> tensor<64x8xf32>"
    )
    make((8, 64), (8, 64), 1, 1)[0].verify()
    with pytest.raises(
        VerifyException, match="split_dim 1 of size 12 is not divisible by the group size 8"
    ):
        make((8, 12), (64, 1), 1, 0)[0].verify()
    with pytest.raises(VerifyException, match="concat_dim 2 is out of range"):
        make((8, 64), (8, 64), 1, 2)[0].verify()
    with pytest.raises(VerifyException, match="result 0 must have type tensor<64x8xf32>"):
        make((8, 64), (8, 64), 1, 0)[0].verify()


def permute(shift=None, pairs=None, start=False, shape=(8, 16)):
    props: dict[str, Attribute] = dict(mesh_axes("x", mesh="ring"))
    if shift is not None:
        props["shift"] = hlo.i64_attr(shift)
    if pairs is not None:
        props["pairs"] = ArrayAttr(i64_array(p) for p in pairs)
    cls = collective.PermuteStartOp if start else collective.PermuteOp
    result = collective.FutureType([t(*shape)]) if start else t(*shape)
    return module_with(
        [t(*shape)],
        lambda a: [cls.create(operands=a, result_types=[result], properties=props)],
        RING_8,
        mesh_name="ring",
    )


def test_permute_shift():
    module, (op,) = permute(shift=-1)
    module.verify()
    assert isinstance(op, collective.PermuteOp)
    assert op.source_target_pairs == [(r, (r - 1) % 8) for r in range(8)]
    assert str(op) == '%0 = collective.permute %1 on @ring["x"], shift = -1 : tensor<8x16xf32>'


def test_permute_pairs():
    module, (op,) = permute(pairs=[[0, 1], [1, 0]])
    module.verify()
    assert isinstance(op, collective.PermuteOp)
    assert op.source_target_pairs == [(0, 1), (1, 0)]
    assert (
        str(op)
        == '%0 = collective.permute %1 on @ring["x"], pairs = [[0, 1], [1, 0]] : tensor<8x16xf32>'
    )
    module, (op,) = permute(pairs=[[0, 1]], start=True)
    module.verify()
    assert str(op).endswith(
        "pairs = [[0, 1]] : tensor<8x16xf32> -> !collective.future<tensor<8x16xf32>>"
    )


@pytest.mark.parametrize(
    ("shift", "pairs", "message"),
    [
        (None, [[0, 8]], "rank 8 is out of range for a group of 8"),
        (None, [[-1, 0]], "rank -1 is out of range"),
        (None, [[0, 1], [0, 2]], "rank 0 is a source more than once"),
        (None, [[0, 1], [2, 1]], "rank 1 is a target more than once"),
        (None, [[0, 1, 2]], r"each permute pair is \[source, target\]"),
        (1, [[0, 1]], "exactly one of `shift` or `pairs`"),
        (None, None, "exactly one of `shift` or `pairs`"),
    ],
)
def test_permute_invalid(shift, pairs, message):
    module, _ = permute(shift=shift, pairs=pairs)
    with pytest.raises(VerifyException, match=message):
        module.verify()


def test_start_op_needs_future():
    module, _ = module_with(
        [t(8)],
        lambda a: [
            collective.PermuteStartOp.create(
                operands=a,
                result_types=[t(8)],
                properties={"shift": hlo.i64_attr(1), **mesh_axes("x", mesh="ring")},
            )
        ],
        RING_8,
        mesh_name="ring",
    )
    with pytest.raises(VerifyException):
        module.verify()


def test_trivial_group_size_one():
    mesh = spmd.MeshAttr([("a", 1), ("b", 2)])
    module, (op,) = module_with(
        [t(8)], lambda a: [collective.AllReduceOp("add", a, mesh_axes("a"))], mesh
    )
    module.verify()
    assert isinstance(op, collective.AllReduceOp)
    assert op.group_size() == 1
    assert op.device_groups() == [[0], [1]]


################################################################################
# Built IR prints text that parses back to the same IR                         #
################################################################################


def test_built_module_round_trips_through_text():
    sharding = spmd.ShardingAttr("mesh", [["data"], ["model"]])

    def body(a):
        dot = hlo.DotOp(a[0], a[1], contracting=([1], [0]))
        c = spmd.ConstraintOp(dot.result, sharding)
        r = collective.AllReduceOp("add", [c.result], mesh_axes("model"))
        return [dot, c, r]

    module, _ = module_with([t(16, 32), t(32, 128)], body, MESH_2x4)
    module.verify()
    text = print_module(module)
    again = parse(text)
    assert print_module(again) == text
    assert print_module(parse(print_module(module, generic=True))) == text


def test_sharding_attribute_syntax():
    text = """
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%x: tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b", "a"}, {}]>})
    -> (tensor<8x8xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}], unreduced={"b", "a"}>}) {
  func.return %x : tensor<8x8xf32>
}
"""
    module = parse(text)
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    (arg,), (res,) = spmd.function_shardings(func)
    assert arg is not None and arg.dim_axes == (("b", "a"), ())  # order kept
    assert res is not None and res.unreduced_axes == ("b", "a")
    out = print_module(module)
    assert '#spmd.sharding<@mesh, [{"b", "a"}, {}]>' in out
    assert 'unreduced={"b", "a"}' in out


@pytest.mark.parametrize(
    ("sharding", "message"),
    [
        ('<@mesh, [{"a", "a"}, {}]>', 'mesh axis "a" appears more than once'),
        ('<@mesh, [{"a"}, {}], unreduced={"a"}>', 'mesh axis "a" appears more than once'),
        ('<@mesh, [{"c"}, {}]>', 'sharding names axis "c"'),
        ("<@mesh, [{}]>", "sharding has 1 dimension entries but the tensor has rank 2"),
        ('<@mesh, [{"a", "b"}, {}]>', "dimension 0 of size 2 is split into 4 shards"),
        ("<@nomesh, [{}, {}]>", "@nomesh does not name an spmd.mesh"),
    ],
)
def test_invalid_function_sharding_is_located(sharding, message):
    text = f"""spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%x: tensor<2x8xf32> {{spmd.sharding = #spmd.sharding{sharding}}}) -> tensor<2x8xf32> {{
  func.return %x : tensor<2x8xf32>
}}
"""
    with pytest.raises(DiagnosticError, match=message) as info:
        parse(text, "f.mlir")
    assert str(info.value).startswith(("f.mlir:2:", "f.mlir:1:"))


def test_names_that_need_quoting_round_trip():
    """Mesh names with spaces, quotes and backslashes print escaped and parse back; axis
    names are identifiers (they name SSA values and semaphores at level T)."""
    from shardc.dialects.syntax import quote, symbol

    assert quote("data") == '"data"'
    assert quote('a"b\\c') == '"a\\22b\\\\c"'
    assert symbol("mesh") == "@mesh" and symbol("my mesh") == '@"my mesh"'
    text = r"""spmd.mesh @"my \"mesh\\" = <["a.b"=2, "c-d$"=2]>
func.func @main(%x: tensor<4x4xf32> {spmd.sharding = #spmd.sharding<@"my \"mesh\\", [{"a.b"}, {}]>}) -> tensor<4x4xf32> {
  %0 = collective.all_reduce add %x on @"my \"mesh\\"["c-d$", "a.b"] : tensor<4x4xf32>
  %1 = spmd.axis_index @"my \"mesh\\"["a.b"] : tensor<i32>
  %2 = spmd.constraint %0 <@"my \"mesh\\", [{}, {"c-d$"}]> : tensor<4x4xf32>
  func.return %2 : tensor<4x4xf32>
}
"""
    module = parse(text)
    mesh = next(op for op in module.ops if isinstance(op, spmd.MeshOp))
    assert mesh.sym_name.data == 'my "mesh\\' and mesh.mesh.names == ("a.b", "c-d$")
    custom = print_module(module)
    assert print_module(parse(custom)) == custom
    assert print_module(parse(print_module(module, generic=True))) == custom


def test_lookup_mesh_finds_the_named_mesh_as_the_symbol_table_does() -> None:
    """`spmd.lookup_mesh` scans the module's symbols itself (no `SymbolRefAttr` per call):
    it finds the mesh of that name (after another symbol), and refuses a name that is
    another symbol or none, as `SymbolTable.lookup_symbol` would."""
    from xdsl.traits import SymbolTable

    module = parse('func.func @f() {\n  func.return\n}\nspmd.mesh @b = <["x"=2, "y"=4]>\n')
    ret = next(op for op in module.walk() if isinstance(op, ReturnOp))
    expected = SymbolTable.lookup_symbol(module, "b")
    assert isinstance(expected, spmd.MeshOp)
    assert spmd.lookup_mesh(ret, "b") == expected.mesh
    for name in ("f", "c"):
        with pytest.raises(VerifyException, match="does not name an spmd.mesh"):
            spmd.lookup_mesh(ret, name)
