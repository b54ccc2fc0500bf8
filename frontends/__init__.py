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

Neither importer needs jax: `scripts/make_frontend_corpus.py` (jax, the `jax` extra)
regenerates the test corpus in `tests/frontends/corpus/`. Anything an importer does not
know (an op, an attribute, a sharding it cannot express) is one located diagnostic
`file:line:col: error: ...` naming it, never a silently dropped op.
"""
