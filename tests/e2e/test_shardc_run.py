"""`shardc-run` end to end, as a user runs it (subprocess), plus a few in-process cases."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from shardc.driver import checking
from shardc.tools import shardc_run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BIN = Path(sys.executable).parent / "shardc-run"
BF16 = np.dtype(ml_dtypes.bfloat16)


def shardc_run_cli(
    *args: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    cmd = [str(BIN)] if BIN.exists() else [sys.executable, "-m", "shardc.tools.shardc_run"]
    return subprocess.run(
        [*cmd, *args], capture_output=True, text=True, input=stdin, cwd=cwd, timeout=120
    )


def assert_one_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    for n in needles:
        assert n in proc.stderr, proc.stderr


def test_megatron_level_g_runs_with_random_inputs(tmp_path: Path) -> None:
    out = tmp_path / "out.npz"
    proc = shardc_run_cli(str(EXAMPLES / "megatron_mlp.mlir"), "--outputs", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "level G, 1 device" in proc.stdout
    assert "out_0  tensor<16x32xf32>" in proc.stdout
    with np.load(out) as z:
        assert z.files == ["out_0"] and z["out_0"].shape == (16, 32)
    # the same seed gives the same random inputs, hence the same outputs
    out2 = tmp_path / "out2.npz"
    assert (
        shardc_run_cli(str(EXAMPLES / "megatron_mlp.mlir"), "--outputs", str(out2)).returncode == 0
    )
    with np.load(out) as a, np.load(out2) as b:
        assert np.array_equal(a["out_0"], b["out_0"])


def test_collectives_on_four_devices_match_numpy_with_inputs_and_outputs(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    a = rng.standard_normal((8, 8)).astype(np.float32)
    np.savez(tmp_path / "in.npz", in_0=a)
    proc = shardc_run_cli(
        str(EXAMPLES / "collectives.mlir"),
        "--inputs",
        str(tmp_path / "in.npz"),
        "--outputs",
        str(tmp_path / "out.npz"),
        "--report-json",
        str(tmp_path / "r.json"),
    )
    assert proc.returncode == 0, proc.stderr
    assert "level S, 4 devices" in proc.stdout
    blocks = [a[2 * r : 2 * r + 2] for r in range(4)]
    total = blocks[0] + blocks[1] + blocks[2] + blocks[3]
    with np.load(tmp_path / "out.npz") as z:
        assert z.files == [f"out_{i}" for i in range(5)]
        np.testing.assert_array_equal(z["out_0"], total)
        np.testing.assert_array_equal(z["out_1"], a)
        np.testing.assert_array_equal(z["out_2"], total)
        np.testing.assert_array_equal(z["out_3"], a)
        np.testing.assert_array_equal(z["out_4"], np.roll(a, 2, axis=0))
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["devices"] == 4 and report["level"] == "S"
    assert report["outputs"][1] == {"name": "out_1", "shape": [8, 8], "dtype": "f32"}
    assert report["check"] is None
    assert report["inputs"] == {"source": str(tmp_path / "in.npz")}


def test_pipeline_and_check(tmp_path: Path) -> None:
    proc = shardc_run_cli(
        str(EXAMPLES / "megatron_mlp.mlir"),
        "-p",
        "canonicalize,cse",
        "--check",
        "--report-json",
        str(tmp_path / "r.json"),
    )
    assert proc.returncode == 0, proc.stderr
    assert "check against the level-G program before -p: pass" in proc.stdout
    assert "out_0  max |diff| 0 " in proc.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["check"]["passed"] is True
    assert report["check"]["outputs"][0]["name"] == "out_0"
    assert report["pipeline"] == "canonicalize,cse"


def test_partitioned_megatron_checks_against_level_g(tmp_path: Path) -> None:
    proc = shardc_run_cli(
        str(EXAMPLES / "megatron_mlp.mlir"),
        "-p",
        "spmd-pipeline",
        "--check",
        "--seed",
        "3",
        "--outputs",
        str(tmp_path / "out.npz"),
    )
    if proc.returncode != 0 and "invalid pass pipeline" in proc.stderr:
        pytest.skip("spmd-pipeline is not registered")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "level S, 8 devices" in proc.stdout
    assert "pass" in proc.stdout
    ref = tmp_path / "ref.npz"
    assert (
        shardc_run_cli(
            str(EXAMPLES / "megatron_mlp.mlir"), "--seed", "3", "--outputs", str(ref)
        ).returncode
        == 0
    )
    with np.load(tmp_path / "out.npz") as a, np.load(ref) as b:
        np.testing.assert_allclose(a["out_0"], b["out_0"], rtol=1e-4, atol=1e-4)


def test_check_on_a_level_s_file_without_pipeline_is_an_error() -> None:
    proc = shardc_run_cli(str(EXAMPLES / "collectives.mlir"), "--check")
    assert_one_error(proc, "--check needs a level-G reference")


def test_per_device_io_program(tmp_path: Path) -> None:
    src = tmp_path / "p.mlir"
    src.write_text("""
