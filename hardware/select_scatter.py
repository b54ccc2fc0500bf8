"""
`hlo.select_and_scatter` as level-S ops that lower (issue 15 item 3): one definition for
both levels. `lower-to-tpu` rewrites the op into `expansion`'s ops before the kernel is
built (lowering/windows.py `SelectAndScatterToSlices`), and level S charges the op what
those ops cost (`cost.CostModel.op_cost`), so that the two levels time the same work.

The expansion is level S's semantics (interpreter/hlo_windows.py `select_and_scatter`),
op for op:

* Select, per window offset in row-major order, on arrays of the window positions' shape
  (the source's): the offset's element of every window is one strided `hlo.slice` of the
  operand padded with zeros; a valid mask (`true` padded with `false`) says which are not
  padding. A window takes the offset's element where it is valid and either nothing was
  taken yet or the select does not keep the best so far (`GE`: best >= element, so a
  tie keeps the first; `GT`: best > element, a tie takes the last; a NaN on either side
  makes the comparison false, so the element is taken, as level S does). The taken
  offset's row-major index is kept in an i32 `chosen` (-1: the window is all padding).
* Scatter, per offset in REVERSE row-major order, on arrays of the operand's shape: the
  windows that chose the offset give their source element (the others `-0.0`, the
  identity of IEEE addition: `x + -0.0` is `x` for every x, -0.0 and NaN included; 0 for
  integers), placed at their operand position by one `hlo.pad` (interior padding
  stride - 1, low padding offset - low, negative edges cutting what falls in the
  padding), added to the result, which starts as `init`. An element chosen by several
  windows (stride < window) receives them one offset at a time; windows later in
  row-major order reach it through smaller offsets, so the reverse walk adds them in
  row-major window order, as level S's `np.add.at`. Where both addends are NaN, IEEE
  lets the sum be either, and neither level pins which (numpy's loops pick by index path
  and by position in the vector): the result is a NaN there, its payload unspecified.
  bf16/f16 sources accumulate in f32 (`accumulation_type`) and are rounded once at the
  end, as level S.

The select works on the operand's element type; a complex operand or source (no order,
and complex adds are split into parts before this rewrite) has no expansion.

The expansion moves (window size) x (operand) bytes through HBM. Channels-last poolings
(the max-pool gradients of CNNs) are instead one kernel that reads the operand and the
source once and writes the result once (lowering/select_scatter_kernel.py). `Pooling` is
that kernel's plan, here so that both levels read it: the lowering emits its steps, and
level S charges the vector work and bytes `Pooling` counts for them
(hardware/kernel.py `select_scatter_time`); an op it does not take keeps the expansion
at both levels.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from shardc.dialects import hlo
from shardc.dialects.hlo import (
    BOOL,
    COMPLEX,
    FLOAT,
    INT,
    accumulation_type,
    element_kind,
    is_unsigned,
)
from shardc.dialects.sizes import element_bytes
from shardc.hardware.vmem import halo_budget, halo_slot, halo_spatial
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerType, TensorType, i1, i32
from xdsl.ir import Attribute, Block, Operation, SSAValue


def expands(op: hlo.SelectAndScatterOp) -> bool:
    """Whether `expansion` applies: neither the operand nor the source is complex."""
    types = (op.operand.type, op.source.type)
    return all(element_kind(_tensor(t).element_type) != COMPLEX for t in types)


def _tensor(ty: Attribute) -> TensorType:
    assert isinstance(ty, TensorType)
    return ty


class _Builder:
    """The ops of an expansion, in order, each at `location`."""

    def __init__(self, location) -> None:
        self.ops: list[Operation] = []
        self.location = location
        self.indices: dict[int, SSAValue] = {}

    def index(self, index: int, shape: Sequence[int]) -> SSAValue:
        """Offset `index` broadcast to the windows' shape, made once for both walks."""
        if index not in self.indices:
            self.indices[index] = self.splat(self.scalar(i32, index), shape)
        return self.indices[index]

    def add(self, op: Operation) -> SSAValue:
        op.location = self.location
        self.ops.append(op)
        return op.results[0]

    def scalar(self, elem: Attribute, value: float | int | bool) -> SSAValue:
        ty = TensorType(elem, [])
        return self.add(hlo.ConstantOp(DenseIntOrFPElementsAttr.from_list(ty, [value])))

    def splat(self, scalar: SSAValue, shape: Sequence[int]) -> SSAValue:
        elem = _tensor(scalar.type).element_type
        return self.add(hlo.BroadcastOp(scalar, [], TensorType(elem, shape)))

    def convert(self, v: SSAValue, elem: Attribute) -> SSAValue:
        ty = _tensor(v.type)
        if ty.element_type == elem:
            return v
        return self.add(hlo.ConvertOp(v, TensorType(elem, ty.get_shape())))


