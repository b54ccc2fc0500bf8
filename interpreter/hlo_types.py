"""
Element types below a byte at level G and S: `i4`, `ui4`, `i2`, `ui2` are ml_dtypes arrays
(one element per byte), but numpy's ufuncs on them either are missing or return int8. So
the plan runs every op that touches them on byte-wide copies (`values.container`: int8 /
uint8) and wraps each integer result back to its type (`astype` wraps, as StableHLO's
integer arithmetic does). Adding, multiplying, negating, dividing, comparing, moving and
reducing in a byte and wrapping once gives the same bits as doing it in the narrow type;
the ops that depend on the bit width (shifts, popcnt, count_leading_zeros) and the ops
that read the result type (convert, constant, iota) handle sub-byte types themselves and
are not wrapped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from shardc.dialects import hlo
from shardc.interpreter.values import NARROW_INT_DTYPES, container, tensor_spec
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

_OWN_NARROW_HANDLING: tuple[type[Operation], ...] = (
    hlo.ShiftLeftOp,
    hlo.ShiftRightLogicalOp,
    hlo.ShiftRightArithmeticOp,
    hlo.PopcntOp,
    hlo.CountLeadingZerosOp,
    hlo.ConvertOp,
    hlo.ConstantOp,
    hlo.IotaOp,
)


def _narrow(op: Operation) -> bool:
    for v in (*op.operands, *op.results):
        ty = v.type
        if isinstance(ty, TensorType) and tensor_spec(ty)[1] in NARROW_INT_DTYPES:
            return True
    return False


def _widen(v: Any) -> Any:
    dtype = getattr(v, "dtype", None)
    if dtype is not None and dtype in NARROW_INT_DTYPES:
        return np.asarray(v).astype(container(dtype))
    return v


def adapt(op: Operation, raw: Callable[..., Any]) -> Callable[..., Any]:
    """`raw` itself, or for an op on sub-byte integers, `raw` run in bytes and wrapped."""
    if isinstance(op, _OWN_NARROW_HANDLING) or not _narrow(op):
        return raw
    dtypes = [
        tensor_spec(r.type)[1] if isinstance(r.type, TensorType) else None for r in op.results
    ]

    def run(ft: Any, interp: Any, op: Operation, args: tuple) -> tuple:
        out = raw(ft, interp, op, tuple(_widen(a) for a in args))
        return tuple(
            np.asarray(v).astype(d) if d in NARROW_INT_DTYPES else v
            for v, d in zip(out, dtypes, strict=True)
        )

    return run
