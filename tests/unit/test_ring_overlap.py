"""
Overlap in the kernel (lowering/ring_steps.py): the ring steps of a `_start` interleaved
into the tiled loop of the compute before its `done`. The kernels give level S's results
with none of the simulator's diagnostics, for one-way, bidirectional and multi-axis
collectives; the overlap shows in the step time; and seeded bugs in the interleaved
rings (a dropped wait, a buffer reused while a DMA still reads it, a wait on the wrong
semaphore) are caught by the simulator's checks.
"""

from __future__ import annotations

import pytest
import shardc
from shardc.diagnostics import InterpreterError
from shardc.dialects import make_context, tpu
from shardc.interpreter.level_t import run_level_t
from shardc.parsing import parse_and_verify
from xdsl.ir import Operation

from tests.unit.test_lower_to_tpu import _kernel, check, lower, random_inputs

# name -> (mesh, axes, operand shape, result shape, op with {f} for the future type)
COLLECTIVES = {
    "all_gather": (
        '"x"=4',
        '["x"]',
        "64x128",
        "256x128",
        "all_gather_start %x on @m{axes}, dim = 0 : (tensor<64x128xf32>) -> {f}",
    ),
    "reduce_scatter": (
        '"x"=4',
        '["x"]',
        "256x128",
        "64x128",
        "reduce_scatter_start add %x on @m{axes}, dim = 0 : (tensor<256x128xf32>) -> {f}",
    ),
    "all_reduce": (
        '"x"=4',
        '["x"]',
        "128x128",
        "128x128",
        "all_reduce_start add %x on @m{axes} : tensor<128x128xf32> -> {f}",
    ),
    "all_reduce_2x2": (
        '"x"=2, "y"=2',
        '["x", "y"]',
        "128x128",
        "128x128",
        "all_reduce_start add %x on @m{axes} : tensor<128x128xf32> -> {f}",
    ),
    "all_gather_2x2": (
        '"x"=2, "y"=2',
        '["x", "y"]',
        "64x128",
        "256x128",
        "all_gather_start %x on @m{axes}, dim = 0 : (tensor<64x128xf32>) -> {f}",
    ),
}


def program(name: str, done_first: bool = False) -> str:
    """`name`'s `_start`, a 512^3 i32 dot, the `done` (`done_first`: right after the
    `_start`, nothing to overlap)."""
    mesh, axes, arg, res, op = COLLECTIVES[name]
    future = f"!collective.future<tensor<{res}xf32>>"
    start = f"  %f = collective.{op.format(axes=axes, f=future)}"
    done = f"  %g = collective.done %f : {future} -> tensor<{res}xf32>"
    # i32: exact whatever the blocks of the contracting dimension (the placement asks
    # the tile plan for more blocks).
    dot = (
        "  %d = hlo.dot %a, %b, contracting_dims = [1] x [0] : "
        "(tensor<512x512xi32>, tensor<512x512xi32>) -> tensor<512x512xi32>"
    )
    body = [start, done, dot] if done_first else [start, dot, done]
    return "\n".join(
        [
            f"spmd.mesh @m = <[{mesh}]>",
            f"func.func @main(%x: tensor<{arg}xf32>, %a: tensor<512x512xi32>, "
            f"%b: tensor<512x512xi32>) -> (tensor<{res}xf32>, tensor<512x512xi32>) "
            "attributes {spmd.per_device_io} {",
            *body,
            f"  func.return %g, %d : tensor<{res}xf32>, tensor<512x512xi32>",
            "}",
        ]
    )


def big(text: str) -> str:
    """`text` with 4x the collective's bytes and 8x the dot's work (timing only: steps of
    bandwidth, not hop latency, as the placement's cost model has them)."""
    for a, b in [("512x512", "1024x1024"), ("256x128", "1024x128"), ("64x128", "256x128")]:
        text = text.replace(a, b)
    return text.replace("128x128", "512x128")


def interleaved(module) -> list[Operation]:
    """The `scf.if`s inside a compute loop (`scf.for` with a `tpu.matmul`) that start a
    remote DMA: ring steps placed at a block boundary."""
    found = []
    for loop in _kernel(module).walk():
        if loop.name != "scf.for" or not any(o.name == "tpu.matmul" for o in loop.walk()):
            continue
        for o in loop.body.block.ops:
            if o.name == "scf.if" and any(
                isinstance(d, tpu.DMAStartOp) and d.device is not None for d in o.walk()
            ):
                found.append(o)
    return found


