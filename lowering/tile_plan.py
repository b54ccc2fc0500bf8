"""
The tiling core of `compute`, part one: what a tiled op is (`Tiled`: its iteration space,
its operand `Stream`s, its block body, its accumulator) and how its blocks are chosen
(`plan_blocks`: the fastest legal blocks that fit the VMEM left over, by the pipeline model
of `hardware.kernel`, which level S's cost of the same op uses too; see the `compute`
module docstring).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from shardc.dialects import tpu
from shardc.hardware import kernel
from shardc.hardware.chips import Chip
from shardc.hardware.kernel import LANES as LANES  # the layout units, for compute.py
from shardc.hardware.kernel import SUBLANES as SUBLANES
from shardc.hardware.kernel import Kernel, KernelStream
from shardc.lowering.context import Target
from shardc.lowering.emit import VMEM, tensor_type
from shardc.lowering.tile_index import Ix, TileEmitter
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

# The tiling core -------------------------------------------------------------------------


@dataclass
class Stream:
    """One operand of a tiled op: which block of it each step reads."""

    value: SSAValue
    """The level-S value (its HBM buffer is `LoweringContext.buffers[value]`)."""
    dims: tuple[int | None, ...]
    """The iteration dimension each operand dimension follows (None: taken whole)."""
    perm: tuple[int, ...] | None = None
    """Transpose the block into this order (staged through VMEM scratch)."""
    view: Callable[[tuple[int, ...]], tuple[int, ...]] | None = None
    """The shape the body reads the (transposed) block as; default: as it is."""
    window: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    """(start, shape): only this part of the operand is read (a fused static slice), its
    blocks offset by `start`; default: all of it."""
    once: bool = False
    """Read by a fused epilogue only: loaded once per result block (`Acc.epilogue`)."""

    @property
    def shape(self) -> tuple[int, ...]:
        if self.window is not None:
            return self.window[1]
        return tensor_type(self.value.type).get_shape()

    @property
    def elem(self) -> Attribute:
        return tensor_type(self.value.type).element_type

    def block(self, blocks: Sequence[int]) -> tuple[int, ...]:
        return tuple(
            s if it is None else blocks[it] for s, it in zip(self.shape, self.dims, strict=False)
        )

    def staged(self, blocks: Sequence[int]) -> tuple[int, ...]:
        blk = self.block(blocks)
        return blk if self.perm is None else tuple(blk[p] for p in self.perm)

    def view_shape(self, blocks: Sequence[int]) -> tuple[int, ...]:
        staged = self.staged(blocks)
        return staged if self.view is None else self.view(staged)

    def period(self, grid: Sequence[int]) -> int:
        """
        For how many consecutive steps its block stays the same: the blocks of the
        iteration dimensions after the last one it follows (row-major over the grid).
        It is fetched once every `period` steps, prefetched a step ahead.
        """
        deps = [it for it in self.dims if it is not None and grid[it] > 1]
        return math.prod(grid[max(deps) + 1 :]) if deps else math.prod(grid)

    def moves(self, grid: Sequence[int]) -> bool:
        """Whether its block changes during the loop (else it is fetched once)."""
        return self.period(grid) < math.prod(grid)


@dataclass
class Acc:
    """How a reducing op accumulates: in `elem`, from `init`, rounded by `finish`."""

    elem: Attribute
    init: Callable[[TileEmitter, VectorType], SSAValue]
    finish: Callable[[TileEmitter, SSAValue], SSAValue]
    epilogue: Epilogue | None = None
    """Applied to the rounded accumulator before the write-back (a fused dot's epilogue);
    the accumulator is then a VMEM buffer of its own."""
    result: Attribute | None = None
    """The element type `finish` rounds to (`kernel.Kernel.reduces_to`: level S's cost of
    a result block's start and rounding); None: not costed so (a reduce with a body)."""


Body = Callable[[TileEmitter, list[SSAValue], list[Ix], SSAValue], None]
"""(emitter, the operands' VMEM blocks (then the `Tiled.scratch` buffers), the block index
per iteration dimension, the VMEM block to write: the result's, or the accumulator; a
list of the results' blocks for a multi-output op without accumulator) -> None."""

Epilogue = Callable[[TileEmitter, SSAValue, list[SSAValue], list[Ix]], list[SSAValue]]
"""(emitter, the rounded accumulator, the operands' VMEM blocks (and scratch), the block
index) -> one vector per result: a fused dot's epilogue, applied once per result block."""


@dataclass
class Scratch:
    """A VMEM buffer a fused body keeps an intermediate in (one, reused every step)."""

    shape: Callable[[Sequence[int]], tuple[int, ...]]
    elem: Attribute


@dataclass
class Tiled:
    op: Operation
    sizes: tuple[int, ...]
    """Iteration space: the result's dimensions, then the reduced ones."""
    streams: list[Stream]
    body: Body
    work: Callable[[Sequence[int]], float]
    """Compute seconds of one step for given blocks (for `plan_blocks`)."""
    acc: Acc | None = None
    align: dict[int, int] = field(default_factory=dict)
    """Extra alignment per iteration dimension (the MXU's)."""
    whole: bool = False
    """One block only (a dense constant)."""
    outputs: tuple[SSAValue, ...] = ()
    """The results written (a multi-output fusion's, all of the iteration space's output
    shape); default: the op's first."""
    scratch: list[Scratch] = field(default_factory=list)
    """VMEM buffers of the body's own (a fusion's staged intermediates)."""
    out_offset: tuple[int, ...] | None = None
    """Where the iteration space's blocks go in the results (a part of a fused
    concatenate); default: at the origin, the results of the iteration space's shape."""
    on_plan: Callable[[tuple[int, ...]], None] | None = None
    """Told the chosen blocks before the loop is emitted (a fused body's block shapes)."""
    finish: Callable[[Sequence[int]], float] | None = None
    """Compute seconds of the epilogue (`Acc.epilogue`), once per result block."""

    @property
    def result(self) -> SSAValue:
        return self.results[0]

    @property
    def results(self) -> tuple[SSAValue, ...]:
        return self.outputs or (self.op.results[0],)

    @property
    def n_out(self) -> int:
        return len(tensor_type(self.result.type).get_shape())

    @property
    def tag(self) -> str:
        return self.op.name.removeprefix("hlo.")


@dataclass(frozen=True)
class Plan:
    blocks: tuple[int, ...]
    grid: tuple[int, ...]
    """Blocks per iteration dimension."""
    vmem: int
    separate_acc: bool
    """Whether the accumulator is a VMEM buffer of its own (not the result slot)."""


def kernel_of(t: Tiled) -> Kernel:
    """`t` as `hardware.kernel` plans and times it (its streams' shapes, element types and
    block maps; whether they are staged; the results' element types; the accumulator if
    it is a buffer of its own; the body's work and scratch)."""
    streams = [KernelStream(s.shape, s.elem, s.dims, s.perm is not None, s.once) for s in t.streams]
    outs = tuple(tensor_type(r.type).element_type for r in t.results)
    acc = t.acc.elem if t.acc is not None and separate_acc(t) else None
    scratch = [(s.shape, s.elem) for s in t.scratch]
    return Kernel(
        tuple(t.sizes),
        streams,
        t.n_out,
        outs,
        t.work,
        acc,
        dict(t.align),
        t.whole,
        scratch,
        t.finish,
        None if t.acc is None else t.acc.result,
    )


def separate_acc(t: Tiled) -> bool:
    """Whether the accumulator is a VMEM buffer of its own (not the result slot)."""
    if t.acc is None:
        return False
    own = t.acc.epilogue is not None or len(t.results) > 1
    return own or t.acc.elem != tensor_type(t.result.type).element_type


def plan_blocks(target: Target, t: Tiled, in_use: int, min_steps: int = 1) -> Plan:
    """
    The blocks `hardware.kernel.plan` chooses (see its module docstring), or an
    OpPassError if none fits the VMEM left over by the `in_use` bytes collectives in
    flight hold. `min_steps`: prefer plans of at least that many blocks (block boundaries
    where ring steps of a pending collective go, `ring_steps`), if any fits.
    """
    k = kernel_of(t)
    budget = target.vmem_bytes - in_use
    found = kernel.plan(target.chip, k, budget, min_steps)
    if found is None:
        smallest = tuple(o[-1] for o in kernel.block_options(k))
        grid = tuple(n // b for n, b in zip(t.sizes, smallest, strict=False))
        size = kernel.vmem_bytes(k, smallest, grid)
        held = target.vmem_bytes - budget
        what = (
            f"{t.op.name} with its smallest blocks ({_blocks_str(t, smallest)}"
            + (f"; {held} bytes held by collectives in flight" if held else "")
            + ")"
        )
        target.check_vmem(t.op, what, size + held)
        raise AssertionError("unreachable")
    return Plan(found.blocks, found.grid, found.vmem, separate_acc(t))


def _blocks_str(t: Tiled, blocks: Sequence[int]) -> str:
    parts = [f"result {'x'.join(map(str, blocks[: t.n_out])) or 'scalar'}"]
    for i, s in enumerate(t.streams):
        parts.append(f"operand {i} {'x'.join(map(str, s.block(blocks))) or 'scalar'}")
    return ", ".join(parts)


def vmem_in_use(kernel: Block) -> int:
    """VMEM allocated so far in the kernel and not yet deallocated (in-flight collectives).
    Incremental (`_SEEN`): ops are appended, so only those after the last call's last op
    are walked (ops inserted earlier, `tile_loop._early`'s, are deallocated before the
    next call: not counting their allocations nor their deallocations is exact)."""
    seen = _SEEN[0] if _SEEN else None
    if seen is not None and seen[0] is kernel and seen[1].parent is kernel:
        live, op = dict(seen[2]), seen[1].next_op
    else:
        live, op = {}, kernel.first_op
    while op is not None:
        for o in op.walk():
            if isinstance(o, tpu.AllocOp) and tpu.memory_space_of(o.result.type) is VMEM:
                live[o.result] = tpu.ref_bytes(o.result.type)
            elif isinstance(o, tpu.DeallocOp):
                live.pop(o.ref, None)
        op = op.next_op
    if kernel.last_op is not None:
        _SEEN[:] = [(kernel, kernel.last_op, live)]
    return sum(live.values())


_SEEN: list[tuple[Block, Operation, dict[SSAValue, int]]] = []
"""`vmem_in_use`'s last call: (its block, the block's last op then, the live buffers)."""


def check_fits(target: Target, t: Tiled) -> None:
    """Raise `plan_blocks`'s error if even `t`'s smallest legal blocks exceed the VMEM
    (without comparing every plan: what `lower-to-tpu`'s checks need)."""
    k = kernel_of(t)
    smallest = tuple(
        n if t.whole else kernel.choices(n, a)[-1]
        for n, a in zip(t.sizes, kernel.alignment(k), strict=False)
    )
    grid = tuple(n // b for n, b in zip(t.sizes, smallest, strict=False))
    if kernel.vmem_bytes(k, smallest, grid) > target.vmem_bytes:
        plan_blocks(target, t, 0)  # the error, or a plan with fewer slots that fits


def plan_time(chip: Chip, t: Tiled, plan: Plan) -> float:
    """
    Seconds `plan`'s loop takes as the kernel runs it: `kernel.pipeline_time`, the time
    level S charges (`kernel.kernel_time`) and the level-T simulator runs, without
    `STEP_OVERHEAD` (it only steers the choice of blocks; neither level charges it).
    `ring_steps.Overlap` keeps its clock by it, placing a pending ring's next step at a
    block boundary by when the last one lands, and the rings in flight one after the
    other. With the overhead counted, that clock ran 0.35 us per grid step ahead of the
    kernel: corpus `everyday`'s cumsum, two dozen one-step loops of about 1 ns each,
    counted 8.4 us, so its two argmax all_gathers' later steps were placed as if
    microseconds of compute separated them, ran back to back instead, the second ring's
    steps in flight with the first's, and level T came out at 0.73x level S on v5e (0.84
    v5p), whose collective engine runs them one after the other.
    """
    return kernel.pipeline_time(chip, kernel_of(t), plan.blocks, plan.grid)
