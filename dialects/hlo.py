"""
The `hlo` dialect: tensor ops with global semantics (level G), after StableHLO.

Syntax follows StableHLO's pretty form; `broadcast` is StableHLO's broadcast_in_dim, `dot`
its dot_general (result dims: batch, lhs free, rhs free), `reduce` names its combiner
(`add mul max min`) instead of carrying a region.

```mlir
%0 = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x128xf32>) -> tensor<16x128xf32>
%1 = hlo.constant dense<0.0> : tensor<16x128xf32>
%2 = hlo.max %0, %1 : tensor<16x128xf32>
```
"""

from __future__ import annotations

import math
from abc import ABC
from collections.abc import Sequence
from typing import Any, ClassVar

from shardc.dialects.syntax import (
    i64_array,
    i64_attr,
    int_list_str,
    parse_i64,
    parse_int_list,
    parse_keyword_int,
    parse_keyword_int_list,
    splat_element,
    splat_elements,
)
from shardc.xdsl_patches import patch_compact_splats, patch_hex_float_elements
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_region_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.pattern_rewriter import RewritePattern
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, HasCanonicalizationPatternsTrait, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

patch_hex_float_elements()
patch_compact_splats(splat_elements, splat_element)

COMPARISON_DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")
REDUCE_KINDS = ("add", "mul", "max", "min")

FLOAT, INT, BOOL = "float", "int", "bool"
ANY_KIND = frozenset({FLOAT, INT, BOOL})
NUMERIC = frozenset({FLOAT, INT})


def element_kind(ty: Attribute) -> str | None:
    """`float`, `int` or `bool` for the element types shardc supports, else None."""
    if isinstance(ty, Float16Type | BFloat16Type | Float32Type | Float64Type):
        return FLOAT
    if isinstance(ty, IntegerType) and ty.signedness.data.name == "SIGNLESS":
        return {1: BOOL, 32: INT, 64: INT}.get(ty.width.data)
    return None


def accumulation_type(ty: Attribute) -> Attribute:
    """
    What sums and products of `ty` accumulate in (dot, reduce, reducing collectives, at
    every level): f32 for bf16/f16, which are rounded once at the end; `ty` itself for
    every other type (integers wrap, f32 and f64 stay).
    """
    return f32 if isinstance(ty, BFloat16Type | Float16Type) else ty


def _tensor(value: SSAValue | Attribute) -> TensorType:
    ty = value.type if isinstance(value, SSAValue) else value
    assert isinstance(ty, TensorType)
    return ty


def _shape(value: SSAValue | Attribute) -> tuple[int, ...]:
    return _tensor(value).get_shape()


def _int_values(attr: DenseArrayBase) -> tuple[int, ...]:
    return attr.get_values()  # pyright: ignore[reportReturnType]


################################################################################
# Base classes                                                                 #
################################################################################


class HloOp(IRDLOperation, ABC):
    """
    Every `hlo` op: its tensors must have a supported element type (f32, bf16, f16, f64,
    i32, i64, i1); `verify_semantics` adds the op's own rule.
    """

    def verify_(self) -> None:
        for v in (*self.operands, *self.results):
            ty = v.type
            if not isinstance(ty, TensorType):
                raise VerifyException(f"expected a tensor, got {ty}")
            if element_kind(ty.element_type) is None:
                raise VerifyException(
                    f"unsupported element type {ty.element_type} (expected f32, bf16, "
                    "f16, f64, i32, i64 or i1)"
                )
            if any(d < 0 for d in ty.get_shape()):
                raise VerifyException(f"dynamic dimensions are not supported: {ty}")
        self.verify_semantics()

    def verify_semantics(self) -> None:
        pass


def _check_kind(op_name: str, ty: TensorType, allowed: frozenset[str]) -> None:
    """Raise unless `ty`'s element kind is allowed (diagnostics already name the op)."""
    if element_kind(ty.element_type) not in allowed:
        raise VerifyException(
            f"does not accept element type {ty.element_type} (accepts {', '.join(sorted(allowed))})"
        )


class BinaryElementwiseOp(HloOp, ABC):
    """`%r = hlo.add %a, %b : tensor<..>`: operands and result share one type."""

    T: ClassVar = VarConstraint("T", TensorType.constr())
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)

    ELEMENT_KINDS: ClassVar[frozenset[str]] = ANY_KIND

    traits = traits_def(Pure())

    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])

    def verify_semantics(self) -> None:
        _check_kind(self.name, _tensor(self.result), self.ELEMENT_KINDS)


@irdl_op_definition
class AddOp(BinaryElementwiseOp):
    name = "hlo.add"


@irdl_op_definition
class SubOp(BinaryElementwiseOp):
    name = "hlo.sub"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class MulOp(BinaryElementwiseOp):
    name = "hlo.mul"


@irdl_op_definition
class DivOp(BinaryElementwiseOp):
    name = "hlo.div"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class MaxOp(BinaryElementwiseOp):
    name = "hlo.max"


@irdl_op_definition
class MinOp(BinaryElementwiseOp):
    name = "hlo.min"


@irdl_op_definition
class PowOp(BinaryElementwiseOp):
    name = "hlo.pow"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class AndOp(BinaryElementwiseOp):
    name = "hlo.and"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = frozenset({INT, BOOL})


@irdl_op_definition
class OrOp(BinaryElementwiseOp):
    name = "hlo.or"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = frozenset({INT, BOOL})


class UnaryElementwiseOp(HloOp, ABC):
    """`%r = hlo.exp %a : tensor<..>`."""

    T: ClassVar = VarConstraint("T", TensorType.constr())
    operand = operand_def(T)
    result = result_def(T)

    ELEMENT_KINDS: ClassVar[frozenset[str]] = frozenset({FLOAT})

    traits = traits_def(Pure())

    assembly_format = "$operand attr-dict `:` type($result)"

    def __init__(self, operand: SSAValue):
        super().__init__(operands=[operand], result_types=[operand.type])

    def verify_semantics(self) -> None:
        _check_kind(self.name, _tensor(self.result), self.ELEMENT_KINDS)


@irdl_op_definition
class NegOp(UnaryElementwiseOp):
    name = "hlo.neg"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class ExpOp(UnaryElementwiseOp):
    name = "hlo.exp"


@irdl_op_definition
class LogOp(UnaryElementwiseOp):
    name = "hlo.log"


@irdl_op_definition
class TanhOp(UnaryElementwiseOp):
    name = "hlo.tanh"


@irdl_op_definition
class SqrtOp(UnaryElementwiseOp):
    name = "hlo.sqrt"


@irdl_op_definition
class RsqrtOp(UnaryElementwiseOp):
    name = "hlo.rsqrt"


@irdl_op_definition
class AbsOp(UnaryElementwiseOp):
    name = "hlo.abs"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class SinOp(UnaryElementwiseOp):
    name = "hlo.sin"


@irdl_op_definition
class CosOp(UnaryElementwiseOp):
    name = "hlo.cos"


@irdl_op_definition
class LogisticOp(UnaryElementwiseOp):
    name = "hlo.logistic"


@irdl_op_definition
class NotOp(UnaryElementwiseOp):
    name = "hlo.not"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = frozenset({INT, BOOL})


class HloHasCanonicalizationPatterns(HasCanonicalizationPatternsTrait):
    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from shardc.passes.canonicalization_patterns.hlo import HLO_PATTERNS

        return HLO_PATTERNS


################################################################################
# compare, select, convert, constant, iota                                     #
################################################################################


def _parse_functional_type(
    parser: Parser,
) -> tuple[list[Attribute], list[Attribute]]:
    parser.parse_punctuation(":")
    ft = parser.parse_function_type()
    return list(ft.inputs.data), list(ft.outputs.data)


def _print_functional_type(printer: Printer, op: IRDLOperation) -> None:
    printer.print_string(" : ")
    # Not `print_operation_type`: with --print-debuginfo it also prints the op's location,
    # which the printer prints again after the op.
    printer.print_function_type(op.operand_types, op.result_types)


