"""
hlo.sort (any number of operands, comparators LT / GT with or without TOTALORDER,
stable) and hlo.top_k lowered to tpu (part of `lower-to-tpu`, see
lowering/lower_to_tpu.py) as a rank sort in VMEM, in level S's order exactly
(interpreter/hlo_sorting.py).

Why a rank sort: a TPU core has no scalar-speed shuffles, but it compares and selects
whole vectors. Each operand is seen as [outer, n, inner] (n along the sorted dimension,
a bitcast view of the whole buffer); a block of R rows [R, n, inner] is DMA'd to VMEM,
and with i, j two positions along n:

* rank[i] = #{j : key[j] sorts before key[i]} + #{j < i : key[j] ties key[i]}: the
  [R, n, n, inner] comparison of the key broadcast both ways (`tpu.cmp`), summed over
  j (`tpu.reduce add`). Counting the earlier ties makes the sort stable, as level S's
  (a sort StableHLO calls unstable may order ties any way; the stable order is one).
* "before": LT: a < b, or b is NaN and a is not (NaNs last; -0 ties +0); GT: a > b, or
  a is NaN and b is not (level S reverses the ascending order of the reversed row, so
  NaNs come first); integers compare signed or unsigned by type, i1 as 0 < 1; TOTALORDER
  compares the float's bits as a sign-magnitude integer (`arith.bitcast`, then
  negative bit patterns with their magnitude bits flipped: -NaN < -inf < .. < -0 < +0 <
  .. < +NaN).
* output[p] = the element whose rank is p: a one-hot mask (rank == p) selects it among
  n and a `tpu.reduce add` over i of the masked values' bits (floats `arith.bitcast` to
  integers of their width, i1 as i32) moves it exactly: one non-zero term, so NaN
  payloads and -0 are kept bit for bit. top_k is the same with p < k, the key in
  descending total order and the indices (i32) selected like a value.

The work is O(n^2) per row (level S's cost model charges a sort as n log n): fine for
the sorted dimensions of real programs up to a few thousand, where the whole row fits
in VMEM; a row whose [n, n] comparison does not fit VMEM is an error naming the op, the
blocks and the capacity (not yet: a merge of sorted blocks through HBM for longer rows,
a top_k by k selection passes). Each block is fetched, ranked and written back in turn
(not double-buffered).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from shardc.diagnostics import OpPassError
from shardc.dialects import hlo, tpu
from shardc.dialects.sizes import element_bytes
from shardc.dialects.tpu import memref_type
from shardc.lowering.context import LoweringContext, Target
from shardc.lowering.emit import (
    HBM,
    VMEM,
    Emitter,
    for_steps,
    reshape_view,
    tensor_type,
)
from shardc.lowering.vector_ops import splat_vector
from xdsl.dialects import arith, scf, vector
from xdsl.dialects.builtin import (
    IntegerType,
    MemRefType,
    VectorType,
    i1,
    i32,
)
from xdsl.ir import Attribute, Operation, SSAValue

_TEMPORARIES = 8
"""4-byte [R, m, n, inner] vectors alive at once while ranking (the VMEM estimate)."""


def handles(op: Operation) -> bool:
    """Whether this module lowers ops of this kind."""
    return isinstance(op, hlo.SortOp | hlo.TopKOp)


def _geometry(op: Operation) -> tuple[int, int, int, int, int]:
    """(dim, outer, n, inner, m): the sorted dimension and the [outer, n, inner] view of
    the operands; m outputs per row (n, or top_k's k)."""
    shape = tensor_type(op.operands[0].type).get_shape()
    if isinstance(op, hlo.SortOp):
        dim, m = op.dim, shape[op.dim]
    else:
        assert isinstance(op, hlo.TopKOp)
        dim, m = len(shape) - 1, op.count
    outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1 :])
    return dim, outer, shape[dim], inner, m


def _rows(target: Target, op: Operation) -> int:
    """The rows R per block: the largest divisor of `outer` whose work fits VMEM."""
    _, outer, n, inner, m = _geometry(op)
    per_row = _TEMPORARIES * 4 * max(n, m) * n * inner + sum(
        2 * n * inner * element_bytes(tensor_type(v.type).element_type) for v in op.operands
    )
    fits = [r for r in range(1, outer + 1) if outer % r == 0 and r * per_row <= target.vmem_bytes]
    if not fits:
        raise OpPassError(
            op,
            f"lower-to-tpu: {op.name}: the rank sort of one row (blocks [1, {n}, {inner}], "
            f"[{n}, {n}] comparisons: {per_row} bytes) needs more VMEM than the "
            f"{target.vmem_bytes} bytes available on {target.chip.name}",
        )
    return max(fits)


