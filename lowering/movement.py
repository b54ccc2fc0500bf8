"""
hlo data-movement ops lowered to tpu (part of `lower-to-tpu`, see lowering/lower_to_tpu.py):
ops that only move bytes become DMAs between HBM buffers (and their `tpu.memref_slice`
and `tpu.memref_reshape` views), without a round trip through VMEM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import Operation

if TYPE_CHECKING:
    from shardc.lowering.lower_to_tpu import KernelLowering


def handles(op: Operation) -> bool:
    """Whether this module lowers ops of this kind."""
    return False


def check(lowering: KernelLowering, op: Operation) -> None:
    """Raise an `OpPassError` at `op` if this variant cannot be lowered."""


def lower(lowering: KernelLowering, op: Operation) -> None:
    raise AssertionError(op.name)
