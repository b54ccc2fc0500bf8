"""
Reading the parsed StableHLO module: its attributes in whichever form JAX printed them,
which attributes each op may carry, and errors located at the source op.

Every other StableHLO module reads the source IR through these, so that an attribute read
two ways (pretty `dims = [0]` and generic `dense<[0]>`) is decoded in one place and every
problem is one `file:line:col: error:` diagnostic at the op (or the name) it is about.
"""

from __future__ import annotations

import math

from shardc.diagnostics import (
    DiagnosticError,
    caret_location,
    format_diagnostic,
    op_location,
    source_line,
)
from shardc.dialects.syntax import splat_element
from shardc.frontends.common import check_tensor_type
from shardc.frontends.stablehlo_dialect import (
    OpaqueEnumAttr,
    SdyManualAxesAttr,
    SdyShardingPerValueAttr,
)
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    IntAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation

CALLS = ("func.call", "stablehlo.composite")
"""Ops the importer inlines: a call, and a composite (by its decomposition function)."""

COMMON_ATTRS = frozenset({"mhlo.frontend_attributes", "result_accuracy"})
"""Attributes that change no value: ignored wherever they appear."""

KNOWN_ATTRS: dict[str, frozenset[str]] = {
    "stablehlo.constant": frozenset({"value"}),
    "stablehlo.iota": frozenset({"iota_dimension"}),
    "stablehlo.broadcast_in_dim": frozenset({"broadcast_dimensions"}),
    "stablehlo.transpose": frozenset({"permutation"}),
    "stablehlo.slice": frozenset({"start_indices", "limit_indices", "strides"}),
    "stablehlo.dynamic_slice": frozenset({"slice_sizes"}),
    "stablehlo.concatenate": frozenset({"dimension"}),
    "stablehlo.pad": frozenset({"edge_padding_low", "edge_padding_high", "interior_padding"}),
    "stablehlo.reverse": frozenset({"dimensions"}),
    "stablehlo.sort": frozenset({"dimension", "is_stable"}),
    "chlo.top_k": frozenset({"k", "largest"}),
    "stablehlo.convolution": frozenset(
        {
            "dimension_numbers",
            "window_strides",
            "padding",
            "lhs_dilation",
            "rhs_dilation",
            "window_reversal",
            "feature_group_count",
            "batch_group_count",
            "precision_config",
        }
    ),
    "stablehlo.gather": frozenset({"dimension_numbers", "slice_sizes", "indices_are_sorted"}),
    "stablehlo.dynamic_gather": frozenset({"dimension_numbers", "indices_are_sorted"}),
    "stablehlo.scatter": frozenset(
        {"scatter_dimension_numbers", "indices_are_sorted", "unique_indices"}
    ),
    "stablehlo.compare": frozenset({"comparison_direction", "compare_type"}),
    "stablehlo.dot_general": frozenset({"dot_dimension_numbers", "precision_config", "algorithm"}),
    "stablehlo.dot": frozenset({"precision_config"}),
    "stablehlo.reduce": frozenset({"dimensions", "applies"}),
    "stablehlo.reduce_window": frozenset(
        {"window_dimensions", "window_strides", "base_dilations", "window_dilations", "padding"}
    ),
    "stablehlo.select_and_scatter": frozenset({"window_dimensions", "window_strides", "padding"}),
    "stablehlo.custom_call": frozenset(
        {
            "call_target_name",
            "backend_config",
            "api_version",
            "mhlo.sharding",
            "has_side_effect",
            "mhlo.attributes",
            "mhlo.version",
        }
    ),
    "stablehlo.all_reduce": frozenset(
        {"replica_groups", "channel_handle", "use_global_device_ids"}
    ),
    "stablehlo.all_gather": frozenset(
        {"all_gather_dim", "replica_groups", "channel_handle", "use_global_device_ids"}
    ),
    "stablehlo.reduce_scatter": frozenset(
        {"scatter_dimension", "replica_groups", "channel_handle", "use_global_device_ids"}
    ),
    "stablehlo.all_to_all": frozenset(
        {"split_dimension", "concat_dimension", "split_count", "replica_groups", "channel_handle"}
    ),
    "stablehlo.collective_permute": frozenset({"source_target_pairs", "channel_handle"}),
    "sdy.sharding_constraint": frozenset({"sharding"}),
    "sdy.reshard": frozenset({"sharding"}),
    "sdy.manual_computation": frozenset({"in_shardings", "out_shardings", "manual_axes"}),
    "sdy.all_gather": frozenset({"gathering_axes", "out_sharding"}),
    "sdy.all_slice": frozenset({"slicing_axes", "out_sharding"}),
    "sdy.all_reduce": frozenset({"reduction_axes", "out_sharding"}),
    "sdy.all_to_all": frozenset({"params", "out_sharding"}),
    "sdy.collective_permute": frozenset({"out_sharding"}),
    "func.call": frozenset({"callee", "arg_attrs", "res_attrs", "no_inline"}),
    "stablehlo.composite": frozenset({"name", "composite_attributes", "decomposition", "version"}),
}
"""The attributes each op may carry; any other is an error naming it."""
KNOWN_ATTRS["stablehlo.collective_broadcast"] = frozenset({"replica_groups", "channel_handle"})
KNOWN_ATTRS["stablehlo.rng_bit_generator"] = frozenset({"rng_algorithm"})


