"""
The Python API for notebooks: `shardc.compile` and `shardc.run` (re-exported, lazily, by
the package root).

```python
import shardc
module = shardc.compile(open("examples/megatron_mlp.mlir").read())  # spmd-pipeline, v5e
result = shardc.run(module)               # random inputs from seed 0, as shardc-run draws them
result.outputs["out_0"]                   # numpy arrays by name, out_0..
result.report["step_time_s"]              # the report dict (DESIGN.md's keys), as --report-json
print(result.summary())                   # the timing summary shardc-run prints
result.plot("timeline.png")               # the picture of shardc-run --plot (needs matplotlib)

kernel = shardc.compile(text, "tpu-pipeline")  # down to level T: one tpu kernel per device
shardc.run(kernel).outputs["out_0"]           # the same global arrays, from the level-T simulator
```

Both go through the library driver `shardc-run` calls too, not a copy of it: parsing with
located diagnostics (`shardc.parsing.parse_and_verify`), the pass registry and the
verify-after-every-pass pipeline (`driver.compiling.compile_module`), the inputs,
splitting, execution and report (`interpreter.io`, `driver.execution.execute`,
`driver.reporting.make_report`). Every user error (a bad program, pipeline, chip or input
array) is one `shardc.DiagnosticError` whose text is the diagnostic `shardc-run` would
print.

`compile` gives every pass of the pipeline that takes a `chip` option (`spmd-pipeline`,
`schedule`, `lower-to-tpu`, ...) the `chip` argument unless the pipeline string sets it.
A module `compile` returns keeps its ops' source locations (`Operation.location`), so
`run` reports errors at the original file's lines, and records the pipeline that made it
as the module attribute `shardc.pipeline` (the report's `pipeline`: it travels with the
module, printed and read back too). `compile` never changes a module passed to it (it
compiles a copy).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from shardc.diagnostics import DiagnosticError, caret_location
from xdsl.dialects.builtin import ModuleOp, StringAttr

DEFAULT_PIPELINE = "spmd-pipeline"
DEFAULT_CHIP = "v5e"
DEFAULT_FILENAME = "<string>"

PIPELINE_ATTR = "shardc.pipeline"
"""The module attribute `compile` records its pipeline in (for the report of a run)."""


def _module_name(module: ModuleOp, filename: str | None) -> str:
    """The file the module was parsed from, else `filename`, else "<module>"."""
    pos = caret_location(module.location)
    return pos.filename.data if pos is not None else (filename or "<module>")


def _module_and_source(
    program: Any, filename: str | None, *, copy: bool, what: str
) -> tuple[ModuleOp, str]:
    """Parse text, or take (a copy of) a module (locations are kept on clones)."""
    if isinstance(program, str):
        from shardc.dialects import make_context
        from shardc.parsing import parse_and_verify

        name = filename or DEFAULT_FILENAME
        return parse_and_verify(make_context(), program, name), name
    if isinstance(program, ModuleOp):
        name = _module_name(program, filename)
        made_by_shardc = caret_location(program.location) is not None
        if copy:
            program = program.clone()
        if not made_by_shardc:
            from shardc.parsing import verify_module

            verify_module(program, filename=name)
        return program, name
    raise TypeError(
        f"{what}: expected MLIR text (str) or an xdsl ModuleOp, got {type(program).__name__}"
    )


def _check_chip(chip: str, what: str) -> Any:
    from shardc.hardware.chips import UnknownChipError, get_chip

    try:
        return get_chip(chip)
    except UnknownChipError as e:
        raise DiagnosticError(f"{what}: error: chip: {e}") from None


def compile(  # shardc.compile is the API's name
    text_or_module: str | ModuleOp,
    pipeline: str | None = DEFAULT_PIPELINE,
    chip: str = DEFAULT_CHIP,
    *,
    filename: str | None = None,
) -> ModuleOp:
    """
    Parse (if text) and verify a program, and apply a pass pipeline (`shardc-opt -p`
    syntax, the same pass registry; None or "" applies none) for `chip`. Returns a new
    module; errors are one `DiagnosticError` (file:line:col for text; `filename` names
    the text in them, default "<string>").
    """
    what = "shardc.compile"
    module, name = _module_and_source(text_or_module, filename, copy=True, what=what)
    if pipeline:
        from shardc.driver.compiling import compile_module, with_chip

        _check_chip(chip, what)
        compile_module(module, with_chip(pipeline, chip), name, prog=what)
        module.attributes[PIPELINE_ATTR] = StringAttr(pipeline)
    else:
        module.attributes.pop(PIPELINE_ATTR, None)  # this copy was made by no pipeline
    return module


@dataclass
class Result:
    """What `shardc.run` returns."""

    outputs: dict[str, np.ndarray]
    """Output arrays by name, `out_0..` (`out_K.D` for per-device programs); empty with
    `timing_only`."""
    report: dict[str, Any]
    """The report, as `shardc-run --report-json` writes it: DESIGN.md's keys (`devices`,
    `step_time_s`, `compute_time_s`, `exposed_comm_time_s`, `roofline_time_s`,
    `collectives`, `comm_bytes`, `peak_memory_bytes`) and the run's description."""
    timeline: Any
    """The simulated machine's `shardc.interpreter.timing.Timeline` (`.slices()`,
    `.trace_json()`, `.report()`); for a level-T kernel a
    `shardc.interpreter.level_t_timeline.LevelTTimeline` with the same methods."""
    module: ModuleOp
    """The module that ran."""
    program: str = ""
    """How pictures and summaries name the program."""

    def plot(self, path: str) -> str:
        """Draw the per-device timeline to a PNG (as `shardc-run --plot`); returns `path`."""
        from shardc.interpreter.plot import plot_timeline

        return plot_timeline(
            self.timeline,
            path,
            program=self.program,
            what="shardc.Result.plot: error: drawing a timeline",
        )

    def trace(self, path: str) -> str:
        """Write the Chrome/Perfetto trace JSON (as `shardc-run --trace`); returns `path`."""
        from shardc.driver.files import write_atomically

        write_atomically(path, lambda f: f.write(self.timeline.trace_json()), binary=False)
        return path

    def summary(self) -> str:
        """The timing summary `shardc-run` prints."""
        from shardc.interpreter import level_t_timeline
        from shardc.interpreter.timing import summary_lines

        lines = [self.program, *summary_lines(self.report)]
        if self.report.get("level") == "T":
            lines += level_t_timeline.summary_lines(self.report)
        return "\n".join(lines)

    def __repr__(self) -> str:
        from shardc.interpreter.timing import format_seconds

        r = self.report
        return (
            f"<shardc.Result {self.program}: {r['devices']} device(s) on {r.get('chip')}, "
            f"step {format_seconds(r['step_time_s'])}, exposed comm "
            f"{format_seconds(r['exposed_comm_time_s'])}, outputs {list(self.outputs)}>"
        )


