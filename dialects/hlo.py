"""
The `hlo` dialect: tensor ops with global semantics (level G), after StableHLO.

Syntax follows StableHLO's pretty form; `broadcast` is StableHLO's broadcast_in_dim, `dot`
its dot_general (result dims: batch, lhs free, rhs free), `reduce` names its combiner
(`add mul max min`) instead of carrying a region (a region only for several operands
reduced together: argmax).

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

from shardc.diagnostics import register_module_check
from shardc.dialects.syntax import (
    i64_array,
    i64_attr,
    int_list_str,
    parse_bound_operands,
    parse_i64,
    parse_int_list,
    parse_keyword_int,
    parse_keyword_int_list,
    parse_while_header,
    splat_element,
    splat_elements,
)
from shardc.xdsl_patches import patch_compact_splats, patch_hex_float_elements
from xdsl.dialects.builtin import (
    BFloat16Type,
    ComplexType,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    opt_region_def,
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
from xdsl.traits import (
    ConstantLike,
    HasCanonicalizationPatternsTrait,
    IsolatedFromAbove,
    IsTerminator,
    Pure,
)
from xdsl.utils.exceptions import VerifyException

patch_hex_float_elements()
patch_compact_splats(splat_elements, splat_element)

COMPARISON_DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")
REDUCE_KINDS = ("add", "mul", "max", "min")

FLOAT, INT, BOOL, COMPLEX = "float", "int", "bool", "complex"
ANY_KIND = frozenset({FLOAT, INT, BOOL, COMPLEX})
NUMERIC = frozenset({FLOAT, INT})
FLOAT_OR_COMPLEX = frozenset({FLOAT, COMPLEX})
NUMERIC_OR_COMPLEX = frozenset({FLOAT, INT, COMPLEX})

INT_WIDTHS = (2, 4, 8, 16, 32, 64)
"""Widths of the signless (two's complement) and unsigned integer types hlo accepts."""
SUPPORTED_TYPES = (
    "f64, f32, bf16, f16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, i4, i2, ui64, ui32, ui16, "
    "ui8, ui4, ui2, i1, complex<f32> or complex<f64>"
)
"""The element types `element_kind` accepts, for messages."""


def element_kind(ty: Attribute) -> str | None:
    """
    `float`, `int`, `bool` or `complex` for the element types shardc supports, else None:
    f64 f32 bf16 f16 f8E4M3FN f8E5M2; signless (signed) and unsigned integers of 2, 4, 8,
    16, 32 and 64 bits; i1; complex<f32> and complex<f64>. Whether an `int` is unsigned:
    `is_unsigned`.
    """
    if isinstance(
        ty,
        Float16Type | BFloat16Type | Float32Type | Float64Type | Float8E4M3FNType | Float8E5M2Type,
    ):
        return FLOAT
    if isinstance(ty, IntegerType):
        sign, width = ty.signedness.data.name, ty.width.data
        if sign == "SIGNLESS" and width == 1:
            return BOOL
        if sign in ("SIGNLESS", "UNSIGNED") and width in INT_WIDTHS:
            return INT
        return None
    if isinstance(ty, ComplexType) and isinstance(ty.element_type, Float32Type | Float64Type):
        return COMPLEX
    return None


def is_unsigned(ty: Attribute) -> bool:
    """An unsigned integer type (`ui8`...): compares, divides, shifts and converts unsigned."""
    return isinstance(ty, IntegerType) and ty.signedness.data.name == "UNSIGNED"


def accumulation_type(ty: Attribute) -> Attribute:
    """
    What sums and products of `ty` accumulate in (dot, reduce, reducing collectives, at
    every level): f32 for bf16/f16 and the f8 types, which are rounded once at the end;
    `ty` itself for every other type (integers wrap, f32 and f64 stay). f8 as XLA and
    StableHLO's `ANY_F8_ANY_F8_F32` dot algorithm: an f8 dot accumulates in f32 (the
    level-S interpreter's `values.accumulation_dtype` already did, for all three).
    """
    low = BFloat16Type | Float16Type | Float8E4M3FNType | Float8E5M2Type
    return f32 if isinstance(ty, low) else ty


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
    Every `hlo` op: its tensors must have a supported element type (`element_kind`);
    `verify_semantics` adds the op's own rule.
    """

    def verify_(self) -> None:
        for v in (*self.operands, *self.results):
            ty = v.type
            if not isinstance(ty, TensorType):
                raise VerifyException(f"expected a tensor, got {ty}")
            if element_kind(ty.element_type) is None:
                raise VerifyException(
                    f"unsupported element type {ty.element_type} (expected {SUPPORTED_TYPES})"
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
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC_OR_COMPLEX


@irdl_op_definition
class MulOp(BinaryElementwiseOp):
    name = "hlo.mul"


@irdl_op_definition
class DivOp(BinaryElementwiseOp):
    name = "hlo.div"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC_OR_COMPLEX


@irdl_op_definition
class MaxOp(BinaryElementwiseOp):
    name = "hlo.max"


@irdl_op_definition
class MinOp(BinaryElementwiseOp):
    name = "hlo.min"


@irdl_op_definition
class PowOp(BinaryElementwiseOp):
    name = "hlo.pow"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC_OR_COMPLEX


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
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC_OR_COMPLEX


@irdl_op_definition
class ExpOp(UnaryElementwiseOp):
    name = "hlo.exp"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = FLOAT_OR_COMPLEX


@irdl_op_definition
class LogOp(UnaryElementwiseOp):
    name = "hlo.log"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = FLOAT_OR_COMPLEX


@irdl_op_definition
class TanhOp(UnaryElementwiseOp):
    name = "hlo.tanh"


@irdl_op_definition
class SqrtOp(UnaryElementwiseOp):
    name = "hlo.sqrt"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = FLOAT_OR_COMPLEX


@irdl_op_definition
class RsqrtOp(UnaryElementwiseOp):
    name = "hlo.rsqrt"


@irdl_op_definition
class AbsOp(UnaryElementwiseOp):
    """
    `%r = hlo.abs %a : tensor<4xf32>`; of a complex tensor the modulus, a real tensor:
    `%r = hlo.abs %c : (tensor<4xcomplex<f32>>) -> tensor<4xf32>` (StableHLO's form).
    """

    name = "hlo.abs"
    ELEMENT_KINDS: ClassVar[frozenset[str]] = NUMERIC_OR_COMPLEX

    operand = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = None

    def __init__(self, operand: SSAValue):
        ty = _tensor(operand)
        res = _part_type(ty) if element_kind(ty.element_type) == COMPLEX else ty
        HloOp.__init__(self, operands=[operand], result_types=[res])

    @classmethod
    def parse(cls, parser: Parser) -> AbsOp:
        pos = parser.pos
        operand = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        if parser.parse_optional_punctuation("("):
            in_ty = parser.parse_type()
            parser.parse_punctuation(")")
            parser.parse_punctuation("->")
            out_ty = parser.parse_type()
        else:
            in_ty = out_ty = parser.parse_type()
        (value,) = parser.resolve_operands([operand], [in_ty], pos)
        op = cls.create(operands=[value], result_types=[out_ty])
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.operand)
        printer.print_op_attributes(self.attributes)
        if self.operand.type == self.result.type:
            printer.print_string(" : ")
            printer.print_attribute(self.result.type)
        else:
            _print_functional_type(printer, self)

    def verify_semantics(self) -> None:
        ty = _tensor(self.operand)
        _check_kind(self.name, ty, self.ELEMENT_KINDS)
        want = _part_type(ty) if element_kind(ty.element_type) == COMPLEX else ty
        if self.result.type != want:
            raise VerifyException(f"result must be {want}, got {self.result.type}")


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
        if element_kind(lt.element_type) == COMPLEX and self.comparison_direction.data not in (
            "EQ",
            "NE",
        ):
            raise VerifyException("complex operands compare only with EQ or NE")
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

    With a body (StableHLO's reduce, for argmax / argmin): `%r:2 = hlo.reduce(%v init:
    %v0), (%i init: %i0) across dims = [1] : (tensor<4x8xf32>, tensor<4x8xi32>,
    tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>) reducer(%a: tensor<f32>,
    %b: tensor<f32>) (%c: tensor<i32>, %d: tensor<i32>) { .. hlo.return %x, %y : .. }`
    reduces N operands together: the body takes the N accumulated values then the N
    values combined into them (block arguments a, c, b, d above) and returns the N new
    accumulated values. Operands: the N inputs, then their N inits.
    """

    name = "hlo.reduce"

    operand = operand_def(TensorType)
    others = var_operand_def(TensorType)
    kind = opt_prop_def(StringAttr)
    dimensions = prop_def(DenseArrayBase)
    result = result_def(TensorType)
    other_results = var_result_def(TensorType)
    body = opt_region_def()

    traits = traits_def(Pure())

    def __init__(self, kind: str, operand: SSAValue, dims: Sequence[int]):
        src = _tensor(operand)
        shape = [s for d, s in enumerate(src.get_shape()) if d not in dims]
        super().__init__(
            operands=[operand, []],
            result_types=[TensorType(src.element_type, shape), []],
            properties={"kind": StringAttr(kind), "dimensions": i64_array(dims)},
            regions=[None],
        )

    @staticmethod
    def with_body(
        inputs: Sequence[SSAValue], inits: Sequence[SSAValue], dims: Sequence[int], body: Region
    ) -> ReduceOp:
        """The region form: `body`'s block takes 2N rank-0 arguments, returns N values."""
        types = [
            TensorType(
                _tensor(x).element_type, [s for d, s in enumerate(_shape(x)) if d not in dims]
            )
            for x in inputs
        ]
        return ReduceOp.create(
            operands=[*inputs, *inits],
            result_types=types,
            properties={"dimensions": i64_array(dims)},
            regions=[body],
        )

    @property
    def dims(self) -> tuple[int, ...]:
        return _int_values(self.dimensions)

    @property
    def has_body(self) -> bool:
        return self.kind is None

    @property
    def inputs(self) -> tuple[SSAValue, ...]:
        """The reduced operands (without the region form's inits)."""
        return tuple(self.operands[: len(self.results)])

    @property
    def inits(self) -> tuple[SSAValue, ...]:
        """The region form's init values (none for a named kind)."""
        return tuple(self.operands[len(self.results) :]) if self.has_body else ()

    @classmethod
    def parse(cls, parser: Parser) -> ReduceOp:
        if parser._current_token.text == "(":  # pyright: ignore[reportPrivateUsage]
            return cls._parse_with_body(parser)
        kind_pos = parser.pos
        kind = parser.parse_optional_identifier()
        if kind not in REDUCE_KINDS:
            parser.raise_error("expected a reduction kind: " + ", ".join(REDUCE_KINDS), kind_pos)
        return _parse_operand_and_dims(cls, parser, "dimensions", {"kind": StringAttr(kind)})

    @classmethod
    def _parse_with_body(cls, parser: Parser) -> ReduceOp:
        pos = parser.pos
        pairs = []
        while True:
            parser.parse_punctuation("(")
            x = parser.parse_unresolved_operand()
            parser.parse_keyword("init")
            parser.parse_punctuation(":")
            pairs.append((x, parser.parse_unresolved_operand()))
            parser.parse_punctuation(")")
            if not parser.parse_optional_punctuation(","):
                break
        parser.parse_keyword("across")
        dims = parse_keyword_int_list(parser, "dims")
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_functional_type(parser)
        parser.parse_keyword("reducer")
        lhs: list[Parser.Argument] = []
        rhs: list[Parser.Argument] = []
        for _ in pairs:
            args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_argument)
            if len(args) != 2:
                parser.raise_error("each reducer argument group has two arguments")
            lhs.append(args[0])
            rhs.append(args[1])
        region = parser.parse_region(lhs + rhs)
        unresolved = [p[0] for p in pairs] + [p[1] for p in pairs]
        values = parser.resolve_operands(unresolved, inputs, pos)
        op = cls.create(
            operands=values,
            result_types=outputs,
            properties={"dimensions": i64_array(dims)},
            regions=[region],
        )
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        if not self.has_body:
            assert self.kind is not None
            printer.print_string(f" {self.kind.data} ")
            _print_operand_and_dims(printer, self, self.dims)
            return
        for i, (x, init) in enumerate(zip(self.inputs, self.inits, strict=True)):
            printer.print_string(", (" if i else "(")
            printer.print_operand(x)
            printer.print_string(" init: ")
            printer.print_operand(init)
            printer.print_string(")")
        printer.print_string(f" across dims = {int_list_str(self.dims)}")
        printer.print_op_attributes(self.attributes)
        _print_functional_type(printer, self)
        printer.print_string(" reducer")
        assert self.body is not None
        block = self.body.block
        n = len(self.results)
        for i in range(n):
            printer.print_string("(")
            printer.print_block_argument(block.args[i])
            printer.print_string(", ")
            printer.print_block_argument(block.args[n + i])
            printer.print_string(") ")
        printer.print_region(self.body, print_entry_block_args=False)

    def verify_semantics(self) -> None:
        if self.has_body:
            return self._verify_body()
        if self.kind.data not in REDUCE_KINDS:  # pyright: ignore[reportOptionalMemberAccess]
            raise VerifyException(f'unknown reduction kind "{self.kind.data}"')  # pyright: ignore[reportOptionalMemberAccess]
        if self.others or self.other_results or self.body is not None:
            raise VerifyException(
                "a reduce with a named kind has one operand, one result and no body"
            )
        self._verify_shape(self.operand, self.result)

    def _verify_shape(self, x: SSAValue, r: SSAValue) -> None:
        src, res = _tensor(x), _tensor(r)
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

    def _verify_body(self) -> None:
        n = len(self.results)
        if len(self.operands) != 2 * n:
            raise VerifyException(
                f"a reduce with a body has N inputs and N inits for N results: "
                f"{len(self.operands)} operands, {n} results"
            )
        shape = _shape(self.inputs[0])
        for i, (x, init, r) in enumerate(zip(self.inputs, self.inits, self.results, strict=True)):
            if _shape(x) != shape:
                raise VerifyException(
                    f"input {i} has shape {list(_shape(x))}, input 0 {list(shape)}: every "
                    "input must have the same shape"
                )
            scalar = TensorType(_tensor(x).element_type, [])
            if init.type != scalar:
                raise VerifyException(f"init {i} must be {scalar}, got {init.type}")
            self._verify_shape(x, r)
        if self.body is None or len(self.body.blocks) != 1:
            raise VerifyException("a reduce without a kind needs a body of one block")
        block = self.body.block
        scalars = [TensorType(_tensor(x).element_type, []) for x in self.inputs]
        if [a.type for a in block.args] != scalars * 2:
            raise VerifyException(
                "the body's arguments must be the accumulated values then the combined "
                f"ones: ({', '.join(map(str, scalars * 2))})"
            )
        ret = block.last_op
        if not isinstance(ret, ReturnOp) or [v.type for v in ret.operands] != scalars:
            raise VerifyException(
                f"the body must end in hlo.return of ({', '.join(map(str, scalars))})"
            )


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


ELEMENTWISE: tuple[type[HloOp], ...] = (
    BinaryElementwiseOp,
    UnaryElementwiseOp,
    CompareOp,
    SelectOp,
    ConvertOp,
    IsFiniteOp,
    ClampOp,
)
"""The ops that compute each result element from the operands' elements at the same
index (the base classes of the arithmetic ops and the others of that form): what
propagation, fusion and micro-batch's links treat alike."""


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
# CHLO element-wise ops JAX emits (issue 13)                                   #
################################################################################


@irdl_op_definition
class ErfInvOp(UnaryElementwiseOp):
    """The inverse error function (`chlo.erf_inv`): what `jax.random.normal` samples with."""

    name = "hlo.erf_inv"


@irdl_op_definition
class AsinOp(UnaryElementwiseOp):
    name = "hlo.asin"


@irdl_op_definition
class AcosOp(UnaryElementwiseOp):
    name = "hlo.acos"


@irdl_op_definition
class AtanOp(UnaryElementwiseOp):
    name = "hlo.atan"


@irdl_op_definition
class AsinhOp(UnaryElementwiseOp):
    name = "hlo.asinh"


@irdl_op_definition
class AcoshOp(UnaryElementwiseOp):
    name = "hlo.acosh"


@irdl_op_definition
class AtanhOp(UnaryElementwiseOp):
    name = "hlo.atanh"


@irdl_op_definition
class LgammaOp(UnaryElementwiseOp):
    """log |Gamma(x)| (`chlo.lgamma`); +inf at the poles 0, -1, -2, ..."""

    name = "hlo.lgamma"


@irdl_op_definition
class DigammaOp(UnaryElementwiseOp):
    """Gamma'(x) / Gamma(x) (`chlo.digamma`); NaN at the poles 0, -1, -2, ... (as XLA)."""

    name = "hlo.digamma"


CHLO_OPS_13: tuple[type[HloOp], ...] = (
    ErfInvOp,
    AsinOp,
    AcosOp,
    AtanOp,
    AsinhOp,
    AcoshOp,
    AtanhOp,
    LgammaOp,
    DigammaOp,
)
"""CHLO's element-wise ops of issue 13 (float only; one block, so that merges stay simple)."""
# Device ids (issue 13)                                                        #
################################################################################


class _DeviceIdOp(HloOp, ABC):
    """`partition_id` / `replica_id`: a rank-0 integer naming the running device."""

    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, result_type: Attribute):
        super().__init__(result_types=[result_type])

    @classmethod
    def parse(cls, parser: Parser) -> _DeviceIdOp:
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_pos = parser.pos
        ty = parser.parse_type()
        if not isinstance(ty, TensorType):
            parser.raise_error(f"{cls.name} produces a tensor, got {ty}", type_pos, parser.pos)
        op = cls(ty)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    def verify_semantics(self) -> None:
        ty = _tensor(self.result)
        if ty.get_shape() or element_kind(ty.element_type) != INT:
            raise VerifyException(
                f"result must be a rank-0 integer tensor (StableHLO: tensor<ui32>), got {ty}"
            )


