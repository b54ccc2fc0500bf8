"""
XLA's control flow in HLO text: `while(%init), condition=%c, body=%b` becomes `hlo.while`
and `conditional(...)` becomes `hlo.case`.

A while's carried value is usually a tuple: it is flattened into one carried value per
array (nested tuples too) and rebuilt wherever the condition, the body or the users of the
result take it apart. A `conditional` with a predicate (`true_computation=`,
`false_computation=`) is a case on 1 - convert(pred) (the true branch first); with an
index, `branch_computations={%b0, %b1, ..}` in order (an index out of range runs the last
one, as in XLA). Each branch computation takes its operand, a value from around the case
(its regions may use it directly).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from shardc.dialects import hlo
from shardc.frontends.hlo_text_parse import Computation, Instr, Shape
from shardc.frontends.hlo_text_source import TupleVal, Value
from xdsl.dialects.builtin import TensorType, i32
from xdsl.ir import Block, Region, SSAValue

if TYPE_CHECKING:
    from shardc.frontends.hlo_text import HloTextImporter

CONTROL_ATTRS = {
    "while": frozenset({"condition", "body"}),
    "conditional": frozenset({"true_computation", "false_computation", "branch_computations"}),
}
"""The attributes of the control-flow instructions (besides the common ones)."""


def _flatten(value: Value) -> list[SSAValue]:
    if isinstance(value, TupleVal):
        return [v for item in value.items for v in _flatten(item)]
    if not isinstance(value, SSAValue):
        raise ValueError("a carried value must be arrays and tuples of them")
    return [value]


def _rebuild(template: Value, flat: list[SSAValue]) -> Value:
    """`flat` (consumed from the front) in the tuple structure of `template`."""
    if isinstance(template, TupleVal):
        return TupleVal([_rebuild(item, flat) for item in template.items])
    return flat.pop(0)


def _region(
    imp: HloTextImporter, instr: Instr, comp: Computation, arg_types: list[Any], bind: Callable
) -> tuple[Region, list[SSAValue]]:
    """`comp` converted into a new one-block region (arguments of `arg_types`, bound to
    its parameter by `bind(block)`); the region and what it returns, flattened."""
    block = Block(arg_types=arg_types)
    saved = imp.emit.block, imp.emit.location
    imp.emit.block = block
    try:
        value = imp.inline(instr, comp, [bind(block)])
        returned = _flatten(value)
        imp.at(comp.root.pos, comp.root)
        imp.emit.add(hlo.ReturnOp(returned))
    finally:
        imp.emit.block, imp.emit.location = saved
    return Region(block), returned


def convert_while(imp: HloTextImporter, instr: Instr, env: dict[str, Value]) -> Value:
    init = imp.only_operand(instr, env)
    carried = _flatten(init)
    types = [v.type for v in carried]

    def bind(block: Block) -> Value:
        return _rebuild(init, list(block.args))

    cond, _ = _region(imp, instr, imp.src.called(instr, "condition"), types, bind)
    body, _ = _region(imp, instr, imp.src.called(instr, "body"), types, bind)
    imp.at(instr.pos, instr)
    op = imp.emit.add(hlo.WhileOp(carried, cond, body))
    imp.stats.constructs["while (tuple flattened)"] += isinstance(init, TupleVal)
    return _rebuild(init, list(op.results))


def _branch_names(imp: HloTextImporter, instr: Instr) -> list[str]:
    if "branch_computations" in instr.attrs:
        a = imp.src.attr(instr, "branch_computations")
        return [n.strip().lstrip("%") for n in a.text.strip().strip("{}").split(",")]
    return [
        imp.src.attr(instr, key).text.strip().lstrip("%")
        for key in ("true_computation", "false_computation")
    ]


def convert_conditional(imp: HloTextImporter, instr: Instr, env: dict[str, Value]) -> Value:
    selector, *args = imp.operands(instr, env)
    names = _branch_names(imp, instr)
    if len(names) != len(args) or not isinstance(selector, SSAValue):
        raise imp.error(
            instr.pos, f"conditional has {len(names)} branches but {len(args)} operands"
        )
    regions, results = [], None
    for name, arg in zip(names, args, strict=True):
        comp = imp.src.computations.get(name)
        if comp is None:
            raise imp.error(instr.pos, f"computation {name} is not defined")
        region, returned = _region(imp, instr, comp, [], lambda block, a=arg: a)
        regions.append(region)
        results = results or returned
    assert results is not None
    imp.at(instr.pos, instr)
    scalar = TensorType(i32, [])
    index = selector
    if "branch_computations" not in instr.attrs:  # a predicate: the true branch first
        index = imp.emit.binary(
            "sub", imp.emit.splat(1, scalar), imp.emit.convert(selector, scalar)
        )
    op = imp.emit.add(hlo.CaseOp(index, regions, [v.type for v in results]))
    return _rebuild_shape(instr.shape, list(op.results))


def _rebuild_shape(shape: Shape, flat: list[SSAValue]) -> Value:
    """`flat` in the tuple structure of an instruction's result shape."""
    if not shape.is_tuple():
        return flat.pop(0)
    return TupleVal([_rebuild_shape(s, flat) for s in shape.elements])
