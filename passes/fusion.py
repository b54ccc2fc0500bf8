"""
`fusion{chip=v5e}`: group hlo ops into `hlo.fusion` ops, as XLA's instruction fusion does, so that the
cost model charges each group once for the bytes crossing its boundary instead of an HBM
round trip per op.

A greedy walk over each function's block, consumers first (reverse program order), as
XLA's `InstructionFusion` visits its post order backwards. Each op not yet taken that
someone still needs becomes the root of a group, which then takes in its producers, latest
first:

- **loop** fusion: elementwise ops (compare, select, convert, clamp...), broadcast,
  reshape, transpose, iota, splat constants, static slices and concatenate (XLA fuses
  both: a concatenate of fusible operands, micro-batch's reassembly of its chunks, is a
  loop fusion's root and its operands are never materialized);
- **input** fusion: a `reduce` (without a body) as the root, with such producers;
- **output** fusion: a `dot` or `convolution` with its elementwise consumers (its
  epilogue: bias add, activation, convert) and, as XLA on TPU fuses them into the MXU's
  operand fetch, elementwise producers of its operands (the softmax's normalization into
  the P x V dot, a layer norm into the next matmul). One dot or convolution per fusion,
  never a reduce together with one, and a reduce only as a root. A producer with no other
  user never costs more inside: level S's roofline reads each operand once and adds the
  producer's VPU time to the kernel's, so with `a, b` the compute and `c, d, e` the bytes
  over the bandwidth, the fused `max(a + b, c)` is at most the apart `max(a, d) + max(b,
  e)` whenever `c <= d + e`, which holds as the fused kernel reads the producer's inputs
  instead of writing and reading its result (and a copy only where it reads no more than
  the value it replaces). Recomputing it per tile of the other operand is level T's
  business (lowering/fusion.py applies it to the operand block after its load).

A producer is taken into the group when every user it has is in the group. A producer with
users elsewhere is duplicated into the group only if recomputing it is cheap (elementwise,
broadcast, iota, splat constant) and what the copy reads from HBM is no more than the
producer's own bytes (reading `a` and `b` to recompute `a * b` would cost more than reading
`a * b`); otherwise it stays outside, materialized. A static slice is always duplicated:
a fused slice reads only its part of its operand (`hardware.cost.fusion_input_bytes`), so
its copy costs no bytes and saves the slice's own round trip (micro-batch's chunks of an
argument); it is a leaf, its producer is not pulled in after it (that would compute the
whole operand for a part of it). Once every user of an original has a
copy, the original is dead and erased. Only ops of the block itself are fused: collectives,
region ops (while, case, manual computations), spmd ops and everything else stay outside,
so no fusion crosses a collective. Taking only producers whose users are all in the group
(and copies, which add no edges out of it) keeps the graph of fusions acyclic.

Then **multi-output** fusion (`multi_output`), XLA's producer-consumer kind: a loop
fusion reading the result of a dot's kernel that others read too joins that kernel as a
further output where the cost model (`chip`) says the merged kernel is faster and moves
fewer bytes, so the dot's result is not read back from HBM (a dot with two activations of
its result; an output nobody else reads is dropped).

Fusion works on level G and level S programs alike, but partitioning has no rule for a
fusion: fuse after `spmd-partition` (as `spmd-pipeline` does). The ops inside keep their order, so a fused program computes bit-exactly what the unfused
one did. Each fusion is named after its ops with XLA's opcode names (`multiply_add_fusion`,
`dot_add_fusion`, `reduce_fusion`; `.N` when the name repeats in the function) and located
where its root is.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from shardc.dialects import hlo
from shardc.dialects.sizes import value_bytes
from shardc.dialects.syntax import splat_element
from shardc.hardware.chips import CHIPS, get_chip
from shardc.hardware.cost import CostModel, cached
from shardc.passes.rewrite_utils import check_option
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

CHEAP = (
    *hlo.ELEMENTWISE,
    hlo.BroadcastOp,
    hlo.IotaOp,
)
"""Ops whose recomputation is cheap (a VPU op per element at most): duplicated into each
fusion that needs them. Splat constants too (`_is_cheap`)."""

LOOP = (*CHEAP, hlo.ReshapeOp, hlo.TransposeOp, hlo.SliceOp, hlo.ConcatenateOp)
"""Ops a loop fusion takes (reshape, transpose and concatenate only when all their users
are in it; a slice also as a copy: `_take`)."""

MOVES = (
    hlo.BroadcastOp,
    hlo.ConvertOp,
    hlo.ReshapeOp,
    hlo.TransposeOp,
    hlo.IotaOp,
    hlo.SliceOp,
    hlo.ConcatenateOp,
)
"""Ops that only move or retype data: a fusion is named after what it computes."""

XLA_NAMES = {
    "mul": "multiply",
    "sub": "subtract",
    "div": "divide",
    "max": "maximum",
    "min": "minimum",
    "exp": "exponential",
    "neg": "negate",
    "pow": "power",
    "dot": "dot",
}
"""XLA's opcode names where `hlo`'s differ (others are the same)."""


def _is_splat(op: Operation) -> bool:
    return isinstance(op, hlo.ConstantOp) and splat_element(op.value) is not None  # pyright: ignore


def _is_cheap(op: Operation) -> bool:
    return _kind(op) == "cheap" or _is_splat(op)


_KINDS: dict[type[Operation], str] = {}
"""Each op class's `_kind_of`: `isinstance` against these tuples of classes is most of the
price of `_role` (called for every op the greedy walk looks at, for every split
`micro-batch` estimates)."""


def _kind_of(cls: type[Operation]) -> str:
    if issubclass(cls, CHEAP):
        return "cheap"
    if issubclass(cls, LOOP):
        return "loop"
    if issubclass(cls, hlo.ConstantOp):
        return "constant"
    if issubclass(cls, hlo.ReduceOp):
        return "reduce"
    if issubclass(cls, hlo.DotOp | hlo.ConvolutionOp):
        return "dot"
    return ""


def _kind(op: Operation) -> str:
    """`_kind_of` the op's class, remembered."""
    cls = type(op)
    kind = _KINDS.get(cls)
    if kind is None:
        kind = _KINDS[cls] = _kind_of(cls)
    return kind


