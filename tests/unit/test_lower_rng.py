"""
`lower-to-tpu` of `hlo.rng_bit_generator` (lowering/random.py, issue 15 item 3):
hypothesis-generated output shapes (odd sizes, rank 0 to 3, so the split dimension and
the partial last Philox counter vary), element types (32- and 64-bit, narrower ones
taking the low bits), every algorithm level S runs with each state size it takes, and
states near the 64- and 128-bit counter wraparound, lowered with the default and with a
small VMEM (many blocks, so block offsets enter the counters), simulated at level T on 2
devices and compared with level S (interpreter/hlo_random.py) bit for bit, the output
state included. The corpus program `dropout_rbg` lowers and gives level S's outputs.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import shardc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.diagnostics import OpPassError
from shardc.dialects import make_context
from shardc.frontends.stablehlo import import_stablehlo
from shardc.interpreter.testing import parse
from shardc.lowering.lower_to_tpu import LowerToTpuPass
from shardc.tests.unit.test_lower_movement import DEVICES
from shardc.tests.unit.test_lower_reduce_body import check

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SIZES = [1, 2, 3, 5, 8, 16, 128, 256]
ALGORITHMS = [("THREE_FRY", 2), ("PHILOX", 2), ("PHILOX", 3), ("DEFAULT", 2), ("DEFAULT", 3)]
ELEMENTS = ["ui32", "ui64", "i32", "i64", "ui8", "i16"]
CORPUS = Path(__file__).parents[1] / "frontends" / "corpus"


def rng_program(algorithm: str, n: int, shape, elem: str) -> str:
    s = f"tensor<{n}xui64>"
    b = f"tensor<{''.join(f'{d}x' for d in shape)}{elem}>"
    return f"""spmd.mesh @m = <["x"={DEVICES}]>
func.func @main(%s: {s}) -> ({s}, {b}) attributes {{spmd.per_device_io}} {{
  %ns, %b = hlo.rng_bit_generator %s, algorithm = {algorithm} : ({s}) -> ({s}, {b})
  func.return %ns, %b : {s}, {b}
}}"""


def states(rng: np.random.Generator, n: int, edge: int) -> np.ndarray:
    """A random state; `edge` 1: the low counter word near 2^64 (carries into the high
    half), 2: both counter words near 2^64 (the 128-bit counter wraps), else random."""
    s = rng.integers(0, 2**64, size=(n,), dtype=np.uint64)
    if edge >= 1:
        s[1] = np.uint64(2**64 - int(rng.integers(1, 40)))
    if edge == 2:
        s[n - 1 if n == 3 else 0] = np.uint64(2**64 - 1)
    return s


@st.composite
def cases(draw):
    rank = draw(st.integers(0, 3))
    shape = [draw(st.sampled_from(SIZES)) for _ in range(rank)]
    algorithm, n = draw(st.sampled_from(ALGORITHMS))
    return algorithm, n, shape, draw(st.sampled_from(ELEMENTS))


@SETTINGS
@given(cases(), st.sampled_from([None, 64 * 1024]), st.integers(0, 2**16), st.integers(0, 2))
def test_rng_bit_generator_is_level_s_bit_for_bit(case, vmem_limit, seed: int, edge: int):
    algorithm, n, shape, elem = case
    rng = np.random.default_rng(seed)
    inputs = [[states(rng, n, edge)] for _ in range(DEVICES)]
    check(rng_program(algorithm, n, shape, elem), inputs, vmem_limit)


@pytest.mark.parametrize(("algorithm", "n"), ALGORITHMS)
def test_many_blocks_of_a_large_output(algorithm: str, n: int) -> None:
    """A small VMEM cuts a 64x1024 output into many blocks along both dimensions."""
    rng = np.random.default_rng(7)
    inputs = [[states(rng, n, 1)] for _ in range(DEVICES)]
    out = check(rng_program(algorithm, n, [64, 1024], "ui32"), inputs, 64 * 1024)
    assert "scf.for" in out
    assert ("arith.mului_extended" in out) == (algorithm != "THREE_FRY")


def test_an_output_of_2_to_the_32_elements_is_refused() -> None:
    module = parse(rng_program("PHILOX", 2, [65536, 65536], "ui32"), "big.mlir")
    with pytest.raises(OpPassError) as info:
        LowerToTpuPass().apply(make_context(), module)
    assert "hlo.rng_bit_generator of 4294967296 elements" in str(info.value)
    assert "big.mlir" in str(info.value.op.location)


def test_dropout_rbg_lowers_and_matches_level_s() -> None:
    """The corpus program (JAX's dropout with the `rbg` PRNG) at level T gives level S's
    outputs bit for bit."""
    manifest = json.loads((CORPUS / "manifest.json").read_text())["programs"]["dropout_rbg"]
    path = manifest["files"]["stablehlo"]
    text = str(import_stablehlo((CORPUS / path).read_text(), path).module)
    with np.load(CORPUS / manifest["files"]["data"]) as z:
        inputs = {k: z[k] for k in z.files if k.startswith("in_")}
    level_s = shardc.run(shardc.compile(text, "spmd-pipeline"), inputs)
    level_t = shardc.run(shardc.compile(text, "tpu-pipeline"), inputs)
    assert level_t.report["level"] == "T"
    assert sorted(level_s.outputs) == sorted(level_t.outputs)
    for k, v in level_s.outputs.items():
        assert np.asarray(v).tobytes() == np.asarray(level_t.outputs[k]).tobytes(), k


@pytest.mark.parametrize(
    "algorithm, n, shape, elem",
    [
        ("THREE_FRY", 2, (8, 2048, 4096), "ui32"),  # bench/rng_remainder_scatter.py's row
        ("THREE_FRY", 2, (16, 256), "ui32"),
        ("THREE_FRY", 2, (4, 6, 128), "ui64"),
        ("THREE_FRY", 2, (7, 5), "ui8"),  # no even dimension: a cipher per element
        ("PHILOX", 3, (2048, 4096), "ui32"),
        ("PHILOX", 3, (16, 256), "ui64"),
        ("DEFAULT", 2, (7, 5), "i32"),  # not whole groups of 4
    ],
)
def test_level_s_charges_the_ops_the_lowering_emits(algorithm, n, shape, elem) -> None:
    """hardware/cost.py's `rng_ops_per_element` (what level S charges) is the lowered
    kernel's vector ops per element within 5% (the exact count varies with the block
    offsets the position computation adds), and level S's step is level T's within
    10%: the cipher, its key material and the interleave are work the chip does."""
    from shardc.hardware.cost import rng_ops_per_element

    text = rng_program(algorithm, n, shape, elem).replace(f'"x"={DEVICES}', '"x"=1')
    (op,) = [o for o in parse(text).walk() if o.name == "hlo.rng_bit_generator"]
    elements = int(np.prod(shape))
    kernel = shardc.compile(text, "lower-to-tpu{chip=v5e}")
    t = shardc.run(kernel, timing_only=True, chip="v5e").report
    per_element = sum(row["flops"] for row in t["ops"]) / elements
    assert per_element == pytest.approx(rng_ops_per_element(op), rel=0.05)
    s = shardc.run(text, timing_only=True, chip="v5e").report
    assert 0.9 < t["step_time_s"] / s["step_time_s"] < 1.1
