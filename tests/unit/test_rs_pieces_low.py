"""
Low-precision reduce-scatter pieces pipelined (lowering/reduce_ring.py, `_Run.rounds`):
bf16 / f16 partial sums travel in f32 and a piece's first message is the own chunk
widened into the accumulator, which the previous piece's last step used to hold its
result. That last step now rounds its result straight into the rounded buffer, so the
accumulator is free once its last message has left, and the next piece's own chunk is
fetched through the rounded buffer (under the copies out's semaphore: `mine` is still
being filled). No VMEM beyond the 4 blocks `hardware.vmem.rs_pieces` counts.

Shown here: level S's results bit for bit (bf16 and f16, every reduction, one- and
two-axis meshes, rings of 2; a multi-axis all_reduce, whose VMEM phases are one piece);
level S's time (`topology.Phase` of pieces with `Ring.last_combine`) equal to level T's;
never slower than the pieces one after the other, at either level; and seeded bugs at
the piece boundary caught.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import tpu
from shardc.dialects.sizes import tensor_bytes
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel
from shardc.interpreter.devices import module_mesh
from shardc.interpreter.level_t import run_level_t
from shardc.interpreter.testing import parse
from xdsl.ir import Operation

from tests.unit.test_collective_vmem import _peak_vmem
from tests.unit.test_lower_to_tpu import _kernel, check, lower, one_op
from tests.unit.test_rs_pieces import PIECE_GRID, _fails, _is_send_wait, _top, program


def _hint(v) -> str:
    return v.name_hint or ""


def _stagings(ops: list[Operation]) -> list[int]:
    """Positions of the early fetches of a piece's own chunk into the rounded buffer (a
    local DMA into `rs_rounded`: only a pipelined low-precision piece's first message)."""
    return [
        i
        for i, o in enumerate(ops)
        if isinstance(o, tpu.DMAStartOp) and _hint(o.dst) == "rs_rounded" and o.device is None
    ]


def _acc(o: Operation) -> bool:
    return _hint(o.results[0]).endswith("_acc")


def _early_send(ops: list[Operation], staging: int) -> int:
    """The send wait that lets the next piece start: the last one before `staging`."""
    return max(i for i, o in enumerate(ops[:staging]) if _is_send_wait(o))


def _vmem(kind: str, n: int, rows: int, cols: int, pieces: int) -> int:
    """A VMEM limit that cuts the chunks of `program(kind, n, ..., rows, cols)` into
    `pieces` (4 f32 blocks of a piece fit)."""
    elems = rows * cols if kind == "reduce_scatter" else 4 * rows * cols // n
    return 4 * elems * 4 // pieces


# Numerics: level S's, bit for bit ------------------------------------------------------------


@st.composite
def low_programs(draw) -> tuple[str, int, str, int]:
    """A sync bf16 / f16 reduce_scatter or all_reduce (any reduction) over one axis of a
    1-D or 2-D mesh (rings of 2, 4, 8), and a VMEM limit that cuts its chunks into 2 or 4
    pieces."""
    n = draw(st.sampled_from([2, 4, 8]))
    kind = draw(st.sampled_from(["reduce_scatter", "all_reduce"]))
    reduction = draw(st.sampled_from(["add", "mul", "max", "min"]))
    dtype = draw(st.sampled_from(["bf16", "f16"]))
    rows = draw(st.sampled_from([8, 16] if kind == "reduce_scatter" else [16]))
    cols = draw(st.integers(1, 5))
    text = program(kind, n, dtype, "sync", rows, cols).replace(" add ", f" {reduction} ")
    devices = n
    if n < 8 and draw(st.booleans()):  # the ring on one axis of a 2-D mesh
        text = text.replace(f'<["x"={n}]>', f'<["y"=2, "x"={n}]>')
        devices = 2 * n
    pieces = draw(st.sampled_from([2, 4]))
    chip = draw(st.sampled_from(["v5e", "v5p"]))
    return text, devices, chip, _vmem(kind, n, rows, cols, pieces)


@settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(low_programs())
def test_pipelined_low_precision_pieces_are_level_s_bit_for_bit(case):
    text, n, chip, vmem = case
    module, _ = check(text, n, chip=chip, exact=True, vmem_limit=vmem)
    assert _stagings(_top(module)), str(module)


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("axes", ['"a", "b"', '"b", "a"'])
def test_multi_axis_low_precision_all_reduce_is_level_s_bit_for_bit(dtype, axes):
    """Its phases before the last keep f32 sums in VMEM, one piece each (the last phase's
    chunk is a part of the first's, so it fits VMEM whole too): nothing to pipeline,
    results unchanged, at the smallest VMEM that holds the first phase."""
    text = one_op(
        8,
        dtype,
        "16x6",
        "16x6",
        f"%r = collective.all_reduce add %a on @m[{axes}] : tensor<16x6x{{t}}>",
        mesh='"a"=2, "b"=4',
    )
    first = 16 * 6 // (2 if axes.startswith('"a"') else 4)
    module, _ = check(text, 8, exact=True, vmem_limit=4 * 4 * first)
    assert not _stagings(_top(module))


@pytest.mark.parametrize(
    "groups",
    ["[[0, 1], [2, 3], [4, 5], [6, 7]]", "[[3, 0, 6, 5], [1, 7, 2, 4]]"],
)
def test_explicit_groups_low_precision_pieces_are_level_s_bit_for_bit(groups):
    """A ring over each group (rank order not device order), pipelined in 4 pieces."""
    size = 8 // (groups.count("[") - 1)
    text = program("reduce_scatter", size, "bf16", "sync", 16, 4)
    text = text.replace('@m["x"]', f"groups {groups}").replace(f'"x"={size}', '"x"=8')
    vmem = _vmem("reduce_scatter", size, 16, 4, 4)
    module, _ = check(text, 8, exact=True, vmem_limit=vmem)
    assert _stagings(_top(module))


def test_the_next_piece_is_sent_before_the_last_step_lands_in_4_blocks():
    """The next piece's first message goes (fetched into `rs_rounded`, widened into the
    accumulator) before the last step's receive wait; the last step rounds into
    `rs_rounded`; the peak VMEM is the 4 f32 blocks of a piece."""
    text = program("reduce_scatter", 4, "bf16", "sync", 16, 16)
    module = lower(text, vmem_limit=_vmem("reduce_scatter", 4, 16, 16, 2))
    ops = _top(module)
    (staging,) = _stagings(ops)
    after = ops[staging:]
    send = next(i for i, o in enumerate(after) if isinstance(o, tpu.DMAStartOp) and o.device)
    recv = next(
        i
        for i, o in enumerate(after)
        if isinstance(o, tpu.DMAWaitOp) and _hint(o.sem).endswith("recv_sem")
    )
    assert send < recv
    rounded = [
        o for o in after if isinstance(o, tpu.StoreOp) and _hint(o.operands[1]) == "rs_rounded"
    ]
    assert rounded and _hint(rounded[0].operands[0]) == "rounded"
    block = 16 * 16 // 2 * 4  # two pieces of the 16x16 chunk, in f32
    assert _peak_vmem(module) == 4 * block


def test_a_starts_pieces_are_pipelined_and_the_off_switchs_are_not():
    """A `_start`'s low-precision pieces stage the next piece's first message too (after
    the last step has landed, reduce_ring.py `_Run.interleaved`), also in 4 blocks;
    `pipeline-pieces=false` keeps them one after the other."""
    text = program("reduce_scatter", 4, "bf16", "async", 16, 16)
    module = lower(text, vmem_limit=8 * _vmem("reduce_scatter", 4, 16, 16, 2))
    assert len(_stagings(list(_kernel(module).walk()))) == 1
    text = program("reduce_scatter", 4, "bf16", "sync", 16, 16)
    module = lower(text, vmem_limit=_vmem("reduce_scatter", 4, 16, 16, 2), pipeline_pieces=False)
    assert not _stagings(_top(module))


