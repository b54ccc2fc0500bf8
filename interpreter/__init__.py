"""
The reference interpreter: levels G and S on numpy, with a timing model of the simulated
machine (level T: `level_t`, a discrete-event simulation of `tpu` kernels).

It is the project's oracle: passes are tested by running a program before and after them.

Modules
-------
* `values`: element types <-> numpy dtypes (bf16 is `ml_dtypes.bfloat16`, i1 is numpy
  bool), dense literals to arrays, accumulation types, reduction identities, StableHLO
  `convert`, random inputs.
* `hlo_impls`: `HloFunctions`, an xDSL `InterpreterFunctions` (`@register_impls`,
  `@impl(hlo.AddOp)`, ...) with every `hlo` op, `spmd.constraint` (the identity) and
  `spmd.axis_index`; `TensorScalarFunctions` (`tensor.extract` to a Python scalar, for
  `scf.if` on device values). `Interpreter.run_op(op, args)` / `call_op` run them as usual.
* `collectives`: the semantics of every collective over one group, on numpy (a registry
  keyed by op type).
* `devices`: `Executor`, the N-device executor; it wires together `plan` (what each op
  becomes, planned once per function), `execution` (one device running a plan as a
  generator), `rendezvous` (the scheduler meeting devices at collectives, and timing
  them) and `run_diagnostics` (locations, deadlock / mismatch / future messages).
* `io`: the entry function's `Signature`, input validation, splitting global inputs by
  sharding and assembling global outputs (what `shardc-run` uses); `host_memory` what a
  valued run needs of the host's memory, refused up front when it cannot fit.
* `timing`: the simulated machine's clocks (a compute stream and a collective engine per
  device), peak-memory accounting, the report (`Timeline.report()`, DESIGN.md's keys) and
  the Chrome/Perfetto trace (`Timeline.trace()`); costs come from `shardc.hardware.cost`.
* `breakdown`: where the time goes, per op of the slowest device: the report's `ops`
  (ops and fusions, one row per program op) and `collective_ops` (hidden and exposed
  time), and the text report's top-ops tables; `level_t_breakdown` the same `ops` at level
  T (the compute stream's union attributed to the program's ops).
* `trace_events`: `TraceWriter`, the one Chrome/Perfetto trace writer (levels S and T).
* `level_t`: the level-T simulator's entry points (`run_level_t`, `is_level_t`,
  `find_kernel`, `Simulator`) and what it models; split into `level_t_sim` (the event
  loop and block walker), `level_t_machine` (buffers, semaphores, DMAs and link flows,
  torus routing, device state, event queue), `level_t_memory` (allocation, views, remote
  references), `level_t_dma` (DMA engines), `level_t_races` (vector-clock race
  detection), `level_t_ops` (local ops as xDSL `@impl` functions by op type),
  `level_t_arith` (elementwise numerics), `level_t_effects` (DMA, semaphore and barrier
  effects, generator functions by op type) and `level_t_report` (report, trace,
  deadlock and exit checks). `level_t_timeline` gives a run the level-S report keys.
* `plot`: the `--plot` PNG of a timeline.
* `testing`: parse-and-run helpers for tests (`run_per_device`, `run_global`,
  `time_program`).

Levels
------
A function marked `spmd.partitioned` or `spmd.per_device_io` is level S and runs on every
device of the module's `spmd.mesh` (N = its device count), each with its own values.
Any other function is level G and runs on one device with global semantics; its
shardings are only used for input diagnostics. A collective in a level-G function and
`spmd.axis_index` outside level S are errors. The entry function is `main`, else the only
public function, else `--entry`.

Semantics decisions (StableHLO where it speaks)
-----------------------------------------------
* Numerics: bf16/f16 values are rounded to their type after every op. Elementwise ops
  on them compute in f32 and round once (for + - * / this equals correctly rounded bf16 /
  f16 arithmetic, as f32 has more than 2p + 2 bits); `dot`, `reduce`, reducing
  collectives and the runner's `unreduced` sums accumulate in f32 and round once at the
  end. f32 computes in f32, f64 in f64. `reduce` uses numpy's (pairwise) order;
  collectives and unreduced sums combine strictly in rank order.
* `dot` = dot_general via `np.matmul` (result dims batch, lhs free, rhs free); the result
  element type may differ from the operands' (e.g. bf16 x bf16 -> f32). i1 dot is
  or-of-ands.
* Integer `div` truncates toward zero; x / 0 = -1 and INT_MIN / -1 = INT_MIN (as XLA).
  Integer `pow` squares with wrapping; a negative exponent gives 0, except bases 1 (1)
  and -1 (+-1). Integer overflow wraps everywhere.
* `convert`: float -> int truncates toward zero, NaN -> 0, out of range saturates;
  int -> float and narrowing float conversions round to nearest even, once (f64 -> bf16
  goes through f32 rounded to odd, because ml_dtypes' direct cast rounds twice);
  any -> i1 is `!= 0`; i1 -> any is 0 / 1.
* i1: add / max = or, mul / min = and (in `reduce`, `all_reduce` and elementwise).
* `reduce` identities: add 0, mul 1, max -inf / int min / false, min +inf / int max /
  true. `max`/`min` propagate NaN.
* `dynamic_slice` / `dynamic_update_slice` clamp start indices into
  [0, size - slice size]; `select` with a rank-0 predicate picks a whole operand.
* Values are never written in place; arrays may be shared between SSA values and
  devices (collective results are one read-only array for the whole group, so replicated
  results are bit-identical by construction).

Level S execution
-----------------
Each device runs the function as a generator over a precomputed plan (per op: kind,
implementation, operands, results, expected result types); plain ops call the xDSL
implementations directly (cheaper than `Interpreter.run_op`, measured in
bench/interpreter.py); other region-free ops with a stock xDSL implementation (`arith`
on scalars) go through `Interpreter.run_op`. `scf.if`, `scf.for` and `func.call` run
their regions with `yield from`, so collectives may sit inside them. Every result's shape
and dtype is checked against its type (`check_types`, on by default: the oracle must not
drift silently).

A collective (sync or `_start`) is a rendezvous: the device yields and waits until every
member of its group (by `CollectiveOp.device_groups()`, rank = position in the group)
waits at a collective over the same group; then the group fires if all members' ops
agree (same op name, kind, dims, shift/pairs, operand and result types; different ops
with equal signatures, e.g. in two branches, may meet) and is a *collective mismatch*
error naming devices and ops if not. A `_start` op rendezvous at the start (collectives
are issued in program order, as XLA requires) and yields a future; `collective.done`
unwraps it. A future consumed twice, or never (checked when all devices finish), is an
error naming the op and devices. When no device can run and some wait, the run is a
*deadlock*, reported with each waiting device, the op it waits at (file:line:col), its
group, and which members finished or wait elsewhere. Nothing hangs (except a program
that loops forever on its own).

Timing (`timing`, `Executor(..., chip=...)`, `shardc-run --chip/--trace/--timing-only`)
--------------------------------------------------------------------------------------
With a chip, every run is also timed: each compute op (`hlo`, `spmd.constraint`) takes
`CostModel.op_cost(op).time` on its device's compute stream (computed once per op at
plan time); a collective is issued when the compute stream reaches it and starts when
every group member has issued it and all members' engines are free (start = max of
arrivals and engine-free times), taking `CostModel.collective_time(op)`; a sync
collective blocks the compute stream until it ends, a `_start` only at its `done`; a
device's engine runs one collective at a time in issue order (any number may be
outstanding). Peak memory counts live tensors in program order (arguments throughout,
other values until their last use, `_start` operands until the `done`). The timing module
docstring defines every report number. `abstract=True` (`--timing-only`) computes no
values: arguments are None, results larger than `SMALL_ELEMENTS` elements or depending on
an unknown value are None, small known values (constants, `axis_index`, scalar `arith`)
are still computed so that loops and device-dependent branches run; a branch on an
unknown value is an error; collectives still meet (deadlocks and mismatches are still
found) and are timed.

Inputs and outputs (`io`, `shardc-run`)
---------------------------------------
Global arrays `in_K` / `out_K`; per-device `in_K.D` / `out_K.D` for `spmd.per_device_io`.
A partitioned function's global shapes are its local shapes times the axes splitting
each dimension. Splitting gives each device block `shard_index` of every split dimension
(views, shared by replicas); for an `unreduced` argument, devices at coordinate 0 on the
unreduced axes hold the value and the others zeros. Assembly concatenates blocks by shard
index, requires replicated copies to be bit-identical (else names the first device that
differs) and sums unreduced partial values in rank order. Random inputs (`--seed`) are
drawn from the program before `-p`: standard normal for floats (drawn in f32, f64 for
f64, rounded to the type), integers in [-8, 8), fair bools, argument by argument. bf16
arrays in .npz files are raw 2-byte values (`|V2`, how numpy saves ml_dtypes); inputs
accept them.
"""
