"""
Reduce-scatter pieces pipelined (issue 15 item 1): sync f32 and bf16 reduce_scatters and
all_reduces whose chunks are too large for the chip's VMEM, so `lower-to-tpu` reduces
them in pieces (`hardware.vmem.rs_pieces`; bf16 partial sums travel in f32, so its pieces
are as many as f32's of the same shape). Per row: the pieces; level T (the kernel on the
level-T simulator, timing only) of the sync collective with its pieces pipelined (the
default: a piece's first step starts once the previous piece's last messages have left),
of its `_start` + `done` form with the same pieces (lowered with 8x the VMEM, so that its
in-flight share is the sync budget: a `_start`'s next piece is sent once the last step
has landed, still before its reduction, reduce_ring.py `_Run.interleaved`), and of the
sync kernel with pipelining off (`pipeline-pieces=false`); level S's cost of the two
forms (`CostModel.collective_time`: `topology.Phase` of pipelined pieces, `landed` for
the `_start`). Saved per boundary: level T's pipelining off minus on, and level S's
`_start` minus sync (one step's latency: hop latency x the hops of the edge).

    python bench/rs_pieces.py
"""

from __future__ import annotations

import time

from shardc.dialects import collective, make_context
from shardc.dialects.sizes import tensor_bytes
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel
from shardc.interpreter.devices import module_mesh
from shardc.interpreter.level_t import run_level_t
from shardc.interpreter.testing import parse
from shardc.lowering.lower_to_tpu import LowerToTpuPass
from shardc.passes.async_split import split_in_place

SHAPES = [
    ("v5e", 4, "reduce_scatter", 65536, 1024),
    ("v5e", 2, "reduce_scatter", 32768, 1024),
    ("v5e", 4, "all_reduce", 32768, 1024),
    ("v5p", 4, "reduce_scatter", 16384, 1024),
    ("v5p", 8, "reduce_scatter", 16384, 1024),
    ("v5p", 4, "all_reduce", 16384, 1024),
]
"""(chip, devices, kind, chunk rows, columns): chunks of rows x columns (a
reduce_scatter's; an all_reduce of 4 rows x columns per device)."""

CASES = [(*shape, dtype) for dtype in ("f32", "bf16") for shape in SHAPES]
"""Every shape in f32 and in bf16."""


def program(n: int, kind: str, rows: int, cols: int, dtype: str = "f32") -> str:
    """One sync collective over a ring of `n` devices, per-device I/O."""
    if kind == "reduce_scatter":
        arg, res = f"tensor<{rows * n}x{cols}x{dtype}>", f"tensor<{rows}x{cols}x{dtype}>"
        op = f'collective.reduce_scatter add %a on @m["x"], dim = 0 : ({arg}) -> {res}'
    else:
        arg = res = f"tensor<{4 * rows}x{cols}x{dtype}>"
        op = f'collective.all_reduce add %a on @m["x"] : {arg}'
    return "\n".join(
        [
            f'spmd.mesh @m = <["x"={n}]>',
            f"func.func @main(%a: {arg}) -> {res} attributes {{spmd.per_device_io}} {{",
            f"  %r = {op}",
            f"  func.return %r : {res}",
            "}",
        ]
    )


def level_t(
    text: str, chip: str, n: int, pipelined: bool, vmem: int | None = None, start: bool = False
):
    """Level T step time (s) of `text` and its piece count (one per piece out of VMEM),
    lowered with `vmem` bytes of VMEM (None: the chip's); `start`: its collective's
    `_start` + `done` form (`async_split.split_in_place`)."""
    module = parse(text)
    if start:
        split_in_place(next(o for o in module.walk() if isinstance(o, collective.CollectiveOp)))
    LowerToTpuPass(chip=chip, pipeline_pieces=pipelined, vmem_limit=vmem).apply(
        make_context(), module
    )
    # One piece-out semaphore per ring, one copy out through it per piece but the last.
    rings = sum(
        1 for o in module.walk() if o.name == "tpu.alloc" and _hint(o).endswith("piece_sem")
    )
    outs = sum(1 for o in module.walk() if o.name == "tpu.dma_start" and _is_piece_out(o))
    pieces = outs // rings + 1 if rings else 1
    _, report = run_level_t(module, [[None, None]] * n, chip=chip, values=False)
    return report["step_time_s"], pieces


def _hint(op) -> str:
    return (op.results[0].name_hint or "") if op.results else ""


def _is_piece_out(op) -> bool:
    """A copy of a piece's result out of VMEM (bf16 pipelined: the next piece's first
    own chunk is fetched under the same semaphore, from HBM)."""
    src = op.operands[0].name_hint or ""
    return src.endswith(("_acc", "rs_rounded")) and any(
        (v.name_hint or "").endswith("piece_sem") for v in op.operands
    )


def level_s(text: str, chip: str) -> tuple[float, float]:
    """Level S's cost (s) of the sync collective and of its `_start` at the sync budget."""
    module = parse(text)
    op = next(o for o in module.walk() if o.name.startswith("collective."))
    mesh = module_mesh(module)
    assert mesh is not None
    model = CostModel(get_chip(chip), mesh[1])
    sizes = [tensor_bytes(t) for t in op.input_types()]  # pyright: ignore[reportAttributeAccessIssue]
    vmem = get_chip(chip).vmem_bytes
    return model.collective_time(op), model._collective_seconds(op, sizes, vmem, True)  # noqa: SLF001  # pyright: ignore[reportArgumentType]


def main() -> None:
    print(
        "| chip | collective | type | pieces | level T sync | level T `_start` "
        "| level T pipelining off | saved per boundary | level S sync | level S `_start` "
        "| saved per boundary | T / S sync | T / S `_start` |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    start = time.monotonic()
    for chip, n, kind, rows, cols, dtype in CASES:
        text = program(n, kind, rows, cols, dtype)
        vmem = get_chip(chip).vmem_bytes
        t_pip, pieces = level_t(text, chip, n, True)
        t_start, start_pieces = level_t(text, chip, n, True, vmem * 8, start=True)
        assert start_pieces == pieces, (start_pieces, pieces)
        t_seq, _ = level_t(text, chip, n, False)
        s_pip, s_start = level_s(text, chip)
        mib = rows * cols * {"f32": 4, "bf16": 2}[dtype] / 2**20
        gaps = max(1, pieces - 1)
        print(
            f"| {chip} | {kind} of {mib:.0f} MiB chunks over {n} | {dtype} | {pieces} "
            f"| {t_pip * 1e6:.1f} us | {t_start * 1e6:.1f} us | {t_seq * 1e6:.1f} us "
            f"| {(t_seq - t_pip) / gaps * 1e6:.2f} us "
            f"| {s_pip * 1e6:.1f} us | {s_start * 1e6:.1f} us "
            f"| {(s_start - s_pip) / gaps * 1e6:.2f} us "
            f"| {t_pip / s_pip:.3f} | {t_start / s_start:.3f} |",
            flush=True,
        )
    print(f"\n{time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
