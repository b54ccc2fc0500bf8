"""
Every example program (`examples/` and, where present, the shared `../shared/examples/`)
parses, verifies and round-trips through `shardc-opt`: custom -> custom and
custom -> generic -> custom print identically, the generic form is stable, and real MLIR
(`mlir-opt-19 --allow-unregistered-dialect`, where installed) accepts the generic form.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from shardc.tools.shardc_opt import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_DIRS = [REPO / "examples", REPO.parent / "shared" / "examples"]
EXAMPLES = sorted(p for d in EXAMPLE_DIRS if d.is_dir() for p in d.glob("*.mlir"))
MLIR_OPT = shutil.which("mlir-opt-19")


def shardc_opt(*args: str | os.PathLike[str]) -> str:
    """Run `shardc-opt` in-process; fail the test (with its diagnostic) unless it succeeds."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    assert code == 0, err.getvalue()
    assert err.getvalue() == ""
    return out.getvalue()


def test_there_are_examples():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_example_round_trips(path: Path, tmp_path: Path):
    custom = shardc_opt(path)
    generic = shardc_opt(path, "--print-op-generic")
    assert custom.startswith("builtin.module")
    assert generic.startswith('"builtin.module"()')

    (tmp_path / "custom.mlir").write_text(custom)
    (tmp_path / "generic.mlir").write_text(generic)
    assert shardc_opt(tmp_path / "custom.mlir") == custom, "custom form is not stable"
    assert shardc_opt(tmp_path / "generic.mlir") == custom, "custom -> generic -> custom differs"
    assert shardc_opt(tmp_path / "generic.mlir", "--print-op-generic") == generic

    # canonicalize keeps the program valid (it is verified after the pass)
    shardc_opt(path, "-p", "canonicalize")


@pytest.mark.skipif(MLIR_OPT is None, reason="mlir-opt-19 is not installed")
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_example_generic_form_is_valid_mlir(path: Path):
    assert MLIR_OPT is not None
    generic = shardc_opt(path, "--print-op-generic")
    result = subprocess.run(
        [MLIR_OPT, "--allow-unregistered-dialect"],
        input=generic,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_console_script_on_an_example(tmp_path: Path):
    """The installed `shardc-opt` entry point (one subprocess: ~0.5 s)."""
    exe = Path(sys.executable).with_name("shardc-opt")
    if not exe.exists():
        pytest.skip("the shardc-opt console script is not installed next to python")
    out = tmp_path / "out.mlir"
    result = subprocess.run(
        [str(exe), str(EXAMPLES[0]), "-o", str(out)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""
    assert out.read_text() == shardc_opt(EXAMPLES[0])
