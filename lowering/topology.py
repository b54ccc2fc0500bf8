"""
Where a collective's peers are, as seen from inside a kernel (`lower-to-tpu`): the ring of
a mesh axis or of explicit device groups (`Axis`), this device's coordinate on it, the
device ids of its neighbours, and whether a ring runs both ways.

A kernel is the same program on every device, so everything device-dependent is computed
at run time from `tpu.device_id`: on a mesh axis N = the axis size, `right`/`left` = the
devices at coordinate (me +- 1) mod N with the same coordinates elsewhere
(`device_id + (coord' - me) * stride`). A group ring's rank and peers come from static
tables, looked up from the device id through chains of `arith.select` (`lookup`).

Everything is emitted once per kernel, at its top (right after `tpu.device_id`), so that
every collective on an axis can use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from shardc.dialects import collective, spmd, tpu
from shardc.dialects.spmd import MeshAttr
from shardc.hardware.chips import Chip
from shardc.hardware.cost import CostModel
from shardc.lowering.emit import Emitter, chunk
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, i32
from xdsl.ir import Block, Operation, SSAValue


@dataclass
class Axis:
    """The ring of one mesh axis (or of device groups) as seen by this device."""

    mesh: str
    name: str
    size: int
    stride: int
    me: SSAValue
    """i32: this device's coordinate on the axis."""
    n: SSAValue
    """i32 constant N."""
    neighbours: dict[int, SSAValue] = field(default_factory=dict)
    groups: list[list[int]] | None = None
    """A group ring (`Topology.group_axis`): every group's device ids in rank order."""


class Topology:
    """The axes and neighbours of one kernel, emitted after its `tpu.device_id` (`dev`)."""

    def __init__(
        self, dev: SSAValue, chip: Chip, mesh: MeshAttr | None, bidirectional: bool | None
    ):
        self.dev = dev
        """i32: this device's id (the anchor everything here is inserted after)."""
        self.chip = chip
        self.mesh = mesh
        """The module's mesh (None: none), which decides the wraparound links."""
        self.bidirectional = bidirectional
        """Rings both ways: None = on axes with wraparound links (see `two_way`)."""
        self.axes: dict[str, Axis] = {}

    def _insert_at_top(self, ops: list[Operation], after: Operation) -> None:
        block = after.parent_block()
        assert block is not None
        block.insert_ops_after(ops, after)

    def axis(self, op: collective.CollectiveOp, name: str) -> Axis:
        """The ring of mesh axis `name` of `op`'s mesh."""
        assert op.mesh is not None
        mesh_name = op.mesh.root_reference.data
        found = self.axes.get(name)
        if found is not None:
            return found
        mesh = spmd.lookup_mesh(op, mesh_name)
        i = list(mesh.names).index(name)
        stride = math.prod(mesh.shape[i + 1 :])
        me = tpu.AxisIndexOp(mesh_name, name)
        me.result.name_hint = f"me_{name}"
        n = arith.ConstantOp(IntegerAttr(mesh.axis_size(name), i32))
        n.result.name_hint = f"n_{name}"
        anchor = self.dev.owner
        assert isinstance(anchor, Operation)
        self._insert_at_top([me, n], anchor)
        found = Axis(mesh_name, name, mesh.axis_size(name), stride, me.result, n.result)
        self.axes[name] = found
        return found

    def group_axis(self, op: collective.CollectiveOp) -> Axis:
        """
        The ring over `op`'s device groups (explicit groups, or several mesh axes as one
        group, rank row-major): this device's rank and (`neighbour`) its peers' device
        ids are looked up from the device id. The groups are static but the kernel is
        the same on every device, so the lookup is a chain of `arith.select`s.
        """
        groups = op.device_groups()
        key = "groups " + repr(groups)
        found = self.axes.get(key)
        if found is not None:
            return found
        name = f"g{sum(1 for a in self.axes if a.startswith('groups '))}"
        e = Emitter(Block())
        ranks = {d: r for d, (_, r) in spmd.group_ranks(groups).items()}
        me = self.lookup(e, ranks, f"me_{name}")
        n = e.i32(len(groups[0]), f"n_{name}")
        anchor = self.dev.owner
        assert isinstance(anchor, Operation)
        self._insert_at_top(e.detach_all(), anchor)
        found = Axis("", name, len(groups[0]), 0, me, n, groups=groups)
        self.axes[key] = found
        return found

    def lookup(self, e: Emitter, table: dict[int, int], hint: str) -> SSAValue:
        """i32 `table[device id]`: selects on the device id, the most common value the default."""
        values = list(table.values())
        default = max(set(values), key=values.count)
        out = e.i32(default)
        for d, v in sorted(table.items()):
            if v != default:
                here = e.op(arith.CmpiOp(self.dev, e.i32(d), "eq"))
                out = e.op(arith.SelectOp(here, e.i32(v), out))
        out.name_hint = hint
        return out

    def neighbour(self, ax: Axis, k: int) -> SSAValue:
        """i32 device id of the device at axis coordinate (me + k) mod N."""
        k %= ax.size
        if k in ax.neighbours:
            return ax.neighbours[k]
        e = Emitter(Block())
        hint = {1: "right", ax.size - 1: "left"}.get(k, f"peer_{k}")
        if ax.groups is not None:
            where = spmd.group_ranks(ax.groups)
            table = {d: ax.groups[g][(r + k) % ax.size] for d, (g, r) in where.items()}
            dev = self.lookup(e, table, f"{hint}_{ax.name}")
        else:
            kc = e.i32(k)
            coord = e.rem(e.add(ax.me, kc), ax.n)
            delta = e.sub(coord, ax.me)
            if ax.stride != 1:
                delta = e.mul(delta, e.i32(ax.stride))
            dev = e.add(self.dev, delta, f"{hint}_{ax.name}")
        ops = e.detach_all()
        anchor = ax.n.owner
        assert isinstance(anchor, Operation)
        # After the axis constants and any neighbour computed before.
        last = anchor
        for v in ax.neighbours.values():
            if isinstance(v.owner, Operation) and v.owner.parent_block() is anchor.parent_block():
                last = v.owner
        self._insert_at_top(ops, last)
        ax.neighbours[k] = dev
        return dev

    def wraparound(self, ax: Axis) -> bool:
        """Whether the axis's ring has wraparound links (`CostModel.axis_wraps`, which
        costs the ring as this lowering builds it; a group ring's members may be
        anywhere: no)."""
        if ax.groups is not None:
            return False
        return CostModel(self.chip, self.mesh).axis_wraps(ax.name)

    def two_way(self, ax: Axis) -> bool:
        """
        Whether the ring over `ax` runs both ways: the pass's `bidirectional` option, by
        default only where the axis has wraparound links (on a line the two directions'
        rings would share every link: no faster, one more set of buffers).
        """
        return self.wraparound(ax) if self.bidirectional is None else self.bidirectional


def group_view(
    e: Emitter, ref: SSAValue, dim: int, size: int, prefix: list[Axis], hint: str = "group_view"
) -> SSAValue:
    """
    The part of `ref` along `dim` (blocks of `size`) that belongs to this device's
    coordinates on the `prefix` axes (row-major, first major): where a later, more
    minor phase of a multi-axis collective works.
    """
    if not prefix:
        return ref
    idx = prefix[0].me
    for a in prefix[1:]:
        idx = e.add(e.mul(idx, a.n), a.me)
    return chunk(e, ref, dim, size, e.to_index(idx), hint)
