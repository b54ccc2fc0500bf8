"""
Level S vs level T step time of the element types the "dtypes" helper made compute at
level T (issue 15 item 3): f64 remainder, sub-byte integers, complex numbers and f8
reductions, on one chip:

    python bench/dtypes_ops.py [--chip v5e] [--only NAME]

Level S is the cost model's step time (`shardc.run(timing_only=True)`); level T the
simulator's step time of the kernel `lower-to-tpu` makes (timing only: no values), as
bench/every_op.py measures. One run each.
"""

from __future__ import annotations

from shardc.bench import every_op


def binary(op: str, shape: str, elem: str) -> str:
    t = f"tensor<{shape}x{elem}>"
    return f"""func.func @main(%a: {t}, %b: {t}) -> {t} {{
  %r = hlo.{op} %a, %b : {t}
  func.return %r : {t}
}}"""


def dot(m: int, k: int, n: int, elem: str, out: str) -> str:
    a, b, r = (f"tensor<{x}x{y}x{e}>" for x, y, e in ((m, k, elem), (k, n, elem), (m, n, out)))
    return f"""func.func @main(%a: {a}, %b: {b}) -> {r} {{
  %r = hlo.dot %a, %b, contracting_dims = [1] x [0] : ({a}, {b}) -> {r}
  func.return %r : {r}
}}"""


def reduce_rows(shape: str, elem: str, rows: int) -> str:
    t, r = f"tensor<{shape}x{elem}>", f"tensor<{rows}x{elem}>"
    return f"""func.func @main(%a: {t}) -> {r} {{
  %r = hlo.reduce add %a, dims = [1] : ({t}) -> {r}
  func.return %r : {r}
}}"""


PROGRAMS = {
    "remainder f64": (lambda: binary("remainder", "512x1024", "f64"), "512x1024 f64"),
    "add i4": (lambda: binary("add", "2048x4096", "i4"), "2048x4096 i4"),
    "shift_left ui4": (lambda: binary("shift_left", "2048x4096", "ui4"), "2048x4096 ui4"),
    "reduce add i4": (lambda: reduce_rows("2048x4096", "i4", 2048), "2048x4096 i4 rows"),
    "dot i4 -> i32": (lambda: dot(2048, 4096, 4096, "i4", "i32"), "2048x4096 @ 4096x4096"),
    "add complex<f32>": (lambda: binary("add", "1024x1024", "complex<f32>"), "1024x1024 c64"),
    "mul complex<f32>": (lambda: binary("mul", "1024x1024", "complex<f32>"), "1024x1024 c64"),
    "div complex<f64>": (lambda: binary("div", "1024x1024", "complex<f64>"), "1024x1024 c128"),
    "reduce add f8E4M3FN": (
        lambda: reduce_rows("2048x4096", "f8E4M3FN", 2048),
        "2048x4096 f8 rows, f32 accumulator",
    ),
    "dot f8E4M3FN": (
        lambda: dot(2048, 4096, 4096, "f8E4M3FN", "f8E4M3FN"),
        "2048x4096 @ 4096x4096, f32 accumulator",
    ),
    "dot complex<f32>": (
        lambda: dot(1024, 1024, 1024, "complex<f32>", "complex<f32>"),
        "1024x1024 @ 1024x1024 c64",
    ),
}


def main() -> None:
    every_op.print_table(PROGRAMS, __doc__)


if __name__ == "__main__":
    main()
