"""
The tiling core of `compute`, part one: what a tiled op is (`Tiled`: its iteration space,
its operand `Stream`s, its block body, its accumulator) and how its blocks are chosen
(`plan_blocks`: the fastest legal blocks that fit the VMEM left over, by a pipeline model;
see the `compute` module docstring).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from shardc.dialects import tpu
from shardc.hardware.chips import Chip
from shardc.hardware.cost import vmem_time
from shardc.lowering.context import Target
from shardc.lowering.emit import VMEM, nbytes, tensor_type
from shardc.lowering.tile_index import Ix, TileEmitter
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

LANES, SUBLANES = 128, 8
STEP_OVERHEAD = 0.35e-6
"""Seconds `plan_blocks` charges per loop step (Pallas's per-grid-step overhead is about
this), so that blocks stay large unless smaller ones buy more overlap than that."""
MAX_CHOICES = 20000
"""At most this many block shapes are compared."""


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


def _alignment(t: Tiled) -> list[int]:
    """Each iteration dimension's block must be a multiple of this (or whole)."""
    align = [1] * len(t.sizes)
    # The last two dimensions of every operand and of the result, as laid out in HBM.
    for dims in [*(s.dims for s in t.streams), tuple(range(t.n_out))]:
        for pos, unit in ((-1, LANES), (-2, SUBLANES)):
            if len(dims) >= -pos and dims[pos] is not None:
                it = dims[pos]
                align[it] = math.lcm(align[it], unit)
    for it, unit in t.align.items():
        align[it] = math.lcm(align[it], unit)
    return align


def _choices(size: int, unit: int) -> list[int]:
    """Legal block sizes of a dimension, largest first."""
    divisors = {d for i in range(1, math.isqrt(size) + 1) if size % i == 0 for d in (i, size // i)}
    return sorted((d for d in divisors if d % unit == 0 or d == size), reverse=True)


def _vmem(t: Tiled, blocks: Sequence[int], grid: Sequence[int]) -> tuple[int, bool]:
    """VMEM bytes of the buffers for these blocks; whether the accumulator is separate."""
    total = 0
    for s in t.streams:
        size = nbytes(s.block(blocks), s.elem)
        total += size * (2 if s.moves(grid) else 1)
        if s.perm is not None:
            total += size
    for s in t.scratch:
        total += nbytes(s.shape(blocks), s.elem)
    out = _out_bytes(t, blocks)
    out_blocks = math.prod(grid[: t.n_out])
    total += out * (2 if out_blocks > 1 else 1)
    separate = separate_acc(t)
    if separate:
        assert t.acc is not None
        total += nbytes(blocks[: t.n_out], t.acc.elem)
    return total, separate


def separate_acc(t: Tiled) -> bool:
    """Whether the accumulator is a VMEM buffer of its own (not the result slot)."""
    if t.acc is None:
        return False
    own = t.acc.epilogue is not None or len(t.results) > 1
    return own or t.acc.elem != tensor_type(t.result.type).element_type


def _out_bytes(t: Tiled, blocks: Sequence[int]) -> int:
    """Bytes of one block of every result."""
    return sum(nbytes(blocks[: t.n_out], tensor_type(r.type).element_type) for r in t.results)


def _estimate(chip: Chip, t: Tiled, blocks: Sequence[int], grid: Sequence[int]) -> float:
    """
    Seconds the loop would take: the first fetch, then per step the longer of its
    compute and the HBM traffic overlapping it (the blocks prefetched for the next step,
    the previous result block's write-back), then the last write-back.
    """
    hbm = chip.hbm_bw
    steps = math.prod(grid)
    out = _out_bytes(t, blocks)
    sizes = [nbytes(s.block(blocks), s.elem) for s in t.streams]
    # The body's loads and stores (operand blocks, result block read and written) at
    # VMEM bandwidth, then its compute.
    work = vmem_time(chip, sum(sizes) + 2 * out) + t.work(blocks)
    # Bytes moved every `period` steps; periods are suffix products of the grid, so each
    # divides the next, and a step that moves one period's blocks moves the shorter ones'.
    traffic: dict[int, int] = {}
    for s, size in zip(t.streams, sizes, strict=False):
        if s.moves(grid):
            traffic[s.period(grid)] = traffic.get(s.period(grid), 0) + size
    n_red = math.prod(grid[t.n_out :])
    if n_red < steps:
        traffic[n_red] = traffic.get(n_red, 0) + out
    periods = sorted(traffic)
    total, moved, busy = 0.0, 0, 0
    for j, p in enumerate(periods):
        count = (steps - 1) // p - ((steps - 1) // periods[j + 1] if j + 1 < len(periods) else 0)
        moved += traffic[p]
        total += count * max(work, moved / hbm)
        busy += count
    total += (steps - busy) * work
    return sum(sizes) / hbm + total + out / hbm


def plan_blocks(target: Target, t: Tiled, in_use: int, min_steps: int = 1) -> Plan:
    """
    The blocks (see the module docstring), or an OpPassError if none fits the VMEM
    left over by the `in_use` bytes collectives in flight hold. `min_steps`: prefer
    plans of at least that many blocks (block boundaries where ring steps of a pending
    collective go, `ring_steps`), if any fits.
    """
    align = _alignment(t)
    options = [[n] if t.whole else _choices(n, a) for n, a in zip(t.sizes, align, strict=False)]
    while math.prod(len(o) for o in options) > MAX_CHOICES:
        longest = max(options, key=len)
        del longest[len(longest) // 2]
    budget = target.vmem_bytes - in_use
    best: tuple[tuple[bool, float, int, tuple[int, ...]], Plan] | None = None
    for blocks in itertools.product(*options):
        grid = tuple(n // b for n, b in zip(t.sizes, blocks, strict=False))
        size, separate = _vmem(t, blocks, grid)
        if size > budget:
            continue
        steps = math.prod(grid)
        cost = _estimate(target.chip, t, blocks, grid) + steps * STEP_OVERHEAD
        # Ties: larger trailing blocks (whole rows make contiguous DMAs).
        key = (steps < min_steps, cost, steps, tuple(-b for b in reversed(blocks)))
        if best is None or key < best[0]:
            best = (key, Plan(blocks, grid, size, separate))
    if best is None:
        smallest = tuple(o[-1] for o in options)
        grid = tuple(n // b for n, b in zip(t.sizes, smallest, strict=False))
        size, _ = _vmem(t, smallest, grid)
        held = target.vmem_bytes - budget
        what = (
            f"{t.op.name} with its smallest blocks ({_blocks_str(t, smallest)}"
            + (f"; {held} bytes held by collectives in flight" if held else "")
            + ")"
        )
        target.check_vmem(t.op, what, size + held)
        raise AssertionError("unreachable")
    return best[1]


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
    align = _alignment(t)
    smallest = tuple(
        n if t.whole else _choices(n, a)[-1] for n, a in zip(t.sizes, align, strict=False)
    )
    grid = tuple(n // b for n, b in zip(t.sizes, smallest, strict=False))
    if _vmem(t, smallest, grid)[0] > target.vmem_bytes:
        plan_blocks(target, t, 0)  # the error, or a plan with fewer slots that fits


def plan_time(chip: Chip, t: Tiled, plan: Plan) -> float:
    """Estimated seconds of `plan`'s loop (the pipeline model plus the grid steps)."""
    steps = math.prod(plan.grid)
    return _estimate(chip, t, plan.blocks, plan.grid) + steps * STEP_OVERHEAD
