"""all-reduce-reassociate merges all_reduces under matching elementwise ops, values kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.passes.all_reduce_reassociate import AllReduceReassociatePass
from shardc.tests.e2e.differential import check_pass, count_ops

FILECHECK = Path(__file__).parents[1] / "filecheck" / "transforms" / "all-reduce-reassociate.mlir"
CHUNKS = FILECHECK.read_text().split("// -----")


@pytest.mark.parametrize("converted", [False, True])
@pytest.mark.parametrize("index", range(len(CHUNKS)))
def test_filecheck_programs_keep_their_values(index: int, converted: bool) -> None:
    # Float sums are reassociated: tolerance for floats, exact for integers. A bf16
    # all_reduce moved past a convert to f32 no longer rounds to bf16: bf16 tolerance.
    chunk = CHUNKS[index]
    rtol = 2e-2 if converted and "@convert" in chunk else None
    check_pass(chunk, AllReduceReassociatePass(converted), exact=False, rtol=rtol)


OPS = {"add": "add", "mul": "mul", "max": "max", "min": "min"}


@st.composite
def trees(draw: st.DrawFn) -> tuple[str, bool]:
    """
    Random trees of elementwise ops over all_reduces (some of other kinds or groups,
    some behind reshapes, transposes, slices or an elementwise op that blocks).
    Returns (text, whether integer: then results must be bit-identical).
    """
    dtype = draw(st.sampled_from(["i32", "f32", "f64"]))
    kind = draw(st.sampled_from(["add", "max", "min"] + (["mul"] if dtype == "i32" else [])))
    t = f"tensor<4x6x{dtype}>"
    leaves = draw(st.integers(2, 6))
    body: list[str] = []
    values: list[str] = []
    for i in range(leaves):
        k = kind if draw(st.integers(0, 5)) else draw(st.sampled_from(list(OPS)))
        axes = '"a"' if draw(st.integers(0, 5)) else '"b"'
        body.append(f"  %r{i} = collective.all_reduce {k} %p{i % 3} on @mesh[{axes}] : {t}")
        v = f"%r{i}"
        move = draw(st.sampled_from(["none", "none", "reshape", "transpose", "slice", "exp"]))
        if move == "reshape":
            body.append(f"  %m{i} = hlo.reshape {v} : ({t}) -> tensor<6x4x{dtype}>")
            body.append(f"  %n{i} = hlo.reshape %m{i} : (tensor<6x4x{dtype}>) -> {t}")
            v = f"%n{i}"
        elif move == "transpose":
            body.append(
                f"  %m{i} = hlo.transpose {v}, dims = [1, 0] : ({t}) -> tensor<6x4x{dtype}>"
            )
            body.append(
                f"  %n{i} = hlo.transpose %m{i}, dims = [1, 0] : (tensor<6x4x{dtype}>) -> {t}"
            )
            v = f"%n{i}"
        elif move == "slice":
            body.append(
                f"  %m{i} = hlo.concatenate {v}, {v}, dim = 0 : ({t}, {t}) -> tensor<8x6x{dtype}>"
            )
            body.append(f"  %n{i} = hlo.slice %m{i} [2:6, 0:6] : (tensor<8x6x{dtype}>) -> {t}")
            v = f"%n{i}"
        elif move == "exp" and dtype != "i32":
            body.append(f"  %n{i} = hlo.tanh {v} : {t}")
            v = f"%n{i}"
        values.append(v)
    n = 0
    while len(values) > 1:
        i = draw(st.integers(0, len(values) - 2))
        a, b = values.pop(i), values.pop(i)
        op = kind if draw(st.integers(0, 4)) else draw(st.sampled_from(list(OPS)))
        body.append(f"  %e{n} = hlo.{op} {a}, {b} : {t}")
        values.insert(i, f"%e{n}")
        n += 1
    text = "\n".join(
        [
            'spmd.mesh @mesh = <["a"=2, "b"=2]>',
            f"func.func @main(%p0: {t}, %p1: {t}, %p2: {t}) -> {t} "
            "attributes {spmd.partitioned, spmd.per_device_io} {",
            *body,
            f"  func.return {values[0]} : {t}",
            "}",
        ]
    )
    return text, dtype == "i32"


@settings(max_examples=40, deadline=None)
@given(trees())
def test_generated_trees(case: tuple[str, bool]) -> None:
    text, _ = case
    before = count_ops(check_pass(text, []), "collective.all_reduce")
    after = check_pass(text, AllReduceReassociatePass(), exact=False)
    assert count_ops(after, "collective.all_reduce") <= before


def test_full_tree_becomes_one_all_reduce() -> None:
    leaves = [
        f'  %r{i} = collective.all_reduce add %p on @mesh["a"] : tensor<8xi32>' for i in range(8)
    ]
    adds = []
    level = [f"%r{i}" for i in range(8)]
    n = 0
    while len(level) > 1:
        nxt = []
        for a, b in zip(level[::2], level[1::2], strict=False):
            adds.append(f"  %s{n} = hlo.add {a}, {b} : tensor<8xi32>")
            nxt.append(f"%s{n}")
            n += 1
        level = nxt
    text = "\n".join(
        [
            'spmd.mesh @mesh = <["a"=4]>',
            "func.func @main(%p: tensor<8xi32>) -> tensor<8xi32> attributes {spmd.partitioned, spmd.per_device_io} {",
            *leaves,
            *adds,
            f"  func.return {level[0]} : tensor<8xi32>",
            "}",
        ]
    )
    after = check_pass(text, AllReduceReassociatePass())
    assert count_ops(after, "collective.all_reduce") == 1