@irdl_op_definition
class PartitionIdOp(_DeviceIdOp):
    """
    `%p = hlo.partition_id : tensor<i32>`: the running device's partition (at level S its
    device id; at level G, outside a manual computation, 0: the one partition of a
    one-device run).
    """

    name = "hlo.partition_id"


@irdl_op_definition
class ReplicaIdOp(_DeviceIdOp):
    """
    `%r = hlo.replica_id : tensor<i32>`: the running device's replica (0: shardc's
    devices are the partitions of one replica).
    """

    name = "hlo.replica_id"


DEVICE_ID_OPS_13 = (PartitionIdOp, ReplicaIdOp)
"""partition_id and replica_id of issue 13 (one block, so that merges stay simple)."""


################################################################################
# reduce_window and select_and_scatter                                         #
################################################################################


def window_result_shape(
    shape: Sequence[int],
    window: Sequence[int],
    strides: Sequence[int],
    base_dilations: Sequence[int],
    window_dilations: Sequence[int],
    low: Sequence[int],
    high: Sequence[int],
) -> list[int]:
    """
    StableHLO reduce_window's result shape: the operand dilated by `base_dilations`,
    padded by `low`/`high`, then one element per window position: floor((padded -
    dilated window) / stride) + 1, or 0 when the window does not fit.
    """
    out = []
    for n, w, s, bd, wd, lo, hi in zip(
        shape, window, strides, base_dilations, window_dilations, low, high, strict=True
    ):
        padded = lo + (n - 1) * bd + 1 + hi if n else lo + hi
        reach = (w - 1) * wd + 1
        out.append(0 if padded < reach or w == 0 else (padded - reach) // s + 1)
    return out


WINDOW_PROPERTIES = (
    "window_dimensions",
    "window_strides",
    "base_dilations",
    "window_dilations",
    "padding_low",
    "padding_high",
)
"""The window properties in `window_result_shape`'s argument order."""


class WindowedOp(HloOp, ABC):
    """
    The window of `reduce_window` and `select_and_scatter`: `window` sizes, `strides`,
    `base_dilations`, `window_dilations` (each one entry per operand dimension, 1 by
    default) and `padding` (`[[low, high], ..]`, 0 by default); syntax prints the
    defaults away.
    """

    window_dimensions = prop_def(DenseArrayBase)
    window_strides = prop_def(DenseArrayBase)
    base_dilations = prop_def(DenseArrayBase)
    window_dilations = prop_def(DenseArrayBase)
    padding_low = prop_def(DenseArrayBase)
    padding_high = prop_def(DenseArrayBase)

    _OPTIONAL: ClassVar = (
        ("strides", "window_strides"),
        ("base_dilations", "base_dilations"),
        ("window_dilations", "window_dilations"),
    )

    @property
    def window(self) -> tuple[int, ...]:
        return _int_values(self.window_dimensions)

    @property
    def strides(self) -> tuple[int, ...]:
        return _int_values(self.window_strides)

    @property
    def base_dilation(self) -> tuple[int, ...]:
        return _int_values(self.base_dilations)

    @property
    def window_dilation(self) -> tuple[int, ...]:
        return _int_values(self.window_dilations)

    @property
    def low(self) -> tuple[int, ...]:
        return _int_values(self.padding_low)

    @property
    def high(self) -> tuple[int, ...]:
        return _int_values(self.padding_high)

    def windowed_dims(self) -> list[int]:
        """Dimensions whose window is not the identity (size, stride, dilations 1, no padding)."""
        return [
            d
            for d, params in enumerate(
                zip(
                    self.window,
                    self.strides,
                    self.base_dilation,
                    self.window_dilation,
                    strict=True,
                )
            )
            if params != (1, 1, 1, 1) or self.low[d] or self.high[d]
        ]

    def result_shape(self, shape: Sequence[int]) -> list[int]:
        return window_result_shape(
            shape,
            self.window,
            self.strides,
            self.base_dilation,
            self.window_dilation,
            self.low,
            self.high,
        )

    @staticmethod
    def window_properties(
        rank: int,
        window: Sequence[int],
        strides: Sequence[int] | None = None,
        padding: Sequence[tuple[int, int]] | None = None,
        base_dilations: Sequence[int] | None = None,
        window_dilations: Sequence[int] | None = None,
    ) -> dict[str, Attribute]:
        pads = list(padding) if padding is not None else [(0, 0)] * rank
        return {
            "window_dimensions": i64_array(window),
            "window_strides": i64_array(strides if strides is not None else [1] * rank),
            "base_dilations": i64_array(
                base_dilations if base_dilations is not None else [1] * rank
            ),
            "window_dilations": i64_array(
                window_dilations if window_dilations is not None else [1] * rank
            ),
            "padding_low": i64_array([lo for lo, _ in pads]),
            "padding_high": i64_array([hi for _, hi in pads]),
        }

    @classmethod
    def parse_window(cls, parser: Parser) -> dict[str, Attribute]:
        """`window = [..]` then optional `, strides = [..]` .. `, padding = [[lo, hi], ..]`."""
        window = parse_keyword_int_list(parser, "window")
        rank = len(window)
        given: dict[str, list[int]] = {}
        padding: list[tuple[int, int]] | None = None
        keywords = [k for k, _ in cls._OPTIONAL] + ["padding"]
        while parser.parse_optional_punctuation(","):
            pos = parser.pos
            keyword = parser.parse_identifier()
            if keyword not in keywords:
                parser.raise_error(f"expected one of {', '.join(keywords)}", pos)
            keywords = keywords[keywords.index(keyword) + 1 :]
            parser.parse_punctuation("=")
            if keyword == "padding":
                pairs = parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE, lambda: parse_int_list(parser)
                )
                if any(len(p) != 2 for p in pairs):
                    parser.raise_error("padding entries are [low, high] pairs", pos)
                padding = [(p[0], p[1]) for p in pairs]
            else:
                given[keyword] = parse_int_list(parser)
            if not keywords:
                break
        return cls.window_properties(
            rank,
            window,
            given.get("strides"),
            padding,
            given.get("base_dilations"),
            given.get("window_dilations"),
        )

    def print_window(self, printer: Printer) -> None:
        printer.print_string(f"window = {int_list_str(self.window)}")
        for keyword, values in zip(
            ("strides", "base_dilations", "window_dilations"),
            (self.strides, self.base_dilation, self.window_dilation),
            strict=True,
        ):
            if any(v != 1 for v in values):
                printer.print_string(f", {keyword} = {int_list_str(values)}")
        if any(self.low) or any(self.high):
            pairs = ", ".join(f"[{lo}, {hi}]" for lo, hi in zip(self.low, self.high, strict=True))
            printer.print_string(f", padding = [{pairs}]")

    def verify_window(self, rank: int) -> None:
        for name, values in (
            ("window", self.window),
            ("strides", self.strides),
            ("base_dilations", self.base_dilation),
            ("window_dilations", self.window_dilation),
            ("padding low", self.low),
            ("padding high", self.high),
        ):
            if len(values) != rank:
                raise VerifyException(
                    f"{name} has {len(values)} entries but the operand has rank {rank}"
                )
        for name, values in (
            ("window", self.window),
            ("strides", self.strides),
            ("base_dilations", self.base_dilation),
            ("window_dilations", self.window_dilation),
        ):
            if any(v < 1 for v in values):
                raise VerifyException(f"{name} {list(values)} must be >= 1")


