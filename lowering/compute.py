"""
hlo compute ops lowered to tpu (part of `lower-to-tpu`, see lowering/lower_to_tpu.py):
every op is one tiled, double-buffered loop over VMEM blocks, built by one tiling core
(`tile_plan.Tiled` + `plan_blocks` + `tile_loop.tile`, on `tile_index` arithmetic and
`vector_ops` bodies); the ops (this module) only say how their operands' blocks follow
the result's and what to compute on a block.

The scheme
----------
* Iteration space: the result's dimensions, then the reduced ones (dot's contracting
  dimensions, reduce's `dims`). Each operand dimension follows one iteration dimension
  (its block is that dimension's block) or none (taken whole: broadcast's size-1
  dimensions).
* Blocks (`tile_plan.plan_blocks`): every iteration dimension gets a block size that
  divides it; the last two dimensions of every block (operands' and result's, as laid out
  in HBM) are multiples of (8, 128) or the whole dimension, and a dot's contracting and
  rhs-free blocks are multiples of 128 (the MXU's tile) and its lhs rows of 8. Among the
  choices whose VMEM (below) fits `Target.vmem_bytes` less what in-flight collectives still
  hold, it takes the fastest by a pipeline model (`hardware.kernel.pipeline_time`, what
  level S charges the op too: the first fetch, then per step the longer of its compute
  (MXU or VPU, plus VMEM loads and stores) and the HBM traffic overlapping it, then the
  last write-back; it agrees with the level-T simulator to about 1%), plus Pallas's ~0.35 us per grid step, which keeps blocks large (the
  simulator's cost grows with the number of blocks). If even the smallest legal blocks do
  not fit, the op is an error naming the blocks, the bytes and the capacity.
* The loop (`tile_loop.tile`): one `scf.for %t` over all blocks, row-major over the
  result's blocks with the reduced blocks innermost. An operand's block changes every
  `period` steps (the blocks of the iteration dimensions after the last one it follows: a
  dot's lhs keeps its rows while the rhs columns go by); an operand whose block moves has
  two VMEM slots and a DMA semaphore per slot, alternating per fetch: step t waits for its
  blocks if they are new, then starts the DMAs of the blocks step t+1 needs anew into the
  other slots (prefetch), then computes. An operand whose block never moves is fetched
  once, before the loop. The result has two VMEM slots: a result block is DMA'd back to HBM
  when its last reduced block is done, and its slot is reused two result blocks later,
  after waiting for that DMA. After the loop every DMA has been waited for, every semaphore
  is zero and every VMEM buffer is `tpu.dealloc`'d.
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

import math
from collections.abc import Callable, Sequence

from shardc.diagnostics import OpPassError
from shardc.dialects import hlo, tpu
from shardc.dialects.hlo import BOOL, FLOAT, accumulation_type, element_kind
from shardc.dialects.syntax import splat_element
from shardc.hardware.chips import Chip
from shardc.hardware.cost import elementwise_vpu_ops, matmul_time, reduce_body_ops, vpu_time
from shardc.lowering import narrow_ints
from shardc.lowering.context import LoweringContext, Target
from shardc.lowering.emit import memref_shape, reshape_view, tensor_type
from shardc.lowering.tile_index import Ix, TileEmitter, ix_mul, ix_value
from shardc.lowering.tile_loop import tile
from shardc.lowering.tile_plan import LANES, SUBLANES, Acc, Stream, Tiled, check_fits
from shardc.lowering.vector_ops import (
    broadcast_to,
    convert_vector,
    elementwise,
    int_bounds,
    load_block,
    not_computed,
    splat_vector,
    store_block,
)
from xdsl.dialects import arith, scf, vector
from xdsl.dialects.builtin import (
    ComplexType,
    DenseIntOrFPElementsAttr,
    MemRefType,
    VectorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

_ELEMENTWISE = (
    hlo.BinaryElementwiseOp,
    hlo.UnaryElementwiseOp,
    hlo.CompareOp,
    hlo.IsFiniteOp,
    hlo.SelectOp,
    hlo.ConvertOp,
    hlo.ClampOp,
    hlo.BitcastConvertOp,
)


def _vpu_work(chip: Chip, ops_per_element: int, n_out: int) -> Callable[[Sequence[int]], float]:
    """Seconds of a block's compute: `ops_per_element` VPU ops per result element."""
    return lambda blocks: vpu_time(chip, math.prod(blocks[:n_out]), ops_per_element)


