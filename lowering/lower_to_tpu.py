"""
`lower-to-tpu{chip=v5e}`: a level-S function (per-device `hlo` + `collective`) becomes one
level-T `tpu` kernel per device (DESIGN.md "Level T", issue 7 item 2). Collectives
become ring (or direct) algorithms of remote DMAs over mesh axes or device groups
(all_gather, reduce_scatter / all_reduce of every reduction kind and element type,
all_to_all, permute), and every `hlo` compute op between them as a tiled,
double-buffered VMEM loop (lowering/compute.py).

Calling convention (Mosaic / Pallas style: a kernel returns nothing, it writes its
outputs into buffers the caller passes)
-----------------------------------------------------------------------------------------
    func.func @main(%x, %y, ..,              the k level-S arguments (their names), HBM
                    %out0 .. %out{m-1},      the m level-S results, HBM (written)
                    %scratch0 ..)            s HBM buffers, one per intermediate value
        attributes {tpu.kernel, tpu.io = [k, m, s]}
Every memref is `#tpu.memory_space<hbm>` with the level-S tensor's (per-device) shape and
element type. The scratch arguments are Pallas's `hbm_scratch` outputs: the caller passes
uninitialized buffers and discards them afterwards. With `run_level_t`, pass the inputs,
then `None` for every output and scratch argument: `outputs[d][k + i]` is result i.
`tpu.io` says how many arguments of each kind there are.

The kernel starts with `tpu.barrier` over all devices (Pallas's "every device has entered
the kernel" before anyone pushes into its buffers or signals its semaphores). Every
collective gets its own semaphores and VMEM scratch (VMEM is released with `tpu.dealloc`
at its end), and every SSA value its own HBM buffer, so a collective never writes into a
buffer a neighbour still reads for another purpose.

Algorithms (N = the axis size; `right`/`left` = the devices at axis coordinate
(me +- 1) mod N, the same coordinates elsewhere: `device_id + (coord' - me) * stride`)
-----------------------------------------------------------------------------------------
* all_gather (Pallas's ring all-gather, HBM to HBM): a local DMA puts the own shard into
  its slot of the output; then N-1 steps (`scf.for`) each forward slot (me - s) mod N to
  the right neighbour's same slot, receiving slot (me - s - 1) mod N from the left on
  receive semaphore s (N-1 of them). Each slot is written once: N-buffering, no sender can
  overrun a receiver, no handshake is needed. On a ring with wraparound links (as
  `CostModel.axis_rings` decides: v5e/v6e axes of 16, v4/v5p multiples of 4) it is
  bidirectional: the first half of every slot (along its first even dimension) travels
  right, the second half left, both DMAs of a step in flight at once, so both directions
  of every link carry data (on a line the wrap hop would share the links: one way only).
  The pass option `bidirectional` overrides that choice (true: both ways on every ring,
  false: one way; bench/collectives.py compares the two).
* reduce_scatter (ring, partial sums travel right, VMEM): step s sends the running
  partial sum of chunk (me - s - 1) mod N to the right neighbour's receive buffer, then
  adds its own chunk (me - s - 2) mod N (a local DMA from HBM) to what arrived from the
  left; after N-1 steps rank r holds the sum of chunk r. Double-buffered receive slots
  with a credit handshake (Pallas's capacity semaphore): each device first signals its
  left neighbour min(2, N-1) credits (its free receive slots); a sender waits for one
  credit before each remote DMA; a receiver signals one credit back to its left
  neighbour after it has consumed a slot; at the end each device waits for the
  min(2, N-1) credits still owed to it, so every semaphore ends at zero and no device
  leaves while its right neighbour still reads its last message. The send buffer is
  overwritten only after `dma_wait` on the send semaphore. Sums run along the ring
  (rank r+1, r+2, ..., r), not in rank order: integers are exact, floats agree to
  rounding. Step 0 sends the own chunk straight from HBM. The reduction is level S's:
  add / mul / max / min as `arith.addf|mulf|maximumf|minimumf` (ints: addi, muli, maxsi,
  minsi; i1: ori for add/max, andi for mul/min); bf16 / f16 partials travel and
  accumulate in f32 (receive buffers and accumulator in f32, the own chunk widened with
  `arith.extf`) and are rounded once (`arith.truncf`) when the result is copied out.
  On a ring with wraparound it is bidirectional like the all_gather: the first half of
  every chunk is reduced on a rightward ring, the second half on a leftward one (each
  with its own buffers, semaphores and credits), the two rings' steps interleaved.
  A chunk whose 4 VMEM blocks per ring do not fit the kernel's VMEM is reduced in
  pieces (halving along the first dimension they divide until they fit), one piece
  after the other through the same buffers: the credits run on (no drain between
  pieces) and a piece's result is copied out while the next piece's first messages
  travel.
* Several mesh axes (`on @m["a", "b"]`, rank row-major over the listed axes): one ring
  phase per axis (a 2-D / 3-D torus algorithm), axes of size 1 skipped. reduce_scatter
  runs the most major axis first, each phase reduce-scattering the previous phase's VMEM
  result (only the last phase may be bidirectional or cut into pieces); all_gather runs
  the most minor axis first, each later phase forwarding, in place, the blocks the
  earlier ones assembled (within the part of the output that belongs to this device's
  coordinates on the axes before it). Multi-axis `_start`s run whole at the `_start`.
* all_reduce = reduce_scatter (above) over the buffer viewed as [G, numel / G] +
  all_gather (above) of the reduced chunk into the output (2 (G-1)/G of the data per
  device over the ring), G the group size; each reduce-scatter phase leaves its result
  in this device's part of the output (where the next phase, and the all-gather, find
  it), so every phase may run both ways and in pieces. Over m > 1 axes of one size (a
  2-D / 3-D torus) the buffer is cut into m parts, part i reduced over the axes rotated
  by i (2-D: half x then y, half y then x), all parts' rings in one loop, so every phase
  keeps every axis's links busy (twice a 1-D ring's bandwidth on a 2-D torus). bf16 /
  f16 over several axes keep the intermediate phases' f32 sums in VMEM instead (one
  rounding). When G does not divide numel, the last numel mod G elements are pushed
  directly to row `me` of every peer's [G, r] VMEM buffer and reduced there in rank
  order (level S's order), the rest as above.
* Device groups (`on groups [[..]]`), and permute / all_to_all over several mesh axes
  (one group per combination of the other axes' coordinates): a ring over each group in
  rank order; the rank and the peers' device ids come from the device id through chains
  of `arith.select` (the kernel is the same on every device); all_to_all's steps are
  unrolled. Groups run one way (their members need not be torus neighbours).
* all_to_all: direct, block t of the input straight to rank t's output slot
  `me`, N-1 remote DMAs (non-neighbours are routed through intermediate chips), one
  receive semaphore per step; each slot is written once. `all_to_all_start` issues every
  DMA at the `_start` and waits at the `done`.
* permute: `shift = k` one remote DMA from the input to the output of device
  (me + k) mod N; `pairs` one `scf.if` per pair on the sender (DMA start) and the
  receiver (wait), zeros (a VMEM store + local DMA) on ranks nobody sends to. Each output
  is written by one sender once, so there is nothing to overrun.
* `_start` / `done`: `permute_start` issues its DMAs at the `_start` and waits for them at
  the `done`; `all_gather_start` does its local copy and starts step 0's DMAs at the
  `_start`, and waits for them and runs steps 1..N-2 at the `done` (for N = 2 the whole
  transfer overlaps the compute in between); `all_reduce_start` runs its reduce-scatter
  phase at the `_start` and splits its all-gather phase the same way;
  `reduce_scatter_start` sends step 0's messages at the `_start` and does everything
  else (receive, add, later steps, copy out) at the `done` (later steps each need the
  previous step's data, so only one step overlaps the compute in between).
* hlo compute ops (elementwise, compare, select, convert, constant, iota, broadcast,
  transpose, dot on the MXU, reduce; every element type, level S's numerics): one
  `scf.for` over blocks each, (8, 128)-aligned blocks as large as the VMEM left over
  allows, operand blocks DMA'd HBM->VMEM into two slots (the next step's prefetched
  while this one computes), result blocks DMA'd back; see lowering/compute.py.

Not yet (the pass says so with an error at the op): a reduce_scatter chunk too large for
VMEM that no dimension lets cut into pieces, or the VMEM intermediate of a multi-axis
reduce_scatter (or a bf16/f16 multi-axis all_reduce) over VMEM (an error naming the op,
the size and the capacity); overlapping a reduce_scatter piece's last step with the
next piece's (the ring runs a piece's N-1 steps, then the next's); no (8, 128) vreg
alignment of collective blocks; compute ops whose smallest legal blocks do not
fit VMEM (an error naming the op, the blocks and the capacity), among them dense
non-splat constants larger than VMEM; fusing compute ops (each is its own loop through
HBM, and waits for its last write-back before the next starts); overlapping more than
one ring step of a `_start` (or any of a multi-axis one) with compute, so a level-T step
can expose communication the level-S schedule hid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from shardc.diagnostics import OpPassError
from shardc.dialects import collective, hlo, spmd, tpu
from shardc.dialects.hlo import element_kind
from shardc.dialects.tpu import memref_type
from shardc.hardware.chips import Chip, UnknownChipError, get_chip
from shardc.hardware.cost import CostModel
from shardc.lowering import compute as tpu_compute
from shardc.lowering import movement as tpu_movement
from shardc.lowering.emit import (
    HBM,
    INDEX,
    VMEM,
    Emitter,
    hbm_type,
    nbytes,
    tensor_type,
)
from shardc.lowering.level_s_summary import record_level_s
from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float16Type,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    TensorType,
    UnitAttr,
    VectorType,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException


@dataclass
class _Axis:
    """The ring of one mesh axis as seen by this device."""

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
    """A group ring (`group_axis`): every group's device ids in rank order."""


