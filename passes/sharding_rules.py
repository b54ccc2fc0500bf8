"""
How each `hlo` op relates the dimensions of its operands and results: its *factors*.

A factor is one logical loop dimension of an op (Shardy's sharding rules): for an
elementwise op each result dimension is a factor shared by all operands; a dot has batch,
lhs-free and rhs-free factors (in the result) and contracting factors (not in the result:
sharding one leaves a partial sum, `unreduced`). Propagation moves shardings along factors
and the partitioner derives the operand shardings a result sharding needs from them, so
both passes share this one description of every op.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from types import UnionType
from typing import Any

from shardc.dialects import hlo, spmd
from shardc.dialects.spmd import MeshAttr, ShardingAttr
from xdsl.dialects.builtin import AnyFloat, IntegerType, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

Axes = tuple[str, ...]


@dataclass(frozen=True)
class FactorRule:
    """
    `operand_dims[i][f]` / `result_dims[f]`: the tensor dimension factor `f` maps to in
    operand `i` / the result (every result, for ops with several results of one shape:
    sort, top_k), or None. Factors in `reduction_factors` are summed away.
    Factors in `unsplittable_factors` cannot be computed on blocks (a sliced or
    concatenated dimension, a dimension a reshape regroups): the op computes them whole.
    Factors in `halo_factors` (windowed dimensions) propagate like the others; the
    partitioner splits them only when a halo exchange with the neighbours gives each
    device its windows (`spmd_windows.halo_plan`), else computes them whole.
    Factors in `permutation_factors` (Shardy's, from `propagation_rule`) are unsplittable
    ones that propagation still carries between operands and result (a sliced, padded or
    concatenated dimension): the partitioner computes them whole all the same.
    """

    operand_dims: tuple[tuple[int | None, ...], ...]
    result_dims: tuple[int | None, ...]
    reduction_factors: frozenset[int] = frozenset()
    unsplittable_factors: frozenset[int] = frozenset()
    halo_factors: frozenset[int] = frozenset()
    permutation_factors: frozenset[int] = frozenset()

    @property
    def factor_count(self) -> int:
        return len(self.result_dims)


ShapeOf = Callable[[SSAValue], tuple[int, ...]]


def type_shape(value: SSAValue) -> tuple[int, ...]:
    """A value's shape as its type says (global before partitioning)."""
    ty = value.type
    assert isinstance(ty, TensorType)
    return ty.get_shape()


def _identity_rule(op: Operation, shape: ShapeOf) -> FactorRule:
    """Every operand of the result's rank maps dimension d to factor d (elementwise)."""
    rank = len(shape(op.results[0]))
    dims = tuple(range(rank))
    operands = tuple(dims if len(shape(o)) == rank else (None,) * rank for o in op.operands)
    return FactorRule(operands, dims)


def _broadcast_rule(op: hlo.BroadcastOp, shape: ShapeOf) -> FactorRule:
    src, res = shape(op.operand), shape(op.result)
    operand: list[int | None] = [None] * len(res)
    for i, d in enumerate(op.dims):
        if src[i] == res[d]:
            operand[d] = i
    return FactorRule((tuple(operand),), tuple(range(len(res))))


def _transpose_rule(op: hlo.TransposeOp, shape: ShapeOf) -> FactorRule:
    return FactorRule((tuple(op.perm),), tuple(range(len(op.perm))))


def _slice_rule(op: hlo.SliceOp, shape: ShapeOf) -> FactorRule:
    src = shape(op.operand)
    operand = tuple(
        d if (lo, hi, step) == (0, src[d], 1) else None
        for d, (lo, hi, step) in enumerate(op.bounds)
    )
    return FactorRule((operand,), tuple(range(len(src))), unsplittable_factors=_unmapped(operand))


def _unmapped(dims: Sequence[int | None]) -> frozenset[int]:
    return frozenset(f for f, d in enumerate(dims) if d is None)


def _dynamic_slice_rule(op: hlo.DynamicSliceOp, shape: ShapeOf) -> FactorRule:
    src = shape(op.operand)
    operand = tuple(d if op.sizes[d] == src[d] else None for d in range(len(src)))
    indices = tuple((None,) * len(src) for _ in op.start_indices)
    return FactorRule(
        (operand, *indices), tuple(range(len(src))), unsplittable_factors=_unmapped(operand)
    )


def _dynamic_update_slice_rule(op: hlo.DynamicUpdateSliceOp, shape: ShapeOf) -> FactorRule:
    src, upd = shape(op.operand), shape(op.update)
    dims = tuple(range(len(src)))
    update = tuple(d if upd[d] == src[d] else None for d in dims)
    indices = tuple((None,) * len(src) for _ in op.start_indices)
    return FactorRule((dims, update, *indices), dims, unsplittable_factors=_unmapped(update))


def _concatenate_rule(op: hlo.ConcatenateOp, shape: ShapeOf) -> FactorRule:
    rank = len(shape(op.result))
    cat = op.dimension.value.data
    dims = tuple(d if d != cat else None for d in range(rank))
    return FactorRule(
        tuple(dims for _ in op.inputs), tuple(range(rank)), unsplittable_factors=frozenset({cat})
    )


def _pad_rule(op: hlo.PadOp, shape: ShapeOf) -> FactorRule:
    """
    A dimension that is not padded passes its sharding through; a padded one (edge,
    negative edge or interior) is unsplittable, so the operand is replicated along it
    before the pad (GSPMD's simple pad; its halo-exchange form is not implemented). The
    padding value (rank 0) maps to no factor: it is replicated.
    """
    rank = len(shape(op.result))
    padded = set(op.padded_dims())
    operand = tuple(None if d in padded else d for d in range(rank))
    return FactorRule(
        (operand, (None,) * rank),
        tuple(range(rank)),
        unsplittable_factors=frozenset(padded),
    )


def _reverse_rule(op: hlo.ReverseOp, shape: ShapeOf) -> FactorRule:
    """
    Every dimension is a pass-through factor, reversed ones included: the partitioner
    reverses each block locally and mirrors the blocks across the devices
    (`spmd_partition.FunctionPartitioner.mirror_reversed_blocks`).
    """
    dims = tuple(range(len(shape(op.result))))
    return FactorRule((dims,), dims)


def _sort_rule(op: hlo.SortOp, shape: ShapeOf) -> FactorRule:
    """
    Every operand and result maps dimension d to factor d (`result_dims` holds for each
    result); the sorted dimension is computed whole (unsplittable: gathered first), the
    others keep their sharding (each device sorts its own rows).
    """
    dims = tuple(range(len(shape(op.inputs[0]))))
    return FactorRule(
        tuple(dims for _ in op.inputs), dims, unsplittable_factors=frozenset({op.dim})
    )


def _bitcast_convert_rule(op: hlo.BitcastConvertOp, shape: ShapeOf) -> FactorRule:
    """
    Element-wise on the dimensions operand and result share; the last dimension a
    bitcast between widths adds (result) or drops (operand) holds the parts of one
    element, so it is computed whole (an unsplittable factor).
    """
    src, res = shape(op.operand), shape(op.result)
    extra = op.extra_dim()
    if extra == 0:
        dims = tuple(range(len(res)))
        return FactorRule((dims,), dims)
    rank = max(len(src), len(res))
    dims = tuple(range(rank))
    last = frozenset({rank - 1})
    if extra > 0:  # the result's last dimension: no operand dimension
        return FactorRule((dims[:-1] + (None,),), dims, unsplittable_factors=last)
    return FactorRule((dims,), dims[:-1] + (None,), unsplittable_factors=last)


def _top_k_rule(op: hlo.TopKOp, shape: ShapeOf) -> FactorRule:
    """
    Values and indices share `result_dims`; the last dimension (size n in the operand, k
    in the results) is computed whole, batch dimensions keep their sharding.
    """
    dims = tuple(range(len(shape(op.operand))))
    return FactorRule((dims,), dims, unsplittable_factors=frozenset({len(dims) - 1}))


def _window_rule(op: hlo.ReduceWindowOp | hlo.SelectAndScatterOp, shape: ShapeOf) -> FactorRule:
    """
    Every dimension maps operand d (and select_and_scatter's source d) to factor d to
    result d. A dimension whose window is the identity (size, stride, dilations 1, no
    padding) is a batch dimension: each device works on its rows. A windowed one is a
    halo factor: split with a halo exchange (XLA's windowed partitioning) when the blocks
    line up, else computed whole. The init value (rank 0) maps to no factor.
    """
    rank = len(shape(op.operand))
    dims = tuple(range(rank))
    tensors = (dims, (None,) * rank)
    if isinstance(op, hlo.SelectAndScatterOp):
        tensors = (dims, dims, (None,) * rank)
    return FactorRule(tensors, dims, halo_factors=frozenset(op.windowed_dims()))


def _gather_rule(op: hlo.GatherOp, shape: ShapeOf) -> FactorRule:
    """
    Factors: one per result batch dimension (the indices' dimension, and the operand's for
    batching dimensions), one per offset dimension (the operand dimension it slices:
    splittable when the slice is the whole dimension), and one per collapsed operand
    dimension (not in the result). A collapsed dimension that is the only indexed one, with
    slices of size 1 (an embedding table's vocabulary), is a reduction factor: each device
    gathers the rows it owns, masked to zero elsewhere, and the partial results are summed
    (`spmd_partition_gather`). Every other indexed dimension is computed whole.
    """
    operand, indices = shape(op.operand), shape(op.start_indices)
    result_rank = len(shape(op.result))
    ivd, sizes, offset_dims = op.ivd, op.dims("slice_sizes"), op.dims("offset_dims")
    idx_batch = [d for d in range(len(indices)) if d != ivd]
    op_batching = dict(
        zip(op.dims("start_indices_batching_dims"), op.dims("operand_batching_dims"), strict=True)
    )
    batch_dims = [r for r in range(result_rank) if r not in offset_dims]
    dropped = {*op.dims("collapsed_slice_dims"), *op.dims("operand_batching_dims")}
    kept = [d for d in range(len(operand)) if d not in dropped]
    collapsed = op.dims("collapsed_slice_dims")
    n = len(batch_dims) + len(kept) + len(collapsed)
    op_dims: list[int | None] = [None] * n
    idx_dims: list[int | None] = [None] * n
    res_dims: list[int | None] = [None] * n
    unsplittable: set[int] = set()
    for f, (r, i) in enumerate(zip(batch_dims, idx_batch, strict=True)):
        res_dims[f], idx_dims[f], op_dims[f] = r, i, op_batching.get(i)
    for j, d in enumerate(kept):
        f = len(batch_dims) + j
        op_dims[f], res_dims[f] = d, offset_dims[j]
        if sizes[d] != operand[d]:
            unsplittable.add(f)
    reduction: set[int] = set()
    for j, d in enumerate(collapsed):
        f = len(batch_dims) + len(kept) + j
        op_dims[f] = d
        (reduction if gather_is_masked(op, d) else unsplittable).add(f)
    return FactorRule(
        (tuple(op_dims), tuple(idx_dims)),
        tuple(res_dims),
        frozenset(reduction),
        frozenset(unsplittable),
    )


def gather_is_masked(op: hlo.GatherOp, dim: int) -> bool:
    """A collapsed dim (slices of 1) that is the only indexed one: a device can gather its
    own rows of it (masked, then summed). An indexed dimension sliced whole is an offset
    dimension instead (its start is clamped to 0): split like any offset dimension."""
    numeric = hlo.element_kind(op.result.type.element_type) != hlo.BOOL  # pyright: ignore
    collapsed = dim in op.dims("collapsed_slice_dims")
    return op.dims("start_index_map") == (dim,) and collapsed and numeric


def scatter_owned_rows_dim(op: hlo.ScatterOp, dim: int) -> bool:
    """An inserted dim whose rows each device updates on its own (indices shifted)."""
    return op.dims("scatter_dims_to_operand_dims") == (dim,) and op.window_sizes()[dim] == 1


def _scatter_rule(op: hlo.ScatterOp, shape: ShapeOf) -> FactorRule:
    """
    Factors: one per update scatter dimension (the indices' dimension too; the operand's
    and result's for batching dimensions) -- otherwise a reduction factor: each device
    scatters its updates into the identity and the partial results are combined with an
    all_reduce (add, mul, max, min; `replace` computes it whole); one per operand
    dimension (the result's too, and the updates' window dimension where it has one):
    a window dimension is splittable when the window is the whole dimension and no index
    points into it (scatter skips a window out of bounds globally), an inserted
    dimension when it is the only indexed one (each device applies the updates that fall
    in its rows), every other one is computed whole.
    """
    operand, indices, updates = (shape(v) for v in op.operands)
    ivd, window_dims = op.ivd, op.dims("update_window_dims")
    idx_batch = [d for d in range(len(indices)) if d != ivd]
    upd_scatter = [d for d in range(len(updates)) if d not in window_dims]
    op_batching = dict(
        zip(op.dims("scatter_indices_batching_dims"), op.dims("input_batching_dims"), strict=True)
    )
    dropped = {*op.dims("inserted_window_dims"), *op.dims("input_batching_dims")}
    kept = [d for d in range(len(operand)) if d not in dropped]
    sizes = op.window_sizes()
    dims: list[list[int | None]] = [[], [], [], []]  # operand, indices, updates, result
    reduction: set[int] = set()
    unsplittable: set[int] = set()
    combinable = (
        op.kind.data != "replace" and hlo.element_kind(_element_type(op.operand)) != hlo.BOOL
    )
    for u, i in zip(upd_scatter, idx_batch, strict=True):
        b = op_batching.get(i)
        if b is None:
            (reduction if combinable else unsplittable).add(len(dims[0]))
        for tensor, d in zip(dims, (b, i, u, b), strict=True):
            tensor.append(d)
    for d in range(len(operand)):
        if d in op_batching.values():
            continue
        f = len(dims[0])
        window = window_dims[kept.index(d)] if d in kept else None
        for tensor, dd in zip(dims, (d, None, window, d), strict=True):
            tensor.append(dd)
        indexed = d in op.dims("scatter_dims_to_operand_dims")
        # A whole-dimension window splits into local windows, unless the dimension is
        # indexed: then a start index other than 0 puts the global window out of bounds
        # (the update is skipped) while a device's local window could still be in bounds.
        whole_window = sizes[d] == operand[d] and not indexed
        if not (whole_window if d in kept else scatter_owned_rows_dim(op, d)):
            unsplittable.add(f)
    return FactorRule(
        tuple(tuple(t) for t in dims[:3]),
        tuple(dims[3]),
        frozenset(reduction),
        frozenset(unsplittable),
    )


def _element_type(value: SSAValue):
    ty = value.type
    assert isinstance(ty, TensorType)
    return ty.element_type


def _convolution_rule(op: hlo.ConvolutionOp, shape: ShapeOf) -> FactorRule:
    """
    Factors 0-2 (GSPMD's convolution handling, without halo exchange):
    - no groups: batch (lhs, result), output feature (rhs, result), input feature (lhs,
      rhs; a reduction: a sharded one leaves partial sums, all-reduced as for a dot);
    - feature groups G: batch; the group (lhs feature, rhs output feature, result
      feature); the rhs input feature (whole);
    - batch groups G: the group (lhs batch, rhs output feature, result feature); the result
      batch (whole); input feature (a reduction, as without groups).
    A group factor is split only where its blocks hold whole groups on every tensor (one
    lhs feature / batch or one output feature per group, as in a depthwise conv and its
    weight gradient): a dimension's blocks then divide G. Every spatial dimension (lhs and
    result) and every kernel spatial dimension is a factor computed whole: a sharded one is
    all-gathered first.
    """
    ld, rd, od = op.lhs_dims_, op.rhs_dims_, op.out_dims_
    n, lhs, rhs = op.spatial_rank, shape(op.lhs), shape(op.rhs)
    fgc, bgc = op.feature_groups, op.batch_groups
    out_per_group = rhs[rd[1]] // (fgc * bgc)
    if bgc > 1:
        factors = [(ld[0], rd[1], od[1]), (None, None, od[0]), (ld[1], rd[0], None)]
        split_group = lhs[ld[0]] == bgc or out_per_group == 1
        reduction, whole = {2}, ({0} if not split_group else set()) | {1}
    elif fgc > 1:
        factors = [(ld[0], None, od[0]), (ld[1], rd[1], od[1]), (None, rd[0], None)]
        split_group = rhs[rd[0]] == 1 or out_per_group == 1
        reduction, whole = set(), ({1} if not split_group else set()) | {2}
    else:
        factors = [(ld[0], None, od[0]), (None, rd[1], od[1]), (ld[1], rd[0], None)]
        reduction, whole = {2}, set()
    factors += [(ld[2 + i], None, od[2 + i]) for i in range(n)]
    factors += [(None, rd[2 + i], None) for i in range(n)]
    whole |= set(range(3, 3 + 2 * n))
    lhs_dims, rhs_dims, out_dims = ([f[k] for f in factors] for k in range(3))
    return FactorRule(
        (tuple(lhs_dims), tuple(rhs_dims)),
        tuple(out_dims),
        reduction_factors=frozenset(reduction),
        unsplittable_factors=frozenset(whole),
    )


def _dot_rule(op: hlo.DotOp, shape: ShapeOf) -> FactorRule:
    (lb, rb), (lc, rc) = op.batching, op.contracting
    lrank, rrank = len(shape(op.lhs)), len(shape(op.rhs))
    lfree = hlo.dot_free_dims(lrank, lb, lc)
    rfree = hlo.dot_free_dims(rrank, rb, rc)
    lhs: list[int | None] = [*lb, *lfree, *([None] * len(rfree)), *lc]
    rhs: list[int | None] = [*rb, *([None] * len(lfree)), *rfree, *rc]
    n_result = len(lb) + len(lfree) + len(rfree)
    result: list[int | None] = [*range(n_result), *([None] * len(lc))]
    reduction = frozenset(range(n_result, n_result + len(lc)))
    return FactorRule((tuple(lhs), tuple(rhs)), tuple(result), reduction)


def _reduce_rule(op: hlo.ReduceOp, shape: ShapeOf) -> FactorRule:
    rank = len(shape(op.operand))
    kept = [d for d in range(rank) if d not in op.dims]
    result = tuple(kept.index(d) if d in kept else None for d in range(rank))
    # a reduce with a body: N inputs alike, then N rank-0 inits mapping to no factor
    operands = (tuple(range(rank)),) * len(op.results) + ((None,) * rank,) * len(op.inits)
    return FactorRule(operands, result, frozenset(op.dims))


def _reshape_rule(op: hlo.ReshapeOp, shape: ShapeOf) -> FactorRule:
    """
    Reshape keeps a dimension's sharding when the dimension survives: either it is kept
    whole, or it is the major dimension of a group of dimensions merged or split (row-major
    order means a split of the major dimension is a split of the group).
    """
    src, res = shape(op.operand), shape(op.result)
    pairs = reshape_major_dim_pairs(src, res)
    operand: list[int | None] = [None] * len(res)
    for s, r in pairs:
        operand[r] = s
    return FactorRule(
        (tuple(operand),), tuple(range(len(res))), unsplittable_factors=_unmapped(operand)
    )


def reshape_major_dim_pairs(src: Sequence[int], res: Sequence[int]) -> list[tuple[int, int]]:
    """
    (operand dim, result dim) pairs that start the same row-major group of dims. A
    zero-element reshape has no row-major groups (a product of zero matches any other):
    only its leading dimensions that are kept whole pair up.
    """
    if 0 in src or 0 in res:
        return _zero_size_pairs(src, res)
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < len(src) and j < len(res):
        while i < len(src) and src[i] == 1:
            i += 1
        while j < len(res) and res[j] == 1:
            j += 1
        if i == len(src) or j == len(res):
            break
        pairs.append((i, j))
        a, b = src[i], res[j]
        i, j = i + 1, j + 1
        while a != b:
            if a < b:
                a *= src[i]
                i += 1
            else:
                b *= res[j]
                j += 1
    return pairs


def _zero_size_pairs(src: Sequence[int], res: Sequence[int]) -> list[tuple[int, int]]:
    """The equal leading dimensions of two zero-element shapes (size-1 dims skipped)."""
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while True:
        while i < len(src) and src[i] == 1:
            i += 1
        while j < len(res) and res[j] == 1:
            j += 1
        if i == len(src) or j == len(res) or src[i] != res[j]:
            return pairs
        pairs.append((i, j))
        i, j = i + 1, j + 1


def rng_bit_generator_shardings(
    op: hlo.RngBitGeneratorOp, mesh_name: str, output: ShardingAttr | None
) -> tuple[ShardingAttr, ShardingAttr, ShardingAttr]:
    """
    rng_bit_generator's rule (no factors: its state and its bits share no dimension):
    (initial_state, output_state, output). The state is replicated; the bits take the
    sharding their users want (`output`, replicated if None): every device generates them
    whole and keeps its block, so a split costs no communication and every block is the
    global result's (the bits depend on the output's whole shape).
    """
    state = replicated(mesh_name, 1)
    rank = len(type_shape(op.output))
    return state, state, output or replicated(mesh_name, rank)


def propagation_rule(op: Operation, sliced_dims: bool) -> FactorRule | None:
    """
    The rule `spmd-propagate` follows: `factor_rule`, and with `sliced_dims` Shardy's
    permutation factors for a slice's sliced, a pad's padded and a concatenate's
    concatenated dimension (Shardy's non-conservative rules): each operand's dimension maps
    to the result's, so a split propagates through it (the partitioner computes the
    dimension whole and reshards). Not a dynamic_slice's (Shardy does not either).
    """
    rule = factor_rule(op)
    if not sliced_dims or rule is None:
        return rule
    if not isinstance(op, hlo.SliceOp | hlo.PadOp | hlo.ConcatenateOp):
        return rule
    through = frozenset(f for f in rule.unsplittable_factors if rule.result_dims[f] == f)
    operands = tuple(
        tuple(f if f in through and len(type_shape(v)) else d for f, d in enumerate(dims))
        for dims, v in zip(rule.operand_dims, op.operands, strict=True)
    )
    return replace(rule, operand_dims=operands, permutation_factors=through)


def factor_rule(op: Operation, shape: ShapeOf = type_shape) -> FactorRule | None:
    """
    The op's factors, or None for an op with no sharding rule. `shape` gives a value's
    global shape (the partitioner asks it of operands that are already local).
    """
    cls = type(op)
    rule = _RULES.get(cls, _UNKNOWN)
    if rule is _UNKNOWN:
        rule = _RULES[cls] = _rule_of(cls)
    return None if rule is None else rule(op, shape)


def _rule_of(cls: type[Operation]) -> Callable[[Any, ShapeOf], FactorRule] | None:
    """The rule function for ops of class `cls` (None: no sharding rule)."""
    for classes, rule in _RULE_TABLE:
        if issubclass(cls, classes):
            return rule
    return None


_SAME_INDEX_OPS: tuple[type[Operation], ...] = (
    *hlo.ELEMENTWISE,
    hlo.ConstantOp,
    hlo.IotaOp,
    spmd.ConstraintOp,
)
"""Ops whose result element at an index needs only the operands' elements at that index
(or none): one identity rule, and their padding stays in the padding."""

_RULE_TABLE: tuple[
    tuple[type | UnionType | tuple[type, ...], Callable[[Any, ShapeOf], FactorRule]], ...
] = (
    (hlo.BroadcastOp, _broadcast_rule),
    (hlo.TransposeOp, _transpose_rule),
    (hlo.SliceOp, _slice_rule),
    (hlo.DynamicSliceOp, _dynamic_slice_rule),
    (hlo.DynamicUpdateSliceOp, _dynamic_update_slice_rule),
    (hlo.ConcatenateOp, _concatenate_rule),
    (hlo.DotOp, _dot_rule),
    (hlo.ReduceOp, _reduce_rule),
    (hlo.ReshapeOp, _reshape_rule),
    (hlo.PadOp, _pad_rule),
    (hlo.ReverseOp, _reverse_rule),
    (hlo.SortOp, _sort_rule),
    (hlo.TopKOp, _top_k_rule),
    (hlo.ConvolutionOp, _convolution_rule),
    (hlo.GatherOp, _gather_rule),
    (hlo.ScatterOp, _scatter_rule),
    (hlo.BitcastConvertOp, _bitcast_convert_rule),
    (hlo.ComplexOp | hlo.RealOp | hlo.ImagOp, _identity_rule),
    (hlo.ReduceWindowOp | hlo.SelectAndScatterOp, _window_rule),
    (_SAME_INDEX_OPS, _identity_rule),
    (hlo.PartitionIdOp | hlo.ReplicaIdOp, _identity_rule),  # rank 0: replicated
)
"""Each op class's rule function, the first whose classes it belongs to."""

_UNKNOWN = object()
_RULES: dict[type[Operation], Any] = {}
"""`_rule_of` by op class: `factor_rule` is asked of every op several times by propagation
and partitioning, and trying its classes one by one was a third of its price (issue 14
item 7)."""


################################################################################
# Sharding arithmetic                                                          #
################################################################################


def fit_axes(axes: Sequence[str], size: int, mesh: MeshAttr, uneven: bool = False) -> Axes:
    """
    The longest prefix of `axes` whose product divides `size`; with `uneven`, whose
    product is at most `size` (an uneven split, padded: the verifier's rule).
    """
    if not axes:
        return ()
    memo = _fit_memo(mesh) if type(axes) is tuple else None
    if memo is not None and (found := memo.get((axes, size, uneven))) is not None:
        return found
    kept: list[str] = []
    product = 1
    for a in axes:
        product *= mesh.axis_size(a)
        if size % product and not (uneven and product <= size):
            break
        kept.append(a)
    if memo is not None:
        memo[(axes, size, uneven)] = tuple(kept)
    return tuple(kept)


_FIT_MEMOS: dict[int, tuple[MeshAttr, dict[tuple[Axes, int, bool], Axes]]] = {}
"""id(mesh) -> (the mesh, kept alive so its id is not reused; (axes, size, uneven) -> what
`fit_axes` returns): propagation and partitioning ask it a few hundred thousand times at
10k ops (issue 14 item 7), for a handful of distinct questions."""


def _fit_memo(mesh: MeshAttr) -> dict[tuple[Axes, int, bool], Axes]:
    entry = _FIT_MEMOS.get(id(mesh))
    if entry is None or entry[0] is not mesh:
        if len(_FIT_MEMOS) > 256:
            _FIT_MEMOS.clear()
        entry = _FIT_MEMOS[id(mesh)] = (mesh, {})
    elif len(entry[1]) > 65536:
        entry[1].clear()
    return entry[1]


def pads_safely(op: Operation) -> bool:
    """
    Whether `op` may compute on unevenly split (padded) blocks: each local block's
    padding only ever lands in the padding of its result (elementwise ops, transpose,
    broadcast, iota, the whole-dimension factors of slice, pad, concatenate, sort, ...),
    or the partitioner masks it (the reduced dimensions of a reduce and the contracting
    dimensions of a dot: `spmd_partition` selects the reduction's identity / zero there).
    Every other op (reshape, reverse, and any op not listed) has its operands split
    evenly first.
    """
    found = _PADS_SAFELY.get(type(op))
    if found is not None:
        return found
    if isinstance(op, hlo.ReduceOp) and op.has_body:
        return False  # no identity to mask the padding with: a body is any computation
    if isinstance(op, hlo.ReduceOp | hlo.DotOp):
        return isinstance(_element(op.operands[0]), IntegerType | AnyFloat)
    found = _PADS_SAFELY[type(op)] = isinstance(op, _SAME_INDEX_OPS) or isinstance(
        op,
        hlo.BroadcastOp
        | hlo.TransposeOp
        | hlo.SliceOp
        | hlo.DynamicSliceOp
        | hlo.DynamicUpdateSliceOp
        | hlo.ConcatenateOp
        | hlo.PadOp
        | hlo.SortOp
        | hlo.TopKOp,
    )
    return found


_PADS_SAFELY: dict[type[Operation], bool] = {}
"""`pads_safely` by op class, for the classes whose answer is the class's (all but reduce
and dot): asked for every op several times by propagation and partitioning."""


def _element(value: SSAValue) -> Attribute:
    ty = value.type
    assert isinstance(ty, TensorType)
    return ty.element_type


def make_sharding(
    mesh_name: str, dims: Sequence[Sequence[str]], unreduced: Sequence[str] = ()
) -> ShardingAttr:
    return _make_sharding(mesh_name, tuple(tuple(d) for d in dims), tuple(unreduced))


@functools.lru_cache(maxsize=4096)
def _make_sharding(
    mesh_name: str, dims: tuple[tuple[str, ...], ...], unreduced: tuple[str, ...]
) -> ShardingAttr:
    """Attributes are immutable, and building one (with its verification) is costly."""
    return ShardingAttr(mesh_name, dims, unreduced)


def replicated(mesh_name: str, rank: int) -> ShardingAttr:
    return make_sharding(mesh_name, [()] * rank)


def without_unreduced(sharding: ShardingAttr) -> ShardingAttr:
    return make_sharding(sharding.mesh_name, sharding.dim_axes)


def factor_axes_from(
    rule: FactorRule, dims: Sequence[int | None], sharding: ShardingAttr
) -> list[Axes | None]:
    """The axes each factor gets from one tensor's sharding (None: not mapped)."""
    out: list[Axes | None] = [None] * rule.factor_count
    for f, d in enumerate(dims):
        if d is not None:
            out[f] = sharding.dim_axes[d]
    return out


def project(
    mesh_name: str,
    dims: Sequence[int | None],
    factor_axes: Sequence[Axes],
    shape: Sequence[int],
    mesh: MeshAttr,
    uneven: bool = False,
) -> ShardingAttr:
    """A tensor's sharding from its factors' axes (unmapped dims replicated)."""
    per_dim: list[Axes] = [()] * len(shape)
    for f, d in enumerate(dims):
        if d is not None:
            per_dim[d] = fit_axes(factor_axes[f], shape[d], mesh, uneven)
    return make_sharding(mesh_name, per_dim)
