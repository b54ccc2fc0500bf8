"""
Regenerate the front-end test corpus (`tests/frontends/corpus/`) with JAX.

    /path/to/python-with-jax scripts/make_frontend_corpus.py [--out DIR] [--only NAME ...]

Needs `jax` (the optional extra `shardc[jax]`); shardc itself never imports it. Runs on
the CPU with 8 simulated devices (it sets XLA_FLAGS before importing jax). For each
program it writes:

* `NAME.stablehlo.mlir`: `jax.jit(f, in_shardings=..., out_shardings=...).lower(*args)
  .as_text()` with the Shardy partitioner (sdy.mesh, #sdy.sharding, manual_computation);
* `NAME.gspmd.mlir` (some programs): the same with `jax_use_shardy_partitioner` off
  (GSPMD `mhlo.sharding` strings, custom_call @Sharding / @SPMDFullToShardShape);
* `NAME.generic.mlir`, `NAME.debuginfo.mlir` (some programs): the Shardy form printed
  in MLIR's generic op form, and with debug locations (`loc(...)`, `#loc = ...`);
* `NAME.hlo.txt`: `.compile().as_text()`, the per-device HLO module after SPMD
  partitioning (what XLA dumps);
* `NAME.npz`: the global inputs `in_0..` and JAX's outputs `out_0..`;

and `manifest.json`: per program the files, the mesh, and the HloSharding of every
input and output of the compiled executable (how JAX splits inputs over devices and
assembles outputs, which the per-device HLO text does not say for outputs).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
).strip()

try:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P
except ImportError:  # pragma: no cover
    sys.exit("make_frontend_corpus.py needs jax: pip install 'shardc[jax]'")

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "tests" / "frontends" / "corpus"

AUTO = AxisType.Auto
MESH_2x4 = jax.make_mesh((2, 4), ("data", "model"), axis_types=(AUTO, AUTO))
RING = jax.make_mesh((8,), ("x",), axis_types=(AUTO,))


def ns(mesh: Any, *spec: Any) -> NamedSharding:
    return NamedSharding(mesh, P(*spec))


@dataclass
class Program:
    name: str
    description: str
    fn: Callable[..., Any]
    shapes: list[tuple[int, ...]]
    in_shardings: list[NamedSharding]
    out_shardings: Any
    mesh: Any
    gspmd: bool = False
    other_forms: bool = False
    """Also export the generic op form and the form with debug locations."""
    seed: int = 0
    args: list[np.ndarray] = field(default_factory=list)
    dtypes: list[Any] | None = None
    """Argument element types (default f32); integer ones are drawn in [0, `high`)."""
    high: int = 64


# The programs ------------------------------------------------------------------------------


def elementwise(x: Any, y: Any) -> Any:
    a = jnp.tanh(x) * y + jnp.exp(-jnp.abs(x)) - jnp.square(y) / (1.0 + y * y)
    b = jnp.where(x > 0, x, 0.1 * x) + (y > 0.5).astype(jnp.float32)
    return jnp.maximum(a, b) + jnp.sqrt(jnp.abs(y) + 1.0) * jax.nn.sigmoid(x)


def dp_matmul(x: Any, w: Any) -> Any:
    return jax.nn.relu(x @ w)


def mp_matmul(x: Any, w: Any) -> Any:
    return x @ w


def megatron_mlp(x: Any, w1: Any, b1: Any, w2: Any) -> Any:
    h = jax.nn.gelu(x @ w1 + b1, approximate=False)
    h = jax.lax.with_sharding_constraint(h, ns(MESH_2x4, "data", "model"))
    return h @ w2


def attention(x: Any, wq: Any, wk: Any, wv: Any) -> Any:
    b, s, d = x.shape
    heads = 4

    def split(t: Any) -> Any:
        return t.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)

    q, k, v = split(x @ wq), split(x @ wk), split(x @ wv)
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(jnp.float32(d // heads))
    causal = jnp.tril(jnp.ones((s, s), dtype=bool))
    scores = jnp.where(causal, scores, -1e9)
    p = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhqk,bhkd->bhqd", p, v)
    return out.transpose(0, 2, 1, 3).reshape(b, s, d)


def layer_norm(x: Any, gamma: Any, beta: Any) -> Any:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + 1e-5) * gamma + beta


def softmax(x: Any) -> Any:
    return jax.nn.softmax(x, axis=-1)


def _loss(params: Any, x: Any, y: Any) -> Any:
    w1, w2 = params
    h = jnp.tanh(x @ w1)
    return jnp.mean((h @ w2 - y) ** 2)


def train_step(w1: Any, w2: Any, x: Any, y: Any) -> Any:
    loss, (g1, g2) = jax.value_and_grad(_loss)((w1, w2), x, y)
    return loss, w1 - 0.1 * g1, w2 - 0.1 * g2


def shard_map_psum(x: Any) -> Any:
    # pointwise ops before and after the shard_map run outside the manual computation
    body = lambda a: jax.lax.psum(a * 2.0, "x")  # noqa: E731
    return 3.0 * jax.shard_map(body, mesh=RING, in_specs=P("x"), out_specs=P())(jnp.tanh(x))


def shard_map_all_gather(x: Any) -> Any:
    body = lambda a: jnp.tanh(jax.lax.all_gather(a, "model", axis=1, tiled=True))  # noqa: E731
    return jax.shard_map(
        body,
        mesh=MESH_2x4,
        in_specs=P("data", "model"),
        out_specs=P("data", None),
        check_vma=False,
    )(x)


def shard_map_psum_scatter(x: Any) -> Any:
    body = lambda a: jax.lax.psum_scatter(a, "x", scatter_dimension=0, tiled=True)  # noqa: E731
    return jax.shard_map(body, mesh=RING, in_specs=P(None, "x"), out_specs=P("x", None))(x)


def shard_map_all_to_all(x: Any) -> Any:
    body = lambda a: jax.lax.all_to_all(a, "x", 1, 0, tiled=True)  # noqa: E731
    return jax.shard_map(body, mesh=RING, in_specs=P("x", None), out_specs=P(None, "x"))(x)


def shard_map_ppermute(x: Any) -> Any:
    def body(a: Any) -> Any:
        right = jax.lax.ppermute(a, "model", [(i, (i + 1) % 4) for i in range(4)])
        return a + 2.0 * right

    return jax.shard_map(
        body, mesh=MESH_2x4, in_specs=P("data", "model"), out_specs=P("data", "model")
    )(x)


PROGRAMS = [
    Program(
        "elementwise",
        "tanh/exp/abs/square/where/compare/convert/sqrt/sigmoid on a 2x4 mesh",
        elementwise,
        [(16, 32), (16, 32)],
        [ns(MESH_2x4, "data", "model")] * 2,
        ns(MESH_2x4, "data", "model"),
        MESH_2x4,
    ),
    Program(
        "dp_matmul",
        "data-parallel matmul + relu over 8 devices",
        dp_matmul,
        [(32, 16), (16, 8)],
        [ns(RING, "x"), ns(RING)],
        ns(RING, "x"),
        RING,
    ),
    Program(
        "mp_matmul",
        "model-parallel matmul (column-split weight) over 8 devices",
        mp_matmul,
        [(8, 16), (16, 32)],
        [ns(RING), ns(RING, None, "x")],
        ns(RING, None, "x"),
        RING,
    ),
    Program(
        "megatron_mlp",
        "Megatron MLP (column/row split, exact gelu, constraint) on 2x4",
        megatron_mlp,
        [(8, 16), (16, 64), (64,), (64, 16)],
        [
            ns(MESH_2x4, "data"),
            ns(MESH_2x4, None, "model"),
            ns(MESH_2x4, "model"),
            ns(MESH_2x4, "model", None),
        ],
        ns(MESH_2x4, "data", None),
        MESH_2x4,
        gspmd=True,
        other_forms=True,
    ),
    Program(
        "attention",
        "causal multi-head attention (heads split on model) on 2x4",
        attention,
        [(2, 8, 32), (32, 32), (32, 32), (32, 32)],
        [
            ns(MESH_2x4, "data"),
            ns(MESH_2x4, None, "model"),
            ns(MESH_2x4, None, "model"),
            ns(MESH_2x4, None, "model"),
        ],
        ns(MESH_2x4, "data"),
        MESH_2x4,
        other_forms=True,
    ),
    Program(
        "layer_norm",
        "layer norm, batch split on data",
        layer_norm,
        [(16, 32), (32,), (32,)],
        [ns(MESH_2x4, "data"), ns(MESH_2x4), ns(MESH_2x4)],
        ns(MESH_2x4, "data"),
        MESH_2x4,
        gspmd=True,
    ),
    Program(
        "softmax",
        "softmax over a model-split dimension",
        softmax,
        [(16, 32)],
        [ns(MESH_2x4, "data", "model")],
        ns(MESH_2x4, "data", "model"),
        MESH_2x4,
    ),
    Program(
        "train_step",
        "value_and_grad of an MLP + SGD update (data/model split)",
        train_step,
        [(16, 32), (32, 8), (16, 16), (16, 8)],
        [
            ns(MESH_2x4, None, "model"),
            ns(MESH_2x4, "model", None),
            ns(MESH_2x4, "data"),
            ns(MESH_2x4, "data"),
        ],
        (ns(MESH_2x4), ns(MESH_2x4, None, "model"), ns(MESH_2x4, "model", None)),
        MESH_2x4,
        gspmd=True,
    ),
    Program(
        "shard_map_psum",
        "shard_map with psum over 8 devices",
        shard_map_psum,
        [(16, 4)],
        [ns(RING, "x")],
        ns(RING),
        RING,
        gspmd=True,
        other_forms=True,
    ),
    Program(
        "shard_map_all_gather",
        "shard_map all_gather over model on 2x4",
        shard_map_all_gather,
        [(8, 16)],
        [ns(MESH_2x4, "data", "model")],
        ns(MESH_2x4, "data", None),
        MESH_2x4,
    ),
    Program(
        "shard_map_psum_scatter",
        "shard_map psum_scatter over 8 devices",
        shard_map_psum_scatter,
        [(16, 16)],
        [ns(RING, None, "x")],
        ns(RING, "x"),
        RING,
    ),
    Program(
        "shard_map_all_to_all",
        "shard_map all_to_all over 8 devices",
        shard_map_all_to_all,
        [(16, 16)],
        [ns(RING, "x")],
        ns(RING, None, "x"),
        RING,
    ),
    Program(
        "shard_map_ppermute",
        "shard_map ppermute (ring shift on model) on 2x4",
        shard_map_ppermute,
        [(8, 16)],
        [ns(MESH_2x4, "data", "model")],
        ns(MESH_2x4, "data", "model"),
        MESH_2x4,
        gspmd=True,
    ),
]


# Programs of issue 13: what real models bring (scan, gather, conv, top_k, int8, remat, ...)


def scan_mlp(x: Any, ws: Any) -> Any:
    """A stack of layers applied with lax.scan (a while loop over the layer index)."""

    def layer(h: Any, w: Any) -> tuple[Any, None]:
        return jnp.tanh(h @ w), None

    h, _ = jax.lax.scan(layer, x, ws)
    return h


def _embed_loss(table: Any, w: Any, ids: Any, labels: Any) -> Any:
    logits = table[ids] @ w
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))


def embed_xent_step(table: Any, w: Any, ids: Any, labels: Any) -> Any:
    """Embedding lookup (gather), softmax cross-entropy, its gradient (scatter-add), SGD."""
    loss, (gt, gw) = jax.value_and_grad(_embed_loss, argnums=(0, 1))(table, w, ids, labels)
    return loss, table - 0.1 * gt, w - 0.1 * gw


def conv_net(x: Any, k1: Any, k2: Any) -> Any:
    """Two convolutions (NHWC), relu, 2x2 max pooling, spatial mean."""
    dn = ("NHWC", "HWIO", "NHWC")
    y = jax.lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=dn)
    y = jax.nn.relu(y)
    y = jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    y = jax.lax.conv_general_dilated(y, k2, (1, 1), "VALID", dimension_numbers=dn)
    return jnp.mean(y, axis=(1, 2))


EXPERTS = 8


def moe_top2(x: Any, wr: Any, we: Any) -> Any:
    """Top-2 routing (auto-sharded), experts behind an all_to_all inside shard_map."""
    vals, idx = jax.lax.top_k(x @ wr, 2)
    gates = jax.nn.softmax(vals)
    dispatch = jnp.einsum("tke,tk->te", jax.nn.one_hot(idx, EXPERTS), gates)

    def body(xl: Any, dl: Any, wl: Any) -> Any:
        xe = jnp.einsum("td,te->etd", xl, dl)
        xe = jax.lax.all_to_all(xe, "x", 0, 1, tiled=True)
        ye = jnp.einsum("etd,edf->etf", xe, wl)
        ye = jax.lax.all_to_all(ye, "x", 1, 0, tiled=True)
        return ye.sum(0)

    return jax.shard_map(body, mesh=RING, in_specs=(P("x"), P("x"), P("x")), out_specs=P("x"))(
        x, dispatch, we
    )


def dropout(x: Any, key: Any) -> Any:
    """jax.random.bernoulli: threefry's shifts, xors and adds on ui32."""
    keep = jax.random.bernoulli(jax.random.wrap_key_data(key), 0.9, x.shape)
    return jnp.where(keep, x / 0.9, 0.0)