@pytest.mark.parametrize("name", list(COLLECTIVES))
@pytest.mark.parametrize("chip", ["v5e", "v5p"])
def test_ring_steps_run_inside_the_compute_loop(name, chip):
    """Steps after the first are placed at block boundaries of the dot (v5p: both ways
    round, 4 = a wrapped ring), the results are level S's, no diagnostic fires, and the
    step is faster than with the ring's steps at the `done` (`interleave=false`)."""
    text = program(name)
    module, _ = check(text, 4, chip=chip)
    assert interleaved(module), str(module)
    fast = step_time(module, chip)
    old = step_time(lower(text, chip, interleave=False), chip)
    serial = step_time(lower(program(name, done_first=True), chip), chip)
    assert fast < 0.9 * serial, (fast, serial)
    assert fast <= old * 1.001, (fast, old)


def step_time(module, chip: str = "v5e", key: str = "step_time_s") -> float:
    """The kernel's simulated step (timing only: no values)."""
    n_args = len(_kernel(module).args)
    _, report = run_level_t(module, [[None] * n_args] * 4, chip=chip, values=False)
    return report[key]


@pytest.mark.parametrize("name", ["all_gather", "reduce_scatter", "all_reduce"])
def test_interleaving_hides_the_shorter_of_ring_and_dot(name):
    """The step is within 12% of the longer of the ring and the dot (the serial
    program's step is their sum)."""
    fast = step_time(lower(big(program(name))))
    serial_module = lower(big(program(name, done_first=True)))
    compute = step_time(serial_module, key="compute_time_s")
    bound = max(compute, step_time(serial_module) - compute)
    assert fast < 1.12 * bound, (fast, bound)


# Seeded bugs in the interleaved rings ------------------------------------------------------


def _placed_ops(module, kind: type[Operation]) -> list[Operation]:
    """The ops of `kind` inside the ring steps placed in the dot's loop."""
    return [o for step in interleaved(module) for o in step.walk() if isinstance(o, kind)]


def _run_fails(module, text: str, n: int = 4) -> str:
    ins = random_inputs(text, n)
    with pytest.raises(InterpreterError) as info:
        run_level_t(module, [row + [None] * 2 for row in ins])
    return str(info.value)


@pytest.mark.parametrize("name", ["all_gather", "reduce_scatter", "all_reduce"])
def test_dropping_a_placed_wait_is_caught(name):
    text = program(name)
    module = lower(text)
    waits = _placed_ops(module, tpu.DMAWaitOp)
    assert waits
    waits[0].detach()
    waits[0].erase()
    msg = _run_fails(module, text)
    assert any(k in msg for k in ("never waited", "data race", "not zero", "non-zero")), msg


def test_reusing_a_buffer_still_in_flight_is_caught():
    """reduce_scatter: the accumulator is stored into while the step's outgoing DMA may
    still read it (its send wait moved after the store): a data race."""
    text = program("reduce_scatter")
    module = lower(text)
    for step in interleaved(module)[1:]:  # step 0 sends from HBM, not the accumulator
        ops = list(step.regions[0].block.ops)
        send_waits = [
            o for o in ops if isinstance(o, tpu.DMAWaitOp) and "send" in (o.sem.name_hint or "")
        ]
        stores = [o for o in ops if isinstance(o, tpu.StoreOp)]
        if send_waits and stores and ops.index(send_waits[0]) < ops.index(stores[-1]):
            wait = send_waits[0]
            wait.detach()
            step.regions[0].block.insert_op_after(wait, stores[-1])
            break
    else:
        raise AssertionError("no placed step with a send wait before a store")
    msg = _run_fails(module, text)
    assert "data race" in msg, msg


@pytest.mark.parametrize("name", ["all_gather", "reduce_scatter"])
def test_waiting_on_the_wrong_semaphore_is_caught(name):
    """A placed receive wait on the send semaphore: the receive semaphore is never
    decremented (and the send one too often): a deadlock or a semaphore left non-zero."""
    text = program(name)
    module = lower(text)
    waits = [w for w in _placed_ops(module, tpu.DMAWaitOp) if "recv" in (w.sem.name_hint or "")]
    sends = [w for w in _placed_ops(module, tpu.DMAWaitOp) if "send" in (w.sem.name_hint or "")]
    assert waits and sends
    waits[0].operands[0] = sends[0].sem
    msg = _run_fails(module, text)
    assert any(k in msg for k in ("deadlock", "not zero", "non-zero", "data race")), msg


