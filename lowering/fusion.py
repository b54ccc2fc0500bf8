"""
`hlo.fusion` lowered to tpu (part of `lower-to-tpu`): a fusion is ONE tiled loop of the
tiling core (`tile_plan.Tiled`, `tile_loop.tile`; see the `compute` module docstring), so
its operands are fetched once per block, its intermediates stay in vregs (VMEM scratch
where a block must change shape) and each of its results is written back once per block.

* Iteration space: the root's. A fusion with a dot (output fusion) or a reduce (input
  fusion) iterates as that op does in `compute` (result dimensions, then the contracting
  or reduced ones), else (loop fusion) over its result's dimensions. Every result of a
  multi-output fusion has that result shape.
* Each value inside follows the iteration space through the ops between it and the roots
  (`_operand_maps`, walked backwards from the results): elementwise ops pass their block
  map on, a broadcast its dimension map (its size-1 dimensions whole), a transpose a
  permutation, a static slice an offset (`Stream.window`: only its part of the parameter
  is fetched). Each (parameter, map, slice) is one `Stream`; a dot's or reduce's operand
  that is a parameter keeps `compute`'s stream (staging permutation, 3-D view).
* The body evaluates the fused ops on the loaded blocks in dependency order, each with
  level S's numerics (`vector_ops.elementwise`: bf16/f16 computed in f32 and rounded once
  per op, as the interpreter runs a fusion's ops one by one), so level T computes what
  level S does. A dot's computed operand (its producers, applied after the load) is staged
  through VMEM scratch for `compute`'s matmul body; its epilogue (the ops after the dot)
  runs on the rounded accumulator at the last contracting block, before the write-back
  (`Acc.epilogue`). A broadcast that inserts dimensions other than leading ones goes
  through a VMEM scratch view (no vector shape casts at level T).

What cannot be one loop, and is lowered by inlining its ops unfused instead (`prepare`:
correct, one HBM loop per op; the kernel's `tpu.unfused` attribute and the level-S
summary line name it and why): reshape and concatenate inside a fusion (a reshape's
blocks map to blocks only for some block sizes, a concatenate root needs blocks that do
not straddle its operands: not done yet), a strided slice or a slice of a computed value,
dense (non-splat) constants, a broadcast that also transposes, an intermediate read in
two block layouts, a parameter passed straight through, results of different shapes, ops
`compute` does not lower, and a fused loop whose smallest blocks do not fit VMEM.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from shardc.diagnostics import OpPassError
from shardc.dialects import hlo, tpu
from shardc.dialects.syntax import splat_element
from shardc.hardware import kernel
from shardc.hardware.chips import Chip
from shardc.hardware.cost import value_vpu_ops, vpu_time
from shardc.lowering import compute
from shardc.lowering.context import LoweringContext, Target
from shardc.lowering.emit import memref_shape, reshape_view, tensor_type
from shardc.lowering.tile_index import Ix, TileEmitter, ix_mul, ix_value
from shardc.lowering.tile_loop import tile
from shardc.lowering.tile_plan import Acc, Scratch, Stream, Tiled, check_fits
from shardc.lowering.vector_ops import (
    broadcast_to,
    convert_vector,
    elementwise,
    load_block,
    splat_vector,
    store_block,
)
from xdsl.dialects import arith, func, vector
from xdsl.dialects.builtin import ArrayAttr, StringAttr, VectorType, i32, i64
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

Map = tuple[int | None, ...]
"""The iteration dimension each dimension of a value follows (None: whole, size 1)."""
Window = tuple[tuple[int, ...], tuple[int, ...]] | None
UNFUSED_ATTR = "tpu.unfused"
"""A kernel's attribute: the fusions lowered op by op, each `name: why`."""


class Unfusable(Exception):
    """Why a fusion cannot be one tiled loop."""


def _identity(n: int) -> Map:
    return tuple(range(n))


