"""
`hlo.while` and `hlo.case` lowered to tpu (part of `lower-to-tpu`, see
lowering/lower_to_tpu.py): structured control flow of the kernel (`scf.for`, `scf.while`,
`scf.if`) around the region's ops, each lowered as at the top level (compute loops, DMA
programs, collectives with their ring steps), so a scan with a collective in its body is
one kernel looping over its ring.

while
-----
* Loop-carried values live in the while's result buffers (HBM): the inputs are DMA'd there
  first (all in flight, then waited), and both regions' block arguments are those buffers.
  A value the body returns unchanged at its place (a scan's stacked weights) stays in its
  input's buffer, read there; its result is a copy made only if something uses it.
* A carried value the body makes (at its top level) and returns once is computed straight
  into its carried buffer when nothing in the body reads the old value after (or while)
  the new one is written (an elementwise op making it may read it: it reads each block
  before writing that block): no copy per iteration. Otherwise it has its own buffer and is
  DMA'd into the carried one at the end of the body, after every read of the old value.
  A block argument returned at another position (a swap) is staged through VMEM first
  (read out before any carried buffer is overwritten); too large for VMEM is an error
  naming the op, the bytes and the capacity.
* A static trip count (`cost.while_trip_count`: JAX's fori_loop and scan, the counter a
  carried value starting at a constant, compared with a constant, stepped by a constant)
  becomes `scf.for` over the trips; the condition is never evaluated (level S's cost
  model charges it, level T does not run it). The counter stays a carried value (the
  body may read it: a dynamic_slice of the scan's step).
* Otherwise `scf.while`: its `before` region lowers the condition, DMAs its i1 result
  from HBM into SMEM, reads it (`memref.load`) and gives it to `scf.condition`; its
  `after` region is the body.

case
----
A constant index (an `hlo.constant`) picks its branch at compile time: only that branch
is lowered. Otherwise the index (a rank-0 i32 in HBM) is DMA'd into SMEM and read; an index out of [0, n) takes
the last branch (StableHLO), as one unsigned compare and select. Then an `scf.if` chain
over the branches; each branch computes a value it makes and returns into the case's
result buffer directly, and copies one it does not make (an outer value, or one returned
twice).

Collectives started outside a region do not place ring steps inside it (a loop body runs
many times; a branch may not run): their steps go before their `done` as usual.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping, Sequence
from contextlib import contextmanager
from typing import Protocol

from shardc.dialects import collective, hlo, tpu
from shardc.dialects.syntax import splat_element
from shardc.dialects.tpu import MemorySpace, memref_type
from shardc.hardware.cost import while_trip_count
from shardc.lowering.context import Target
from shardc.lowering.emit import VMEM, Emitter, for_steps, memref_shape, nbytes
from shardc.lowering.movement import _copies as copies
from shardc.lowering.ring_steps import Overlap
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType, UnitAttr, i32
from xdsl.ir import Block, Operation, Region, SSAValue

_OPS = (hlo.WhileOp, hlo.CaseOp)
_MAPS = (
    hlo.BinaryElementwiseOp,
    hlo.UnaryElementwiseOp,
    hlo.CompareOp,
    hlo.SelectOp,
    hlo.ConvertOp,
)
"""Ops `compute` lowers as maps: every operand block is the result's."""


class RegionLowering(Protocol):
    """What lowering a region needs of the kernel: `KernelLowering`."""

    @property
    def target(self) -> Target: ...

    @property
    def emitter(self) -> Emitter: ...

    @property
    def buffers(self) -> MutableMapping[SSAValue, SSAValue]: ...

    @property
    def overlap(self) -> Overlap | None: ...

    def lower_located(self, op: Operation) -> None:
        """Lower `op` at the emitter's end; the new ops take its location."""
        ...


def handles(op: Operation) -> bool:
    """Whether this module lowers ops of this kind."""
    return isinstance(op, _OPS)


def region_ops(op: Operation) -> list[Operation]:
    """The ops inside `op`'s regions, nested ones too, without the `hlo.return`s."""
    return [o for r in op.regions for o in r.walk() if not isinstance(o, hlo.ReturnOp)]


def lower(k: RegionLowering, op: Operation) -> None:
    if isinstance(op, hlo.WhileOp):
        _lower_while(k, op)
    else:
        assert isinstance(op, hlo.CaseOp)
        _lower_case(k, op)


# Regions -------------------------------------------------------------------------------


@contextmanager
def _inside(k: RegionLowering, block: Block) -> Iterator[Emitter]:
    """Emit into `block` (the kernel's emitter moved there) with no pending ring steps
    placed inside: a region may run many times, or not at all."""
    e = k.emitter
    outer = e.block
    overlap = k.overlap
    pending = None
    if overlap is not None:
        pending, overlap.rings = overlap.rings, {}
    e.block = block
    try:
        yield e
    finally:
        e.block = outer
        if overlap is not None and pending is not None:
            overlap.rings = pending | overlap.rings