def _parse_operand_and_dims(
    cls: type[IRDLOperation],
    parser: Parser,
    dims_property: str,
    properties: dict[str, Attribute] | None = None,
) -> Any:
    """`%x, dims = [..] {attrs} : (operand type) -> result type` (broadcast, transpose,
    reduce after its kind): the dims become `dims_property`, after `properties`."""
    pos = parser.pos
    operand = parser.parse_unresolved_operand()
    parser.parse_punctuation(",")
    dims = parse_keyword_int_list(parser, "dims")
    attrs = parser.parse_optional_attr_dict()
    inputs, outputs = _parse_functional_type(parser)
    (value,) = parser.resolve_operands([operand], inputs, pos)
    op = cls.create(
        operands=[value],
        result_types=outputs,
        properties={**(properties or {}), dims_property: i64_array(dims)},
    )
    op.attributes |= attrs
    return op


def _print_operand_and_dims(printer: Printer, op: IRDLOperation, dims: Sequence[int]) -> None:
    """The inverse of `_parse_operand_and_dims`."""
    printer.print_operand(op.operands[0])
    printer.print_string(f", dims = {int_list_str(dims)}")
    printer.print_op_attributes(op.attributes)
    _print_functional_type(printer, op)


@irdl_op_definition
class CompareOp(HloOp):
    """`%r = hlo.compare GT, %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>`."""

    name = "hlo.compare"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    comparison_direction = prop_def(StringAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, direction: str, lhs: SSAValue, rhs: SSAValue):
        lt = _tensor(lhs)
        super().__init__(
            operands=[lhs, rhs],
            result_types=[TensorType(i1, lt.get_shape())],
            properties={"comparison_direction": StringAttr(direction)},
        )

    @classmethod
    def parse(cls, parser: Parser) -> CompareOp:
        pos = parser.pos
        direction = parser.parse_optional_identifier()
        if direction not in COMPARISON_DIRECTIONS:
            parser.raise_error(
                "expected a comparison direction: " + ", ".join(COMPARISON_DIRECTIONS),
                pos,
            )
        parser.parse_punctuation(",")
        pos = parser.pos
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_functional_type(parser)
        operands = parser.resolve_operands([lhs, rhs], inputs, pos)
        op = cls.create(
            operands=operands,
            result_types=outputs,
            properties={"comparison_direction": StringAttr(direction)},
        )
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.comparison_direction.data}, ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_op_attributes(self.attributes)
        _print_functional_type(printer, self)

    def verify_semantics(self) -> None:
        if self.comparison_direction.data not in COMPARISON_DIRECTIONS:
            raise VerifyException(
                f'unknown comparison direction "{self.comparison_direction.data}"'
            )
        lt, rt, res = _tensor(self.lhs), _tensor(self.rhs), _tensor(self.result)
        if lt != rt:
            raise VerifyException(f"operands must have one type, got {lt} and {rt}")
        if res != TensorType(i1, lt.get_shape()):
            raise VerifyException(f"result must be {TensorType(i1, lt.get_shape())}, got {res}")


@irdl_op_definition
class SelectOp(HloOp):
    """
    `%r = hlo.select %p, %a, %b : tensor<4xi1>, tensor<4xf32>`: the predicate has the
    result's shape, or is a rank-0 i1 tensor that selects whole operands.
    """

    name = "hlo.select"

    T: ClassVar = VarConstraint("T", TensorType.constr())
    pred = operand_def(TensorType)
    on_true = operand_def(T)
    on_false = operand_def(T)
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = "$pred `,` $on_true `,` $on_false attr-dict `:` type($pred) `,` type($result)"

    def __init__(self, pred: SSAValue, on_true: SSAValue, on_false: SSAValue):
        super().__init__(operands=[pred, on_true, on_false], result_types=[on_true.type])

    def verify_semantics(self) -> None:
        pred = _tensor(self.pred)
        if pred.element_type != i1:
            raise VerifyException(f"predicate must have element type i1, got {pred}")
        if pred.get_shape() and pred.get_shape() != _shape(self.result):
            raise VerifyException(
                f"predicate shape {list(pred.get_shape())} must equal the result shape "
                f"{list(_shape(self.result))} or be rank 0"
            )


@irdl_op_definition
class ConvertOp(HloOp):
    """`%r = hlo.convert %a : (tensor<4xf32>) -> tensor<4xbf16>`."""

    name = "hlo.convert"

    operand = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure(), HloHasCanonicalizationPatterns())

    assembly_format = "$operand attr-dict `:` functional-type($operand, $result)"

    def __init__(self, operand: SSAValue, result_type: TensorType):
        super().__init__(operands=[operand], result_types=[result_type])

    def verify_semantics(self) -> None:
        if _shape(self.operand) != _shape(self.result):
            raise VerifyException(
                f"convert keeps the shape: {self.operand.type} -> {self.result.type}"
            )


@irdl_op_definition
class ConstantOp(HloOp):
    """`%r = hlo.constant dense<[1.0, 2.0]> : tensor<2xf32>`."""

    name = "hlo.constant"

    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, value: DenseIntOrFPElementsAttr):
        super().__init__(result_types=[value.type], properties={"value": value})

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        pos = parser.pos
        try:
            value = parser.parse_attribute()
        except OverflowError:
            parser.raise_error(
                "invalid constant: a value is out of range for its element type",
                pos,
                parser.pos,
            )
        except ValueError as e:
            parser.raise_error(f"invalid constant: {e}", pos, parser.pos)
        if not isinstance(value, DenseIntOrFPElementsAttr) or not isinstance(
            value.type, TensorType
        ):
            parser.raise_error(
                "expected a dense tensor literal such as dense<1.0> : tensor<4xf32>",
                pos,
                parser.pos,
            )
        attrs = parser.parse_optional_attr_dict()
        op = cls(value)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        printer.print_op_attributes(self.attributes)

    def verify_semantics(self) -> None:
        if self.value.type != self.result.type:
            raise VerifyException(
                f"value type {self.value.type} differs from result type {self.result.type}"
            )


@irdl_op_definition
class IotaOp(HloOp):
    """`%r = hlo.iota dim = 0 : tensor<8x4xi32>`: indices along one dimension."""

    name = "hlo.iota"

    iota_dimension = prop_def(IntegerAttr[type(i64)])  # pyright: ignore
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, dim: int, result_type: TensorType):
        super().__init__(result_types=[result_type], properties={"iota_dimension": i64_attr(dim)})

    @classmethod
    def parse(cls, parser: Parser) -> IotaOp:
        dim = parse_keyword_int(parser, "dim")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_pos = parser.pos
        ty = parser.parse_type()
        if not isinstance(ty, TensorType):
            parser.raise_error(f"hlo.iota produces a tensor, got {ty}", type_pos, parser.pos)
        op = cls(dim, ty)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" dim = {self.iota_dimension.value.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    def verify_semantics(self) -> None:
        ty = _tensor(self.result)
        dim = self.iota_dimension.value.data
        if not 0 <= dim < ty.get_num_dims():
            raise VerifyException(f"iota dim {dim} is out of range for {ty}")
        _check_kind(self.name, ty, NUMERIC)


################################################################################
# Shape ops                                                                    #
################################################################################


@irdl_op_definition
class BroadcastOp(HloOp):
    """
    `%r = hlo.broadcast %a, dims = [1] : (tensor<128xf32>) -> tensor<16x128xf32>`:
    operand dimension i becomes result dimension dims[i] (StableHLO broadcast_in_dim).
    """

    name = "hlo.broadcast"

    operand = operand_def(TensorType)
    broadcast_dimensions = prop_def(DenseArrayBase)
    result = result_def(TensorType)

    traits = traits_def(Pure(), HloHasCanonicalizationPatterns())

    def __init__(self, operand: SSAValue, dims: Sequence[int], result_type: TensorType):
        super().__init__(
            operands=[operand],
            result_types=[result_type],
            properties={"broadcast_dimensions": i64_array(dims)},
        )

    @property
    def dims(self) -> tuple[int, ...]:
        return _int_values(self.broadcast_dimensions)

    @classmethod
    def parse(cls, parser: Parser) -> BroadcastOp:
        return _parse_operand_and_dims(cls, parser, "broadcast_dimensions")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_operand_and_dims(printer, self, self.dims)

    def verify_semantics(self) -> None:
        src, res = _tensor(self.operand), _tensor(self.result)
        dims = self.dims
        if src.element_type != res.element_type:
            raise VerifyException(
                f"broadcast keeps the element type: {src.element_type} -> {res.element_type}"
            )
        if len(dims) != src.get_num_dims():
            raise VerifyException(
                f"dims has {len(dims)} entries but the operand has rank {src.get_num_dims()}"
            )
        if any(b <= a for a, b in zip(dims, dims[1:], strict=False)):
            raise VerifyException(f"dims {list(dims)} must be strictly increasing")
        for i, d in enumerate(dims):
            if not 0 <= d < res.get_num_dims():
                raise VerifyException(
                    f"dims[{i}] = {d} is out of range for result rank {res.get_num_dims()}"
                )
            size, target = src.get_shape()[i], res.get_shape()[d]
            if size not in (1, target):
                raise VerifyException(
                    f"operand dimension {i} has size {size}, which must be 1 or "
                    f"{target} (result dimension {d})"
                )