def _operand_maps(op: Operation, m: Map) -> list[tuple[Map, Window]]:
    """Each operand's block map (and slice window) given the result's map `m`."""
    if isinstance(op, hlo.BroadcastOp):
        shape = tensor_type(op.result.type).get_shape()
        src = tensor_type(op.operand.type).get_shape()
        if list(op.dims) != sorted(op.dims):
            raise Unfusable("a broadcast that transposes")
        return [(tuple(m[d] if src[i] == shape[d] else None for i, d in enumerate(op.dims)), None)]
    if isinstance(op, hlo.TransposeOp):
        out: list[int | None] = [None] * len(m)
        for j, p in enumerate(op.perm):
            out[p] = m[j]
        return [(tuple(out), None)]
    if isinstance(op, hlo.SliceOp):
        if any(s != 1 for _, _, s in op.bounds) or not isinstance(op.operand, BlockArgument):
            raise Unfusable("a strided slice or a slice of a computed value")
        start = tuple(lo for lo, _, _ in op.bounds)
        return [(m, (start, tensor_type(op.result.type).get_shape()))]
    if isinstance(op, compute._ELEMENTWISE):
        return [(m if tensor_type(v.type).get_shape() else (), None) for v in op.operands]
    if isinstance(op, hlo.ConstantOp | hlo.IotaOp):
        return []
    raise Unfusable(f"{op.name} inside")


def _check_op(op: Operation) -> None:
    if isinstance(op, hlo.ConstantOp) and splat_element(op.value) is None:
        raise Unfusable("a dense constant")
    if isinstance(op, hlo.ReduceOp) and op.has_body:
        raise Unfusable("a reduce with a body")
    if isinstance(op, hlo.DotOp | hlo.ReduceOp):
        return
    if isinstance(op, compute._ELEMENTWISE) and not compute.handles(op):
        raise Unfusable(f"{op.name} (not lowered yet)")
    if isinstance(op, hlo.ReshapeOp):
        raise Unfusable("a reshape (its blocks need not map to blocks: not fused yet)")
    if isinstance(op, hlo.ConcatenateOp):
        raise Unfusable("a concatenate other than the root")


@dataclass
class _Fused:
    """A fusion's analysis: the maps of its values, its streams and scratch."""

    op: hlo.FusionOp
    chip: Chip
    outputs: list[SSAValue]
    core: Operation | None = None
    core_t: Tiled | None = None
    maps: dict[SSAValue, Map] = field(default_factory=dict)
    streams: list[Stream] = field(default_factory=list)
    keys: dict[tuple, int] = field(default_factory=dict)
    scratch: list[Scratch] = field(default_factory=list)
    scratch_of: dict[object, int] = field(default_factory=dict)
    blocks: tuple[int, ...] = ()
    after: set[SSAValue] = field(default_factory=set)
    """The epilogue's values (`kernel.after_core`): computed once per result block."""

    @property
    def block(self) -> Block:
        return self.op.body.block

    def assign(self, v: SSAValue, m: Map) -> None:
        if isinstance(v, BlockArgument):
            return
        if self.maps.setdefault(v, m) != m:
            raise Unfusable("an intermediate read in two block layouts")

    def stream(
        self,
        arg: SSAValue,
        m: Map,
        window: Window,
        like: Stream | None = None,
        once: bool = False,
    ) -> int:
        """The index of the stream reading parameter `arg` with map `m` (and window);
        `once`: for the epilogue (read every step as soon as anything else reads it)."""
        key = (arg, m, window, None if like is None else id(like))
        if key in self.keys:
            s = self.streams[self.keys[key]]
            s.once = s.once and once
        else:
            assert isinstance(arg, BlockArgument)
            outer = self.op.inputs[arg.index]
            if like is None:
                s = Stream(outer, m, window=window, once=once)
            else:
                s = Stream(outer, like.dims, like.perm, like.view)
            self.keys[key] = len(self.streams)
            self.streams.append(s)
        return self.keys[key]

    def add_scratch(self, key: object, shape: Callable, elem: Attribute) -> int:
        if key not in self.scratch_of:
            self.scratch_of[key] = len(self.scratch)
            self.scratch.append(Scratch(shape, elem))
        return self.scratch_of[key]

    def value_block(self, v: SSAValue, m: Map) -> tuple[int, ...]:
        shape = tensor_type(v.type).get_shape()
        return tuple(s if it is None else self.blocks[it] for s, it in zip(shape, m, strict=True))


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


