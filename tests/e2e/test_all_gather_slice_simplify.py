"""all-gather-slice-simplify replaces own-block slices of all_gathers, values kept exactly."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.passes.all_gather_slice_simplify import AllGatherSliceSimplifyPass
from shardc.tests.e2e.differential import check_pass, count_ops

FILECHECK = (
    Path(__file__).parents[1] / "filecheck" / "transforms" / "all-gather-slice-simplify.mlir"
)
CHUNKS = FILECHECK.read_text().split("// -----")

MESHES = [
    (("x", 4),),
    (("x", 8),),
    (("a", 2), ("b", 2)),
    (("a", 2), ("b", 4)),
    (("a", 2), ("b", 2), ("c", 2)),
]


@pytest.mark.parametrize("index", range(len(CHUNKS)))
def test_filecheck_programs_keep_their_values(index: int) -> None:
    check_pass(CHUNKS[index], AllGatherSliceSimplifyPass())


@st.composite
def gather_then_slice(draw: st.DrawFn) -> tuple[str, bool]:
    """
    all_gather over some axes, then a dynamic_slice at (this device's block, or a shifted
    one) + a constant, possibly of part of the block, possibly through a reshape that
    flattens the leading dimensions. Returns (text, whether it must simplify).
    """
    mesh = draw(st.sampled_from(MESHES))
    names = [n for n, _ in mesh]
    size = dict(mesh)
    axes = list(draw(st.permutations(names)))[: draw(st.integers(1, len(names)))]
    g = math.prod(size[a] for a in axes)
    dtype = draw(st.sampled_from(["f32", "i32", "bf16", "i1"]))
    rank = draw(st.integers(1, 3))
    x_shape = [draw(st.integers(1, 4)) for _ in range(rank)]
    dim = draw(st.integers(0, rank - 1))
    gathered = list(x_shape)
    gathered[dim] *= g

    def t(s: list[int]) -> str:
        return f"tensor<{'x'.join(map(str, s))}x{dtype}>"

    group = ", ".join(f'"{a}"' for a in axes)
    body = [
        f"  %ag = collective.all_gather %x on @mesh[{group}], dim = {dim} : ({t(x_shape)}) -> {t(gathered)}",
        "  %zero = hlo.constant dense<0> : tensor<i32>",
    ]
    index = None
    for i, a in enumerate(axes):
        body.append(f'  %i{i} = spmd.axis_index @mesh["{a}"] : tensor<i32>')
        if index is None:
            index = f"%i{i}"
            continue
        body.append(f"  %s{i} = hlo.constant dense<{size[a]}> : tensor<i32>")
        body.append(f"  %m{i} = hlo.mul {index}, %s{i} : tensor<i32>")
        body.append(f"  %x{i} = hlo.add %m{i}, %i{i} : tensor<i32>")
        index = f"%x{i}"
    shift = draw(st.sampled_from([0, 0, 0, 1]))
    if shift:
        body.append(f"  %sh = hlo.constant dense<{shift}> : tensor<i32>")
        body.append(f"  %shifted = hlo.add {index}, %sh : tensor<i32>")
        index = "%shifted"
    simplifies = shift == 0 or g == 1
    flatten = all(s == 1 for s in gathered[:dim]) and draw(st.booleans())
    if flatten:
        numel = math.prod(x_shape)
        flat = [math.prod(gathered)]
        body.append(f"  %r = hlo.reshape %ag : ({t(gathered)}) -> {t(flat)}")
        body.append(f"  %n = hlo.constant dense<{numel}> : tensor<i32>")
        body.append(f"  %off = hlo.mul {index}, %n : tensor<i32>")
        body.append(
            f"  %ds = hlo.dynamic_slice %r [%off] sizes = [{numel}] : "
            f"({t(flat)}, tensor<i32>) -> {t([numel])}"
        )
        out = [numel]
    else:
        block = x_shape[dim]
        c = draw(st.integers(0, block - 1))
        part = draw(st.integers(1, block - c))
        body.append(f"  %b = hlo.constant dense<{block}> : tensor<i32>")
        body.append(f"  %base = hlo.mul {index}, %b : tensor<i32>")
        body.append(f"  %c = hlo.constant dense<{c}> : tensor<i32>")
        body.append("  %off = hlo.add %base, %c : tensor<i32>")
        out = list(x_shape)
        out[dim] = part
        offsets = ", ".join("%off" if d == dim else "%zero" for d in range(rank))
        idx = ", ".join(["tensor<i32>"] * rank)
        body.append(
            f"  %ds = hlo.dynamic_slice %ag [{offsets}] sizes = [{', '.join(map(str, out))}] : "
            f"({t(gathered)}, {idx}) -> {t(out)}"
        )
        simplifies = simplifies or c + part <= block and g == 1
    text = "\n".join(
        [
            "spmd.mesh @mesh = <[" + ", ".join(f'"{n}"={s}' for n, s in mesh) + "]>",
            f"func.func @main(%x: {t(x_shape)}) -> {t(out)} attributes {{spmd.partitioned, spmd.per_device_io}} {{",
            *body,
            f"  func.return %ds : {t(out)}",
            "}",
        ]
    )
    return text, simplifies


@settings(max_examples=30, deadline=None)
@given(gather_then_slice())
def test_generated_programs(case: tuple[str, bool]) -> None:
    text, simplifies = case
    after = check_pass(text, AllGatherSliceSimplifyPass())
    if simplifies:
        assert count_ops(after, "collective.all_gather") == 0, text
