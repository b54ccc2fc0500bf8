"""
The interpreter's timing model (interpreter/timing.py) on hand-computed cases: the compute
stream, sync and async collectives, group arrival, the engine's FIFO, the report's
definitions, peak memory, --timing-only (abstract) runs and the Chrome trace.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from shardc.diagnostics import InterpreterError
from shardc.dialects import collective, hlo
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel
from shardc.interpreter.devices import Executor
from shardc.interpreter.testing import parse, run_global, time_program
from shardc.interpreter.timing import KINDS, REPORT_KEYS, InFlight, first_step_push

V5E = get_chip("v5e")

# Costs by hand ---------------------------------------------------------------------------

DOT_BF16 = "(tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16>"
T_MXU = 2 * 1024**3 / 1.97e14  # compute-bound: 3 x 2 MiB / 8.1e11 = 7.8 us < 10.9 us


def _dot_time() -> float:
    """The dot's cost: the tiled loop `lower-to-tpu` makes of it (hardware/kernel.py), its
    MXU time plus the first blocks' fetch, the last write-back and the VMEM traffic."""
    text = f"""func.func @f(%a: tensor<1024x1024xbf16>, %b: tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16> {{
  %c = hlo.dot %a, %b, contracting_dims = [1] x [0] : {DOT_BF16}
  func.return %c : tensor<1024x1024xbf16>
}}"""
    dot = next(o for o in parse(text).walk() if isinstance(o, hlo.DotOp))
    time = CostModel(V5E).op_cost(dot).time
    assert T_MXU < time < 1.5 * T_MXU
    return time


T_DOT = _dot_time()


def ring(n: int, body: str, args: str, results: str) -> str:
    return f"""
spmd.mesh @m = <["x"={n}]>
func.func @main({args}) -> ({results}) attributes {{spmd.per_device_io}} {{
{body}
}}"""


def collective_time(line: str, n: int = 4) -> float:
    """The cost model's time of one collective over a line of `n` v5e chips (the model
    itself is tested in test_hardware.py; here it is the unit the timeline adds up)."""
    module = parse(f'spmd.mesh @m = <["x"={n}]>\n' + line)
    op = next(o for o in module.walk() if isinstance(o, collective.CollectiveOp))
    mesh = next(o for o in module.walk() if o.name == "spmd.mesh").mesh  # pyright: ignore
    return CostModel(V5E, mesh).collective_time(op)  # pyright: ignore


def all_reduce_time(shape: str, n: int = 4) -> float:
    """An all_reduce of tensor<shape> over a line of `n` v5e chips (ring RS + AG:
    2 V / W * (N-1)/N, a hop per step, the wrap edge back along the line)."""
    t = f"tensor<{shape}>"
    return collective_time(
        f"""func.func @f(%x: {t}) -> {t} attributes {{spmd.partitioned}} {{
  %r = collective.all_reduce add %x on @m["x"] : {t}
  func.return %r : {t}
}}""",
        n,
    )


def all_gather_time(shape: str, out: str, n: int = 4) -> float:
    t, o = f"tensor<{shape}>", f"tensor<{out}>"
    return collective_time(
        f"""func.func @f(%x: {t}) -> {o} attributes {{spmd.partitioned}} {{
  %r = collective.all_gather %x on @m["x"], dim = 0 : ({t}) -> {o}
  func.return %r : {o}
}}""",
        n,
    )


def test_one_dot_takes_its_roofline_time() -> None:
    text = f"""
func.func @main(%a: tensor<1024x1024xbf16>, %b: tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16> {{
  %r = hlo.dot %a, %b, contracting_dims = [1] x [0] : {DOT_BF16}
  func.return %r : tensor<1024x1024xbf16>
}}"""
    r = time_program(text).report()
    assert r["devices"] == 1
    assert r["step_time_s"] == pytest.approx(T_DOT)
    assert r["compute_time_s"] == pytest.approx(T_DOT)
    assert r["roofline_time_s"] == pytest.approx(T_DOT)
    assert r["exposed_comm_time_s"] == 0.0
    assert r["collectives"] == dict.fromkeys(KINDS, 0) and r["comm_bytes"] == 0
    # an HBM-bound op: an add of two 4 MiB f32 arrays reads 8 MiB and writes 4 MiB
    text = """
func.func @main(%a: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %r = hlo.add %a, %a : tensor<1024x1024xf32>
  func.return %r : tensor<1024x1024xf32>
}"""
    # (its tiled loop: the HBM time plus the first blocks' fetch, which nothing overlaps)
    hbm = 3 * 4 * 2**20 / 8.1e11
    assert hbm < time_program(text).report()["step_time_s"] < 1.05 * hbm