@irdl_op_definition
class ReshapeOp(HloOp):
    """`%r = hlo.reshape %a : (tensor<16x128xf32>) -> tensor<2048xf32>` (row-major)."""

    name = "hlo.reshape"

    operand = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure(), HloHasCanonicalizationPatterns())

    assembly_format = "$operand attr-dict `:` functional-type($operand, $result)"

    def __init__(self, operand: SSAValue, result_type: TensorType):
        super().__init__(operands=[operand], result_types=[result_type])

    def verify_semantics(self) -> None:
        src, res = _tensor(self.operand), _tensor(self.result)
        if src.element_type != res.element_type:
            raise VerifyException(
                f"reshape keeps the element type: {src.element_type} -> {res.element_type}"
            )
        if math.prod(src.get_shape()) != math.prod(res.get_shape()):
            raise VerifyException(
                f"reshape must keep the element count: {math.prod(src.get_shape())} "
                f"elements to {math.prod(res.get_shape())}"
            )


@irdl_op_definition
class TransposeOp(HloOp):
    """`%r = hlo.transpose %a, dims = [1, 0] : (tensor<16x128xf32>) -> tensor<128x16xf32>`."""

    name = "hlo.transpose"

    operand = operand_def(TensorType)
    permutation = prop_def(DenseArrayBase)
    result = result_def(TensorType)

    traits = traits_def(Pure(), HloHasCanonicalizationPatterns())

    def __init__(self, operand: SSAValue, perm: Sequence[int]):
        src = _tensor(operand)
        shape = [src.get_shape()[p] for p in perm]
        super().__init__(
            operands=[operand],
            result_types=[TensorType(src.element_type, shape)],
            properties={"permutation": i64_array(perm)},
        )

    @property
    def perm(self) -> tuple[int, ...]:
        return _int_values(self.permutation)

    @classmethod
    def parse(cls, parser: Parser) -> TransposeOp:
        return _parse_operand_and_dims(cls, parser, "permutation")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_operand_and_dims(printer, self, self.perm)

    def verify_semantics(self) -> None:
        src, res = _tensor(self.operand), _tensor(self.result)
        perm = self.perm
        if sorted(perm) != list(range(src.get_num_dims())):
            raise VerifyException(
                f"dims {list(perm)} is not a permutation of 0..{src.get_num_dims() - 1}"
            )
        want = TensorType(src.element_type, [src.get_shape()[p] for p in perm])
        if res != want:
            raise VerifyException(f"result must be {want}, got {res}")


@irdl_op_definition
class SliceOp(HloOp):
    """`%r = hlo.slice %a [0:8, 0:128:2] : (tensor<16x128xf32>) -> tensor<8x64xf32>`."""

    name = "hlo.slice"

    operand = operand_def(TensorType)
    start_indices = prop_def(DenseArrayBase)
    limit_indices = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(
        self,
        operand: SSAValue,
        start: Sequence[int],
        limit: Sequence[int],
        strides: Sequence[int] | None = None,
    ):
        strides = strides or [1] * len(start)
        src = _tensor(operand)
        shape = [-(-(hi - lo) // s) for lo, hi, s in zip(start, limit, strides, strict=False)]
        super().__init__(
            operands=[operand],
            result_types=[TensorType(src.element_type, shape)],
            properties={
                "start_indices": i64_array(start),
                "limit_indices": i64_array(limit),
                "strides": i64_array(strides),
            },
        )

    @property
    def bounds(self) -> list[tuple[int, int, int]]:
        return list(
            zip(
                _int_values(self.start_indices),
                _int_values(self.limit_indices),
                _int_values(self.strides),
                strict=False,
            )
        )

    @classmethod
    def parse(cls, parser: Parser) -> SliceOp:
        pos = parser.pos
        operand = parser.parse_unresolved_operand()

        def parse_range() -> tuple[int, int, int]:
            lo = parse_i64(parser)
            parser.parse_punctuation(":")
            hi = parse_i64(parser)
            step = 1
            if parser.parse_optional_punctuation(":"):
                step = parse_i64(parser)
            return lo, hi, step

        ranges = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_range)
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_functional_type(parser)
        (value,) = parser.resolve_operands([operand], inputs, pos)
        op = cls.create(
            operands=[value],
            result_types=outputs,
            properties={
                "start_indices": i64_array([r[0] for r in ranges]),
                "limit_indices": i64_array([r[1] for r in ranges]),
                "strides": i64_array([r[2] for r in ranges]),
            },
        )
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        parts = [f"{lo}:{hi}" + (f":{s}" if s != 1 else "") for lo, hi, s in self.bounds]
        printer.print_string(" [" + ", ".join(parts) + "]")
        printer.print_op_attributes(self.attributes)
        _print_functional_type(printer, self)

    def verify_semantics(self) -> None:
        src, res = _tensor(self.operand), _tensor(self.result)
        bounds = self.bounds
        n = (
            len(_int_values(self.start_indices)),
            len(_int_values(self.limit_indices)),
            len(_int_values(self.strides)),
        )
        if len(set(n)) != 1 or n[0] != src.get_num_dims():
            raise VerifyException(
                f"slice needs one range per dimension ({src.get_num_dims()}), got {n[0]}"
            )
        shape: list[int] = []
        for d, ((lo, hi, step), size) in enumerate(zip(bounds, src.get_shape(), strict=False)):
            if step < 1:
                raise VerifyException(f"stride {step} of dimension {d} must be positive")
            if lo > hi:
                raise VerifyException(f"slice {lo}:{hi} of dimension {d} starts after its limit")
            if not 0 <= lo <= hi <= size:
                raise VerifyException(
                    f"slice {lo}:{hi} of dimension {d} is out of bounds for size {size}"
                )
            shape.append(-(-(hi - lo) // step))
        want = TensorType(src.element_type, shape)
        if res != want:
            raise VerifyException(f"result must be {want}, got {res}")


def _verify_index_operands(indices: Sequence[SSAValue], rank: int) -> None:
    if len(indices) != rank:
        raise VerifyException(
            f"expected {rank} start indices (one per dimension), got {len(indices)}"
        )
    for i, v in enumerate(indices):
        ty = _tensor(v)
        if ty.get_shape() or element_kind(ty.element_type) != INT:
            raise VerifyException(f"start index {i} must be a rank-0 integer tensor, got {ty}")


def _parse_index_list(parser: Parser) -> list:
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, parser.parse_unresolved_operand
    )


def _print_index_list(printer: Printer, indices: Sequence[SSAValue]) -> None:
    printer.print_string(" [")
    printer.print_list(indices, printer.print_operand)
    printer.print_string("]")


@irdl_op_definition
class DynamicSliceOp(HloOp):
    """
    `%r = hlo.dynamic_slice %a [%i, %j] sizes = [2, 128] : (tensor<16x128xf32>,
    tensor<i32>, tensor<i32>) -> tensor<2x128xf32>`: offsets are clamped into bounds
    (StableHLO semantics).
    """

    name = "hlo.dynamic_slice"

    operand = operand_def(TensorType)
    start_indices = var_operand_def(TensorType)
    slice_sizes = prop_def(DenseArrayBase)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, operand: SSAValue, indices: Sequence[SSAValue], sizes: Sequence[int]):
        src = _tensor(operand)
        super().__init__(
            operands=[operand, indices],
            result_types=[TensorType(src.element_type, sizes)],
            properties={"slice_sizes": i64_array(sizes)},
        )

    @property
    def sizes(self) -> tuple[int, ...]:
        return _int_values(self.slice_sizes)

    @classmethod
    def parse(cls, parser: Parser) -> DynamicSliceOp:
        pos = parser.pos
        operands = [parser.parse_unresolved_operand(), *_parse_index_list(parser)]
        sizes = parse_keyword_int_list(parser, "sizes")
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_functional_type(parser)
        values = parser.resolve_operands(operands, inputs, pos)
        op = cls.create(
            operands=values,
            result_types=outputs,
            properties={"slice_sizes": i64_array(sizes)},
        )
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        _print_index_list(printer, self.start_indices)
        printer.print_string(f" sizes = {int_list_str(self.sizes)}")
        printer.print_op_attributes(self.attributes)
        _print_functional_type(printer, self)

    def verify_semantics(self) -> None:
        src, res = _tensor(self.operand), _tensor(self.result)
        _verify_index_operands(self.start_indices, src.get_num_dims())
        sizes = self.sizes
        if len(sizes) != src.get_num_dims():
            raise VerifyException(f"sizes needs {src.get_num_dims()} entries, got {len(sizes)}")
        for d, (s, size) in enumerate(zip(sizes, src.get_shape(), strict=False)):
            if not 0 <= s <= size:
                raise VerifyException(
                    f"slice size {s} of dimension {d} exceeds the operand size {size}"
                )
        want = TensorType(src.element_type, sizes)
        if res != want:
            raise VerifyException(f"result must be {want}, got {res}")


@irdl_op_definition
class DynamicUpdateSliceOp(HloOp):
    """
    `%r = hlo.dynamic_update_slice %a, %u [%i, %j] : (tensor<16x128xf32>,
    tensor<2x128xf32>, tensor<i32>, tensor<i32>) -> tensor<16x128xf32>`.
    """

    name = "hlo.dynamic_update_slice"

    operand = operand_def(TensorType)
    update = operand_def(TensorType)
    start_indices = var_operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, operand: SSAValue, update: SSAValue, indices: Sequence[SSAValue]):
        super().__init__(operands=[operand, update, indices], result_types=[operand.type])

    @classmethod
    def parse(cls, parser: Parser) -> DynamicUpdateSliceOp:
        pos = parser.pos
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        update = parser.parse_unresolved_operand()
        operands = [operand, update, *_parse_index_list(parser)]
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_functional_type(parser)
        values = parser.resolve_operands(operands, inputs, pos)
        op = cls.create(operands=values, result_types=outputs)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        printer.print_string(", ")
        printer.print_operand(self.update)
        _print_index_list(printer, self.start_indices)
        printer.print_op_attributes(self.attributes)
        _print_functional_type(printer, self)

    def verify_semantics(self) -> None:
        src, upd, res = _tensor(self.operand), _tensor(self.update), _tensor(self.result)
        _verify_index_operands(self.start_indices, src.get_num_dims())
        if res != src:
            raise VerifyException(f"result must have the operand's type {src}, got {res}")
        if upd.element_type != src.element_type or upd.get_num_dims() != src.get_num_dims():
            raise VerifyException(f"update {upd} must match the operand's rank and element type")
        for d, (u, s) in enumerate(zip(upd.get_shape(), src.get_shape(), strict=False)):
            if u > s:
                raise VerifyException(
                    f"update dimension {d} of size {u} exceeds the operand size {s}"
                )


