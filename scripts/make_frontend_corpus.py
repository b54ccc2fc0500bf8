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


def hlo_sharding_str(sharding: Any, ndim: int) -> str:
    return str(sharding._to_xla_hlo_sharding(ndim))


def flat_outputs(out: Any) -> list[np.ndarray]:
    leaves = jax.tree_util.tree_leaves(out)
    return [np.asarray(a) for a in leaves]


def export(program: Program, out_dir: Path) -> dict[str, Any]:
    rng = np.random.default_rng(1000 + program.seed)
    args = [rng.standard_normal(s).astype(np.float32) for s in program.shapes]
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
