"""
The `spmd` dialect: device meshes and shardings (syntax mirrors Shardy's `sdy`).

A program declares one `spmd.mesh`; values at level G carry `#spmd.sharding`s on function
arguments and results and through `spmd.constraint`. After `spmd-partition` the function
is marked `spmd.partitioned` and its types are per-device (local) shapes.

A split dimension need not divide evenly: n entries split f ways are blocks of
ceil(n / f), the last ones padded (GSPMD); a split with fewer elements than shards is
refused. An unevenly split argument or result of a partitioned function records its
global shape in `spmd.global_shape`.

```mlir
spmd.mesh @mesh = <["data"=2, "model"=4]>
%r = spmd.constraint %x <@mesh, [{"data"}, {}]> : tensor<16x32xf32>
%i = spmd.axis_index @mesh["model"] : tensor<i32>
```

This module also holds the mesh arithmetic everything else shares: device ids and
coordinates, the device groups of a set of axes, a sharding's local shape and shard index.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from abc import ABC
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from shardc.diagnostics import register_module_check
from shardc.dialects.syntax import (
    i64_array,
    int_list_str,
    parse_int_list,
    parse_string_list_in_braces,
    quote,
    string_list_in_braces_str,
    symbol,
)
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FlatSymbolRefAttr,
    IntAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, IsTerminator, Pure, SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import VerifyException

SHARDING_ATTR_NAME = "spmd.sharding"
"""Argument/result attribute carrying a value's sharding."""
PARTITIONED_ATTR_NAME = "spmd.partitioned"
"""Unit attribute on a function whose types are per-device (after `spmd-partition`)."""
PER_DEVICE_IO_ATTR_NAME = "spmd.per_device_io"
"""Unit attribute on a function whose inputs and outputs are per-device arrays."""
CONTROL_ID_ATTR_NAME = "spmd.control_id"
"""Op attribute: the names (`["ar.1"]`) other ops' `spmd.control_after` refer to it by."""
CONTROL_AFTER_ATTR_NAME = "spmd.control_after"
"""Op attribute: the `spmd.control_id`s of the ops of its block that must run before it
(XLA's `control-predecessors`): an ordering every pass that reorders or merges keeps."""
GLOBAL_SHAPE_ATTR_NAME = "spmd.global_shape"
"""Argument/result attribute of a partitioned function (`array<i64: ...>`): the global
shape of an unevenly split value, whose local type is padded (absent: local x split)."""


################################################################################
# Attributes                                                                   #
################################################################################


MAX_DEVICES = 65536
"""The most devices a mesh may have: seven full v5p pods (8,960 chips each) fit. Every loop
over devices, groups or ring steps is bounded by it, so no mesh can make a tool run
for hours or exhaust memory building device groups."""

_AXIS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.$-]*")
"""A mesh axis name: an identifier (it names SSA values, semaphores and trace rows)."""


def mesh_axis_problem(name: str, size: int) -> str | None:
    """What is wrong with a mesh axis `name` of `size` devices, or None."""
    if not _AXIS_NAME.fullmatch(name):
        return (
            f"mesh axis name {quote(name)} must be an identifier "
            "(a letter or '_', then letters, digits, '_', '.', '$' or '-')"
        )
    if size < 1:
        return f'mesh axis "{name}" must have a positive size, got {size}'
    if size > MAX_DEVICES:
        return f'mesh axis "{name}" has {size} devices; a mesh has at most {MAX_DEVICES}'
    return None


def _too_many_devices(count: int) -> str:
    return f"the mesh has {count} devices; a mesh has at most {MAX_DEVICES}"


def mesh_problem(axes: Sequence[tuple[str, int]]) -> str | None:
    """What is wrong with a mesh of `axes` (name, size), or None: what `MeshAttr` verifies,
    for code that builds one from foreign input (the importers) to report first."""
    names = [n for n, _ in axes]
    for name, size in axes:
        problem = mesh_axis_problem(name, size)
        if problem is not None:
            return problem
        if names.count(name) > 1:
            return f'mesh axis "{name}" is declared twice'
    count = math.prod(s for _, s in axes)
    return _too_many_devices(count) if count > MAX_DEVICES else None