def int8_matmul(a: Any, b: Any) -> Any:
    return jax.lax.dot(a, b, preferred_element_type=jnp.int32)


def remat_mlp(x: Any, w1: Any, w2: Any) -> Any:
    """The gradient through jax.checkpoint (an optimization_barrier of its residuals)."""
    f = jax.checkpoint(lambda a: jnp.tanh(a @ w1) @ w2)
    return jax.grad(lambda a: jnp.sum(f(a) ** 2))(x)


def mixed_auto_shard_map(x: Any, w: Any) -> Any:
    """Auto-sharded code, a shard_map ring step with axis_index, auto code again."""
    h = jnp.tanh(x @ w)

    def body(a: Any) -> Any:
        right = jax.lax.ppermute(a, "x", [(i, (i + 1) % 8) for i in range(8)])
        return a + right * jax.lax.axis_index("x").astype(a.dtype)

    h = jax.shard_map(body, mesh=RING, in_specs=P("x"), out_specs=P("x"))(h)
    return jnp.sum(h * h, axis=0)


def uneven(x: Any, w: Any) -> Any:
    """An intermediate split 4 ways along a dimension of 10 (JAX pads the last shards)."""
    h = jax.lax.with_sharding_constraint(x @ w, ns(MESH_2x4, None, "model"))
    return jnp.sum(jax.nn.relu(h), axis=1)


