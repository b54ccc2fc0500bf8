#!/usr/bin/env bash
# Set up (if needed), then the main job: compile examples/megatron_mlp.mlir through
# tpu-pipeline (sharding propagation, partitioning, collective optimizations, scheduling,
# lowering to one tpu kernel per chip) for a v5e 2x4 slice, run the kernels on the level-T
# simulator, check the outputs against the global (level-G) program, print the report, and
# write the Perfetto trace and the timeline picture to build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p build
exec .venv/bin/shardc-run examples/megatron_mlp.mlir -p tpu-pipeline --check --chip v5e \
    --trace build/megatron_mlp.trace.json --plot build/megatron_mlp.timeline.png "$@"