def _role(op: Operation) -> str | None:
    """`loop`, `reduce` or `dot` for ops a fusion may hold, else None."""
    if len(op.results) != 1:
        return None
    kind = _kind(op)
    if kind in ("cheap", "loop") or (kind == "constant" and _is_splat(op)):
        return "loop"
    if kind == "reduce" and isinstance(op, hlo.ReduceOp) and op.body is None and not op.others:
        return "reduce"
    if kind == "dot":
        return "dot"
    return None


FRONTIER_DEPTH = 8
"""How far up a chain of cheap producers `_BlockFuser._frontier` looks."""


@dataclass
class _Group:
    """One future fusion: its root, the ops it owns and the ops it recomputes (copies)."""

    root: Operation
    owned: set[Operation] = field(default_factory=set[Operation])
    copies: set[Operation] = field(default_factory=set[Operation])
    has_dot: bool = False

    def members(self) -> set[Operation]:
        return self.owned | self.copies

    @property
    def kind(self) -> str:
        if self.has_dot:
            return "output"
        return "input" if isinstance(self.root, hlo.ReduceOp) else "loop"


class _BlockFuser:
    """The greedy walk over one block (module docstring)."""

    def __init__(self, block: Block):
        self.block = block
        self.ops = list(block.ops)
        self.pos = {op: i for i, op in enumerate(self.ops)}
        self.owner: dict[Operation, _Group] = {}
        self.needed: set[Operation] = set()
        self.groups: list[_Group] = []

    def run(self) -> None:
        for op in reversed(self.ops):
            if op in self.owner:
                continue
            if _role(op) is None:
                self._need_operands_of(op)
            elif op in self.needed:
                group = self._grow(op)
                self.groups.append(group)
                members = group.members()
                for member in members:
                    self._need_operands_of(member, members)
        fused = [g for g in self.groups if len(g.members()) > 1]
        names: dict[str, int] = {}
        labels = [_fusion_name(g, self.pos, names) for g in reversed(fused)]  # program order
        # consumers first: a copy in a later fusion may be an earlier fusion's root
        for group, label in zip(fused, reversed(labels), strict=True):
            self._materialize(group, label)
        self._erase_dead()

    def _need_operands_of(self, op: Operation, members: set[Operation] | None = None) -> None:
        """Mark the producers `op` reads (nested regions included) as needed, but for
        `members` (its group's)."""
        members = members or set()
        pos, needed = self.pos, self.needed
        for inner in op.walk() if op.regions else (op,):
            for value in inner.operands:
                producer = value.owner
                if producer in pos and producer not in members:
                    needed.add(producer)  # pyright: ignore[reportArgumentType]

    def _grow(self, root: Operation) -> _Group:
        group = _Group(root, {root}, has_dot=_role(root) == "dot")
        self.owner[root] = group
        heap: list[tuple[int, int]] = []
        self._push_producers(root, heap)
        while heap:
            _, index = heapq.heappop(heap)
            p = self.ops[index]
            if p in group.owned or p in group.copies or p in self.owner:
                continue
            if self._take(group, p) and not isinstance(p, hlo.SliceOp):
                self._push_producers(p, heap)  # a slice is a leaf: it reads its part
        return group

    def _take(self, group: _Group, p: Operation) -> bool:
        """Take producer `p` into `group` (owned or as a copy); False if it stays out."""
        role = _role(p)
        if role is None or role == "reduce":
            return False
        if role == "dot" and (group.has_dot or isinstance(group.root, hlo.ReduceOp)):
            return False
        # nobody else reads it (stops at the first other reader: a value read by thousands
        # of ops, offered to each of their groups, is not walked whole each time)
        owned = group.owned
        if p not in self.needed and all(u.operation in owned for r in p.results for u in r.uses):
            group.owned.add(p)
            self.owner[p] = group
            group.has_dot |= role == "dot"
            return True
        if _is_cheap(p) and self._operand_bytes(p, FRONTIER_DEPTH) <= value_bytes(
            p.results[0].type
        ):
            group.copies.add(p)
            return True
        if isinstance(p, hlo.SliceOp):  # its copy reads the sliced part: the bytes it saves
            group.copies.add(p)
            return True
        return False

    def _operand_bytes(self, op: Operation, depth: int) -> int:
        """What recomputing `op` reads from HBM: its operands' `_frontier` bytes."""
        return sum(self._frontier(o, depth - 1) for o in op.operands)

    def _frontier(self, value: SSAValue, depth: int) -> int:
        """
        The fewest bytes from which `value` can be recomputed by cheap copies: nothing for
        a splat or iota, else the smaller of its own bytes and its operands' (through
        cheap producers no fusion owns yet, `depth` levels up).
        """
        own = value_bytes(value.type)
        producer = value.owner
        if not isinstance(producer, Operation) or producer not in self.pos:
            return own
        if _is_splat(producer) or isinstance(producer, hlo.IotaOp):
            return 0
        if depth <= 0 or producer in self.owner or not _is_cheap(producer):
            return own
        return min(own, self._operand_bytes(producer, depth))

    def _push_producers(self, op: Operation, heap: list[tuple[int, int]]) -> None:
        for value in op.operands:
            index = self.pos.get(value.owner)  # pyright: ignore[reportArgumentType]
            if index is not None:
                heapq.heappush(heap, (-index, index))

    def _materialize(self, group: _Group, name: str) -> None:
        """
        Build `group`'s fusion before its root. The owned ops are moved into its body (their
        outside operands re-pointed at its arguments), not cloned and erased: nothing
        outside reads them but the root's results, which the fusion's replace, and a move
        costs a fraction of a clone (micro-batch fuses every split it estimates, issue 14
        item 7). Copies are cloned: their originals stay for their other users.
        """
        members = sorted(group.members(), key=self.pos.__getitem__)
        inside = set(members)
        inputs: dict[SSAValue, None] = {}
        for m in members:
            for value in m.operands:
                if value.owner not in inside:
                    inputs[value] = None
        body = Block(arg_types=[v.type for v in inputs])
        mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, body.args, strict=True))
        root = group.root
        # `create`, not the constructors: the same ops, without IRDL's argument checks
        # (half the price of a fusion; micro-batch's estimates make hundreds per split)
        fusion = hlo.FusionOp.create(
            operands=list(inputs),
            result_types=root.result_types,
            regions=[Region(body)],
            properties={"kind": StringAttr(group.kind), "fusion_name": StringAttr(name)},
            location=root.location,
        )
        self.block.insert_op_before(fusion, root)
        for old, new in zip(root.results, fusion.results, strict=True):
            new.name_hint = old.name_hint
            old.replace_all_uses_with(new)  # before the move: these are the outside uses
        for m in members:
            if m in group.copies:
                clone = m.clone(value_mapper=mapping)
                body.add_op(clone)
                for old, new in zip(m.results, clone.results, strict=True):
                    mapping[old] = new
                    new.name_hint = old.name_hint
                continue
            self.block.detach_op(m)
            for i, value in enumerate(m.operands):
                if (inner := mapping.get(value)) is not None:
                    m.operands[i] = inner
            body.add_op(m)
        ret = hlo.ReturnOp.create(
            operands=[mapping.get(r, r) for r in root.results], location=root.location
        )
        body.add_op(ret)

    def _erase_dead(self) -> None:
        """Originals whose every user now reads a copy inside a fusion."""
        for op in reversed(list(self.block.ops)):
            if (
                _role(op) is not None
                and op not in self.owner
                and not any(r.uses for r in op.results)
            ):
                self.block.erase_op(op)


