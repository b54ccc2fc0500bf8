#!/usr/bin/env bash
# Set up (if needed) and run the main job on an example program.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/shardc-opt examples/megatron_mlp.mlir "$@"
