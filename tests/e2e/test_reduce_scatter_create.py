"""reduce-scatter-create turns all_reduce + own-block slice into reduce_scatter, values kept."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.dialects import collective
from shardc.passes.reduce_scatter_create import ReduceScatterCreatePass
from shardc.tests.e2e.differential import check_pass, count_ops, partition

FILECHECK = Path(__file__).parents[1] / "filecheck" / "transforms" / "reduce-scatter-create.mlir"
EXAMPLES = Path(__file__).parents[2] / "examples"
CHUNKS = FILECHECK.read_text().split("// -----")
REORDERED = ("@multi_axis",)
"""Chunks whose reduce_scatter ranks devices differently: floats sum in another order."""


@pytest.mark.parametrize("index", range(len(CHUNKS)))
def test_filecheck_programs_keep_their_values(index: int) -> None:
    chunk = CHUNKS[index]
    exact = not any(name in chunk for name in REORDERED)
    check_pass(chunk, ReduceScatterCreatePass(), exact=exact)


def test_partitioner_all_reduce_then_minor_major_split() -> None:
    """
    A partial sum over ["a", "b"] made replicated, then split {"b", "a"}: the partitioner
    emits all_reduce + dynamic_slice (the next split axis is not the reduced one), which
    becomes one reduce_scatter over ["b", "a"]. (Contracting 64: gathering both operands
    instead would move more bytes; at 16 their two all_gathers, issued together, are
    faster than the all_reduce and move fewer, `timing.engine_window`, and are chosen.)
    """
    text = partition(
        """