def everyday(x: Any) -> Any:
    """argmax (a two-operand reduce), cumsum (reduce_window), sort."""
    return jnp.argmax(x, axis=-1), jnp.cumsum(x, axis=0), jnp.sort(x, axis=-1)


PROGRAMS += [
    Program(
        "scan_mlp",
        "lax.scan over 4 layers (a while loop), batch on data, weights on model",
        scan_mlp,
        [(16, 32), (4, 32, 32)],
        [ns(MESH_2x4, "data"), ns(MESH_2x4, None, None, "model")],
        ns(MESH_2x4, "data"),
        MESH_2x4,
        gspmd=True,
    ),
    Program(
        "embed_xent_step",
        "embedding (vocabulary on model) + softmax cross-entropy + SGD step",
        embed_xent_step,
        [(64, 16), (16, 64), (8, 4), (8, 4)],
        [
            ns(MESH_2x4, "model"),
            ns(MESH_2x4, None, "model"),
            ns(MESH_2x4, "data"),
            ns(MESH_2x4, "data"),
        ],
        (ns(MESH_2x4), ns(MESH_2x4, "model"), ns(MESH_2x4, None, "model")),
        MESH_2x4,
        gspmd=True,
        dtypes=[np.float32, np.float32, np.int32, np.int32],
    ),
    Program(
        "conv_net",
        "two convolutions, relu, max pooling (batch on data, output features on model)",
        conv_net,
        [(8, 8, 8, 4), (3, 3, 4, 8), (3, 3, 8, 8)],
        [ns(MESH_2x4, "data"), ns(MESH_2x4, None, None, None, "model"), ns(MESH_2x4)],
        ns(MESH_2x4, "data"),
        MESH_2x4,
        gspmd=True,
    ),
    Program(
        "moe_top2",
        "top-2 routing + experts behind all_to_all in shard_map",
        moe_top2,
        [(32, 16), (16, EXPERTS), (EXPERTS, 16, 16)],
        [ns(RING, "x"), ns(RING), ns(RING, "x")],
        ns(RING, "x"),
        RING,
        gspmd=True,
    ),
    Program(
        "dropout",
        "jax.random.bernoulli dropout (threefry on ui32)",
        dropout,
        [(16, 32), (2,)],
        [ns(MESH_2x4, "data", "model"), ns(MESH_2x4)],
        ns(MESH_2x4, "data", "model"),
        MESH_2x4,
        gspmd=True,
        dtypes=[np.float32, np.uint32],
        high=2**31,
    ),
    Program(
        "int8_matmul",
        "int8 x int8 -> int32 matmul",
        int8_matmul,
        [(16, 32), (32, 16)],
        [ns(MESH_2x4, "data"), ns(MESH_2x4, None, "model")],
        ns(MESH_2x4, "data", "model"),
        MESH_2x4,
        gspmd=True,
        dtypes=[np.int8, np.int8],
        high=100,
    ),
    Program(
        "remat_mlp",
        "gradient through jax.checkpoint (optimization_barrier)",
        remat_mlp,
        [(16, 32), (32, 64), (64, 32)],
        [ns(MESH_2x4, "data"), ns(MESH_2x4, None, "model"), ns(MESH_2x4, "model")],
        ns(MESH_2x4, "data"),
        MESH_2x4,
        gspmd=True,
    ),
    Program(
        "mixed_auto_shard_map",
        "auto-sharded matmul, a shard_map ring step with axis_index, auto reduction",
        mixed_auto_shard_map,
        [(16, 32), (32, 32)],
        [ns(RING, "x"), ns(RING)],
        ns(RING),
        RING,
        gspmd=True,
    ),
    Program(
        "uneven",
        "an intermediate split 4 ways along 10 (padded shards)",
        uneven,
        [(8, 16), (16, 10)],
        [ns(MESH_2x4, "data"), ns(MESH_2x4)],
        ns(MESH_2x4, "data"),
        MESH_2x4,
        gspmd=True,
    ),
    Program(
        "everyday",
        "argmax, cumsum and sort of a 2-D split array",
        everyday,
        [(16, 32)],
        [ns(MESH_2x4, "data", "model")],
        (ns(MESH_2x4, "data"), ns(MESH_2x4, "data", "model"), ns(MESH_2x4, "data", "model")),
        MESH_2x4,
        gspmd=True,
    ),
]


