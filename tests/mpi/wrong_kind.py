"""
`shardc-run` with a seeded bug (tests/mpi/test_mpi_check.py): every `add` collective the
pipeline makes becomes `max`, a wrong level-S program that `--check` must reject.
"""

from __future__ import annotations

import sys
from typing import Any

from shardc.tools import shardc_run
from xdsl.dialects.builtin import StringAttr

_compile = shardc_run.compile_module


def _wrong(module: Any, *args: Any, **kwargs: Any) -> Any:
    changes = _compile(module, *args, **kwargs)
    for op in module.walk():
        kind = op.properties.get("kind")
        if op.name.startswith("collective.") and kind == StringAttr("add"):
            op.properties["kind"] = StringAttr("max")
    return changes


if __name__ == "__main__":
    shardc_run.compile_module = _wrong
    sys.exit(shardc_run.main(sys.argv[1:]))