def _map(chip: Chip, op: Operation) -> Tiled:
    """Elementwise ops, compare, select, convert: every operand block is the result's."""
    shape = tensor_type(op.results[0].type).get_shape()
    ident = tuple(range(len(shape)))
    streams = []
    for v in op.operands:
        rank = len(tensor_type(v.type).get_shape())
        streams.append(Stream(v, ident if rank else ()))

    def body(b: TileEmitter, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        loaded: dict[SSAValue, SSAValue] = {}  # an operand repeated (x * x): loaded once
        for v, view in zip(op.operands, views, strict=False):
            if v not in loaded:
                loaded[v] = load_block(b, view)
        store_block(b, elementwise(b, op, [loaded[v] for v in op.operands]), target)

    return Tiled(op, shape, streams, body, _vpu_work(chip, elementwise_vpu_ops(op), len(shape)))


# Constants, iota, broadcast, transpose ---------------------------------------------------


def _constant(chip: Chip, op: hlo.ConstantOp) -> Tiled:
    ty = tensor_type(op.result.type)
    shape = ty.get_shape()
    # A splat is read from its one stored element: never expanded to the tensor's size.
    value = splat_element(op.value) if math.prod(shape) else 0
    splat = value is not None

    def body(b: TileEmitter, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        if isinstance(ty.element_type, ComplexType):
            _complex_constant(b, op, value, target)
            return
        vty = VectorType(ty.element_type, memref_shape(target))
        if splat:
            v = splat_vector(b, value, vty)
        else:
            v = b.op(arith.ConstantOp(DenseIntOrFPElementsAttr(vty, op.value.data)))
        store_block(b, v, target)

    return Tiled(op, shape, [], body, _vpu_work(chip, 0, len(shape)), whole=not splat)


def _complex_constant(
    b: TileEmitter, op: hlo.ConstantOp, value: tuple[float, float] | None, target: SSAValue
) -> None:
    """
    A complex constant's block stored through its parts' view (`tpu.memref_bitcast` of
    the VMEM block to the part type with a last dimension of 2: a vector register holds
    real lanes): a splat (`value`: its (re, im) pair) broadcast, one vector op per part;
    a dense literal as its bytes, which are the interleaved parts already.
    """
    elem = tensor_type(op.result.type).element_type
    assert isinstance(elem, ComplexType)
    part = elem.element_type
    pairs = [*memref_shape(target), 2]
    space = target.type.memory_space  # pyright: ignore[reportAttributeAccessIssue]
    view = b.op(tpu.MemRefBitcastOp(target, MemRefType(part, pairs, memory_space=space)))
    vty = VectorType(part, pairs)
    if value is None:
        v = b.op(arith.ConstantOp(DenseIntOrFPElementsAttr(vty, op.value.data)))
    else:
        two = VectorType(part, [2])
        pair = DenseIntOrFPElementsAttr.from_list(two, list(value))
        v = b.op(vector.BroadcastOp(b.op(arith.ConstantOp(pair)), vty))
    store_block(b, v, view)


def _iota(chip: Chip, op: hlo.IotaOp) -> Tiled:
    """Counts in i32 (i64 for i64) per block plus the block's offset, then converts."""
    ty = tensor_type(op.result.type)
    shape, elem = ty.get_shape(), ty.element_type
    dim = op.iota_dimension.value.data
    count = i64 if elem == i64 else i32

    def body(b: TileEmitter, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        block = memref_shape(target)
        vty = VectorType(count, block)
        v = b.op(tpu.IotaOp(vty, dim))
        off = ix_mul(b, idx[dim], block[dim])
        if off != 0:
            scalar = b.op(arith.IndexCastOp(ix_value(b, off), count))
            v = b.op(arith.AddiOp(v, b.op(vector.BroadcastOp(scalar, vty))))
        store_block(b, convert_vector(b, v, elem), target)

    return Tiled(op, shape, [], body, _vpu_work(chip, 2, len(shape)))


def _broadcast(chip: Chip, op: hlo.BroadcastOp) -> Tiled:
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

    def body(b: TileEmitter, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        store_block(b, broadcast_to(b, load_block(b, views[0]), memref_shape(target)), target)

    stream = Stream(op.operand, follow, view=view)
    return Tiled(op, shape, [stream], body, _vpu_work(chip, 1, len(shape)))


def _transpose(chip: Chip, op: hlo.TransposeOp) -> Tiled:
    shape = tensor_type(op.result.type).get_shape()
    perm = op.perm
    follow = tuple(perm.index(i) for i in range(len(perm)))

    def body(b: TileEmitter, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        store_block(b, b.op(tpu.TransposeOp(load_block(b, views[0]), perm)), target)

    return Tiled(op, shape, [Stream(op.operand, follow)], body, _vpu_work(chip, 1, len(shape)))


# Dot ----------------------------------------------------------------------------------------


def _mxu_operand(elem: Attribute) -> Attribute:
    """What the MXU multiplies for operands of `elem` (i1 as i32 0/1, sub-byte integers
    unpacked to int8: `narrow_ints`)."""
    return i32 if element_kind(elem) == BOOL else narrow_ints.mxu_operand(elem)


def _dot(chip: Chip, op: hlo.DotOp) -> Tiled:
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
    streams = _dot_streams(op, (lb, lf, lc), (rb, rc, rf))
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

    def work(blocks: Sequence[int]) -> float:
        rows = math.prod(blocks[: nb + nl])
        return matmul_time(
            chip, rows, math.prod(blocks[n_out:]), math.prod(blocks[nb + nl : n_out]), elem
        )

    acc = Acc(
        acc_elem,
        lambda b, vty: splat_vector(b, 0, vty),
        lambda b, v: convert_vector(b, v, res.element_type),
        result=res.element_type,
    )
    return Tiled(op, sizes, streams, _dot_body(elem, operand, acc_elem), work, acc, align)


DotDims = tuple[Sequence[int], Sequence[int], Sequence[int]]
"""An operand's dot dimensions in its staged order: lhs (batch, free, contracting), rhs
(batch, contracting, free)."""


def _dot_streams(op: hlo.DotOp, lhs: DotDims, rhs: DotDims) -> list[Stream]:
    """The lhs and rhs streams of a dot: which iteration dimension each operand dimension
    follows, the permutation staging it, and its 3-D view."""
    (lb, lf, lc), (rb, rc, rf) = lhs, rhs
    nb, nl = len(lb), len(lf)
    n_out = nb + nl + len(rf)
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

    def stream(v: SSAValue, its: dict[int, int], dims: DotDims) -> Stream:
        rank = len(tensor_type(v.type).get_shape())
        order = (*dims[0], *dims[1], *dims[2])
        perm = None if order == tuple(range(rank)) else order
        return Stream(v, tuple(its[d] for d in range(rank)), perm, _three(dims))

    return [stream(op.lhs, lhs_it, lhs), stream(op.rhs, rhs_it, rhs)]


def _three(dims: DotDims) -> Callable[[tuple[int, ...]], tuple[int, ...]]:
    """A staged block seen as 3-D: the products of its three groups of dimensions."""
    a, b = len(dims[0]), len(dims[0]) + len(dims[1])

    def view(block: tuple[int, ...]) -> tuple[int, ...]:
        return (math.prod(block[:a]), math.prod(block[a:b]), math.prod(block[b:]))

    return view


def _dot_body(
    elem: Attribute, operand: Attribute, acc_elem: Attribute
) -> Callable[[TileEmitter, list[SSAValue], list[Ix], SSAValue], None]:
    """One `tpu.matmul` per batch element of the staged 3-D blocks, into `target`."""

    def body(b: TileEmitter, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
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
            a = convert_vector(inner, a, operand)
            w = convert_vector(inner, w, operand)
        c = inner.op(tpu.LoadOp(acc3, [i, z, z], VectorType(acc_elem, (m, n))))
        inner.op(tpu.StoreOp(inner.op(tpu.MatmulOp(a, w, c)), acc3, [i, z, z]))
        if batch != 1:
            inner.op(scf.YieldOp())

    return body


# Reduce --------------------------------------------------------------------------------------


def _reduce(chip: Chip, op: hlo.ReduceOp) -> Tiled:
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
    acc_elem = i32 if boolean else narrow_ints.wide(accumulation_type(elem))
    assert acc_elem is not None
    if boolean:  # or = max, and = min over 0/1
        kind = "max" if kind in ("add", "max") else "min"

    def identity(b: TileEmitter, vty: VectorType) -> SSAValue:
        if kind == "add":
            return splat_vector(b, 0, vty)
        if kind == "mul":
            return splat_vector(b, 1, vty)
        if boolean:
            return splat_vector(b, 0 if kind == "max" else 1, vty)
        if element_kind(acc_elem) == FLOAT:
            return splat_vector(b, -math.inf if kind == "max" else math.inf, vty)
        lo, hi = int_bounds(elem)  # sub-byte ones accumulate in i32: their own bounds
        return splat_vector(b, lo if kind == "max" else hi, vty)

    def body(b: TileEmitter, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        v = convert_vector(b, load_block(b, views[0]), acc_elem)
        c = load_block(b, target)
        store_block(b, b.op(tpu.ReduceOp(kind, v, c, rdims)), target)

    acc = Acc(acc_elem, identity, lambda b, v: convert_vector(b, v, elem), result=elem)
    work = _vpu_work(chip, reduce_body_ops(op), len(sizes))  # level S's charge
    return Tiled(
        op, sizes, [Stream(op.operand, tuple(its[d] for d in range(len(shape))))], body, work, acc
    )


# Entry points ------------------------------------------------------------------------------

_BUILDERS: list[tuple[type | tuple[type, ...], Callable[..., Tiled]]] = [
    (_ELEMENTWISE, _map),
    (hlo.ConstantOp, _constant),
    (hlo.IotaOp, _iota),
    (hlo.BroadcastOp, _broadcast),
    (hlo.TransposeOp, _transpose),
    (hlo.DotOp, _dot),
    (hlo.ReduceOp, _reduce),
]


def _builder(op: Operation) -> Callable[..., Tiled] | None:
    if not_computed(op):
        return None  # not lowered yet: lower-to-tpu says so at the op
    if isinstance(op, hlo.ReduceOp) and op.has_body:
        return None  # lowering/reduce_body.py
    for cls, build in _BUILDERS:
        if isinstance(op, cls):
            return build
    return None


def handles(op: Operation) -> bool:
    """Whether this module lowers ops of this kind."""
    return _builder(op) is not None


def check(target: Target, op: Operation) -> None:
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
    check_fits(target, build(target.chip, op))


def lower(ctx: LoweringContext, op: Operation) -> None:
    build = _builder(op)
    assert build is not None
    tile(ctx, build(ctx.target.chip, op))
