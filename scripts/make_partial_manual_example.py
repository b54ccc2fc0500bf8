"""
Regenerate tests/frontends/partial_manual/: a partially manual shard_map (JAX's
`jax.shard_map(..., axis_names={"x"})` inside jit on a 2x4 mesh, "y" left auto) as JAX
lowers it with Shardy, and its inputs and JAX's outputs.

    XLA_FLAGS=--xla_force_host_platform_device_count=8 /work/jaxenv/bin/python \\
        scripts/make_partial_manual_example.py
"""

import os
import pathlib

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "frontends" / "partial_manual"
MESH = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto))


def body(a, w):
    """Per "x" shard, global along "y" (which the constraint splits the columns over)."""
    h = jnp.tanh(a @ w)
    h = jax.lax.with_sharding_constraint(h, P(None, "y"))
    s = jax.lax.psum(h.sum(axis=0, keepdims=True), "x")
    return h * s


def program(a, m, w):
    a = jnp.tanh(a @ m)  # auto-sharded code before the shard_map
    out = jax.shard_map(
        body, mesh=MESH, in_specs=(P("x", None), P()), out_specs=P("x"), axis_names={"x"}
    )(a, w)
    return (out + 1.0).T @ out  # and after it


def main() -> None:
    rng = np.random.default_rng(13)
    a = rng.standard_normal((8, 6)).astype(np.float32)
    m = rng.standard_normal((6, 6)).astype(np.float32) / 3
    w = rng.standard_normal((6, 8)).astype(np.float32) / 3
    shardings = tuple(NamedSharding(MESH, s) for s in (P("x", None), P(), P(None, "y")))
    jitted = jax.jit(program, in_shardings=shardings)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "partial_manual.stablehlo.mlir").write_text(jitted.lower(a, m, w).as_text())
    out = np.asarray(jitted(a, m, w))
    np.savez(OUT / "partial_manual.npz", in_0=a, in_1=m, in_2=w, out_0=out)


if __name__ == "__main__":
    main()