@irdl_op_definition
class ConcatenateOp(HloOp):
    """`%r = hlo.concatenate %a, %b, dim = 0 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>`."""

    name = "hlo.concatenate"

    inputs = var_operand_def(TensorType)
    dimension = prop_def(IntegerAttr[type(i64)])  # pyright: ignore
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, inputs: Sequence[SSAValue], dim: int):
        first = _tensor(inputs[0])
        shape = list(first.get_shape())
        shape[dim] = sum(_shape(v)[dim] for v in inputs)
        super().__init__(
            operands=[inputs],
            result_types=[TensorType(first.element_type, shape)],
            properties={"dimension": i64_attr(dim)},
        )

    @classmethod
    def parse(cls, parser: Parser) -> ConcatenateOp:
        pos = parser.pos
        operands = [parser.parse_unresolved_operand()]
        while parser.parse_optional_punctuation(","):
            if (operand := parser.parse_optional_unresolved_operand()) is None:
                break
            operands.append(operand)
        dim = parse_keyword_int(parser, "dim")
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_functional_type(parser)
        values = parser.resolve_operands(operands, inputs, pos)
        op = cls.create(
            operands=values, result_types=outputs, properties={"dimension": i64_attr(dim)}
        )
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(f", dim = {self.dimension.value.data}")
        printer.print_op_attributes(self.attributes)
        _print_functional_type(printer, self)

    def verify_semantics(self) -> None:
        if not self.inputs:
            raise VerifyException("concatenate needs at least one operand")
        dim = self.dimension.value.data
        first = _tensor(self.inputs[0])
        if not 0 <= dim < first.get_num_dims():
            raise VerifyException(f"dim {dim} is out of range for {first}")
        total = 0
        for i, v in enumerate(self.inputs):
            ty = _tensor(v)
            same = [s for d, s in enumerate(ty.get_shape()) if d != dim]
            want = [s for d, s in enumerate(first.get_shape()) if d != dim]
            if (
                ty.element_type != first.element_type
                or ty.get_num_dims() != first.get_num_dims()
                or same != want
            ):
                raise VerifyException(
                    f"operand {i} ({ty}) must match operand 0 ({first}) except in dimension {dim}"
                )
            total += ty.get_shape()[dim]
        shape = list(first.get_shape())
        shape[dim] = total
        want_ty = TensorType(first.element_type, shape)
        if self.result.type != want_ty:
            raise VerifyException(f"result must be {want_ty}, got {self.result.type}")


################################################################################
# dot and reduce                                                               #
################################################################################