@irdl_op_definition
class ReduceWindowOp(WindowedOp):
    """
    StableHLO's reduce_window with a named combiner (as `hlo.reduce`): `%r =
    hlo.reduce_window add %x, %init, window = [1, 3], strides = [1, 2], padding = [[0,
    0], [1, 1]] : (tensor<2x6xf32>, tensor<f32>) -> tensor<2x3xf32>`. The operand is
    dilated by `base_dilations` and padded with `init`, and each result element combines
    `init` with the window's elements (`window_dilations` apart).
    """

    name = "hlo.reduce_window"

    operand = operand_def(TensorType)
    init_value = operand_def(TensorType)
    kind = prop_def(StringAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(
        self,
        kind: str,
        operand: SSAValue,
        init: SSAValue,
        window: Sequence[int],
        strides: Sequence[int] | None = None,
        padding: Sequence[tuple[int, int]] | None = None,
        base_dilations: Sequence[int] | None = None,
        window_dilations: Sequence[int] | None = None,
    ):
        src = _tensor(operand)
        props = self.window_properties(
            src.get_num_dims(), window, strides, padding, base_dilations, window_dilations
        )
        props["kind"] = StringAttr(kind)
        shape = window_result_shape(
            src.get_shape(),
            *(_int_values(props[k]) for k in WINDOW_PROPERTIES),  # pyright: ignore
        )
        super().__init__(
            operands=[operand, init],
            properties=props,
            result_types=[TensorType(src.element_type, shape)],
        )

    @classmethod
    def parse(cls, parser: Parser) -> ReduceWindowOp:
        kind_pos = parser.pos
        kind = parser.parse_optional_identifier()
        if kind not in REDUCE_KINDS:
            parser.raise_error("expected a reduction kind: " + ", ".join(REDUCE_KINDS), kind_pos)
        pos = parser.pos
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        init = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        props = cls.parse_window(parser)
        props["kind"] = StringAttr(kind)
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_functional_type(parser)
        values = parser.resolve_operands([operand, init], inputs, pos)
        op = cls.create(operands=values, result_types=outputs, properties=props)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_string(", ")
        self.print_window(printer)
        printer.print_op_attributes(self.attributes)
        _print_functional_type(printer, self)

    def verify_semantics(self) -> None:
        if self.kind.data not in REDUCE_KINDS:
            raise VerifyException(f'unknown reduction kind "{self.kind.data}"')
        src, init, res = _tensor(self.operand), _tensor(self.init_value), _tensor(self.result)
        if init.get_num_dims() != 0:
            raise VerifyException(f"the init value must be a rank-0 tensor, got {init}")
        if init.element_type != src.element_type or res.element_type != src.element_type:
            raise VerifyException(
                f"operand, init value and result must share an element type, got "
                f"{src.element_type}, {init.element_type} and {res.element_type}"
            )
        self.verify_window(src.get_num_dims())
        want = self.result_shape(src.get_shape())
        if list(res.get_shape()) != want:
            raise VerifyException(f"result shape must be {want}, got {list(res.get_shape())}")


SELECT_DIRECTIONS = ("GE", "GT")


@irdl_op_definition
class SelectAndScatterOp(WindowedOp):
    """
    StableHLO's select_and_scatter with a named select (`GE`: the first largest element
    of each window, `GT`: the last) and scatter `add`: `%r = hlo.select_and_scatter %x,
    %src, %init, select = GE, scatter = add, window = [2, 2], strides = [2, 2] :
    (tensor<4x4xf32>, tensor<2x2xf32>, tensor<f32>) -> tensor<4x4xf32>`. Each window
    position of `%x` (padding never selected) adds its `%src` element to the selected
    element of a result that starts as `init` (max-pooling's gradient).
    """

    name = "hlo.select_and_scatter"

    operand = operand_def(TensorType)
    source = operand_def(TensorType)
    init_value = operand_def(TensorType)
    select = prop_def(StringAttr)
    scatter = prop_def(StringAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(
        self,
        operand: SSAValue,
        source: SSAValue,
        init: SSAValue,
        window: Sequence[int],
        strides: Sequence[int] | None = None,
        padding: Sequence[tuple[int, int]] | None = None,
        select: str = "GE",
        scatter: str = "add",
    ):
        src = _tensor(operand)
        props = self.window_properties(src.get_num_dims(), window, strides, padding)
        props["select"] = StringAttr(select)
        props["scatter"] = StringAttr(scatter)
        super().__init__(operands=[operand, source, init], properties=props, result_types=[src])

    @classmethod
    def parse(cls, parser: Parser) -> SelectAndScatterOp:
        pos = parser.pos
        operands = [parser.parse_unresolved_operand()]
        for _ in range(2):
            parser.parse_punctuation(",")
            operands.append(parser.parse_unresolved_operand())
        parser.parse_punctuation(",")
        parser.parse_keyword("select")
        parser.parse_punctuation("=")
        select = parser.parse_identifier()
        parser.parse_punctuation(",")
        parser.parse_keyword("scatter")
        parser.parse_punctuation("=")
        scatter = parser.parse_identifier()
        parser.parse_punctuation(",")
        props = cls.parse_window(parser)
        props["select"] = StringAttr(select)
        props["scatter"] = StringAttr(scatter)
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_functional_type(parser)
        values = parser.resolve_operands(operands, inputs, pos)
        op = cls.create(operands=values, result_types=outputs, properties=props)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_string(f", select = {self.select.data}, scatter = {self.scatter.data}, ")
        self.print_window(printer)
        printer.print_op_attributes(self.attributes)
        _print_functional_type(printer, self)

    def verify_semantics(self) -> None:
        if self.select.data not in SELECT_DIRECTIONS:
            raise VerifyException(
                f"select must be one of {', '.join(SELECT_DIRECTIONS)}, got {self.select.data!r}"
            )
        if self.scatter.data != "add":
            raise VerifyException(f"scatter must be add, got {self.scatter.data!r}")
        src, source = _tensor(self.operand), _tensor(self.source)
        init, res = _tensor(self.init_value), _tensor(self.result)
        if element_kind(src.element_type) == BOOL:
            raise VerifyException(f"does not accept element type {src.element_type} (numeric)")
        if init.get_num_dims() != 0:
            raise VerifyException(f"the init value must be a rank-0 tensor, got {init}")
        if init.element_type != source.element_type or res != TensorType(
            source.element_type, src.get_shape()
        ):
            raise VerifyException(
                f"the init value must be tensor<{source.element_type}> and the result "
                f"{TensorType(source.element_type, src.get_shape())} (the operand's shape, the "
                f"source's element type), got {init} and {res}"
            )
        self.verify_window(src.get_num_dims())
        if any(d != 1 for d in self.base_dilation + self.window_dilation):
            raise VerifyException("select_and_scatter has no dilations")
        want = self.result_shape(src.get_shape())
        if list(source.get_shape()) != want:
            raise VerifyException(
                f"the source must have the window positions' shape {want}, got "
                f"{list(source.get_shape())}"
            )


WINDOW_OPS_13 = (ReduceWindowOp, SelectAndScatterOp)
"""reduce_window and select_and_scatter of issue 13 (one block, so that merges stay simple)."""


################################################################################
# convolution                                                                  #
################################################################################


def conv_labels(dims: Sequence[int], letters: str) -> str:
    """
    StableHLO's `[b, 0, 1, f]` from `dims` = (dimension of `letters[0]`, of `letters[1]`,
    of spatial 0, spatial 1, ...): each tensor dimension labelled by what it holds.
    """
    labels = [""] * len(dims)
    for d, label in zip(dims, [*letters, *(str(i) for i in range(len(dims) - 2))], strict=True):
        labels[d] = label
    return "[" + ", ".join(labels) + "]"


def conv_dims_from_labels(labels: Sequence[str], letters: str) -> list[int]:
    """
    The inverse of `conv_labels`: (dimension of `letters[0]`, of `letters[1]`, of spatial
    0, ...) from a label list such as `["b", "0", "1", "f"]`; ValueError if it is malformed.
    """
    n = len(labels) - 2
    want = [*letters, *(str(i) for i in range(n))]
    if n < 0 or sorted(labels) != sorted(want):
        raise ValueError(
            f"dimension labels [{', '.join(labels)}] must be {letters[0]}, {letters[1]} and "
            f"the spatial dimensions 0..{max(n - 1, 0)}, each once"
        )
    return [list(labels).index(w) for w in want]


def _dilated(size: int, dilation: int) -> int:
    return 0 if size == 0 else (size - 1) * dilation + 1


def convolution_result_shape(op: ConvolutionOp) -> list[int]:
    """The result shape StableHLO infers for `op`, or a `VerifyException` saying why not."""
    lhs, rhs = _shape(op.lhs), _shape(op.rhs)
    ld, rd, od = op.lhs_dims_, op.rhs_dims_, op.out_dims_
    n = len(lhs) - 2
    for what, dims, rank in (("lhs", ld, len(lhs)), ("rhs", rd, len(rhs)), ("result", od, None)):
        rank = len(_shape(op.result)) if rank is None else rank
        if len(dims) != n + 2 or rank != n + 2 or sorted(dims) != list(range(n + 2)):
            raise VerifyException(
                f"{what} dimension numbers {list(dims)} must be a permutation of the "
                f"{n + 2} dimensions of every operand and the result (rank {rank})"
            )
    for name, values in (
        ("window strides", op.strides),
        ("lhs dilation", op.lhs_dilation_),
        ("rhs dilation", op.rhs_dilation_),
    ):
        if len(values) != n or any(v < 1 for v in values):
            raise VerifyException(f"{name} {list(values)} must be {n} positive numbers")
    if len(op.padding_) != n or len(op.reversal) != n:
        raise VerifyException(f"padding and reverse must have {n} entries (the spatial dims)")
    fgc, bgc = op.feature_groups, op.batch_groups
    if fgc < 1 or bgc < 1 or (fgc > 1 and bgc > 1):
        raise VerifyException(
            f"feature_group_count ({fgc}) and batch_group_count ({bgc}) must be positive, "
            "and one of them 1"
        )
    batch, feat, in_feat, out_feat = lhs[ld[0]], lhs[ld[1]], rhs[rd[0]], rhs[rd[1]]
    if feat % fgc or feat != in_feat * fgc:
        raise VerifyException(
            f"lhs feature dimension ({feat}) must be rhs input feature dimension ({in_feat}) "
            f"times feature_group_count ({fgc})"
        )
    if batch % bgc:
        raise VerifyException(
            f"lhs batch dimension ({batch}) must be divisible by batch_group_count ({bgc})"
        )
    if out_feat % (fgc * bgc):
        raise VerifyException(
            f"rhs output feature dimension ({out_feat}) must be divisible by "
            f"feature_group_count ({fgc}) and batch_group_count ({bgc})"
        )
    shape = [0] * (n + 2)
    shape[od[0]], shape[od[1]] = batch // bgc, out_feat
    for i in range(n):
        lo, hi = op.padding_[i]
        size = lo + _dilated(lhs[ld[2 + i]], op.lhs_dilation_[i]) + hi
        window = _dilated(rhs[rd[2 + i]], op.rhs_dilation_[i])
        if size < 0:
            raise VerifyException(f"spatial dim {i}: negative padding removes more than it has")
        shape[od[2 + i]] = (
            0 if size < window or window == 0 else (size - window) // op.strides[i] + 1
        )
    return shape


_WINDOW_KEYS = ("stride", "pad", "lhs_dilate", "rhs_dilate", "reverse")


def _parse_labels(parser: Parser) -> list[str]:
    def item() -> str:
        value = parser.parse_optional_integer(allow_boolean=False)
        return str(value) if value is not None else parser.parse_identifier()

    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, item)


def parse_conv_dim_numbers(parser: Parser) -> list[list[int]]:
    """`[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` as (lhs, rhs, out) dimension lists."""
    pos = parser.pos
    lhs = _parse_labels(parser)
    parser.parse_keyword("x")
    rhs = _parse_labels(parser)
    parser.parse_punctuation("->")
    out = _parse_labels(parser)
    try:
        return [conv_dims_from_labels(v, w) for v, w in ((lhs, "bf"), (rhs, "io"), (out, "bf"))]
    except ValueError as e:
        parser.raise_error(str(e), pos, parser.pos)


def parse_conv_window(parser: Parser) -> dict[str, list[int]]:
    """`{stride = [..], pad = [[lo, hi], ..], lhs_dilate = [..], rhs_dilate = [..], reverse
    = [..]}`, every entry optional; `pad` comes back flat (lo, hi, lo, hi, ...)."""
    window: dict[str, list[int]] = {}

    def entry() -> None:
        pos = parser.pos
        key = parser.parse_optional_keyword_in(_WINDOW_KEYS)
        if key is None:
            parser.raise_error("expected one of " + ", ".join(_WINDOW_KEYS), pos)
        parser.parse_punctuation("=")
        if key == "pad":
            pairs = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parse_int_list(parser)
            )
            if any(len(p) != 2 for p in pairs):
                parser.raise_error("pad entries are [low, high] pairs", pos, parser.pos)
            window[key] = [v for p in pairs for v in p]
        elif key == "reverse":
            window[key] = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: int(parser.parse_integer(allow_boolean=True))
            )
        else:
            window[key] = parse_int_list(parser)

    parser.parse_comma_separated_list(parser.Delimiter.BRACES, entry)
    return window