spmd.mesh @mesh = <["x"=2]>
func.func @main(%x: tensor<3xbf16>) -> tensor<3xbf16> attributes {spmd.per_device_io} {
  %r = collective.all_reduce add %x on @mesh["x"] : tensor<3xbf16>
  func.return %r : tensor<3xbf16>
}""")
    x0 = np.array([1.0, 2.0, 3.0], BF16)
    x1 = np.array([0.5, 0.25, -3.0], BF16)
    np.savez(tmp_path / "in.npz", **{"in_0.0": x0, "in_0.1": x1})
    proc = shardc_run_cli(
        str(src), "--inputs", str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "o.npz")
    )
    assert proc.returncode == 0, proc.stderr
    with np.load(tmp_path / "o.npz") as z:
        assert sorted(z.files) == ["out_0.0", "out_0.1"]
        for k in z.files:  # bf16 is saved as raw 2-byte values
            assert z[k].view(BF16).astype(np.float32).tolist() == [1.5, 2.25, 0.0]
    proc = shardc_run_cli(str(src))  # random per-device inputs
    assert proc.returncode == 0 and "out_0.1" in proc.stdout


def test_stdin_and_entry(tmp_path: Path) -> None:
    text = """
func.func @double(%a: tensor<2xi32>) -> tensor<2xi32> {
  %r = hlo.add %a, %a : tensor<2xi32>
  func.return %r : tensor<2xi32>
}
func.func @other(%a: tensor<2xi32>) -> tensor<2xi32> { func.return %a : tensor<2xi32> }"""
    np.savez(tmp_path / "in.npz", in_0=np.array([3, -4], np.int32))
    proc = shardc_run_cli(
        "-",
        "--entry",
        "double",
        "--inputs",
        str(tmp_path / "in.npz"),
        "--outputs",
        str(tmp_path / "o.npz"),
        stdin=text,
    )
    assert proc.returncode == 0, proc.stderr
    with np.load(tmp_path / "o.npz") as z:
        assert z["out_0"].tolist() == [6, -8]
    assert_one_error(shardc_run_cli("-", stdin=text), "no @main and several public functions")


BAD_INPUTS = {
    "missing": (
        {"in_0": np.zeros((16, 32), np.float32)},
        "input array 'in_1' is missing: expected tensor<32x128xf32>",
    ),
    "extra": (
        {
            f"in_{i}": a
            for i, a in enumerate(
                [
                    np.zeros((16, 32)),
                    np.zeros((32, 128)),
                    np.zeros(128),
                    np.zeros((128, 32)),
                    np.zeros(1),
                ]
            )
        },
        "unexpected input array 'in_4'",
    ),
    "shape": ({"in_0": np.zeros((16, 31), np.float32)}, "input 'in_0' (argument 0 of @main"),
    "dtype": ({"in_0": np.zeros((16, 32), np.float64)}, "has dtype f64, expected f32"),
    "divisible": (
        {"in_0": np.zeros((15, 32), np.float32)},
        "dimension 0 of size 15 is not divisible by 2",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_arrays(tmp_path: Path, case: str) -> None:
    arrays, needle = BAD_INPUTS[case]
    full = {
        "in_0": np.zeros((16, 32), np.float32),
        "in_1": np.zeros((32, 128), np.float32),
        "in_2": np.zeros((128,), np.float32),
        "in_3": np.zeros((128, 32), np.float32),
    }
    if case == "missing":
        full.pop("in_1")
    elif case == "extra":
        full = {k: v.astype(np.float32) for k, v in arrays.items()}
    else:
        full |= arrays
    np.savez(tmp_path / "in.npz", **full)
    out = tmp_path / "out.npz"
    proc = shardc_run_cli(
        str(EXAMPLES / "megatron_mlp.mlir"),
        "--inputs",
        str(tmp_path / "in.npz"),
        "--outputs",
        str(out),
        "--report-json",
        str(tmp_path / "r.json"),
    )
    assert_one_error(proc, needle)
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists() and not (tmp_path / "r.json").exists()
    assert os.listdir(tmp_path) == ["in.npz"]


def test_bad_entry_file_and_pipeline(tmp_path: Path) -> None:
    out = tmp_path / "out.npz"
    proc = shardc_run_cli(
        str(EXAMPLES / "megatron_mlp.mlir"), "--entry", "nope", "--outputs", str(out)
    )
    assert_one_error(proc, "entry function @nope does not exist (functions: @main)")
    bad = tmp_path / "bad.mlir"
    bad.write_text(
        "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %r = hlo.bogus %a : tensor<2xf32>\n  func.return %r : tensor<2xf32>\n}\n"
    )
    proc = shardc_run_cli(str(bad), "--outputs", str(out))
    assert_one_error(proc, f"{bad}:2:")
    assert not out.exists()


def test_bad_pipeline_and_missing_file_in_process(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out.npz"
    assert (
        shardc_run.main(
            [str(EXAMPLES / "megatron_mlp.mlir"), "-p", "no-such-pass", "--outputs", str(out)]
        )
        == 1
    )
    assert "invalid pass pipeline 'no-such-pass'" in capsys.readouterr().err
    assert shardc_run.main([str(tmp_path / "missing.mlir")]) == 1
    assert "cannot read" in capsys.readouterr().err
    assert shardc_run.main([str(EXAMPLES / "megatron_mlp.mlir"), "--bogus-flag"]) == 1
    assert "unrecognized arguments: --bogus-flag" in capsys.readouterr().err
    assert not out.exists()


def test_deadlock_is_reported_not_hung(tmp_path: Path) -> None:
    src = tmp_path / "d.mlir"
    src.write_text("""
