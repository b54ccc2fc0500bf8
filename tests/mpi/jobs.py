"""
Run many `shardc-run` command lines in one MPI job (`mpirun -n K python -m
shardc.tests.mpi.jobs JOBS.json`): starting Python and xDSL costs seconds per rank, so the
tests launch one job per rank count and run every program in it. JOBS.json is a list of
argument lists; rank 0 writes each job's exit status to `<JOBS.json>.status`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from shardc.interpreter.mpi import world
from shardc.tools.shardc_run import main as shardc_run


def run_jobs(path: Path) -> None:
    jobs = json.loads(path.read_text())
    statuses = [shardc_run(args) for args in jobs]
    if world().is_root:
        path.with_suffix(".status").write_text(json.dumps(statuses))


if __name__ == "__main__":
    run_jobs(Path(sys.argv[1]))
