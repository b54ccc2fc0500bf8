"""
`lower-to-tpu` (level S to level T). `lower_to_tpu`: the pass, one kernel per function;
`abi`: the kernel's calling convention and value buffers; `context`: what op lowerings
see of the kernel (`Target`, `LoweringContext`); `topology`: mesh axes and device groups
as rings, neighbours; `collectives`: a collective to its algorithm (`all_gather`,
`reduce_scatter` + `reduce_ring`, `all_reduce`, `all_to_all`, `permute`, built from
`rings`); `compute`: hlo compute ops as tiled, double-buffered VMEM loops; `movement`:
data-movement ops as DMAs; `emit`: the emitter and helpers they all share;
`tpu_pipeline`: `spmd-pipeline` then `lower-to-tpu` (`tpu-pipeline`); `level_s_summary`:
what a kernel's report needs from the level-S program (`shardc.level_s`).
"""