def _analyse(chip: Chip, op: hlo.FusionOp, outputs: list[SSAValue]) -> _Fused:
    shapes = {tensor_type(v.type).get_shape() for v in outputs}
    if len(shapes) != 1:
        raise Unfusable("results of different shapes")
    f = _Fused(op, chip, outputs)
    ops = _ancestors(outputs)
    for o in ops:
        _check_op(o)
    cores = [o for o in ops if isinstance(o, hlo.DotOp | hlo.ReduceOp)]
    if len(cores) > 1:
        raise Unfusable("more than one dot or reduce")
    n_out = len(next(iter(shapes)))
    if cores:
        f.core = cores[0]
        build = compute._builder(f.core)
        assert build is not None
        f.core_t = build(chip, f.core)
        if f.core_t.n_out != n_out:
            raise Unfusable("results of another shape than the dot's or reduce's")
    f.after = kernel.after_core(ops, f.core)
    for v in outputs:
        if isinstance(v, BlockArgument):
            f.stream(v, _identity(n_out), None)
        else:
            f.assign(v, _identity(n_out))
    for o in reversed(ops):
        _propagate(f, o)
    return f


def _propagate(f: _Fused, o: Operation) -> None:
    """The block maps of `o`'s operands from its result's (nothing if it is unused)."""
    m = f.maps.get(o.results[0])
    if m is None:
        return
    if o is f.core:
        assert f.core_t is not None
        if m != _identity(f.core_t.n_out):
            raise Unfusable("a dot or reduce result read in another layout")
        for v, s in zip(o.operands, f.core_t.streams, strict=True):
            if isinstance(v, BlockArgument):
                f.stream(v, s.dims, None, like=s)
            else:
                f.assign(v, s.dims)
        return
    for v, (om, window) in zip(o.operands, _operand_maps(o, m), strict=True):
        if isinstance(v, BlockArgument):
            f.stream(v, om, window, once=o.results[0] in f.after)
        else:
            f.assign(v, om)


class _Eval:
    """Emits the fused ops on the loaded blocks (memoized: each op once per phase)."""

    def __init__(self, f: _Fused, b: TileEmitter, views: list[SSAValue], idx: list[Ix]):
        self.f, self.b, self.views, self.idx = f, b, views, idx
        self.env: dict[SSAValue, SSAValue] = {}
        self.loads: dict[int, SSAValue] = {}

    def scratch_ref(self, k: int) -> SSAValue:
        return self.views[len(self.f.streams) + k]

    def operand(self, o: Operation, i: int, om: Map, window: Window) -> SSAValue:
        v = o.operands[i]
        if isinstance(v, BlockArgument):
            k = self.f.keys[(v, om, window, None)]
            if k not in self.loads:
                self.loads[k] = load_block(self.b, self.views[k])
            return self.loads[k]
        return self.value(v)

    def value(self, v: SSAValue) -> SSAValue:
        if isinstance(v, BlockArgument):  # a result that is a parameter
            k = self.f.keys[(v, _identity(len(tensor_type(v.type).get_shape())), None, None)]
            return load_block(self.b, self.views[k])
        if v not in self.env:
            o = v.owner
            assert isinstance(o, Operation)
            self.env[v] = self.emit(o, self.f.maps[v])
        return self.env[v]

    def emit(self, o: Operation, m: Map) -> SSAValue:
        b, f = self.b, self.f
        block = f.value_block(o.results[0], m)
        elem = tensor_type(o.results[0].type).element_type
        if isinstance(o, hlo.ConstantOp):
            return splat_vector(b, splat_element(o.value), VectorType(elem, block))  # pyright: ignore
        if isinstance(o, hlo.IotaOp):
            return self.iota(o, m, block)
        vals = [self.operand(o, i, om, w) for i, (om, w) in enumerate(_operand_maps(o, m))]
        if isinstance(o, hlo.SliceOp):
            return vals[0]
        if isinstance(o, hlo.TransposeOp):
            return b.op(tpu.TransposeOp(vals[0], o.perm))
        if isinstance(o, hlo.BroadcastOp):
            return self.broadcast(o, vals[0], block)
        return elementwise(b, o, vals)

    def iota(self, o: hlo.IotaOp, m: Map, block: tuple[int, ...]) -> SSAValue:
        """As `compute`'s iota: counts per block plus the block's offset, converted."""
        b = self.b
        elem = tensor_type(o.result.type).element_type
        dim = o.iota_dimension.value.data
        count = i64 if elem == i64 else i32
        vty = VectorType(count, block)
        v = b.op(tpu.IotaOp(vty, dim))
        it = m[dim]
        off = 0 if it is None else ix_mul(b, self.idx[it], self.f.blocks[it])
        if off != 0:
            scalar = b.op(arith.IndexCastOp(ix_value(b, off), count))
            v = b.op(arith.AddiOp(v, b.op(vector.BroadcastOp(scalar, vty))))
        return convert_vector(b, v, elem)

    def broadcast(self, o: hlo.BroadcastOp, u: SSAValue, block: tuple[int, ...]) -> SSAValue:
        """Leading dimensions inserted: `vector.broadcast`; others: through a VMEM view."""
        r, dims = len(block), tuple(o.dims)
        if dims != tuple(range(r - len(dims), r)):
            ref = self.scratch_ref(self.f.scratch_of[o])
            store_block(self.b, u, ref)
            full = [1] * r
            for i, d in enumerate(dims):
                full[d] = memref_shape(ref)[i]
            u = load_block(self.b, reshape_view(self.b, ref, tuple(full)))
        return broadcast_to(self.b, u, block)


