"""
numpy implementation of `hlo.rng_bit_generator` (issue 13), bit-exact with XLA's CPU
implementation (`RngBitGeneratorExpander` over `ThreeFryBitGenerator` /
`PhiloxBitGenerator` of XLA's prng library), so that JAX programs using the `rbg` PRNG get
JAX's numbers. Registered with the plan next to `HloFunctions` (`plan.py`).

The state is ui64 values: the key is `state[0]`, the rest the counter.

* THREE_FRY (state of 2): the counter is `state[1]`. 32-bit outputs split the shape in
  two halves along one dimension (the first of even size, else the first largest), count
  `state[1] + i` over the half shape's row-major index `i`, run Threefry-2x32 (20 rounds)
  keyed by the key's two 32-bit halves on the counter's two halves, and interleave the two
  output words along the split dimension (word 0 at even, word 1 at odd positions); the
  counter advances by the half shape's size. 64-bit outputs count over the whole shape
  and join the two words (low, high); the counter advances by the element count.
* PHILOX (state of 2 or 3; DEFAULT on CPU): the counter is a 128-bit number, low 64 bits
  `state[1]`, high `state[0]` (a state of 2: the key doubles as the high half) or
  `state[2]`. Philox-4x32 (10 rounds) of counter + j for j < ceil(n / 4) (n 32-bit
  words wanted) gives four words per j, read in the order (j, word); 64-bit outputs pair
  words (0, 1) and (2, 3). The counter advances by ceil(n / 4); a state of 2 keeps only
  the new low half.

Outputs narrower than 32 bits take the low bits of the 32-bit output; signed outputs are
the same bits read as signed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from shardc.dialects import hlo
from shardc.interpreter.hlo_impls import fast_impl
from shardc.interpreter.values import container, int_info, tensor_spec
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, register_impls

_U32 = np.uint32
_U64 = np.uint64
_MASK32 = _U64(0xFFFF_FFFF)
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_THREEFRY_PARITY = 0x1BD11BDA
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)


def _halves(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The low and high 32-bit words of uint64 values."""
    x = np.asarray(x, dtype=_U64)
    return (x & _MASK32).astype(_U32), (x >> _U64(32)).astype(_U32)


