"""The interpreter's user-facing error."""

from __future__ import annotations

from shardc.tools.source import DiagnosticError


class InterpreterError(DiagnosticError):
    """
    A run that cannot complete (deadlock, collective mismatch, a future used twice or
    never, a bad input array, ...): `str()` is the whole diagnostic, ready to print.
    """
