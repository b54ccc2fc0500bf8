"""
`stablehlo.rng_bit_generator` (pretty form as JAX prints it, and MLIR's generic form with
`#stablehlo<rng_algorithm ..>`) and XLA's `rng-bit-generator` instruction
(`algorithm=rng_default / rng_three_fry / rng_philox`, as `jax.jit(..).lower(..)
.compiler_ir("hlo")` prints it) import as `hlo.rng_bit_generator`; the imported programs
run and give XLA's CPU numbers (tests/unit/data/rng_bit_generator_xla_cpu.npz, made with
JAX). The whole dropout program with JAX's "rbg" PRNG is in the JAX corpus
(`dropout_rbg`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import shardc
from shardc.diagnostics import DiagnosticError
from shardc.frontends.hlo_text import import_hlo_text
from shardc.frontends.stablehlo import import_stablehlo
from shardc.interpreter.testing import run_global, run_per_device
from shardc.tests.unit.test_rng_bit_generator import DATA, KEYS

ALGORITHMS = ["DEFAULT", "THREE_FRY", "PHILOX"]
XLA_NAMES = {"DEFAULT": "rng_default", "THREE_FRY": "rng_three_fry", "PHILOX": "rng_philox"}


def pretty(algorithm: str) -> str:
    return f"""module @jit_f attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main(%arg0: tensor<2xui64>) -> (tensor<2xui64> {{jax.result_info = "result[0]"}}, tensor<3x5xui32> {{jax.result_info = "result[1]"}}) {{
    %output_state, %output = stablehlo.rng_bit_generator %arg0, algorithm = {algorithm} : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3x5xui32>)
    return %output_state, %output : tensor<2xui64>, tensor<3x5xui32>
  }}
}}
"""


def generic(algorithm: str) -> str:
    return f""""builtin.module"() ({{
  "func.func"() <{{function_type = (tensor<2xui64>) -> (tensor<2xui64>, tensor<3x5xui32>), sym_name = "main"}}> ({{
  ^bb0(%arg0: tensor<2xui64>):
    %0:2 = "stablehlo.rng_bit_generator"(%arg0) <{{rng_algorithm = #stablehlo<rng_algorithm {algorithm}>}}> : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3x5xui32>)
    "func.return"(%0#0, %0#1) : (tensor<2xui64>, tensor<3x5xui32>) -> ()
  }}) : () -> ()
}}) : () -> ()
"""


def hlo_text(algorithm: str) -> str:
    return f"""HloModule jit_f, entry_computation_layout={{(u64[2]{{0}})->(u64[2]{{0}}, u32[3,5]{{1,0}})}}

ENTRY main.1 {{
  k.1 = u64[2]{{0}} parameter(0)
  rng_bit_generator.3 = (u64[2]{{0}}, u32[3,5]{{1,0}}) rng-bit-generator(k.1), algorithm={XLA_NAMES[algorithm]}
  rng_bit_generator.4 = u64[2]{{0}} get-tuple-element(rng_bit_generator.3), index=0
  rng_bit_generator.5 = u32[3,5]{{1,0}} get-tuple-element(rng_bit_generator.3), index=1
  ROOT tuple.1 = (u64[2]{{0}}, u32[3,5]{{1,0}}) tuple(rng_bit_generator.4, rng_bit_generator.5)
}}
"""


def expected(algorithm: str) -> tuple[np.ndarray, np.ndarray]:
    entry = f"{algorithm}|0|3x5|ui32"
    return DATA[f"{entry}|state"], DATA[f"{entry}|bits"]


@pytest.mark.parametrize("form", [pretty, generic])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_stablehlo_imports_and_runs(form, algorithm: str) -> None:
    imported = import_stablehlo(form(algorithm), "rng.mlir")
    program = str(imported.module)
    assert f"hlo.rng_bit_generator %0, algorithm = {algorithm}" in program
    assert imported.stats.constructs[f"rng_bit_generator {algorithm}"] == 1
    out = run_global(program, {"in_0": np.array(KEYS[0], dtype=np.uint64)})
    state, bits = expected(algorithm)
    np.testing.assert_array_equal(out["out_0"], state)
    np.testing.assert_array_equal(out["out_1"], bits)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_hlo_text_imports_and_runs(algorithm: str) -> None:
    imported = import_hlo_text(hlo_text(algorithm), "rng.hlo")
    program = str(imported.module)
    assert f"algorithm = {algorithm}" in program
    state, bits = run_per_device(program, [[np.array(KEYS[0], dtype=np.uint64)]])[0]
    want_state, want_bits = expected(algorithm)
    np.testing.assert_array_equal(state, want_state)
    np.testing.assert_array_equal(bits, want_bits)


def test_hlo_text_unknown_algorithm_is_an_error_at_the_instruction() -> None:
    text = hlo_text("PHILOX").replace("rng_philox", "rng_mersenne")
    with pytest.raises(DiagnosticError, match="algorithm=rng_mersenne is not one of"):
        import_hlo_text(text, "rng.hlo")


def test_stablehlo_bad_state_is_a_verifier_error() -> None:
    text = pretty("THREE_FRY").replace("tensor<2xui64>", "tensor<3xui64>")
    with pytest.raises(DiagnosticError, match="THREE_FRY needs a state of 2 ui64 values"):
        import_stablehlo(text, "rng.mlir")


RNG_DIR = Path(__file__).parent / "rng"


def test_unpartitioned_hlo_module_partitions_to_jax_numbers() -> None:
    """A dropout with the rbg PRNG as JAX lowers it with GSPMD shardings (unpartitioned
    HLO: rng-bit-generator, sharding= on parameters), made by
    scripts/make_rng_hlo_module.py: read as a level-G program with its shardings,
    spmd-pipeline partitions it, and level S gives JAX's mask exactly (the kept values
    within float rounding of x / 0.9)."""
    text = (RNG_DIR / "dropout_rbg_gspmd.hlo.txt").read_text()
    data = np.load(RNG_DIR / "dropout_rbg_gspmd.npz")
    imported = import_hlo_text(text, "dropout_rbg_gspmd.hlo.txt")
    assert imported.stats.constructs["rng-bit-generator DEFAULT"] == 1
    program = str(imported.module)
    assert "spmd.per_device_io" not in program
    compiled = shardc.compile(program, pipeline="spmd-pipeline")
    got = run_global(str(compiled), {"in_0": data["in_0"], "in_1": data["in_1"]})["out_0"]
    want = data["out_0"]
    np.testing.assert_array_equal(got == 0, want == 0)
    np.testing.assert_allclose(got, want, rtol=1e-6)
