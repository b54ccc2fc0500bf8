"""
collective-matmul: the rings of permutes and partial dots compute what the all_gather +
dot and the dot + reduce_scatter did: integers bit-identical; floats within a tight
tolerance. (For all_gather + dot every element comes from the same products summed in
the same order, but the interpreter's float dot is numpy's BLAS, whose kernel choice
depends on the operand shapes: a block of rows can differ from the same rows of the
full product in the last bit.)
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.passes.collective_matmul import CollectiveMatmulPass
from shardc.tests.e2e.differential import check_pass, count_ops

FILECHECK = Path(__file__).parents[1] / "filecheck" / "transforms" / "collective-matmul.mlir"
CHUNKS = FILECHECK.read_text().split("// -----")


@pytest.mark.parametrize(
    ("bidirectional", "f32_accumulation"), [(None, False), (False, False), (True, True)]
)
@pytest.mark.parametrize("index", range(len(CHUNKS)))
def test_filecheck_programs_keep_their_values(
    index: int, bidirectional: bool | None, f32_accumulation: bool
) -> None:
    chunk = CHUNKS[index]
    p = CollectiveMatmulPass(bidirectional=bidirectional, f32_accumulation=f32_accumulation)
    check_pass(chunk, p, exact=False)


def test_fsdp_layer_on_8_devices() -> None:
    """Megatron-style: gathered activations, column-parallel matmul, then row-parallel
    matmul whose partial sums are reduce-scattered; both become rings."""
    text = """
