"""
The report of a run (DESIGN.md's keys and the run's description, as `--report-json`
writes it) and the summary `shardc-run` prints.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from shardc.driver.checking import Comparison
from shardc.driver.compiling import PassChange
from shardc.interpreter import io
from shardc.interpreter.devices import module_mesh
from shardc.interpreter.timing import Timeline, summary_lines
from shardc.interpreter.values import dtype_name, type_str
from xdsl.dialects.builtin import ModuleOp


@dataclass
class Report:
    file: str
    entry: str
    level: str
    devices: int
    mesh: str | None
    pipeline: str | None
    inputs: dict[str, Any]
    outputs: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    check: dict[str, Any] | None = None
    timing_only: bool = False
    timing: dict[str, Any] | None = None
    """`Timeline.report()`: DESIGN.md's timing keys, merged into the top level."""
    passes: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """What each pass of `-p` changed (`PassChange.as_json`)."""

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "file": self.file,
            "entry": self.entry,
            "level": self.level,
            "devices": self.devices,
            "mesh": self.mesh,
            "pipeline": self.pipeline,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "check": self.check,
            "timing_only": self.timing_only,
            "passes": self.passes,
        }
        if self.timing is not None:
            for key, value in self.timing.items():
                out.setdefault(key, value)
        return out


def make_report(
    filename: str,
    module: ModuleOp,
    sig: io.Signature,
    pipeline: str | None,
    inputs_info: dict[str, Any],
    output_specs: Sequence[tuple[str, Sequence[int], Any]],
    timeline: Timeline,
    *,
    timing_only: bool = False,
    passes: Sequence[PassChange] = (),
) -> Report:
    """The run's report (DESIGN.md's keys and the run's description)."""
    mesh = module_mesh(module)
    return Report(
        file=filename,
        entry=sig.name,
        level=sig.level,
        devices=sig.devices,
        mesh=_mesh_str(*mesh) if mesh and sig.level != "G" else None,
        pipeline=pipeline,
        inputs=inputs_info,
        outputs=[
            {"name": n, "shape": list(shape), "dtype": dtype_name(dtype)}
            for n, shape, dtype in output_specs
        ],
        timing_only=timing_only,
        timing=timeline.report(),
        passes=[p.as_json() for p in passes],
    )


def program_title(report: Report) -> str:
    """`file @entry -p PIPELINE`: how a picture of the run names the program."""
    name = os.path.basename(report.file) if report.file not in ("<stdin>",) else report.file
    title = f"{name} @{report.entry}"
    return title + (f"  -p {report.pipeline}" if report.pipeline else "")


def _mesh_str(name: str, mesh: Any) -> str:
    axes = ", ".join(f'"{n}"={s}' for n, s in zip(mesh.names, mesh.shape, strict=False))
    return f"@{name} <[{axes}]>"


def specs_str(specs: Sequence[tuple[str, tuple[int, ...], Any]]) -> str:
    return "(" + ", ".join(f"{n}: {type_str(s, d)}" for n, s, d in specs) + ")"


def summary_text(report: Report, outputs: dict[str, str], comparisons: Sequence[Comparison]) -> str:
    """What `shardc-run` prints: the program, pipeline, inputs, outputs, check, timing."""
    devices = f"{report.devices} device" + ("s" if report.devices != 1 else "")
    mesh = f" on mesh {report.mesh}" if report.mesh else ""
    lines = [f"{report.file} @{report.entry}: level {report.level}, {devices}{mesh}"]
    if report.pipeline:
        lines.append(f"pipeline: {report.pipeline}")
        width = max((len(p["pass"]) for p in report.passes), default=0)
        for p in report.passes:
            ops = f"ops {p['ops_before']} -> {p['ops_after']}"
            coll = f"collectives {p['collectives_before']} -> {p['collectives_after']}"
            same = (
                p["ops_before"] == p["ops_after"]
                and p["collectives_before"] == p["collectives_after"]
            )
            lines.append(
                f"  {p['pass']:<{width}}  {ops:<18} {coll}"
                + ("  (no change in counts)" if same else "")
            )
    src = report.inputs
    lines.append(
        "inputs: "
        + (f"random (seed {src['seed']})" if src["source"] == "random" else src["source"])
    )
    if report.timing_only:
        lines.append("outputs (not computed: --timing-only):")
    width = max((len(n) for n in outputs), default=0)
    for name, ty in outputs.items():
        lines.append(f"  {name:<{width}}  {ty}")
    if report.check is not None:
        verdict = "pass" if report.check["passed"] else "FAIL"
        lines.append(f"check against {report.check['reference']}: {verdict}")
        for c in comparisons:
            tol = "exact" if c.tolerance == 0.0 else f"tolerance {c.tolerance:.3g}"
            status = "ok" if c.passed else "FAIL"
            note = f"  ({c.note})" if c.note else ""
            lines.append(
                f"  {c.name:<{width}}  max |diff| {c.max_abs_diff:.3g} ({tol}) {status}{note}"
            )
    if report.timing is not None:
        lines.extend(summary_lines(report.timing))
        if report.level == "T":
            from shardc.interpreter import level_t_timeline

            lines.extend(level_t_timeline.summary_lines(report.timing))
    return "\n".join(lines)
