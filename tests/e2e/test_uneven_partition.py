"""
Uneven shardings (DESIGN.md "Additions"): a split dimension that its axes do not divide is
padded at the end of the last blocks, as GSPMD pads it, and the padding never reaches a
result or a reduction. Level S against level G on hypothesis-generated programs whose
arguments, results and constraints split dimensions of sizes like 3, 5, 6, 7 over 2, 4 or 8
devices. The runner fills the padding of every input block with NaN (floats), so a
padding element that leaked into a result or a reduction would show as a NaN.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import shardc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import make_context
from shardc.interpreter import io
from shardc.parsing import parse_and_verify
from shardc.tests.e2e.differential import assert_close, partition, partition_and_compare
from shardc.tests.e2e.test_partition_differential import MESHES, ProgramBuilder

CTX = make_context()
UNEVEN_SIZES = (3, 5, 6, 7, 12)


class UnevenBuilder(ProgramBuilder):
    """A `ProgramBuilder` whose shardings may split a dimension unevenly."""

    def sharding(self, shape: tuple[int, ...]) -> list[list[str]]:
        axes = [a for a, _ in self.mesh]
        order = self.draw(st.permutations(axes))
        dims: list[list[str]] = [[] for _ in shape]
        sizes = dict(self.mesh)
        for a in order:
            d = self.draw(st.integers(-1, len(shape) - 1))
            if d < 0:
                continue
            # at least as many elements as shards (the verifier's rule), else any split
            if shape[d] >= math.prod(sizes[x] for x in dims[d]) * sizes[a]:
                dims[d].append(a)
        return dims


@st.composite
def uneven_programs(draw: st.DrawFn) -> str:
    mesh = draw(st.sampled_from(MESHES))
    b = UnevenBuilder(draw, mesh, sizes=UNEVEN_SIZES)
    for _ in range(draw(st.integers(1, 2))):
        shape = (draw(st.sampled_from(UNEVEN_SIZES)), draw(st.sampled_from(UNEVEN_SIZES)))
        b.values.append((b.fresh_arg(shape), shape))
    for _ in range(draw(st.integers(1, 6))):
        b.step()
    results = draw(st.lists(st.sampled_from(b.values[-4:]), min_size=1, max_size=2))
    return b.text(results)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(uneven_programs(), st.integers(0, 3))
def test_uneven_programs_partition_to_the_same_numbers(text: str, seed: int) -> None:
    """Elementwise, dot (any dimension uneven, the contracting one too), reduce, transpose,
    reshape, slice, concatenate, broadcast, iota, constraints: level S equals level G."""
    partition_and_compare(text, seed, note=text)


MESH = 'spmd.mesh @mesh = <["a"=4, "b"=2]>\n'


CASES = {
    "uneven_to_replicated": (
        'func.func @main(%x: tensor<7x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}) -> (tensor<7x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {}]>}) {\n'
        "  func.return %x : tensor<7x6xf32>\n}"
    ),
    "uneven_to_other_axis": (
        'func.func @main(%x: tensor<7x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}) -> (tensor<7x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {"a"}]>}) {\n'
        "  func.return %x : tensor<7x6xf32>\n}"
    ),
    "uneven_to_other_dim": (
        'func.func @main(%x: tensor<7x5xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}) -> (tensor<7x5xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"a"}]>}) {\n'
        "  func.return %x : tensor<7x5xf32>\n}"
    ),
    "replicated_to_uneven": (
        'func.func @main(%x: tensor<9x6xf32>) -> (tensor<9x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>}) {\n'
        "  func.return %x : tensor<9x6xf32>\n}"
    ),
    "uneven_to_uneven_permuted": (
        'func.func @main(%x: tensor<11x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a", "b"}, {}]>}) -> (tensor<11x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b", "a"}, {}]>}) {\n'
        "  func.return %x : tensor<11x6xf32>\n}"
    ),
    "dot_contracting_uneven": (
        'func.func @main(%x: tensor<8x7xf32> {spmd.sharding = #spmd.sharding<@mesh, [{}, {"a"}]>}, %w: tensor<7x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}) -> (tensor<8x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {}]>}) {\n'
        "  %d = hlo.dot %x, %w, contracting_dims = [1] x [0] : (tensor<8x7xf32>, tensor<7x6xf32>) -> tensor<8x6xf32>\n"
        "  func.return %d : tensor<8x6xf32>\n}"
    ),
    "reduce_max_uneven": (
        'func.func @main(%x: tensor<5x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}) -> (tensor<6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}]>}) {\n'
        "  %r = hlo.reduce max %x, dims = [0] : (tensor<5x6xf32>) -> tensor<6xf32>\n"
        "  func.return %r : tensor<6xf32>\n}"
    ),
    "softmax_uneven": (
        'func.func @main(%x: tensor<6x5xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {"a"}]>}) -> (tensor<6x5xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {"a"}]>}) {\n'
        "  %m = hlo.reduce max %x, dims = [1] : (tensor<6x5xf32>) -> tensor<6xf32>\n"
        "  %mb = hlo.broadcast %m, dims = [0] : (tensor<6xf32>) -> tensor<6x5xf32>\n"
        "  %s = hlo.sub %x, %mb : tensor<6x5xf32>\n"
        "  %e = hlo.exp %s : tensor<6x5xf32>\n"
        "  %t = hlo.reduce add %e, dims = [1] : (tensor<6x5xf32>) -> tensor<6xf32>\n"
        "  %tb = hlo.broadcast %t, dims = [0] : (tensor<6xf32>) -> tensor<6x5xf32>\n"
        "  %y = hlo.div %e, %tb : tensor<6x5xf32>\n"
        "  func.return %y : tensor<6x5xf32>\n}"
    ),
    "integers_exact": (
        'func.func @main(%x: tensor<7x3xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}) -> (tensor<3xi32>, tensor<7x3xi32> {spmd.sharding = #spmd.sharding<@mesh, [{"b"}, {}]>}) {\n'
        "  %r = hlo.reduce min %x, dims = [0] : (tensor<7x3xi32>) -> tensor<3xi32>\n"
        "  %n = hlo.neg %x : tensor<7x3xi32>\n"
        "  func.return %r, %n : tensor<3xi32>, tensor<7x3xi32>\n}"
    ),
}


SH = "{spmd.sharding = #spmd.sharding<@mesh, %s>}"
A0 = SH % '[{"a"}, {}]'
B0A1 = SH % '[{"b"}, {"a"}]'
NA = SH % '[{}, {"a"}]'
A0B2 = SH % '[{"a"}, {}, {"b"}]'
CASES |= {
    "sort_along_the_even_dimension": (
        f"func.func @main(%x: tensor<7x5xf32> {A0}, %i: tensor<7x5xi32> {A0}) -> "
        f"(tensor<7x5xf32> {A0}, tensor<7x5xi32> {B0A1}) {{\n"
        "  %s, %p = hlo.sort %x, %i, dim = 1, comparator = LT, stable : "
        "(tensor<7x5xf32>, tensor<7x5xi32>) -> (tensor<7x5xf32>, tensor<7x5xi32>)\n"
        "  func.return %s, %p : tensor<7x5xf32>, tensor<7x5xi32>\n}"
    ),
    "top_k_rows_uneven": (
        f"func.func @main(%x: tensor<7x5xf32> {A0}) -> (tensor<7x2xf32> {A0}, tensor<7x2xi32>) {{\n"
        "  %t, %k = hlo.top_k %x, k = 2 : tensor<7x5xf32> -> (tensor<7x2xf32>, tensor<7x2xi32>)\n"
        "  func.return %t, %k : tensor<7x2xf32>, tensor<7x2xi32>\n}"
    ),
    "pad_and_slice_keep_uneven_rows": (
        f"func.func @main(%x: tensor<7x5xf32> {A0}, %v: tensor<f32>) -> (tensor<7x4xf32> {A0}) {{\n"
        "  %p = hlo.pad %x, %v, low = [0, 1], high = [0, 2], interior = [0, 0] : "
        "(tensor<7x5xf32>, tensor<f32>) -> tensor<7x8xf32>\n"
        "  %s = hlo.slice %p [0:7, 2:6] : (tensor<7x8xf32>) -> tensor<7x4xf32>\n"
        "  func.return %s : tensor<7x4xf32>\n}"
    ),
    "dynamic_slice_and_update_uneven_rows": (
        f"func.func @main(%x: tensor<7x6xf32> {A0}, %u: tensor<7x2xf32> {A0}, %j: tensor<i32>) -> "
        f"(tensor<7x3xf32> {A0}, tensor<7x6xf32> {B0A1}) {{\n"
        "  %z = hlo.constant dense<0> : tensor<i32>\n"
        "  %d = hlo.dynamic_slice %x [%z, %j] sizes = [7, 3] : "
        "(tensor<7x6xf32>, tensor<i32>, tensor<i32>) -> tensor<7x3xf32>\n"
        "  %w = hlo.dynamic_update_slice %x, %u [%z, %j] : "
        "(tensor<7x6xf32>, tensor<7x2xf32>, tensor<i32>, tensor<i32>) -> tensor<7x6xf32>\n"
        "  func.return %d, %w : tensor<7x3xf32>, tensor<7x6xf32>\n}"
    ),
    "iota_compare_select_clamp_convert": (
        f"func.func @main(%x: tensor<7x5xf32> {A0}, %lo: tensor<f32>) -> (tensor<7x5xi32> {A0}, tensor<5xf32>) {{\n"
        "  %i = hlo.iota dim = 0 : tensor<7x5xf32>\n"
        "  %c = hlo.compare GT, %x, %i : (tensor<7x5xf32>, tensor<7x5xf32>) -> tensor<7x5xi1>\n"
        "  %s = hlo.select %c, %x, %i : tensor<7x5xi1>, tensor<7x5xf32>\n"
        "  %k = hlo.clamp %lo, %s, %lo : (tensor<f32>, tensor<7x5xf32>, tensor<f32>) -> tensor<7x5xf32>\n"
        "  %n = hlo.convert %s : (tensor<7x5xf32>) -> tensor<7x5xi32>\n"
        "  %r = hlo.reduce mul %k, dims = [0] : (tensor<7x5xf32>) -> tensor<5xf32>\n"
        "  func.return %n, %r : tensor<7x5xi32>, tensor<5xf32>\n}"
    ),
    "concatenate_transpose_broadcast": (
        f"func.func @main(%x: tensor<7x5xf32> {A0}, %y: tensor<7x3xf32> {A0}) -> "
        f"(tensor<8x7xf32> {NA}, tensor<7x8x3xf32> {A0B2}) {{\n"
        "  %c = hlo.concatenate %x, %y, dim = 1 : (tensor<7x5xf32>, tensor<7x3xf32>) -> tensor<7x8xf32>\n"
        "  %t = hlo.transpose %c, dims = [1, 0] : (tensor<7x8xf32>) -> tensor<8x7xf32>\n"
        "  %b = hlo.broadcast %y, dims = [0, 2] : (tensor<7x3xf32>) -> tensor<7x8x3xf32>\n"
        "  func.return %t, %b : tensor<8x7xf32>, tensor<7x8x3xf32>\n}"
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_uneven_cases(name: str) -> None:
    text = MESH + CASES[name] + "\n"
    for seed in range(3):
        partition_and_compare(text, seed, note=text)


def test_partitioned_function_records_the_global_shape_and_pads_with_nan() -> None:
    text = MESH + CASES["uneven_to_replicated"] + "\n"
    out = partition(text)
    assert (
        'tensor<2x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>, spmd.global_shape = array<i64: 7, 6>}'
        in out
    )
    module = parse_and_verify(CTX, out, "<s>")
    function = io.find_entry(module, None, "<s>")
    sig = io.signature(module, function, "<s>")
    assert sig.args[0].global_shape == (7, 6) and sig.args[0].local_shape == (2, 6)
    x = np.arange(42, dtype=np.float32).reshape(7, 6)
    blocks = io.split_inputs(sig, {"in_0": x})
    last = blocks[6][0]  # device (a=3, b=0) holds block 3: row 6 and padding
    assert last.shape == (2, 6)
    np.testing.assert_array_equal(last[0], x[6])
    assert np.isnan(last[1]).all()  # padding is NaN, so a leak would show
    np.testing.assert_array_equal(io.run_module(module, {"in_0": x})["out_0"], x)


def test_uneven_program_runs_at_level_t() -> None:
    """lower-to-tpu keeps `spmd.global_shape` on the kernel's buffers: level T splits and
    assembles the same global arrays as level S."""
    text = (
        'spmd.mesh @mesh = <["a"=4]>\n'
        f"func.func @main(%x: tensor<7x128xf32> {A0}) -> (tensor<7x128xf32> {A0}) {{\n"
        "  %n = hlo.neg %x : tensor<7x128xf32>\n"
        "  %s = hlo.add %n, %x : tensor<7x128xf32>\n"
        "  func.return %s : tensor<7x128xf32>\n}\n"
    )
    level_g = shardc.run(shardc.compile(text, ""), seed=1)
    compiled = shardc.compile(text, "tpu-pipeline")
    assert "spmd.global_shape = array<i64: 7, 128>" in str(compiled)
    level_t = shardc.run(compiled, seed=1)
    assert level_t.report["level"] == "T"
    assert_close(level_g.outputs, level_t.outputs, exact=False)
