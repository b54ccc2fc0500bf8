"""
Level T against level S for the kernels of issue 15 items 3-4 that were slow at level T
(convolution, reduce_window, sort, top_k) and the simulation wall time of a real-size
gather, one chip (v5e), timing only:

    python bench/lower_speed.py [--chip v5e] [--only NAME]

Level S is the cost model's step of the per-device program; level T the simulator's step
of the kernel `lower-to-tpu` makes from it; "simulated in" the wall time of that
simulation (compiling not included). One run each; run it on the old and the new tree
for before / after.
"""

from __future__ import annotations

from collections.abc import Callable

import shardc
from shardc.bench import every_op, lowered_ops

MESH = 'spmd.mesh @m = <["x"=1]>\n'


def conv(batch: int, size: int, cin: int, cout: int, dtype: str = "bf16") -> str:
    x, w = f"tensor<{batch}x{size}x{size}x{cin}x{dtype}>", f"tensor<3x3x{cin}x{cout}x{dtype}>"
    r = f"tensor<{batch}x{size}x{size}x{cout}x{dtype}>"
    return f"""func.func @main(%x: {x}, %w: {w}) -> {r} {{
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {{pad = [[1, 1], [1, 1]]}} : ({x}, {w}) -> {r}
  func.return %r : {r}
}}"""


def conv_net() -> str:
    """The JAX corpus's conv_net from StableHLO (two f32 3x3 convolutions, relu, a dense
    head), as `spmd-pipeline` gives it to `lower-to-tpu` (agreement.py's row)."""
    from shardc.bench.agreement import corpus_programs

    (program,) = [p for p in corpus_programs() if p.name == "conv_net (StableHLO)"]
    return str(shardc.compile(program.load(), "spmd-pipeline"))


def gather(rows: int = 16384) -> str:
    t, i, r = "tensor<32000x4096xbf16>", f"tensor<{rows}xi32>", f"tensor<{rows}x4096xbf16>"
    return (
        MESH + f"func.func @main(%t: {t}, %i: {i}) -> ({r}) attributes {{spmd.per_device_io}} {{\n"
        f"  %r = hlo.gather %t, %i, offset_dims = [1], collapsed_slice_dims = [0], "
        f"start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 4096] : ({t}, {i}) -> {r}\n"
        f"  func.return %r : {r}\n}}"
    )


def _lowered(name: str) -> Callable[[], str]:
    (key,) = [k for k in lowered_ops.PROGRAMS if k.startswith(name)]
    return lambda: lowered_ops.PROGRAMS[key]


PROGRAMS: dict[str, tuple[Callable[[], str], str]] = {
    "convolution": (lambda: conv(8, 56, 64, 64), "3x3, 8x56x56x64 -> 64 bf16"),
    "convolution (ResNet 256)": (lambda: conv(8, 56, 256, 256), "3x3, 8x56x56x256 -> 256 bf16"),
    "conv_net (corpus)": (conv_net, "JAX corpus, level S as tpu-pipeline gets it"),
    "reduce_window": (every_op.reduce_window, "max 3x3/2 on 8x112x112x64 bf16"),
    "sort": (_lowered("sort"), "8 rows of 1024 f32, with i32 payload"),
    "top_k": (_lowered("top_k"), "k=2 of 128 experts, 2048 tokens, f32"),
    "gather": (gather, "embedding 16384 of 32000x4096 bf16"),
}


def main() -> None:
    every_op.print_table(PROGRAMS, __doc__)


if __name__ == "__main__":
    main()
