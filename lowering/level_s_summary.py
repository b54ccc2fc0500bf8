"""
What a kernel's report needs from the level-S program it was lowered from, kept in the IR.

A level-T run cannot count collectives (its DMAs are one algorithm's way of moving them),
so its report takes `collectives`, `comm_bytes` and the level-S model's step and roofline
from the program before `lower-to-tpu` (`interpreter.level_t_timeline`). `lower-to-tpu`
records them, before it lowers, as the module attribute

    shardc.level_s = {main = {chip = "v5e", collectives = {all_reduce = 1 : i64, ...},
                              comm_bytes = 4096 : i64, comm_bytes_by_kind = {...},
                              step_time_s = 3.0e-06 : f64, ...}}

(one entry per level-S function, from a timing-only run on the pass's chip), so that a
kernel written by `shardc-opt -p tpu-pipeline` and run by another process reports what
`shardc-run -p tpu-pipeline` reports. Floats print with 17 digits: they read back exactly.
"""

from __future__ import annotations

from typing import Any

from shardc.diagnostics import DiagnosticError
from shardc.hardware.chips import Chip
from shardc.interpreter import io
from shardc.interpreter.devices import Executor
from shardc.interpreter.timing import KINDS
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute

LEVEL_S_ATTR = "shardc.level_s"
"""The module attribute: function name -> what its kernel's report takes from level S."""

TIMES = ("step_time_s", "compute_time_s", "exposed_comm_time_s", "roofline_time_s")
"""The level-S model's times a level-T report shows beside its own."""


def record_level_s(module: ModuleOp, chip: Chip) -> None:
    """
    Time every level-S function of `module` (timing only, on `chip`) and record what its
    kernel's report needs as `shardc.level_s`. A function the timing model cannot run
    is left out (its kernel's report then says the collectives are unknown); what is
    wrong with it is `lower-to-tpu`'s to report.
    """
    entries: dict[str, Attribute] = {}
    for function in module.body.block.ops:
        if not isinstance(function, func.FuncOp) or not function.body.blocks:
            continue
        try:
            report = _time_level_s(module, function, chip)
        except DiagnosticError:
            continue
        if report is not None:
            entries[function.sym_name.data] = _as_attr(report, chip)
    if entries:
        module.attributes[LEVEL_S_ATTR] = DictionaryAttr(entries)


def _time_level_s(module: ModuleOp, function: func.FuncOp, chip: Chip) -> dict[str, Any] | None:
    """The timing model's report of a timing-only run of a level-S `function`."""
    sig = io.signature(module, function, "<level S>")
    if sig.level != "S":
        return None
    executor = Executor(module, "<level S>", chip=chip, abstract=True)
    n_args = len(function.body.block.args)
    executor.run(function, [[None] * n_args for _ in range(sig.devices)])
    assert executor.timeline is not None
    return executor.timeline.report()


def _as_attr(report: dict[str, Any], chip: Chip) -> DictionaryAttr:
    def ints(d: dict[str, int]) -> DictionaryAttr:
        return DictionaryAttr({k: IntegerAttr(d.get(k, 0), i64) for k in KINDS})

    entry: dict[str, Attribute] = {
        "chip": StringAttr(chip.name),
        "collectives": ints(report["collectives"]),
        "comm_bytes": IntegerAttr(report["comm_bytes"], i64),
        "comm_bytes_by_kind": ints(report["comm_bytes_by_kind"]),
    }
    entry.update({k: FloatAttr(float(report[k]), f64) for k in TIMES})
    return DictionaryAttr(entry)


def record_unfused(module: ModuleOp, name: str, remarks: list[str]) -> None:
    """Add to function `name`'s entry the fusions its kernel lowers op by op (`name: why`,
    `lowering/fusion.py`), which its report's level-S line names: level T is then slower
    than the fused level-S model there for a reason the report shows."""
    table = module.attributes.get(LEVEL_S_ATTR)
    if not remarks or not isinstance(table, DictionaryAttr) or name not in table.data:
        return
    entry = table.data[name]
    assert isinstance(entry, DictionaryAttr)
    unfused = ArrayAttr([StringAttr(r) for r in remarks])
    new = DictionaryAttr({**table.data, name: DictionaryAttr({**entry.data, "unfused": unfused})})
    module.attributes[LEVEL_S_ATTR] = new


def level_s_report(module: ModuleOp, name: str) -> dict[str, Any] | None:
    """What `record_level_s` kept for function `name`, as a report dict (None if nothing);
    a `ValueError` saying what is wrong if the attribute is not what it writes (a kernel
    edited by hand, or any other text)."""
    table = module.attributes.get(LEVEL_S_ATTR)
    if not isinstance(table, DictionaryAttr) or name not in table.data:
        return None
    try:
        return _report(table.data[name])
    except (KeyError, AttributeError, TypeError, AssertionError) as e:
        raise ValueError(
            f"the module attribute {LEVEL_S_ATTR} for @{name} is malformed ({type(e).__name__}: "
            f"{e}); it holds what lower-to-tpu records: collectives, comm_bytes, "
            f"comm_bytes_by_kind, {', '.join(TIMES)}"
        ) from None


def _report(entry: Attribute) -> dict[str, Any]:
    assert isinstance(entry, DictionaryAttr)
    d = entry.data

    def number(key: str) -> Any:
        value = d[key]
        assert isinstance(value, IntegerAttr | FloatAttr)
        return value.value.data

    def ints(key: str) -> dict[str, int]:
        kinds = d[key]
        assert isinstance(kinds, DictionaryAttr)
        out: dict[str, int] = {}
        for k, v in kinds.data.items():
            assert isinstance(v, IntegerAttr)
            out[k] = v.value.data
        return out

    report: dict[str, Any] = {
        "collectives": ints("collectives"),
        "comm_bytes": number("comm_bytes"),
        "comm_bytes_by_kind": ints("comm_bytes_by_kind"),
    }
    report.update({k: number(k) for k in TIMES})
    unfused = d.get("unfused")
    if unfused is not None:
        assert isinstance(unfused, ArrayAttr)
        report["unfused"] = [r.data for r in unfused.data if isinstance(r, StringAttr)]
    return report


__all__ = ["LEVEL_S_ATTR", "level_s_report", "record_level_s", "record_unfused"]