def test_report_keys_are_exactly_designs() -> None:
    r = time_program(
        ring(
            4,
            """
  %s = collective.all_reduce add %x on @m["x"] : tensor<8xf32>
  func.return %s : tensor<8xf32>""",
            "%x: tensor<8xf32>",
            "tensor<8xf32>",
        )
    ).report()
    assert set(REPORT_KEYS) <= set(r)
    assert REPORT_KEYS == (
        "devices",
        "step_time_s",
        "compute_time_s",
        "exposed_comm_time_s",
        "roofline_time_s",
        "collectives",
        "comm_bytes",
        "peak_memory_bytes",
    )
    assert list(r["collectives"]) == [
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "all_to_all",
        "permute",
    ]
    assert r["collectives"]["all_reduce"] == 1 and r["comm_bytes"] == 32
    assert isinstance(r["comm_bytes"], int) and isinstance(r["peak_memory_bytes"], int)
    json.dumps(r)  # serializable as is


def test_sync_all_reduce_blocks_compute() -> None:
    text = ring(
        4,
        f"""
  %y = hlo.dot %a, %b, contracting_dims = [1] x [0] : {DOT_BF16}
  %s = collective.all_reduce add %y on @m["x"] : tensor<1024x1024xbf16>
  %z = hlo.dot %a, %b, contracting_dims = [1] x [0] : {DOT_BF16}
  func.return %s, %z : tensor<1024x1024xbf16>, tensor<1024x1024xbf16>""",
        "%a: tensor<1024x1024xbf16>, %b: tensor<1024x1024xbf16>",
        "tensor<1024x1024xbf16>, tensor<1024x1024xbf16>",
    )
    t_ar = all_reduce_time("1024x1024xbf16")
    tl = time_program(text)
    r = tl.report()
    assert r["step_time_s"] == pytest.approx(2 * T_DOT + t_ar)  # the second dot waits
    assert r["compute_time_s"] == pytest.approx(2 * T_DOT)
    assert r["exposed_comm_time_s"] == pytest.approx(t_ar)
    assert r["roofline_time_s"] == pytest.approx(max(2 * T_DOT, t_ar))
    assert r["collectives"]["all_reduce"] == 1 and r["comm_bytes"] == 2 * 2**20
    d = tl.devices[2]
    ((op, issued, start, end),) = d.collectives
    assert (issued, start, end) == pytest.approx((T_DOT, T_DOT, T_DOT + t_ar))
    assert [s for _, s, _ in d.compute] == pytest.approx([0, T_DOT + t_ar])


def test_async_pair_overlaps_an_independent_dot() -> None:
    def program(t: str, n: int = 4) -> str:
        return ring(
            n,
            f"""
  %f = collective.all_reduce_start add %x on @m["x"] : {t} -> !collective.future<{t}>
  %y = hlo.dot %a, %b, contracting_dims = [1] x [0] : {DOT_BF16}
  %s = collective.done %f : !collective.future<{t}> -> {t}
  func.return %s, %y : {t}, tensor<1024x1024xbf16>""",
            f"%x: {t}, %a: tensor<1024x1024xbf16>, %b: tensor<1024x1024xbf16>",
            f"{t}, tensor<1024x1024xbf16>",
        )

    # communication longer than the dot: step = the all-reduce, exposed = the rest
    t_ar = all_reduce_time("2048x1024xf32")
    assert t_ar > T_DOT
    r = time_program(program("tensor<2048x1024xf32>"), abstract=True).report()
    assert r["step_time_s"] == pytest.approx(max(T_DOT, t_ar))
    assert r["step_time_s"] < T_DOT + t_ar
    assert r["compute_time_s"] == pytest.approx(T_DOT)
    assert r["exposed_comm_time_s"] == pytest.approx(t_ar - T_DOT)
    assert r["roofline_time_s"] == pytest.approx(r["step_time_s"])  # perfectly overlapped
    # a short all-reduce hides completely behind the dot (on 2 chips: on a line of 4 its
    # 6 ring steps' hop latencies alone take longer than the dot)
    t_small = all_reduce_time("16xf32", 2)
    r = time_program(program("tensor<16xf32>", 2)).report()
    assert t_small < T_DOT
    assert r["step_time_s"] == pytest.approx(T_DOT) and r["exposed_comm_time_s"] == pytest.approx(0)