def _xla_name(op: Operation) -> str:
    short = op.name.removeprefix("hlo.")
    return XLA_NAMES.get(short, short)


def _fusion_name(group: _Group, pos: dict[Operation, int], names: dict[str, int]) -> str:
    """
    After the root, as XLA names fusions: the dot, convolution or reduce and the root
    (`dot_add_fusion`), else the first op that computes something and the root
    (`multiply_add_fusion`); `.N` once the name was taken in the function.
    """
    members, root = sorted(group.members(), key=pos.__getitem__), group.root
    core = next((m for m in members if _role(m) in ("dot", "reduce")), None)
    if core is None:
        core = next((m for m in members if not (_is_splat(m) or isinstance(m, MOVES))), root)
    parts = [_xla_name(root)] if core is root else [_xla_name(core), _xla_name(root)]
    base = "_".join(parts) + "_fusion"
    n = names.get(base, 0)
    names[base] = n + 1
    return base if n == 0 else f"{base}.{n}"


class _Inliner:
    """The body of a multi-output fusion being built from whole ops and fusions."""

    def __init__(self) -> None:
        self.inputs: list[SSAValue] = []
        self.body = Block()
        self.inside: dict[SSAValue, SSAValue] = {}

    def value(self, outer: SSAValue) -> SSAValue:
        """`outer` as seen inside: a value made inside, or a (new) block argument."""
        if outer not in self.inside:
            self.inputs.append(outer)
            self.inside[outer] = self.body.insert_arg(outer.type, len(self.body.args))
        return self.inside[outer]

    def add(self, op: Operation) -> list[SSAValue]:
        """Inline `op` (a fusion's body, or the op itself); its results as seen inside."""
        if not isinstance(op, hlo.FusionOp):
            clone = op.clone(value_mapper={v: self.value(v) for v in op.operands})
            self.body.add_op(clone)
            return list(clone.results)
        local: dict[SSAValue, SSAValue] = {
            arg: self.value(v) for arg, v in zip(op.body.block.args, op.inputs, strict=True)
        }
        for inner in op.body.block.ops:
            if isinstance(inner, hlo.ReturnOp):
                return [local[v] for v in inner.values]
            clone = inner.clone(value_mapper=dict(local))
            self.body.add_op(clone)
            for old, new in zip(inner.results, clone.results, strict=True):
                local[old] = new
                new.name_hint = old.name_hint
        raise AssertionError("a fusion's body ends with hlo.return")


