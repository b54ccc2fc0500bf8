"""The Python API: `shardc.compile` and `shardc.run` (shardc_api.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import shardc
from shardc.driver.checking import compare
from shardc.interpreter.timing import KINDS, REPORT_KEYS
from shardc.tools import shardc_run
from xdsl.dialects.builtin import ModuleOp

ROOT = Path(__file__).resolve().parents[2]
MLP = (ROOT / "examples" / "megatron_mlp.mlir").read_text()


@pytest.fixture(scope="module")
def compiled() -> ModuleOp:
    return shardc.compile(MLP, pipeline="spmd-pipeline", chip="v5e")


def test_compiled_megatron_equals_level_g(compiled: ModuleOp) -> None:
    assert isinstance(compiled, ModuleOp)
    reference = shardc.run(MLP, seed=3)  # level G, one device
    result = shardc.run(compiled, seed=3)  # same seed: same global inputs
    assert reference.report["level"] == "G" and reference.report["devices"] == 1
    assert result.report["level"] == "S" and result.report["devices"] == 8
    assert list(result.outputs) == list(reference.outputs) == ["out_0"]
    for name in reference.outputs:
        c = compare(name, result.outputs[name], reference.outputs[name])
        assert c.passed, c


def test_report_has_design_keys(compiled: ModuleOp) -> None:
    report = shardc.run(compiled).report
    for key in REPORT_KEYS:
        assert key in report, key
    assert set(report["collectives"]) == set(KINDS)
    assert report["collectives"]["all_reduce"] == 1
    assert report["pipeline"] == "spmd-pipeline"
    assert report["chip"] == "v5e"
    assert 0 < report["roofline_time_s"] <= report["step_time_s"]
    assert report["inputs"] == {"source": "random", "seed": 0}


def test_same_outputs_as_shardc_run(compiled: ModuleOp, tmp_path: Path, capsys) -> None:
    src = tmp_path / "mlp.mlir"
    src.write_text(MLP)
    out = tmp_path / "out.npz"
    assert (
        shardc_run.main([str(src), "-p", "spmd-pipeline", "--seed", "7", "--outputs", str(out)])
        == 0
    )
    capsys.readouterr()
    result = shardc.run(compiled, seed=7)
    with np.load(out) as z:
        assert np.array_equal(z["out_0"], result.outputs["out_0"])


def test_inputs_by_name_or_in_order(compiled: ModuleOp) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    w1 = rng.standard_normal((32, 128)).astype(np.float32)
    b1 = rng.standard_normal((128,)).astype(np.float32)
    w2 = rng.standard_normal((128, 32)).astype(np.float32)
    by_name = shardc.run(compiled, {"in_0": x, "in_1": w1, "in_2": b1, "in_3": w2})
    in_order = shardc.run(compiled, [x, w1, b1, w2])
    assert np.array_equal(by_name.outputs["out_0"], in_order.outputs["out_0"])
    assert by_name.report["inputs"] == {"source": "arrays"}


def test_timing_only(compiled: ModuleOp) -> None:
    result = shardc.run(compiled, timing_only=True, chip="v5p")
    assert result.outputs == {}
    assert result.report["timing_only"] is True and result.report["chip"] == "v5p"
    assert result.report["outputs"][0]["shape"] == [16, 32]
    assert result.timeline.slices()
    assert "step time" in result.summary()
    with pytest.raises(shardc.DiagnosticError, match="no inputs"):
        shardc.run(compiled, [1, 2, 3], timing_only=True)


def test_compile_leaves_a_given_module_alone_and_keeps_locations() -> None:
    parsed = shardc.compile(MLP, pipeline=None)
    before = str(parsed)
    compiled = shardc.compile(parsed)
    assert str(parsed) == before and str(compiled) != before
    # locations survive the copy: the report names the source line of the peak
    at = shardc.run(compiled, timing_only=True).report["peak_memory_at"]
    assert at is not None and "at <string>:" in at, at


def test_chip_goes_to_passes_that_take_it() -> None:
    from shardc.driver.compiling import with_chip

    assert with_chip("spmd-pipeline", "v5p") == 'spmd-pipeline{chip="v5p"}'
    assert with_chip("canonicalize", "v5p") == "canonicalize"
    assert (
        with_chip("spmd-propagate,schedule{chip=v4}", "v5p") == "spmd-propagate,schedule{chip=v4}"
    )


# Errors are one DiagnosticError, the tools' diagnostic ------------------------------------


def test_parse_error_is_located() -> None:
    bad = MLP.replace("hlo.dot", "hlo.dott", 1)
    with pytest.raises(shardc.DiagnosticError) as e:
        shardc.compile(bad, filename="mlp.mlir")
    assert str(e.value).startswith("mlp.mlir:") and ": error: " in str(e.value)
    with pytest.raises(shardc.DiagnosticError, match=r"^<string>:\d+:\d+: error: "):
        shardc.run(bad)


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (
            lambda: shardc.compile(MLP, pipeline="no-such-pass"),
            "invalid pass pipeline 'no-such-pass'",
        ),
        (lambda: shardc.compile(MLP, pipeline="schedule{bogus=1}"), "invalid pass pipeline"),
        (lambda: shardc.compile(MLP, pipeline="spmd-pipeline{"), "invalid pass pipeline"),
        (lambda: shardc.compile(MLP, chip="v9"), "unknown chip 'v9'"),
        (lambda: shardc.run(MLP, chip="v9"), "unknown chip 'v9'"),
        (lambda: shardc.run(MLP, {"in_0": np.zeros(3)}), "input 'in_0'"),
        (lambda: shardc.run(MLP, [np.zeros(3)]), "1 input arrays given"),
        (lambda: shardc.run(MLP, entry="nope"), "nope"),
    ],
)
def test_user_errors_are_diagnostics(call, needle: str) -> None:
    with pytest.raises(shardc.DiagnosticError) as e:
        call()
    assert needle in str(e.value)
    assert "Traceback" not in str(e.value)


def test_wrong_argument_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="MLIR text"):
        shardc.compile(42)  # type: ignore[arg-type]


def test_import_shardc_is_light() -> None:
    code = "import sys, shardc; print(sorted(m for m in ('xdsl', 'numpy', 'matplotlib') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert callable(shardc.compile) and callable(shardc.run)
    assert shardc.Result.__name__ == "Result"
