"""
The calling convention of a `lower-to-tpu` kernel, and the HBM buffer of every level-S
value in it.

Mosaic / Pallas style: a kernel returns nothing, it writes its outputs into buffers the
caller passes.

    func.func @main(%x, %y, ..,              the k level-S arguments (their names), HBM
                    %out0 .. %out{m-1},      the m level-S results, HBM (written)
                    %scratch0 ..)            s HBM buffers, one per intermediate value
        attributes {tpu.kernel, tpu.io = [k, m, s]}

Every memref is `#tpu.memory_space<hbm>` with the level-S tensor's (per-device) shape and
element type. The scratch arguments are Pallas's `hbm_scratch` outputs: the caller passes
uninitialized buffers and discards them afterwards. With `run_level_t`, pass the inputs,
then `None` for every output and scratch argument: `outputs[d][k + i]` is result i.
`tpu.io` says how many arguments of each kind there are. A value returned first (and made
in the body) is computed straight into its output buffer; so is the operand of a returned
`bitcast_convert` it alone reads (a complex collective's result, made on its parts' view:
lowering/complex_pairs.py), into the output viewed as its type; any other returned value
is copied there at the end.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from shardc.dialects import hlo, spmd, tpu
from shardc.hardware.cost import bitcast_view
from shardc.lowering.emit import Emitter, hbm_type, tensor_type
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue


@dataclass
class KernelAbi:
    """A level-S function's kernel signature: its body block and the buffer of each value."""

    function: func.FuncOp
    """The level-S function."""
    arg_types: list[Attribute]
    k: int
    """Inputs."""
    m: int
    """Outputs."""
    scratch: int
    """Scratch buffers."""
    block: Block
    """The kernel's body (its arguments named), empty."""
    buffers: dict[SSAValue, SSAValue]
    """The HBM buffer (a block argument) of every level-S argument and tensor value."""
    in_place: set[Operation] = field(default_factory=set[Operation])
    """Returned `bitcast_convert`s whose operand was computed into their output (viewed):
    nothing to copy."""

    @classmethod
    def of(cls, f: func.FuncOp) -> KernelAbi:
        old = f.body.block
        ret = old.last_op
        assert isinstance(ret, func.ReturnOp)
        inputs = [tensor_type(t) for t in f.function_type.inputs.data]
        outputs = [tensor_type(t) for t in f.function_type.outputs.data]
        # Which value lands in which output directly (the first return of a value made in
        # the body); everything else gets a scratch buffer or a copy at the end.
        direct: dict[SSAValue, int] = {}
        for i, v in enumerate(ret.operands):
            if v not in direct and not isinstance(v.owner, Block):
                direct[v] = i
        viewed = _viewed_outputs(direct)
        scratch_values: list[SSAValue] = []
        for op in _ops_with_buffers(old):
            if bitcast_view(op):  # its operand's buffer, viewed (`view`)
                continue
            for r in op.results:
                if isinstance(r.type, TensorType) and r not in direct and r not in viewed:
                    scratch_values.append(r)
        arg_types: list[Attribute] = [
            *(hbm_type(t) for t in inputs),
            *(hbm_type(t) for t in outputs),
            *(hbm_type(tensor_type(v.type)) for v in scratch_values),
        ]
        block = Block(arg_types=arg_types)
        k, m = len(inputs), len(outputs)
        buffers: dict[SSAValue, SSAValue] = {}
        for i, a in enumerate(old.args):
            block.args[i].name_hint = a.name_hint or f"in{i}"
            buffers[a] = block.args[i]
        for i in range(m):
            block.args[k + i].name_hint = f"out{i}"
        for v, i in direct.items():
            buffers[v] = block.args[k + i]
        for j, v in enumerate(scratch_values):
            block.args[k + m + j].name_hint = f"scratch{j}"
            buffers[v] = block.args[k + m + j]
        for v, i in viewed.items():
            view = tpu.MemRefBitcastOp(block.args[k + i], hbm_type(tensor_type(v.type)))
            view.result.name_hint = f"out{i}_view"
            block.add_op(view)
            buffers[v] = view.result
        in_place = {use.operation for v in viewed for use in v.uses}
        return cls(f, arg_types, k, m, len(scratch_values), block, buffers, in_place)

    def add_scratch(self, ty: MemRefType, hint: str) -> SSAValue:
        """One more HBM scratch argument, for a buffer an op's lowering needs that is no
        level-S value (a bf16 scatter's f32 accumulator: lowering/gather.py)."""
        arg = self.block.insert_arg(ty, len(self.block.args))
        arg.name_hint = hint
        self.arg_types.append(ty)
        self.scratch += 1
        return arg

    def view(self, e: Emitter, op: hlo.BitcastConvertOp) -> None:
        """A `bitcast_view` op's result: its operand's buffer viewed as its type (no copy)."""
        ty = tensor_type(op.result.type)
        view = tpu.MemRefBitcastOp(self.buffers[op.operand], hbm_type(ty))
        self.buffers[op.result] = e.op(view, "bitcast_view")

    def emit_return(self, e: Emitter) -> None:
        """Copy every returned value not computed in place into its output; return."""
        ret = self.function.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        for i, v in enumerate(ret.operands):
            dst = self.block.args[self.k + i]
            src = self.buffers[v]
            if src is not dst:
                sem = e.op(tpu.AllocOp(tpu.DMASemaphoreType()), f"ret_sem_{i}")
                e.op(tpu.DMAStartOp(src, dst, recv_sem=sem))
                e.op(tpu.DMAWaitOp(sem, dst))
        e.op(func.ReturnOp())

    def kernel(self) -> func.FuncOp:
        """The kernel function around the (filled) block, with its `tpu.*` attributes and
        what a runner needs to split global inputs and assemble global outputs."""
        f = self.function
        new = func.FuncOp(f.sym_name.data, (self.arg_types, []), Region(self.block))
        new.attributes["tpu.kernel"] = UnitAttr()
        new.attributes["tpu.io"] = ArrayAttr(
            [IntegerAttr(self.k, i64), IntegerAttr(self.m, i64), IntegerAttr(self.scratch, i64)]
        )
        # As for the level-S function: `spmd.partitioned`, and the shardings of the
        # arguments and results on the input and output buffers (local shapes, as at level S).
        if spmd.PARTITIONED_ATTR_NAME in f.attributes:
            new.attributes[spmd.PARTITIONED_ATTR_NAME] = UnitAttr()
        arg_s, res_s = spmd.function_shardings(f)
        shardings = [*arg_s, *res_s, *([None] * self.scratch)]
        arg_g, res_g = spmd.function_global_shapes(f)  # uneven splits' global shapes
        shapes = [*arg_g, *res_g, *([None] * self.scratch)]
        if any(shardings):
            new.arg_attrs = ArrayAttr(
                [
                    DictionaryAttr(
                        ({spmd.SHARDING_ATTR_NAME: s} if s else {})
                        | (
                            {spmd.GLOBAL_SHAPE_ATTR_NAME: DenseArrayBase.from_list(i64, g)}
                            if g
                            else {}
                        )
                    )
                    for s, g in zip(shardings, shapes, strict=True)
                ]
            )
        return new