# Several permutes in flight ------------------------------------------------------------------


def permutes_in_flight(n: int = 3) -> str:
    """`n` permute_starts (shifts 1..n) issued together, a dot, then their `done`s: the
    schedule keeps every permute in flight across the dot (level S's engine rule,
    `timing.engine_window`: their DMAs fly at once, each waited at its `done`)."""
    future = "!collective.future<tensor<256x128xf32>>"
    starts = [
        f'  %f{i} = collective.permute_start %x on @m["x"], shift = {i + 1} : '
        f"tensor<256x128xf32> -> {future}"
        for i in range(n)
    ]
    dones = [f"  %g{i} = collective.done %f{i} : {future} -> tensor<256x128xf32>" for i in range(n)]
    dot = (
        "  %d = hlo.dot %a, %b, contracting_dims = [1] x [0] : "
        "(tensor<512x512xi32>, tensor<512x512xi32>) -> tensor<512x512xi32>"
    )
    results = ", ".join(["tensor<256x128xf32>"] * n + ["tensor<512x512xi32>"])
    values = ", ".join([f"%g{i}" for i in range(n)] + ["%d"])
    return "\n".join(
        [
            'spmd.mesh @m = <["x"=4]>',
            "func.func @main(%x: tensor<256x128xf32>, %a: tensor<512x512xi32>, "
            f"%b: tensor<512x512xi32>) -> ({results}) attributes {{spmd.per_device_io}} {{",
            *starts,
            dot,
            *dones,
            f"  func.return {values} : {results}",
            "}",
        ]
    )


@pytest.mark.parametrize("chip", ["v5e", "v5p"])
def test_permutes_in_flight_are_waited_at_their_done(chip):
    """A permute is one round of DMAs: all of them start at the `_start`s, together, and
    nothing is gained by waiting for one inside the compute loop (a wait placed there by
    the loop's estimated time stalls the compute when the transfers, sharing the links,
    land later: level T 1.32x level S on dp_train_step v5p when it did). No wait of a
    permute inside the dot's loop; level S's results; the step within 10% of level S's."""
    text = permutes_in_flight()
    module, _ = check(text, 4, chip=chip)
    loops = [
        loop
        for loop in _kernel(module).walk()
        if loop.name == "scf.for" and any(o.name == "tpu.matmul" for o in loop.walk())
    ]
    assert loops
    waits = [o for loop in loops for o in loop.walk() if isinstance(o, tpu.DMAWaitOp)]
    assert all((w.operands[0].name_hint or "").startswith("dot_") for w in waits), waits
    level_s = shardc.run(
        parse_and_verify(make_context(), text, "<permutes>"), timing_only=True, chip=chip
    ).report["step_time_s"]
    level_t = step_time(module, chip)
    assert 0.9 <= level_t / level_s <= 1.1, (level_s, level_t)


# Both ways round: one step, both directions ----------------------------------------------


@pytest.mark.parametrize("name", ["all_gather", "reduce_scatter", "all_reduce"])
def test_a_bidirectional_step_starts_both_directions_in_one_block(name):
    """v5p runs a wrapped ring of 4 both ways round: each step sends to both neighbours.
    A placed step that starts remote DMAs starts them to both (a credit wait,
    `tpu.sem_wait`, is part of the start it guards, not a step boundary): when the left
    direction's credit wait opened a chunk of its own, the two directions went in
    different blocks, half a step apart, and each step waited for the later one (the DP
    step's all_reduces ran at 0.6x their speed under compute, level T 1.29x level S)."""
    module = lower(big(program(name)), "v5p")
    steps = interleaved(module)
    assert steps
    for step in steps:
        remote = [o for o in step.walk() if isinstance(o, tpu.DMAStartOp) and o.device is not None]
        assert len({d.device for d in remote}) == 2, step