def _lower_block(k: RegionLowering, block: Block, loop: bool = False) -> None:
    """
    Lower the ops of a region's block, not its `hlo.return`. In a loop body (`loop`), a
    `tpu.barrier` over all devices goes before the first op with a collective: a device
    done with an iteration must not push the next iteration's ring into a neighbour
    still reading its buffers in this one (the kernel's first barrier orders only the
    first iteration).
    """
    barrier = loop
    for op in block.ops:
        if isinstance(op, hlo.ReturnOp):
            continue
        if barrier and any(isinstance(o, collective.CollectiveOp) for o in op.walk()):
            k.emitter.op(tpu.BarrierOp())
            barrier = False
        k.lower_located(op)


def _returned(block: Block) -> list[SSAValue]:
    ret = block.last_op
    assert isinstance(ret, hlo.ReturnOp)
    return list(ret.values)


def _reads_after(block: Block, value: SSAValue, first: Operation, position: int) -> bool:
    """Whether `value` is read by `first` or an op after it in `block` (nested uses too),
    counting the block's `hlo.return` unless it returns `value` at `position` (its own
    place: no read)."""
    for use in value.uses:
        user = block.find_ancestor_op_in_block(use.operation)
        if user is None or (isinstance(user, hlo.ReturnOp) and use.index == position):
            continue
        if user is first or not user.is_before_in_block(first):
            return True
    return False


# while ---------------------------------------------------------------------------------


def _lower_while(k: RegionLowering, op: hlo.WhileOp) -> None:
    e = k.emitter
    results = [k.buffers[r] for r in op.outputs]
    # A value the body passes through unchanged (a scan's stacked weights) is read in
    # place from its input's buffer; its result is copied only if something uses it.
    body_args, returned = op.body.block.args, _returned(op.body.block)
    carried = [
        k.buffers[v] if returned[i] is body_args[i] else r
        for i, (v, r) in enumerate(zip(op.inputs, results, strict=True))
    ]
    needed = [
        (k.buffers[v], r)
        for v, r, c, out in zip(op.inputs, results, carried, op.outputs, strict=True)
        if k.buffers[v] != r and (c == r or out.uses)
    ]
    copies(e, needed, "while_init")
    for region in (op.cond, op.body):
        for a, c in zip(region.block.args, carried, strict=True):
            k.buffers[a] = c
    in_place = _in_place(op)
    for i, v in in_place.items():
        k.buffers[v] = carried[i]
    trips = while_trip_count(op)
    if trips is not None:
        if trips > 0:
            body, _ = for_steps(e, 0, trips, "trip")
            _loop_body(k, op, body.block, carried, in_place)
            body.op(scf.YieldOp())
        return
    before, after = Block(), Block()
    with _inside(k, before) as b:
        _lower_block(k, op.cond.block, loop=True)
        (p,) = _returned(op.cond.block)
        b.op(scf.ConditionOp(_scalar(b, k.buffers[p], "while_pred")))
    _loop_body(k, op, after, carried, in_place)
    after.add_op(scf.YieldOp())
    e.op(scf.WhileOp([], [], Region(before), Region(after)))


def _in_place(op: hlo.WhileOp) -> dict[int, SSAValue]:
    """Carried position -> the body value computed straight into its buffer (docstring)."""
    body = op.body.block
    out: dict[int, SSAValue] = {}
    returned = _returned(body)
    for i, v in enumerate(returned):
        owner = v.owner
        if not isinstance(owner, Operation) or owner.parent_block() is not body:
            continue
        if returned.count(v) != 1:
            continue
        later = owner.next_op
        assert later is not None
        # An elementwise op reads each block before writing the same block: in place is
        # safe even when it reads the old value itself.
        first = later if isinstance(owner, _MAPS) else owner
        if _reads_after(body, body.args[i], first, i):
            continue
        out[i] = v
    return out


def _loop_body(
    k: RegionLowering,
    op: hlo.WhileOp,
    block: Block,
    carried: Sequence[SSAValue],
    in_place: dict[int, SSAValue],
) -> None:
    """The body's ops into `block`, then its new carried values into their buffers."""
    body = op.body.block
    with _inside(k, block) as e:
        _lower_block(k, body, loop=True)
        returned = _returned(body)
        swaps = [
            (i, v) for i, v in enumerate(returned) if v in body.args and k.buffers[v] != carried[i]
        ]
        staged = _stage_swaps(k, op, e, [k.buffers[v] for _, v in swaps])
        pairs = [
            (k.buffers[v], carried[i])
            for i, v in enumerate(returned)
            if v not in body.args and k.buffers[v] != carried[i]
        ]
        pairs += [(s, carried[i]) for (i, _), s in zip(swaps, staged, strict=True)]
        copies(e, pairs, "while_carry")
        for s in staged:
            e.op(tpu.DeallocOp(s))


