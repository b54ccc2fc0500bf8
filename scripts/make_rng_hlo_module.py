"""
Regenerate `tests/frontends/rng/dropout_rbg_gspmd.{hlo.txt,npz}`: a dropout with JAX's
"rbg" PRNG, jitted with GSPMD shardings on a 2x4 mesh, as the unpartitioned HLO module
(`.lower(..).compiler_ir("hlo")`: `rng-bit-generator` and `sharding=` on parameters),
with its inputs `in_0`, `in_1` and JAX's output `out_0`.

    /path/to/python-with-jax scripts/make_rng_hlo_module.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

try:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P
except ImportError:  # pragma: no cover
    sys.exit("make_rng_hlo_module.py needs jax: pip install 'shardc[jax]'")

OUT = Path(__file__).resolve().parent.parent / "tests" / "frontends" / "rng"


def dropout(x: jax.Array, key: jax.Array) -> jax.Array:
    keep = jax.random.bernoulli(jax.random.wrap_key_data(key, impl="rbg"), 0.9, x.shape)
    return jnp.where(keep, x / 0.9, 0.0)


def main() -> int:
    jax.config.update("jax_use_shardy_partitioner", False)
    mesh = jax.make_mesh((2, 4), ("data", "model"))
    split, whole = NamedSharding(mesh, P("data", "model")), NamedSharding(mesh, P())
    x = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    key = np.array([1, 2, 3, 4], np.uint32)
    fn = jax.jit(dropout, in_shardings=(split, whole), out_shardings=split)
    OUT.mkdir(parents=True, exist_ok=True)
    text = fn.lower(x, key).compiler_ir("hlo").as_hlo_text()
    (OUT / "dropout_rbg_gspmd.hlo.txt").write_text(text)
    np.savez(OUT / "dropout_rbg_gspmd.npz", in_0=x, in_1=key, out_0=np.asarray(fn(x, key)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