_COMBINE: dict[str, dict[str, type[Operation]]] = {
    "float": {
        "add": arith.AddfOp,
        "mul": arith.MulfOp,
        "max": arith.MaximumfOp,
        "min": arith.MinimumfOp,
    },
    "int": {"add": arith.AddiOp, "mul": arith.MuliOp, "max": arith.MaxSIOp, "min": arith.MinSIOp},
    "bool": {"add": arith.OrIOp, "mul": arith.AndIOp, "max": arith.OrIOp, "min": arith.AndIOp},
}
"""The arith op combining two partials, per element kind and reduction kind (as level S's
`reduce_ufunc`: max/min propagate NaN; on i1 add/max are or, mul/min and)."""


def accumulation_type(elem: Attribute) -> Attribute:
    """What a reduction accumulates `elem` in: f32 for bf16/f16 (level S's rule)."""
    return f32 if isinstance(elem, BFloat16Type | Float16Type) else elem


@dataclass
class _Ring:
    """
    One ring of a collective phase: the steps over `ax` in `direction` (+1: to the
    right), moving part `part` (None: all; else (split dim, size, index), see `chunk`) of
    every chunk c = block c of `k` along `dim` of `ref`.
    """

    ax: _Axis
    ref: SSAValue
    dim: int
    k: int
    direction: int
    part: tuple[int, int, int] | None
    tag: str
    dst: SSAValue | None = None
    """reduce_scatter: the HBM buffer (of chunk shape) the reduced part goes to."""


@dataclass
class _RsState:
    """The VMEM buffers and semaphores of one reduce-scatter ring (`run_rs_rings`)."""

    bshape: list[int]
    to: SSAValue
    back: SSAValue
    rbuf: SSAValue
    mine: SSAValue
    acc: SSAValue
    copy_sem: SSAValue
    send_sem: SSAValue
    recv_sems: SSAValue
    credits: SSAValue
    out_sem: SSAValue | None
    """Copies of a piece's result out of `acc` (with several pieces)."""