@irdl_attr_definition
class MeshAttr(ParametrizedAttribute):
    """
    The named axes of a device mesh: `<["data"=2, "model"=4]>`.

    Device ids are row-major over the axes in declared order.
    """

    name = "spmd.mesh"

    axis_names: ArrayAttr[StringAttr]
    axis_sizes: ArrayAttr[IntAttr]

    def __init__(self, axes: Sequence[tuple[str, int]]):
        super().__init__(
            ArrayAttr(StringAttr(n) for n, _ in axes),
            ArrayAttr(IntAttr(s) for _, s in axes),
        )

    @property
    def names(self) -> tuple[str, ...]:
        return _mesh_names(self)

    @property
    def shape(self) -> tuple[int, ...]:
        return _mesh_shape(self)

    @property
    def device_count(self) -> int:
        return math.prod(self.shape)

    def axis_size(self, axis: str) -> int:
        return _axis_sizes(self)[axis]

    def coords(self, device: int) -> tuple[int, ...]:
        """The coordinates of `device` (row-major ids)."""
        coords: list[int] = []
        for size in reversed(self.shape):
            coords.append(device % size)
            device //= size
        return tuple(reversed(coords))

    def device_id(self, coords: Sequence[int]) -> int:
        device = 0
        for c, size in zip(coords, self.shape, strict=True):
            device = device * size + c
        return device

    def groups(self, axes: Sequence[str]) -> list[list[int]]:
        """
        The device groups of a collective over `axes`: devices that share every other
        coordinate form a group; a device's rank is its row-major coordinate over `axes`
        in the order given (first listed is major).
        """
        return [list(group) for group in _mesh_groups(self, tuple(axes))]

    def _groups(self, axes: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
        axis_index = [self.names.index(a) for a in axes]
        others = [i for i in range(len(self.shape)) if i not in axis_index]
        groups: list[tuple[int, ...]] = []
        for other in itertools.product(*(range(self.shape[i]) for i in others)):
            group: list[int] = []
            for inner in itertools.product(*(range(self.shape[i]) for i in axis_index)):
                coords = [0] * len(self.shape)
                for i, c in zip(others, other, strict=False):
                    coords[i] = c
                for i, c in zip(axis_index, inner, strict=False):
                    coords[i] = c
                group.append(self.device_id(coords))
            groups.append(tuple(group))
        return tuple(groups)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        def parse_axis() -> tuple[str, int]:
            pos = parser.pos
            name = parser.parse_str_literal(" (a mesh axis name)")
            parser.parse_punctuation("=")
            size = parser.parse_integer(allow_negative=False, allow_boolean=False)
            problem = mesh_axis_problem(name, size)
            if problem is not None:
                parser.raise_error(problem, pos)
            return name, size

        with parser.in_angle_brackets():
            start = parser.pos
            axes = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parse_axis)
            names = [n for n, _ in axes]
            for n in names:
                if names.count(n) > 1:
                    parser.raise_error(f'mesh axis "{n}" is declared twice', start)
            count = math.prod(s for _, s in axes)
            if count > MAX_DEVICES:
                parser.raise_error(_too_many_devices(count), start)
        return (
            ArrayAttr(StringAttr(n) for n, _ in axes),
            ArrayAttr(IntAttr(s) for _, s in axes),
        )

    def print_parameters(self, printer: Printer) -> None:
        axes = ", ".join(f"{quote(n)}={s}" for n, s in zip(self.names, self.shape, strict=False))
        printer.print_string(f"<[{axes}]>")

    def verify(self) -> None:
        if len(self.axis_names.data) != len(self.axis_sizes.data):
            raise VerifyException("mesh axis names and sizes differ in number")
        if len(set(self.names)) != len(self.names):
            raise VerifyException("mesh axis declared twice")
        for name, size in zip(self.names, self.shape, strict=True):
            problem = mesh_axis_problem(name, size)
            if problem is not None:
                raise VerifyException(problem)
        if self.device_count > MAX_DEVICES:
            raise VerifyException(_too_many_devices(self.device_count))


