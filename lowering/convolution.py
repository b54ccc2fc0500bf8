"""
`hlo.convolution` lowered to tpu (part of `lower-to-tpu`, see lowering/lower_to_tpu.py) as
a sum of dots over the kernel's spatial taps, on the MXU: before the kernel is built
(`expand`, an xDSL rewrite of the level-S function, so that every intermediate gets its
HBM buffer from the ABI) a convolution becomes level-S ops that `compute` and `movement`
lower:

* the lhs padded with zeros (edge padding, negative too, and lhs dilation as interior
  padding): one `hlo.pad`, left out when there is none;
* per group (feature groups split the lhs features, batch groups the lhs batch, both the
  output features, group-major as StableHLO says): per kernel tap t (row-major), the lhs
  window positions that tap reads, one strided `hlo.slice` (stride: the window stride,
  start: t times the rhs dilation), and the kernel's [in, out] matrix at t (flipped where
  `window_reversal` says), a slice and a reshape; one `hlo.dot` contracting the features,
  its result in the accumulation type (f32 for bf16/f16, as level S multiplies and sums),
  added to the group's accumulator;
* the groups' outputs concatenated along the features, transposed to the result's
  dimension order, rounded once to the result type.

Each dot is a tiled MXU loop (compute.py) of (batch x output positions) rows by
(output features) columns contracting the input features; a 1x1 convolution is one dot.
Level S computes one matmul over (features x taps); the sum runs in another order, so
floats agree to rounding (as tiled dots do), integers exactly. The bytes: each tap's
strided slice is a copy of the lhs window positions (taps x output positions x
features), so the channels-last convolutions lowering/conv_kernel.py takes (the lhs
read once per image with its halo, taps as shifted VMEM loads) are left to it.
"""

from __future__ import annotations

import itertools
import math

from shardc.dialects import hlo
from shardc.dialects.hlo import accumulation_type
from shardc.dialects.syntax import splat_elements
from shardc.lowering import conv_kernel
from shardc.lowering.context import Target
from shardc.lowering.emit import tensor_type
from shardc.lowering.windows import check_expansion
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)


class _Builder:
    """Collects new ops, each at `op`'s location."""

    def __init__(self, op: Operation):
        self.at = op.location
        self.ops: list[Operation] = []

    def add(self, o: Operation) -> SSAValue:
        o.location = self.at
        self.ops.append(o)
        return o.results[0]

    def slice(self, v: SSAValue, dim: int, lo: int, hi: int) -> SSAValue:
        shape = tensor_type(v.type).get_shape()
        if (lo, hi) == (0, shape[dim]):
            return v
        start = [lo if d == dim else 0 for d in range(len(shape))]
        limit = [hi if d == dim else n for d, n in enumerate(shape)]
        return self.add(hlo.SliceOp(v, start, limit))


class ConvolutionToDots(RewritePattern):
    """`hlo.convolution` as pad, slices and dots (see the module docstring)."""

    def __init__(self, target: Target | None = None):
        self.target = target

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: hlo.ConvolutionOp, rewriter: PatternRewriter) -> None:
        if conv_kernel.takes(self.target, op):
            return  # one kernel, the lhs read once (lowering/conv_kernel.py)
        res = tensor_type(op.result.type)
        if math.prod(res.get_shape()) == 0 or 0 in tensor_type(op.rhs.type).get_shape():
            # Nothing to multiply: an empty result, or sums over an empty kernel (zeros).
            zeros = hlo.ConstantOp(splat_elements(res, 0))
            rewriter.replace(op, zeros, [zeros.result])
            return
        b = _Builder(op)
        x = _padded(b, op)
        groups = op.feature_groups * op.batch_groups
        bdim, fdim = op.lhs_dims_[0], op.lhs_dims_[1]
        odim = op.rhs_dims_[1]
        xs, ws = tensor_type(x.type).get_shape(), tensor_type(op.rhs.type).get_shape()
        parts = []
        for g in range(groups):
            xg = x
            if op.feature_groups > 1:
                c = xs[fdim] // groups
                xg = b.slice(x, fdim, g * c, (g + 1) * c)
            if op.batch_groups > 1:
                n = xs[bdim] // groups
                xg = b.slice(x, bdim, g * n, (g + 1) * n)
            o = ws[odim] // groups
            parts.append(_taps(b, op, xg, b.slice(op.rhs, odim, g * o, (g + 1) * o)))
        total = parts[0] if len(parts) == 1 else b.add(hlo.ConcatenateOp(parts, len(xs) - 1))
        perm = _out_perm(op)
        if perm != sorted(perm):
            total = b.add(hlo.TransposeOp(total, perm))
        if tensor_type(total.type).element_type != res.element_type:
            total = b.add(hlo.ConvertOp(total, res))
        check_expansion(self.target, op, b.ops, "as dots over its kernel taps")
        rewriter.replace(op, b.ops, [total])


