"""Reference vectors of lax.rng_bit_generator (XLA CPU) for tests/unit/test_rng_bit_generator.py."""
import jax, jax.numpy as jnp, numpy as np
jax.config.update("jax_enable_x64", True)
from jax import lax
ALGS = {"DEFAULT": lax.RandomAlgorithm.RNG_DEFAULT, "THREE_FRY": lax.RandomAlgorithm.RNG_THREE_FRY, "PHILOX": lax.RandomAlgorithm.RNG_PHILOX}
KEYS = [(0x12345678abcdef01, 0x0fedcba987654321), (0, 0), (0xFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFE)]
SHAPES = [(), (1,), (5,), (2, 3), (3, 5), (4, 1, 3), (3, 1, 5), (2, 3, 4), (0, 3)]
DTYPES = {"ui8": jnp.uint8, "ui16": jnp.uint16, "ui32": jnp.uint32, "ui64": jnp.uint64}
out = {}
for alg_name, alg in ALGS.items():
    for ki, key in enumerate(KEYS):
        k = jnp.array(key, dtype=jnp.uint64)
        for shape in SHAPES:
            for dn, dt in DTYPES.items():
                st, bits = jax.jit(lambda k: lax.rng_bit_generator(k, shape, dtype=dt, algorithm=alg))(k)
                name = f"{alg_name}|{ki}|{'x'.join(map(str, shape)) or 'scalar'}|{dn}"
                out[name + "|state"] = np.asarray(st)
                out[name + "|bits"] = np.asarray(bits)
np.savez_compressed("/work/wt/rng/tests/unit/data/rng_bit_generator_xla_cpu.npz", **out)
print(len(out))