@irdl_attr_definition
class ShardingAttr(ParametrizedAttribute):
    """
    How a tensor is laid out over a mesh: `<@mesh, [{"a"}, {}], unreduced={"b"}>`.

    One `{...}` per tensor dimension lists the axes splitting it, major to minor; axes not
    listed replicate; `unreduced` axes hold a pending partial sum. A dimension written
    with a trailing `?` (`{"a", ?}`, `{?}`: Shardy's open dimension) is open: propagation
    may split it further with axes the sharding does not use elsewhere; `spmd-propagate`
    leaves none open, and `spmd-partition` refuses an open sharding. `open` holds the
    indices of the open dimensions.

    A dimension may carry Shardy's user priority (`{"a"}p0`, `{"b", ?}p1`: lower numbers
    propagate first; `spmd-propagate` runs once per priority, a dimension of a later
    priority staying unsplit until its turn, and leaves none). `priorities` is empty, or
    holds one entry per dimension (-1: none, which propagates with priority 0).
    """

    name = "spmd.sharding"

    mesh: FlatSymbolRefAttr
    dims: ArrayAttr[ArrayAttr[StringAttr]]
    unreduced: ArrayAttr[StringAttr]
    open: ArrayAttr[IntAttr]
    priorities: ArrayAttr[IntAttr]

    def __init__(
        self,
        mesh: str | SymbolRefAttr,
        dims: Sequence[Sequence[str]],
        unreduced: Sequence[str] = (),
        open_dims: Sequence[int] = (),
        priorities: Sequence[int | None] = (),
    ):
        if isinstance(mesh, str):
            mesh = SymbolRefAttr(mesh)
        if all(p is None for p in priorities):
            priorities = ()
        super().__init__(
            mesh,
            ArrayAttr(ArrayAttr(StringAttr(a) for a in d) for d in dims),
            ArrayAttr(StringAttr(a) for a in unreduced),
            ArrayAttr(IntAttr(d) for d in sorted(set(open_dims))),
            ArrayAttr(IntAttr(-1 if p is None else p) for p in priorities),
        )

    @property
    def dim_priorities(self) -> tuple[int | None, ...]:
        """Each dimension's user priority (`p<N>`), None where it has none."""
        if not self.priorities.data:
            return (None,) * len(self.dims.data)
        return tuple(None if p.data < 0 else p.data for p in self.priorities.data)

    def has_priorities(self) -> bool:
        return bool(self.priorities.data)

    def without_priorities(self) -> ShardingAttr:
        if not self.priorities.data:
            return self
        return ShardingAttr(self.mesh, self.dim_axes, self.unreduced_axes, self.open_dims)

    @property
    def open_dims(self) -> tuple[int, ...]:
        """The open dimensions (`{.., ?}`), ascending."""
        return tuple(d.data for d in self.open.data)

    def is_open(self) -> bool:
        return bool(self.open.data)

    def closed(self) -> ShardingAttr:
        """This sharding with every open dimension closed as it is (and no priorities)."""
        if not self.open.data and not self.priorities.data:
            return self
        return ShardingAttr(self.mesh, self.dim_axes, self.unreduced_axes)

    @property
    def mesh_name(self) -> str:
        return self.mesh.root_reference.data

    @property
    def dim_axes(self) -> tuple[tuple[str, ...], ...]:
        return _dim_axes(self)

    @property
    def unreduced_axes(self) -> tuple[str, ...]:
        return _unreduced_axes(self)

    @property
    def all_axes(self) -> tuple[str, ...]:
        return tuple(a for d in self.dim_axes for a in d) + self.unreduced_axes

    def is_replicated(self) -> bool:
        return not self.all_axes

    def split_factor(self, dim: int, mesh: MeshAttr) -> int:
        return math.prod(mesh.axis_size(a) for a in self.dim_axes[dim])

    def local_shape(self, global_shape: Sequence[int], mesh: MeshAttr) -> tuple[int, ...]:
        """
        Each device's (padded) block: `ceil(n / f)` of a dimension of size n split f ways.
        When f does not divide n (an uneven split, GSPMD's padding) block k holds global
        indices [k*c, min((k+1)*c, n)) and the rest of its c entries are padding.
        """
        return tuple(-(-size // self.split_factor(d, mesh)) for d, size in enumerate(global_shape))

    def global_shape(self, local_shape: Sequence[int], mesh: MeshAttr) -> tuple[int, ...]:
        """The padded global shape (local x split factor); an uneven value's true shape is
        its `spmd.global_shape` (see `function_global_shapes`)."""
        return tuple(size * self.split_factor(d, mesh) for d, size in enumerate(local_shape))

    def is_uneven(self, global_shape: Sequence[int], mesh: MeshAttr) -> bool:
        """Whether some split dimension of `global_shape` is padded (not divided evenly)."""
        return any(n % self.split_factor(d, mesh) for d, n in enumerate(global_shape))

    def shard_index(self, dim: int, mesh: MeshAttr, coords: Sequence[int]) -> int:
        """Which block of dimension `dim` the device at `coords` holds."""
        index = 0
        for axis in self.dim_axes[dim]:
            i = mesh.names.index(axis)
            index = index * mesh.shape[i] + coords[i]
        return index

    def check(self, shape: Sequence[int], mesh: MeshAttr, *, is_global: bool) -> None:
        """Raise `VerifyException` if this sharding does not fit a tensor of `shape`."""
        if len(self.dim_axes) != len(shape):
            raise VerifyException(
                f"sharding has {len(self.dim_axes)} dimension entries but the tensor "
                f"has rank {len(shape)}"
            )
        for axis in self.all_axes:
            if axis not in mesh.names:
                raise VerifyException(
                    f'sharding names axis "{axis}", which mesh @{self.mesh_name} '
                    f"does not have (its axes: {', '.join(mesh.names)})"
                )
        if not is_global:
            return
        for d, size in enumerate(shape):
            # Uneven splits are padded (GSPMD); a shard with no element at all is refused.
            shards = self.split_factor(d, mesh)
            if 0 < size < shards:
                raise VerifyException(
                    f"dimension {d} of size {size} is split into {shards} shards (the "
                    f"product of its mesh axes {string_list_in_braces_str(self.dim_axes[d])}): "
                    "a split dimension needs at least as many elements as shards"
                )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            mesh = SymbolRefAttr(parser.parse_symbol_name())
            parser.parse_punctuation(",")
            start = parser.pos
            dims_open = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: _parse_dim(parser)
            )
            dims = [d for d, _, _ in dims_open]
            open_dims = [i for i, (_, is_open, _) in enumerate(dims_open) if is_open]
            priorities = [p for _, _, p in dims_open]
            unreduced: list[str] = []
            if parser.parse_optional_punctuation(","):
                parser.parse_keyword("unreduced")
                parser.parse_punctuation("=")
                unreduced = parse_string_list_in_braces(parser)
            axes = [a for d in dims for a in d] + unreduced
            for a in axes:
                if axes.count(a) > 1:
                    parser.raise_error(
                        f'mesh axis "{a}" appears more than once in a sharding',
                        start,
                        parser.pos,
                    )
        return (
            mesh,
            ArrayAttr(ArrayAttr(StringAttr(a) for a in d) for d in dims),
            ArrayAttr(StringAttr(a) for a in unreduced),
            ArrayAttr(IntAttr(d) for d in open_dims),
            ArrayAttr(
                IntAttr(-1 if p is None else p)
                for p in (priorities if any(p is not None for p in priorities) else ())
            ),
        )

    def print_parameters(self, printer: Printer) -> None:
        open_dims = self.open_dims
        dims = ", ".join(
            _dim_str(d, i in open_dims) + ("" if p is None else f"p{p}")
            for i, (d, p) in enumerate(zip(self.dim_axes, self.dim_priorities, strict=True))
        )
        text = f"<{symbol(self.mesh_name)}, [{dims}]"
        if self.unreduced_axes:
            text += f", unreduced={string_list_in_braces_str(self.unreduced_axes)}"
        printer.print_string(text + ">")

    def verify(self) -> None:
        axes = self.all_axes
        if len(set(axes)) != len(axes):
            raise VerifyException("a mesh axis appears more than once in a sharding")
        opens = self.open_dims
        if len(set(opens)) != len(opens) or list(opens) != sorted(opens):
            raise VerifyException("open dimensions must be listed once each, ascending")
        if any(not 0 <= d < len(self.dims.data) for d in opens):
            raise VerifyException(
                f"open dimension out of range for a sharding of {len(self.dims.data)} dimensions"
            )
        priorities = self.priorities.data
        if priorities and len(priorities) != len(self.dims.data):
            raise VerifyException(
                f"a sharding of {len(self.dims.data)} dimensions has {len(priorities)} "
                "priorities (one per dimension, -1 for none, or none at all)"
            )
        if any(p.data < -1 for p in priorities):
            raise VerifyException("a dimension's priority must be p0 or more")


# Open dimensions: `{"a", ?}` / `{?}` (Shardy's syntax).


def _parse_dim(parser: AttrParser) -> tuple[list[str], bool, int | None]:
    """`{"a", "b"}`, `{"a", ?}` or `{?}`, then an optional priority `p<N>`: the axes,
    whether the dimension is open, and its priority."""
    axes, is_open = _parse_dim_axes(parser)
    pos = parser.pos
    word = parser.parse_optional_identifier()
    if word is None:
        return axes, is_open, None
    if not (word.startswith("p") and word[1:].isdigit()):
        parser.raise_error(f"expected a priority `p<N>` after a dimension, got `{word}`", pos)
    return axes, is_open, int(word[1:])


def _parse_dim_axes(parser: AttrParser) -> tuple[list[str], bool]:
    axes: list[str] = []
    parser.parse_punctuation("{")
    if parser.parse_optional_punctuation("}"):
        return axes, False
    while True:
        pos = parser.pos
        if parser.parse_optional_punctuation("?"):
            if not parser.parse_optional_punctuation("}"):
                parser.raise_error("`?` (an open dimension) must come last, before `}`", pos)
            return axes, True
        axes.append(parser.parse_str_literal(" (a mesh axis name or `?`)"))
        if parser.parse_optional_punctuation("}"):
            return axes, False
        parser.parse_punctuation(",")


def _dim_str(axes: Sequence[str], is_open: bool) -> str:
    if not is_open:
        return string_list_in_braces_str(axes)
    return "{" + "".join(quote(a) + ", " for a in axes) + "?}"


# Attributes are immutable, so what passes decode from them is cached per attribute object.
# Keyed by id() with the attribute kept alive in the entry (so an id is never reused while
# cached): hashing a nested attribute costs more than decoding it again.

_Decoded = dict[int, tuple[Attribute, tuple[Any, ...]]]
_MESH_NAMES: _Decoded = {}
_MESH_SHAPES: _Decoded = {}
_DIM_AXES: _Decoded = {}
_UNREDUCED: _Decoded = {}


def _cached(cache: _Decoded, attr: Attribute, decode: Callable[[], tuple[Any, ...]]) -> Any:
    entry = cache.get(id(attr))
    if entry is not None and entry[0] is attr:
        return entry[1]
    if len(cache) > 65536:
        cache.clear()
    value = decode()
    cache[id(attr)] = (attr, value)
    return value


def _mesh_names(mesh: MeshAttr) -> tuple[str, ...]:
    return _cached(_MESH_NAMES, mesh, lambda: tuple(n.data for n in mesh.axis_names.data))


def _mesh_shape(mesh: MeshAttr) -> tuple[int, ...]:
    return _cached(_MESH_SHAPES, mesh, lambda: tuple(s.data for s in mesh.axis_sizes.data))


_AXIS_SIZES: _Decoded = {}


def _axis_sizes(mesh: MeshAttr) -> dict[str, int]:
    return _cached(_AXIS_SIZES, mesh, lambda: dict(zip(mesh.names, mesh.shape, strict=False)))  # pyright: ignore


def _dim_axes(sharding: ShardingAttr) -> tuple[tuple[str, ...], ...]:
    return _cached(
        _DIM_AXES,
        sharding,
        lambda: tuple(tuple(a.data for a in d.data) for d in sharding.dims.data),
    )


def _unreduced_axes(sharding: ShardingAttr) -> tuple[str, ...]:
    return _cached(_UNREDUCED, sharding, lambda: tuple(a.data for a in sharding.unreduced.data))


################################################################################
# Operations                                                                   #
################################################################################


@irdl_op_definition
class MeshOp(IRDLOperation):
    """
    Declares a device mesh: `spmd.mesh @mesh = <["data"=2, "model"=4]>`.

    Its device count is the number of simulated devices.
    """

    name = "spmd.mesh"

    sym_name = prop_def(SymbolNameConstraint())
    mesh = prop_def(MeshAttr)

    traits = traits_def(SymbolOpInterface())

    def __init__(self, sym_name: str, mesh: MeshAttr):
        super().__init__(properties={"sym_name": StringAttr(sym_name), "mesh": mesh})

    @classmethod
    def parse(cls, parser: Parser) -> MeshOp:
        sym_name = parser.parse_symbol_name()
        parser.parse_punctuation("=")
        params = MeshAttr.parse_parameters(parser)
        attrs = parser.parse_optional_attr_dict()
        op = cls(sym_name.data, MeshAttr.new(params))
        op.attributes |= attrs
        return op

    def verify_(self) -> None:
        parent = self.parent_op()
        if parent is None:
            return
        for other in parent.regions[0].block.ops:
            if other is self:
                return
            if isinstance(other, MeshOp):
                raise VerifyException(
                    f"a program declares one mesh, but @{other.sym_name.data} is declared already"
                )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {symbol(self.sym_name.data)} = ")
        self.mesh.print_parameters(printer)
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class ConstraintOp(IRDLOperation):
    """
    `%r = spmd.constraint %x <@mesh, [{"a"}, {}]> : tensor<..>`: the value must have this
    sharding here (the identity on values).
    """

    name = "spmd.constraint"

    T: ClassVar = VarConstraint("T", TensorType.constr())

    input = operand_def(T)
    sharding = prop_def(ShardingAttr)
    result = result_def(T)

    traits = traits_def(Pure())

    assembly_format = "$input $sharding attr-dict `:` type($result)"

    def __init__(self, input: SSAValue, sharding: ShardingAttr):
        super().__init__(
            operands=[input], result_types=[input.type], properties={"sharding": sharding}
        )

    def verify_(self) -> None:
        mesh = lookup_mesh(self, self.sharding.mesh_name)
        assert isinstance(self.result.type, TensorType)
        self.sharding.check(
            self.result.type.get_shape(), mesh, is_global=not in_partitioned_function(self)
        )


@irdl_op_definition
class AxisIndexOp(IRDLOperation):
    """
    `%i = spmd.axis_index @mesh["model"] : tensor<i32>`: this device's coordinate on an
    axis (meaningful after partitioning).
    """

    name = "spmd.axis_index"

    mesh = prop_def(FlatSymbolRefAttr)
    axis = prop_def(StringAttr)
    result = result_def(TensorType)

    traits = traits_def(Pure())

    def __init__(self, mesh: str, axis: str, result_type: TensorType):
        super().__init__(
            result_types=[result_type],
            properties={"mesh": SymbolRefAttr(mesh), "axis": StringAttr(axis)},
        )

    @classmethod
    def parse(cls, parser: Parser) -> AxisIndexOp:
        mesh = parser.parse_symbol_name()
        with parser.in_square_brackets():
            axis = parser.parse_str_literal(" (a mesh axis name)")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_pos = parser.pos
        result_type = parser.parse_type()
        if not isinstance(result_type, TensorType):
            parser.raise_error("spmd.axis_index must produce a tensor type", type_pos, parser.pos)
        op = cls(mesh.data, axis, result_type)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        mesh = symbol(self.mesh.root_reference.data)
        printer.print_string(f" {mesh}[{quote(self.axis.data)}]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        ty = self.result.type
        assert isinstance(ty, TensorType)
        if ty.get_shape() or not isinstance(ty.element_type, IntegerType):
            raise VerifyException(
                f"result must be a rank-0 integer tensor such as tensor<i32>, got {ty}"
            )
        mesh = lookup_mesh(self, self.mesh.root_reference.data)
        if self.axis.data not in mesh.names:
            raise VerifyException(
                f'mesh @{self.mesh.root_reference.data} has no axis "{self.axis.data}"'
            )


################################################################################
# Helpers shared by the verifiers, passes and the interpreter                  #
################################################################################


def _symbol_table(op: Operation) -> Operation | None:
    """`op` or its closest ancestor that is a symbol table (the module)."""
    anchor: Operation | None = op
    while anchor is not None and not anchor.has_trait(SymbolTable):
        anchor = anchor.parent_op()
    return anchor


@functools.cache
def _mesh_groups(mesh: MeshAttr, axes: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
    """`MeshAttr.groups`, computed once per mesh and axes (the passes and the cost model ask
    for a collective's groups many times; a mesh attribute is immutable)."""
    return mesh._groups(axes)  # pyright: ignore[reportPrivateUsage]


def lookup_mesh(op: Operation, name: str) -> MeshAttr:
    """The mesh named `name` visible from `op`, or a `VerifyException`. What
    `SymbolTable.lookup_symbol` finds (the first symbol of that name in the closest symbol
    table), without building a `SymbolRefAttr` per call: the cost model and the step
    estimates ask for a collective's groups, so its mesh, thousands of times."""
    anchor = _symbol_table(op)
    found: Operation | None = None
    for o in anchor.regions[0].block.ops if anchor is not None else ():
        if isinstance(o, MeshOp):
            if o.sym_name.data == name:
                found = o
                break
        elif (symbol := o.get_trait(SymbolOpInterface)) is not None and (
            symbol.get_sym_attr_name(o) == StringAttr(name)
        ):
            found = o
            break
    if not isinstance(found, MeshOp):
        raise VerifyException(f"@{name} does not name an spmd.mesh")
    return found.mesh


def find_mesh_op(op: Operation) -> MeshOp | None:
    """
    The first `spmd.mesh` of the module containing `op` (or of `op` itself, a module):
    the mesh a program runs on; a module has at most one that matters.
    """
    anchor = _symbol_table(op)
    if anchor is None:
        return None
    for child in anchor.regions[0].block.ops:
        if isinstance(child, MeshOp):
            return child
    return None


def find_mesh(op: Operation) -> MeshAttr | None:
    """The one mesh of the module containing `op` (if any)."""
    found = find_mesh_op(op)
    return found.mesh if found is not None else None


def module_mesh(module: Operation) -> tuple[str, MeshAttr] | None:
    """The module's mesh as (symbol name, mesh), if any."""
    found = find_mesh_op(module)
    return (found.sym_name.data, found.mesh) if found is not None else None


def group_ranks(groups: Sequence[Sequence[int]]) -> dict[int, tuple[int, int]]:
    """Each device of `groups` -> (index of its group, its rank in that group)."""
    return {d: (g, r) for g, group in enumerate(groups) for r, d in enumerate(group)}


# Device groups: `on @mesh["a", "b"]` or `on groups [[0, 1], [2, 3]]`, shared by the
# collectives and by tpu.barrier.


class GroupSpecOp(IRDLOperation, ABC):
    """
    An op that names device groups as `on @mesh["a", "b"]` (`mesh`, `mesh_axes`) or
    `on groups [[0, 1], [2, 3]]` (`groups`): the collectives and `tpu.barrier`. One
    accessor for both, so that they denote the same groups for the same spec.
    """

    mesh = opt_prop_def(FlatSymbolRefAttr)
    mesh_axes = opt_prop_def(ArrayAttr[StringAttr])
    groups = opt_prop_def(ArrayAttr[DenseArrayBase])

    @property
    def axes(self) -> tuple[str, ...]:
        return tuple(a.data for a in self.mesh_axes.data) if self.mesh_axes else ()

    @property
    def explicit_groups(self) -> list[list[int]] | None:
        if self.groups is None:
            return None
        return [list(g.get_values()) for g in self.groups.data]  # pyright: ignore

    def spec_groups(self) -> list[list[int]] | None:
        """The groups the spec names, each as device ids in rank order (None: no spec)."""
        explicit = self.explicit_groups
        if explicit is not None:
            return explicit
        if self.mesh is None:
            return None
        return lookup_mesh(self, self.mesh.root_reference.data).groups(self.axes)


def parse_group_spec_after_on(parser: Parser) -> dict[str, Attribute]:
    """`@mesh["a", "b"]` or `groups [[0, 1], [2, 3]]`, as `mesh`/`mesh_axes` or `groups`."""
    if parser.parse_optional_keyword("groups"):
        groups = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parse_int_list(parser)
        )
        return {"groups": ArrayAttr(i64_array(g) for g in groups)}
    mesh = parser.parse_symbol_name()
    axes = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_str_literal)
    return {"mesh": SymbolRefAttr(mesh), "mesh_axes": ArrayAttr(StringAttr(a) for a in axes)}


def group_spec_str(
    mesh: str | None, axes: Sequence[str], groups: Sequence[Sequence[int]] | None
) -> str:
    """The text after `on`."""
    if groups is not None:
        return "groups [" + ", ".join(int_list_str(g) for g in groups) + "]"
    assert mesh is not None
    return f"{symbol(mesh)}[{', '.join(quote(a) for a in axes)}]"


def verify_group_axes(op: Operation, mesh_name: str, axes: Sequence[str]) -> None:
    """Axes of a group over a mesh: at least one, each existing and named once."""
    if not axes:
        raise VerifyException("a group over a mesh must name at least one axis")
    mesh = lookup_mesh(op, mesh_name)
    for a in axes:
        if a not in mesh.names:
            raise VerifyException(f"mesh {symbol(mesh_name)} has no axis {quote(a)}")
        if axes.count(a) > 1:
            raise VerifyException(f"mesh axis {quote(a)} is named twice")


def verify_explicit_groups(op: Operation, groups: list[list[int]]) -> None:
    """Explicit groups: non-empty, equal sizes, a partition of the program's devices."""
    if not groups or not groups[0]:
        raise VerifyException("explicit groups must be non-empty")
    if any(len(g) != len(groups[0]) for g in groups):
        raise VerifyException("explicit groups must all have the same size")
    devices = sorted(d for g in groups for d in g)
    mesh = find_mesh(op)
    count = mesh.device_count if mesh is not None else len(devices)
    if devices != list(range(count)):
        raise VerifyException(
            f"explicit groups must partition the {count} devices 0..{count - 1}, "
            "each device in exactly one group"
        )


def in_partitioned_function(op: Operation) -> bool:
    func = op.parent_op()
    while func is not None and not isinstance(func, FuncOp):
        func = func.parent_op()
    return func is not None and PARTITIONED_ATTR_NAME in func.attributes


def function_shardings(
    func: FuncOp,
) -> tuple[list[ShardingAttr | None], list[ShardingAttr | None]]:
    """The `spmd.sharding` of each argument and result (None: replicated)."""

    def get(attrs: ArrayAttr | None, n: int) -> list[ShardingAttr | None]:
        if attrs is None:
            return [None] * n
        out: list[ShardingAttr | None] = []
        for d in attrs.data:
            s = d.data.get(SHARDING_ATTR_NAME)  # pyright: ignore
            out.append(s if isinstance(s, ShardingAttr) else None)
        return out

    ft = func.function_type
    return (
        get(func.arg_attrs, len(ft.inputs.data)),
        get(func.res_attrs, len(ft.outputs.data)),
    )


def function_global_shapes(
    func: FuncOp,
) -> tuple[list[tuple[int, ...] | None], list[tuple[int, ...] | None]]:
    """The `spmd.global_shape` of each argument and result (None: local x split)."""

    def get(attrs: ArrayAttr | None, n: int) -> list[tuple[int, ...] | None]:
        if attrs is None:
            return [None] * n
        out: list[tuple[int, ...] | None] = []
        for d in attrs.data:
            s = d.data.get(GLOBAL_SHAPE_ATTR_NAME)  # pyright: ignore
            out.append(tuple(s.get_values()) if isinstance(s, DenseArrayBase) else None)  # pyright: ignore
        return out

    ft = func.function_type
    return (
        get(func.arg_attrs, len(ft.inputs.data)),
        get(func.res_attrs, len(ft.outputs.data)),
    )


def _check_global_shape(
    sharding: ShardingAttr | None, mesh: MeshAttr | None, shape: Sequence[int], ty: Attribute
) -> None:
    """A padded value's `spmd.global_shape` must give back its local type."""
    if sharding is None or mesh is None:
        raise VerifyException(f"{GLOBAL_SHAPE_ATTR_NAME} needs an {SHARDING_ATTR_NAME}")
    assert isinstance(ty, TensorType | MemRefType)
    sharding.check(shape, mesh, is_global=True)
    local = sharding.local_shape(shape, mesh)
    if tuple(local) != tuple(ty.get_shape()):
        raise VerifyException(
            f"{GLOBAL_SHAPE_ATTR_NAME} {int_list_str(shape)} split by the sharding gives "
            f"blocks of shape {int_list_str(local)}, but the type's shape is "
            f"{int_list_str(ty.get_shape())}"
        )


def verify_function_shardings(func: FuncOp) -> None:
    """
    Check the `spmd.*` attributes of a function (xDSL has no hook for argument
    attributes): shardings name a mesh, fit their tensor, and divide its global shape.
    """
    for name in (PARTITIONED_ATTR_NAME, PER_DEVICE_IO_ATTR_NAME):
        if name in func.attributes and not isinstance(func.attributes[name], UnitAttr):
            raise VerifyException(f"{name} must be a unit attribute")
    is_global = PARTITIONED_ATTR_NAME not in func.attributes
    args, results = function_shardings(func)
    arg_shapes, res_shapes = function_global_shapes(func)
    ft = func.function_type
    for kind, shardings, shapes, types in (
        ("argument", args, arg_shapes, ft.inputs.data),
        ("result", results, res_shapes, ft.outputs.data),
    ):
        for i, (sharding, shape, ty) in enumerate(zip(shardings, shapes, types, strict=False)):
            try:
                if shape is not None and is_global:
                    raise VerifyException(
                        f"{GLOBAL_SHAPE_ATTR_NAME} belongs to a partitioned function only"
                    )
                if sharding is None:
                    if shape is not None:
                        _check_global_shape(None, None, shape, ty)
                    continue
                # (A level-T kernel keeps them on its input and output buffers.)
                if not isinstance(ty, TensorType | MemRefType):
                    raise VerifyException("it has a sharding but is not a tensor")
                mesh = lookup_mesh(func, sharding.mesh_name)
                sharding.check(ty.get_shape(), mesh, is_global=is_global)
                if shape is not None:
                    _check_global_shape(sharding, mesh, shape, ty)
            except VerifyException as e:
                raise VerifyException(f"{kind} {i} of @{func.sym_name.data}: {e}") from e
    _check_sharding_attr_kinds(func)


def _check_sharding_attr_kinds(func: FuncOp) -> None:
    for attrs in (func.arg_attrs, func.res_attrs):
        if attrs is None:
            continue
        for d in attrs.data:
            s = d.data.get(SHARDING_ATTR_NAME)  # pyright: ignore
            if s is not None and not isinstance(s, ShardingAttr):
                raise VerifyException(f"{SHARDING_ATTR_NAME} must be a #spmd.sharding, got {s}")


register_module_check(FuncOp, verify_function_shardings)  # type: ignore[arg-type]
"""`shardc.parsing.verify_module` checks every function's shardings (xDSL has no place
for checks of argument attributes)."""


################################################################################
# Manual computations (shard_map inside level-G code, issue 13)                #
################################################################################


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """`spmd.return %v : tensor<..>`: ends a manual computation's body (Shardy's sdy.return)."""

    name = "spmd.return"

    values = var_operand_def(TensorType)

    traits = traits_def(IsTerminator())

    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue] = ()):
        super().__init__(operands=[values])

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), ManualComputationOp):
            raise VerifyException("spmd.return must end the body of spmd.manual_computation")


