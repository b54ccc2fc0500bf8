"""
Source locations of imported ops (`Operation.location`, issue #12 item 1): every op an
importer creates carries `FileLineColLoc` of the source op in the text read, fused with
the origin the text records (JAX's `loc(...)` in StableHLO, `metadata={op_name=...}` in
HLO text); they print with `--print-debuginfo` and change nothing otherwise.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from shardc.frontends.hlo_text import import_hlo_text
from shardc.frontends.locations import (
    JaxLocations,
    LocationReader,
    LocationSyntaxError,
    hlo_metadata_location,
    scan_locations,
    strip_locations,
)
from shardc.frontends.stablehlo import import_stablehlo
from shardc.tools import shardc_import
from xdsl.dialects.builtin import (
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    ModuleOp,
    NameLoc,
    UnknownLoc,
)
from xdsl.ir import Attribute, Operation
from xdsl.printer import Printer

CORPUS = Path(__file__).parent / "corpus"
JAX_SCRIPT = "scripts/make_frontend_corpus.py"


def parts(loc: Attribute) -> list[Attribute]:
    """Every location nested in `loc` (itself first)."""
    out = [loc]
    if isinstance(loc, FusedLoc):
        for inner in loc.locations:  # pyright: ignore
            out += parts(inner)
    elif isinstance(loc, NameLoc):
        out += parts(loc.location)
    elif isinstance(loc, CallSiteLoc):
        out += parts(loc.callee) + parts(loc.caller)
    return out


def names(loc: Attribute) -> list[str]:
    return [p.desc.data for p in parts(loc) if isinstance(p, NameLoc)]


def files(loc: Attribute) -> list[tuple[str, int, int]]:
    return [
        (p.filename.data, p.line.data, p.column.data)
        for p in parts(loc)
        if isinstance(p, FileLineColLoc)
    ]


def printed(module: ModuleOp, debuginfo: bool) -> str:
    out = io.StringIO()
    Printer(stream=out, print_debuginfo=debuginfo).print_op(module)
    return out.getvalue()


def imported(name: str):
    path = f"tests/frontends/corpus/{name}"
    return import_stablehlo((CORPUS / name).read_text(), path), path


# StableHLO with JAX's debug locations ------------------------------------------------------


def test_attention_ops_name_the_python_file_line_and_jax_op() -> None:
    result, path = imported("attention.debuginfo.mlir")
    dots = [op for op in result.module.walk() if op.name == "hlo.dot"]
    first = dots[0].location
    assert isinstance(first, FusedLoc)
    position, origin = first.locations  # pyright: ignore
    # where the op was written in the file shardc read (line 9: the first dot_general)
    assert isinstance(position, FileLineColLoc)
    assert (position.filename.data, position.line.data, position.column.data) == (path, 9, 5)
    # and where JAX traced it: the op name and the Python file and line
    assert names(origin)[0] == "jit(attention)/dot_general"
    python = [f for f in files(origin) if f[0].endswith(JAX_SCRIPT)]
    assert python and python[0][1:] == (106, 20)


def test_every_imported_op_has_a_location() -> None:
    result, path = imported("attention.debuginfo.mlir")
    for op in result.module.walk():
        assert not isinstance(op.location, UnknownLoc), op.name
        assert files(op.location)[0][0] == path


def test_ops_without_a_jax_location_get_their_position_only() -> None:
    result, path = imported("attention.stablehlo.mlir")
    for op in result.module.walk():
        assert isinstance(op.location, FileLineColLoc), op.name
        assert op.location.filename.data == path


def test_manual_computation_bodies_keep_their_jax_locations() -> None:
    result, _ = imported("shard_map_psum.debuginfo.mlir")
    (all_reduce,) = [op for op in result.module.walk() if op.name == "collective.all_reduce"]
    assert names(all_reduce.location)[:1] == ["psum_invariant"]
    assert files(all_reduce.location)[0][1:] == (14, 7)


def test_print_debuginfo_shows_them_and_plain_printing_is_unchanged() -> None:
    result, path = imported("attention.debuginfo.mlir")
    with_debuginfo = printed(result.module, True)
    assert f'"{path}":9:5' in with_debuginfo
    assert '"jit(attention)/dot_general"' in with_debuginfo
    assert f'{JAX_SCRIPT}":106:20' in with_debuginfo
    plain = printed(result.module, False)
    assert "loc(" not in plain
    no_debuginfo, _ = imported("attention.stablehlo.mlir")
    assert plain == printed(no_debuginfo.module, False)


def test_shardc_import_print_debuginfo(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(CORPUS / "shard_map_psum.debuginfo.mlir")
    assert shardc_import.main([path, "--print-debuginfo"]) == 0
    out = capsys.readouterr().out
    assert '"psum_invariant"' in out and f'"{path}":14:7' in out
    assert shardc_import.main([path]) == 0
    assert "loc(" not in capsys.readouterr().out


def test_a_location_survives_cloning() -> None:
    result, _ = imported("attention.debuginfo.mlir")
    dot = next(op for op in result.module.walk() if op.name == "hlo.dot")
    assert dot.clone().location == dot.location


# Reading MLIR locations --------------------------------------------------------------------


def read(body: str, aliases: dict[str, str] | None = None) -> Attribute:
    return LocationReader(aliases or {}).read(body)


def test_location_syntax() -> None:
    assert isinstance(read("unknown"), UnknownLoc)
    assert files(read('"m.py":12:3')) == [("m.py", 12, 3)]
    assert files(read('"m.py":12:3 to :20')) == [("m.py", 12, 3)]  # a range: its start
    assert files(read('"m.py":12:3 to 14:2')) == [("m.py", 12, 3)]
    assert names(read('"f"("m.py":1:2)')) == ["f"] and files(read('"f"("m.py":1:2)'))
    site = read('callsite("g"("a.py":1:1) at "h"("b.py":2:2))')
    assert isinstance(site, CallSiteLoc) and names(site) == ["g", "h"]
    fused = read('fused<"meta">["a", "b"]')
    assert isinstance(fused, FusedLoc) and names(fused) == ["a", "b"]
    assert names(read('"quote\\"d"')) == ['quote"d']


def test_aliases_are_resolved_whatever_their_order() -> None:
    aliases = {"#loc2": '"f"(#loc1)', "#loc1": '"m.py":3:4 to :9', "#loc3": "#loc3"}
    assert names(read("#loc2", aliases)) == ["f"]
    assert files(read("#loc2", aliases)) == [("m.py", 3, 4)]
    with pytest.raises(LocationSyntaxError):
        read("#loc3", aliases)  # recursive
    with pytest.raises(LocationSyntaxError):
        read("#nope", aliases)


def test_scan_keeps_what_strip_blanks() -> None:
    text = '%0 = a.b %x : f32 loc(#loc1)\n#loc1 = loc("x"(callsite("f" at "g")))\n'
    scanned = scan_locations(text)
    assert scanned.text == strip_locations(text)
    assert [u.body for u in scanned.uses] == ["#loc1"]
    assert scanned.aliases == {"#loc1": '"x"(callsite("f" at "g"))'}


def test_an_op_without_its_own_location_takes_none_of_its_body() -> None:
    text = (
        'a.region {\n  a.inner loc("inner")\n}\n'  # no loc after the region op
        'a.next loc("next")\n'
    )
    locs = JaxLocations(scan_locations(text))
    region, inner, nxt = 0, text.index("a.inner"), text.index("a.next")
    assert locs.after_op(region, nxt) is None
    assert names(locs.after_op(inner, None)) == ["inner"]  # pyright: ignore
    assert names(locs.after_op(nxt, None)) == ["next"]  # pyright: ignore


def test_an_unreadable_location_is_dropped() -> None:
    locs = JaxLocations(scan_locations("a.op loc(frobnicate)\n"))
    assert locs.after_op(0, None) is None


# HLO text metadata -------------------------------------------------------------------------


def test_hlo_metadata() -> None:
    loc = hlo_metadata_location('{op_name="jit(f)/dot" source_file="/m.py" source_line=12}')
    assert names(loc) == ["jit(f)/dot"] and files(loc) == [("/m.py", 12, 0)]  # pyright: ignore
    assert names(hlo_metadata_location('{op_name="x" stack_frame_id=3}')) == ["x"]  # pyright: ignore
    assert hlo_metadata_location("{stack_frame_id=3}") is None


def test_hlo_text_ops_carry_their_instruction_and_op_name() -> None:
    path = "tests/frontends/corpus/attention.hlo.txt"
    text = (CORPUS / "attention.hlo.txt").read_text()
    result = import_hlo_text(text, path)
    ops: list[Operation] = list(result.module.walk())
    for op in ops:
        assert files(op.location)[0][0] == path, op.name
    dot = next(op for op in ops if op.name == "hlo.dot" and names(op.location))
    line = files(dot.location)[0][1]
    assert "jit(attention)/dot_general" in text.splitlines()[line - 1]
    assert names(dot.location) == ["jit(attention)/dot_general"]


def test_jax_locations_reach_the_trace_and_the_report_end_to_end(tmp_path: Path) -> None:
    """JAX export -> shardc-import -> spmd-pipeline -> run: the Perfetto args and the
    peak-memory location name the Python line each op came from (issue 12)."""
    import json

    import shardc
    from shardc.frontends.stablehlo import import_stablehlo

    path = CORPUS / "attention.debuginfo.mlir"
    module = import_stablehlo(path.read_text(), str(path)).module
    result = shardc.run(shardc.compile(module, "spmd-pipeline"), timing_only=True)
    trace = tmp_path / "trace.json"
    result.trace(str(trace))
    events = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]
    sources = {e["args"]["source"] for e in events if "source" in e["args"]}
    assert any("make_frontend_corpus.py:" in s and "dot_general" in s for s in sources), sources
    peak = result.report["peak_memory_at"]
    assert "(from " in peak and "make_frontend_corpus.py:" in peak, peak