def _offsets(op: hlo.SelectAndScatterOp) -> list[tuple[int, ...]]:
    return list(itertools.product(*(range(w) for w in op.window)))


def _select(b: _Builder, op: hlo.SelectAndScatterOp, x: SSAValue) -> SSAValue:
    """The i32 row-major index of each window's selected offset (-1: none)."""
    shape = _tensor(op.source.type).get_shape()
    elem = _tensor(x.type).element_type
    padded = any(op.low) or any(op.high)
    zeros = [0] * len(shape)
    valid = None
    if padded:
        x = b.add(hlo.PadOp(x, b.scalar(elem, 0), op.low, op.high, zeros))
        true = b.splat(b.scalar(i1, True), _tensor(op.operand.type).get_shape())
        valid = b.add(hlo.PadOp(true, b.scalar(i1, False), op.low, op.high, zeros))
    keep = "GE" if op.select.data == "GE" else "GT"
    best = have = chosen = None  # None: nothing taken yet anywhere
    offsets = _offsets(op)
    last = len(offsets) - 1
    for index, offset in enumerate(offsets):
        limit = [k + s * (n - 1) + 1 for k, s, n in zip(offset, op.strides, shape, strict=True)]
        cand = b.add(hlo.SliceOp(x, offset, limit, list(op.strides)))
        ok = b.add(hlo.SliceOp(valid, offset, limit, list(op.strides))) if valid else None
        at = b.index(index, shape)
        if have is None:
            # Nothing taken yet: every valid element is; where none is, `have` stays
            # false, so `best` there is never compared.
            best = cand
            chosen = (
                at if ok is None else b.add(hlo.SelectOp(ok, at, b.splat(b.scalar(i32, -1), shape)))
            )
            have = ok if ok is not None else "all"
            continue
        assert best is not None and chosen is not None
        take = b.add(hlo.NotOp(b.add(hlo.CompareOp(keep, best, cand))))
        if have != "all":
            assert isinstance(have, SSAValue)
            take = b.add(hlo.OrOp(b.add(hlo.NotOp(have)), take))
        if ok is not None:
            take = b.add(hlo.AndOp(ok, take))
        chosen = b.add(hlo.SelectOp(take, at, chosen))
        if index == last:
            break  # no later offset reads `best` or `have`
        best = b.add(hlo.SelectOp(take, cand, best))
        if have != "all":
            assert isinstance(have, SSAValue)
            have = b.add(hlo.OrOp(have, take))
    assert isinstance(chosen, SSAValue)
    return chosen


def identity(elem: Attribute) -> float | int | bool:
    """What adding leaves every value of `elem` unchanged with (see the module docstring)."""
    kind = element_kind(elem)
    if kind == FLOAT:
        return -0.0
    return False if kind == BOOL else 0


def _scatter(
    b: _Builder, op: hlo.SelectAndScatterOp, chosen: SSAValue, source: SSAValue, init: SSAValue
) -> SSAValue:
    """The result (in the accumulation type): `init` plus, per offset in reverse row-major
    order, the source of the windows that chose it, placed at its operand position."""
    out = _tensor(op.operand.type).get_shape()
    shape = _tensor(op.source.type).get_shape()
    elem = _tensor(init.type).element_type
    total = b.splat(init, out)
    zero = b.scalar(elem, identity(elem))
    zeros = b.splat(zero, shape)
    combine = hlo.OrOp if element_kind(elem) == BOOL else hlo.AddOp
    offsets = _offsets(op)
    for index in reversed(range(len(offsets))):
        offset = offsets[index]
        hit = b.add(hlo.CompareOp("EQ", chosen, b.index(index, shape)))
        part = b.add(hlo.SelectOp(hit, source, zeros))
        low = [k - lo for k, lo in zip(offset, op.low, strict=True)]
        high = [
            size - at - s * (n - 1) - 1
            for size, at, s, n in zip(out, low, op.strides, shape, strict=True)
        ]
        interior = [s - 1 for s in op.strides]
        placed = b.add(hlo.PadOp(part, zero, low, high, interior))
        total = b.add(combine(total, placed))
    return total


