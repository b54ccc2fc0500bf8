"""`shardc-import --check-support`: every gap of a file at once (issue 13 item 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from shardc.frontends.support import hlo_text_support, stablehlo_support
from shardc.tools import shardc_import

CORPUS = Path(__file__).parent / "corpus"

GAPS = """\
module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<8xsi8>) -> (tensor<8xf32>) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i32>, tensor<8xf32>
     cond {
      %1 = stablehlo.compare  LT, %iterArg, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = "stablehlo.frobnicate"(%iterArg_0) : (tensor<8xf32>) -> tensor<8xf32> loc("x.py":3:4)
      %2 = stablehlo.frobnicate %1 : tensor<8xf32>
      %3 = stablehlo.custom_call @cu_threefry2x32(%2) : (tensor<8xf32>) -> tensor<8xf32>
      stablehlo.return %iterArg, %3 : tensor<i32>, tensor<8xf32>
    }
    return %0#1 : tensor<8xf32>
  }
}
"""


def test_every_gap_of_a_stablehlo_file_with_its_first_place_and_count() -> None:
    report = stablehlo_support(GAPS, "gaps.mlir")
    found = {
        (g.kind, g.name): (g.first.line.data, g.first.column.data, g.count)
        for g in report.gaps.values()
    }
    assert found == {
        ("element type", "si8"): (2, 64, 1),
        ("op", "stablehlo.frobnicate"): (9, 13, 2),
        ("custom_call", "@cu_threefry2x32"): (11, 12, 1),
    }
    text = report.format_text().splitlines()
    assert text[0] == "gaps.mlir:2:64: unsupported element type si8"
    assert text[1] == "gaps.mlir:9:13: unsupported op stablehlo.frobnicate (2x)"
    assert (
        text[-1]
        == "gaps.mlir: 3 unsupported op(s)/type(s), 4 occurrence(s), for the StableHLO importer"
    )


@pytest.mark.parametrize(
    "path", sorted([*CORPUS.glob("*.mlir"), *CORPUS.glob("*.hlo.txt")]), ids=lambda p: p.name
)
def test_a_file_that_imports_has_no_gaps(path: Path) -> None:
    """No false alarms: every corpus file imports, so none reports a gap."""
    text = path.read_text()
    support = hlo_text_support if path.name.endswith(".hlo.txt") else stablehlo_support
    assert support(text, path.name).gaps == {}


def test_hlo_text_gaps_name_each_unknown_opcode(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = (CORPUS / "attention.hlo.txt").read_text()
    bad = tmp_path / "bad.hlo.txt"
    bad.write_text(text.replace(" add(", " frobnicate(").replace(" divide(", " frobnicate("))
    times = text.count(" add(") + text.count(" divide(")
    assert times >= 2
    assert shardc_import.main([str(bad), "--check-support"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{bad}:")
    assert out[0].endswith(f"unsupported op frobnicate ({times}x)"), out
    assert shardc_import.main([str(CORPUS / "attention.hlo.txt"), "--check-support"]) == 0


def test_check_support_cli_lists_the_gaps_and_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "gaps.mlir"
    path.write_text(GAPS)
    assert shardc_import.main([str(path), "--check-support"]) == 1
    out = capsys.readouterr().out
    assert (
        "unsupported op stablehlo.frobnicate" in out
        and "unsupported custom_call @cu_threefry2x32" in out
    )
    assert not (tmp_path / "gaps.out").exists()