spmd.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%x: tensor<8x64xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"a", "b"}]>},
                %w: tensor<64x12xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>})
    -> (tensor<8x12xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b", "a"}, {}]>}) {
  %y = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<8x64xf32>, tensor<64x12xf32>) -> tensor<8x12xf32>
  %r = spmd.constraint %y <@mesh, [{}, {}]> : tensor<8x12xf32>
  %s = spmd.constraint %r <@mesh, [{"b", "a"}, {}]> : tensor<8x12xf32>
  func.return %s : tensor<8x12xf32>
}
"""
    )
    assert count_ops(check_pass(text, []), "collective.all_reduce") == 1
    after = check_pass(text, ReduceScatterCreatePass(), exact=False)
    assert count_ops(after, "collective.all_reduce") == 0
    (rs,) = [op for op in after.walk() if isinstance(op, collective.ReduceScatterOp)]
    assert rs.axes == ("b", "a")


@pytest.mark.parametrize(
    "name", ["megatron_mlp.mlir", "dp_grads.mlir", "matmul_reduce_scatter.mlir"]
)
def test_examples_after_partitioning(name: str) -> None:
    check_pass(partition((EXAMPLES / name).read_text()), ReduceScatterCreatePass(), exact=False)


MESHES = [
    (("x", 4),),
    (("x", 8),),
    (("a", 2), ("b", 2)),
    (("a", 2), ("b", 4)),
    (("a", 2), ("b", 2), ("c", 2)),
]


@st.composite
def all_reduce_then_slice(draw: st.DrawFn) -> tuple[str, bool]:
    """
    A level-S program: all_reduce over some mesh axes, maybe reshapes/transposes, then a
    dynamic_slice of this device's block by the row-major index over the axes (in the
    all_reduce's order or another), spelled as the partitioner does or as a table lookup.
    Returns (text, whether floats must come out bit-identical: same summation order).
    """
    mesh = draw(st.sampled_from(MESHES))
    names = [n for n, _ in mesh]
    size = dict(mesh)
    axes = draw(st.permutations(names).map(lambda p: p[: max(1, len(p) - 1)]))
    axes = axes[: draw(st.integers(1, len(axes)))]
    order = draw(st.permutations(axes))
    g = math.prod(size[a] for a in axes)
    dtype = draw(st.sampled_from(["f32", "i32", "bf16"]))
    kind = draw(st.sampled_from(["add", "max", "min", "mul"] if dtype == "i32" else ["add", "max"]))
    rank = draw(st.integers(1, 3))
    shape = [draw(st.sampled_from([1, 2, 3])) for _ in range(rank)]
    dim = draw(st.integers(0, rank - 1))
    block = draw(st.integers(1, 3))
    shape[dim] = block * g + draw(st.sampled_from([0, 0, 0, 1]))  # sometimes non-uniform

    def t(s: list[int]) -> str:
        return f"tensor<{'x'.join(map(str, s))}x{dtype}>"

    lines = ["spmd.mesh @mesh = <[" + ", ".join(f'"{n}"={s}' for n, s in mesh) + "]>"]
    body: list[str] = []
    group = ", ".join(f'"{a}"' for a in axes)
    body.append(f"  %ar = collective.all_reduce {kind} %p on @mesh[{group}] : {t(shape)}")
    value, cur = "%ar", list(shape)
    # Data movement in between: a transpose moving `dim`, or a reshape splitting a dim.
    if draw(st.booleans()) and rank >= 2:
        perm = draw(st.permutations(range(rank)))
        new = [cur[p] for p in perm]
        body.append(
            f"  %t = hlo.transpose {value}, dims = [{', '.join(map(str, perm))}] : ({t(cur)}) -> {t(new)}"
        )
        value, cur, dim = "%t", new, list(perm).index(dim)
    if draw(st.booleans()):
        new = [1, *cur]
        body.append(f"  %rs = hlo.reshape {value} : ({t(cur)}) -> {t(new)}")
        value, cur, dim = "%rs", new, dim + 1
    # The shard index over `order`, row-major.
    body.append("  %zero = hlo.constant dense<0> : tensor<i32>")
    index = None
    for i, a in enumerate(order):
        body.append(f'  %i{i} = spmd.axis_index @mesh["{a}"] : tensor<i32>')
        if index is None:
            index = f"%i{i}"
            continue
        body.append(f"  %s{i} = hlo.constant dense<{size[a]}> : tensor<i32>")
        body.append(f"  %m{i} = hlo.mul {index}, %s{i} : tensor<i32>")
        body.append(f"  %x{i} = hlo.add %m{i}, %i{i} : tensor<i32>")
        index = f"%x{i}"
    if draw(st.booleans()):
        # XLA's table lookup: offsets[index].
        table = ", ".join(str(q * block) for q in range(g))
        body.append(f"  %table = hlo.constant dense<[{table}]> : tensor<{g}xi32>")
        body.append(
            f"  %look = hlo.dynamic_slice %table [{index}] sizes = [1] : (tensor<{g}xi32>, tensor<i32>) -> tensor<1xi32>"
        )
        body.append("  %off = hlo.reshape %look : (tensor<1xi32>) -> tensor<i32>")
    else:
        body.append(f"  %blk = hlo.constant dense<{block}> : tensor<i32>")
        body.append(f"  %off = hlo.mul {index}, %blk : tensor<i32>")
    sizes = list(cur)
    sizes[dim] = block
    offsets = ", ".join("%off" if d == dim else "%zero" for d in range(len(cur)))
    idx_types = ", ".join(["tensor<i32>"] * len(cur))
    body.append(
        f"  %ds = hlo.dynamic_slice {value} [{offsets}] sizes = [{', '.join(map(str, sizes))}] : "
        f"({t(cur)}, {idx_types}) -> {t(sizes)}"
    )
    lines.append(
        f"func.func @main(%p: {t(shape)}) -> {t(sizes)} "
        "attributes {spmd.partitioned, spmd.per_device_io} {"
    )
    text = "\n".join([*lines, *body, f"  func.return %ds : {t(sizes)}", "}"])
    same_order = list(order) == list(axes)
    return text, same_order or kind in ("max", "min") or dtype == "i32"


@settings(max_examples=40, deadline=None)
@given(all_reduce_then_slice())
def test_generated_programs(case: tuple[str, bool]) -> None:
    text, exact = case
    after = check_pass(text, ReduceScatterCreatePass(), exact=exact)
    assert count_ops(after, "collective.all_reduce") == 0, text
    assert count_ops(after, "collective.reduce_scatter") == 1, text
