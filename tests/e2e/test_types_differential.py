"""
Level S against level G for the element types of issue 13: int8 (a dot into i32, as JAX's
int8 matmul), ui8/i4 element-wise, and complex tensors through a dot whose contracting
dimension is sharded (a partial sum finished by an all_reduce), then complex/real/imag and
a bitcast_convert. Integers must match exactly; complex within a float tolerance (the
partitioned sum adds in another order). Shapes, meshes and shardings come from hypothesis.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from shardc.interpreter import io
from shardc.parsing import parse_and_verify
from shardc.tests.e2e.differential import CTX, count_ops, partition

AXES = st.sampled_from([(1, 2), (2, 1), (2, 2), (4, 1), (2, 4)])


def _sharding(dims: list[str]) -> str:
    return "#spmd.sharding<@m, [" + ", ".join(f'{{"{d}"}}' if d else "{}" for d in dims) + "]>"


def _program(x: int, y: int, m: int, k: int, n: int, lhs: list[str], rhs: list[str]) -> str:
    return f"""spmd.mesh @m = <["x"={x}, "y"={y}]>
func.func @main(%a: tensor<{m}x{k}xi8> {{spmd.sharding = {_sharding(lhs)}}},
                %b: tensor<{k}x{n}xi8> {{spmd.sharding = {_sharding(rhs)}}},
                %c: tensor<{m}x{k}xcomplex<f32>> {{spmd.sharding = {_sharding(lhs)}}},
                %d: tensor<{k}x{n}xcomplex<f32>> {{spmd.sharding = {_sharding(rhs)}}},
                %u: tensor<{m}x{k}xui8> {{spmd.sharding = {_sharding(lhs)}}})
    -> (tensor<{m}x{n}xi32>, tensor<{m}x{n}xcomplex<f32>>, tensor<{m}x{n}xf32>,
        tensor<{m}x{k}xui8>, tensor<{m}x{n}x2xf32>) {{
  %q = hlo.dot %a, %b, contracting_dims = [1] x [0] : (tensor<{m}x{k}xi8>, tensor<{k}x{n}xi8>) -> tensor<{m}x{n}xi32>
  %z = hlo.dot %c, %d, contracting_dims = [1] x [0] : (tensor<{m}x{k}xcomplex<f32>>, tensor<{k}x{n}xcomplex<f32>>) -> tensor<{m}x{n}xcomplex<f32>>
  %re = hlo.real %z : (tensor<{m}x{n}xcomplex<f32>>) -> tensor<{m}x{n}xf32>
  %im = hlo.imag %z : (tensor<{m}x{n}xcomplex<f32>>) -> tensor<{m}x{n}xf32>
  %w = hlo.complex %im, %re : (tensor<{m}x{n}xf32>, tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xcomplex<f32>>
  %mod = hlo.abs %w : (tensor<{m}x{n}xcomplex<f32>>) -> tensor<{m}x{n}xf32>
  %u2 = hlo.mul %u, %u : tensor<{m}x{k}xui8>
  %u3 = hlo.sub %u2, %u : tensor<{m}x{k}xui8>
  %parts = hlo.bitcast_convert %w : (tensor<{m}x{n}xcomplex<f32>>) -> tensor<{m}x{n}x2xf32>
  func.return %q, %w, %mod, %u3, %parts : tensor<{m}x{n}xi32>, tensor<{m}x{n}xcomplex<f32>>, tensor<{m}x{n}xf32>, tensor<{m}x{k}xui8>, tensor<{m}x{n}x2xf32>
}}"""


@settings(max_examples=12, deadline=None)
@given(
    axes=AXES,
    mult=st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 2)),
    lhs=st.sampled_from([["x", "y"], ["", "x"], ["x", ""], ["", ""], ["y", "x"]]),
    rhs=st.sampled_from([["x", ""], ["y", ""], ["", "y"], ["", ""]]),
    seed=st.integers(0, 3),
)
def test_int8_and_complex_partitioned_match_level_g(axes, mult, lhs, rhs, seed) -> None:
    x, y = axes
    base = x * y
    m, k, n = (base * f for f in mult)
    text = _program(x, y, m, k, n, lhs, rhs)
    module = parse_and_verify(CTX, text, "<types>")
    sig = io.signature(module, io.find_entry(module, None, "<types>"), "<types>")
    inputs = io.random_inputs(sig, seed)
    inputs["in_0"] = np.random.default_rng(seed).integers(-128, 128, (m, k)).astype(np.int8)
    want = io.run_module(module, inputs)
    local = parse_and_verify(CTX, partition(text), "<partitioned>")
    got = io.run_module(local, inputs)
    for name in ("out_0", "out_3"):  # integers: exact
        assert got[name].dtype == want[name].dtype
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    for name in ("out_1", "out_2", "out_4"):
        assert got[name].dtype == want[name].dtype
        scale = max(1.0, float(np.abs(want[name]).max()))
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-5 * scale)
    sizes = {"": 1, "x": x, "y": y}
    if lhs[1] == rhs[0] and sizes[lhs[1]] > 1:
        # the contraction is split: a partial sum finished by an all_reduce (or
        # reduce_scatter), or the cost model gathered the operands' contracting dimension
        # instead (an argument's gather may hide under the int8 dot before it)
        finishing = ("all_reduce", "reduce_scatter", "all_gather")
        assert sum(count_ops(local, f"collective.{k}") for k in finishing) >= 1
