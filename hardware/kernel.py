"""
What a compute op or fusion costs as the tiled kernel `lower-to-tpu` makes of it: ONE
definition of the block plan and of the loop's time, used by level S's cost of a compute
op or fusion (`hardware/cost.py`) and by `lowering/tile_plan.py`, which chooses the blocks
of the loop it emits with `plan` (so level S charges the loop level T runs).

The loop (lowering/compute.py's module docstring has the scheme): an iteration space (the
result's dimensions, then the reduced ones), each operand a `KernelStream` whose block
follows some iteration dimensions, one `scf.for` over all blocks, operands double-buffered
(the next step's blocks prefetched while this one computes), result blocks written back
when their last reduced block is done. Its time (`pipeline_time`) is
    fill (the first blocks' fetch, nothing to overlap it)
  + per step max(compute, the HBM traffic overlapping it): compute is the body's VPU or
    MXU work plus its VMEM loads and stores, the traffic the blocks prefetched for the next
    step and the previous result block's write-back
  + once per result block, on the step that starts it and the one that completes it, a
    reducing loop's accumulator set to the identity, then rounded (loaded, converted,
    a fused epilogue run on it, stored to the result slots: `block_ends_time`; the
    epilogue is not run every step of K, and neither is it charged so)
  + drain (the last result block's write-back, nothing left to overlap it)
  + staging (`staging_time`: blocks re-laid out in VMEM as they arrive, before the next
    step's DMAs start, so nothing overlaps it).
A roofline `max(flops / peak, bytes / bandwidth)` charges neither the fill nor the drain
nor the VMEM loads and stores: on a small op or a loop of few large blocks (a big dot's
few MiB blocks) they are 10-30% of the time, which is what level T showed over level S.

The blocks (`plan`): every iteration dimension gets a block that divides it, the last two
dimensions of every operand's and result's block multiples of (8, 128) or whole (and an
op's own alignment, the MXU's); among those whose VMEM (`vmem_bytes`) fits, the fastest by
`pipeline_time` plus `STEP_OVERHEAD` per step (Pallas's per-grid-step cost, which keeps
blocks large). The overhead only steers the choice: the level-T simulator does not charge
it (a loop step's scalar ops take no time there), so neither does the time level S
charges (`kernel_time`), else the two would disagree by it.

Level S describes an op as its loop from types only (`op_kernel`: no lowering runs),
following what lowering/compute.py, lowering/reduce_body.py and lowering/fusion.py build
(elementwise ops, constants, iota, broadcast, transpose, dot, reduce, a reduce with a body,
rng_bit_generator's two loops (lowering/random.py);
a fusion's parameters as streams through its elementwise ops, broadcasts, transposes and
static slices, around at most one dot or reduce); tests/unit/test_hardware_kernel.py
checks that both give the same kernel time. What it does not describe (movement, windows,
gather, sort, control flow) keeps its roofline; a fusion `lower-to-tpu` would inline costs
its ops one after another (`CostModel.inlined_fusion_cost`). A select_and_scatter that
lowers as its own kernel is timed by `select_scatter_time`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace

from shardc.dialects import hlo, tpu
from shardc.dialects.hlo import BOOL, accumulation_type, dot_free_dims, element_kind
from shardc.dialects.sizes import element_bytes
from shardc.dialects.syntax import splat_element
from shardc.hardware.chips import Chip
from shardc.hardware.cost import (
    complex_dot,
    complex_fold,
    complex_fold_ops,
    complex_part_ops,
    complex_parts_read,
    elementwise_vpu_ops,
    fusion_on_parts,
    matmul_time,
    operand_repeats,
    part_dma_bytes,
    reduce_body_ops,
    rng_block_time,
    rng_groups,
    touches_complex,
    unviewed_result_bytes,
    value_vpu_ops,
    vmem_time,
    vpu_time,
)
from shardc.hardware.pairs import on_views, pairs_fusion
from shardc.hardware.select_scatter import Pooling, VectorWork
from xdsl.dialects.builtin import ComplexType, TensorType, i32
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

LANES, SUBLANES = 128, 8
STEP_OVERHEAD = 0.35e-6
"""Seconds `plan` charges per loop step (Pallas's per-grid-step overhead is about this),
so that blocks stay large unless smaller ones buy more overlap than that."""
MAX_CHOICES = 20000
"""At most this many block shapes are compared."""

Work = Callable[[Sequence[int]], float]
"""Compute seconds of one loop step for the given blocks."""


def block_bytes(shape: Sequence[int], elem: Attribute) -> int:
    return math.prod(shape) * element_bytes(elem)


@dataclass(frozen=True)
class KernelStream:
    """One operand of a tiled loop: its shape (a fused slice's window), element type,
    the iteration dimension each of its dimensions follows (None: whole), and whether its
    block is staged through VMEM in another layout (a transposed dot operand)."""

    shape: tuple[int, ...]
    elem: Attribute
    dims: tuple[int | None, ...]
    staged: bool = False
    once: bool = False
    """Read by a fused epilogue only: loaded from VMEM once per result block, at its
    last reduced step, not every step (`Kernel.finish`)."""

    def block(self, blocks: Sequence[int]) -> tuple[int, ...]:
        return tuple(
            s if it is None else blocks[it] for s, it in zip(self.shape, self.dims, strict=False)
        )

    def period(self, grid: Sequence[int]) -> int:
        """For how many consecutive steps its block stays the same (row-major grid)."""
        deps = [it for it in self.dims if it is not None and grid[it] > 1]
        return math.prod(grid[max(deps) + 1 :]) if deps else math.prod(grid)

    def moves(self, grid: Sequence[int]) -> bool:
        return self.period(grid) < math.prod(grid)


@dataclass
class Kernel:
    """A tiled loop as far as its plan and time go (see the module docstring)."""

    sizes: tuple[int, ...]
    streams: list[KernelStream]
    n_out: int
    outputs: tuple[Attribute, ...]
    """Element type of each result (every result has the iteration space's output shape)."""
    work: Work
    acc: Attribute | None = None
    """Element type of an accumulator that is a VMEM buffer of its own (None: none)."""
    align: dict[int, int] = field(default_factory=dict[int, int])
    whole: bool = False
    scratch: list[tuple[Callable[[Sequence[int]], tuple[int, ...]], Attribute]] = field(
        default_factory=list[tuple[Callable[[Sequence[int]], tuple[int, ...]], Attribute]]
    )
    """(block shape, element type) of each VMEM buffer of the body's own."""
    finish: Work | None = None
    """Compute seconds of a fused epilogue (the ops after a dot or reduce): run once per
    result block, on the rounded accumulator at its last reduced step
    (lowering/tile_loop.py `round_once`), not at every step like `work`."""
    reduces_to: Attribute | None = None
    """A reducing loop (a dot, a reduce, a fusion around one): the element type its
    accumulator is rounded to (`block_ends_time`); None: no accumulator of that kind."""

    def out_bytes(self, blocks: Sequence[int]) -> int:
        """Bytes of one block of every result."""
        return sum(block_bytes(blocks[: self.n_out], e) for e in self.outputs)


@dataclass(frozen=True)
class BlockPlan:
    blocks: tuple[int, ...]
    grid: tuple[int, ...]
    vmem: int


def alignment(k: Kernel) -> list[int]:
    """Each iteration dimension's block must be a multiple of this (or whole)."""
    align = [1] * len(k.sizes)
    for dims in [*(s.dims for s in k.streams), tuple(range(k.n_out))]:
        for pos, unit in ((-1, LANES), (-2, SUBLANES)):
            if len(dims) >= -pos and dims[pos] is not None:
                it = dims[pos]
                align[it] = math.lcm(align[it], unit)
    for it, unit in k.align.items():
        align[it] = math.lcm(align[it], unit)
    return align


def choices(size: int, unit: int) -> list[int]:
    """Legal block sizes of a dimension, largest first."""
    divisors = {d for i in range(1, math.isqrt(size) + 1) if size % i == 0 for d in (i, size // i)}
    return sorted((d for d in divisors if d % unit == 0 or d == size), reverse=True)


def block_options(k: Kernel) -> list[list[int]]:
    """The block sizes compared per iteration dimension (at most `MAX_CHOICES` shapes)."""
    options = [
        [n] if k.whole else choices(n, a) for n, a in zip(k.sizes, alignment(k), strict=False)
    ]
    while math.prod(len(o) for o in options) > MAX_CHOICES:
        longest = max(options, key=len)
        del longest[len(longest) // 2]
    return options


def vmem_bytes(k: Kernel, blocks: Sequence[int], grid: Sequence[int]) -> int:
    """VMEM bytes of the loop's buffers for these blocks: two slots for what moves."""
    total = 0
    for s in k.streams:
        size = block_bytes(s.block(blocks), s.elem)
        total += size * (2 if s.moves(grid) else 1) + (size if s.staged else 0)
    for shape, elem in k.scratch:
        total += block_bytes(shape(blocks), elem)
    total += k.out_bytes(blocks) * (2 if math.prod(grid[: k.n_out]) > 1 else 1)
    if k.acc is not None:
        total += block_bytes(blocks[: k.n_out], k.acc)
    return total


def pipeline_time(chip: Chip, k: Kernel, blocks: Sequence[int], grid: Sequence[int]) -> float:
    """
    Seconds the loop takes: the first fetch, then per step the longer of its compute and
    the HBM traffic overlapping it (the blocks prefetched for the next step, the previous
    result block's write-back), then the last write-back. A reducing loop's step that
    completes a result block also starts and rounds it (`block_ends_time`).
    """
    hbm = chip.hbm_bw
    steps = math.prod(grid)
    out = k.out_bytes(blocks)
    sizes = [block_bytes(s.block(blocks), s.elem) for s in k.streams]
    # The body's loads and stores (operand blocks, result block or accumulator read and
    # written) at VMEM bandwidth, then its compute.
    loads = sum(size for s, size in zip(k.streams, sizes, strict=True) if not s.once)
    work = vmem_time(chip, loads + 2 * _acc_bytes(k, blocks)) + k.work(blocks)
    n_red = math.prod(grid[k.n_out :])
    start, end = block_ends_time(chip, k, blocks)
    # A result block's first step starts it, its last rounds it (one step: both). With
    # several reduced steps the first ones are those t with t + 1 = 1 mod n_red: of
    # the class of period 1 (blocks moving every step), else of no traffic.
    firsts = math.prod(grid[: k.n_out]) if n_red > 1 else 0
    if n_red == 1:
        start, end = 0.0, start + end
    # Bytes moved every `period` steps; periods are suffix products of the grid, so each
    # divides the next, and a step that moves one period's blocks moves the shorter ones'.
    traffic: dict[int, int] = {}
    for s, size in zip(k.streams, sizes, strict=False):
        if s.moves(grid):
            traffic[s.period(grid)] = traffic.get(s.period(grid), 0) + size
    if n_red < steps:
        traffic[n_red] = traffic.get(n_red, 0) + out
    periods = sorted(traffic)
    total, moved, busy = 0.0, 0, 0
    for j, p in enumerate(periods):
        count = (steps - 1) // p - ((steps - 1) // periods[j + 1] if j + 1 < len(periods) else 0)
        moved += traffic[p]
        # Steps t whose t + 1 is a multiple of p (of n_red, a period itself when there
        # are several result blocks, if p >= n_red) complete a result block.
        step = work + (end if p >= n_red else 0.0)
        first = firsts if p == 1 else 0
        total += (count - first) * max(step, moved / hbm)
        total += first * max(step + start, moved / hbm)
        busy += count
    # The rest: steps without traffic (none completes a block, some may start one) and
    # the last.
    first = firsts if not periods or periods[0] != 1 else 0
    total += (steps - busy) * work + first * start + end
    return sum(sizes) / hbm + total + out / hbm + staging_time(chip, k, blocks, grid)


def _acc_bytes(k: Kernel, blocks: Sequence[int]) -> int:
    """Bytes of the block a loop's body reads and writes every step: a reducing loop's
    accumulator, in its own type where it is a buffer of its own, else the result
    block."""
    if k.reduces_to is None or k.acc is None:
        return k.out_bytes(blocks)
    return block_bytes(blocks[: k.n_out], k.acc)


def block_ends_time(chip: Chip, k: Kernel, blocks: Sequence[int]) -> tuple[float, float]:
    """
    Seconds a reducing loop spends once per result block, not every step
    (lowering/tile_loop.py `_Loop.init`, `round_once`): (start, end). At its first
    reduced step the accumulator set to the identity (a splat, stored); at its last,
    where it is a buffer of its own, the accumulator loaded, rounded to `reduces_to`
    (one op where the types differ), the fused epilogue run on it (`Kernel.finish`: its
    operands loaded, its ops) and every result stored to its slot. (0, 0) for other
    loops.
    """
    if k.reduces_to is None:
        return 0.0, 0.0
    cells = math.prod(blocks[: k.n_out])
    acc = _acc_bytes(k, blocks)
    start = vpu_time(chip, cells) + vmem_time(chip, acc)
    if k.acc is None:
        return start, 0.0
    late = sum(block_bytes(s.block(blocks), s.elem) for s in k.streams if s.once)
    rounding = vpu_time(chip, cells, int(k.acc != k.reduces_to))
    epilogue = k.finish(blocks) if k.finish is not None else 0.0
    return start, vmem_time(chip, acc + late + k.out_bytes(blocks)) + rounding + epilogue


def staging_time(chip: Chip, k: Kernel, blocks: Sequence[int], grid: Sequence[int]) -> float:
    """
    Seconds of re-laying out staged blocks (a transposed dot operand, a reduce's input
    seen as [reduced, kept]): each new block loaded, transposed on the VPU and stored to
    its scratch. lowering/tile_loop.py does it when the block arrives, before it starts
    the next step's DMAs, so nothing overlaps it: it adds to the step (a 2048x32768 f32
    argmax on v5e: 16 steps of two 16 MiB blocks, 70 us of level T's 740 us).
    """
    steps = math.prod(grid)
    total = 0.0
    for s in k.streams:
        if s.staged:
            shape = s.block(blocks)
            once = 2 * vmem_time(chip, block_bytes(shape, s.elem)) + vpu_time(
                chip, math.prod(shape)
            )
            total += once * (steps // s.period(grid))
    return total


def plan(chip: Chip, k: Kernel, budget: int, min_steps: int = 1) -> BlockPlan | None:
    """
    The blocks whose buffers fit `budget` bytes of VMEM with the least `pipeline_time` plus
    `STEP_OVERHEAD` per step (ties: fewer steps, then larger trailing blocks: whole rows
    make contiguous DMAs); `min_steps`: prefer plans of at least that many steps (block
    boundaries where a pending collective's ring steps go), if any fits. None: none fits.
    """
    best: tuple[tuple[bool, float, int, tuple[int, ...]], BlockPlan] | None = None
    for blocks in itertools.product(*block_options(k)):
        grid = tuple(n // b for n, b in zip(k.sizes, blocks, strict=False))
        size = vmem_bytes(k, blocks, grid)
        if size > budget:
            continue
        steps = math.prod(grid)
        cost = pipeline_time(chip, k, blocks, grid) + steps * STEP_OVERHEAD
        key = (steps < min_steps, cost, steps, tuple(-b for b in reversed(blocks)))
        if best is None or key < best[0]:
            best = (key, BlockPlan(tuple(blocks), grid, size))
    return None if best is None else best[1]


def kernel_time(chip: Chip, k: Kernel, budget: int | None = None) -> float | None:
    """Seconds of the loop at its plan for the chip's whole VMEM (or `budget` bytes);
    None if no blocks fit. The per-step overhead is not charged (module docstring)."""
    if math.prod(k.sizes[: k.n_out]) == 0:
        return 0.0
    found = plan(chip, k, chip.vmem_bytes if budget is None else budget)
    return None if found is None else pipeline_time(chip, k, found.blocks, found.grid)


def op_kernel_time(chip: Chip, op: Operation) -> float | None:
    """`kernel_time` of `op_kernel` (None: not a loop, or no blocks fit), remembered by
    what it depends on (`_key`): the interpreter costs every op on every device, and a
    big dot's plan compares thousands of block shapes."""
    key = _key(op)
    if key is None:
        found = _op_time(chip, op)
    else:
        found = _TIMES.get((chip, key), _MISSING)
        if found is _MISSING:
            if len(_TIMES) > 4096:
                _TIMES.clear()
            found = _TIMES[(chip, key)] = _op_time(chip, op)
    if found is not None and on_views(op):  # where its uses are, not its types
        found += unviewed_result_bytes(op) / chip.hbm_bw  # pyright: ignore[reportOperatorIssue]
    return found  # pyright: ignore[reportReturnType]


def _op_time(chip: Chip, op: Operation) -> float | None:
    if isinstance(op, hlo.FusionOp):
        kernels = fusion_kernels(chip, op)
        moved = part_dma_bytes(op)  # complex operands split, results joined
        if moved is not None and kernels is not None:
            times = [kernel_time(chip, k) for k in kernels]
            return None if None in times else moved / chip.hbm_bw + sum(times)  # pyright: ignore
    elif isinstance(op, hlo.RngBitGeneratorOp):
        kernels = rng_kernels(chip, op)
    elif complex_part_ops(op) is not None or complex_dot(op) or complex_fold(op):
        return complex_time(chip, op)
    else:
        k = op_kernel(chip, op)
        kernels = None if k is None else [k]
    if kernels is None:
        return None
    times = [kernel_time(chip, k) for k in kernels]
    return None if None in times else sum(times)  # pyright: ignore[reportArgumentType]


_MISSING = object()
_TIMES: dict[Hashable, object] = {}


def _key(op: Operation) -> Hashable | None:
    """Op name, operand and result types, which operands are one value (x * x widens x
    once: `operand_repeats`), properties and attributes (a constant: whether it is a
    splat, not its value); a fusion: its ops' keys and which parameters each reads.
    None: not keyed (an op with regions other than a fusion)."""
    types = (
        tuple(v.type for v in op.operands),
        tuple(r.type for r in op.results),
        operand_repeats(op.operands),
    )
    if isinstance(op, hlo.FusionOp):
        inner = tuple(_key(i) for i in op.body.block.ops)
        wiring = tuple(
            tuple(v.index if isinstance(v, BlockArgument) else -1 for v in i.operands)
            for i in op.body.block.ops
        )
        return None if None in inner else (op.name, types, inner, wiring)
    if op.regions:
        return None
    if isinstance(op, hlo.ConstantOp):
        return (op.name, types, splat_element(op.value) is None)
    try:
        props = tuple(sorted(op.properties.items())) + tuple(sorted(op.attributes.items()))
        hash(props)
    except TypeError:
        return None
    return (op.name, types, props)


# Level S: an op's loop from its types -------------------------------------------------------

ELEMENTWISE = (
    hlo.BinaryElementwiseOp,
    hlo.UnaryElementwiseOp,
    hlo.CompareOp,
    hlo.SelectOp,
    hlo.ConvertOp,
    hlo.ClampOp,
    hlo.BitcastConvertOp,
    hlo.IsFiniteOp,
)
"""What lowering/compute.py maps block by block (every operand block is the result's)."""


def _shape(v: SSAValue) -> tuple[int, ...]:
    ty = v.type
    assert isinstance(ty, TensorType)
    return tuple(ty.get_shape())


def _elem(v: SSAValue) -> Attribute:
    ty = v.type
    assert isinstance(ty, TensorType)
    return ty.element_type


def _vpu(chip: Chip, ops_per_element: int, n: int) -> Work:
    return lambda blocks: vpu_time(chip, math.prod(blocks[:n]), ops_per_element)


def _simple(chip: Chip, op: Operation) -> Kernel | None:
    """Elementwise ops, constants, iota, broadcast, transpose (one block of the result
    per step)."""
    shape = _shape(op.results[0])
    n = len(shape)
    out = (_elem(op.results[0]),)
    if isinstance(op, hlo.BitcastConvertOp) and op.extra_dim() != 0:
        return None  # between widths: a DMA (lowering/movement.py), its roofline stands
    if isinstance(op, ELEMENTWISE):
        streams = [
            KernelStream(_shape(v), _elem(v), tuple(range(n)) if _shape(v) else ())
            for v in op.operands
        ]
        return Kernel(shape, streams, n, out, _vpu(chip, elementwise_vpu_ops(op), n))
    if isinstance(op, hlo.ConstantOp):
        whole = math.prod(shape) > 0 and splat_element(op.value) is None
        return Kernel(shape, [], n, out, _vpu(chip, 0, n), whole=whole)
    if isinstance(op, hlo.IotaOp):
        return Kernel(shape, [], n, out, _vpu(chip, 2, n))
    if isinstance(op, hlo.BroadcastOp):
        src = _shape(op.operand)
        follow = tuple(d if src[i] == shape[d] else None for i, d in enumerate(op.dims))
        return Kernel(
            shape, [KernelStream(src, _elem(op.operand), follow)], n, out, _vpu(chip, 1, n)
        )
    if isinstance(op, hlo.TransposeOp):
        follow = tuple(op.perm.index(i) for i in range(n))
        stream = KernelStream(_shape(op.operand), _elem(op.operand), follow)
        return Kernel(shape, [stream], n, out, _vpu(chip, 1, n))
    return None


def _dot(chip: Chip, op: hlo.DotOp) -> Kernel:
    """Batch, lhs free, rhs free, then contracting; operands staged as [batch, free,
    contracting] (lhs) / [batch, contracting, free] (rhs) when not already so."""
    ls, rs = _shape(op.lhs), _shape(op.rhs)
    (lb, rb), (lc, rc) = op.batching, op.contracting
    lf, rf = dot_free_dims(len(ls), lb, lc), dot_free_dims(len(rs), rb, rc)
    nb, nl, nr = len(lb), len(lf), len(rf)
    n_out = nb + nl + nr
    sizes = (*_shape(op.result), *(ls[d] for d in lc))
    lhs_it = dict(zip(lb, range(nb), strict=False)) | {x: nb + j for j, x in enumerate(lf)}
    rhs_it = dict(zip(rb, range(nb), strict=False)) | {y: nb + nl + j for j, y in enumerate(rf)}
    lhs_it |= {x: n_out + c for c, x in enumerate(lc)}
    rhs_it |= {y: n_out + c for c, y in enumerate(rc)}
    streams = [
        KernelStream(
            s, _elem(v), tuple(its[d] for d in range(len(s))), tuple(order) != tuple(range(len(s)))
        )
        for v, s, its, order in (
            (op.lhs, ls, lhs_it, (*lb, *lf, *lc)),
            (op.rhs, rs, rhs_it, (*rb, *rc, *rf)),
        )
    ]
    align = {}
    if nl:
        align[nb + nl - 1] = SUBLANES
    if nr:
        align[n_out - 1] = LANES
    if lc:
        align[len(sizes) - 1] = LANES
    elem = _elem(op.lhs)
    acc = tpu.accumulation_type(i32 if element_kind(elem) == BOOL else elem)
    res = _elem(op.result)

    def work(blocks: Sequence[int]) -> float:
        rows = math.prod(blocks[: nb + nl])
        cols = math.prod(blocks[nb + nl : n_out])
        return matmul_time(chip, rows, math.prod(blocks[n_out:]), cols, elem)

    return Kernel(
        sizes, streams, n_out, (res,), work, acc if acc != res else None, align, reduces_to=res
    )


def _reduce(chip: Chip, op: hlo.ReduceOp) -> Kernel | None:
    """The kept dimensions, then the reduced ones; one VPU op per operand element."""
    if op.has_body:
        return _reduce_body(chip, op)
    shape, elem = _shape(op.operand), _elem(op.operand)
    rdims = sorted(op.dims)
    kept = [d for d in range(len(shape)) if d not in rdims]
    its = {d: i for i, d in enumerate(kept)} | {d: len(kept) + j for j, d in enumerate(rdims)}
    sizes = (*(shape[d] for d in kept), *(shape[d] for d in rdims))
    acc = i32 if element_kind(elem) == BOOL else accumulation_type(elem)
    stream = KernelStream(shape, elem, tuple(its[d] for d in range(len(shape))))
    res = _elem(op.results[0])
    return Kernel(
        sizes,
        [stream],
        len(kept),
        (res,),
        _vpu(chip, reduce_body_ops(op), len(sizes)),
        acc if acc != res else None,
        reduces_to=res,
    )


def _reduce_body(chip: Chip, op: hlo.ReduceOp) -> Kernel | None:
    """
    A reduce with a body (argmax) as lowering/reduce_body.py's loop: the kept dimensions,
    then the reduced ones in `dims`' order (all but the first whole), each input staged
    as [reduced, kept] (transposed through VMEM if laid out otherwise), the inits read
    once; per step the body's ops (`cost.reduce_body_ops`) once per reduced element of the block, each
    on whole (8, 128) vregs of the kept block. Several results: an accumulator and a VMEM
    buffer per further result. None where lower-to-tpu refuses it (its roofline stands).
    """
    if not reduce_body_lowers(op):
        return None
    inputs = [_elem(x) for x in op.inputs]
    inits = [_elem(i) for i in op.inits]
    results = tuple(_elem(r) for r in op.results)
    ops = reduce_body_ops(op)
    return _fold_kernel(chip, _shape(op.inputs[0]), list(op.dims), inputs, inits, results, ops)


def _fold_kernel(
    chip: Chip,
    shape: tuple[int, ...],
    dims: list[int],
    inputs: Sequence[Attribute],
    inits: Sequence[Attribute],
    elems: tuple[Attribute, ...],
    ops: int,
) -> Kernel:
    """`_reduce_body`'s loop of inputs of `shape` and element types `inputs`, reduced over
    `dims` from `inits` into `elems`, `ops` vector ops per body evaluation and element."""
    kept = [d for d in range(len(shape)) if d not in dims]
    nk = len(kept)
    its = {d: i for i, d in enumerate(kept)} | {d: nk + j for j, d in enumerate(dims)}
    sizes = (*(shape[d] for d in kept), *(shape[d] for d in dims))
    staged = (*dims, *kept) != tuple(range(len(shape)))
    follow = tuple(its[d] for d in range(len(shape)))
    streams = [KernelStream(shape, e, follow, staged) for e in inputs]
    streams += [KernelStream((), e, ()) for e in inits]
    scratch: list[tuple[Callable[[Sequence[int]], tuple[int, ...]], Attribute]] = [
        (lambda blocks: tuple(blocks[:nk]), e) for e in elems[1:]
    ]

    def work(blocks: Sequence[int]) -> float:
        vregs = -(-math.prod(blocks[:nk]) // (LANES * SUBLANES))
        return vpu_time(chip, math.prod(blocks[nk:]) * vregs * LANES * SUBLANES, ops)

    align = {nk + j: sizes[nk + j] for j in range(1, len(dims))}  # whole: the fold's order
    acc = elems[0] if len(elems) > 1 else None
    return Kernel(sizes, streams, nk, elems, work, acc, align, scratch=scratch)


REDUCE_BODY_OPS = (*ELEMENTWISE, hlo.ConstantOp)
"""What lowering/reduce_body.py evaluates in a body (a constant: a splat)."""


def reduce_body_lowers(op: hlo.ReduceOp) -> bool:
    """Whether lower-to-tpu makes a loop of this reduce with a body: each input of its
    init's element type, the body of elementwise ops and splat constants."""
    assert op.body is not None
    if any(_elem(x) != _elem(i) for x, i in zip(op.inputs, op.inits, strict=True)):
        return False
    inner = [o for o in op.body.block.ops if not isinstance(o, hlo.ReturnOp)]
    return all(
        isinstance(o, REDUCE_BODY_OPS)
        and (not isinstance(o, hlo.ConstantOp) or splat_element(o.value) is not None)
        for o in inner
    )


def op_kernel(chip: Chip, op: Operation) -> Kernel | None:
    """The tiled loop `lower-to-tpu` makes of `op`, from its types (None: not a loop of
    this kind: its roofline stands)."""
    if (
        isinstance(op, hlo.FusionOp)
        or not op.results
        or not isinstance(op.results[0].type, TensorType)
    ):
        return None
    if any(0 in _shape(v) for v in op.operands if isinstance(v.type, TensorType)):
        return None
    if isinstance(op, hlo.DotOp):
        return _dot(chip, op)
    if isinstance(op, hlo.ReduceOp):
        return _reduce(chip, op)
    if isinstance(op, hlo.RngBitGeneratorOp):
        return _rng(chip, op)
    return _simple(chip, op)


def _rng(chip: Chip, op: hlo.RngBitGeneratorOp) -> Kernel | None:
    """The bits loop of an rng_bit_generator (lowering/random.py `_bits`: the state read
    whole every step, the interleave's scratch where grouped); its one-block next-state
    loop is a few bytes."""
    shape = _shape(op.output)
    if not math.prod(shape):
        return None
    align: dict[int, int] = {}
    scratch: list[tuple[Callable[[Sequence[int]], tuple[int, ...]], Attribute]] = []
    groups = rng_groups(op)
    if groups is not None:
        dim, per = groups
        align = {dim: per}
        cut = lambda bl: tuple(s // per if d == dim else s for d, s in enumerate(bl))  # noqa: E731
        scratch = [(lambda bl: (per, *cut(bl)), _elem(op.output))]
    state = KernelStream(_shape(op.initial_state), _elem(op.initial_state), (None,))
    out = (_elem(op.output),)
    work = lambda bl: rng_block_time(chip, op, bl)  # noqa: E731
    return Kernel(shape, [state], len(shape), out, work, align=align, scratch=scratch)


def _acc_elem(op: hlo.DotOp | hlo.ReduceOp) -> Attribute:
    """What a dot or reduce accumulates in (as lowering/compute.py: i1 in i32)."""
    elem = _elem(op.lhs if isinstance(op, hlo.DotOp) else op.operand)
    if element_kind(elem) == BOOL:
        return i32
    found = tpu.accumulation_type(elem) if isinstance(op, hlo.DotOp) else accumulation_type(elem)
    assert found is not None
    return found


# Fusions ----------------------------------------------------------------------------------

Map = tuple[int | None, ...]
"""The iteration dimension each dimension of a value follows (None: whole)."""
Window = tuple[tuple[int, ...], tuple[int, ...]] | None


class NotOneLoop(Exception):
    """A fusion `lower-to-tpu` does not make one loop of (lowering/fusion.py says why)."""


def operand_maps(op: Operation, m: Map) -> list[tuple[Map, Window]]:
    """Each operand's block map (and static slice window) given the result's map `m`."""
    if isinstance(op, hlo.BroadcastOp):
        shape, src = _shape(op.result), _shape(op.operand)
        if list(op.dims) != sorted(op.dims):
            raise NotOneLoop("a broadcast that transposes")
        return [(tuple(m[d] if src[i] == shape[d] else None for i, d in enumerate(op.dims)), None)]
    if isinstance(op, hlo.TransposeOp):
        out: list[int | None] = [None] * len(m)
        for j, p in enumerate(op.perm):
            out[p] = m[j]
        return [(tuple(out), None)]
    if isinstance(op, hlo.SliceOp):
        if any(s != 1 for _, _, s in op.bounds) or not isinstance(op.operand, BlockArgument):
            raise NotOneLoop("a strided slice or a slice of a computed value")
        return [(m, (tuple(lo for lo, _, _ in op.bounds), _shape(op.result)))]
    if isinstance(op, ELEMENTWISE):
        return [(m if _shape(v) else (), None) for v in op.operands]
    if isinstance(op, hlo.ConstantOp | hlo.IotaOp):
        return []
    raise NotOneLoop(f"{op.name} inside")


def _check_fused(op: Operation) -> None:
    if isinstance(op, hlo.ConstantOp) and splat_element(op.value) is None:
        raise NotOneLoop("a dense constant")
    if isinstance(op, hlo.ReduceOp) and op.has_body:
        raise NotOneLoop("a reduce with a body")
    if isinstance(op, hlo.ReshapeOp | hlo.ConcatenateOp):
        raise NotOneLoop(f"{op.name} inside")


def after_core(ops: Sequence[Operation], core: Operation | None) -> set[SSAValue]:
    """
    The values of a fusion's `ops` (in block order) computed from its dot's or reduce's
    result: its epilogue, which lowering/fusion.py runs once per result block on the
    rounded accumulator (`Kernel.finish`), not at every reduced step.
    """
    after: set[SSAValue] = set()
    for o in ops:
        if o is core or any(v in after for v in o.operands):
            after.update(o.results)
    if core is not None:
        after.difference_update(core.results)
    return after


def _ancestors(outputs: Sequence[SSAValue]) -> list[Operation]:
    """The fused ops the outputs depend on, in block order."""
    seen: set[Operation] = set()
    todo = [v.owner for v in outputs if isinstance(v.owner, Operation)]
    while todo:
        o = todo.pop()
        if o not in seen:
            seen.add(o)
            todo += [v.owner for v in o.operands if isinstance(v.owner, Operation)]
    return sorted(seen, key=lambda o: o.parent_block().get_operation_index(o))  # pyright: ignore


@dataclass
class _Fused:
    """A fusion's values' block maps and its streams, as lowering/fusion.py finds them."""

    op: hlo.FusionOp
    maps: dict[SSAValue, Map] = field(default_factory=dict[SSAValue, Map])
    streams: list[KernelStream] = field(default_factory=list[KernelStream])
    keys: dict[Hashable, int] = field(default_factory=dict[Hashable, int])
    after: set[SSAValue] = field(default_factory=set[SSAValue])
    """The epilogue's values (`after_core`)."""

    def assign(self, v: SSAValue, m: Map) -> None:
        if not isinstance(v, BlockArgument) and self.maps.setdefault(v, m) != m:
            raise NotOneLoop("an intermediate read in two block layouts")

    def stream(
        self,
        arg: BlockArgument,
        m: Map,
        window: Window,
        like: int | None = None,
        staged: bool = False,
        once: bool = False,
    ) -> None:
        """The stream reading parameter `arg` with map `m` (a core operand's: `like`, its
        index among the core's streams, so that its staging is kept); `once`: for the
        epilogue (read every step as soon as anything else reads it too)."""
        key = (arg, m, window, like)
        if key in self.keys:
            i = self.keys[key]
            self.streams[i] = replace(self.streams[i], once=self.streams[i].once and once)
            return
        self.keys[key] = len(self.streams)
        outer = self.op.inputs[arg.index]
        shape = window[1] if window is not None else _shape(outer)
        self.streams.append(KernelStream(shape, _elem(outer), m, staged, once))


def fusion_kernels(chip: Chip, op: hlo.FusionOp) -> list[Kernel] | None:
    """A fusion as lowering/fusion.py's loops: one, or one per operand of a concatenate
    root (each computing its part into the result); None: not loops (it is inlined). A
    fusion of complex values is `lower-to-tpu`'s: on the parts (`fusion_on_parts`), or on
    the parts' views (`pairs.pairs_fusion`), or inlined."""
    if any(touches_complex(o) for o in op.body.block.ops) and not fusion_on_parts(op):
        viewed = pairs_fusion(op) if on_views(op) else None
        if viewed is None:
            return None
        op = viewed
    ret = op.body.block.last_op
    assert ret is not None
    outputs = list(ret.operands)
    if any(0 in _shape(v) for v in (*op.inputs, *op.outputs) if isinstance(v.type, TensorType)):
        return None
    parts = [outputs]
    root = outputs[0].owner
    if len(outputs) == 1 and isinstance(root, hlo.ConcatenateOp):
        parts = [[v] for v in root.inputs if math.prod(_shape(v))]
    try:
        return [_fused(chip, op, part) for part in parts]
    except NotOneLoop:
        return None


def _fused(chip: Chip, op: hlo.FusionOp, outputs: list[SSAValue]) -> Kernel:
    shapes = {_shape(v) for v in outputs}
    if len(shapes) != 1:
        raise NotOneLoop("results of different shapes")
    n_out = len(next(iter(shapes)))
    ops = _ancestors(outputs)
    for o in ops:
        _check_fused(o)
    cores = [o for o in ops if isinstance(o, hlo.DotOp | hlo.ReduceOp)]
    if len(cores) > 1:
        raise NotOneLoop("more than one dot or reduce")
    core = cores[0] if cores else None
    if core is not None and isinstance(_elem(core.operands[0]), ComplexType):
        raise NotOneLoop("a complex dot or reduce")  # on the parts: several loops
    core_k = None if core is None else op_kernel(chip, core)
    if core is not None and (core_k is None or core_k.n_out != n_out):
        raise NotOneLoop("results of another shape than the dot's or reduce's")
    f = _Fused(op, after=after_core(ops, core))
    for v in outputs:
        if isinstance(v, BlockArgument):
            f.stream(v, tuple(range(n_out)), None)
        else:
            f.assign(v, tuple(range(n_out)))
    for o in reversed(ops):
        _propagate(f, o, core, core_k)
    return _fused_kernel(chip, f, core, core_k, next(iter(shapes)))


def _propagate(f: _Fused, o: Operation, core: Operation | None, core_k: Kernel | None) -> None:
    """The block maps of `o`'s operands from its result's (nothing if it is unused)."""
    m = f.maps.get(o.results[0])
    if m is None:
        return
    if o is core:
        assert core_k is not None
        if m != tuple(range(core_k.n_out)):
            raise NotOneLoop("a dot or reduce result read in another layout")
        for i, (v, s) in enumerate(zip(o.operands, core_k.streams, strict=True)):
            if isinstance(v, BlockArgument):
                f.stream(v, s.dims, None, like=i, staged=s.staged)
            else:
                f.assign(v, s.dims)
        return
    for v, (om, window) in zip(o.operands, operand_maps(o, m), strict=True):
        if isinstance(v, BlockArgument):
            f.stream(v, om, window, once=o.results[0] in f.after)
        else:
            f.assign(v, om)


def _value_block(v: SSAValue, m: Map, blocks: Sequence[int]) -> tuple[int, ...]:
    return tuple(s if it is None else blocks[it] for s, it in zip(_shape(v), m, strict=True))


def _fused_kernel(
    chip: Chip, f: _Fused, core: Operation | None, core_k: Kernel | None, sizes: tuple[int, ...]
) -> Kernel:
    """The loop of an analysed fusion: its streams, its scratch (a broadcast that inserts
    dimensions other than leading ones is viewed through VMEM; a dot's or reduce's
    computed operand is staged there), one VPU op per element of every fused value."""
    scratch: list[tuple[Callable[[Sequence[int]], tuple[int, ...]], Attribute]] = []
    for v, m in f.maps.items():
        o = v.owner
        if isinstance(o, hlo.BroadcastOp) and tuple(o.dims) != tuple(
            range(len(m) - len(o.dims), len(m))
        ):
            om = operand_maps(o, m)[0][0]
            scratch.append(
                (lambda bl, v=o.operand, om=om: _value_block(v, om, bl), _elem(o.operand))
            )
    if core is not None:
        assert core_k is not None
        for v, s in zip(core.operands, core_k.streams, strict=True):
            if not isinstance(v, BlockArgument):
                scratch.append((s.block, s.elem))
    fused = [(v, m) for v, m in f.maps.items() if v.owner is not core and v not in f.after]
    epilogue = [(v, m) for v, m in f.maps.items() if v in f.after]

    def vpu(values: list[tuple[SSAValue, Map]], blocks: Sequence[int]) -> float:
        return sum(
            vpu_time(chip, math.prod(_value_block(v, m, blocks)), value_vpu_ops(v))
            for v, m in values
        )

    def work(blocks: Sequence[int]) -> float:
        return vpu(fused, blocks) + (core_k.work(blocks) if core_k is not None else 0.0)

    outs = tuple(_elem(r) for r in f.op.outputs)
    n_out = len(sizes)
    if core_k is None:
        return Kernel(sizes, f.streams, n_out, outs, work, scratch=scratch)
    assert isinstance(core, hlo.DotOp | hlo.ReduceOp)
    return Kernel(
        core_k.sizes,
        f.streams,
        n_out,
        outs,
        work,
        _acc_elem(core),
        dict(core_k.align),
        scratch=scratch,
        finish=(lambda blocks: vpu(epilogue, blocks)) if epilogue else None,
        reduces_to=_elem(core.results[0]),
    )


# rng_bit_generator: the bits loop and the next state's (lowering/random.py) ---------------


def rng_kernels(chip: Chip, op: hlo.RngBitGeneratorOp) -> list[Kernel]:
    """
    The loops lowering/random.py makes of `op`: the bits (every output block from the
    whole state, `_rng`: `cost.rng_block_time`'s work), then the next state (one block,
    8 i64 vector ops per word). Level S charges their `pipeline_time` (the fill and drain
    of two small loops are most of a small op's time), not the op's roofline.
    """
    bits = _rng(chip, op)
    words = _shape(op.initial_state)[0]
    follow = KernelStream(_shape(op.initial_state), _elem(op.initial_state), (0,))
    nxt = Kernel(
        (words,),
        [follow],
        1,
        (_elem(op.output_state),),
        lambda blocks: vpu_time(chip, words, 8),
    )
    return [nxt] if bits is None else [bits, nxt]


# A complex op on its parts (lowering/complex_pairs.py, issue 15 item 5, helper dtcost) ---


def complex_kernels(chip: Chip, op: Operation) -> list[Kernel]:
    """
    The loop lowering/complex_pairs.py makes of a complex elementwise op: every part of
    every operand a stream, the result's parts (abs: the modulus) the outputs,
    `cost.complex_part_ops` vector ops per element.
    """
    shape = _shape(op.results[0])
    n = len(shape)
    ops = complex_part_ops(op)
    assert ops is not None
    if ops == 0:  # a convert between equal types, or to the part type: the DMAs only
        return []
    streams = []
    for v in op.operands:
        elem = _elem(v)
        if isinstance(elem, ComplexType):
            part = KernelStream(_shape(v), elem.element_type, tuple(range(n)))
            streams += [part] * complex_parts_read(op, v)
        else:  # a select's predicate, a converted real
            streams.append(KernelStream(_shape(v), elem, tuple(range(n))))
    res = _elem(op.results[0])
    out = (res.element_type,) * 2 if isinstance(res, ComplexType) else (res,)
    if isinstance(res, ComplexType) and _elem(op.operands[0]) == res.element_type:
        streams, out = [], out[:1]  # a real of the part type: the loop makes the zeros only
    return [Kernel(shape, streams, n, out, _vpu(chip, ops, n))]


def complex_dot_kernels(chip: Chip, op: hlo.DotOp) -> list[Kernel]:
    """
    The loops lowering/complex_pairs.py `_dot` makes of a complex dot: four real dots of
    the parts (Ar Br, Ai Bi, Ar Bi, Ai Br; one shape), then the real part's difference and
    the imaginary part's sum, one loop each.
    """
    (lhs, rhs), res = (_elem(v) for v in (op.lhs, op.rhs)), _elem(op.result)
    assert isinstance(lhs, ComplexType) and isinstance(rhs, ComplexType)
    assert isinstance(res, ComplexType)
    shape = _shape(op.result)
    parts = Block(
        arg_types=[
            TensorType(lhs.element_type, _shape(op.lhs)),
            TensorType(rhs.element_type, _shape(op.rhs)),
        ]
    )
    result = TensorType(res.element_type, shape)
    dot = _dot(chip, hlo.DotOp(*parts.args, op.contracting, op.batching, result))
    n = len(shape)
    stream = KernelStream(shape, res.element_type, tuple(range(n)))
    combine = Kernel(shape, [stream, stream], n, (res.element_type,), _vpu(chip, 1, n))
    return [dot] * 4 + [combine] * 2


def complex_fold_kernels(chip: Chip, op: hlo.ReduceOp) -> list[Kernel]:
    """The loop lowering/complex_pairs.py `_fold` makes of a complex reduce mul / max /
    min: `_reduce_body`'s, of the two parts from the identity's parts into the result's,
    `cost.complex_fold_ops` vector ops per element."""
    elem = _elem(op.operand)
    assert isinstance(elem, ComplexType)
    part = elem.element_type
    shape, dims = _shape(op.operand), list(op.dims)
    return [
        _fold_kernel(chip, shape, dims, [part] * 2, [part] * 2, (part, part), complex_fold_ops(op))
    ]


def complex_time(chip: Chip, op: Operation) -> float | None:
    """Level S's seconds of a complex op on its parts: the strided DMAs that split its
    operands and join its result (`cost.part_dma_bytes` at the HBM bandwidth, one after
    another as level T runs them) and its loops (`complex_kernels`,
    `complex_dot_kernels`, `complex_fold_kernels`)."""
    if isinstance(op, hlo.DotOp):
        kernels = complex_dot_kernels(chip, op)
    elif isinstance(op, hlo.ReduceOp):
        kernels = complex_fold_kernels(chip, op)
    else:
        kernels = complex_kernels(chip, op)
    times = [kernel_time(chip, k) for k in kernels]
    if None in times:
        return None
    moved = part_dma_bytes(op) or 0
    return moved / chip.hbm_bw + sum(times)  # pyright: ignore[reportArgumentType]


# select_and_scatter as one kernel (lowering/select_scatter_kernel.py) -----------------------


def select_scatter_time(chip: Chip, p: Pooling) -> float:
    """
    Seconds of a select_and_scatter's kernel (`select_scatter.Pooling` counts its vector
    work), the halo pipeline lowering/select_scatter_kernel.py emits, replayed with its
    DMAs sharing the HBM equally (as level T's DMA engine): the first image's operand and
    source fetched, the init value fetched and the constants made (`Pooling.setup_work`);
    per image, its DMAs waited for, the next image's started, the result slot's previous
    write-back waited for, its compute (`Pooling.image_work`: loads and stores at VMEM
    bandwidth, ops on the VPU), its result's write-back started; the last two waited for.
    A fetch or write-back that outlasts a compute steals HBM from the DMAs after it, so
    the HBM-bound pipeline is not "per image the longer of compute and traffic".
    """
    x, src, res = p.image_bytes()
    setup, image = (_work_time(chip, w) for w in (p.setup_work(), p.image_work()))
    hbm = _SharedHbm(chip.hbm_bw)
    hbm.start(("x", 0), x)
    hbm.start(("src", 0), src)
    hbm.start("init", element_bytes(p.src))
    t = hbm.wait(0.0, ["init"]) + setup
    for k in range(p.n):
        t = hbm.wait(t, [("x", k), ("src", k)])
        if k + 1 < p.n:
            hbm.start(("x", k + 1), x)
            hbm.start(("src", k + 1), src)
        t = hbm.wait(t, [("res", k - 2)]) + image
        hbm.run(t)
        hbm.start(("res", k), res)
    return hbm.wait(t, [("res", p.n - 2), ("res", p.n - 1)])


class _SharedHbm:
    """Local DMAs in flight, each at an equal share of the HBM bandwidth (level T's
    `Flows` for one device's HBM-VMEM transfers), by name."""

    def __init__(self, bw: float):
        self.bw = bw
        self.now = 0.0
        self.left: dict[Hashable, float] = {}

    def start(self, name: Hashable, nbytes: int) -> None:
        if nbytes > 0:
            self.left[name] = float(nbytes)

    def run(self, until: float, names: Sequence[Hashable] = ()) -> None:
        """Drain until `until`, and on until every DMA of `names` has landed."""
        while self.left and (self.now < until or any(n in self.left for n in names)):
            rate = self.bw / len(self.left)
            step = min(self.left.values()) / rate
            if not any(n in self.left for n in names):
                step = min(step, until - self.now)
            self.now += step
            for name in list(self.left):
                self.left[name] -= rate * step
                if self.left[name] <= 1e-9 * self.bw * step:
                    del self.left[name]
        self.now = max(self.now, until)

    def wait(self, t: float, names: Sequence[Hashable]) -> float:
        """The time a device at `t` is done waiting for the DMAs `names`."""
        self.run(t, names)
        return self.now


def _work_time(chip: Chip, w: VectorWork) -> float:
    return vpu_time(chip, w.ops) + vmem_time(chip, w.vmem)
