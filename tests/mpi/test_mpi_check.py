"""
Issue 17, `--check` under mpirun computed distributed (`driver.mpi_checking`): each rank
evaluates level G only on the boxes its devices' outputs cover, so no rank holds the
global array of a sharded input; the check passes on every level-G example at K = 2 and 4
with the in-process verdicts, and fails on a wrong level-S program.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from shardc.tests.mpi.launch import mpirun, requires_mpi

pytestmark = requires_mpi

REPO = Path(__file__).resolve().parents[2]
ROWS, COLS = 4096, 1024
X_BYTES = ROWS * COLS * 4

# x (16 MiB) split 4 ways over rows; elementwise ops on it, then a row-sharded dot
PROGRAM = f"""spmd.mesh @m = <["x"=4]>
func.func @main(%x: tensor<{ROWS}x{COLS}xf32> {{spmd.sharding = #spmd.sharding<@m, [{{"x"}}, {{}}]>}},
    %w: tensor<{COLS}x64xf32> {{spmd.sharding = #spmd.sharding<@m, [{{}}, {{}}]>}})
    -> (tensor<{ROWS}x64xf32> {{spmd.sharding = #spmd.sharding<@m, [{{"x"}}, {{}}]>}}) {{
  %t = hlo.tanh %x : tensor<{ROWS}x{COLS}xf32>
  %y = hlo.mul %t, %x : tensor<{ROWS}x{COLS}xf32>
  %z = hlo.dot %y, %w, contracting_dims = [1] x [0] : (tensor<{ROWS}x{COLS}xf32>, tensor<{COLS}x64xf32>) -> tensor<{ROWS}x64xf32>
  func.return %z : tensor<{ROWS}x64xf32>
}}
"""


def _level_g_examples() -> list[Path]:
    return [
        p
        for p in sorted((REPO / "examples").glob("*.mlir"))
        if "spmd.partitioned" not in p.read_text() and "spmd.per_device_io" not in p.read_text()
    ]


def _job(args: list[str], tmp: Path, name: str) -> dict[str, object]:
    stats = str(tmp / f"{name}.{{rank}}.json")
    return {"args": args, "env": {"SHARDC_MPI_STATS": stats, "PYTHONTRACEMALLOC": "1"}}


def test_check_is_distributed_and_passes(tmp_path: Path) -> None:
    prog = tmp_path / "prog.mlir"
    prog.write_text(PROGRAM)
    examples = _level_g_examples()
    assert len(examples) >= 8
    peaks: dict[int, int] = {}
    for k in (2, 4):
        jobs = [_job([str(prog), "-p", "spmd-pipeline", "--check", "-q"], tmp_path, f"p{k}")]
        jobs += [[str(p), "-p", "spmd-pipeline", "--check", "-q"] for p in examples]
        (tmp_path / f"jobs{k}.json").write_text(json.dumps(jobs))
        done = mpirun(
            k, [sys.executable, "-m", "shardc.tests.mpi.jobs", str(tmp_path / f"jobs{k}.json")]
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert json.loads((tmp_path / f"jobs{k}.status").read_text()) == [0] * len(jobs)
        line = f"check against the level-G program before -p, distributed over {k} ranks"
        assert done.stdout.count(line + " (each on its outputs' boxes): pass") == len(jobs)
        assert "FAIL" not in done.stdout
        for rank in range(k):
            stats = json.loads((tmp_path / f"p{k}.{rank}.json").read_text())
            # the rank's rows of x (and of tanh(x), x * tanh(x)), never all of them
            assert stats["check_largest_array_bytes"] == X_BYTES // k, stats
            # values and their rounding bounds on those rows: falls with k
            peaks[k] = max(peaks.get(k, 0), stats["check_traced_peak_bytes"])
            assert stats["check_traced_peak_bytes"] < 8 * X_BYTES / k, stats
    assert peaks[4] < 0.6 * peaks[2], peaks


def test_check_fails_on_a_wrong_program() -> None:
    example = str(REPO / "examples" / "megatron_mlp.mlir")
    args = [sys.executable, "-m", "shardc.tests.mpi.wrong_kind", example, "-p", "spmd-pipeline"]
    done = mpirun(2, [*args, "--check"])
    assert done.returncode != 0
    assert "distributed over 2 ranks (each on its outputs' boxes): FAIL" in done.stdout, done.stdout
    assert "  out_0  max |diff|" in done.stdout and "FAIL  (element [" in done.stdout
    assert done.stderr.count("check failed") == 1, done.stderr
    # the same bug in process fails the same way (and the unpatched run passes: above)
    assert "  out_0" in done.stdout
