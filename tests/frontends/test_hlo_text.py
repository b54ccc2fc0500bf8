"""
The HLO text importer on hand-written modules: every replica-group form and group mode,
async pairs, tuples, the tuple all-to-all, bitcasts across layouts, partition ids,
literals; each imported program is run per device and checked against numpy.
"""

from __future__ import annotations

import io
import math
import re
from pathlib import Path

import numpy as np
import pytest
from shardc.diagnostics import DiagnosticError
from shardc.frontends import hlo_sharding as hs
from shardc.frontends.hlo_text import (
    import_hlo_text,
    looks_like_hlo_text,
    mesh_axes_groups,
    permute_groups,
)
from shardc.interpreter.testing import run_per_device

ADD = """
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %a = f32[] add(%x, %y)
}
"""
MAX = """
%max (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %m = f32[] maximum(%y, %x)
}
"""


def imported(text: str):
    result = import_hlo_text(text, "test.hlo")
    return str(result.module), result.stats


def run(text: str, per_device: list[list[np.ndarray]]) -> list[tuple[np.ndarray, ...]]:
    program, _ = imported(text)
    return [tuple(np.asarray(v) for v in r) for r in run_per_device(program, per_device)]


def rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def test_async_pairs_and_parameter_numbers() -> None:
    text = f"""HloModule async, num_partitions=4
{ADD}
ENTRY %main (q: f32[2,8], p: f32[4,8]) -> (f32[4,8], f32[2,8], f32[2,32]) {{
  %q = f32[2,8]{{1,0}} parameter(1)
  %p = f32[4,8]{{1,0}} parameter(0)
  %ars = f32[4,8]{{1,0}} all-reduce-start(%p), channel_id=1, replica_groups=[2,2]<=[4], use_global_device_ids=true, to_apply=%add
  %cps = (f32[2,8]{{1,0}}, f32[2,8]{{1,0}}, u32[], u32[]) collective-permute-start(%q), channel_id=2, source_target_pairs={{{{0,1}},{{1,2}},{{2,3}},{{3,0}}}}
  %ags = (f32[2,8]{{1,0}}, f32[2,32]{{1,0}}) all-gather-start(%q), channel_id=3, replica_groups={{{{0,1,2,3}}}}, dimensions={{1}}, use_global_device_ids=true
  %ard = f32[4,8]{{1,0}} all-reduce-done(%ars)
  %cpd = f32[2,8]{{1,0}} collective-permute-done(%cps)
  %agd = f32[2,32]{{1,0}} all-gather-done(%ags)
  ROOT %t = (f32[4,8]{{1,0}}, f32[2,8]{{1,0}}, f32[2,32]{{1,0}}) tuple(%ard, %cpd, %agd)
}}
"""
    program, stats = imported(text)
    assert "collective.all_reduce_start add %0 on groups [[0, 1], [2, 3]]" in program
    assert "collective.permute_start %1 on groups [[0, 1, 2, 3]], shift = 1" in program
    assert "collective.all_gather_start %1 on groups [[0, 1, 2, 3]], dim = 1" in program
    assert program.count("collective.done") == 3
    assert {"all-reduce-start", "all-reduce-done", "replica_groups iota"} <= stats.seen()
    rng = np.random.default_rng(0)
    p = [rand(rng, 4, 8) for _ in range(4)]
    q = [rand(rng, 2, 8) for _ in range(4)]
    # parameter(0) is p although the text defines q first
    outs = run(text, [[p[d], q[d]] for d in range(4)])
    for d in range(4):
        group = [0, 1] if d < 2 else [2, 3]
        np.testing.assert_allclose(outs[d][0], p[group[0]] + p[group[1]], rtol=1e-6)
        np.testing.assert_array_equal(outs[d][1], q[(d - 1) % 4])
        np.testing.assert_array_equal(outs[d][2], np.concatenate(q, axis=1))