@irdl_op_definition
class DotOp(HloOp):
    """
    StableHLO's dot_general: `%r = hlo.dot %a, %b, batching_dims = [0] x [0],
    contracting_dims = [2] x [1] : (tensor<4x16x32xf32>, tensor<4x32x8xf32>) -> tensor<4x16x8xf32>`.
    The result's dimensions are batch, lhs free, rhs free, each in operand order.
    """

    name = "hlo.dot"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    lhs_batching_dimensions = prop_def(DenseArrayBase)
    rhs_batching_dimensions = prop_def(DenseArrayBase)
    lhs_contracting_dimensions = prop_def(DenseArrayBase)
    rhs_contracting_dimensions = prop_def(DenseArrayBase)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(
        self,
        lhs: SSAValue,
        rhs: SSAValue,
        contracting: tuple[Sequence[int], Sequence[int]],
        batching: tuple[Sequence[int], Sequence[int]] = ((), ()),
        result_type: TensorType | None = None,
    ):
        props = {
            "lhs_batching_dimensions": i64_array(batching[0]),
            "rhs_batching_dimensions": i64_array(batching[1]),
            "lhs_contracting_dimensions": i64_array(contracting[0]),
            "rhs_contracting_dimensions": i64_array(contracting[1]),
        }
        if result_type is None:
            result_type = dot_result_type(_tensor(lhs), _tensor(rhs), batching, contracting)
        super().__init__(operands=[lhs, rhs], result_types=[result_type], properties=props)

    @property
    def batching(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return (
            _int_values(self.lhs_batching_dimensions),
            _int_values(self.rhs_batching_dimensions),
        )

    @property
    def contracting(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return (
            _int_values(self.lhs_contracting_dimensions),
            _int_values(self.rhs_contracting_dimensions),
        )

    @classmethod
    def parse(cls, parser: Parser) -> DotOp:
        pos = parser.pos
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        dims: dict[str, tuple[list[int], list[int]]] = {
            "batching_dims": ([], []),
            "contracting_dims": ([], []),
        }
        seen: set[str] = set()
        while parser.parse_optional_punctuation(","):
            key_pos = parser.pos
            key = parser.parse_optional_keyword_in(tuple(dims))
            if key is None:
                parser.raise_error("expected batching_dims or contracting_dims", key_pos)
            if key in seen:
                parser.raise_error(f"{key} given twice", key_pos, parser.pos)
            seen.add(key)
            parser.parse_punctuation("=")
            left = parse_int_list(parser)
            parser.parse_keyword("x")
            dims[key] = (left, parse_int_list(parser))
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_functional_type(parser)
        values = parser.resolve_operands([lhs, rhs], inputs, pos)
        (lb, rb), (lc, rc) = dims["batching_dims"], dims["contracting_dims"]
        op = cls.create(
            operands=values,
            result_types=outputs,
            properties={
                "lhs_batching_dimensions": i64_array(lb),
                "rhs_batching_dimensions": i64_array(rb),
                "lhs_contracting_dimensions": i64_array(lc),
                "rhs_contracting_dimensions": i64_array(rc),
            },
        )
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        (lb, rb), (lc, rc) = self.batching, self.contracting
        if lb or rb:
            printer.print_string(f", batching_dims = {int_list_str(lb)} x {int_list_str(rb)}")
        printer.print_string(f", contracting_dims = {int_list_str(lc)} x {int_list_str(rc)}")
        printer.print_op_attributes(self.attributes)
        _print_functional_type(printer, self)

    def verify_semantics(self) -> None:
        lhs, rhs, res = _tensor(self.lhs), _tensor(self.rhs), _tensor(self.result)
        if lhs.element_type != rhs.element_type:
            raise VerifyException(
                f"operands must share an element type, got {lhs.element_type} and "
                f"{rhs.element_type}"
            )
        if element_kind(res.element_type) != element_kind(lhs.element_type):
            raise VerifyException(
                f"result element type {res.element_type} is not of the operands' kind"
            )
        want = dot_result_type(lhs, rhs, self.batching, self.contracting)
        if list(res.get_shape()) != list(want.get_shape()):
            raise VerifyException(
                f"result shape must be {list(want.get_shape())} (batch, lhs free, rhs "
                f"free), got {list(res.get_shape())}"
            )


def dot_free_dims(rank: int, batching: Sequence[int], contracting: Sequence[int]) -> list[int]:
    """An operand's free dimensions (neither batch nor contracting), in order."""
    return [d for d in range(rank) if d not in batching and d not in contracting]


def dot_result_type(
    lhs: TensorType,
    rhs: TensorType,
    batching: tuple[Sequence[int], Sequence[int]],
    contracting: tuple[Sequence[int], Sequence[int]],
) -> TensorType:
    """The result type of a dot_general, or a `VerifyException` saying what is wrong."""
    ls, rs = lhs.get_shape(), rhs.get_shape()
    for what, (ld, rd) in (("batching", batching), ("contracting", contracting)):
        if len(ld) != len(rd):
            raise VerifyException(f"{what} dims differ in number: {list(ld)} x {list(rd)}")
        for side, dims, shape in (("lhs", ld, ls), ("rhs", rd, rs)):
            for d in dims:
                if not 0 <= d < len(shape):
                    raise VerifyException(
                        f"{side} {what} dim {d} is out of range for rank {len(shape)}"
                    )
        for a, b in zip(ld, rd, strict=False):
            if ls[a] != rs[b]:
                raise VerifyException(
                    f"{what} dims have different sizes: lhs dim {a} is {ls[a]}, "
                    f"rhs dim {b} is {rs[b]}"
                )
    for side, b, c, _shape in (
        ("lhs", batching[0], contracting[0], ls),
        ("rhs", batching[1], contracting[1], rs),
    ):
        used = [*b, *c]
        if len(set(used)) != len(used):
            raise VerifyException(f"{side} batching and contracting dims must be distinct")
    shape = (
        [ls[d] for d in batching[0]]
        + [ls[d] for d in dot_free_dims(len(ls), batching[0], contracting[0])]
        + [rs[d] for d in dot_free_dims(len(rs), batching[1], contracting[1])]
    )
    return TensorType(lhs.element_type, shape)


@irdl_op_definition
class ReduceOp(HloOp):
    """
    `%r = hlo.reduce add %a, dims = [1] : (tensor<16x128xf32>) -> tensor<16xf32>`:
    reduces the listed dimensions away, starting from the kind's identity.
    """

    name = "hlo.reduce"

    operand = operand_def(TensorType)
    kind = prop_def(StringAttr)
    dimensions = prop_def(DenseArrayBase)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, kind: str, operand: SSAValue, dims: Sequence[int]):
        src = _tensor(operand)
        shape = [s for d, s in enumerate(src.get_shape()) if d not in dims]
        super().__init__(
            operands=[operand],
            result_types=[TensorType(src.element_type, shape)],
            properties={"kind": StringAttr(kind), "dimensions": i64_array(dims)},
        )

    @property
    def dims(self) -> tuple[int, ...]:
        return _int_values(self.dimensions)

    @classmethod
    def parse(cls, parser: Parser) -> ReduceOp:
        kind_pos = parser.pos
        kind = parser.parse_optional_identifier()
        if kind not in REDUCE_KINDS:
            parser.raise_error("expected a reduction kind: " + ", ".join(REDUCE_KINDS), kind_pos)
        return _parse_operand_and_dims(cls, parser, "dimensions", {"kind": StringAttr(kind)})

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        _print_operand_and_dims(printer, self, self.dims)

    def verify_semantics(self) -> None:
        if self.kind.data not in REDUCE_KINDS:
            raise VerifyException(f'unknown reduction kind "{self.kind.data}"')
        src, res = _tensor(self.operand), _tensor(self.result)
        dims = self.dims
        if len(set(dims)) != len(dims):
            raise VerifyException(f"dims {list(dims)} must be distinct")
        for d in dims:
            if not 0 <= d < src.get_num_dims():
                raise VerifyException(f"dim {d} is out of range for {src}")
        want = TensorType(
            src.element_type, [s for d, s in enumerate(src.get_shape()) if d not in dims]
        )
        if res != want:
            raise VerifyException(f"result must be {want}, got {res}")


################################################################################
# pad and reverse                                                              #
################################################################################


def pad_result_shape(
    shape: Sequence[int], low: Sequence[int], high: Sequence[int], interior: Sequence[int]
) -> list[int]:
    """StableHLO pad's result shape: low + size + (size - 1) * interior + high per dimension."""
    return [
        lo + s + max(s - 1, 0) * it + hi
        for s, lo, hi, it in zip(shape, low, high, interior, strict=True)
    ]


@irdl_op_definition
class PadOp(HloOp):
    """
    StableHLO's pad: `%r = hlo.pad %x, %v, low = [0, 1], high = [2, -1], interior = [1, 0] :
    (tensor<2x3xf32>, tensor<f32>) -> tensor<5x3xf32>`. `interior` elements of the padding
    value go between neighbouring elements, `low`/`high` before/after each dimension
    (negative edge padding removes elements).
    """

    name = "hlo.pad"

    operand = operand_def(TensorType)
    padding_value = operand_def(TensorType)
    edge_padding_low = prop_def(DenseArrayBase)
    edge_padding_high = prop_def(DenseArrayBase)
    interior_padding = prop_def(DenseArrayBase)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    _KEYS: ClassVar = (
        ("low", "edge_padding_low"),
        ("high", "edge_padding_high"),
        ("interior", "interior_padding"),
    )

    def __init__(
        self,
        operand: SSAValue,
        padding_value: SSAValue,
        low: Sequence[int],
        high: Sequence[int],
        interior: Sequence[int],
    ):
        src = _tensor(operand)
        shape = pad_result_shape(src.get_shape(), low, high, interior)
        super().__init__(
            operands=[operand, padding_value],
            result_types=[TensorType(src.element_type, shape)],
            properties={
                "edge_padding_low": i64_array(low),
                "edge_padding_high": i64_array(high),
                "interior_padding": i64_array(interior),
            },
        )

    @property
    def low(self) -> tuple[int, ...]:
        return _int_values(self.edge_padding_low)

    @property
    def high(self) -> tuple[int, ...]:
        return _int_values(self.edge_padding_high)

    @property
    def interior(self) -> tuple[int, ...]:
        return _int_values(self.interior_padding)

    def padded_dims(self) -> list[int]:
        """The dimensions with any padding (edge or interior)."""
        return [
            d
            for d, pads in enumerate(zip(self.low, self.high, self.interior, strict=True))
            if any(pads)
        ]

    @classmethod
    def parse(cls, parser: Parser) -> PadOp:
        pos = parser.pos
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        value = parser.parse_unresolved_operand()
        props: dict[str, Attribute] = {}
        for keyword, prop in cls._KEYS:
            parser.parse_punctuation(",")
            props[prop] = i64_array(parse_keyword_int_list(parser, keyword))
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_functional_type(parser)
        values = parser.resolve_operands([operand, value], inputs, pos)
        op = cls.create(operands=values, result_types=outputs, properties=props)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        for keyword, values in zip(
            ("low", "high", "interior"), (self.low, self.high, self.interior), strict=True
        ):
            printer.print_string(f", {keyword} = {int_list_str(values)}")
        printer.print_op_attributes(self.attributes)
        _print_functional_type(printer, self)

    def verify_semantics(self) -> None:
        src, pad, res = _tensor(self.operand), _tensor(self.padding_value), _tensor(self.result)
        if pad.get_num_dims() != 0:
            raise VerifyException(f"the padding value must be a rank-0 tensor, got {pad}")
        if pad.element_type != src.element_type or res.element_type != src.element_type:
            raise VerifyException(
                f"operand, padding value and result must share an element type, got "
                f"{src.element_type}, {pad.element_type} and {res.element_type}"
            )
        rank = src.get_num_dims()
        for keyword, values in zip(
            ("low", "high", "interior"), (self.low, self.high, self.interior), strict=True
        ):
            if len(values) != rank:
                raise VerifyException(
                    f"{keyword} has {len(values)} entries but the operand has rank {rank}"
                )
        if any(i < 0 for i in self.interior):
            raise VerifyException(f"interior padding {list(self.interior)} must be >= 0")
        want = pad_result_shape(src.get_shape(), self.low, self.high, self.interior)
        if any(s < 0 for s in want):
            raise VerifyException(
                f"padding gives a negative result dimension: {want} (negative edge padding "
                "removes more elements than the dimension has)"
            )
        if list(res.get_shape()) != want:
            raise VerifyException(
                f"result shape must be {want} (low + size + (size - 1) * interior + high), "
                f"got {list(res.get_shape())}"
            )


@irdl_op_definition
class ReverseOp(HloOp):
    """`%r = hlo.reverse %x, dims = [1] : tensor<3x2xf32>`: the elements along `dims` in reverse order."""

    name = "hlo.reverse"

    T: ClassVar = VarConstraint("T", TensorType.constr())
    operand = operand_def(T)
    dimensions = prop_def(DenseArrayBase)
    result = result_def(T)

    traits = traits_def(Pure())

    def __init__(self, operand: SSAValue, dims: Sequence[int]):
        super().__init__(
            operands=[operand],
            result_types=[operand.type],
            properties={"dimensions": i64_array(dims)},
        )

    @property
    def dims(self) -> tuple[int, ...]:
        return _int_values(self.dimensions)

    @classmethod
    def parse(cls, parser: Parser) -> ReverseOp:
        pos = parser.pos
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        dims = parse_keyword_int_list(parser, "dims")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ty = parser.parse_type()
        (value,) = parser.resolve_operands([operand], [ty], pos)
        op = cls.create(
            operands=[value], result_types=[ty], properties={"dimensions": i64_array(dims)}
        )
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        printer.print_string(f", dims = {int_list_str(self.dims)}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    def verify_semantics(self) -> None:
        dims, rank = self.dims, _tensor(self.operand).get_num_dims()
        if len(set(dims)) != len(dims):
            raise VerifyException(f"dims {list(dims)} must be distinct")
        for d in dims:
            if not 0 <= d < rank:
                raise VerifyException(f"dim {d} is out of range for rank {rank}")


################################################################################
# More element-wise ops (issue 13): StableHLO's rounding, transcendental,      #
# remainder, clamp, is_finite and integer bit ops                              #
################################################################################

INT_OR_BOOL = frozenset({INT, BOOL})


@irdl_op_definition
class RemainderOp(BinaryElementwiseOp):
    """a - trunc(a / b) * b: the sign of the dividend (C's fmod / %)."""

    name = "hlo.remainder"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class Atan2Op(BinaryElementwiseOp):
    name = "hlo.atan2"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = frozenset({FLOAT})


@irdl_op_definition
class XorOp(BinaryElementwiseOp):
    name = "hlo.xor"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = INT_OR_BOOL


@irdl_op_definition
class ShiftLeftOp(BinaryElementwiseOp):
    """lhs << rhs; a shift amount outside [0, bit width) gives 0."""

    name = "hlo.shift_left"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = frozenset({INT})


@irdl_op_definition
class ShiftRightLogicalOp(BinaryElementwiseOp):
    """lhs >> rhs filling with zeros; a shift amount outside [0, bit width) gives 0."""

    name = "hlo.shift_right_logical"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = frozenset({INT})


@irdl_op_definition
class ShiftRightArithmeticOp(BinaryElementwiseOp):
    """lhs >> rhs filling with the sign bit (all sign bits past the bit width)."""

    name = "hlo.shift_right_arithmetic"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = frozenset({INT})


@irdl_op_definition
class CeilOp(UnaryElementwiseOp):
    name = "hlo.ceil"


@irdl_op_definition
class FloorOp(UnaryElementwiseOp):
    name = "hlo.floor"


@irdl_op_definition
class RoundNearestEvenOp(UnaryElementwiseOp):
    name = "hlo.round_nearest_even"


@irdl_op_definition
class RoundNearestAfzOp(UnaryElementwiseOp):
    name = "hlo.round_nearest_afz"


@irdl_op_definition
class SignOp(UnaryElementwiseOp):
    """-1, 0 or 1; a float keeps the sign of its zero and its NaN."""

    name = "hlo.sign"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC


@irdl_op_definition
class CbrtOp(UnaryElementwiseOp):
    name = "hlo.cbrt"


@irdl_op_definition
class Expm1Op(UnaryElementwiseOp):
    name = "hlo.expm1"


@irdl_op_definition
class Log1pOp(UnaryElementwiseOp):
    name = "hlo.log1p"


@irdl_op_definition
class ErfOp(UnaryElementwiseOp):
    name = "hlo.erf"


@irdl_op_definition
class ErfcOp(UnaryElementwiseOp):
    name = "hlo.erfc"


@irdl_op_definition
class SinhOp(UnaryElementwiseOp):
    name = "hlo.sinh"


@irdl_op_definition
class CoshOp(UnaryElementwiseOp):
    name = "hlo.cosh"


@irdl_op_definition
class TanOp(UnaryElementwiseOp):
    name = "hlo.tan"


@irdl_op_definition
class PopcntOp(UnaryElementwiseOp):
    name = "hlo.popcnt"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = frozenset({INT})


@irdl_op_definition
class CountLeadingZerosOp(UnaryElementwiseOp):
    name = "hlo.count_leading_zeros"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = frozenset({INT})


@irdl_op_definition
class IsFiniteOp(HloOp):
    """`%r = hlo.is_finite %a : (tensor<4xf32>) -> tensor<4xi1>`: neither inf nor NaN."""

    name = "hlo.is_finite"

    operand = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$operand attr-dict `:` functional-type($operand, $result)"

    def __init__(self, operand: SSAValue):
        ty = _tensor(operand)
        super().__init__(operands=[operand], result_types=[TensorType(i1, ty.get_shape())])

    def verify_semantics(self) -> None:
        _check_kind(self.name, _tensor(self.operand), frozenset({FLOAT}))
        want = TensorType(i1, _shape(self.operand))
        if self.result.type != want:
            raise VerifyException(f"result must be {want}, got {self.result.type}")


@irdl_op_definition
class ClampOp(HloOp):
    """
    `%r = hlo.clamp %lo, %a, %hi : (tensor<f32>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>`:
    min(max(a, lo), hi); each bound has the operand's type or is rank 0 of its element type.
    """

    name = "hlo.clamp"

    T: ClassVar = VarConstraint("T", TensorType.constr())
    min = operand_def(TensorType)
    operand = operand_def(T)
    max = operand_def(TensorType)
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = "$min `,` $operand `,` $max attr-dict `:` functional-type(operands, results)"

    def __init__(self, lo: SSAValue, operand: SSAValue, hi: SSAValue):
        super().__init__(operands=[lo, operand, hi], result_types=[operand.type])

    def verify_semantics(self) -> None:
        ty = _tensor(self.operand)
        _check_kind(self.name, ty, NUMERIC)
        for what, bound in (("min", self.min), ("max", self.max)):
            b = _tensor(bound)
            if b != ty and b != TensorType(ty.element_type, []):
                raise VerifyException(
                    f"{what} must have the operand's type {ty} or be rank 0 "
                    f"(tensor<{ty.element_type}>), got {b}"
                )


ELEMENTWISE_OPS_13: tuple[type[HloOp], ...] = (
    RemainderOp,
    Atan2Op,
    XorOp,
    ShiftLeftOp,
    ShiftRightLogicalOp,
    ShiftRightArithmeticOp,
    CeilOp,
    FloorOp,
    RoundNearestEvenOp,
    RoundNearestAfzOp,
    SignOp,
    CbrtOp,
    Expm1Op,
    Log1pOp,
    ErfOp,
    ErfcOp,
    SinhOp,
    CoshOp,
    TanOp,
    PopcntOp,
    CountLeadingZerosOp,
    IsFiniteOp,
    ClampOp,
)
"""The element-wise ops of issue 13 (one block, so that merges stay simple)."""


################################################################################
# sort and top_k                                                               #
################################################################################

SORT_COMPARATORS = ("LT", "GT", "LT TOTALORDER", "GT TOTALORDER")
"""
How `hlo.sort` orders its key (operand 0). `LT`/`GT`: ascending/descending by value, NaNs
after every number and -0 equal to +0 (jnp.sort's canonicalizing comparator; for a plain
float LT/GT StableHLO leaves NaN placement to the implementation). `TOTALORDER`:
StableHLO's total order (-NaN < -inf < .. < -0 < +0 < .. < +inf < +NaN).
"""


@irdl_op_definition
class SortOp(HloOp):
    """
    StableHLO's sort with its comparator as a property: `%r:2 = hlo.sort %k, %v, dim = 0,
    comparator = LT, stable : (tensor<4xf32>, tensor<4xi32>) -> (tensor<4xf32>,
    tensor<4xi32>)` sorts along `dim` by operand 0 (the key); the other operands are
    permuted with it.
    """

    name = "hlo.sort"

    inputs = var_operand_def(TensorType)
    dimension = prop_def(IntegerAttr[type(i64)])  # pyright: ignore
    comparator = prop_def(StringAttr)
    is_stable = opt_prop_def(UnitAttr)
    outputs = var_result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(
        self, inputs: Sequence[SSAValue], dim: int, comparator: str = "LT", stable: bool = True
    ):
        props: dict[str, Attribute] = {
            "dimension": i64_attr(dim),
            "comparator": StringAttr(comparator),
        }
        if stable:
            props["is_stable"] = UnitAttr()
        super().__init__(
            operands=[inputs], result_types=[[v.type for v in inputs]], properties=props
        )

    @property
    def dim(self) -> int:
        return self.dimension.value.data

    @classmethod
    def parse(cls, parser: Parser) -> SortOp:
        pos = parser.pos
        operands = [parser.parse_unresolved_operand()]
        while parser.parse_optional_punctuation(","):
            if (operand := parser.parse_optional_unresolved_operand()) is None:
                break
            operands.append(operand)
        dim = parse_keyword_int(parser, "dim")
        parser.parse_punctuation(",")
        parser.parse_keyword("comparator")
        parser.parse_punctuation("=")
        words = [parser.parse_identifier()]
        if parser.parse_optional_keyword("TOTALORDER"):
            words.append("TOTALORDER")
        props: dict[str, Attribute] = {
            "dimension": i64_attr(dim),
            "comparator": StringAttr(" ".join(words)),
        }
        if parser.parse_optional_punctuation(","):
            parser.parse_keyword("stable")
            props["is_stable"] = UnitAttr()
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_functional_type(parser)
        values = parser.resolve_operands(operands, inputs, pos)
        op = cls.create(operands=values, result_types=outputs, properties=props)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(f", dim = {self.dim}, comparator = {self.comparator.data}")
        if self.is_stable is not None:
            printer.print_string(", stable")
        printer.print_op_attributes(self.attributes)
        _print_functional_type(printer, self)

    def verify_semantics(self) -> None:
        if not self.inputs:
            raise VerifyException("sort needs at least one operand")
        if self.comparator.data not in SORT_COMPARATORS:
            raise VerifyException(
                f"comparator must be one of {', '.join(SORT_COMPARATORS)}, "
                f"got {self.comparator.data!r}"
            )
        if len(self.outputs) != len(self.inputs):
            raise VerifyException(
                f"sort has {len(self.inputs)} operands but {len(self.outputs)} results"
            )
        shape = _shape(self.inputs[0])
        for i, (x, r) in enumerate(zip(self.inputs, self.outputs, strict=True)):
            if _shape(x) != shape:
                raise VerifyException(
                    f"operand {i} has shape {list(_shape(x))}, operand 0 {list(shape)}: "
                    "every operand must have the same shape"
                )
            if r.type != x.type:
                raise VerifyException(f"result {i} must be {x.type}, got {r.type}")
        if not 0 <= self.dim < len(shape):
            raise VerifyException(f"dim {self.dim} is out of range for rank {len(shape)}")


@irdl_op_definition
class TopKOp(HloOp):
    """
    CHLO's top_k: `%v, %i = hlo.top_k %x, k = 2 : tensor<3x5xf32> -> (tensor<3x2xf32>,
    tensor<3x2xi32>)`: the k largest elements along the last dimension in descending order
    (floats in StableHLO's total order) and their indices; equal elements lowest index first.
    """

    name = "hlo.top_k"

    operand = operand_def(TensorType)
    k = prop_def(IntegerAttr[type(i64)])  # pyright: ignore
    values = result_def(TensorType)
    indices = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, operand: SSAValue, k: int):
        src = _tensor(operand)
        shape = [*src.get_shape()[:-1], k]
        super().__init__(
            operands=[operand],
            result_types=[TensorType(src.element_type, shape), TensorType(i32, shape)],
            properties={"k": i64_attr(k)},
        )

    @property
    def count(self) -> int:
        return self.k.value.data

    @classmethod
    def parse(cls, parser: Parser) -> TopKOp:
        pos = parser.pos
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        k = parse_keyword_int(parser, "k")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ty = parser.parse_type()
        parser.parse_punctuation("->")
        outputs = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        (value,) = parser.resolve_operands([operand], [ty], pos)
        op = cls.create(operands=[value], result_types=outputs, properties={"k": i64_attr(k)})
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        printer.print_string(f", k = {self.count}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.operand.type)
        printer.print_string(" -> (")
        printer.print_list(self.result_types, printer.print_attribute)
        printer.print_string(")")

    def verify_semantics(self) -> None:
        src = _tensor(self.operand)
        if src.get_num_dims() < 1:
            raise VerifyException("top_k needs an operand of rank >= 1")
        k, n = self.count, src.get_shape()[-1]
        if not 0 <= k <= n:
            raise VerifyException(f"k = {k} must be in [0, {n}] (the last dimension's size)")
        shape = [*src.get_shape()[:-1], k]
        want = (TensorType(src.element_type, shape), TensorType(i32, shape))
        if (self.values.type, self.indices.type) != want:
            raise VerifyException(
                f"results must be ({want[0]}, {want[1]}), got ({self.values.type}, "
                f"{self.indices.type})"
            )


SORT_TOPK_OPS_13 = (SortOp, TopKOp)
"""sort and top_k of issue 13 (one block, so that merges stay simple)."""


################################################################################
# Region terminator (shared by every op with a region: while, case, reduce...) #
################################################################################


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """
    Ends a region of an `hlo` op and gives its values to the op (StableHLO's
    `stablehlo.return`): `hlo.return %a, %b : tensor<f32>, tensor<i32>`. Which types the
    parent expects is the parent's rule (its verifier checks them).
    """

    name = "hlo.return"

    values = var_operand_def(TensorType)

    traits = traits_def(IsTerminator())

    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue] = ()):
        super().__init__(operands=[values])

    def verify_(self) -> None:
        parent = self.parent_op()
        if parent is None or not parent.name.startswith("hlo."):
            raise VerifyException("hlo.return must end a region of an hlo op")


