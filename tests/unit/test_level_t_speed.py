"""
Level T's timing-only mode at real sizes (issue 15 item 4): it allocates nothing
proportional to tensor sizes, every check that needs no values still fires with the same
message as the valued run, and its report and trace equal the valued run's.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import shardc
from shardc.diagnostics import InterpreterError
from shardc.interpreter.level_t import run_level_t
from shardc.interpreter.testing import parse

HBM = "#tpu.memory_space<hbm>"
VMEM = "#tpu.memory_space<vmem>"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(text: str, inputs, **kw):
    return run_level_t(parse(text, "k.mlir"), inputs, **kw)


# Nothing proportional to tensor sizes ------------------------------------------------------

HUGE = f"""
spmd.mesh @m = <["x"=4]>
func.func @k(%in: memref<64x1024x1024x1024xbf16, {HBM}>, %out: memref<64x1024x1024x1024xbf16, {HBM}>) {{
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %n = arith.constant 4 : i32
  %send = tpu.alloc : !tpu.dma_semaphore
  %recv = tpu.alloc : !tpu.dma_semaphore
  %buf = tpu.alloc : memref<2048x4096xf32, {VMEM}>
  %me = tpu.device_id : i32
  %r0 = arith.addi %me, %one : i32
  %right = arith.remsi %r0, %n : i32
  %mei = arith.index_cast %me : i32 to index
  tpu.barrier
  %blk = tpu.memref_slice %in[%mei, %c0, %c0, %c0] : memref<64x1024x1024x1024xbf16, {HBM}> -> memref<1x1024x1024x1024xbf16, {HBM}>
  %dst = tpu.memref_slice %out[%mei, %c0, %c0, %c0] : memref<64x1024x1024x1024xbf16, {HBM}> -> memref<1x1024x1024x1024xbf16, {HBM}>
  tpu.dma_start %blk, %dst, %send, %recv, device = %right : memref<1x1024x1024x1024xbf16, {HBM}> to memref<1x1024x1024x1024xbf16, {HBM}>
  tpu.dma_wait %send, %blk : memref<1x1024x1024x1024xbf16, {HBM}>
  tpu.dma_wait %recv, %dst : memref<1x1024x1024x1024xbf16, {HBM}>
  %v = tpu.load %buf[%c0, %c0] : memref<2048x4096xf32, {VMEM}>, vector<2048x4096xf32>
  %w = arith.addf %v, %v : vector<2048x4096xf32>
  tpu.store %w, %buf[%c0, %c0] : memref<2048x4096xf32, {VMEM}>, vector<2048x4096xf32>
  tpu.dealloc %buf : memref<2048x4096xf32, {VMEM}>
  func.return
}}
"""
"""Four devices with 128 GiB of HBM arguments each, a 2 GiB DMA each and a 32 MiB VMEM tile."""


def test_timing_mode_allocates_nothing_proportional_to_tensor_sizes():
    tracemalloc.start()
    try:
        _, report = run(HUGE, [[None, None]] * 4, values=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report["dmas"] == 4
    assert report["ici_bytes"] == 4 * 2**31
    assert peak < 16 * 2**20, peak  # numpy reports its buffers to tracemalloc


# Every check fires in the timing mode, with the valued run's message -------------------------

from shardc.tests.unit.test_level_t import COPY_IN, ONE_DEVICE, WAIT_IN  # noqa: E402

HALF = f"  %half = tpu.memref_slice %buf[%c0, %c0] : memref<16x128xf32, {VMEM}> -> memref<8x128xf32, {VMEM}>\n"
STORE_Z = (
    "  %z = arith.constant dense<0.0> : vector<8x128xf32>\n"
    f"  tpu.store %z, %buf[%c8, %c0] : memref<16x128xf32, {VMEM}>, vector<8x128xf32>\n"
)
SEEDED = {
    "race": (COPY_IN + STORE_Z + WAIT_IN, "data race"),
    "dma-never-waited": (COPY_IN, "DMA never waited"),
    "semaphore-non-zero": (
        "  %s = tpu.alloc : !tpu.semaphore\n  %one = arith.constant 1 : i32\n"
        "  tpu.sem_signal %s, %one\n  tpu.sem_signal %s, %one\n  tpu.sem_wait %s, %one\n",
        "is 1 at exit",
    ),
    "byte-count": (
        COPY_IN + HALF + f"  tpu.dma_wait %sem, %half : memref<8x128xf32, {VMEM}>\n",
        "byte count mismatch",
    ),
    "deadlock": (WAIT_IN, "deadlock"),
    "too-many-bytes": (COPY_IN + WAIT_IN + WAIT_IN, "deadlock"),
    "vmem-capacity": (f"  %big = tpu.alloc : memref<32x1024x1024xf32, {VMEM}>\n", "VMEM over"),
    "slice-bounds": (
        "  %c9 = arith.constant 9 : index\n"
        f"  %bad = tpu.memref_slice %buf[%c9, %c0] : memref<16x128xf32, {VMEM}> -> memref<8x128xf32, {VMEM}>\n",
        "out of bounds",
    ),
    "load-bounds": (
        f"  %v = tpu.load %buf[%c8, %c8] : memref<16x128xf32, {VMEM}>, vector<8x128xf32>\n",
        "out of bounds",
    ),
    "store-bounds": (
        "  %z = arith.constant dense<0.0> : vector<8x128xf32>\n"
        f"  tpu.store %z, %buf[%c8, %c8] : memref<16x128xf32, {VMEM}>, vector<8x128xf32>\n",
        "out of bounds",
    ),
    "scalar-race": (
        COPY_IN + f"  %e = memref.load %buf[%c0, %c0] : memref<16x128xf32, {VMEM}>\n" + WAIT_IN,
        "data race",
    ),
    "remote-device-id": (
        "  %seven = arith.constant 7 : i32\n"
        f"  tpu.dma_start %in, %out, %sem, %sem, device = %seven : memref<16x128xf32, {HBM}> to memref<16x128xf32, {HBM}>\n",
        "out of range",
    ),
}


@pytest.mark.parametrize("name", sorted(SEEDED))
def test_every_check_fires_in_the_timing_mode_as_in_the_valued_run(name):
    body, fragment = SEEDED[name]
    text = ONE_DEVICE.replace("BODY", body)
    x = np.ones((16, 128), np.float32)
    with pytest.raises(InterpreterError) as valued:
        run(text, [[x, None]])
    with pytest.raises(InterpreterError) as timed:
        run(text, [[None, None]], values=False)
    assert fragment in str(valued.value), str(valued.value)
    assert str(timed.value) == str(valued.value)


# The timing-only run's report and trace are the valued run's ----------------------------------

SMALL = ["megatron_mlp.mlir", "layernorm.mlir", "softmax.mlir", "reshard.mlir", "dp_grads.mlir"]


@pytest.mark.parametrize("name", SMALL)
def test_timing_only_report_and_trace_equal_the_valued_run(name):
    kernel = shardc.compile((EXAMPLES / name).read_text(), "tpu-pipeline", filename=name)
    valued = shardc.run(kernel.clone(), seed=0, filename=name)
    timed = shardc.run(kernel, timing_only=True, filename=name)
    assert timed.outputs == {}
    assert timed.report["step_time_s"] > 0
    for key, value in valued.report.items():
        if key not in ("inputs", "timing_only"):  # what the run was given
            assert timed.report[key] == value, key
    assert timed.timeline.trace() == valued.timeline.trace()


# Cost per event, not per byte or per DMA so far ----------------------------------------------

RING = "".join(
    line
    for line in (
        Path(__file__).resolve().parents[1] / "filecheck/dialects/tpu/ring_all_gather.mlir"
    )
    .read_text()
    .splitlines(True)
    if not line.startswith("//")
)


def _ring(rows: int) -> str:
    return RING.replace("4x8x128xf32", f"4x{rows}x128xf32").replace("8x128xf32", f"{rows}x128xf32")


def test_the_timing_mode_costs_events_not_bytes():
    """The same ring at 4 KiB and 512 MiB per shard: the same events; clocks stay O(devices)."""
    from shardc.interpreter.level_t import find_kernel
    from shardc.interpreter.level_t_sim import Simulator

    runs = []
    for rows in (8, 2**20):
        module = parse(_ring(rows), "k.mlir")
        sim = Simulator(module, "v5e", values=False)
        sim.run(find_kernel(module), [[None, None]] * 4)
        runs.append(sim)
    small, big = runs
    assert small.events.popped == big.events.popped
    assert len(small.dmas) == len(big.dmas) == 16
    assert big.report()["step_time_s"] > 1000 * small.report()["step_time_s"] / 2
    clocks = [dev.vc for dev in big.devs] + [s.vc for s in big.sems] + [d.vc for d in big.dmas]
    assert all(set(vc) <= {0, 1, 2, 3} for vc in clocks)