def test_engine_overlaps_the_next_rings_first_step_only() -> None:
    """
    Two bandwidth-bound rings in flight: the second begins its first step's hop latency
    before the first ends (a line of 4: its chain of hops 1 + 1 + 3 = 5 us over 3 steps),
    its bytes after the first's (they share the links): `timing.engine_window`. The
    second's first step, sent at its `_start`, holds the first's links meanwhile: the
    first ends later by it (`timing.first_step_push`), the second no later.
    """
    t = "tensor<2048x1024xf32>"
    text = ring(
        4,
        f"""
  %f = collective.all_reduce_start add %x on @m["x"] : {t} -> !collective.future<{t}>
  %g = collective.all_gather_start %x on @m["x"], dim = 0 : ({t}) -> !collective.future<tensor<8192x1024xf32>>
  %y = hlo.dot %a, %b, contracting_dims = [1] x [0] : {DOT_BF16}
  %s = collective.done %f : !collective.future<{t}> -> {t}
  %h = collective.done %g : !collective.future<tensor<8192x1024xf32>> -> tensor<8192x1024xf32>
  func.return %s, %h, %y : {t}, tensor<8192x1024xf32>, tensor<1024x1024xbf16>""",
        f"%x: {t}, %a: tensor<1024x1024xbf16>, %b: tensor<1024x1024xbf16>",
        f"{t}, tensor<8192x1024xf32>, tensor<1024x1024xbf16>",
    )
    t_ar = all_reduce_time("2048x1024xf32")
    t_ag = all_gather_time("2048x1024xf32", "8192x1024xf32")
    first_step = 5 * V5E.hop_latency / 3
    tl = time_program(text)
    (op1, _, s1, e1), (op2, _, s2, e2) = tl.devices[0].collectives
    ar, ag = tl.collective_costs[op1], tl.collective_costs[op2]
    ahead = InFlight(0.0, t_ar, ar.first_step, ar.overlap, ar.axes)
    push = first_step_push(0.0, ahead, ag.first_step)
    # the all_gather's first step (8 MiB) shares the all_reduce's first step (2 MiB),
    # crosses in its hop latency and shares its next steps: all of it but that latency
    assert push == pytest.approx(ag.first_step - ar.overlap) and push > 0.1 * t_ar
    assert (s1, e1) == pytest.approx((0, t_ar + push))
    queued = t_ar - first_step  # queued behind the first, but for its first step
    assert (s2, e2) == pytest.approx((queued, queued + t_ag))
    r = tl.report()
    assert r["step_time_s"] == pytest.approx(queued + t_ag)
    assert r["collectives"]["all_reduce"] == 1 and r["collectives"]["all_gather"] == 1
    assert r["comm_time_s"] == pytest.approx(queued + t_ag)  # the engine's busy time


IF_DEVICE_0_DOT = f"""
  %i = spmd.axis_index @m["x"] : tensor<i32>
  %c = tensor.extract %i[] : tensor<i32>
  %zero = arith.constant 0 : i32
  %p = arith.cmpi eq, %c, %zero : i32
  %w = scf.if %p -> (tensor<1024x1024xbf16>) {{
    %d = hlo.dot %a, %b, contracting_dims = [1] x [0] : {DOT_BF16}
    scf.yield %d : tensor<1024x1024xbf16>
  }} else {{
    scf.yield %a : tensor<1024x1024xbf16>
  }}"""


def test_a_collective_waits_for_its_last_member() -> None:
    text = ring(
        4,
        IF_DEVICE_0_DOT
        + """
  %s = collective.all_reduce add %x on @m["x"] : tensor<1024xf32>
  func.return %s, %w : tensor<1024xf32>, tensor<1024x1024xbf16>""",
        "%x: tensor<1024xf32>, %a: tensor<1024x1024xbf16>, %b: tensor<1024x1024xbf16>",
        "tensor<1024xf32>, tensor<1024x1024xbf16>",
    )
    t_ar = all_reduce_time("1024xf32")
    tl = time_program(text)
    for d in tl.devices:
        ((_, issued, start, end),) = d.collectives
        assert issued == pytest.approx(T_DOT if d.device == 0 else 0)
        assert (start, end) == pytest.approx((T_DOT, T_DOT + t_ar))  # everyone waits for device 0
    r = tl.report()
    assert r["step_time_s"] == pytest.approx(T_DOT + t_ar)
    assert r["slowest_device"] == 0 and r["compute_time_s"] == pytest.approx(T_DOT)
    late = r["per_device"][1]
    assert late["compute_time_s"] == 0 and late["exposed_comm_time_s"] == pytest.approx(
        T_DOT + t_ar
    )
    # the roofline bound is per device: device 0's compute or anyone's communication
    assert r["roofline_time_s"] == pytest.approx(max(T_DOT, t_ar))