def _plan_scratch(f: _Fused) -> None:
    """VMEM scratch: broadcasts that need a view; a dot's or reduce's computed operands."""
    for v, m in list(f.maps.items()):
        o = v.owner
        if isinstance(o, hlo.BroadcastOp):
            r, dims = len(m), tuple(o.dims)
            if dims != tuple(range(r - len(dims), r)):
                om = _operand_maps(o, m)[0][0]
                f.add_scratch(o, lambda bl, v=o.operand, om=om: _block(v, om, bl), _elem(o.operand))
    if f.core_t is not None:
        assert f.core is not None
        for i, (v, s) in enumerate(zip(f.core.operands, f.core_t.streams, strict=True)):
            if not isinstance(v, BlockArgument):
                f.add_scratch(("core", i), lambda bl, s=s: s.staged(bl), s.elem)


def _block(v: SSAValue, m: Map, blocks: Sequence[int]) -> tuple[int, ...]:
    shape = tensor_type(v.type).get_shape()
    return tuple(s if it is None else blocks[it] for s, it in zip(shape, m, strict=True))


def _elem(v: SSAValue) -> Attribute:
    return tensor_type(v.type).element_type


def fused_loops(chip: Chip, op: hlo.FusionOp) -> list[Tiled]:
    """
    The fusion as one `Tiled` (raises `Unfusable` with why not); a concatenate root as
    one per operand, each computing its part and writing it once into the result.
    """
    ret = op.body.block.last_op
    assert ret is not None
    outputs = list(ret.operands)
    root = outputs[0].owner
    if len(outputs) > 1 or not isinstance(root, hlo.ConcatenateOp):
        return [_loop(chip, op, outputs, None)]
    dim = root.dimension.value.data
    loops, start = [], 0
    for v in root.inputs:
        offset = [0] * len(tensor_type(v.type).get_shape())
        offset[dim] = start
        if math.prod(tensor_type(v.type).get_shape()):
            loops.append(_loop(chip, op, [v], tuple(offset)))
        start += tensor_type(v.type).get_shape()[dim]
    return loops


def _loop(
    chip: Chip, op: hlo.FusionOp, outputs: list[SSAValue], offset: tuple[int, ...] | None
) -> Tiled:
    """One tiled loop computing `outputs` (written at `offset` in the result, if given)."""
    f = _analyse(chip, op, outputs)
    _plan_scratch(f)
    core_t = f.core_t
    sizes = core_t.sizes if core_t is not None else tensor_type(f.outputs[0].type).get_shape()
    elementwise_ops = [v for v in f.maps if v.owner is not f.core and v not in f.after]
    epilogue_ops = [v for v in f.maps if v in f.after]

    def vpu(values: list[SSAValue], blocks: Sequence[int]) -> float:
        return sum(
            vpu_time(chip, math.prod(_block(v, f.maps[v], blocks)), value_vpu_ops(v))
            for v in values
        )

    def work(blocks: Sequence[int]) -> float:
        return vpu(elementwise_ops, blocks) + (core_t.work(blocks) if core_t is not None else 0.0)

    def body(b: TileEmitter, views: list[SSAValue], idx: list[Ix], target) -> None:
        ev = _Eval(f, b, views, idx)
        if core_t is None:
            targets = target if isinstance(target, list) else [target]
            for v, ref in zip(f.outputs, targets, strict=True):
                store_block(b, ev.value(v), ref)
            return
        core_t.body(b, _core_views(f, ev), idx, target)

    acc = None
    if core_t is not None:
        assert core_t.acc is not None
        acc = Acc(
            core_t.acc.elem, core_t.acc.init, core_t.acc.finish, _epilogue(f), core_t.acc.result
        )
    t = Tiled(
        op,
        tuple(sizes),
        f.streams,
        body,
        work,
        acc,
        dict(core_t.align) if core_t is not None else {},
        outputs=tuple(op.outputs),
        scratch=f.scratch,
        out_offset=offset,
        finish=(lambda blocks: vpu(epilogue_ops, blocks)) if epilogue_ops else None,
    )
    t.on_plan = lambda blocks: setattr(f, "blocks", tuple(blocks))
    return t


