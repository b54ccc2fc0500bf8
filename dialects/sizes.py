"""
Byte sizes of the values our dialects hold: one definition for every pass, the cost model,
the scheduler and the interpreter (an `i1` takes a byte, as XLA stores it).
"""

from __future__ import annotations

import math

from shardc.dialects.collective import FutureType
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute


def element_bytes(element_type: Attribute) -> int:
    """
    Bytes per element as stored, moved by DMAs and counted by the cost model: integers
    their width in whole bytes (an `i1` takes one), floats their width. A `ValueError`
    for any other type: no value of ours holds one, so a size for it would be a guess.
    """
    if isinstance(element_type, IntegerType):
        return max(1, element_type.width.data // 8)
    if isinstance(element_type, BFloat16Type | Float16Type | Float32Type | Float64Type):
        return element_type.bitwidth // 8
    raise ValueError(f"no byte size for element type {element_type}")


def tensor_bytes(ty: TensorType) -> int:
    return math.prod(ty.get_shape()) * element_bytes(ty.element_type)


def value_bytes(ty: Attribute) -> int:
    """Bytes of a tensor, or of the buffers a future holds; 0 for anything else."""
    if isinstance(ty, TensorType):
        return tensor_bytes(ty)
    if isinstance(ty, FutureType):
        return sum(tensor_bytes(t) for t in ty.value_types)
    return 0
