"""The report's per-op breakdown (interpreter/breakdown.py): `ops` and `collective_ops`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from shardc.tools.shardc_import import main as shardc_import
from shardc.tools.shardc_run import main as shardc_run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))


def _report(tmp_path: Path, path: Path, *args: str) -> dict:
    out = tmp_path / "r.json"
    assert shardc_run([str(path), *args, "--report-json", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_ops_sum_to_compute_time(tmp_path: Path, path: Path) -> None:
    r = _report(tmp_path, path, "-p", "spmd-pipeline", "--timing-only")
    ops = r["ops"]
    for e in ops:
        assert {"op", "time_s", "flops", "bytes", "location"} <= e.keys()
        assert e["location"] and e["location"].startswith(str(path))
        assert e["bound"] in ("compute", "memory")
        assert 0 < e["roofline_fraction"] <= 1.0
    times = [e["time_s"] for e in ops]
    assert times == sorted(times, reverse=True)
    assert math.isclose(sum(times), r["compute_time_s"], rel_tol=1e-9, abs_tol=1e-15)
    colls = r["collective_ops"]
    # the engine's busy time: the collectives' times less what overlapped the ones ahead
    # (`timing.engine_window`), at least the longest
    total = sum(c["time_s"] for c in colls)
    assert r["comm_time_s"] <= total * (1 + 1e-9) + 1e-15
    assert r["comm_time_s"] >= max((c["time_s"] for c in colls), default=0.0) * (1 - 1e-9)
    assert sum(r["collectives"].values()) == len(colls)
    for c in colls:
        assert math.isclose(c["hidden_s"], max(0.0, c["time_s"] - c["exposed_s"]), abs_tol=1e-15)
        assert c["algorithm"]


def test_dot_is_compute_bound_and_elementwise_memory_bound(tmp_path: Path) -> None:
    path = ROOT / "examples" / "real_size" / "transformer_layer.mlir"
    r = _report(tmp_path, path, "-p", "spmd-pipeline", "--timing-only")
    by_op: dict[str, set[str]] = {}
    for e in r["ops"]:
        by_op.setdefault(e["op"], set()).add(e["bound"])
    assert "compute" in by_op["hlo.dot"]
    # the elementwise and reduction kernels (the residual add is fused with micro-batch's
    # concatenate since issue 14's second fusion round)
    elementwise = {op for op in by_op if op.endswith("_fusion") and not op.startswith("dot")}
    assert elementwise and all(by_op[op] == {"memory"} for op in elementwise)
    # the score matmuls: 2 * (B/2=4) * (H/4=8) * 2048 * 2048 * 128 FLOPs on a device
    assert max(e["flops"] for e in r["ops"]) >= 2 * 4 * 8 * 2048 * 2048 * 128


def test_sync_collectives_are_exposed_async_ones_can_hide(tmp_path: Path) -> None:
    path = ROOT / "examples" / "dp_grads.mlir"
    sync = _report(tmp_path, path, "-p", "spmd-propagate,spmd-partition", "--timing-only")
    assert sync["collective_ops"]
    assert all(c["hidden_s"] == 0.0 for c in sync["collective_ops"])
    overlapped = _report(tmp_path, path, "-p", "spmd-pipeline", "--timing-only")
    assert sum(c["hidden_s"] for c in overlapped["collective_ops"]) > 0


def test_imported_program_names_the_users_source(tmp_path: Path, capsys) -> None:
    src = ROOT / "tests" / "frontends" / "corpus" / "attention.debuginfo.mlir"
    imported = tmp_path / "attention.mlir"
    assert shardc_import([str(src), "--print-debuginfo", "-o", str(imported)]) == 0
    r = _report(tmp_path, imported, "-p", "spmd-pipeline", "--timing-only")
    assert any("make_frontend_corpus.py" in (e["source"] or "") for e in r["ops"])
    text = capsys.readouterr().out
    assert "top ops" in text and "make_frontend_corpus.py" in text


@pytest.mark.parametrize(
    "name", ["transformer_layer.mlir", "megatron_mlp.mlir", "dp_grads.mlir", "reshard.mlir"]
)
def test_level_t_ops_sum_to_compute_time(tmp_path: Path, name: str) -> None:
    """Level T's `ops` (interpreter/level_t_breakdown.py): each instant of the compute
    stream's union goes to one op of the program, so the rows add up to compute_time_s;
    the tiled loops reach at most their roofline."""
    r = _report(tmp_path, ROOT / "examples" / name, "-p", "tpu-pipeline", "--timing-only")
    assert r["level"] == "T"
    ops = r["ops"]
    assert ops
    assert math.isclose(sum(e["time_s"] for e in ops), r["compute_time_s"], rel_tol=1e-9)
    for e in ops:
        assert {"op", "time_s", "flops", "bytes", "location"} <= e.keys()
        assert 0 < e["roofline_fraction"] <= 1.0
    named = {e["op"] for e in ops if e["location"]}
    assert all(op.startswith(("hlo.", "collective.", "spmd.")) or op == "kernel" for op in named)
    assert any(op.startswith("hlo.") for op in named)
    if name != "reshard.mlir":
        # A row is a source location: a dot's matmuls have flops; the collectives
        # partitioning put at a dot's location (their local DMAs) have bytes only.
        dots = [e for e in ops if e["op"] == "hlo.dot"]
        assert any(e["flops"] > 0 for e in dots)
        assert all(e["flops"] > 0 or e["bytes"] > 0 for e in dots)


def test_op_name_at_reads_the_source_line() -> None:
    from shardc.interpreter.level_t_breakdown import op_name_at

    path = ROOT / "examples" / "megatron_mlp.mlir"
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "hlo.dot" in text)
    assert op_name_at(f"{path}:{line}:3") == "hlo.dot"
    assert op_name_at("nowhere.mlir:1:1") == "kernel"
    assert op_name_at("") == "kernel"


def test_level_t_collective_ops_say_what_was_hidden(tmp_path: Path) -> None:
    """Level T's `collective_ops`: each collective's ring (its remote DMAs), the time the
    compute stream waited at its semaphores, and the rest hidden."""
    path = ROOT / "examples" / "collectives.mlir"
    r = _report(tmp_path, path, "-p", "tpu-pipeline", "--timing-only")
    rows = r["collective_ops"]
    assert {e["kind"] for e in rows} == {
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "all_to_all",
        "permute",
    }
    for e in rows:
        assert e["time_s"] > 0 and e["bytes"] > 0
        assert math.isclose(e["hidden_s"] + e["exposed_s"], e["time_s"], rel_tol=1e-12)
    megatron = _report(
        tmp_path, ROOT / "examples" / "megatron_mlp.mlir", "-p", "tpu-pipeline", "--timing-only"
    )
    (row,) = megatron["collective_ops"]  # the row-parallel dot's all_reduce, at the dot
    assert row["op"] == "collective of hlo.dot" and row["exposed_s"] > 0