spmd.mesh @mesh = <["data"=2, "model"=8]>
func.func @main(%x: tensor<4x64xf32>, %w1: tensor<64x32xf32>, %w2: tensor<32x64xf32>) -> tensor<4x64xf32> attributes {spmd.partitioned, spmd.per_device_io} {
  %g = collective.all_gather %x on @mesh["model"], dim = 0 : (tensor<4x64xf32>) -> tensor<32x64xf32>
  %h = hlo.dot %g, %w1, contracting_dims = [1] x [0] : (tensor<32x64xf32>, tensor<64x32xf32>) -> tensor<32x32xf32>
  %a = hlo.tanh %h : tensor<32x32xf32>
  %y = hlo.dot %a, %w2, contracting_dims = [1] x [0] : (tensor<32x32xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  %r = collective.reduce_scatter add %y on @mesh["model"], dim = 0 : (tensor<32x64xf32>) -> tensor<4x64xf32>
  func.return %r : tensor<4x64xf32>
}
"""
    for bidi, permutes in ((False, 14), (True, 14)):
        after = check_pass(text, CollectiveMatmulPass(bidirectional=bidi), exact=False)
        assert count_ops(after, "collective.permute") == permutes
        assert count_ops(after, "collective.all_gather") == 0
        assert count_ops(after, "collective.reduce_scatter") == 0


@st.composite
def ring_programs(draw: st.DrawFn) -> tuple[str, bool, bool | None]:
    """
    all_gather + dot or dot + reduce_scatter over one axis of a 1- or 2-axis mesh, the
    collective on a free or batch dimension of either operand.
    (text, whether bit-identical, bidirectional option).
    """
    n = draw(st.integers(2, 6))
    mesh = [("x", n)] if draw(st.booleans()) else [("d", 2), ("x", n)]
    if math.prod(s for _, s in mesh) > 8:
        mesh = [("x", n)]
    dtype = draw(st.sampled_from(["f32", "i32", "bf16"]))
    batched = draw(st.booleans())
    b, m, k, p = (draw(st.integers(1, 3)) for _ in range(4))
    lhs = [b, m, k] if batched else [m, k]
    rhs = [b, k, p] if batched else [k, p]
    out = [b, m, p] if batched else [m, p]
    dims = (
        "batching_dims = [0] x [0], contracting_dims = [2] x [1]"
        if batched
        else "contracting_dims = [1] x [0]"
    )

    def t(shape: list[int]) -> str:
        return f"tensor<{'x'.join(map(str, shape))}x{dtype}>"

    bidi = draw(st.sampled_from([None, True, False]))
    variant = draw(st.sampled_from(["gather", "scatter"]))
    side = draw(st.sampled_from(["lhs", "rhs"]))
    body: list[str] = []
    if variant == "gather":
        # Gather a free (or the batch) dimension of one operand.
        shape = lhs if side == "lhs" else rhs
        choices = [0 if batched else None, len(shape) - 2 if side == "lhs" else len(shape) - 1]
        dim = draw(st.sampled_from([c for c in choices if c is not None]))
        local = list(shape)
        gathered = list(shape)
        gathered[dim] = local[dim] * n
        full_out = list(out)
        if dim == 0 and batched:
            full_out[0] *= n
            other = rhs if side == "lhs" else lhs
            other = [other[0] * n, *other[1:]]
        else:
            full_out[len(out) - 2 if side == "lhs" else len(out) - 1] *= n
            other = rhs if side == "lhs" else lhs
        args = f"%v: {t(local)}, %o: {t(other)}"
        body.append(
            f'  %g = collective.all_gather %v on @mesh["x"], dim = {dim} : ({t(local)}) -> {t(gathered)}'
        )
        operands = ("%g", "%o") if side == "lhs" else ("%o", "%g")
        types = (t(gathered), t(other)) if side == "lhs" else (t(other), t(gathered))
        body.append(
            f"  %y = hlo.dot {operands[0]}, {operands[1]}, {dims} : ({types[0]}, {types[1]}) -> {t(full_out)}"
        )
        result, result_type, exact = "%y", t(full_out), dtype == "i32"
    else:
        # Scatter a result dimension: batch, lhs free or rhs free.
        choices = ([0] if batched else []) + [len(out) - 2, len(out) - 1]
        dim = draw(st.sampled_from(choices))
        full_lhs, full_rhs, full_out = list(lhs), list(rhs), list(out)
        full_out[dim] *= n
        if batched and dim == 0:
            full_lhs[0] *= n
            full_rhs[0] *= n
        elif dim == len(out) - 2:
            full_lhs[-2] *= n
        else:
            full_rhs[-1] *= n
        kind = draw(st.sampled_from(["add", "max"] + (["mul", "min"] if dtype == "i32" else [])))
        local_out = list(out)
        args = f"%l: {t(full_lhs)}, %r: {t(full_rhs)}"
        body.append(
            f"  %y = hlo.dot %l, %r, {dims} : ({t(full_lhs)}, {t(full_rhs)}) -> {t(full_out)}"
        )
        body.append(
            f'  %s = collective.reduce_scatter {kind} %y on @mesh["x"], dim = {dim} : ({t(full_out)}) -> {t(local_out)}'
        )
        result, result_type, exact = "%s", t(local_out), dtype == "i32"
    text = "\n".join(
        [
            "spmd.mesh @mesh = <[" + ", ".join(f'"{a}"={s}' for a, s in mesh) + "]>",
            f"func.func @main({args}) -> {result_type} attributes {{spmd.partitioned, spmd.per_device_io}} {{",
            *body,
            f"  func.return {result} : {result_type}",
            "}",
        ]
    )
    return text, exact, bidi


@settings(max_examples=40, deadline=None)
@given(ring_programs(), st.booleans())
def test_generated_programs(case: tuple[str, bool, bool | None], f32_accumulation: bool) -> None:
    """bf16 partial sums round at every step by default: bf16 tolerance (2e-2 of scale)."""
    text, exact, bidi = case
    p = CollectiveMatmulPass(bidirectional=bidi, f32_accumulation=f32_accumulation)
    after = check_pass(text, p, exact=exact)
    assert count_ops(after, "collective.all_gather") == 0, text
    assert count_ops(after, "collective.reduce_scatter") == 0, text
    assert count_ops(after, "collective.permute") > 0, text


@settings(max_examples=30, deadline=None)
@given(
    st.integers(2, 6),
    st.sampled_from(["f32", "i32", "bf16"]),
    st.sampled_from(["lhs", "rhs"]),
    st.booleans(),
    st.sampled_from([None, True, False]),
)
def test_gathered_contracting_dimension(
    n: int, dtype: str, side: str, batched: bool, bidi: bool | None
) -> None:
    """The scaling book's all-gather collective matmul (issue 14): a gathered contracting
    dimension becomes a ring of partial dots summed in ring order; integers exact, floats
    within the tolerance of a sum in another order. Floats over more than two devices keep
    the all_gather: each device would add in its own ring order, and the result, replicated
    over the ring's axis, would hold copies that differ in the last bits
    (`_same_sum_everywhere`; test_partition_differential found it)."""
    b, m, k, p = 2, 3, 2, 4

    def t(shape: list[int]) -> str:
        return f"tensor<{'x'.join(map(str, shape))}x{dtype}>"

    lhs, rhs, out = (
        ([b, m, k * n], [b, k * n, p], [b, m, p]) if batched else ([m, k * n], [k * n, p], [m, p])
    )
    dims = (
        "batching_dims = [0] x [0], contracting_dims = [2] x [1]"
        if batched
        else "contracting_dims = [1] x [0]"
    )
    gathered = lhs if side == "lhs" else rhs
    dim = len(lhs) - 1 if side == "lhs" else len(rhs) - 2
    local = list(gathered)
    local[dim] = k
    other = rhs if side == "lhs" else lhs
    operands = ("%g", "%o") if side == "lhs" else ("%o", "%g")
    types = (t(gathered), t(other)) if side == "lhs" else (t(other), t(gathered))
    text = "\n".join(
        [
            f'spmd.mesh @mesh = <["x"={n}]>',
            f"func.func @main(%v: {t(local)}, %o: {t(other)}) -> {t(out)} "
            "attributes {spmd.partitioned, spmd.per_device_io} {",
            f'  %g = collective.all_gather %v on @mesh["x"], dim = {dim} : ({t(local)}) -> {t(gathered)}',
            f"  %y = hlo.dot {operands[0]}, {operands[1]}, {dims} : ({types[0]}, {types[1]}) -> {t(out)}",
            f"  func.return %y : {t(out)}",
            "}",
        ]
    )
    after = check_pass(text, CollectiveMatmulPass(bidirectional=bidi), exact=dtype == "i32")
    ring = dtype == "i32" or n == 2
    assert count_ops(after, "collective.all_gather") == (0 if ring else 1), text
    assert (count_ops(after, "collective.permute") > 0) == ring, text


@pytest.mark.parametrize(("w_split", "ring"), [('{}, {"x"}', True), ("{}, {}", False)])
def test_float_contracting_ring_only_where_the_devices_hold_different_results(
    w_split: str, ring: bool
) -> None:
    """A partitioned program (shardings on the arguments, the interpreter checks that a
    replicated result's copies agree bit for bit): with `w` split over the ring's axis the
    result is a different block per device and the f32 ring over 4 devices is taken (the
    scaling book's A[B, D_Y] x W[D, F_Y]); with `w` replicated the result would be
    replicated with copies summed in 4 different orders, so the all_gather stays."""
    w_local = "8x2" if ring else "8x8"
    out_local = "2x2" if ring else "2x8"
    text = f"""
spmd.mesh @mesh = <["x"=4]>
func.func @main(%v: tensor<2x2xf32> {{spmd.sharding = #spmd.sharding<@mesh, [{{}}, {{"x"}}]>}}, %w: tensor<{w_local}xf32> {{spmd.sharding = #spmd.sharding<@mesh, [{w_split}]>}}) -> (tensor<{out_local}xf32> {{spmd.sharding = #spmd.sharding<@mesh, [{w_split}]>}}) attributes {{spmd.partitioned}} {{
  %g = collective.all_gather %v on @mesh["x"], dim = 1 : (tensor<2x2xf32>) -> tensor<2x8xf32>
  %y = hlo.dot %g, %w, contracting_dims = [1] x [0] : (tensor<2x8xf32>, tensor<{w_local}xf32>) -> tensor<{out_local}xf32>
  func.return %y : tensor<{out_local}xf32>
}}
"""
    after = check_pass(text, CollectiveMatmulPass(bidirectional=False), exact=False)
    assert count_ops(after, "collective.all_gather") == (0 if ring else 1)
    assert count_ops(after, "collective.permute") == (3 if ring else 0)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_a_ring_counts_the_bytes_of_the_all_gather_it_replaced(bidirectional: bool) -> None:
    """`collective-stats` counts the operand bytes a device contributes: a ring's permutes
    forward the block the all_gather would have sent (later steps forward what arrived, a
    bidirectional ring sends its block both ways), so the count stays the block's 16
    bytes, not one block per permute (bench/partition_quality.py's gather_contracting v5p
    row: 768 against XLA's 256)."""
    from shardc.dialects import make_context
    from shardc.parsing import parse_and_verify
    from shardc.passes.collective_stats import CollectiveStats

    text = """
spmd.mesh @mesh = <["x"=4]>
func.func @main(%v: tensor<2x2xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>}, %w: tensor<8x2xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>}) -> (tensor<2x2xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"x"}]>}) attributes {spmd.partitioned} {
  %g = collective.all_gather %v on @mesh["x"], dim = 1 : (tensor<2x2xf32>) -> tensor<2x8xf32>
  %y = hlo.dot %g, %w, contracting_dims = [1] x [0] : (tensor<2x8xf32>, tensor<8x2xf32>) -> tensor<2x2xf32>
  func.return %y : tensor<2x2xf32>
}
"""
    module = parse_and_verify(make_context(), text, "<test>")
    assert sum(CollectiveStats.of(module).bytes.values()) == 16
    CollectiveMatmulPass(bidirectional=bidirectional).apply(make_context(), module)
    stats = CollectiveStats.of(module)
    assert stats.counts["permute"] == 3 and stats.counts["all_gather"] == 0
    assert sum(stats.bytes.values()) == 16