def _kept(producer: Operation, consumer: Operation) -> list[SSAValue]:
    """The results of `producer` someone besides `consumer` reads: the merged outputs."""
    return [r for r in producer.results if any(u.operation is not consumer for u in r.uses)]


def _merge(producer: Operation, consumer: Operation, taken: set[str]) -> hlo.FusionOp:
    """`producer` (a dot, convolution or output fusion) and `consumer` (a loop fusion or
    op reading its results) as one fusion (detached) with the producer's results others
    read (`_kept`) and the consumer's."""
    inliner = _Inliner()
    inside = inliner.add(producer)
    inliner.inside.update(zip(producer.results, inside, strict=True))
    kept = _kept(producer, consumer)
    outputs = [inliner.inside[r] for r in kept] + inliner.add(consumer)
    ret = hlo.ReturnOp(outputs)
    ret.location = producer.location
    inliner.body.add_op(ret)
    label = producer.label if isinstance(producer, hlo.FusionOp) else _unused_label(producer, taken)
    types = [*(r.type for r in kept), *consumer.result_types]
    merged = hlo.FusionOp(inliner.inputs, types, Region(inliner.body), "output", label)
    merged.location = producer.location
    return merged


def _unused_label(op: Operation, taken: set[str]) -> str:
    """`dot_fusion` (`.N` when a fusion of the block, `taken`, has that name) for a lone op."""
    base = f"{_xla_name(op)}_fusion"
    n = 0
    while (name := base if n == 0 else f"{base}.{n}") in taken:
        n += 1
    return name


