"""
The `collective` dialect: per-device communication at level S.

A collective names its device groups by mesh axes (`on @mesh["model"]`: the devices that
share every other coordinate form a group) or explicitly (`on groups [[0, 1], [2, 3]]`).
all_reduce, all_gather and reduce_scatter are variadic: several operands form one combined
collective. Every sync op has a `_start` form whose results are wrapped in one
`!collective.future<...>`, consumed by exactly one `collective.done`.

```mlir
%r = collective.all_reduce add %x on @mesh["model"] : tensor<8x32xf32>
%r = collective.all_gather %x on @mesh["model"], dim = 1 : (tensor<8x8xf32>) -> tensor<8x32xf32>
%f = collective.permute_start %x on @ring["x"], shift = 1 : tensor<8xf32> -> !collective.future<tensor<8xf32>>
%p = collective.done %f : !collective.future<tensor<8xf32>> -> tensor<8xf32>
```
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from shardc.dialects.spmd import (
    GroupSpecOp,
    group_spec_str,
    lookup_mesh,
    parse_group_spec_after_on,
    verify_explicit_groups,
    verify_group_axes,
)
from shardc.dialects.syntax import (
    i64_array,
    i64_attr,
    int_list_str,
    parse_i64,
    parse_int_list,
)
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntegerAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.pattern_rewriter import RewritePattern
from xdsl.printer import Printer
from xdsl.traits import HasCanonicalizationPatternsTrait, Pure
from xdsl.utils.exceptions import VerifyException

REDUCTION_KINDS = ("add", "mul", "max", "min")

################################################################################
# Types                                                                        #
################################################################################


@irdl_attr_definition
class FutureType(ParametrizedAttribute, TypeAttribute):
    """The pending results of a `_start` collective: `!collective.future<T1, T2>`."""

    name = "collective.future"

    types: ArrayAttr[TensorType]

    def __init__(self, types: Sequence[TensorType]):
        super().__init__(ArrayAttr(types))

    @property
    def value_types(self) -> tuple[TensorType, ...]:
        return tuple(self.types.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        def parse_tensor_type() -> Attribute:
            pos = parser.pos
            t = parser.parse_type()
            if not isinstance(t, TensorType):
                parser.raise_error(f"a future holds tensors, got {t}", pos, parser.pos)
            return t

        types = parser.parse_comma_separated_list(parser.Delimiter.ANGLE, parse_tensor_type)
        return (ArrayAttr(types),)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_list(self.value_types, printer.print_attribute)


class CollectiveHasCanonicalizationPatterns(HasCanonicalizationPatternsTrait):
    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from shardc.passes.canonicalization_patterns.collective import RemoveTrivialCollective

        return (RemoveTrivialCollective(),)


################################################################################
# Groups                                                                       #
################################################################################


class CollectiveOp(GroupSpecOp, ABC):
    """
    Base of every collective: the `on @mesh[axes]` / `on groups [[..]]` part (shared with
    `tpu.barrier` through `GroupSpecOp`), its verification, and the device groups it
    denotes (one place for all passes).
    """

    IS_START: ClassVar[bool] = False
    """True for the `_start` forms, whose one result is a future."""

    def device_groups(self) -> list[list[int]]:
        """Every group as device ids in rank order."""
        groups = self.spec_groups()
        assert groups is not None
        return groups

    def group_size(self) -> int:
        explicit = self.explicit_groups
        if explicit is not None:
            return len(explicit[0]) if explicit else 1
        assert self.mesh is not None
        mesh = lookup_mesh(self, self.mesh.root_reference.data)
        size = 1
        for a in self.axes:
            size *= mesh.axis_size(a)
        return size

    def value_types(self) -> tuple[TensorType, ...]:
        """The types this collective produces (unwrapped from the future for `_start`)."""
        if self.IS_START:
            future = self.results[0].type
            assert isinstance(future, FutureType)
            return future.value_types
        return tuple(r.type for r in self.results)  # pyright: ignore

    def input_types(self) -> tuple[TensorType, ...]:
        return tuple(o.type for o in self.operands)  # pyright: ignore

    def verify_groups(self) -> None:
        explicit = self.explicit_groups
        if (self.mesh is None) == (explicit is None):
            raise VerifyException("a collective needs either `on @mesh[...]` or `on groups`")
        if explicit is not None:
            verify_explicit_groups(self, explicit)
        else:
            assert self.mesh is not None
            verify_group_axes(self, self.mesh.root_reference.data, self.axes)

    def verify_(self) -> None:
        self.verify_groups()
        if self.IS_START and not isinstance(self.results[0].type, FutureType):
            raise VerifyException("a _start collective produces one !collective.future")
        self.verify_types(self.group_size())

    def verify_types(self, group_size: int) -> None:
        """Check result types against operand types for a group of `group_size`."""
        raise NotImplementedError

    # Syntax ----------------------------------------------------------------------

    @classmethod
    def parse_group_spec(cls, parser: Parser) -> dict[str, Attribute]:
        """Parse `on @mesh["a", "b"]` or `on groups [[0, 1], [2, 3]]`."""
        parser.parse_keyword("on")
        return parse_group_spec_after_on(parser)

    def group_spec_str(self) -> str:
        mesh = self.mesh.root_reference.data if self.mesh is not None else None
        return "on " + group_spec_str(mesh, self.axes, self.explicit_groups)

    @classmethod
    def parse_operand_list(cls, parser: Parser) -> list[UnresolvedOperand]:
        """`%a, %b` up to the `on` keyword."""
        operands = [parser.parse_unresolved_operand()]
        while parser.parse_optional_punctuation(","):
            operands.append(parser.parse_unresolved_operand())
        return operands

    def print_operand_list(self, printer: Printer) -> None:
        printer.print_list(self.operands, printer.print_operand)


def _tensor(ty: Attribute) -> TensorType:
    if not isinstance(ty, TensorType):
        raise VerifyException(f"expected a tensor type, got {ty}")
    return ty


def _check_dim(dim: int, ty: TensorType, what: str) -> None:
    if not 0 <= dim < ty.get_num_dims():
        raise VerifyException(f"{what} {dim} is out of range for {ty}")


def _with_dim(ty: TensorType, dim: int, size: int) -> TensorType:
    shape = list(ty.get_shape())
    shape[dim] = size
    return TensorType(ty.element_type, shape)


def _expect_types(got: Sequence[Attribute], want: Sequence[Attribute]) -> None:
    if len(got) != len(want):
        raise VerifyException(f"expected {len(want)} results, got {len(got)}")
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            raise VerifyException(f"result {i} must have type {w}, got {g}")


def _parse_kind(parser: Parser) -> StringAttr:
    pos = parser.pos
    kind = parser.parse_optional_identifier()
    if kind not in REDUCTION_KINDS:
        parser.raise_error("expected a reduction kind: " + ", ".join(REDUCTION_KINDS), pos)
    return StringAttr(kind)


def _verify_kind(kind: StringAttr) -> None:
    if kind.data not in REDUCTION_KINDS:
        raise VerifyException(
            f'unknown reduction kind "{kind.data}" (expected {", ".join(REDUCTION_KINDS)})'
        )


def _parse_keyword_int(parser: Parser, keyword: str) -> IntegerAttr:
    parser.parse_punctuation(",")
    parser.parse_keyword(keyword)
    parser.parse_punctuation("=")
    return i64_attr(parse_i64(parser))


def _future_or(types: Sequence[Attribute], IS_START: bool) -> list[Attribute]:
    if IS_START:
        return [FutureType([_tensor(t) for t in types])]
    return list(types)


def _parse_types_colon_form(
    parser: Parser, IS_START: bool
) -> tuple[list[Attribute], list[Attribute]]:
    """`: T1, T2` (sync) or `: T1, T2 -> !collective.future<T1, T2>` (start)."""
    parser.parse_punctuation(":")
    inputs = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
    if not IS_START:
        return inputs, inputs
    parser.parse_punctuation("->")
    return inputs, [parser.parse_type()]


def _print_types_colon_form(printer: Printer, op: CollectiveOp) -> None:
    printer.print_string(" : ")
    printer.print_list(op.input_types(), printer.print_attribute)
    if op.IS_START:
        printer.print_string(" -> ")
        printer.print_attribute(op.results[0].type)


def _parse_types_function_form(
    parser: Parser,
) -> tuple[list[Attribute], list[Attribute]]:
    """`: (T1, T2) -> (R1, R2)`, `: (T) -> R` or `: (T) -> !collective.future<R>`."""
    parser.parse_punctuation(":")
    ft = parser.parse_function_type()
    return list(ft.inputs.data), list(ft.outputs.data)


def _print_types_function_form(printer: Printer, op: CollectiveOp) -> None:
    printer.print_string(" : (")
    printer.print_list(op.input_types(), printer.print_attribute)
    printer.print_string(") -> ")
    results = [r.type for r in op.results]
    if len(results) == 1:
        printer.print_attribute(results[0])
    else:
        printer.print_string("(")
        printer.print_list(results, printer.print_attribute)
        printer.print_string(")")


def _finish(
    parser: Parser,
    cls: type[CollectiveOp],
    operands: list[UnresolvedOperand],
    pos: int,
    types: tuple[list[Attribute], list[Attribute]],
    properties: dict[str, Attribute],
    attrs: dict[str, Attribute],
) -> CollectiveOp:
    inputs, outputs = types
    values = parser.resolve_operands(operands, inputs, pos)
    op = cls.create(operands=values, result_types=outputs, properties=properties)
    op.attributes |= attrs
    return op


################################################################################
# all_reduce                                                                   #
################################################################################


class AllReduceBase(CollectiveOp, ABC):
    """`collective.all_reduce add %x, %y on @mesh["data"] : T1, T2`."""

    inputs = var_operand_def(TensorType)
    kind = prop_def(StringAttr)

    def verify_types(self, group_size: int) -> None:
        _verify_kind(self.kind)
        if not self.operands:
            raise VerifyException("all_reduce needs at least one operand")
        _expect_types(self.value_types(), self.input_types())

    @classmethod
    def parse(cls, parser: Parser) -> CollectiveOp:
        kind = _parse_kind(parser)
        pos = parser.pos
        operands = cls.parse_operand_list(parser)
        props = {"kind": kind, **cls.parse_group_spec(parser)}
        attrs = parser.parse_optional_attr_dict()
        types = _parse_types_colon_form(parser, cls.IS_START)
        return _finish(parser, cls, operands, pos, types, props, attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        self.print_operand_list(printer)
        printer.print_string(" " + self.group_spec_str())
        printer.print_op_attributes(self.attributes)
        _print_types_colon_form(printer, self)


@irdl_op_definition
class AllReduceOp(AllReduceBase):
    name = "collective.all_reduce"
    outputs = var_result_def(TensorType)
    traits = traits_def(Pure(), CollectiveHasCanonicalizationPatterns())

    def __init__(self, kind: str, inputs: Sequence[SSAValue], group: dict[str, Attribute]):
        super().__init__(
            operands=[inputs],
            result_types=[[i.type for i in inputs]],
            properties={"kind": StringAttr(kind), **group},
        )


@irdl_op_definition
class AllReduceStartOp(AllReduceBase):
    name = "collective.all_reduce_start"
    future = result_def(FutureType)
    IS_START: ClassVar[bool] = True


################################################################################
# all_gather and reduce_scatter                                                #
################################################################################


class AllGatherBase(CollectiveOp, ABC):
    """`collective.all_gather %x on @mesh["model"], dim = 1 : (T) -> R`."""

    inputs = var_operand_def(TensorType)
    dim = prop_def(IntegerAttr[type(i64)])  # pyright: ignore

    def verify_types(self, group_size: int) -> None:
        if not self.operands:
            raise VerifyException("all_gather needs at least one operand")
        dim = self.dim.value.data
        want: list[TensorType] = []
        for t in self.input_types():
            _check_dim(dim, t, "dim")
            want.append(_with_dim(t, dim, t.get_shape()[dim] * group_size))
        _expect_types(self.value_types(), want)

    @classmethod
    def parse(cls, parser: Parser) -> CollectiveOp:
        pos = parser.pos
        operands = cls.parse_operand_list(parser)
        props = cls.parse_group_spec(parser)
        props["dim"] = _parse_keyword_int(parser, "dim")
        attrs = parser.parse_optional_attr_dict()
        types = _parse_types_function_form(parser)
        return _finish(parser, cls, operands, pos, types, props, attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        self.print_operand_list(printer)
        printer.print_string(f" {self.group_spec_str()}, dim = {self.dim.value.data}")
        printer.print_op_attributes(self.attributes)
        _print_types_function_form(printer, self)


@irdl_op_definition
class AllGatherOp(AllGatherBase):
    name = "collective.all_gather"
    outputs = var_result_def(TensorType)
    traits = traits_def(Pure(), CollectiveHasCanonicalizationPatterns())


@irdl_op_definition
class AllGatherStartOp(AllGatherBase):
    name = "collective.all_gather_start"
    future = result_def(FutureType)
    IS_START: ClassVar[bool] = True


class ReduceScatterBase(CollectiveOp, ABC):
    """`collective.reduce_scatter add %x on @mesh["model"], dim = 1 : (T) -> R`."""

    inputs = var_operand_def(TensorType)
    kind = prop_def(StringAttr)
    dim = prop_def(IntegerAttr[type(i64)])  # pyright: ignore

    def verify_types(self, group_size: int) -> None:
        _verify_kind(self.kind)
        if not self.operands:
            raise VerifyException("reduce_scatter needs at least one operand")
        dim = self.dim.value.data
        want: list[TensorType] = []
        for t in self.input_types():
            _check_dim(dim, t, "dim")
            size = t.get_shape()[dim]
            if size % group_size:
                raise VerifyException(
                    f"dimension {dim} of size {size} is not divisible by the group "
                    f"size {group_size}"
                )
            want.append(_with_dim(t, dim, size // group_size))
        _expect_types(self.value_types(), want)

    @classmethod
    def parse(cls, parser: Parser) -> CollectiveOp:
        kind = _parse_kind(parser)
        pos = parser.pos
        operands = cls.parse_operand_list(parser)
        props = {"kind": kind, **cls.parse_group_spec(parser)}
        props["dim"] = _parse_keyword_int(parser, "dim")
        attrs = parser.parse_optional_attr_dict()
        types = _parse_types_function_form(parser)
        return _finish(parser, cls, operands, pos, types, props, attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data} ")
        self.print_operand_list(printer)
        printer.print_string(f" {self.group_spec_str()}, dim = {self.dim.value.data}")
        printer.print_op_attributes(self.attributes)
        _print_types_function_form(printer, self)


@irdl_op_definition
class ReduceScatterOp(ReduceScatterBase):
    name = "collective.reduce_scatter"
    outputs = var_result_def(TensorType)
    traits = traits_def(Pure(), CollectiveHasCanonicalizationPatterns())


@irdl_op_definition
class ReduceScatterStartOp(ReduceScatterBase):
    name = "collective.reduce_scatter_start"
    future = result_def(FutureType)
    IS_START: ClassVar[bool] = True


################################################################################
# all_to_all                                                                   #
################################################################################


class AllToAllBase(CollectiveOp, ABC):
    """`collective.all_to_all %x on @ring["x"], split_dim = 1, concat_dim = 0 : (T) -> R`."""

    input = operand_def(TensorType)
    split_dim = prop_def(IntegerAttr[type(i64)])  # pyright: ignore
    concat_dim = prop_def(IntegerAttr[type(i64)])  # pyright: ignore

    def verify_types(self, group_size: int) -> None:
        (t,) = self.input_types()
        split, concat = self.split_dim.value.data, self.concat_dim.value.data
        _check_dim(split, t, "split_dim")
        _check_dim(concat, t, "concat_dim")
        size = t.get_shape()[split]
        if size % group_size:
            raise VerifyException(
                f"split_dim {split} of size {size} is not divisible by the group size {group_size}"
            )
        want = _with_dim(t, split, size // group_size)
        want = _with_dim(want, concat, want.get_shape()[concat] * group_size)
        _expect_types(self.value_types(), [want])

    @classmethod
    def parse(cls, parser: Parser) -> CollectiveOp:
        pos = parser.pos
        operands = [parser.parse_unresolved_operand()]
        props = cls.parse_group_spec(parser)
        props["split_dim"] = _parse_keyword_int(parser, "split_dim")
        props["concat_dim"] = _parse_keyword_int(parser, "concat_dim")
        attrs = parser.parse_optional_attr_dict()
        types = _parse_types_function_form(parser)
        return _finish(parser, cls, operands, pos, types, props, attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(
            f" {self.group_spec_str()}, split_dim = {self.split_dim.value.data}, "
            f"concat_dim = {self.concat_dim.value.data}"
        )
        printer.print_op_attributes(self.attributes)
        _print_types_function_form(printer, self)


@irdl_op_definition
class AllToAllOp(AllToAllBase):
    name = "collective.all_to_all"
    output = result_def(TensorType)
    traits = traits_def(Pure(), CollectiveHasCanonicalizationPatterns())


@irdl_op_definition
class AllToAllStartOp(AllToAllBase):
    name = "collective.all_to_all_start"
    future = result_def(FutureType)
    IS_START: ClassVar[bool] = True


################################################################################
# permute                                                                      #
################################################################################


class PermuteBase(CollectiveOp, ABC):
    """
    `collective.permute %x on @ring["x"], shift = 1 : T` or `pairs = [[0, 1]]`:
    a device that receives nothing gets zeros.
    """

    input = operand_def(TensorType)
    shift = opt_prop_def(IntegerAttr[type(i64)])  # pyright: ignore
    pairs = opt_prop_def(ArrayAttr[DenseArrayBase])

    @property
    def source_target_pairs(self) -> list[tuple[int, int]]:
        """(source rank, target rank) pairs, for either form."""
        if self.pairs is not None:
            return [tuple(p.get_values()) for p in self.pairs.data]  # pyright: ignore
        assert self.shift is not None
        g = self.group_size()
        k = self.shift.value.data
        return [(r, (r + k) % g) for r in range(g)]

    def verify_types(self, group_size: int) -> None:
        if (self.shift is None) == (self.pairs is None):
            raise VerifyException("permute needs exactly one of `shift` or `pairs`")
        if self.pairs is not None:
            pairs = [p.get_values() for p in self.pairs.data]  # pyright: ignore
            for p in pairs:
                if len(p) != 2:
                    raise VerifyException("each permute pair is [source, target]")
                for r in p:
                    if not 0 <= r < group_size:
                        raise VerifyException(
                            f"rank {r} is out of range for a group of {group_size}"
                        )
            sources = [p[0] for p in pairs]
            targets = [p[1] for p in pairs]
            for what, ranks in (("source", sources), ("target", targets)):
                for r in ranks:
                    if ranks.count(r) > 1:
                        raise VerifyException(f"rank {r} is a {what} more than once")
        _expect_types(self.value_types(), self.input_types())

    @classmethod
    def parse(cls, parser: Parser) -> CollectiveOp:
        pos = parser.pos
        operands = [parser.parse_unresolved_operand()]
        props = cls.parse_group_spec(parser)
        parser.parse_punctuation(",")
        if parser.parse_optional_keyword("pairs"):
            parser.parse_punctuation("=")
            pairs = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parse_int_list(parser)
            )
            props["pairs"] = ArrayAttr(i64_array(p) for p in pairs)
        else:
            parser.parse_keyword("shift", " or 'pairs'")
            parser.parse_punctuation("=")
            props["shift"] = i64_attr(parse_i64(parser))
        attrs = parser.parse_optional_attr_dict()
        types = _parse_types_colon_form(parser, cls.IS_START)
        if len(types[0]) != 1:
            parser.raise_error("permute takes one operand type")
        return _finish(parser, cls, operands, pos, types, props, attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(f" {self.group_spec_str()}, ")
        if self.pairs is not None:
            pairs = [p.get_values() for p in self.pairs.data]  # pyright: ignore
            printer.print_string("pairs = [" + ", ".join(int_list_str(p) for p in pairs) + "]")
        else:
            assert self.shift is not None
            printer.print_string(f"shift = {self.shift.value.data}")
        printer.print_op_attributes(self.attributes)
        _print_types_colon_form(printer, self)


@irdl_op_definition
class PermuteOp(PermuteBase):
    name = "collective.permute"
    output = result_def(TensorType)
    traits = traits_def(Pure(), CollectiveHasCanonicalizationPatterns())


@irdl_op_definition
class PermuteStartOp(PermuteBase):
    name = "collective.permute_start"
    future = result_def(FutureType)
    IS_START: ClassVar[bool] = True


################################################################################
# done                                                                         #
################################################################################


@irdl_op_definition
class DoneOp(IRDLOperation):
    """`%a, %b = collective.done %f : !collective.future<T1, T2> -> T1, T2`."""

    name = "collective.done"

    future = operand_def(FutureType)
    outputs = var_result_def(TensorType)

    def __init__(self, future: SSAValue):
        assert isinstance(future.type, FutureType)
        super().__init__(operands=[future], result_types=[future.type.value_types])

    @classmethod
    def parse(cls, parser: Parser) -> DoneOp:
        pos = parser.pos
        future = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        future_type = parser.parse_type()
        parser.parse_punctuation("->")
        results = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        (value,) = parser.resolve_operands([future], [future_type], pos)
        op = cls.create(operands=[value], result_types=results)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.future)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.future.type)
        printer.print_string(" -> ")
        printer.print_list([r.type for r in self.results], printer.print_attribute)

    def verify_(self) -> None:
        future = self.future.type
        assert isinstance(future, FutureType)
        got = tuple(r.type for r in self.results)
        if got != future.value_types:
            raise VerifyException(
                f"result types ({', '.join(map(str, got))}) do not match the future's "
                f"({', '.join(map(str, future.value_types))})"
            )


def collective_kind(op: CollectiveOp) -> str:
    """`all_reduce` for both `collective.all_reduce` and `collective.all_reduce_start`."""
    return op.name.removeprefix("collective.").removesuffix("_start")


SYNC_OPS: tuple[type[CollectiveOp], ...] = (
    AllReduceOp,
    AllGatherOp,
    ReduceScatterOp,
    AllToAllOp,
    PermuteOp,
)
START_OPS: tuple[type[CollectiveOp], ...] = (
    AllReduceStartOp,
    AllGatherStartOp,
    ReduceScatterStartOp,
    AllToAllStartOp,
    PermuteStartOp,
)

Collective = Dialect(
    "collective",
    [*SYNC_OPS, *START_OPS, DoneOp],
    [FutureType],
)
