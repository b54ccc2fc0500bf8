"""
Importers: what JAX and XLA print, to shardc's `hlo` + `spmd` (+ `collective`) IR.
`shardc-import FILE [-o OUT.mlir] [--stats] [--print-debuginfo]` picks one from the text.

* `stablehlo` (the driver) + `stablehlo_dialect`: the StableHLO that
  `jax.jit(f, in_shardings=..., out_shardings=...).lower(*args).as_text()` prints, pretty
  or generic, with or without debug locations, in both sharding forms JAX emits: Shardy
  (`sdy.mesh`, `#sdy.sharding`, `sdy.sharding_constraint`, `sdy.manual_computation`) and
  GSPMD (`mhlo.sharding` strings, `custom_call @Sharding`,
  `@SPMDFullToShardShape` / `@SPMDShardToFullShape`). Read with xDSL's MLIR parser plus
  parse-only op definitions (why: the module docstring). Output: a level-G program with
  `#spmd.sharding`s, or, for a program that uses shard_map, a partitioned level-S program
  whose manual bodies run per device with `collective` ops. Its parts:
  `stablehlo_source` (reading the parsed module's attributes; located errors),
  `stablehlo_shardings` (the mesh; sdy / mhlo.sharding -> `#spmd.sharding`),
  `stablehlo_manual` + `stablehlo_views` (manual computations, global values and their
  per-device values), `stablehlo_ops` + `stablehlo_collectives` (one converter per op
  name, in tables).
* `hlo_text` (the driver) + the lark grammar `hlo_text.lark`: XLA's per-device HLO module
  text (`.compile().as_text()`, `--xla_dump_to`), to a level-S program over a 1-D mesh of
  all devices, with explicit collective groups, marked `spmd.per_device_io`. Its parts:
  `hlo_text_parse` (lark's tree to computations, syntax errors), `hlo_text_source` (what
  the converters see of the module), `hlo_text_ops` + `hlo_text_collectives` (one
  converter per opcode, in tables), `hlo_text_global` (a module XLA has not partitioned
  yet, `sharding=` and no collectives, read as a level-G program with its shardings).
* `hlo_sharding`: XLA's HloSharding strings, replica groups (explicit and iota forms) and
  group modes, the mesh that expresses a set of tile assignments, and splitting /
  assembling global arrays per device.
* `expansions`: the source ops without an `hlo` op of their own (square, is_inf, ...),
  written once for both importers.
* `locations`: each imported op's `Operation.location`: its position in the text read,
  fused with the origin the text records (JAX's `loc(...)`, HLO's `metadata=`).
* `common`: statistics (which source ops and constructs an import converted), the op
  builder both importers use, and their converter tables.
* `stablehlo_gspmd_manual`: GSPMD's shard_map chain (full-to-shard, body call,
  shard-to-full) inside auto-sharded code as `spmd.manual_computation`.
* `support`: `shardc-import --check-support`, every unsupported op, `custom_call` target
  and element type of a file at once, with first location and count.

Not supported (each a located error naming it; `shardc-import --check-support` lists them
all at once): ops with no `hlo` counterpart yet (gather, scatter, while / case /
conditional, rng), reduce_window / select_and_scatter bodies other than one named
combiner (select: GE / GT, scatter: add), reduce bodies using unsupported ops, TOTALORDER
compares outside a sort comparator, sort comparators other than LT / GT of the first
operand (several keys, custom orders), element types other than those `hlo.element_kind`
takes (f64 f32 bf16 f16 f8E4M3FN f8E5M2, i64..i2, ui64..ui2, i1, complex<f32/f64>),
Shardy sub-axes and non-iota `device_ids`, GSPMD's partially manual shardings
(`last_tile_dims={manual}`; Shardy's partially manual computations import, their bodies
replicated along the free axes), and, in a shard_map program, ops
outside the manual computations other than pointwise ones on values of one layout (they
would need shardc to partition a mixed global / per-device program).

Neither importer needs jax: `scripts/make_frontend_corpus.py` (jax, the `jax` extra)
regenerates the test corpus in `tests/frontends/corpus/`. Anything an importer does not
know (an op, an attribute, a sharding it cannot express) is one located diagnostic
`file:line:col: error: ...` naming it, never a silently dropped op.
"""