@irdl_op_definition
class ConvolutionOp(HloOp):
    """
    StableHLO's convolution: `%r = hlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1,
    i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]], lhs_dilate = [1,
    1], rhs_dilate = [1, 1], reverse = [false, false]}, feature_group_count = 1,
    batch_group_count = 1 : (tensor<..>, tensor<..>) -> tensor<..>`. Window entries equal to
    their default (stride/dilation 1, no padding, no reversal) and group counts of 1 may be
    left out. Properties hold the dimension numbers as (batch, feature, spatial...) for lhs
    and result and (input feature, output feature, spatial...) for rhs, the padding flat.
    """

    name = "hlo.convolution"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    lhs_dims = prop_def(DenseArrayBase)
    rhs_dims = prop_def(DenseArrayBase)
    out_dims = prop_def(DenseArrayBase)
    window_strides = prop_def(DenseArrayBase)
    padding = prop_def(DenseArrayBase)
    lhs_dilation = prop_def(DenseArrayBase)
    rhs_dilation = prop_def(DenseArrayBase)
    window_reversal = prop_def(DenseArrayBase)
    feature_group_count = prop_def(IntegerAttr[type(i64)])  # pyright: ignore
    batch_group_count = prop_def(IntegerAttr[type(i64)])  # pyright: ignore
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(
        self,
        lhs: SSAValue,
        rhs: SSAValue,
        dims: Sequence[Sequence[int]],
        result_type: TensorType,
        window: dict[str, Sequence[int]] | None = None,
        feature_group_count: int = 1,
        batch_group_count: int = 1,
    ):
        """`dims`: (lhs, rhs, out) dimension lists; `window`: as `parse_conv_window` gives."""
        props = conv_properties(dims, len(dims[0]) - 2, window or {})
        props["feature_group_count"] = i64_attr(feature_group_count)
        props["batch_group_count"] = i64_attr(batch_group_count)
        super().__init__(operands=[lhs, rhs], result_types=[result_type], properties=props)

    lhs_dims_ = property(lambda self: _int_values(self.lhs_dims))
    rhs_dims_ = property(lambda self: _int_values(self.rhs_dims))
    out_dims_ = property(lambda self: _int_values(self.out_dims))
    strides = property(lambda self: _int_values(self.window_strides))
    lhs_dilation_ = property(lambda self: _int_values(self.lhs_dilation))
    rhs_dilation_ = property(lambda self: _int_values(self.rhs_dilation))
    reversal = property(lambda self: _int_values(self.window_reversal))
    feature_groups = property(lambda self: self.feature_group_count.value.data)
    batch_groups = property(lambda self: self.batch_group_count.value.data)

    @property
    def padding_(self) -> list[tuple[int, int]]:
        flat = _int_values(self.padding)
        return [(flat[i], flat[i + 1]) for i in range(0, len(flat) - 1, 2)]

    @property
    def spatial_rank(self) -> int:
        return len(self.lhs_dims_) - 2

    @classmethod
    def parse(cls, parser: Parser) -> ConvolutionOp:
        pos = parser.pos
        parser.parse_punctuation("(")
        operands = [parser.parse_unresolved_operand()]
        parser.parse_punctuation(",")
        operands.append(parser.parse_unresolved_operand())
        parser.parse_punctuation(")")
        parser.parse_keyword("dim_numbers")
        parser.parse_punctuation("=")
        dims = parse_conv_dim_numbers(parser)
        window: dict[str, list[int]] = {}
        groups = {"feature_group_count": 1, "batch_group_count": 1}
        while parser.parse_optional_punctuation(","):
            if parser.parse_optional_keyword("window"):
                parser.parse_punctuation("=")
                window = parse_conv_window(parser)
                continue
            key_pos = parser.pos
            key = parser.parse_optional_keyword_in(tuple(groups))
            if key is None:
                parser.raise_error(
                    "expected window, feature_group_count or batch_group_count", key_pos
                )
            parser.parse_punctuation("=")
            groups[key] = parse_i64(parser)
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_functional_type(parser)
        values = parser.resolve_operands(operands, inputs, pos)
        props = conv_properties(dims, len(dims[0]) - 2, window)
        props |= {k: i64_attr(v) for k, v in groups.items()}
        op = cls.create(operands=values, result_types=outputs, properties=props)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string("(")
        printer.print_list(self.operands, printer.print_operand)
        printer.print_string(
            f") dim_numbers = {conv_labels(self.lhs_dims_, 'bf')}x"
            f"{conv_labels(self.rhs_dims_, 'io')}->{conv_labels(self.out_dims_, 'bf')}"
        )
        n = self.spatial_rank
        entries = []
        if any(s != 1 for s in self.strides):
            entries.append(f"stride = {int_list_str(self.strides)}")
        if any(p != (0, 0) for p in self.padding_):
            entries.append("pad = [" + ", ".join(int_list_str(p) for p in self.padding_) + "]")
        for key, values in (("lhs_dilate", self.lhs_dilation_), ("rhs_dilate", self.rhs_dilation_)):
            if any(v != 1 for v in values):
                entries.append(f"{key} = {int_list_str(values)}")
        if any(self.reversal):
            flags = ", ".join("true" if r else "false" for r in self.reversal)
            entries.append(f"reverse = [{flags}]")
        if entries or n:
            printer.print_string(", window = {" + ", ".join(entries) + "}")
        for key in ("feature_group_count", "batch_group_count"):
            if (value := getattr(self, key).value.data) != 1:
                printer.print_string(f", {key} = {value}")
        printer.print_op_attributes(self.attributes)
        _print_functional_type(printer, self)

    def verify_semantics(self) -> None:
        lhs, rhs, res = _tensor(self.lhs), _tensor(self.rhs), _tensor(self.result)
        for what, ty in (("lhs", lhs), ("rhs", rhs), ("result", res)):
            _check_kind(f"convolution {what}", ty, NUMERIC)
        if lhs.element_type != rhs.element_type:
            raise VerifyException(
                f"operands must share an element type, got {lhs.element_type} and "
                f"{rhs.element_type}"
            )
        if element_kind(res.element_type) != element_kind(lhs.element_type):
            raise VerifyException(
                f"result element type {res.element_type} is not of the operands' kind"
            )
        want = convolution_result_shape(self)
        if list(res.get_shape()) != want:
            raise VerifyException(f"result shape must be {want}, got {list(res.get_shape())}")


