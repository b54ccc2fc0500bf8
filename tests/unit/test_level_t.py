"""
The level-T simulator (interpreter/level_t.py): ring collectives written as `tpu` kernels
give numpy's results, one deliberately broken kernel per check gives exactly that
diagnostic, and a large ring all_gather's simulated time agrees with the level-S cost
model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from shardc.diagnostics import InterpreterError
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel
from shardc.interpreter.devices import module_mesh
from shardc.interpreter.level_t import Simulator, is_level_t, run_level_t
from shardc.interpreter.testing import parse

TESTS = Path(__file__).resolve().parent.parent
RING_ALL_GATHER = "".join(
    line
    for line in (TESTS / "filecheck/dialects/tpu/ring_all_gather.mlir").read_text().splitlines(True)
    if not line.startswith("//")
)
"""The tpu dialect's ring all_gather kernel (the lit test's, without its comments)."""

HBM = "#tpu.memory_space<hbm>"
VMEM = "#tpu.memory_space<vmem>"


def run(text: str, inputs, chip: str = "v5e", **kw):
    module = parse(text, "k.mlir")
    return run_level_t(module, inputs, chip=chip, **kw)


def fails(text: str, inputs, *fragments: str) -> str:
    with pytest.raises(InterpreterError) as info:
        run(text, inputs)
    message = str(info.value)
    for f in fragments:
        assert f in message, message
    assert message.startswith("k.mlir:"), message
    return message


def shards(n: int = 4, shape=(8, 128), seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


# Correct kernels ----------------------------------------------------------------------------


def test_ring_all_gather_gives_all_gather():
    xs = shards()
    outs, report = run(RING_ALL_GATHER, [[x, None] for x in xs])
    for d in range(4):
        np.testing.assert_array_equal(outs[d][1], np.stack(xs))
    assert report["devices"] == 4
    assert report["ici_bytes"] == 4 * 3 * 8 * 128 * 4
    assert report["local_dma_bytes"] == 4 * 8 * 128 * 4
    assert report["step_time_s"] > 3e-6  # three steps, at least one hop each


def test_is_level_t():
    module = parse(RING_ALL_GATHER)
    (kernel,) = [op for op in module.body.block.ops if op.name == "func.func"]
    assert is_level_t(kernel)


RING_ALL_REDUCE = f"""
spmd.mesh @ring = <["x"=4]>