def test_group_modes_and_forms() -> None:
    # 2 replicas x 2 partitions: device = replica * 2 + partition
    text = f"""HloModule modes, replica_count=2, num_partitions=2
{ADD}
{MAX}
ENTRY %main (p: f32[4]) -> (f32[4], f32[4], f32[4], f32[4]) {{
  %p = f32[4]{{0}} parameter(0)
  %cross_replica = f32[4]{{0}} all-reduce(%p), replica_groups={{{{0,1}}}}, to_apply=%add
  %cross_both = f32[4]{{0}} all-reduce(%p), channel_id=1, replica_groups={{{{0,1}}}}, to_apply=%max
  %flat_iota = f32[4]{{0}} all-reduce(%p), channel_id=2, replica_groups=[2,2]<=[2,2]T(1,0), use_global_device_ids=true, to_apply=%add
  %mesh = f32[4]{{0}} all-reduce(%p), channel_id=3, replica_groups=mesh['r'=2,'c'=2] {{'c'}}, use_global_device_ids=true, to_apply=%add
  ROOT %t = (f32[4]{{0}}, f32[4]{{0}}, f32[4]{{0}}, f32[4]{{0}}) tuple(%cross_replica, %cross_both, %flat_iota, %mesh)
}}
"""
    program, stats = imported(text)
    assert 'spmd.mesh @mesh = <["devices"=4]>' in program
    assert "on groups [[0, 2], [1, 3]]" in program  # cross-replica and the iota form
    assert "collective.all_reduce max %0 on groups [[0, 1, 2, 3]]" in program
    assert "on groups [[0, 1], [2, 3]]" in program  # mesh axes {'c'}
    assert {
        "replica_groups explicit",
        "replica_groups iota",
        "replica_groups mesh axes",
    } <= stats.seen()
    rng = np.random.default_rng(1)
    p = [rand(rng, 4) for _ in range(4)]
    outs = run(text, [[x] for x in p])
    for d in range(4):
        col = [d % 2, d % 2 + 2]
        row = [d - d % 2, d - d % 2 + 1]
        np.testing.assert_allclose(outs[d][0], p[col[0]] + p[col[1]], rtol=1e-6)
        np.testing.assert_array_equal(outs[d][1], np.max(p, axis=0))
        np.testing.assert_allclose(outs[d][2], p[col[0]] + p[col[1]], rtol=1e-6)
        np.testing.assert_allclose(outs[d][3], p[row[0]] + p[row[1]], rtol=1e-6)


def test_reduce_scatter_all_to_all_and_generic_async() -> None:
    text = f"""HloModule rs, num_partitions=4
{ADD}
%wrapped (a: f32[8,2]) -> f32[2,2] {{
  %a = f32[8,2]{{1,0}} parameter(0)
  ROOT %rs = f32[2,2]{{1,0}} reduce-scatter(%a), channel_id=4, replica_groups={{{{0,1,2,3}}}}, dimensions={{0}}, use_global_device_ids=true, to_apply=%add
}}

ENTRY %main (p: f32[8,2]) -> (f32[2,2], f32[8,2], f32[2,2], f32[2,2]) {{
  %p = f32[8,2]{{1,0}} parameter(0)
  %start = ((f32[8,2]{{1,0}}), f32[2,2]{{1,0}}, s32[]) async-start(%p), calls=%wrapped
  %done = f32[2,2]{{1,0}} async-done(%start)
  %a2a = f32[8,2]{{1,0}} all-to-all(%p), channel_id=5, replica_groups={{{{0,1,2,3}}}}, dimensions={{0}}
  %s0 = f32[2,2]{{1,0}} slice(%p), slice={{[0:2], [0:2]}}
  %s1 = f32[2,2]{{1,0}} slice(%p), slice={{[2:4], [0:2]}}
  %s2 = f32[2,2]{{1,0}} slice(%p), slice={{[4:6], [0:2]}}
  %s3 = f32[2,2]{{1,0}} slice(%p), slice={{[6:8], [0:2]}}
  %tup = (f32[2,2]{{1,0}}, f32[2,2]{{1,0}}, f32[2,2]{{1,0}}, /*index=3*/f32[2,2]{{1,0}}) all-to-all(%s0, %s1, %s2, %s3), channel_id=6, replica_groups={{{{0,1,2,3}}}}
  %g0 = f32[2,2]{{1,0}} get-tuple-element(%tup), index=0
  %g3 = f32[2,2]{{1,0}} get-tuple-element(%tup), index=3
  ROOT %t = (f32[2,2]{{1,0}}, f32[8,2]{{1,0}}, f32[2,2]{{1,0}}, f32[2,2]{{1,0}}) tuple(%done, %a2a, %g0, %g3)
}}
"""
    program, stats = imported(text)
    assert "collective.reduce_scatter_start add" in program
    assert {"async-start/async-done", "tuple all-to-all"} <= stats.seen()
    rng = np.random.default_rng(2)
    p = [rand(rng, 8, 2) for _ in range(4)]
    outs = run(text, [[x] for x in p])
    total = np.sum(p, axis=0, dtype=np.float32)
    for d in range(4):
        np.testing.assert_allclose(outs[d][0], total[2 * d : 2 * d + 2], rtol=1e-5)
        np.testing.assert_array_equal(
            outs[d][1], np.concatenate([p[s][2 * d : 2 * d + 2] for s in range(4)])
        )
        np.testing.assert_array_equal(outs[d][2], p[0][2 * d : 2 * d + 2])
        np.testing.assert_array_equal(outs[d][3], p[3][2 * d : 2 * d + 2])


