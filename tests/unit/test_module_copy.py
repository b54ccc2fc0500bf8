"""`module_copy.copy_op` makes what xDSL's `clone` makes: the same printed module, the same
op fields, and every value's uses in the same order (passes read `uses` in order), on the
examples at every step of `spmd-pipeline`; a forward reference falls back to `clone`."""

from __future__ import annotations

from pathlib import Path

import pytest
from shardc.bench.partition_speed import program as bench_program
from shardc.dialects import hlo, make_context
from shardc.parsing import parse_and_verify
from shardc.passes.module_copy import copy_op
from shardc.passes.spmd_pipeline import SpmdPipelinePass
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Operation, SSAValue

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))
CTX = make_context()


def _values(op: Operation) -> list[SSAValue]:
    """The op's results and the arguments of its regions' blocks."""
    found: list[SSAValue] = list(op.results)
    for region in op.regions:
        for block in region.blocks:
            found += block.args
    return found


def _shape(module: ModuleOp) -> list[object]:
    """Everything a copy must keep, with ops and values named by their walk position."""
    index = {op: i for i, op in enumerate(module.walk())}
    out: list[object] = []
    for op in module.walk():
        out.append(
            (
                op.name,
                [
                    (
                        type(v).__name__,
                        index.get(v.owner) if isinstance(v.owner, Operation) else None,
                    )
                    for v in op.operands
                ],  # fmt: skip
                op.result_types,
                dict(op.attributes),
                dict(op.properties),
                op.location,
            )
        )
        for value in _values(op):
            out.append(
                (value.type, value.name_hint, [(index[u.operation], u.index) for u in value.uses])
            )
    return out


def check_copy(module: ModuleOp) -> None:
    copy = copy_op(module)
    assert str(copy) == str(module.clone())
    assert _shape(copy) == _shape(module.clone())
    for a, b in zip(copy.walk(), module.walk(), strict=True):
        assert a is not b
        assert all(o.owner is not b for o in a.operands)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_copy_at_every_step_of_the_pipeline(path: Path) -> None:
    module = parse_and_verify(CTX, path.read_text(), str(path))
    check_copy(module)
    SpmdPipelinePass().run(CTX, module, lambda _: check_copy(module))


def test_copy_of_the_bench_chain() -> None:
    module = parse_and_verify(CTX, bench_program(200), "bench")
    SpmdPipelinePass().run(CTX, module, lambda _: check_copy(module))


def test_forward_reference_falls_back_to_clone() -> None:
    """An op reading a value defined after it (not SSA-dominance order) is copied as
    `clone` copies it: its operand is the copy of the later value."""
    ty = TensorType(f32, [4])
    function = func.FuncOp("f", ((ty,), (ty,)))
    block: Block = function.body.block
    arg = block.args[0]
    later = hlo.AddOp(arg, arg)
    first = hlo.MulOp(later.result, arg)
    block.add_ops([first, later, func.ReturnOp(first.result)])
    module = ModuleOp([function])
    copy = copy_op(module)
    assert str(copy) == str(module.clone())
    mul = next(op for op in copy.walk() if isinstance(op, hlo.MulOp))
    add = next(op for op in copy.walk() if isinstance(op, hlo.AddOp))
    assert mul.operands[0] is add.result
