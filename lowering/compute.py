"""
hlo compute ops lowered to tpu (part of `lower-to-tpu`, see lowering/lower_to_tpu.py):
every op is one tiled, double-buffered loop over VMEM blocks, built by one tiling core
(`_Tiled` + `_plan` + `_emit`); the ops only say how their operands' blocks follow the
result's and what to compute on a block.

The scheme
----------
* Iteration space: the result's dimensions, then the reduced ones (dot's contracting
  dimensions, reduce's `dims`). Each operand dimension follows one iteration dimension
  (its block is that dimension's block) or none (taken whole: broadcast's size-1
  dimensions).
* Blocks (`_plan`): every iteration dimension gets a block size that divides it; the
  last two dimensions of every block (operands' and result's, as laid out in HBM) are
  multiples of (8, 128) or the whole dimension, and a dot's contracting and rhs-free
  blocks are multiples of 128 (the MXU's tile) and its lhs rows of 8. Among the choices
  whose VMEM (below) fits `lowering.vmem_bytes` less what in-flight collectives still
  hold, `_plan` takes the fastest by a pipeline model (`_estimate`: the first fetch, then
  per step the longer of its compute (MXU or VPU, plus VMEM loads and stores) and the
  HBM traffic overlapping it, then the last write-back; it agrees with the level-T
  simulator to about 1%), plus Pallas's ~0.35 us per grid step, which keeps blocks large
  (the simulator's cost grows with the number of blocks). If even the smallest legal
  blocks do not fit, the op is an error naming the blocks, the bytes and the capacity.
* The loop (`_emit`): one `scf.for %t` over all blocks, row-major over the result's
  blocks with the reduced blocks innermost. An operand's block changes every `period`
  steps (the blocks of the iteration dimensions after the last one it follows: a dot's
  lhs keeps its rows while the rhs columns go by); an operand whose block moves has two
  VMEM slots and a DMA semaphore per slot, alternating per fetch: step t waits for its
  blocks if they are new, then starts the DMAs of the blocks step t+1 needs anew into
  the other slots (prefetch), then computes. An operand whose block never moves is
  fetched once, before the loop. The result has two VMEM slots: a result block is DMA'd
  back to HBM when its last reduced block is done, and its slot is reused two result
  blocks later, after waiting for that DMA. After the loop every DMA has been waited
  for, every semaphore is zero and every VMEM buffer is `tpu.dealloc`'d.
* Compute: `tpu.load` of the slots as `vector<...>`, `arith`/`math`/`vector.broadcast`
  and `tpu.transpose`/`tpu.iota`/`tpu.matmul`/`tpu.reduce`, `tpu.store`. A block that
  needs another layout (a transposed dot operand) is staged through a VMEM scratch
  buffer, and `tpu.memref_reshape` views of VMEM serve as shape casts (broadcast's
  inserted dimensions, a dot block seen as [batch, rows, cols]). Comparisons, selects
  and conversions other than `arith.extf`/`truncf` are `tpu.cmp`/`tpu.select`/
  `tpu.convert` (xDSL 0.74's arith versions take scalars only).
* Reductions (dot, reduce) accumulate in the accumulation type (f32 for bf16/f16, i32
  for i1) in a VMEM accumulator that is the result slot itself when the types agree:
  set to the identity at a result block's first reduced block, rounded once to the
  result type at its last. A dot block is one `tpu.matmul` per batch element (an inner
  `scf.for` over the batch elements of the block).

Numerics are level S's (interpreter/hlo_impls.py): bf16/f16 elementwise ops compute in
f32 (`arith.extf`, the op, `arith.truncf`: one rounding per hlo op); dot and reduce
accumulate in f32 and round once; integers wrap; `convert` and integer `div`/`pow` follow
StableHLO, which the level-T simulator's `arith`/`math` semantics implement.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from shardc.diagnostics import OpPassError
from shardc.dialects import hlo, tpu
from shardc.dialects.hlo import BOOL, FLOAT, element_kind
from shardc.dialects.syntax import splat_element
from shardc.dialects.tpu import memref_type
from shardc.lowering.emit import (
    HBM,
    INDEX,
    VMEM,
    Emitter,
    memref_shape,
    nbytes,
    reshape_view,
    tensor_type,
)
from xdsl.dialects import arith, scf, vector
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    VectorType,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

if TYPE_CHECKING:
    from shardc.lowering.lower_to_tpu import KernelLowering

Ix = int | SSAValue
"""An index known at compile time (folded) or computed in the kernel."""

LANES, SUBLANES = 128, 8
STEP_OVERHEAD = 0.35e-6
"""Seconds `_plan` charges per loop step (Pallas's per-grid-step overhead is about this),
so that blocks stay large unless smaller ones buy more overlap than that."""
MAX_CHOICES = 20000
"""At most this many block shapes are compared."""


# Index arithmetic with folding ---------------------------------------------------------


class _Consts:
    """The index constants of one tiled op, emitted once, before its first op."""

    def __init__(self, block: Block):
        self.block = block
        self.anchor: Operation | None = block.last_op
        self.cache: dict[int, SSAValue] = {}

    def __call__(self, k: int) -> SSAValue:
        if k not in self.cache:
            c = arith.ConstantOp(IntegerAttr(k, INDEX))
            c.result.name_hint = f"c{k}" if k >= 0 else f"cm{-k}"
            if self.anchor is not None:
                self.block.insert_op_after(c, self.anchor)
            elif self.block.first_op is not None:
                self.block.insert_op_before(c, self.block.first_op)
            else:
                self.block.add_op(c)
            self.anchor = c
            self.cache[k] = c.result
        return self.cache[k]


class _E(Emitter):
    """An emitter sharing its tiled op's constants, remembering the index ops it made."""

    def __init__(self, block: Block, consts: _Consts, memo: dict | None = None):
        super().__init__(block)
        self.consts = consts
        self.memo: dict = dict(memo or {})
        """(op, operands) -> value; nested blocks inherit their parent's (it dominates)."""

    def index(self, v: int, hint: str | None = None) -> SSAValue:
        return self.consts(v)

    def nested(self, block: Block) -> _E:
        return _E(block, self.consts, self.memo)

    def once(self, key: tuple, make: Callable[[], Operation], hint: str | None = None) -> SSAValue:
        if key not in self.memo:
            self.memo[key] = self.op(make(), hint)
        return self.memo[key]

    def loop(self, n: int, hint: str) -> tuple[_E, SSAValue]:
        """An `scf.for %hint = 0 to n` appended here; its body's emitter and index."""
        body = Block(arg_types=[INDEX])
        body.args[0].name_hint = hint
        self.op(scf.ForOp(self.index(0), self.index(n), self.index(1), [], body))
        return self.nested(body), body.args[0]


def _v(b: _E, x: Ix) -> SSAValue:
    return b.index(x) if isinstance(x, int) else x


def _add(b: _E, x: Ix, y: int) -> Ix:
    if isinstance(x, int):
        return x + y
    return x if y == 0 else b.once(("add", x, y), lambda: arith.AddiOp(x, b.index(y)))


def _mul(b: _E, x: Ix, k: int) -> Ix:
    if isinstance(x, int):
        return x * k
    return x if k == 1 else b.once(("mul", x, k), lambda: arith.MuliOp(x, b.index(k)))


def _div(b: _E, x: Ix, k: int) -> Ix:
    if isinstance(x, int):
        return x // k
    return x if k == 1 else b.once(("div", x, k), lambda: arith.DivSIOp(x, b.index(k)))


def _rem(b: _E, x: Ix, k: int) -> Ix:
    if isinstance(x, int):
        return x % k
    return 0 if k == 1 else b.once(("rem", x, k), lambda: arith.RemSIOp(x, b.index(k)))


def _cmp(b: _E, x: Ix, pred: str, k: int) -> bool | SSAValue:
    if isinstance(x, int):
        return {"eq": x == k, "slt": x < k, "sge": x >= k}[pred]
    return b.once(("cmp", x, pred, k), lambda: arith.CmpiOp(x, b.index(k), pred))


def _when(b: _E, cond: bool | SSAValue, emit: Callable[[_E], None]) -> None:
    """Emit `emit` here, nowhere, or in an `scf.if`, as `cond` says."""
    if cond is True:
        emit(b)
    elif cond is not False:
        inner = b.nested(Block())
        emit(inner)
        inner.op(scf.YieldOp())
        b.op(scf.IfOp(cond, [], [inner.block]))


# The tiling core -------------------------------------------------------------------------


@dataclass
class _Stream:
    """One operand of a tiled op: which block of it each step reads."""

    value: SSAValue
    """The level-S value (its HBM buffer is `lowering.buffers[value]`)."""
    dims: tuple[int | None, ...]
    """The iteration dimension each operand dimension follows (None: taken whole)."""
    perm: tuple[int, ...] | None = None
    """Transpose the block into this order (staged through VMEM scratch)."""
    view: Callable[[tuple[int, ...]], tuple[int, ...]] | None = None
    """The shape the body reads the (transposed) block as; default: as it is."""

    @property
    def shape(self) -> tuple[int, ...]:
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
class _Acc:
    """How a reducing op accumulates: in `elem`, from `init`, rounded by `finish`."""

    elem: Attribute
    init: Callable[[_E, VectorType], SSAValue]
    finish: Callable[[_E, SSAValue], SSAValue]


Body = Callable[[_E, list[SSAValue], list[Ix], SSAValue], None]
"""(emitter, the operands' VMEM blocks, the block index per iteration dimension, the
VMEM block to write: the result's, or the accumulator) -> None."""


@dataclass
class _Tiled:
    op: Operation
    sizes: tuple[int, ...]
    """Iteration space: the result's dimensions, then the reduced ones."""
    streams: list[_Stream]
    body: Body
    work: Callable[[Sequence[int]], float]
    """Compute seconds of one step for given blocks (for `_plan`)."""
    acc: _Acc | None = None
    align: dict[int, int] = field(default_factory=dict)
    """Extra alignment per iteration dimension (the MXU's)."""
    whole: bool = False
    """One block only (a dense constant)."""

    @property
    def result(self) -> SSAValue:
        return self.op.results[0]

    @property
    def n_out(self) -> int:
        return len(tensor_type(self.result.type).get_shape())

    @property
    def tag(self) -> str:
        return self.op.name.removeprefix("hlo.")


@dataclass(frozen=True)
class _Plan:
    blocks: tuple[int, ...]
    grid: tuple[int, ...]
    """Blocks per iteration dimension."""
    vmem: int
    separate_acc: bool
    """Whether the accumulator is a VMEM buffer of its own (not the result slot)."""


def _alignment(t: _Tiled) -> list[int]:
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


def _vmem(t: _Tiled, blocks: Sequence[int], grid: Sequence[int]) -> tuple[int, bool]:
    """VMEM bytes of the buffers for these blocks; whether the accumulator is separate."""
    total = 0
    for s in t.streams:
        size = nbytes(s.block(blocks), s.elem)
        total += size * (2 if s.moves(grid) else 1)
        if s.perm is not None:
            total += size
    ty = tensor_type(t.result.type)
    out = nbytes(blocks[: t.n_out], ty.element_type)
    out_blocks = math.prod(grid[: t.n_out])
    total += out * (2 if out_blocks > 1 else 1)
    separate = t.acc is not None and t.acc.elem != ty.element_type
    if separate:
        assert t.acc is not None
        total += nbytes(blocks[: t.n_out], t.acc.elem)
    return total, separate


def _estimate(
    lowering: KernelLowering, t: _Tiled, blocks: Sequence[int], grid: Sequence[int]
) -> float:
    """
    Seconds the loop would take: the first fetch, then per step the longer of its
    compute and the HBM traffic overlapping it (the blocks prefetched for the next step,
    the previous result block's write-back), then the last write-back.
    """
    hbm = lowering.chip.hbm_bw
    steps = math.prod(grid)
    out = nbytes(blocks[: t.n_out], tensor_type(t.result.type).element_type)
    sizes = [nbytes(s.block(blocks), s.elem) for s in t.streams]
    # The body's loads and stores (operand blocks, result block read and written) at
    # VMEM bandwidth, then its compute.
    work = (sum(sizes) + 2 * out) / (lowering.chip.vmem_bw_factor * hbm) + t.work(blocks)
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


def _plan(lowering: KernelLowering, t: _Tiled) -> _Plan:
    """The blocks (see the module docstring), or an OpPassError if none fits."""
    align = _alignment(t)
    options = [[n] if t.whole else _choices(n, a) for n, a in zip(t.sizes, align, strict=False)]
    while math.prod(len(o) for o in options) > MAX_CHOICES:
        longest = max(options, key=len)
        del longest[len(longest) // 2]
    budget = lowering.vmem_bytes - _vmem_in_use(lowering)
    best: tuple[tuple[float, int, tuple[int, ...]], _Plan] | None = None
    for blocks in itertools.product(*options):
        grid = tuple(n // b for n, b in zip(t.sizes, blocks, strict=False))
        size, separate = _vmem(t, blocks, grid)
        if size > budget:
            continue
        steps = math.prod(grid)
        cost = _estimate(lowering, t, blocks, grid) + steps * STEP_OVERHEAD
        # Ties: larger trailing blocks (whole rows make contiguous DMAs).
        key = (cost, steps, tuple(-b for b in reversed(blocks)))
        if best is None or key < best[0]:
            best = (key, _Plan(blocks, grid, size, separate))
    if best is None:
        smallest = tuple(o[-1] for o in options)
        grid = tuple(n // b for n, b in zip(t.sizes, smallest, strict=False))
        size, _ = _vmem(t, smallest, grid)
        held = lowering.vmem_bytes - budget
        what = (
            f"{t.op.name} with its smallest blocks ({_blocks_str(t, smallest)}"
            + (f"; {held} bytes held by collectives in flight" if held else "")
            + ")"
        )
        lowering.check_vmem(t.op, what, size + held)
        raise AssertionError("unreachable")
    return best[1]


def _blocks_str(t: _Tiled, blocks: Sequence[int]) -> str:
    parts = [f"result {'x'.join(map(str, blocks[: t.n_out])) or 'scalar'}"]
    for i, s in enumerate(t.streams):
        parts.append(f"operand {i} {'x'.join(map(str, s.block(blocks))) or 'scalar'}")
    return ", ".join(parts)


def _vmem_in_use(lowering: KernelLowering) -> int:
    """VMEM allocated so far in the kernel and not yet deallocated (in-flight collectives)."""
    live: dict[SSAValue, int] = {}
    e = getattr(lowering, "e", None)
    if e is None:  # planning before the kernel exists
        return 0
    for o in e.block.walk():
        if isinstance(o, tpu.AllocOp) and tpu.memory_space_of(o.result.type) is VMEM:
            live[o.result] = tpu.ref_bytes(o.result.type)
        elif isinstance(o, tpu.DeallocOp):
            live.pop(o.ref, None)
    return sum(live.values())


@dataclass
class _Buffers:
    """A stream's or the result's VMEM: one or two slots, a DMA semaphore per slot."""

    buf: SSAValue
    sems: SSAValue
    slots: int
    shape: tuple[int, ...]
    elem: Attribute

    @classmethod
    def alloc(
        cls, e: _E, shape: tuple[int, ...], elem: Attribute, slots: int, hint: str
    ) -> _Buffers:
        lead = [slots] if slots > 1 else []
        buf = e.op(tpu.AllocOp(memref_type([*lead, *shape], elem, VMEM)), hint)
        sems = e.op(tpu.AllocOp(tpu.DMASemaphoreType(lead)), f"{hint}_sems")
        return cls(buf, sems, slots, shape, elem)

    def slot(self, b: _E, i: Ix) -> tuple[SSAValue, SSAValue]:
        """The VMEM block and semaphore of slot `i`."""
        if self.slots == 1:
            return self.buf, self.sems
        zeros = [b.index(0) for _ in self.shape]
        ty = memref_type(self.shape, self.elem, VMEM)
        hint = self.buf.name_hint
        ref = b.once(
            ("slot", self.buf, i),
            lambda: tpu.MemRefSliceOp(self.buf, [_v(b, i), *zeros], ty),
            f"{hint}_slot",
        )
        sem = b.once(
            ("slot", self.sems, i),
            lambda: tpu.MemRefSliceOp(self.sems, [_v(b, i)], tpu.DMASemaphoreType()),
            f"{hint}_sem",
        )
        return ref, sem


def _hbm_block(
    b: _E, ref: SSAValue, shape: Sequence[int], offsets: Sequence[Ix], hint: str
) -> SSAValue:
    ty = ref.type
    assert isinstance(ty, MemRefType)
    if tuple(ty.get_shape()) == tuple(shape):
        return ref
    idx = [_v(b, o) for o in offsets]
    rty = memref_type(shape, ty.element_type, HBM)
    return b.once(("hbm", ref, *idx, *shape), lambda: tpu.MemRefSliceOp(ref, idx, rty), hint)


def _decode(b: _E, t: Ix, grid: Sequence[int]) -> list[Ix]:
    """Block index per iteration dimension of flat step `t` < prod(grid) (row-major)."""
    idx: list[Ix] = []
    stride = math.prod(grid)
    outermost = True
    for g in grid:
        stride //= g
        if g == 1:
            idx.append(0)
            continue
        q = _div(b, t, stride)
        idx.append(q if outermost else _rem(b, q, g))
        outermost = False
    return idx


def tile(lowering: KernelLowering, t: _Tiled) -> None:
    """Plan the blocks of `t` and emit its loop (see the module docstring)."""
    if math.prod(tensor_type(t.result.type).get_shape()) == 0:
        return  # an empty result: nothing to write
    _emit(lowering, t, _plan(lowering, t))


def _emit(lowering: KernelLowering, t: _Tiled, plan: _Plan) -> None:
    """The loop of the module docstring: prologue, one `scf.for` step, epilogue."""
    top = lowering.e.block
    loop = _Loop(lowering, t, plan, _E(top, _Consts(top)))
    loop.prologue()
    if loop.steps == 1:
        b, step = loop.e, 0
    else:
        b, step = loop.e.loop(loop.steps, "t")
    views = loop.arrive(b, step)
    loop.prefetch(b, step)
    loop.compute(b, step, views)
    if loop.steps > 1:
        b.op(scf.YieldOp())
    loop.epilogue()


class _Loop:
    """The VMEM buffers of one tiled op and the pieces of its loop."""

    def __init__(self, lowering: KernelLowering, t: _Tiled, plan: _Plan, e: _E):
        self.lowering, self.t, self.e, self.tag = lowering, t, e, t.tag
        self.blocks, self.grid = plan.blocks, plan.grid
        self.out_grid = self.grid[: t.n_out]
        self.n_blocks, self.n_red = math.prod(self.out_grid), math.prod(self.grid[t.n_out :])
        self.steps = self.n_blocks * self.n_red
        self.periods = [s.period(self.grid) for s in t.streams]
        self.ins = [
            _Buffers.alloc(
                e, s.block(self.blocks), s.elem, 2 if s.moves(self.grid) else 1, f"{self.tag}_in{i}"
            )
            for i, s in enumerate(t.streams)
        ]
        self.scratch = [
            e.op(
                tpu.AllocOp(memref_type(s.staged(self.blocks), s.elem, VMEM)),
                f"{self.tag}_staged{i}",
            )
            if s.perm is not None
            else None
            for i, s in enumerate(t.streams)
        ]
        self.out_block = tuple(self.blocks[: t.n_out])
        res_elem = tensor_type(t.result.type).element_type
        self.out = _Buffers.alloc(
            e, self.out_block, res_elem, 2 if self.n_blocks > 1 else 1, f"{self.tag}_out"
        )
        self.acc = None
        if plan.separate_acc:
            assert t.acc is not None
            self.acc = e.op(
                tpu.AllocOp(memref_type(self.out_block, t.acc.elem, VMEM)), f"{self.tag}_acc"
            )

    # Operands --------------------------------------------------------------------------

    def slot(self, b: _E, i: int, step: Ix) -> tuple[SSAValue, SSAValue]:
        """Stream i's VMEM block and semaphore at `step` (slots alternate per fetch)."""
        return self.ins[i].slot(b, _rem(b, _div(b, step, self.periods[i]), 2))

    def fresh(self, b: _E, step: Ix, period: int) -> bool | SSAValue:
        """Whether a stream of this period gets a new block at `step`."""
        return _cmp(b, _rem(b, step, period), "eq", 0)

    def fetch(self, b: _E, step: Ix, streams: Sequence[int]) -> None:
        """Start the DMAs of these streams' blocks for step `step`."""
        idx = _decode(b, step, self.grid)
        for i in streams:
            s = self.t.streams[i]
            offsets = [0 if it is None else _mul(b, idx[it], self.blocks[it]) for it in s.dims]
            src = _hbm_block(
                b,
                self.lowering.buffers[s.value],
                s.block(self.blocks),
                offsets,
                f"{self.tag}_in{i}_block",
            )
            ref, sem = self.slot(b, i, step)
            b.op(tpu.DMAStartOp(src, ref, recv_sem=sem))

    def prologue(self) -> None:
        """Every operand's first block; the fixed ones are all they will ever need."""
        self.fetch(self.e, 0, range(len(self.t.streams)))
        for i, s in enumerate(self.t.streams):
            if not s.moves(self.grid):
                self.e.op(tpu.DMAWaitOp(self.ins[i].sems, self.ins[i].buf))

    def arrive(self, b: _E, step: Ix) -> list[SSAValue]:
        """Wait for the blocks that are new at `step` (staging those that need another
        layout); the operands' VMEM blocks as the body reads them."""
        views = []
        for i, (s, stage) in enumerate(zip(self.t.streams, self.scratch, strict=False)):
            ref, sem = self.slot(b, i, step)

            def wait(w: _E, s=s, ref=ref, sem=sem, stage=stage) -> None:
                if s.moves(self.grid):
                    w.op(tpu.DMAWaitOp(sem, ref))
                if stage is not None:
                    assert s.perm is not None
                    zeros = [w.index(0) for _ in s.shape]
                    v = w.op(tpu.LoadOp(ref, zeros, VectorType(s.elem, s.block(self.blocks))))
                    w.op(tpu.StoreOp(w.op(tpu.TransposeOp(v, s.perm)), stage, zeros))

            _when(b, self.fresh(b, step, self.periods[i]), wait)
            views.append(
                reshape_view(b, ref if stage is None else stage, s.view_shape(self.blocks))
            )
        return views

    def prefetch(self, b: _E, step: Ix) -> None:
        """Start the DMAs of the blocks that are new at the next step, into the other
        slots (after this step's waits, so that its own blocks get the bandwidth first)."""
        nxt = _add(b, step, 1)
        for period in sorted({p for p in self.periods if p < self.steps}):
            due = [i for i, p in enumerate(self.periods) if p == period]
            _when(
                b,
                _cmp(b, nxt, "slt", self.steps),
                lambda w, period=period, due=due: _when(
                    w, self.fresh(w, nxt, period), lambda x: self.fetch(x, nxt, due)
                ),
            )

    # The result ------------------------------------------------------------------------

    def compute(self, b: _E, step: Ix, views: list[SSAValue]) -> None:
        """The body on this step's blocks, into the result slot or the accumulator; at a
        result block's last reduced block, its write-back."""
        t = self.t
        o = 0 if self.n_blocks == 1 else _div(b, step, self.n_red)
        r = step if self.n_blocks == 1 else _rem(b, step, self.n_red)
        out_ref, out_sem = self.out.slot(b, _rem(b, o, 2))

        def reuse(w: _E) -> None:
            """The result slot's previous block (two blocks ago) has left for HBM."""
            _when(w, _cmp(w, o, "sge", 2), lambda x: x.op(tpu.DMAWaitOp(out_sem, out_ref)))

        target = out_ref if self.acc is None else self.acc
        if t.acc is not None:
            _when(b, _cmp(b, r, "eq", 0), lambda w: self.init(w, target, reuse))
        else:
            reuse(b)
        t.body(b, views, _decode(b, step, self.grid), target)

        def finish(w: _E) -> None:
            """The result block is complete: rounded from the accumulator, sent to HBM."""
            if self.acc is not None:
                reuse(w)
                self.round_once(w, out_ref)
            oidx = _decode(w, o, self.out_grid)
            offsets = [_mul(w, i, k) for i, k in zip(oidx, self.out_block, strict=False)]
            dst = _hbm_block(
                w, self.lowering.buffers[t.result], self.out_block, offsets, f"{self.tag}_out_block"
            )
            w.op(tpu.DMAStartOp(out_ref, dst, recv_sem=out_sem))

        _when(b, _cmp(b, r, "eq", self.n_red - 1), finish)

    def init(self, w: _E, target: SSAValue, reuse: Callable[[_E], None]) -> None:
        """A result block's first reduced block: the accumulator starts at the identity."""
        a = self.t.acc
        assert a is not None
        if self.acc is None:
            reuse(w)  # the accumulator is the result slot
        w.op(tpu.StoreOp(a.init(w, VectorType(a.elem, self.out_block)), target, _zeros(w, target)))

    def round_once(self, w: _E, out_ref: SSAValue) -> None:
        """The accumulator, rounded to the result type, into the result slot."""
        a = self.t.acc
        assert a is not None and self.acc is not None
        _store(w, a.finish(w, _load(w, self.acc)), out_ref)

    def epilogue(self) -> None:
        """Wait for the last result blocks' DMAs; free the VMEM."""
        e = self.e
        for k in range(max(0, self.n_blocks - 2), self.n_blocks):
            ref, sem = self.out.slot(e, k % 2)
            e.op(tpu.DMAWaitOp(sem, ref))
        for buf in [*(x.buf for x in self.ins), *self.scratch, self.out.buf, self.acc]:
            if buf is not None:
                e.op(tpu.DeallocOp(buf))


# Vector helpers -------------------------------------------------------------------------


def _zeros(b: _E, ref: SSAValue) -> list[SSAValue]:
    ty = ref.type
    assert isinstance(ty, MemRefType)
    return [b.index(0) for _ in ty.get_shape()]


def _load(b: _E, ref: SSAValue) -> SSAValue:
    ty = ref.type
    assert isinstance(ty, MemRefType)
    return b.op(tpu.LoadOp(ref, _zeros(b, ref), VectorType(ty.element_type, ty.get_shape())))


def _store(b: _E, v: SSAValue, ref: SSAValue) -> None:
    b.op(tpu.StoreOp(v, ref, _zeros(b, ref)))


def _splat(b: _E, value: float | bool, vty: VectorType) -> SSAValue:
    """A vector of one value (a scalar constant broadcast: no per-element literal)."""
    elem = vty.element_type
    if element_kind(elem) == FLOAT:
        c = arith.ConstantOp(FloatAttr(float(value), elem))  # pyright: ignore[reportArgumentType]
    else:
        c = arith.ConstantOp(IntegerAttr(int(value), elem))  # pyright: ignore[reportArgumentType]
    return b.op(vector.BroadcastOp(b.op(c), vty))


def _broadcast_to(b: _E, v: SSAValue, shape: Sequence[int]) -> SSAValue:
    ty = v.type
    assert isinstance(ty, VectorType)
    if tuple(ty.get_shape()) == tuple(shape):
        return v
    return b.op(vector.BroadcastOp(v, VectorType(ty.element_type, shape)))


def _vty(v: SSAValue) -> VectorType:
    ty = v.type
    assert isinstance(ty, VectorType)
    return ty


def _with_elem(v: SSAValue, elem: Attribute) -> VectorType:
    return VectorType(elem, _vty(v).get_shape())


def _low_precision(elem: Attribute) -> bool:
    return isinstance(elem, BFloat16Type | Float16Type)


def _width(elem: Attribute) -> int:
    if isinstance(elem, IntegerType):
        return elem.width.data
    return 8 * tpu.element_bytes(elem)


def _convert(b: _E, v: SSAValue, to: Attribute) -> SSAValue:
    """StableHLO convert of a vector (see interpreter/values.py `convert`)."""
    frm = _vty(v).element_type
    if frm == to:
        return v
    rty = _with_elem(v, to)
    if element_kind(frm) == FLOAT and element_kind(to) == FLOAT:
        if _width(frm) == _width(to):  # bf16 <-> f16: through f32 (exact, then one rounding)
            v = b.op(arith.ExtFOp(v, _with_elem(v, f32)))
            return b.op(arith.TruncFOp(v, rty))
        cls = arith.ExtFOp if _width(frm) < _width(to) else arith.TruncFOp
        return b.op(cls(v, rty))
    return b.op(tpu.ConvertOp(v, rty))


# Elementwise ops --------------------------------------------------------------------------

_FLOAT_BINARY: dict[type[Operation], type[Operation]] = {
    hlo.AddOp: arith.AddfOp,
    hlo.SubOp: arith.SubfOp,
    hlo.MulOp: arith.MulfOp,
    hlo.DivOp: arith.DivfOp,
    hlo.MaxOp: arith.MaximumfOp,
    hlo.MinOp: arith.MinimumfOp,
    hlo.PowOp: mathd.PowFOp,
}
_INT_BINARY: dict[type[Operation], type[Operation]] = {
    hlo.AddOp: arith.AddiOp,
    hlo.SubOp: arith.SubiOp,
    hlo.MulOp: arith.MuliOp,
    hlo.DivOp: arith.DivSIOp,
    hlo.MaxOp: arith.MaxSIOp,
    hlo.MinOp: arith.MinSIOp,
    hlo.PowOp: mathd.IPowIOp,
    hlo.AndOp: arith.AndIOp,
    hlo.OrOp: arith.OrIOp,
}
_BOOL_BINARY: dict[type[Operation], type[Operation]] = {
    hlo.AddOp: arith.OrIOp,
    hlo.MulOp: arith.AndIOp,
    hlo.MaxOp: arith.OrIOp,
    hlo.MinOp: arith.AndIOp,
    hlo.AndOp: arith.AndIOp,
    hlo.OrOp: arith.OrIOp,
}
_FLOAT_UNARY: dict[type[Operation], type[Operation]] = {
    hlo.NegOp: arith.NegfOp,
    hlo.ExpOp: mathd.ExpOp,
    hlo.LogOp: mathd.LogOp,
    hlo.TanhOp: mathd.TanhOp,
    hlo.SqrtOp: mathd.SqrtOp,
    hlo.RsqrtOp: mathd.RsqrtOp,
    hlo.AbsOp: mathd.AbsFOp,
    hlo.SinOp: mathd.SinOp,
    hlo.CosOp: mathd.CosOp,
}
_FLOAT_CMP = {"EQ": "oeq", "NE": "une", "LT": "olt", "LE": "ole", "GT": "ogt", "GE": "oge"}
_INT_CMP = {"EQ": "eq", "NE": "ne", "LT": "slt", "LE": "sle", "GT": "sgt", "GE": "sge"}
_BOOL_CMP = {"EQ": "eq", "NE": "ne", "LT": "ult", "LE": "ule", "GT": "ugt", "GE": "uge"}


def _float_math(b: _E, op: Operation, vals: list[SSAValue]) -> SSAValue:
    if isinstance(op, hlo.LogisticOp):  # 1 / (1 + exp(-x)), as level S
        one = _splat(b, 1.0, _vty(vals[0]))
        e = b.op(mathd.ExpOp(b.op(arith.NegfOp(vals[0]))))
        return b.op(arith.DivfOp(one, b.op(arith.AddfOp(one, e))))
    if len(vals) == 2:
        return b.op(_FLOAT_BINARY[type(op)](*vals))  # pyright: ignore[reportCallIssue]
    return b.op(_FLOAT_UNARY[type(op)](vals[0]))  # pyright: ignore[reportCallIssue]


def _int_math(b: _E, op: Operation, vals: list[SSAValue], boolean: bool) -> SSAValue:
    x = vals[0]
    if isinstance(op, hlo.NotOp):
        return b.op(arith.XOrIOp(x, _splat(b, -1, _vty(x))))
    if isinstance(op, hlo.NegOp):
        return b.op(arith.SubiOp(_splat(b, 0, _vty(x)), x))
    if isinstance(op, hlo.AbsOp):
        return b.op(mathd.AbsIOp(x))
    table = _BOOL_BINARY if boolean else _INT_BINARY
    return b.op(table[type(op)](*vals))  # pyright: ignore[reportCallIssue]


def _elementwise(b: _E, op: Operation, vals: list[SSAValue]) -> SSAValue:
    """One hlo elementwise op on loaded blocks; bf16/f16 computed in f32, rounded once."""
    res_elem = tensor_type(op.results[0].type).element_type
    if isinstance(op, hlo.ConvertOp):
        return _convert(b, vals[0], res_elem)
    if isinstance(op, hlo.SelectOp):
        pred = _broadcast_to(b, vals[0], _vty(vals[1]).get_shape())
        return b.op(tpu.SelectOp(pred, vals[1], vals[2]))
    elem = _vty(vals[0]).element_type
    kind = element_kind(elem)
    if isinstance(op, hlo.CompareOp):
        d = op.comparison_direction.data
        if kind == FLOAT:
            return b.op(tpu.CmpOp(_FLOAT_CMP[d], vals[0], vals[1]))
        return b.op(tpu.CmpOp((_BOOL_CMP if kind == BOOL else _INT_CMP)[d], vals[0], vals[1]))
    if kind != FLOAT:
        return _int_math(b, op, vals, kind == BOOL)
    if not _low_precision(elem):
        return _float_math(b, op, vals)
    wide = [b.op(arith.ExtFOp(v, _with_elem(v, f32))) for v in vals]
    r = _float_math(b, op, wide)
    return b.op(arith.TruncFOp(r, _with_elem(r, elem)))


_ELEMENTWISE = (
    hlo.BinaryElementwiseOp,
    hlo.UnaryElementwiseOp,
    hlo.CompareOp,
    hlo.SelectOp,
    hlo.ConvertOp,
)


def _vpu_work(
    lowering: KernelLowering, ops_per_element: float, n_out: int
) -> Callable[[Sequence[int]], float]:
    return lambda blocks: ops_per_element * math.prod(blocks[:n_out]) / lowering.chip.vpu_flops


def _map(lowering: KernelLowering, op: Operation) -> _Tiled:
    """Elementwise ops, compare, select, convert: every operand block is the result's."""
    shape = tensor_type(op.results[0].type).get_shape()
    ident = tuple(range(len(shape)))
    streams = []
    for v in op.operands:
        rank = len(tensor_type(v.type).get_shape())
        streams.append(_Stream(v, ident if rank else ()))

    def body(b: _E, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        _store(b, _elementwise(b, op, [_load(b, v) for v in views]), target)

    return _Tiled(op, shape, streams, body, _vpu_work(lowering, 1, len(shape)))


# Constants, iota, broadcast, transpose ---------------------------------------------------


def _constant(lowering: KernelLowering, op: hlo.ConstantOp) -> _Tiled:
    ty = tensor_type(op.result.type)
    shape = ty.get_shape()
    # A splat is read from its one stored element: never expanded to the tensor's size.
    value = splat_element(op.value) if math.prod(shape) else 0
    splat = value is not None

    def body(b: _E, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        vty = VectorType(ty.element_type, memref_shape(target))
        if splat:
            v = _splat(b, value, vty)
        else:
            v = b.op(arith.ConstantOp(DenseIntOrFPElementsAttr(vty, op.value.data)))
        _store(b, v, target)

    return _Tiled(op, shape, [], body, _vpu_work(lowering, 0, len(shape)), whole=not splat)


def _iota(lowering: KernelLowering, op: hlo.IotaOp) -> _Tiled:
    """Counts in i32 (i64 for i64) per block plus the block's offset, then converts."""
    ty = tensor_type(op.result.type)
    shape, elem = ty.get_shape(), ty.element_type
    dim = op.iota_dimension.value.data
    count = i64 if elem == i64 else i32

    def body(b: _E, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        block = memref_shape(target)
        vty = VectorType(count, block)
        v = b.op(tpu.IotaOp(vty, dim))
        off = _mul(b, idx[dim], block[dim])
        if off != 0:
            scalar = b.op(arith.IndexCastOp(_v(b, off), count))
            v = b.op(arith.AddiOp(v, b.op(vector.BroadcastOp(scalar, vty))))
        _store(b, _convert(b, v, elem), target)

    return _Tiled(op, shape, [], body, _vpu_work(lowering, 2, len(shape)))


def _broadcast(lowering: KernelLowering, op: hlo.BroadcastOp) -> _Tiled:
    """The operand's block, viewed with the result's rank (1s), `vector.broadcast`."""
    shape = tensor_type(op.result.type).get_shape()
    src = tensor_type(op.operand.type).get_shape()
    dims = op.dims
    follow = tuple(d if src[i] == shape[d] else None for i, d in enumerate(dims))

    def view(block: tuple[int, ...]) -> tuple[int, ...]:
        full = [1] * len(shape)
        for i, d in enumerate(dims):
            full[d] = block[i]
        return tuple(full)

    def body(b: _E, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        _store(b, _broadcast_to(b, _load(b, views[0]), memref_shape(target)), target)

    stream = _Stream(op.operand, follow, view=view)
    return _Tiled(op, shape, [stream], body, _vpu_work(lowering, 1, len(shape)))


def _transpose(lowering: KernelLowering, op: hlo.TransposeOp) -> _Tiled:
    shape = tensor_type(op.result.type).get_shape()
    perm = op.perm
    follow = tuple(perm.index(i) for i in range(len(perm)))

    def body(b: _E, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        _store(b, b.op(tpu.TransposeOp(_load(b, views[0]), perm)), target)

    return _Tiled(
        op, shape, [_Stream(op.operand, follow)], body, _vpu_work(lowering, 1, len(shape))
    )


# Dot ----------------------------------------------------------------------------------------


def _mxu_operand(elem: Attribute) -> Attribute:
    """What the MXU multiplies for operands of `elem` (i1 as i32 0/1)."""
    return i32 if element_kind(elem) == BOOL else elem


def _dot(lowering: KernelLowering, op: hlo.DotOp) -> _Tiled:
    """
    Iteration space: batch, lhs free, rhs free (the result), then contracting. Each
    operand block is staged as [batch, free, contracting] (lhs) / [batch, contracting,
    free] (rhs) and seen as 3-D; one `tpu.matmul` per batch element of the block.
    """
    lt, rt = tensor_type(op.lhs.type), tensor_type(op.rhs.type)
    res = tensor_type(op.result.type)
    (lb, rb), (lc, rc) = op.batching, op.contracting
    lf = hlo.dot_free_dims(len(lt.get_shape()), lb, lc)
    rf = hlo.dot_free_dims(len(rt.get_shape()), rb, rc)
    nb, nl, nr = len(lb), len(lf), len(rf)
    n_out = nb + nl + nr
    sizes = (*res.get_shape(), *(lt.get_shape()[d] for d in lc))
    lhs_it: dict[int, int] = {}
    rhs_it: dict[int, int] = {}
    for i, (x, y) in enumerate(zip(lb, rb, strict=False)):
        lhs_it[x], rhs_it[y] = i, i
    for j, x in enumerate(lf):
        lhs_it[x] = nb + j
    for j, y in enumerate(rf):
        rhs_it[y] = nb + nl + j
    for c, (x, y) in enumerate(zip(lc, rc, strict=False)):
        lhs_it[x], rhs_it[y] = n_out + c, n_out + c
    lhs_order = (*lb, *lf, *lc)
    rhs_order = (*rb, *rc, *rf)

    def three(groups: tuple[int, int, int]) -> Callable[[tuple[int, ...]], tuple[int, ...]]:
        def view(block: tuple[int, ...]) -> tuple[int, ...]:
            a, b_ = groups[0], groups[0] + groups[1]
            return (math.prod(block[:a]), math.prod(block[a:b_]), math.prod(block[b_:]))

        return view

    def stream(
        v: SSAValue, its: dict[int, int], order: tuple[int, ...], groups: tuple[int, int, int]
    ) -> _Stream:
        rank = len(tensor_type(v.type).get_shape())
        perm = None if order == tuple(range(rank)) else order
        return _Stream(v, tuple(its[d] for d in range(rank)), perm, three(groups))

    streams = [
        stream(op.lhs, lhs_it, lhs_order, (nb, nl, len(lc))),
        stream(op.rhs, rhs_it, rhs_order, (nb, len(rc), nr)),
    ]
    align: dict[int, int] = {}
    if nl:
        align[nb + nl - 1] = SUBLANES
    if nr:
        align[n_out - 1] = LANES
    if lc:
        align[len(sizes) - 1] = LANES
    elem = lt.element_type
    operand = _mxu_operand(elem)
    acc_elem = tpu.accumulation_type(operand)
    assert acc_elem is not None
    rate = lowering.chip.flops_bf16 * (1 / 8 if str(elem) == "f64" else 1)

    def body(b: _E, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        lhs, rhs = views
        _, m, k = memref_shape(lhs)
        n = memref_shape(rhs)[2]
        batch = memref_shape(lhs)[0]
        acc3 = reshape_view(b, target, (batch, m, n))
        if batch == 1:
            inner, i = b, b.index(0)
        else:
            inner, i = b.loop(batch, "bi")
        z = inner.index(0)
        a = inner.op(tpu.LoadOp(lhs, [i, z, z], VectorType(elem, (m, k))))
        w = inner.op(tpu.LoadOp(rhs, [i, z, z], VectorType(elem, (k, n))))
        if operand != elem:
            a = _convert(inner, a, operand)
            w = _convert(inner, w, operand)
        c = inner.op(tpu.LoadOp(acc3, [i, z, z], VectorType(acc_elem, (m, n))))
        inner.op(tpu.StoreOp(inner.op(tpu.MatmulOp(a, w, c)), acc3, [i, z, z]))
        if batch != 1:
            inner.op(scf.YieldOp())

    def work(blocks: Sequence[int]) -> float:
        return 2.0 * math.prod(blocks) / rate

    acc = _Acc(
        acc_elem, lambda b, vty: _splat(b, 0, vty), lambda b, v: _convert(b, v, res.element_type)
    )
    return _Tiled(op, sizes, streams, body, work, acc, align)


# Reduce --------------------------------------------------------------------------------------


def _reduce(lowering: KernelLowering, op: hlo.ReduceOp) -> _Tiled:
    """Iteration space: the kept dims, then the reduced ones; `tpu.reduce` per block."""
    src = tensor_type(op.operand.type)
    shape = src.get_shape()
    rdims = sorted(op.dims)
    kept = [d for d in range(len(shape)) if d not in rdims]
    its = {d: i for i, d in enumerate(kept)} | {d: len(kept) + j for j, d in enumerate(rdims)}
    sizes = (*(shape[d] for d in kept), *(shape[d] for d in rdims))
    elem = src.element_type
    kind = op.kind.data
    boolean = element_kind(elem) == BOOL
    acc_elem = i32 if boolean else tpu.accumulation_type(elem)
    assert acc_elem is not None
    if boolean:  # or = max, and = min over 0/1
        kind = "max" if kind in ("add", "max") else "min"

    def identity(b: _E, vty: VectorType) -> SSAValue:
        if kind == "add":
            return _splat(b, 0, vty)
        if kind == "mul":
            return _splat(b, 1, vty)
        if boolean:
            return _splat(b, 0 if kind == "max" else 1, vty)
        if element_kind(acc_elem) == FLOAT:
            return _splat(b, -math.inf if kind == "max" else math.inf, vty)
        info = np.iinfo(np.int64 if acc_elem == i64 else np.int32)
        return _splat(b, int(info.min if kind == "max" else info.max), vty)

    def body(b: _E, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        v = _convert(b, _load(b, views[0]), acc_elem)
        c = _load(b, target)
        _store(b, b.op(tpu.ReduceOp(kind, v, c, rdims)), target)

    acc = _Acc(acc_elem, identity, lambda b, v: _convert(b, v, elem))
    work = _vpu_work(lowering, 1, len(sizes))
    return _Tiled(
        op, sizes, [_Stream(op.operand, tuple(its[d] for d in range(len(shape))))], body, work, acc
    )


# Entry points ------------------------------------------------------------------------------

_BUILDERS: list[tuple[type | tuple[type, ...], Callable[..., _Tiled]]] = [
    (_ELEMENTWISE, _map),
    (hlo.ConstantOp, _constant),
    (hlo.IotaOp, _iota),
    (hlo.BroadcastOp, _broadcast),
    (hlo.TransposeOp, _transpose),
    (hlo.DotOp, _dot),
    (hlo.ReduceOp, _reduce),
]


def _builder(op: Operation) -> Callable[..., _Tiled] | None:
    for cls, build in _BUILDERS:
        if isinstance(op, cls):
            return build
    return None


def handles(op: Operation) -> bool:
    """Whether this module lowers ops of this kind."""
    return _builder(op) is not None


def check(lowering: KernelLowering, op: Operation) -> None:
    """Raise an `OpPassError` at `op` if it cannot be lowered (its blocks do not fit)."""
    build = _builder(op)
    assert build is not None
    if math.prod(tensor_type(op.results[0].type).get_shape()) == 0:
        return
    if any(0 in tensor_type(v.type).get_shape() for v in op.operands):
        raise OpPassError(
            op,
            f"lower-to-tpu: {op.name} of an empty operand into a non-empty "
            "result is not supported yet",
        )
    _plan(lowering, build(lowering, op))


def lower(lowering: KernelLowering, op: Operation) -> None:
    build = _builder(op)
    assert build is not None
    tile(lowering, build(lowering, op))