def test_counts_variadic_once_start_under_kind_and_loops_per_iteration() -> None:
    text = ring(
        4,
        """
  %a, %b = collective.all_reduce add %x, %y on @m["x"] : tensor<8xf32>, tensor<4xf32>
  %f = collective.permute_start %a on @m["x"], shift = 1 : tensor<8xf32> -> !collective.future<tensor<8xf32>>
  %p = collective.done %f : !collective.future<tensor<8xf32>> -> tensor<8xf32>
  %lb = arith.constant 0 : index
  %ub = arith.constant 3 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%v = %p) -> (tensor<8xf32>) {
    %g = collective.all_gather %v on @m["x"], dim = 0 : (tensor<8xf32>) -> tensor<32xf32>
    %s = hlo.slice %g [0:8] : (tensor<32xf32>) -> tensor<8xf32>
    scf.yield %s : tensor<8xf32>
  }
  func.return %r, %b : tensor<8xf32>, tensor<4xf32>""",
        "%x: tensor<8xf32>, %y: tensor<4xf32>",
        "tensor<8xf32>, tensor<4xf32>",
    )
    r = time_program(text).report()
    assert r["collectives"] == {
        "all_reduce": 1,
        "all_gather": 3,
        "reduce_scatter": 0,
        "all_to_all": 0,
        "permute": 1,
    }
    assert r["comm_bytes_by_kind"] == {
        "all_reduce": 48,
        "all_gather": 96,
        "reduce_scatter": 0,
        "all_to_all": 0,
        "permute": 32,
    }
    assert r["comm_bytes"] == 48 + 96 + 32


def test_bounds_hold_on_every_example() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "examples"
    for path in sorted(root.glob("*.mlir")):
        text = path.read_text()
        parse(text)  # every example parses
        if "spmd.partitioned" not in text:
            continue
        for chip in ("v4", "v5e", "v5p", "v6e"):
            tl = time_program(text, chip, abstract=True)
            r = tl.report()
            slow = tl.slowest
            assert r["roofline_time_s"] <= r["step_time_s"] * (1 + 1e-12), path
            assert r["step_time_s"] <= slow.busy + slow.comm + 1e-15 or len(tl.devices) > 1, path
            assert r["step_time_s"] <= sum(d.busy + d.comm for d in tl.devices) * (1 + 1e-12), path
            assert r["exposed_comm_time_s"] == pytest.approx(r["step_time_s"] - r["compute_time_s"])


def test_bounds_on_a_scheduled_program() -> None:
    # sync collectives: step = sum; async with nothing between: same; everything symmetric
    t = "tensor<512x512xf32>"
    text = ring(
        8,
        f"""
  %f = collective.all_reduce_start add %x on @m["x"] : {t} -> !collective.future<{t}>
  %y = hlo.dot %x, %x, contracting_dims = [1] x [0] : ({t}, {t}) -> {t}
  %s = collective.done %f : !collective.future<{t}> -> {t}
  %z = collective.all_reduce add %y on @m["x"] : {t}
  %w = hlo.dot %z, %s, contracting_dims = [1] x [0] : ({t}, {t}) -> {t}
  func.return %w : {t}""",
        f"%x: {t}",
        t,
    )
    for chip in ("v5e", "v5p"):
        tl = time_program(text, chip, abstract=True)
        r = tl.report()
        d = tl.devices[0]
        assert r["roofline_time_s"] <= r["step_time_s"] <= d.busy + d.comm + 1e-15
        assert r["roofline_time_s"] == pytest.approx(max(d.busy, d.comm))


def test_timing_does_not_change_values() -> None:
    from pathlib import Path

    from shardc.interpreter import io

    text = (Path(__file__).resolve().parents[2] / "examples" / "collectives.mlir").read_text()
    module = parse(text)
    function = io.find_entry(module, None, "x")
    sig = io.signature(module, function, "x")
    inputs = io.random_inputs(sig, 3)
    plain = io.run(Executor(module), sig, inputs)
    timed = io.run(Executor(module, chip=V5E), sig, inputs)
    for k in plain:
        assert np.array_equal(plain[k], timed[k])


# Peak memory -----------------------------------------------------------------------------


def test_peak_memory_by_hand() -> None:
    # x: 64 B (argument, live throughout). y = exp x: +64 -> 128. start(y): +64 (its
    # result buffer) -> 192, and y stays live until the done. t = 1 KiB constant -> 1216;
    # s = reduce t: +4 -> 1220 (the peak), then t dies -> 196. done: hands the future's
    # buffer to r, y dies -> 132. o = r + r: +64 -> 196, r dies -> 132. d = exp x is never
    # used: +64 -> 196 and freed at once.
    text = ring(
        2,
        """
  %y = hlo.exp %x : tensor<4x4xf32>
  %f = collective.all_reduce_start add %y on @m["x"] : tensor<4x4xf32> -> !collective.future<tensor<4x4xf32>>
  %t = hlo.constant dense<1.0> : tensor<16x16xf32>
  %s = hlo.reduce add %t, dims = [0, 1] : (tensor<16x16xf32>) -> tensor<f32>
  %r = collective.done %f : !collective.future<tensor<4x4xf32>> -> tensor<4x4xf32>
  %o = hlo.add %r, %r : tensor<4x4xf32>
  %d = hlo.exp %x : tensor<4x4xf32>
  func.return %o, %s : tensor<4x4xf32>, tensor<f32>""",
        "%x: tensor<4x4xf32>",
        "tensor<4x4xf32>, tensor<f32>",
    )
    tl = time_program(text)
    assert tl.report()["peak_memory_bytes"] == 1220
    for d in tl.devices:
        assert d.peak == 1220 and d.peak_op is not None and d.peak_op.name == "hlo.reduce"
        assert d.live == 64  # after the return only the argument x (the results went to the caller)
    # timing-only: the same accounting from types alone
    assert time_program(text, abstract=True).report()["peak_memory_bytes"] == 1220


