"""
Byte sizes of the values our dialects hold: one definition for every pass, the cost model,
the scheduler and the interpreter (an `i1` takes a byte, as XLA stores it; tensors of i4,
ui4, i2, ui2 are packed, two or four elements per byte, rounded up per tensor).
"""

from __future__ import annotations

import math

from shardc.dialects.collective import FutureType
from xdsl.dialects.builtin import (
    BFloat16Type,
    ComplexType,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute

_FLOATS = (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    Float8E4M3FNType,
    Float8E5M2Type,
)


def element_bits(element_type: Attribute) -> int:
    """
    Bits per element as stored: integers their width (an `i1` takes a byte, as XLA stores
    a pred), floats their width (f8 types 8), complex numbers twice their part's width.
    A `ValueError` for any other type: no value of ours holds one, so a size for it would
    be a guess.
    """
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        return 8 if width == 1 else width
    if isinstance(element_type, _FLOATS):
        return element_type.bitwidth
    if isinstance(element_type, ComplexType):
        return 2 * element_bits(element_type.element_type)
    raise ValueError(f"no byte size for element type {element_type}")


def element_bytes(element_type: Attribute) -> int:
    """
    Bytes one element takes on its own (a DMA of one element, a vector lane): its bits
    rounded up to whole bytes, so i4/ui4/i2/ui2 take one. Whole tensors of sub-byte
    integers are packed (`tensor_bytes`).
    """
    return -(-element_bits(element_type) // 8)


def tensor_bytes(ty: TensorType) -> int:
    """
    Bytes of a tensor as stored, moved by collectives and counted by the cost model:
    sub-byte integers are packed (two i4 or four i2 per byte, as XLA packs them on TPU),
    rounded up to a whole byte per tensor.
    """
    return -(-math.prod(ty.get_shape()) * element_bits(ty.element_type) // 8)


def value_bytes(ty: Attribute) -> int:
    """Bytes of a tensor, or of the buffers a future holds; 0 for anything else."""
    if isinstance(ty, TensorType):
        return tensor_bytes(ty)
    if isinstance(ty, FutureType):
        return sum(tensor_bytes(t) for t in ty.value_types)
    return 0