def test_partition_id_bitcast_layouts_literals_fusion() -> None:
    text = """HloModule misc, num_partitions=2

%fused (a: f32[2,3], b: s32[]) -> f32[3,2] {
  %a = f32[2,3]{1,0} parameter(0)
  %t = f32[3,2]{0,1} transpose(%a), dimensions={1,0}
  %b = s32[] parameter(1)
  %bf = f32[] convert(%b)
  %bb = f32[3,2]{1,0} broadcast(%bf), dimensions={}
  %c = f32[3,2]{0,1} add(%t, %bb)
  ROOT %phys = f32[3,2]{1,0} bitcast(%c)
}

ENTRY %main (a: f32[2,3]) -> (f32[3,2], f32[2,3], pred[2,3], s32[]) {
  %a = f32[2,3]{1,0} parameter(0)
  %pid = u32[] partition-id()
  %spid = s32[] convert(%pid)
  %f = f32[3,2]{1,0} fusion(%a, %spid), kind=kLoop, calls=%fused
  %k = f32[2,3]{1,0} constant({ { 1, -2.5, inf }, { 0.5, -inf, 3e2 } })
  %lt = pred[2,3]{1,0} compare(%a, %k), direction=LT
  %sel = f32[2,3]{1,0} select(%lt, %a, %k)
  ROOT %t = (f32[3,2]{1,0}, f32[2,3]{1,0}, pred[2,3]{1,0}, s32[]) tuple(%f, %sel, %lt, %spid)
}
"""
    program, stats = imported(text)
    assert 'spmd.axis_index @mesh["devices"]' in program
    assert {
        "bitcast across layouts (transpose)",
        "fusion (inlined)",
    } <= stats.seen()
    rng = np.random.default_rng(3)
    a = [rand(rng, 2, 3) for _ in range(2)]
    outs = run(text, [[x] for x in a])
    k = np.array([[1, -2.5, np.inf], [0.5, -np.inf, 300]], dtype=np.float32)
    for d in range(2):
        # {0,1} layout of the transpose: its bytes are a's row-major bytes
        phys = (a[d] + d).reshape(3, 2)
        np.testing.assert_array_equal(outs[d][0], phys)
        np.testing.assert_array_equal(outs[d][1], np.where(a[d] < k, a[d], k))
        np.testing.assert_array_equal(outs[d][2], a[d] < k)
        assert int(outs[d][3]) == d


def test_reduce_init_and_computation_names_without_percent() -> None:
    text = """HloModule old_style

add {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT sum = f32[] add(lhs, rhs)
}

ENTRY entry {
  x = f32[4,3]{1,0} parameter(0)
  one = f32[] constant(1)
  ROOT r = f32[4]{0} reduce(x, one), dimensions={1}, to_apply=add, sharding={replicated}
}
"""
    program, _ = imported(text)
    assert "spmd.per_device_io" in program
    assert '-> (tensor<4xf32> {mhlo.sharding = "{replicated}"})' in program
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    (out,) = run(text, [[x]])[0]
    np.testing.assert_array_equal(out, x.sum(axis=1) + 1)


