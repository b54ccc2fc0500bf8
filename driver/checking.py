"""
Checking a run against a reference: every output compared, exactly for integers and i1,
within a relative tolerance per float dtype for floats (`shardc-run --check`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from shardc.diagnostics import DiagnosticError
from shardc.dialects.spmd import module_mesh
from shardc.driver import progress
from shardc.driver.tolerance import RoundingBounds, Sigma, reordered_sums
from shardc.interpreter import io
from shardc.interpreter.devices import Executor
from shardc.interpreter.values import (
    BF16,
    C64,
    C128,
    F8E4M3FN,
    F8E5M2,
    F16,
    F32,
    F64,
    FLOAT_DTYPES,
    container,
    type_str,
)
from xdsl.dialects.builtin import ModuleOp

if TYPE_CHECKING:  # reporting imports Comparison from here
    from shardc.driver.reporting import Report

TOLERANCES: dict[Any, float] = {
    F64: 1e-10,
    F32: 1e-4,
    F16: 5e-3,
    BF16: 2e-2,
    F8E4M3FN: 0.125,
    F8E5M2: 0.25,
    C128: 1e-10,
    C64: 1e-4,
}
"""
--check: relative tolerance per float dtype, against the largest |reference| value. A
partitioned program sums in another order than the global one (partial dots, then the
all_reduce); over contractions of thousands of f32 terms that moves results by a few 1e-5
of their scale, so f32 allows 1e-4. f8 allows one unit in the last place at the scale;
complex numbers their part's tolerance, on |difference|.
"""


@dataclass
class Comparison:
    name: str
    max_abs_diff: float
    tolerance: float
    passed: bool
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "max_abs_diff": _json_float(self.max_abs_diff),
            "tolerance": self.tolerance,
            "passed": self.passed,
        }
        if self.note:
            d["note"] = self.note
        return d


def _json_float(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)


def compare(
    name: str, got: np.ndarray, ref: np.ndarray, tolerance: Sigma | None = None
) -> Comparison:
    """`got` against `ref`: integers exactly, floats within `tolerance` (absolute, from
    `driver.tolerance`'s analysis of the reference run) or, without one, the dtype's
    relative `TOLERANCES` at the reference's scale."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return Comparison(
            name,
            math.inf,
            0.0,
            False,
            f"got {type_str(got.shape, got.dtype)}, reference {type_str(ref.shape, ref.dtype)}",
        )
    if got.size == 0:
        return Comparison(name, 0.0, 0.0, True)
    if ref.dtype not in FLOAT_DTYPES and ref.dtype not in (C64, C128):
        g, r = got.astype(container(got.dtype)), ref.astype(container(ref.dtype))
        diff = np.abs(g.astype(np.float64) - r.astype(np.float64))
        worst = float(diff.max())
        equal = bool(np.array_equal(g, r))  # exact in the type (u64/i64 beyond 2**53)
        return Comparison(name, worst if not equal else 0.0, 0.0, equal)
    if ref.dtype in (C64, C128):
        g, r = got.astype(np.complex128), ref.astype(np.complex128)
    else:
        g, r = got.astype(np.float64), ref.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(r)
    with np.errstate(all="ignore"):
        diff = np.where(both_nan, 0.0, np.abs(g - r))
        same_inf = np.isinf(g) & (g == r)
        diff = np.where(same_inf, 0.0, diff)
    diff = np.where(np.isnan(diff), np.inf, diff)
    worst = float(diff.max())
    finite = np.abs(r[np.isfinite(r)])
    scale = float(finite.max()) if finite.size else 0.0
    if tolerance is not None:
        if ref.dtype in (C64, C128):
            tolerance = np.hypot(tolerance, tolerance)
        tol = np.broadcast_to(np.asarray(tolerance, dtype=np.float64), diff.shape)
        worst_at = np.unravel_index(int(np.argmax(diff)), diff.shape)
        excess = diff - tol
        if bool(np.all(excess <= 0)):
            return Comparison(name, worst, float(tol[worst_at]), True, "tolerance per element")
        at = np.unravel_index(int(np.argmax(excess)), diff.shape)
        note = f"element {list(map(int, at))}: |diff| {diff[at]:.3g} > tolerance {tol[at]:.3g}"
        return Comparison(name, worst, float(tol[worst_at]), False, note)
    tol = TOLERANCES[ref.dtype] * max(scale, 1e-30)
    return Comparison(name, worst, tol, worst <= tol)


@dataclass
class Reference:
    """What --check compares a run with."""

    outputs: dict[str, np.ndarray] | None
    """None: nothing was compiled, the run is compared with itself."""
    what: str
    """How the report names it."""
    tolerances: dict[str, Sigma] = field(default_factory=dict)
    """Per output (per element, or one number): the absolute difference two correct
    evaluations may show (`driver.tolerance`)."""


def reference_outputs(
    compiled: bool,
    filename: str,
    original: ModuleOp,
    original_sig: io.Signature,
    inputs: Any,
    input_source: str,
    compiled_module: ModuleOp | None = None,
) -> Reference:
    """
    --check's reference: the outputs of the program as it was before `-p`, run with the
    rounding analysis that gives each output its tolerance (`driver.tolerance`, which
    needs to know how `compiled_module` accumulates).
    """
    if not compiled:
        return Reference(None, "the program itself (no -p given)")
    progress.step(f"checking: running the level-{original_sig.level} program before -p")
    executor = Executor(original, filename)
    reordered = reordered_sums(compiled_module, original) if compiled_module is not None else None
    mesh = module_mesh(compiled_module) if compiled_module is not None else None
    bounds = RoundingBounds(reordered, mesh[1].device_count if mesh else 1)
    executor.observe = bounds
    outputs = io.run(executor, original_sig, inputs, input_source)
    names = [f"out_{s.index}" for s in original_sig.results]
    tolerances: dict[str, Sigma] = {}
    if not original_sig.per_device_io and original_sig.devices == 1:
        tolerances = dict(zip(names, bounds.output_tolerances(original_sig.function), strict=True))
    return Reference(outputs, f"the level-{original_sig.level} program before -p", tolerances)


def check_outputs(
    report: Report,
    filename: str,
    outputs: dict[str, np.ndarray],
    ref: Reference,
) -> list[Comparison]:
    """Compare every output with the reference; the verdict goes into the report."""
    reference = outputs if ref.outputs is None else ref.outputs
    ref_what = ref.what
    names = list(reference)
    if list(outputs) != names:
        raise DiagnosticError(
            f"{filename}: error: --check: the compiled program has outputs "
            f"{list(outputs)} but the reference has {names}"
        )
    comparisons = [compare(n, outputs[n], reference[n], ref.tolerances.get(n)) for n in names]
    report.check = {
        "reference": ref_what,
        "passed": all(c.passed for c in comparisons),
        "outputs": [c.as_json() for c in comparisons],
    }
    return comparisons
