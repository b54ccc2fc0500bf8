"""
Issue 17, outputs under mpirun: rank 0 assembles them from one copy of each distinct block
(`interpreter.mpi_outputs`), so for replicated outputs it receives and holds one global
array each (plus one block in flight), not one per device; the values are the in-process
ones bit for bit (partial sums included), and replicated copies that differ still fail with
the in-process message.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import numpy as np
from shardc.tests.mpi.launch import mpirun, requires_mpi, shardc_run_args
from shardc.tools.shardc_run import main as shardc_run

pytestmark = requires_mpi

N = 1024
GLOBAL = N * N * 4  # one f32 output

# mesh 2x2, one device per rank at -n 4: out_0 replicated everywhere (owner: device 0),
# out_1 split over x and replicated over y (owners: devices 0 and 2), out_2 split over x
# and a partial sum over y (bf16: summed in f32 on rank 0)
PROGRAM = f"""spmd.mesh @m = <["x"=2, "y"=2]>
func.func @main(%w: tensor<{N}x{N}xf32> {{spmd.sharding = #spmd.sharding<@m, [{{}}, {{}}]>}},
    %x: tensor<{N // 2}x{N}xf32> {{spmd.sharding = #spmd.sharding<@m, [{{"x"}}, {{}}]>}},
    %b: tensor<{N // 2}x64xbf16> {{spmd.sharding = #spmd.sharding<@m, [{{"x"}}, {{}}]>}})
    -> (tensor<{N}x{N}xf32> {{spmd.sharding = #spmd.sharding<@m, [{{}}, {{}}]>}},
        tensor<{N // 2}x{N}xf32> {{spmd.sharding = #spmd.sharding<@m, [{{"x"}}, {{}}]>}},
        tensor<{N // 2}x64xbf16> {{spmd.sharding = #spmd.sharding<@m, [{{"x"}}, {{}}], unreduced={{"y"}}>}})
    attributes {{spmd.partitioned}} {{
  %t = hlo.tanh %w : tensor<{N}x{N}xf32>
  %u = hlo.tanh %x : tensor<{N // 2}x{N}xf32>
  %v = hlo.tanh %b : tensor<{N // 2}x64xbf16>
  func.return %t, %u, %v : tensor<{N}x{N}xf32>, tensor<{N // 2}x{N}xf32>, tensor<{N // 2}x64xbf16>
}}
"""

# declared replicated, but each device returns its own block of x: devices 2 and 3 differ
WRONG = """spmd.mesh @m = <["x"=2, "y"=2]>
func.func @main(%x: tensor<4x8xf32> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {}]>})
    -> (tensor<4x8xf32> {spmd.sharding = #spmd.sharding<@m, [{}, {}]>})
    attributes {spmd.partitioned} {
  func.return %x : tensor<4x8xf32>
}
"""


def _run_here(args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = shardc_run(args)
    return status, err.getvalue()


def test_rank_0_receives_one_copy_per_block(tmp_path: Path) -> None:
    prog = tmp_path / "prog.mlir"
    prog.write_text(PROGRAM)
    assert _run_here([str(prog), "--seed", "5", f"--outputs={tmp_path / 'ref.npz'}", "-q"])[0] == 0
    stats = str(tmp_path / "s.{rank}.json")
    jobs = [
        {
            "args": [str(prog), "--seed", "5", f"--outputs={tmp_path / 'got.npz'}", "-q"],
            "env": {"PYTHONTRACEMALLOC": "1", "SHARDC_MPI_STATS": stats},
        }
    ]
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    done = mpirun(4, [sys.executable, "-m", "shardc.tests.mpi.jobs", str(tmp_path / "jobs.json")])
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((tmp_path / "jobs.status").read_text()) == [0]
    ref, got = np.load(tmp_path / "ref.npz"), np.load(tmp_path / "got.npz")
    for name in ("out_0", "out_1", "out_2"):
        assert ref[name].tobytes() == got[name].tobytes(), name
    root = json.loads((tmp_path / "s.0.json").read_text())
    partial = (N // 2) * 64 * 2  # one partial sum of out_2's block (bf16)
    # out_0: device 0's own copy, nothing received; out_1: device 2's block only (not
    # devices 1 and 3's copies); out_2: the three partials rank 0 does not hold
    assert root["outputs_received_bytes"] == GLOBAL // 2 + 3 * partial, root
    assert root["outputs_largest_piece_bytes"] == GLOBAL // 2, root
    # the global outputs, one piece in flight and one f32 accumulator: never a copy per device
    held = 2 * GLOBAL + 2 * partial
    assert held <= root["outputs_traced_peak_bytes"] <= held + GLOBAL // 2 + 2 * partial + 65536
    for rank in (1, 2, 3):
        assert json.loads((tmp_path / f"s.{rank}.json").read_text())["outputs_received_bytes"] == 0


def test_copies_that_differ_fail_as_in_process(tmp_path: Path) -> None:
    prog = tmp_path / "wrong.mlir"
    prog.write_text(WRONG)
    status, here = _run_here([str(prog), "-q"])
    assert status != 0 and "device 2 holds a copy that differs from device 0's" in here, here
    done = mpirun(4, shardc_run_args(str(prog), "-q"))
    assert done.returncode != 0
    assert done.stderr.count("holds a copy that differs") == 1, done.stderr
    assert here.strip().splitlines()[-1] in done.stderr, (here, done.stderr)
