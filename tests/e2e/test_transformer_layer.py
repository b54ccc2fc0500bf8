"""The transformer layer of issue 14 (scripts/make_transformer_layer.py): the checked small
example and the real-size one are the same model, and the real-size one is costed at level
S without allocating its tensors."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from shardc.tools.shardc_run import main as shardc_run

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "make_transformer_layer.py"


def _generator():
    spec = importlib.util.spec_from_file_location("make_transformer_layer", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_examples_are_what_the_generator_writes() -> None:
    gen = _generator()
    real = gen.transformer_layer()
    assert (ROOT / "examples" / "real_size" / "transformer_layer.mlir").read_text() == real
    small = gen.transformer_layer(gen.LayerShape(batch=4, seq=32, model=64, heads=4, ffn=256))
    assert (ROOT / "examples" / "transformer_layer.mlir").read_text() == small


def test_real_size_layer_is_costed_without_its_tensors(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    path = ROOT / "examples" / "real_size" / "transformer_layer.mlir"
    args = [str(path), "-p", "spmd-pipeline", "--timing-only", "--report-json", str(report)]
    assert shardc_run(args) == 0
    r = json.loads(report.read_text())
    # Per device: the layer's matmuls are about 9.5e11 FLOPs, 4.8 ms at v5e's bf16 peak;
    # the step can be no faster than that.
    assert r["step_time_s"] > 4.5e-3
    assert r["collectives"]["all_reduce"] >= 2
