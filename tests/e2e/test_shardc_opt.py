"""
`shardc-opt` on good and bad input (issue 2, "Bad input"; DESIGN.md, "Errors").

Each kind of bad input (syntax error, unknown op, unknown attribute, verifier failure,
unknown pass, bad pass option) ends in exactly one MLIR-style diagnostic, `file:line:col:
error: message` followed by the source line and a caret, exit status 1, no Python
traceback, and no output file (not even a partial one with `--split-input-file`). Most
cases run `main()` in-process; a few run the installed console script.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from shardc.tools.shardc_opt import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "megatron_mlp.mlir"

GOOD = """spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @main(%x: tensor<16x32xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>},
                %w: tensor<32x128xf32>) -> tensor<16x128xf32> {
  %0 = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x128xf32>) -> tensor<16x128xf32>
  %1 = hlo.transpose %0, dims = [1, 0] : (tensor<16x128xf32>) -> tensor<128x16xf32>
  %2 = hlo.transpose %1, dims = [1, 0] : (tensor<128x16xf32>) -> tensor<16x128xf32>
  func.return %2 : tensor<16x128xf32>
}
"""

DIAGNOSTIC = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>\S.*)$", re.M)


def run(args: list[str], stdin: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
    finally:
        sys.stdin = old_stdin
    return code, out.getvalue(), err.getvalue()


def expect_one_diagnostic(
    code: int, out: str, err: str, file: str, line: int, col: int, message: str
) -> None:
    assert code == 1, (out, err)
    assert out == ""
    assert "Traceback" not in err
    found = DIAGNOSTIC.findall(err)
    assert len(found) == 1, err
    lines = err.rstrip("\n").split("\n")
    # the diagnostic (xDSL's constraint messages take a second line), the source line,
    # the caret line
    assert 3 <= len(lines) <= 4, err
    head = DIAGNOSTIC.fullmatch(lines[0])
    assert head is not None, err
    assert (head["file"], int(head["line"]), int(head["col"])) == (file, line, col), err
    assert re.search(message, head["msg"]), err
    assert re.fullmatch(r" *\^+", lines[-1]) and lines[-1].index("^") == col - 1, err


def write(tmp_path: Path, text: str, name: str = "in.mlir") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# Good input -------------------------------------------------------------------------


def test_prints_the_module(tmp_path: Path):
    code, out, err = run([write(tmp_path, GOOD)])
    assert (code, err) == (0, "")
    assert out.startswith("builtin.module {\n  spmd.mesh @mesh")
    assert "hlo.dot %x, %w, contracting_dims = [1] x [0]" in out


def test_pass_pipeline_and_output_file(tmp_path: Path):
    dst = tmp_path / "out.mlir"
    code, out, err = run([write(tmp_path, GOOD), "-p", "canonicalize", "-o", str(dst)])
    assert (code, out, err) == (0, "", "")
    text = dst.read_text()
    assert "hlo.transpose" not in text  # transpose of transpose folds away
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.mlir", "out.mlir"]


def test_stdin(tmp_path: Path):
    code, out, err = run(["-"], stdin=GOOD)
    assert (code, err) == (0, "")
    assert "hlo.dot" in out
    code, out, err = run([], stdin=GOOD.replace("hlo.dot", "hlo.dott"))
    expect_one_diagnostic(code, out, err, "<stdin>", 4, 8, "Operation hlo.dott is not registered")


def test_split_input_file(tmp_path: Path):
    text = GOOD + "// -----\n" + GOOD.replace("@main", "@other")
    code, out, err = run([write(tmp_path, text), "--split-input-file"])
    assert (code, err) == (0, "")
    assert out.count("builtin.module") == 2
    assert "// -----" in out


def test_generic_output_parses_back(tmp_path: Path):
    code, generic, err = run([write(tmp_path, GOOD), "--print-op-generic"])
    assert code == 0, err
    code, custom, err = run([write(tmp_path, generic, "g.mlir")])
    assert code == 0, err
    assert custom == run([write(tmp_path, GOOD)])[1]


# Bad input: one located diagnostic, exit 1 ------------------------------------------

BAD_FILES = {
    "syntax error": (
        GOOD.replace("%0 = hlo.dot %x, %w,", "%0 = hlo.dot %x %w,"),
        (4, 19, "expected|Expected"),
    ),
    "unknown op": (
        GOOD.replace("hlo.transpose %0", "hlo.transposed %0"),
        (5, 8, "Operation hlo.transposed is not registered"),
    ),
    "unknown attribute": (
        GOOD.replace("#spmd.sharding<@mesh", "#spmd.shading<@mesh"),
        (2, 56, "'spmd.shading' is not registered"),
    ),
    "unknown type": (
        GOOD.replace("%w: tensor<32x128xf32>)", "%w: !hlo.token)"),
        (3, 21, "'hlo.token' is not registered"),
    ),
    "verifier failure": (
        GOOD.replace(
            "dims = [1, 0] : (tensor<16x128xf32>)", "dims = [0, 0] : (tensor<16x128xf32>)"
        ),
        (5, 3, r"'hlo.transpose' op dims \[0, 0\] is not a permutation"),
    ),
    "sharding with fewer elements than shards": (
        GOOD.replace('[{"data"}, {}]', '[{}, {"data", "model"}]').replace("16x32xf32", "16x6xf32"),
        (2, 1, "dimension 1 of size 6 is split into 8 shards"),
    ),
    "undefined value": (
        GOOD.replace("hlo.transpose %1", "hlo.transpose %9"),
        (6, 22, "use of undefined value '%9'"),
    ),
    "bad type": (GOOD.replace("tensor<128x16xf32>)", "tensor<128x16xf3>)"), (0, 0, "")),
    "f16 out of range": (
        GOOD.replace(
            "  func.return",
            "  %c = hlo.constant dense<1.0e9> : tensor<2xf16>\n  func.return",
        ),
        (7, 21, "out of range"),
    ),
    "unterminated string": (
        GOOD.replace('{"data"}', '{"data}'),
        (2, 80, "closing string literal"),
    ),
}


@pytest.mark.parametrize("case", BAD_FILES, ids=str)
def test_bad_file(case: str, tmp_path: Path):
    text, (line, col, message) = BAD_FILES[case]
    src = write(tmp_path, text)
    dst = tmp_path / "out.mlir"
    code, out, err = run([src, "-o", str(dst)])
    if line == 0:  # location checked only for being a located diagnostic
        head = DIAGNOSTIC.search(err)
        assert head is not None, err
        line, col = int(head["line"]), int(head["col"])
    expect_one_diagnostic(code, out, err, src, line, col, message)
    assert err.rstrip("\n").split("\n")[-2] == text.split("\n")[line - 1]
    assert not dst.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.mlir"]


BAD_PIPELINES = {
    "unknown pass": ("canonicalize,no-such-pass", 14, "unknown pass 'no-such-pass'"),
    "unknown option": ("canonicalize{bogus=1}", 14, "unknown pass option 'bogus'"),
    "bad option value": (
        "collective-combine{threshold-bytes=abc}",
        36,
        "invalid pass option value 'abc': expected int",
    ),
    "malformed": ("canonicalize{", 14, "Expected argument name"),
    "empty pass": ("canonicalize,,cse", 14, "Expected pass name"),
}


@pytest.mark.parametrize("case", BAD_PIPELINES, ids=str)
def test_bad_pass_pipeline(case: str, tmp_path: Path):
    spec, col, message = BAD_PIPELINES[case]
    dst = tmp_path / "out.mlir"
    code, out, err = run([str(EXAMPLE), "-p", spec, "-o", str(dst)])
    expect_one_diagnostic(code, out, err, "<pass-pipeline>", 1, col, message)
    assert err.rstrip("\n").split("\n")[-2] == spec
    assert not dst.exists()


def test_split_input_file_later_chunk_fails(tmp_path: Path):
    """An early chunk is fine, a later one fails: nothing is written, lines are global."""
    bad = GOOD.replace("hlo.transpose %0", "hlo.transposed %0")
    text = GOOD + "// -----\n" + GOOD + "// -----\n" + bad
    src = write(tmp_path, text)
    dst = tmp_path / "out.mlir"
    code, out, err = run([src, "--split-input-file", "-o", str(dst)])
    line = 2 * GOOD.count("\n") + 2 + 5  # two chunks and their markers, then line 5
    expect_one_diagnostic(
        code, out, err, src, line, 8, "Operation hlo.transposed is not registered"
    )
    assert err.rstrip("\n").split("\n")[-2] == text.split("\n")[line - 1]
    assert not dst.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.mlir"]


def test_existing_output_file_is_left_alone_on_failure(tmp_path: Path):
    dst = tmp_path / "out.mlir"
    dst.write_text("previous contents\n")
    code, _, _ = run([write(tmp_path, GOOD.replace("hlo.dot", "hlo.dott")), "-o", str(dst)])
    assert code == 1
    assert dst.read_text() == "previous contents\n"


def test_missing_file(tmp_path: Path):
    code, out, err = run([str(tmp_path / "nope.mlir")])
    assert (code, out) == (1, "")
    assert len(DIAGNOSTIC.findall(err)) == 1
    assert "Traceback" not in err


def test_not_utf8(tmp_path: Path):
    path = tmp_path / "in.mlir"
    path.write_bytes(GOOD.replace("hlo.dot", "hlo.d\xffot").encode("latin-1"))
    code, out, err = run([str(path)])
    expect_one_diagnostic(code, out, err, str(path), 4, 13, "invalid UTF-8 byte 0xff")


def test_verify_diagnostics_reports_instead_of_failing(tmp_path: Path):
    bad = GOOD.replace("hlo.transpose %0", "hlo.transposed %0")
    code, out, err = run(
        [write(tmp_path, GOOD + "// -----\n" + bad), "--split-input-file", "--verify-diagnostics"]
    )
    assert code == 0, err
    assert "Operation hlo.transposed is not registered" in out


def test_bad_command_line_exits_1():
    code, out, err = run([str(EXAMPLE), "--no-such-flag"])
    assert code == 1
    assert "Traceback" not in err


# The installed console script (subprocess: ~0.5 s each) ------------------------------


def console_script() -> Path:
    exe = Path(sys.executable).with_name("shardc-opt")
    if not exe.exists():
        pytest.skip("the shardc-opt console script is not installed next to python")
    return exe


@pytest.mark.parametrize(
    ("args", "file_name", "line", "col", "message"),
    [
        (["{src}"], "{src}", 5, 8, "Operation hlo.transposed is not registered"),
        (["{src}", "-p", "nope"], "<pass-pipeline>", 1, 1, "unknown pass 'nope'"),
    ],
)
def test_console_script_bad_input(args, file_name, line, col, message, tmp_path: Path):
    src = write(tmp_path, GOOD.replace("hlo.transpose %0", "hlo.transposed %0"))
    dst = tmp_path / "out.mlir"
    result = subprocess.run(
        [str(console_script()), *(a.format(src=src) for a in args), "-o", str(dst)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    expect_one_diagnostic(
        result.returncode,
        result.stdout,
        result.stderr,
        file_name.format(src=src),
        line,
        col,
        message,
    )
    assert not dst.exists()


def test_output_to_a_device_is_written_directly(tmp_path: Path):
    """`-o /dev/null` must not rename a temporary file over the device."""
    import os
    import stat

    code, out, err = run([write(tmp_path, GOOD), "-o", os.devnull])
    assert (code, out, err) == (0, "", "")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_unwritable_output(tmp_path: Path):
    dst = tmp_path / "no" / "such" / "dir.mlir"
    code, out, err = run([write(tmp_path, GOOD), "-o", str(dst)])
    assert (code, out) == (1, "")
    assert len(DIAGNOSTIC.findall(err)) == 1 and "cannot write the output file" in err
    assert "Traceback" not in err


def test_split_marker_with_trailing_text(tmp_path: Path):
    """`// -----text` is a marker line (the rest is a comment); positions stay the file's."""
    bad = GOOD.replace("hlo.transpose %0", "hlo.transposed %0")
    text = "// -----\n" + GOOD + "// ----- next\n" + bad
    src = write(tmp_path, text)
    code, out, err = run([src, "--split-input-file"])
    line = 1 + GOOD.count("\n") + 1 + 5
    expect_one_diagnostic(
        code, out, err, src, line, 8, "Operation hlo.transposed is not registered"
    )
    assert err.rstrip("\n").split("\n")[-2] == text.split("\n")[line - 1]