# rng_bit_generator (issue 13): JAX's "rbg" PRNG ---------------------------------------------


def dropout_rbg(x: Any, key: Any) -> Any:
    """jax.random.bernoulli with the "rbg" PRNG: stablehlo.rng_bit_generator."""
    keep = jax.random.bernoulli(jax.random.wrap_key_data(key, impl="rbg"), 0.9, x.shape)
    return jnp.where(keep, x / 0.9, 0.0)


PROGRAMS += [
    Program(
        "dropout_rbg",
        'jax.random.bernoulli dropout with the "rbg" PRNG (rng_bit_generator)',
        dropout_rbg,
        [(16, 32), (4,)],
        [ns(MESH_2x4, "data", "model"), ns(MESH_2x4)],
        ns(MESH_2x4, "data", "model"),
        MESH_2x4,
        dtypes=[np.float32, np.uint32],
        high=2**31,
    ),
]


# Issue 14 item 2: dots where the cheapest partitioning gathers a contracting dimension.


def gather_contracting(a: Any, w: Any) -> Any:
    """A[B_X, D_Y] x W[D, F_Y] -> O[B_X, F_Y]: XLA all-gathers A over Y (scaling book)."""
    return a @ w


def _adam(p: Any, g: Any, m: Any, v: Any) -> tuple[Any, Any, Any]:
    """Adam's update (|v|: the inputs are drawn from a normal distribution)."""
    m = 0.9 * m + 0.1 * g
    v = 0.999 * jnp.abs(v) + 0.001 * g * g
    return p - 1e-3 * m / (jnp.sqrt(v) + 1e-8), m, v


