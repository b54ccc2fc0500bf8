"""
Issue 17, chained in-order reductions (`interpreter/mpi_chain.py`): a cross-rank
all_reduce or reduce_scatter passes one partial sum along its group's ranks, in group
order, instead of sending every member's operand to every rank. Outputs stay
bit-identical to the in-process run (bf16 accumulated in f32, a group whose order
alternates between ranks), and each rank sends O(operand) bytes, not O(group).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from shardc.tests.mpi.launch import mpirun, requires_mpi
from shardc.tools.shardc_run import main as shardc_run

pytestmark = requires_mpi

ROWS = 256
OPERAND_BYTES = ROWS * 256 * 4


def _program(dtype: str, collective: str, axes: str, scatter: bool = False) -> str:
    t = f"tensor<{ROWS}x256x{dtype}>"
    if scatter:
        out, split = f"tensor<{ROWS // 8}x256x{dtype}>", '{"x", "y"}'
        op = f"collective.reduce_scatter add %a on @m[{axes}], dim = 0 : ({t}) -> {out}"
    else:
        out, split = t, "{}"
        op = f"collective.{collective} add %a on @m[{axes}] : {t}"
    return f"""spmd.mesh @m = <["x"=2, "y"=4]>
func.func @main(%a: {t} {{spmd.sharding = #spmd.sharding<@m, [{{"x", "y"}}, {{}}]>}})
    -> ({out} {{spmd.sharding = #spmd.sharding<@m, [{split}, {{}}]>}}) attributes {{spmd.partitioned}} {{
  %s = {op}
  func.return %s : {out}
}}
"""


PROGRAMS = {
    # group order y-major: devices 0 4 1 5 2 6 3 7, alternating between 2 ranks
    "interleaved_bf16": _program("bf16", "all_reduce", '"y", "x"'),
    "f32": _program("f32", "all_reduce", '"x", "y"'),
    "scatter": _program("f32", "", '"x", "y"', scatter=True),
}


def test_chained_reductions_are_bit_identical_and_send_one_operand(tmp_path: Path) -> None:
    jobs = {2: [], 4: []}
    for name, text in PROGRAMS.items():
        prog = tmp_path / f"{name}.mlir"
        prog.write_text(text)
        ref = tmp_path / f"{name}.ref.npz"
        assert shardc_run([str(prog), "--seed", "4", "-q", f"--outputs={ref}"]) == 0, name
        for k, job in jobs.items():
            stats = str(tmp_path / f"{name}.{k}.{{rank}}.json")
            args = [str(prog), "--seed", "4", "-q", f"--outputs={tmp_path / f'{name}.{k}.npz'}"]
            job.append({"args": args, "env": {"SHARDC_MPI_STATS": stats}})
    for k, job in jobs.items():
        (tmp_path / f"jobs{k}.json").write_text(json.dumps(job))
        done = mpirun(
            k, [sys.executable, "-m", "shardc.tests.mpi.jobs", str(tmp_path / f"jobs{k}.json")]
        )
        assert done.returncode == 0, done.stderr[-3000:]
        for name in PROGRAMS:
            ref, got = np.load(tmp_path / f"{name}.ref.npz"), np.load(tmp_path / f"{name}.{k}.npz")
            assert ref["out_0"].tobytes() == got["out_0"].tobytes(), (name, k)
    sent = {
        (name, k, r): json.loads((tmp_path / f"{name}.{k}.{r}.json").read_text())["bytes_sent"]
        for name in PROGRAMS
        for k in (2, 4)
        for r in range(k)
    }
    slack = 1 << 14  # arrivals, pickling
    for k in (2, 4):
        # f32: ranks 0..k-2 pass the partial sum on; the last rank sends the result to k-1
        for r in range(k - 1):
            assert sent[("f32", k, r)] < OPERAND_BYTES + slack, sent
        assert sent[("f32", k, k - 1)] < (k - 1) * OPERAND_BYTES + slack, sent
        # reduce_scatter: the last rank sends each other rank only its members' blocks
        assert sent[("scatter", k, k - 1)] < OPERAND_BYTES + slack, sent
    # interleaved at k=2: the f32 partial sum crosses 7 times (2x a bf16 operand), half
    # each way, and the result once
    assert sent[("interleaved_bf16", 2, 0)] < 4 * OPERAND_BYTES + slack, sent
