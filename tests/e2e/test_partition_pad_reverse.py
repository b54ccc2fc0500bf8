"""
Differential tests of the pad and reverse partitioning rules: programs that reverse and
pad tensors under hypothesis-generated meshes, shapes, paddings (edge, negative edge,
interior) and shardings (of arguments, of the reversed value through a constraint, of the
results), run at level S after spmd-pipeline, must compute what level G computes. The
census checks the rules' communication: a reverse with matching shardings is one permute.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import make_context
from shardc.parsing import parse_and_verify
from shardc.passes.collective_stats import CollectiveStats
from shardc.passes.spmd_partition import SpmdPartitionPass
from shardc.passes.spmd_propagate import SpmdPropagatePass
from shardc.tests.e2e.differential import partition_and_compare
from shardc.tests.unit.strategies import draw_mesh_dims

CTX = make_context()
MESHES = [
    (("x", 2),),
    (("x", 4),),
    (("x", 3),),
    (("a", 2), ("b", 2)),
    (("a", 2), ("b", 4)),
    (("a", 2), ("b", 3)),
    (("a", 2), ("b", 2), ("c", 2)),
]
SIZES = [2, 4, 6, 8, 12]


def ty(shape: tuple[int, ...]) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>" if shape else "tensor<f32>"


def sharding_str(dims: list[list[str]]) -> str:
    inner = ", ".join("{" + ", ".join(f'"{a}"' for a in d) + "}" for d in dims)
    return f"<@mesh, [{inner}]>"


def draw_sharding(draw: st.DrawFn, mesh, shape: tuple[int, ...]) -> list[list[str]]:
    """Each axis on at most one dimension, the axes of a dimension dividing its size."""
    return draw_mesh_dims(draw, mesh, shape)


@st.composite
def pad_reverse_programs(draw: st.DrawFn) -> str:
    mesh = draw(st.sampled_from(MESHES))
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from(SIZES)) for _ in range(rank))
    dims = draw(st.lists(st.sampled_from(range(rank)), unique=True))
    low, high, interior = [], [], []
    for d in range(rank):
        if draw(st.booleans()):  # an unpadded dimension passes its sharding through
            low.append(0), high.append(0), interior.append(0)
            continue
        low.append(draw(st.integers(-2, 3)))
        high.append(draw(st.integers(-2, 3)))
        interior.append(draw(st.integers(0, 2)))
        size = low[-1] + shape[d] + (shape[d] - 1) * interior[-1] + high[-1]
        if size < 1:  # negative edges may not remove everything
            low[-1] += 1 - size
    padded = tuple(
        lo + n + (n - 1) * it + hi
        for n, lo, hi, it in zip(shape, low, high, interior, strict=False)
    )
    dims2 = draw(st.lists(st.sampled_from(range(rank)), unique=True))
    s = lambda shp: sharding_str(draw_sharding(draw, mesh, shp))  # noqa: E731
    mesh_text = ", ".join(f'"{a}"={n}' for a, n in mesh)
    return f"""spmd.mesh @mesh = <[{mesh_text}]>
func.func @main(%x: {ty(shape)} {{spmd.sharding = #spmd.sharding{s(shape)}}}, %v: tensor<f32>)
    -> ({ty(shape)} {{spmd.sharding = #spmd.sharding{s(shape)}}}, {ty(padded)} {{spmd.sharding = #spmd.sharding{s(padded)}}}) {{
  %r = hlo.reverse %x, dims = {dims} : {ty(shape)}
  %rc = spmd.constraint %r {s(shape)} : {ty(shape)}
  %p = hlo.pad %rc, %v, low = {low}, high = {high}, interior = {interior} : ({ty(shape)}, tensor<f32>) -> {ty(padded)}
  %q = hlo.reverse %p, dims = {dims2} : {ty(padded)}
  func.return %rc, %q : {ty(shape)}, {ty(padded)}
}}
"""


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pad_reverse_programs(), st.integers(0, 3))
def test_pad_and_reverse_partition_to_the_same_numbers(text: str, seed: int) -> None:
    partition_and_compare(text, seed, exact=True)


def census(text: str) -> dict[str, int]:
    module = parse_and_verify(CTX, text, "m")
    for p in (SpmdPropagatePass(), SpmdPartitionPass()):
        p.apply(CTX, module)
    return dict(CollectiveStats.of(module).counts)


def test_reverse_of_split_dims_is_one_permute_and_pad_one_all_gather() -> None:
    text = """spmd.mesh @mesh = <["a"=2, "b"=3]>
func.func @main(%x: tensor<8x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}, %v: tensor<f32>)
    -> (tensor<8x6xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}, tensor<8x12xf32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {}]>}) {
  %r = hlo.reverse %x, dims = [0, 1] : tensor<8x6xf32>
  %p = hlo.pad %x, %v, low = [0, 2], high = [0, -1], interior = [0, 1] : (tensor<8x6xf32>, tensor<f32>) -> tensor<8x12xf32>
  func.return %r, %p : tensor<8x6xf32>, tensor<8x12xf32>
}
"""
    assert census(text) == {"permute": 1, "all_gather": 1}
    partition_and_compare(text, 0, exact=True)
