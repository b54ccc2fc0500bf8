"""
`copy_op`: what xDSL's `Operation.clone` makes of an op with regions (a module), in one
walk instead of three.

`spmd-pipeline`'s gates copy the whole module for each optional step they judge
(`Gate.run`, micro-batch's fused view): at 10k ops each copy cost about a tenth of the
parse (issue 14 item 7). xDSL's clone creates every op without operands, then walks the
copy and the original together to give every op its operands (a forward reference in a
graph region or a later block must resolve). Where every operand is defined before its
use in walk order (straight-line SSA: every function `spmd-pipeline` sees), one walk can
give each op its operands as it is created. The copy is the one xDSL makes: the same ops
with the same operands, results, attributes, properties, locations, successors and name
hints, and every value's uses in the same order (an op's uses are added in walk order in
both). An op that uses a value defined later makes `copy_op` fall back to xDSL's clone.
"""

from __future__ import annotations

from typing import TypeVar

from xdsl.ir import Block, Operation, Region, SSAValue

OpT = TypeVar("OpT", bound=Operation)


class _ForwardReference(Exception):
    """An operand not defined yet in walk order: the copy needs xDSL's second walk."""


def copy_op(
    op: OpT,
    value_mapper: dict[SSAValue, SSAValue] | None = None,
    op_mapper: dict[Operation, Operation] | None = None,
) -> OpT:
    """`op.clone(value_mapper)`, made in one walk where no operand is a forward reference.
    `value_mapper` receives each value of `op` mapped to its copy (micro-batch carries a
    candidate over to the copy through it); `op_mapper` each op of `op` (itself included)
    mapped to its copy, in walk order (`spmd-pipeline`'s gate carries the ops' costs over
    to the copy through it, without walking both modules again)."""
    copier = _Copier()
    try:
        copy = copier.op(op)
    except _ForwardReference:
        copier.values, copier.ops = {}, {}
        copy = op.clone(value_mapper=copier.values)
        copier.ops = dict(zip(op.walk(), copy.walk(), strict=True))
    if value_mapper is not None:
        value_mapper.update(copier.values)
    if op_mapper is not None:
        op_mapper.update(copier.ops)
    return copy


class _Copier:
    """One copy: the values (and blocks) of the original mapped to the copy's."""

    def __init__(self) -> None:
        self.values: dict[SSAValue, SSAValue] = {}
        self.blocks: dict[Block, Block] = {}
        self.ops: dict[Operation, Operation] = {}
        """Each op copied so far mapped to its copy, in walk order (an op before its
        regions' ops)."""

    def op(self, op: OpT) -> OpT:
        values = self.values
        try:
            operands = [values[v] for v in op._operands]  # pyright: ignore[reportPrivateUsage]
        except KeyError:
            raise _ForwardReference from None
        blocks = self.blocks
        copy = op.create(
            operands=operands,
            result_types=[r.type for r in op.results],
            properties=op.properties,
            attributes=op.attributes,
            location=op.location,
            successors=[blocks.get(s, s) for s in op.successors],
            regions=[Region() for _ in op.regions],
        )
        self.ops[op] = copy
        for old, new in zip(op.results, copy.results, strict=True):
            values[old] = new
            new.name_hint = old.name_hint
        for region, into in zip(op.regions, copy.regions, strict=True):
            self.region(region, into)
        return copy

    def region(self, region: Region, into: Region) -> None:
        """`Region.clone_into`: the blocks first (successors may name any), then their ops."""
        new_blocks = [Block() for _ in region.blocks]
        for block, new in zip(region.blocks, new_blocks, strict=True):
            self.blocks[block] = new
        into.insert_block(new_blocks, len(into.blocks))
        for block, new in zip(region.blocks, new_blocks, strict=True):
            for index, arg in enumerate(block.args):
                new_arg = new.insert_arg(arg.type, index, arg.location)
                self.values[arg] = new_arg
                new_arg.name_hint = arg.name_hint
            for inner in block.ops:
                new.add_op(self.op(inner))
