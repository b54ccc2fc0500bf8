"""
Issue 13, item 6: the wrong kind of file given to a tool. StableHLO (or XLA HLO text) given
to `shardc-opt`, `shardc-run` or `shardc.compile` is one located diagnostic at its first
StableHLO / Shardy op or attribute saying to run `shardc-import` first, exit status 1;
shardc IR given to `shardc-import` says it is already imported. And the zero-size reshape
that crashed `spmd-propagate` (IndexError in `reshape_major_dim_pairs`).
"""

from __future__ import annotations

import contextlib
import io
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import shardc
from hypothesis import given
from hypothesis import strategies as st
from shardc.passes.sharding_rules import reshape_major_dim_pairs
from shardc.tests.e2e.differential import partition_and_compare
from shardc.tools import shardc_import, shardc_opt, shardc_run

REPO = Path(__file__).resolve().parents[2]

STABLEHLO = """module @jit_f attributes {mhlo.num_partitions = 2 : i32} {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<8xf32>) {
    %0 = stablehlo.add %arg0, %arg0 : tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
"""

STABLEHLO_NO_MESH = """func.func public @main(%arg0: tensor<8xf32>) -> (tensor<8xf32>) {
  %0 = stablehlo.add %arg0, %arg0 : tensor<8xf32>
  return %0 : tensor<8xf32>
}
"""

HLO_TEXT = """HloModule m

ENTRY e {
  ROOT p = f32[2] parameter(0)
}
"""

DIAGNOSTIC = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>\S.*)$", re.M)


