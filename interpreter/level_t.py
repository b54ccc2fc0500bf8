"""
The level-T interpreter: a discrete-event simulation of N TPU chips running one `tpu`
kernel each (DESIGN.md "The interpreter and the simulated machine", issue 7 item 3).

```python
from shardc.interpreter.level_t import run_level_t
outputs, report = run_level_t(module, inputs, chip="v5e")
_, report = run_level_t(module, [[None] * n_args] * n, chip="v5p", values=False)  # timing only
```
The timing mode (`values=False`) simulates the same machine without any bytes: for
messages too large to hold N copies of (bench/collectives.py: 16 devices x 256 MiB).

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
  map to torus axes in order, extra axes fold into the last, as `hardware.cost`;
  wraparound per `Chip.has_wraparound`; on a ring the shorter way round, ties going up)
  at `chip.ici_link_bw` per link per direction. Concurrent transfers on one directed link
  (or one HBM) share it equally; a transfer's rate is the smallest share along its path,
  recomputed whenever a transfer starts or ends. A remote DMA completes `hops *
  chip.hop_latency` after its last byte leaves (cut-through), so an uncontended transfer
  takes `hops * T + bytes / W` as `CostModel.permute_time`.
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

Modelling differences from `CostModel.collective_time` (level S): the cost model charges
a ring collective `max(latency, bytes / W)`; the simulation pays the per-hop latency on
every step in addition to the transfer (`steps * (hops * T) + bytes / W`), plus the
local copies the kernel does (at HBM bandwidth). For messages well above
`W * T` (45 kB on v5e) per step both agree within a few per cent.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from shardc.diagnostics import InterpreterError, error_at, op_position
from shardc.dialects import spmd, tpu
from shardc.dialects.tpu import MemorySpace
from shardc.hardware.chips import Chip, get_chip
from shardc.hardware.cost import MXU_DTYPE_FACTOR, CostModel
from shardc.interpreter.values import convert as _hlo_convert
from shardc.interpreter.values import dtype_of
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    VectorType,
)
from xdsl.ir import Block, Operation, SSAValue

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


# Memory ---------------------------------------------------------------------------------


class Buffer:
    """One allocation on one device."""

    __slots__ = ("device", "name", "space", "array", "accesses", "op")

    def __init__(self, device: int, name: str, space: MemorySpace, array: np.ndarray, op):
        self.device = device
        self.name = name
        self.space = space
        self.array = array
        self.accesses: list[_Access] = []
        self.op = op

    def __repr__(self) -> str:
        return f"{self.name} ({self.space.value}) on device {self.device}"


@dataclass(frozen=True)
class Ref:
    """A view of a buffer: the numpy view and how to name it."""

    buffer: Buffer
    view: np.ndarray
    label: str

    @property
    def nbytes(self) -> int:
        return self.view.nbytes

    def describe(self) -> str:
        return f"'{self.label}' ({self.buffer.space.value}, {self.nbytes} bytes) on device {self.buffer.device}"


class Semaphore:
    __slots__ = ("device", "label", "dma", "value", "vc", "pending", "op")

    def __init__(self, device: int, label: str, dma: bool, op):
        self.device = device
        self.label = label
        self.dma = dma
        self.value = 0
        self.vc: dict[Any, int] = {}
        self.pending: list[list[Any]] = []
        """DMA semaphores: [dma, bytes not yet waited] in arrival order."""
        self.op = op

    def describe(self) -> str:
        return f"semaphore '{self.label}' on device {self.device}"


@dataclass(frozen=True)
class SemRef:
    """A semaphore array (or one semaphore) as the kernel names it on its device."""

    sems: tuple[Semaphore, ...]
    shape: tuple[int, ...]
    base: str
    offset: int = 0
    """Flat offset of this view into the allocation (for the same slice on other devices)."""
    alloc: Operation | None = None


@dataclass
class _Access:
    thread: Any
    clock: int
    write: bool
    view: np.ndarray
    what: str
    """e.g. "tpu.store at f:3:4 on device 1"."""


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    return np.shares_memory(a, b)


def _contains(outer: np.ndarray, inner: np.ndarray) -> bool:
    if not outer.flags.c_contiguous:
        return False
    lo, hi = np.lib.array_utils.byte_bounds(outer)
    ilo, ihi = np.lib.array_utils.byte_bounds(inner)
    return lo <= ilo and ihi <= hi


# DMAs and the network -------------------------------------------------------------------


class Dma:
    __slots__ = (
        "id",
        "op",
        "device",
        "target",
        "src",
        "dst",
        "send",
        "recv",
        "nbytes",
        "links",
        "hops",
        "remaining",
        "rate",
        "last",
        "version",
        "start",
        "drained",
        "data",
        "vc",
        "done",
    )

    def __init__(
        self,
        id: int,
        op: Operation,
        device: int,
        target: int,
        src: Ref,
        dst: Ref,
        send: Semaphore | None,
        recv: Semaphore,
        links: list[Any],
        hops: int,
        now: float,
    ):
        self.id = id
        self.op = op
        self.device = device
        self.target = target
        self.src = src
        self.dst = dst
        self.send = send
        self.recv = recv
        self.nbytes = src.nbytes
        self.links = links
        self.hops = hops
        self.remaining = float(self.nbytes)
        self.rate = 0.0
        self.last = now
        self.version = 0
        self.start = now
        self.drained = now
        self.data: np.ndarray | None = None
        self.vc: dict[Any, int] = {}
        self.done = False


class Flows:
    """Active transfers on shared resources (directed ICI links, per-device HBM)."""

    def __init__(self, capacity: Mapping[str, float]):
        self.capacity = capacity
        self.active: list[Dma] = []

    def _advance(self, now: float) -> None:
        for f in self.active:
            f.remaining = max(0.0, f.remaining - f.rate * (now - f.last))
            f.last = now

    def _rerate(self) -> None:
        count: dict[Any, int] = {}
        for f in self.active:
            for link in f.links:
                count[link] = count.get(link, 0) + 1
        for f in self.active:
            f.rate = min(self.capacity[link[0]] / count[link] for link in f.links)
            f.version += 1

    def change(self, now: float, add: Dma | None = None, remove: Dma | None = None) -> list[Dma]:
        """Add/remove a flow at `now`; returns the flows whose drain time changed."""
        self._advance(now)
        if add is not None:
            self.active.append(add)
        if remove is not None:
            self.active.remove(remove)
        self._rerate()
        return list(self.active)


# The simulator ---------------------------------------------------------------------------


class _Blocked(Exception):
    pass


@dataclass
class _Dev:
    index: int
    clock: float = 0.0
    busy: float = 0.0
    done: bool = False
    waiting: tuple[Operation, str, Any] | None = None
    """(op, kind, object) while blocked: kind "sem" (object: (Semaphore, amount)) or "barrier"."""
    wait_since: float = 0.0
    vc: dict[Any, int] = field(default_factory=dict)
    vmem: int = 0
    smem: int = 0
    peak_vmem: int = 0
    ici_bytes: int = 0
    local_bytes: int = 0
    token: int = 0
    """Only the latest scheduled resume of a device counts (wakes may be pushed twice)."""
    trace: list[tuple[str, str, float, float, dict[str, Any]]] = field(default_factory=list)
    allocs: dict[Operation, Any] = field(default_factory=dict)
    early: set[Operation] = field(default_factory=set)
    """Allocations a peer touched before this device reached their `tpu.alloc`."""


class Simulator:
    """Runs one kernel on every device of the mesh; see the module docstring."""

    def __init__(
        self,
        module: ModuleOp,
        chip: Chip | str = "v5e",
        filename: str | None = None,
        trace: bool = False,
        values: bool = True,
        torus: Sequence[int] | None = None,
    ):
        self.module = module
        self.values = values
        """False: the timing mode (see `run_level_t`); no bytes are read or written."""
        self.chip = get_chip(chip) if isinstance(chip, str) else chip
        self.filename = filename or "<input>"
        self.mesh: spmd.MeshAttr | None = None
        for op in module.body.block.ops:
            if isinstance(op, spmd.MeshOp):
                self.mesh = op.mesh
                break
        self.n = self.mesh.device_count if self.mesh is not None else 1
        if torus is not None:
            if math.prod(torus) != self.n:
                raise InterpreterError(
                    f"{self.filename}: error: a torus of {'x'.join(map(str, torus))} chips for "
                    f"{self.n} devices"
                )
            self.torus = list(torus)
        elif self.mesh is not None:
            self.torus = CostModel(self.chip, self.mesh).torus_axis_lengths()
        else:
            self.torus = [1]
        self.wrap = [self.chip.has_wraparound(length) for length in self.torus]
        self.record_trace = trace

    # Messages -----------------------------------------------------------------------

    def where(self, op: Operation) -> str:
        return op_position(op) or self.filename

    def error(self, op: Operation, device: int | None, message: str) -> InterpreterError:
        prefix = f"on device {device}: " if device is not None else ""
        text = prefix + message
        if op_position(op) is not None:
            return InterpreterError(str(error_at(op, text)))
        return InterpreterError(f"{self.filename}: error: '{op.name}' op {text}")

    def at(self, op: Operation) -> str:
        return f"{op.name} at {self.where(op)}"

    # Routing ------------------------------------------------------------------------

    def coords(self, device: int) -> tuple[int, ...]:
        return tuple(int(c) for c in np.unravel_index(device, self.torus))

    def route(self, src: int, dst: int) -> list[tuple[str, int, int, int]]:
        """Directed links (\"ici\", node, axis, direction) of the dimension-order route."""
        here = list(self.coords(src))
        goal = self.coords(dst)
        links: list[tuple[str, int, int, int]] = []
        for axis, length in enumerate(self.torus):
            d = goal[axis] - here[axis]
            if d == 0:
                continue
            if self.wrap[axis]:
                up = d % length
                step = 1 if up <= length - up else -1
                count = up if step == 1 else length - up
            else:
                step = 1 if d > 0 else -1
                count = abs(d)
            for _ in range(count):
                node = int(np.ravel_multi_index(here, self.torus))
                links.append(("ici", node, axis, step))
                here[axis] = (here[axis] + step) % length
        return links

    # Running ------------------------------------------------------------------------

    def run(
        self, function: func.FuncOp, inputs: Sequence[Sequence[np.ndarray | None]]
    ) -> tuple[list[list[np.ndarray]], dict[str, Any]]:
        n_args = len(function.body.block.args)
        if len(inputs) != self.n:
            raise InterpreterError(
                f"{self.filename}: error: the kernel runs on {self.n} devices, got inputs "
                f"for {len(inputs)}"
            )
        self.devs = [_Dev(d) for d in range(self.n)]
        self.now = 0.0
        self.events: list[tuple[float, int, str, Any]] = []
        self.seq = 0
        self.dmas: list[Dma] = []
        self.flows = Flows({"ici": self.chip.ici_link_bw, "hbm": self.chip.hbm_bw})
        self.barriers: dict[tuple[Operation, tuple[int, ...]], set[int]] = {}
        self.sems: list[Semaphore] = []
        self.args: list[list[Buffer]] = []
        arg_types = function.function_type.inputs.data
        for d in range(self.n):
            if len(inputs[d]) != n_args:
                raise InterpreterError(
                    f"{self.filename}: error: @{function.sym_name.data} takes {n_args} "
                    f"arguments, device {d} got {len(inputs[d])}"
                )
            bufs = []
            for k, (ty, arr) in enumerate(zip(arg_types, inputs[d], strict=False)):
                assert isinstance(ty, MemRefType), f"kernel argument {k} is not a memref"
                shape, dtype = tuple(ty.get_shape()), dtype_of(ty.element_type)
                if not self.values:
                    data = _unmaterialized(shape, dtype)
                elif arr is None:
                    data = _uninitialized(shape, dtype)
                else:
                    data = np.array(arr, dtype=dtype, copy=True)
                    if data.shape != shape:
                        raise InterpreterError(
                            f"{self.filename}: error: argument {k} on device {d} has shape "
                            f"{data.shape}, the kernel expects {shape}"
                        )
                name = function.body.block.args[k].name_hint or f"arg{k}"
                space = tpu.memory_space_of(ty) or MemorySpace.HBM
                bufs.append(Buffer(d, name, space, data, None))
            self.args.append(bufs)
        gens = []
        for d in range(self.n):
            env = {
                a: Ref(b, b.array, b.name)
                for a, b in zip(function.body.block.args, self.args[d], strict=False)
            }
            gens.append(self._device(self.devs[d], function.body.block, env))
        self.gens = gens
        for d in range(self.n):
            self._schedule(d, 0.0)
        while self.events:
            t, _, kind, payload = heapq.heappop(self.events)
            self.now = max(self.now, t)
            if kind == "resume":
                self._resume(payload)
            elif kind == "drain":
                dma, version = payload
                if version == dma.version and not dma.done:
                    self._drained(dma)
            elif kind == "complete":
                self._complete(payload)
        blocked = [d for d in self.devs if not d.done]
        if blocked:
            raise self._deadlock(blocked)
        self._check_exit()
        outputs = [[b.array for b in bufs] for bufs in self.args] if self.values else []
        return outputs, self.report()

    def _push(self, t: float, kind: str, payload: Any) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, kind, payload))

    def _schedule(self, d: int, t: float) -> None:
        dev = self.devs[d]
        dev.token += 1
        self._push(t, "resume", (d, dev.token))

    def _resume(self, payload: tuple[int, int]) -> None:
        d, token = payload
        dev = self.devs[d]
        if dev.done or token != dev.token:
            return
        if dev.waiting is not None:
            if self.record_trace and self.now > dev.wait_since:
                dev.trace.append(("wait", dev.waiting[0].name, dev.wait_since, self.now, {}))
            dev.waiting = None
        dev.clock = max(dev.clock, self.now)
        try:
            next(self.gens[d])
        except StopIteration:
            dev.done = True

    def _wake(self, d: int) -> None:
        if self.devs[d].waiting is not None:
            self._schedule(d, self.now)

    # Devices -------------------------------------------------------------------------

    def _device(
        self, dev: _Dev, block: Block, env: dict[SSAValue, Any]
    ) -> Generator[None, None, None]:
        yield from self._run_block(dev, block, env)

    def _run_block(
        self, dev: _Dev, block: Block, env: dict[SSAValue, Any]
    ) -> Generator[None, None, Any]:
        for op in block.ops:
            if isinstance(op, scf.ForOp):
                lb, ub, st = (int(env[v]) for v in (op.lb, op.ub, op.step))
                carried = [env[v] for v in op.iter_args]
                body = op.body.block
                i = lb
                while i < ub:
                    env[body.args[0]] = i
                    for a, v in zip(body.args[1:], carried, strict=False):
                        env[a] = v
                    carried = yield from self._run_block(dev, body, env)
                    i += st
                for r, v in zip(op.results, carried, strict=False):
                    env[r] = v
            elif isinstance(op, scf.IfOp):
                region = op.true_region if bool(env[op.cond]) else op.false_region
                vals = []
                if region.blocks:
                    vals = yield from self._run_block(dev, region.block, env)
                for r, v in zip(op.results, vals, strict=False):
                    env[r] = v
            elif isinstance(op, scf.YieldOp):
                return [env[v] for v in op.operands]
            elif isinstance(op, func.ReturnOp):
                return [env[v] for v in op.operands]
            elif op.name in _SYNC_OPS:
                # Effects on the shared machine happen at a consistent global time.
                if dev.clock > self.now:
                    dev.waiting = None
                    self._schedule(dev.index, dev.clock)
                    yield
                yield from self._effect(dev, op, env)
            else:
                self._pure(dev, op, env)
        return []

    def _compute(self, dev: _Dev, op: Operation, t: float) -> None:
        if t > 0:
            if self.record_trace:
                dev.trace.append(
                    ("compute", op.name, dev.clock, dev.clock + t, {"at": self.where(op)})
                )
            dev.clock += t
            dev.busy += t

    # Pure ops ------------------------------------------------------------------------

    def _pure(self, dev: _Dev, op: Operation, env: dict[SSAValue, Any]) -> None:
        d = dev.index
        if isinstance(op, tpu.LoadOp):
            ref: Ref = env[op.ref]
            idx = [int(env[v]) for v in op.indices]
            view = self._block(op, d, ref, idx, op.result.type.get_shape(), "load")
            self._access(dev, op, ref.buffer, view, write=False, thread=d)
            env[op.result] = (
                np.array(view, copy=True) if self.values else _placeholder(view.shape, view.dtype)
            )
            self._compute(dev, op, view.nbytes / (self.chip.vmem_bw_factor * self.chip.hbm_bw))
            return
        if isinstance(op, tpu.StoreOp):
            ref = env[op.ref]
            idx = [int(env[v]) for v in op.indices]
            value = env[op.value]
            view = self._block(op, d, ref, idx, value.shape, "store")
            self._access(dev, op, ref.buffer, view, write=True, thread=d)
            if self.values:
                view[...] = value
            self._compute(dev, op, view.nbytes / (self.chip.vmem_bw_factor * self.chip.hbm_bw))
            return
        if isinstance(op, memref.LoadOp):
            # A scalar (from SMEM, say: a DMA'd offset); reading it takes no time.
            ref = env[op.memref]
            idx = [int(env[v]) for v in op.indices]
            view = self._block(op, d, ref, idx, [1] * len(idx), "load") if idx else ref.view[...]
            self._access(dev, op, ref.buffer, view, write=False, thread=d)
            env[op.res] = view.reshape(()).item()
            return
        if isinstance(op, memref.StoreOp):
            ref = env[op.memref]
            idx = [int(env[v]) for v in op.indices]
            view = self._block(op, d, ref, idx, [1] * len(idx), "store") if idx else ref.view[...]
            self._access(dev, op, ref.buffer, view, write=True, thread=d)
            if self.values:
                view[...] = env[op.value]
            return
        if isinstance(op, tpu.MemRefSliceOp):
            src = env[op.source]
            idx = [int(env[v]) for v in op.indices]
            if isinstance(src, SemRef):
                env[op.result] = self._sem_slice(op, d, src, idx)
            else:
                shape = op.result.type.get_shape()
                view = self._block(op, d, src, idx, shape, "slice")
                env[op.result] = Ref(src.buffer, view, f"{src.label}[{', '.join(map(str, idx))}]")
            return
        if isinstance(op, tpu.MemRefReshapeOp):
            src = env[op.source]
            if not src.view.flags.c_contiguous:
                raise self.error(op, d, f"reshape of {src.describe()}, which is not contiguous")
            env[op.result] = Ref(
                src.buffer, src.view.reshape(op.result.type.get_shape()), src.label
            )
            return
        if isinstance(op, tpu.AllocOp):
            env[op.result] = self._alloc(dev, op)
            return
        if isinstance(op, tpu.DeallocOp):
            self._dealloc(dev, op, env[op.ref])
            return
        if isinstance(op, tpu.DeviceIdOp):
            env[op.result] = d
            return
        if isinstance(op, tpu.AxisIndexOp):
            mesh = self.mesh
            assert mesh is not None
            coords = np.unravel_index(d, tuple(mesh.shape))
            env[op.result] = int(coords[list(mesh.names).index(op.axis.data)])
            return
        if not self.values and any(isinstance(r.type, VectorType) for r in op.results):
            # Timing mode: vector values are shape-only placeholders; only the cost counts.
            self._placeholders(dev, op, env)
            return
        if isinstance(op, tpu.MatmulOp):
            lhs, rhs, acc = env[op.lhs], env[op.rhs], env[op.acc]
            prod = np.matmul(lhs.astype(acc.dtype), rhs.astype(acc.dtype))
            env[op.result] = (acc + prod).astype(acc.dtype)
            self._compute(dev, op, self._vector_cost(op))
            return
        if isinstance(op, tpu.ReduceOp):
            src, acc = env[op.source], env[op.acc]
            ufunc = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[
                op.kind.data
            ]
            red = ufunc.reduce(src, axis=tuple(op.reduced_dims))
            env[op.result] = np.asarray(ufunc(acc, red)).astype(acc.dtype)
            self._compute(dev, op, self._vector_cost(op))
            return
        if isinstance(op, tpu.TransposeOp):
            env[op.result] = np.transpose(env[op.source], op.dims)
            return
        if isinstance(op, tpu.IotaOp):
            ty = op.result.type
            shape = tuple(ty.get_shape())
            dim = op.dim.value.data
            arr = np.arange(shape[dim]).reshape([-1 if i == dim else 1 for i in range(len(shape))])
            env[op.result] = np.broadcast_to(arr, shape).astype(dtype_of(ty.element_type))
            return
        if isinstance(op, arith.ConstantOp):
            env[op.result] = _constant(op)
            return
        impl = _ARITH.get(op.name)
        if impl is None:
            raise self.error(op, d, "is not supported by the level-T simulator")
        args = [env[v] for v in op.operands]
        res_ty = op.results[0].type
        out = impl(op, args, res_ty)
        env[op.results[0]] = out
        self._compute(dev, op, self._vector_cost(op))

    def _vector_cost(self, op: Operation) -> float:
        """Seconds of a vector op, from its types alone (so both modes charge the same)."""
        if isinstance(op, tpu.MatmulOp):
            m, k = op.lhs.type.get_shape()  # type: ignore[union-attr]
            cols = op.rhs.type.get_shape()[1]  # type: ignore[union-attr]
            factor = MXU_DTYPE_FACTOR.get(str(op.lhs.type.element_type), 1.0)  # type: ignore[union-attr]
            return 2.0 * m * k * cols / (self.chip.flops_bf16 * factor)
        if isinstance(op, tpu.ReduceOp | tpu.TransposeOp):
            return math.prod(op.source.type.get_shape()) / self.chip.vpu_flops  # type: ignore[union-attr]
        if isinstance(op, tpu.IotaOp | arith.ConstantOp):
            return 0.0
        res_ty = op.results[0].type if op.results else None
        if isinstance(res_ty, VectorType):
            return math.prod(res_ty.get_shape()) / self.chip.vpu_flops
        return 0.0

    def _placeholders(self, dev: _Dev, op: Operation, env: dict[SSAValue, Any]) -> None:
        """
        Timing mode: a vector op's results become zero-stride arrays of their shape (its
        semantics are not consulted, so an op the valued mode does not know passes here).
        """
        for r in op.results:
            ty = r.type
            assert isinstance(ty, VectorType)
            env[r] = _placeholder(tuple(ty.get_shape()), dtype_of(ty.element_type))
        self._compute(dev, op, self._vector_cost(op))

    def _block(
        self, op: Operation, d: int, ref: Ref, idx: list[int], shape: Sequence[int], what: str
    ) -> np.ndarray:
        base = ref.view.shape
        lead = len(base) - len(shape)
        for i, (o, full) in enumerate(zip(idx, base, strict=False)):
            size = 1 if i < lead else shape[i - lead]
            if o < 0 or o + size > full:
                raise self.error(
                    op,
                    d,
                    f"out of bounds: {what} of {'x'.join(map(str, shape)) or 'scalar'} at "
                    f"[{', '.join(map(str, idx))}] of {ref.describe()} of shape "
                    f"{'x'.join(map(str, base))}: dimension {i} spans {o}..{o + size}, "
                    f"size {full}",
                )
        key = tuple(idx[:lead]) + tuple(
            slice(o, o + s) for o, s in zip(idx[lead:], shape, strict=False)
        )
        return ref.view[key] if key else ref.view[...]  # a rank-0 ref: its 0-d view

    def _sem_slice(self, op: Operation, d: int, src: SemRef, idx: list[int]) -> SemRef:
        rshape = op.result.type.get_shape()  # type: ignore[union-attr]
        lead = len(src.shape) - len(rshape)
        grid = np.arange(len(src.sems)).reshape(src.shape) if src.shape else np.arange(1)
        for i, (o, full) in enumerate(zip(idx, src.shape, strict=False)):
            size = 1 if i < lead else rshape[i - lead]
            if o < 0 or o + size > full:
                raise self.error(
                    op,
                    d,
                    f"out of bounds: slice at [{', '.join(map(str, idx))}] of semaphore "
                    f"array '{src.base}' of shape {'x'.join(map(str, src.shape))}",
                )
        key = tuple(idx[:lead]) + tuple(
            slice(o, o + s) for o, s in zip(idx[lead:], rshape, strict=False)
        )
        picked = np.asarray(grid[key]).reshape(-1)
        sems = tuple(src.sems[int(i)] for i in picked)
        return SemRef(sems, tuple(rshape), src.base, src.offset + int(picked[0]), src.alloc)

    def _allocation_on(self, target: int, op: Operation) -> Any:
        """
        Device `target`'s instance of the allocation made by `op`. Scratch exists from
        kernel entry (as Mosaic's scratch operands), so a device that pushes into or
        signals a peer that has not reached the `tpu.alloc` yet still finds it; the peer's
        own `tpu.alloc` then adopts it (and counts its bytes).
        """
        dev = self.devs[target]
        found = dev.allocs.get(op)
        if found is None:
            assert isinstance(op, tpu.AllocOp)
            found = self._alloc(dev, op, early=True)
            dev.early.add(op)
        return found

    def _alloc(self, dev: _Dev, op: tpu.AllocOp, early: bool = False) -> Any:
        if op in dev.early:
            dev.early.discard(op)
            found = dev.allocs[op]
            if isinstance(found, SemRef):
                return found
            self._count(dev, op, found.buffer.space, found.buffer.name, found.buffer.array.nbytes)
            return found
        ty = op.result.type
        name = op.result.name_hint or f"alloc@{self.where(op)}"
        if isinstance(ty, tpu.SemaphoreTypeBase):
            shape = tuple(ty.get_shape())
            count = math.prod(shape)
            dma = isinstance(ty, tpu.DMASemaphoreType)
            sems = tuple(
                Semaphore(
                    dev.index,
                    name
                    if not shape
                    else f"{name}[{', '.join(map(str, np.unravel_index(i, shape)))}]",
                    dma,
                    op,
                )
                for i in range(count)
            )
            self.sems.extend(sems)
            ref = SemRef(sems, shape, name, 0, op)
            dev.allocs[op] = ref
            return ref
        assert isinstance(ty, MemRefType)
        space = tpu.memory_space_of(ty) or MemorySpace.VMEM
        shape, dtype = tuple(ty.get_shape()), dtype_of(ty.element_type)
        size = tpu.ref_bytes(ty)
        if not early:
            self._count(dev, op, space, name, size)
        data = _uninitialized(shape, dtype) if self.values else _unmaterialized(shape, dtype)
        buf = Buffer(dev.index, name, space, data, op)
        ref = Ref(buf, buf.array, name)
        dev.allocs[op] = ref
        return ref

    def _count(self, dev: _Dev, op: Operation, space: MemorySpace, name: str, size: int) -> None:
        if space is MemorySpace.VMEM:
            cap, used = self.chip.vmem_bytes, dev.vmem
        else:
            cap, used = self.chip.smem_bytes, dev.smem
        if used + size > cap:
            raise self.error(
                op,
                dev.index,
                f"{space.value.upper()} over capacity: allocating '{name}' ({size} bytes) with "
                f"{used} bytes in use needs {used + size} bytes, the {self.chip.name} has "
                f"{cap} bytes of {space.value.upper()}",
            )
        if space is MemorySpace.VMEM:
            dev.vmem += size
            dev.peak_vmem = max(dev.peak_vmem, dev.vmem)
        else:
            dev.smem += size

    def _dealloc(self, dev: _Dev, op: Operation, ref: Any) -> None:
        if isinstance(ref, SemRef):
            for s in ref.sems:
                self._check_sem_zero(s, op)
            return
        size = ref.buffer.array.nbytes
        if ref.buffer.space is MemorySpace.VMEM:
            dev.vmem -= size
        else:
            dev.smem -= size

    # Race detection ------------------------------------------------------------------

    def _access(
        self,
        dev_or_none: _Dev | None,
        op: Operation,
        buf: Buffer,
        view: np.ndarray,
        write: bool,
        thread: Any,
        vc: dict[Any, int] | None = None,
        what: str | None = None,
    ) -> None:
        if vc is None:
            assert dev_or_none is not None
            vc = dev_or_none.vc
        mine = vc.get(thread, 0)
        desc = what or f"{'store' if write else 'load'} ({self.at(op)}) on device {buf.device}"
        keep: list[_Access] = []
        for a in buf.accesses:
            ordered = vc.get(a.thread, 0) >= a.clock
            if not ordered and (write or a.write) and a.thread != thread and _overlap(a.view, view):
                raise self.error(
                    op,
                    buf.device if dev_or_none is None else dev_or_none.index,
                    f"data race on buffer '{buf.name}' ({buf.space.value}) of device "
                    f"{buf.device}: the {desc} {'writes' if write else 'reads'} bytes that the "
                    f"{a.what} {'writes' if a.write else 'reads'}, and neither happens "
                    "before the other (no wait, semaphore or barrier orders them)",
                )
            if ordered and (write or not a.write) and _contains(view, a.view):
                # Superseded: whatever races with `a` also races with this access (it
                # happens after `a`, covers its bytes, and writes if `a` did).
                continue
            keep.append(a)
        keep.append(_Access(thread, mine, write, view, desc))
        buf.accesses = keep

    # Effects ------------------------------------------------------------------------

    def _effect(
        self, dev: _Dev, op: Operation, env: dict[SSAValue, Any]
    ) -> Generator[None, None, None]:
        d = dev.index
        if isinstance(op, tpu.DMAStartOp):
            self._dma_start(dev, op, env)
            return
        if isinstance(op, tpu.DMAWaitOp):
            sem = self._one_sem(env[op.sem])
            ref: Ref = env[op.ref]
            amount = ref.nbytes
            while sem.value < amount:
                yield from self._block_on(dev, op, "sem", (sem, amount))
            self._take_dma(dev, op, sem, amount)
            return
        if isinstance(op, tpu.SemSignalOp):
            amount = int(env[op.amount])
            src = env[op.sem]
            target = d
            if op.device is not None:
                target = self._device_id(op, d, int(env[op.device]))
            sem = self._remote_sem(op, d, src, target)
            sem.value += amount
            _join(sem.vc, dev.vc)
            _tick(dev.vc, d)
            for other in self.devs:
                if (
                    other.waiting is not None
                    and other.waiting[1] == "sem"
                    and other.waiting[2][0] is sem
                ):
                    self._wake(other.index)
            return
        if isinstance(op, tpu.SemWaitOp):
            sem = self._one_sem(env[op.sem])
            amount = int(env[op.amount])
            while sem.value < amount:
                yield from self._block_on(dev, op, "sem", (sem, amount))
            sem.value -= amount
            _join(dev.vc, sem.vc)
            return
        if isinstance(op, tpu.BarrierOp):
            group = None
            for g in op.device_groups(self.n):
                if d in g:
                    group = tuple(g)
            if group is None:
                return
            key = (op, group)
            arrived = self.barriers.setdefault(key, set())
            arrived.add(d)
            if len(arrived) == len(group):
                del self.barriers[key]
                merged: dict[Any, int] = {}
                for m in group:
                    _join(merged, self.devs[m].vc)
                for m in group:
                    self.devs[m].vc = dict(merged)
                    _tick(self.devs[m].vc, m)
                    if m != d:
                        self._wake(m)
                return
            while d in self.barriers.get(key, ()):
                yield from self._block_on(dev, op, "barrier", (key, group))
            return
        raise self.error(op, d, "is not supported by the level-T simulator")

    def _block_on(
        self, dev: _Dev, op: Operation, kind: str, obj: Any
    ) -> Generator[None, None, None]:
        dev.waiting = (op, kind, obj)
        dev.wait_since = self.now
        yield

    def _one_sem(self, ref: SemRef) -> Semaphore:
        assert len(ref.sems) == 1, "semaphore operands are single semaphores"
        return ref.sems[0]

    def _device_id(self, op: Operation, d: int, target: int) -> int:
        if not 0 <= target < self.n:
            raise self.error(
                op, d, f"device id {target} is out of range (the mesh has {self.n} devices)"
            )
        return target

    def _remote_sem(self, op: Operation, d: int, ref: SemRef, target: int) -> Semaphore:
        """The semaphore `ref` denotes in the kernel instance on device `target`."""
        if target == d:
            return self._one_sem(ref)
        assert ref.alloc is not None
        return self._allocation_on(target, ref.alloc).sems[ref.offset]

    def _remote_ref(self, op: Operation, d: int, ref: Ref, target: int) -> Ref:
        """The same view of the same allocation on device `target`."""
        if target == d:
            return ref
        buf = ref.buffer
        if buf.op is None:
            other_buf = self.args[target][self.args[d].index(buf)]
        else:
            other_buf = self._allocation_on(target, buf.op).buffer
        offset = ref.view.__array_interface__["data"][0] - buf.array.__array_interface__["data"][0]
        view = np.lib.stride_tricks.as_strided(
            other_buf.array.reshape(-1)[offset // buf.array.itemsize :],
            shape=ref.view.shape,
            strides=ref.view.strides,
        )
        return Ref(other_buf, view, ref.label)

    # DMAs ---------------------------------------------------------------------------

    def _dma_start(self, dev: _Dev, op: tpu.DMAStartOp, env: dict[SSAValue, Any]) -> None:
        d = dev.index
        src: Ref = env[op.src]
        dst: Ref = env[op.dst]
        target = d
        if op.device is not None:
            target = self._device_id(op, d, int(env[op.device]))
        dst = self._remote_ref(op, d, dst, target)
        recv = self._remote_sem(op, d, env[op.recv_sem], target)
        send = self._one_sem(env[op.send_sem]) if op.send_sem is not None else None
        if target == d:
            links: list[Any] = [("hbm", d)]
            hops = 0
        else:
            links = self.route(d, target)
            hops = len(links)
        dma = Dma(len(self.dmas), op, d, target, src, dst, send, recv, links, hops, self.now)
        self.dmas.append(dma)
        thread = ("dma", dma.id)
        dma.vc = dict(dev.vc)
        dma.vc[thread] = 1
        _tick(dev.vc, d)
        label = (
            f"DMA ({self.at(op)}) from device {d} '{src.label}' to device {target} '{dst.label}'"
        )
        self._access(None, op, src.buffer, src.view, False, thread, dma.vc, label)
        self._access(None, op, dst.buffer, dst.view, True, thread, dma.vc, label)
        if target == d:
            dev.local_bytes += dma.nbytes
        else:
            dev.ici_bytes += dma.nbytes
        if dma.nbytes == 0:
            self._push(self.now, "complete", dma)
            dma.data = np.array(src.view, copy=True) if self.values else None
            return
        self._reflow(self.flows.change(self.now, add=dma))

    def _reflow(self, flows: list[Dma]) -> None:
        for f in flows:
            t = self.now + (f.remaining / f.rate if f.rate > 0 else math.inf)
            self._push(t, "drain", (f, f.version))

    def _drained(self, dma: Dma) -> None:
        dma.drained = self.now
        if self.values:
            dma.data = np.array(dma.src.view, copy=True)
        if dma.send is not None:
            self._signal_dma(dma.send, dma)
        self._reflow(self.flows.change(self.now, remove=dma))
        self._push(self.now + dma.hops * self.chip.hop_latency, "complete", dma)

    def _complete(self, dma: Dma) -> None:
        dma.done = True
        if self.values:
            assert dma.data is not None
            dma.dst.view[...] = dma.data
            dma.data = None
        self._signal_dma(dma.recv, dma)
        if self.record_trace:
            dev = self.devs[dma.device]
            kind = "local DMA" if dma.target == dma.device else f"DMA to {dma.target}"
            dev.trace.append(
                ("dma", kind, dma.start, self.now, {"bytes": dma.nbytes, "at": self.where(dma.op)})
            )

    def _signal_dma(self, sem: Semaphore, dma: Dma) -> None:
        sem.value += dma.nbytes
        sem.pending.append([dma, dma.nbytes])
        _join(sem.vc, dma.vc)
        for other in self.devs:
            if (
                other.waiting is not None
                and other.waiting[1] == "sem"
                and other.waiting[2][0] is sem
            ):
                self._wake(other.index)

    def _take_dma(self, dev: _Dev, op: Operation, sem: Semaphore, amount: int) -> None:
        if not sem.dma:
            raise self.error(op, dev.index, f"waits with tpu.dma_wait on regular {sem.describe()}")
        need = amount
        while need > 0 and sem.pending:
            entry = sem.pending[0]
            if entry[1] > need:
                dma = entry[0]
                raise self.error(
                    op,
                    dev.index,
                    f"byte count mismatch: waits for {amount} bytes on {sem.describe()}, but "
                    f"the DMA there ({self.at(dma.op)} on device {dma.device}, "
                    f"'{dma.src.label}' -> '{dma.dst.label}') moved {dma.nbytes} bytes; a wait "
                    "takes whole DMAs",
                )
            need -= entry[1]
            sem.pending.pop(0)
        sem.value -= amount
        _join(dev.vc, sem.vc)

    # Diagnostics ---------------------------------------------------------------------

    def _deadlock(self, blocked: list[_Dev]) -> InterpreterError:
        lines = []
        first: Operation | None = None
        for dev in blocked:
            if dev.waiting is None:
                continue
            op, kind, obj = dev.waiting
            if first is None:
                first = op
            if kind == "sem":
                sem, amount = obj
                unit = "bytes" if isinstance(op, tpu.DMAWaitOp) else ""
                what = f"{amount} {unit}".strip()
                line = (
                    f"device {dev.index} waits at {self.at(op)} for {what} on {sem.describe()}, "
                    f"which holds {sem.value}"
                )
                if isinstance(op, tpu.DMAWaitOp):
                    line += (
                        "; no DMA in flight will add more: waiting for more bytes than will ever arrive"
                        if sem.value
                        else "; no DMA in flight will signal it"
                    )
                others = [
                    f"{s.label} ({s.value})"
                    for s in self.sems
                    if s.device == dev.index and s.value and s is not sem
                ]
                if others:
                    line += f" (non-zero on device {dev.index}: {', '.join(others)})"
                lines.append(line)
            else:
                key, group = obj
                missing = [m for m in group if m not in self.barriers.get(key, set())]
                lines.append(
                    f"device {dev.index} waits at {self.at(op)} for devices "
                    f"{', '.join(map(str, missing))} of group {list(group)}"
                )
        done = [d.index for d in self.devs if d.done]
        if done:
            lines.append(
                f"finished: device{'s' if len(done) > 1 else ''} {', '.join(map(str, done))}"
            )
        assert first is not None
        dev0 = blocked[0].index
        return self.error(
            first, dev0, "deadlock: every unfinished device is blocked\n  " + "\n  ".join(lines)
        )

    def _check_sem_zero(self, sem: Semaphore, op: Operation) -> None:
        if sem.value == 0:
            return
        if sem.dma and sem.pending:
            dma = sem.pending[0][0]
            raise self.error(
                dma.op,
                dma.device,
                f"DMA never waited: the DMA from device {dma.device} '{dma.src.label}' to "
                f"device {dma.target} '{dma.dst.label}' ({dma.nbytes} bytes) signalled "
                f"{sem.describe()}, which holds {sem.value} bytes at exit",
            )
        raise self.error(
            sem.op,
            sem.device,
            f"{sem.describe()} is {sem.value} at exit (semaphores must end at zero)",
        )

    def _check_exit(self) -> None:
        for sem in self.sems:
            self._check_sem_zero(sem, sem.op)

    # Report -------------------------------------------------------------------------

    def report(self) -> dict[str, Any]:
        finish = [d.clock for d in self.devs]
        for dma in self.dmas:
            finish[dma.device] = max(finish[dma.device], dma.drained)
            finish[dma.target] = max(
                finish[dma.target], dma.drained + dma.hops * self.chip.hop_latency
            )
        step = max(finish) if finish else 0.0
        return {
            "level": "T",
            "chip": self.chip.name,
            "devices": self.n,
            "step_time_s": step,
            "compute_time_s": max(d.busy for d in self.devs),
            "dmas": len(self.dmas),
            "ici_bytes": sum(d.ici_bytes for d in self.devs),
            "local_dma_bytes": sum(d.local_bytes for d in self.devs),
            "peak_vmem_bytes": max(d.peak_vmem for d in self.devs),
            "per_device": [
                {
                    "device": d.index,
                    "finish_time_s": finish[d.index],
                    "compute_time_s": d.busy,
                    "ici_bytes_sent": d.ici_bytes,
                    "local_dma_bytes": d.local_bytes,
                    "peak_vmem_bytes": d.peak_vmem,
                }
                for d in self.devs
            ],
        }

    def trace(self) -> dict[str, Any]:
        """Chrome trace events (run with `trace=True`): compute, wait and DMA slices per device."""
        events: list[dict[str, Any]] = []
        tids = {"compute": 0, "wait": 0, "dma": 1}
        for dev in self.devs:
            events.append(
                {
                    "ph": "M",
                    "name": "process_name",
                    "pid": dev.index,
                    "args": {"name": f"device {dev.index}"},
                }
            )
            for stream, name, t0, t1, args in dev.trace:
                events.append(
                    {
                        "ph": "X",
                        "name": name,
                        "cat": stream,
                        "pid": dev.index,
                        "tid": tids[stream],
                        "ts": t0 * 1e6,
                        "dur": (t1 - t0) * 1e6,
                        "args": args,
                    }
                )
        return {"traceEvents": events, "displayTimeUnit": "ns"}


_SYNC_OPS = {
    "tpu.dma_start",
    "tpu.dma_wait",
    "tpu.sem_signal",
    "tpu.sem_wait",
    "tpu.barrier",
}


def _tick(vc: dict[Any, int], thread: Any) -> None:
    vc[thread] = vc.get(thread, 0) + 1


def _join(into: dict[Any, int], other: Mapping[Any, int]) -> None:
    for k, v in other.items():
        if into.get(k, 0) < v:
            into[k] = v


def _unmaterialized(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """
    A buffer for the timing mode: `np.zeros` is calloc, whose pages the OS maps only when
    touched, and the timing mode never touches them. The buffer still has real addresses,
    so slices, remote views and the race detector's byte overlaps are exact.
    """
    return np.zeros(shape, dtype=dtype)


def _placeholder(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """A vector value in the timing mode: its shape and dtype, no storage (stride 0)."""
    return np.broadcast_to(np.zeros((), dtype=dtype), shape)


def _uninitialized(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):
        return np.full(shape, np.iinfo(dtype).max, dtype=dtype)
    if dtype == np.bool_:
        return np.zeros(shape, dtype=dtype)
    return np.full(shape, np.nan, dtype=dtype)


# arith / math ---------------------------------------------------------------------------


def _constant(op: arith.ConstantOp) -> Any:
    value = op.value
    ty = op.result.type
    if isinstance(value, IntegerAttr):
        return int(value.value.data)
    if isinstance(value, FloatAttr):
        return float(value.value.data)
    if isinstance(value, DenseIntOrFPElementsAttr):
        assert isinstance(ty, VectorType)
        dtype = dtype_of(ty.element_type)
        vals = np.array(value.get_values())
        shape = tuple(ty.get_shape())
        if vals.size == 1:
            return np.full(shape, vals.reshape(())).astype(dtype)
        return vals.reshape(shape).astype(dtype)
    raise ValueError(f"unsupported constant {value}")


def _wrap_int(x: int, ty: Any) -> int:
    if isinstance(ty, IntegerType):
        w = ty.width.data
        x &= (1 << w) - 1
        if w > 1 and x >= 1 << (w - 1):
            x -= 1 << w
    return x


def _int_binary(f):
    def impl(op, args, ty):
        a, b = args
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return f(a, b).astype(dtype_of(ty.element_type))
        return _wrap_int(f(a, b), ty)

    return impl


def _trunc_div(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.trunc(np.divide(a, b)).astype(np.int64)
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _trunc_rem(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.fmod(a, b)
    return a - _trunc_div(a, b) * b


def _float_binary(f):
    def impl(op, args, ty):
        a, b = args
        if isinstance(ty, VectorType):
            dtype = dtype_of(ty.element_type)
            compute = np.float32 if dtype.itemsize < 4 else dtype
            return f(np.asarray(a, compute), np.asarray(b, compute)).astype(dtype)
        return float(f(a, b))

    return impl


def _float_unary(f):
    def impl(op, args, ty):
        (a,) = args
        if isinstance(ty, VectorType):
            dtype = dtype_of(ty.element_type)
            compute = np.float32 if dtype.itemsize < 4 else dtype
            return f(np.asarray(a, compute)).astype(dtype)
        return float(f(a))

    return impl


def _cast(op, args, ty):
    (a,) = args
    if isinstance(ty, VectorType):
        return np.asarray(a).astype(dtype_of(ty.element_type))
    if isinstance(ty, IndexType | IntegerType):
        return _wrap_int(int(a), ty)
    return float(a)


def _convert(op, args, ty):
    """Vector casts as StableHLO's convert (saturating fptosi, NaN -> 0, one rounding)."""
    if isinstance(ty, VectorType):
        return _hlo_convert(np.asarray(args[0]), dtype_of(ty.element_type))
    return _cast(op, args, ty)


def _int_unary(f):
    def impl(op, args, ty):
        return f(np.asarray(args[0])).astype(dtype_of(ty.element_type))

    return impl


def _int_div(a, b):
    from shardc.interpreter.hlo_impls import int_div

    return int_div(a, b)


def _int_pow(a, b):
    from shardc.interpreter.hlo_impls import int_pow

    return int_pow(a, b)


def _vector_broadcast(op, args, ty):
    """MLIR vector.broadcast: a scalar, or a vector's trailing dims (size 1 stretches)."""
    src = np.asarray(args[0]).astype(dtype_of(ty.element_type))
    return np.broadcast_to(src, tuple(ty.get_shape()))


_CMP = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "slt": lambda a, b: a < b,
    "sle": lambda a, b: a <= b,
    "sgt": lambda a, b: a > b,
    "sge": lambda a, b: a >= b,
    "ult": lambda a, b: a < b,
    "ule": lambda a, b: a <= b,
    "ugt": lambda a, b: a > b,
    "uge": lambda a, b: a >= b,
}
_CMPF = {
    "oeq": lambda a, b: a == b,
    "one": lambda a, b: a != b,
    "olt": lambda a, b: a < b,
    "ole": lambda a, b: a <= b,
    "ogt": lambda a, b: a > b,
    "oge": lambda a, b: a >= b,
    "ueq": lambda a, b: a == b,
    "une": lambda a, b: a != b,
    "ult": lambda a, b: a < b,
    "ule": lambda a, b: a <= b,
    "ugt": lambda a, b: a > b,
    "uge": lambda a, b: a >= b,
}


def _cmpi(op, args, ty):
    pred = op.predicate.value.data
    names = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
    r = _CMP[names[pred]](*args)
    return r if isinstance(r, np.ndarray) else bool(r)


def _cmpf(op, args, ty):
    names = [
        "false",
        "oeq",
        "ogt",
        "oge",
        "olt",
        "ole",
        "one",
        "ord",
        "ueq",
        "ugt",
        "uge",
        "ult",
        "ule",
        "une",
        "uno",
        "true",
    ]
    r = _CMPF[names[op.predicate.value.data]](*args)
    return r if isinstance(r, np.ndarray) else bool(r)


def _select(op, args, ty):
    c, a, b = args
    if isinstance(c, np.ndarray) or isinstance(a, np.ndarray):
        return np.where(c, a, b)
    return a if c else b


_ARITH: dict[str, Any] = {
    "arith.addi": _int_binary(lambda a, b: a + b),
    "arith.subi": _int_binary(lambda a, b: a - b),
    "arith.muli": _int_binary(lambda a, b: a * b),
    "arith.divsi": _int_binary(
        lambda a, b: _int_div(a, b) if isinstance(a, np.ndarray) else _trunc_div(a, b)
    ),
    "arith.remsi": _int_binary(_trunc_rem),
    "arith.floordivsi": _int_binary(lambda a, b: a // b),
    "arith.maxsi": _int_binary(
        lambda a, b: np.maximum(a, b) if isinstance(a, np.ndarray) else max(a, b)
    ),
    "arith.minsi": _int_binary(
        lambda a, b: np.minimum(a, b) if isinstance(a, np.ndarray) else min(a, b)
    ),
    "arith.andi": _int_binary(lambda a, b: a & b),
    "arith.ori": _int_binary(lambda a, b: a | b),
    "arith.xori": _int_binary(lambda a, b: a ^ b),
    "arith.addf": _float_binary(np.add),
    "arith.subf": _float_binary(np.subtract),
    "arith.mulf": _float_binary(np.multiply),
    "arith.divf": _float_binary(np.divide),
    "arith.maximumf": _float_binary(np.maximum),
    "arith.minimumf": _float_binary(np.minimum),
    "arith.maxnumf": _float_binary(np.fmax),
    "arith.minnumf": _float_binary(np.fmin),
    "arith.negf": _float_unary(np.negative),
    "math.exp": _float_unary(np.exp),
    "math.log": _float_unary(np.log),
    "math.tanh": _float_unary(np.tanh),
    "math.sqrt": _float_unary(np.sqrt),
    "math.rsqrt": _float_unary(lambda x: 1 / np.sqrt(x)),
    "math.absf": _float_unary(np.abs),
    "math.sin": _float_unary(np.sin),
    "math.cos": _float_unary(np.cos),
    "math.powf": _float_binary(np.power),
    "math.absi": _int_unary(np.abs),
    "math.ipowi": _int_binary(lambda a, b: _int_pow(np.asarray(a), np.asarray(b))),
    "vector.broadcast": _vector_broadcast,
    "arith.index_cast": _cast,
    "arith.extf": _convert,
    "arith.truncf": _convert,
    "arith.sitofp": _convert,
    "arith.fptosi": _convert,
    "arith.extsi": _convert,
    "arith.trunci": _convert,
    "arith.extui": _convert,
    "arith.uitofp": _convert,
    "arith.cmpi": _cmpi,
    "arith.cmpf": _cmpf,
    "arith.select": _select,
    "tpu.cmp": lambda op, args, ty: (_CMPF if op.predicate.data in tpu.FLOAT_PREDICATES else _CMP)[
        op.predicate.data
    ](*args),
    "tpu.select": _select,
    "tpu.convert": _convert,
}


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
    capacity, bounds), but buffers are never written (calloc'd, so never paged in),
    DMAs move no bytes and vector ops yield shape-only placeholders. Control flow must not
    depend on loaded values (true of every kernel `lower-to-tpu` emits). The inputs'
    contents are ignored (None is fine) and the outputs list is empty.

    `torus` overrides the physical machine (default: the mesh's axes map to torus axes,
    as `CostModel.torus_axis_lengths`): axis lengths whose product is the device count;
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
