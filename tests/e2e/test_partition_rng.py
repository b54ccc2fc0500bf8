"""
Differential tests of rng_bit_generator's partitioning: programs that add the random bits
to an argument (whose sharding, drawn by hypothesis with the bits' result sharding, the
bits take through propagation; evenly or unevenly split), from a state that may itself be
split, for each algorithm and several integer types, run at level S after spmd-pipeline,
must give exactly what level G gives (bits and new state). The census shows that the
bits cost no communication: only a split state is gathered.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.dialects import make_context
from shardc.parsing import parse_and_verify
from shardc.passes.collective_stats import CollectiveStats
from shardc.passes.spmd_partition import SpmdPartitionPass
from shardc.passes.spmd_propagate import SpmdPropagatePass
from shardc.tests.e2e.differential import partition_and_compare
from shardc.tests.e2e.test_partition_pad_reverse import MESHES, sharding_str
from shardc.tests.unit.strategies import draw_mesh_dims

CTX = make_context()
SIZES = [1, 2, 3, 4, 5, 6, 8, 12]
DTYPES = {"ui32": np.uint32, "i32": np.int32, "ui64": np.uint64, "i64": np.int64, "ui8": np.uint8}


def ty(shape: tuple[int, ...], dtype: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>" if shape else f"tensor<{dtype}>"


def draw_dims(draw: st.DrawFn, mesh, shape: tuple[int, ...], uneven: bool) -> list[list[str]]:
    """Each axis on at most one dimension; its axes divide it (or, `uneven`, fit in it)."""
    return draw_mesh_dims(draw, mesh, shape, uneven)


@st.composite
def rng_programs(draw: st.DrawFn) -> tuple[str, dict[str, np.ndarray]]:
    mesh = draw(st.sampled_from(MESHES))
    algorithm = draw(st.sampled_from(["DEFAULT", "THREE_FRY", "PHILOX"]))
    n = draw(st.sampled_from([2, 3])) if algorithm != "THREE_FRY" else 2
    rank = draw(st.integers(0, 3))
    shape = tuple(draw(st.sampled_from(SIZES)) for _ in range(rank))
    dtype = draw(st.sampled_from(sorted(DTYPES)))
    uneven = draw(st.booleans())
    s = lambda shp, u=False: sharding_str(draw_dims(draw, mesh, shp, u))  # noqa: E731
    mesh_text = ", ".join(f'"{a}"={k}' for a, k in mesh)
    st_ty, b_ty = ty((n,), "ui64"), ty(shape, dtype)
    text = f"""spmd.mesh @mesh = <[{mesh_text}]>
func.func @main(%s: {st_ty} {{spmd.sharding = #spmd.sharding{s((n,))}}}, %x: {b_ty} {{spmd.sharding = #spmd.sharding{s(shape, uneven)}}})
    -> ({st_ty} {{spmd.sharding = #spmd.sharding{s((n,))}}}, {b_ty} {{spmd.sharding = #spmd.sharding{s(shape, uneven)}}}) {{
  %t, %b = hlo.rng_bit_generator %s, algorithm = {algorithm} : ({st_ty}) -> ({st_ty}, {b_ty})
  %y = hlo.add %b, %x : {b_ty}
  func.return %t, %y : {st_ty}, {b_ty}
}}
"""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    state = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    x = rng.integers(0, 100, shape).astype(DTYPES[dtype])
    return text, {"in_0": state, "in_1": x}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng_programs())
def test_rng_bit_generator_partitions_to_the_same_bits(case) -> None:
    text, inputs = case
    partition_and_compare(text, exact=True, inputs=inputs, note=text)


def census(text: str) -> dict[str, int]:
    module = parse_and_verify(CTX, text, "m")
    for p in (SpmdPropagatePass(), SpmdPartitionPass()):
        p.apply(CTX, module)
    return dict(CollectiveStats.of(module).counts)


def test_split_bits_cost_no_collective() -> None:
    text = """spmd.mesh @mesh = <["a"=2, "b"=4]>
func.func @main(%s: tensor<2xui64>, %x: tensor<8x16xui32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>})
    -> (tensor<8x16xui32> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}, {"b"}]>}) {
  %t, %b = hlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<8x16xui32>)
  %y = hlo.xor %b, %x : tensor<8x16xui32>
  func.return %y : tensor<8x16xui32>
}
"""
    assert not any(census(text).values())
    split_state = text.replace(
        "%s: tensor<2xui64>", '%s: tensor<2xui64> {spmd.sharding = #spmd.sharding<@mesh, [{"a"}]>}'
    )
    assert census(split_state) == {"all_gather": 1}
