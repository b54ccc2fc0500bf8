"""
Issue 16: hostile input ends in one clear message and exit status 1, before any work that
could exhaust memory; nothing is written. (Mesh limits and operand dominance are FileCheck
cases in tests/filecheck/dialects/{spmd,hlo}/invalid.mlir.)
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from shardc.diagnostics import DiagnosticError
from shardc.dialects import make_context
from shardc.interpreter import host_memory
from shardc.interpreter import io as interpreter_io
from shardc.parsing import parse_and_verify
from shardc.tools import shardc_run

HUGE = """spmd.mesh @m = <["x"=8]>
func.func @main(%a: tensor<100000x100000xf32> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {}]>}) -> tensor<100000x100000xf32> {
  %b = hlo.exp %a : tensor<100000x100000xf32>
  func.return %b : tensor<100000x100000xf32>
}
"""


def run_main(main: Callable[[Sequence[str]], int], args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("passes", [[], ["-p", "spmd-pipeline"]])
def test_valued_run_too_big_for_the_host_is_refused_before_allocating(
    tmp_path: Path, passes: list[str], monkeypatch: pytest.MonkeyPatch
):
    """37.3 GiB per array on a machine with 24 GiB: refused, nothing written."""
    monkeypatch.setattr(host_memory, "available_bytes", lambda: 24 * 1024**3)
    program = tmp_path / "huge.mlir"
    program.write_text(HUGE)
    outputs, report = tmp_path / "out.npz", tmp_path / "report.json"
    args = [str(program), *passes, "--outputs", str(outputs), "--report-json", str(report)]
    code, out, err = run_main(shardc_run.main, args)
    assert code == 1, (out, err)
    assert "Traceback" not in err and "internal error" not in err, err
    assert "needs at least 74.5 GiB for its arrays (in_0 37.3 GiB, out_0 37.3 GiB" in err, err
    assert "this machine has 24 GiB available; use --timing-only" in err
    assert not outputs.exists() and not report.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["huge.mlir"]


def test_the_same_program_runs_timing_only(tmp_path: Path):
    program = tmp_path / "huge.mlir"
    program.write_text(HUGE)
    code, out, err = run_main(shardc_run.main, [str(program), "--timing-only", "--quiet"])
    assert code == 0, err
    assert "step" in out


def test_level_s_counts_every_device_shard():
    """At level S a valued run holds the global arrays and each device's shard."""
    module = parse_and_verify(make_context(), HUGE, "huge.mlir")
    from shardc.driver.compiling import compile_module

    compile_module(module, "spmd-pipeline", "huge.mlir")
    sig = interpreter_io.signature(module, interpreter_io.find_entry(module, None, "x"), "x")
    parts = dict(host_memory.arrays_needed(sig))
    global_bytes = 100000 * 100000 * 4
    assert parts["in_0"] == global_bytes and parts["out_0"] == global_bytes
    assert parts["in_0's shards on 8 devices"] == global_bytes  # split 8 ways
    assert parts["out_0's shards on 8 devices"] == 8 * global_bytes  # replicated result
    with pytest.raises(DiagnosticError, match="this machine has 1 KiB available"):
        host_memory.check_fits(sig, "huge.mlir", available=1024)
    host_memory.check_fits(sig, "huge.mlir", available=11 * global_bytes)


def test_out_of_memory_during_a_run_is_a_message_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """What the estimate cannot see (intermediates) still ends in one clear message."""
    program = tmp_path / "p.mlir"
    program.write_text(
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %b = hlo.exp %a : tensor<4xf32>\n  func.return %b : tensor<4xf32>\n}\n"
    )

    def exhausted(*args: object, **kwargs: object) -> None:
        raise MemoryError("Unable to allocate 37.3 GiB")

    monkeypatch.setattr(shardc_run, "execute", exhausted)
    code, _, err = run_main(shardc_run.main, [str(program)])
    assert code == 1
    assert err.startswith("shardc-run: error: out of memory"), err
    assert "internal error" not in err and "Traceback" not in err


def test_mesh_less_program_runs_through_tpu_pipeline(tmp_path: Path):
    """`shardc-opt -p tpu-pipeline` compiles a level-G program without a mesh; `shardc-run
    -p tpu-pipeline` runs and checks it too (one device: the kernel's arrays are global)."""
    program = tmp_path / "p.mlir"
    program.write_text(
        "func.func @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {\n"
        "  %b = hlo.exp %a : tensor<4x4xf32>\n  func.return %b : tensor<4x4xf32>\n}\n"
    )
    code, out, err = run_main(
        shardc_run.main, [str(program), "-p", "tpu-pipeline", "--check", "--quiet"]
    )
    assert code == 0, err
    assert "check against the level-G program before -p: pass" in out, out


SMALL = """spmd.mesh @m = <["x"=2]>
func.func @main(%a: tensor<4x4xf32> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {}]>}) -> tensor<4x4xf32> {
  %b = hlo.exp %a : tensor<4x4xf32>
  func.return %b : tensor<4x4xf32>
}
"""