def expansion(
    op: hlo.SelectAndScatterOp, operand: SSAValue, source: SSAValue, init: SSAValue
) -> tuple[list[Operation], SSAValue]:
    """
    The ops computing `op` from `operand`, `source` and `init` (the op's own, or stand-ins
    of their types for costing), in order, and the value that replaces its result.
    """
    b = _Builder(op.location)
    res = _tensor(op.result.type)
    if 0 in res.get_shape() or 0 in _tensor(op.source.type).get_shape():
        return b.ops, b.splat(init, res.get_shape())
    acc = accumulation_type(res.element_type)
    chosen = _select(b, op, operand)
    total = _scatter(b, op, chosen, b.convert(source, acc), b.convert(init, acc))
    return b.ops, b.convert(total, res.element_type)


def standalone_expansion(op: hlo.SelectAndScatterOp) -> list[Operation]:
    """`expansion` on stand-ins of `op`'s operands (block arguments of a detached block),
    so that costing it leaves the program's use lists alone."""
    block = Block(arg_types=[v.type for v in op.operands])
    ops, _ = expansion(op, *block.args)
    return ops


# The one kernel (lowering/select_scatter_kernel.py) ---------------------------------------


@dataclass(frozen=True)
class Step:
    """One window offset of an output row's select, in row-major order."""

    i: int
    j: int
    index: int
    """The offset's row-major index in the whole window: what `chosen` holds."""
    first: bool
    """The row's first offset: the candidate is the best so far, nothing is compared."""
    masked: bool
    """Some window positions of the row read padding at this column offset."""
    have_all: bool
    """Every window of the row has taken an offset before this one."""
    last: bool
    """The row's last offset: nothing reads the best so far after it."""


@dataclass(frozen=True)
class VectorWork:
    """Vector work of a part of the kernel: element operations on the vector unit and
    bytes loaded from or stored to VMEM."""

    ops: int = 0
    vmem: int = 0

    def __add__(self, other: VectorWork) -> VectorWork:
        return VectorWork(self.ops + other.ops, self.vmem + other.vmem)

    def __mul__(self, k: int) -> VectorWork:
        return VectorWork(self.ops * k, self.vmem * k)


