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


PROGRAMS = {
    "remainder f64": (lambda: binary("remainder", "512x1024", "f64"), "512x1024 f64"),
}


def main() -> None:
    every_op.print_table(PROGRAMS, __doc__)


if __name__ == "__main__":
    main()