def _is_mxu(op: Operation) -> bool:
    if isinstance(op, hlo.FusionOp):
        return op.kind.data == "output"
    return isinstance(op, hlo.DotOp | hlo.ConvolutionOp)


def _is_loop(op: Operation) -> bool:
    if isinstance(op, hlo.FusionOp):
        return op.kind.data == "loop"
    return _role(op) == "loop"


def _feeds_collective(op: Operation) -> bool:
    return any(
        u.operation.dialect_name() != "hlo" and not isinstance(u.operation, func.ReturnOp)
        for r in op.results
        for u in r.uses
    )


def multi_output(block: Block, model: CostModel) -> None:
    """
    Producer-consumer multi-output fusion: a loop fusion (or loop op) `c` that reads a
    result of a dot's kernel `f` (a dot, a convolution or an output fusion) whose result
    is needed outside too joins `f` as a second output, so the dot's result is not read
    back from HBM: where the merged kernel is faster and moves fewer bytes than the two
    (`hardware.cost`), `c`'s other operands exist before `f`, and no collective reads
    `f`'s results (the merged kernel ends later than `f` by `c`'s VPU time, which must not
    delay a collective; what the compute stream runs after `c`'s old place starts
    earlier).
    """
    order = {op: i for i, op in enumerate(block.ops)}
    taken = {op.label for op in order if isinstance(op, hlo.FusionOp)}
    for c in list(block.ops):
        if not _is_loop(c):
            continue
        producers = [v.owner for v in c.operands if v.owner in order and _is_mxu(v.owner)]  # pyright: ignore[reportArgumentType]
        for f in dict.fromkeys(producers):
            if _try_merge(block, f, c, model, order, taken):  # pyright: ignore[reportArgumentType]
                break


def _try_merge(
    block: Block,
    f: Operation,
    c: Operation,
    model: CostModel,
    order: dict[Operation, int],
    taken: set[str],
) -> bool:
    """Merge `c` into `f` (`multi_output`'s conditions); `order` and `taken` (the block's
    fusion names) are kept up to date."""
    at = order[f]
    if any(v.owner in order and v.owner is not f and order[v.owner] > at for v in c.operands):  # pyright: ignore[reportArgumentType]
        return False
    merged = _merge(f, c, taken)
    whole, alone, rest = model.op_cost(merged), model.op_cost(f), model.op_cost(c)
    if (
        whole.time >= alone.time + rest.time
        or whole.bytes >= alone.bytes + rest.bytes
        or _feeds_collective(f)
    ):
        merged.erase()
        return False
    block.insert_op_before(merged, f)
    for old, new in zip([*_kept(f, c), *c.results], merged.results, strict=True):
        new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    block.erase_op(c)
    block.erase_op(f)
    order[merged] = at  # where f was: the relative order of the rest is unchanged
    taken.add(merged.label)
    return True


def fuse_function(function: func.FuncOp, model: CostModel) -> None:
    """Fuse the top-level block of `function` (region ops' bodies stay as they are)."""
    if function.body.blocks:
        fuse_block(function.body.block, model)


def fuse_block(block: Block, model: CostModel) -> None:
    """Fuse the ops of `block` (micro-batch estimates its splits as fusion leaves them)."""
    _BlockFuser(block).run()
    multi_output(block, model)


@dataclass(frozen=True)
class FusionPass(ModulePass):
    """`fusion`: the module docstring's grouping on every function."""

    name = "fusion"

    chip: str = "v5e"
    """The chip whose cost model decides multi-output fusion."""

    def __post_init__(self) -> None:
        check_option(
            self.name, "chip", self.chip in CHIPS, f"one of {', '.join(CHIPS)}", f"'{self.chip}'"
        )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        model = cached(CostModel(get_chip(self.chip)))
        for function in list(op.walk()):
            if isinstance(function, func.FuncOp):
                fuse_function(function, model)
