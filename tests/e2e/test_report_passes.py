"""shardc-run says what each pass of -p changed (pipelines expanded into their passes)."""

from __future__ import annotations

import json
from pathlib import Path

from shardc.tools.shardc_run import main

EXAMPLES = Path(__file__).parents[2] / "examples"


def test_report_lists_each_pass_with_op_and_collective_counts(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    report = tmp_path / "r.json"
    status = main(
        [str(EXAMPLES / "megatron_mlp.mlir"), "-p", "spmd-pipeline", "--report-json", str(report)]
    )
    assert status == 0
    passes = json.loads(report.read_text())["passes"]
    names = [p["pass"] for p in passes]
    assert names[:2] == ["spmd-propagate", "spmd-partition"] and names[-1] == "schedule"
    partition = passes[1]
    assert (partition["collectives_before"], partition["collectives_after"]) == (0, 1)
    for earlier, later in zip(passes, passes[1:], strict=False):
        assert earlier["ops_after"] == later["ops_before"]
    out = capsys.readouterr().out
    assert "spmd-partition" in out and "collectives 0 -> 1" in out


def test_no_pipeline_no_pass_list(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    assert main([str(EXAMPLES / "collectives.mlir"), "--report-json", str(report)]) == 0
    assert json.loads(report.read_text())["passes"] == []
