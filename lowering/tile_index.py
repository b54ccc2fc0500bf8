"""
Index arithmetic for the tiled loops of `compute`: an index is an `int` where it is known
when the kernel is built (folded) or an `index` value computed in the kernel (`Ix`). A
`TileEmitter` shares one tiled op's index constants (emitted once, before its first op)
and emits each index op once per block it dominates (`once`), so the loops carry no
duplicate arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable

from shardc.lowering.emit import INDEX, Emitter
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Block, Operation, SSAValue

Ix = int | SSAValue
"""An index known at compile time (folded) or computed in the kernel."""


# Index arithmetic with folding ---------------------------------------------------------


class TileConstants:
    """The index constants of one tiled op, emitted once, before its first op."""

    def __init__(self, block: Block):
        self.block = block
        self.anchor: Operation | None = block.last_op
        self.cache: dict[int, SSAValue] = {}

    def __call__(self, k: int) -> SSAValue:
        if k not in self.cache:
            c = arith.ConstantOp(IntegerAttr(k, INDEX))
            c.result.name_hint = f"c{k}" if k >= 0 else f"cm{-k}"
            if self.anchor is not None:
                self.block.insert_op_after(c, self.anchor)
            elif self.block.first_op is not None:
                self.block.insert_op_before(c, self.block.first_op)
            else:
                self.block.add_op(c)
            self.anchor = c
            self.cache[k] = c.result
        return self.cache[k]


class TileEmitter(Emitter):
    """An emitter sharing its tiled op's constants, remembering the index ops it made."""

    def __init__(self, block: Block, consts: TileConstants, memo: dict | None = None):
        super().__init__(block)
        self.consts = consts
        self.memo: dict = dict(memo or {})
        """(op, operands) -> value; nested blocks inherit their parent's (it dominates)."""

    def index(self, v: int, hint: str | None = None) -> SSAValue:
        return self.consts(v)

    def nested(self, block: Block) -> TileEmitter:
        return TileEmitter(block, self.consts, self.memo)

    def once(self, key: tuple, make: Callable[[], Operation], hint: str | None = None) -> SSAValue:
        if key not in self.memo:
            self.memo[key] = self.op(make(), hint)
        return self.memo[key]

    def loop(self, n: int, hint: str) -> tuple[TileEmitter, SSAValue]:
        """An `scf.for %hint = 0 to n` appended here; its body's emitter and index."""
        body = Block(arg_types=[INDEX])
        body.args[0].name_hint = hint
        self.op(scf.ForOp(self.index(0), self.index(n), self.index(1), [], body))
        return self.nested(body), body.args[0]


def ix_value(b: TileEmitter, x: Ix) -> SSAValue:
    return b.index(x) if isinstance(x, int) else x


def ix_add(b: TileEmitter, x: Ix, y: int) -> Ix:
    if isinstance(x, int):
        return x + y
    return x if y == 0 else b.once(("add", x, y), lambda: arith.AddiOp(x, b.index(y)))


def ix_mul(b: TileEmitter, x: Ix, k: int) -> Ix:
    if isinstance(x, int):
        return x * k
    return x if k == 1 else b.once(("mul", x, k), lambda: arith.MuliOp(x, b.index(k)))


def ix_div(b: TileEmitter, x: Ix, k: int) -> Ix:
    if isinstance(x, int):
        return x // k
    return x if k == 1 else b.once(("div", x, k), lambda: arith.DivSIOp(x, b.index(k)))


def ix_rem(b: TileEmitter, x: Ix, k: int) -> Ix:
    if isinstance(x, int):
        return x % k
    return 0 if k == 1 else b.once(("rem", x, k), lambda: arith.RemSIOp(x, b.index(k)))


def ix_cmp(b: TileEmitter, x: Ix, pred: str, k: int) -> bool | SSAValue:
    if isinstance(x, int):
        return {"eq": x == k, "slt": x < k, "sge": x >= k}[pred]
    return b.once(("cmp", x, pred, k), lambda: arith.CmpiOp(x, b.index(k), pred))


def emit_if(b: TileEmitter, cond: bool | SSAValue, emit: Callable[[TileEmitter], None]) -> None:
    """Emit `emit` here, nowhere, or in an `scf.if`, as `cond` says."""
    if cond is True:
        emit(b)
    elif cond is not False:
        inner = b.nested(Block())
        emit(inner)
        inner.op(scf.YieldOp())
        b.op(scf.IfOp(cond, [], [inner.block]))