def test_peak_memory_level_g_chain_and_loop() -> None:
    # a: 4 KiB argument; b = a + a (4 KiB) -> 8; c = b * b -> 12 KiB peak, b dies -> 8
    text = """
func.func @main(%a: tensor<1024xf32>) -> tensor<1024xf32> {
  %b = hlo.add %a, %a : tensor<1024xf32>
  %c = hlo.mul %b, %b : tensor<1024xf32>
  func.return %c : tensor<1024xf32>
}"""
    assert time_program(text).report()["peak_memory_bytes"] == 3 * 4096
    # values used inside a loop live until the loop ends; carried values are not counted twice
    text = """
func.func @main(%a: tensor<1024xf32>) -> tensor<1024xf32> {
  %b = hlo.add %a, %a : tensor<1024xf32>
  %lb = arith.constant 0 : index
  %ub = arith.constant 4 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%v = %a) -> (tensor<1024xf32>) {
    %n = hlo.add %v, %b : tensor<1024xf32>
    scf.yield %n : tensor<1024xf32>
  }
  func.return %r : tensor<1024xf32>
}"""
    # a, b, and n in the body: 12 KiB; at the loop's end its result: a, b, r = 12 KiB
    assert time_program(text).report()["peak_memory_bytes"] == 3 * 4096


# --timing-only ---------------------------------------------------------------------------


HUGE = """
spmd.mesh @m = <["data"=2, "model"=4]>
func.func @main(%x: tensor<8192x65536xbf16>, %w1: tensor<65536x65536xbf16>, %w2: tensor<65536x65536xbf16>) -> tensor<8192x65536xbf16> attributes {spmd.partitioned} {
  %h = hlo.dot %x, %w1, contracting_dims = [1] x [0] : (tensor<8192x65536xbf16>, tensor<65536x65536xbf16>) -> tensor<8192x65536xbf16>
  %z = hlo.constant dense<0.0> : tensor<bf16>
  %zb = hlo.broadcast %z, dims = [] : (tensor<bf16>) -> tensor<8192x65536xbf16>
  %a = hlo.max %h, %zb : tensor<8192x65536xbf16>
  %f = collective.all_gather_start %a on @m["model"], dim = 0 : (tensor<8192x65536xbf16>) -> !collective.future<tensor<32768x65536xbf16>>
  %y = hlo.dot %a, %w2, contracting_dims = [1] x [0] : (tensor<8192x65536xbf16>, tensor<65536x65536xbf16>) -> tensor<8192x65536xbf16>
  %g = collective.done %f : !collective.future<tensor<32768x65536xbf16>> -> tensor<32768x65536xbf16>
  %s = collective.reduce_scatter add %g on @m["model"], dim = 0 : (tensor<32768x65536xbf16>) -> tensor<8192x65536xbf16>
  %r = collective.all_reduce add %y on @m["data"] : tensor<8192x65536xbf16>
  %o = hlo.add %r, %s : tensor<8192x65536xbf16>
  func.return %o : tensor<8192x65536xbf16>
}"""


def test_timing_only_costs_a_huge_program_fast() -> None:
    start = time.perf_counter()
    tl = time_program(HUGE, "v5p", abstract=True)
    elapsed = time.perf_counter() - start
    assert elapsed < 3.0
    r = tl.report()
    t_dot = 2 * 8192 * 65536 * 65536 / 4.59e14
    assert r["compute_time_s"] > 2 * t_dot
    assert r["collectives"]["all_gather"] == 1 and r["collectives"]["all_reduce"] == 1
    assert (
        r["comm_bytes"] == (1 + 4 + 1) * 2**30
    )  # all_gather 1 GiB, reduce_scatter 4, all_reduce 1
    assert r["peak_memory_bytes"] > 2 * 65536 * 65536 * 2  # both weights are live


