"""
Complex all_reduce / reduce_scatter at level S and level T (issue 15 items 3 and 5): every
reduction kind lowers (add sums the parts' view; mul, max and min combine each (re, im)
pair as one complex number, lowering/pair_combine.py), and level S charges what the
kernel does (`cost.rs_combine_time` with `ring_combine_ops`' vector ops per element).
Per row: level S's collective time, level T's step time of the lowered kernel (timing
only), their ratio.

    python bench/complex_collectives.py [--shape 512x1024] [--devices 4]
"""

from __future__ import annotations

import argparse

import shardc
from shardc.dialects import collective, spmd
from shardc.hardware.chips import get_chip
from shardc.hardware.cost import CostModel
from shardc.interpreter.testing import parse


def program(dtype: str, kind: str, shape: str, n: int, scatter: bool) -> str:
    rows, *rest = shape.split("x")
    res = "x".join([str(int(rows) // n), *rest]) if scatter else shape
    if scatter:
        line = (
            f'collective.reduce_scatter {kind} %a on @m["x"], dim = 0 : '
            f"(tensor<{shape}x{dtype}>) -> tensor<{res}x{dtype}>"
        )
    else:
        line = f'collective.all_reduce {kind} %a on @m["x"] : tensor<{shape}x{dtype}>'
    return f"""
spmd.mesh @m = <["x"={n}]>
func.func @main(%a: tensor<{shape}x{dtype}>) -> tensor<{res}x{dtype}> attributes {{spmd.per_device_io}} {{
  %r = {line}
  func.return %r : tensor<{res}x{dtype}>
}}
"""


def level_s(text: str, chip: str) -> float:
    module = parse(text)
    (function,) = [o for o in module.walk() if o.name == "func.func"]
    (op,) = [o for o in module.walk() if isinstance(o, collective.CollectiveOp)]
    return CostModel(get_chip(chip), spmd.find_mesh(function)).collective_time(op)


def level_t(text: str, chip: str) -> float:
    kernel = shardc.compile(text, f"lower-to-tpu{{chip={chip}}}")
    return shardc.run(kernel, timing_only=True, chip=chip).report["step_time_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="512x1024")
    parser.add_argument("--devices", type=int, default=4)
    args = parser.parse_args()
    print("| chip | collective | operand | level S (us) | level T (us) | T / S |")
    print("|---|---|---|---:|---:|---:|")
    for dtype in ("complex<f32>", "complex<f64>"):
        for kind in ("add", "mul", "max", "min"):
            for scatter in (False, True):
                for chip in ("v5e", "v5p"):
                    text = program(dtype, kind, args.shape, args.devices, scatter)
                    s, t = level_s(text, chip), level_t(text, chip)
                    name = "reduce_scatter" if scatter else "all_reduce"
                    operand = f"{dtype} {args.shape} over {args.devices}"
                    print(
                        f"| {chip} | {name} {kind} | {operand} | {s * 1e6:.1f} | "
                        f"{t * 1e6:.1f} | {t / s:.4f} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