################################################################################
# Control flow with regions: while, case (StableHLO's `if` imports as case)    #
################################################################################


def _region_return(region: Region, what: str) -> ReturnOp:
    """The `hlo.return` that ends a one-block region (an error names `what` the region is)."""
    if not region.blocks:
        raise VerifyException(f"{what} must have a block")
    last = region.block.last_op
    if not isinstance(last, ReturnOp):
        raise VerifyException(f"{what} must end with hlo.return")
    return last


def _types_str(types: Sequence[Attribute]) -> str:
    return "(" + ", ".join(str(t) for t in types) + ")"


@irdl_op_definition
class WhileOp(HloOp):
    """
    StableHLO's while: `%r:2 = hlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<4xf32>
    cond { ... hlo.return %p : tensor<i1> } do { ... hlo.return %i1, %x1 : tensor<i32>,
    tensor<4xf32> }`. The carried values start as the operands; `cond` (its block arguments
    are the carried values) returns a scalar i1, and while it is true `do` (same block
    arguments) returns the next carried values; the results are the last ones. Operands,
    both regions' block arguments, `do`'s returned values and the results have one type
    per carried value.
    """

    name = "hlo.while"

    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    cond = region_def("single_block")
    body = region_def("single_block")

    def __init__(self, inputs: Sequence[SSAValue], cond: Region, body: Region):
        super().__init__(
            operands=[inputs], result_types=[[v.type for v in inputs]], regions=[cond, body]
        )

    @classmethod
    def parse(cls, parser: Parser) -> WhileOp:
        pos = parser.pos
        names: list[Parser.UnresolvedArgument] = []
        operands: list[Any] = []

        def parse_pair() -> None:
            names.append(parser.parse_argument(expect_type=False))
            parser.parse_punctuation("=")
            operands.append(parser.parse_unresolved_operand())

        parser.parse_comma_separated_list(parser.Delimiter.PAREN, parse_pair)
        types: list[Attribute] = []
        if operands:
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        values = parser.resolve_operands(operands, types, pos)
        parser.parse_keyword("cond")
        cond = parser.parse_region([n.resolve(t) for n, t in zip(names, types, strict=True)])
        parser.parse_keyword("do")
        body = parser.parse_region([n.resolve(t) for n, t in zip(names, types, strict=True)])
        op = cls(values, cond, body)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        cond_args = self.cond.block.args if self.cond.blocks else ()
        body_args = self.body.block.args if self.body.blocks else ()
        printer.print_string("(")
        for i, value in enumerate(self.inputs):
            if i:
                printer.print_string(", ")
            if i < len(cond_args):
                name = printer.print_ssa_value(cond_args[i])
                if i < len(body_args):
                    # both regions name their carried values alike (as StableHLO prints)
                    printer._ssa_values[body_args[i]] = name  # pyright: ignore[reportPrivateUsage]
            printer.print_string(" = ")
            printer.print_operand(value)
        printer.print_string(")")
        if self.inputs:
            printer.print_string(" : ")
            printer.print_list(self.inputs.types, printer.print_attribute)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" cond ")
        printer.print_region(self.cond, print_entry_block_args=False)
        printer.print_string(" do ")
        printer.print_region(self.body, print_entry_block_args=False)

    def verify_semantics(self) -> None:
        types = list(self.inputs.types)
        if list(self.outputs.types) != types:
            raise VerifyException(
                f"results {_types_str(self.outputs.types)} must have the operands' types "
                f"{_types_str(types)}"
            )
        for what, region in (("cond", self.cond), ("do", self.body)):
            if not region.blocks:
                raise VerifyException(f"{what} must have a block")
            args = list(region.block.arg_types)
            if args != types:
                raise VerifyException(
                    f"{what}'s block arguments {_types_str(args)} must have the carried "
                    f"values' types {_types_str(types)}"
                )
        ret = _region_return(self.cond, "cond")
        if list(ret.values.types) != [TensorType(i1, [])]:
            raise VerifyException(
                f"cond must return one tensor<i1>, got {_types_str(ret.values.types)}"
            )
        ret = _region_return(self.body, "do")
        if list(ret.values.types) != types:
            raise VerifyException(
                f"do must return the carried values' types {_types_str(types)}, got "
                f"{_types_str(ret.values.types)}"
            )


