"""
How long the level-T simulator takes on a real layer size (issue 7's wall-time target: an
8-device Megatron MLP layer with hidden 4096 simulated in under a minute), and how that
compares with numpy doing the same per-device math.

    python bench/level_t_megatron.py [--hidden 4096] [--tokens 2048] [--chip v5e] [--plot PNG]

The layer is examples/megatron_mlp.mlir at size: x[tokens, hidden] @ W1[hidden, 4 hidden],
bias, relu, @ W2[4 hidden, hidden], on a v5e 2x4 slice (batch on "data", the FFN dimension
on "model"). It is compiled with `tpu-pipeline` and run on the level-T simulator with real
values (every DMA moves its bytes, every MXU tile is multiplied), then compared with the
level-S run of the same program before `lower-to-tpu`. Wall times are one run each (the
machine is shared); the ratio to numpy is measured in the same run. A second table gives
the level-S and level-T step times per chip (`--chips`, timing only) side by side.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import shardc


def megatron_mlp(tokens: int, hidden: int) -> str:
    """The Megatron MLP of examples/megatron_mlp.mlir, at a given size."""
    ffn = 4 * hidden
    rows = '#spmd.sharding<@mesh, [{"data"}, {}]>'
    t_x, t_w1, t_b = (
        f"tensor<{tokens}x{hidden}xf32>",
        f"tensor<{hidden}x{ffn}xf32>",
        f"tensor<{ffn}xf32>",
    )
    t_h, t_w2 = f"tensor<{tokens}x{ffn}xf32>", f"tensor<{ffn}x{hidden}xf32>"
    return f"""spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @main(%x: {t_x} {{spmd.sharding = {rows}}},
                %w1: {t_w1} {{spmd.sharding = #spmd.sharding<@mesh, [{{}}, {{"model"}}]>}},
                %b1: {t_b} {{spmd.sharding = #spmd.sharding<@mesh, [{{"model"}}]>}},
                %w2: {t_w2} {{spmd.sharding = #spmd.sharding<@mesh, [{{"model"}}, {{}}]>}})
    -> ({t_x} {{spmd.sharding = {rows}}}) {{
  %h = hlo.dot %x, %w1, contracting_dims = [1] x [0] : ({t_x}, {t_w1}) -> {t_h}
  %bb = hlo.broadcast %b1, dims = [1] : ({t_b}) -> {t_h}
  %hb = hlo.add %h, %bb : {t_h}
  %zero = hlo.constant dense<0.0> : {t_h}
  %a = hlo.max %hb, %zero : {t_h}
  %y = hlo.dot %a, %w2, contracting_dims = [1] x [0] : ({t_h}, {t_w2}) -> {t_x}
  func.return %y : {t_x}
}}
"""


def numpy_per_device(inputs: dict[str, np.ndarray]) -> float:
    """Seconds numpy takes for the 8 devices' local math (2 data x 4 model shards)."""
    x, w1, b1, w2 = (inputs[f"in_{i}"] for i in range(4))
    start = time.perf_counter()
    for d in range(2):
        xs = np.array_split(x, 2)[d]
        for m in range(4):
            h = xs @ np.array_split(w1, 4, axis=1)[m] + np.array_split(b1, 4)[m]
            np.maximum(h, 0) @ np.array_split(w2, 4, axis=0)[m]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--chip", default="v5e")
    parser.add_argument(
        "--chips", nargs="+", default=["v5e", "v5p"], help="chips of the level S / T step table"
    )
    parser.add_argument(
        "--plot", metavar="PNG", help="also draw the level-T run's timeline (needs matplotlib)"
    )
    args = parser.parse_args()
    text = megatron_mlp(args.tokens, args.hidden)

    t0 = time.perf_counter()
    name = f"megatron_mlp (tokens {args.tokens}, hidden {args.hidden})"
    level_s = shardc.compile(text, "spmd-pipeline", chip=args.chip, filename=name)
    kernel = shardc.compile(text, "tpu-pipeline", chip=args.chip, filename=name)
    compile_s = time.perf_counter() - t0

    rng = np.random.default_rng(0)
    sig = [
        (args.tokens, args.hidden),
        (args.hidden, 4 * args.hidden),
        (4 * args.hidden,),
        (4 * args.hidden, args.hidden),
    ]
    inputs = {
        f"in_{i}": (rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32)
        for i, s in enumerate(sig)
    }

    t0 = time.perf_counter()
    s_result = shardc.run(level_s, inputs)
    level_s_wall = time.perf_counter() - t0
    t0 = time.perf_counter()
    t_result = shardc.run(kernel, inputs)
    level_t_wall = time.perf_counter() - t0
    numpy_wall = numpy_per_device(inputs)

    got, want = t_result.outputs["out_0"], s_result.outputs["out_0"]
    err = float(np.max(np.abs(got - want)) / max(1e-30, float(np.max(np.abs(want)))))
    rs, rt = s_result.report, t_result.report
    print(
        f"Megatron MLP, tokens {args.tokens}, hidden {args.hidden}, FFN {4 * args.hidden}, f32, "
        f"{args.chip} 2x4 (8 devices)\n"
    )
    print("| | wall time (s) | x numpy | simulated step | roofline bound |")
    print("|---|---|---|---|---|")
    print(f"| numpy, the 8 devices' local math | {numpy_wall:.2f} | 1.00 | | |")
    print(
        f"| level S (interpreter) | {level_s_wall:.2f} | {level_s_wall / numpy_wall:.2f} | "
        f"{rs['step_time_s'] * 1e3:.3f} ms | {rs['roofline_time_s'] * 1e3:.3f} ms |"
    )
    print(
        f"| level T (simulator) | {level_t_wall:.2f} | {level_t_wall / numpy_wall:.2f} | "
        f"{rt['step_time_s'] * 1e3:.3f} ms | {rt['roofline_time_s'] * 1e3:.3f} ms |"
    )
    print(
        f"\ncompile (spmd-pipeline and tpu-pipeline): {compile_s:.2f} s; level T vs level S: "
        f"max relative difference {err:.2e}; level-T wall time target < 60 s: "
        f"{'met' if level_t_wall < 60 else 'MISSED'}"
    )
    print()
    print("\n".join(step_table(text, name, args.chips)))
    if args.plot:
        t_result.plot(args.plot)
        print(f"\nwrote {args.plot}")


def step_table(text: str, name: str, chips: list[str]) -> list[str]:
    """
    Level S and level T step time of the layer per chip (`--timing-only`, issue 14 item
    4: level T within 15% of level S; a miss is flagged): the program `lower-to-tpu`
    receives in `tpu-pipeline` and the kernel it makes; and level T's exposed
    communication.
    """
    rows = [
        "| chip | level S step | level T step | T / S | level T exposed comm |",
        "|---|---|---|---|---|",
    ]
    for chip in chips:
        level_s = shardc.compile(text, "spmd-pipeline", chip=chip, filename=name)
        kernel = shardc.compile(text, "tpu-pipeline", chip=chip, filename=name)
        s = shardc.run(level_s, timing_only=True, chip=chip).report["step_time_s"]
        report = shardc.run(kernel, timing_only=True, chip=chip).report
        t, exposed = report["step_time_s"], report.get("exposed_comm_time_s", 0.0)
        flag = "" if 0.85 <= t / s <= 1.15 else " **(miss)**"
        rows.append(
            f"| {chip} | {s * 1e3:.3f} ms | {t * 1e3:.3f} ms | {t / s:.2f}{flag} | "
            f"{exposed * 1e3:.3f} ms |"
        )
    return rows


if __name__ == "__main__":
    main()