class KernelLowering:
    """One level-S function becoming one tpu kernel; the op lowerings of `tpu_compute`
    and `tpu_movement` get it to reach the emitter (`e`), the chip and `buffers`."""

    def __init__(
        self,
        function: func.FuncOp,
        chip: Chip,
        vmem_limit: int | None = None,
        bidirectional: bool | None = None,
    ):
        self.f = function
        self.chip = chip
        self.bidirectional = bidirectional
        """Rings both ways: None = on axes with wraparound links (see `two_way`)."""
        self.vmem_bytes = vmem_limit if vmem_limit is not None else chip.vmem_bytes
        """The VMEM a kernel may use: the chip's, or the pass's `vmem-limit`."""
        self.module_mesh = spmd.find_mesh(function)
        self.axes: dict[str, _Axis] = {}
        self.buffers: dict[SSAValue, SSAValue] = {}
        self.pending: dict[SSAValue, list[Operation]] = {}
        """future -> ops to emit at its `done` (permute_start's waits)."""

    # Planning ---------------------------------------------------------------------------

    def check(self, op: Operation) -> None:
        if isinstance(op, collective.CollectiveOp):
            return
        if isinstance(op, collective.DoneOp | func.ReturnOp):
            return
        if tpu_compute.handles(op):
            tpu_compute.check(self, op)
            return
        if tpu_movement.handles(op):
            tpu_movement.check(self, op)
            return
        raise OpPassError(op, f"lower-to-tpu: {op.name} is not supported yet")

    def run(self) -> func.FuncOp:
        f = self.f
        old = f.body.block
        for op in old.ops:
            self.check(op)
        ret = old.last_op
        assert isinstance(ret, func.ReturnOp)
        inputs = [tensor_type(t) for t in f.function_type.inputs.data]
        outputs = [tensor_type(t) for t in f.function_type.outputs.data]
        # Which value lands in which output directly (the first return of a value made in
        # the body); everything else gets a scratch buffer or a copy at the end.
        direct: dict[SSAValue, int] = {}
        for i, v in enumerate(ret.operands):
            if v not in direct and not isinstance(v.owner, Block):
                direct[v] = i
        scratch_values: list[SSAValue] = []
        for op in old.ops:
            if isinstance(op, func.ReturnOp):
                continue
            for r in op.results:
                if isinstance(r.type, TensorType) and r not in direct:
                    scratch_values.append(r)
        arg_types = (
            [hbm_type(t) for t in inputs]
            + [hbm_type(t) for t in outputs]
            + [hbm_type(tensor_type(v.type)) for v in scratch_values]
        )
        block = Block(arg_types=arg_types)
        k, m = len(inputs), len(outputs)
        for i, a in enumerate(old.args):
            block.args[i].name_hint = a.name_hint or f"in{i}"
            self.buffers[a] = block.args[i]
        for i in range(m):
            block.args[k + i].name_hint = f"out{i}"
        for v, i in direct.items():
            self.buffers[v] = block.args[k + i]
        for j, v in enumerate(scratch_values):
            block.args[k + m + j].name_hint = f"scratch{j}"
            self.buffers[v] = block.args[k + m + j]
        self.e = Emitter(block)
        if any(isinstance(op, collective.CollectiveOp) for op in old.ops):
            self.dev = self.e.op(tpu.DeviceIdOp(), "dev")
            self.e.op(tpu.BarrierOp())
        for op in old.ops:
            if isinstance(op, func.ReturnOp):
                break
            self.lower(op)
        for i, v in enumerate(ret.operands):
            dst = block.args[k + i]
            src = self.buffers[v]
            if src is not dst:
                sem = self.e.op(tpu.AllocOp(tpu.DMASemaphoreType()), f"ret_sem_{i}")
                self.e.op(tpu.DMAStartOp(src, dst, recv_sem=sem))
                self.e.op(tpu.DMAWaitOp(sem, dst))
        self.e.op(func.ReturnOp())
        new = func.FuncOp(f.sym_name.data, (arg_types, []), Region(block))
        new.attributes["tpu.kernel"] = UnitAttr()
        new.attributes["tpu.io"] = ArrayAttr(
            [IntegerAttr(k, i64), IntegerAttr(m, i64), IntegerAttr(len(scratch_values), i64)]
        )
        # What a runner needs to split global inputs and assemble global outputs (as for
        # the level-S function): `spmd.partitioned`, and the shardings of the arguments
        # and results on the input and output buffers (local shapes, as at level S).
        if spmd.PARTITIONED_ATTR_NAME in f.attributes:
            new.attributes[spmd.PARTITIONED_ATTR_NAME] = UnitAttr()
        arg_s, res_s = spmd.function_shardings(f)
        shardings = [*arg_s, *res_s, *([None] * len(scratch_values))]
        if any(shardings):
            new.arg_attrs = ArrayAttr(
                [DictionaryAttr({spmd.SHARDING_ATTR_NAME: s} if s else {}) for s in shardings]
            )
        return new

    # Helpers ----------------------------------------------------------------------------

    def axis(self, op: collective.CollectiveOp, name: str) -> _Axis:
        assert op.mesh is not None
        mesh_name = op.mesh.root_reference.data
        found = self.axes.get(name)
        if found is not None:
            return found
        mesh = spmd.lookup_mesh(op, mesh_name)
        i = list(mesh.names).index(name)
        stride = math.prod(mesh.shape[i + 1 :])
        # Emitted at the kernel's top (right after the barrier's prologue), so that every
        # collective on this axis can use them.
        ip_block = self.e.block
        me = tpu.AxisIndexOp(mesh_name, name)
        me.result.name_hint = f"me_{name}"
        n = arith.ConstantOp(IntegerAttr(mesh.axis_size(name), i32))
        n.result.name_hint = f"n_{name}"
        anchor = self.dev.owner
        assert isinstance(anchor, Operation)
        ip_block.insert_ops_after([me, n], anchor)
        found = _Axis(mesh_name, name, mesh.axis_size(name), stride, me.result, n.result)
        self.axes[name] = found
        return found

    def group_axis(self, op: collective.CollectiveOp) -> _Axis:
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
        me = self.lookup(e, {d: r for g in groups for r, d in enumerate(g)}, f"me_{name}")
        n = e.i32(len(groups[0]), f"n_{name}")
        ops = list(e.block.ops)
        for o in ops:
            o.detach()
        anchor = self.dev.owner
        assert isinstance(anchor, Operation) and anchor.parent_block() is not None
        anchor.parent_block().insert_ops_after(ops, anchor)  # type: ignore[union-attr]
        found = _Axis("", name, len(groups[0]), 0, me, n, groups=groups)
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

    def neighbour(self, ax: _Axis, k: int) -> SSAValue:
        """i32 device id of the device at axis coordinate (me + k) mod N."""
        k %= ax.size
        if k in ax.neighbours:
            return ax.neighbours[k]
        e = Emitter(Block())
        hint = {1: "right", ax.size - 1: "left"}.get(k, f"peer_{k}")
        if ax.groups is not None:
            table = {d: g[(r + k) % ax.size] for g in ax.groups for r, d in enumerate(g)}
            dev = self.lookup(e, table, f"{hint}_{ax.name}")
        else:
            kc = e.i32(k)
            coord = e.rem(e.add(ax.me, kc), ax.n)
            delta = e.sub(coord, ax.me)
            if ax.stride != 1:
                delta = e.mul(delta, e.i32(ax.stride))
            dev = e.add(self.dev, delta, f"{hint}_{ax.name}")
        ops = list(e.block.ops)
        for o in ops:
            o.detach()
        anchor = ax.n.owner
        assert isinstance(anchor, Operation)
        # After the axis constants and any neighbour computed before.
        last = anchor
        for v in ax.neighbours.values():
            if isinstance(v.owner, Operation) and v.owner.parent_block() is anchor.parent_block():
                last = v.owner
        anchor.parent_block().insert_ops_after(ops, last)  # type: ignore[union-attr]
        ax.neighbours[k] = dev
        return dev

    def chunk(
        self,
        e: Emitter,
        ref: SSAValue,
        dim: int,
        size: int,
        c: SSAValue,
        hint: str,
        part: tuple[int, int, int] | None = None,
    ) -> SSAValue:
        """
        The block `c` (an index) of `size` along `dim` of `ref`: a `tpu.memref_slice`;
        with `part` = (split dim, half size, h), only half h of it along the split dim.
        """
        ty = ref.type
        assert isinstance(ty, MemRefType)
        shape = list(ty.get_shape())
        shape[dim] = size
        zero = e.index(0)
        off = e.mul(c, e.index(size)) if size != 1 else c
        idx = [off if i == dim else zero for i in range(len(shape))]
        if part is not None:
            sdim, half, h = part
            shape[sdim] = half
            if h:
                idx[sdim] = e.add(idx[sdim], e.index(h * half))
        space = tpu.memory_space_of(ty)
        assert space is not None
        return e.op(tpu.MemRefSliceOp(ref, idx, memref_type(shape, ty.element_type, space)), hint)

    def check_vmem(self, op: Operation, what: str, size: int) -> None:
        if size > self.vmem_bytes:
            raise OpPassError(
                op,
                f"lower-to-tpu: {what} needs {size} bytes of VMEM, more than the "
                f"{self.vmem_bytes} bytes available on {self.chip.name}",
            )

    def for_steps(
        self, lo: int, hi: int, hint: str = "s", e: Emitter | None = None
    ) -> tuple[Emitter, SSAValue]:
        """An `scf.for %s = lo to hi` appended (to `e`, default here); its body's emitter and `%s`."""
        e = e or self.e
        body = Block(arg_types=[INDEX])
        body.args[0].name_hint = hint
        e.op(scf.ForOp(e.index(lo), e.index(hi), e.index(1), [], body))
        return Emitter(body), body.args[0]

    # Ops ---------------------------------------------------------------------------------

    def lower(self, op: Operation) -> None:
        if isinstance(op, collective.DoneOp):
            start = op.future.owner
            for later in self.pending.pop(op.future, []):
                self.e.op(later)
            for r, v in zip(op.results, self.start_results[start], strict=True):  # type: ignore[index]
                if self.buffers[r] is not v:
                    # The _start wrote into its own buffers (not the done's): copy.
                    self.local_copy(v, self.buffers[r], "done")
            return
        if isinstance(op, collective.CollectiveOp):
            if op.IS_START:
                (done,) = [u.operation for u in op.results[0].uses]
                outs = [self.buffers[r] for r in done.results]
                if not hasattr(self, "start_results"):
                    self.start_results = {}
                self.start_results[op] = outs
            else:
                outs = [self.buffers[r] for r in op.results]
            ins = [self.buffers[v] for v in op.operands]
            if op.explicit_groups is not None or (
                len(op.axes) > 1
                and isinstance(op, collective.PermuteBase | collective.AllToAllBase)
            ):
                axes = [self.group_axis(op)]
            else:
                axes = [self.axis(op, a) for a in op.axes]
            deferred: list[Operation] | None = [] if op.IS_START else None
            for x, out in zip(ins, outs, strict=True):
                self.collective(op, axes, x, out, deferred)
            if deferred is not None:
                self.pending[op.results[0]] = deferred
            return
        if tpu_compute.handles(op):
            tpu_compute.lower(self, op)
            return
        if tpu_movement.handles(op):
            tpu_movement.lower(self, op)
            return
        raise AssertionError(op.name)

    def local_copy(self, src: SSAValue, dst: SSAValue, hint: str) -> None:
        sem = self.e.op(tpu.AllocOp(tpu.DMASemaphoreType()), f"{hint}_sem")
        self.e.op(tpu.DMAStartOp(src, dst, recv_sem=sem))
        self.e.op(tpu.DMAWaitOp(sem, dst))

    def collective(
        self,
        op: collective.CollectiveOp,
        all_axes: list[_Axis],
        x: SSAValue,
        out: SSAValue,
        deferred: list[Operation] | None = None,
    ) -> None:
        """
        Lower one operand of `op`. `deferred` (for a `_start`): ops to emit at the `done`
        instead of here (the waits, and for all_gather every step after the first).
        Several axes: one ring phase per axis (axes of size 1 are skipped).
        """
        axes = [a for a in all_axes if a.size > 1]
        if not axes:
            self.local_copy(x, out, "copy")
            return
        if len(axes) > 1:
            deferred = None  # multi-phase collectives run whole at their _start
        main = self.e
        self.later = Emitter(Block())
        self._collective(op, axes, x, out, deferred)
        if self.e is not main:
            # A deferred reduce_scatter switched to `self.later`: that goes to the done.
            assert deferred is not None
            ops = list(self.e.block.ops)
            for o in ops:
                o.detach()
            deferred += ops
            self.e = main

    def _collective(
        self,
        op: collective.CollectiveOp,
        axes: list[_Axis],
        x: SSAValue,
        out: SSAValue,
        deferred: list[Operation] | None,
    ) -> None:
        if isinstance(op, collective.AllGatherBase):
            dim = op.dim.value.data
            xt = x.type
            assert isinstance(xt, MemRefType)
            self.multi_all_gather([axes], x, [out], dim, xt.get_shape()[dim], deferred)
        elif isinstance(op, collective.ReduceScatterBase):
            dim = op.dim.value.data
            ot = out.type
            assert isinstance(ot, MemRefType)
            k = ot.get_shape()[dim]
            self.multi_reduce_scatter(op, axes, x, dim, k, out, defer=deferred is not None)
        elif isinstance(op, collective.AllReduceBase):
            self.all_reduce(op, axes, x, out, deferred)
        elif isinstance(op, collective.PermuteBase):
            self.permute(op, axes[0], x, out, deferred)
        elif isinstance(op, collective.AllToAllBase):
            self.all_to_all(op, axes[0], x, out, deferred)
        else:
            raise AssertionError(op.name)

    def all_reduce(
        self,
        op: collective.AllReduceBase,
        axes: list[_Axis],
        x: SSAValue,
        out: SSAValue,
        deferred: list[Operation] | None,
    ) -> None:
        """
        reduce_scatter + all_gather over the buffer viewed as [G, numel / G], every phase
        leaving its result in this device's part of the output (where the all-gather
        finds the reduced chunk in place). Over m > 1 axes of one size (a 2-D / 3-D
        torus) the buffer is cut into m parts reduced at once, part i over the axes
        rotated by i (2-D: half the data x then y, the other half y then x), so every
        phase keeps the links of every axis busy.
        """
        xt = x.type
        assert isinstance(xt, MemRefType)
        numel = math.prod(xt.get_shape())
        n = math.prod(a.size for a in axes)
        if numel % n:
            # The last numel mod G elements go their own way; the rest is a ring all_reduce.
            rest = numel - numel % n
            x1 = self.e.op(
                tpu.MemRefReshapeOp(x, memref_type([numel], xt.element_type, HBM)), "ar_flat_in"
            )
            o1 = self.e.op(
                tpu.MemRefReshapeOp(out, memref_type([numel], xt.element_type, HBM)), "ar_flat_out"
            )
            self.all_reduce_tail(
                op, axes, *(self.span(v, rest, numel - rest, "ar_tail") for v in (x1, o1))
            )
            if rest == 0:
                return
            x, out = (self.span(v, 0, rest, "ar_head") for v in (x1, o1))
            xt = x.type
            assert isinstance(xt, MemRefType)
            numel = rest
        m = len(axes)
        elem = xt.element_type
        low = accumulation_type(elem) != elem
        parts = (
            m
            if m > 1 and len({a.size for a in axes}) == 1 and numel % (m * n) == 0 and not low
            else 1
        )
        flat = memref_type([parts * n, numel // (parts * n)], elem, HBM)
        xr = self.e.op(tpu.MemRefReshapeOp(x, flat), "ar_in")
        outr = self.e.op(tpu.MemRefReshapeOp(out, flat), "ar_out")
        if low and m > 1:
            # Rounded once, at the end: the phases before the last keep their f32
            # partial sums in VMEM (not in the bf16/f16 output).
            own = self.group_view(outr, 0, 1, axes, "ar_own")
            self.multi_reduce_scatter(op, axes, xr, 0, 1, own)
            self.multi_all_gather([axes], None, [outr], 0, 1, deferred)
            return
        orders = [axes[i:] + axes[:i] for i in range(parts)]
        xs, outs = [xr], [outr]
        if parts > 1:
            xs = [self.chunk(self.e, xr, 0, n, self.e.index(i), f"ar_in{i}") for i in range(parts)]
            outs = [
                self.chunk(self.e, outr, 0, n, self.e.index(i), f"ar_out{i}") for i in range(parts)
            ]
        self.torus_reduce_scatter(op, orders, xs, outs, 0, 1)
        self.multi_all_gather(orders, None, outs, 0, 1, deferred)

    def span(self, ref: SSAValue, start: int, size: int, hint: str) -> SSAValue:
        """Elements start .. start + size of a 1-D memref."""
        t = ref.type
        assert isinstance(t, MemRefType)
        space = tpu.memory_space_of(t)
        assert space is not None
        return self.e.op(
            tpu.MemRefSliceOp(
                ref, [self.e.index(start)], memref_type([size], t.element_type, space)
            ),
            hint,
        )

    def all_reduce_tail(
        self, op: collective.AllReduceBase, axes: list[_Axis], x: SSAValue, out: SSAValue
    ) -> None:
        """
        The r = numel mod G elements of an all_reduce that G does not divide (1-D `x`,
        `out` in HBM): every device pushes its r elements straight to row `me` of every
        peer's [G, r] VMEM buffer (G - 1 remote DMAs, one receive semaphore each, as
        all_to_all), then reduces the rows in rank order, as level S does (bit-identical
        results, low precision accumulated in f32 and rounded once). r < G: latency, not
        bandwidth.
        """
        ax = axes[0] if len(axes) == 1 else self.group_axis(op)
        e, n = self.e, ax.size
        xt = x.type
        assert isinstance(xt, MemRefType)
        r, elem = xt.get_shape()[0], xt.element_type
        row_t = memref_type([1, r], elem, VMEM)
        rows = e.op(tpu.AllocOp(memref_type([n, r], elem, VMEM)), "tail_rows")
        copy_sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "tail_copy_sem")
        send_sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "tail_send_sem")
        recv_sems = e.op(tpu.AllocOp(tpu.DMASemaphoreType([n - 1])), "tail_recv_sems")
        mine = e.op(tpu.MemRefReshapeOp(x, memref_type([1, r], elem, HBM)), "tail_in")
        zero = e.index(0)

        def row(i: SSAValue) -> SSAValue:
            return e.op(tpu.MemRefSliceOp(rows, [i, zero], row_t), "tail_row")

        me_row = row(e.to_index(ax.me))
        e.op(tpu.DMAStartOp(mine, me_row, recv_sem=copy_sem))
        sems = [
            e.op(
                tpu.MemRefSliceOp(recv_sems, [e.index(k - 1)], tpu.DMASemaphoreType()),
                "tail_recv_sem",
            )
            for k in range(1, n)
        ]
        for k in range(1, n):
            e.op(
                tpu.DMAStartOp(
                    mine,
                    me_row,
                    send_sem=send_sem,
                    recv_sem=sems[k - 1],
                    device=self.neighbour(ax, k),
                )
            )
        e.op(tpu.DMAWaitOp(copy_sem, me_row))
        for k in range(1, n):
            # Step k's message came from rank (me - k) mod N.
            src = e.to_index(e.rem(e.add(ax.me, e.i32(n - k)), ax.n))
            e.op(tpu.DMAWaitOp(send_sem, mine))
            e.op(tpu.DMAWaitOp(sems[k - 1], row(src)))
        wide = accumulation_type(elem)
        total = e.op(tpu.LoadOp(rows, [zero, zero], VectorType(elem, [1, r])), "tail_first")
        if wide != elem:
            total = e.op(arith.ExtFOp(total, VectorType(wide, [1, r])))
        for i in range(1, n):
            got = e.op(tpu.LoadOp(rows, [e.index(i), zero], VectorType(elem, [1, r])), "tail_part")
            for o in self.combine(op, total, got):
                e.op(o)
            total = o.results[0]  # pyright: ignore[reportPossiblyUnboundVariable]
        if wide != elem:
            total = e.op(arith.TruncFOp(total, VectorType(elem, [1, r])), "rounded")
        res = e.op(tpu.AllocOp(row_t), "tail_result")
        e.op(tpu.StoreOp(total, res, [zero, zero]))
        self.local_copy(
            res,
            e.op(tpu.MemRefReshapeOp(out, memref_type([1, r], elem, HBM)), "tail_out"),
            "tail_out",
        )
        e.op(tpu.DeallocOp(res))
        e.op(tpu.DeallocOp(rows))

    def wraparound(self, ax: _Axis) -> bool:
        """Whether the axis's ring has wraparound links (as `CostModel.axis_rings` decides;
        a group ring's members may be anywhere: no)."""
        if ax.groups is not None:
            return False
        model = CostModel(self.chip, self.module_mesh)
        assert self.module_mesh is not None
        torus = model.torus_axis_lengths()
        i = list(self.module_mesh.names).index(ax.name)
        return self.chip.has_wraparound(torus[min(i, len(torus) - 1)])

    def two_way(self, ax: _Axis) -> bool:
        """
        Whether the ring over `ax` runs both ways: the pass's `bidirectional` option, by
        default only where the axis has wraparound links (on a line the two directions'
        rings would share every link: no faster, one more set of buffers).
        """
        return self.wraparound(ax) if self.bidirectional is None else self.bidirectional

    def group_view(
        self, ref: SSAValue, dim: int, size: int, prefix: list[_Axis], hint: str = "group_view"
    ) -> SSAValue:
        """
        The part of `ref` along `dim` (blocks of `size`) that belongs to this device's
        coordinates on the `prefix` axes (row-major, first major): where a later, more
        minor phase of a multi-axis collective works.
        """
        if not prefix:
            return ref
        e = self.e
        idx = prefix[0].me
        for a in prefix[1:]:
            idx = e.add(e.mul(idx, a.n), a.me)
        return self.chunk(e, ref, dim, size, e.to_index(idx), hint)

    def multi_all_gather(
        self,
        orders: list[list[_Axis]],
        src: SSAValue | None,
        outs: list[SSAValue],
        dim: int,
        k: int,
        deferred: list[Operation] | None,
    ) -> None:
        """
        all_gather into each of `outs` (HBM) over its order of the axes (rank row-major,
        first major): one ring phase per axis, the most minor first, each later phase
        forwarding, in place, the blocks the earlier ones assembled. `src` (one order
        only): the own block, copied in first; None: it is in place already. Several
        orders (the parts of a torus all_reduce) run their phase j's rings at once.
        """
        if src is not None:
            (order,) = orders
            own = self.group_view(outs[0], dim, k, order, "ag_own")
            self.local_copy(src, own, "ag_own")
        m = len(orders[0])
        for j in reversed(range(m)):
            rings: list[_Ring] = []
            for i, order in enumerate(orders):
                kj = k * math.prod(a.size for a in order[j + 1 :])
                view = self.group_view(outs[i], dim, kj * order[j].size, order[:j])
                rings += self.ag_rings(order[j], view, dim, kj, f"ag{i or ''}")
            self.run_ag_rings(rings, deferred if m == 1 else None)

    def multi_reduce_scatter(
        self,
        op: Operation,
        axes: list[_Axis],
        x: SSAValue,
        dim: int,
        k: int,
        out: SSAValue,
        defer: bool = False,
    ) -> None:
        """
        reduce_scatter of `x` over `axes` into `out` (HBM): one ring per axis, the most
        major first, each phase reduce-scattering the previous one's result, which stays
        in VMEM (those phases run one way, in one piece); the last phase writes `out`.
        """
        m = len(axes)
        cur, vmem = x, None
        for j, ax in enumerate(axes):
            kj = k * math.prod(a.size for a in axes[j + 1 :])
            if j == m - 1:
                self.reduce_scatter_phase(op, [(ax, cur, kj, out)], dim, defer and m == 1)
            else:
                ((_, cur),) = self.run_rs_rings(op, [[_Ring(ax, cur, dim, kj, 1, None, "rs")]])
            if vmem is not None:
                self.e.op(tpu.DeallocOp(vmem))
            vmem = cur if j < m - 1 else None

    def torus_reduce_scatter(
        self,
        op: Operation,
        orders: list[list[_Axis]],
        xs: list[SSAValue],
        homes: list[SSAValue],
        dim: int,
        k: int,
    ) -> None:
        """
        reduce_scatter of each of `xs` over its order of the axes; phase j leaves its
        result in this device's part of the matching `homes` buffer (for its coordinates
        on order[:j+1]), where phase j+1 reads it (so every phase may run both ways and
        in pieces). The orders' phase j run at once: with the orders rotations of the
        axes, every phase keeps every axis's links busy.
        """
        curs = list(xs)
        for j in range(len(orders[0])):
            jobs = []
            for i, order in enumerate(orders):
                kj = k * math.prod(a.size for a in order[j + 1 :])
                jobs.append(
                    (order[j], curs[i], kj, self.group_view(homes[i], dim, kj, order[: j + 1]))
                )
            self.reduce_scatter_phase(op, jobs, dim, False)
            curs = [dst for *_, dst in jobs]

    def reduce_scatter_phase(
        self,
        op: Operation,
        jobs: list[tuple[_Axis, SSAValue, int, SSAValue]],
        dim: int,
        defer: bool,
    ) -> None:
        """
        One ring reduce-scatter phase per job (axis, input, chunk size, HBM destination),
        all at once (their axes have one size), each chunk cut into the pieces and ways
        of `rs_plan`, the pieces one after the other (`run_rs_rings`).
        """
        plans = []
        for ax, x, k, _ in jobs:
            xt = x.type
            assert isinstance(xt, MemRefType)
            shape = list(xt.get_shape())
            shape[dim] = k
            plans.append(self.rs_plan(shape, xt.element_type, self.two_way(ax), len(jobs)))
        if len({p[1] for p in plans}) > 1 or len({ax.size for ax, *_ in jobs}) > 1:
            for job in jobs:  # nothing to keep in step: one after the other
                self.reduce_scatter_phase(op, [job], dim, defer)
            return
        pieces = []
        for p in range(plans[0][1]):
            rings: list[_Ring] = []
            for i, ((ax, x, k, dst), plan) in enumerate(zip(jobs, plans, strict=False)):
                rings += self.rs_rings(ax, x, dim, k, dst, plan, p, f"rs{i or ''}")
            pieces.append(rings)
        self.run_rs_rings(op, pieces, defer)

    def ag_rings(self, ax: _Axis, out: SSAValue, dim: int, k: int, tag: str) -> list[_Ring]:
        """
        The rings of an all-gather over `ax` into `out`, slot c = block c of `k` along
        `dim`: one rightward; or (`two_way`) half of every slot rightward and half
        leftward (both directions of every link carry data: twice the bandwidth on a ring
        with wraparound), which needs an even dimension in the slot.
        """
        ot = out.type
        assert isinstance(ot, MemRefType)
        slot = list(ot.get_shape())
        slot[dim] = k
        split = None
        if self.two_way(ax):
            split = next((d for d, size in enumerate(slot) if size % 2 == 0 and size > 1), None)
        if split is None:
            return [_Ring(ax, out, dim, k, 1, None, tag)]
        half = slot[split] // 2
        return [
            _Ring(ax, out, dim, k, 1, (split, half, 0), f"{tag}_r"),
            _Ring(ax, out, dim, k, -1, (split, half, 1), f"{tag}_l"),
        ]

    def run_ag_rings(self, rings: list[_Ring], deferred: list[Operation] | None = None) -> None:
        """
        Ring all-gather steps (Pallas's ring all-gather, HBM to HBM; every own slot in
        place), the steps of all `rings` (one axis size) interleaved. With `deferred` (a
        `_start`), step 0's DMAs start here and everything after them (their waits,
        steps 1..N-2) goes to `deferred`, emitted at the `done`.
        """
        e, n = self.e, rings[0].ax.size
        sems = []
        for r in rings:
            peer = self.neighbour(r.ax, r.direction)
            send = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), f"{r.tag}_send_sem")
            recv = e.op(tpu.AllocOp(tpu.DMASemaphoreType([n - 1])), f"{r.tag}_recv_sems")
            sems.append((peer, send, recv))

        def step(b: Emitter, s: SSAValue) -> list[Operation]:
            """Start step `s`'s DMAs; return its waits."""
            s32 = b.to_i32(s)
            waits: list[Operation] = []
            for r, (peer, send, recv) in zip(rings, sems, strict=False):
                waits += self._ag_step(b, r, s, s32, peer, send, recv)
            return waits

        if deferred is None:
            b, s = self.for_steps(0, n - 1)
            for w in step(b, s):
                b.op(w)
            b.op(scf.YieldOp())
            return
        later = Emitter(Block())
        for w in step(e, e.index(0)):
            later.op(w)
        if n > 2:
            b, s = self.for_steps(1, n - 1, e=later)
            for w in step(b, s):
                b.op(w)
            b.op(scf.YieldOp())
        ops = list(later.block.ops)
        for o in ops:
            o.detach()
        deferred += ops

    def _ag_step(
        self,
        b: Emitter,
        r: _Ring,
        s: SSAValue,
        s32: SSAValue,
        peer: SSAValue,
        send: SSAValue,
        recv: SSAValue,
    ) -> list[Operation]:
        """One ring of all_gather step `s`: start the DMA, return its two waits."""
        ax, n, tag = r.ax, r.ax.size, r.tag
        # Rightwards, step s forwards slot (me - s) mod N to the right neighbour's same
        # slot and receives slot (me - s - 1) mod N from the left on recv_sems[s];
        # leftwards the mirror image: (me + s) out, (me + s + 1) in.
        if r.direction == 1:
            base = b.add(b.sub(ax.me, s32), ax.n)
            out_c = b.rem(base, ax.n)
            in_c = b.rem(b.add(base, b.i32(n - 1)), ax.n)
        else:
            base = b.add(ax.me, s32)
            out_c = b.rem(base, ax.n)
            in_c = b.rem(b.add(base, b.i32(1)), ax.n)
        send_slot = b.to_index(out_c, f"{tag}_send_slot")
        recv_slot = b.to_index(in_c, f"{tag}_recv_slot")
        block = self.chunk(b, r.ref, r.dim, r.k, send_slot, f"{tag}_block", r.part)
        incoming = self.chunk(b, r.ref, r.dim, r.k, recv_slot, f"{tag}_incoming", r.part)
        sem = b.op(tpu.MemRefSliceOp(recv, [s], tpu.DMASemaphoreType()), f"{tag}_recv_sem")
        b.op(tpu.DMAStartOp(block, block, send_sem=send, recv_sem=sem, device=peer))
        return [tpu.DMAWaitOp(send, block), tpu.DMAWaitOp(sem, incoming)]

    def rs_plan(
        self,
        shape: list[int],
        elem: Attribute,
        bidirectional: bool,
        concurrent: int = 1,
    ) -> tuple[int | None, int, int]:
        """
        How a ring reduce-scatter of chunks of `shape` splits them: (split dim, pieces,
        ways). Each piece (run one after the other) must fit its 4 VMEM blocks per ring
        (receive double buffer, own chunk, accumulator), for `concurrent` phases at once,
        into the kernel's VMEM; bidirectional halves each piece (ways = 2). Pieces and
        halves cut the same dimension, the first one they divide; if none does, one
        piece, one way (and `check_vmem` says if that does not fit).
        """
        total = nbytes(shape, elem) * concurrent
        for ways in (2, 1) if bidirectional else (1,):
            pieces = 1
            while 4 * total // pieces > self.vmem_bytes:
                pieces *= 2
            for d, size in enumerate(shape):
                if size > 1 and size % (ways * pieces) == 0 and (ways, pieces) != (1, 1):
                    return d, pieces, ways
            if (ways, pieces) == (1, 1):
                break
        return None, 1, 1

    def rs_rings(
        self,
        ax: _Axis,
        x: SSAValue,
        dim: int,
        k: int,
        dst: SSAValue,
        plan: tuple[int | None, int, int],
        piece: int,
        tag: str,
    ) -> list[_Ring]:
        """The rings reducing piece `piece` (of `plan`) of every chunk of `x` over `ax`."""
        split, pieces, ways = plan
        if split is None:
            return [_Ring(ax, x, dim, k, 1, None, tag, dst)]
        xt = x.type
        assert isinstance(xt, MemRefType)
        size = (k if split == dim else xt.get_shape()[split]) // (pieces * ways)
        first = piece * ways
        if ways == 1:
            return [_Ring(ax, x, dim, k, 1, (split, size, first), tag, dst)]
        return [
            _Ring(ax, x, dim, k, 1, (split, size, first), f"{tag}_r", dst),
            _Ring(ax, x, dim, k, -1, (split, size, first + 1), f"{tag}_l", dst),
        ]

    def run_rs_rings(
        self,
        op: Operation,
        pieces: list[list[_Ring]],
        defer: bool = False,
    ) -> list[tuple[_Ring, SSAValue]]:
        """
        Ring reduce-scatter steps of the rings of each piece (one axis size), the rings
        of a piece interleaved, the pieces one after the other through the same VMEM
        buffers (a piece's rings are the previous piece's on the next part of every
        chunk). Partial sums travel in VMEM along the ring (see the module docstring for
        the credit handshake, which runs on across pieces: no drain in between). With a
        `dst` (HBM) per ring, each piece's result is copied there while the next piece's
        first messages travel; without (one piece), the VMEM buffers holding this rank's
        reduced parts are returned, for the caller to use and deallocate. `defer` (a
        `_start`): after step 0's sends, switch `self.e` to `self.later` (emitted at the
        done) for everything else.
        """
        e, n = self.e, pieces[0][0].ax.size
        blocks = [self.ring_block(r) for r in pieces[0]]
        elem = blocks[0][1]
        wide = accumulation_type(elem)
        self.check_vmem(
            op,
            "a ring reduce_scatter step (4 blocks of "
            + " + ".join("x".join(map(str, b)) for b, _ in blocks)
            + ")",
            sum(4 * nbytes(b, wide) for b, _ in blocks),
        )
        one = e.i32(1, "one")
        credit0 = e.i32(min(2, n - 1), "rs_slots")
        state = [
            self._rs_buffers(e, r, bshape, elem, wide, credit0, len(pieces) > 1)
            for r, (bshape, _) in zip(pieces[0], blocks, strict=False)
        ]
        pending: list[Operation] = []
        """Waits for the previous piece's copies out of the accumulators."""
        for p, rings in enumerate(pieces):
            # The first message is my own chunk (me - direction) mod N, sent straight
            # from HBM; low precision widens it into acc first and sends it from there.
            firsts = []
            for r, st in zip(rings, state, strict=False):
                first = e.to_index(
                    e.rem(e.add(r.ax.me, e.i32((-r.direction) % n)), r.ax.n), f"{r.tag}_first"
                )
                block = self.chunk(e, r.ref, r.dim, r.k, first, f"{r.tag}_first_block", r.part)
                if wide != elem:
                    for w in pending:
                        e.op(w)
                    pending = []
                    e.op(tpu.DMAStartOp(block, st.mine, recv_sem=st.copy_sem))
                    e.op(tpu.DMAWaitOp(st.copy_sem, st.mine))
                    zeros = [e.index(0) for _ in st.bshape]
                    low = e.op(
                        tpu.LoadOp(st.mine, zeros, VectorType(elem, st.bshape)),
                        f"{r.tag}_first_low",
                    )
                    e.op(
                        tpu.StoreOp(
                            e.op(arith.ExtFOp(low, VectorType(wide, st.bshape))), st.acc, zeros
                        )
                    )
                    block = st.acc
                firsts.append(block)

            def step(
                b: Emitter,
                s: SSAValue,
                srcs: list[SSAValue],
                before_store: list[Operation],
                p: int = p,
                rings: list[_Ring] = rings,
            ) -> list[Operation]:
                """Start step `s`'s DMAs (after their credits); return the rest of the step."""
                s32 = b.to_i32(s)
                slot = b.rem(b.add(s, b.index(p * (n - 1))) if p else s, b.index(2), "slot")
                later: list[Operation] = []
                for r, st, src in zip(rings, state, srcs, strict=False):
                    later += self._rs_step(op, b, elem, one, s32, slot, r, st, src, before_store)
                    before_store = []
                return later

            # Step 0 (peeled: it sends from HBM); a _start sends its messages now, and the
            # rest of the collective (and whatever the caller emits after it) goes to a
            # block emitted at the done.
            for o in step(e, e.index(0), firsts, pending):
                (self.later if defer and p == 0 else e).op(o)
            pending = []
            if defer and p == 0:
                e = self.e = self.later
            if n > 2:
                b, s = self.for_steps(1, n - 1)
                for o in step(b, s, [st.acc for st in state], []):
                    b.op(o)
                b.op(scf.YieldOp())
            if p < len(pieces) - 1 and wide == elem:
                # This piece's result leaves while the next piece's first messages travel.
                for r, st in zip(rings, state, strict=False):
                    assert r.dst is not None and st.out_sem is not None
                    target = self.ring_target(e, r)
                    e.op(tpu.DMAStartOp(st.acc, target, recv_sem=st.out_sem))
                    pending.append(tpu.DMAWaitOp(st.out_sem, target))
            elif p < len(pieces) - 1:
                for r, st in zip(rings, state, strict=False):
                    self.copy_out(st.acc, self.ring_target(e, r))
        for st in state:
            # The credits still owed to me: my receiver has consumed every message.
            e.op(tpu.SemWaitOp(st.credits, credit0))
            e.op(tpu.DeallocOp(st.rbuf))
            e.op(tpu.DeallocOp(st.mine))
        if pieces[-1][0].dst is None:
            return [(r, st.acc) for r, st in zip(pieces[-1], state, strict=False)]
        for r, st in zip(pieces[-1], state, strict=False):
            self.copy_out(st.acc, self.ring_target(e, r))
            e.op(tpu.DeallocOp(st.acc))
        return []

    def ring_target(self, e: Emitter, r: _Ring) -> SSAValue:
        """Where a reduce-scatter ring's reduced part goes: its part of `r.dst`."""
        assert r.dst is not None
        if r.part is None:
            return r.dst
        return self.chunk(e, r.dst, r.dim, r.k, e.index(0), "rs_part", r.part)

    def _rs_buffers(
        self,
        e: Emitter,
        r: _Ring,
        bshape: list[int],
        elem: Attribute,
        wide: Attribute,
        credit0: SSAValue,
        pieces: bool,
    ) -> _RsState:
        """A reduce-scatter ring's VMEM buffers and semaphores (`pieces`: one for the copies
        out between pieces too); its first credits sent."""
        tag = r.tag
        # Partials travel and accumulate in the accumulation type (f32 for bf16/f16).
        st = _RsState(
            bshape,
            self.neighbour(r.ax, r.direction),
            self.neighbour(r.ax, -r.direction),
            e.op(tpu.AllocOp(memref_type([2, *bshape], wide, VMEM)), f"{tag}_recv_buf"),
            e.op(tpu.AllocOp(memref_type(bshape, elem, VMEM)), f"{tag}_mine"),
            e.op(tpu.AllocOp(memref_type(bshape, wide, VMEM)), f"{tag}_acc"),
            e.op(tpu.AllocOp(tpu.DMASemaphoreType()), f"{tag}_copy_sem"),
            e.op(tpu.AllocOp(tpu.DMASemaphoreType()), f"{tag}_send_sem"),
            e.op(tpu.AllocOp(tpu.DMASemaphoreType([2])), f"{tag}_recv_sems"),
            e.op(tpu.AllocOp(tpu.SemaphoreType()), f"{tag}_credits"),
            e.op(tpu.AllocOp(tpu.DMASemaphoreType()), f"{tag}_piece_sem") if pieces else None,
        )
        # My receive slots are free: tell the neighbour who sends into them.
        e.op(tpu.SemSignalOp(st.credits, credit0, st.back))
        return st

    def ring_block(self, r: _Ring) -> tuple[list[int], Attribute]:
        """The shape and element type of the part of one chunk a ring moves per step."""
        t = r.ref.type
        assert isinstance(t, MemRefType)
        shape = list(t.get_shape())
        shape[r.dim] = r.k
        if r.part is not None:
            shape[r.part[0]] = r.part[1]
        return shape, t.element_type

    def _rs_step(
        self,
        op: Operation,
        b: Emitter,
        elem: Attribute,
        one: SSAValue,
        s32: SSAValue,
        slot: SSAValue,
        r: _Ring,
        st: _RsState,
        src: SSAValue,
        before_store: list[Operation],
    ) -> list[Operation]:
        """One ring of reduce_scatter step s: send `src` (the running partial in `acc`,
        or at step 0 my own chunk in HBM), start the local DMA of the chunk to add;
        return the rest (`before_store` just before the accumulator is overwritten)."""
        ax, n, tag = r.ax, r.ax.size, r.tag
        bshape, to, back, rbuf, mine, acc = st.bshape, st.to, st.back, st.rbuf, st.mine, st.acc
        copy_sem, send_sem, recv_sems, credits = st.copy_sem, st.send_sem, st.recv_sems, st.credits
        wide = accumulation_type(elem)
        block_v = memref_type(bshape, wide, VMEM)
        # The partial arriving at step s is for chunk (me - direction (s + 2)) mod N.
        if r.direction == 1:
            mine_c = b.add(b.sub(ax.me, s32), b.i32(2 * n - 2))
        else:
            mine_c = b.add(b.add(ax.me, s32), b.i32(2))
        mine_i = b.to_index(b.rem(mine_c, ax.n), f"{tag}_mine_chunk")
        zeros = [b.index(0) for _ in bshape]
        dst = b.op(tpu.MemRefSliceOp(rbuf, [slot, *zeros], block_v), f"{tag}_slot")
        rsem = b.op(tpu.MemRefSliceOp(recv_sems, [slot], tpu.DMASemaphoreType()), f"{tag}_recv_sem")
        # Handshake: one credit = one free receive slot on the receiving neighbour.
        b.op(tpu.SemWaitOp(credits, one))
        b.op(tpu.DMAStartOp(src, dst, send_sem=send_sem, recv_sem=rsem, device=to))
        xs = self.chunk(b, r.ref, r.dim, r.k, mine_i, f"{tag}_x_block", r.part)
        b.op(tpu.DMAStartOp(xs, mine, recv_sem=copy_sem))
        got = tpu.LoadOp(rbuf, [slot, *zeros], VectorType(wide, bshape))
        got.result.name_hint = "partial"
        own = tpu.LoadOp(mine, zeros, VectorType(elem, bshape))
        own.result.name_hint = "own"
        combine = self.combine(op, got.result, own.result)
        return [
            tpu.DMAWaitOp(copy_sem, mine),
            tpu.DMAWaitOp(rsem, dst),
            got,
            own,
            *combine,
            # The send buffer is free once the outgoing message has left.
            tpu.DMAWaitOp(send_sem, acc),
            *before_store,
            tpu.StoreOp(combine[-1].results[0], acc, zeros),
            # My slot is consumed: one more credit for the sending neighbour.
            tpu.SemSignalOp(credits, one, back),
        ]

    def combine(self, op: Operation, a: SSAValue, b: SSAValue) -> list[Operation]:
        """
        The ops combining a partial `a` with this device's `b` (low precision: widened to
        `a`'s accumulation type first) by `op`'s reduction kind; the last one's result is
        the combination.
        """
        assert isinstance(op, collective.AllReduceBase | collective.ReduceScatterBase)
        ty = a.type
        assert isinstance(ty, VectorType)
        ops: list[Operation] = []
        if b.type != ty:
            widen = arith.ExtFOp(b, ty)
            ops.append(widen)
            b = widen.result
        kind = op.kind.data
        total = _COMBINE[element_kind(ty.element_type) or "int"][kind](a, b)
        total.results[0].name_hint = {"add": "sum", "mul": "product"}.get(kind, kind)
        return [*ops, total]

    def copy_out(self, acc: SSAValue, target: SSAValue) -> None:
        """Copy a reduced VMEM block to `target` (HBM), rounding once to its element type
        if the block accumulated in a wider one (bf16 / f16 reduce in f32, as level S)."""
        at, tt = acc.type, target.type
        assert isinstance(at, MemRefType) and isinstance(tt, MemRefType)
        if at.element_type == tt.element_type:
            self.local_copy(acc, target, "rs_out")
            return
        e = self.e
        shape = list(at.get_shape())
        zeros = [e.index(0) for _ in shape]
        wide = e.op(tpu.LoadOp(acc, zeros, VectorType(at.element_type, shape)), "wide")
        narrow = e.op(arith.TruncFOp(wide, VectorType(tt.element_type, shape)), "rounded")
        buf = e.op(tpu.AllocOp(memref_type(shape, tt.element_type, VMEM)), "rs_rounded")
        e.op(tpu.StoreOp(narrow, buf, zeros))
        self.local_copy(buf, target, "rs_out")
        e.op(tpu.DeallocOp(buf))

    def all_to_all(
        self,
        op: collective.AllToAllBase,
        ax: _Axis,
        x: SSAValue,
        out: SSAValue,
        later: list[Operation] | None,
    ) -> None:
        """
        Direct all-to-all: block t (along split_dim) of `x` goes straight to rank t's output
        slot `me` (along concat_dim), steps s = 1..N-1 to rank (me + s) mod N (routed
        through intermediate chips beyond the neighbours), one receive semaphore per step;
        the own block is a local copy. Every output slot is written once by one sender, so
        nothing can be overrun; all DMAs are independent, so a `_start` issues them all
        and its `done` waits.
        """
        e, n = self.e, ax.size
        split, concat = op.split_dim.value.data, op.concat_dim.value.data
        xt = x.type
        assert isinstance(xt, MemRefType)
        bs = xt.get_shape()[split] // n
        cs = xt.get_shape()[concat] if split != concat else bs
        copy_sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "a2a_copy_sem")
        send_sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "a2a_send_sem")
        recv_sems = e.op(tpu.AllocOp(tpu.DMASemaphoreType([n - 1])), "a2a_recv_sems")
        me = e.to_index(ax.me, "me_index")
        own_src = self.chunk(e, x, split, bs, me, "a2a_own_src")
        own_dst = self.chunk(e, out, concat, cs, me, "a2a_own_dst")
        e.op(tpu.DMAStartOp(own_src, own_dst, recv_sem=copy_sem))

        def send(b: Emitter, s: SSAValue, k: int | None) -> None:
            """Step s: my block for rank t = (me + s) mod N to its slot `me`."""
            t = b.rem(b.add(ax.me, b.to_i32(s)), ax.n, "a2a_target")
            if k is not None:
                dev = self.neighbour(ax, k)
            else:
                delta = b.sub(t, ax.me)
                if ax.stride != 1:
                    delta = b.mul(delta, b.i32(ax.stride))
                dev = b.add(self.dev, delta, "a2a_device")
            src = self.chunk(b, x, split, bs, b.to_index(t), "a2a_block")
            dst = self.chunk(b, out, concat, cs, me, "a2a_slot")
            step = b.sub(s, b.index(1))
            sem = b.op(tpu.MemRefSliceOp(recv_sems, [step], tpu.DMASemaphoreType()), "a2a_recv_sem")
            b.op(tpu.DMAStartOp(src, dst, send_sem=send_sem, recv_sem=sem, device=dev))

        if ax.groups is not None:
            # A group ring's peers come from a table: one step per peer, unrolled.
            for k in range(1, n):
                send(e, e.index(k), k)
        else:
            b, s = self.for_steps(1, n)
            send(b, s, None)
            b.op(scf.YieldOp())
        # The waits: here, or at the done of a _start.
        w = Emitter(Block())
        w.op(tpu.DMAWaitOp(copy_sem, own_dst))
        b, s = self.for_steps(1, n, e=w)
        src_c = b.rem(b.add(b.sub(ax.me, b.to_i32(s)), ax.n), ax.n)
        incoming = self.chunk(b, out, concat, cs, b.to_index(src_c), "a2a_incoming")
        sem = b.op(
            tpu.MemRefSliceOp(recv_sems, [b.sub(s, b.index(1))], tpu.DMASemaphoreType()),
            "a2a_recv_sem",
        )
        # Every block has the same size: the send semaphore's waits take them in order.
        b.op(tpu.DMAWaitOp(send_sem, own_src))
        b.op(tpu.DMAWaitOp(sem, incoming))
        b.op(scf.YieldOp())
        ops = list(w.block.ops)
        for o in ops:
            o.detach()
        if later is not None:
            later += ops
        else:
            for o in ops:
                e.op(o)

    def permute(
        self,
        op: collective.PermuteBase,
        ax: _Axis,
        x: SSAValue,
        out: SSAValue,
        later: list[Operation] | None,
    ) -> None:
        e, n = self.e, ax.size
        deferred: list[Operation] = []
        send_sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "pm_send_sem")
        recv_sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "pm_recv_sem")
        if op.pairs is None:
            assert op.shift is not None
            shift = op.shift.value.data % n
            if shift == 0:
                e.op(tpu.DMAStartOp(x, out, recv_sem=recv_sem))
                deferred.append(tpu.DMAWaitOp(recv_sem, out))
            else:
                target = self.neighbour(ax, shift)
                e.op(tpu.DMAStartOp(x, out, send_sem=send_sem, recv_sem=recv_sem, device=target))
                deferred += [tpu.DMAWaitOp(send_sem, x), tpu.DMAWaitOp(recv_sem, out)]
        else:
            pairs = op.source_target_pairs
            targets = {t for _, t in pairs}

            def when(rank: int, ops: list[Operation]) -> list[Operation]:
                c = arith.ConstantOp(IntegerAttr(rank, i32))
                cond = arith.CmpiOp(ax.me, c, "eq")
                return [c, cond, scf.IfOp(cond, [], [*ops, scf.YieldOp()])]

            for src, tgt in pairs:
                if src == tgt:
                    for o in when(src, [tpu.DMAStartOp(x, out, recv_sem=recv_sem)]):
                        e.op(o)
                    deferred += when(tgt, [tpu.DMAWaitOp(recv_sem, out)])
                    continue
                # On rank `src`, the peer `tgt - src` ranks on is rank `tgt`.
                dev = self.neighbour(ax, tgt - src)
                start = tpu.DMAStartOp(x, out, send_sem=send_sem, recv_sem=recv_sem, device=dev)
                for o in when(src, [start]):
                    e.op(o)
                deferred += when(src, [tpu.DMAWaitOp(send_sem, x)])
                deferred += when(tgt, [tpu.DMAWaitOp(recv_sem, out)])
            idle = [r for r in range(n) if r not in targets]
            if idle:
                ot = out.type
                assert isinstance(ot, MemRefType)
                shape, elem = list(ot.get_shape()), ot.element_type
                self.check_vmem(op, "zeroing a permute result", nbytes(shape, elem))
                vty = VectorType(elem, shape)
                zero_attr = (
                    FloatAttr(0.0, elem) if element_kind(elem) == "float" else IntegerAttr(0, elem)  # pyright: ignore
                )
                buf_ty = memref_type(shape, elem, VMEM)
                for r in idle:
                    buf = tpu.AllocOp(buf_ty)
                    z = arith.ConstantOp(
                        DenseIntOrFPElementsAttr.from_list(vty, [zero_attr.value.data])
                    )  # pyright: ignore
                    idx = [arith.ConstantOp(IntegerAttr(0, INDEX))]
                    store = tpu.StoreOp(z, buf, [idx[0].result] * len(shape))
                    zs = tpu.AllocOp(tpu.DMASemaphoreType())
                    ops = [
                        buf,
                        z,
                        *idx,
                        store,
                        zs,
                        tpu.DMAStartOp(buf, out, recv_sem=zs),
                        tpu.DMAWaitOp(zs, out),
                        tpu.DeallocOp(buf),
                    ]
                    for o in when(r, ops):
                        e.op(o)
        if later is not None:
            later += deferred
        else:
            for o in deferred:
                e.op(o)