def _join(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.astype(_U64) | (hi.astype(_U64) << _U64(32))


def threefry2x32(x0: np.ndarray, x1: np.ndarray, key: int) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32 with 20 rounds (Salmon et al. 2011) of the counter words (x0, x1)."""
    k0, k1 = (int(key) & 0xFFFF_FFFF), (int(key) >> 32)
    ks = (_U32(k0), _U32(k1), _U32(_THREEFRY_PARITY ^ k0 ^ k1))
    x0, x1 = x0 + ks[0], x1 + ks[1]
    for block in range(5):
        for r in _ROTATIONS[block % 2]:
            x0 = x0 + x1
            x1 = ((x1 << _U32(r)) | (x1 >> _U32(32 - r))) ^ x0
        x0 = x0 + ks[(block + 1) % 3]
        x1 = x1 + ks[(block + 2) % 3] + _U32(block + 1)
    return x0, x1


split_dim = hlo.rng_split_dim
"""XLA's SplitShapeIntoHalves (`hlo.rng_split_dim`)."""


def threefry_bits32(key: int, counter: int, shape: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """uint32 bits of `shape` and the number of counters used (THREE_FRY)."""
    if not shape:
        o0, _ = threefry2x32(*_halves(np.array([counter], dtype=_U64)), key)
        return o0.reshape(()), 1
    dim = split_dim(shape)
    half = list(shape)
    half[dim] = -(-shape[dim] // 2)
    count = int(np.prod(half))
    o0, o1 = threefry2x32(*_halves(_U64(counter) + np.arange(count, dtype=_U64)), key)
    pair = np.stack([o0.reshape(half), o1.reshape(half)], axis=dim + 1)
    full = list(shape)
    full[dim] = 2 * half[dim]
    out = pair.reshape(full)
    return out[tuple(slice(0, d) for d in shape)], count


def threefry_bits64(key: int, counter: int, shape: tuple[int, ...]) -> tuple[np.ndarray, int]:
    count = int(np.prod(shape, dtype=np.int64))
    o0, o1 = threefry2x32(*_halves(_U64(counter) + np.arange(count, dtype=_U64)), key)
    return _join(o0, o1).reshape(shape), count


def philox4x32(words: list[np.ndarray], key: int) -> list[np.ndarray]:
    """Philox-4x32 with 10 rounds of the counter words (low word first)."""
    k = [_U32(int(key) & 0xFFFF_FFFF), _U32(int(key) >> 32)]
    x = words
    for _ in range(10):
        p0 = x[0].astype(_U64) * _U64(_PHILOX_M[0])
        p1 = x[2].astype(_U64) * _U64(_PHILOX_M[1])
        hi0, lo0 = (p0 >> _U64(32)).astype(_U32), p0.astype(_U32)
        hi1, lo1 = (p1 >> _U64(32)).astype(_U32), p1.astype(_U32)
        x = [hi1 ^ x[1] ^ k[0], lo1, hi0 ^ x[3] ^ k[1], lo0]
        k = [k[0] + _U32(_PHILOX_W[0]), k[1] + _U32(_PHILOX_W[1])]
    return x


def _u128_add(low: int, high: int, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    new_low = _U64(low) + n
    carry = (new_low < _U64(low)).astype(_U64)
    return new_low, _U64(high) + carry


def philox_words(key: int, low: int, high: int, words: int) -> tuple[list[np.ndarray], int]:
    """The four uint32 output words of ceil(words / 4) counters, and that count."""
    count = -(-words // 4)
    lo, hi = _u128_add(low, high, np.arange(count, dtype=_U64))
    return philox4x32([*_halves(lo), *_halves(hi)], key), count


def philox_bits(key: int, low: int, high: int, shape: tuple[int, ...], wide: bool):
    n = int(np.prod(shape, dtype=np.int64))
    out, count = philox_words(key, low, high, 2 * n if wide else n)
    if wide:
        out = [_join(out[0], out[1]), _join(out[2], out[3])]
    flat = np.stack(out, axis=1).reshape(-1)[:n]
    return flat.reshape(shape), count


def rng_bit_generator(
    algorithm: str, state: np.ndarray, shape: tuple[int, ...], dtype: np.dtype[Any]
) -> tuple[np.ndarray, np.ndarray]:
    """(output_state, bits) of StableHLO's rng_bit_generator as XLA's CPU computes them."""
    s = [int(v) for v in np.asarray(state, dtype=_U64).reshape(-1)]
    bits = int_info(dtype).bits
    wide = bits == 64
    with np.errstate(over="ignore"):
        if algorithm == "THREE_FRY":
            gen = threefry_bits64 if wide else threefry_bits32
            raw, used = gen(s[0], s[1], shape)
            new_state = [s[0], (s[1] + used) % 2**64]
        else:  # PHILOX, and DEFAULT (XLA's CPU default)
            high = s[2] if len(s) > 2 else s[0]
            raw, used = philox_bits(s[0], s[1], high, shape, wide)
            lo, hi = _u128_add(s[1], high, np.array(used, dtype=_U64))
            new_state = [s[0], int(lo)] + ([int(hi)] if len(s) > 2 else [])
    return np.array(new_state, dtype=_U64), _as_type(raw, dtype, bits)


def _as_type(raw: np.ndarray, dtype: np.dtype[Any], bits: int) -> np.ndarray:
    """The low `bits` bits of uint32/uint64 `raw` as `dtype` (signed: two's complement)."""
    raw = np.asarray(raw)
    if bits >= 8:
        return raw.astype(np.dtype(f"u{bits // 8}")).view(container(dtype)).astype(dtype)
    low = (raw & raw.dtype.type((1 << bits) - 1)).astype(np.int16)
    if container(dtype).kind == "i":
        low = (low ^ (1 << (bits - 1))) - (1 << (bits - 1))
    return low.astype(container(dtype)).astype(dtype)


@register_impls
class RandomFunctions(InterpreterFunctions):
    """hlo.rng_bit_generator."""

    @fast_impl(hlo.RngBitGeneratorOp)
    def run_rng_bit_generator(
        self, interp: Interpreter, op: hlo.RngBitGeneratorOp, args: PythonValues
    ):
        shape, dtype = tensor_spec(op.output.type)
        return rng_bit_generator(op.algorithm, args[0], shape, dtype)