def _core_views(f: _Fused, ev: _Eval) -> list[SSAValue]:
    """The dot's or reduce's operand blocks: a parameter's stream, or its computed value
    (transposed as `compute` stages it) stored in scratch and viewed as `compute` reads it."""
    assert f.core is not None and f.core_t is not None
    out = []
    for i, (v, s) in enumerate(zip(f.core.operands, f.core_t.streams, strict=True)):
        if isinstance(v, BlockArgument):
            out.append(ev.views[f.keys[(v, s.dims, None, id(s))]])
            continue
        x = ev.value(v)
        if s.perm is not None:
            x = ev.b.op(tpu.TransposeOp(x, s.perm))
        ref = ev.scratch_ref(f.scratch_of[("core", i)])
        store_block(ev.b, x, ref)
        out.append(reshape_view(ev.b, ref, s.view_shape(f.blocks)))
    return out


def _epilogue(f: _Fused):
    """The ops after the dot or reduce, on its rounded result: one vector per output."""
    core = f.core
    assert core is not None

    def epilogue(
        b: TileEmitter, v: SSAValue, views: list[SSAValue], idx: list[Ix]
    ) -> list[SSAValue]:
        ev = _Eval(f, b, views, idx)
        ev.env[core.results[0]] = v
        return [ev.value(o) for o in f.outputs]

    return epilogue


# Entry points ------------------------------------------------------------------------------


def handles(op: Operation) -> bool:
    return isinstance(op, hlo.FusionOp)


def why_unfused(target: Target, op: hlo.FusionOp) -> str | None:
    """None if the fusion lowers as one loop, else why not."""
    try:
        if any(0 in tensor_type(v.type).get_shape() for v in (*op.inputs, *op.outputs)):
            return "an empty operand or result"
        for t in fused_loops(target.chip, op):
            check_fits(target, t)
    except Unfusable as err:
        return str(err)
    except OpPassError:
        return "its smallest fused blocks do not fit VMEM"
    return None


def prepare(function: func.FuncOp, target: Target) -> list[str]:
    """Inline (unfused) every fusion of `function` that cannot be one loop; `name: why`
    for each, for the kernel's `tpu.unfused` and the level-S summary line."""
    remarks = []
    for op in list(function.body.block.ops):
        if isinstance(op, hlo.FusionOp):
            why = why_unfused(target, op)
            if why is not None:
                remarks.append(f"{op.label}: {why}")
                inline_fusion(op)
    return remarks


def inline_fusion(op: hlo.FusionOp) -> None:
    """The fusion's ops in its place, its parameters its operands."""
    block = op.body.block
    ret = block.last_op
    assert ret is not None
    for arg, v in zip(block.args, op.inputs, strict=True):
        arg.replace_all_uses_with(v)
    results = list(ret.operands)
    for inner in list(block.ops):
        if inner is ret:
            break
        inner.detach()
        Rewriter.insert_op(inner, InsertPoint.before(op))
    Rewriter.replace_op(op, [], results)


def mark(kernel: func.FuncOp, remarks: list[str]) -> None:
    if remarks:
        kernel.attributes[UNFUSED_ATTR] = ArrayAttr([StringAttr(r) for r in remarks])


def lower(ctx: LoweringContext, op: Operation) -> None:
    assert isinstance(op, hlo.FusionOp)
    for t in fused_loops(ctx.target.chip, op):
        tile(ctx, t)