def fsdp_adam_step(w1: Any, w2: Any, m1: Any, m2: Any, v1: Any, v2: Any, x: Any, y: Any) -> Any:
    """An FSDP Adam step: parameters and moments split over every device, batch too."""
    loss, (g1, g2) = jax.value_and_grad(_loss)((w1, w2), x, y)
    p1, m1, v1 = _adam(w1, g1, m1, v1)
    p2, m2, v2 = _adam(w2, g2, m2, v2)
    return loss, p1, p2, m1, m2, v1, v2


FSDP = ns(MESH_2x4, ("data", "model"))
PROGRAMS += [
    Program(
        "gather_contracting",
        "A[B_data, D_model] x W[D, F_model] -> O[B_data, F_model] (issue 14's example, small)",
        gather_contracting,
        [(16, 32), (32, 64)],
        [ns(MESH_2x4, "data", "model"), ns(MESH_2x4, None, "model")],
        ns(MESH_2x4, "data", "model"),
        MESH_2x4,
    ),
    Program(
        "fsdp_adam_step",
        "FSDP Adam step of a 2-layer MLP: parameters, moments and batch split over all 8",
        fsdp_adam_step,
        [(32, 64), (64, 16), (32, 64), (64, 16), (32, 64), (64, 16), (64, 32), (64, 16)],
        [FSDP] * 8,
        (ns(MESH_2x4), *[FSDP] * 6),
        MESH_2x4,
    ),
]


