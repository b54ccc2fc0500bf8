"""`dialects/sizes.py` and `hlo.accumulation_type`: one definition each of a value's byte
size and of the type sums accumulate in (issue 12 item 5)."""

from __future__ import annotations

import pytest
from shardc.dialects import hlo, sizes, tpu
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float80Type,
    IndexType,
    IntegerType,
    TensorType,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute

bf16, f16 = BFloat16Type(), Float16Type()


@pytest.mark.parametrize(
    ("dtype", "size"),
    [(f32, 4), (bf16, 2), (f16, 2), (f64, 8), (i32, 4), (i64, 8), (i1, 1), (IntegerType(8), 1)],
)
def test_element_bytes(dtype: Attribute, size: int):
    assert sizes.element_bytes(dtype) == size
    assert sizes.tensor_bytes(TensorType(dtype, [3, 5])) == 15 * size
    assert tpu.element_bytes is sizes.element_bytes


@pytest.mark.parametrize("dtype", [IndexType(), Float80Type()])
def test_unknown_element_types_raise(dtype: Attribute):
    with pytest.raises(ValueError, match=f"no byte size for element type {dtype}"):
        sizes.element_bytes(dtype)


@pytest.mark.parametrize(
    ("dtype", "acc"),
    [(bf16, f32), (f16, f32), (f32, f32), (f64, f64), (i32, i32), (i64, i64), (i1, i1)]
    + [(Float8E4M3FNType(), f32), (Float8E5M2Type(), f32)],  # as XLA's f8 dots
)
def test_accumulation_type(dtype: Attribute, acc: Attribute):
    assert hlo.accumulation_type(dtype) == acc
    # The MXU's accumulator is the same type, for the types it multiplies.
    assert tpu.accumulation_type(dtype) == (None if dtype == i1 else acc)
