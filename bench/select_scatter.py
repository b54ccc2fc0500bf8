"""
Level S vs level T step time of `hlo.select_and_scatter`, the max-pool gradient of JAX's
CNNs (ResNet's stem: operand 8x112x112x64 bf16, window 3x3, stride 2, padding 1, NHWC,
select GE, scatter add; source 8x56x56x64), next to its HBM roofline (the operand and
the source read, the result written, once each), on v5e and v5p:

    python bench/select_scatter.py [--chip v5e,v5p] [--only NAME]

Level S is the cost model's step time (`shardc.run(timing_only=True)`); level T the
simulator's step time of the kernel `lower-to-tpu` makes (timing only: no values), as
bench/every_op.py measures. One run each.
"""

from __future__ import annotations

import argparse
import math
import time

import shardc
from shardc.hardware.chips import get_chip

BYTES = {"f32": 4, "bf16": 2, "f16": 2, "i32": 4}


def max_pool_grad(n=8, h=112, w=112, c=64, elem="bf16", select="GE") -> tuple[str, int]:
    """The program and its HBM bytes (operand + source + result, once each)."""
    ho, wo = (h + 2 - 3) // 2 + 1, (w + 2 - 3) // 2 + 1
    x, g = f"tensor<{n}x{h}x{w}x{c}x{elem}>", f"tensor<{n}x{ho}x{wo}x{c}x{elem}>"
    text = f"""func.func @main(%x: {x}, %g: {g}, %z: tensor<{elem}>) -> {x} {{
  %r = hlo.select_and_scatter %x, %g, %z, select = {select}, scatter = add, window = [1, 3, 3, 1], strides = [1, 2, 2, 1], padding = [[0, 0], [1, 1], [1, 1], [0, 0]] : ({x}, {g}, tensor<{elem}>) -> {x}
  func.return %r : {x}
}}"""
    nbytes = (2 * n * h * w * c + n * ho * wo * c) * BYTES[elem]
    return text, nbytes


PROGRAMS = {
    "max-pool grad bf16": (lambda: max_pool_grad(), "8x112x112x64, 3x3 / 2, pad 1"),
    "max-pool grad f32": (lambda: max_pool_grad(elem="f32"), "8x112x112x64, 3x3 / 2, pad 1"),
}


def measure(text: str, chip: str) -> tuple[float, float, float]:
    """(level-S step, level-T step, seconds the level-T simulation took)."""
    s = shardc.run(text, timing_only=True, chip=chip).report["step_time_s"]
    kernel = shardc.compile(text, f"lower-to-tpu{{chip={chip}}}")
    start = time.perf_counter()
    t = shardc.run(kernel, timing_only=True, chip=chip).report["step_time_s"]
    return s, t, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chip", default="v5e,v5p")
    parser.add_argument("--only", default=None)
    args = parser.parse_args()
    print("| op | size | chip | HBM roofline | level S | level T | T / S | T / roofline |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for name, (make, size) in PROGRAMS.items():
        if args.only and args.only not in name:
            continue
        text, nbytes = make()
        for chip in args.chip.split(","):
            roof = nbytes / get_chip(chip).hbm_bw
            s, t, _ = measure(text, chip)
            ratio = t / roof if math.isfinite(t) else math.inf
            print(
                f"| {name} | {size} | {chip} | {roof * 1e6:.1f} us | {s * 1e6:.1f} us "
                f"| {t * 1e6:.1f} us | {t / s:.2f} | {ratio:.1f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
