#!/usr/bin/env bash
# Set up (if needed), then the main job: compile an example through spmd-pipeline, run it
# on simulated devices, check it against the global program, and print the report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/shardc-run examples/megatron_mlp.mlir -p spmd-pipeline --check --chip v5e "$@"