def test_helpers() -> None:
    assert looks_like_hlo_text("// dump\nHloModule m, x=1\n")
    assert not looks_like_hlo_text("module @m {\n}\n")
    assert mesh_axes_groups("mesh['a'=2,'b'=4] {'a'}") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert mesh_axes_groups("mesh['a'=2,'b'=4] {'b','a'}") == [[0, 4, 1, 5, 2, 6, 3, 7]]
    # a sub-axis: "b":(2)2 is the minor half of b
    assert mesh_axes_groups("mesh['a'=2,'b'=4] {'b':(2)2}") == [[0, 1], [2, 3], [4, 5], [6, 7]]
    groups, pairs = permute_groups([(0, 1), (1, 0), (2, 3), (3, 2)], 4)
    assert groups == [[0, 1], [2, 3]] and pairs == [(0, 1), (1, 0)]
    groups, pairs = permute_groups([(0, 1), (1, 2)], 4)
    assert groups == [[0, 1, 2, 3]] and pairs == [(0, 1), (1, 2)]


def test_sharding_strings() -> None:
    s = hs.parse_hlo_sharding("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}")
    assert s.devices is not None and s.devices.tolist() == [[[0, 4], [1, 5], [2, 6], [3, 7]]]
    builder = hs.MeshBuilder(8)
    for text in (
        "{devices=[2,1,4]<=[8] last_tile_dim_replicate}",
        "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}",
        "{devices=[8,1]<=[8]}",
    ):
        assert builder.add(hs.parse_hlo_sharding(text)) is None
    assert builder.axes() == [("a", 2), ("b", 4)]
    assert builder.dim_axes(hs.parse_hlo_sharding("{devices=[1,8]<=[2,4]T(1,0)}"))[0] == [
        [],
        ["b", "a"],
    ]
    assert hs.parse_hlo_sharding("{maximal device=3}").is_replicated_like()
    bad = hs.MeshBuilder(6)
    bad.add(hs.parse_hlo_sharding("{devices=[2,3]<=[6]}"))
    bad.add(hs.parse_hlo_sharding("{devices=[3,2]<=[6]}"))
    assert isinstance(bad.axes(), str)
    with pytest.raises(hs.ShardingSyntaxError):
        hs.parse_hlo_sharding("{devices=[2,2]<=[8]}")
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    s = hs.parse_hlo_sharding("{devices=[2,1,2]<=[4] last_tile_dim_replicate}")
    parts = hs.split_global(x, s, 4)
    np.testing.assert_array_equal(parts[1], x[:2])
    np.testing.assert_array_equal(parts[2], x[2:])
    np.testing.assert_array_equal(hs.assemble_global(parts, s, (4, 4)), x)


def _wrapped(text: str) -> str:
    """`text` with each instruction continued over several lines, as XLA may print a long
    one: a line break (and indentation) before the attributes and between operands."""
    lines = []
    for line in text.split("\n"):
        if " = " in line and "(" in line and not line.startswith("HloModule"):
            line = re.sub(r"\), ", "),\n      ", line, count=1).replace(", %", ",\n      %")
        lines.append(line)
    return "\n".join(lines)


@pytest.mark.parametrize(
    "path", sorted((Path(__file__).parent / "corpus").glob("*.hlo.txt")), ids=lambda p: p.name
)
def test_an_instruction_continued_on_the_next_lines_imports_the_same(path: Path) -> None:
    from xdsl.printer import Printer

    def printed(text: str) -> str:
        out = io.StringIO()
        Printer(stream=out).print_op(import_hlo_text(text, path.name).module)
        return out.getvalue()

    text = path.read_text()
    wrapped = _wrapped(text)
    assert wrapped.count("\n") > text.count("\n")
    assert printed(wrapped) == printed(text)


def test_an_error_on_a_continuation_line_points_at_that_line() -> None:
    text = (Path(__file__).parent / "corpus" / "mp_matmul.hlo.txt").read_text()
    wrapped = _wrapped(text).replace("metadata={", "frobnicate={", 1)
    line = next(i for i, s in enumerate(wrapped.split("\n"), 1) if "frobnicate=" in s)
    with pytest.raises(DiagnosticError) as e:
        import_hlo_text(wrapped, "m.hlo")
    assert str(e.value).startswith(f"m.hlo:{line}:"), str(e.value)
    assert "unknown attribute 'frobnicate'" in str(e.value)


