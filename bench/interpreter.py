"""
Benchmark of the level-S interpreter against plain numpy doing the same per-device math.

    .venv/bin/python bench/interpreter.py [--repeat 3] [--hidden 4096] [--batch 512]

Workloads (one run, printed as a markdown table of times and ratios):

* Megatron MLP, level S on 8 devices, 8-way model parallel on mesh `["model"=8]`:
  x [batch, hidden] replicated, W1 [hidden, 4*hidden] column-split, b1 split, W2
  [4*hidden, hidden] row-split; each device computes relu(x @ W1_d + b1_d) @ W2_d and one
  all-reduce over "model" sums the partial outputs (the per-device program written by
  hand, as spmd-partition would emit it). Default hidden 4096, batch 512, f32
  (W1 and W2 are 256 MiB each).
* examples/dp_grads.mlir (8 devices, 8 all-reduces interleaved with 17 matmuls).

The numpy baseline is a plain loop over devices doing the same matmuls, adds and maxes,
and the all-reduce as a rank-order sum. "interpreter" times `Executor.run` on the
per-device arguments; "runner" adds splitting the global inputs and assembling the global
outputs (what `shardc-run` does after parsing). Parse time is excluded (reported apart).

Also: the per-op dispatch cost on tiny tensors (a chain of 2000 `hlo.add` on
tensor<4xf32>) against one numpy add, and the cost of one collective rendezvous.

BLAS threads: unless OPENBLAS_NUM_THREADS / OMP_NUM_THREADS are set, the benchmark uses
one BLAS thread. On a busy machine OpenBLAS's spinning threads make small matmuls (like
dp_grads') vary by 10x between runs, for numpy and the interpreter alike; one thread
gives stable ratios. Times are the best of interleaved repetitions.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
from collections.abc import Callable  # noqa: E402 (after the thread settings)
from typing import Any  # noqa: E402 (after the thread settings)

import numpy as np  # noqa: E402 (after the thread settings)
from shardc.interpreter import io  # noqa: E402 (after the thread settings)
from shardc.interpreter.devices import Executor  # noqa: E402 (after the thread settings)
from shardc.interpreter.testing import parse  # noqa: E402 (after the thread settings)

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")


def best_of(fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


# Megatron MLP ---------------------------------------------------------------------------


def megatron_program(batch: int, hidden: int, devices: int) -> str:
    ffn = 4 * hidden
    local = ffn // devices
    s = "#spmd.sharding<@mesh, {}>"
    return f"""