// Ring all_reduce = reduce-scatter (each chunk's partial sum travels right and grows)
// + all-gather (each device's finished chunk travels right), all in VMEM.
func.func @ring_all_reduce(%x: memref<4x8x128xf32, {HBM}>, %out: memref<4x8x128xf32, {HBM}>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %steps = arith.constant 3 : index
  %n = arith.constant 4 : i32
  %one = arith.constant 1 : i32
  %acc = tpu.alloc : memref<4x8x128xf32, {VMEM}>
  %rbuf = tpu.alloc : memref<3x8x128xf32, {VMEM}>
  %copy_sem = tpu.alloc : !tpu.dma_semaphore
  %send_sem = tpu.alloc : !tpu.dma_semaphore
  %rs_sems = tpu.alloc : !tpu.dma_semaphore<3>
  %ag_sems = tpu.alloc : !tpu.dma_semaphore<3>
  %me = tpu.axis_index @ring["x"] : i32
  %right_unwrapped = arith.addi %me, %one : i32
  %right = arith.remsi %right_unwrapped, %n : i32
  tpu.dma_start %x, %acc, %copy_sem : memref<4x8x128xf32, {HBM}> to memref<4x8x128xf32, {VMEM}>
  tpu.dma_wait %copy_sem, %acc : memref<4x8x128xf32, {VMEM}>
  tpu.barrier on @ring["x"]
  scf.for %s = %c0 to %steps step %c1 {{
    %s_i32 = arith.index_cast %s : index to i32
    %back = arith.subi %me, %s_i32 : i32
    %back_wrapped = arith.addi %back, %n : i32
    %send_i32 = arith.remsi %back_wrapped, %n : i32
    %send = arith.index_cast %send_i32 : i32 to index
    %prev = arith.subi %back_wrapped, %one : i32
    %recv_i32 = arith.remsi %prev, %n : i32
    %recv = arith.index_cast %recv_i32 : i32 to index
    %block = tpu.memref_slice %acc[%send, %c0, %c0] : memref<4x8x128xf32, {VMEM}> -> memref<8x128xf32, {VMEM}>
    %slot = tpu.memref_slice %rbuf[%s, %c0, %c0] : memref<3x8x128xf32, {VMEM}> -> memref<8x128xf32, {VMEM}>
    %sem = tpu.memref_slice %rs_sems[%s] : !tpu.dma_semaphore<3> -> !tpu.dma_semaphore
    tpu.dma_start %block, %slot, %send_sem, %sem, device = %right : memref<8x128xf32, {VMEM}> to memref<8x128xf32, {VMEM}>
    tpu.dma_wait %send_sem, %block : memref<8x128xf32, {VMEM}>
    tpu.dma_wait %sem, %slot : memref<8x128xf32, {VMEM}>
    %got = tpu.load %rbuf[%s, %c0, %c0] : memref<3x8x128xf32, {VMEM}>, vector<8x128xf32>
    %mine = tpu.load %acc[%recv, %c0, %c0] : memref<4x8x128xf32, {VMEM}>, vector<8x128xf32>
    %sum = arith.addf %got, %mine : vector<8x128xf32>
    tpu.store %sum, %acc[%recv, %c0, %c0] : memref<4x8x128xf32, {VMEM}>, vector<8x128xf32>
  }}
  scf.for %s = %c0 to %steps step %c1 {{
    %s_i32 = arith.index_cast %s : index to i32
    %fwd = arith.addi %me, %one : i32
    %back = arith.subi %fwd, %s_i32 : i32
    %back_wrapped = arith.addi %back, %n : i32
    %send_i32 = arith.remsi %back_wrapped, %n : i32
    %send = arith.index_cast %send_i32 : i32 to index
    %prev = arith.subi %back_wrapped, %one : i32
    %recv_i32 = arith.remsi %prev, %n : i32
    %recv = arith.index_cast %recv_i32 : i32 to index
    %block = tpu.memref_slice %acc[%send, %c0, %c0] : memref<4x8x128xf32, {VMEM}> -> memref<8x128xf32, {VMEM}>
    %incoming = tpu.memref_slice %acc[%recv, %c0, %c0] : memref<4x8x128xf32, {VMEM}> -> memref<8x128xf32, {VMEM}>
    %sem = tpu.memref_slice %ag_sems[%s] : !tpu.dma_semaphore<3> -> !tpu.dma_semaphore
    tpu.dma_start %block, %block, %send_sem, %sem, device = %right : memref<8x128xf32, {VMEM}> to memref<8x128xf32, {VMEM}>
    tpu.dma_wait %send_sem, %block : memref<8x128xf32, {VMEM}>
    tpu.dma_wait %sem, %incoming : memref<8x128xf32, {VMEM}>
  }}
  tpu.dma_start %acc, %out, %copy_sem : memref<4x8x128xf32, {VMEM}> to memref<4x8x128xf32, {HBM}>
  tpu.dma_wait %copy_sem, %out : memref<4x8x128xf32, {HBM}>
  func.return
}}
"""


def test_ring_all_reduce_gives_the_sum():
    xs = shards(shape=(4, 8, 128))
    outs, report = run(RING_ALL_REDUCE, [[x, None] for x in xs])
    want = sum(xs)
    for d in range(4):
        np.testing.assert_allclose(outs[d][1], want, rtol=1e-5, atol=1e-5)
    assert report["peak_vmem_bytes"] == (4 + 3) * 8 * 128 * 4
    # 2 (N-1) chunk transfers per device.
    assert report["ici_bytes"] == 4 * 6 * 8 * 128 * 4


# Broken kernels: one diagnostic each ----------------------------------------------------------


def _mutate(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


SEND_WAIT = "    tpu.dma_wait %send_sem, %block : memref<8x128xf32, #tpu.memory_space<hbm>>\n"
RECV_WAIT = "    tpu.dma_wait %recv_sem, %incoming : memref<8x128xf32, #tpu.memory_space<hbm>>\n"


def test_missing_wait_is_a_dma_never_waited():
    text = _mutate(RING_ALL_GATHER, SEND_WAIT, "")
    message = fails(
        text, [[x, None] for x in shards()], "DMA never waited", "send_sem", "'tpu.dma_start' op"
    )
    assert "bytes at exit" in message


def test_wait_on_the_wrong_semaphore_is_a_deadlock():
    text = _mutate(RING_ALL_GATHER, RECV_WAIT, RECV_WAIT.replace("%recv_sem", "%copy_sem"))
    message = fails(text, [[x, None] for x in shards()], "deadlock")
    for d in range(4):
        assert f"device {d} waits at tpu.dma_wait at k.mlir:" in message
    assert "semaphore 'copy_sem' on device" in message


def test_waiting_for_too_many_bytes_is_a_deadlock_that_says_so():
    text = _mutate(
        RING_ALL_GATHER,
        RECV_WAIT,
        "    tpu.dma_wait %recv_sem, %out : memref<4x8x128xf32, #tpu.memory_space<hbm>>\n",
    )
    fails(
        text,
        [[x, None] for x in shards()],
        "deadlock",
        "for 16384 bytes",
        "recv_sems[0]",
        "which holds 4096",
        "waiting for more bytes than will ever arrive",
    )


ONE_DEVICE = f"""
spmd.mesh @one = <["x"=1]>
func.func @k(%in: memref<16x128xf32, {HBM}>, %out: memref<16x128xf32, {HBM}>) {{
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %sem = tpu.alloc : !tpu.dma_semaphore
  %buf = tpu.alloc : memref<16x128xf32, {VMEM}>
BODY
  func.return
}}
"""

COPY_IN = (
    f"  tpu.dma_start %in, %buf, %sem : memref<16x128xf32, {HBM}> to memref<16x128xf32, {VMEM}>\n"
)
WAIT_IN = f"  tpu.dma_wait %sem, %buf : memref<16x128xf32, {VMEM}>\n"


def one(body: str) -> str:
    return ONE_DEVICE.replace("BODY", body)


def test_one_device_copy_works():
    x = shards(1, (16, 128))[0]
    body = (
        COPY_IN
        + WAIT_IN
        + f"  %v = tpu.load %buf[%c0, %c0] : memref<16x128xf32, {VMEM}>, vector<16x128xf32>\n"
        + "  %w = arith.addf %v, %v : vector<16x128xf32>\n"
        + f"  tpu.store %w, %buf[%c0, %c0] : memref<16x128xf32, {VMEM}>, vector<16x128xf32>\n"
        + f"  tpu.dma_start %buf, %out, %sem : memref<16x128xf32, {VMEM}> to memref<16x128xf32, {HBM}>\n"
        + f"  tpu.dma_wait %sem, %out : memref<16x128xf32, {HBM}>\n"
    )
    outs, report = run(one(body), [[x, None]])
    np.testing.assert_array_equal(outs[0][1], 2 * x)
    # Two local DMAs of 8 KiB at HBM bandwidth, plus load/store time.
    assert report["step_time_s"] >= 2 * 8192 / get_chip("v5e").hbm_bw


def test_local_dma_never_waited():
    fails(
        one(COPY_IN),
        [[shards(1, (16, 128))[0], None]],
        "DMA never waited",
        "'in'",
        "'buf'",
        "semaphore 'sem' on device 0, which holds 8192 bytes at exit",
    )


def test_store_into_a_buffer_a_dma_is_writing_is_a_race():
    body = (
        COPY_IN
        + "  %z = arith.constant dense<0.0> : vector<8x128xf32>\n"
        + f"  tpu.store %z, %buf[%c8, %c0] : memref<16x128xf32, {VMEM}>, vector<8x128xf32>\n"
        + WAIT_IN
    )
    message = fails(
        one(body),
        [[shards(1, (16, 128))[0], None]],
        "data race",
        "buffer 'buf' (vmem) of device 0",
        "'tpu.store' op",
        "DMA (tpu.dma_start at k.mlir:",
    )
    assert "neither happens before the other" in message


def test_store_after_the_wait_is_no_race():
    body = (
        COPY_IN
        + WAIT_IN
        + "  %z = arith.constant dense<0.0> : vector<8x128xf32>\n"
        + f"  tpu.store %z, %buf[%c8, %c0] : memref<16x128xf32, {VMEM}>, vector<8x128xf32>\n"
    )
    run(one(body), [[shards(1, (16, 128))[0], None]])


def test_two_devices_pushing_into_one_buffer_race():
    text = f"""