def test_elementwise_opcodes_of_issue_13() -> None:
    text = """HloModule ew, num_partitions=2

ENTRY %main (x: f32[6], y: f32[6], a: s32[6], b: s32[6]) -> (f32[6], f32[6], f32[6], f32[6], f32[6], pred[6], s32[6], s32[6], s32[6], s32[6], f32[6], f32[6]) {
  %x = f32[6]{0} parameter(0)
  %y = f32[6]{0} parameter(1)
  %a = s32[6]{0} parameter(2)
  %b = s32[6]{0} parameter(3)
  %e = f32[6]{0} erf(%x)
  %m = f32[6]{0} exponential-minus-one(%x)
  %l = f32[6]{0} log-plus-one(%y)
  %r = f32[6]{0} round-nearest-even(%x)
  %t = f32[6]{0} atan2(%x, %y)
  %f = pred[6]{0} is-finite(%x)
  %s = s32[6]{0} shift-right-arithmetic(%a, %b)
  %p = s32[6]{0} popcnt(%a)
  %c = s32[6]{0} count-leading-zeros(%a)
  %rem = s32[6]{0} remainder(%a, %b)
  %lo = f32[] constant(-1)
  %hi = f32[] constant(1)
  %cl = f32[6]{0} clamp(%lo, %x, %hi)
  %fl = f32[6]{0} floor(%x)
  ROOT %out = (f32[6]{0}, f32[6]{0}, f32[6]{0}, f32[6]{0}, f32[6]{0}, pred[6]{0}, s32[6]{0}, s32[6]{0}, s32[6]{0}, s32[6]{0}, f32[6]{0}, f32[6]{0}) tuple(%e, %m, %l, %r, %t, %f, %s, %p, %c, %rem, %cl, %fl)
}
"""
    program, _ = imported(text)
    for op in ("erf", "expm1", "log1p", "round_nearest_even", "atan2", "is_finite"):
        assert program.count(f"hlo.{op} ") == 1, op
    assert "hlo.exp " not in program and "hlo.log " not in program
    x = np.array([0.5, -1.5, 2.5, 1e-6, np.inf, -3.25], dtype=np.float32)
    y = np.array([1.0, 2.0, -0.5, 1e-7, 3.0, 0.25], dtype=np.float32)
    a = np.array([-7, 7, -(2**31), 1, 0, 100], dtype=np.int32)
    b = np.array([2, -2, -1, 32, 3, 0], dtype=np.int32)
    outs = run(text, [[x, y, a, b]] * 2)
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(all="ignore"):
        want = [
            np.array([math.erf(v) for v in xd]).astype(np.float32),
            np.expm1(xd).astype(np.float32),
            np.log1p(yd).astype(np.float32),
            np.array([0, -2, 2, 0, np.inf, -3], dtype=np.float32),
            np.arctan2(xd, yd).astype(np.float32),
            np.isfinite(x),
            np.array([-2, 7 >> 31, -1, 0, 0, 100 >> 0], dtype=np.int32),
            np.array([bin(int(v) & 0xFFFFFFFF).count("1") for v in a], dtype=np.int32),
            np.array([0, 29, 0, 31, 32, 25], dtype=np.int32),
            np.array([-1, 1, 0, 1, 0, 100], dtype=np.int32),
            np.clip(x, -1, 1),
            np.floor(x),
        ]
    for d in range(2):
        for k, w in enumerate(want):
            np.testing.assert_array_equal(outs[d][k], w, err_msg=f"output {k}")


CONTROL = """HloModule module, is_scheduled=true, num_partitions=4

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY entry {
  p0 = f32[8] parameter(0)
  p1 = f32[8] parameter(1)
  ar0 = f32[8] all-reduce(p0), replica_groups={{0,1,2,3}}, to_apply=add, channel_id=1, use_global_device_ids=true
  ar1 = f32[8] all-reduce(p1), replica_groups={{0,1,2,3}}, to_apply=add, channel_id=2, use_global_device_ids=true, control-predecessors={ar0}
  ROOT t = (f32[8], f32[8]) tuple(ar0, ar1)
}
"""


def combined_all_reduces(text: str) -> int:
    from shardc.driver.compiling import compile_module
    from shardc.interpreter.testing import parse

    program, _ = imported(text)
    module = parse(program)
    compile_module(module, "collective-combine{overlap-aware=false}", "c.mlir")
    return sum(1 for op in module.walk() if op.name == "collective.all_reduce")