# Attribute readers -------------------------------------------------------------------------


def ints(attr: Attribute) -> list[int]:
    if isinstance(attr, DenseArrayBase):
        return [int(v) for v in attr.get_values()]
    if isinstance(attr, DenseIntOrFPElementsAttr):
        values = [int(v) for v in attr.get_values()]
        count = math.prod(attr.get_shape())
        return values * count if len(values) == 1 and count > 1 else values  # a splat
    if isinstance(attr, ArrayAttr):
        return [int(a.value.data) if isinstance(a, IntegerAttr) else int(a.data) for a in attr.data]  # pyright: ignore
    if isinstance(attr, IntegerAttr):
        return [int(attr.value.data)]
    raise ValueError(f"expected a list of integers, got {attr}")


def one_int(attr: Attribute) -> int:
    if isinstance(attr, IntegerAttr):
        return int(attr.value.data)
    if isinstance(attr, IntAttr):
        return attr.data
    raise ValueError(f"expected an integer, got {attr}")


def enum_value(attr: Attribute) -> str:
    if isinstance(attr, OpaqueEnumAttr):
        return attr.value.data
    if isinstance(attr, StringAttr):
        return attr.data
    raise ValueError(f"expected an enum value, got {attr}")


def matrix(attr: Attribute) -> list[list[int]]:
    """A `dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>` as rows."""
    if not isinstance(attr, DenseIntOrFPElementsAttr):
        raise ValueError(f"expected a dense integer matrix, got {attr}")
    shape = attr.get_type().get_shape()
    values = [int(v) for v in attr.get_values()]
    if len(shape) != 2:
        raise ValueError(f"expected a rank-2 matrix, got shape {list(shape)}")
    if len(values) == 1 and shape[0] * shape[1] != 1:
        values = values * (shape[0] * shape[1])
    return [values[r * shape[1] : (r + 1) * shape[1]] for r in range(shape[0])]


def splat_value(attr: DenseIntOrFPElementsAttr) -> float | int | None:
    return splat_element(attr)  # reads one element, whatever the literal's size


def get_attr(op: Operation, key: str) -> Attribute | None:
    """A property, or else an attribute (the generic form may print either)."""
    a = op.properties.get(key)
    return a if a is not None else op.attributes.get(key)


def require(op: Operation, key: str) -> Attribute:
    """`get_attr`, or a `ValueError` saying that the op needs it."""
    a = get_attr(op, key)
    if a is None:
        raise ValueError(f"{op.name} needs the attribute '{key}'")
    return a


