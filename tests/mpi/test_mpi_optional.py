"""mpi4py is optional (the `mpi` extra): nothing imports it unless run under mpirun."""

from __future__ import annotations

import os
import subprocess
import sys


def test_plain_runs_do_not_import_mpi4py() -> None:
    code = (
        "import sys\n"
        "import shardc.tools.shardc_run, shardc.driver.execution, shardc.interpreter.mpi\n"
        "import shardc.interpreter.mpi_run, shardc.interpreter.shard_inputs\n"
        "from shardc.interpreter.mpi import running_under_mpi\n"
        "assert not running_under_mpi()\n"
        "assert 'mpi4py' not in sys.modules, 'mpi4py imported'\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI", "PMIX"))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