def test_outputs_are_written_all_or_none(tmp_path: Path):
    """An unwritable --outputs leaves the report and trace of an earlier run untouched,
    no temporary behind, and the message names the target."""
    program = tmp_path / "p.mlir"
    program.write_text(SMALL)
    report, trace = tmp_path / "report.json", tmp_path / "trace.json"
    report.write_text("earlier report")
    trace.write_text("earlier trace")
    bad = tmp_path / "missing-dir" / "out.npz"
    args = [str(program), "-p", "spmd-pipeline", "--quiet", "--report-json", str(report)]
    args += ["--trace", str(trace), "--outputs", str(bad)]
    code, out, err = run_main(shardc_run.main, args)
    assert code == 1
    assert f"shardc-run: error: cannot write '{bad}': No such file or directory" in err, err
    assert f".tmp{os.getpid()}" not in err and "internal error" not in err
    assert report.read_text() == "earlier report" and trace.read_text() == "earlier trace"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.mlir", "report.json", "trace.json"]
    assert "wrote" not in out
    # and with a writable path, all three are replaced
    args[-1] = str(tmp_path / "out.npz")
    code, out, err = run_main(shardc_run.main, args)
    assert code == 0, err
    assert report.read_text().startswith("{") and trace.read_text().startswith("{")
    assert (tmp_path / "out.npz").exists() and not list(tmp_path.glob(".*tmp*"))


def test_ctrl_c_while_writing_leaves_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    program = tmp_path / "p.mlir"
    program.write_text(SMALL)
    report = tmp_path / "report.json"
    report.write_text("earlier report")

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(shardc_run.np, "savez", interrupted)
    args = [
        str(program),
        "--quiet",
        "--report-json",
        str(report),
        "--outputs",
        str(tmp_path / "o.npz"),
    ]
    code, _, _ = run_main(shardc_run.main, args)
    assert code == 130
    assert report.read_text() == "earlier report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.mlir", "report.json"]


LOOP = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = hlo.constant dense<0> : tensor<i32>
  %r:2 = hlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<4xf32> cond {
    %n = hlo.constant dense<2147483647> : tensor<i32>
    %p = hlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    hlo.return %p : tensor<i1>
  } do {
    %one = hlo.constant dense<1> : tensor<i32>
    %i1 = hlo.add %i, %one : tensor<i32>
    %x1 = hlo.tanh %x : tensor<4xf32>
    hlo.return %i1, %x1 : tensor<i32>, tensor<4xf32>
  }
  func.return %r#1 : tensor<4xf32>
}
"""


@pytest.mark.parametrize("flags", [["--timing-only"], []])
def test_a_loop_of_two_billion_iterations_is_an_error_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: list[str]
):
    """Every simulated loop is bounded (`execution.MAX_LOOP_ITERATIONS`, a million; 100
    here to keep the test fast)."""
    from shardc.interpreter import execution

    monkeypatch.setattr(execution, "MAX_LOOP_ITERATIONS", 100)
    program = tmp_path / "loop.mlir"
    program.write_text(LOOP)
    code, _, err = run_main(shardc_run.main, [str(program), "--quiet", *flags])
    assert code == 1
    assert "loop.mlir:3:3: error: 'hlo.while' op on device 0: still running after 100" in err
    assert "internal error" not in err


def test_a_kernel_loop_of_step_zero_is_an_error_not_a_hang():
    from shardc.diagnostics import InterpreterError
    from shardc.interpreter.level_t import run_level_t
    from shardc.tests.unit.test_level_t import ONE_DEVICE

    body = "  %c1 = arith.constant 1 : index\n  scf.for %k = %c0 to %c8 step %c0 {\n  }\n"
    module = parse_and_verify(make_context(), ONE_DEVICE.replace("BODY", body), "k.mlir")
    with pytest.raises(InterpreterError, match="the loop's step is 0; it must be positive"):
        run_level_t(module, [[np.zeros((16, 128), np.float32), None]], chip="v5e")


def test_a_kernel_with_a_malformed_level_s_summary(tmp_path: Path):
    """Found by bench/fuzz.py at 10,000 inputs: the `shardc.level_s` record a lowered
    kernel carries, edited, is a message naming it, not an internal error."""
    import re

    from shardc.driver.compiling import compile_module

    text = (Path(__file__).parents[2] / "examples" / "megatron_mlp.mlir").read_text()
    module = parse_and_verify(make_context(), text, "m.mlir")
    compile_module(module, "tpu-pipeline", "m.mlir")
    kernel = re.sub(r"comm_bytes = \d+ : i64, ", "", str(module), count=1)
    program = tmp_path / "kernel.mlir"
    program.write_text(kernel)
    code, _, err = run_main(shardc_run.main, [str(program), "--quiet"])
    assert code == 1, err
    assert "the module attribute shardc.level_s for @main is malformed" in err, err
    assert "internal error" not in err