spmd.mesh @m = <["x"=3]>
func.func @k(%in: memref<8x128xf32, {HBM}>, %out: memref<8x128xf32, {HBM}>) {{
  %zero = arith.constant 0 : i32
  %send = tpu.alloc : !tpu.dma_semaphore
  %recv = tpu.alloc : !tpu.dma_semaphore
  %me = tpu.device_id : i32
  tpu.barrier
  %not_root = arith.cmpi ne, %me, %zero : i32
  scf.if %not_root {{
    tpu.dma_start %in, %out, %send, %recv, device = %zero : memref<8x128xf32, {HBM}> to memref<8x128xf32, {HBM}>
    tpu.dma_wait %send, %in : memref<8x128xf32, {HBM}>
  }}
  func.return
}}
"""
    fails(
        text,
        [[x, None] for x in shards(3)],
        "data race",
        "buffer 'out' (hbm) of device 0",
        "from device 1",
        "from device 2",
    )


def test_semaphore_left_non_zero():
    body = (
        "  %s = tpu.alloc : !tpu.semaphore\n"
        "  %one = arith.constant 1 : i32\n"
        "  tpu.sem_signal %s, %one\n"
        "  tpu.sem_signal %s, %one\n"
        "  tpu.sem_wait %s, %one\n"
    )
    fails(one(body), [[None, None]], "semaphore 's' on device 0 is 1 at exit", "'tpu.alloc' op")


def test_byte_count_mismatch():
    body = (
        COPY_IN
        + f"  %half = tpu.memref_slice %buf[%c0, %c0] : memref<16x128xf32, {VMEM}> -> memref<8x128xf32, {VMEM}>\n"
        + f"  tpu.dma_wait %sem, %half : memref<8x128xf32, {VMEM}>\n"
        + f"  tpu.dma_wait %sem, %half : memref<8x128xf32, {VMEM}>\n"
    )
    fails(
        one(body),
        [[None, None]],
        "byte count mismatch",
        "waits for 4096 bytes",
        "moved 8192 bytes",
        "'tpu.dma_wait' op",
    )


def test_vmem_over_capacity():
    body = f"  %big = tpu.alloc : memref<32x1024x1024xf32, {VMEM}>\n"
    message = fails(
        one(body),
        [[None, None]],
        "VMEM over capacity",
        "'big'",
        f"{128 * 2**20} bytes",
        "134225920 bytes",
        "device 0",
    )
    assert "'tpu.alloc' op" in message


def test_out_of_bounds_slice():
    body = (
        "  %c9 = arith.constant 9 : index\n"
        f"  %bad = tpu.memref_slice %buf[%c9, %c0] : memref<16x128xf32, {VMEM}> -> memref<8x128xf32, {VMEM}>\n"
    )
    fails(
        one(body),
        [[None, None]],
        "out of bounds",
        "'buf'",
        "dimension 0 spans 9..17, size 16",
        "'tpu.memref_slice' op",
        "device 0",
    )


def test_out_of_bounds_load():
    body = f"  %v = tpu.load %buf[%c8, %c8] : memref<16x128xf32, {VMEM}>, vector<8x128xf32>\n"
    fails(
        one(body),
        [[None, None]],
        "out of bounds",
        "dimension 1 spans 8..136, size 128",
        "'tpu.load' op",
    )


# Timing -------------------------------------------------------------------------------------


def test_dimension_order_routing():
    module = parse(
        'spmd.mesh @m = <["x"=4, "y"=4]>\nfunc.func @k() {\n  tpu.barrier\n  func.return\n}\n'
    )
    sim = Simulator(module, "v5e")
    # 4x4 on v5e: no wraparound; 0 -> 15 goes along x then along y: 6 hops.
    links = sim.route(0, 15)
    assert len(links) == 6
    assert [axis for _, _, axis, _ in links] == [0, 0, 0, 1, 1, 1]
    module16 = parse(
        'spmd.mesh @m = <["x"=16]>\nfunc.func @k() {\n  tpu.barrier\n  func.return\n}\n'
    )
    ring = Simulator(module16, "v5e")
    assert [d for *_, d in ring.route(0, 15)] == [-1]  # wraparound: one hop backwards


def test_two_transfers_on_one_link_share_it():
    """Devices 0 and 1 both send 4 MiB to device 2 on a line: link 1->2 is shared."""
    text = f"""
