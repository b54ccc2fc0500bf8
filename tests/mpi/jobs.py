"""
Run many `shardc-run` command lines in one MPI job (`mpirun -n K python -m
shardc.tests.mpi.jobs JOBS.json`): starting Python and xDSL costs seconds per rank, so the
tests launch one job per rank count and run every program in it. JOBS.json is a list of
argument lists (or {"args": [...], "env": {...}} for a job that needs environment
variables); rank 0 writes each job's exit status to `<JOBS.json>.status`.
"""

from __future__ import annotations

import json
import os
import sys
import tracemalloc
from pathlib import Path

from shardc.interpreter.mpi import world
from shardc.tools.shardc_run import main as shardc_run


def run_jobs(path: Path) -> None:
    jobs = json.loads(path.read_text())
    statuses = []
    for job in jobs:
        if isinstance(job, dict):
            os.environ.update(job["env"])
            if "PYTHONTRACEMALLOC" in job["env"]:  # read at start-up only: start it here
                tracemalloc.start()
            statuses.append(shardc_run(job["args"]))
            tracemalloc.stop()
            for name in job["env"]:
                del os.environ[name]
        else:
            statuses.append(shardc_run(job))
    if world().is_root:
        path.with_suffix(".status").write_text(json.dumps(statuses))


if __name__ == "__main__":
    run_jobs(Path(sys.argv[1]))