def call_target(op: Operation) -> str:
    t = get_attr(op, "call_target_name")
    return t.data if isinstance(t, StringAttr) else "?"


def gspmd_string(op: Operation) -> str | None:
    s = op.attributes.get("mhlo.sharding")
    return s.data if isinstance(s, StringAttr) else None


def rank(ty: Attribute) -> int:
    assert isinstance(ty, TensorType)
    return ty.get_num_dims()


def axes_list(attr: Attribute) -> list[StringAttr]:
    if isinstance(attr, SdyManualAxesAttr):
        return list(attr.axes.data)
    return list(attr.data)  # pyright: ignore


def sharding_list(attr: Attribute) -> list[Attribute]:
    if isinstance(attr, SdyShardingPerValueAttr):
        return list(attr.shardings.data)
    return list(attr.data)  # pyright: ignore


def attr_dicts(attr: ArrayAttr | None, n: int) -> list[dict[str, Attribute]]:
    """A function's `arg_attrs` / `res_attrs` as one dictionary per value."""
    if attr is None:
        return [{} for _ in range(n)]
    return [dict(d.data) for d in attr.data]  # pyright: ignore


def all_attr_dicts(op: Operation) -> list[dict[str, Attribute]]:
    """Every attribute dictionary of an op (a function's argument / result ones too)."""
    out = [dict(op.attributes), dict(op.properties)]
    if isinstance(op, func.FuncOp):
        out += attr_dicts(op.arg_attrs, len(op.function_type.inputs.data))
        out += attr_dicts(op.res_attrs, len(op.function_type.outputs.data))
    return out


# Located errors ----------------------------------------------------------------------------


class SourceErrors:
    """Diagnostics at the source op (or a name in its text), and the checks that raise them."""

    def __init__(self, filename: str):
        self.filename = filename

    def error(self, op: Operation | None, message: str) -> DiagnosticError:
        loc = op_location(op) if op is not None else None
        pos = caret_location(loc) if loc is not None else None
        if pos is None:
            return DiagnosticError(f"{self.filename}: error: {message}")
        return DiagnosticError(format_diagnostic(pos, message))

    def error_at_name(self, op: Operation, name: str, message: str) -> DiagnosticError:
        """An error at `name` as written in `op`'s text (else at the op)."""
        loc = op_location(op)
        pos = caret_location(loc) if loc is not None else None
        line = source_line(pos.filename.data, pos.line.data) if pos is not None else None
        if pos is not None and line is not None:
            at = line.find(name, pos.column.data - 1)
            if at >= 0:
                pos = FileLineColLoc(pos.filename, pos.line, IntAttr(at + 1))
                return DiagnosticError(format_diagnostic(pos, message, len(name)))
        return self.error(op, message)

    def prop(self, op: Operation, key: str) -> Attribute:
        try:
            return require(op, key)
        except ValueError as e:
            raise self.error(op, str(e)) from None

    def check_type(self, op: Operation, ty: Attribute, what: str) -> TensorType:
        try:
            return check_tensor_type(ty, what)
        except ValueError as e:
            raise self.error(op, str(e)) from None

    def check_attrs(self, op: Operation) -> None:
        known = KNOWN_ATTRS.get(op.name, frozenset())
        for k in list(op.properties) + list(op.attributes):
            if k in known or k in COMMON_ATTRS or k in ("mhlo.sharding", "sdy.sharding"):
                continue
            raise self.error_at_name(op, k, f"unknown attribute '{k}' on {op.name}")

    def check_function_attrs(self, op: Operation, attrs: dict[str, Attribute], what: str) -> None:
        """Argument / result attributes: shardings, and JAX's / XLA's own (which change nothing)."""
        for k in attrs:
            if k in ("sdy.sharding", "mhlo.sharding") or k.split(".")[0] in (
                "jax",
                "mhlo",
                "tf",
                "sdy",
            ):
                continue
            raise self.error(op, f"unknown attribute '{k}' on {what}")
