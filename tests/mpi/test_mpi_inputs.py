"""
Issue 17, inputs: under mpirun no rank allocates a sharded input's global array (random
inputs drawn per rank, --inputs mapped from the file), the values are the in-process
ones, and --check compares the distributed run with the level-G reference.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import numpy as np
from shardc.tests.mpi.launch import mpirun, requires_mpi
from shardc.tools.shardc_run import main as shardc_run

pytestmark = requires_mpi

REPO = Path(__file__).resolve().parents[2]
GLOBAL_BYTES = 2048 * 2048 * 4

# a 16 MiB input split over 4 devices, and a small replicated output
PROGRAM = """spmd.mesh @m = <["x"=4]>
func.func @main(%x: tensor<512x2048xf32> {spmd.sharding = #spmd.sharding<@m, [{"x"}, {}]>})
    -> (tensor<1x8xf32> {spmd.sharding = #spmd.sharding<@m, [{}, {}]>})
    attributes {spmd.partitioned} {
  %c = hlo.slice %x [0:1, 0:8] : (tensor<512x2048xf32>) -> tensor<1x8xf32>
  %s = collective.all_reduce add %c on @m["x"] : tensor<1x8xf32>
  func.return %s : tensor<1x8xf32>
}
"""


def _run_here(args: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert shardc_run(args) == 0
    return out.getvalue()


def test_ranks_hold_only_their_blocks_and_check_passes(tmp_path: Path) -> None:
    prog = tmp_path / "prog.mlir"
    prog.write_text(PROGRAM)
    _run_here([str(prog), "--seed", "3", f"--outputs={tmp_path / 'ref.npz'}", "-q"])
    given = tmp_path / "in.npz"
    np.savez(given, in_0=np.random.default_rng(1).standard_normal((2048, 2048), np.float32))
    _run_here([str(prog), f"--inputs={given}", f"--outputs={tmp_path / 'ref_given.npz'}", "-q"])
    traced = {"PYTHONTRACEMALLOC": "1"}
    jobs = [
        {
            "args": [str(prog), "--seed", "3", f"--outputs={tmp_path / 'seed.npz'}", "-q"],
            "env": {**traced, "SHARDC_MPI_STATS": str(tmp_path / "seed.{rank}.json")},
        },
        {
            "args": [str(prog), f"--inputs={given}", f"--outputs={tmp_path / 'given.npz'}", "-q"],
            "env": {**traced, "SHARDC_MPI_STATS": str(tmp_path / "given.{rank}.json")},
        },
        [str(REPO / "examples/megatron_mlp.mlir"), "-p", "spmd-pipeline", "--check", "-q"],
    ]
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    done = mpirun(2, [sys.executable, "-m", "shardc.tests.mpi.jobs", str(tmp_path / "jobs.json")])
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "jobs.status").read_text()) == [0, 0, 0]
    assert "check against the level-G program before -p, distributed over 2 ranks" in done.stdout
    for name, ref in (("seed", "ref"), ("given", "ref_given")):
        a, b = np.load(tmp_path / f"{ref}.npz"), np.load(tmp_path / f"{name}.npz")
        assert a["out_0"].tobytes() == b["out_0"].tobytes(), name
    local_bytes = GLOBAL_BYTES // 2  # a rank's two devices' blocks
    for rank in (0, 1):
        seeded = json.loads((tmp_path / f"seed.{rank}.json").read_text())
        # the blocks and a piece of the stream, never the 16 MiB global array
        assert local_bytes <= seeded["inputs_traced_peak_bytes"] < 0.75 * GLOBAL_BYTES
        mapped = json.loads((tmp_path / f"given.{rank}.json").read_text())
        assert mapped["inputs_traced_peak_bytes"] < 0.25 * GLOBAL_BYTES  # views of the map
        assert seeded["devices"] == [2 * rank, 2 * rank + 2]