def conv_properties(
    dims: Sequence[Sequence[int]], n: int, window: dict[str, Sequence[int]]
) -> dict[str, Attribute]:
    """hlo.convolution's dimension and window properties, defaults filled in."""
    return {
        "lhs_dims": i64_array(dims[0]),
        "rhs_dims": i64_array(dims[1]),
        "out_dims": i64_array(dims[2]),
        "window_strides": i64_array(window.get("stride", [1] * n)),
        "padding": i64_array(window.get("pad", [0] * (2 * n))),
        "lhs_dilation": i64_array(window.get("lhs_dilate", [1] * n)),
        "rhs_dilation": i64_array(window.get("rhs_dilate", [1] * n)),
        "window_reversal": i64_array(window.get("reverse", [0] * n)),
    }


CONVOLUTION_OPS_13 = (ConvolutionOp,)
"""convolution of issue 13 (one block, so that merges stay simple)."""


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
# complex numbers and bitcast_convert                                          #
################################################################################


def _complex_of(ty: Attribute) -> Attribute | None:
    """complex<f32> for f32, complex<f64> for f64, else None."""
    if isinstance(ty, Float32Type | Float64Type):
        return ComplexType(ty)
    return None


def _part_type(ty: TensorType) -> TensorType:
    """The real type of a complex (or float) tensor's parts: complex<f32> -> f32."""
    elem = ty.element_type
    part = elem.element_type if isinstance(elem, ComplexType) else elem
    return TensorType(part, ty.get_shape())


@irdl_op_definition
class ComplexOp(HloOp):
    """
    `%c = hlo.complex %re, %im : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xcomplex<f32>>`:
    the complex number re + i * im, element-wise (StableHLO's complex).
    """

    name = "hlo.complex"

    T: ClassVar = VarConstraint("T", TensorType.constr())
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        ty = _tensor(lhs)
        elem = _complex_of(ty.element_type)
        assert elem is not None, ty
        super().__init__(operands=[lhs, rhs], result_types=[TensorType(elem, ty.get_shape())])

    def verify_semantics(self) -> None:
        ty = _tensor(self.lhs)
        elem = _complex_of(ty.element_type)
        if elem is None:
            raise VerifyException(f"operands must be f32 or f64 tensors, got {ty}")
        want = TensorType(elem, ty.get_shape())
        if self.result.type != want:
            raise VerifyException(f"result must be {want}, got {self.result.type}")


class ComplexPartOp(HloOp, ABC):
    """`hlo.real` / `hlo.imag`: one part of a complex tensor (of a float: itself / zeros)."""

    operand = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$operand attr-dict `:` functional-type($operand, $result)"

    def __init__(self, operand: SSAValue):
        super().__init__(operands=[operand], result_types=[_part_type(_tensor(operand))])

    def verify_semantics(self) -> None:
        ty = _tensor(self.operand)
        _check_kind(self.name, ty, FLOAT_OR_COMPLEX)
        want = _part_type(ty)
        if self.result.type != want:
            raise VerifyException(f"result must be {want}, got {self.result.type}")


@irdl_op_definition
class RealOp(ComplexPartOp):
    """`%r = hlo.real %c : (tensor<4xcomplex<f32>>) -> tensor<4xf32>`: the real part."""

    name = "hlo.real"


