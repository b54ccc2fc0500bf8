"""
Regenerate `tests/unit/data/rng_bit_generator_xla_cpu.npz`: `lax.rng_bit_generator` as
XLA's CPU computes it, for every algorithm (DEFAULT, THREE_FRY, PHILOX), a few keys,
shapes and unsigned output types (`tests/unit/test_rng_bit_generator.py` checks shardc's
level-G implementation against them).

    /path/to/python-with-jax scripts/make_rng_vectors.py

Entries are named `ALGORITHM|KEY INDEX|SHAPE|TYPE|state` and `...|bits`.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax
except ImportError:  # pragma: no cover
    sys.exit("make_rng_vectors.py needs jax: pip install 'shardc[jax]'")

OUT = Path(__file__).resolve().parent.parent / "tests/unit/data/rng_bit_generator_xla_cpu.npz"
KEYS = [(0x12345678ABCDEF01, 0x0FEDCBA987654321), (0, 0), (2**64 - 1, 2**64 - 2)]
SHAPES = [(), (1,), (5,), (2, 3), (3, 5), (4, 1, 3), (3, 1, 5), (2, 3, 4), (0, 3)]
TYPES = {"ui8": "uint8", "ui16": "uint16", "ui32": "uint32", "ui64": "uint64"}


def generate(key: jax.Array, shape: tuple[int, ...], dtype: str, algorithm: str) -> tuple:
    alg = getattr(lax.RandomAlgorithm, f"RNG_{algorithm}")
    fn = jax.jit(lambda k: lax.rng_bit_generator(k, shape, dtype=dtype, algorithm=alg))
    return fn(key)


def main() -> int:
    jax.config.update("jax_enable_x64", True)
    out: dict[str, np.ndarray] = {}
    for algorithm in ("DEFAULT", "THREE_FRY", "PHILOX"):
        for index, key in enumerate(KEYS):
            k = jnp.array(key, dtype=jnp.uint64)
            for shape in SHAPES:
                for name, dtype in TYPES.items():
                    state, bits = generate(k, shape, dtype, algorithm)
                    dims = "x".join(map(str, shape)) or "scalar"
                    entry = f"{algorithm}|{index}|{dims}|{name}"
                    out[f"{entry}|state"] = np.asarray(state)
                    out[f"{entry}|bits"] = np.asarray(bits)
    np.savez_compressed(OUT, **out)
    print(f"wrote {len(out)} arrays to {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
