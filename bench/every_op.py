"""
Level S vs level T step time of the ops issue 15 item 3 made lower (while, case, pad,
reverse, reduce_window, convolution, CHLO's special functions), one realistic size each,
on one v5e chip:

    python bench/every_op.py [--chip v5e] [--only NAME]

Level S is the cost model's step time of the program (`shardc.run(timing_only=True)`);
level T is the simulator's step time of the kernel `lower-to-tpu` makes from it (timing
only: no values). One run each; the ratio T / S is what the table reports.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import shardc


def scan(steps: int = 8, rows: int = 1024, width: int = 2048) -> str:
    """JAX's scan of a tanh MLP layer over stacked weights (a counted hlo.while)."""
    x, w = f"tensor<{rows}x{width}xbf16>", f"tensor<{steps}x{width}x{width}xbf16>"
    m = f"tensor<{width}x{width}xbf16>"
    return f"""func.func @main(%x0: {x}, %ws: {w}) -> {x} {{
  %c0 = hlo.constant dense<0> : tensor<i32>
  %r:3 = hlo.while(%ws_ = %ws, %i = %c0, %x = %x0) : {w}, tensor<i32>, {x} cond {{
    %n = hlo.constant dense<{steps}> : tensor<i32>
    %p = hlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    hlo.return %p : tensor<i1>
  }} do {{
    %z = hlo.constant dense<0> : tensor<i32>
    %s = hlo.dynamic_slice %ws_ [%i, %z, %z] sizes = [1, {width}, {width}] : ({w}, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x{width}x{width}xbf16>
    %wi = hlo.reshape %s : (tensor<1x{width}x{width}xbf16>) -> {m}
    %h = hlo.dot %x, %wi, contracting_dims = [1] x [0] : ({x}, {m}) -> {x}
    %y = hlo.tanh %h : {x}
    %one = hlo.constant dense<1> : tensor<i32>
    %i1 = hlo.add %i, %one : tensor<i32>
    hlo.return %ws_, %i1, %y : {w}, tensor<i32>, {x}
  }}
  func.return %r#2 : {x}
}}"""


def case(rows: int = 2048, width: int = 4096) -> str:
    x = f"tensor<{rows}x{width}xbf16>"
    return f"""func.func @main(%x: {x}) -> {x} {{
  %k = hlo.constant dense<1> : tensor<i32>
  %r = hlo.case %k -> ({x}) {{
    %y = hlo.add %x, %x : {x}
    hlo.return %y : {x}
  }}, {{
    %y = hlo.tanh %x : {x}
    hlo.return %y : {x}
  }}
  func.return %r : {x}
}}"""


def pad() -> str:
    x, r = "tensor<8x56x56x256xbf16>", "tensor<8x58x58x256xbf16>"
    return f"""func.func @main(%x: {x}, %v: tensor<bf16>) -> {r} {{
  %r = hlo.pad %x, %v, low = [0, 1, 1, 0], high = [0, 1, 1, 0], interior = [0, 0, 0, 0] : ({x}, tensor<bf16>) -> {r}
  func.return %r : {r}
}}"""


def reverse() -> str:
    x = "tensor<2048x4096xbf16>"
    return f"""func.func @main(%x: {x}) -> {x} {{
  %r = hlo.reverse %x, dims = [0] : {x}
  func.return %r : {x}
}}"""


def reduce_window() -> str:
    """ResNet's stem max pool: 3x3, stride 2, padding 1."""
    x, r = "tensor<8x112x112x64xbf16>", "tensor<8x56x56x64xbf16>"
    return f"""func.func @main(%x: {x}, %init: tensor<bf16>) -> {r} {{
  %r = hlo.reduce_window max %x, %init, window = [1, 3, 3, 1], strides = [1, 2, 2, 1], padding = [[0, 0], [1, 1], [1, 1], [0, 0]] : ({x}, tensor<bf16>) -> {r}
  func.return %r : {r}
}}"""


def convolution() -> str:
    """A ResNet stage-2 3x3 convolution, 64 -> 64 features, batch 8, 56x56."""
    x, w = "tensor<8x56x56x64xbf16>", "tensor<3x3x64x64xbf16>"
    return f"""func.func @main(%x: {x}, %w: {w}) -> {x} {{
  %r = hlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {{pad = [[1, 1], [1, 1]]}} : ({x}, {w}) -> {x}
  func.return %r : {x}
}}"""


def special(op: str, dtype: str, rows: int = 2048, width: int = 4096) -> Callable[[], str]:
    """A CHLO special function (lowering/special_functions.py: f64 vector code), e.g. the
    erf_inv `jax.random.normal` samples with, on one activation."""
    x = f"tensor<{rows}x{width}x{dtype}>"

    def make() -> str:
        return f"""func.func @main(%x: {x}) -> {x} {{
  %r = hlo.{op} %x : {x}
  func.return %r : {x}
}}"""

    return make


PROGRAMS = {
    "while (scan, 8 steps)": (scan, "x 1024x2048, W 8x2048x2048 bf16"),
    "case": (case, "2048x4096 bf16"),
    "pad": (pad, "8x56x56x256 bf16, +1 per spatial edge"),
    "reverse": (reverse, "2048x4096 bf16, dim 0"),
    "reduce_window": (reduce_window, "max 3x3/2 on 8x112x112x64 bf16"),
    "convolution": (convolution, "3x3, 8x56x56x64 -> 64 bf16"),
    "erf_inv (jax.random.normal)": (special("erf_inv", "f32"), "2048x4096 f32"),
    "lgamma": (special("lgamma", "f32"), "2048x4096 f32"),
    "asin": (special("asin", "bf16"), "2048x4096 bf16"),
}


def measure(text: str, chip: str) -> tuple[float, float, float]:
    """(level-S step, level-T step, seconds the level-T simulation took)."""
    s = shardc.run(text, timing_only=True, chip=chip).report["step_time_s"]
    kernel = shardc.compile(text, f"lower-to-tpu{{chip={chip}}}")
    start = time.perf_counter()
    t = shardc.run(kernel, timing_only=True, chip=chip).report["step_time_s"]
    return s, t, time.perf_counter() - start


def print_table(programs: dict, description: str | None) -> None:
    """The level S / level T table of `programs` (name -> (make the text, size)), with
    the `--chip` and `--only` options; shared by the other per-op benchmarks."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--chip", default="v5e")
    parser.add_argument("--only", default=None)
    args = parser.parse_args()
    print("| op | size | level S | level T | T / S | simulated in |")
    print("|---|---|---:|---:|---:|---:|")
    for name, (make, size) in programs.items():
        if args.only and args.only not in name:
            continue
        s, t, wall = measure(make(), args.chip)
        print(
            f"| {name} | {size} | {s * 1e6:.1f} us | {t * 1e6:.1f} us | {t / s:.2f} "
            f"| {wall:.1f} s |",
            flush=True,
        )


def main() -> None:
    print_table(PROGRAMS, __doc__)


if __name__ == "__main__":
    main()
