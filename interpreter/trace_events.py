"""
The one Chrome/Perfetto trace writer (chrome://tracing and ui.perfetto.dev open its
JSON): every timeline of the interpreter, level S (`timing.Timeline.trace`) and level T
(`level_t_report.trace`), builds its trace through `TraceWriter`.

The format: a JSON object with `traceEvents` (one process per device, metadata "M"
events naming processes and threads, one complete "X" event per slice, `ts`/`dur` in
microseconds), `displayTimeUnit` "ns", and optionally `otherData` (the run's report).

Key order. JSON objects are unordered, but traces are compared as text (the issue-12
capture diffs them byte for byte), and the two timelines have always written their
events' keys in different orders: level S `name, cat, ph, ...`, level T `ph, name, cat,
...`. `TraceWriter(phase_first=True)` keeps level T's order, so that every trace stays
byte-identical; dropping the flag (one order) changes level-T traces only in key order.
"""

from __future__ import annotations

import json
from typing import Any

US = 1e6
"""Trace timestamps are microseconds; the timelines count seconds."""


class TraceWriter:
    """Collects trace events in order and makes the trace document."""

    def __init__(self, *, phase_first: bool = False):
        self.phase_first = phase_first
        self.events: list[dict[str, Any]] = []

    def metadata(
        self, name: str, pid: int, value: Any, *, tid: int | None = None, key: str = "name"
    ) -> None:
        """An "M" event: `name` is e.g. "process_name", "thread_name", "process_sort_index"."""
        if self.phase_first:
            event: dict[str, Any] = {"ph": "M", "name": name, "pid": pid}
        else:
            event = {"name": name, "ph": "M", "pid": pid}
        event["args"] = {key: value}
        if tid is not None:
            event["tid"] = tid
        self.events.append(event)

    def process(self, pid: int, name: str) -> None:
        self.metadata("process_name", pid, name)

    def complete(
        self,
        name: str,
        cat: str,
        pid: int,
        tid: int,
        start: float,
        end: float,
        args: dict[str, Any],
    ) -> None:
        """An "X" event from `start` to `end` (seconds)."""
        if self.phase_first:
            event: dict[str, Any] = {"ph": "X", "name": name, "cat": cat}
        else:
            event = {"name": name, "cat": cat, "ph": "X"}
        event.update(
            {"pid": pid, "tid": tid, "ts": start * US, "dur": (end - start) * US, "args": args}
        )
        self.events.append(event)

    def document(self, other_data: dict[str, Any] | None = None) -> dict[str, Any]:
        """The trace JSON object (`otherData`: the run's report, if given)."""
        trace: dict[str, Any] = {"traceEvents": self.events, "displayTimeUnit": "ns"}
        if other_data is not None:
            trace["otherData"] = other_data
        return trace


def trace_json(trace: dict[str, Any]) -> str:
    """A trace document as compact JSON (what `--trace` and `Result.trace` write)."""
    return json.dumps(trace, separators=(",", ":"))


__all__ = ["US", "TraceWriter", "trace_json"]
