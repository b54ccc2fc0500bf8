"""
`lower-to-tpu{chip=v5e}`: a level-S function (per-device `hlo` + `collective`) becomes one
level-T `tpu` kernel per device (DESIGN.md "Level T", issue 7 item 2). Collectives
become ring (or direct) algorithms of remote DMAs over mesh axes or device groups
(all_gather, reduce_scatter / all_reduce of every reduction kind and element type, a
complex mul / max / min combining (re, im) pairs: `pair_combine`; all_to_all, permute), and every `hlo` compute op between them as a tiled,
double-buffered VMEM loop (lowering/compute.py).

The kernel starts with `tpu.barrier` over all devices (Pallas's "every device has entered
the kernel" before anyone pushes into its buffers or signals its semaphores), then lowers
the function's ops in order. Where each part lives:

* `abi`: the calling convention (inputs, outputs, scratch buffers in HBM; `tpu.io`).
* `topology`: mesh axes and device groups as rings, neighbours, lookup tables.
* `collectives`: which algorithm lowers a collective, and `_start` / `done` pairs
  (a `_start`'s ring steps interleaved into the compute loops before its `done`:
  `ring_steps`);
  `fusion` (`hlo.fusion`: one tiled loop of compute's core; `prepare` inlines, and names,
  the ones that cannot be);
  the algorithms in `all_gather`, `reduce_scatter` (+ `reduce_ring`, the ring steps),
  `all_reduce`, `all_to_all`, `permute`.
* `compute` (hlo compute ops: elementwise, compare, select, convert, constant, iota,
  broadcast, transpose, dot on the MXU, reduce; every element type, level S's numerics):
  one `scf.for` over blocks each, (8, 128)-aligned blocks as large as the VMEM left over
  allows, operand blocks DMA'd HBM->VMEM into two slots (the next step's prefetched
  while this one computes), result blocks DMA'd back.
* `movement` (reshape, slice, concatenate, dynamic_slice, dynamic_update_slice,
  axis_index): DMAs between HBM buffers.
* `control_flow` (while, case: `scf.for` / `scf.while` / `scf.if` around their regions'
  ops), `windows` (pad, reverse as DMA programs; a channels-last reduce_window,
  select_and_scatter or convolution as one halo kernel, `window_kernel` /
  `select_scatter_kernel` / `conv_kernel`; the other windows and select_and_scatters
  rewritten into level-S ops first, `expand`), `convolution` (the other convolutions:
  MXU dots over the kernel's taps).
* `gather` (gather, scatter: DMA programs, the indices in SMEM) and `sorting` (sort,
  top_k: a bitonic network in VMEM; a small k by selection passes); `reduce_body` (a
  reduce with a body, argmax: compute's tiled loop folding the body in level S's order);
  `random` (rng_bit_generator: compute's tiled loop of 32-bit integer vector ops,
  Threefry / Philox bit for bit); `element_types`: which op is lowered in which element
  type (every level-S type is held; computing ops take most of them).
`compute` and `movement` see the kernel only as a `context.LoweringContext`.

Not yet (the pass says so with an error at the op): a reduce_scatter chunk too large for
VMEM that no dimension lets cut into pieces, or the VMEM intermediate of a multi-axis
reduce_scatter (or a bf16/f16 multi-axis all_reduce) over VMEM (an error naming the op,
the size and the capacity); pipelining the pieces of a `_start`'s reduce_scatter (a
sync collective's are, at full and at low precision: lowering/reduce_ring.py says why
not a `_start`'s); no (8, 128) vreg
alignment of collective blocks; compute ops whose smallest legal blocks do not
fit VMEM (an error naming the op, the blocks and the capacity), among them dense
non-splat constants larger than VMEM; fusing compute ops that the `fusion` pass did not
group (an `hlo.fusion` is one loop, `fusion`; other ops are each their own loop through
HBM, and wait for their last write-back before the next starts); ring steps of a `_start`
overlap only the tiled compute loops and movement ops before its `done` (`ring_steps`: a
movement op is one block, its steps placed before it; steps whose transfers the compute
in between cannot cover run at the `done`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType

from shardc.diagnostics import OpPassError
from shardc.dialects import collective, hlo, spmd, tpu
from shardc.hardware.chips import UnknownChipError, get_chip
from shardc.hardware.cost import bitcast_view
from shardc.lowering import complex_pairs, element_types
from shardc.lowering import compute as tpu_compute
from shardc.lowering import control_flow as tpu_control
from shardc.lowering import convolution as tpu_convolution
from shardc.lowering import fusion as tpu_fusion
from shardc.lowering import gather as tpu_gather
from shardc.lowering import movement as tpu_movement
from shardc.lowering import random as tpu_random
from shardc.lowering import reduce_body as tpu_reduce_body
from shardc.lowering import sorting as tpu_sorting
from shardc.lowering import windows as tpu_windows
from shardc.lowering.abi import KernelAbi
from shardc.lowering.collectives import CollectiveLowering
from shardc.lowering.context import Target
from shardc.lowering.emit import Emitter
from shardc.lowering.level_s_summary import record_level_s, record_unfused
from shardc.lowering.ring_steps import Overlap
from shardc.lowering.topology import Topology
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import LocationAttr, MemRefType, ModuleOp, TensorType, UnknownLoc
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

_OP_LOWERINGS: tuple[ModuleType, ...] = (
    tpu_fusion,
    tpu_compute,
    tpu_movement,
    tpu_control,
    tpu_windows,
    tpu_gather,
    tpu_sorting,
    tpu_reduce_body,
    tpu_random,
)
"""The modules lowering non-collective ops, each with `handles(op)` and `lower(kernel, op)`,
asked in this order (a fusion before its kind of op)."""


def check_function(function: func.FuncOp, target: Target) -> None:
    """
    Raise an `OpPassError` at the first op of `function` that cannot be lowered: first an
    op level T has no lowering for at all (whatever its types), then element types.
    """
    ops = list(_lowered_ops(function.body.block))
    for op in ops:
        passive = isinstance(op, collective.CollectiveOp | collective.DoneOp | func.ReturnOp)
        passive = passive or tpu_control.handles(op)
        if tpu_fusion.handles(op):
            continue  # one loop (`fusion.prepare` inlined the ones that cannot be)
        lowered = tpu_compute.handles(op) or tpu_movement.handles(op) or _lowered_op(op)
        if not (passive or lowered):
            raise OpPassError(op, f"lower-to-tpu: {op.name} is not supported yet")
    for arg in function.args:
        _check_element_type(function, arg.type, "an argument")
    for op in ops:
        passive = isinstance(op, collective.CollectiveOp | collective.DoneOp | func.ReturnOp)
        passive = passive or tpu_control.handles(op)
        fused = tpu_fusion.handles(op)  # its inner ops compute: their types are checked
        for typed in _inner_ops(op) if fused else (op,):
            for value in (*typed.operands, *typed.results):
                _check_element_type(typed, value.type, typed.name)
        if passive or fused:
            continue
        if tpu_compute.handles(op):
            tpu_compute.check(target, op)
        elif tpu_windows.handles(op):
            tpu_windows.check(target, op)
        elif tpu_gather.handles(op):
            tpu_gather.check(target, op)
        elif tpu_sorting.handles(op):
            tpu_sorting.check(target, op)
        elif tpu_reduce_body.handles(op):
            tpu_reduce_body.check(target, op)
        elif tpu_random.handles(op):
            tpu_random.check(target, op)
        else:
            tpu_movement.check(target, op)


def _lowered_ops(block: Block) -> Iterator[Operation]:
    """
    The ops `check_function` checks: the block's and, inside while / case, their regions'
    (not a fusion's: `fusion` lowers its inner ops itself, as one loop; not a scatter's or
    sort's computation, which their lowerings read).
    """
    for op in block.ops:
        if isinstance(op, hlo.ReturnOp):
            continue
        yield op
        if not tpu_control.handles(op):
            continue
        for region in op.regions:
            for inner in region.blocks:
                yield from _lowered_ops(inner)


def _inner_ops(fusion: Operation) -> list[Operation]:
    """A fusion's ops (its region's one block, without the return)."""
    return [o for o in fusion.regions[0].block.ops if not isinstance(o, hlo.ReturnOp)]


def _lowered_op(op: Operation) -> bool:
    """pad / reverse (lowering/windows.py), gather / scatter (lowering/gather.py), sort /
    top_k (lowering/sorting.py), rng_bit_generator (lowering/random.py)."""
    return (
        tpu_windows.handles(op)
        or tpu_gather.handles(op)
        or tpu_sorting.handles(op)
        or tpu_reduce_body.handles(op)
        or tpu_random.handles(op)
    )


def _check_element_type(at: Operation, ty: object, what: str) -> None:
    """Level T holds every level-S element type; which ops compute in which: `element_types`."""
    if isinstance(ty, TensorType) and not element_types.lowered(at, ty.element_type):
        raise OpPassError(
            at,
            f"lower-to-tpu: {what} with element type {ty.element_type} is not supported yet "
            f"(level T computes in {element_types.SUPPORTED_TEXT})",
        )


class KernelLowering:
    """
    One level-S function (checked by `check_function`) becoming one tpu kernel: the
    `LoweringContext` the op lowerings of `compute` and `movement` append to, and the
    collectives' state (`CollectiveLowering`, if there are collectives).
    """

    def __init__(
        self,
        function: func.FuncOp,
        target: Target,
        bidirectional: bool | None,
        interleave: bool = True,
    ):
        self.abi = KernelAbi.of(function)
        self._target = target
        self._emitter = Emitter(self.abi.block)
        self.collectives: CollectiveLowering | None = None
        if any(isinstance(op, collective.CollectiveOp) for op in function.body.walk()):
            dev = self._emitter.op(tpu.DeviceIdOp(), "dev")
            self._emitter.op(tpu.BarrierOp())
            topology = Topology(dev, target.chip, spmd.find_mesh(function), bidirectional)
            self.collectives = CollectiveLowering(self._emitter, topology, target, interleave)

    @property
    def target(self) -> Target:
        return self._target

    @property
    def emitter(self) -> Emitter:
        return self._emitter

    @property
    def buffers(self) -> Mapping[SSAValue, SSAValue]:
        return self.abi.buffers

    @property
    def overlap(self) -> Overlap | None:
        return None if self.collectives is None else self.collectives.overlap

    def hbm_scratch(self, ty: MemRefType, hint: str) -> SSAValue:
        return self.abi.add_scratch(ty, hint)

    def run(self) -> func.FuncOp:
        """
        Lower every op, copy the results out; the kernel. Every kernel op reports where the
        op it lowers was written (`Operation.location`): the ops a lowering appends, nested
        ones too, take its location; the kernel's prologue and epilogue take the function's.
        """
        function = self.abi.function
        for op in function.body.block.ops:
            if isinstance(op, func.ReturnOp):
                break
            last = self.abi.block.last_op
            self.lower(op)
            _locate_after(self.abi.block, last, op.location)
        last = self.abi.block.last_op
        self.abi.emit_return(self._emitter)
        _locate_after(self.abi.block, last, function.body.block.last_op.location)  # pyright: ignore
        kernel = self.abi.kernel()
        _locate_after(kernel.body.block, None, function.location)
        kernel.location = function.location
        return kernel

    def lower(self, op: Operation) -> None:
        if isinstance(op, collective.DoneOp):
            assert self.collectives is not None
            self.collectives.done(op, self.buffers)
        elif isinstance(op, collective.CollectiveOp):
            assert self.collectives is not None
            self.collectives.lower(op, self.buffers)
        elif bitcast_view(op):
            assert isinstance(op, hlo.BitcastConvertOp)
            self.abi.view(self._emitter, op)
        elif op in self.abi.in_place:
            pass  # its operand was computed into its output, viewed (`abi._viewed_outputs`)
        else:
            lowering = next((m for m in _OP_LOWERINGS if m.handles(op)), None)
            if lowering is None:
                raise AssertionError(op.name)  # `check_function` refused it already
            if lowering is tpu_movement:
                self._ring_steps_before(op)
            lowering.lower(self, op)

    def _ring_steps_before(self, op: Operation) -> None:
        """
        A movement op (its DMAs, waited before the next op) is one block boundary for the
        pending rings (`ring_steps.Overlap.place_before`), of its level-S time: a step landing
        during it goes before it (its ring without slack: the op waits for the step) or
        after it, and the overlap's clock counts it. Passed over, a ring idled through it
        whatever its slack, and the placement clock ran behind by it (dp_grads 2048x4096
        on v5p: the 24 us concatenate of the first gradient's all_reduced pieces).
        """
        overlap = self.overlap
        if overlap is None or not overlap.rings or self.collectives is None:
            return
        overlap.place_before(self._emitter, self.collectives.cost.op_cost(op).time)

    def lower_located(self, op: Operation) -> None:
        """`lower` where the emitter is now (a region's block: control_flow), the new ops
        taking `op`'s location."""
        last = self._emitter.block.last_op
        self.lower(op)
        _locate_after(self._emitter.block, last, op.location)


def _locate_after(block: Block, last: Operation | None, location: LocationAttr) -> None:
    """Give the ops of `block` after `last` (all if None), and the ops nested in them, that
    have no location yet `location`."""
    op = block.first_op if last is None else last.next_op
    while op is not None:
        for inner in op.walk():
            if isinstance(inner.location, UnknownLoc):
                inner.location = location
        op = op.next_op


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

    interleave: bool = True
    """Interleave the ring steps of a `_start` into the tiled loops of the compute before
    its `done` (lowering/ring_steps.py); false: its first step only overlaps, the rest
    runs at the `done` (how bench/overlap.py shows the difference)."""

    pipeline_pieces: bool = True
    """Software-pipeline the pieces of a reduce_scatter cut to fit VMEM (a piece's first
    step in flight with the previous piece's last, a `_start`'s once the last has landed:
    lowering/reduce_ring.py); false: one after the other (how bench/rs_pieces.py shows
    the difference)."""

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
        vmem = self.vmem_limit if self.vmem_limit is not None else chip.vmem_bytes
        target = Target(chip, vmem, self.pipeline_pieces)
        for function in list(op.body.block.ops):
            if not isinstance(function, func.FuncOp) or not function.body.blocks:
                continue
            if not _is_tensor_program(function):
                continue
            _check_partitioned(function)
            if len(function.body.blocks) != 1:
                raise OpPassError(function, "lower-to-tpu: functions of one block only")
            remarks = complex_pairs.expand(function, chip)  # complex ops on their parts
            remarks += tpu_fusion.prepare(function, target)  # first: it may inline a conv
            tpu_windows.expand(function, target)  # reduce_window as level-S ops
            tpu_convolution.expand(function, target)  # convolution as dots over taps
            check_function(function, target)
            new = KernelLowering(function, target, self.bidirectional, self.interleave).run()
            tpu_fusion.mark(new, remarks)
            record_unfused(op, function.sym_name.data, remarks)
            Rewriter.replace_op(function, new, [])