spmd.mesh @mesh = <["model"={devices}]>
func.func @main(%x: tensor<{batch}x{hidden}xf32> {{spmd.sharding = {s.format("[{}, {}]")}}},
                %w1: tensor<{hidden}x{local}xf32> {{spmd.sharding = {s.format('[{}, {"model"}]')}}},
                %b1: tensor<{local}xf32> {{spmd.sharding = {s.format('[{"model"}]')}}},
                %w2: tensor<{local}x{hidden}xf32> {{spmd.sharding = {s.format('[{"model"}, {}]')}}})
    -> (tensor<{batch}x{hidden}xf32> {{spmd.sharding = {s.format("[{}, {}]")}}}) attributes {{spmd.partitioned}} {{
  %h = hlo.dot %x, %w1, contracting_dims = [1] x [0] : (tensor<{batch}x{hidden}xf32>, tensor<{hidden}x{local}xf32>) -> tensor<{batch}x{local}xf32>
  %bb = hlo.broadcast %b1, dims = [1] : (tensor<{local}xf32>) -> tensor<{batch}x{local}xf32>
  %hb = hlo.add %h, %bb : tensor<{batch}x{local}xf32>
  %zero = hlo.constant dense<0.0> : tensor<{batch}x{local}xf32>
  %a = hlo.max %hb, %zero : tensor<{batch}x{local}xf32>
  %y = hlo.dot %a, %w2, contracting_dims = [1] x [0] : (tensor<{batch}x{local}xf32>, tensor<{local}x{hidden}xf32>) -> tensor<{batch}x{hidden}xf32>
  %r = collective.all_reduce add %y on @mesh["model"] : tensor<{batch}x{hidden}xf32>
  func.return %r : tensor<{batch}x{hidden}xf32>
}}"""


def megatron_numpy(per_device: list[list[np.ndarray]]) -> np.ndarray:
    partial = []
    for x, w1, b1, w2 in per_device:
        h = x @ w1
        a = np.maximum(h + b1, np.float32(0))
        partial.append(a @ w2)
    acc = partial[0].copy()
    for p in partial[1:]:
        acc += p
    return acc


# dp_grads -------------------------------------------------------------------------------


def dp_grads_numpy(per_device: list[list[np.ndarray]]) -> list[np.ndarray]:
    grads: list[list[np.ndarray]] = []
    outs = []
    for x, g, *ws in per_device:
        dws = []
        for w in ws:
            dws.append(x.T @ g)
            g = g @ w.T
        outs.append(g)
        grads.append(dws)
    reduced = []
    for k in range(len(grads[0])):
        acc = grads[0][k].copy()
        for d in range(1, len(grads)):
            acc += grads[d][k]
        reduced.append(acc)
    return [outs[0], *reduced]


# Workload runner ------------------------------------------------------------------------


def workload(
    name: str,
    text: str,
    baseline: Callable[[list[list[np.ndarray]]], Any],
    repeat: int,
    seed: int = 0,
) -> dict[str, Any]:
    start = time.perf_counter()
    module = parse(text)
    parse_s = time.perf_counter() - start
    function = io.find_entry(module, None, name)
    sig = io.signature(module, function, name)
    inputs = io.random_inputs(sig, seed)
    executor = Executor(module, name)
    checked = io.check_inputs(sig, inputs, "random")
    per_device = io.split_inputs(sig, checked)
    # numpy gets contiguous copies of the per-device blocks (its best case)
    np_args = [[np.ascontiguousarray(a) for a in args] for args in per_device]

    results: dict[str, Any] = {}

    def run_interp() -> None:
        results["interp"] = executor.run(function, per_device)

    def run_runner() -> None:
        results["runner"] = io.run(executor, sig, inputs)

    def run_numpy() -> None:
        results["numpy"] = baseline(np_args)

    run_interp()  # warm up (constants, plans)
    run_numpy()
    # interleaved, best of `repeat` each: the machine's load affects all three alike
    t_np = t_int = t_run = float("inf")
    for _ in range(repeat):
        t_np = min(t_np, best_of(run_numpy, 1))
        t_int = min(t_int, best_of(run_interp, 1))
        t_run = min(t_run, best_of(run_runner, 1))
    # same numbers
    got = results["interp"][0]
    want = results["numpy"]
    want = want if isinstance(want, list) else [want]
    for g, w in zip(got, want, strict=False):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-3)
    return {
        "name": name,
        "parse_s": parse_s,
        "numpy_s": t_np,
        "interp_s": t_int,
        "runner_s": t_run,
        "devices": sig.devices,
    }


# Dispatch -------------------------------------------------------------------------------


def dispatch(n_ops: int, repeat: int) -> dict[str, float]:
    t = "tensor<4xf32>"
    body = "\n".join(f"  %v{i + 1} = hlo.add %v{i}, %v0 : {t}" for i in range(n_ops))
    text = f"func.func @main(%v0: {t}) -> {t} {{\n{body}\n  func.return %v{n_ops} : {t}\n}}"
    module = parse(text)
    function = io.find_entry(module, None, "dispatch")
    x = np.ones(4, np.float32)
    checked = Executor(module, "dispatch", check_types=True)
    unchecked = Executor(module, "dispatch", check_types=False)
    checked.run(function, [[x]])
    unchecked.run(function, [[x]])
    t_checked = best_of(lambda: checked.run(function, [[x]]), repeat) / n_ops
    t_unchecked = best_of(lambda: unchecked.run(function, [[x]]), repeat) / n_ops

    def raw() -> None:
        v = x
        for _ in range(n_ops):
            v = np.add(v, x)

    t_numpy = best_of(raw, repeat) / n_ops

    from shardc.interpreter.hlo_impls import HloFunctions
    from xdsl.interpreter import Interpreter
    from xdsl.interpreters.func import FuncFunctions

    interp = Interpreter(module)
    interp.register_implementations(HloFunctions())
    interp.register_implementations(FuncFunctions())
    t_xdsl = best_of(lambda: interp.call_op("main", (x,)), repeat) / n_ops

    # one collective rendezvous: a chain of permutes on 8 devices
    k = 200
    body = "\n".join(
        f'  %v{i + 1} = collective.permute %v{i} on @m["x"], shift = 1 : {t}' for i in range(k)
    )
    text = (
        f'spmd.mesh @m = <["x"=8]>\nfunc.func @main(%v0: {t}) -> {t} attributes {{spmd.partitioned}} {{\n'
        f"{body}\n  func.return %v{k} : {t}\n}}"
    )
    module = parse(text)
    function = io.find_entry(module, None, "permutes")
    ex = Executor(module, "permutes")
    args = [[np.full(4, d, np.float32)] for d in range(8)]
    ex.run(function, args)
    t_coll = best_of(lambda: ex.run(function, args), repeat) / k
    return {
        "checked": t_checked,
        "unchecked": t_unchecked,
        "numpy": t_numpy,
        "xdsl": t_xdsl,
        "collective": t_coll,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--batch", type=int, default=512)
    args = p.parse_args(argv)

    t0 = time.perf_counter()
    rows = [
        workload(
            f"Megatron MLP (batch {args.batch}, hidden {args.hidden}, 8-way model parallel)",
            megatron_program(args.batch, args.hidden, 8),
            megatron_numpy,
            args.repeat,
        ),
        workload(
            "examples/dp_grads.mlir (8-way data parallel)",
            open(os.path.join(EXAMPLES, "dp_grads.mlir")).read(),
            dp_grads_numpy,
            max(args.repeat, 15),
        ),
    ]
    print(
        "| workload | devices | numpy loop | interpreter | ratio | runner (split+run+assemble) | ratio | parse |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['name']} | {r['devices']} | {r['numpy_s'] * 1e3:.1f} ms | {r['interp_s'] * 1e3:.1f} ms | "
            f"{r['interp_s'] / r['numpy_s']:.2f}x | {r['runner_s'] * 1e3:.1f} ms | "
            f"{r['runner_s'] / r['numpy_s']:.2f}x | {r['parse_s'] * 1e3:.0f} ms |"
        )
    d = dispatch(2000, max(args.repeat, 5))
    print()
    print("| per-op cost, tensor<4xf32> | time per op |")
    print("|---|---|")
    print(f"| numpy `np.add` alone | {d['numpy'] * 1e6:.2f} µs |")
    print(f"| interpreter `hlo.add` (type checks on, the default) | {d['checked'] * 1e6:.2f} µs |")
    print(f"| interpreter `hlo.add` (check_types=False) | {d['unchecked'] * 1e6:.2f} µs |")
    print(f"| xDSL `Interpreter.call_op`, same impls | {d['xdsl'] * 1e6:.2f} µs |")
    print(f"| one collective.permute rendezvous on 8 devices | {d['collective'] * 1e6:.1f} µs |")
    threads = os.environ.get("OPENBLAS_NUM_THREADS")
    print(f"\n(BLAS threads {threads}; total benchmark time {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
