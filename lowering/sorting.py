"""
hlo.sort (any number of operands, comparators LT / GT with or without TOTALORDER,
stable) and hlo.top_k lowered to tpu (part of `lower-to-tpu`, see
lowering/lower_to_tpu.py) in VMEM, in level S's order exactly
(interpreter/hlo_sorting.py).

Each operand is seen as [outer, n, inner] (n along the sorted dimension, a bitcast view
of the whole buffer); a block of R rows is DMA'd to VMEM, ordered there and DMA'd back.
"x sorts before y" is the comparator's: LT: a < b, or b is NaN and a is not (NaNs last;
-0 ties +0); GT: a > b, or a is NaN and b is not (level S reverses the ascending order of
the reversed row, so NaNs come first); integers compare signed or unsigned by type, i1
as 0 < 1; TOTALORDER compares the float's bits as a sign-magnitude integer
(`arith.bitcast`, then negative bit patterns with their magnitude bits flipped: -NaN <
-inf < .. < -0 < +0 < .. < +NaN). Ties keep their order (stable), as level S's.

Sort: a bitonic network (`_network`), what level S's cost model charges (L(L + 1)/2
compare-exchange stages, L = log2 of n rounded up). The row is padded to P = 2^L
positions in VMEM, and an i32 index operand (the position, `tpu.iota`) rides along: a
key pair compares by (key, index), which makes equal keys keep their order (the network
itself is not stable) and sorts the padding (index >= n) after every element. A stage
(k, j) compare-exchanges positions i and i + j within blocks of 2j: the block viewed as
[P / 2j, 2, j] (a reshape of VMEM), its two halves are two `tpu.load`s; per pair
`swap` = "the second sorts before the first", flipped where the merge of size k runs
descending ((i & k) != 0, from an iota of the block index); each operand's halves are
selected (`tpu.select`) and stored back. O(P log^2 P) VPU work per row, every value moved
bit for bit (NaN payloads, -0).

Keys of floats and integers up to 32 bits (`packs`, hardware/cost.py `sort_packs`) take
the packed network instead: before it, one i64 key per position, the key operand's value
as 32 bits ascending in the comparator's order (NaN rule, -0, descending folded in) above
the position (`_store_key`); the network then compares keys as unsigned integers (one
compare per pair, no index operand: the position is in the key) and moves the key and
every operand with two selects each. That is the work level S charges a sort
(`sort_network_work`; tests/unit/test_lower_sorting.py counts the lowered kernel's ops
against it).

top_k (`_select_top`): k selection passes over the row, when that is less work than the
network (k passes of ~10 VPU ops per element against L(L + 1)/2 stages of ~15): the keys
in total order as integers (`_total_key`), the row transposed so that it is the leading
dimension; per pass the largest key not yet taken (`tpu.reduce max`), its lowest
position among equals (`tpu.reduce min` of the positions that hold it: level S's
tie order), the value there (a one-hot mask, its bits summed) and the position itself,
then that position is marked taken. Otherwise top_k is the network in descending total
order with the index operand as its second result, of which the first k are written.

A row whose blocks do not fit VMEM is an error naming the op, the blocks and the
capacity (not yet: a merge of sorted blocks through HBM for longer rows). Each block is
fetched, ordered and written back in turn (not double-buffered).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from shardc.diagnostics import OpPassError
from shardc.dialects import hlo, tpu
from shardc.dialects.sizes import element_bytes
from shardc.dialects.tpu import memref_type
from shardc.hardware.cost import select_blocks, sort_packs, sort_selects
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
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

_TEMPORARIES = 12
"""4-byte [R, P, inner] vectors alive at once in a network stage or selection pass (the
VMEM estimate)."""


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


def _padded(n: int) -> int:
    """P: n rounded up to a power of two."""
    return 1 << max(n - 1, 0).bit_length()


def _stages(n: int) -> int:
    levels = _padded(n).bit_length() - 1
    return levels * (levels + 1) // 2


def _selects(op: Operation) -> bool:
    """Whether a top_k takes k selection passes rather than the network."""
    return sort_selects(op)


def _rows(target: Target, op: Operation) -> int:
    """The rows R per block: the largest divisor of `outer` whose work fits VMEM."""
    _, outer, n, inner, m = _geometry(op)
    p = n if _selects(op) else _padded(n)
    per_row = _TEMPORARIES * 4 * p * inner + sum(
        2 * p * inner * element_bytes(tensor_type(v.type).element_type) for v in op.operands
    )
    fits = [r for r in range(1, outer + 1) if outer % r == 0 and r * per_row <= target.vmem_bytes]
    if not fits:
        raise OpPassError(
            op,
            f"lower-to-tpu: {op.name}: ordering one row in VMEM (blocks [1, {p}, {inner}]: "
            f"{per_row} bytes) needs more VMEM than the "
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
    select = _selects(op)
    if select and _select_rows(ctx.target, op):
        _lower_select(ctx, op, _select_rows(ctx.target, op))
        return
    p = n if select else _padded(n)
    ins = [reshape_view(e, ctx.buffers[v], (outer, n, inner), "sort_in") for v in op.operands]
    outs = [reshape_view(e, ctx.buffers[v], (outer, m, inner), "sort_out") for v in op.results]
    bufs = [_alloc(e, (rows, p, inner), _elem(v), "sort_vin") for v in ins]
    packed = not select and packs(op)
    if select:
        vout = [_alloc(e, (rows, m), _elem(v), "sort_vout") for v in outs]
    elif packed:  # the key (and in it the index) first, the operands after it
        bufs.insert(0, _alloc(e, (rows, p, inner), i64, "sort_key"))
        vout = bufs[1:]
        if isinstance(op, hlo.TopKOp):
            vout.append(_alloc(e, (rows, m, inner), i32, "sort_index"))
    else:
        bufs.append(_alloc(e, (rows, p, inner), i32, "sort_index"))
        vout = bufs[:-1] if isinstance(op, hlo.SortOp) else [bufs[0], bufs[-1]]
    # One semaphore per buffer: a wait takes whole DMAs, and the buffers differ in size.
    sin = [e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "sort_sem") for _ in ins]
    sout = [e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "sort_sem") for _ in outs]
    b, t = for_steps(e, 0, outer // rows, "rows")
    at = [b.mul(t, b.index(rows)), b.index(0), b.index(0)]
    operands = bufs[1:] if packed else bufs
    for src, dst, sem in zip(ins, operands, sin, strict=False):
        b.op(tpu.DMAStartOp(_block(b, src, at, (rows, n, inner)), _head(b, dst, n), recv_sem=sem))
    if packed:
        _zero_padding(b, operands, n)
    elif not select:
        _init_padding(b, bufs, n)
    for dst, sem in zip(operands, sin, strict=False):
        b.op(tpu.DMAWaitOp(sem, _head(b, dst, n)))
    descending, total = _order(op)
    if select:
        _select_top(b, bufs[0], vout[0], vout[1])
        sources = [reshape_view(b, v, (rows, m, 1), "sort_result") for v in vout]
    elif packed:
        _store_key(b, bufs[0], operands[0], n, (descending, total))
        _packed_network(b, bufs)
        if isinstance(op, hlo.TopKOp):
            _store_index(b, bufs[0], vout[-1])
        sources = [_head(b, v, m) for v in vout]
    else:
        _network(b, bufs, n, descending, total)
        sources = [_head(b, v, m) for v in vout]
    for src, dst, sem in zip(sources, outs, sout, strict=True):
        b.op(tpu.DMAStartOp(src, _block(b, dst, at, (rows, m, inner)), recv_sem=sem))
    for src, sem in zip(sources, sout, strict=True):
        b.op(tpu.DMAWaitOp(sem, src))
    b.op(scf.YieldOp())
    for buf in {*bufs, *vout}:
        e.op(tpu.DeallocOp(buf))


def _alloc(e: Emitter, shape: Sequence[int], elem: Attribute, hint: str) -> SSAValue:
    return e.op(tpu.AllocOp(memref_type(shape, elem, VMEM)), hint)


def _head(b: Emitter, buf: SSAValue, m: int) -> SSAValue:
    """The first m positions of a [R, P, inner] VMEM buffer."""
    rows, p, inner = _shape(buf)
    if m == p:
        return buf
    ty = memref_type((rows, m, inner), _elem(buf), VMEM)
    return b.op(tpu.MemRefSliceOp(buf, [b.index(0)] * 3, ty), "sort_head")


def _init_padding(b: Emitter, bufs: list[SSAValue], n: int) -> None:
    """Positions as the index operand; zeros in the padding of the others (sorted last,
    never written out: defined bytes for the simulator's checks)."""
    rows, p, inner = _shape(bufs[-1])
    iota = b.op(tpu.IotaOp(VectorType(i32, (rows, p, inner)), 1), "sort_iota")
    b.op(tpu.StoreOp(iota, bufs[-1], [b.index(0)] * 3))
    _zero_padding(b, bufs[:-1], n)


def _zero_padding(b: Emitter, bufs: list[SSAValue], n: int) -> None:
    """Zeros in the padding (positions n..P) of the operand buffers."""
    rows, p, inner = _shape(bufs[0])
    if p == n:
        return
    ty = (rows, p - n, inner)
    for buf in bufs:
        at = [b.index(0), b.index(n), b.index(0)]
        tail = b.op(tpu.MemRefSliceOp(buf, at, memref_type(ty, _elem(buf), VMEM)))
        zero = splat_vector(b, 0, VectorType(_elem(buf), ty))
        b.op(tpu.StoreOp(zero, tail, [b.index(0)] * 3))


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


# The bitonic network ----------------------------------------------------------------------


def _network(b: Emitter, bufs: list[SSAValue], n: int, descending: bool, total: bool) -> None:
    """Sort the [R, P, inner] VMEM buffers by (bufs[0], bufs[-1]): bufs[-1] is the index
    operand, the others move with it."""
    p = _shape(bufs[0])[1]
    k = 2
    while k <= p:
        j = k // 2
        while j >= 1:
            _stage(b, bufs, n, k, j, (descending, total))
            j //= 2
        k *= 2


def _stage(
    b: Emitter, bufs: list[SSAValue], n: int, k: int, j: int, order: tuple[bool, bool]
) -> None:
    """Compare-exchange i and i + j in every block of 2j (see the module docstring)."""
    p = _shape(bufs[0])[1]

    def swap(lo: list[SSAValue], hi: list[SSAValue]) -> SSAValue:
        return _sorts_before(b, (hi[0], hi[-1]), (lo[0], lo[-1]), n if n < p else None, order)

    _exchange(b, bufs, k, j, swap)


def _exchange(
    b: Emitter,
    bufs: list[SSAValue],
    k: int,
    j: int,
    swap_of: Callable[[list[SSAValue], list[SSAValue]], SSAValue],
) -> None:
    """
    One stage of the network on `bufs` ([R, p, inner]): load the first and second halves
    of every block of 2j, swap where `swap_of(lo, hi)` says (flipped where the merge of
    size k runs descending), store back. Shared by the plain and the packed network.
    """
    rows, p, inner = _shape(bufs[0])
    view, half = (rows, p // (2 * j), 2, j, inner), (rows, p // (2 * j), 1, j, inner)
    views = [reshape_view(b, buf, view, "sort_pairs") for buf in bufs]
    zero = [b.index(0)] * 5
    second = [zero[0], zero[1], b.index(1), zero[3], zero[4]]
    lo = [b.op(tpu.LoadOp(v, zero, VectorType(_elem(v), half))) for v in views]
    hi = [b.op(tpu.LoadOp(v, second, VectorType(_elem(v), half))) for v in views]
    swap = swap_of(lo, hi)
    if k < p:  # blocks of size k alternate ascending / descending
        block = b.op(tpu.IotaOp(VectorType(i32, half), 1))
        bit = b.op(arith.AndIOp(block, splat_vector(b, k // (2 * j), VectorType(i32, half))))
        down = b.op(tpu.CmpOp("ne", bit, splat_vector(b, 0, VectorType(i32, half))))
        swap = b.op(arith.XOrIOp(swap, down))
    for v, x, y in zip(views, lo, hi, strict=True):
        b.op(tpu.StoreOp(b.op(tpu.SelectOp(swap, y, x)), v, zero))
        b.op(tpu.StoreOp(b.op(tpu.SelectOp(swap, x, y)), v, second))


def _sorts_before(
    b: Emitter,
    x: tuple[SSAValue, SSAValue],
    y: tuple[SSAValue, SSAValue],
    n: int | None,
    order: tuple[bool, bool],
) -> SSAValue:
    """Whether (key, index) x sorts strictly before y: by key, ties by index, and (with
    padding: n) every position < n before the padding."""
    (xk, xi), (yk, yi) = x, y
    descending, total = order
    if total and hlo.element_kind(_vty(xk).element_type) == hlo.FLOAT:
        xk, yk = _total_key(b, xk), _total_key(b, yk)
    first = _before(b, xk, yk, descending)
    last = _before(b, yk, xk, descending)
    decided = b.op(arith.OrIOp(first, last))
    tie = b.op(tpu.CmpOp("eq", decided, splat_vector(b, 0, VectorType(i1, _vty(xk).get_shape()))))
    earlier = b.op(tpu.CmpOp("slt", xi, yi))
    result = b.op(arith.OrIOp(first, b.op(arith.AndIOp(tie, earlier))))
    if n is None:
        return result
    limit = splat_vector(b, n, _vty(xi))
    x_real = b.op(tpu.CmpOp("slt", xi, limit))
    y_real = b.op(tpu.CmpOp("slt", yi, limit))
    one_real = b.op(arith.XOrIOp(x_real, y_real))
    return b.op(tpu.SelectOp(one_real, x_real, result))


def _vty(v: SSAValue) -> VectorType:
    ty = v.type
    assert isinstance(ty, VectorType)
    return ty


# The packed network: one 64-bit key per element -------------------------------------------


def packs(op: Operation) -> bool:
    """Whether the sort's key fits the high half of one 64-bit key with the index in the
    low half (`hardware.cost.sort_packs`: floats and integers up to 32 bits)."""
    return sort_packs(op)


def _store_key(
    b: Emitter, key: SSAValue, values: SSAValue, n: int, order: tuple[bool, bool]
) -> None:
    """
    key = order << 32 | position: `order` the key operand's value as an unsigned 32-bit
    number ascending in the sort's order (descending: complemented), so that comparing
    keys as unsigned 64-bit integers is the comparator with ties by position (stable);
    padding (positions >= n) all ones, after every element. Floats: the bits as a signed
    integer in total order (negative ones' magnitude flipped); without TOTALORDER -0 is
    +0 and every NaN the largest (tied, in position order: level S's NaNs last for LT,
    first for GT).
    """
    rows, p, inner = _shape(key)
    shape = (rows, p, inner)
    x = b.op(tpu.LoadOp(values, [b.index(0)] * 3, VectorType(_elem(values), shape)))
    elem = _elem(values)
    descending, total = order
    wide = VectorType(i64, shape)
    if hlo.element_kind(elem) == hlo.FLOAT:
        s = _float_order(b, x, total)
        bias = 1 << 31
    else:
        s = x
        bias = 0 if hlo.is_unsigned(elem) else 1 << 31
    s = b.op(tpu.ConvertOp(s, wide))
    if descending:
        s = b.op(arith.SubiOp(splat_vector(b, (1 << 32) - 1 - bias, wide), s))
    elif bias:
        s = b.op(arith.AddiOp(s, splat_vector(b, bias, wide)))
    pos = b.op(tpu.IotaOp(wide, 1), "sort_iota")
    k = b.op(arith.OrIOp(b.op(arith.ShLIOp(s, splat_vector(b, 32, wide))), pos))
    if n < p:
        pad = b.op(tpu.CmpOp("sge", pos, splat_vector(b, n, wide)))
        k = b.op(tpu.SelectOp(pad, splat_vector(b, -1, wide), k))
    b.op(tpu.StoreOp(k, key, [b.index(0)] * 3))


def _float_order(b: Emitter, x: SSAValue, total: bool) -> SSAValue:
    """A float vector as i32 ascending in the comparator's order (see `_store_key`)."""
    vty = _vty(x)
    width = 8 * element_bytes(vty.element_type)
    ity = VectorType(IntegerType(width), vty.get_shape())
    s = b.op(arith.BitcastOp(x, ity))
    i32ty = VectorType(i32, vty.get_shape())
    if width < 32:  # sign-extended: the order of the narrow bits
        s = b.op(tpu.ConvertOp(s, i32ty))
    if not total:  # -0 ties +0
        zero = b.op(tpu.CmpOp("oeq", x, splat_vector(b, 0.0, vty)))
        s = b.op(tpu.SelectOp(zero, splat_vector(b, 0, i32ty), s))
    sign = b.op(arith.ShRSIOp(s, splat_vector(b, 31, i32ty)))
    mag = splat_vector(b, (1 << (width - 1)) - 1, i32ty)
    s = b.op(arith.XOrIOp(s, b.op(arith.AndIOp(sign, mag))))
    if not total:  # every NaN the largest
        nan = b.op(tpu.CmpOp("uno", x, x))
        s = b.op(tpu.SelectOp(nan, splat_vector(b, (1 << 31) - 1, i32ty), s))
    return s


def _packed_network(b: Emitter, bufs: list[SSAValue]) -> None:
    """The bitonic network on bufs[0]'s keys; the other buffers move with them."""
    p = _shape(bufs[0])[1]
    k = 2
    while k <= p:
        j = k // 2
        while j >= 1:
            _packed_stage(b, bufs, k, j)
            j //= 2
        k *= 2


def _packed_stage(b: Emitter, bufs: list[SSAValue], k: int, j: int) -> None:
    """Compare-exchange i and i + j in every block of 2j: swap where the second key is
    the smaller (flipped where the merge of size k runs descending)."""
    _exchange(b, bufs, k, j, lambda lo, hi: b.op(tpu.CmpOp("ult", hi[0], lo[0])))


def _store_index(b: Emitter, key: SSAValue, index: SSAValue) -> None:
    """The first m positions' indices (the keys' low halves) into `index` ([R, m, inner])."""
    shape = _shape(index)
    head = _head(b, key, shape[1])
    k = b.op(tpu.LoadOp(head, [b.index(0)] * 3, VectorType(i64, shape)))
    low = b.op(arith.AndIOp(k, splat_vector(b, (1 << 32) - 1, VectorType(i64, shape))))
    b.op(tpu.StoreOp(b.op(tpu.ConvertOp(low, VectorType(i32, shape))), index, [b.index(0)] * 3))


# top_k by selection -----------------------------------------------------------------------


def _select_top(b: Emitter, key: SSAValue, values: SSAValue, indices: SSAValue) -> None:
    """The k largest of each row of `key` ([R, n, 1] or [R, n]) in total order, lowest position
    first among equals, into `values` and `indices` ([R, k] VMEM)."""
    rows, n = _shape(key)[:2]
    k = _shape(values)[1]
    elem = _elem(key)
    flat = key if len(_shape(key)) == 2 else reshape_view(b, key, (rows, n), "topk_rows")
    loaded = b.op(tpu.LoadOp(flat, [b.index(0)] * 2, VectorType(elem, (rows, n))))
    x = b.op(tpu.TransposeOp(loaded, [1, 0]))
    is_float = hlo.element_kind(elem) == hlo.FLOAT
    order = _total_key(b, x) if is_float else x
    kty = _vty(order)
    width = kty.element_type.width.data  # pyright: ignore[reportAttributeAccessIssue]
    lowest = splat_vector(b, -(1 << (width - 1)), kty)
    bits = b.op(arith.BitcastOp(x, kty)) if is_float else x
    pos = b.op(tpu.IotaOp(VectorType(i32, (n, rows)), 0))
    taken = splat_vector(b, 0, VectorType(i1, (n, rows)))
    out_v = [_alloc(b, (k, rows), elem, "topk_v"), _alloc(b, (k, rows), i32, "topk_i")]
    for p in range(k):
        cand = b.op(tpu.SelectOp(taken, lowest, order))
        _, best = _reduce_rows(b, "max", cand, -(1 << (width - 1)))
        free = b.op(tpu.CmpOp("eq", taken, splat_vector(b, 0, VectorType(i1, (n, rows)))))
        equal = b.op(arith.AndIOp(b.op(tpu.CmpOp("eq", cand, best)), free))
        far = splat_vector(b, n, VectorType(i32, (n, rows)))
        where, everywhere = _reduce_rows(b, "min", b.op(tpu.SelectOp(equal, pos, far)), n)
        hit = b.op(tpu.CmpOp("eq", pos, everywhere))
        picked = b.op(tpu.SelectOp(hit, bits, splat_vector(b, 0, kty)))
        value, _ = _reduce_rows(b, "add", picked, 0)
        if is_float:
            value = b.op(arith.BitcastOp(value, VectorType(elem, (rows,))))
        at = [b.index(p), b.index(0)]
        b.op(tpu.StoreOp(value, out_v[0], at))
        b.op(tpu.StoreOp(where, out_v[1], at))
        taken = b.op(arith.OrIOp(taken, hit))
    for src, dst in zip(out_v, (values, indices), strict=True):
        v = b.op(tpu.LoadOp(src, [b.index(0)] * 2, VectorType(_elem(src), (k, rows))))
        b.op(tpu.StoreOp(b.op(tpu.TransposeOp(v, [1, 0])), dst, [b.index(0)] * 2))
        b.op(tpu.DeallocOp(src))


def _select_rows(target: Target, op: Operation) -> int:
    """Rows per block of the double-buffered selection: `hardware.cost.select_blocks`
    blocks (level S's count), fewer rows if the work and a second input slot do not fit
    VMEM; 0 if not even one row's do (then one block at a time)."""
    _, outer, n, _, _ = _geometry(op)
    elem = tensor_type(op.operands[0].type).element_type
    per_row = _TEMPORARIES * 4 * n + 3 * n * element_bytes(elem)
    ok = [r for r in range(1, outer + 1) if outer % r == 0 and r * per_row <= target.vmem_bytes]
    return min(outer // select_blocks(outer), max(ok or [0]))


def _lower_select(ctx: LoweringContext, op: Operation, rows: int) -> None:
    """top_k by selection over row blocks, double-buffered: block t + 1's fetch is started
    (into the other slot, free since block t - 1 was written back) before block t is
    waited for and selected; the [R, k] results are written back and waited per block."""
    e = ctx.emitter
    _, outer, n, _, m = _geometry(op)
    src = reshape_view(e, ctx.buffers[op.operands[0]], (outer, n), "topk_in")
    outs = [reshape_view(e, ctx.buffers[v], (outer, m), "topk_out") for v in op.results]
    slots = _alloc(e, (2, rows, n), _elem(src), "topk_vin")
    sems = e.op(tpu.AllocOp(tpu.DMASemaphoreType([2])), "topk_in_sems")
    vout = [_alloc(e, (rows, m), _elem(v), "sort_vout") for v in outs]
    sout = [e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "sort_sem") for _ in outs]

    def slot(b: Emitter, i: SSAValue) -> tuple[SSAValue, SSAValue]:
        ty = memref_type((rows, n), _elem(src), VMEM)
        buf = b.op(tpu.MemRefSliceOp(slots, [i, b.index(0), b.index(0)], ty), "topk_slot")
        return buf, b.op(tpu.MemRefSliceOp(sems, [i], tpu.DMASemaphoreType()), "topk_sem")

    def fetch(b: Emitter, block: SSAValue, i: SSAValue) -> None:
        at = [b.mul(block, b.index(rows)), b.index(0)]
        buf, sem = slot(b, i)
        b.op(tpu.DMAStartOp(_block(b, src, at, (rows, n)), buf, recv_sem=sem))

    fetch(e, e.index(0), e.index(0))
    b, t = for_steps(e, 0, outer // rows, "rows")
    i, later = b.rem(t, b.index(2)), b.add(t, b.index(1))
    then = Emitter(Block())
    fetch(then, later, then.sub(then.index(1), i))
    then.op(scf.YieldOp())
    more = b.op(arith.CmpiOp(later, b.index(outer // rows), "slt"))
    b.op(scf.IfOp(more, [], Region(then.block)))
    buf, sem = slot(b, i)
    b.op(tpu.DMAWaitOp(sem, buf))
    _select_top(b, buf, vout[0], vout[1])
    at = [b.mul(t, b.index(rows)), b.index(0)]
    for v, dst, s in zip(vout, outs, sout, strict=True):
        b.op(tpu.DMAStartOp(v, _block(b, dst, at, (rows, m)), recv_sem=s))
    for v, s in zip(vout, sout, strict=True):
        b.op(tpu.DMAWaitOp(s, v))
    b.op(scf.YieldOp())
    for v in (slots, *vout):
        e.op(tpu.DeallocOp(v))


def _reduce_rows(b: Emitter, kind: str, v: SSAValue, init: int) -> tuple[SSAValue, SSAValue]:
    """`kind` over the leading dimension of [n, R]: the [R] result and it broadcast back."""
    n, rows = _vty(v).get_shape()
    elem = _vty(v).element_type
    r = b.op(tpu.ReduceOp(kind, v, splat_vector(b, init, VectorType(elem, (rows,))), [0]))
    return r, b.op(vector.BroadcastOp(r, VectorType(elem, (n, rows))))


def _shape(ref: SSAValue) -> tuple[int, ...]:
    ty = ref.type
    assert isinstance(ty, MemRefType)
    return tuple(ty.get_shape())
