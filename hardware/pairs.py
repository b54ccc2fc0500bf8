"""
A fusion of complex values computed on the parts' view (issue 15 item 3): a complex
tensor's bytes read as its part type with a last dimension of 2 (re, im). Where every
complex op of a fusion acts on that view as a real op would (it moves elements, adds them
or converts each part), the fusion is the same fusion on the views: its complex operands
and results are viewed in place (`cost.bitcast_view`: no copy), so it is one loop reading
each complex operand once, as the fusion pass meant it. A transpose feeding a reduce add
was otherwise inlined op by op (the reduce's view is a bitcast, which a loop cannot hold):
level T 2.9x level S, which charged one loop.

One definition for both levels: level S costs `pairs_fusion`'s loop (`kernel.
fusion_kernels`), `lower-to-tpu` puts it in place of the fusion (lowering/
complex_pairs.py `ComplexFusion`).
"""

from __future__ import annotations

from collections.abc import Sequence

from shardc.dialects import hlo
from shardc.hardware.cost import fusion_on_parts, touches_complex
from xdsl.dialects.builtin import ComplexType, TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue


def pair_type(ty: Attribute) -> Attribute:
    """A complex tensor type's view as parts (a last dimension of 2); others unchanged."""
    if not isinstance(ty, TensorType) or not isinstance(ty.element_type, ComplexType):
        return ty
    return TensorType(ty.element_type.element_type, [*ty.get_shape(), 2])


def _is_complex(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType) and isinstance(v.type.element_type, ComplexType)


_VIEW_OPS = (
    hlo.TransposeOp,
    hlo.BroadcastOp,
    hlo.SliceOp,
    hlo.ReshapeOp,
    hlo.ConcatenateOp,
    hlo.AddOp,
    hlo.SubOp,
    hlo.NegOp,
    hlo.ReturnOp,
)


def has_view_form(op: Operation) -> bool:
    """Whether complex op `op` acts on the parts' views as a real op (`_on_pairs`)."""
    if isinstance(op, hlo.ConvertOp):
        return _is_complex(op.operand) and _is_complex(op.result)
    if isinstance(op, hlo.ReduceOp):
        return not op.has_body and op.kind.data == "add"
    return isinstance(op, _VIEW_OPS)


def _on_pairs(op: Operation, args: Sequence[SSAValue]) -> Operation | None:
    """`op` (with a complex result) on the parts' views `args`, or None where the view is
    not the same op (a product, a modulus, a dot: the parts combine)."""
    res = pair_type(op.results[0].type)
    assert isinstance(res, TensorType)
    if isinstance(op, hlo.TransposeOp):
        return hlo.TransposeOp(args[0], [*op.perm, len(op.perm)])
    if isinstance(op, hlo.BroadcastOp):
        return hlo.BroadcastOp(args[0], [*op.dims, len(res.get_shape()) - 1], res)
    if isinstance(op, hlo.SliceOp):
        start, limit, strides = zip(*op.bounds, strict=True) if op.bounds else ((), (), ())
        return hlo.SliceOp(args[0], [*start, 0], [*limit, 2], [*strides, 1])
    if isinstance(op, hlo.ReshapeOp):
        return hlo.ReshapeOp(args[0], res)
    if isinstance(op, hlo.ConcatenateOp):
        return hlo.ConcatenateOp(args, op.dimension.value.data)
    if isinstance(op, hlo.AddOp | hlo.SubOp):
        return type(op)(args[0], args[1])
    if isinstance(op, hlo.NegOp):
        return hlo.NegOp(args[0])
    if isinstance(op, hlo.ConvertOp) and _is_complex(op.operand):
        return hlo.ConvertOp(args[0], res)
    if isinstance(op, hlo.ReduceOp) and not op.has_body and op.kind.data == "add":
        return hlo.ReduceOp("add", args[0], op.dims)
    return None


def pairs_body(op: hlo.FusionOp) -> Block | None:
    """`op`'s body on the parts' views of its complex values (a new block), or None where
    some complex op has no such form (`has_view_form`), or nothing in it is complex."""
    if not any(touches_complex(o) for o in op.body.block.ops):
        return None
    old = op.body.block
    block = Block(arg_types=[pair_type(a.type) for a in old.args])
    values: dict[SSAValue, SSAValue] = dict(zip(old.args, block.args, strict=True))
    seen_complex = any(_is_complex(a) for a in old.args)
    for o in old.ops:
        args = [values[v] for v in o.operands]
        if isinstance(o, hlo.ReturnOp):
            block.add_op(hlo.ReturnOp(args))
            break
        touches = any(_is_complex(v) for v in (*o.operands, *o.results))
        if touches and (o.regions or len(o.results) != 1):
            return None
        if touches and _is_complex(o.results[0]):
            new = _on_pairs(o, args)
            if new is None:
                return None
            seen_complex = True
        elif touches:
            return None  # real, imag, abs, compare...: not an op on the view
        else:
            new = o.clone(value_mapper=dict(values))
        block.add_op(new)
        values |= dict(zip(o.results, new.results, strict=True))
    return block if seen_complex else None


def on_views(op: Operation) -> bool:
    """Whether `lower-to-tpu` computes `op` on the parts' views of its complex values: a
    complex reduce add, or a fusion not on the parts (`cost.fusion_on_parts`) that
    `pairs_body` rewrites."""
    if isinstance(op, hlo.ReduceOp):
        return not op.has_body and op.kind.data == "add" and _is_complex(op.operands[0])
    if not isinstance(op, hlo.FusionOp):
        return False
    ops = [o for o in op.body.block.ops if touches_complex(o)]
    return bool(ops) and all(has_view_form(o) for o in ops) and not fusion_on_parts(op)


def pairs_fusion(op: hlo.FusionOp, inputs: Sequence[SSAValue] | None = None) -> hlo.FusionOp | None:
    """`op` on the parts' views (`pairs_body`), reading `inputs` (the operands' views;
    default: the arguments of a detached block, for the cost model), or None."""
    body = pairs_body(op)
    if body is None:
        return None
    if inputs is None:
        inputs = Block(arg_types=[pair_type(v.type) for v in op.inputs]).args
    types = [pair_type(r.type) for r in op.results]
    fusion = hlo.FusionOp(inputs, types, Region(body), op.kind.data, op.label)
    fusion.attributes = dict(op.attributes)
    return fusion