@irdl_op_definition
class ImagOp(ComplexPartOp):
    """`%i = hlo.imag %c : (tensor<4xcomplex<f32>>) -> tensor<4xf32>`: the imaginary part."""

    name = "hlo.imag"


def bit_width(ty: Attribute) -> int:
    """Bits of one element of an hlo element type (i1: 1; complex: both parts)."""
    if isinstance(ty, IntegerType):
        return ty.width.data
    if isinstance(ty, ComplexType):
        return 2 * bit_width(ty.element_type)
    assert element_kind(ty) == FLOAT, ty
    return ty.bitwidth  # pyright: ignore[reportAttributeAccessIssue]


@irdl_op_definition
class BitcastConvertOp(HloOp):
    """
    `%r = hlo.bitcast_convert %a : (tensor<4xf32>) -> tensor<4xi32>`: the same bits read
    as another type (StableHLO's bitcast_convert, little-endian as XLA's CPU and TPU
    backends). Between types of one width the shape is kept; from a wider type the result
    has an extra last dimension of size ratio (f32 -> 4 x ui8); to a wider type the
    operand's last dimension, of size ratio, is dropped. i1 is not bitcast, and sub-byte
    integers only to types of their own width.
    """

    name = "hlo.bitcast_convert"

    operand = operand_def(TensorType)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    assembly_format = "$operand attr-dict `:` functional-type($operand, $result)"

    def __init__(self, operand: SSAValue, result_type: TensorType):
        super().__init__(operands=[operand], result_types=[result_type])

    def verify_semantics(self) -> None:
        src, res = _tensor(self.operand), _tensor(self.result)
        for ty in (src, res):
            if element_kind(ty.element_type) == BOOL:
                raise VerifyException(f"i1 cannot be bitcast: {src} -> {res}")
        a, b = bit_width(src.element_type), bit_width(res.element_type)
        if a != b and min(a, b) < 8:
            raise VerifyException(
                f"sub-byte types bitcast only to types of their width: {src} -> {res}"
            )
        shape, want = list(src.get_shape()), list(res.get_shape())
        if a > b:
            shape = [*shape, a // b]
        elif a < b:
            if not shape or shape[-1] != b // a:
                raise VerifyException(
                    f"to a type {b // a} times wider, the operand's last dimension must be "
                    f"{b // a}: {src} -> {res}"
                )
            shape = shape[:-1]
        if shape != want:
            raise VerifyException(f"result shape must be {shape}, got {want}: {src} -> {res}")

    def extra_dim(self) -> int:
        """+1: the result has an extra last dim; -1: the operand has; 0: neither."""
        a = bit_width(_tensor(self.operand).element_type)
        b = bit_width(_tensor(self.result).element_type)
        return (a > b) - (a < b)


TYPE_OPS_13: tuple[type[HloOp], ...] = (ComplexOp, RealOp, ImagOp, BitcastConvertOp)
"""The ops of issue 13's element types (one block, so that merges stay simple)."""


################################################################################
# gather and scatter                                                           #
################################################################################

SCATTER_KINDS = ("add", "mul", "max", "min", "replace")
"""scatter's update computation, named as `hlo.reduce` names its combiner."""


def _parse_dim_numbers(
    parser: Parser, lists: Sequence[str], ints: Sequence[str], flags: Sequence[str]
) -> dict[str, Attribute]:
    """
    `, key = [..]`, `, key = 3` and `, flag` items in any order (after the operands), as
    properties; a list key left out is empty, an int key is required.
    """
    props: dict[str, Attribute] = {}
    while parser.parse_optional_punctuation(","):
        pos = parser.pos
        key = parser.parse_identifier()
        if key in props:
            parser.raise_error(f"{key} is given twice", pos, parser.pos)
        if key in flags:
            props[key] = UnitAttr()
            continue
        if key not in (*lists, *ints):
            parser.raise_error(
                f"expected one of {', '.join((*lists, *ints, *flags))}, got {key!r}", pos
            )
        parser.parse_punctuation("=")
        props[key] = (
            i64_array(parse_int_list(parser)) if key in lists else i64_attr(parse_i64(parser))
        )
    for key in lists:
        props.setdefault(key, i64_array([]))
    for key in ints:
        if key not in props:
            parser.raise_error(f"expected `{key} = N`")
    return props


def _print_dim_numbers(
    printer: Printer, op: IRDLOperation, lists: Sequence[str], required: Sequence[str]
) -> None:
    """The inverse of `_parse_dim_numbers` (empty optional lists left out)."""
    for key in lists:
        values = _int_values(op.properties[key])  # pyright: ignore[reportArgumentType]
        if values or key in required:
            printer.print_string(f", {key} = {int_list_str(values)}")
    for key, attr in op.properties.items():
        if isinstance(attr, IntegerAttr):
            printer.print_string(f", {key} = {attr.value.data}")
    for key, attr in op.properties.items():
        if isinstance(attr, UnitAttr):
            printer.print_string(f", {key}")


def _check_dims(what: str, dims: Sequence[int], bound: int, sort: bool = True) -> None:
    """`dims` are distinct, in [0, bound) and (if `sort`) ascending."""
    if len(set(dims)) != len(dims):
        raise VerifyException(f"{what} {list(dims)} must be distinct")
    if sort and list(dims) != sorted(dims):
        raise VerifyException(f"{what} {list(dims)} must be sorted")
    for d in dims:
        if not 0 <= d < bound:
            raise VerifyException(f"{what}: dimension {d} is out of range [0, {bound})")


def _check_batching(
    op_dims: Sequence[int],
    idx_dims: Sequence[int],
    names: tuple[str, str],
    operand: Sequence[int],
    indices: Sequence[int],
    index_vector_dim: int,
) -> None:
    """Operand batching dims pair with index batching dims of the same size."""
    _check_dims(names[1], idx_dims, len(indices), sort=False)
    if index_vector_dim in idx_dims:
        raise VerifyException(f"{names[1]} must not contain index_vector_dim {index_vector_dim}")
    if len(op_dims) != len(idx_dims):
        raise VerifyException(f"{names[0]} and {names[1]} must have the same length")
    for a, b in zip(op_dims, idx_dims, strict=True):
        if operand[a] != indices[b]:
            raise VerifyException(
                f"{names[0]} dimension {a} (size {operand[a]}) and {names[1]} dimension {b} "
                f"(size {indices[b]}) must have the same size"
            )


def _check_index_map(
    what: str, dims: Sequence[int], indices: Sequence[int], ivd: int, rank: int
) -> None:
    if not 0 <= ivd <= len(indices):
        raise VerifyException(f"index_vector_dim {ivd} is out of range [0, {len(indices)}]")
    count = indices[ivd] if ivd < len(indices) else 1
    if len(dims) != count:
        raise VerifyException(
            f"{what} has {len(dims)} entries but the index vector (indices dimension {ivd}) "
            f"has {count}"
        )
    _check_dims(what, dims, rank, sort=False)


def index_batch_shape(indices: Sequence[int], index_vector_dim: int) -> list[int]:
    """The indices' shape without the index vector dimension."""
    return [s for d, s in enumerate(indices) if d != index_vector_dim]


def gather_result_shape(
    indices: Sequence[int],
    offset_dims: Sequence[int],
    collapsed: Sequence[int],
    operand_batching: Sequence[int],
    index_vector_dim: int,
    slice_sizes: Sequence[int],
) -> list[int]:
    """StableHLO gather's result shape: batch dims of the indices, offset dims from the slice."""
    batch = index_batch_shape(indices, index_vector_dim)
    offsets = [
        s for d, s in enumerate(slice_sizes) if d not in collapsed and d not in operand_batching
    ]
    out: list[int] = []
    for r in range(len(batch) + len(offsets)):
        out.append(offsets.pop(0) if (r in offset_dims and offsets) or not batch else batch.pop(0))
    return out


class _DimensionNumbers:
    """What gather and scatter share: their list dimension numbers and index_vector_dim."""

    def dims(self, key: str) -> tuple[int, ...]:
        """One of the list dimension numbers (`LISTS`) as a tuple."""
        return _int_values(self.properties[key])  # pyright: ignore

    @property
    def ivd(self) -> int:
        return self.index_vector_dim.value.data  # pyright: ignore


@irdl_op_definition
class GatherOp(_DimensionNumbers, HloOp):
    """
    StableHLO's gather with its dimension numbers as properties: `%r = hlo.gather %table,
    %ids, offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0],
    index_vector_dim = 1, slice_sizes = [1, 4] : (tensor<8x4xf32>, tensor<3x1xi32>) ->
    tensor<3x4xf32>` (an embedding lookup). Start indices are clamped so the slice fits.
    """

    name = "hlo.gather"

    operand = operand_def(TensorType)
    start_indices = operand_def(TensorType)
    offset_dims = prop_def(DenseArrayBase)
    collapsed_slice_dims = prop_def(DenseArrayBase)
    operand_batching_dims = prop_def(DenseArrayBase)
    start_indices_batching_dims = prop_def(DenseArrayBase)
    start_index_map = prop_def(DenseArrayBase)
    index_vector_dim = prop_def(IntegerAttr[type(i64)])  # pyright: ignore
    slice_sizes = prop_def(DenseArrayBase)
    indices_are_sorted = opt_prop_def(UnitAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    LISTS: ClassVar = (
        "offset_dims",
        "collapsed_slice_dims",
        "operand_batching_dims",
        "start_indices_batching_dims",
        "start_index_map",
        "slice_sizes",
    )
    REQUIRED: ClassVar = ("offset_dims", "collapsed_slice_dims", "start_index_map", "slice_sizes")

    def __init__(
        self,
        operand: SSAValue,
        start_indices: SSAValue,
        dims: dict[str, Sequence[int]],
        index_vector_dim: int,
        sorted_indices: bool = False,
    ):
        props: dict[str, Attribute] = {k: i64_array(dims.get(k, ())) for k in self.LISTS}
        props["index_vector_dim"] = i64_attr(index_vector_dim)
        if sorted_indices:
            props["indices_are_sorted"] = UnitAttr()
        shape = gather_result_shape(
            _shape(start_indices),
            dims.get("offset_dims", ()),
            dims.get("collapsed_slice_dims", ()),
            dims.get("operand_batching_dims", ()),
            index_vector_dim,
            dims.get("slice_sizes", ()),
        )
        super().__init__(
            operands=[operand, start_indices],
            result_types=[TensorType(_tensor(operand).element_type, shape)],
            properties=props,
        )

    @classmethod
    def parse(cls, parser: Parser) -> GatherOp:
        pos = parser.pos
        operands = [parser.parse_unresolved_operand()]
        parser.parse_punctuation(",")
        operands.append(parser.parse_unresolved_operand())
        props = _parse_dim_numbers(
            parser, cls.LISTS, ("index_vector_dim",), ("indices_are_sorted",)
        )
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_functional_type(parser)
        values = parser.resolve_operands(operands, inputs, pos)
        op = cls.create(operands=values, result_types=outputs, properties=props)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        _print_dim_numbers(printer, self, self.LISTS, self.REQUIRED)
        printer.print_op_attributes(self.attributes)
        _print_functional_type(printer, self)

    def verify_semantics(self) -> None:
        src, idx, res = _tensor(self.operand), _tensor(self.start_indices), _tensor(self.result)
        operand, indices = src.get_shape(), idx.get_shape()
        _check_kind("start indices", idx, frozenset({INT}))
        if res.element_type != src.element_type:
            raise VerifyException(
                f"result element type {res.element_type} must be the operand's {src.element_type}"
            )
        sizes, rank = self.dims("slice_sizes"), len(operand)
        if len(sizes) != rank:
            raise VerifyException(f"slice_sizes has {len(sizes)} entries, the operand rank {rank}")
        for d, (s, n) in enumerate(zip(sizes, operand, strict=True)):
            if not 0 <= s <= n:
                raise VerifyException(f"slice_sizes[{d}] = {s} must be in [0, {n}]")
        collapsed, batching = self.dims("collapsed_slice_dims"), self.dims("operand_batching_dims")
        _check_dims("collapsed_slice_dims", collapsed, rank)
        _check_dims("operand_batching_dims", batching, rank)
        for d in (*collapsed, *batching):
            if d in collapsed and d in batching:
                raise VerifyException(f"dimension {d} is both collapsed and a batching dimension")
            if sizes[d] > 1:
                raise VerifyException(
                    f"slice_sizes[{d}] = {sizes[d]} must be <= 1 (collapsed or batching dimension)"
                )
        _check_batching(
            batching,
            self.dims("start_indices_batching_dims"),
            ("operand_batching_dims", "start_indices_batching_dims"),
            operand,
            indices,
            self.ivd,
        )
        start_map = self.dims("start_index_map")
        _check_index_map("start_index_map", start_map, indices, self.ivd, rank)
        if set(start_map) & set(batching):
            raise VerifyException("start_index_map must not contain operand_batching_dims")
        offset_dims = self.dims("offset_dims")
        _check_dims("offset_dims", offset_dims, res.get_num_dims())
        if len(offset_dims) != rank - len(collapsed) - len(batching):
            raise VerifyException(
                f"offset_dims has {len(offset_dims)} entries, expected the operand rank minus "
                f"the collapsed and batching dimensions ({rank - len(collapsed) - len(batching)})"
            )
        want = gather_result_shape(indices, offset_dims, collapsed, batching, self.ivd, sizes)
        if list(res.get_shape()) != want:
            raise VerifyException(
                f"result shape must be {want} (batch dimensions of the indices, offset "
                f"dimensions of the slice), got {list(res.get_shape())}"
            )


@irdl_op_definition
class ScatterOp(_DimensionNumbers, HloOp):
    """
    StableHLO's scatter with its update computation named (`add mul max min replace`,
    as `hlo.reduce` names its combiner) instead of a region: `%r = hlo.scatter add %table,
    %ids, %rows, update_window_dims = [1], inserted_window_dims = [0],
    scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : (tensor<8x4xf32>,
    tensor<3x1xi32>, tensor<3x4xf32>) -> tensor<8x4xf32>`. A window out of bounds is
    skipped; updates to one element are all applied (duplicates add up for `add`).
    """

    name = "hlo.scatter"

    operand = operand_def(TensorType)
    scatter_indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    kind = prop_def(StringAttr)
    update_window_dims = prop_def(DenseArrayBase)
    inserted_window_dims = prop_def(DenseArrayBase)
    input_batching_dims = prop_def(DenseArrayBase)
    scatter_indices_batching_dims = prop_def(DenseArrayBase)
    scatter_dims_to_operand_dims = prop_def(DenseArrayBase)
    index_vector_dim = prop_def(IntegerAttr[type(i64)])  # pyright: ignore
    indices_are_sorted = opt_prop_def(UnitAttr)
    unique_indices = opt_prop_def(UnitAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    LISTS: ClassVar = (
        "update_window_dims",
        "inserted_window_dims",
        "input_batching_dims",
        "scatter_indices_batching_dims",
        "scatter_dims_to_operand_dims",
    )
    REQUIRED: ClassVar = (
        "update_window_dims",
        "inserted_window_dims",
        "scatter_dims_to_operand_dims",
    )

    def __init__(
        self,
        kind: str,
        operands: Sequence[SSAValue],
        dims: dict[str, Sequence[int]],
        index_vector_dim: int,
        flags: Sequence[str] = (),
    ):
        props: dict[str, Attribute] = {k: i64_array(dims.get(k, ())) for k in self.LISTS}
        props["kind"] = StringAttr(kind)
        props["index_vector_dim"] = i64_attr(index_vector_dim)
        for flag in flags:
            props[flag] = UnitAttr()
        super().__init__(operands=list(operands), result_types=[operands[0].type], properties=props)

    def window_sizes(self) -> list[int]:
        """The update window's size along each operand dimension (1 where inserted)."""
        upd = _shape(self.updates)
        window = [upd[d] for d in self.dims("update_window_dims")]
        skipped = {*self.dims("inserted_window_dims"), *self.dims("input_batching_dims")}
        return [1 if d in skipped else window.pop(0) for d in range(len(_shape(self.operand)))]

    @classmethod
    def parse(cls, parser: Parser) -> ScatterOp:
        kind_pos = parser.pos
        kind = parser.parse_optional_identifier()
        if kind not in SCATTER_KINDS:
            parser.raise_error("expected a scatter kind: " + ", ".join(SCATTER_KINDS), kind_pos)
        pos = parser.pos
        operands = [parser.parse_unresolved_operand()]
        for _ in range(2):
            parser.parse_punctuation(",")
            operands.append(parser.parse_unresolved_operand())
        props = _parse_dim_numbers(
            parser, cls.LISTS, ("index_vector_dim",), ("indices_are_sorted", "unique_indices")
        )
        props["kind"] = StringAttr(kind)
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_functional_type(parser)
        values = parser.resolve_operands(operands, inputs, pos)
        op = cls.create(operands=values, result_types=outputs, properties=props)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        printer.print_list(self.operands, printer.print_operand)
        _print_dim_numbers(printer, self, self.LISTS, self.REQUIRED)
        printer.print_op_attributes(self.attributes)
        _print_functional_type(printer, self)

    def verify_semantics(self) -> None:
        if self.kind.data not in SCATTER_KINDS:
            raise VerifyException(
                f"unknown scatter kind {self.kind.data!r} (expected {', '.join(SCATTER_KINDS)})"
            )
        src, idx, upd = (_tensor(v) for v in self.operands)
        _check_kind("scatter indices", idx, frozenset({INT}))
        if self.result.type != src:
            raise VerifyException(
                f"result must be the operand's type {src}, got {self.result.type}"
            )
        if upd.element_type != src.element_type:
            raise VerifyException(
                f"updates element type {upd.element_type} must be the operand's {src.element_type}"
            )
        self._verify_dims(src.get_shape(), idx.get_shape(), upd.get_shape())

    def _verify_dims(
        self, operand: Sequence[int], indices: Sequence[int], updates: Sequence[int]
    ) -> None:
        rank = len(operand)
        window_dims = self.dims("update_window_dims")
        inserted, batching = self.dims("inserted_window_dims"), self.dims("input_batching_dims")
        _check_dims("update_window_dims", window_dims, len(updates))
        _check_dims("inserted_window_dims", inserted, rank)
        _check_dims("input_batching_dims", batching, rank)
        if set(inserted) & set(batching):
            raise VerifyException("inserted_window_dims and input_batching_dims must be disjoint")
        if len(window_dims) + len(inserted) + len(batching) != rank:
            raise VerifyException(
                f"update_window_dims ({len(window_dims)}) + inserted_window_dims "
                f"({len(inserted)}) + input_batching_dims ({len(batching)}) must be the "
                f"operand rank {rank}"
            )
        _check_batching(
            batching,
            self.dims("scatter_indices_batching_dims"),
            ("input_batching_dims", "scatter_indices_batching_dims"),
            operand,
            indices,
            self.ivd,
        )
        to_operand = self.dims("scatter_dims_to_operand_dims")
        _check_index_map("scatter_dims_to_operand_dims", to_operand, indices, self.ivd, rank)
        if set(to_operand) & set(batching):
            raise VerifyException(
                "scatter_dims_to_operand_dims must not contain input_batching_dims"
            )
        scatter_shape = [s for d, s in enumerate(updates) if d not in window_dims]
        if scatter_shape != index_batch_shape(indices, self.ivd):
            raise VerifyException(
                f"updates' scatter dimensions {scatter_shape} must be the indices' shape "
                f"without index_vector_dim {index_batch_shape(indices, self.ivd)}"
            )
        for d, (w, n) in enumerate(zip(self.window_sizes(), operand, strict=True)):
            if w > n:
                raise VerifyException(
                    f"the update window ({w}) is larger than operand dimension {d} ({n})"
                )


GATHER_SCATTER_OPS_13 = (GatherOp, ScatterOp)
"""gather and scatter of issue 13 (one block, so that merges stay simple)."""


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
        names, operands, types, attrs = parse_while_header(parser)
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


################################################################################
# rng_bit_generator (issue 13)                                                 #
################################################################################

RNG_ALGORITHMS = ("DEFAULT", "THREE_FRY", "PHILOX")
"""StableHLO's `rng_algorithm`s. DEFAULT is XLA's CPU/GPU default, PHILOX."""


def rng_split_dim(shape: Sequence[int]) -> int:
    """
    XLA's SplitShapeIntoHalves: the dimension a Threefry output's 32-bit elements are
    split along (the first even one, else the first largest), the two halves taking a
    counter's two words. Here, with the op, because the interpreter
    (interpreter/hlo_random.py), the cost model and the lowering all need it.
    """
    for i, d in enumerate(shape):
        if d % 2 == 0:
            return i
    return max(range(len(shape)), key=lambda i: (shape[i], -i))


@irdl_op_definition
class RngBitGeneratorOp(HloOp):
    """
    StableHLO's rng_bit_generator: `%s, %b = hlo.rng_bit_generator %state, algorithm =
    THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<8x16xui32>)`: random bits
    of an integer type and the next state, bit-exact with XLA's CPU implementation
    (`RngBitGeneratorExpander`: key = state[0], counter = the rest).
    """

    name = "hlo.rng_bit_generator"

    initial_state = operand_def(TensorType)
    rng_algorithm = prop_def(StringAttr)
    output_state = result_def(TensorType)
    output = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, state: SSAValue, algorithm: str, output_type: Attribute):
        super().__init__(
            operands=[state],
            result_types=[state.type, output_type],
            properties={"rng_algorithm": StringAttr(algorithm)},
        )

    @property
    def algorithm(self) -> str:
        return self.rng_algorithm.data

    @classmethod
    def parse(cls, parser: Parser) -> RngBitGeneratorOp:
        pos = parser.pos
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        parser.parse_keyword("algorithm")
        parser.parse_punctuation("=")
        algorithm = parser.parse_identifier()
        attrs = parser.parse_optional_attr_dict()
        inputs, outputs = _parse_functional_type(parser)
        (state,) = parser.resolve_operands([operand], inputs, pos)
        props: dict[str, Attribute] = {"rng_algorithm": StringAttr(algorithm)}
        op = cls.create(operands=[state], result_types=outputs, properties=props)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.initial_state)
        printer.print_string(f", algorithm = {self.algorithm}")
        printer.print_op_attributes(self.attributes)
        _print_functional_type(printer, self)

    def verify_semantics(self) -> None:
        if self.algorithm not in RNG_ALGORITHMS:
            raise VerifyException(
                f"algorithm must be one of {', '.join(RNG_ALGORITHMS)}, got {self.algorithm!r}"
            )
        state = _tensor(self.initial_state)
        ui64 = is_unsigned(state.element_type) and state.element_type.width.data == 64  # pyright: ignore
        if not ui64 or state.get_num_dims() != 1:
            raise VerifyException(f"initial_state must be a rank-1 ui64 tensor, got {state}")
        sizes = (2,) if self.algorithm == "THREE_FRY" else (2, 3)
        if state.get_shape()[0] not in sizes:
            want = " or ".join(map(str, sizes))
            raise VerifyException(
                f"{self.algorithm} needs a state of {want} ui64 values, got {state}"
            )
        if self.output_state.type != state:
            raise VerifyException(
                f"output_state must have the type of initial_state ({state}), "
                f"got {self.output_state.type}"
            )
        out = _tensor(self.output)
        if element_kind(out.element_type) != INT:
            raise VerifyException(
                f"output must be an integer tensor (floats are not supported), got {out}"
            )


RANDOM_OPS_13 = (RngBitGeneratorOp,)
"""rng_bit_generator of issue 13 (one block, so that merges stay simple)."""


################################################################################
# Fused ops (issue 14): hlo.fusion                                             #
################################################################################

FUSION_KINDS = ("loop", "input", "output")
"""XLA's kLoop (elementwise chains), kInput (a reduce with its producers) and kOutput
(a dot or convolution with its epilogue)."""


@irdl_op_definition
class FusionOp(HloOp):
    """
    Several hlo ops run as one kernel, as XLA fuses them: `%r = hlo.fusion(%p0 = %x, %p1 =
    %y) kind = loop, name = "multiply_add_fusion" : (tensor<4xf32>, tensor<4xf32>) ->
    tensor<4xf32> { ... hlo.return %v : tensor<4xf32> }`. The operands are the values
    entering the fusion, the block's arguments stand for them (the region is isolated
    from above), the results are what its `hlo.return` gives. Only what crosses that
    boundary touches HBM, which is why the cost model charges a fusion by its operand and
    result bytes. `kind` is XLA's (`loop`, `input`, `output`), `name` the fusion's name
    after its root, as XLA names them, so a profile reads like XLA's. Inside: hlo ops
    without regions only (no collectives, spmd or tpu ops, no nested fusion).
    """

    name = "hlo.fusion"

    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    kind = prop_def(StringAttr)
    fusion_name = prop_def(StringAttr)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove())

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
        kind: str,
        fusion_name: str,
    ):
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            regions=[body],
            properties={"kind": StringAttr(kind), "fusion_name": StringAttr(fusion_name)},
        )

    @property
    def label(self) -> str:
        """The fusion's name (`multiply_add_fusion.1`)."""
        return self.fusion_name.data

    @classmethod
    def parse(cls, parser: Parser) -> FusionOp:
        pos = parser.pos
        names, operands = parse_bound_operands(parser)
        parser.parse_keyword("kind")
        parser.parse_punctuation("=")
        kind = parser.parse_identifier()
        parser.parse_punctuation(",")
        parser.parse_keyword("name")
        parser.parse_punctuation("=")
        label = parser.parse_str_literal()
        attrs = parser.parse_optional_attr_dict_with_keyword()
        inputs, outputs = _parse_functional_type(parser)
        values = parser.resolve_operands(operands, inputs, pos)
        body = parser.parse_region([n.resolve(t) for n, t in zip(names, inputs, strict=True)])
        op = cls(values, outputs, body, kind, label)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        args = self.body.block.args if self.body.blocks else ()
        printer.print_string("(")
        for i, value in enumerate(self.inputs):
            if i:
                printer.print_string(", ")
            if i < len(args):
                printer.print_ssa_value(args[i])
            printer.print_string(" = ")
            printer.print_operand(value)
        printer.print_string(f") kind = {self.kind.data}, name = ")
        printer.print_string_literal(self.label)
        printer.print_op_attributes(self.attributes, print_keyword=True)
        _print_functional_type(printer, self)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    def verify_semantics(self) -> None:
        if self.kind.data not in FUSION_KINDS:
            raise VerifyException(
                f"kind must be one of {', '.join(FUSION_KINDS)}, got {self.kind.data!r}"
            )
        if not self.label:
            raise VerifyException("a fusion needs a name")
        if not self.body.blocks:
            raise VerifyException("the fusion's region must have a block")
        types = list(self.inputs.types)
        args = list(self.body.block.arg_types)
        if args != types:
            raise VerifyException(
                f"block arguments {_types_str(args)} must have the operands' types "
                f"{_types_str(types)}"
            )
        ret = _region_return(self.body, "the fusion's region")
        if list(ret.values.types) != list(self.outputs.types):
            raise VerifyException(
                f"the region must return the result types {_types_str(self.outputs.types)}, "
                f"got {_types_str(ret.values.types)}"
            )
        for inner in self.body.block.ops:
            if inner is ret:
                continue
            if inner.dialect_name() != "hlo" or inner.regions or isinstance(inner, ReturnOp):
                raise VerifyException(
                    f"{inner.name} cannot be fused: a fusion holds hlo ops without regions "
                    "(no collectives, spmd or tpu ops, no nested fusion)"
                )


