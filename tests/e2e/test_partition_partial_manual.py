"""
Differential tests of partially manual shard_maps (Shardy's form): hypothesis-generated
meshes, which axes are manual (a proper subset), shapes, and in/out shardings that split
over manual axes and then over free (auto) axes. The body's local types are the global
ones split by the manual axes only; it permutes over a manual axis and all-reduces over
one (groups extended over the free axes). Level S after spmd-pipeline must compute
exactly what level G computes.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shardc.interpreter.testing import run_global
from shardc.tests.e2e.differential import partition_and_compare
from shardc.tests.e2e.test_partition_pad_reverse import MESHES, SIZES, sharding_str, ty

PARTIAL_MESHES = [m for m in MESHES if len(m) > 1]


def _draw_boundary(draw: st.DrawFn, mesh, manual, shape) -> tuple[list[list[str]], tuple]:
    """A sharding: manual axes first in each dimension, then free axes; its manual block."""
    sizes = dict(mesh)
    dims: list[list[str]] = [[] for _ in shape]
    for group in (manual, [a for a, _ in mesh if a not in manual]):
        for a in draw(st.permutations(group)):
            d = draw(st.integers(-1, len(shape) - 1))
            if d >= 0 and shape[d] % (math.prod(sizes[x] for x in dims[d]) * sizes[a]) == 0:
                dims[d].append(a)
    block = tuple(
        n // math.prod(sizes[a] for a in d if a in manual) for n, d in zip(shape, dims, strict=True)
    )
    return dims, block


@st.composite
def partial_programs(draw: st.DrawFn) -> str:
    mesh = draw(st.sampled_from(PARTIAL_MESHES))
    names = [a for a, _ in mesh]
    manual = draw(
        st.lists(st.sampled_from(names), min_size=1, max_size=len(names) - 1, unique=True)
    )
    shape = tuple(draw(st.sampled_from(SIZES)) for _ in range(2))
    in1, l1 = _draw_boundary(draw, mesh, manual, shape)
    in2, l2 = _draw_boundary(draw, mesh, manual, shape)
    out1, _ = _draw_boundary(draw, mesh, manual, shape)
    out1 = [[a for a in d if a not in manual] for d in out1]
    out1 = [[a for a in m if a in manual] + f for m, f in zip(in1, out1, strict=True)]
    out1 = [d if _divides(shape[i], d, mesh) else [a for a in in1[i]] for i, d in enumerate(out1)]
    free_args = [[a for a in d if a not in manual] for d in in2]
    arg_sharding = sharding_str(free_args)
    axis = draw(st.sampled_from(manual))
    reduce_axis = draw(st.sampled_from(manual))
    shift = draw(st.sampled_from([1, -1]))
    mesh_text = ", ".join(f'"{a}"={n}' for a, n in mesh)
    axes_text = ", ".join(f'"{a}"' for a in manual)
    t = ty(shape)
    return f"""spmd.mesh @mesh = <[{mesh_text}]>
func.func @main(%x: {t} {{spmd.sharding = #spmd.sharding{arg_sharding}}}, %w: {t})
    -> ({t}, {t} {{spmd.sharding = #spmd.sharding{sharding_str(out1)}}}) {{
  %a = hlo.mul %x, %w : {t}
  %m, %n = spmd.manual_computation(%a, %x) in_shardings=[{sharding_str(in1)}, {sharding_str(in2)}] out_shardings=[{sharding_str(out1)}, {sharding_str(in2)}] manual_axes={{{axes_text}}} (%l: {ty(l1)}, %k: {ty(l2)}) {{
    %p = collective.permute %l on @mesh["{axis}"], shift = {shift} : {ty(l1)}
    %r = collective.all_reduce add %k on @mesh["{reduce_axis}"] : {ty(l2)}
    spmd.return %p, %r : {ty(l1)}, {ty(l2)}
  }} : ({t}, {t}) -> ({t}, {t})
  %e = hlo.tanh %m : {t}
  %u = hlo.add %e, %n : {t}
  func.return %u, %m : {t}, {t}
}}
"""


def _divides(n: int, dim: list[str], mesh) -> bool:
    sizes = dict(mesh)
    return n % math.prod(sizes[a] for a in dim) == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(partial_programs(), st.integers(0, 3))
def test_partially_manual_computation_partitions_to_the_same_numbers(text: str, seed: int) -> None:
    partition_and_compare(text, seed, exact=True, note=text)


SPLIT = """spmd.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %m = spmd.manual_computation(%a) in_shardings=[<@mesh, [{"x", "y"}, {}]>] out_shardings=[<@mesh, [{"x"}, {"y"}]>] manual_axes={"x"} (%l: tensor<2x4xf32>) {
    %p = collective.permute %l on @mesh["x"], shift = 1 : tensor<2x4xf32>
    spmd.return %p : tensor<2x4xf32>
  } : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %m : tensor<4x4xf32>
}
"""


def test_level_g_splits_by_the_manual_axes_only() -> None:
    """Against numpy: each "x" block (2 rows, whatever "y" does) moves to the next "x"."""
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    out = run_global(SPLIT, {"in_0": a})
    np.testing.assert_array_equal(out["out_0"], np.concatenate([a[2:], a[:2]]))
    partition_and_compare(SPLIT, 0, exact=True)
