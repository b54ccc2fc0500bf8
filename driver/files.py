"""Reading programs and input arrays and writing results, every failure one diagnostic."""

from __future__ import annotations

import contextlib
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


class StagedWrites:
    """
    The files one run writes, all or none: each is written to a hidden temporary beside
    its target, and only when every one of them is complete are they renamed over their
    targets (at the end of the `with` block). Any failure (an unwritable path, a full disk,
    Ctrl-C, an error in the run) removes the temporaries and leaves every target as it
    was; a diagnostic names the target, not the temporary. `announce` lines are printed
    once the files are in place.
    """

    def __init__(self, prog: str = PROG):
        self.prog = prog
        self.staged: list[tuple[str, str, str | None]] = []
        """(temporary, target, announcement)."""

    def write(
        self, path: str, write: Callable[[Any], None], binary: bool, announce: str | None = None
    ) -> None:
        directory, name = os.path.split(os.path.abspath(path))
        root, ext = os.path.splitext(name)
        tmp = os.path.join(directory, f".{root}.tmp{os.getpid()}{ext}")
        self.staged.append((tmp, path, announce))
        try:
            with open(tmp, "wb" if binary else "w") as f:
                write(f)
        except OSError as e:
            raise DiagnosticError(
                f"{self.prog}: error: cannot write '{path}': {e.strerror or e}"
            ) from None

    def __enter__(self) -> StagedWrites:
        return self

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        if kind is not None:
            self._discard()
            return
        for i, (tmp, path, _) in enumerate(self.staged):
            try:
                os.replace(tmp, path)
            except OSError as e:
                self._discard(self.staged[i:])
                raise DiagnosticError(
                    f"{self.prog}: error: cannot write '{path}': {e.strerror or e}"
                ) from None
        for _, _, announce in self.staged:
            if announce:
                print(announce)

    def _discard(self, staged: list[tuple[str, str, str | None]] | None = None) -> None:
        for tmp, _, _ in self.staged if staged is None else staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_atomically(
    path: str, write: Callable[[Any], None], binary: bool, prog: str = PROG
) -> None:
    """Write through a temporary file renamed over `path`: a reader never sees half."""
    with StagedWrites(prog) as files:
        files.write(path, write, binary)
