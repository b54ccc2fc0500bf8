"""
What fusion buys (issue 14 item 1): for every example, every program of the JAX corpus
(`tests/frontends/corpus/*.stablehlo.mlir`, imported as `shardc-import` does) and the
real-size transformer layer (batch 8, sequence 2048, model 4096, FFN 16384, bf16, 2x4 v5e),
the simulated step time, compute time and HBM bytes of the slowest device after
`spmd-pipeline{fusion=false}` and after `spmd-pipeline` (fusion on), timing only, on v5e, in
one run. The layer's line also gives its fused compute over its matmul time (the unfused
dots' time), against issue 14's target of 1.3x, and the fused run's compute time by kernel
kind (what is left above the matmuls).

    python bench/fusion.py [--chip v5e]

A row is flagged when fusion made its step slower or moved more HBM bytes, and the layer
when it misses 1.3x. The model is deterministic: a rerun gives the same numbers (spread 0).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import shardc
from shardc.diagnostics import DiagnosticError
from shardc.dialects import hlo
from shardc.frontends.stablehlo import import_stablehlo
from shardc.interpreter.timing import format_bytes, format_seconds

ROOT = Path(__file__).parents[1]
EXAMPLES = ROOT / "examples"
CORPUS = ROOT / "tests" / "frontends" / "corpus"
LAYER = EXAMPLES / "real_size" / "transformer_layer.mlir"
TARGET = 1.3


@dataclass
class Timing:
    step: float
    compute: float
    hbm_bytes: int
    matmuls: float
    kernels: dict[str, float]
    """Compute time per kernel kind (a fusion's name without `.N`, else the op's name)."""


def _time(text: str, fusion: bool, chip: str, options: str = "") -> Timing:
    pipeline = f"spmd-pipeline{{fusion={'true' if fusion else 'false'}{options}}}"
    result = shardc.run(shardc.compile(text, pipeline, chip), chip=chip, timing_only=True)
    report = result.report
    slow = report["slowest_device"]
    compute = [s for s in result.timeline.slices() if s.device == slow and s.stream == "compute"]
    kernels: dict[str, float] = {}
    for s in compute:
        kind = s.op.label.split(".")[0] if isinstance(s.op, hlo.FusionOp) else s.op.name
        kernels[kind] = kernels.get(kind, 0.0) + s.end - s.start
    return Timing(
        report["step_time_s"],
        report["compute_time_s"],
        sum(s.bytes for s in compute),
        sum(s.end - s.start for s in compute if s.op.name == "hlo.dot"),
        kernels,
    )


def _above_matmuls(t: Timing) -> str:
    """Where a fused run's compute time goes: each kernel kind's total, largest first (the
    dots' kernels and `hlo.dot` against the matmul time, the rest is what is above it)."""
    rows = sorted(t.kernels.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {_us(v)}" for k, v in rows)


def programs() -> list[tuple[str, str]]:
    out = [(p.stem, p.read_text()) for p in sorted(EXAMPLES.glob("*.mlir"))]
    for path in sorted(CORPUS.glob("*.stablehlo.mlir")):
        module = import_stablehlo(path.read_text(), str(path)).module
        out.append((f"corpus/{path.name.removesuffix('.stablehlo.mlir')}", str(module)))
    out.append(("real_size/transformer_layer", LAYER.read_text()))
    return out


def _us(t: float) -> str:
    return format_seconds(t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chip", default="v5e")
    chip = parser.parse_args().chip
    print(
        "| program | step unfused | step fused | speedup | compute unfused | compute fused "
        "| HBM bytes unfused | HBM bytes fused | flag |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    layer: tuple[Timing, Timing] | None = None
    for name, text in programs():
        try:
            a, b = _time(text, False, chip), _time(text, True, chip)
        except DiagnosticError as e:
            print(f"| {name} | error: {str(e).splitlines()[0]} | | | | | | | **error** |")
            continue
        flag = "**slower**" if b.step > a.step * (1 + 1e-9) else ""
        if b.hbm_bytes > a.hbm_bytes:
            flag += " **more bytes**"
        speedup = a.step / b.step if b.step else 1.0
        print(
            f"| {name} | {_us(a.step)} | {_us(b.step)} | {speedup:.2f}x | {_us(a.compute)} "
            f"| {_us(b.compute)} | {format_bytes(a.hbm_bytes)} | {format_bytes(b.hbm_bytes)} "
            f"| {flag} |"
        )
        if name.startswith("real_size"):
            layer = (a, b)
    if layer is not None:
        text = LAYER.read_text()
        nomb = (
            _time(text, False, chip, " micro-batch=false"),
            _time(text, True, chip, " micro-batch=false"),
        )
        print()
        for what, (a, b) in (("spmd-pipeline", layer), ("spmd-pipeline{micro-batch=false}", nomb)):
            ratio = b.compute / a.matmuls
            miss = "met" if ratio <= TARGET else f"**missed** (target {TARGET}x)"
            print(
                f"- real-size layer, {what}: compute {_us(a.compute)} unfused -> "
                f"{_us(b.compute)} fused ({a.compute / b.compute:.1f}x less), step "
                f"{_us(a.step)} -> {_us(b.step)}; matmuls {_us(a.matmuls)}; fused compute / "
                f"matmul time = **{ratio:.2f}x**: {miss}"
            )
            print(f"  - fused kernels by kind (slowest device): {_above_matmuls(b)}")


if __name__ == "__main__":
    main()
