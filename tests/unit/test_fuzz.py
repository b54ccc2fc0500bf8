"""
Bad input never ends in a traceback or a hang (issue 2, "Bad input").

Random mutations of valid programs (characters or tokens deleted, duplicated, swapped,
replaced; truncation; inserted punctuation, keywords, huge numbers, deep nesting) are fed
to `parse_and_verify` and to `shardc-opt`'s `main()`. The only allowed outcomes are:

* success, and then the program prints and round-trips like any valid one;
* one `DiagnosticError`: `file:line:col: error: message`, the source line, a caret under
  the column (exit status 1 from the driver, no output file).

Each example runs under a wall-clock limit (a hang fails the test instead of blocking it).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.diagnostics import DiagnosticError
from shardc.parsing import parse_and_verify
from shardc.tests.fuzz.harness import time_limit
from shardc.tests.unit.strategies import (
    collective_programs,
    context,
    hlo_programs,
    parse,
    print_module,
)
from shardc.tools.shardc_opt import main

TIME_LIMIT_S = 10

SETTINGS = settings(
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

TOKEN = re.compile(
    r'%[\w.$-]+|@[\w.$-]+|"[^"\n]*"|[A-Za-z_][\w.$-]*|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|->|\S'
)
INSERTS = (
    *'[](){}<>,:=%@#!^"x?\\',
    "->",
    "1e999",
    "-1e999",
    "1.0e999",
    "99999999999999999999999999",
    "-9223372036854775809",
    "9223372036854775808",
    "0x7fffffff",
    "nan",
    "inf",
    "dense",
    "dense<",
    "tensor",
    "tensor<",
    "tensor<?xf32>",
    "tensor<*xf32>",
    "memref<4xf32>",
    "hlo.add",
    "hlo.dot",
    "func.func",
    "func.return",
    "spmd.mesh",
    "spmd.constraint",
    "collective.done",
    "collective.all_gather_start",
    '"hlo.slice"()',
    "on",
    "groups",
    "dims",
    "sizes",
    "unreduced",
    "contracting_dims",
    "batching_dims",
    "i1",
    "f16",
    "i8",
    "#spmd.sharding<",
    "!collective.future<",
    "// -----",
    "\x00",
    "\u00e9",
    "\u2028",
    "\t",
    "\n",
    "[" * 300,
    "(" * 300,
    "<" * 300,
    "{" * 300,
    "tensor<" * 200,
    '"' + "a" * 200,
)


def mutate(text: str, draw: Callable[[st.SearchStrategy[Any]], Any]) -> str:
    """One random edit of `text`."""
    kind = draw(st.sampled_from(("chars", "dup", "swap", "truncate", "insert", "tokens")))
    n = len(text)
    if kind == "chars" and n:
        i = draw(st.integers(0, n - 1))
        return text[:i] + text[i + draw(st.integers(1, 6)) :]
    if kind == "dup" and n:
        i = draw(st.integers(0, n - 1))
        j = min(n, i + draw(st.integers(1, 30)))
        return text[:j] + text[i:j] + text[j:]
    if kind == "swap" and n > 1:
        i = draw(st.integers(0, n - 2))
        j = draw(st.integers(i + 1, n - 1))
        return text[:i] + text[j] + text[i + 1 : j] + text[i] + text[j + 1 :]
    if kind == "truncate":
        return text[: draw(st.integers(0, n))]
    if kind == "insert":
        i = draw(st.integers(0, n))
        return text[:i] + draw(st.sampled_from(INSERTS)) + text[i:]
    tokens = list(TOKEN.finditer(text))
    if not tokens:
        return text
    m = tokens[draw(st.integers(0, len(tokens) - 1))]
    action = draw(st.sampled_from(("delete", "duplicate", "replace", "swap")))
    if action == "delete":
        return text[: m.start()] + text[m.end() :]
    if action == "duplicate":
        return text[: m.end()] + " " + m.group() + text[m.end() :]
    other = tokens[draw(st.integers(0, len(tokens) - 1))]
    if action == "replace":
        new = draw(st.one_of(st.just(other.group()), st.sampled_from(INSERTS)))
        return text[: m.start()] + new + text[m.end() :]
    a, b = sorted((m, other), key=lambda t: t.start())
    if a.start() == b.start():
        return text
    return text[: a.start()] + b.group() + text[a.end() : b.start()] + a.group() + text[b.end() :]


@st.composite
def mutated_programs(draw: Callable[[st.SearchStrategy[Any]], Any]) -> str:
    text = draw(st.one_of(hlo_programs(max_ops=8), collective_programs(max_ops=8)))
    form = draw(st.sampled_from(("as generated", "custom", "generic")))
    if form != "as generated":
        text = print_module(parse(text), generic=form == "generic")
    for _ in range(draw(st.integers(1, 3))):
        text = mutate(text, draw)
    return text


DIAGNOSTIC = re.compile(
    r"^(?P<file>[^\n]+?):(?P<line>\d+):(?P<col>\d+): error: (?P<msg>\S[^\n]*)$", re.M
)


def assert_one_located_diagnostic(message: str, text: str | None, filename: str) -> None:
    """
    `file:line:col: error: msg` (xDSL's constraint messages continue on a second line),
    then the source line, then a caret under the column.
    """
    lines = message.split("\n")
    assert 3 <= len(lines) <= 4, f"expected a diagnostic, the source line, a caret:\n{message}"
    assert len(DIAGNOSTIC.findall(message)) == 1, message
    head = DIAGNOSTIC.fullmatch(lines[0])
    assert head is not None, f"not a located diagnostic: {lines[0]!r}"
    assert head["file"] == filename
    line, col = int(head["line"]), int(head["col"])
    assert "Traceback" not in message
    assert re.fullmatch(r" *\^+", lines[-1]), f"no caret line: {lines[-1]!r}"
    assert lines[-1].index("^") == col - 1, "the caret is not under the column"
    if text is not None:
        source_lines = text.split("\n")
        assert 1 <= line <= len(source_lines)
        assert lines[-2] == source_lines[line - 1], f"the quoted source line is not line {line}"


def check_parse_outcome(text: str) -> None:
    with time_limit(TIME_LIMIT_S):
        try:
            module = parse_and_verify(context(), text, "fuzz.mlir")
        except DiagnosticError as e:
            assert_one_located_diagnostic(str(e), text, "fuzz.mlir")
            return
        custom = print_module(module)
        assert print_module(parse(custom)) == custom
        generic = print_module(module, generic=True)
        assert print_module(parse(generic)) == custom


@SETTINGS
@given(mutated_programs())
def test_mutated_programs_parse_or_give_one_located_diagnostic(text: str):
    check_parse_outcome(text)


def run_main(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def check_driver_outcome(text: str, extra: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in.mlir")
        dst = os.path.join(tmp, "out.mlir")
        with open(src, "w", encoding="utf-8") as f:
            f.write(text)
        with time_limit(TIME_LIMIT_S):
            code, out, err = run_main([src, "-o", dst, *extra])
        assert code in (0, 1), err
        assert "Traceback" not in err + out
        assert "internal error" not in err, err
        if code == 0:
            assert os.path.exists(dst) and err == ""
            return
        assert not os.path.exists(dst), "an output file was written by a failing run"
        assert os.listdir(tmp) == ["in.mlir"], "a temporary file was left behind"
        assert out == ""
        assert len(DIAGNOSTIC.findall(err)) == 1, err
        # with --split-input-file the line numbers are those of the whole file
        assert_one_located_diagnostic(err.rstrip("\n"), text, src)


@settings(SETTINGS, max_examples=40)
@given(
    mutated_programs(),
    st.sampled_from(([], ["--print-op-generic"], ["-p", "canonicalize"], ["--split-input-file"])),
)
def test_mutated_programs_through_the_driver(text: str, extra: list[str]):
    check_driver_outcome(text, extra)


PIPELINE_PIECES = (
    "canonicalize",
    "cse",
    "dce",
    "spmd-propagate",
    "nosuchpass",
    ",",
    "{",
    "}",
    "=",
    " ",
    '"',
    "threshold-bytes",
    "max-count",
    "collective-combine",
    "1",
    "-5",
    "abc",
    "1.5",
    "true",
)


@settings(SETTINGS, max_examples=60)
@given(st.lists(st.sampled_from(PIPELINE_PIECES), min_size=1, max_size=8))
def test_random_pass_pipelines(pieces: list[str]):
    spec = "".join(pieces)
    examples = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
    with time_limit(TIME_LIMIT_S):
        code, out, err = run_main([os.path.join(examples, "megatron_mlp.mlir"), f"--passes={spec}"])
    assert code in (0, 1), err
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 1:
        assert len(DIAGNOSTIC.findall(err)) == 1, err
        lines = err.rstrip("\n").split("\n")
        head = DIAGNOSTIC.fullmatch(lines[0])
        assert head is not None, err
        if head["file"] == "<pass-pipeline>":
            assert lines[1] == spec
            assert lines[2].index("^") == int(head["col"]) - 1


# Inputs that once hung the parser or escaped as exceptions -------------------------

PROGRAM = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = hlo.add %x, %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""


@pytest.mark.parametrize(
    "text",
    [
        # an unterminated string literal before a long line: exponential backtracking in
        # xDSL's lexer (it hung for hours)
        PROGRAM.replace("%0 =", '%0" =') + "// " + "x" * 200 + "\n",
        '"builtin.module' + " = hlo.add %x, %x : tensor<4xf32>" * 4,
        PROGRAM.replace("hlo.add", 'spmd.constraint %x <@m, [{"a}]> : tensor<4xf32> //'),
        # the first token cannot be lexed
        "\\",
        ".pmds",
        "",
        "// only a comment\n",
        "\x00",
        # nesting deeper than Python's recursion limit
        PROGRAM.replace("tensor<4xf32>", "tensor<" * 3000, 1),
        PROGRAM.replace(
            ": tensor<4xf32>\n  func", "{a = " + "[" * 3000 + "} : tensor<4xf32>\n  func"
        ),
        # values out of range for their attribute
        PROGRAM.replace("hlo.add %x, %x", "hlo.iota dim = 99999999999999999999999"),
        PROGRAM.replace("hlo.add %x, %x", "hlo.constant dense<1.0e10>").replace("f32", "f16"),
        PROGRAM.replace("hlo.add %x, %x", "hlo.constant dense<99999999999999999999>").replace(
            "f32", "i32"
        ),
        PROGRAM.replace(
            "hlo.add %x, %x : tensor<4xf32>",
            "hlo.slice %x [0:99999999999999999999] : (tensor<4xf32>) -> tensor<4xf32>",
        ),
        # a type the declarative format rejects after parsing
        PROGRAM.replace(": tensor<4xf32>\n  func", ": (tensor<4xf32>) -> tensor<4xf32>\n  func"),
        PROGRAM.replace("hlo.add %x, %x", "hlo.convert %x : (tensor<4xf32>) -> memref<4xf32> //"),
    ],
)
def test_regressions(text: str):
    check_parse_outcome(text)
    check_driver_outcome(text, [])


def test_unknown_op_and_attribute_are_located_at_their_name():
    with pytest.raises(DiagnosticError) as info:
        parse(PROGRAM.replace("hlo.add", "hlo.frobnicate"), "f.mlir")
    assert str(info.value).startswith(
        "f.mlir:2:8: error: Operation hlo.frobnicate is not registered"
    )
    text = PROGRAM.replace("%x: tensor<4xf32>", "%x: tensor<4xf32> {a = #spmd.nope<1>}")
    with pytest.raises(DiagnosticError) as info:
        parse(text, "f.mlir")
    assert str(info.value).startswith("f.mlir:1:40: error: 'spmd.nope' is not registered")
