"""
`hlo.reduce` with a body (several operands reduced together, as JAX's argmax / argmin)
lowered to tpu (part of `lower-to-tpu`, issue 15 item 3): one tiled loop of `compute`'s
core (`tile_plan.Tiled`), whose block body folds the reduce's body over the block's
reduced elements one at a time, each evaluation a handful of vector ops on a whole block
of the result (the body's hlo ops through `vector_ops.elementwise`, level S's numerics).

Bit for bit with level S (interpreter/hlo_reduce_body.py), which folds the body over the
reduced elements in one order: row-major over `dims` *as the op lists them*, from the
inits. The loop keeps that order: the iteration space is the kept dimensions, then the
reduced ones in `dims`' order (innermost), every reduced dimension but the first is one
whole block (so consecutive blocks continue the order where the last stopped), and each
operand block is staged as [reduced..., kept...] (a transpose through VMEM scratch when
the operand is laid out otherwise), seen as [elements, kept...], and folded from
element 0 up. The accumulators are the result slots (one result), or an accumulator and
VMEM scratch buffers (several), set from the inits at a result block's first reduced
block; they are in the result types, as level S's (a body computes in its own types).

Not lowered (an error at the op): a body op that is not an elementwise op `compute`
lowers or a splat constant, and inputs whose element type is not their init's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from shardc.diagnostics import OpPassError
from shardc.dialects import hlo
from shardc.dialects.syntax import splat_element
from shardc.hardware.chips import Chip
from shardc.hardware.cost import reduce_body_ops, vpu_time
from shardc.lowering import compute
from shardc.lowering.context import LoweringContext, Target
from shardc.lowering.emit import INDEX, memref_shape, reshape_view, tensor_type
from shardc.lowering.tile_index import Ix, TileEmitter, emit_if, ix_cmp
from shardc.lowering.tile_loop import tile
from shardc.lowering.tile_plan import LANES, SUBLANES, Acc, Scratch, Stream, Tiled, check_fits
from shardc.lowering.vector_ops import (
    broadcast_to,
    elementwise,
    load_block,
    splat_vector,
    store_block,
    with_element,
)
from xdsl.dialects import scf, vector
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Block, Operation, SSAValue

_BODY_OPS = (
    hlo.BinaryElementwiseOp,
    hlo.UnaryElementwiseOp,
    hlo.CompareOp,
    hlo.SelectOp,
    hlo.ConvertOp,
    hlo.ClampOp,
    hlo.BitcastConvertOp,
)
"""The body ops `vector_ops.elementwise` computes (if `compute` lowers them at all)."""


def handles(op: Operation) -> bool:
    """Whether this module lowers `op`: a reduce with a body."""
    return isinstance(op, hlo.ReduceOp) and op.has_body


def _body_block(op: hlo.ReduceOp) -> Block:
    assert op.body is not None
    return op.body.block


def _refusal(op: hlo.ReduceOp) -> str | None:
    """Why `op` is not lowered, or None."""
    for x, init in zip(op.inputs, op.inits, strict=True):
        a, b = tensor_type(x.type).element_type, tensor_type(init.type).element_type
        if a != b:
            return f"an input of element type {a} with an init of {b}"
    for inner in _body_block(op).ops:
        if isinstance(inner, hlo.ReturnOp):
            continue
        if isinstance(inner, hlo.ConstantOp) and splat_element(inner.value) is not None:
            continue
        if not (isinstance(inner, _BODY_OPS) and compute.handles(inner)):
            return f"{inner.name} in its body"
    return None


def tiled(chip: Chip, op: hlo.ReduceOp) -> Tiled:
    """The loop (see the module docstring)."""
    n = len(op.results)
    shape = tensor_type(op.inputs[0].type).get_shape()
    dims = list(op.dims)
    kept = [d for d in range(len(shape)) if d not in dims]
    nk = len(kept)
    its = {d: i for i, d in enumerate(kept)} | {d: nk + j for j, d in enumerate(dims)}
    sizes = (*(shape[d] for d in kept), *(shape[d] for d in dims))
    order = (*dims, *kept)
    perm = None if order == tuple(range(len(shape))) else order

    def view(staged: tuple[int, ...]) -> tuple[int, ...]:
        """[elements, kept...] ([elements, 1] for a full reduce: no 0-d extracts)."""
        return (math.prod(staged[: len(dims)]), *(staged[len(dims) :] or (1,)))

    follow = tuple(its[d] for d in range(len(shape)))
    streams = [Stream(x, follow, perm, view) for x in op.inputs]
    streams += [Stream(init, ()) for init in op.inits]
    elems = [tensor_type(r.type).element_type for r in op.results]
    scratch = [Scratch(lambda blocks: tuple(blocks[:nk]), e) for e in elems[1:]]

    def epilogue(
        b: TileEmitter, v: SSAValue, views: list[SSAValue], idx: list[Ix]
    ) -> list[SSAValue]:
        return [v, *(load_block(b, s) for s in views[2 * n :])]

    acc = Acc(
        elems[0],
        lambda b, vty: splat_vector(b, 0, vty),  # set from the init by the body
        lambda b, v: v,
        epilogue if n > 1 else None,
    )
    ops = reduce_body_ops(op)  # level S's charge: the body's ops, one definition

    def work(blocks: Sequence[int]) -> float:
        """The fold's vector ops: each on whole (8, 128) vregs of the kept block, so a
        kept block under one vreg costs one (the planner keeps result blocks large:
        fewer, longer folds, which also keeps the level-T simulation short)."""
        vregs = -(-math.prod(blocks[:nk]) // (LANES * SUBLANES))
        return vpu_time(chip, math.prod(blocks[nk:]) * vregs * LANES * SUBLANES, ops)

    return Tiled(
        op,
        sizes,
        streams,
        _fold(op, nk),
        work,
        acc,
        {nk + j: sizes[nk + j] for j in range(1, len(dims))},  # whole: the fold's order
        outputs=tuple(op.results) if n > 1 else (),
        scratch=scratch,
    )


def _fold(
    op: hlo.ReduceOp, nk: int
) -> Callable[[TileEmitter, list[SSAValue], list[Ix], SSAValue], None]:
    """The block body: at a result block's first reduced block the accumulators take the
    inits; then the body folds in the block's reduced elements, in order (an `scf.for`
    carrying the accumulators, each element a `vector.extract` of the loaded block)."""
    n = len(op.results)
    block = _body_block(op)

    def body(b: TileEmitter, views: list[SSAValue], idx: list[Ix], target: SSAValue) -> None:
        xs, inits = views[:n], views[n : 2 * n]
        out = memref_shape(xs[0])[1:]
        accs = [reshape_view(b, a, out) for a in (target, *views[2 * n :])]

        def start(w: TileEmitter) -> None:
            for init, a in zip(inits, accs, strict=True):
                store_block(w, broadcast_to(w, load_block(w, init), out), a)

        emit_if(b, ix_cmp(b, idx[nk], "eq", 0) if len(idx) > nk else True, start)
        cur = [load_block(b, a) for a in accs]
        blocks = [load_block(b, x) for x in xs]
        count = memref_shape(xs[0])[0]
        if count == 1:
            vals = evaluate(b, block, [*cur, *(_element(b, x, 0) for x in blocks)])
        else:
            loop = Block(arg_types=[INDEX, *(v.type for v in cur)])
            loop.args[0].name_hint = "rk"
            inner = b.nested(loop)
            new = [_element(inner, x, loop.args[0]) for x in blocks]
            inner.op(scf.YieldOp(*evaluate(inner, block, [*loop.args[1:], *new])))
            step = scf.ForOp(b.index(0), b.index(count), b.index(1), cur, loop)
            b.op(step)
            vals = list(step.results)
        for v, a in zip(vals, accs, strict=True):
            store_block(b, v, a)

    return body


def _element(b: TileEmitter, x: SSAValue, k: SSAValue | int) -> SSAValue:
    """Reduced element `k` of a loaded [elements, kept...] block: a vector of the kept."""
    ty = x.type
    assert isinstance(ty, VectorType)
    rest = VectorType(ty.element_type, ty.get_shape()[1:])
    return b.op(vector.ExtractOp(x, [k], rest))


def evaluate(b: TileEmitter, block: Block, args: Sequence[SSAValue]) -> list[SSAValue]:
    """The body's ops on vectors of the result block (`hlo_reduce_body.run_body`)."""
    env: dict[SSAValue, SSAValue] = dict(zip(block.args, args, strict=True))
    for inner in block.ops:
        if isinstance(inner, hlo.ReturnOp):
            return [env[v] for v in inner.operands]
        if isinstance(inner, hlo.ConstantOp):
            value = splat_element(inner.value)
            assert value is not None
            elem = tensor_type(inner.result.type).element_type
            env[inner.result] = splat_vector(b, value, with_element(args[0], elem))
            continue
        env[inner.results[0]] = elementwise(b, inner, [env[v] for v in inner.operands])
    raise AssertionError("a reduce body without hlo.return")  # the verifier's


def check(target: Target, op: Operation) -> None:
    """Raise an `OpPassError` at `op` if it cannot be lowered (see the module docstring)."""
    assert isinstance(op, hlo.ReduceOp)
    why = _refusal(op)
    if why is not None:
        raise OpPassError(op, f"lower-to-tpu: hlo.reduce with {why} is not supported yet")
    if math.prod(tensor_type(op.results[0].type).get_shape()) == 0:
        return
    if 0 in tensor_type(op.inputs[0].type).get_shape():
        raise OpPassError(
            op,
            "lower-to-tpu: hlo.reduce of an empty operand into a non-empty "
            "result is not supported yet",
        )
    check_fits(target, tiled(target.chip, op))


def lower(ctx: LoweringContext, op: Operation) -> None:
    assert isinstance(op, hlo.ReduceOp)
    tile(ctx, tiled(ctx.target.chip, op))
