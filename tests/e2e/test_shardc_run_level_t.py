"""
`shardc-run` and `shardc.compile`/`shardc.run` on level-T programs compiled from level G
or S (`-p tpu-pipeline`, `-p spmd-pipeline,lower-to-tpu`, `-p lower-to-tpu`): global
inputs drawn before `-p` and split by the kernel's shardings, outputs assembled, `--check`
against the program before `-p`, DESIGN.md's report keys, `--trace`, `--plot`,
`--timing-only`, one message and exit 1 for bad inputs. Hand-written kernels keep their
per-device buffers (tests/unit/test_level_t.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import shardc
from shardc.interpreter.timing import KINDS, REPORT_KEYS
from shardc.tools import shardc_run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
RESHARD = EXAMPLES / "reshard.mlir"
"""Level G: rows -> columns (all_to_all), exp, -> replicated (all_gather); lowers today."""

UNSUPPORTED = "is not supported yet"


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """`shardc-run` in-process: (exit status, stdout, stderr)."""
    code = shardc_run.main([str(a) for a in args] + ["--quiet"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def close(got: np.ndarray, want: np.ndarray) -> None:
    """f32 exp at level T and on the reference: equal up to the last bit or so."""
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


def skip_if_unsupported(err: str) -> None:
    """Ops lower-to-tpu cannot lower yet (lowering/compute.py is growing): skip, naming them."""
    if UNSUPPORTED in err:
        pytest.skip(err.strip().splitlines()[0])


@pytest.mark.parametrize("pipeline", ["tpu-pipeline", "spmd-pipeline,lower-to-tpu"])
def test_megatron_checks_against_level_g(capsys, tmp_path, pipeline):
    report = tmp_path / "r.json"
    code, out, err = run(
        capsys,
        EXAMPLES / "megatron_mlp.mlir",
        "-p",
        pipeline,
        "--chip",
        "v5e",
        "--check",
        "--report-json",
        report,
    )
    skip_if_unsupported(err)
    assert code == 0, err
    assert (
        "level T, 8 devices" in out and "check against the level-G program before -p: pass" in out
    )
    r = json.loads(report.read_text())
    assert r["level"] == "T" and r["check"]["passed"]
    assert r["collectives"]["all_reduce"] >= 1


def test_reshard_at_level_t(capsys, tmp_path):
    """Outputs, check, report keys, trace and outputs file of a kernel compiled from level G."""
    paths = {k: tmp_path / f"{k}" for k in ("out.npz", "r.json", "t.json", "s.npz", "s.json")}
    code, out, err = run(
        capsys,
        RESHARD,
        "-p",
        "tpu-pipeline",
        "--check",
        "--outputs",
        paths["out.npz"],
        "--report-json",
        paths["r.json"],
        "--trace",
        paths["t.json"],
    )
    assert code == 0, err
    assert "level T, 4 devices on mesh @mesh" in out
    assert "check against the level-G program before -p: pass" in out
    assert "DMAs" in out and "level-S model" in out
    # the same seed draws the same global inputs whatever the pipeline: level S agrees
    code, _, err = run(
        capsys,
        RESHARD,
        "-p",
        "spmd-pipeline",
        "--outputs",
        paths["s.npz"],
        "--report-json",
        paths["s.json"],
    )
    assert code == 0, err
    with np.load(paths["out.npz"]) as t, np.load(paths["s.npz"]) as s:
        assert t.files == ["out_0"]
        close(t["out_0"], s["out_0"])

    report, level_s = (json.loads(paths[k].read_text()) for k in ("r.json", "s.json"))
    assert set(REPORT_KEYS) <= set(report)
    assert report["level"] == "T" and report["devices"] == 4 and report["chip"] == "v5e"
    assert list(report["collectives"]) == list(KINDS)
    # algorithm-free: the level-S program's collectives, whatever the DMAs do
    assert (
        report["collectives"]
        == level_s["collectives"]
        == {"all_reduce": 0, "all_gather": 1, "reduce_scatter": 0, "all_to_all": 1, "permute": 0}
    )
    assert report["comm_bytes"] == level_s["comm_bytes"] > 0
    assert 0 < report["roofline_time_s"] <= report["step_time_s"]
    assert report["exposed_comm_time_s"] == pytest.approx(
        report["step_time_s"] - report["compute_time_s"]
    )
    assert report["peak_memory_bytes"] >= report["hbm_buffer_bytes"] > 0
    assert report["dmas"] > 0 and report["ici_bytes"] > 0
    assert report["level_s"]["step_time_s"] == pytest.approx(level_s["step_time_s"])
    assert len(report["per_device"]) == 4
    assert report["mesh"] == '@mesh <["x"=4]>' and report["pipeline"] == "tpu-pipeline"

    trace = json.loads(paths["t.json"].read_text())
    assert trace["otherData"]["level"] == "T"
    assert {e["cat"] for e in trace["traceEvents"] if e["ph"] == "X"} >= {"dma", "wait"}


def test_plot(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "t.png"
    code, _, err = run(capsys, RESHARD, "-p", "tpu-pipeline", "--plot", png)
    assert code == 0, err
    assert png.read_bytes().startswith(b"\x89PNG")


def test_timing_only(capsys, tmp_path):
    report = tmp_path / "r.json"
    code, out, err = run(
        capsys, RESHARD, "-p", "tpu-pipeline", "--timing-only", "--report-json", report
    )
    assert code == 0, err
    assert "outputs (not computed: --timing-only)" in out
    r = json.loads(report.read_text())
    assert r["timing_only"] and r["level"] == "T" and r["step_time_s"] > 0


def test_given_inputs_and_bad_inputs(capsys, tmp_path):
    x = np.random.default_rng(3).standard_normal((16, 32)).astype(np.float32)
    np.savez(tmp_path / "in.npz", in_0=x)
    out = tmp_path / "out.npz"
    code, _, err = run(
        capsys, RESHARD, "-p", "tpu-pipeline", "--inputs", tmp_path / "in.npz", "--outputs", out
    )
    assert code == 0, err
    with np.load(out) as z:
        close(z["out_0"], np.exp(x))
    # a wrong shape: one message naming the array and what was expected, exit 1, no output
    np.savez(tmp_path / "bad.npz", in_0=x[:15])
    out.unlink()
    code, _, err = run(
        capsys, RESHARD, "-p", "tpu-pipeline", "--inputs", tmp_path / "bad.npz", "--outputs", out
    )
    assert code == 1 and not out.exists()
    assert (
        "input 'in_0'" in err and "expected [16, 32]" in err and len(err.strip().splitlines()) == 1
    )


def test_a_lowered_file_runs_with_global_arrays(capsys, tmp_path):
    """A kernel written to a file by shardc-opt keeps what splitting and assembling need."""
    from shardc.tools.shardc_opt import main as shardc_opt

    kernel = tmp_path / "kernel.mlir"
    assert shardc_opt([str(RESHARD), "-p", "tpu-pipeline", "-o", str(kernel)]) == 0
    x = np.random.default_rng(4).standard_normal((16, 32)).astype(np.float32)
    np.savez(tmp_path / "in.npz", in_0=x)
    code, out, err = run(
        capsys, kernel, "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "out.npz"
    )
    assert code == 0, err
    assert "level T, 4 devices" in out
    # lower-to-tpu recorded the level-S collectives in the file (`shardc.level_s`)
    assert "collective counts and bytes need the level-S program" not in out
    with np.load(tmp_path / "out.npz") as z:
        close(z["out_0"], np.exp(x))
    # no level-G reference for --check without -p
    code, _, err = run(capsys, kernel, "--check")
    assert code == 1 and "needs a level-G reference" in err and "level T" in err


PER_DEVICE = """
spmd.mesh @m = <["x"=2]>
func.func @main(%a: tensor<4x6xi32>, %i: tensor<i32>) -> (tensor<4x6xi32>, tensor<2x3xi32>) attributes {spmd.per_device_io} {
  %r = collective.permute %a on @m["x"], shift = 1 : tensor<4x6xi32>
  %s = hlo.dynamic_slice %r [%i, %i] sizes = [2, 3] : (tensor<4x6xi32>, tensor<i32>, tensor<i32>) -> tensor<2x3xi32>
  func.return %r, %s : tensor<4x6xi32>, tensor<2x3xi32>
}
"""


def test_per_device_program(capsys, tmp_path):
    """spmd.per_device_io at level S: per-device arrays in_K.D / out_K.D at level T too."""
    src = tmp_path / "p.mlir"
    src.write_text(PER_DEVICE)
    code, _, err = run(capsys, src, "-p", "lower-to-tpu", "--outputs", tmp_path / "t.npz")
    assert code == 0, err
    code, _, err = run(capsys, src, "--outputs", tmp_path / "s.npz")
    assert code == 0, err
    with np.load(tmp_path / "t.npz") as t, np.load(tmp_path / "s.npz") as s:
        assert sorted(t.files) == sorted(s.files) == ["out_0.0", "out_0.1", "out_1.0", "out_1.1"]
        for name in s.files:
            np.testing.assert_array_equal(t[name], s[name])


CALL = """
spmd.mesh @m = <["x"=2]>
func.func private @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> attributes {spmd.per_device_io} {
  %r = func.call @f(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %e = hlo.exp %r : tensor<4xf32>
  func.return %e : tensor<4xf32>
}
"""


def test_what_cannot_be_lowered_is_one_diagnostic(capsys, tmp_path):
    src = tmp_path / "call.mlir"
    src.write_text(CALL)
    code, _, err = run(capsys, src, "-p", "lower-to-tpu", "--check")
    assert code == 1
    assert err.startswith(f"{src}:7:3: error:") and "lower-to-tpu" in err


def test_cli_subprocess():
    """As a user runs it: the command of the issue, exit 0, the check passes."""
    cmd = [
        str(Path(sys.executable).parent / "shardc-run"),
        str(RESHARD),
        "-p",
        "tpu-pipeline",
        "--chip",
        "v5e",
        "--check",
        "--quiet",
    ]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "check against the level-G program before -p: pass" in proc.stdout


def test_python_api():
    text = RESHARD.read_text()
    kernel = shardc.compile(text, "tpu-pipeline")
    result = shardc.run(kernel)
    assert result.report["level"] == "T"
    assert result.report["collectives"]["all_to_all"] == 1
    reference = shardc.run(text)  # level G, the same random inputs (seed 0)
    close(result.outputs["out_0"], reference.outputs["out_0"])
    assert "DMAs" in result.summary()
    # lowering an already compiled level-S module: the collectives come from it
    level_s = shardc.compile(text)
    again = shardc.run(shardc.compile(level_s, "lower-to-tpu"))
    assert again.report["collectives"] == result.report["collectives"]
    close(again.outputs["out_0"], reference.outputs["out_0"])
    # compiled further, a kernel still knows its level-S program's collectives
    assert shardc.run(shardc.compile(kernel, "canonicalize")).report["collectives_known"]
    with pytest.raises(shardc.DiagnosticError, match="input 'in_0'"):
        shardc.run(kernel, {"in_0": np.zeros((3, 3), np.float32)})


def _level_s_lines(out: str) -> list[str]:
    """The summary lines that come from the level-S program: collectives, level-S model."""
    keep = ("collectives", "level-S model")
    return [line for line in out.splitlines() if line.strip().startswith(keep)]


def test_a_kernel_written_by_shardc_opt_reports_the_level_s_collectives(capsys, tmp_path):
    """`shardc-opt -p tpu-pipeline` then `shardc-run FILE` reports what `-p` reports."""
    from shardc.tools.shardc_opt import main as shardc_opt

    source = EXAMPLES / "megatron_mlp.mlir"
    kernel = tmp_path / "kernel.mlir"
    assert shardc_opt([str(source), "-p", "tpu-pipeline", "-o", str(kernel)]) == 0
    assert "shardc.level_s = {main = {" in kernel.read_text()
    code, direct, err = run(capsys, source, "-p", "tpu-pipeline", "--report-json", tmp_path / "a")
    assert code == 0, err
    code, from_file, err = run(capsys, kernel, "--report-json", tmp_path / "b")
    assert code == 0, err
    lines = _level_s_lines(direct)
    assert any("all_reduce 1" in line for line in lines) and any("level-S" in x for x in lines)
    assert _level_s_lines(from_file) == lines
    a = json.loads((tmp_path / "a").read_text())
    b = json.loads((tmp_path / "b").read_text())
    for key in ("collectives", "comm_bytes", "comm_bytes_by_kind", "level_s"):
        assert a[key] == b[key], key
    assert b["collectives_known"] is True
