"""
`shardc-import`: output to stdout or -o, format detection, --stats, the imported programs
through `shardc-run` (StableHLO with -p spmd-pipeline --check; HLO text with per-device
in_K.D / out_K.D arrays), and bad input: one located diagnostic naming the unknown op or
attribute (or what lark expected), exit status 1, no traceback, no output file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from shardc.dialects import make_context
from shardc.frontends.hlo_text import global_outputs, per_device_inputs
from shardc.interpreter import io
from shardc.parsing import parse_and_verify
from shardc.tools import shardc_import, shardc_run

CORPUS = Path(__file__).parent / "corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())["programs"]

STABLEHLO_OK = """module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.tanh %arg0 : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
"""

HLO_OK = """HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %r = f32[4]{0} tanh(%p)
}
"""

BAD = {
    "unknown_op.mlir": (
        STABLEHLO_OK.replace("stablehlo.tanh", "stablehlo.frobnicate"),
        "3:10: error: unknown operation 'stablehlo.frobnicate'",
    ),
    "unknown_attr.mlir": (
        STABLEHLO_OK.replace(
            "%arg0 : tensor<4xf32>\n", "%arg0 {frobnicate = 1 : i32} : tensor<4xf32>\n"
        ),
        "3:32: error: unknown attribute 'frobnicate' on stablehlo.tanh",
    ),
    "unknown_dialect_attr.mlir": (
        STABLEHLO_OK.replace(
            "%arg0 : tensor<4xf32>\n", "%arg0 {x = #stablehlo.frob<1>} : tensor<4xf32>\n"
        ),
        "3:36: error: unknown attribute 'stablehlo.frob'",
    ),
    "syntax.mlir": (
        STABLEHLO_OK.replace("%0 = stablehlo.tanh %arg0", "%0 = stablehlo.tanh %arg0,"),
        "3:",
    ),
    "unknown_op.hlo": (
        HLO_OK.replace("tanh(%p)", "frobnicate(%p)"),
        "5:23: error: unknown HLO instruction 'frobnicate'",
    ),
    "unknown_attr.hlo": (
        HLO_OK.replace("tanh(%p)", "tanh(%p), frobnicate={1}"),
        "5:33: error: unknown attribute 'frobnicate' on tanh",
    ),
    "malformed.hlo": (
        HLO_OK.replace("tanh(%p)", "tanh(%p"),
        "5:30: error: malformed HLO text: unexpected end of line, expected ')'",
    ),
    "malformed_char.hlo": (
        HLO_OK.replace("tanh(%p)", "tanh(%p) ?"),
        "5:32: error: malformed HLO text: unexpected '?'",
    ),
    "undefined.hlo": (HLO_OK.replace("tanh(%p)", "tanh(%q)"), "5:28: error: %q is not defined"),
    "bad_groups.hlo": (
        HLO_OK.replace("HloModule m,", "HloModule m, num_partitions=2,").replace(
            "ROOT %r = f32[4]{0} tanh(%p)",
            "ROOT %r = f32[4]{0} all-gather(%p), replica_groups={{0,1},{1}}, dimensions={0}",
        ),
        "error: replica groups",
    ),
}


def run_main(tool, argv: list[str], capsys) -> tuple[int, str, str]:
    code = tool.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_stablehlo_to_stdout_with_stats(tmp_path: Path, capsys) -> None:
    src = tmp_path / "f.mlir"
    src.write_text(STABLEHLO_OK)
    code, out, err = run_main(shardc_import, [str(src), "--stats"], capsys)
    assert code == 0, err
    assert "hlo.tanh" in out and "func.func @main" in out
    assert "format: stablehlo" in err and "stablehlo.tanh x1" in err
    parse_and_verify(make_context(), out, "out")


def test_hlo_to_file_and_format_detection(tmp_path: Path, capsys) -> None:
    src = tmp_path / "m.txt"
    src.write_text("// an XLA dump\n" + HLO_OK)
    dst = tmp_path / "out.mlir"
    code, out, err = run_main(shardc_import, [str(src), "-o", str(dst)], capsys)
    assert code == 0, err
    assert out == ""
    text = dst.read_text()
    assert "spmd.per_device_io" in text and 'spmd.mesh @mesh = <["devices"=1]>' in text
    code, _, err = run_main(shardc_import, [str(src), "--format", "stablehlo"], capsys)
    assert code == 1 and "error:" in err


@pytest.mark.parametrize("name", list(BAD))
def test_bad_input(name: str, tmp_path: Path, capsys) -> None:
    text, expected = BAD[name]
    src = tmp_path / name
    src.write_text(text)
    dst = tmp_path / "out.mlir"
    code, out, err = run_main(shardc_import, [str(src), "-o", str(dst)], capsys)
    assert code == 1
    assert out == ""
    assert not dst.exists(), "no output file on error"
    assert err.startswith(f"{src}:"), err
    assert expected in err, err
    assert err.count("error:") == 1
    assert "Traceback" not in err
    # the diagnostic shows the source line and a caret
    lines = err.rstrip("\n").split("\n")
    assert len(lines) == 3 and set(lines[2].strip()) == {"^"}, err


def test_missing_file(tmp_path: Path, capsys) -> None:
    code, _, err = run_main(shardc_import, [str(tmp_path / "nope.mlir")], capsys)
    assert code == 1 and "cannot read the file" in err


CONSOLE_SCRIPT = Path(sys.executable).with_name("shardc-import")
"""The console script installed beside the Python running the tests."""


@pytest.mark.skipif(not CONSOLE_SCRIPT.exists(), reason="the console script is not installed")
def test_console_script(tmp_path: Path) -> None:
    exe = str(CONSOLE_SCRIPT)
    bad = tmp_path / "bad.hlo"
    bad.write_text(BAD["unknown_op.hlo"][0])
    p = subprocess.run([exe, str(bad)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and p.stdout == ""
    assert "unknown HLO instruction 'frobnicate'" in p.stderr and "Traceback" not in p.stderr


def test_imported_programs_through_shardc_run(tmp_path: Path, capsys) -> None:
    """StableHLO: -p spmd-pipeline --check on JAX's inputs; HLO text: in_K.D -> out_K.D."""
    name = "megatron_mlp"
    meta = MANIFEST[name]
    with np.load(CORPUS / meta["files"]["data"]) as z:
        data = {k: z[k] for k in z.files}
    inputs = {k: v for k, v in data.items() if k.startswith("in_")}
    np.savez(tmp_path / "in.npz", **inputs)

    mlir = tmp_path / "g.mlir"
    code, _, err = run_main(
        shardc_import, [str(CORPUS / meta["files"]["stablehlo"]), "-o", str(mlir)], capsys
    )
    assert code == 0, err
    code, out, err = run_main(
        shardc_run,
        [
            str(mlir),
            "-p",
            "spmd-pipeline",
            "--check",
            "--inputs",
            str(tmp_path / "in.npz"),
            "--outputs",
            str(tmp_path / "out.npz"),
        ],
        capsys,
    )
    assert code == 0, err
    assert "check against the level-G program before -p: pass" in out
    with np.load(tmp_path / "out.npz") as z:
        np.testing.assert_allclose(
            z["out_0"], data["out_0"], rtol=1e-5, atol=1e-5 * np.abs(data["out_0"]).max()
        )

    per_device = tmp_path / "s.mlir"
    code, _, err = run_main(
        shardc_import, [str(CORPUS / meta["files"]["hlo"]), "-o", str(per_device)], capsys
    )
    assert code == 0, err
    module = parse_and_verify(make_context(), per_device.read_text(), str(per_device))
    function = io.find_entry(module, None, "s.mlir")
    args = [data[f"in_{k}"] for k in range(len(meta["input_shapes"]))]
    np.savez(tmp_path / "in_dev.npz", **per_device_inputs(function, args, meta["devices"]))
    code, out, err = run_main(
        shardc_run,
        [
            str(per_device),
            "--inputs",
            str(tmp_path / "in_dev.npz"),
            "--outputs",
            str(tmp_path / "out_dev.npz"),
        ],
        capsys,
    )
    assert code == 0, err
    with np.load(tmp_path / "out_dev.npz") as z:
        outs = {k: z[k] for k in z.files}
    assert sorted(outs) == sorted(f"out_0.{d}" for d in range(meta["devices"]))
    (got,) = global_outputs(outs, meta["output_shardings"], meta["output_shapes"], meta["devices"])
    np.testing.assert_allclose(
        got, data["out_0"], rtol=1e-5, atol=1e-5 * np.abs(data["out_0"]).max()
    )


def test_no_jax_needed() -> None:
    """The importers never import jax (it is only the corpus script's optional extra)."""
    import sys

    import shardc.frontends.hlo_text  # noqa: F401
    import shardc.frontends.stablehlo  # noqa: F401

    assert "jax" not in sys.modules or os.environ.get("SHARDC_TESTS_WITH_JAX")
