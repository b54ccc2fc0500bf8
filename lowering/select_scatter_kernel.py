"""
`hlo.select_and_scatter` as one kernel (part of `lower-to-tpu`, reached through
lowering/windows.py): the max-pool gradient of CNNs reads the operand and the source from
HBM once per image and writes the result once, where the expansion into level-S ops
(hardware/select_scatter.py `expansion`) moves (window size) x (operand) bytes.

Which select_and_scatters: channels-last poolings, operand [n, h, w, c] with window
[1, kh, kw, 1] (or [n, w, c] with [1, kw, 1], or [n, w] with [1, kw]), strides and
padding (>= 0) on the spatial dimensions only, of floats or integers of a byte or more
(`select_scatter.pooling`), whose slots fit half the VMEM. The others keep the expansion.

The plan is `select_scatter.Pooling` (so level S charges what is emitted here). On the
halo pipeline of lowering/halo.py, per image of the batch (double-buffered):

* the image is DMA'd into the interior of an operand slot [hp, wq, sw * c] (the padded
  image, the width stride a reshape of the slot), its source [ho, wo, c] into a source
  slot (the halo kernel's "result" slots: the window positions' shape is the source's);
* the accumulator, a VMEM buffer of the slot's shape in the accumulation type (f32 for
  bf16/f16), is set to `init`;
* per output row oh, the select walks the window offsets in row-major order, each a
  [wo, c] load of the slot at [oh * sh + i, q, r * c] (j = q * sw + r), with level S's
  rule: the offset is taken where it is not padding and nothing was taken yet or the
  select does not keep the best (GE: not best >= x, so a tie keeps the first; GT: not
  best > x, a tie takes the last; a NaN on either side: taken). Rows of padding are left
  out of the walk (`Pooling.row_groups`: rows whose windows read the same rows of it
  share one `scf.for`), columns of it masked; an i32 `chosen` keeps the taken offset;
* then per offset of the row, window rows in order and column offsets in REVERSE, the
  source row where `chosen` is the offset (else -0.0, which adding leaves every value
  as it is; 0 for integers) is added to the accumulator's [wo, c] at that offset (load,
  add, store). An element chosen by several windows receives them in row-major window
  order, as level S's `np.add.at` and the expansion: a later row oh is a later window,
  and within one row a smaller column offset is a later window;
* the accumulator's interior is rounded once to the result type into a result slot and
  DMA'd out.

Bit for bit with level S but for which NaN a NaN + NaN is (the expansion's docstring).
"""

from __future__ import annotations

from shardc.dialects import hlo, tpu
from shardc.hardware import select_scatter
from shardc.hardware.select_scatter import Pooling, taken_compare
from shardc.lowering.context import LoweringContext, Target
from shardc.lowering.emit import HBM, VMEM, reshape_view
from shardc.lowering.halo import HaloGeometry, HaloKernel, target_vmem
from shardc.lowering.tile_index import (
    Ix,
    TileEmitter,
    emit_if,
    ix_add,
    ix_cmp,
    ix_mul,
    ix_rem,
    ix_value,
)
from shardc.lowering.vector_ops import broadcast_to, convert_vector, elementwise, splat_vector
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import TensorType, VectorType, i32
from xdsl.ir import Operation, SSAValue


def takes(target: Target | None, op: Operation) -> bool:
    """Whether `op` lowers as this kernel (else: as the expansion's level-S ops)."""
    if not isinstance(op, hlo.SelectAndScatterOp):
        return False
    return select_scatter.kernel_pooling(op, target_vmem(target)) is not None


def check(target: Target, op: hlo.SelectAndScatterOp) -> None:
    p = select_scatter.pooling(op)
    assert p is not None
    what = f"{op.name} (operand, source, accumulator and result blocks)"
    target.check_vmem(op, what, p.slots_bytes())


def lower(ctx: LoweringContext, op: hlo.SelectAndScatterOp) -> None:
    p = select_scatter.pooling(op)
    assert p is not None
    _SelectScatter(ctx, op, p).emit()


class _Constants:
    """The vectors made once before the image loop: the init value broadcast to the
    accumulator's shape, the additive identity, each offset's index, -1 and the column
    masks (valid, not valid) of the offsets that read padding (`Pooling.setup_work`)."""

    def __init__(self, e: TileEmitter, p: Pooling, init: SSAValue):
        row = (p.wo, p.c)
        self.acc_init = broadcast_to(e, convert_vector(e, init, p.acc), p.slot)
        self.identity = splat_vector(e, select_scatter.identity(p.acc), VectorType(p.acc, row))
        ivty = VectorType(i32, row)
        self.index = {
            i * p.kw + j: splat_vector(e, i * p.kw + j, ivty)
            for i in range(p.kh)
            for j in p.columns()
        }
        masked = [j for j in p.columns() if p.masked(j)]
        self.none = splat_vector(e, -1, ivty) if masked else None
        self.masks: dict[int, tuple[SSAValue, SSAValue]] = {}
        iota = e.op(tpu.IotaOp(ivty, 0), "sas_ow") if masked else None
        for j in masked:
            assert iota is not None
            self.masks[j] = _column_mask(e, iota, *p.cols(j), p.wo)


