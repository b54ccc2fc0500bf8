"""
Issue 16, malformed HLO text and StableHLO: each class the fuzzing campaign found ends in
one located diagnostic from `shardc-import` (exit 1), never an internal error.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from shardc.tools import shardc_import

ELEMENTWISE = """HloModule module, num_partitions=2

ENTRY entry {
  a = f32[4,4]{1,0} parameter(0), sharding={devices=[2,1]0,1}
  b = f32[4,4]{1,0} parameter(1), sharding={replicated}
  BODY
}
"""

STABLEHLO = """module @jit_f attributes {mhlo.num_partitions = 2 : i32} {
  sdy.mesh @mesh = <["x"=SIZE]>
  func.func public @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<8xf32>) {
    BODY
    return %0 : tensor<8xf32>
  }
}
"""

DIAGNOSTIC = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>\S.*)$", re.M)


def import_error(tmp_path: Path, text: str, suffix: str) -> tuple[int, str]:
    """(line, message) of the one diagnostic importing `text` gives."""
    path = tmp_path / f"input{suffix}"
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = shardc_import.main([str(path), "-o", str(tmp_path / "out.mlir")])
    text_err = err.getvalue()
    assert code == 1, text_err
    assert "internal error" not in text_err and "Traceback" not in text_err, text_err
    found = DIAGNOSTIC.findall(text_err)
    assert len(found) == 1, text_err
    assert not (tmp_path / "out.mlir").exists()
    return int(found[0][1]), found[0][3]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("ROOT c = f32[4,4]{1,0} add(a)", "add takes 2 operands, got 1"),
        ("ROOT c = f32[4,4]{1,0} negate(a, b)", "negate takes 1 operand, got 2"),
        ("ROOT c = f32[4,4]{1,0} broadcast(), dimensions={0,1}", "broadcast takes 1 operand"),
        ("ROOT c = f32[4,4]{1,0} select(a, b)", "select takes 3 operands, got 2"),
        (
            "ROOT c = f32[4,4]{1,0} add(a, b), sharding={devices=[2,1]0,18446744073709551617}",
            "integer 18446744073709551617 is out of range",
        ),
        (
            "ROOT c = f32[4,4]{1,0} add(a, b), sharding={devices=[65536,2]<=[131072]}",
            "they hold at most 65536 devices",
        ),
        (
            "ROOT c = f32[4,4]{1,0} add(a, b), sharding={devices=[0,1]0}",
            "each must be positive",
        ),
    ],
)
def test_malformed_hlo_instructions(tmp_path: Path, body: str, message: str):
    line, msg = import_error(tmp_path, ELEMENTWISE.replace("BODY", body), ".hlo")
    assert message in msg, msg
    assert line == 6


def test_hlo_module_with_more_devices_than_shardc_runs(tmp_path: Path):
    text = ELEMENTWISE.replace("num_partitions=2", "num_partitions=2147483647").replace(
        "BODY", "ROOT c = f32[4,4]{1,0} add(a, b)"
    )
    line, msg = import_error(tmp_path, text, ".hlo")
    assert line == 1 and "= 2147483647 devices; shardc runs at most 65536" in msg, msg


@pytest.mark.parametrize(
    ("size", "body", "message"),
    [
        (
            "0",
            "%0 = stablehlo.add %arg0, %arg0 : tensor<8xf32>",
            'mesh axis "x" must have a positive size',
        ),
        (
            "2147483647",
            "%0 = stablehlo.add %arg0, %arg0 : tensor<8xf32>",
            "a mesh has at most 65536",
        ),
        ("2", "%0 = stablehlo.add %arg0, %arg0 : tensor<8xf32>", None),
        (
            "2",
            "%0 = stablehlo.broadcast_in_dim %arg0, dims = [18446744073709551617] : (tensor<8xf32>) -> tensor<8xf32>",
            "",
        ),
    ],
)
def test_malformed_stablehlo(tmp_path: Path, size: str, body: str, message: str | None):
    text = STABLEHLO.replace("SIZE", size).replace("BODY", body)
    if message is None:  # an axis declared twice
        text = text.replace('<["x"=2]>', '<["x"=2, "x"=1]>')
        message = 'mesh axis "x" is declared twice'
    _, msg = import_error(tmp_path, text, ".mlir")
    assert message in msg, msg


def test_a_boundary_sharding_using_an_axis_twice(tmp_path: Path):
    """Found by bench/fuzz.py at 10,000 inputs: the function's own sharding attributes."""
    text = STABLEHLO.replace("SIZE", "2").replace(
        "BODY", "%0 = stablehlo.add %arg0, %arg0 : tensor<8xf32>"
    )
    text = text.replace(
        'func.func public @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>})',
        'func.func public @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"x"}]>})',
    ).replace("%arg0, %arg0 : tensor<8xf32>", "%arg0, %arg0 : tensor<8x8xf32>")
    text = text.replace("-> (tensor<8xf32>)", "-> (tensor<8x8xf32>)").replace(
        "return %0 : tensor<8xf32>", "return %0 : tensor<8x8xf32>"
    )
    _, msg = import_error(tmp_path, text, ".mlir")
    assert "argument 0: a mesh axis appears more than once in a sharding" in msg, msg


def test_replica_groups_mesh_with_a_negative_axis(tmp_path: Path):
    body = (
        "ROOT c = f32[4,8]{1,0} all-gather(a), channel_id=1, "
        "replica_groups=mesh['x'=2,'y'=-1] {'y'}, dimensions={1}, use_global_device_ids=true"
    )
    line, msg = import_error(tmp_path, ELEMENTWISE.replace("BODY", body), ".hlo")
    assert line == 6 and 'mesh axis "y" must have a positive size' in msg, msg