spmd.mesh @m = <["x"=2]>
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> attributes {spmd.partitioned} {
  %i = spmd.axis_index @m["x"] : tensor<i32>
  %c = tensor.extract %i[] : tensor<i32>
  %zero = arith.constant 0 : i32
  %p = arith.cmpi eq, %c, %zero : i32
  %r = scf.if %p -> (tensor<2xf32>) {
    scf.yield %x : tensor<2xf32>
  } else {
    %s = collective.all_reduce add %x on @m["x"] : tensor<2xf32>
    scf.yield %s : tensor<2xf32>
  }
  func.return %r : tensor<2xf32>
}""")
    out = tmp_path / "o.npz"
    proc = shardc_run_cli(str(src), "--outputs", str(out))
    assert_one_error(
        proc,
        f"{src}:11:5: error:",
        "deadlock",
        "device 1 waits at all_reduce add",
        "device 0 finished",
    )
    assert not out.exists()


def test_help_has_no_unimplemented_flags(capsys) -> None:
    # --plot is implemented now (tests/e2e/test_plot.py)
    assert shardc_run.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "not implemented yet" not in out and "--plot" in out


# In process: the failing --check path and the comparison rules ---------------------------


def test_failed_check_exits_1_writes_report_but_no_outputs(tmp_path, monkeypatch, capsys) -> None:
    from shardc.dialects import hlo
    from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f32

    def broken_compile(module, spec, filename):  # a "pass" that changes a constant
        for op in module.walk():
            if isinstance(op, hlo.ConstantOp):
                op.value = DenseIntOrFPElementsAttr.from_list(TensorType(f32, [16, 128]), [5.0])
        return []  # no pass changes to report

    monkeypatch.setattr(shardc_run, "compile_module", broken_compile)
    out, rep = tmp_path / "o.npz", tmp_path / "r.json"
    status = shardc_run.main(
        [
            str(EXAMPLES / "megatron_mlp.mlir"),
            "-p",
            "cse",
            "--check",
            "--outputs",
            str(out),
            "--report-json",
            str(rep),
        ]
    )
    captured = capsys.readouterr()
    assert status == 1
    assert "FAIL" in captured.out and "check failed" in captured.err
    assert not out.exists()
    report = json.loads(rep.read_text())
    assert report["check"]["passed"] is False and report["check"]["outputs"][0]["max_abs_diff"] > 0


def test_compare_rules() -> None:
    c = checking.compare("o", np.array([1, 2], np.int32), np.array([1, 3], np.int32))
    assert not c.passed and c.max_abs_diff == 1.0 and c.tolerance == 0.0
    c = checking.compare(
        "o", np.array([100.0, 1.0], np.float32), np.array([100.0005, 1.0], np.float32)
    )
    assert c.passed
    c = checking.compare(
        "o", np.array([100.0, 1.0], np.float32), np.array([100.1, 1.0], np.float32)
    )
    assert not c.passed
    c = checking.compare(
        "o", np.array([np.nan, np.inf], np.float32), np.array([np.nan, np.inf], np.float32)
    )
    assert c.passed and c.max_abs_diff == 0.0
    c = checking.compare("o", np.array([np.nan], np.float32), np.array([1.0], np.float32))
    assert not c.passed
    c = checking.compare("o", np.array([1.0, 2.0], BF16), np.array([1.0, 2.0078125], BF16))
    assert c.passed  # one bf16 ulp
    c = checking.compare("o", np.zeros(2, np.float32), np.zeros(3, np.float32))
    assert not c.passed and "reference" in c.note


# Timing: --chip, --timing-only, --trace and the report keys ------------------------------

REPORT_KEYS = (
    "devices",
    "step_time_s",
    "compute_time_s",
    "exposed_comm_time_s",
    "roofline_time_s",
    "collectives",
    "comm_bytes",
    "peak_memory_bytes",
)
KINDS = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "permute"]


def _is_level_s(path: Path) -> bool:
    text = path.read_text()
    return "spmd.partitioned" in text or "spmd.per_device_io" in text


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.mlir")))
def test_every_example_runs_with_a_timing_report(example: str, tmp_path: Path, capsys) -> None:
    path = EXAMPLES / example
    flags = [] if _is_level_s(path) else ["-p", "spmd-pipeline"]
    rep = tmp_path / "r.json"
    assert shardc_run.main([str(path), *flags, "--report-json", str(rep)]) == 0, (
        capsys.readouterr().err
    )
    out = capsys.readouterr().out
    assert "timing on v5e" in out and "step time" in out and "peak memory" in out
    r = json.loads(rep.read_text())
    for key in REPORT_KEYS:
        assert key in r, key
    for key in ("file", "entry", "level", "mesh", "pipeline", "inputs", "outputs", "check"):
        assert key in r, key  # the keys from before the timing model stay
    assert r["level"] == "S" and r["devices"] > 1
    assert list(r["collectives"]) == KINDS
    assert all(isinstance(v, int) for v in r["collectives"].values())
    assert isinstance(r["comm_bytes"], int) and isinstance(r["peak_memory_bytes"], int)
    assert sum(r["collectives"].values()) > 0 and r["comm_bytes"] > 0
    assert 0 < r["roofline_time_s"] <= r["step_time_s"]
    assert r["compute_time_s"] <= r["step_time_s"]
    assert r["exposed_comm_time_s"] == pytest.approx(r["step_time_s"] - r["compute_time_s"])
    assert r["peak_memory_bytes"] > 0


def test_level_g_report_has_one_device_and_no_communication(tmp_path: Path, capsys) -> None:
    rep = tmp_path / "r.json"
    assert shardc_run.main([str(EXAMPLES / "megatron_mlp.mlir"), "--report-json", str(rep)]) == 0
    r = json.loads(rep.read_text())
    assert r["devices"] == 1 and r["level"] == "G" and r["chip"] == "v5e"
    assert r["exposed_comm_time_s"] == 0 and r["comm_bytes"] == 0
    assert r["collectives"] == dict.fromkeys(KINDS, 0)
    assert r["step_time_s"] == pytest.approx(r["compute_time_s"]) and r["step_time_s"] > 0


def test_chip_changes_the_times(tmp_path: Path, capsys) -> None:
    times = {}
    for chip in ("v4", "v5e", "v5p", "v6e"):
        rep = tmp_path / f"{chip}.json"
        assert (
            shardc_run.main(
                [
                    str(EXAMPLES / "dp_grads.mlir"),
                    "--chip",
                    chip,
                    "--timing-only",
                    "--report-json",
                    str(rep),
                ]
            )
            == 0
        )
        r = json.loads(rep.read_text())
        assert r["chip"] == chip
        times[chip] = r["compute_time_s"]
    # dp_grads' small matmuls are HBM-bound: the order of HBM bandwidth
    assert times["v5p"] < times["v6e"] < times["v4"] < times["v5e"]


def test_bad_chip_is_one_error_exit_1(tmp_path: Path) -> None:
    rep = tmp_path / "r.json"
    proc = shardc_run_cli(
        str(EXAMPLES / "dp_grads.mlir"), "--chip", "v9", "--report-json", str(rep)
    )
    assert_one_error(proc, "unknown chip 'v9'", "v4, v5e, v5p, v6e")
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not rep.exists()


def test_timing_only_refuses_value_flags(tmp_path: Path, capsys) -> None:
    np.savez(tmp_path / "in.npz", in_0=np.zeros((8, 8), np.float32))
    for flags, needle in (
        (["--check", "-p", "spmd-pipeline"], "--check"),
        (["--outputs", str(tmp_path / "o.npz")], "--outputs"),
        (["--inputs", str(tmp_path / "in.npz")], "--inputs"),
    ):
        assert shardc_run.main([str(EXAMPLES / "collectives.mlir"), "--timing-only", *flags]) == 1
        err = capsys.readouterr().err
        assert "--timing-only computes no values" in err and needle in err
    assert not (tmp_path / "o.npz").exists()


HUGE_PROGRAM = """
spmd.mesh @m = <["data"=2, "model"=4]>
func.func @main(%x: tensor<16384x65536xbf16>, %w: tensor<65536x65536xbf16>) -> tensor<16384x65536xbf16> attributes {spmd.partitioned} {
  %f = collective.all_gather_start %w on @m["model"], dim = 1 : (tensor<65536x65536xbf16>) -> !collective.future<tensor<65536x262144xbf16>>
  %h = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<16384x65536xbf16>, tensor<65536x65536xbf16>) -> tensor<16384x65536xbf16>
  %g = collective.done %f : !collective.future<tensor<65536x262144xbf16>> -> tensor<65536x262144xbf16>
  %e = hlo.exp %h : tensor<16384x65536xbf16>
  %r = collective.all_reduce add %e on @m["data"] : tensor<16384x65536xbf16>
  func.return %r : tensor<16384x65536xbf16>
}"""


def test_timing_only_costs_gib_sized_weights_in_seconds(tmp_path: Path) -> None:
    src = tmp_path / "huge.mlir"
    src.write_text(HUGE_PROGRAM)
    rep, trace = tmp_path / "r.json", tmp_path / "t.json"
    import time

    start = time.perf_counter()
    proc = shardc_run_cli(
        str(src), "--timing-only", "--chip", "v5p", "--report-json", str(rep), "--trace", str(trace)
    )
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 10, elapsed  # process start included; the run itself is well under a second
    assert "not computed: --timing-only" in proc.stdout
    r = json.loads(rep.read_text())
    assert r["timing_only"] is True and r["inputs"] == {"source": "none (--timing-only)"}
    assert r["outputs"] == [{"name": "out_0", "shape": [16384, 65536], "dtype": "bf16"}]
    assert r["comm_bytes"] == 8 * 2**30 + 2 * 2**30
    assert r["peak_memory_bytes"] > 8 * 2**30 * 4  # the gathered weight alone is 32 GiB
    assert json.loads(trace.read_text())["traceEvents"]


def test_trace_file_is_perfetto_json(tmp_path: Path, capsys) -> None:
    trace = tmp_path / "t.json"
    assert shardc_run.main([str(EXAMPLES / "collectives.mlir"), "--trace", str(trace)]) == 0
    assert f"wrote trace {trace}" in capsys.readouterr().out
    data = json.loads(trace.read_text())
    events = data["traceEvents"]
    processes = {e["pid"] for e in events if e["name"] == "process_name"}
    assert processes == {0, 1, 2, 3}
    threads = {
        (e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"
    }
    assert set(threads.values()) == {"compute", "collectives"}
    slices = [e for e in events if e["ph"] == "X"]
    names = {e["name"] for e in slices if e["tid"] == 1}
    assert names == {
        "collective.all_reduce",
        "collective.all_gather",
        "collective.reduce_scatter",
        "collective.all_to_all",
        "collective.permute_start",
    }
    assert all(e["args"]["loc"].startswith(str(EXAMPLES / "collectives.mlir")) for e in slices)
    for pid in processes:
        for tid in (0, 1):
            stream = sorted(
                (e["ts"], e["ts"] + e["dur"]) for e in slices if (e["pid"], e["tid"]) == (pid, tid)
            )
            assert all(b[0] >= a[1] - 1e-9 for a, b in zip(stream, stream[1:], strict=False))


def test_no_trace_when_the_check_fails(tmp_path, monkeypatch, capsys) -> None:
    from shardc.dialects import hlo
    from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f32

    def broken_compile(module, spec, filename):
        for op in module.walk():
            if isinstance(op, hlo.ConstantOp):
                op.value = DenseIntOrFPElementsAttr.from_list(TensorType(f32, [16, 128]), [5.0])
        return []  # no pass changes to report

    monkeypatch.setattr(shardc_run, "compile_module", broken_compile)
    trace = tmp_path / "t.json"
    assert (
        shardc_run.main(
            [str(EXAMPLES / "megatron_mlp.mlir"), "-p", "cse", "--check", "--trace", str(trace)]
        )
        == 1
    )
    assert not trace.exists()