def _column_mask(e: TileEmitter, iota: SSAValue, a: int, b: int, wo: int):
    """(window column in [a, b), not in it) as [wo, c] masks."""
    ty = iota.type
    assert isinstance(ty, VectorType)
    bounds = []
    if a > 0:
        bounds.append(("sge", "slt", splat_vector(e, a, ty)))
    if b < wo:
        bounds.append(("slt", "sge", splat_vector(e, b, ty)))
    inside = [e.op(tpu.CmpOp(pred, iota, at)) for pred, _, at in bounds]
    outside = [e.op(tpu.CmpOp(pred, iota, at)) for _, pred, at in bounds]
    if len(bounds) == 2:
        return e.op(arith.AndIOp(*inside)), e.op(arith.OrIOp(*outside))
    return inside[0], outside[0]


class _SelectScatter(HaloKernel):
    """The kernel of one select_and_scatter (module docstring). HaloKernel's operand
    slots hold the operand; its result slots ([ho, wo, c]: the window positions') and
    `out` (the HBM buffer of that shape) are the source's; the result has its own."""

    def __init__(self, ctx: LoweringContext, op: hlo.SelectAndScatterOp, p: Pooling):
        g = HaloGeometry(
            p.n,
            p.h,
            p.w,
            p.c,
            p.kh,
            p.kw,
            p.c,
            p.ho,
            p.wo,
            p.pads,
            p.strides,
            (1, 1),
            p.elem,
            p.src,
        )
        super().__init__(ctx, op.operand, op.source, g)
        self.op, self.p = op, p
        e = self.e
        self.res = reshape_view(e, ctx.buffers[op.result], (p.n, p.h, p.w, p.c), "sas_res")
        self.rbuf = self.alloc((2, p.h, p.w, p.c), p.src, "sas_rv")
        self.acc = self.alloc(p.slot, p.acc, "sas_acc")
        self.rsems = e.op(tpu.AllocOp(tpu.DMASemaphoreType([2])), "sas_rsems")
        # Not in the IR: `elementwise` reads only its kind and its result's element type.
        self.add = hlo.AddOp.create(result_types=[TensorType(p.acc, [1])])
        self.k: _Constants | None = None

    def _init(self) -> SSAValue:
        """The init value, DMA'd to VMEM and loaded (its DMA waited for)."""
        e, p = self.e, self.p
        init = self.alloc((), p.src, "sas_init")
        self.own.append(init)
        sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), "sas_init_sem")
        e.op(tpu.DMAStartOp(self.ctx.buffers[self.op.init_value], init, recv_sem=sem))
        e.op(tpu.DMAWaitOp(sem, init))
        return e.op(tpu.LoadOp(init, [], VectorType(p.src, ())), "sas_initv")

    def _source(self, b: TileEmitter, image: Ix, start: bool) -> None:
        """Start (or wait for) the DMA of `image`'s source into its slot."""
        g = self.g
        slot = ix_rem(b, image, 2)
        dst, sem = self._o_slot(b, slot), self._sem(b, self.osems, slot)
        if not start:
            b.op(tpu.DMAWaitOp(sem, dst))
            return
        shape = (g.ho, g.wo, g.o)
        src = self._slice(b, self.out, [image, 0, 0, 0], shape, g.out_elem, HBM, "sas_src")
        b.op(tpu.DMAStartOp(src, dst, recv_sem=sem))

    def _r_slot(self, b: TileEmitter, slot: Ix) -> SSAValue:
        p = self.p
        shape = (p.h, p.w, p.c)
        return self._slice(b, self.rbuf, [slot, 0, 0, 0], shape, p.src, VMEM, "sas_rslot")

    def _wait_result(self, b: TileEmitter, image: Ix) -> None:
        self._wait_slot(b, image, self.rsems, self._r_slot)

    def emit(self) -> None:
        p, e = self.p, self.e
        self._fetch(e, 0)
        self._source(e, 0, start=True)
        self.k = _Constants(e, p, self._init())
        rows = reshape_view(e, self.acc, (p.hp, p.wq * p.strides[1], p.c), "sas_acc_rows")
        inner = (p.pads[0][0], p.pads[1][0], 0)
        acc_in = self._slice(e, rows, inner, (p.h, p.w, p.c), p.acc, VMEM, "sas_acc_in")
        b, n = e.loop(p.n, "img") if p.n > 1 else (e, 0)
        slot = ix_rem(b, n, 2)
        xslot, x_in = self._x_slot(b, slot)
        b.op(tpu.DMAWaitOp(self._sem(b, self.xsems, slot), x_in))
        self._source(b, n, start=False)

        def prefetch(t: TileEmitter) -> None:
            self._fetch(t, ix_add(t, n, 1))
            self._source(t, ix_add(t, n, 1), start=True)

        emit_if(b, ix_cmp(b, n, "slt", p.n - 1), prefetch)
        emit_if(b, ix_cmp(b, n, "sge", 2), lambda t: self._wait_result(t, n))
        b.op(tpu.StoreOp(self.k.acc_init, self.acc, [b.index(0)] * 3))
        sslot = self._o_slot(b, slot)
        for first, count, valid in p.row_groups():
            self._rows(b, first, count, valid, xslot, sslot)
        self._finish(b, n, slot, acc_in)
        if p.n > 1:
            b.op(scf.YieldOp())
        for image in range(max(p.n - 2, 0), p.n):
            self._wait_result(e, image)
        for buf in (self.xbuf, self.obuf, self.rbuf, self.acc, *self.own):
            e.op(tpu.DeallocOp(buf))

    def _finish(self, b: TileEmitter, n: Ix, slot: Ix, acc_in: SSAValue) -> None:
        """The accumulator's interior rounded once into a result slot, DMA'd out."""
        p = self.p
        zeros = [b.index(0)] * 3
        total = b.op(tpu.LoadOp(acc_in, zeros, VectorType(p.acc, (p.h, p.w, p.c))), "sas_total")
        rslot = self._r_slot(b, slot)
        b.op(tpu.StoreOp(convert_vector(b, total, p.src), rslot, zeros))
        shape = (p.h, p.w, p.c)
        dst = self._slice(b, self.res, [n, 0, 0, 0], shape, p.src, HBM, "sas_rimg")
        b.op(tpu.DMAStartOp(rslot, dst, recv_sem=self._sem(b, self.rsems, slot)))

    def _rows(self, b: TileEmitter, first: int, count: int, valid, xslot, sslot) -> None:
        """Output rows first .. first + count - 1 (an `scf.for` if several)."""
        p = self.p
        r, iv = b.loop(count, "oh") if count > 1 else (b, 0)
        oh = ix_add(r, iv, first)
        at = [ix_value(r, oh), r.index(0), r.index(0)]
        src = r.op(tpu.LoadOp(sslot, at, VectorType(p.src, (p.wo, p.c))), "sas_g")
        src = convert_vector(r, src, p.acc)
        chosen = self._select(r, oh, valid, xslot)
        self._scatter(r, oh, valid, chosen, src)
        if count > 1:
            r.op(scf.YieldOp())

    def _select(self, r: TileEmitter, oh: Ix, valid, xslot: SSAValue) -> SSAValue:
        """The row's `chosen`: the index of each window's taken offset (-1: none), by
        `Pooling.steps` (their ops: `Pooling.step_ops`)."""
        k = self.k
        assert k is not None
        pred = taken_compare(self.p)
        best = chosen = none = None
        for s in self.p.steps(valid):
            x = self.tap(r, xslot, oh, s.i, s.j)
            ok, not_ok = k.masks.get(s.j, (None, None))
            at = k.index[s.index]
            if s.first:
                best, none = x, not_ok
                chosen = r.op(tpu.SelectOp(ok, at, k.none)) if s.masked else at
                continue
            assert best is not None and chosen is not None
            take = r.op(tpu.CmpOp(pred, best, x), "sas_take")
            if not s.have_all:
                take = r.op(arith.OrIOp(none, take))
            if s.masked:
                take = r.op(arith.AndIOp(ok, take))
            chosen = r.op(tpu.SelectOp(take, at, chosen), "sas_chosen")
            if not s.last:
                best = r.op(tpu.SelectOp(take, x, best), "sas_best")
            if not s.have_all and s.masked and not s.last:
                none = r.op(arith.AndIOp(none, not_ok))
        assert chosen is not None
        return chosen

    def _scatter(self, r: TileEmitter, oh: Ix, valid, chosen: SSAValue, src: SSAValue) -> None:
        """Each offset's windows that chose it add their source to the accumulator,
        column offsets in reverse (module docstring)."""
        p, k = self.p, self.k
        assert k is not None
        sh, sw = p.strides
        vty = VectorType(p.acc, (p.wo, p.c))
        for i in valid:
            row = ix_value(r, ix_add(r, ix_mul(r, oh, sh), i))
            for j in reversed(p.columns()):
                hit = r.op(tpu.CmpOp("eq", chosen, k.index[i * p.kw + j]))
                part = r.op(tpu.SelectOp(hit, src, k.identity))
                q, rem = divmod(j, sw)
                at = [row, r.index(q), r.index(rem * p.c)]
                old = r.op(tpu.LoadOp(self.acc, at, vty), "sas_acc_tap")
                r.op(tpu.StoreOp(elementwise(r, self.add, [old, part]), self.acc, at))


__all__ = ["check", "lower", "takes"]
