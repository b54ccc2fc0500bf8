"""The passes and pipelines shardc registers with its tools (name -> pass class factory)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """shardc's own passes; xDSL's (`canonicalize`, `cse`, `dce`, ...) come with the driver."""
    return {}
