"""
numpy implementation of `hlo.convolution` (issue 13), registered with the plan next to
`HloFunctions` (`plan.py`).

StableHLO's semantics computed as im2col and one batched matmul: the lhs is moved to
(batch, feature, spatial...) and the rhs to (output feature, input feature, spatial...);
lhs dilation and padding (negative too) are one `pad` with zeros; the windows are a
strided view of the padded lhs (numpy's `sliding_window_view`, taking every stride-th
window and every rhs-dilation-th element of it); window reversal flips the kernel. Feature
groups split the lhs features and the output features into `feature_group_count` groups,
batch groups the lhs batch and the output features into `batch_group_count` groups, each
group a matmul of its own. bf16/f16 are multiplied and accumulated in f32 and rounded once,
as `hlo.dot` does; integers wrap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from shardc.dialects import hlo
from shardc.interpreter.hlo_impls import fast_impl, pad
from shardc.interpreter.values import accumulation_dtype, convert, tensor_spec
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, register_impls


@dataclass(frozen=True)
class ConvParams:
    """An `hlo.convolution`'s attributes (dimension lists as `hlo.ConvolutionOp` holds them)."""

    lhs_dims: tuple[int, ...]
    rhs_dims: tuple[int, ...]
    out_dims: tuple[int, ...]
    strides: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    lhs_dilation: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    reversal: tuple[int, ...]
    feature_groups: int = 1
    batch_groups: int = 1

    @staticmethod
    def of(op: hlo.ConvolutionOp) -> ConvParams:
        return ConvParams(
            op.lhs_dims_,
            op.rhs_dims_,
            op.out_dims_,
            op.strides,
            tuple(op.padding_),
            op.lhs_dilation_,
            op.rhs_dilation_,
            op.reversal,
            op.feature_groups,
            op.batch_groups,
        )


def _windows(x: np.ndarray, kernel: tuple[int, ...], p: ConvParams) -> np.ndarray:
    """(batch, feature, out spatial..., kernel spatial...) patches of the canonical lhs."""
    n = len(kernel)
    zero = np.zeros((), x.dtype)
    x = pad(
        x,
        zero,
        (0, 0, *(lo for lo, _ in p.padding)),
        (0, 0, *(hi for _, hi in p.padding)),
        (0, 0, *(d - 1 for d in p.lhs_dilation)),
    )
    span = tuple((k - 1) * d + 1 for k, d in zip(kernel, p.rhs_dilation, strict=True))
    view = sliding_window_view(x, span, axis=tuple(range(2, 2 + n)))
    steps = (
        *(slice(None, None, s) for s in p.strides),
        *(slice(None, None, d) for d in p.rhs_dilation),
    )
    return view[(slice(None), slice(None), *steps)]


def convolution(
    lhs: np.ndarray, rhs: np.ndarray, p: ConvParams, out_shape: tuple[int, ...], out_dtype: Any
) -> np.ndarray:
    """StableHLO convolution of `lhs` and `rhs` (see the module docstring)."""
    acc = accumulation_dtype(np.asarray(lhs).dtype)
    x = np.asarray(lhs).astype(acc).transpose(p.lhs_dims)
    w = np.asarray(rhs).astype(acc).transpose((p.rhs_dims[1], p.rhs_dims[0], *p.rhs_dims[2:]))
    n = x.ndim - 2
    flips = tuple(2 + i for i, r in enumerate(p.reversal) if r)
    if flips:
        w = np.flip(w, flips)
    canonical = tuple(out_shape[d] for d in p.out_dims)
    if math.prod(canonical) == 0 or min(w.shape[2:], default=1) == 0:
        return np.zeros(out_shape, out_dtype)
    kernel = w.shape[2:]
    patches = _windows(x, kernel, p)  # (B, C, O..., K...)
    groups = p.feature_groups * p.batch_groups
    b, c = patches.shape[:2]
    spatial = patches.shape[2 : 2 + n]
    if p.batch_groups > 1:  # lhs batch is (group, batch / groups)
        patches = patches.reshape(groups, b // groups, c, *spatial, *kernel)
        patches = np.moveaxis(patches, 0, 1)
    else:  # lhs features are (group, features / groups)
        patches = patches.reshape(b, groups, c // groups, *spatial, *kernel)
    bb, cc = patches.shape[0], patches.shape[2]
    # (G, B', O..., C', K...) @ (G, C', K..., O / G)
    a = patches.transpose((1, 0, *range(3, 3 + n), 2, *range(3 + n, 3 + 2 * n)))
    a = a.reshape(groups, bb * math.prod(spatial), cc * math.prod(kernel))
    o = w.shape[0]
    k = w.reshape(groups, o // groups, cc, *kernel)
    k = np.moveaxis(k, 1, -1).reshape(groups, cc * math.prod(kernel), o // groups)
    out = np.matmul(a, k).reshape(groups, bb, *spatial, o // groups)
    out = np.moveaxis(out, 0, -2).reshape(bb, *spatial, o)  # features (group, o / G)
    out = np.moveaxis(out, -1, 1)
    out = out.transpose(np.argsort(p.out_dims))
    return convert(np.ascontiguousarray(out), out_dtype)


@register_impls
class ConvolutionFunctions(InterpreterFunctions):
    """hlo.convolution."""

    @fast_impl(hlo.ConvolutionOp)
    def run_convolution(self, interp: Interpreter, op: hlo.ConvolutionOp, args: PythonValues):
        shape, dtype = tensor_spec(op.result.type)
        return (convolution(args[0], args[1], ConvParams.of(op), shape, dtype),)