def _parse_sharding_list(parser: Parser, keyword: str) -> list[ShardingAttr]:
    parser.parse_keyword(keyword)
    parser.parse_punctuation("=")
    return parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE,
        lambda: ShardingAttr.new(ShardingAttr.parse_parameters(parser)),
    )


def _sharding_list_str(shardings: ArrayAttr[ShardingAttr]) -> str:
    parts = []
    for s in shardings.data:
        dims = ", ".join(string_list_in_braces_str(d) for d in s.dim_axes)
        parts.append(f"<{symbol(s.mesh_name)}, [{dims}]>")
    return "[" + ", ".join(parts) + "]"


@irdl_op_definition
class ManualComputationOp(IRDLOperation):
    """
    shard_map inside a level-G program (Shardy's `sdy.manual_computation`):

    ```mlir
    %r = spmd.manual_computation(%x) in_shardings=[<@mesh, [{"x"}, {}]>]
        out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x"} (%l: tensor<2x4xf32>) {
      %s = collective.permute %l on @mesh["x"], shift = 1 : tensor<2x4xf32>
      spmd.return %s : tensor<2x4xf32>
    } : (tensor<8x4xf32>) -> tensor<8x4xf32>
    ```

    Operands and results are global values; the body is per-device code (local types:
    each operand split as its in-sharding's manual axes say, collectives over the manual
    axes), run on every device of the mesh. Mesh axes that are not manual (free axes)
    replicate the body: a boundary sharding may name free axes after the manual ones of
    a dimension (Shardy's partially manual form), which lay out the global value outside
    the body only (`manual_part`). The body uses no value from outside
    (IsolatedFromAbove).
    """

    name = "spmd.manual_computation"

    args = var_operand_def(TensorType)
    in_shardings = prop_def(ArrayAttr[ShardingAttr])
    out_shardings = prop_def(ArrayAttr[ShardingAttr])
    manual_axes = prop_def(ArrayAttr[StringAttr])
    body = region_def("single_block")
    outs = var_result_def(TensorType)

    traits = traits_def(IsolatedFromAbove())

    def __init__(
        self,
        args: Sequence[SSAValue],
        in_shardings: Sequence[ShardingAttr],
        out_shardings: Sequence[ShardingAttr],
        manual_axes: Sequence[str],
        body: Region,
        result_types: Sequence[Attribute],
    ):
        super().__init__(
            operands=[args],
            result_types=[result_types],
            regions=[body],
            properties={
                "in_shardings": ArrayAttr(in_shardings),
                "out_shardings": ArrayAttr(out_shardings),
                "manual_axes": ArrayAttr(StringAttr(a) for a in manual_axes),
            },
        )

    @property
    def axes(self) -> tuple[str, ...]:
        return tuple(a.data for a in self.manual_axes.data)

    @classmethod
    def parse(cls, parser: Parser) -> ManualComputationOp:
        pos = parser.pos
        operands = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        in_shardings = _parse_sharding_list(parser, "in_shardings")
        out_shardings = _parse_sharding_list(parser, "out_shardings")
        parser.parse_keyword("manual_axes")
        parser.parse_punctuation("=")
        axes = parse_string_list_in_braces(parser)
        block_args = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=True)
        )
        body = parser.parse_region(block_args)  # pyright: ignore[reportArgumentType]
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types_pos = parser.pos
        ft = parser.parse_function_type()
        if len(ft.inputs.data) != len(operands):
            parser.raise_error(
                f"{len(operands)} operands but {len(ft.inputs.data)} operand types",
                types_pos,
                parser.pos,
            )
        values = parser.resolve_operands(operands, ft.inputs.data, pos)
        op = cls(values, in_shardings, out_shardings, axes, body, ft.outputs.data)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string("(")
        printer.print_list(self.args, printer.print_operand)
        printer.print_string(f") in_shardings={_sharding_list_str(self.in_shardings)}")
        printer.print_string(f" out_shardings={_sharding_list_str(self.out_shardings)}")
        printer.print_string(f" manual_axes={string_list_in_braces_str(self.axes)} (")
        printer.print_list(self.body.block.args, printer.print_block_argument)
        printer.print_string(") ")
        printer.print_region(self.body, print_entry_block_args=False)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type(self.args.types, self.outs.types)

    def verify_(self) -> None:
        if in_partitioned_function(self):
            raise VerifyException(
                "spmd.manual_computation belongs in a level-G function (spmd-partition "
                "inlines its body)"
            )
        mesh_op = find_mesh_op(self)
        if mesh_op is None:
            raise VerifyException("spmd.manual_computation needs a spmd.mesh in the module")
        mesh = mesh_op.mesh
        axes = self.axes
        for a in axes:
            if a not in mesh.names:
                raise VerifyException(f"manual_axes names {quote(a)}, which the mesh does not have")
            if axes.count(a) > 1:
                raise VerifyException(f"manual_axes names {quote(a)} twice")
        block = self.body.block
        ret = block.last_op
        if not isinstance(ret, ReturnOp):
            raise VerifyException("the body must end with spmd.return")
        for what, shardings, outer, inner in (
            ("operand", self.in_shardings, self.args.types, [a.type for a in block.args]),
            ("result", self.out_shardings, self.outs.types, list(ret.values.types)),
        ):
            if not len(shardings.data) == len(outer) == len(inner):
                raise VerifyException(
                    f"{len(outer)} {what}s, {len(shardings.data)} {what} shardings and "
                    f"{len(inner)} body {'arguments' if what == 'operand' else 'results'}"
                )
            for i, (s, g, loc) in enumerate(zip(shardings.data, outer, inner, strict=True)):
                self._verify_boundary(f"{what} {i}", s, g, loc, mesh_op, axes)

    def _verify_boundary(
        self,
        what: str,
        sharding: ShardingAttr,
        global_type: Attribute,
        local: Attribute,
        mesh_op: MeshOp,
        axes: Sequence[str],
    ) -> None:
        mesh = mesh_op.mesh
        if sharding.mesh_name != mesh_op.sym_name.data:
            raise VerifyException(f"{what}: sharding names mesh @{sharding.mesh_name}")
        assert isinstance(global_type, TensorType) and isinstance(local, TensorType)
        try:
            sharding.check(global_type.get_shape(), mesh, is_global=True)
        except VerifyException as e:
            raise VerifyException(f"{what}: {e}") from e
        if sharding.unreduced_axes:
            raise VerifyException(f"{what}: unreduced axes at a manual computation's boundary")
        problem = manual_order_problem(sharding, axes)
        if problem is not None:
            raise VerifyException(f"{what}: {problem}")
        manual = manual_part(sharding, axes)
        local_shape = manual.local_shape(global_type.get_shape(), mesh)
        want = TensorType(global_type.element_type, local_shape)
        if local != want:
            raise VerifyException(
                f"{what}: {global_type} split as {sharding}"
                + (f" (by its manual axes: {manual})" if manual != sharding.closed() else "")
                + f" is {want} per device, but the body has {local}"
            )


