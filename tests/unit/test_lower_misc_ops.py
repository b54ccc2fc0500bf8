"""
`lower-to-tpu` of the elementwise ops that kept corpus programs at level S (issue 15
item 3): clamp (rank-0 or full bounds, NaN-propagating as level S), the bitwise ops
(xor, and, or, not on i1 and integers), integer remainder, the shifts (amounts read as
unsigned, past the width: 0 or the sign fill), popcnt and count_leading_zeros,
bitcast_convert (one width, and between widths), partition_id and replica_id (0 on every
device, as level S: one replica); hypothesis-generated
programs lowered, simulated at level T on 2 devices and compared with level S bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.tests.unit.test_lower_element_types import inputs_for, program, ty
from shardc.tests.unit.test_lower_movement import DEVICES, check

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLOATS = ["f32", "bf16", "f16", "f64"]
INTS = ["i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64"]
SHAPES = st.tuples(st.sampled_from([1, 3, 8, 16]), st.sampled_from([1, 5, 128, 256]))


def _with_specials(arrays: list[np.ndarray], seed: int) -> list[np.ndarray]:
    """Float arrays with NaN, infinities and signed zeros sprinkled in (clamp's cases)."""
    rng = np.random.default_rng(seed)
    out = []
    for a in arrays:
        a = np.array(a)
        if a.dtype.kind == "f" or a.dtype.name in ("bfloat16",):
            flat = a.reshape(-1)
            pick = rng.random(flat.shape) < 0.2
            specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dtype=np.float32)
            flat[pick] = specials[rng.integers(0, 5, int(pick.sum()))].astype(a.dtype)
        out.append(a)
    return out


@SETTINGS
@given(st.sampled_from(FLOATS + INTS), SHAPES, st.booleans(), st.integers(0, 2**16))
def test_clamp(dtype: str, shape: tuple[int, int], scalar_bounds: bool, seed: int) -> None:
    t = ty(shape, dtype)
    b = ty((), dtype) if scalar_bounds else t
    line = f"hlo.clamp %a0, %a1, %a2 : ({b}, {t}, {b}) -> {t}"
    inputs = inputs_for([b, t, b], seed)
    check(
        program([b, t, b], t, line), [_with_specials(row, seed + d) for d, row in enumerate(inputs)]
    )


@SETTINGS
@given(
    st.sampled_from(["i1", *INTS]),
    st.sampled_from(["xor", "and", "or", "not"]),
    SHAPES,
    st.integers(0, 2**16),
)
def test_bitwise(dtype: str, kind: str, shape: tuple[int, int], seed: int) -> None:
    t = ty(shape, dtype)
    if kind == "not":
        check(program([t], t, f"hlo.not %a0 : {t}"), inputs_for([t], seed))
    else:
        check(program([t, t], t, f"hlo.{kind} %a0, %a1 : {t}"), inputs_for([t, t], seed))


def _amounts(rng: np.random.Generator, a: np.ndarray) -> np.ndarray:
    """Shift amounts: about the bit width (below, at, past it) or any bits (huge, negative)."""
    bits = 8 * a.dtype.itemsize
    small = rng.integers(0, bits + 3, size=a.shape).astype(a.dtype)
    return np.where(rng.random(a.shape) < 0.7, small, a[::-1] if a.ndim else a)


@SETTINGS
@given(
    st.sampled_from(INTS),
    st.sampled_from(["shift_left", "shift_right_logical", "shift_right_arithmetic"]),
    SHAPES,
    st.integers(0, 2**16),
)
def test_shifts(dtype: str, kind: str, shape: tuple[int, int], seed: int) -> None:
    t = ty(shape, dtype)
    rng = np.random.default_rng(seed)
    rows = [[a, _amounts(rng, b)] for a, b in inputs_for([t, t], seed)]
    check(program([t, t], t, f"hlo.{kind} %a0, %a1 : {t}"), rows)


@SETTINGS
@given(
    st.sampled_from(INTS),
    st.sampled_from(["popcnt", "count_leading_zeros"]),
    SHAPES,
    st.integers(0, 2**16),
)
def test_bit_counts(dtype: str, kind: str, shape: tuple[int, int], seed: int) -> None:
    t = ty(shape, dtype)
    check(program([t], t, f"hlo.{kind} %a0 : {t}"), inputs_for([t], seed))


SAME_WIDTH = [
    ("f32", "i32"),
    ("f32", "ui32"),
    ("i32", "ui32"),
    ("f64", "i64"),
    ("ui64", "f64"),
    ("f16", "i16"),
    ("bf16", "f16"),
    ("bf16", "ui16"),
    ("i8", "ui8"),
    ("f8E4M3FN", "i8"),
    ("f8E5M2", "ui8"),
]