@irdl_op_definition
class CaseOp(HloOp):
    """
    StableHLO's case: `%r = hlo.case %index -> (tensor<4xf32>) { ... hlo.return %a :
    tensor<4xf32> }, { ... }` runs branch `index` (a tensor<i32>; an index out of range runs
    the last branch) and gives its returned values. Branches take no arguments and each
    returns values of the result types. StableHLO's `if %pred` is a case on
    `1 - convert(pred)`: branch 0 when true.
    """

    name = "hlo.case"

    index = operand_def(TensorType)
    outputs = var_result_def(TensorType)
    branches = var_region_def("single_block")

    def __init__(
        self, index: SSAValue, branches: Sequence[Region], result_types: Sequence[Attribute]
    ):
        super().__init__(operands=[index], result_types=[result_types], regions=[branches])

    @classmethod
    def parse(cls, parser: Parser) -> CaseOp:
        pos = parser.pos
        index = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        parser.parse_punctuation("->")
        outputs = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
        branches = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_region)
        (value,) = parser.resolve_operands([index], [TensorType(i32, [])], pos)
        op = cls(value, branches, outputs)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.index)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" -> (")
        printer.print_list(self.result_types, printer.print_attribute)
        printer.print_string(") ")
        printer.print_list(self.branches, printer.print_region)

    def verify_semantics(self) -> None:
        if self.index.type != TensorType(i32, []):
            raise VerifyException(f"index must be tensor<i32>, got {self.index.type}")
        if not self.branches:
            raise VerifyException("case needs at least one branch")
        types = list(self.outputs.types)
        for i, region in enumerate(self.branches):
            what = f"branch {i}"
            if region.blocks and region.block.args:
                raise VerifyException(f"{what} must not have block arguments")
            ret = _region_return(region, what)
            if list(ret.values.types) != types:
                raise VerifyException(
                    f"{what} must return the result types {_types_str(types)}, got "
                    f"{_types_str(ret.values.types)}"
                )