def _is_tensor_program(function: func.FuncOp) -> bool:
    """A level-G/S function (tensors in, tensors out, or hlo/collective ops), as opposed to
    a kernel or a helper of scalars: even one that only returns its arguments becomes a
    kernel (of copies), so that a pipeline's result is all level T."""
    types = [*function.function_type.inputs.data, *function.function_type.outputs.data]
    return any(isinstance(t, TensorType) for t in types) or any(
        isinstance(o, collective.CollectiveOp | collective.DoneOp | hlo.HloOp)
        for o in function.body.walk()
    )


def _check_partitioned(function: func.FuncOp) -> None:
    """A function with shardings but not partitioned is level G: its shapes are global, and
    lowering them as one device's would make kernels of the wrong sizes."""
    if (
        spmd.PARTITIONED_ATTR_NAME in function.attributes
        or spmd.PER_DEVICE_IO_ATTR_NAME in function.attributes
    ):
        return
    if any(s is not None for group in spmd.function_shardings(function) for s in group):
        raise OpPassError(
            function,
            f"lower-to-tpu: @{function.sym_name.data} is a level-G program (global "
            "shapes with shardings): partition it first (spmd-pipeline), or use tpu-pipeline",
        )


@dataclass(frozen=True)
class LowerToTpuPass(ModulePass):
    """Level S to level T (see the module docstring)."""

    name = "lower-to-tpu"

    chip: str = "v5e"
    """The chip whose VMEM capacity bounds the blocks."""

    vmem_limit: int | None = None
    """Bytes of VMEM the kernel may use (default: the chip's capacity); like Mosaic's
    `vmem_limit_bytes`, and how tests force many small blocks."""

    bidirectional: bool | None = None
    """Ring collectives both ways round (true), one way (false), or (default) both ways
    exactly on axes with wraparound links; how bench/collectives.py compares the two."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            chip = get_chip(self.chip)
        except UnknownChipError as err:
            raise PassFailedException(f"lower-to-tpu: {err}") from None
        if self.vmem_limit is not None and self.vmem_limit <= 0:
            raise PassFailedException(
                f"lower-to-tpu: vmem-limit must be positive, got {self.vmem_limit}"
            )
        record_level_s(op, chip)  # what the kernels' reports need from level S
        for function in list(op.body.block.ops):
            if not isinstance(function, func.FuncOp) or not function.body.blocks:
                continue
            if not _is_tensor_program(function):
                continue
            _check_partitioned(function)
            if len(function.body.blocks) != 1:
                raise OpPassError(function, "lower-to-tpu: functions of one block only")
            new = KernelLowering(function, chip, self.vmem_limit, self.bidirectional).run()
            Rewriter.replace_op(function, new, [])