def manual_order_problem(sharding: ShardingAttr, manual_axes: Sequence[str]) -> str | None:
    """
    Why `sharding` cannot be a boundary sharding of a manual computation over
    `manual_axes` (None: it can). Free (auto) axes may follow the manual axes of a
    dimension, never precede them (Shardy's rule), so that each device's manual block is
    contiguous; no `unreduced` over a free axis.
    """
    for d, dim in enumerate(sharding.dim_axes):
        free = [a for a in dim if a not in manual_axes]
        if free and any(a in manual_axes for a in dim[dim.index(free[0]) :]):
            return (
                f"dimension {d} splits over {string_list_in_braces_str(dim)}: a manual axis "
                f"follows the free axis {quote(free[0])} (manual axes come first)"
            )
    return None


def manual_part(sharding: ShardingAttr, manual_axes: Sequence[str]) -> ShardingAttr:
    """
    The manual axes of a boundary sharding: what splits the body's local type. The free
    axes after them only lay out the global value outside (the body runs replicated along
    them, see `ManualComputationOp`).
    """
    dims = [[a for a in dim if a in manual_axes] for dim in sharding.dim_axes]
    return ShardingAttr(sharding.mesh, dims)


MANUAL_OPS_13 = (ManualComputationOp, ReturnOp)
"""shard_map inside level-G code (issue 13)."""


Spmd = Dialect(
    "spmd",
    [MeshOp, ConstraintOp, AxisIndexOp, *MANUAL_OPS_13],
    [MeshAttr, ShardingAttr],
)