def test_timing_only_matches_a_value_run() -> None:
    text = ring(
        4,
        IF_DEVICE_0_DOT
        + f"""
  %f = collective.all_gather_start %x on @m["x"], dim = 0 : (tensor<256xf32>) -> !collective.future<tensor<1024xf32>>
  %y = hlo.dot %w, %b, contracting_dims = [1] x [0] : {DOT_BF16}
  %g = collective.done %f : !collective.future<tensor<1024xf32>> -> tensor<1024xf32>
  func.return %g, %y : tensor<1024xf32>, tensor<1024x1024xbf16>""",
        "%x: tensor<256xf32>, %a: tensor<1024x1024xbf16>, %b: tensor<1024x1024xbf16>",
        "tensor<1024xf32>, tensor<1024x1024xbf16>",
    )
    concrete = time_program(text).report()
    abstract = time_program(text, abstract=True).report()
    assert abstract == concrete
    assert concrete["step_time_s"] == pytest.approx(2 * T_DOT)


def test_timing_only_loops_run_but_value_branches_are_errors() -> None:
    text = ring(
        2,
        """
  %lb = arith.constant 0 : index
  %ub = arith.constant 5 : index
  %st = arith.constant 1 : index
  %r = scf.for %i = %lb to %ub step %st iter_args(%v = %x) -> (tensor<4096x4096xf32>) {
    %p = collective.permute %v on @m["x"], shift = 1 : tensor<4096x4096xf32>
    scf.yield %p : tensor<4096x4096xf32>
  }
  func.return %r : tensor<4096x4096xf32>""",
        "%x: tensor<4096x4096xf32>",
        "tensor<4096x4096xf32>",
    )
    r = time_program(text, abstract=True).report()
    assert r["collectives"]["permute"] == 5
    text = ring(
        2,
        """
  %s = hlo.reduce add %x, dims = [0] : (tensor<4xf32>) -> tensor<f32>
  %z = hlo.constant dense<0.0> : tensor<f32>
  %c = hlo.compare GT, %s, %z : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %b = tensor.extract %c[] : tensor<i1>
  %r = scf.if %b -> (tensor<4xf32>) {
    scf.yield %x : tensor<4xf32>
  } else {
    %n = hlo.neg %x : tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>""",
        "%x: tensor<4xf32>",
        "tensor<4xf32>",
    )
    with pytest.raises(InterpreterError, match="branch condition depends on values --timing-only"):
        time_program(text, abstract=True)


def test_timing_only_still_reports_deadlocks() -> None:
    text = ring(
        2,
        """
  %i = spmd.axis_index @m["x"] : tensor<i32>
  %c = tensor.extract %i[] : tensor<i32>
  %zero = arith.constant 0 : i32
  %p = arith.cmpi eq, %c, %zero : i32
  %r = scf.if %p -> (tensor<1024x1024xf32>) {
    scf.yield %x : tensor<1024x1024xf32>
  } else {
    %s = collective.all_reduce add %x on @m["x"] : tensor<1024x1024xf32>
    scf.yield %s : tensor<1024x1024xf32>
  }
  func.return %r : tensor<1024x1024xf32>""",
        "%x: tensor<1024x1024xf32>",
        "tensor<1024x1024xf32>",
    )
    with pytest.raises(InterpreterError, match="deadlock"):
        time_program(text, abstract=True)


# Trace -----------------------------------------------------------------------------------


def test_trace_structure_and_no_overlap_on_a_compute_stream() -> None:
    text = ring(
        4,
        IF_DEVICE_0_DOT
        + f"""
  %f = collective.all_reduce_start add %x on @m["x"] : tensor<2048x1024xf32> -> !collective.future<tensor<2048x1024xf32>>
  %y = hlo.dot %w, %b, contracting_dims = [1] x [0] : {DOT_BF16}
  %y2 = hlo.dot %y, %b, contracting_dims = [1] x [0] : {DOT_BF16}
  %g = collective.done %f : !collective.future<tensor<2048x1024xf32>> -> tensor<2048x1024xf32>
  %s = collective.all_reduce add %y2 on @m["x"] : tensor<1024x1024xbf16>
  func.return %g, %s : tensor<2048x1024xf32>, tensor<1024x1024xbf16>""",
        "%x: tensor<2048x1024xf32>, %a: tensor<1024x1024xbf16>, %b: tensor<1024x1024xbf16>",
        "tensor<2048x1024xf32>, tensor<1024x1024xbf16>",
    )
    tl = time_program(text)
    trace = json.loads(tl.trace_json())
    events = trace["traceEvents"]
    assert isinstance(events, list) and events
    meta = [e for e in events if e["ph"] == "M"]
    names = {(e["pid"], e.get("tid"), e["name"]): e["args"].get("name") for e in meta}
    for d in range(4):
        assert names[(d, None, "process_name")] == f"device {d}"
        assert names[(d, 0, "thread_name")] == "compute"
        assert names[(d, 1, "thread_name")] == "collectives"
    slices = [e for e in events if e["ph"] == "X"]
    assert {e["ph"] for e in events} == {"M", "X"}
    for e in slices:
        assert {"name", "ph", "pid", "tid", "ts", "dur", "args"} <= set(e)
        assert e["dur"] >= 0 and e["ts"] >= 0 and e["pid"] in range(4) and e["tid"] in (0, 1)
        assert "op" in e["args"]
    dots = [e for e in slices if e["name"] == "hlo.dot"]
    assert dots and all(
        e["args"]["flops"] == 2 * 1024**3 and e["args"]["bytes"] == 3 * 2 * 2**20 for e in dots
    )
    assert dots[0]["dur"] == pytest.approx(T_DOT * 1e6)
    assert all(e["args"]["loc"].startswith("<test>:") for e in dots)
    colls = [e for e in slices if e["tid"] == 1]
    assert {e["name"] for e in colls} == {"collective.all_reduce_start", "collective.all_reduce"}
    assert all("bytes" in e["args"] for e in colls)
    for d in range(4):
        for tid in (0, 1):
            stream = sorted(
                (e["ts"], e["ts"] + e["dur"]) for e in slices if e["pid"] == d and e["tid"] == tid
            )
            for (_, end), (start, _) in zip(stream, stream[1:], strict=False):
                assert start >= end - 1e-9, (d, tid, stream)
    # the last event on the slowest device ends at the step time
    end = max(e["ts"] + e["dur"] for e in slices)
    assert end == pytest.approx(tl.report()["step_time_s"] * 1e6)


