"""
The HLO module being imported, as the instruction converters see it: located errors,
attribute values read from their text, element and tensor types, called computations and
the reductions they compute, and which opcodes and attributes XLA prints.

Both converter modules (`hlo_text_ops`, `hlo_text_collectives`) and the driver read
instructions only through `HloSource`, so that every diagnostic points at the text that
is wrong (the opcode, the attribute value, the operand).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from shardc.diagnostics import DiagnosticError
from shardc.frontends.common import Emitter, ImportStats, is_bool
from shardc.frontends.hlo_text_parse import Attr, Computation, Instr, Reader, Shape
from xdsl.dialects.builtin import (
    BFloat16Type,
    ComplexType,
    FileLineColLoc,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Region, SSAValue

ELEMENT_TYPES: dict[str, Attribute] = {
    "f32": Float32Type(),
    "bf16": BFloat16Type(),
    "f16": Float16Type(),
    "f64": Float64Type(),
    "s32": i32,
    "s64": i64,
    "pred": i1,
    "u32": IntegerType(32, Signedness.UNSIGNED),
    # element types of issue 13 (XLA's spellings)
    "s8": IntegerType(8),
    "s16": IntegerType(16),
    "s4": IntegerType(4),
    "s2": IntegerType(2),
    "u8": IntegerType(8, Signedness.UNSIGNED),
    "u16": IntegerType(16, Signedness.UNSIGNED),
    "u64": IntegerType(64, Signedness.UNSIGNED),
    "u4": IntegerType(4, Signedness.UNSIGNED),
    "u2": IntegerType(2, Signedness.UNSIGNED),
    "f8e4m3fn": Float8E4M3FNType(),
    "f8e5m2": Float8E5M2Type(),
    "c64": ComplexType(Float32Type()),
    "c128": ComplexType(Float64Type()),
}

XLA_OPCODES = frozenset(
    """abs add add-dependency after-all all-gather all-gather-done all-gather-start
    all-reduce all-reduce-done all-reduce-start all-to-all and async-done async-start
    async-update atan2 batch-norm-grad batch-norm-inference batch-norm-training bitcast
    bitcast-convert broadcast call cbrt ceil cholesky clamp clz collective-broadcast
    collective-permute collective-permute-done collective-permute-start compare complex
    concatenate conditional constant convert convolution copy copy-done copy-start cosine
    custom-call divide domain dot dynamic-reshape dynamic-slice dynamic-update-slice erf
    exponential exponential-minus-one fft floor fusion gather get-dimension-size
    get-tuple-element imag infeed iota is-finite log log-plus-one logistic map maximum
    minimum multiply negate not opt-barrier or outfeed pad parameter partition-id popcnt
    power ragged-all-to-all real recv recv-done reduce reduce-precision reduce-scatter
    reduce-window remainder replica-id reshape reverse rng rng-bit-generator
    rng-get-and-update-state round-nearest-afz round-nearest-even rsqrt scatter select
    select-and-scatter send send-done set-dimension-size shift-left
    shift-right-arithmetic shift-right-logical sign sine slice sort sqrt stochastic-convert
    subtract tan tanh topk transpose triangular-solve tuple while xor""".split()
)
"""Every HLO opcode XLA prints (HloOpcode): the ones not handled here are "not supported"."""

COMMON_ATTRS = frozenset(
    {
        "metadata",
        "backend_config",
        "frontend_attributes",
        "sharding",
        "statistics",
        "statistics_viz",
        "control-predecessors",
        "origin",
        "result_accuracy",
        "parameter_replication",
        "operand_precision",
        "algorithm",
        "constrain_layout",
        "output_to_operand_aliasing",
        "schedule_name",
        "async_execution_thread",
        "custom_call_schedule",
        "api_version",
        "layout_canonicalized",
    }
)
"""Attributes that change no value (layout, scheduling and debug information)."""
COLLECTIVE_ATTRS = frozenset(
    {
        "channel_id",
        "replica_groups",
        "device_ids",
        "use_global_device_ids",
        "to_apply",
        "dimensions",
    }
)
"""`device_ids=(..) {axes}` is the second half of a mesh-axes `replica_groups=mesh[..]`,
which the attribute reader splits at its comma."""
KNOWN_ATTRS: dict[str, frozenset[str]] = {
    "compare": frozenset({"direction", "type"}),
    "iota": frozenset({"iota_dimension"}),
    "broadcast": frozenset({"dimensions"}),
    "transpose": frozenset({"dimensions"}),
    "concatenate": frozenset({"dimensions"}),
    "pad": frozenset({"padding"}),
    "reverse": frozenset({"dimensions"}),
    "sort": frozenset({"dimensions", "is_stable", "to_apply"}),
    "topk": frozenset({"k", "largest"}),
    "convolution": frozenset({"window", "dim_labels", "feature_group_count", "batch_group_count"}),
    "gather": frozenset(
        {
            "offset_dims",
            "collapsed_slice_dims",
            "operand_batching_dims",
            "start_indices_batching_dims",
            "start_index_map",
            "index_vector_dim",
            "slice_sizes",
            "indices_are_sorted",
        }
    ),
    "scatter": frozenset(
        {
            "update_window_dims",
            "inserted_window_dims",
            "input_batching_dims",
            "scatter_indices_batching_dims",
            "scatter_dims_to_operand_dims",
            "index_vector_dim",
            "to_apply",
            "indices_are_sorted",
            "unique_indices",
        }
    ),
    "slice": frozenset({"slice"}),
    "dynamic-slice": frozenset({"dynamic_slice_sizes"}),
    "dot": frozenset(
        {"lhs_batch_dims", "rhs_batch_dims", "lhs_contracting_dims", "rhs_contracting_dims"}
    ),
    "reduce": frozenset({"dimensions", "to_apply"}),
    "reduce-window": frozenset({"window", "to_apply"}),
    "select-and-scatter": frozenset({"window", "select", "scatter"}),
    "get-tuple-element": frozenset({"index"}),
    "fusion": frozenset({"kind", "calls"}),
    "call": frozenset({"to_apply"}),
    "async-start": frozenset({"calls"}),
    "custom-call": frozenset({"custom_call_target", "called_computations", "api_version"}),
    "collective-permute": frozenset({"channel_id", "source_target_pairs"}),
    "collective-permute-start": frozenset({"channel_id", "source_target_pairs"}),
}
for _c in (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "all-reduce-start",
    "all-gather-start",
):
    KNOWN_ATTRS[_c] = COLLECTIVE_ATTRS
KNOWN_ATTRS["collective-broadcast"] = frozenset({"channel_id", "replica_groups"})  # (issue 13)
KNOWN_ATTRS["rng-bit-generator"] = frozenset({"algorithm"})  # (issue 13)

REDUCERS = {"add": "add", "multiply": "mul", "maximum": "max", "minimum": "min"}
BOOL_REDUCERS = {"or": "max", "and": "min"}


# Values ------------------------------------------------------------------------------------


@dataclass
class TupleVal:
    items: list[Any]


@dataclass
class FutureVal:
    """An async start: a collective future to `done`, or values a `-done` returns."""

    future: SSAValue | None
    values: list[Any] = field(default_factory=list)
    tuple_result: bool = False


Value = Any  # SSAValue | TupleVal | FutureVal


class HloSource:
    """The parsed module, what the header says, and readers that raise located errors."""

    def __init__(self, reader: Reader, emit: Emitter, stats: ImportStats):
        self.reader = reader
        self.emit = emit
        self.stats = stats
        self.computations: dict[str, Computation] = {}
        self.partitions = 1
        self.replicas = 1
        self.devices = 1
        self.comp: Computation | None = None
        """The computation being converted (a bitcast reads its operand's layout there)."""
        self.body_region: Callable[[Instr, Computation, list[Attribute]], Region] | None = None
        """A called computation converted into a region of the given argument types (the
        importer's; a variadic reduce's body)."""

    def error(self, pos: int, message: str, length: int = 1) -> DiagnosticError:
        return self.reader.error(pos, message, length)

    def located(self, pos: int) -> FileLineColLoc:
        return self.reader.input.location(pos)

    def parameter_number(self, i: Instr) -> int:
        if len(i.operands) != 1:
            raise self.error(i.pos, "parameter takes one number")
        try:
            return int(i.operands[0].text)
        except ValueError:
            raise self.error(
                i.operands[0].pos, f"expected a parameter number, got {i.operands[0].text}"
            ) from None

    # types ----------------------------------------------------------------------------------

    def element(self, shape: Shape) -> Attribute:
        assert shape.element is not None
        ty = ELEMENT_TYPES.get(shape.element)
        if ty is None:
            raise self.error(
                shape.pos,
                f"element type {shape.element} is not supported (f32, bf16, f16, f64, "
                "f8e4m3fn, f8e5m2, s64, s32, s16, s8, s4, s2, u64, u32, u16, u8, u4, u2, pred, "
                "c64, c128)",
                len(shape.element),
            )
        return ty

    def tensor_type(self, shape: Shape) -> TensorType:
        if shape.is_tuple():
            raise self.error(shape.pos, f"expected an array shape, got the tuple {shape}")
        return TensorType(self.element(shape), shape.dims)

    # attributes ---------------------------------------------------------------------------

    def attr(self, instr: Instr, key: str) -> Attr:
        a = instr.attrs.get(key)
        if a is None:
            raise self.error(
                instr.opcode_pos, f"{instr.opcode} needs the attribute {key}=", len(instr.opcode)
            )
        return a

    def ints_attr(self, instr: Instr, key: str, default: list[int] | None = None) -> list[int]:
        a = instr.attrs.get(key)
        if a is None:
            if default is not None:
                return default
            a = self.attr(instr, key)
        return [int(x) for x in re.findall(r"-?\d+", a.text)]

    def int_attr(self, instr: Instr, key: str) -> int:
        values = self.ints_attr(instr, key)
        if len(values) != 1:
            a = self.attr(instr, key)
            raise self.error(a.pos, f"{key}= must be one integer, got {a.text}")
        return values[0]

    def called(self, instr: Instr, key: str) -> Computation:
        a = self.attr(instr, key)
        name = a.text.strip().lstrip("%")
        if name.startswith("{"):
            name = name.strip("{}").strip().lstrip("%")
        comp = self.computations.get(name)
        if comp is None:
            raise self.error(a.pos, f"computation {name} is not defined", len(a.text))
        return comp

    def reducer(self, instr: Instr, element: Attribute, key: str = "to_apply") -> str:
        comp = self.called(instr, key)
        root = comp.root
        params = [i for i in comp.instrs if i.opcode == "parameter"]
        names = {p.name for p in params}
        kind = REDUCERS.get(root.opcode)
        if kind is None and is_bool(element):
            kind = BOOL_REDUCERS.get(root.opcode)
        if kind is None or len(params) != 2 or set(root.operand_names()) != names:
            ops = ", ".join(i.opcode for i in comp.instrs if i.opcode != "parameter")
            a = self.attr(instr, key)
            raise self.error(
                a.pos,
                f"{key}={comp.name} computes {ops}; shardc recognizes reductions that add, "
                "multiply, take the maximum or the minimum of their two parameters",
                len(a.text),
            )
        return kind