def test_a_dp_step_all_reduce_both_ways_keeps_level_s_time():
    """The DP step's shape on v5p (issue 15 item 5, bench/overlap.py dp_grads large): a
    32 MiB bf16 all_reduce over 8 devices (a ring both ways) under eight 2048x4096x4096
    dots, 2x the ring's time. Level S hides it whole; level T within 10% (1.17 when the
    two directions ran half a step apart)."""
    tw, tx = "tensor<4096x4096xbf16>", "tensor<2048x4096xbf16>"
    future = f"!collective.future<{tw}>"
    dots = [
        f"  %y{j + 1} = hlo.dot %y{j}, %m, contracting_dims = [1] x [0] : ({tx}, {tw}) -> {tx}"
        for j in range(8)
    ]
    text = "\n".join(
        [
            'spmd.mesh @dp = <["data"=8]>',
            f"func.func @main(%w: {tw}, %y0: {tx}, %m: {tw}) -> ({tw}, {tx}) "
            "attributes {spmd.partitioned} {",
            f'  %s = collective.all_reduce_start add %w on @dp["data"] : {tw} -> {future}',
            *dots,
            f"  %d = collective.done %s : {future} -> {tw}",
            f"  func.return %d, %y8 : {tw}, {tx}",
            "}",
        ]
    )
    level_s = shardc.run(
        parse_and_verify(make_context(), text, "<dp>"), timing_only=True, chip="v5p"
    ).report["step_time_s"]
    level_t = shardc.run(lower(text, "v5p"), timing_only=True, chip="v5p").report["step_time_s"]
    assert 0.9 <= level_t / level_s <= 1.1, (level_s, level_t)


# Rings in flight together -------------------------------------------------------------------


def two_all_gathers() -> str:
    """Two all_gather_starts issued together, a dot, their `done`s (the FSDP step's shape:
    the schedule issues every weight's all_gather at the top)."""
    future = "!collective.future<tensor<1024x128xf32>>"
    starts = [
        f'  %f{i} = collective.all_gather_start %x{i} on @m["x"], dim = 0 : '
        f"(tensor<256x128xf32>) -> {future}"
        for i in range(2)
    ]
    dones = [
        f"  %g{i} = collective.done %f{i} : {future} -> tensor<1024x128xf32>" for i in range(2)
    ]
    dot = (
        "  %d = hlo.dot %a, %b, contracting_dims = [1] x [0] : "
        "(tensor<1024x1024xi32>, tensor<1024x1024xi32>) -> tensor<1024x1024xi32>"
    )
    results = "tensor<1024x128xf32>, tensor<1024x128xf32>, tensor<1024x1024xi32>"
    return "\n".join(
        [
            'spmd.mesh @m = <["x"=4]>',
            "func.func @main(%x0: tensor<256x128xf32>, %x1: tensor<256x128xf32>, "
            "%a: tensor<1024x1024xi32>, %b: tensor<1024x1024xi32>) -> "
            f"({results}) attributes {{spmd.per_device_io}} {{",
            *starts,
            dot,
            *dones,
            f"  func.return %g0, %g1, %d : {results}",
            "}",
        ]
    )


def test_rings_in_flight_take_the_links_one_after_another():
    """Two one-way rings pending over one dot (v5e): the second ring's steps are placed
    after the first's (placed together they shared the links, each step ran slower than
    placed and its wait stalled the dot); level S's results."""
    module, _ = check(two_all_gathers(), 4)
    blocks: dict[object, list[int]] = {}
    """The blocks (placed steps in order) where each ring (its send semaphore) starts DMAs."""
    for j, step in enumerate(interleaved(module)):
        for o in step.walk():
            if isinstance(o, tpu.DMAStartOp) and o.device is not None:
                blocks.setdefault(o.send_sem, []).append(j)
    first, second = blocks.values()
    assert max(first) <= min(second), blocks


@pytest.mark.parametrize("chip", ["v5e", "v5p"])
def test_an_fsdp_step_keeps_level_s_time(chip):
    """bench/overlap.py's FSDP forward (four all_gathers issued together, each weight's
    dot after its `done`) at batch 8192, hidden 2048, 8 devices: level T within 10% of
    level S (v5e 1.22 when the pending rings' steps shared the links)."""
    from shardc.bench.overlap import fsdp, level_s_and_t

    level_s, level_t, _ = level_s_and_t(fsdp(8192, 2048), chip)
    assert 0.9 <= level_t / level_s <= 1.1, (level_s, level_t)


# Which of ring and compute waits (ring_steps._idle_or_stall) ------------------------------


