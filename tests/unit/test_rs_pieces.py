"""
Reduce-scatter pieces overlap (lowering/reduce_ring.py): a chunk too large for VMEM is
reduced in pieces, software-pipelined in a sync collective: piece p+1's first step
starts once piece p's last messages have left, before piece p's last waits (here at
full precision; bf16 / f16: test_rs_pieces_low.py). The kernels give level S's results
with none of the simulator's diagnostics (a `_start`'s pieces, not pipelined, too; and
low precision's, pipelined, in the random ones); seeded bugs at the piece
boundary (a dropped wait, a buffer reused while a DMA still fills it, a wait on the wrong
semaphore) are caught; no VMEM beyond the 4 blocks `hardware.vmem.rs_pieces` counts; and
level S (`topology.ring_phases_time` of a `Phase` of pieces) charges the same timing.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.diagnostics import InterpreterError
from shardc.dialects import tpu
from shardc.dialects.sizes import tensor_bytes
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import RS_CREDITS, CostModel
from shardc.hardware.topology import Ring, Torus, ring_time
from shardc.interpreter.devices import module_mesh
from shardc.interpreter.level_t import run_level_t
from shardc.interpreter.testing import parse
from xdsl.ir import Operation

from tests.unit.test_collective_vmem import _peak_vmem
from tests.unit.test_lower_to_tpu import (
    _kernel,
    check,
    lower,
    one_op,
    random_inputs,
    start_done,
)
from tests.unit.test_ring_overlap import interleaved, step_time
from tests.unit.test_ring_overlap import program as overlap_program


def program(
    kind: str, n: int, dtype: str = "f32", form: str = "sync", rows: int = 16, cols: int = 16
) -> str:
    """A reduce_scatter of chunks of rows x cols, or an all_reduce of (4 rows) x cols, over
    n devices (`form`: "sync" or "async", a `_start` and its `done`)."""
    if kind == "reduce_scatter":
        arg, res = f"{rows * n}x{cols}", f"{rows}x{cols}"
        op = (
            f'%r = collective.reduce_scatter add %a on @m["x"], dim = 0 : '
            f"(tensor<{arg}x{{t}}>) -> tensor<{res}x{{t}}>"
        )
    else:
        arg = res = f"{4 * rows}x{cols}"
        op = f'%r = collective.all_reduce add %a on @m["x"] : tensor<{arg}x{{t}}>'
    if form == "async":
        op = start_done(op, res)
    return one_op(n, dtype, arg, res, op)


def _top(module) -> list[Operation]:
    return list(_kernel(module).body.block.ops)


def _names(o: Operation) -> list[str]:
    return [str(v.name_hint) for v in o.operands]


def _is_send_wait(o: Operation) -> bool:
    return isinstance(o, tpu.DMAWaitOp) and (o.sem.name_hint or "").endswith("send_sem")


def _early_sends(ops: list[Operation]) -> list[int]:
    """Positions of the send waits that let the next piece start: a send wait whose next
    effect is a credit wait (a step's own send waits come after its receive waits)."""
    effects = [
        i
        for i, o in enumerate(ops)
        if not o.name.startswith("arith.") and o.name != "tpu.memref_slice"
    ]
    return [
        i
        for i, j in zip(effects, effects[1:], strict=False)
        if _is_send_wait(ops[i]) and isinstance(ops[j], tpu.SemWaitOp)
    ]


# Numerics: level S's results, no diagnostics -------------------------------------------------


@pytest.mark.parametrize("chip, n", [("v5e", 2), ("v5e", 4), ("v5p", 4), ("v5e", 8)])
@pytest.mark.parametrize("dtype", ["f32", "i32"])
@pytest.mark.parametrize("kind", ["reduce_scatter", "all_reduce"])
@pytest.mark.parametrize("form", ["sync", "async"])
def test_pipelined_pieces_match_level_s(chip, n, dtype, kind, form):
    text = program(kind, n, dtype, form)
    module, _ = check(text, n, chip=chip, vmem_limit=1024)
    if form == "sync":
        assert len(_early_sends(_top(module))) >= 1, str(module)


def test_torus_all_reduce_pieces_pipelined_match_level_s():
    """Both parts' rings at once on a 4x4 v5p torus, every phase in pipelined pieces."""
    text = one_op(
        16,
        "i32",
        "16x64",
        "16x64",
        '%r = collective.all_reduce add %a on @m["a", "b"] : tensor<16x64x{t}>',
        mesh='"a"=4, "b"=4',
    )
    module, _ = check(text, 16, chip="v5p", vmem_limit=1024)
    assert "%rs1_" in str(module) and _early_sends(_top(module))


@st.composite
def pieced_programs(draw) -> tuple[str, int, str, int]:
    """A random one-axis reduce_scatter or all_reduce (reduction, element type, shape,
    form, chip) and a VMEM limit that cuts its chunks into 2 or 4 pieces (of a dimension
    that both directions' halves divide)."""
    n = draw(st.sampled_from([2, 4, 8]))
    kind = draw(st.sampled_from(["reduce_scatter", "all_reduce"]))
    reduction = draw(st.sampled_from(["add", "mul", "max", "min"]))
    dtype = draw(st.sampled_from(["f32", "i32"] if reduction == "mul" else ["f32", "i32", "bf16"]))
    rows = draw(st.sampled_from([8, 16] if kind == "reduce_scatter" else [16]))
    cols = draw(st.integers(1, 5))
    form = draw(st.sampled_from(["sync", "async"]))
    text = program(kind, n, dtype, form, rows, cols).replace(" add ", f" {reduction} ")
    chunk = (
        rows * cols * 4 * (4 if kind == "all_reduce" else 1) // (n if kind == "all_reduce" else 1)
    )
    share = 8 if form == "async" else 1  # a `_start` holds 1/8 of the VMEM
    pieces = draw(st.sampled_from([2, 4]))
    return text, n, draw(st.sampled_from(["v5e", "v5p"])), 4 * chunk * share // pieces


@settings(deadline=None, max_examples=20, suppress_health_check=[HealthCheck.too_slow])
@given(pieced_programs())
def test_random_collectives_in_pieces_match_level_s(case):
    text, n, chip, vmem = case
    check(text, n, chip=chip, vmem_limit=vmem)


def test_the_next_piece_starts_before_the_last_step_lands():
    """Piece p+1's first message is sent before piece p's last receive wait, and no VMEM
    is allocated beyond the 4 blocks per ring the piece rule counts."""
    text = program("reduce_scatter", 4)
    module = lower(text, vmem_limit=2048)
    ops = _top(module)
    (early,) = _early_sends(ops)
    after = ops[early + 1 :]
    send = next(i for i, o in enumerate(after) if isinstance(o, tpu.DMAStartOp) and o.device)
    recv = next(
        i for i, o in enumerate(after) if isinstance(o, tpu.DMAWaitOp) and "recv" in _names(o)[0]
    )
    assert send < recv
    block = 16 * 16 // 2 * 4  # two pieces of the f32 16x16 chunk
    assert _peak_vmem(module) == 4 * block


# Seeded bugs at the piece boundary -----------------------------------------------------------


def _fails(module, text: str, n: int = 4) -> str:
    ins = random_inputs(text, n)
    with pytest.raises(InterpreterError) as info:
        run_level_t(module, [row + [None] for row in ins])
    return str(info.value)


def test_dropping_the_send_wait_before_the_next_piece_is_caught():
    """Without it the last step's result is stored into the accumulator while the
    outgoing message may still read it."""
    text = program("reduce_scatter", 4)
    module = lower(text, vmem_limit=2048)
    ops = _top(module)
    wait = ops[_early_sends(ops)[0]]
    wait.detach()
    wait.erase()
    msg = _fails(module, text)
    assert "data race on buffer 'rs_acc'" in msg or "never waited" in msg, msg


def test_fetching_the_next_own_chunk_while_the_last_is_in_flight_is_caught():
    """The next piece's local DMA into `mine` moved next to its early send: it lands in
    the buffer the last step's own DMA is still filling and its reduction reads."""
    text = program("reduce_scatter", 4)
    module = lower(text, vmem_limit=2048)
    ops = _top(module)
    early = _early_sends(ops)[0]
    send = next(o for o in ops[early:] if isinstance(o, tpu.DMAStartOp) and o.device)
    out = next(
        o for o in ops[early:] if isinstance(o, tpu.DMAStartOp) and "rs_piece_sem" in _names(o)
    )
    fetch = ops[ops.index(out) + 1]
    assert isinstance(fetch, tpu.DMAStartOp) and "rs_mine" in _names(fetch)
    # With the address arithmetic it uses (defined after the send), in order.
    block = _kernel(module).body.block
    between = ops[ops.index(send) + 1 : ops.index(fetch)]
    needed = {id(fetch)}
    for o in reversed([*between, fetch]):
        if id(o) in needed:
            needed |= {id(v.owner) for v in o.operands if isinstance(v.owner, Operation)}
    at = send
    for o in [*between, fetch]:
        if id(o) in needed:
            o.detach()
            block.insert_op_after(o, at)
            at = o
    msg = _fails(module, text)
    assert "data race on buffer 'rs_mine'" in msg, msg


def test_waiting_on_the_other_pieces_slot_semaphore_is_caught():
    """The next piece's first receive wait on the slot of the last step's (the two are in
    flight together, in the two slots): one semaphore is waited twice, the other never."""
    text = program("reduce_scatter", 4)
    module = lower(text, vmem_limit=2048)
    ops = _top(module)
    early = _early_sends(ops)[0]
    recvs = [
        o
        for o in ops[early:]
        if isinstance(o, tpu.DMAWaitOp) and (o.sem.name_hint or "").endswith("recv_sem")
    ]
    last, first = recvs[0], recvs[1]
    first.operands[0] = last.sem
    msg = _fails(module, text)
    assert any(k in msg for k in ("deadlock", "not zero", "non-zero", "data race")), msg


# Level S charges the pipelined pieces --------------------------------------------------------


@pytest.mark.parametrize("chip, n", [("v5p", 4), ("v5p", 8), ("v5e", 16)])
@pytest.mark.parametrize("pieces", [2, 4])
def test_each_piece_boundary_saves_one_hop_latency_on_a_ring(chip, n, pieces):
    """On a ring with wraparound (every edge one hop) the next piece's first step goes when
    the last step's messages have left, not landed: one hop latency less per boundary
    than the pieces one ring after the other."""
    c = get_chip(chip)
    ring = Ring((tuple(range(n)),), float(1 << 20), (1, -1))
    torus = Torus.of(c, [n])
    one = ring_time(c, torus, [ring], RS_CREDITS)
    want = pieces * one - (pieces - 1) * c.hop_latency
    assert ring_time(c, torus, [ring], RS_CREDITS, pieces) == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize(
    "chip, n, rows, cols, kind",
    [
        ("v5e", 4, 65536, 1024, "reduce_scatter"),
        ("v5p", 4, 16384, 1024, "reduce_scatter"),
        ("v5e", 2, 32768, 1024, "reduce_scatter"),
        ("v5e", 4, 32768, 1024, "all_reduce"),
    ],
)
def test_level_t_runs_the_pipelined_pieces_level_s_charges(chip, n, rows, cols, kind):
    """Sync f32 collectives of 64-256 MiB chunks, cut into 4-8 pieces to fit the chip's
    VMEM: level T within 10% of level S (timing only), and both below the same pieces
    sent as a `_start` sends them (once the last step has landed, `Phase.landed`)."""
    text = program(kind, n, "f32", "sync", rows, cols)
    module = lower(text, chip)
    assert len(_early_sends(_top(module))) >= 3
    _, report = run_level_t(module, [[None, None]] * n, chip=chip, values=False)
    level_s = parse(text)
    op = next(o for o in level_s.walk() if o.name.startswith("collective."))
    mesh = module_mesh(level_s)
    assert mesh is not None
    model = CostModel(get_chip(chip), mesh[1])  # pyright: ignore
    want = model.collective_time(op)
    assert report["step_time_s"] / want == pytest.approx(1.0, abs=0.10)
    # The same pieces as a `_start`'s (at the sync budget), each boundary's sends after
    # the last step has landed: at least one hop latency more per boundary.
    c = get_chip(chip)
    sizes = [tensor_bytes(t) for t in op.input_types()]
    apart = model._collective_seconds(op, sizes, c.vmem_bytes, True)  # noqa: SLF001
    assert model._collective_seconds(op, sizes, c.vmem_bytes, False) == want  # noqa: SLF001
    pieces = len(_early_sends(_top(module))) + 1
    assert apart - want >= (pieces - 1) * c.hop_latency * 0.999


PIECE_GRID = [
    ("reduce_scatter", 2, 4),
    ("reduce_scatter", 4, 2),
    ("reduce_scatter", 8, 4),
    ("all_reduce", 4, 4),
    ("all_reduce", 2, 2),
]
"""(kind, ring size, pieces) of the timing grids here and in test_rs_pieces_low.py: rings
of 2, 4 and 8 (v5e's line of 8 with its 7-hop wrap edge), 2 and 4 pieces."""


# A `_start`'s pieces: pipelined once the last step has landed ---------------------------------


def _effects(module) -> list[Operation]:
    """The kernel's ops with an effect (loops and branches walked into), in order."""
    return [
        o
        for o in _kernel(module).walk()
        if not o.name.startswith("arith.") and o.name != "tpu.memref_slice"
    ]


def test_a_starts_next_piece_is_sent_once_the_last_step_has_landed():
    """A `_start`'s pieces are pipelined too (its steps interleaved into the compute,
    lowering/ring_steps.py): the next piece's first send follows the last step's waits
    (own chunk, receive, send) and goes before that step's reduction, so in one chunk
    placed where the reduction used to begin it (reduce_ring.py `_Run.interleaved`)."""
    module = lower(program("reduce_scatter", 4, "f32", "async"), vmem_limit=8192)
    ops = _effects(module)
    early = _early_sends(ops)
    assert len(early) == 3  # 4 pieces
    for i in early:
        waits = [_names(o)[0] for o in ops[i - 2 : i + 1]]
        assert waits == ["rs_copy_sem", "rs_recv_sem", "rs_send_sem"], waits
        credit, send, reduce = ops[i + 1 : i + 4]
        assert isinstance(credit, tpu.SemWaitOp)
        assert isinstance(send, tpu.DMAStartOp) and send.device is not None
        assert _names(send)[0] == "rs_first_block"
        assert isinstance(reduce, tpu.LoadOp) and _names(reduce)[0] == "rs_recv_buf"


@pytest.mark.parametrize("chip", ["v5e", "v5p"])
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("kind, n, pieces", PIECE_GRID)
def test_level_s_times_a_starts_pipelined_pieces_as_level_t(chip, dtype, kind, n, pieces):
    """A `_start` of 256 x 256 chunks in pieces (its share of the VMEM, 1/8), nothing to
    interleave into: level S (`topology.Phase.landed`) equals level T's simulated time;
    pipelining is not slower than the same kernel one piece after the other (but by
    0.1% on v5e's line of 8 in bf16: there every step waits for the 7-hop wrap edge, the
    unpipelined pieces already drift into each other, and the next own chunk's fetch
    shares the HBM with the rounded copy out)."""
    text = program(kind, n, dtype, "async", 256, 256)
    vmem = 8 * 4 * 4 * (256 * 256 if kind == "reduce_scatter" else 4 * 256 * 256 // n) // pieces
    module = lower(text, chip, vmem_limit=vmem)
    assert "_piece_sem" in str(module)
    t = _step(module, chip, n)
    level_s = parse(text)
    (op,) = [o for o in level_s.walk() if o.name.endswith("_start")]
    mesh = module_mesh(level_s)
    assert mesh is not None
    c = dataclasses.replace(get_chip(chip), vmem_bytes=vmem)
    assert CostModel(c, mesh[1]).collective_time(op) == pytest.approx(t, rel=1e-9)  # pyright: ignore
    apart = _step(lower(text, chip, vmem_limit=vmem, pipeline_pieces=False), chip, n)
    assert t <= apart * 1.001


def _step(module, chip: str, n: int) -> float:
    _, report = run_level_t(module, [[None, None]] * n, chip=chip, values=False)
    return report["step_time_s"]


@pytest.mark.parametrize("name, boundaries", [("reduce_scatter", 3), ("all_reduce", 1)])
def test_a_starts_piece_boundary_under_the_compute_keeps_level_s_results(name, boundaries):
    """A `_start` cut into pieces (256 KiB of VMEM) with a dot before its `done`: the
    next pieces' first sends are placed in the dot's loop, each in one chunk with the
    last step's reduction (`ring_steps.split_steps` does not cut it after the send), the
    results are level S's with no diagnostic, and the step is not slower than without
    pipelining."""
    text = overlap_program(name)
    module, _ = check(text, 4, vmem_limit=1 << 18)
    boundary = [
        list(step.walk())
        for step in interleaved(module)
        if any(
            isinstance(o, tpu.DMAStartOp) and _names(o)[0].endswith("first_block")
            for o in step.walk()
        )
    ]
    assert len(boundary) == boundaries
    for chunk in boundary:
        assert any(isinstance(o, tpu.LoadOp) and "recv_buf" in _names(o)[0] for o in chunk)
    apart = lower(text, vmem_limit=1 << 18, pipeline_pieces=False)
    assert step_time(module) <= step_time(apart)


def test_dropping_the_landing_wait_before_the_next_piece_is_caught():
    """Under the compute, the last step's receive wait moved before the next piece's
    first send: without it the reduction reads the receive slot while the message may
    still be landing in it."""
    text = overlap_program("reduce_scatter")
    module = lower(text, vmem_limit=1 << 18)
    for step in interleaved(module):
        ops = [o for o in step.walk() if not o.name.startswith("arith.")]
        at = next(
            (
                i
                for i, o in enumerate(ops)
                if isinstance(o, tpu.DMAStartOp) and _names(o)[0].endswith("first_block")
            ),
            None,
        )
        if at is not None:
            recv = next(
                o
                for o in reversed(ops[:at])
                if isinstance(o, tpu.DMAWaitOp) and _names(o)[0].endswith("recv_sem")
            )
            recv.detach()
            recv.erase()
            break
    else:
        pytest.fail("no piece boundary under the compute")
    ins = random_inputs(text, 4)
    with pytest.raises(InterpreterError) as info:
        run_level_t(module, [row + [None] * 2 for row in ins])
    msg = str(info.value)
    assert any(k in msg for k in ("never waited", "data race", "not zero", "non-zero")), msg


@pytest.mark.parametrize("chip, n, rows", [("v5e", 4, 65536), ("v5p", 4, 16384)])
def test_pipelining_saves_a_hop_latency_per_boundary_and_a_start_less(chip, n, rows):
    """`pipeline-pieces=false` runs the same pieces one after the other: pipelining
    saves at least a hop latency per boundary at level T (the step's latency, and the
    last step's reduction, which now overlaps the next piece's first transfers). Level
    S's `_start` form, sent once the last step has landed (`Phase.landed`), lies between:
    at least a hop latency per boundary above the sync form, not above the unpipelined
    kernel."""
    text = program("reduce_scatter", n, "f32", "sync", rows, 1024)
    times = []
    for pipelined in (True, False):
        module = lower(text, chip, pipeline_pieces=pipelined)
        assert bool(_early_sends(_top(module))) == pipelined
        if pipelined:
            boundaries = len(_early_sends(_top(module)))
        _, report = run_level_t(module, [[None, None]] * n, chip=chip, values=False)
        times.append(report["step_time_s"])
    level_s = parse(text)
    op = next(o for o in level_s.walk() if o.name.startswith("collective."))
    mesh = module_mesh(level_s)
    assert mesh is not None
    c = get_chip(chip)
    model = CostModel(c, mesh[1])  # pyright: ignore
    sizes = [tensor_bytes(t) for t in op.input_types()]
    landed = model._collective_seconds(op, sizes, c.vmem_bytes, True)  # noqa: SLF001
    assert boundaries >= 3
    assert times[1] - times[0] >= boundaries * c.hop_latency * 0.999
    assert model.collective_time(op) == pytest.approx(times[0], rel=1e-9)
    assert landed - times[0] >= boundaries * c.hop_latency * 0.999
    assert landed <= times[1]