@dataclass(frozen=True)
class Pooling:
    """
    A channels-last select_and_scatter as lowering/select_scatter_kernel.py computes it:
    operand [n, h, w, c] (a 1-D one has h = kh = ho = 1), window [kh, kw] with strides
    and padding on the spatial dimensions, source [n, ho, wo, c].

    Per image, the operand lies in a VMEM slot [hp, wq, sw * c] (the padded image; the
    width stride is a reshape of the slot, as lowering/halo.py's), and the result
    accumulates in one of the same shape in `acc`. Per output row (`row_groups`: the
    rows whose windows read the same rows of padding share one loop) the select walks
    `steps`, each a [wo, c] load of the slot and a few vector ops; then every offset,
    row by row and column offsets in reverse, adds the source row where it was chosen
    to the accumulator's [wo, c] at that offset (load, add, store): the reverse column
    walk and the row loop add each element's windows in row-major window order, as the
    expansion and level S. Padding is never selected: rows of it are left out of the
    steps, columns of it masked (`cols`).
    """

    n: int
    h: int
    w: int
    c: int
    kh: int
    kw: int
    ho: int
    wo: int
    pads: tuple[tuple[int, int], tuple[int, int]]
    strides: tuple[int, int]
    elem: Attribute
    """The operand's element type (the select compares in it)."""
    src: Attribute
    """The source's and the result's."""
    select: str

    @property
    def hp(self) -> int:
        """Rows of the slots: the padded height (`vmem.halo_slot`)."""
        return halo_slot(self.h, self.w, self.pads, self.strides)[0]

    @property
    def wq(self) -> int:
        """Width of the slots in units of the width stride (`vmem.halo_slot`)."""
        return halo_slot(self.h, self.w, self.pads, self.strides)[1]

    @property
    def acc(self) -> Attribute:
        return accumulation_type(self.src)

    @property
    def slot(self) -> tuple[int, int, int]:
        """The shape of an operand slot and of the accumulator."""
        return (self.hp, self.wq, self.strides[1] * self.c)

    @property
    def row(self) -> int:
        """Elements of one [wo, c] vector."""
        return self.wo * self.c

    def image_bytes(self) -> tuple[int, int, int]:
        """HBM bytes per image: operand, source, result."""
        img = self.h * self.w * self.c
        return (
            img * element_bytes(self.elem),
            self.ho * self.wo * self.c * element_bytes(self.src),
            img * element_bytes(self.src),
        )

    def slots_bytes(self) -> int:
        """VMEM: two operand slots, two source slots, the accumulator, two result slots."""
        x, src, res = self.image_bytes()
        slot = math.prod(self.slot)
        return (
            2 * slot * element_bytes(self.elem) + 2 * src + slot * element_bytes(self.acc) + 2 * res
        )

    def valid_rows(self, oh: int) -> tuple[int, ...]:
        """The window rows i of output row `oh` that are not padding."""
        lo = self.pads[0][0]
        return tuple(i for i in range(self.kh) if lo <= oh * self.strides[0] + i < lo + self.h)

    def row_groups(self) -> list[tuple[int, int, tuple[int, ...]]]:
        """(first output row, rows, their valid window rows): consecutive output rows
        with the same valid window rows, in order; rows whose windows read only padding
        left out (all of them if every column does)."""
        groups: list[tuple[int, int, tuple[int, ...]]] = []
        if not self.columns():
            return groups  # every window column is padding: nothing is selected
        for oh in range(self.ho):
            rows = self.valid_rows(oh)
            if groups and groups[-1][2] == rows and groups[-1][0] + groups[-1][1] == oh:
                first, count, _ = groups[-1]
                groups[-1] = (first, count + 1, rows)
            elif rows:
                groups.append((oh, 1, rows))
        return groups

    def cols(self, j: int) -> tuple[int, int]:
        """The window columns [a, b) whose column offset j is not padding."""
        lo, sw = self.pads[1][0], self.strides[1]
        a = max(0, -(-(lo - j) // sw))
        b = min(self.wo, -(-(lo + self.w - j) // sw))
        return a, max(a, b)

    def masked(self, j: int) -> bool:
        return self.cols(j) != (0, self.wo)

    def columns(self) -> list[int]:
        """The column offsets some window takes an element at (not only padding)."""
        return [j for j in range(self.kw) if self.cols(j)[0] < self.cols(j)[1]]

    def steps(self, rows: Sequence[int]) -> list[Step]:
        """The select's offsets of an output row whose valid window rows are `rows`."""
        offsets = [(i, j) for i in rows for j in self.columns()]
        out: list[Step] = []
        have_all = False
        for k, (i, j) in enumerate(offsets):
            masked = self.masked(j)
            out.append(Step(i, j, i * self.kw + j, k == 0, masked, have_all, k == len(offsets) - 1))
            have_all = have_all or not masked
        return out

    # What the kernel computes (hardware/kernel.py times it) -----------------------------

    def step_ops(self, s: Step) -> int:
        """Vector ops of one select step (lowering/select_scatter_kernel.py `_select`)."""
        if s.first:
            return int(s.masked)  # chosen: the offset where valid, else -1
        none = not s.have_all
        update = none and s.masked and not s.last
        # "not kept" compare, or with "none taken yet", and with valid, chosen, best
        return 1 + int(none) + int(s.masked) + 1 + int(not s.last) + int(update)

    def row_work(self, rows: Sequence[int]) -> VectorWork:
        """One output row: the source row, the select, the scatter."""
        eb, sb, ab = (element_bytes(t) for t in (self.elem, self.src, self.acc))
        steps = self.steps(rows)
        work = VectorWork(self.row * int(self.src != self.acc), self.row * sb)
        for s in steps:
            work += VectorWork(self.row * self.step_ops(s), self.row * eb)
        # per offset: compare with chosen, select the source, add; the accumulator's
        # [wo, c] loaded and stored
        return work + VectorWork(3 * self.row, 2 * self.row * ab) * len(steps)

    def image_work(self) -> VectorWork:
        """One image: the accumulator set to init, the rows, the result rounded."""
        img = self.h * self.w * self.c
        sb, ab = element_bytes(self.src), element_bytes(self.acc)
        work = VectorWork(0, math.prod(self.slot) * ab)
        for _, count, rows in self.row_groups():
            work += self.row_work(rows) * count
        return work + VectorWork(img * int(self.src != self.acc), img * (ab + sb))

    def setup_work(self) -> VectorWork:
        """Before the first image: init broadcast to the accumulator's shape, the
        constant vectors (-0.0, each offset's index, -1) and the column masks."""
        masked = [j for j in self.columns() if self.masked(j)]
        splats = 1 + self.kh * len(self.columns()) + int(bool(masked))
        for j in masked:
            a, b = self.cols(j)
            sides = int(a > 0) + int(b < self.wo)
            splats += 5 * sides - 2  # bounds, valid and not valid
        init = VectorWork(int(self.src != self.acc) + math.prod(self.slot), element_bytes(self.src))
        return init + VectorWork(splats * self.row, 0)


def taken_compare(p: Pooling) -> str:
    """The `tpu.cmp` predicate of "the select does not keep the best": not (best >= x)
    for GE (unordered: a NaN on either side takes x), not (best > x) for GT."""
    kind = element_kind(p.elem)
    if kind == FLOAT or is_unsigned(p.elem):
        return "ult" if p.select == "GE" else "ule"
    return "slt" if p.select == "GE" else "sle"


def _number(elem: Attribute) -> bool:
    """A float, or an integer of at least a byte (sub-byte integers keep the expansion:
    VMEM holds them packed, which a shifted load does not address)."""
    kind = element_kind(elem)
    if kind == INT:
        return isinstance(elem, IntegerType) and elem.width.data >= 8
    return kind == FLOAT


def pooling(op: hlo.SelectAndScatterOp) -> Pooling | None:
    """The kernel's view of `op`: a channels-last pooling of numbers (see `Pooling`),
    operand [n, h, w, c] / [n, w, c] / [n, w] with its window, strides and padding (>= 0)
    on the spatial dimensions only; None for the others."""
    x, src = _tensor(op.operand.type), _tensor(op.source.type)
    rank = x.get_num_dims()
    spatial = halo_spatial(op.window, op.strides, op.low, op.high)
    if spatial is None or not (_number(x.element_type) and _number(src.element_type)):
        return None
    if 0 in x.get_shape() or 0 in src.get_shape():
        return None
    shape, out = x.get_shape(), src.get_shape()
    hd, wd = ([None] if len(spatial) == 1 else [spatial[0]]) + [spatial[-1]]

    def at(values: Sequence[int], d: int | None, fill: int) -> int:
        return fill if d is None else values[d]

    return Pooling(
        shape[0],
        at(shape, hd, 1),
        shape[wd],
        shape[-1] if rank > 2 else 1,
        at(op.window, hd, 1),
        op.window[wd],
        at(out, hd, 1),
        out[wd],
        ((at(op.low, hd, 0), at(op.high, hd, 0)), (op.low[wd], op.high[wd])),
        (at(op.strides, hd, 1), op.strides[wd]),
        x.element_type,
        src.element_type,
        op.select.data,
    )


def kernel_pooling(op: hlo.SelectAndScatterOp, vmem_bytes: int) -> Pooling | None:
    """`pooling`, if its slots fit half of `vmem_bytes` (as the halo kernels': the
    other half for what runs beside it); None: the op keeps the expansion."""
    p = pooling(op)
    return p if p is not None and p.slots_bytes() <= halo_budget(vmem_bytes) else None
