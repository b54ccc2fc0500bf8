"""
The cost of each op on a chip: one model for the scheduler and the interpreter's timing.

Compute ops: roofline `max(flops / peak, bytes / HBM bandwidth)`, with dtype-aware bytes and
FLOPs (dots on the MXU, everything else on the VPU; see `chips`). Bytes are what the op
reads and writes in HBM: a reshape is a bitcast and moves nothing, a slice reads only what
it keeps, a dynamic_update_slice writes its update in place.

Collectives over mesh axes (DESIGN.md "Hardware model", scaling book Part 3), V the bytes of
the full (gathered) array, N the group size, W the axis bandwidth (both directions of a ring
with wraparound, one without), T the per-hop latency:
- all_gather = reduce_scatter = max(latency, V/W * (N-1)/N); all_reduce twice that;
- all_to_all: a quarter of an all_gather on a bidirectional ring, half on a line;
- latency: T * N/2 with wraparound, T * (N-1) without; over k axes at once the bandwidth
  term is divided by k and the latencies add;
- permute: the farthest pair's hops * T + its bytes over one link direction.
Mesh axes map to torus axes in order; mesh axes beyond the torus's dimensions fold into
its last axis (which then has their product as length for the wraparound rule). Explicit
groups are costed as one ring of the group's size.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, field

from shardc.diagnostics import op_position
from shardc.dialects import collective, hlo, spmd
from shardc.dialects.sizes import tensor_bytes
from shardc.dialects.spmd import MeshAttr
from shardc.hardware.chips import Chip
from xdsl.dialects.builtin import ComplexType, IntegerType, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

MXU_DTYPE_FACTOR = {"f64": 1 / 8}
"""Fraction of the bf16 MXU peak per element type (others: 1, see `chips`)."""


def mxu_rate(chip: Chip, element_type: Attribute) -> float:
    """
    FLOP/s of the MXU multiplying operands of `element_type` (`chips` says why): integers
    of 8 bits or fewer at the chip's int8 rate, complex at a quarter of its part's.
    """
    if isinstance(element_type, ComplexType):
        return mxu_rate(chip, element_type.element_type) / 4
    if isinstance(element_type, IntegerType) and 1 < element_type.width.data <= 8:
        return chip.flops_bf16 * chip.int8_factor
    return chip.flops_bf16 * MXU_DTYPE_FACTOR.get(str(element_type), 1.0)


def matmul_time(chip: Chip, m: int, k: int, n: int, element_type: Attribute) -> float:
    """Seconds of an (m x k) @ (k x n) matmul on the MXU: 2mkn FLOPs at its peak."""
    return 2.0 * m * k * n / mxu_rate(chip, element_type)


def vpu_time(chip: Chip, elements: int, ops_per_element: int = 1) -> float:
    """Seconds of `ops_per_element` VPU operations on each of `elements` elements."""
    return ops_per_element * elements / chip.vpu_flops


def vmem_time(chip: Chip, nbytes: int) -> float:
    """Seconds to load or store `nbytes` between VMEM and the vector registers."""
    return nbytes / (chip.vmem_bw_factor * chip.hbm_bw)


@dataclass(frozen=True)
class OpCost:
    flops: float
    bytes: int
    time: float


def _elements(ty: TensorType) -> int:
    return math.prod(ty.get_shape())


def _tensor_types(values: object) -> list[TensorType]:
    return [v.type for v in values if isinstance(v.type, TensorType)]  # pyright: ignore


def sort_flops(op: hlo.SortOp | hlo.TopKOp) -> float:
    """
    A bitonic sort network along the sorted dimension (how TPUs sort; top_k is costed as
    a sort of its operand with an index operand): L(L + 1)/2 compare-exchange stages,
    L = ceil(log2 n), each touching every element of every operand once.
    """
    if isinstance(op, hlo.SortOp):
        types, dim = _tensor_types(op.inputs), op.dim
    else:
        types = _tensor_types(op.operands) * 2
        dim = len(types[0].get_shape()) - 1
    n = types[0].get_shape()[dim]
    stages = math.ceil(math.log2(n)) if n > 1 else 0
    return float(sum(_elements(t) for t in types) * stages * (stages + 1) // 2)


RNG_OPS_PER_WORD = {"THREE_FRY": 64, "PHILOX": 26, "DEFAULT": 26}
"""
Vector ops per generated 32-bit word of `hlo.rng_bit_generator`: Threefry-2x32 runs 20
rounds (add, rotate as two shifts and an or, xor) plus 5 key injections per pair of words;
Philox-4x32 10 rounds of two 32x32->64 multiplies and the xors per four words. DEFAULT is
Philox (XLA's CPU default).
"""


def rng_bit_generator_flops(op: hlo.RngBitGeneratorOp) -> float:
    """Ops for the output's 32-bit words (64-bit elements are two words, narrower one)."""
    out = op.output.type
    assert isinstance(out, TensorType)
    width = out.element_type.width.data  # pyright: ignore[reportAttributeAccessIssue]
    words = _elements(out) * max(1, width // 32)
    return float(words * RNG_OPS_PER_WORD[op.algorithm])


def window_flops(op: hlo.ReduceWindowOp | hlo.SelectAndScatterOp) -> float:
    """
    One combine per window element per window position (reduce_window); select_and_scatter
    compares and then adds: two per window element per position (the source's shape).
    """
    positions = _elements(
        _tensor_types([op.results[0] if isinstance(op, hlo.ReduceWindowOp) else op.source])[0]
    )
    per_window = math.prod(op.window)
    return float(positions * per_window * (1 if isinstance(op, hlo.ReduceWindowOp) else 2))


def gather_scatter_bytes(op: hlo.GatherOp | hlo.ScatterOp) -> int:
    """
    Bytes moved: a gather reads the indices and only the slices it gathers (the result's
    size), and writes the result; a scatter copies the operand through (read + write),
    reads the indices and updates, and reads and writes the elements it updates.
    """
    if isinstance(op, hlo.GatherOp):
        out, idx = (tensor_bytes(t) for t in _tensor_types([op.result, op.start_indices]))
        return 2 * out + idx
    operand, idx, upd = (tensor_bytes(t) for t in _tensor_types(op.operands))
    return 2 * operand + idx + 3 * upd


def convolution_flops(op: hlo.ConvolutionOp) -> float:
    """
    2 FLOPs per multiply-add: each output element sums (input features / feature groups)
    x kernel spatial size products, i.e. every rhs element of its output feature (an
    im2col matmul, run on the MXU like a dot).
    """
    rhs, out = op.rhs.type, op.result.type
    assert isinstance(rhs, TensorType) and isinstance(out, TensorType)
    out_features = rhs.get_shape()[op.rhs_dims_[1]]
    per_output = _elements(rhs) // out_features if out_features else 0
    return 2.0 * _elements(out) * per_output


def _int_constant(value: SSAValue) -> int | None:
    """The integer a scalar `hlo.constant` holds, None for anything else."""
    owner = value.owner
    if (
        not isinstance(owner, hlo.ConstantOp)
        or hlo.element_kind(owner.value.get_element_type()) != hlo.INT
    ):
        return None
    values = list(owner.value.iter_values())  # pyright: ignore[reportUnknownMemberType]
    return int(values[0]) if len(values) == 1 else None  # pyright: ignore


_FLIPPED = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "NE": "NE"}


def _trips(start: int, step: int, limit: int, direction: str) -> int | None:
    """How often `i direction limit` holds for i = start, start + step, ... (None: never ends)."""
    if direction == "NE":
        span = limit - start
        if step == 0 or span % step or span // step < 0:
            return None if span else 0
        return span // step
    sign = 1 if direction in ("LT", "LE") else -1
    gap = (limit - start) * sign + (1 if direction in ("LE", "GE") else 0)  # values that pass
    if gap <= 0:
        return 0
    if step * sign <= 0:
        return None
    return -(-gap // (step * sign))


def _loop_constant(op: hlo.WhileOp, value: SSAValue) -> int | None:
    """A constant, or a carried value `do` passes on unchanged whose operand is one
    (`lax.while_loop`'s upper bound)."""
    args = op.cond.block.args
    if value not in args:
        return _int_constant(value)
    j = args.index(value)  # pyright: ignore[reportArgumentType]
    body_ret = op.body.block.last_op
    assert isinstance(body_ret, hlo.ReturnOp)
    if body_ret.values[j] is not op.body.block.args[j]:
        return None
    return _int_constant(op.inputs[j])


def while_trip_count(op: hlo.WhileOp) -> int | None:
    """
    The static trip count of a loop of the common form (JAX's fori_loop and scan): a
    carried counter starting at a constant, `cond` comparing it (LT, LE, GT, GE, NE) with a
    constant (or a carried value that stays a constant), `do` returning it plus a
    constant. None when the loop is not of that form.
    """
    cond_ret, body_ret = op.cond.block.last_op, op.body.block.last_op
    assert isinstance(cond_ret, hlo.ReturnOp) and isinstance(body_ret, hlo.ReturnOp)
    compare = cond_ret.values[0].owner
    if not isinstance(compare, hlo.CompareOp):
        return None
    direction = compare.comparison_direction.data
    lhs, rhs = compare.lhs, compare.rhs
    if rhs in op.cond.block.args and _loop_constant(op, rhs) is None:
        lhs, rhs, direction = rhs, lhs, _FLIPPED.get(direction, direction)
    if lhs not in op.cond.block.args or direction not in _FLIPPED:
        return None
    k = op.cond.block.args.index(lhs)  # pyright: ignore[reportArgumentType]
    start, limit = _int_constant(op.inputs[k]), _loop_constant(op, rhs)
    step_op = body_ret.values[k].owner
    if start is None or limit is None or not isinstance(step_op, hlo.AddOp):
        return None
    counter = op.body.block.args[k]
    if step_op.lhs is counter:
        step = _int_constant(step_op.rhs)
    elif step_op.rhs is counter:
        step = _int_constant(step_op.lhs)
    else:
        return None
    return None if step is None else _trips(start, step, limit, direction)


@dataclass
class CostModel:
    """Costs on `chip` for programs over `mesh` (None: one device)."""

    chip: Chip
    mesh: MeshAttr | None = None
    notes: list[str] = field(default_factory=list[str])
    """What the static estimates could not know (a while's trip count), once each."""

    # Compute ---------------------------------------------------------------------

    def op_cost(self, op: Operation) -> OpCost:
        """Roofline cost of a compute op (collectives: see `collective_time`)."""
        if isinstance(op, hlo.WhileOp | hlo.CaseOp):
            return self.control_cost(op)
        if isinstance(op, hlo.FusionOp):
            return self.fusion_cost(op)
        flops, rate = self.flops(op)
        nbytes = self.hbm_bytes(op)
        time = max(flops / rate if flops else 0.0, nbytes / self.chip.hbm_bw)
        return OpCost(flops, nbytes, time)

    def control_cost(self, op: hlo.WhileOp | hlo.CaseOp) -> OpCost:
        """
        Static estimate of a region op, its collectives run synchronously: a case costs its
        dearest branch; a while its body times the static trip count (`while_trip_count`)
        and its condition once more; without one, the body once (and a note says so).
        """
        if isinstance(op, hlo.CaseOp):
            return max((self.block_cost(r.block) for r in op.branches), key=lambda c: c.time)
        trips = while_trip_count(op)
        if trips is None:
            note = f"trip count of hlo.while at {op_position(op) or 'an unknown place'} unknown, body counted once"
            if note not in self.notes:
                self.notes.append(note)
            trips = 1
        cond, body = self.block_cost(op.cond.block), self.block_cost(op.body.block)
        return OpCost(
            cond.flops * (trips + 1) + body.flops * trips,
            cond.bytes * (trips + 1) + body.bytes * trips,
            cond.time * (trips + 1) + body.time * trips,
        )

    # Fusions (issue 14) ---------------------------------------------------------------

    def fusion_cost(self, op: hlo.FusionOp) -> OpCost:
        """
        A fused kernel: `max(flops / peak, boundary bytes / HBM bandwidth)`. The compute
        term is the MXU time of its dot or convolution (at its dtype's rate) plus the VPU
        time of everything else; the bytes are only what crosses the boundary, each operand
        once and every result, since the values inside stay in VMEM and vector registers.
        """
        flops = sum(self.flops(i)[0] for i in op.body.block.ops if not isinstance(i, hlo.ReturnOp))
        compute = self.compute_seconds(op)
        nbytes = sum(tensor_bytes(t) for t in _tensor_types(op.inputs)) + sum(
            tensor_bytes(t) for t in _tensor_types(op.outputs)
        )
        return OpCost(flops, nbytes, max(compute, nbytes / self.chip.hbm_bw))

    def compute_seconds(self, op: Operation) -> float:
        """
        The compute term of an op's roofline: its FLOPs at the rate of the unit that runs
        them (a fusion: each inner op's at its own; a while or case: at the MXU peak).
        """
        if isinstance(op, hlo.FusionOp):
            return sum(
                self.compute_seconds(inner)
                for inner in op.body.block.ops
                if not isinstance(inner, hlo.ReturnOp)
            )
        if isinstance(op, hlo.WhileOp | hlo.CaseOp):
            return self.op_cost(op).flops / self.chip.flops_bf16
        flops, rate = self.flops(op)
        return flops / rate if flops else 0.0

    def block_cost(self, block: Block) -> OpCost:
        """The ops of a region's block one after another (collectives synchronous)."""
        flops = time = 0.0
        nbytes = 0
        for inner in block.ops:
            if isinstance(inner, collective.CollectiveOp):
                time += self.collective_time(inner)
            elif inner.dialect_name() == "hlo" and not isinstance(inner, hlo.ReturnOp):
                cost = self.op_cost(inner)
                flops, nbytes, time = flops + cost.flops, nbytes + cost.bytes, time + cost.time
        return OpCost(flops, nbytes, time)

    def flops(self, op: Operation) -> tuple[float, float]:
        """(FLOPs, FLOP/s of the unit that runs them)."""
        if isinstance(op, hlo.DotOp):
            lhs, rhs = op.lhs.type, op.rhs.type
            assert isinstance(lhs, TensorType) and isinstance(rhs, TensorType)
            _, (lc, _) = op.batching, op.contracting
            contracted = math.prod(lhs.get_shape()[d] for d in lc)
            out = op.result.type
            assert isinstance(out, TensorType)
            return 2.0 * _elements(out) * contracted, mxu_rate(self.chip, lhs.element_type)
        if isinstance(op, hlo.ReduceOp):
            src = op.operand.type
            assert isinstance(src, TensorType)
            # a body (argmax) runs its ops once per reduced element
            per_element = len(op.body.block.ops) - 1 if op.body is not None else 1
            return float(_elements(src) * per_element), self.chip.vpu_flops
        if isinstance(op, hlo.SortOp | hlo.TopKOp):
            return sort_flops(op), self.chip.vpu_flops
        if isinstance(op, hlo.ConvolutionOp):
            lhs = op.lhs.type
            assert isinstance(lhs, TensorType)
            return convolution_flops(op), mxu_rate(self.chip, lhs.element_type)
        if isinstance(op, hlo.ScatterOp):
            # one combine per update element
            return float(_elements(_tensor_types([op.updates])[0])), self.chip.vpu_flops
        if isinstance(op, hlo.ReduceWindowOp | hlo.SelectAndScatterOp):
            return window_flops(op), self.chip.vpu_flops
        if isinstance(op, hlo.RngBitGeneratorOp):
            return rng_bit_generator_flops(op), self.chip.vpu_flops
        if isinstance(
            op,
            hlo.BinaryElementwiseOp
            | hlo.UnaryElementwiseOp
            | hlo.CompareOp
            | hlo.SelectOp
            | hlo.IsFiniteOp
            | hlo.ClampOp
            | hlo.ComplexOp
            | hlo.RealOp
            | hlo.ImagOp,
        ):
            out = op.results[0].type
            assert isinstance(out, TensorType)
            return float(_elements(out)), self.chip.vpu_flops
        return 0.0, self.chip.vpu_flops

    def hbm_bytes(self, op: Operation) -> int:
        if isinstance(op, hlo.ReshapeOp | spmd.AxisIndexOp | spmd.ConstraintOp):
            return 0
        if isinstance(op, hlo.PartitionIdOp | hlo.ReplicaIdOp):  # a register, like axis_index
            return 0
        if isinstance(op, hlo.ConstantOp | hlo.IotaOp):
            return sum(tensor_bytes(t) for t in _tensor_types(op.results))
        if isinstance(op, hlo.SliceOp | hlo.DynamicSliceOp):
            # Reads only the slice, writes the result.
            return 2 * sum(tensor_bytes(t) for t in _tensor_types(op.results))
        if isinstance(op, hlo.GatherOp | hlo.ScatterOp):
            return gather_scatter_bytes(op)
        if isinstance(op, hlo.DynamicUpdateSliceOp):
            # In place: reads the update, writes it into the buffer.
            update = op.update.type
            assert isinstance(update, TensorType)
            return 2 * tensor_bytes(update)
        return sum(tensor_bytes(t) for t in _tensor_types(op.operands)) + sum(
            tensor_bytes(t) for t in _tensor_types(op.results)
        )

    # Communication ----------------------------------------------------------------

    def comm_bytes(self, op: collective.CollectiveOp) -> int:
        """Operand bytes one device contributes (DESIGN.md's `comm_bytes`)."""
        return sum(tensor_bytes(t) for t in op.input_types())

    def axis_rings(self, op: collective.CollectiveOp) -> list[tuple[int, bool]]:
        """(size, wraparound) of each ring the collective runs over."""
        if op.explicit_groups is not None or self.mesh is None:
            size = op.group_size()
            return [(size, self.chip.has_wraparound(size))]
        torus = self.torus_axis_lengths()
        rings: list[tuple[int, bool]] = []
        for axis in op.axes:
            i = self.mesh.names.index(axis)
            length = torus[min(i, len(torus) - 1)]
            rings.append((self.mesh.axis_size(axis), self.chip.has_wraparound(length)))
        return rings

    def torus_axis_lengths(self) -> list[int]:
        assert self.mesh is not None
        shape = list(self.mesh.shape)
        dims = self.chip.torus_dims
        if len(shape) <= dims:
            return shape
        return shape[: dims - 1] + [math.prod(shape[dims - 1 :])]

    def collective_latency(self, op: collective.CollectiveOp) -> float:
        """The latency floor of a ring collective: T * N/2 with wraparound, T * (N-1) without."""
        return sum(
            self.chip.hop_latency * (n / 2 if wrap else n - 1)
            for n, wrap in self.axis_rings(op)
            if n > 1
        )

    def collective_time(self, op: collective.CollectiveOp) -> float:
        rings = [(n, wrap) for n, wrap in self.axis_rings(op) if n > 1]
        if not rings:
            return 0.0
        n_total = math.prod(n for n, _ in rings)
        latency = self.collective_latency(op)
        bandwidth = min(self.chip.axis_bandwidth_for(wrap) for _, wrap in rings) * len(rings)
        local = self.comm_bytes(op)
        kind = op.name.removeprefix("collective.").removesuffix("_start")
        if kind == "permute":
            return self.permute_time(op, local)
        full = local * n_total if kind in ("all_gather", "all_to_all") else local
        gather = full / bandwidth * (n_total - 1) / n_total
        if kind == "all_reduce":
            transfer = 2 * gather
        elif kind == "all_to_all":
            transfer = gather / (4 if all(w for _, w in rings) else 2)
        else:
            transfer = gather
        return max(latency, transfer)

    def permute_time(self, op: collective.CollectiveOp, local: int) -> float:
        assert isinstance(op, collective.PermuteBase)
        size = op.group_size()
        wrap = self.axis_rings(op)[0][1] if size > 1 else False
        hops = 0
        for src, dst in op.source_target_pairs:
            d = abs(dst - src)
            hops = max(hops, min(d, size - d) if wrap else d)
        if hops == 0:
            return 0.0
        return hops * self.chip.hop_latency + local / self.chip.ici_link_bw

    def collective_algorithm(self, op: collective.CollectiveOp) -> str:
        """
        In words, the algorithm `collective_time` costs: a permute's direct transfer, else
        one ring per mesh axis (both directions where the torus axis wraps around).
        """
        kind = op.name.removeprefix("collective.").removesuffix("_start")
        if kind == "permute":
            return "direct transfer"
        rings = [(n, wrap) for n, wrap in self.axis_rings(op) if n > 1]
        if not rings:
            return "none (group of one)"
        return " x ".join(f"{'bidirectional ' if wrap else ''}ring of {n}" for n, wrap in rings)


# Remembered costs (issue 14 item 7: estimates stay linear) ------------------------------


@dataclass
class CachedCostModel(CostModel):
    """
    A `CostModel` that remembers each op's cost by what it depends on (op name, operand and
    result types, properties and attributes), so that the copies of a module every
    estimate works on, and the many identical ops of a real program, cost one computation
    each. A fusion is keyed by its inner ops; other ops with regions are costed each time
    (their cost depends on their regions).
    """

    _ops: dict[Hashable, OpCost] = field(default_factory=dict[Hashable, OpCost])
    _collectives: dict[Hashable, float] = field(default_factory=dict[Hashable, float])

    @classmethod
    def key(cls, op: Operation) -> Hashable | None:
        types = (tuple(v.type for v in op.operands), tuple(r.type for r in op.results))
        if isinstance(op, hlo.FusionOp):  # its inner ops' keys: a fusion's cost is theirs
            inner = tuple(cls.key(i) for i in op.body.block.ops if not isinstance(i, hlo.ReturnOp))
            return None if None in inner else (op.name, types, inner)
        if op.regions:
            return None
        if isinstance(op, hlo.ConstantOp):  # its bytes, not its value
            return (op.name, types)
        props = tuple(sorted(op.properties.items()))
        return (op.name, types, props, tuple(sorted(op.attributes.items())))

    def op_cost(self, op: Operation) -> OpCost:
        key = self.key(op)
        if key is None:
            return super().op_cost(op)
        cost = self._ops.get(key)
        if cost is None:
            cost = self._ops[key] = super().op_cost(op)
        return cost

    def collective_time(self, op: collective.CollectiveOp) -> float:
        key = self.key(op)
        if key is None:
            return super().collective_time(op)
        time = self._collectives.get(key)
        if time is None:
            time = self._collectives[key] = super().collective_time(op)
        return time


def cached(model: CostModel) -> CachedCostModel:
    """`model` with its costs remembered (itself if it already is)."""
    if isinstance(model, CachedCostModel):
        return model
    return CachedCostModel(model.chip, model.mesh)