def run_main(main: Callable[[Sequence[str]], int], args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def one_diagnostic(err: str) -> tuple[int, int, str]:
    assert "Traceback" not in err and "internal error" not in err, err
    found = DIAGNOSTIC.findall(err)
    assert len(found) == 1, err
    _, line, col, msg = found[0]
    return int(line), int(col), msg


TOOLS = {
    "shardc-opt": (shardc_opt.main, []),
    "shardc-opt -p": (shardc_opt.main, ["-p", "spmd-pipeline"]),
    "shardc-run": (shardc_run.main, []),
    "shardc-run --check": (shardc_run.main, ["-p", "spmd-pipeline", "--check"]),
}


@pytest.mark.parametrize("tool", sorted(TOOLS))
@pytest.mark.parametrize(
    ("text", "line", "col", "name", "what"),
    [
        (STABLEHLO, 2, 3, "Operation sdy.mesh is not registered", "StableHLO with Shardy"),
        (STABLEHLO_NO_MESH, 2, 8, "Operation stablehlo.add is not registered", "StableHLO,"),
    ],
)
def test_tools_on_stablehlo_say_to_import_it_first(
    tool: str, text: str, line: int, col: int, name: str, what: str, tmp_path: Path
) -> None:
    path = tmp_path / "jax.mlir"
    path.write_text(text)
    main, flags = TOOLS[tool]
    code, out, err = run_main(main, [*flags, str(path)])
    assert code == 1 and out == ""
    assert one_diagnostic(err)[:2] == (line, col), err
    msg = one_diagnostic(err)[2]
    assert name in msg and what in msg and "shardc-import" in msg, msg


def test_api_on_stablehlo_says_to_import_it_first() -> None:
    with pytest.raises(shardc.DiagnosticError) as info:
        shardc.compile(STABLEHLO, pipeline="spmd-pipeline")
    line, col, msg = one_diagnostic(str(info.value))
    assert (line, col) == (2, 3)
    assert "sdy.mesh" in msg and "StableHLO" in msg and "shardc-import" in msg


def test_a_shardy_attribute_before_any_op_says_so_too(tmp_path: Path) -> None:
    text = STABLEHLO.replace('  sdy.mesh @mesh = <["x"=2]>\n', "")
    path = tmp_path / "jax.mlir"
    path.write_text(text)
    code, _, err = run_main(shardc_opt.main, [str(path)])
    line, col, msg = one_diagnostic(err)
    assert code == 1 and line == 2 and msg.startswith("'sdy.sharding' is not registered")
    assert "shardc-import" in msg


@pytest.mark.parametrize("main", [shardc_opt.main, shardc_run.main])
def test_tools_on_hlo_text_say_to_import_it_first(
    main: Callable[[Sequence[str]], int], tmp_path: Path
) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(HLO_TEXT)
    code, _, err = run_main(main, [str(path)])
    line, col, msg = one_diagnostic(err)
    assert (code, line, col) == (1, 1, 1)
    assert "XLA HLO module text" in msg and "shardc-import" in msg


def test_shardc_ir_keeps_its_own_unknown_op_message(tmp_path: Path) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @f() {\n  hlo.frobnicate\n  func.return\n}\n")
    code, _, err = run_main(shardc_opt.main, [str(path)])
    msg = one_diagnostic(err)[2]
    assert code == 1 and msg == "Operation hlo.frobnicate is not registered"


@pytest.mark.parametrize(
    "example", ["megatron_mlp.mlir", "matmul_reduce_scatter.mlir", "collectives.mlir"]
)
def test_shardc_import_of_shardc_ir_says_it_is_already_imported(example: str) -> None:
    path = REPO / "examples" / example
    if not path.exists():
        pytest.skip(f"no {example}")
    code, out, err = run_main(shardc_import.main, [str(path)])
    assert code == 1 and out == ""
    msg = one_diagnostic(err)[2]
    assert "already shardc IR" in msg and "nothing to import" in msg, msg


def test_shardc_import_of_its_own_output_says_it_is_already_imported(tmp_path: Path) -> None:
    src = tmp_path / "jax.mlir"
    src.write_text(STABLEHLO)
    imported = tmp_path / "imported.mlir"
    assert run_main(shardc_import.main, [str(src), "-o", str(imported)])[0] == 0
    code, _, err = run_main(shardc_import.main, [str(imported)])
    line, _, msg = one_diagnostic(err)
    assert code == 1 and "already shardc IR" in msg
    assert imported.read_text().splitlines()[line - 1].lstrip().startswith(msg.split("'")[1])


def test_shardc_import_keeps_its_message_for_unsupported_stablehlo(tmp_path: Path) -> None:
    src = tmp_path / "jax.mlir"
    src.write_text(STABLEHLO.replace("stablehlo.add", "stablehlo.frobnicate"))
    code, _, err = run_main(shardc_import.main, [str(src)])
    msg = one_diagnostic(err)[2]
    assert code == 1 and "shardc's StableHLO importer does not support it" in msg
    assert "shardc-import FILE" not in msg


################################################################################
# Zero-size dimensions through reshape                                         #
################################################################################

ZERO_RESHAPE = """spmd.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%a: tensor<{src}xf32> {{spmd.sharding = #spmd.sharding<@mesh, [{shard}]>}})
    -> (tensor<{res}xf32> {{spmd.sharding = #spmd.sharding<@mesh, [{res_shard}]>}}) {{
  %r = hlo.reshape %a : (tensor<{src}xf32>) -> tensor<{res}xf32>
  %e = hlo.exp %r : tensor<{res}xf32>
  func.return %e : tensor<{res}xf32>
}}
"""


@pytest.mark.parametrize(
    ("src", "res"),
    [((0, 4), (4, 0)), ((4, 0), (0, 4)), ((0, 4), (0, 2, 2)), ((2, 0, 4), (8, 0)), ((0,), (4, 0))],
)
def test_reshape_of_a_zero_size_dim_with_a_sharded_argument(
    src: tuple[int, ...], res: tuple[int, ...], tmp_path: Path
) -> None:
    shard = ", ".join('{"x"}' if i == 0 else "{}" for i in range(len(src)))
    res_shard = ", ".join('{"y"}' if i == len(res) - 1 else "{}" for i in range(len(res)))
    text = ZERO_RESHAPE.format(
        src="x".join(map(str, src)), res="x".join(map(str, res)), shard=shard, res_shard=res_shard
    )
    path = tmp_path / "zero.mlir"
    path.write_text(text)
    code, _, err = run_main(shardc_opt.main, ["-p", "spmd-propagate", str(path)])
    assert code == 0, err
    partition_and_compare(text)


@st.composite
def equal_size_shapes(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes with the same number of elements, often zero."""
    dims = st.lists(st.sampled_from([0, 1, 2, 3, 4, 6]), min_size=0, max_size=4)
    src = tuple(draw(dims))
    if math.prod(src) == 0:
        res = tuple(draw(dims.filter(lambda d: math.prod(d) == 0)))
    else:
        factors = [f for d in src for f in _factor(d)]
        perm = draw(st.permutations(factors))
        cuts = sorted(draw(st.sets(st.integers(0, len(perm)), max_size=3)))
        bounds = [0, *cuts, len(perm)]
        res = tuple(math.prod(perm[a:b]) for a, b in zip(bounds, bounds[1:], strict=False))
    return src, res


def _factor(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


@given(equal_size_shapes())
def test_reshape_major_dim_pairs_is_total(shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    """Any two shapes of equal size: valid, increasing pairs of dims that are not 1."""
    src, res = shapes
    pairs = reshape_major_dim_pairs(src, res)
    for (i, j), (k, m) in zip(pairs, pairs[1:], strict=False):
        assert i < k and j < m
    for i, j in pairs:
        assert src[i] != 1 and res[j] != 1
        if math.prod(src) == 0:
            assert src[i] == res[j]  # a zero-element reshape keeps only whole dims
        # the row-major prefix before a paired dim holds as many elements on both sides
        assert math.prod(src[:i]) == math.prod(res[:j])