# Seeded bugs at the piece boundary -----------------------------------------------------------


def _boundary(pieces: int = 2, n: int = 4) -> tuple[str, object, list[Operation], int]:
    text = program("reduce_scatter", n, "bf16", "sync", 16, 16)
    module = lower(text, vmem_limit=_vmem("reduce_scatter", n, 16, 16, pieces))
    ops = _top(module)
    return text, module, ops, _stagings(ops)[0]


def test_dropping_the_send_wait_before_the_widened_first_message_is_caught():
    """The next piece's own chunk is widened into the accumulator the last step's
    outgoing message may still read."""
    text, module, ops, staging = _boundary()
    wait = ops[_early_send(ops, staging)]
    wait.detach()
    wait.erase()
    msg = _fails(module, text)
    assert "data race on buffer 'rs_acc'" in msg or "never waited" in msg, msg


def test_the_last_step_storing_its_sum_to_the_accumulator_is_caught():
    """The old store (the f32 sum to `acc`) at the pipelined boundary: it overwrites the
    next piece's first message while that is being sent."""
    text, module, ops, staging = _boundary()
    store = next(
        o
        for o in ops[staging:]
        if isinstance(o, tpu.StoreOp) and _hint(o.operands[1]) == "rs_rounded"
    )
    trunc = store.operands[0].owner
    acc = next(
        o.results[0] for o in ops if isinstance(o, tpu.AllocOp) and _hint(o.results[0]) == "rs_acc"
    )
    block = _kernel(module).body.block
    block.insert_op_before(tpu.StoreOp(trunc.operands[0], acc, list(store.operands[2:])), store)
    store.detach()
    store.erase()
    msg = _fails(module, text)
    assert "data race on buffer 'rs_acc'" in msg, msg


def test_fetching_the_first_chunk_under_the_own_chunks_semaphore_is_caught():
    """The early fetch into `rs_rounded` waited on `copy_sem`, which the last step's own
    DMA into `mine` also signals: the wait may be that DMA's, and the widening reads
    `rs_rounded` while it is still being filled."""
    text, module, ops, staging = _boundary()
    fetch = ops[staging]
    assert isinstance(fetch, tpu.DMAStartOp)
    wait = next(o for o in ops[staging:] if isinstance(o, tpu.DMAWaitOp))
    assert wait.sem is fetch.recv_sem and _hint(wait.sem) == "rs_piece_sem"
    copy_sem = next(
        o.results[0]
        for o in ops
        if isinstance(o, tpu.AllocOp) and _hint(o.results[0]) == "rs_copy_sem"
    )
    fetch.operands[list(fetch.operands).index(fetch.recv_sem)] = copy_sem
    wait.operands[0] = copy_sem
    msg = _fails(module, text)
    assert "data race on buffer 'rs_rounded'" in msg, msg


def test_dropping_the_wait_for_the_previous_copy_out_is_caught():
    """With 4 pieces, piece p-1's result still leaves `rs_rounded` when piece p+1's own
    chunk is fetched into it: the wait before the fetch orders the two DMAs."""
    text, module, ops, _ = _boundary(pieces=4)
    staging = _stagings(ops)[1]
    wait = next(
        o
        for o in reversed(ops[:staging])
        if isinstance(o, tpu.DMAWaitOp) and _hint(o.sem) == "rs_piece_sem"
    )
    wait.detach()
    wait.erase()
    msg = _fails(module, text)
    assert "data race on buffer 'rs_rounded'" in msg or "never waited" in msg, msg


# Level S charges the pipelined pieces, exactly -------------------------------------------------