def _stage_swaps(
    k: RegionLowering, op: Operation, e: Emitter, sources: Sequence[SSAValue]
) -> list[SSAValue]:
    """Carried buffers returned at another position, copied into VMEM (read before any
    carried buffer is overwritten)."""
    if not sources:
        return []
    sizes = [_ref_bytes(s) for s in sources]
    k.target.check_vmem(op, f"{op.name}'s swapped carried values (staged in VMEM)", sum(sizes))
    staged = []
    for s in sources:
        ty = s.type
        assert isinstance(ty, MemRefType)
        staged.append(e.op(tpu.AllocOp(memref_type(memref_shape(s), ty.element_type, VMEM))))
    copies(e, list(zip(sources, staged, strict=True)), "while_swap")
    return staged


def _ref_bytes(ref: SSAValue) -> int:
    ty = ref.type
    assert isinstance(ty, MemRefType)
    return nbytes(memref_shape(ref), ty.element_type)


def _scalar(e: Emitter, buf: SSAValue, hint: str) -> SSAValue:
    """A rank-0 HBM tensor read as a scalar: DMA'd into SMEM, waited, loaded."""
    ty = buf.type
    assert isinstance(ty, MemRefType)
    smem = e.op(tpu.AllocOp(memref_type([], ty.element_type, MemorySpace.SMEM)), f"{hint}_smem")
    sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), f"{hint}_sem")
    e.op(tpu.DMAStartOp(buf, smem, recv_sem=sem))
    e.op(tpu.DMAWaitOp(sem, smem))
    v = e.op(memref.LoadOp.get(smem, []), hint)
    e.op(tpu.DeallocOp(smem))
    return v


# case ----------------------------------------------------------------------------------


def _lower_case(k: RegionLowering, op: hlo.CaseOp) -> None:
    e = k.emitter
    n = len(op.branches)
    results = [k.buffers[r] for r in op.outputs]
    known = _constant_index(op)
    if n == 1 or known is not None:
        # One branch can run: lowered alone, no index read (and right in timing mode).
        chosen = n - 1 if known is None or not 0 <= known < n else known
        _branch(k, op.branches[chosen].block, results, e.block)
        return
    index = _scalar(e, k.buffers[op.index], "case_index")
    last = e.op(arith.ConstantOp(IntegerAttr(n - 1, i32)))
    # Unsigned: a negative index is huge, so out of range either way -> the last branch.
    inside = e.op(arith.CmpiOp(index, last, "ult"))
    chosen = e.op(arith.SelectOp(inside, index, last), "case_branch")
    _chain(k, op, chosen, 0, e.block, results)


def _constant_index(op: hlo.CaseOp) -> int | None:
    """The case's index if it is an `hlo.constant` (a jit-time branch choice)."""
    owner = op.index.owner
    if isinstance(owner, hlo.ConstantOp):
        value = splat_element(owner.value)
        return None if value is None else int(value)
    return None


def _chain(
    k: RegionLowering,
    op: hlo.CaseOp,
    chosen: SSAValue,
    i: int,
    into: Block,
    results: Sequence[SSAValue],
) -> None:
    """Branch i if `chosen` is i, else the chain of the later ones (the last: no test)."""
    if i == len(op.branches) - 1:
        _branch(k, op.branches[i].block, results, into)
        return
    e = Emitter(into)
    is_i = e.op(arith.CmpiOp(chosen, e.i32(i), "eq"), f"case_is_{i}")
    then, other = Block(), Block()
    _branch(k, op.branches[i].block, results, then)
    then.add_op(scf.YieldOp())
    _chain(k, op, chosen, i + 1, other, results)
    other.add_op(scf.YieldOp())
    branch = scf.IfOp(is_i, [], Region(then), Region(other))
    branch.attributes[tpu.BRANCH_ON_VALUE] = UnitAttr()  # timing mode refuses to guess it
    e.op(branch)


def _branch(k: RegionLowering, branch: Block, results: Sequence[SSAValue], into: Block) -> None:
    """A branch's ops into `into`, its values into the case's result buffers."""
    returned = _returned(branch)
    direct = {
        v: r
        for v, r in zip(returned, results, strict=True)
        if isinstance(v.owner, Operation)
        and v.owner.parent_block() is branch
        and returned.count(v) == 1
    }
    for v, r in direct.items():
        k.buffers[v] = r
    with _inside(k, into) as e:
        _lower_block(k, branch)
        pairs = [
            (k.buffers[v], r) for v, r in zip(returned, results, strict=True) if v not in direct
        ]
        copies(e, [(s, d) for s, d in pairs if s != d], "case_result")
