"""
Level S against level T for the ops `lower-to-tpu` gained in issue 15 item 3 part B
(gather, scatter, sort, top_k, new element types), one realistic per-device size each on
one chip (v5e): level S's step (the cost model) and level T's simulated step
(`timing_only`), their ratio, and the kernel's DMA count.

    python bench/lowered_ops.py [--chip v5e]

Sizes: the embedding lookup of the real-size layer on one of 8 devices (2048 tokens of
a 32000 x 4096 bf16 table) and its gradient (scatter add, f32 table), a MoE router's
top-2 of 128 experts for 2048 tokens, sorting 8 rows of 1024 scores, and int8 / uint8
arithmetic on a 2048 x 4096 activation (quantized add; uint8 dequantized to f32), and the
unary ops without a VPU instruction (lowering/unary_math.py) on one of bf16.
"""

from __future__ import annotations

import argparse
import time

MESH = 'spmd.mesh @m = <["x"=1]>\n'


def _fn(args: str, results: str, body: str) -> str:
    return (
        MESH
        + f"func.func @main({args}) -> ({results}) attributes {{spmd.per_device_io}} {{\n"
        + body
        + "\n}"
    )


PROGRAMS = {
    "gather (embedding 2048 of 32000x4096 bf16)": _fn(
        "%t: tensor<32000x4096xbf16>, %i: tensor<2048xi32>",
        "tensor<2048x4096xbf16>",
        "  %r = hlo.gather %t, %i, offset_dims = [1], collapsed_slice_dims = [0], "
        "start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 4096] : "
        "(tensor<32000x4096xbf16>, tensor<2048xi32>) -> tensor<2048x4096xbf16>\n"
        "  func.return %r : tensor<2048x4096xbf16>",
    ),
    "scatter add (gradient 2048 rows into 32000x4096 f32)": _fn(
        "%t: tensor<32000x4096xf32>, %i: tensor<2048x1xi32>, %u: tensor<2048x4096xf32>",
        "tensor<32000x4096xf32>",
        "  %r = hlo.scatter add %t, %i, %u, update_window_dims = [1], inserted_window_dims = "
        "[0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1 : "
        "(tensor<32000x4096xf32>, tensor<2048x1xi32>, tensor<2048x4096xf32>) -> "
        "tensor<32000x4096xf32>\n  func.return %r : tensor<32000x4096xf32>",
    ),
    "top_k (k=2 of 128 experts, 2048 tokens, f32)": _fn(
        "%x: tensor<2048x128xf32>",
        "tensor<2048x2xf32>, tensor<2048x2xi32>",
        "  %v, %i = hlo.top_k %x, k = 2 : tensor<2048x128xf32> -> "
        "(tensor<2048x2xf32>, tensor<2048x2xi32>)\n"
        "  func.return %v, %i : tensor<2048x2xf32>, tensor<2048x2xi32>",
    ),
    "sort (8 rows of 1024 f32, with i32 payload)": _fn(
        "%k: tensor<8x1024xf32>, %v: tensor<8x1024xi32>",
        "tensor<8x1024xf32>, tensor<8x1024xi32>",
        "  %r:2 = hlo.sort %k, %v, dim = 1, comparator = GT, stable : "
        "(tensor<8x1024xf32>, tensor<8x1024xi32>) -> (tensor<8x1024xf32>, tensor<8x1024xi32>)\n"
        "  func.return %r#0, %r#1 : tensor<8x1024xf32>, tensor<8x1024xi32>",
    ),
    "i8 add (2048x4096)": _fn(
        "%a: tensor<2048x4096xi8>, %b: tensor<2048x4096xi8>",
        "tensor<2048x4096xi8>",
        "  %r = hlo.add %a, %b : tensor<2048x4096xi8>\n  func.return %r : tensor<2048x4096xi8>",
    ),
    "log1p, expm1, sign (2048x4096 bf16: f64 vector code)": _fn(
        "%a: tensor<2048x4096xbf16>",
        "tensor<2048x4096xbf16>",
        "  %l = hlo.log1p %a : tensor<2048x4096xbf16>\n"
        "  %e = hlo.expm1 %l : tensor<2048x4096xbf16>\n"
        "  %r = hlo.sign %e : tensor<2048x4096xbf16>\n"
        "  func.return %r : tensor<2048x4096xbf16>",
    ),
    "ui8 -> f32 convert (2048x4096)": _fn(
        "%a: tensor<2048x4096xui8>",
        "tensor<2048x4096xf32>",
        "  %r = hlo.convert %a : (tensor<2048x4096xui8>) -> tensor<2048x4096xf32>\n"
        "  func.return %r : tensor<2048x4096xf32>",
    ),
}


def measure(name: str, text: str, chip: str) -> dict:
    import shardc

    level_s = shardc.run(text, timing_only=True, chip=chip)
    t0 = time.perf_counter()
    kernel = shardc.compile(text, "lower-to-tpu", chip=chip)
    level_t = shardc.run(kernel, timing_only=True, chip=chip)
    wall = time.perf_counter() - t0
    s, t = level_s.report["step_time_s"], level_t.report["step_time_s"]
    dmas = str(kernel).count("tpu.dma_start")
    return {"op": name, "s": s, "t": t, "dmas_static": dmas, "wall": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chip", default="v5e")
    args = parser.parse_args()
    print(f"| op ({args.chip}) | level S step | level T step | T / S | compile + simulate (s) |")
    print("|---|---|---|---|---|")
    for name, text in PROGRAMS.items():
        r = measure(name, text, args.chip)
        print(
            f"| {r['op']} | {r['s'] * 1e6:.1f} us | {r['t'] * 1e6:.1f} us | "
            f"{r['t'] / r['s']:.2f} | {r['wall']:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
