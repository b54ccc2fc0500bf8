"""
`hlo.rng_bit_generator` lowered to tpu (part of `lower-to-tpu`, issue 15 item 3): two
tiled loops of `compute`'s core (`tile_plan.Tiled`), one writing the bits, one (of one
block) the next state, bit for bit with level S (interpreter/hlo_random.py: XLA's CPU
Threefry-2x32 / Philox-4x32, the same counters, word order and output state).

The TPU's VPU has 32-bit lanes, so everything per element is 32-bit wrapping integer
vector ops on signless i32: the state's 64-bit words are split once per block into
32-bit halves (`vector.extract` of the loaded state, broadcast), each element's counter
is computed from its position (`tpu.iota` plus the block's offset, row-major strides),
a 64-bit (Philox: 128-bit) counter add carries by unsigned compares, Threefry's rounds
are add / rotate (two shifts and an or) / xor (its key schedule on one-element vectors,
the scalar core's work, broadcast once per block), and Philox's 32x32->64 products are
`arith.mului_extended` (low and high halves; the level-T simulator implements it).

Elements sharing a counter (a Threefry 32-bit output's pairs along the split dimension,
Philox's 4 words, 64-bit: 2, along the row-major order) are computed once per counter
where they lie in whole groups along one dimension (`_groups`: Philox when the last
dimension's size is a multiple, Threefry when the split dimension is even; its blocks are
then kept even): the cipher runs on a block of counters and the words are interleaved
through a VMEM scratch and a `tpu.transpose` (`_grouped`). Otherwise every element
computes its own counter's whole cipher and keeps its word (`_threefry_bits`,
`_philox_bits`: 2x / 4x the vector work, no interleave). Both are what level S charges
(hardware/cost.py `rng_ops_per_element`, `rng_block_time`; hardware/kernel.py plans the
same loop), tests/unit/test_lower_rng.py counts the lowered ops against it.

Not lowered (an error at the op): outputs of 2^32 elements or more (counters are
computed in 32 bits).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from shardc.diagnostics import OpPassError
from shardc.dialects import hlo, tpu
from shardc.dialects.tpu import memref_type
from shardc.hardware.chips import Chip
from shardc.hardware.cost import rng_block_time, rng_groups, vpu_time
from shardc.lowering.context import LoweringContext, Target
from shardc.lowering.emit import VMEM, memref_shape, reshape_view, tensor_type
from shardc.lowering.tile_index import Ix, TileEmitter, ix_mul, ix_value
from shardc.lowering.tile_loop import tile
from shardc.lowering.tile_plan import Scratch, Stream, Tiled, check_fits
from shardc.lowering.vector_ops import convert_vector, load_block, splat_vector, store_block
from xdsl.dialects import arith, vector
from xdsl.dialects.builtin import IntegerType, MemRefType, VectorType, i32, i64
from xdsl.ir import Attribute, Operation, SSAValue

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_THREEFRY_PARITY = 0x1BD11BDA
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)


def handles(op: Operation) -> bool:
    """Whether this module lowers `op`."""
    return isinstance(op, hlo.RngBitGeneratorOp)


def _philox(op: hlo.RngBitGeneratorOp) -> bool:
    return op.algorithm != "THREE_FRY"  # PHILOX and DEFAULT (XLA's CPU default)


def _wide(op: hlo.RngBitGeneratorOp) -> bool:
    elem = tensor_type(op.output.type).element_type
    assert isinstance(elem, IntegerType)
    return elem.width.data == 64


# 32-bit vector arithmetic ----------------------------------------------------------------


class _V:
    """Signless i32 vectors of one block shape: the ops the ciphers are written in."""

    def __init__(self, b: TileEmitter, shape: Sequence[int]):
        self.b = b
        self.vty = VectorType(i32, shape)
        self.splats: dict[int, SSAValue] = {}
        """Each constant is splat once per block (a broadcast costs a VPU op per element)."""
        self.coords: dict[int, SSAValue] = {}
        self.scalars: list[SSAValue] = []
        """The state's 32-bit words as scalars (`_state_words`)."""

    def broadcast(self, scalar: SSAValue) -> SSAValue:
        return self.b.op(vector.BroadcastOp(scalar, self.vty))

    def const(self, value: int) -> SSAValue:
        value &= 0xFFFF_FFFF
        if value not in self.splats:
            signed = value - (1 << 32) if value >= 1 << 31 else value
            self.splats[value] = splat_vector(self.b, signed, self.vty)
        return self.splats[value]

    def add(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.b.op(arith.AddiOp(x, y))

    def xor(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.b.op(arith.XOrIOp(x, y))

    def rotl(self, x: SSAValue, r: int) -> SSAValue:
        left = self.b.op(arith.ShLIOp(x, self.const(r)))
        return self.b.op(arith.OrIOp(left, self.b.op(arith.ShRUIOp(x, self.const(32 - r)))))

    def shr(self, x: SSAValue, r: int) -> SSAValue:
        return self.b.op(arith.ShRUIOp(x, self.const(r)))

    def low_bits(self, x: SSAValue, mask: int) -> SSAValue:
        return self.b.op(arith.AndIOp(x, self.const(mask)))

    def carry_add(self, x: SSAValue, y: SSAValue) -> tuple[SSAValue, SSAValue]:
        """(x + y wrapped, its carry as 0 / 1)."""
        s = self.add(x, y)
        carried = self.b.op(tpu.CmpOp("ult", s, y))
        return s, self.b.op(tpu.SelectOp(carried, self.const(1), self.const(0)))

    def select_word(self, which: SSAValue, words: Sequence[SSAValue]) -> SSAValue:
        """`words[which]` per element (`which` < len(words))."""
        out = words[-1]
        for k in range(len(words) - 2, -1, -1):
            hit = self.b.op(tpu.CmpOp("eq", which, self.const(k)))
            out = self.b.op(tpu.SelectOp(hit, words[k], out))
        return out


def threefry(v: _V, x0: SSAValue, x1: SSAValue, words: list[SSAValue]):
    """Threefry-2x32, 20 rounds (`hlo_random.threefry2x32`) keyed by the state's first
    value (`words[0:2]`). The key schedule is the scalar core's: the third key word and
    each injection's key + round count are scalars, broadcast once per block."""
    k0, k1 = v.scalars[0], v.scalars[1]
    scalar = [k0, k1, _scalar(v, arith.XOrIOp, _scalar(v, arith.XOrIOp, k0, k1), _THREEFRY_PARITY)]
    ks = [words[0], words[1], v.broadcast(scalar[2])]
    x0, x1 = v.add(x0, ks[0]), v.add(x1, ks[1])
    for block in range(5):
        for r in _ROTATIONS[block % 2]:
            x0 = v.add(x0, x1)
            x1 = v.xor(v.rotl(x1, r), x0)
        x0 = v.add(x0, ks[(block + 1) % 3])
        inject = _scalar(v, arith.AddiOp, scalar[(block + 2) % 3], block + 1)
        x1 = v.add(x1, v.broadcast(inject))
    return x0, x1


def _scalar(v: _V, cls: type[Operation], x: SSAValue, y: SSAValue | int) -> SSAValue:
    """A scalar i32 op (the scalar core's), as a one-element vector op: no block work."""
    one = VectorType(i32, (1,))
    xv = v.b.op(vector.BroadcastOp(x, one))
    if isinstance(y, int):
        y &= 0xFFFF_FFFF
        yv = splat_vector(v.b, y - (1 << 32) if y >= 1 << 31 else y, one)
    else:
        yv = v.b.op(vector.BroadcastOp(y, one))
    r = v.b.op(cls(xv, yv))  # pyright: ignore[reportCallIssue]
    return v.b.op(vector.ExtractOp(r, [0], i32))


def philox(v: _V, x: list[SSAValue], k0: SSAValue, k1: SSAValue) -> list[SSAValue]:
    """Philox-4x32, 10 rounds (`hlo_random.philox4x32`)."""
    for _ in range(10):
        p0 = v.b.op(arith.MulUIExtendedOp(x[0], v.const(_PHILOX_M[0]))).owner.results
        p1 = v.b.op(arith.MulUIExtendedOp(x[2], v.const(_PHILOX_M[1]))).owner.results
        x = [v.xor(v.xor(p1[1], x[1]), k0), p1[0], v.xor(v.xor(p0[1], x[3]), k1), p0[0]]
        k0, k1 = v.add(k0, v.const(_PHILOX_W[0])), v.add(k1, v.const(_PHILOX_W[1]))
    return x


# The bits ----------------------------------------------------------------------------------


def _state_words(v: _V, state: SSAValue) -> list[SSAValue]:
    """The loaded ui64 state's 32-bit halves (low, high per value), broadcast to blocks."""
    n = memref_shape(state)[0]
    loaded = load_block(v.b, state)
    bits = v.b.op(arith.BitcastOp(loaded, VectorType(i64, (n,))))
    high = v.b.op(arith.ShRUIOp(bits, splat_vector(v.b, 32, VectorType(i64, (n,)))))
    halves = [convert_vector(v.b, h, i32) for h in (bits, high)]
    words = []
    for k in range(n):
        for h in halves:
            scalar = v.b.op(vector.ExtractOp(h, [k], i32))
            v.scalars.append(scalar)
            words.append(v.broadcast(scalar))
    return words


def _linear(v: _V, idx: list[Ix], strides: Sequence[int], halve: int | None) -> SSAValue:
    """Each element's row-major index over `strides` (dimension `halve` counted in
    pairs: its coordinate halved), in 32 bits (wrapping: the check keeps it exact)."""
    total: SSAValue | None = None
    for d, stride in enumerate(strides):
        c = _coordinate(v, idx, d)
        if d == halve:
            c = v.shr(c, 1)
        if stride != 1:
            c = v.b.op(arith.MuliOp(c, v.const(stride)))
        total = c if total is None else v.add(total, c)
    assert total is not None
    return total


def _coordinate(v: _V, idx: list[Ix], d: int) -> SSAValue:
    """Each element's position along dimension `d` of the whole output (once a block)."""
    if d not in v.coords:
        v.coords[d] = _position(v, idx, d)
    return v.coords[d]


def _position(v: _V, idx: list[Ix], d: int) -> SSAValue:
    block = v.vty.get_shape()
    c = v.b.op(tpu.IotaOp(v.vty, d))
    off = ix_mul(v.b, idx[d], block[d])
    if off == 0:
        return c
    scalar = v.b.op(arith.IndexCastOp(ix_value(v.b, off), i32))
    return v.add(c, v.b.op(vector.BroadcastOp(scalar, v.vty)))


def _strides(shape: Sequence[int]) -> list[int]:
    return [math.prod(shape[d + 1 :]) for d in range(len(shape))]


def _join(v: _V, lo: SSAValue, hi: SSAValue) -> SSAValue:
    """lo | hi << 32 as i64 (lo zero-extended)."""
    shape = v.vty.get_shape()
    wide = VectorType(i64, shape)
    lo64 = v.b.op(arith.AndIOp(convert_vector(v.b, lo, i64), splat_vector(v.b, 0xFFFF_FFFF, wide)))
    hi64 = v.b.op(arith.ShLIOp(convert_vector(v.b, hi, i64), splat_vector(v.b, 32, wide)))
    return v.b.op(arith.OrIOp(lo64, hi64))


def _threefry_bits(
    v: _V, op: hlo.RngBitGeneratorOp, words: list[SSAValue], idx: list[Ix]
) -> SSAValue:
    shape = tensor_type(op.output.type).get_shape()
    if _wide(op) or not shape:  # counter f (a rank-0 output: word 0 of counter 0)
        f = _linear(v, idx, _strides(shape), None) if shape else v.const(0)
        which = None
    else:
        dim = hlo.rng_split_dim(shape)
        half = list(shape)
        half[dim] = -(-shape[dim] // 2)
        f = _linear(v, idx, _strides(half), dim)
        which = v.low_bits(_coordinate(v, idx, dim), 1)
    c0, carry = v.carry_add(words[2], f)
    c1 = v.add(words[3], carry)
    o0, o1 = threefry(v, c0, c1, words)
    if _wide(op):
        return _join(v, o0, o1)
    return o0 if which is None else v.select_word(which, [o0, o1])


def _philox_counters(v: _V, words: list[SSAValue], j: SSAValue) -> list[SSAValue]:
    """The four words of Philox-4x32 of the 128-bit counter state + j (carried)."""
    high = words[4:6] if len(words) > 4 else words[0:2]  # a state of 2: the key
    c0, carry = v.carry_add(words[2], j)
    c1, carry = v.carry_add(carry, words[3])
    c2, carry = v.carry_add(carry, high[0])
    c3 = v.add(high[1], carry)
    return philox(v, [c0, c1, c2, c3], words[0], words[1])


def _philox_bits(
    v: _V, op: hlo.RngBitGeneratorOp, words: list[SSAValue], idx: list[Ix]
) -> SSAValue:
    """Per element: its counter's whole cipher, its word kept (`_groups` is 1)."""
    shape = tensor_type(op.output.type).get_shape()
    f = _linear(v, idx, _strides(shape), None) if shape else v.const(0)
    per = 2 if _wide(op) else 4  # elements per counter
    j, which = v.shr(f, per.bit_length() - 1), v.low_bits(f, per - 1)
    x = _philox_counters(v, words, j)
    if _wide(op):
        return _join(v, v.select_word(which, [x[0], x[2]]), v.select_word(which, [x[1], x[3]]))
    return v.select_word(which, x)


def _groups(op: hlo.RngBitGeneratorOp) -> tuple[int, int] | None:
    """(dimension, elements per counter) where the cipher runs once per counter
    (`_grouped`; hardware/cost.py `rng_groups`); None: once per element."""
    return rng_groups(op)


def _grouped(
    b: TileEmitter, op: hlo.RngBitGeneratorOp, views: list[SSAValue], idx: list[Ix], target
) -> None:
    """
    The cipher on a block of counters (the result block with the grouped dimension
    divided by `per`), then the words interleaved along it: each word's block stored at
    its index of a VMEM scratch [per, counters...], transposed to put `per` right after
    the grouped dimension, and stored through a view of the result block as that shape
    (row-major: word w of counter c at c * per + w along the dimension).
    """
    groups = _groups(op)
    assert groups is not None
    dim, per = groups
    shape = tensor_type(op.output.type).get_shape()
    q = _divided(memref_shape(target), dim, per)
    v = _V(b, q)
    words = _state_words(v, views[0])
    j = _linear(v, idx, _strides(_divided(shape, dim, per)), None)
    if _philox(op):
        x = _philox_counters(v, words, j)
        outs = [_join(v, x[0], x[1]), _join(v, x[2], x[3])] if _wide(op) else x
    else:
        c0, carry = v.carry_add(words[2], j)
        outs = list(threefry(v, c0, v.add(words[3], carry), words))
    scratch = views[1]
    word = _elem_of(scratch)
    for w, out in enumerate(outs):
        at = [b.index(w), *(b.index(0) for _ in q)]
        slot = b.op(tpu.MemRefSliceOp(scratch, at, memref_type((1, *q), word, VMEM)))
        store_block(b, convert_vector(b, out, word), reshape_view(b, slot, q))
    perm = (*range(1, dim + 2), 0, *range(dim + 2, len(q) + 1))
    moved = b.op(tpu.TransposeOp(load_block(b, scratch), perm))
    if _elem_of(target) != word:  # ui32 / ui64: the same bits
        target = b.op(tpu.MemRefBitcastOp(target, memref_type(memref_shape(target), word, VMEM)))
    store_block(b, moved, reshape_view(b, target, (*q[: dim + 1], per, *q[dim + 1 :])))


def _bits(chip: Chip, op: hlo.RngBitGeneratorOp) -> Tiled:
    ty = tensor_type(op.output.type)
    shape, elem = ty.get_shape(), ty.element_type
    gen = _philox_bits if _philox(op) else _threefry_bits
    groups = _groups(op)

    def body(b: TileEmitter, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        if groups is not None:
            _grouped(b, op, views, idx, target)
            return
        v = _V(b, memref_shape(target))
        raw = gen(v, op, _state_words(v, views[0]), idx)
        store_block(b, convert_vector(b, raw, elem), target)  # the low bits, as level S

    scratch, align = [], {}
    if groups is not None:
        dim, per = groups
        scratch = [Scratch(lambda blocks: (per, *_divided(blocks, dim, per)), _word(elem))]
        align = {dim: per}
    return Tiled(
        op,
        shape,
        [Stream(op.initial_state, (None,))],
        body,
        lambda blocks: rng_block_time(chip, op, blocks),
        align=align,
        outputs=(op.output,),
        scratch=scratch,
    )


def _elem_of(ref: SSAValue) -> Attribute:
    ty = ref.type
    assert isinstance(ty, MemRefType)
    return ty.element_type


def _word(elem: Attribute) -> Attribute:
    """The interleave's element type: the output's, signless where it is as wide as the
    cipher's words (i32, i64: the same bits as ui32 / ui64, no conversion)."""
    assert isinstance(elem, IntegerType)
    width = elem.width.data
    return IntegerType(width) if width in (32, 64) else elem


def _divided(blocks: Sequence[int], dim: int, per: int) -> tuple[int, ...]:
    """A block's shape with dimension `dim` divided by `per` (its counters)."""
    return tuple(n // per if d == dim else n for d, n in enumerate(blocks))


# The next state ----------------------------------------------------------------------------


def used_counters(op: hlo.RngBitGeneratorOp) -> int:
    """How far the counter advances (`hlo_random.rng_bit_generator`)."""
    shape = tensor_type(op.output.type).get_shape()
    n = math.prod(shape)
    if _philox(op):
        return -(-(2 * n if _wide(op) else n) // 4)
    if _wide(op) or not shape:
        return n
    half = list(shape)
    dim = hlo.rng_split_dim(shape)
    half[dim] = -(-shape[dim] // 2)
    return math.prod(half)


def _next_state(chip: Chip, op: hlo.RngBitGeneratorOp) -> Tiled:
    """[key, counter + used (, high + its carry)] in i64 vector ops on the few values."""
    state = tensor_type(op.initial_state.type)
    n, elem = state.get_shape()[0], state.element_type
    used = used_counters(op)

    def body(b: TileEmitter, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        vty = VectorType(i64, (n,))
        s = b.op(arith.BitcastOp(load_block(b, views[0]), vty))
        pos = b.op(tpu.IotaOp(vty, 0))
        at1 = b.op(tpu.CmpOp("eq", pos, splat_vector(b, 1, vty)))
        add = b.op(tpu.SelectOp(at1, splat_vector(b, used, vty), splat_vector(b, 0, vty)))
        new = b.op(arith.AddiOp(s, add))
        if n == 3:  # the carry out of the low half into the high one
            carried = convert_vector(b, b.op(tpu.CmpOp("ult", new, add)), i64)
            low = b.op(vector.BroadcastOp(b.op(vector.ExtractOp(carried, [1], i64)), vty))
            at2 = b.op(tpu.CmpOp("eq", pos, splat_vector(b, 2, vty)))
            new = b.op(arith.AddiOp(new, b.op(tpu.SelectOp(at2, low, splat_vector(b, 0, vty)))))
        store_block(b, b.op(arith.BitcastOp(new, VectorType(elem, (n,)))), target)

    return Tiled(
        op,
        (n,),
        [Stream(op.initial_state, (0,))],
        body,
        lambda blocks: vpu_time(chip, n, 8),
        outputs=(op.output_state,),
    )


# Entry points ------------------------------------------------------------------------------


def check(target: Target, op: Operation) -> None:
    """Raise an `OpPassError` at `op` if it cannot be lowered (see the module docstring)."""
    assert isinstance(op, hlo.RngBitGeneratorOp)
    n = math.prod(tensor_type(op.output.type).get_shape())
    if n >= 1 << 32:
        raise OpPassError(
            op,
            f"lower-to-tpu: hlo.rng_bit_generator of {n} elements (2^32 or more) "
            "is not supported yet",
        )
    if n:
        check_fits(target, _bits(target.chip, op))
    check_fits(target, _next_state(target.chip, op))


def lower(ctx: LoweringContext, op: Operation) -> None:
    assert isinstance(op, hlo.RngBitGeneratorOp)
    if math.prod(tensor_type(op.output.type).get_shape()):
        tile(ctx, _bits(ctx.target.chip, op))
    tile(ctx, _next_state(ctx.target.chip, op))