FUSION_OPS_14 = (FusionOp,)
"""hlo.fusion of issue 14 (one block, so that merges stay simple)."""


def verify_function_element_types(function: FuncOp) -> None:
    """A function's tensor and buffer arguments have element types shardc supports. An
    op's verifier checks the values it takes (its message is the more precise one), so
    this checks the arguments no op takes: passed straight through to the results, or
    unused, they would reach the runner and the lowering unchecked."""
    if not function.body.blocks:
        return
    for i, arg in enumerate(function.body.block.args):
        ty = arg.type
        if not isinstance(ty, TensorType | MemRefType) or element_kind(ty.element_type):
            continue
        if all(use.operation is function.body.block.last_op for use in arg.uses):
            raise VerifyException(
                f"argument {i} of @{function.sym_name.data} has element type "
                f"{ty.element_type}, which shardc does not support ({SUPPORTED_TYPES})"
            )


register_module_check(FuncOp, verify_function_element_types)  # type: ignore[arg-type]

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
        *CONVOLUTION_OPS_13,
        *CHLO_OPS_13,
        *DEVICE_ID_OPS_13,
        *TYPE_OPS_13,
        *WINDOW_OPS_13,
        ReturnOp,
        *GATHER_SCATTER_OPS_13,
        *CONTROL_OPS_13,
        *RANDOM_OPS_13,
        *FUSION_OPS_14,
    ],
    [],
)
