"""
Importers: what JAX and XLA print, to shardc's `hlo` + `spmd` (+ `collective`) IR.
`shardc-import FILE [-o OUT.mlir] [--stats]` picks one from the text.

* `stablehlo` (+ `stablehlo_dialect`): the StableHLO that
  `jax.jit(f, in_shardings=..., out_shardings=...).lower(*args).as_text()` prints, pretty
  or generic, with or without debug locations, in both sharding forms JAX emits: Shardy
  (`sdy.mesh`, `#sdy.sharding`, `sdy.sharding_constraint`, `sdy.manual_computation`) and
  GSPMD (`mhlo.sharding` strings, `custom_call @Sharding`,
  `@SPMDFullToShardShape` / `@SPMDShardToFullShape`). Read with xDSL's MLIR parser plus
  parse-only op definitions (why: the module docstring). Output: a level-G program with
  `#spmd.sharding`s, or, for a program that uses shard_map, a partitioned level-S program
  whose manual bodies run per device with `collective` ops.
* `hlo_text` (+ the lark grammar `hlo_text.lark`): XLA's per-device HLO module text
  (`.compile().as_text()`, `--xla_dump_to`), to a level-S program over a 1-D mesh of all
  devices, with explicit collective groups, marked `spmd.per_device_io`.
* `hlo_sharding`: XLA's HloSharding strings, replica groups (explicit and iota forms) and
  group modes, the mesh that expresses a set of tile assignments, and splitting /
  assembling global arrays per device.
* `common`: statistics (which source ops and constructs an import converted) and the op
  builder both importers use.

Not supported (each a located error naming it): ops with no `hlo` counterpart (gather,
scatter, pad, reverse, reduce_window, while / case / conditional, sort, rng and bit
operations, floor / round, float remainder), reduces of several operands together
(argmax), TOTALORDER compares, element types other than f32 / bf16 / f16 / f64 / i32 /
i64 / i1 (HLO's u32 is read as i32), Shardy sub-axes and non-iota `device_ids`, partially
manual computations that split over their free axes, and, in a shard_map program, ops
outside the manual computations other than pointwise ones on values of one layout (they
would need shardc to partition a mixed global / per-device program).

Neither importer needs jax: `scripts/make_frontend_corpus.py` (jax, the `jax` extra)
regenerates the test corpus in `tests/frontends/corpus/`. Anything an importer does not
know (an op, an attribute, a sharding it cannot express) is one located diagnostic
`file:line:col: error: ...` naming it, never a silently dropped op.
"""
