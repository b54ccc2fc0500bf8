"""
shardc: a compiler, in Python on xDSL, for tensor programs that run across many chips.

The repository root is this package; its folders are the subpackages named in
DESIGN.md's layout (`dialects`, `passes`, `lowering`, `interpreter`, `hardware`,
`frontends`, `tools`, plus `tests`, `bench` and `examples`) and `driver` (the library
driver the tools and the API share); `diagnostics`, `parsing` and `xdsl_patches` are the
modules at the bottom.

The Python API (for notebooks; `shardc_api.py`, imported only when first used, so that
`import shardc.dialects.hlo` stays light):

    module = shardc.compile(text_or_module, pipeline="spmd-pipeline", chip="v5e")
    result = shardc.run(module, inputs=None, chip="v5e", seed=0, timing_only=False)
    result.outputs, result.report, result.timeline, result.plot("timeline.png")

Errors are `shardc.DiagnosticError`, whose text is the diagnostic the tools print.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shardc.shardc_api import Result
    from xdsl.dialects.builtin import ModuleOp

__version__ = "0.1.0"


def compile(  # the API's name; this module does not use the builtin
    text_or_module: str | ModuleOp,
    pipeline: str | None = "spmd-pipeline",
    chip: str = "v5e",
    *,
    filename: str | None = None,
) -> ModuleOp:
    """
    Parse (if text) and verify a program and apply a pass pipeline (`shardc-opt -p`
    syntax; None applies none) for `chip`; returns a new module. See `shardc.shardc_api`.
    """
    from shardc.shardc_api import compile as _compile

    return _compile(text_or_module, pipeline, chip, filename=filename)


def run(
    module_or_text: str | ModuleOp,
    inputs: Any = None,
    *,
    chip: str = "v5e",
    seed: int = 0,
    timing_only: bool = False,
    entry: str | None = None,
    filename: str | None = None,
) -> Result:
    """
    Run a program on `chip`'s simulated devices as `shardc-run` does: a `Result` with
    `.outputs` (arrays by name, `out_0..`), `.report` (DESIGN.md's report dict),
    `.timeline` and `.plot(path)`. See `shardc.shardc_api`.
    """
    from shardc.shardc_api import run as _run

    return _run(
        module_or_text,
        inputs,
        chip=chip,
        seed=seed,
        timing_only=timing_only,
        entry=entry,
        filename=filename,
    )


def __getattr__(name: str) -> Any:
    if name in ("Result", "DiagnosticError"):
        from shardc import shardc_api

        return getattr(shardc_api, name)
    raise AttributeError(f"module 'shardc' has no attribute {name!r}")


__all__ = ["DiagnosticError", "Result", "__version__", "compile", "run"]