def _viewed_outputs(direct: dict[SSAValue, int]) -> dict[SSAValue, int]:
    """The operands to compute into an output viewed as their type, by output index: each
    of a top-level `bitcast_convert` returned (`direct`) whose operand is made at the top
    level, read by it alone and not returned itself. A complex collective returned is
    such a value: without the view its whole result was copied once more at the end."""
    viewed: dict[SSAValue, int] = {}
    for v, i in direct.items():
        op = v.owner
        if not isinstance(op, hlo.BitcastConvertOp) or not isinstance(op.parent_op(), func.FuncOp):
            continue
        src = op.operand
        made = src.owner
        if not isinstance(made, Operation) or not isinstance(made.parent_op(), func.FuncOp):
            continue
        if src in direct or src in viewed or not src.has_one_use():
            continue
        if isinstance(src.type, TensorType):
            viewed[src] = i
    return viewed


def _ops_with_buffers(block: Block) -> Iterator[Operation]:
    """
    The ops whose tensor results get HBM buffers: the block's and, inside an hlo.while /
    hlo.case region, the region's (lowered into scf loops and branches of the same kernel:
    control_flow), not a fusion's inner ops, whose values stay in VMEM (fusion), nor a
    scatter's or sort's computation (scalars their lowerings evaluate).
    """
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            continue
        yield op
        if not isinstance(op, hlo.WhileOp | hlo.CaseOp):
            continue
        for region in op.regions:
            for inner in region.blocks:
                yield from _ops_with_buffers(inner)