def _times(text: str, chip: str, n: int, vmem: int | None, pipelined: bool = True):
    """(level T, level S, level S as a `_start`: its pieces sent once the last step has
    landed): the kernel lowered with `vmem` (None: the chip's), level S on the chip with
    that VMEM."""
    module = lower(text, chip, vmem_limit=vmem, pipeline_pieces=pipelined)
    _, report = run_level_t(module, [[None, None]] * n, chip=chip, values=False)
    level_s = parse(text)
    op = next(o for o in level_s.walk() if o.name.startswith("collective."))
    mesh = module_mesh(level_s)
    assert mesh is not None
    c = get_chip(chip)
    c = c if vmem is None else dataclasses.replace(c, vmem_bytes=vmem)
    model = CostModel(c, mesh[1])  # pyright: ignore[reportArgumentType]
    sizes = [tensor_bytes(t) for t in op.input_types()]  # pyright: ignore[reportAttributeAccessIssue]
    apart = model._collective_seconds(op, sizes, c.vmem_bytes, True)  # noqa: SLF001  # pyright: ignore[reportArgumentType]
    return report["step_time_s"], model.collective_time(op), apart, module  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("chip", ["v5e", "v5p"])
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("kind, n, pieces", PIECE_GRID)
def test_level_s_times_pipelined_low_precision_pieces_as_level_t(chip, dtype, kind, n, pieces):
    """Chunks of 256 x 256 in pieces: level S equals level T's simulated time, and is
    not above the same pieces as a `_start` sends them (once the last step has landed,
    `Phase.landed`); level T is not above its kernel without pipelining."""
    text = program(kind, n, dtype, "sync", 256, 256)
    vmem = _vmem(kind, n, 256, 256, pieces)
    t, s, apart, module = _times(text, chip, n, vmem)
    rings = sum(1 for o in _top(module) if isinstance(o, tpu.AllocOp) and _acc(o))
    assert len(_stagings(_top(module))) == rings * (pieces - 1)
    assert t == pytest.approx(s, rel=1e-9)
    assert apart >= s
    t_apart, *_ = _times(text, chip, n, vmem, pipelined=False)
    # On a line of 8 (v5e) the wrap edge's 7 hops bound every step: the kernel's pieces
    # drift into each other even unpipelined, and pipelining saves next to nothing.
    assert t <= t_apart


@pytest.mark.parametrize("chip, n, rows", [("v5e", 4, 65536), ("v5p", 4, 16384)])
def test_real_size_bf16_pieces_level_s_is_level_t(chip, n, rows):
    """A bf16 reduce_scatter of 128 MiB (v5e) / 32 MiB (v5p) chunks, cut to fit the
    chip's VMEM, timing only: level S equals level T and is below the `_start` form."""
    text = program("reduce_scatter", n, "bf16", "sync", rows, 1024)
    t, s, apart, module = _times(text, chip, n, None)
    assert len(_stagings(_top(module))) >= 3
    assert t == pytest.approx(s, rel=1e-9)
    assert s < apart


@st.composite
def timed_programs(draw) -> tuple[str, int, str, int]:
    """A bf16 / f16 add reduce_scatter or all_reduce of 64 x 128 chunks (x 4 rows per
    device for an all_reduce) over rings of 2 - 8, in 2 - 8 pieces."""
    n = draw(st.sampled_from([2, 4, 8]))
    kind = draw(st.sampled_from(["reduce_scatter", "all_reduce"]))
    dtype = draw(st.sampled_from(["bf16", "f16"]))
    reduction = draw(st.sampled_from(["add", "max"]))
    text = program(kind, n, dtype, "sync", 64, 128).replace(" add ", f" {reduction} ")
    pieces = draw(st.sampled_from([2, 4, 8]))
    return text, n, draw(st.sampled_from(["v5e", "v5p"])), _vmem(kind, n, 64, 128, pieces)


@settings(deadline=None, max_examples=12, suppress_health_check=[HealthCheck.too_slow])
@given(timed_programs())
def test_pipelining_low_precision_pieces_never_costs_time(case):
    """Level S equals level T, and pipelined is never slower than one after the other at
    level T (so the kernel need not choose) nor than a `_start`'s form at level S."""
    text, n, chip, vmem = case
    t, s, apart, _ = _times(text, chip, n, vmem)
    t_apart, *_ = _times(text, chip, n, vmem, pipelined=False)
    assert t == pytest.approx(s, rel=1e-9)
    assert s <= apart and t <= t_apart