def test_level_g_trace_has_one_compute_track() -> None:
    text = """
func.func @main(%a: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %b = hlo.exp %a : tensor<64x64xf32>
  %c = hlo.dot %b, %a, contracting_dims = [1] x [0] : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  func.return %c : tensor<64x64xf32>
}"""
    trace = time_program(text).trace()
    threads = [e for e in trace["traceEvents"] if e["name"] == "thread_name"]
    assert [e["args"]["name"] for e in threads] == ["compute"]
    assert [e["name"] for e in trace["traceEvents"] if e["ph"] == "X"] == ["hlo.exp", "hlo.dot"]


def test_costs_come_from_the_shared_cost_model() -> None:
    text = ring(
        4,
        """
  %y = hlo.exp %x : tensor<256x256xf32>
  %s = collective.reduce_scatter add %y on @m["x"], dim = 0 : (tensor<256x256xf32>) -> tensor<64x256xf32>
  func.return %s : tensor<64x256xf32>""",
        "%x: tensor<256x256xf32>",
        "tensor<64x256xf32>",
    )
    module = parse(text)
    mesh = next(o for o in module.walk() if o.name == "spmd.mesh").mesh  # pyright: ignore
    model = CostModel(V5E, mesh)
    exp = next(o for o in module.walk() if isinstance(o, hlo.ExpOp))
    rs = next(o for o in module.walk() if isinstance(o, collective.ReduceScatterOp))
    r = time_program(text).report()
    assert r["compute_time_s"] == model.op_cost(exp).time
    assert r["step_time_s"] == pytest.approx(model.op_cost(exp).time + model.collective_time(rs))  # pyright: ignore


def test_untimed_executor_keeps_no_timeline() -> None:
    text = """
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = hlo.add %a, %a : tensor<4xf32>
  func.return %b : tensor<4xf32>
}"""
    assert run_global(text)["out_0"].shape == (4,)
    module = parse(text)
    ex = Executor(module)
    ex.run(next(iter(module.ops)), [[np.ones(4, np.float32)]])  # pyright: ignore
    assert ex.timeline is None


# Properties on generated programs --------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SIZES = {"a": "tensor<64xf32>", "b": "tensor<65536xf32>"}
OPS = st.lists(
    st.tuples(
        st.sampled_from(["exp", "dot", "ar", "ag", "start_ar", "start_ag", "done", "dev0"]),
        st.sampled_from(["a", "b"]),
        st.integers(0, 3),
    ),
    max_size=14,
)


