#!/usr/bin/env bash
# Set up (if needed), then the main job, on one model at two sizes and three levels: a pre-LayerNorm
# transformer layer (attention + GELU MLP, bf16, Megatron-sharded on a v5e 2x4 slice;
# scripts/make_transformer_layer.py writes both files).
#
# 1. The small layer (examples/transformer_layer.mlir), checked: compiled through
#    tpu-pipeline (sharding propagation, partitioning, collective optimizations, scheduling,
#    lowering to one tpu kernel per chip), run on the level-T simulator, its outputs checked
#    against the global (level-G) program; report, Perfetto trace and timeline picture in
#    build/.
# 2. The same layer at real size (examples/real_size/transformer_layer.mlir: batch 8,
#    sequence 2048, model 4096, FFN 16384), costed at level S with --timing-only (no arrays
#    are allocated): report and trace in build/.
# 3. The real-size layer lowered (tpu-pipeline) and simulated at level T with --timing-only
#    (about 15 s): its timeline picture shows the ring steps' ICI DMAs under the compute
#    loops; its step is within 10% of step 2's (bench/agreement.py).
# Extra arguments go to both runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p build
.venv/bin/shardc-run examples/transformer_layer.mlir -p tpu-pipeline --check --chip v5e \
    --trace build/transformer_layer.trace.json --plot build/transformer_layer.timeline.png "$@"
echo
echo "== the same layer at real size (level S, --timing-only) =="
.venv/bin/shardc-run examples/real_size/transformer_layer.mlir -p spmd-pipeline --timing-only \
    --chip v5e --trace build/transformer_layer_real_size.trace.json "$@"
echo
echo "== the real-size layer lowered to tpu kernels (level T, --timing-only) =="
exec .venv/bin/shardc-run examples/real_size/transformer_layer.mlir -p tpu-pipeline --timing-only \
    --chip v5e --plot build/transformer_layer_real_size.level_t.png "$@"
