"""
hlo.rng_bit_generator at level G against XLA's CPU implementation: the reference vectors
in `data/rng_bit_generator_xla_cpu.npz` are what `lax.rng_bit_generator` gave under JAX
(made by `scripts/make_rng_vectors.py`, independent of shardc), for DEFAULT, THREE_FRY and
PHILOX, three keys, nine shapes (scalar, size 1 dimensions, odd sizes, empty) and ui8 ..
ui64 outputs. Also signed and sub-byte outputs (the same low bits), a Philox state of 3,
the verifier, the cost model and `lower-to-tpu`'s located refusal.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from shardc.diagnostics import DiagnosticError
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel, rng_ops_per_element
from shardc.interpreter.testing import parse, run_global

DATA = np.load(Path(__file__).parent / "data" / "rng_bit_generator_xla_cpu.npz")
KEYS = [(0x12345678ABCDEF01, 0x0FEDCBA987654321), (0, 0), (2**64 - 1, 2**64 - 2)]
ENTRIES = sorted({name.rsplit("|", 1)[0] for name in DATA.files})


def ty(shape: tuple[int, ...], dtype: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>" if shape else f"tensor<{dtype}>"


def program(algorithm: str, shape: tuple[int, ...], dtype: str, state: int = 2) -> str:
    s, b = ty((state,), "ui64"), ty(shape, dtype)
    return f"""func.func @main(%s: {s}) -> ({s}, {b}) {{
  %t, %b = hlo.rng_bit_generator %s, algorithm = {algorithm} : ({s}) -> ({s}, {b})
  func.return %t, %b : {s}, {b}
}}
"""


def parse_entry(entry: str) -> tuple[str, int, tuple[int, ...], str]:
    algorithm, key, dims, dtype = entry.split("|")
    shape = () if dims == "scalar" else tuple(int(d) for d in dims.split("x"))
    return algorithm, int(key), shape, dtype


def run(algorithm: str, key: tuple[int, ...], shape: tuple[int, ...], dtype: str):
    text = program(algorithm, shape, dtype, len(key))
    out = run_global(text, {"in_0": np.array(key, dtype=np.uint64)})
    return out["out_0"], out["out_1"]


@pytest.mark.parametrize("entry", ENTRIES)
def test_bits_and_state_equal_xla_cpu(entry: str) -> None:
    algorithm, key, shape, dtype = parse_entry(entry)
    state, bits = run(algorithm, KEYS[key], shape, dtype)
    want_bits, want_state = DATA[f"{entry}|bits"], DATA[f"{entry}|state"]
    assert bits.dtype == want_bits.dtype and bits.shape == want_bits.shape
    np.testing.assert_array_equal(bits, want_bits)
    np.testing.assert_array_equal(state, want_state)


def test_default_is_philox_on_cpu() -> None:
    for name in DATA.files:
        if name.startswith("DEFAULT|"):
            np.testing.assert_array_equal(DATA[name], DATA[name.replace("DEFAULT", "PHILOX")])


@pytest.mark.parametrize("algorithm", ["THREE_FRY", "PHILOX"])
@pytest.mark.parametrize(
    "signed,unsigned,dtype",
    [
        ("i8", "ui8", np.int8),
        ("i16", "ui16", np.int16),
        ("i32", "ui32", np.int32),
        ("i64", "ui64", np.int64),
    ],
)
def test_signed_outputs_are_the_same_bits(algorithm, signed, unsigned, dtype) -> None:
    entry = f"{algorithm}|0|3x5|{unsigned}"
    _, bits = run(algorithm, KEYS[0], (3, 5), signed)
    assert bits.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(bits.view(DATA[f"{entry}|bits"].dtype), DATA[f"{entry}|bits"])


@pytest.mark.parametrize("algorithm", ["THREE_FRY", "PHILOX"])
def test_sub_byte_outputs_keep_the_low_bits(algorithm: str) -> None:
    low8 = DATA[f"{algorithm}|0|2x3x4|ui8|bits"].astype(np.int64)
    _, u4 = run(algorithm, KEYS[0], (2, 3, 4), "ui4")
    _, i4 = run(algorithm, KEYS[0], (2, 3, 4), "i4")
    _, u2 = run(algorithm, KEYS[0], (2, 3, 4), "ui2")
    assert u4.dtype == np.dtype(ml_dtypes.uint4) and i4.dtype == np.dtype(ml_dtypes.int4)
    np.testing.assert_array_equal(u4.astype(np.int64), low8 & 15)
    np.testing.assert_array_equal(i4.astype(np.int64), ((low8 & 15) ^ 8) - 8)
    np.testing.assert_array_equal(u2.astype(np.int64), low8 & 3)


def test_philox_state_of_three_counts_in_128_bits() -> None:
    """XLA: state [key, counter low, counter high]; a state of 2 uses the key as the high
    half. So [k, lo, k] gives the bits of [k, lo]; the new state carries into the high word."""
    k, lo = KEYS[0]
    _, two = run("PHILOX", (k, lo), (3, 5), "ui32")
    state, three = run("PHILOX", (k, lo, k), (3, 5), "ui32")
    np.testing.assert_array_equal(three, two)
    np.testing.assert_array_equal(state, np.array([k, lo + 4, k], dtype=np.uint64))
    state, _ = run("PHILOX", (k, 2**64 - 2, 7), (4, 4), "ui64")  # 8 counters
    np.testing.assert_array_equal(state, np.array([k, 6, 8], dtype=np.uint64))


def test_state_advances_across_calls() -> None:
    """Threading the state gives fresh bits: the second call continues the first."""
    text = """func.func @main(%s: tensor<2xui64>) -> (tensor<8xui64>, tensor<8xui64>) {
  %t, %a = hlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<8xui64>)
  %u, %b = hlo.rng_bit_generator %t, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<8xui64>)
  func.return %a, %b : tensor<8xui64>, tensor<8xui64>
}
"""
    out = run_global(text, {"in_0": np.array([5, 0], dtype=np.uint64)})
    _, whole = run("THREE_FRY", (5, 0), (16,), "ui64")
    np.testing.assert_array_equal(np.concatenate([out["out_0"], out["out_1"]]), whole)


BAD = [
    (
        "tensor<2xui32>",
        "tensor<2xui32>",
        "tensor<4xui32>",
        "THREE_FRY",
        "initial_state must be a rank-1 ui64 tensor",
    ),
    ("tensor<3xui64>", "tensor<3xui64>", "tensor<4xui32>", "THREE_FRY", "THREE_FRY needs"),
    ("tensor<4xui64>", "tensor<4xui64>", "tensor<4xui32>", "PHILOX", "state of 2 or 3"),
    ("tensor<2xui64>", "tensor<3xui64>", "tensor<4xui32>", "PHILOX", "output_state must"),
    ("tensor<2xui64>", "tensor<2xui64>", "tensor<4xf32>", "PHILOX", "integer tensor"),
    ("tensor<2xui64>", "tensor<2xui64>", "tensor<4xui32>", "MT19937", "algorithm must be"),
]


@pytest.mark.parametrize("state,out_state,bits,algorithm,message", BAD)
def test_verifier(state, out_state, bits, algorithm, message) -> None:
    text = f"""func.func @main(%s: {state}) -> ({out_state}, {bits}) {{
  %t, %b = hlo.rng_bit_generator %s, algorithm = {algorithm} : ({state}) -> ({out_state}, {bits})
  func.return %t, %b : {out_state}, {bits}
}}
"""
    with pytest.raises(DiagnosticError, match=message):
        parse(text)


@pytest.mark.parametrize("algorithm", ["THREE_FRY", "PHILOX", "DEFAULT"])
def test_cost_counts_the_cipher_per_element(algorithm: str) -> None:
    """64-bit elements: two words each, the cipher's rounds shared by a counter's words."""
    module = parse(program(algorithm, (8, 128), "ui64"))
    op = next(o for o in module.walk() if o.name == "hlo.rng_bit_generator")
    cost = CostModel(get_chip("v5e")).op_cost(op)
    per = rng_ops_per_element(op)
    assert cost.flops == 8 * 128 * per
    assert per > (25 if algorithm == "THREE_FRY" else 10) * 2
    assert cost.bytes == 2 * 2 * 8 + 8 * 128 * 8


def test_lower_to_tpu_lowers_it_as_level_s() -> None:
    """Partitioned over 2 devices and lowered (lowering/random.py; its own tests are in
    test_lower_rng.py), level T gives level S's bits."""
    import shardc

    text = """spmd.mesh @mesh = <["x"=2]>
func.func @main(%s: tensor<2xui64>) -> tensor<8x128xui32> {
  %t, %b = hlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<8x128xui32>)
  func.return %b : tensor<8x128xui32>
}
"""
    level_s = shardc.run(shardc.compile(text, "spmd-pipeline"), seed=3)
    level_t = shardc.run(shardc.compile(text, "tpu-pipeline"), seed=3)
    assert level_t.report["level"] == "T"
    for k, v in level_s.outputs.items():
        assert np.asarray(v).tobytes() == np.asarray(level_t.outputs[k]).tobytes(), k