spmd.mesh @m = <["x"=3]>
func.func @k(%a: memref<1024x1024xf32, {HBM}>, %out: memref<2x1024x1024xf32, {HBM}>) {{
  %c0 = arith.constant 0 : index
  %two = arith.constant 2 : i32
  %send = tpu.alloc : !tpu.dma_semaphore
  %recv = tpu.alloc : !tpu.dma_semaphore
  %me = tpu.device_id : i32
  %mei = arith.index_cast %me : i32 to index
  tpu.barrier
  %sender = arith.cmpi slt, %me, %two : i32
  scf.if %sender {{
    %slot = tpu.memref_slice %out[%mei, %c0, %c0] : memref<2x1024x1024xf32, {HBM}> -> memref<1024x1024xf32, {HBM}>
    tpu.dma_start %a, %slot, %send, %recv, device = %two : memref<1024x1024xf32, {HBM}> to memref<1024x1024xf32, {HBM}>
    tpu.dma_wait %send, %a : memref<1024x1024xf32, {HBM}>
  }} else {{
    tpu.dma_wait %recv, %out : memref<2x1024x1024xf32, {HBM}>
  }}
  func.return
}}
"""
    outs, report = run(text, [[x, None] for x in shards(3, (1024, 1024))])
    chip = get_chip("v5e")
    share = 2 * 4 * 2**20 / chip.ici_link_bw  # both over link 1->2 at half rate
    assert report["step_time_s"] == pytest.approx(share + 2 * chip.hop_latency, rel=0.02)


def ring_all_gather_text(rows: int, n: int = 4) -> str:
    text = RING_ALL_GATHER.replace("8x128xf32", f"{rows}x128xf32").replace(
        f"4x{rows}x128xf32", f"{n}x{rows}x128xf32"
    )
    return text


def test_large_ring_all_gather_time_agrees_with_the_cost_model():
    rows = 8192  # 4 MiB shards, 16 MiB gathered
    text = ring_all_gather_text(rows)
    xs = shards(4, (rows, 128))
    outs, report = run(text, [[x, None] for x in xs])
    np.testing.assert_array_equal(outs[2][1], np.stack(xs))
    level_s = f"""