def run(
    module_or_text: str | ModuleOp,
    inputs: Mapping[str, Any] | Sequence[Any] | None = None,
    *,
    chip: str = DEFAULT_CHIP,
    seed: int = 0,
    timing_only: bool = False,
    entry: str | None = None,
    filename: str | None = None,
) -> Result:
    """
    Run a program at the level it is in on `chip`'s simulated devices, as `shardc-run`
    does (no pipeline: compile first with `shardc.compile`). `inputs`: arrays by name
    (`in_0..`, or `in_K.D` for per-device programs) or a list in argument order; None
    draws them from `seed` like `shardc-run --seed`. `timing_only`: no values, shapes
    and the timing model only (no `inputs` then; `outputs` is empty).
    """
    what = "shardc.run"
    from shardc.driver.execution import execute
    from shardc.driver.reporting import make_report, program_title
    from shardc.interpreter import io

    hw = _check_chip(chip, what)
    module, name = _module_and_source(module_or_text, filename, copy=False, what=what)
    function = io.find_entry(module, entry, name)
    sig = io.signature(module, function, name)
    if timing_only:
        if inputs is not None:
            raise DiagnosticError(
                f"{what}: error: timing_only computes no values, so it takes no inputs"
            )
        arrays: dict[str, Any] = {}
        source = ""
        inputs_info: dict[str, Any] = {"source": "none (--timing-only)"}
    elif inputs is None:
        arrays = io.random_inputs(sig, seed)
        source = f"random inputs (seed {seed})"
        inputs_info = {"source": "random", "seed": seed}
    else:
        arrays = _input_dict(sig, inputs, what)
        source = f"{what}(inputs)"
        inputs_info = {"source": "arrays"}
    outputs, timeline = execute(module, sig, name, hw, arrays, source, timing_only=timing_only)
    specs = (
        sig.output_specs() if timing_only else [(n, v.shape, v.dtype) for n, v in outputs.items()]
    )
    report = make_report(
        name,
        module,
        sig,
        _pipeline_of(module),
        inputs_info,
        specs,
        timeline,
        timing_only=timing_only,
    )
    return Result(dict(outputs), report.as_json(), timeline, module, program_title(report))


def _pipeline_of(module: ModuleOp) -> str | None:
    attr = module.attributes.get(PIPELINE_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def _input_dict(sig: Any, inputs: Any, what: str) -> dict[str, Any]:
    if isinstance(inputs, Mapping):
        return dict(inputs)
    if isinstance(inputs, (list, tuple)):
        names = [n for n, _, _ in sig.input_specs()]
        if len(inputs) != len(names):
            raise DiagnosticError(
                f"{what}: error: {len(inputs)} input arrays given, @{sig.name} expects "
                f"{len(names)} ({', '.join(names)})"
            )
        return dict(zip(names, inputs, strict=False))
    raise DiagnosticError(
        f"{what}: error: inputs must be a dict of arrays by name (in_0..) or a list, "
        f"not {type(inputs).__name__}"
    )


__all__ = ["DiagnosticError", "Result", "compile", "run"]
