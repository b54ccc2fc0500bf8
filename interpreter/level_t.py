"""
The level-T interpreter: a discrete-event simulation of N TPU chips running one `tpu`
kernel each (DESIGN.md "The interpreter and the simulated machine", issue 7 item 3).

```python
from shardc.interpreter.level_t import run_level_t
outputs, report = run_level_t(module, inputs, chip="v5e")
_, report = run_level_t(module, [[None] * n_args] * n, chip="v5p", values=False)  # timing only
```
The timing mode (`values=False`) simulates the same machine without any bytes: for
messages too large to hold N copies of (bench/collectives.py: 16 devices x 256 MiB) and
real-size programs (bench/level_t_speed.py: a bf16 transformer layer, batch 8, sequence
2048, model 4096, on a v5e 2x4, in seconds and a few hundred MiB). Buffers are shapes
and strides over no storage (`level_t_machine.unmaterialized`), DMAs byte counts; the
simulator's cost follows the DMAs, blocks and ops it runs, not their bytes: vector
clocks have one component per device (`level_t_races`), overlaps compare index boxes,
and a DMA start or end reschedules only the transfers whose share changed.

What is a level-T program
-------------------------
A `func.func` is a level-T kernel if it carries the unit attribute `tpu.kernel` or if its
body uses any `tpu` op (`is_level_t`). Every device of the module's `spmd.mesh` (one
device without a mesh) runs the kernel. Its arguments are HBM buffers (numpy arrays, one
per argument and device); the kernel writes its results into them, so `outputs[d][k]` is
argument k's final contents on device d. An argument given as None starts uninitialized:
NaN for floats, the largest value for integers (as Pallas interpret mode), so that bytes
never written show. The kernel returns nothing (results of `func.return` are ignored).

The machine
-----------
* Memory: per device, the argument buffers (HBM), `tpu.alloc` buffers (VMEM/SMEM; bytes
  are counted against the chip's VMEM and SMEM, per device), and
  semaphores (integer counters, zero at allocation). References are numpy views, so
  `tpu.memref_slice` / `tpu.memref_reshape` alias their buffer.
* Scratch (`tpu.alloc`) exists from kernel entry, as Mosaic's scratch operands: a peer
  may push into or signal it before its owner reaches the `tpu.alloc` (whose bytes are
  counted when the owner reaches it). Remote references name the same allocation and
  offsets on the target device (the tpu dialect's rule).
* `shardc-run FILE` runs a level-T kernel here (`tools/shardc_run.py`). A kernel
  `lower-to-tpu` made exchanges the arrays of its level-S function (global ones split and
  assembled by the shardings it keeps; `-p tpu-pipeline`, `--check`, `--timing-only`,
  `--plot` work; see `shardc_run.execute_level_t`). A hand-written kernel: `--inputs`
  gives `in_K.D` for every argument, `--outputs` gets `out_K.D`, `--report-json` the
  report, `--trace` the trace; `-p`, `--check`, `--timing-only`, `--plot` are refused.
* Scalars: `memref.load` / `memref.store` of one element (an SMEM offset, say).
* Devices are Python generators. Pure ops (arith, math, vectors, loads/stores, matmul,
  reduce) advance the device's own clock by their cost (`op_time`); before an op with an
  effect on other devices (DMA start and wait, semaphore signal and wait, barrier) the
  device yields to the event loop, which resumes it when global time reaches its clock,
  so every effect happens at a consistent simulated time.
* DMAs (`Flows`): a local DMA streams over the device's HBM at `chip.hbm_bw`; a remote
  DMA streams over the ICI links of its dimension-order route on the torus (mesh axes
  map to torus axes in order, extra axes fold into the last, as `hardware.topology`;
  wraparound per `Chip.has_wraparound`; on a ring the shorter way round, ties going up)
  at `chip.ici_link_bw` per link per direction. Concurrent transfers on one directed link
  (or one HBM) share it equally; a transfer's rate is the smallest share along its path,
  recomputed whenever a transfer starts or ends. A remote DMA completes `hops *
  chip.hop_latency` after its last byte leaves (cut-through), so an uncontended transfer
  takes `hops * T + bytes / W` as `topology.transfer_times`.
  When the last byte leaves, the source bytes are read and the send semaphore counts the
  bytes; at completion they are written to the target and the receive semaphore (on the
  target device) counts them.
* `tpu.dma_wait %sem, %ref` blocks until `%sem` holds the byte size of `%ref`, then
  subtracts it; `tpu.sem_wait` likewise with a count. `tpu.sem_signal` adds at once (a
  remote signal is not delayed: a modelling simplification). `tpu.barrier` releases its
  group when every member has arrived.
* Compute costs: `tpu.matmul` 2mkn FLOPs at the MXU peak; elementwise, reduce, transpose
  one FLOP per element at `Chip.vpu_flops`; `tpu.load`/`tpu.store` their bytes at
  `chip.vmem_bw_factor * chip.hbm_bw`; scalar/index ops and DMA issue take no time.

Checks (each an `InterpreterError` at the op's `file:line:col`, naming device and buffer)
-------------------------------------------------------------------------------------------
* deadlock: the event queue is empty and some device is blocked; lists every blocked
  device, the op, the semaphore (with its value and the bytes/count it waits for; a wait
  for more bytes than will ever arrive says so) or barrier (who has not arrived);
* data race (happens-before with vector clocks, as Pallas interpret mode, but exact: every
  DMA is its own thread): a DMA's read of its source and write of its target, loads and
  stores are accesses; a DMA's clock starts from its issuer's, its completion is
  released into the semaphores it signals, a wait acquires the semaphore's clock, a
  barrier joins its members' clocks. Two accesses to overlapping bytes of one buffer, at
  least one a write, neither happening before the other, are a race;
* a semaphore non-zero at exit; if its bytes come from DMAs nobody waited for, the
  message is "DMA never waited" naming the `tpu.dma_start`;
* byte count mismatch: a `dma_wait` that would take part of one DMA's bytes (its size
  differs from the DMAs that signalled the semaphore); waiting for more than ever arrives
  is reported by the deadlock check;
* VMEM (or SMEM) over capacity at a `tpu.alloc`: device, op, buffer, size, in use, capacity;
* out of bounds: `tpu.memref_slice`, `tpu.load`, `tpu.store` offsets outside their
  memref; a remote device id outside the mesh; `memref_reshape` of a non-contiguous view.

Level S (`CostModel.collective_time`) costs the same rings on the same torus
(`hardware.topology`: routes, hop latency per step, credits, link shares) in closed form,
so the two agree within a few per cent per collective; they differ where the kernel runs
things level S does not model: level S runs one collective at a time per device and
lets a `_start` overlap compute until its `done` (the kernel runs a ring's steps after
the first at the `done`), and costs compute at its roofline (the kernel's tiled loops
add each op's first fetch and last write-back).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from shardc.diagnostics import InterpreterError
from shardc.hardware.chips import Chip
from shardc.interpreter.level_t_machine import Buffer, Dma, Ref, Semaphore, SemRef
from shardc.interpreter.level_t_sim import Simulator
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

KERNEL_ATTR = "tpu.kernel"
"""Unit attribute marking a level-T kernel (optional: any `tpu` op marks it too)."""


def is_level_t(function: func.FuncOp) -> bool:
    """A kernel: marked `tpu.kernel`, or its body uses a `tpu` op."""
    if KERNEL_ATTR in function.attributes:
        return True
    return any(op.dialect_name() == "tpu" for op in function.walk())


def find_kernel(module: ModuleOp, entry: str | None = None) -> func.FuncOp:
    funcs = [op for op in module.body.block.ops if isinstance(op, func.FuncOp)]
    if entry is not None:
        for f in funcs:
            if f.sym_name.data == entry:
                return f
        raise InterpreterError(f"error: no function @{entry}")
    kernels = [f for f in funcs if is_level_t(f)]
    for f in kernels:
        if f.sym_name.data == "main":
            return f
    if len(kernels) == 1:
        return kernels[0]
    raise InterpreterError(
        "error: expected one level-T kernel (a func.func using tpu ops), found "
        f"{len(kernels)}; name one with entry="
    )


# API ------------------------------------------------------------------------------------


def run_level_t(
    module: ModuleOp,
    inputs: Sequence[Sequence[np.ndarray | None]],
    *,
    chip: Chip | str = "v5e",
    entry: str | None = None,
    trace: bool = False,
    values: bool = True,
    torus: Sequence[int] | None = None,
) -> tuple[list[list[np.ndarray]], dict[str, Any]]:
    """
    Run the module's kernel on every device: `inputs[d][k]` is argument k on device d
    (None: uninitialized). Returns every argument's final contents per device and the
    report (`step_time_s`, bytes, ...; with `trace=True` also `report["trace"]`, Chrome
    trace JSON). Raises `InterpreterError` on any check.

    `values=False` is the timing mode, for messages too large to hold N copies of: the
    same simulation (every DMA, semaphore, barrier, clock and link share; every check that
    does not need values: deadlock, races, semaphores at exit, byte counts, VMEM
    capacity, bounds), but buffers have no storage (shape-only views: nothing
    proportional to tensor sizes is allocated), DMAs move no bytes, vector ops yield
    shape-only placeholders and `memref.load` gives 0. Control flow must not depend on
    loaded values (true of every kernel `lower-to-tpu` emits). The inputs'
    contents are ignored (None is fine) and the outputs list is empty.

    `torus` overrides the physical machine (default: the mesh's axes map to torus axes,
    as `topology.torus_lengths`): axis lengths whose product is the device count;
    device d sits at coordinates `unravel(d, torus)`, wraparound per `Chip.has_wraparound`.
    How a program over one mesh shape runs on chips wired as another (a 1-D ring over the
    16 chips of a 4x4 torus).
    """
    function = find_kernel(module, entry)
    sim = Simulator(module, chip, trace=trace, values=values, torus=torus)
    outputs, report = sim.run(function, inputs)
    if trace:
        report["trace"] = sim.trace()
    return outputs, report


__all__ = [
    "KERNEL_ATTR",
    "Buffer",
    "Dma",
    "Ref",
    "SemRef",
    "Semaphore",
    "Simulator",
    "find_kernel",
    "is_level_t",
    "run_level_t",
]
