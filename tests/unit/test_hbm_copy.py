"""
An HBM-to-HBM DMA reads and writes its device's HBM (issue 15 item 5): one definition,
`hardware.cost.dma_hbm_passes`, rates level T's local DMAs (interpreter/level_t_dma.py)
and level S's copies (`gather_scatter_bytes`, a collective's own block), so a gather or a
scatter agrees at both levels (it was 0.50 / 0.53 when level T charged a copy once).
"""

from __future__ import annotations

import pytest
import shardc
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import dma_hbm_passes, hbm_copy_bytes
from shardc.interpreter.level_t import run_level_t
from shardc.interpreter.testing import parse

HBM = "#tpu.memory_space<hbm>"
VMEM = "#tpu.memory_space<vmem>"
T = "memref<1024x1024xf32, {}>"
N = 4 * 2**20


def test_passes_count_each_end_in_hbm():
    assert dma_hbm_passes(True, True) == 2
    assert dma_hbm_passes(True, False) == dma_hbm_passes(False, True) == 1
    assert dma_hbm_passes(False, False) == 1  # no source for an on-chip rate: one pass
    assert hbm_copy_bytes(N) == 2 * N


def _kernel(copies: list[tuple[str, str]]) -> str:
    """One device: each (src, dst) DMA of 4 MiB started at once, then all waited."""
    lines = []
    for i, (src, dst) in enumerate(copies):
        s, d = T.format(src), T.format(dst)
        if src == VMEM:
            lines.append(f"  %src{i} = tpu.alloc : {s}")
        lines.append(f"  %dst{i} = tpu.alloc : {d}" if dst == VMEM else "")
        lines.append(f"  %sem{i} = tpu.alloc : !tpu.dma_semaphore")
        a = f"%src{i}" if src == VMEM else "%in"
        b = f"%dst{i}" if dst == VMEM else f"%out{i}"
        lines.append(f"  tpu.dma_start {a}, {b}, %sem{i} : {s} to {d}")
    for i, (_, dst) in enumerate(copies):
        b = f"%dst{i}" if dst == VMEM else f"%out{i}"
        lines.append(f"  tpu.dma_wait %sem{i}, {b} : {T.format(dst)}")
    outs = "".join(f", %out{i}: {T.format(HBM)}" for i in range(len(copies)))
    return (
        'spmd.mesh @m = <["x"=1]>\n'
        f"func.func @k(%in: {T.format(HBM)}{outs}) {{\n" + "\n".join(lines) + "\n  func.return\n}\n"
    )


@pytest.mark.parametrize(
    ("copies", "hbm_bytes"),
    [
        ([(HBM, HBM)], 2 * N),  # read and write
        ([(HBM, VMEM)], N),  # a fetch reads HBM once
        ([(VMEM, HBM)], N),  # a write-back writes it once
        ([(HBM, HBM), (HBM, VMEM)], 3 * N),  # sharing: HBM carries 3N bytes in all
    ],
)
def test_level_t_local_dma_takes_its_hbm_bytes_over_hbm_bandwidth(copies, hbm_bytes):
    chip = get_chip("v5e")
    module = parse(_kernel(copies), "k.mlir")
    inputs = [[None] * (1 + len(copies))]
    _, report = run_level_t(module, inputs, chip="v5e", values=False)
    assert report["step_time_s"] == pytest.approx(hbm_bytes / chip.hbm_bw, rel=0.01)


def _gather(rows: int) -> str:
    t, i, r = "tensor<4096x1024xbf16>", f"tensor<{rows}xi32>", f"tensor<{rows}x1024xbf16>"
    return (
        'spmd.mesh @m = <["x"=1]>\n'
        f"func.func @main(%t: {t}, %i: {i}) -> ({r}) attributes {{spmd.per_device_io}} {{\n"
        f"  %r = hlo.gather %t, %i, offset_dims = [1], collapsed_slice_dims = [0], "
        f"start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 1024] : ({t}, {i}) -> {r}\n"
        f"  func.return %r : {r}\n}}"
    )


def _scatter(rows: int, dtype: str) -> str:
    t, u = f"tensor<4096x1024x{dtype}>", f"tensor<{rows}x1024x{dtype}>"
    return (
        'spmd.mesh @m = <["x"=1]>\n'
        f"func.func @main(%t: {t}, %i: tensor<{rows}x1xi32>, %u: {u}) -> ({t}) "
        "attributes {spmd.per_device_io} {\n"
        f"  %r = hlo.scatter add %t, %i, %u, update_window_dims = [1], inserted_window_dims = "
        "[0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : "
        f"({t}, tensor<{rows}x1xi32>, {u}) -> {t}\n  func.return %r : {t}\n}}"
    )


@pytest.mark.parametrize(
    "text",
    [_gather(512), _scatter(256, "f32"), _scatter(256, "bf16")],
    ids=["gather", "scatter f32", "scatter bf16"],
)
@pytest.mark.parametrize("chip", ["v5e", "v5p"])
def test_gather_and_scatter_agree_at_levels_s_and_t(text: str, chip: str):
    s = shardc.run(text, timing_only=True, chip=chip).report["step_time_s"]
    kernel = shardc.compile(text, "lower-to-tpu", chip=chip)
    t = shardc.run(kernel, timing_only=True, chip=chip).report["step_time_s"]
    assert 0.9 <= t / s <= 1.1, (s, t)


def test_gather_level_s_charges_the_slices_read_and_written():
    chip = get_chip("v5e")
    s = shardc.run(_gather(512), timing_only=True, chip="v5e").report["step_time_s"]
    assert s == pytest.approx((hbm_copy_bytes(512 * 1024 * 2) + 512 * 4) / chip.hbm_bw, rel=0.01)