def communication_bound(dots: int = 8, rings: int = 1) -> str:
    """`rings` 8 MiB bf16 all_reduces over 8 devices (v5p: rings both ways, 137 us each)
    issued together, pending over `dots` 1024^3 bf16 dots (about 8 us each, in blocks
    shorter than a ring step), then their `done`s: with 8 dots the ring is the step, with
    no slack."""
    tw, tx = "tensor<4096x1024xbf16>", "tensor<1024x1024xbf16>"
    future = f"!collective.future<{tw}>"
    starts = [
        f'  %s{i} = collective.all_reduce_start add %w on @dp["data"] : {tw} -> {future}'
        for i in range(rings)
    ]
    chain = [
        f"  %y{j + 1} = hlo.dot %y{j}, %k, contracting_dims = [1] x [0] : ({tx}, {tx}) -> {tx}"
        for j in range(dots)
    ]
    dones = [f"  %d{i} = collective.done %s{i} : {future} -> {tw}" for i in range(rings)]
    results = ", ".join([tw] * rings + [tx])
    return "\n".join(
        [
            'spmd.mesh @dp = <["data"=8]>',
            f"func.func @main(%w: {tw}, %y0: {tx}, %k: {tx}) -> ({results}) "
            "attributes {spmd.partitioned} {",
            *starts,
            *chain,
            *dones,
            f"  func.return {', '.join(f'%d{i}' for i in range(rings))}, %y{dots} : {results}",
            "}",
        ]
    )


def _slack(text: str) -> tuple[list[float], float, float]:
    """(`collective_slack` of each `_start` of `text` on v5p, one ring's time, the step
    by `program_order_time`)."""
    from shardc.dialects.spmd import find_mesh
    from shardc.hardware.chips import get_chip
    from shardc.hardware.cost import CostModel
    from shardc.passes.step_estimate import collective_slack, program_order_time

    module = parse_and_verify(make_context(), text, "<slack>")
    model = CostModel(get_chip("v5p"), find_mesh(module))
    (f,) = [o for o in module.body.block.ops if o.name == "func.func"]
    ops = list(f.body.block.ops)
    found = collective_slack(ops, model)
    starts = [o for o in ops if o.name.endswith("_start")]
    ring = model.collective_time(starts[0])  # pyright: ignore[reportArgumentType]
    return [found[o] for o in starts], ring, program_order_time(ops, model)


def test_slack_of_a_ring_longer_than_its_compute_is_zero():
    """`step_estimate.collective_slack`: a ring that ends after the compute before its
    `done` has none; one under a longer compute has the difference (its `done` may wait
    that much longer)."""
    (short,), ring, step = _slack(communication_bound(2))
    assert short == 0.0 and step == pytest.approx(ring, rel=0.01)
    (long,), ring, step = _slack(communication_bound(40))
    assert long == pytest.approx(step - ring, rel=1e-6) and long > 0.5 * ring


def test_slack_of_a_ring_the_engine_chains_to_a_waiting_done_is_zero():
    """Two rings issued together over a compute longer than one ring but shorter than
    both: the second's `done` waits, so the first, whose own `done` could wait, has no
    slack either (it ending later begins the second later); under a compute longer than
    both, each has slack."""
    ring = _slack(communication_bound(1))[1]
    dots = 24  # between one ring and two
    (first, second), _, step = _slack(communication_bound(dots, rings=2))
    assert step == pytest.approx(2 * ring, rel=0.02)
    assert first == 0.0 and second == 0.0
    (first, second), _, step = _slack(communication_bound(60, rings=2))
    assert first > 0.0 and second == pytest.approx(step - 2 * ring, rel=0.02)


def test_a_ring_without_slack_keeps_its_link_busy():
    """A ring with no slack (`communication_bound`) runs at level S's speed under the
    dots: its steps' waits hold the compute until each transfer lands rather than the
    link idling until the next block boundary (it idled up to a block per step, level T
    1.087x level S on v5p; now within 4%)."""
    text = communication_bound(8)
    level_s = shardc.run(
        parse_and_verify(make_context(), text, "<comm>"), timing_only=True, chip="v5p"
    ).report["step_time_s"]
    level_t = shardc.run(lower(text, "v5p"), timing_only=True, chip="v5p").report["step_time_s"]
    assert level_t / level_s <= 1.04, (level_s, level_t)