def test_control_predecessors_are_kept_and_collective_combine_respects_them() -> None:
    program, _ = imported(CONTROL)
    assert '{spmd.control_id = ["ar0"]}' in program
    assert '{spmd.control_after = ["ar0"]}' in program
    assert combined_all_reduces(CONTROL) == 2  # merging would run ar1 with ar0
    unordered = CONTROL.replace(", control-predecessors={ar0}", "")
    assert combined_all_reduces(unordered) == 1


def test_control_predecessor_is_converted_first_even_if_written_later() -> None:
    from shardc.passes.block_order import block_dependencies

    text = CONTROL.replace(
        "  ar0 = f32[8] all-reduce(p0), replica_groups={{0,1,2,3}}, to_apply=add, channel_id=1, use_global_device_ids=true\n",
        "",
    ).replace(
        "  ROOT t",
        "  ar0 = f32[8] all-reduce(p0), replica_groups={{0,1,2,3}}, to_apply=add, channel_id=1, use_global_device_ids=true\n  ROOT t",
    )
    from shardc.interpreter.testing import parse

    program, _ = imported(text)
    module = parse(program)
    block = next(op for op in module.walk() if op.name == "func.func").regions[0].block
    ops = list(block.ops)
    assert ops[0].attributes.get("spmd.control_id") is not None
    deps = block_dependencies(block)
    assert ops[0] in deps[ops[1]]


INFERRED = """HloModule module

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = add(x, y)
}

ENTRY entry {
  %a = f32[8,16] parameter(0)
  %b = f32[16,4] parameter(1)
  %dot = dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %t = tanh(%dot)
  %zero = f32[] constant(0)
  %r = reduce(%t, %zero), dimensions={1}, to_apply=add
  %c = compare(%r, %r), direction=GT
  %s = slice(%t), slice={[0:8:2], [1:4]}
  %tr = transpose(%s), dimensions={1,0}
  %cat = concatenate(%tr, %tr), dimensions={0}
  %p = pad(%cat, %zero), padding=1_1x0_2_1
  %sel = select(%c, %r, %r)
  %tup = tuple(%sel, %p)
  %g = get-tuple-element(%tup), index=1
  ROOT %out = tuple(%r, %c, %g)
}
"""

WRITTEN = {
    "%dot = dot": "%dot = f32[8,4] dot",
    "%t = tanh": "%t = f32[8,4] tanh",
    "%r = reduce": "%r = f32[8] reduce",
    "%c = compare": "%c = pred[8] compare",
    "%s = slice": "%s = f32[4,3] slice",
    "%tr = transpose": "%tr = f32[3,4] transpose",
    "%cat = concatenate": "%cat = f32[6,4] concatenate",
    "%p = pad": "%p = f32[8,9] pad",
    "%sel = select": "%sel = f32[8] select",
    "%tup = tuple": "%tup = (f32[8], f32[8,9]) tuple",
    "%g = get-tuple-element": "%g = f32[8,9] get-tuple-element",
    "ROOT %out = tuple": "ROOT %out = (f32[8], pred[8], f32[8,9]) tuple",
    "ROOT s = add": "ROOT s = f32[] add",
}


def test_result_shapes_left_out_are_inferred_as_xla_does() -> None:
    written = INFERRED
    for short, full in WRITTEN.items():
        written = written.replace(short, full)
    got, stats = imported(INFERRED)
    want, _ = imported(written)
    assert stats.constructs["inferred result shape"] == 12
    assert got == want


@pytest.mark.parametrize(
    "line, message",
    [
        ("  %bad = reshape(%a)", "test.hlo:14:10: error: reshape needs its result shape written"),
        ("  %bad = parameter(2)", "test.hlo:14:10: error: parameter needs its shape written"),
    ],
)
def test_shapes_that_do_not_follow_from_operands_must_be_written(line: str, message: str) -> None:
    text = INFERRED.replace("  %t = tanh(%dot)\n", f"  %t = tanh(%dot)\n{line}\n")
    text = text.replace("ROOT %out = tuple(%r, %c, %g)", "ROOT %out = tuple(%r, %c, %g, %bad)")
    with pytest.raises(DiagnosticError) as info:
        import_hlo_text(text, "test.hlo")
    assert message in str(info.value)