def region_block(values: Sequence[SSAValue] | Sequence[Attribute]) -> Block:
    """A block for a region of `while` (arguments of these types) or `case` (none)."""
    return Block(arg_types=[v.type if isinstance(v, SSAValue) else v for v in values])


CONTROL_OPS_13 = (WhileOp, CaseOp)
"""while and case of issue 13 (one block, so that merges stay simple)."""


Hlo = Dialect(
    "hlo",
    [
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        MaxOp,
        MinOp,
        PowOp,
        AndOp,
        OrOp,
        NegOp,
        ExpOp,
        LogOp,
        TanhOp,
        SqrtOp,
        RsqrtOp,
        AbsOp,
        SinOp,
        CosOp,
        LogisticOp,
        NotOp,
        CompareOp,
        SelectOp,
        ConvertOp,
        ConstantOp,
        IotaOp,
        BroadcastOp,
        ReshapeOp,
        TransposeOp,
        SliceOp,
        DynamicSliceOp,
        DynamicUpdateSliceOp,
        ConcatenateOp,
        DotOp,
        ReduceOp,
        PadOp,
        ReverseOp,
        *ELEMENTWISE_OPS_13,
        *SORT_TOPK_OPS_13,
        ReturnOp,
        *CONTROL_OPS_13,
    ],
    [],
)
