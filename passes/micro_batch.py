"""
`micro-batch{chunks=0 max-chunks=8 chip=v5e min-gain=0.02 force=false memory-limit= max-in-flight=4 fused=false}`:
split a per-device program into independent chunks along a dimension that flows through
its collectives (the batch, usually), so that the collective of one chunk overlaps the
compute of the next. Tensor parallelism needs this: the all_reduce after a row-parallel
dot depends on the whole dot and the next layer depends on the whole all_reduce, so
there is nothing to overlap until the work is cut into independent pieces. (Wang et
al., ASPLOS 2023, and XLA's windowed einsum decompose the dot next to the collective
instead, see `collective-matmul`; here the whole chain of ops between collectives is cut,
which in this cost model pays more for tensor parallelism: see `bench/overlap.py`.)

Which dimension. Every (value, dimension) pair is a node; each op links the dimensions
of its results to the operand dimensions they come from element for element
(elementwise ops, select, convert: the same dimension; broadcast: a non-expanded operand
dimension; transpose: the permuted one; reshape: a dimension kept with the same size
and the same number of elements before it; dot: batch and free dimensions, never
contracting ones; reduce: kept dimensions; slice / dynamic_slice / dynamic_update_slice:
dimensions they keep whole; concatenate: all but the concatenated one; sort / top_k: all
but the sorted one (top_k's last), in every operand and result; collectives:
every dimension but the gathered / scattered / all-to-all ones (operand k with result k
of a variadic collective); constants and iota: every dimension). The linked classes
(union-find) are the candidate dimensions. A class qualifies when every value has at
most one dimension in it, all have one size, and it splits at least one sync collective.
An op is split when all its results are in the class on dimensions it links (a variadic
collective with one operand outside the class is not); the other ops are not split
(unknown ops, ops with regions, `_start` forms, a partial slice): they take their
operands whole and, if their result is in the class, it is cut into chunks where a
split op needs it.

The rewrite, for a class and a chunk count k that divides its size: every split op
becomes k ops on chunks (same op, same attributes; a slice's limit and a dynamic_slice's
size shrink to the chunk on that dimension). Operands linked to the split dimension are
taken chunk by chunk; others (the weights) are shared by all chunks, and an op with no
chunked operand (a bias broadcast) is made once for all chunks. Values of the class
made by ops that are not split (arguments, non-splat constants) are cut by static
slices; splat constants become one chunk-sized constant; a split value used by an op
that is not split (the return, a reduction over the batch) is reassembled with one
concatenate. Every element is computed by the same op from the same numbers as before:
integers are identical; float dots agree to rounding (BLAS picks its kernel by shape).
The block is then left with each op's chunks at its place, or re-ordered chunk by chunk
(all of chunk 0 that does not wait for others first), whichever the estimate prefers:
`schedule` fills idle time with the first ready op in block order, so the order decides
how early the first chunk's collective starts.

When. The pass splits only when the cost model says so: for each qualifying class (at
most 4, those covering the most collectives first) and each chunk count (`chunks`, or
every divisor of the class size from 2 to `max-chunks`), it splits a copy of the module,
makes its collectives async and list-schedules the block with `schedule`'s scheduler
and `hardware.cost` for `chip` (the same model the interpreter's timing uses), and
keeps the fastest (of both block orders); the original is estimated as the pipeline
would leave it (the better of scheduled and written order: its written order's time,
cheap, is tried first). With `fused=true` (spmd-pipeline sets it when `fusion` runs after)
the original and every split are estimated as `fusion` will leave them, so a split is not
charged for the slices, concatenate and per-chunk kernels fusion removes, nor the original
for kernels fusion merges (the floor below is then the fused block's). A
plan whose lower bound (`SplitFloor`: the engine's and the compute stream's totals, each
split collective paying each chunk's time less what it may overlap, the first chunk all of
it where only its sibling chunks can be in flight with it; and the chains' bound,
`chain_floor.ChainFloor`: device by device, the longest chain of dependent collectives with
compute free, each run of collectives between two ordered whole ones passing the engine one
after the other, which the totals miss where collectives end apart per device, as
collective-matmul's rings of permutes on a line) cannot beat the best so far, or the
`min-gain` threshold, is not built; a larger count of a class is not tried once a count
was slower than the one before and missed `min-gain` (the chunks' latencies and re-reads
only grow from there). It
fires only if the best estimate is at least `min-gain` (a fraction) faster. More chunks hide more of the last
collective but re-read the shared operands (weights) once per chunk and pay the
collectives' latency per chunk: for small, memory-bound layers two chunks are the most
that pays, for large compute-bound ones more hide more. `force=true` splits whenever a class qualifies (the best estimate even if slower;
for tests). `memory-limit` and `max-in-flight` are `schedule`'s, for the estimate: a
split that cannot be scheduled within the limit is not taken.

Runs on level-S programs (after `spmd-partition`) on sync collectives: in
`spmd-pipeline` after `collective-combine` (which can merge the chunks' collectives back
together) and `collective-matmul`, before `async-split` and `schedule`. Only
single-block function bodies are split.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from shardc.dialects import collective, hlo
from shardc.dialects.spmd import MeshOp, find_mesh
from shardc.dialects.syntax import i64_array, i64_attr, splat_elements
from shardc.hardware.chips import CHIPS, UnknownChipError, get_chip
from shardc.hardware.cost import CostModel, cached
from shardc.hardware.vmem import IN_FLIGHT
from shardc.passes.block_order import set_order, stable_topological_order
from shardc.passes.chain_floor import ChainFloor, Passage
from shardc.passes.fusion import fuse_block, fuse_function
from shardc.passes.module_copy import copy_op
from shardc.passes.rewrite_utils import check_option, erase_if_dead
from shardc.passes.step_estimate import (
    OpCosts,
    StepGraph,
    op_time,
    per_op,
    program_order_time,
    scheduled_time,
)
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ModuleOp,
    NoneAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

Links = dict[tuple[int, int], list[tuple[int, int]]]
"""(result index, result dim) -> the (operand index, operand dim) it comes from."""

MAX_CLASSES = 4
"""Candidate dimensions estimated per function, at most."""


# Which dimensions each op carries through -------------------------------------------


def _shape(value: SSAValue) -> tuple[int, ...]:
    ty = value.type
    if ty.__class__ is TensorType:  # without the abstract class check (every op asks)
        return tuple([d.data for d in cast(TensorType, ty).shape.data])
    return tuple(ty.get_shape()) if isinstance(ty, TensorType) else ()


def _rank(value: SSAValue) -> int:
    ty = value.type
    if ty.__class__ is TensorType:
        return len(cast(TensorType, ty).shape.data)
    return len(_shape(value))


def _same_dims(op: Operation, operands: Sequence[int]) -> Links:
    """Result 0 dimension d from dimension d of each listed operand of the same rank (one
    dict per (rank, operands), shared by the ops that have them: read only)."""
    rank = _rank(op.results[0])
    values = tuple(op._operands)  # pyright: ignore[reportPrivateUsage]
    same = tuple([i for i in operands if _rank(values[i]) == rank])
    links = _SAME_DIMS.get((rank, same))
    if links is None:
        links = _SAME_DIMS[(rank, same)] = {(0, d): [(i, d) for i in same] for d in range(rank)}
    return links


_SAME_DIMS: dict[tuple[int, tuple[int, ...]], Links] = {}
"""`_same_dims`'s links by (rank, the operands of that rank): most ops of a program are
elementwise, and their links are the same few dicts (issue 14 item 7)."""


def _reshape_links(op: hlo.ReshapeOp) -> Links:
    src, dst = _shape(op.operands[0]), _shape(op.results[0])
    links: Links = {}
    for j, size in enumerate(dst):
        before = math.prod(dst[:j])
        for i, s in enumerate(src):
            if s == size and math.prod(src[:i]) == before:
                links[(0, j)] = [(0, i)]
                break
    return links


def _dot_links(op: hlo.DotOp) -> Links:
    (lb, rb), (lc, rc) = op.batching, op.contracting
    lf = hlo.dot_free_dims(len(_shape(op.lhs)), lb, lc)
    rf = hlo.dot_free_dims(len(_shape(op.rhs)), rb, rc)
    links: Links = {}
    for i, (lhs_dim, rhs_dim) in enumerate(zip(lb, rb, strict=True)):
        links[(0, i)] = [(0, lhs_dim), (1, rhs_dim)]
    for i, lhs_dim in enumerate(lf):
        links[(0, len(lb) + i)] = [(0, lhs_dim)]
    for i, r in enumerate(rf):
        links[(0, len(lb) + len(lf) + i)] = [(1, r)]
    return links


def _collective_links(op: collective.CollectiveOp) -> Links:
    excluded: set[int] = set()
    if isinstance(op, collective.AllGatherOp | collective.ReduceScatterOp):
        excluded = {op.dim.value.data}
    elif isinstance(op, collective.AllToAllOp):
        excluded = {op.split_dim.value.data, op.concat_dim.value.data}
    return {
        (k, d): [(k, d)]
        for k, r in enumerate(op.results)
        for d in range(len(_shape(r)))
        if d not in excluded
    }


def op_links(op: Operation) -> Links | None:
    """
    How `op` can be split: for each result dimension it can be split on, the operand
    dimensions split with it (others are used whole). None: never split.
    """
    if op.regions or not op.results:
        return None
    for r in op.results:
        if r.type.__class__ is not TensorType and not isinstance(r.type, TensorType):
            return None
    rule = _rule_of(type(op))
    return rule(op) if rule is not None else None


def _source_links(op: Operation) -> Links:
    """A constant or iota: every dimension, from nothing."""
    return {(0, d): [] for d in range(len(_shape(op.results[0])))}


def _elementwise_links(op: Operation) -> Links:
    return _same_dims(op, range(len(op.operands)))


def _broadcast_links(op: hlo.BroadcastOp) -> Links:
    src, dst = _shape(op.operand), _shape(op.result)
    links: Links = {(0, d): [] for d in range(len(dst))}
    for i, d in enumerate(op.dims):
        if src[i] == dst[d]:
            links[(0, d)] = [(0, i)]
    return links


def _transpose_links(op: hlo.TransposeOp) -> Links:
    return {(0, i): [(0, p)] for i, p in enumerate(op.perm)}


def _reduce_links(op: hlo.ReduceOp) -> Links | None:
    if op.has_body:
        return None
    kept = [d for d in range(len(_shape(op.operand))) if d not in op.dims]
    return {(0, i): [(0, d)] for i, d in enumerate(kept)}


def _slice_links(op: hlo.SliceOp) -> Links:
    src = _shape(op.operand)
    return {
        (0, d): [(0, d)]
        for d, (lo, hi, st) in enumerate(op.bounds)
        if lo == 0 and hi == src[d] and st == 1
    }


def _dynamic_slice_links(op: hlo.DynamicSliceOp) -> Links:
    src = _shape(op.operand)
    return {(0, d): [(0, d)] for d, s in enumerate(op.sizes) if s == src[d]}


def _update_slice_links(op: hlo.DynamicUpdateSliceOp) -> Links:
    src, upd = _shape(op.operand), _shape(op.update)
    return {(0, d): [(0, d), (1, d)] for d in range(len(src)) if src[d] == upd[d]}


def _concatenate_links(op: hlo.ConcatenateOp) -> Links:
    cat = op.dimension.value.data
    return {
        (0, d): [(i, d) for i in range(len(op.operands))]
        for d in range(len(_shape(op.result)))
        if d != cat
    }


def _sort_links(op: hlo.SortOp | hlo.TopKOp) -> Links:
    """Every dimension but the sorted one (top_k: the last), in all results and operands."""
    rank = len(_shape(op.operands[0]))
    whole = op.dim if isinstance(op, hlo.SortOp) else rank - 1
    return {
        (k, d): [(i, d) for i in range(len(op.operands))]
        for k in range(len(op.results))
        for d in range(rank)
        if d != whole
    }


def _convolution_links(op: hlo.ConvolutionOp) -> Links:
    """
    The batch from the lhs batch (without batch groups, which regroup it) and the output
    features from the kernel's (without groups); spatial dimensions have windows.
    """
    links: Links = {}
    if op.batch_groups == 1:
        links[(0, op.out_dims_[0])] = [(0, op.lhs_dims_[0])]
    if op.batch_groups == op.feature_groups == 1:
        links[(0, op.out_dims_[1])] = [(1, op.rhs_dims_[1])]
    return links


_LINK_RULES: list[tuple[type | tuple[type, ...], Callable[[Any], Links | None]]] = [
    ((hlo.ConstantOp, hlo.IotaOp), _source_links),
    (
        (
            *hlo.ELEMENTWISE,
            hlo.ComplexOp,
            hlo.RealOp,
            hlo.ImagOp,
        ),
        _elementwise_links,
    ),
    (hlo.BroadcastOp, _broadcast_links),
    (hlo.TransposeOp, _transpose_links),
    (hlo.ReshapeOp, _reshape_links),
    (hlo.DotOp, _dot_links),
    (hlo.ReduceOp, _reduce_links),
    (hlo.SliceOp, _slice_links),
    (hlo.DynamicSliceOp, _dynamic_slice_links),
    (hlo.DynamicUpdateSliceOp, _update_slice_links),
    (hlo.ConcatenateOp, _concatenate_links),
    ((hlo.SortOp, hlo.TopKOp), _sort_links),
    (hlo.ConvolutionOp, _convolution_links),
    (collective.SYNC_OPS, _collective_links),
]
"""`op_links`'s rule for each kind of op, the first whose classes the op's is one of."""

_RULE_OF: dict[type, Callable[[Any], Links | None] | None] = {}
"""`_LINK_RULES`'s rule by op class (None: none), found once per class: `micro-batch`
asks for every op of the program (issue 14 item 7)."""


def _rule_of(cls: type) -> Callable[[Any], Links | None] | None:
    if cls not in _RULE_OF:
        _RULE_OF[cls] = next((rule for kinds, rule in _LINK_RULES if issubclass(cls, kinds)), None)
    return _RULE_OF[cls]


# Candidate dimensions ----------------------------------------------------------------


@dataclass
class Candidate:
    """A dimension class to split on: the split dimension of each value in it."""

    key: tuple[int, int, int]
    """(position of its first collective in the block, result index, dim): names the
    class in a copy of the block."""
    dim_of: dict[SSAValue, int]
    split_ops: dict[Operation, None]
    """The ops split into chunks (the others making a value of the class stay whole), in
    the order their values were found (a dict, not a set: sums over them, `SplitFloor`'s,
    are the same to the last bit in every run)."""
    size: int
    collectives: int
    links: dict[Operation, Links] = field(default_factory=dict[Operation, Links])
    """`op_links` of the split ops, as `candidates` found them (the splits reuse them)."""


class _DimClasses:
    """
    A union-find over the dimensions of `block`'s values joined by `links`, numbered: a
    value's dimensions are consecutive ints (its first found by the value's id), so that
    finding a class hashes and compares ints, not (value, dim) pairs (at 10k ops the pairs
    were most of `candidates`, issue 14 item 7). The classes are the same.
    """

    def __init__(
        self,
        block: Block,
        links: dict[Operation, Links | None],
        values: list[SSAValue] | None = None,
    ):
        self.first: dict[int, tuple[int, tuple[int, ...]]] = {}
        """id(value) -> (its first dimension's number, its shape); the values are alive
        while `block` is, so their ids stand for them."""
        self.parent: list[int] = []
        self.extra: dict[tuple[int, int], int] = {}
        """(id(value), dim) of a dimension beyond the value's rank (none in valid links)."""
        first, parent = self.first, self.parent
        for v in _values(block) if values is None else values:
            if id(v) not in first:
                shape = _shape(v)
                n = len(parent)
                first[id(v)] = (n, shape)
                parent.extend(range(n, n + len(shape)))
        node, find = self.node, self.find
        item = tuple.__getitem__  # not `SSAValues.__getitem__`, a Python call per index
        for op, ls in links.items():
            if not ls:
                continue
            results, operands = op.results, op._operands  # pyright: ignore
            for (k, d), sources in ls.items():
                if sources:
                    to = find(node(item(results, k), d))
                    for i, e in sources:
                        # `union`, inlined (every link of every op)
                        rb = find(node(item(operands, i), e))
                        if to != rb:
                            parent[rb] = to

    def _first(self, v: SSAValue) -> tuple[int, tuple[int, ...]]:
        found = self.first.get(id(v))
        if found is None:
            shape = _shape(v)
            found = self.first[id(v)] = (len(self.parent), shape)
            self.parent.extend(range(len(self.parent), len(self.parent) + len(shape)))
        return found

    def shape(self, v: SSAValue) -> tuple[int, ...]:
        return self._first(v)[1]

    def node(self, v: SSAValue, d: int) -> int:
        first, shape = self._first(v)
        if d < len(shape):
            return first + d
        node = self.extra.get((id(v), d))
        if node is None:
            node = self.extra[(id(v), d)] = len(self.parent)
            self.parent.append(node)
        return node

    def find(self, x: int) -> int:
        parent = self.parent
        root = x
        while (p := parent[root]) != root:
            root = p
        while x != root:
            parent[x], x = root, parent[x]
        return root

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def _values(block: Block) -> list[SSAValue]:
    values: list[SSAValue] = list(block.args)
    for op in block.ops:
        values.extend(op.results)
    return values


def candidates(block: Block) -> list[Candidate]:
    """The qualifying classes of `block` (module docstring), most collectives first."""
    ops = list(block.ops)
    links = {op: op_links(op) for op in ops}
    values = _values(block)
    uf = _DimClasses(block, links, values)
    members: dict[int, list[tuple[SSAValue, int, int]]] = {}
    first, find, parent = uf.first, uf.find, uf.parent
    for v in values:
        n, shape = first[id(v)]
        for d, size in enumerate(shape):
            if size >= 2:
                root = n + d
                if parent[root] != root:
                    root = find(root)
                found_members = members.get(root)
                if found_members is None:
                    members[root] = [(v, d, size)]
                else:
                    found_members.append((v, d, size))
    found: list[Candidate] = []
    seen: set[int] = set()
    for pos, op in enumerate(ops):
        if not _is_sync(type(op)):
            continue
        for k, r in enumerate(op.results):
            for d in range(len(_shape(r))):
                root = uf.find(uf.node(r, d))
                if root in seen or root not in members:
                    continue
                seen.add(root)
                cand = _qualify((pos, k, d), members[root], links)
                if cand is not None:
                    found.append(cand)
    found.sort(key=lambda c: (-c.collectives, c.key))
    return found[:MAX_CLASSES]


def _qualify(
    key: tuple[int, int, int],
    nodes: list[tuple[SSAValue, int, int]],
    links: dict[Operation, Links | None],
) -> Candidate | None:
    """The class of `nodes` ((value, dimension, its size) each) as a `Candidate`, if it
    qualifies (module docstring)."""
    size = nodes[0][2]
    previous = None
    for v, _, s in nodes:
        # a value's dimensions are listed one after the other (`candidates`)
        if v is previous:
            return None  # two dimensions of one value
        if s != size:
            return None  # two sizes
        previous = v
    dim_of = {v: d for v, d, _ in nodes}
    split_ops: dict[Operation, None] = {}
    found: dict[Operation, Links] = {}
    count = 0
    for v in dim_of:
        if v.__class__ is not OpResult:
            continue  # a block argument: cut into chunks where a split op needs it
        op = cast(OpResult, v).op
        if op in split_ops:
            continue
        ls = links.get(op)
        if ls is None:
            continue
        for k, r in enumerate(op.results):
            d = dim_of.get(r)
            if d is None or (k, d) not in ls:
                break  # made whole, cut into chunks where a split op needs them
        else:
            split_ops[op] = None
            found[op] = ls
            if _is_sync(type(op)):
                count += 1
    if not count:
        return None
    return Candidate(key, dim_of, split_ops, size, count, found)


_SYNC: dict[type, bool] = {}
"""Whether an op class is a sync collective (`collective.SYNC_OPS`), found once per class."""


def _is_sync(cls: type) -> bool:
    found = _SYNC.get(cls)
    if found is None:
        found = _SYNC[cls] = issubclass(cls, collective.SYNC_OPS)
    return found


def find_candidate(block: Block, key: tuple[int, int, int]) -> Candidate | None:
    for cand in candidates(block):
        if cand.key == key:
            return cand
    return None


# The rewrite -------------------------------------------------------------------------


def _origin(value: SSAValue, user: Operation) -> Operation:
    """The op a slice or concatenation of `value` is made for: its producer (the user, for
    a block argument), whose location it reports."""
    return value.owner if isinstance(value.owner, Operation) else user


def _with_dim(ty: TensorType, dim: int, size: int) -> TensorType:
    shape = list(ty.get_shape())
    shape[dim] = size
    return TensorType(ty.element_type, shape)


class ChunkTypes:
    """
    Chunk-shaped types, each made once (by the whole type's object, a dimension and a
    chunk size) and shared by the splits `micro-batch` estimates: making a `TensorType` is
    most of the price of a split op, and the cost model numbers types by object, so shared
    ones are keyed without hashing their shapes again (issue 14 item 7).
    """

    def __init__(self) -> None:
        self._made: dict[tuple[int, int, int], tuple[TensorType, TensorType]] = {}
        """(id(type), dim, size) -> (the type, kept alive so its id is not reused; the
        chunk type)."""

    def get(self, ty: TensorType, dim: int, size: int) -> TensorType:
        key = (id(ty), dim, size)
        found = self._made.get(key)
        if found is None:
            found = self._made[key] = (ty, _with_dim(ty, dim, size))
        return found[1]


@dataclass
class Splitter:
    """Splits the ops of `block` in `cand` into `k` chunks (module docstring)."""

    block: Block
    cand: Candidate
    k: int
    chunk_major: bool = True
    """Re-order the block chunk by chunk (else each op's chunks stay at its place)."""
    chunks: dict[SSAValue, list[SSAValue]] = field(default_factory=dict[SSAValue, list[SSAValue]])
    wholes: dict[SSAValue, SSAValue] = field(default_factory=dict[SSAValue, SSAValue])
    replaced: set[SSAValue] = field(default_factory=set[SSAValue])
    chunk_index: dict[Operation, int] = field(default_factory=dict[Operation, int])
    """The chunk each new per-chunk op computes (for the final order)."""
    types: ChunkTypes = field(default_factory=ChunkTypes)
    """Where the chunks' types come from (shared by the estimates of one `plan`)."""

    @property
    def chunk(self) -> int:
        return self.cand.size // self.k

    def run(self) -> None:
        originals: list[Operation] = []
        sources: list[SSAValue] = []
        for op in list(self.block.ops):
            if op not in self.cand.split_ops:
                self.reassemble_uses(op)
            elif isinstance(op, hlo.ConstantOp | hlo.IotaOp):
                if self.split_source(op):
                    sources.extend(op.results)
            else:
                self.split(op)
                originals.append(op)
        for op in reversed(originals):
            Rewriter.erase_op(op)
        erase_if_dead(sources)
        if self.chunk_major:
            chunk_major_order(self.block, self.chunk_index)

    def chunks_of(self, value: SSAValue, before: Operation) -> list[SSAValue]:
        """The k chunks of `value` (static slices of it if no split op made it)."""
        if value not in self.chunks:
            d = self.cand.dim_of[value]
            shape = _shape(value)
            slices: list[Operation] = []
            # the op `hlo.SliceOp(value, lo, hi)` makes, by `create` (no type to compute)
            chunk_type = self.types.get(cast(TensorType, value.type), d, self.chunk)
            strides = i64_array([1] * len(shape))
            location = _origin(value, before).location
            for j in range(self.k):
                lo = [0] * len(shape)
                hi = list(shape)
                lo[d], hi[d] = j * self.chunk, (j + 1) * self.chunk
                props = {"start_indices": i64_array(lo), "limit_indices": i64_array(hi)}
                props["strides"] = strides
                slices.append(
                    hlo.SliceOp.create(
                        operands=[value],
                        result_types=[chunk_type],
                        properties=props,
                        location=location,
                    )
                )
            self._name(slices, value)
            self.chunk_index.update((s, j) for j, s in enumerate(slices))
            Rewriter.insert_op(slices, InsertPoint.before(before))
            self.chunks[value] = [s.results[0] for s in slices]
        return self.chunks[value]

    def whole(self, value: SSAValue, before: Operation) -> SSAValue:
        """`value` itself, or the concatenation of its chunks if its op was split."""
        if value not in self.replaced:
            return value
        if value not in self.wholes:
            chunks, dim = self.chunks[value], self.cand.dim_of[value]
            ty = value.type
            if isinstance(ty, TensorType) and isinstance(ty.encoding, NoneAttr):
                # the op `hlo.ConcatenateOp(chunks, dim)` makes, by `create`: its type is
                # the value's
                cat = hlo.ConcatenateOp.create(
                    operands=chunks, result_types=[ty], properties={"dimension": i64_attr(dim)}
                )
            else:
                cat = hlo.ConcatenateOp(chunks, dim)
            cat.location = _origin(value, before).location
            cat.result.name_hint = value.name_hint
            Rewriter.insert_op(cat, InsertPoint.before(before))
            self.wholes[value] = cat.result
        return self.wholes[value]

    def reassemble_uses(self, op: Operation) -> None:
        for nested in op.walk() if op.regions else (op,):
            for i, v in enumerate(nested.operands):
                if v in self.replaced:
                    nested.operands[i] = self.whole(v, op)

    def split_source(self, op: hlo.ConstantOp | hlo.IotaOp) -> bool:
        """
        A splat constant or an iota along another dimension: one chunk-sized op for all
        chunks. Other constants and iotas stay whole (sliced where used).
        """
        r = op.results[0]
        d = self.cand.dim_of[r]
        ty = r.type
        assert isinstance(ty, TensorType)
        chunk_type = self.types.get(ty, d, self.chunk)
        if isinstance(op, hlo.ConstantOp) and op.value.is_splat():
            first = next(iter(op.value.iter_values()))
            new: Operation = hlo.ConstantOp(splat_elements(chunk_type, first))
        elif isinstance(op, hlo.IotaOp) and op.iota_dimension.value.data != d:
            new = hlo.IotaOp(op.iota_dimension.value.data, chunk_type)
        else:
            return False
        new.results[0].name_hint = r.name_hint
        new.location = op.location
        Rewriter.insert_op(new, InsertPoint.before(op))
        self.chunks[r] = [new.results[0]] * self.k
        return True

    def split(self, op: Operation) -> None:
        ls = self.cand.links.get(op) or op_links(op)
        assert ls is not None
        dims = [self.cand.dim_of[r] for r in op.results]
        chunked: dict[int, int] = {}
        for k, d in enumerate(dims):
            for i, e in ls[(k, d)]:
                chunked[i] = e
        operand_chunks = {i: self.chunks_of(op.operands[i], op) for i in chunked}
        shared = {i: self.whole(v, op) for i, v in enumerate(op.operands) if i not in chunked}
        result_types = [
            self.types.get(r.type, d, self.chunk)  # pyright: ignore
            for r, d in zip(op.results, dims, strict=True)
        ]
        props = dict(op.properties)
        if isinstance(op, hlo.SliceOp):
            limits = list(_int_list(op.limit_indices))
            limits[dims[0]] = self.chunk
            props["limit_indices"] = i64_array(limits)
        elif isinstance(op, hlo.DynamicSliceOp):
            sizes = list(op.sizes)
            sizes[dims[0]] = self.chunk
            props["slice_sizes"] = i64_array(sizes)
        clones: list[Operation] = []
        for j in range(self.k if chunked else 1):
            operands = [
                operand_chunks[i][j] if i in chunked else shared[i] for i in range(len(op.operands))
            ]
            clones.append(
                type(op).create(
                    operands=operands,
                    result_types=result_types,
                    properties=dict(props),
                    attributes=dict(op.attributes),
                    location=op.location,
                )
            )
        Rewriter.insert_op(clones, InsertPoint.before(op))
        if chunked:
            self.chunk_index.update((c, j) for j, c in enumerate(clones))
        else:
            clones *= self.k  # nothing chunk-dependent: one op serves every chunk
        for n, r in enumerate(op.results):
            self.chunks[r] = [c.results[n] for c in clones]
            self.replaced.add(r)
            if r.name_hint and chunked:
                for j, c in enumerate(clones):
                    c.results[n].name_hint = f"{r.name_hint}_c{j}"
            elif r.name_hint:
                clones[0].results[n].name_hint = r.name_hint

    @staticmethod
    def _name(ops: list[Operation], value: SSAValue) -> None:
        if value.name_hint:
            for j, o in enumerate(ops):
                o.results[0].name_hint = f"{value.name_hint}_c{j}"


def chunk_major_order(block: Block, chunk_index: dict[Operation, int]) -> None:
    """
    Stable topological order by (chunk, position): chunk 0 as far as it goes before chunk
    1's ops, and so on. The list scheduler fills with the first ready op in block order,
    so this makes the first chunk's collective start as early as it can and the next
    chunk's compute fill the time it takes. Ops of no chunk count as chunk 0.
    """
    order = stable_topological_order(block, lambda op, pos: (chunk_index.get(op, 0), pos))
    set_order(block, order)


def _int_list(attr: object) -> list[int]:
    return list(attr.get_values())  # pyright: ignore


# Estimates ---------------------------------------------------------------------------


def _function_blocks(module: ModuleOp) -> list[Block]:
    """The single-block bodies of `module`'s functions, in order."""
    blocks: list[Block] = []
    for op in module.ops:
        if isinstance(op, func.FuncOp) and len(op.body.blocks) == 1:
            blocks.append(op.body.blocks[0])
    return blocks


@dataclass
class SplitFloor:
    """
    A lower bound on the estimate of any split of a block, from its totals alone, so
    that a plan that cannot be chosen is not built and scheduled (the estimates are what
    the pass costs; with this bound `micro-batch` stays near linear in the program). A
    step takes at least the compute stream's total (splitting never lowers it: each chunk
    re-reads what is not split) and at least the collective engine's total: each
    collective's time less what may overlap the ones ahead (`timing.engine_window`).
    A collective may overlap only a collective it neither waits for nor feeds: one that
    every other collective of the block precedes or follows (`ordered_collectives`) pays
    its whole time unless it is split. Each of a split collective's k chunks pays at
    least its own time less its own overlap (a chunk is costed as itself: an all_reduce
    chunk of fewer elements than its group takes the one-round algorithm).

    Where the collectives next to a split one (the one before and the one after it in
    the block) are ordered and not split, its chunks can overlap only each other
    (`alone_in_flight`): so the first of them to be issued has nothing in flight and pays
    its whole time. (Issue 14 item 7: a latency-bound collective between two such
    neighbours, split in k, pays its latency once, as unsplit; without this the floor
    credited every chunk with an overlap, and four whole estimates per program found what
    it now knows, on bench/partition_speed.py's chains.)
    """

    compute: float
    engine: float
    model: CostModel
    ordered: set[Operation]
    neighbours: dict[Operation, tuple[Operation | None, Operation | None]] = field(
        default_factory=dict[Operation, tuple[Operation | None, Operation | None]]
    )
    """Each collective's (previous, next) collective in the block (None at its ends)."""
    chunks: dict[Hashable, tuple[float, float]] = field(
        default_factory=dict[Hashable, tuple[float, float]]
    )
    """`chunk_costs`'s answers."""
    split: dict[tuple[int, int, int], list[tuple[collective.CollectiveOp, bool, float]]] = field(
        default_factory=dict[
            tuple[int, int, int], list[tuple[collective.CollectiveOp, bool, float]]
        ]
    )
    """By class (`Candidate.key`): its split collectives, whether each is `alone_in_flight`,
    and its `whole` time."""
    chain: ChainFloor | None = None
    """The block's chains of collectives device by device (`chain_floor`): a step waits
    for its longest, which the totals above miss where collectives end apart per device
    (issue 14 item 7: collective-matmul's rings of permutes on v5e's line)."""
    passages: dict[Hashable, Passage | None] = field(
        default_factory=dict[Hashable, "Passage | None"]
    )
    """A split collective's chunk passage (`Passage`), by `chunk_costs`'s key."""

    @staticmethod
    def of(view_block: Block, model: CostModel, block: Block) -> SplitFloor:
        """The floor of `block` (its collectives) estimated as `view_block` (its compute:
        the same ops, or `block` fused; fusion leaves the collectives as they are)."""
        ordered = ordered_collectives(block)
        compute = sum(
            op_time(op, model)
            for op in view_block.ops
            if not isinstance(op, collective.CollectiveOp)
        )
        floor = SplitFloor(compute, 0.0, model, ordered)
        floor.chain = ChainFloor(block, model, _devices(model), ordered)
        collectives = [op for op in block.ops if isinstance(op, collective.CollectiveOp)]
        floor.engine = sum(floor.whole(op) for op in collectives)
        ends: list[Operation | None] = [None, *collectives, None]
        for i, op in enumerate(collectives):
            floor.neighbours[op] = (ends[i], ends[i + 2])
        return floor

    def alone_in_flight(self, op: Operation, cand: Candidate) -> bool:
        """
        Whether each chunk of `op` split by `cand` has every collective but the other
        chunks among its ancestors or descendants: its neighbours are ordered (the one
        before: every earlier collective precedes it and it precedes all later ones; the
        one after likewise) and not split, so their whole results lie on every path
        between a chunk and another collective (a split op's chunk j reads chunk j or the
        whole of each operand; a chunk of a whole value is a slice of it; a whole op reads
        the concatenation of all chunks). A collective issued with only ancestors before
        it (ended) finds the engine free (`timing.engine_window`).
        """
        return all(
            n is None or (n in self.ordered and n not in cand.split_ops)
            for n in self.neighbours.get(op, (op, op))
        )

    def whole(self, op: collective.CollectiveOp) -> float:
        """At most the engine time `op` adds to the block unsplit (its soonest member's:
        `CostModel.collective_soonest`)."""
        time = self.model.collective_soonest(op)
        return time if op in self.ordered else max(time - self.model.collective_overlap(op), 0.0)

    def bound(self, cand: Candidate, k: int, enough: float = math.inf) -> float:
        """At most the estimate of splitting `cand` into `k` chunks: the totals' bound, and
        the chains' (`ChainFloor`) unless the totals' already reach `enough` (the chains'
        walk the block, the totals' do not)."""
        totals = self.totals(cand, k)
        if totals >= enough or self.chain is None:
            return totals
        return max(totals, self.chain.split(cand.split_ops, k, lambda op: self.chunk(op, cand, k)))

    def chunk(self, op: collective.CollectiveOp, cand: Candidate, k: int) -> Passage | None:
        """The passage of one chunk of `op` split by `cand` into `k` (`_chunk_of`),
        remembered as `chunk_costs` remembers its costs."""
        mine = (op, cand.key, k)  # by op first: the model's key hashes its types
        if mine in self.passages:
            return self.passages[mine]
        key = self._chunk_key(op, cand, k)
        if key is not None and key in self.passages:
            found = self.passages[key]
        else:
            found = Passage.of(_chunk_of(op, cand, k), self.model, _devices(self.model))
            if key is not None:
                self.passages[key] = found
        self.passages[mine] = found
        return found

    def _chunk_key(self, op: collective.CollectiveOp, cand: Candidate, k: int) -> Hashable:
        key_of = getattr(self.model, "key", None)
        op_key = key_of(op) if key_of is not None else None
        if op_key is None:
            return None
        return (op_key, tuple(cand.dim_of.get(v) for v in op.operands), k)

    def totals(self, cand: Candidate, k: int) -> float:
        """The compute stream's and the engine's totals' bound (the class docstring)."""
        engine = self.engine
        split = self.split.get(cand.key)
        if split is None:  # the class's collectives, found once for all its counts
            split = self.split[cand.key] = [
                (op, self.alone_in_flight(op, cand), self.whole(op))
                for op in cand.split_ops
                if isinstance(op, collective.CollectiveOp)
            ]
        for op, alone_in_flight, whole in split:
            time, overlap = self.chunk_costs(op, cand, k)
            alone = max(time - overlap, 0.0)
            first = time if alone_in_flight else alone
            engine += first + (k - 1) * alone - whole
        return max(self.compute, engine)

    def chunk_costs(
        self, op: collective.CollectiveOp, cand: Candidate, k: int
    ) -> tuple[float, float]:
        """
        (`collective_time`, `collective_overlap`) of a chunk of `op` (`_chunk_of`),
        remembered by what they depend on: the op's cost key (its kind, types and
        properties), which operands are chunked on which dimension, and `k`. A program
        repeats its collectives: at 10k ops building a scratch module per split
        collective and count was most of `micro-batch` (issue 14 item 7).
        """
        key = self._chunk_key(op, cand, k)
        if key is not None and (found := self.chunks.get(key)) is not None:
            return found
        chunk = _chunk_of(op, cand, k)
        costs = (self.model.collective_soonest(chunk), self.model.collective_overlap(chunk))
        if key is not None:
            self.chunks[key] = costs
        return costs


def _chunk_of(op: collective.CollectiveOp, cand: Candidate, k: int) -> collective.CollectiveOp:
    """A copy of `op` reading chunk-shaped values (1/k of each operand along its dimension
    of the class): what a chunk costs (the algorithm may change with the size, e.g. an
    all_reduce of fewer elements than its group is pushed in one round). It lives in a
    scratch module with copies of the meshes of `op`'s module (collectives look theirs up
    by name), never in the program."""
    args = Block(
        arg_types=[
            _chunk_type(cast(TensorType[Attribute], v.type), cand.dim_of.get(v), k)
            for v in op.operands
        ]
    )
    values: dict[SSAValue, SSAValue] = dict(zip(op.operands, args.args, strict=True))
    chunk = op.clone(value_mapper=values, clone_name_hints=False)
    scratch = ModuleOp([m.clone() for m in _meshes(op)])
    scratch.body.block.add_op(chunk)
    return chunk


def _devices(model: CostModel) -> int:
    """The devices of `model`'s mesh (one without a mesh)."""
    mesh = model.mesh
    return math.prod(mesh.shape) if mesh is not None else 1


def _meshes(op: Operation) -> list[MeshOp]:
    module = op.get_toplevel_object()
    if not isinstance(module, ModuleOp):
        return []
    return [m for m in module.body.block.ops if isinstance(m, MeshOp)]


def _chunk_type(t: TensorType[Attribute], dim: int | None, k: int) -> TensorType[Attribute]:
    if dim is None:
        return t
    shape = list(t.get_shape())
    shape[dim] //= k
    return TensorType(t.element_type, shape)


def ordered_collectives(block: Block) -> set[Operation]:
    """
    The collectives of `block` that every other collective of it precedes or follows
    through use-def chains (of the block's own ops: a use inside a region is not seen,
    so fewer are found, never more). Such a collective is never in flight with another.
    Each op's ancestor collectives are a bit set (an int); a collective is ordered when
    its ancestors are all the collectives before it and it is an ancestor of all after.
    """
    index: dict[Operation, int] = {}
    ancestors: dict[Operation, int] = {}
    for op in block.ops:
        bits = 0
        for value in op.operands:
            bits |= ancestors.get(value.owner, 0)  # pyright: ignore[reportArgumentType]
        if isinstance(op, collective.CollectiveOp):
            index[op] = len(index)
            bits |= 1 << index[op]
        ancestors[op] = bits
    ordered: set[Operation] = set()
    after = (1 << len(index)) - 1  # the ancestors every later collective has
    for op, i in reversed(index.items()):
        if ancestors[op].bit_count() == i + 1 and after >> i & 1:
            ordered.add(op)
        after &= ancestors[op]
    return ordered


@dataclass
class Base:
    """
    The unsplit block's estimate, as the pipeline would leave it: the better of its
    scheduled and its written order (`spmd-pipeline` keeps the written one where
    scheduling is slower). The written order's time (no scheduling) bounds it from above,
    so the scheduled one is computed only for a split that could beat it (without a memory
    limit both come from one `StepGraph` of the block, built first).
    """

    owner: MicroBatchPass
    module: ModuleOp
    index: int
    block: Block
    model: CostModel
    written: float = math.inf
    scheduled: float | None = None
    graph: StepGraph | None = None
    """The block's `StepGraph` (without a memory limit): both orders' times from it."""

    def __post_init__(self) -> None:
        if self.owner.memory_limit is None:
            costs = per_op(self.model)
            self.graph = StepGraph(self.block, costs, cast(OpCosts, costs).times)
            self.written = self.graph.sync_written_time()
        else:
            self.written = program_order_time(self.block.ops, self.model)

    def threshold(self) -> float:
        """A time `beyond` surely refuses (without scheduling the base), unless `force`."""
        return math.inf if self.owner.force else self.written * (1 - self.owner.min_gain)

    def beyond(self, t: float) -> bool:
        """Whether `t` misses `min-gain` against the base."""
        factor = 1 - self.owner.min_gain
        if t > self.written * factor:
            return True
        if self.scheduled is None:
            if self.graph is not None:  # `estimate`'s graph (the block is as it was)
                self.scheduled = self.graph.scheduled_time(self.owner.max_in_flight)
            else:
                self.scheduled = self.owner.estimate(self.module, self.index, None, self.model)
        return t > min(self.written, self.scheduled) * factor


def _copy_candidate(cand: Candidate, values: dict[SSAValue, SSAValue]) -> Candidate | None:
    """`cand` in a clone of its block (`values`: the clone's value map); None if an op of
    it has no result to find it by."""
    ops: dict[Operation, None] = {}
    links: dict[Operation, Links] = {}
    for op in cand.split_ops:
        if not op.results:
            return None
        twin = cast(Operation, values[op.results[0]].owner)
        ops[twin] = None
        if (ls := cand.links.get(op)) is not None:
            links[twin] = ls  # the copy's types and attributes are the op's
    dim_of = {values.get(v, v): d for v, d in cand.dim_of.items()}
    return Candidate(cand.key, dim_of, ops, cand.size, cand.collectives, links)


@dataclass(frozen=True)
class Plan:
    key: tuple[int, int, int]
    """The class (`Candidate.key`)."""
    k: int
    chunk_major: bool


@dataclass(frozen=True)
class MicroBatchPass(ModulePass):
    """Split per-device programs along a batch dimension when it hides collectives."""

    name = "micro-batch"

    chunks: int = 0
    """Chunks to split into; 0: the best divisor from 2 to `max-chunks` by the cost model."""
    max_chunks: int = 8
    """Most chunks tried when `chunks=0`."""
    chip: str = "v5e"
    """The chip whose cost model decides."""
    min_gain: float = 0.02
    """Fire only if the estimated time drops by at least this fraction."""
    force: bool = False
    """Split whenever a dimension qualifies (the best estimate even if slower)."""
    memory_limit: int | None = None
    """`schedule`'s memory limit, for the estimates."""
    max_in_flight: int = IN_FLIGHT
    """`schedule`'s bound on collectives in flight, for the estimates."""
    fused: bool = False
    """Estimate the unsplit block and every split as `fusion` will leave them (spmd-pipeline
    sets it when fusion runs after): fusion takes the chunks' slices and concatenate into
    their readers and writers, so an unfused estimate charges a split for ops it will not
    have, and the unsplit block for kernels fusion merges."""

    def __post_init__(self) -> None:
        check_option(
            self.name,
            "chunks",
            self.chunks == 0 or self.chunks >= 2,
            "0 or at least 2",
            self.chunks,
        )
        check_option(self.name, "max-chunks", self.max_chunks >= 2, "at least 2", self.max_chunks)
        check_option(self.name, "min-gain", 0 <= self.min_gain < 1, "in [0, 1)", self.min_gain)
        check_option(
            self.name,
            "memory-limit",
            self.memory_limit is None or self.memory_limit > 0,
            "positive",
            self.memory_limit,
        )
        check_option(
            self.name, "max-in-flight", self.max_in_flight >= 1, "at least 1", self.max_in_flight
        )
        check_option(
            self.name, "chip", self.chip in CHIPS, f"one of {', '.join(CHIPS)}", f"'{self.chip}'"
        )

    def counts(self, size: int) -> list[int]:
        if self.chunks:
            return [self.chunks] if size % self.chunks == 0 else []
        return [k for k in range(2, self.max_chunks + 1) if size % k == 0]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            model = cached(CostModel(get_chip(self.chip), find_mesh(op)))
        except UnknownChipError as e:
            raise PassFailedException(f"micro-batch: {e}") from None
        self.split(op, self.plans(op, model))

    def plans(self, module: ModuleOp, model: CostModel) -> list[tuple[int, Plan]]:
        """(function index, its best split) for each function that has one."""
        return self.plans_and_view(module, model)[0]

    def plans_and_view(
        self, module: ModuleOp, model: CostModel, known: OpCosts | None = None
    ) -> tuple[list[tuple[int, Plan]], FusedView | None]:
        """`plans`, and with `fused` the copy of `module` the unsplit estimates judged (every
        function fused, as `fusion` leaves the module with `model`'s costs) with its ops'
        costs, or None if no function had a candidate: `spmd-pipeline` takes it for
        `fusion`'s result when nothing is split, instead of fusing the module a second
        time, and `schedule` its costs instead of costing the ops again. `known`: costs of
        `module`'s ops by `model`, where the caller has them (`spmd-pipeline`'s gate): the
        estimates of the module and of its fused copy start from them."""
        found: list[tuple[int, Plan]] = []
        view = _LazyView(module, model, known) if self.fused else None
        graphs: dict[Block, StepGraph] = {}
        for index, block in enumerate(_function_blocks(module)):
            plan = self.plan(module, index, block, model, view, graphs)
            if plan is not None:
                found.append((index, plan))
        if view is None or view.module is None:
            return found, None
        return found, FusedView(view.module, view.costs, graphs)

    def split(self, module: ModuleOp, plans: list[tuple[int, Plan]]) -> None:
        """Split by `plans` (of `module` or a copy of it: a plan names its class by place)."""
        blocks = _function_blocks(module)
        for index, plan in plans:
            cand = find_candidate(blocks[index], plan.key)
            assert cand is not None
            Splitter(blocks[index], cand, plan.k, plan.chunk_major).run()

    def plan(
        self,
        module: ModuleOp,
        index: int,
        block: Block,
        model: CostModel,
        fused: _LazyView | None = None,
        graphs: dict[Block, StepGraph] | None = None,
    ) -> Plan | None:
        """The best split of function `index` by the estimates, or None (`fused`: the
        fused copy to judge by, shared by the functions; built here if not given;
        `graphs`: where the unsplit block's `StepGraph` is kept, by the block it is of,
        if one was built)."""
        found = candidates(block)
        if not found:
            return None
        if self.fused:
            fused = fused if fused is not None else _LazyView(module, model)
            view, view_block = fused.get(), _function_blocks(fused.get())[index]
            costs = cast(CostModel, fused.costs)
        else:
            view, view_block = module, block
            costs = per_op(model)  # the unsplit block's ops, costed once for all three uses
        base = Base(self, view, index, view_block, costs)
        if graphs is not None and base.graph is not None:
            graphs[view_block] = base.graph
        floor = SplitFloor.of(view_block, costs, block)
        best: tuple[float, Plan] | None = None
        types = ChunkTypes()
        for cand in found:
            fewer = math.inf  # the class's best with the last chunk count tried
            for k in self.counts(cand.size):
                enough = min(best[0] if best is not None else math.inf, base.threshold())
                bound = floor.bound(cand, k, enough)
                if (best is not None and bound >= best[0]) or (
                    not self.force and base.beyond(bound)
                ):
                    continue  # no split of this class into k chunks can be chosen
                this = math.inf
                for chunk_major in (True, False):
                    plan = Plan(cand.key, k, chunk_major)
                    t = self.estimate(module, index, plan, model, cand, types)
                    this = min(this, t)
                    if best is None or t < best[0]:
                        best = (t, plan)
                if this >= fewer and not self.force and base.beyond(this):
                    break  # more chunks made it slower and it does not pay: nor will more
                fewer = this
        if best is None or best[0] == math.inf:
            return None
        if not self.force and base.beyond(best[0]):
            return None
        return best[1]

    def estimate(
        self,
        module: ModuleOp,
        index: int,
        plan: Plan | None,
        model: CostModel,
        cand: Candidate | None = None,
        types: ChunkTypes | None = None,
    ) -> float:
        """The scheduler's time for function `index` (split by `plan`, of class `cand`, on a
        copy: the class is carried to the copy through the clone's value map, not found
        again; `types`: the chunk types of the estimates before)."""
        if plan is None:  # the estimate leaves the block as it was
            block = _function_blocks(module)[index]
            return scheduled_time(block, model, self.memory_limit, self.max_in_flight)
        values: dict[SSAValue, SSAValue] = {}
        copy = copy_op(module, values)
        block = _function_blocks(copy)[index]
        copied = _copy_candidate(cand, values) if cand is not None else None
        if copied is None:
            copied = find_candidate(block, plan.key)
            assert copied is not None
        Splitter(block, copied, plan.k, plan.chunk_major, types=types or ChunkTypes()).run()
        if self.fused:
            fuse_block(block, model)
        return scheduled_time(block, model, self.memory_limit, self.max_in_flight)


@dataclass(frozen=True)
class FusedView:
    """A copy of a module with every function fused, as `fusion` leaves it with the
    estimates' model, its ops' costs (`OpCosts`, valid while they do not change), and the
    `StepGraph`s the estimates built of its blocks (by block: `schedule` orders by them
    after `async-split`, `StepGraph.after_split`)."""

    module: ModuleOp
    costs: OpCosts
    graphs: dict[Block, StepGraph] = field(default_factory=dict[Block, StepGraph])


class _LazyView:
    """
    A copy of a module with every function fused (`fusion`'s loop, with the estimates'
    model), built when a function first needs it: what the unsplit estimates (`Base`,
    `SplitFloor`) see when `fused`. One copy for all functions (fusing one function's
    block leaves the others as they are, so each function's view is the same as if it
    alone had been fused).
    """

    def __init__(self, module: ModuleOp, model: CostModel, known: OpCosts | None = None):
        self.source = module
        self.model = model
        self.module: ModuleOp | None = None
        self.known = known if known is not None and known.model is model else None
        """Costs of `source`'s ops by `model` known already (`plans_and_view`'s `known`)."""
        self.costs = OpCosts(model)
        """The costs of the copy's ops (and of the collectives of `source` the floors
        read), by op: every estimate of the unsplit module asks for them (read once the
        copy is made: `get` starts it from `known`)."""

    def get(self) -> ModuleOp:
        if self.module is None:
            twins: dict[Operation, Operation] = {}
            self.module = copy_op(self.source, op_mapper=twins)
            if self.known is not None:
                # the ops fusion leaves as they are cost what they did in `source`
                self.costs = self.known.moved(twins, keep=True)
            for function in list(self.module.walk()):
                if isinstance(function, func.FuncOp):
                    fuse_function(function, self.model)
        return self.module
