"""
Helpers for tests that run programs: parse MLIR text, run it on given per-device or
global arrays, and compare a program before and after a transformation.

```python
from shardc.interpreter.testing import run_global, run_per_device
outs = run_per_device(TEXT, [[x0], [x1], [x2], [x3]])  # each device's results
outs = run_global(TEXT, {"in_0": x})                   # {"out_0": ...}
timeline = time_program(TEXT, chip="v5e")              # .report(), .trace()
```
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from shardc.dialects import make_context
from shardc.hardware.chips import get_chip
from shardc.interpreter import io
from shardc.interpreter.devices import Executor
from shardc.interpreter.timing import Timeline
from shardc.parsing import parse_and_verify
from xdsl.dialects.builtin import ModuleOp

_CTX = None


def parse(text: str, filename: str = "<test>") -> ModuleOp:
    """Parse and verify (a bad program raises `DiagnosticError`)."""
    global _CTX
    if _CTX is None:
        _CTX = make_context()
    return parse_and_verify(_CTX, text, filename)


def run_per_device(
    text: str, per_device_args: Sequence[Sequence[Any]], entry: str | None = None
) -> list[tuple[Any, ...]]:
    """Run the entry function on `len(per_device_args)` devices; each device's results."""
    module = parse(text)
    function = io.find_entry(module, entry, "<test>")
    return Executor(module).run(function, per_device_args)


def run_global(
    text: str,
    inputs: Mapping[str, np.ndarray] | None = None,
    *,
    entry: str | None = None,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """Run like `shardc-run`: global (or `in_K.D`) arrays in, `out_..` arrays out."""
    module = parse(text)
    return io.run_module(module, inputs, entry=entry, seed=seed, filename="<test>")


def time_program(
    text: str,
    chip: str = "v5e",
    inputs: Mapping[str, np.ndarray] | None = None,
    *,
    abstract: bool = False,
    entry: str | None = None,
    seed: int = 0,
) -> Timeline:
    """
    Run with the timing model on `chip` (random inputs from `seed` unless given;
    `abstract`: --timing-only, no values) and return the timeline.
    """
    module = parse(text)
    function = io.find_entry(module, entry, "<test>")
    sig = io.signature(module, function, "<test>")
    executor = Executor(module, "<test>", chip=get_chip(chip), abstract=abstract)
    if abstract:
        n_args = len(function.body.block.args)
        executor.run(function, [[None] * n_args for _ in range(sig.devices)])
    else:
        io.run(executor, sig, io.random_inputs(sig, seed) if inputs is None else inputs)
    assert executor.timeline is not None
    return executor.timeline
