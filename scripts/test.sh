#!/usr/bin/env bash
# Set up (if needed) and run every check: ruff (lint and format), lit + FileCheck, then
# pytest in parallel (pytest-xdist, one worker per core). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
status=0
ruff check . || status=1
ruff format --check . || status=1
lit -q tests/filecheck || status=1
python -m pytest -n auto "$@" || status=1
exit $status
