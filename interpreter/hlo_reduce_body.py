"""
numpy implementation of `hlo.reduce` with a body (several operands reduced together, as
argmax / argmin): the body is folded over the reduced elements in order, each evaluation
working on whole arrays of the result's shape (the body's ops broadcast), so a reduction
over L elements costs L evaluations of the body, whatever the other dimensions' sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from shardc.dialects import hlo
from xdsl.interpreter import Interpreter
from xdsl.ir import Block, SSAValue


def run_body(interp: Interpreter, block: Block, args: Sequence[Any]) -> list[Any]:
    """Evaluate a one-block body on arrays: each op through the device's implementations."""
    env: dict[SSAValue, Any] = dict(zip(block.args, args, strict=True))
    for op in block.ops:
        if isinstance(op, hlo.ReturnOp):
            return [env[v] for v in op.operands]
        results = interp.run_op(op, tuple(env[v] for v in op.operands))
        env.update(zip(op.results, results, strict=True))
    raise ValueError("the reduce body has no hlo.return")


def reduce_with_body(interp: Interpreter, op: hlo.ReduceOp, args: Sequence[Any]) -> tuple:
    """Fold the body over `op.dims` of the N inputs, from the N inits."""
    n = len(op.results)
    xs = [np.asarray(a) for a in args[:n]]
    dims = op.dims
    kept = [d for d in range(xs[0].ndim) if d not in dims]
    shape = tuple(xs[0].shape[d] for d in kept)
    length = int(np.prod([xs[0].shape[d] for d in dims], dtype=np.int64))
    flat = [np.transpose(x, [*dims, *kept]).reshape(length, *shape) for x in xs]
    acc = [np.array(np.broadcast_to(np.asarray(a), shape)) for a in args[n:]]
    assert op.body is not None
    block = op.body.block
    for k in range(length):
        acc = run_body(interp, block, [*acc, *(f[k] for f in flat)])
    return tuple(
        np.array(np.broadcast_to(a, shape), dtype=x.dtype) for a, x in zip(acc, xs, strict=True)
    )
