"""
Level S vs level T step time of the ops the "rngl" helper made lower (issue 15 item 3):
rng_bit_generator (dropout's bits of a bf16 transformer layer's activations, batch 8 x
sequence 2048 x model 4096), float remainder and a bf16 embedding-gradient scatter add,
on one chip:

    python bench/rng_remainder_scatter.py [--chip v5e] [--only NAME]

Level S is the cost model's step time (`shardc.run(timing_only=True)`); level T the
simulator's step time of the kernel `lower-to-tpu` makes (timing only: no values), as
bench/every_op.py measures. One run each.
"""

from __future__ import annotations

from shardc.bench import every_op

BITS = (8, 2048, 4096)


def rng(algorithm: str, elem: str = "ui32") -> str:
    b = f"tensor<{'x'.join(map(str, BITS))}x{elem}>"
    n = 3 if algorithm == "PHILOX" else 2
    s = f"tensor<{n}xui64>"
    return f"""func.func @main(%s: {s}) -> ({s}, {b}) {{
  %ns, %b = hlo.rng_bit_generator %s, algorithm = {algorithm} : ({s}) -> ({s}, {b})
  func.return %ns, %b : {s}, {b}
}}"""


def remainder(elem: str) -> str:
    t = f"tensor<2048x4096x{elem}>"
    return f"""func.func @main(%a: {t}, %b: {t}) -> {t} {{
  %r = hlo.remainder %a, %b : {t}
  func.return %r : {t}
}}"""


def scatter_add(rows: int = 32000, width: int = 4096, n: int = 1024) -> str:
    """An embedding table's gradient: n bf16 rows added into a rows x width table."""
    t, u = f"tensor<{rows}x{width}xbf16>", f"tensor<{n}x{width}xbf16>"
    return f"""func.func @main(%t: {t}, %i: tensor<{n}x1xi32>, %u: {u}) -> {t} {{
  %r = hlo.scatter add %t, %i, %u, update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : ({t}, tensor<{n}x1xi32>, {u}) -> {t}
  func.return %r : {t}
}}"""


PROGRAMS = {
    "rng THREE_FRY": (lambda: rng("THREE_FRY"), "8x2048x4096 ui32"),
    "rng PHILOX": (lambda: rng("PHILOX"), "8x2048x4096 ui32, state of 3"),
    "rng PHILOX u64": (lambda: rng("PHILOX", "ui64"), "8x2048x4096 ui64, state of 3"),
    "remainder f32": (lambda: remainder("f32"), "2048x4096 f32"),
    "remainder bf16": (lambda: remainder("bf16"), "2048x4096 bf16"),
    "scatter add bf16": (scatter_add, "1024 rows into 32000x4096 bf16"),
}


def main() -> None:
    every_op.print_table(PROGRAMS, __doc__)


if __name__ == "__main__":
    main()