spmd.mesh @ring = <["x"=4]>
func.func @main(%x: tensor<{rows}x128xf32>) -> tensor<{4 * rows}x128xf32> attributes {{spmd.per_device_io}} {{
  %g = collective.all_gather %x on @ring["x"], dim = 0 : (tensor<{rows}x128xf32>) -> tensor<{4 * rows}x128xf32>
  func.return %g : tensor<{4 * rows}x128xf32>
}}
"""
    module = parse(level_s)
    op = next(o for o in module.walk() if o.name == "collective.all_gather")
    mesh = module_mesh(module)
    assert mesh is not None
    want = CostModel(get_chip("v5e"), mesh[1]).collective_time(op)  # pyright: ignore
    got = report["step_time_s"]
    assert got == pytest.approx(want, rel=0.10), (got, want)


def test_trace_has_dma_and_wait_events():
    xs = shards()
    _, report = run(RING_ALL_GATHER, [[x, None] for x in xs], trace=True)
    cats = {e.get("cat") for e in report["trace"]["traceEvents"]}
    assert {"dma", "wait"} <= cats


# shardc-run -------------------------------------------------------------------------------


def test_shardc_run_runs_a_level_t_kernel(tmp_path, capsys):
    from shardc.tools.shardc_run import main

    src = tmp_path / "ring.mlir"
    src.write_text(RING_ALL_GATHER)
    xs = shards()
    np.savez(tmp_path / "in.npz", **{f"in_0.{d}": x for d, x in enumerate(xs)})
    rc = main(
        [
            str(src),
            "--inputs",
            str(tmp_path / "in.npz"),
            "--outputs",
            str(tmp_path / "out.npz"),
            "--report-json",
            str(tmp_path / "r.json"),
        ]
    )
    assert rc == 0, capsys.readouterr().err
    out = np.load(tmp_path / "out.npz")
    np.testing.assert_array_equal(out["out_1.3"], np.stack(xs))
    assert "level T on 4 x v5e" in capsys.readouterr().out


def test_shardc_run_reports_a_broken_kernel(tmp_path, capsys):
    from shardc.tools.shardc_run import main

    src = tmp_path / "broken.mlir"
    src.write_text(_mutate(RING_ALL_GATHER, SEND_WAIT, ""))
    assert main([str(src)]) == 1
    err = capsys.readouterr().err
    assert "broken.mlir:" in err and "DMA never waited" in err


SIGNAL_RIGHT = """
spmd.mesh @m = <["x"=4]>
func.func @k() {
  %one = arith.constant 1 : i32
  %n = arith.constant 4 : i32
  %ready = tpu.alloc : !tpu.semaphore
  %me = tpu.device_id : i32
  %r0 = arith.addi %me, %one : i32
  %right = arith.remsi %r0, %n : i32
  tpu.barrier
  tpu.sem_signal %ready, %one, device = %right
  tpu.sem_wait %ready, %one
  func.return
}
"""


def test_remote_signal_and_wait():
    _, report = run(SIGNAL_RIGHT, [[] for _ in range(4)])
    assert report["devices"] == 4


def test_barrier_one_device_skips_is_a_deadlock():
    text = SIGNAL_RIGHT.replace(
        "  tpu.barrier\n",
        "  %zero = arith.constant 0 : i32\n  %skip = arith.cmpi eq, %me, %zero : i32\n"
        "  scf.if %skip {\n  } else {\n    tpu.barrier\n  }\n",
    ).replace("  tpu.sem_signal", "  %z2 = arith.constant 0 : i32\n  tpu.sem_signal")
    message = fails(
        text,
        [[] for _ in range(4)],
        "deadlock",
        "device 0 waits at tpu.sem_wait at k.mlir:18:3 for 1 on semaphore 'ready' "
        "on device 0, which holds 0",
    )
    assert "device 1 waits at tpu.barrier at k.mlir:" in message
    assert "for devices 0 of group [0, 1, 2, 3]" in message


# Timing mode (values=False) ------------------------------------------------------------------


def _same_timing(valued: dict, timed: dict) -> None:
    for key in (
        "step_time_s",
        "compute_time_s",
        "dmas",
        "ici_bytes",
        "local_dma_bytes",
        "peak_vmem_bytes",
    ):
        assert timed[key] == valued[key], key
    for a, b in zip(valued["per_device"], timed["per_device"], strict=True):
        assert a == b


def test_timing_mode_times_the_ring_all_gather_as_the_valued_run():
    xs = shards()
    _, valued = run(RING_ALL_GATHER, [[x, None] for x in xs])
    outs, timed = run(RING_ALL_GATHER, [[None, None] for _ in xs], values=False)
    assert outs == []
    _same_timing(valued, timed)


@pytest.mark.slow
@pytest.mark.parametrize(
    "chip, n, op",
    [
        ("v5e", 4, '%r = collective.all_reduce add %a on @m["x"] : tensor<16x128xf32>'),
        ("v5p", 16, '%r = collective.all_reduce max %a on @m["a", "b"] : tensor<16x128xf32>'),
        (
            "v5e",
            8,
            "%r = collective.permute %a on groups [[0, 5], [1, 4], [2, 7], [3, 6]], shift = 1 : tensor<16x128xf32>",
        ),
        ("v5p", 4, '%r = collective.all_reduce add %a on @m["x"] : tensor<16x128xf32>'),
        (
            "v5e",
            8,
            '%r = collective.reduce_scatter add %a on @m["x"], dim = 0 : (tensor<16x128xf32>) -> tensor<2x128xf32>',
        ),
        (
            "v5p",
            8,
            '%r = collective.all_to_all %a on @m["x"], split_dim = 0, concat_dim = 1 : (tensor<16x128xf32>) -> tensor<2x1024xf32>',
        ),
    ],
)
def test_timing_mode_times_lowered_collectives_as_the_valued_run(chip, n, op):
    """The lowered kernels (VMEM adds, credits, bidirectional rings): identical reports."""
    from shardc.dialects import make_context
    from shardc.lowering.lower_to_tpu import LowerToTpuPass

    res = op.rsplit("-> tensor<", 1)[1].rstrip(">") if "->" in op else "16x128xf32"
    mesh = '"a"=4, "b"=4' if '"a"' in op else f'"x"={n}'
    text = f"""
