"""
Checking a run against a reference: every output compared, exactly for integers and i1,
within a relative tolerance per float dtype for floats (`shardc-run --check`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from shardc.diagnostics import DiagnosticError
from shardc.driver import progress
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


def compare(name: str, got: np.ndarray, ref: np.ndarray) -> Comparison:
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
    tol = TOLERANCES[ref.dtype] * max(scale, 1e-30)
    return Comparison(name, worst, tol, worst <= tol)


def reference_outputs(
    compiled: bool,
    filename: str,
    original: ModuleOp,
    original_sig: io.Signature,
    inputs: Any,
    input_source: str,
) -> tuple[dict[str, np.ndarray] | None, str]:
    """
    --check's reference: the outputs of the program as it was before `-p` (None when
    nothing was `compiled`: the run is compared with itself) and how the report names it.
    """
    if not compiled:
        return None, "the program itself (no -p given)"
    progress.step(f"checking: running the level-{original_sig.level} program before -p")
    outputs = io.run(Executor(original, filename), original_sig, inputs, input_source)
    return outputs, f"the level-{original_sig.level} program before -p"


def check_outputs(
    report: Report,
    filename: str,
    outputs: dict[str, np.ndarray],
    reference: dict[str, np.ndarray] | None,
    ref_what: str,
) -> list[Comparison]:
    """Compare every output with the reference; the verdict goes into the report."""
    if reference is None:
        reference = outputs
    names = list(reference)
    if list(outputs) != names:
        raise DiagnosticError(
            f"{filename}: error: --check: the compiled program has outputs "
            f"{list(outputs)} but the reference has {names}"
        )
    comparisons = [compare(n, outputs[n], reference[n]) for n in names]
    report.check = {
        "reference": ref_what,
        "passed": all(c.passed for c in comparisons),
        "outputs": [c.as_json() for c in comparisons],
    }
    return comparisons
