"""
Byte sizes of the values our dialects hold: one definition for every pass, the cost model,
the scheduler and the interpreter (an `i1` takes a byte, as XLA stores it).
"""

from __future__ import annotations

import math

from shardc.dialects.collective import FutureType
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute


def element_bytes(element_type: Attribute) -> int:
    width = getattr(element_type, "bitwidth", 32)
    return max(1, width // 8)


def tensor_bytes(ty: TensorType) -> int:
    return math.prod(ty.get_shape()) * element_bytes(ty.element_type)


def value_bytes(ty: Attribute) -> int:
    """Bytes of a tensor, or of the buffers a future holds; 0 for anything else."""
    if isinstance(ty, TensorType):
        return tensor_bytes(ty)
    if isinstance(ty, FutureType):
        return sum(tensor_bytes(t) for t in ty.value_types)
    return 0