spmd.mesh @m = <[{mesh}]>
func.func @main(%a: tensor<16x128xf32>) -> tensor<{res}> attributes {{spmd.per_device_io}} {{
  {op}
  func.return %r : tensor<{res}>
}}
"""
    module = parse(text)
    LowerToTpuPass(chip=chip).apply(make_context(), module)
    ins = [[x, None] for x in shards(n, (16, 128))]
    _, valued = run_level_t(module, ins, chip=chip)
    _, timed = run_level_t(module, [[None, None]] * n, chip=chip, values=False)
    _same_timing(valued, timed)


@pytest.mark.parametrize(
    "old, new",
    [
        (RECV_WAIT, ""),
        (SEND_WAIT, ""),
        (RECV_WAIT, RECV_WAIT.replace("%recv_sem", "%copy_sem")),
    ],
    ids=["race", "never-waited", "deadlock"],
)
def test_timing_mode_reports_what_the_valued_run_reports(old, new):
    """Checks that need no values (races, semaphores, deadlocks) run in the timing mode too."""
    text = _mutate(RING_ALL_GATHER, old, new)
    valued = fails(text, [[x, None] for x in shards()])
    with pytest.raises(InterpreterError) as info:
        run(text, [[None, None]] * 4, values=False)
    assert str(info.value) == valued


# Use after free (issue 16): freeing a buffer a DMA may still write, or touching it after.

DEALLOC = f"  tpu.dealloc %buf : memref<16x128xf32, {VMEM}>\n"


@pytest.mark.parametrize("values", [True, False])
def test_freeing_a_buffer_a_dma_is_writing_is_a_use_after_free(values: bool):
    with pytest.raises(InterpreterError) as info:
        run(one(COPY_IN + DEALLOC + WAIT_IN), [[shards(1, (16, 128))[0], None]], values=values)
    message = str(info.value)
    assert message.startswith("k.mlir:"), message
    assert "'tpu.dealloc' op" in message and "use after free: buffer 'buf' (vmem)" in message
    assert "DMA (tpu.dma_start at k.mlir:" in message and "no wait on its semaphore" in message


def test_a_buffer_freed_after_the_wait_is_fine_and_later_access_is_not():
    x = shards(1, (16, 128))[0]
    run(one(COPY_IN + WAIT_IN + DEALLOC), [[x, None]])
    load = f"  %v = tpu.load %buf[%c0, %c0] : memref<16x128xf32, {VMEM}>, vector<16x128xf32>\n"
    fails(
        one(COPY_IN + WAIT_IN + DEALLOC + load),
        [[x, None]],
        "use after free: the load",
        "'tpu.load' op",
        "freed by the tpu.dealloc at k.mlir:",
    )