def generated_program(ops: list[tuple[str, str, int]]) -> str:
    lines: list[str] = []
    pending: list[tuple[str, str]] = []
    n = 0
    dot_t = "tensor<256x256xf32>"
    for kind, arg, pick in ops:
        n += 1
        t = SIZES[arg]
        if kind == "exp":
            lines.append(f"  %v{n} = hlo.exp %{arg} : {t}")
        elif kind == "dot":
            lines.append(
                f"  %v{n} = hlo.dot %m, %m, contracting_dims = [1] x [0] : ({dot_t}, {dot_t}) -> {dot_t}"
            )
        elif kind == "ar":
            lines.append(f'  %v{n} = collective.all_reduce add %{arg} on @m["x"] : {t}')
        elif kind == "ag":
            lines.append(
                f'  %v{n} = collective.all_gather %a on @m["x"], dim = 0 : (tensor<64xf32>) -> tensor<256xf32>'
            )
        elif kind == "start_ar":
            lines.append(
                f'  %f{n} = collective.all_reduce_start add %{arg} on @m["x"] : {t} -> !collective.future<{t}>'
            )
            pending.append((f"%f{n}", t))
        elif kind == "start_ag":
            lines.append(
                f'  %f{n} = collective.all_gather_start %a on @m["x"], dim = 0 : (tensor<64xf32>) -> !collective.future<tensor<256xf32>>'
            )
            pending.append((f"%f{n}", "tensor<256xf32>"))
        elif kind == "done" and pending:
            f, rt = pending.pop(pick % len(pending))
            lines.append(f"  %v{n} = collective.done {f} : !collective.future<{rt}> -> {rt}")
        elif kind == "dev0":
            lines.append(f"""  %i{n} = spmd.axis_index @m["x"] : tensor<i32>
  %c{n} = tensor.extract %i{n}[] : tensor<i32>
  %z{n} = arith.constant {pick} : i32
  %p{n} = arith.cmpi eq, %c{n}, %z{n} : i32
  %v{n} = scf.if %p{n} -> ({t}) {{
    %e{n} = hlo.exp %{arg} : {t}
    scf.yield %e{n} : {t}
  }} else {{
    scf.yield %{arg} : {t}
  }}""")
    for k, (f, rt) in enumerate(pending):
        lines.append(f"  %last{k} = collective.done {f} : !collective.future<{rt}> -> {rt}")
    body = "\n".join(lines)
    return ring(
        4,
        body + "\n  func.return %a : tensor<64xf32>",
        "%a: tensor<64xf32>, %b: tensor<65536xf32>, %m: tensor<256x256xf32>",
        "tensor<64xf32>",
    )


@settings(max_examples=25, deadline=None)
@given(OPS)
def test_generated_programs_respect_the_bounds_and_stream_order(ops) -> None:
    text = generated_program(ops)
    tl = time_program(text, abstract=True)
    r = tl.report()
    assert r["step_time_s"] == max(d.finish for d in tl.devices)
    assert r["roofline_time_s"] <= r["step_time_s"] * (1 + 1e-12) + 1e-18
    assert r["step_time_s"] <= sum(d.busy + d.comm for d in tl.devices) * (1 + 1e-12) + 1e-18
    assert 0 <= r["exposed_comm_time_s"] <= r["step_time_s"]
    for d in tl.devices:
        assert d.busy <= d.finish * (1 + 1e-12) + 1e-18 and d.comm <= d.finish * (1 + 1e-12) + 1e-18
        stream = sorted([(s, e) for _, s, e in d.compute] + [(s, e) for _, s, e in d.waits])
        assert all(b[0] >= a[1] - 1e-15 for a, b in zip(stream, stream[1:], strict=False))
        # the engine, in issue order: each collective overlaps the ones ahead by at most
        # its overlap, their ends pushed by the first steps of those at or after it
        free = 0.0
        costs = [tl.collective_costs[op] for op, *_ in d.collectives]
        for k, (_, issued, start, end) in enumerate(d.collectives):
            overlap = costs[k].overlap
            pushes = sum(c.first_step for c in costs[k:])
            assert 0 <= overlap <= end - start + 1e-15
            assert issued <= start and start >= free - overlap - pushes - 1e-15
            free = max(free, end)
    # busy + idle = finish on the compute stream: idle time is exactly the waits
    slow = tl.slowest
    assert sum(e - s for _, s, e in slow.waits) == pytest.approx(
        r["exposed_comm_time_s"], abs=1e-15
    )
    # the value run times the same program identically
    assert time_program(text).report() == r


def test_slices_flatten_the_timeline() -> None:
    text = ring(
        2,
        f"""
  %y = hlo.dot %a, %a, contracting_dims = [1] x [0] : {DOT_BF16}
  %s = collective.all_reduce add %x on @m["x"] : tensor<1024xf32>
  func.return %s, %y : tensor<1024xf32>, tensor<1024x1024xbf16>""",
        "%x: tensor<1024xf32>, %a: tensor<1024x1024xbf16>",
        "tensor<1024xf32>, tensor<1024x1024xbf16>",
    )
    tl = time_program(text, abstract=True)
    slices = tl.slices()
    assert [(s.device, s.stream, s.op.name) for s in slices] == [
        (0, "compute", "hlo.dot"),
        (0, "wait", "collective.all_reduce"),
        (0, "collectives", "collective.all_reduce"),
        (1, "compute", "hlo.dot"),
        (1, "wait", "collective.all_reduce"),
        (1, "collectives", "collective.all_reduce"),
    ]
    assert slices[0].flops == 2 * 1024**3 and slices[0].bytes == 3 * 2 * 2**20
    assert slices[2].bytes == 4096 and slices[2].start == pytest.approx(T_DOT)
    assert tl.trace()["otherData"]["step_time_s"] == tl.report()["step_time_s"]
