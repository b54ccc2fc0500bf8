#!/usr/bin/env bash
# Set up (if needed) and run every test: lit + FileCheck, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
status=0
lit -q tests/filecheck || status=1
python -m pytest "$@" || status=1
exit $status
