"""
Bad options of the collective passes through `shardc-opt`: one diagnostic, exit status 1,
no traceback, nothing on stdout; good options are accepted.
"""

from __future__ import annotations

import contextlib
import io

import pytest
from shardc.tools.shardc_opt import main

PROGRAM = """spmd.mesh @mesh = <["x"=2]>
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {spmd.partitioned} {
  %r = collective.all_reduce add %x on @mesh["x"] : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
"""


def run(pipeline: str, tmp_path) -> tuple[int, str, str]:  # noqa: ANN001
    path = tmp_path / "in.mlir"
    path.write_text(PROGRAM)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(path), "-p", pipeline])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("pipeline", "message"),
    [
        ("async-split{min-bytes=-1}", "option 'min-bytes' must be at least 0, got -1"),
        ("async-split{min-bytes=1.5}", "invalid pass option value '1.5': expected int"),
        ("async-split{inverse=yes}", "invalid pass option value 'yes': expected bool"),
        ("collective-matmul{min-bytes=-8}", "option 'min-bytes' must be at least 0, got -8"),
        ("collective-matmul{bidirectional=3}", "invalid pass option value '3': expected bool"),
        ("all-reduce-reassociate{reassociate-converted=0.5}", "expected bool"),
        ("reduce-scatter-create{dim=1}", "unknown pass option 'dim'"),
        ("all-gather-slice-simplify{x=1}", "unknown pass option 'x'"),
    ],
)
def test_bad_option(pipeline: str, message: str, tmp_path) -> None:  # noqa: ANN001
    code, out, err = run(pipeline, tmp_path)
    assert code == 1
    assert out == ""
    assert "Traceback" not in err
    assert err.count("error:") == 1, err
    assert message in err, err


@pytest.mark.parametrize(
    "pipeline",
    [
        "async-split{min-bytes=0}",
        "async-split{inverse=true}",
        "collective-matmul{bidirectional=false min-bytes=1024}",
        "all-reduce-reassociate{reassociate-converted=true}",
        "reduce-scatter-create,all-gather-slice-simplify",
    ],
)
def test_good_options(pipeline: str, tmp_path) -> None:  # noqa: ANN001
    code, out, err = run(pipeline, tmp_path)
    assert code == 0, err
    assert "collective." in out
