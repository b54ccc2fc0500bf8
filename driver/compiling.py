"""
Compiling: a pass pipeline (`shardc-opt -p` syntax, shardc's and xDSL's passes) applied in
place, the module verified after every pass as `shardc-opt` does, and what each pass
changed, for the report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from shardc.diagnostics import DiagnosticError, error_at
from shardc.dialects import make_context
from shardc.driver import progress
from shardc.parsing import verify_module
from shardc.passes.collective_stats import CollectiveStats
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException

PROG = "shardc-run"

Hook = Callable[[ModulePass], None]
"""Called with each pass before or after it runs."""


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    from shardc.driver import registry
    from xdsl.transforms import get_all_passes

    passes = dict(get_all_passes())
    passes.update(registry.all_passes())
    return passes


@dataclass(frozen=True)
class PassChange:
    """What one pass changed: ops and collectives in the module before and after it."""

    name: str
    ops: tuple[int, int]
    collectives: tuple[int, int]

    def as_json(self) -> dict[str, Any]:
        return {
            "pass": self.name,
            "ops_before": self.ops[0],
            "ops_after": self.ops[1],
            "collectives_before": self.collectives[0],
            "collectives_after": self.collectives[1],
        }


def _counts(module: ModuleOp) -> tuple[int, int]:
    """(ops, collectives) in `module`, the module op itself not counted."""
    ops = sum(1 for _ in module.walk()) - 1
    return ops, sum(CollectiveStats.of(module).counts.values())


def _flatten(passes: Sequence[ModulePass]) -> list[ModulePass]:
    """A pipeline pass (one with `passes()`, like spmd-pipeline) as the passes it runs."""
    out: list[ModulePass] = []
    for p in passes:
        inner = getattr(p, "passes", None)
        out.extend(_flatten(inner()) if callable(inner) else [p])
    return out


def _parse_pipeline(spec: str, prog: str) -> tuple[ModulePass, ...]:
    """The passes of `spec` as written (a pipeline is one pass here)."""
    try:
        parsed = PassPipeline.parse_spec(available_passes(), spec)
    except (ValueError, ArgSpecParseError) as e:
        raise DiagnosticError(f"{prog}: error: invalid pass pipeline '{spec}': {e}") from None
    return tuple(parsed.passes)


def _run(p: ModulePass, ctx: Context, module: ModuleOp, before: Hook, after: Hook) -> None:
    """
    Run `p`; `before` and `after` around it, or around each pass of a pipeline. A pipeline
    (spmd-pipeline, tpu-pipeline) runs through its own `run`, so that its gates apply: the
    passes it lists, run one after another, are not the pipeline.
    """
    run = getattr(p, "run", None)
    if callable(run) and callable(getattr(p, "passes", None)):
        run(ctx, module, after=after, before=before)
        return
    before(p)
    p.apply(ctx, module)
    after(p)


def compile_module(
    module: ModuleOp, spec: str, filename: str, prog: str = PROG
) -> list[PassChange]:
    """
    Apply a pass pipeline in place, verifying after every pass (as shardc-opt does), and
    say what each pass (pipelines expanded into theirs) changed.
    """
    changes: list[PassChange] = []
    counts = [_counts(module)]
    units = _parse_pipeline(spec, prog)
    total = len(_flatten(units))

    def before(p: ModulePass) -> None:
        progress.step(f"pass {len(changes) + 1}/{total} {p.name}")

    def after(p: ModulePass) -> None:
        try:
            verify_module(module, filename=filename)
        except DiagnosticError as e:
            raise DiagnosticError(f"after pass '{p.name}': {e}") from None
        now = _counts(module)
        changes.append(PassChange(p.name, (counts[0][0], now[0]), (counts[0][1], now[1])))
        counts[0] = now

    ctx = make_context()
    try:
        for unit in units:
            _run(unit, ctx, module, before, after)
    except DiagnosticException as e:
        op = getattr(e, "op", None)
        if op is not None:
            message = getattr(e, "message", str(e))
            raise DiagnosticError(str(error_at(op, message, filename))) from None
        raise DiagnosticError(f"{filename}: error: {e}") from None
    return changes


def with_chip(spec: str, chip: str) -> str:
    """Give `chip=` to every pass of `spec` that takes it and does not set it."""
    from xdsl.utils.arg_spec import parse_pipeline

    try:
        specs = list(parse_pipeline(spec))
    except (ValueError, ArgSpecParseError):
        return spec  # compile_module reports the bad pipeline
    passes = available_passes()
    out: list[str] = []
    changed = False
    for s in specs:
        factory = passes.get(s.name)
        if factory is not None and "chip" not in s.parameters:
            cls = factory()
            if dataclasses.is_dataclass(cls) and any(
                f.name == "chip" for f in dataclasses.fields(cls)
            ):
                s = dataclasses.replace(s, parameters={**s.parameters, "chip": (chip,)})
                changed = True
        out.append(str(s))
    return ",".join(out) if changed else spec
