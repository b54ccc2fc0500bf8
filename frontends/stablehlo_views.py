"""
The global values of a level-S (shard_map) function and the per-device values that hold
them.

A global value outside the manual computations is a `View`: its local value and how it
is split over the mesh. An argument's split is fixed by the first manual computation that
takes it (its block argument gets the local type then); a splat constant stays a rank-0
scalar until a user needs it in some layout. `Localizer` answers "the local value of this
global value under that sharding", or says why there is none.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardc.dialects import spmd
from shardc.frontends.common import Emitter
from shardc.frontends.stablehlo_shardings import ShardingConverter
from shardc.frontends.stablehlo_source import SourceErrors
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import Rewriter


@dataclass
class View:
    """A global value of a level-S function: its local value and how it is split."""

    local: SSAValue | None
    sharding: spmd.ShardingAttr | None
    arg: int | None = None
    constant: bool = False
    declared: spmd.ShardingAttr | None = None
    """An argument's declared sharding (its layout unless a manual computation says)."""
    scalar: SSAValue | None = None
    """For a splat: its rank-0 value, broadcast to whatever layout a user needs."""
    global_type: TensorType | None = None


class Localizer:
    """Local values of `View`s under a sharding (fixing arguments' splits on first use)."""

    def __init__(self, shardings: ShardingConverter, errors: SourceErrors, emit: Emitter):
        self.shardings = shardings
        self.errors = errors
        self.emit = emit
        self.arg_values: dict[int, SSAValue] = {}
        """The new function's block argument for each source argument index."""

    def error(self, op: Operation | None, message: str) -> Exception:
        return self.errors.error(op, message)

    def local_type(self, ty: Attribute, sharding: spmd.ShardingAttr | None) -> TensorType:
        mesh = self.shardings.mesh
        assert isinstance(ty, TensorType) and mesh is not None
        if sharding is None:
            return ty
        shape = ty.get_shape()
        for d, n in enumerate(shape):
            f = sharding.split_factor(d, mesh)
            if n % f:
                raise ValueError(
                    f"dimension {d} of size {n} is not divisible by {f}, the product of "
                    f"its mesh axes"
                )
        return TensorType(ty.element_type, sharding.local_shape(shape, mesh))

    def localize(
        self,
        view: View,
        sharding: spmd.ShardingAttr | None,
        op: Operation,
        value: SSAValue,
    ) -> SSAValue:
        """`view`'s local value under `sharding` (fixing an argument's split on first use)."""
        if sharding is not None and sharding.is_replicated():
            sharding = None
        if view.scalar is not None:
            return self.materialize(view, sharding, op, value)
        if view.local is None:
            assert view.arg is not None
            try:
                ty = self.local_type(value.type, sharding)
            except ValueError as e:
                raise self.error(op, f"argument {view.arg}: {e}") from None
            old = self.arg_values[view.arg]
            new = Rewriter.replace_value_with_new_type(old, ty)
            self.arg_values[view.arg] = new
            view.local, view.sharding = new, sharding
            return new
        current = view.sharding
        if current is not None and current.is_replicated():
            current = None
        if current != sharding:
            raise self.error(
                op,
                f"this value is split as {current or 'replicated'} but the manual "
                f"computation takes it as {sharding or 'replicated'}; shardc imports "
                "shard_map programs as per-device programs and does not reshard between "
                "manual computations",
            )
        return view.local

    def materialize(
        self, view: View, sharding: spmd.ShardingAttr | None, op: Operation, value: SSAValue
    ) -> SSAValue:
        """A splat view as a local value under `sharding` (a broadcast of its scalar)."""
        assert view.scalar is not None
        ty = view.global_type or value.type
        try:
            local = self.local_type(ty, sharding)
        except ValueError as e:
            raise self.error(op, str(e)) from None
        if local == view.scalar.type:
            return view.scalar
        return self.emit.broadcast(view.scalar, [], local)

    # ops outside the manual computations ---------------------------------------------------
