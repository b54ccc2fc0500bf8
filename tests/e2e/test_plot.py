"""`shardc-run --plot` and `Result.plot`: the per-device timeline PNG (interpreter/plot.py)."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest
from shardc.driver import checking
from shardc.tools import shardc_run

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BIN = Path(sys.executable).parent / "shardc-run"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, "not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(BIN)] if BIN.exists() else [sys.executable, "-m", "shardc.tools.shardc_run"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=300, check=False)


def test_plot_of_the_pipelined_megatron_on_8_devices(tmp_path: Path) -> None:
    png = tmp_path / "t.png"
    proc = cli(str(EXAMPLES / "megatron_mlp.mlir"), "-p", "spmd-pipeline", "--plot", str(png))
    assert proc.returncode == 0, proc.stderr
    assert f"wrote timeline {png}" in proc.stdout
    width, height = png_size(png)
    assert png.stat().st_size > 20_000  # bars, text and legend, not a blank canvas
    # 14 in at 110 dpi; 8 devices x (compute, collectives) rows plus title and legend
    assert width == 1540
    assert 700 <= height <= 1000
    assert not list(tmp_path.glob("*.tmp*"))  # written atomically: no temporary left


def test_height_follows_the_rows_and_level_g_has_one(tmp_path: Path, capsys) -> None:
    g, s = tmp_path / "g.png", tmp_path / "s.png"
    src = str(EXAMPLES / "megatron_mlp.mlir")
    assert shardc_run.main([src, "--plot", str(g)]) == 0  # level G: one device, compute only
    assert shardc_run.main([src, "-p", "spmd-pipeline", "--timing-only", "--plot", str(s)]) == 0
    capsys.readouterr()
    (gw, gh), (sw, sh) = png_size(g), png_size(s)
    assert gw == sw == 1540
    assert gh < 400 < sh


def test_many_ops_and_many_collectives(tmp_path: Path, capsys) -> None:
    png = tmp_path / "dp.png"
    assert (
        shardc_run.main([str(EXAMPLES / "dp_grads.mlir"), "--timing-only", "--plot", str(png)]) == 0
    )
    assert "wrote timeline" in capsys.readouterr().out
    assert png_size(png)[0] == 1540


def test_missing_matplotlib_is_one_message_and_exit_1(tmp_path: Path, monkeypatch, capsys) -> None:
    # an import of a module whose sys.modules entry is None raises ImportError
    for name in (
        "matplotlib",
        "matplotlib.backends",
        "matplotlib.backends.backend_agg",
        "matplotlib.figure",
    ):
        monkeypatch.setitem(sys.modules, name, None)
    png = tmp_path / "t.png"
    code = shardc_run.main([str(EXAMPLES / "megatron_mlp.mlir"), "--plot", str(png)])
    out, err = capsys.readouterr()
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "shardc-run: error: --plot needs matplotlib" in lines[0]
    assert "pip install 'shardc[plot]'" in lines[0]
    assert "Traceback" not in err
    assert out == ""  # refused before running anything
    assert not png.exists()


def test_unwritable_plot_path_is_one_error_and_nothing_left(tmp_path: Path, capsys) -> None:
    png = tmp_path / "no_such_dir" / "t.png"
    code = shardc_run.main([str(EXAMPLES / "megatron_mlp.mlir"), "--plot", str(png)])
    err = capsys.readouterr().err
    assert code == 1
    assert f"cannot write '{png}'" in err and "Traceback" not in err
    assert not png.parent.exists()


def test_failed_check_writes_no_plot(tmp_path: Path, monkeypatch, capsys) -> None:
    png = tmp_path / "t.png"
    monkeypatch.setattr(
        checking, "compare", lambda name, got, ref: checking.Comparison(name, 1.0, 0.0, False)
    )
    code = shardc_run.main(
        [str(EXAMPLES / "megatron_mlp.mlir"), "-p", "spmd-pipeline", "--check", "--plot", str(png)]
    )
    capsys.readouterr()
    assert code == 1
    assert not png.exists()


def test_result_plot_uses_the_same_picture(tmp_path: Path) -> None:
    import shardc

    module = shardc.compile((EXAMPLES / "megatron_mlp.mlir").read_text())
    result = shardc.run(module, timing_only=True)
    png = tmp_path / "api.png"
    assert result.plot(str(png)) == str(png)
    width, height = png_size(png)
    assert width == 1540 and 700 <= height <= 1000


def test_result_plot_without_matplotlib_is_a_diagnostic(tmp_path: Path, monkeypatch) -> None:
    import shardc

    result = shardc.run((EXAMPLES / "megatron_mlp.mlir").read_text(), timing_only=True)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(shardc.DiagnosticError, match="needs matplotlib"):
        result.plot(str(tmp_path / "t.png"))
    assert not (tmp_path / "t.png").exists()


def test_other_streams_get_rows_of_their_own(tmp_path: Path) -> None:
    """A finer machine model's extra streams (per-link rows, say) are drawn, not dropped."""
    from types import SimpleNamespace

    from shardc.interpreter.plot import plot_timeline
    from shardc.interpreter.timing import KINDS, Slice

    def op(name: str) -> SimpleNamespace:
        return SimpleNamespace(name=name, operands=())

    dot, ar = op("hlo.dot"), op("collective.all_reduce")
    slices = []
    for d in range(2):
        slices += [
            Slice(d, "compute", dot, 0.0, 1e-6, 1e6, 100),
            Slice(d, "wait", ar, 1e-6, 3e-6, 0.0, 0),
            Slice(d, "collectives", ar, 1e-6, 3e-6, 0.0, 4096),
            Slice(d, "link x+", op("tpu.dma_start"), 1e-6, 2e-6, 0.0, 2048),
        ]
    per_device = [{"device": d, "exposed_comm_time_s": 2e-6} for d in range(2)]
    report = {
        "devices": 2,
        "step_time_s": 3e-6,
        "compute_time_s": 1e-6,
        "exposed_comm_time_s": 2e-6,
        "roofline_time_s": 2e-6,
        "collectives": dict.fromkeys(KINDS, 0) | {"all_reduce": 1},
        "comm_bytes": 4096,
        "chip": "v5e",
        "slowest_device": 0,
        "per_device": per_device,
    }
    timeline = SimpleNamespace(
        report=lambda: report,
        slices=lambda: slices,
        devices=[0, 1],
        level="T",
        chip=SimpleNamespace(name="v5e"),
    )
    three_rows, two_rows = tmp_path / "t3.png", tmp_path / "t2.png"
    plot_timeline(timeline, str(three_rows), program="fake")
    slices[:] = [s for s in slices if s.stream != "link x+"]
    plot_timeline(timeline, str(two_rows), program="fake")
    assert png_size(three_rows)[1] > png_size(two_rows)[1]


def test_level_t_rows_are_compute_hbm_dma_and_ici_dma() -> None:
    """A kernel's picture shows its DMAs (local and to other chips), not an empty engine row."""
    import shardc
    from shardc.interpreter.level_t_timeline import HBM_WAIT
    from shardc.interpreter.plot import _category, _rows

    text = (Path(__file__).parents[2] / "examples" / "megatron_mlp.mlir").read_text()
    result = shardc.run(shardc.compile(text, "tpu-pipeline"))
    slices = result.timeline.slices()
    rows = _rows(slices, 8, "T")
    assert rows[:3] == [(0, "compute"), (0, "HBM DMA"), (0, "ICI DMA")]
    assert len(rows) == 24
    cats = {_category(s.stream, s.op) for s in slices}
    assert {"dma:HBM DMA", "dma:ICI DMA", "compute:matmul", "wait"} <= cats
    # Waits for the device's own HBM DMAs are not drawn as waiting for communication.
    waits = [s for s in slices if s.stream == "wait"]
    assert any(s.op.name == HBM_WAIT for s in waits)
    assert any(s.op.name != HBM_WAIT for s in waits)
    for s in waits:
        if s.op.name == HBM_WAIT:
            assert _category(s.stream, s.op) == "dma:HBM DMA"