def check(target: Target, op: Operation) -> None:
    """Raise an `OpPassError` at `op` if it cannot be lowered."""
    if math.prod(tensor_type(op.results[0].type).get_shape()):
        _rows(target, op)


def lower(ctx: LoweringContext, op: Operation) -> None:
    if not math.prod(tensor_type(op.results[0].type).get_shape()):
        return
    e = ctx.emitter
    _, outer, n, inner, m = _geometry(op)
    rows = _rows(ctx.target, op)
    ins = [reshape_view(e, ctx.buffers[v], (outer, n, inner), "sort_in") for v in op.operands]
    outs = [reshape_view(e, ctx.buffers[v], (outer, m, inner), "sort_out") for v in op.results]
    vin = [
        e.op(tpu.AllocOp(memref_type((rows, n, inner), _elem(v), VMEM)), "sort_vin") for v in ins
    ]
    vout = [
        e.op(tpu.AllocOp(memref_type((rows, m, inner), _elem(v), VMEM)), "sort_vout") for v in outs
    ]
    rank = e.op(tpu.AllocOp(memref_type((rows, n, inner), i32, VMEM)), "rank_vmem")
    # One semaphore per buffer: a wait takes whole DMAs, and the buffers differ in size.
    sems = [e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "sort_sem") for _ in (*vin, *vout)]
    sin, sout = sems[: len(vin)], sems[len(vin) :]
    b, t = for_steps(e, 0, outer // rows, "rows")
    at = [b.mul(t, b.index(rows)), b.index(0), b.index(0)]
    blocks_in = [_block(b, v, at, (rows, n, inner)) for v in ins]
    for src, dst, sem in zip(blocks_in, vin, sin, strict=True):
        b.op(tpu.DMAStartOp(src, dst, recv_sem=sem))
    for dst, sem in zip(vin, sin, strict=True):
        b.op(tpu.DMAWaitOp(sem, dst))
    descending, total = _order(op)
    _ranks(b, vin[0], descending, total, rank)
    if isinstance(op, hlo.SortOp):
        for src, dst in zip(vin, vout, strict=True):
            _select_into(b, rank, src, dst)
    else:
        _select_into(b, rank, vin[0], vout[0])
        _select_into(b, rank, None, vout[1])
    blocks_out = [_block(b, v, at, (rows, m, inner)) for v in outs]
    for src, dst, sem in zip(vout, blocks_out, sout, strict=True):
        b.op(tpu.DMAStartOp(src, dst, recv_sem=sem))
    for dst, sem in zip(blocks_out, sout, strict=True):
        b.op(tpu.DMAWaitOp(sem, dst))
    b.op(scf.YieldOp())
    for buf in (*vin, *vout, rank):
        e.op(tpu.DeallocOp(buf))


def _elem(ref: SSAValue) -> Attribute:
    ty = ref.type
    assert isinstance(ty, MemRefType)
    return ty.element_type


def _block(b: Emitter, ref: SSAValue, at: list[SSAValue], shape: Sequence[int]) -> SSAValue:
    return b.op(tpu.MemRefSliceOp(ref, at, memref_type(shape, _elem(ref), HBM)), "sort_block")


def _order(op: Operation) -> tuple[bool, bool]:
    """(descending, total order) of the sort."""
    if isinstance(op, hlo.TopKOp):
        return True, True
    assert isinstance(op, hlo.SortOp)
    words = op.comparator.data.split()
    return words[0] == "GT", "TOTALORDER" in words


# Ranks ------------------------------------------------------------------------------------


def _load_as(b: Emitter, buf: SSAValue, view: Sequence[int], to: Sequence[int]) -> SSAValue:
    """The VMEM block `buf` seen as `view` (size-1 dims inserted), broadcast to `to`."""
    v = reshape_view(b, buf, view, "sort_view")
    z = [b.index(0)] * len(view)
    x = b.op(tpu.LoadOp(v, z, VectorType(_elem(buf), view)))
    return b.op(vector.BroadcastOp(x, VectorType(_elem(buf), to)))


def _ranks(b: Emitter, key: SSAValue, descending: bool, total: bool, out: SSAValue) -> None:
    """rank[r, i, c] (i32) of every key into the VMEM buffer `out` (module docstring)."""
    rows, n, inner = _shape(key)
    full = (rows, n, n, inner)
    ki = _load_as(b, key, (rows, n, 1, inner), full)
    kj = _load_as(b, key, (rows, 1, n, inner), full)
    if total and hlo.element_kind(_elem(key)) == hlo.FLOAT:  # integers: their own order
        ki, kj = _total_key(b, ki), _total_key(b, kj)
    j_first = _before(b, kj, ki, descending)
    i_first = _before(b, ki, kj, descending)
    ordered = b.op(arith.OrIOp(j_first, i_first))
    tie = b.op(tpu.CmpOp("eq", ordered, splat_vector(b, 0, VectorType(i1, full))))
    earlier = b.op(
        tpu.CmpOp(
            "slt",
            b.op(tpu.IotaOp(VectorType(i32, full), 2)),
            b.op(tpu.IotaOp(VectorType(i32, full), 1)),
        )
    )
    count = b.op(arith.OrIOp(j_first, b.op(arith.AndIOp(tie, earlier))))
    ones = b.op(tpu.ConvertOp(count, VectorType(i32, full)))
    zero = splat_vector(b, 0, VectorType(i32, (rows, n, inner)))
    rank = b.op(tpu.ReduceOp("add", ones, zero, [2]), "rank")
    b.op(tpu.StoreOp(rank, out, [b.index(0)] * 3))


def _shape(ref: SSAValue) -> tuple[int, ...]:
    ty = ref.type
    assert isinstance(ty, MemRefType)
    return tuple(ty.get_shape())


def _before(b: Emitter, x: SSAValue, y: SSAValue, descending: bool) -> SSAValue:
    """Whether x sorts strictly before y (elementwise)."""
    vty = x.type
    assert isinstance(vty, VectorType)
    elem = vty.element_type
    if hlo.element_kind(elem) != hlo.FLOAT:
        unsigned = elem == i1 or hlo.is_unsigned(elem)
        pred = ("ugt" if descending else "ult") if unsigned else ("sgt" if descending else "slt")
        return b.op(tpu.CmpOp(pred, x, y))
    strict = b.op(tpu.CmpOp("ogt" if descending else "olt", x, y))
    nan_x = b.op(tpu.CmpOp("uno", x, x))
    nan_y = b.op(tpu.CmpOp("uno", y, y))
    # LT: NaNs last (y NaN, x not); GT: NaNs first (x NaN, y not).
    first, second = (nan_x, nan_y) if descending else (nan_y, nan_x)
    number = b.op(tpu.CmpOp("eq", second, splat_vector(b, 0, VectorType(i1, vty.get_shape()))))
    return b.op(arith.OrIOp(strict, b.op(arith.AndIOp(first, number))))


def _bits_type(elem: Attribute) -> IntegerType:
    return IntegerType(8 * element_bytes(elem))


def _total_key(b: Emitter, x: SSAValue) -> SSAValue:
    """Float bits as a signed integer in StableHLO's total order."""
    vty = x.type
    assert isinstance(vty, VectorType)
    ity = VectorType(_bits_type(vty.element_type), vty.get_shape())
    bits = b.op(arith.BitcastOp(x, ity))
    width = ity.element_type.width.data  # pyright: ignore[reportAttributeAccessIssue]
    mag = splat_vector(b, (1 << (width - 1)) - 1, ity)
    negative = b.op(tpu.CmpOp("slt", bits, splat_vector(b, 0, ity)))
    return b.op(tpu.SelectOp(negative, b.op(arith.XOrIOp(bits, mag)), bits))


# Selecting the element of each rank -------------------------------------------------------


def _select_into(b: Emitter, rank: SSAValue, src: SSAValue | None, dst: SSAValue) -> None:
    """dst[r, p, c] = src[r, i, c] where rank[r, i, c] == p (src None: i itself, i32);
    `rank` is the VMEM buffer of the ranks."""
    rows, m, inner = _shape(dst)
    n = _shape(rank)[1]
    full = (rows, m, n, inner)
    r = _load_as(b, rank, (rows, 1, n, inner), full)
    hit = b.op(tpu.CmpOp("eq", r, b.op(tpu.IotaOp(VectorType(i32, full), 1))))
    if src is None:
        elem, carrier, x = i32, i32, b.op(tpu.IotaOp(VectorType(i32, full), 2))
    else:
        elem = _elem(src)
        x = _load_as(b, src, (rows, 1, n, inner), full)
        carrier = i32 if elem == i1 else elem
        if hlo.element_kind(elem) == hlo.FLOAT:
            carrier = _bits_type(elem)
            x = b.op(arith.BitcastOp(x, VectorType(carrier, full)))
        elif elem == i1:
            x = b.op(tpu.ConvertOp(x, VectorType(i32, full)))
    picked = b.op(tpu.SelectOp(hit, x, splat_vector(b, 0, VectorType(carrier, full))))
    zero = splat_vector(b, 0, VectorType(carrier, (rows, m, inner)))
    out = b.op(tpu.ReduceOp("add", picked, zero, [2]))
    if carrier != elem:
        oty = VectorType(elem, (rows, m, inner))
        cls = arith.BitcastOp if hlo.element_kind(elem) == hlo.FLOAT else tpu.ConvertOp
        out = b.op(cls(out, oty))
    b.op(tpu.StoreOp(out, dst, [b.index(0)] * 3))