def make_args(program: Program, rng: np.random.Generator) -> list[np.ndarray]:
    """The program's inputs: normal f32, or integers in [0, high) of their dtype."""
    dtypes = program.dtypes or [np.float32] * len(program.shapes)
    out = []
    for shape, dtype in zip(program.shapes, dtypes, strict=True):
        if np.issubdtype(dtype, np.integer):
            out.append(rng.integers(0, program.high, shape).astype(dtype))
        else:
            out.append(rng.standard_normal(shape).astype(dtype))
    return out


def hlo_sharding_str(sharding: Any, ndim: int) -> str:
    return str(sharding._to_xla_hlo_sharding(ndim))


def flat_outputs(out: Any) -> list[np.ndarray]:
    leaves = jax.tree_util.tree_leaves(out)
    return [np.asarray(a) for a in leaves]


def export(program: Program, out_dir: Path) -> dict[str, Any]:
    rng = np.random.default_rng(1000 + program.seed)
    args = make_args(program, rng)
    jitted = jax.jit(
        program.fn, in_shardings=program.in_shardings, out_shardings=program.out_shardings
    )
    jax.config.update("jax_use_shardy_partitioner", True)
    lowered = jitted.lower(*args)
    files = {"stablehlo": f"{program.name}.stablehlo.mlir"}
    (out_dir / files["stablehlo"]).write_text(lowered.as_text())
    if program.other_forms:
        generic = lowered.compiler_ir("stablehlo").operation.get_asm(print_generic_op_form=True)
        files["generic"] = f"{program.name}.generic.mlir"
        (out_dir / files["generic"]).write_text(generic)
        files["debuginfo"] = f"{program.name}.debuginfo.mlir"
        (out_dir / files["debuginfo"]).write_text(lowered.as_text(debug_info=True))
    compiled = lowered.compile()
    files["hlo"] = f"{program.name}.hlo.txt"
    (out_dir / files["hlo"]).write_text(compiled.as_text())
    outputs = flat_outputs(jitted(*args))
    in_sh, _ = compiled.input_shardings
    out_sh = jax.tree_util.tree_leaves(compiled.output_shardings)
    if program.gspmd:
        jax.config.update("jax_use_shardy_partitioner", False)
        try:
            g = jax.jit(
                program.fn,
                in_shardings=program.in_shardings,
                out_shardings=program.out_shardings,
            ).lower(*args)
            files["gspmd"] = f"{program.name}.gspmd.mlir"
            (out_dir / files["gspmd"]).write_text(g.as_text())
        finally:
            jax.config.update("jax_use_shardy_partitioner", True)
    files["data"] = f"{program.name}.npz"
    arrays = {f"in_{i}": a for i, a in enumerate(args)}
    arrays |= {f"out_{i}": a for i, a in enumerate(outputs)}
    np.savez_compressed(out_dir / files["data"], **arrays)
    return {
        "description": program.description,
        "files": files,
        "mesh": {k: int(v) for k, v in program.mesh.shape.items()},
        "devices": int(program.mesh.size),
        "input_shardings": [hlo_sharding_str(s, a.ndim) for s, a in zip(in_sh, args, strict=False)],
        "output_shardings": [
            hlo_sharding_str(s, a.ndim) for s, a in zip(out_sh, outputs, strict=False)
        ],
        "input_shapes": [list(a.shape) for a in args],
        "output_shapes": [list(a.shape) for a in outputs],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--only", nargs="*", default=None, help="program names to export")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "manifest.json"
    manifest: dict[str, Any] = {}
    if args.only and manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())["programs"]
    for program in PROGRAMS:
        if args.only and program.name not in args.only:
            continue
        print(f"exporting {program.name}", file=sys.stderr)
        manifest[program.name] = export(program, args.out)
    ordered = {p.name: manifest[p.name] for p in PROGRAMS if p.name in manifest}
    manifest_path.write_text(
        json.dumps({"jax": jax.__version__, "programs": ordered}, indent=1) + "\n"
    )
    total = sum(f.stat().st_size for f in args.out.iterdir())
    print(f"wrote {len(ordered)} programs to {args.out} ({total / 1024:.0f} KiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
