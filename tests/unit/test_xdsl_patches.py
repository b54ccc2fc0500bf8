"""shardc's changes to xDSL live in one module, which insists on the xDSL they are written for."""

from __future__ import annotations

import importlib.metadata

import pytest
from shardc import xdsl_patches
from shardc.xdsl_patches import XDSL_VERSION, XdslVersionError, check_xdsl_version


def test_the_installed_xdsl_is_the_pinned_one() -> None:
    assert importlib.metadata.version("xdsl") == XDSL_VERSION
    check_xdsl_version()  # no error


def test_another_xdsl_is_a_clear_error() -> None:
    with pytest.raises(XdslVersionError) as e:
        check_xdsl_version("0.75.0")
    message = str(e.value)
    assert "xdsl==0.74.0" in message and "0.75.0 is installed" in message
    assert "xdsl_patches.py" in message


def test_every_patch_says_why() -> None:
    for name in ("patch_hex_float_elements", "patch_compact_splats", "patch_memref_memory_spaces"):
        doc = getattr(xdsl_patches, name).__doc__ or ""
        assert "xDSL" in doc or "MLIR" in doc, name
    assert xdsl_patches.SafeLexer.__doc__ and "backtrack" in xdsl_patches.SafeLexer.__doc__


def test_no_other_module_patches_xdsl() -> None:
    """Assignments to xDSL classes' attributes appear only in xdsl_patches.py."""
    import re
    from pathlib import Path

    root = Path(xdsl_patches.__file__).parent
    pattern = re.compile(
        r"^\s*(AttrParser|Parser|Printer|MLIRLexer|DenseIntOrFPElementsAttr|MemRefType)"
        r"\.\w+\s*=",
        re.M,
    )
    offenders = []
    for path in root.rglob("*.py"):
        if ".venv" in path.parts or "tests" in path.parts or path.name == "xdsl_patches.py":
            continue
        if pattern.search(path.read_text(encoding="utf-8")):
            offenders.append(str(path.relative_to(root)))
    assert offenders == []
