"""Reading programs and input arrays and writing results, every failure one diagnostic."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from shardc.diagnostics import DiagnosticError

PROG = "shardc-run"
"""The name diagnostics of these helpers start with (the API's are shardc-run's too)."""


def read_text(path: str, prog: str = PROG) -> tuple[str, str]:
    """The text of `path` (`-`: stdin) and the name diagnostics use for it."""
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    except (OSError, UnicodeDecodeError) as e:
        raise DiagnosticError(f"{prog}: error: cannot read '{path}': {e}") from None


def load_inputs(path: str, prog: str = PROG) -> dict[str, np.ndarray]:
    """The arrays of an .npz file by name."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except Exception as e:
        raise DiagnosticError(f"{prog}: error: cannot read inputs '{path}': {e}") from None


def write_atomically(
    path: str, write: Callable[[Any], None], binary: bool, prog: str = PROG
) -> None:
    """Write through a temporary file renamed over `path`: a reader never sees half."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb" if binary else "w") as f:
            write(f)
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise DiagnosticError(f"{prog}: error: cannot write '{path}': {e}") from None