@SETTINGS
@given(st.sampled_from(SAME_WIDTH), st.booleans(), SHAPES, st.integers(0, 2**16))
def test_bitcast_convert_same_width(pair, flip: bool, shape: tuple[int, int], seed: int) -> None:
    src, dst = pair[::-1] if flip else pair
    t, r = ty(shape, src), ty(shape, dst)
    check(program([t], r, f"hlo.bitcast_convert %a0 : ({t}) -> {r}"), inputs_for([t], seed))


assert DEVICES == 2


OTHER_WIDTH = [
    ("ui64", "ui32"),
    ("f64", "f32"),
    ("i64", "ui8"),
    ("f32", "ui8"),
    ("i32", "bf16"),
    ("ui16", "i8"),
]


@SETTINGS
@given(st.sampled_from(OTHER_WIDTH), st.booleans(), SHAPES, st.integers(0, 2**16))
def test_bitcast_convert_between_widths(
    pair, narrow: bool, shape: tuple[int, int], seed: int
) -> None:
    wide, small = pair
    ratio = {"ui64": 8, "i64": 8, "f64": 8, "f32": 4, "ui32": 4, "i32": 4, "bf16": 2, "ui16": 2}
    k = ratio[wide] // ratio.get(small, 1)
    w, n = ty(shape, wide), ty((*shape, k), small)
    src, dst = (w, n) if narrow else (n, w)
    check(
        program([src], dst, f"hlo.bitcast_convert %a0 : ({src}) -> {dst}"), inputs_for([src], seed)
    )


@pytest.mark.parametrize("dtype", ["i32", "ui32", "i64", "ui64", "i8", "ui16"])
@pytest.mark.parametrize("name", ["partition_id", "replica_id"])
def test_partition_and_replica_id(name: str, dtype: str) -> None:
    t = ty((), dtype)
    check(program([], t, f"hlo.{name} : {t}"), [[] for _ in range(DEVICES)])


@SETTINGS
@given(st.sampled_from(INTS), SHAPES, st.integers(0, 2**16))
def test_integer_remainder(dtype: str, shape: tuple[int, int], seed: int) -> None:
    t = ty(shape, dtype)
    rows = []
    for d, (a, b) in enumerate(inputs_for([t, t], seed)):
        rng = np.random.default_rng(seed + d)
        if b.dtype.kind in "iu":  # zeros (x % 0 = x) and -1 (INT_MIN % -1 = 0)
            pick = rng.integers(0, 4, size=b.shape)
            b = np.where(pick == 0, 0, np.where(pick == 1, np.array(-1).astype(b.dtype), b))
            b = b.astype(a.dtype)
        rows.append(_with_specials([a, b], seed + d))
    check(program([t, t], t, f"hlo.remainder %a0, %a1 : {t}"), rows)


FUSED = """
func.func @main(%x: tensor<16x256xf32>, %k: tensor<16x256xui32>, %lo: tensor<f32>, %hi: tensor<f32>) -> tensor<16x256xf32> {
  %r = hlo.fusion(%p0 = %x, %p1 = %k, %p2 = %lo, %p3 = %hi) kind = loop, name = "dropout_fusion" : (tensor<16x256xf32>, tensor<16x256xui32>, tensor<f32>, tensor<f32>) -> tensor<16x256xf32> {
    %c = hlo.clamp %p2, %p0, %p3 : (tensor<f32>, tensor<16x256xf32>, tensor<f32>) -> tensor<16x256xf32>
    %n = hlo.constant dense<9> : tensor<16x256xui32>
    %s = hlo.shift_right_logical %p1, %n : tensor<16x256xui32>
    %o = hlo.constant dense<1065353216> : tensor<16x256xui32>
    %m = hlo.or %s, %o : tensor<16x256xui32>
    %y = hlo.xor %m, %p1 : tensor<16x256xui32>
    %f = hlo.bitcast_convert %m : (tensor<16x256xui32>) -> tensor<16x256xf32>
    %g = hlo.mul %c, %f : tensor<16x256xf32>
    %b = hlo.bitcast_convert %y : (tensor<16x256xui32>) -> tensor<16x256xf32>
    %z = hlo.add %g, %b : tensor<16x256xf32>
    hlo.return %z : tensor<16x256xf32>
  }
  func.return %r : tensor<16x256xf32>
}
"""


def test_the_ops_fuse_into_one_loop_equal_to_level_s() -> None:
    from shardc.tests.unit.test_lower_fusion import check as check_fusion

    check_fusion(FUSED)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_max_min_of_signed_zeros(dtype: str, kind: str) -> None:
    """Of +0 and -0, level S (numpy) gives the second in f32 and bf16 but the first in f16;
    level T follows it bit for bit (f16 used to give the second)."""
    t = ty((8, 128), dtype)
    a, b = inputs_for([t, t], 0)[0]
    a[...], b[...] = 0, 0
    a[:, ::2], b[:, 1::2] = -a[:, ::2], -b[:, 1::2]
    check(program([t, t], t, f"hlo.{kind} %a0, %a1 : {t}"), [[a, b] for _ in range(DEVICES)])