def _padded(b: _Builder, op: hlo.ConvolutionOp) -> SSAValue:
    """The lhs with its edge padding and lhs dilation (zeros), or itself if none."""
    rank = len(op.lhs_dims_)
    low, high, interior = [0] * rank, [0] * rank, [0] * rank
    for j, d in enumerate(op.lhs_dims_[2:]):
        low[d], high[d] = op.padding_[j]
        interior[d] = op.lhs_dilation_[j] - 1
    if not any((*low, *high, *interior)):
        return op.lhs
    elem = tensor_type(op.lhs.type).element_type
    zero = b.add(hlo.ConstantOp(DenseIntOrFPElementsAttr.from_list(TensorType(elem, []), [0])))
    return b.add(hlo.PadOp(op.lhs, zero, low, high, interior))


def _taps(b: _Builder, op: hlo.ConvolutionOp, x: SSAValue, w: SSAValue) -> SSAValue:
    """One group: the sum over kernel taps of dot(lhs positions, kernel matrix), laid
    out as (the lhs's non-feature dimensions in its order, output features)."""
    res = tensor_type(op.result.type)
    acc = accumulation_type(tensor_type(op.lhs.type).element_type)
    lhs_spatial, rhs_spatial = op.lhs_dims_[2:], op.rhs_dims_[2:]
    out_spatial = [res.get_shape()[d] for d in op.out_dims_[2:]]
    ws = tensor_type(w.type).get_shape()
    kernel = [ws[d] for d in rhs_spatial]
    i_dim, o_dim = op.rhs_dims_[0], op.rhs_dims_[1]
    matrix = [ws[i_dim], ws[o_dim]] if i_dim < o_dim else [ws[o_dim], ws[i_dim]]
    total = None
    xs = tensor_type(x.type).get_shape()
    for tap in itertools.product(*(range(k) for k in kernel)):
        start, limit, strides = [0] * len(xs), list(xs), [1] * len(xs)
        for j, d in enumerate(lhs_spatial):
            start[d] = tap[j] * op.rhs_dilation_[j]
            strides[d] = op.strides[j]
            limit[d] = start[d] + strides[d] * (out_spatial[j] - 1) + 1
        xt = x
        if (start, limit) != ([0] * len(xs), list(xs)) or any(s != 1 for s in strides):
            xt = b.add(hlo.SliceOp(x, start, limit, strides))
        wt = w
        for j, d in enumerate(rhs_spatial):
            k = kernel[j] - 1 - tap[j] if op.reversal[j] else tap[j]
            wt = b.slice(wt, d, k, k + 1)
        welem = tensor_type(w.type).element_type
        wt = b.add(hlo.ReshapeOp(wt, TensorType(welem, matrix)))
        contract = 0 if i_dim < o_dim else 1
        xt_shape = tensor_type(xt.type).get_shape()
        out = [n for d, n in enumerate(xt_shape) if d != op.lhs_dims_[1]]
        out.append(matrix[1 - contract])
        dot = b.add(
            hlo.DotOp(xt, wt, ([op.lhs_dims_[1]], [contract]), result_type=TensorType(acc, out))
        )
        total = dot if total is None else b.add(hlo.AddOp(total, dot))
    assert total is not None
    return total


def _out_perm(op: hlo.ConvolutionOp) -> list[int]:
    """The transpose from the dots' layout (the lhs's non-feature dimensions in lhs
    order, then the output features) to the result's."""
    label = {op.lhs_dims_[0]: "b", **{d: j for j, d in enumerate(op.lhs_dims_[2:])}}
    layout = [label[d] for d in range(len(op.lhs_dims_)) if d != op.lhs_dims_[1]] + ["f"]
    want = {op.out_dims_[0]: "b", op.out_dims_[1]: "f"}
    want.update({d: j for j, d in enumerate(op.out_dims_[2:])})
    return [layout.index(want[p]) for p in range(len(op.out_dims_))]


def expand(function: Operation, target: Target | None = None) -> None:
    """Rewrite every convolution of `function` (nested ones too) as dots; with a
    `target`, refuse (at the convolution) one whose dots do not fit its VMEM."""
    walker = PatternRewriteWalker(ConvolutionToDots(target), apply_recursively=False)
    for region in function.regions:
        walker.rewrite_region(region)
