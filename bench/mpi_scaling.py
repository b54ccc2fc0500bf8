"""
Level S over MPI (issue 17): the same level-S run in process and under `mpirun -n K` for
K = 2, 4, 8, on this machine. Per run: wall time (the whole command: start-up, parse,
inputs, run, outputs), the speedup and efficiency (speedup / K) over in process, peak
memory per rank (max RSS), and the bytes each rank sends (what would cross the network
between hosts). Every MPI run's outputs are checked bit-identical to the in-process run's.

    python bench/mpi_scaling.py [--tokens N] [--dp-width N] [--dp-tokens N] [--ranks 2,4,8]

Programs (written here as level G, compiled once with spmd-pipeline by shardc-opt):

* megatron: the Megatron MLP (bf16, model 4096, FFN 16384) on a v5e 2x4 mesh,
  data x model, `--tokens` rows of batch x sequence (the issue's real size, 8 x 2048 =
  16384, is the default: ~100 s in process on 2 cores);
* dp64: a data-parallel training step (forward, backward, gradient all_reduce, SGD) of a
  2-layer f32 MLP with square `--dp-width` weights (a real layer: 4096; in process a run
  holds every device's gradients, 64 x 4 x width^2 x 4 bytes, so on a shared 23 GB
  machine 2048 is what fits), `--dp-tokens` per device, on 64 devices.

Ranks beyond the machine's cores cannot run faster: the interesting columns are memory per
rank (each rank holds its devices' arrays only) and bytes sent (a cross-rank all_reduce
passes one partial sum along its group's ranks in the in-process order, bit-identical,
and the last rank sends the result back: interpreter/mpi_chain.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BIN = Path(sys.executable).parent
ENV = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def megatron(tokens: int) -> str:
    bf = "bf16"
    return f"""spmd.mesh @mesh = <["data"=2, "model"=4]>
func.func @main(%x: tensor<{tokens}x4096x{bf}> {{spmd.sharding = #spmd.sharding<@mesh, [{{"data"}}, {{}}]>}},
    %a: tensor<4096x16384x{bf}> {{spmd.sharding = #spmd.sharding<@mesh, [{{}}, {{"model"}}]>}},
    %b: tensor<16384x4096x{bf}> {{spmd.sharding = #spmd.sharding<@mesh, [{{"model"}}, {{}}]>}})
    -> (tensor<{tokens}x4096x{bf}> {{spmd.sharding = #spmd.sharding<@mesh, [{{"data"}}, {{}}]>}}) {{
  %h = hlo.dot %x, %a, contracting_dims = [1] x [0] : (tensor<{tokens}x4096x{bf}>, tensor<4096x16384x{bf}>) -> tensor<{tokens}x16384x{bf}>
  %r = hlo.tanh %h : tensor<{tokens}x16384x{bf}>
  %y = hlo.dot %r, %b, contracting_dims = [1] x [0] : (tensor<{tokens}x16384x{bf}>, tensor<16384x4096x{bf}>) -> tensor<{tokens}x4096x{bf}>
  func.return %y : tensor<{tokens}x4096x{bf}>
}}
"""


def dp64(width: int, tokens: int = 128) -> str:
    n, d, h, o = 64 * tokens, width, width, width
    f = "f32"
    sh = '{spmd.sharding = #spmd.sharding<@mesh, [{"data"}, {}]>}'
    return f"""spmd.mesh @mesh = <["data"=64]>
func.func @main(%x: tensor<{n}x{d}x{f}> {sh}, %t: tensor<{n}x{o}x{f}> {sh},
                %w1: tensor<{d}x{h}x{f}>, %w2: tensor<{h}x{o}x{f}>)
    -> (tensor<{d}x{h}x{f}>, tensor<{h}x{o}x{f}>) {{
  %hh = hlo.dot %x, %w1, contracting_dims = [1] x [0] : (tensor<{n}x{d}x{f}>, tensor<{d}x{h}x{f}>) -> tensor<{n}x{h}x{f}>
  %a = hlo.tanh %hh : tensor<{n}x{h}x{f}>
  %y = hlo.dot %a, %w2, contracting_dims = [1] x [0] : (tensor<{n}x{h}x{f}>, tensor<{h}x{o}x{f}>) -> tensor<{n}x{o}x{f}>
  %dy = hlo.sub %y, %t : tensor<{n}x{o}x{f}>
  %dw2 = hlo.dot %a, %dy, contracting_dims = [0] x [0] : (tensor<{n}x{h}x{f}>, tensor<{n}x{o}x{f}>) -> tensor<{h}x{o}x{f}>
  %da = hlo.dot %dy, %w2, contracting_dims = [1] x [1] : (tensor<{n}x{o}x{f}>, tensor<{h}x{o}x{f}>) -> tensor<{n}x{h}x{f}>
  %a2 = hlo.mul %a, %a : tensor<{n}x{h}x{f}>
  %dh = hlo.mul %da, %a2 : tensor<{n}x{h}x{f}>
  %dw1 = hlo.dot %x, %dh, contracting_dims = [0] x [0] : (tensor<{n}x{d}x{f}>, tensor<{n}x{h}x{f}>) -> tensor<{d}x{h}x{f}>
  %lr1 = hlo.constant dense<0.01> : tensor<{d}x{h}x{f}>
  %lr2 = hlo.constant dense<0.01> : tensor<{h}x{o}x{f}>
  %s1 = hlo.mul %dw1, %lr1 : tensor<{d}x{h}x{f}>
  %s2 = hlo.mul %dw2, %lr2 : tensor<{h}x{o}x{f}>
  %n1 = hlo.sub %w1, %s1 : tensor<{d}x{h}x{f}>
  %n2 = hlo.sub %w2, %s2 : tensor<{h}x{o}x{f}>
  func.return %n1, %n2 : tensor<{d}x{h}x{f}>, tensor<{h}x{o}x{f}>
}}
"""


def _compile(text: str, tmp: Path, name: str) -> Path:
    src, out = tmp / f"{name}.g.mlir", tmp / f"{name}.s.mlir"
    src.write_text(text)
    cmd = [str(BIN / "shardc-opt"), str(src), "-p", "spmd-pipeline", "-o", str(out)]
    subprocess.run(cmd, check=True)
    return out


def _in_process(prog: Path, tmp: Path) -> dict[str, float]:
    code = (
        "import resource, sys\n"
        "from shardc.tools.shardc_run import main\n"
        "code = main(sys.argv[1:])\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    start = time.perf_counter()
    cmd = [sys.executable, "-c", code, str(prog), "-q", f"--outputs={tmp / 'ref.npz'}"]
    done = subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    return {"wall": wall, "rss": int(done.stderr.split()[-1]), "sent": 0}


def _under_mpi(prog: Path, tmp: Path, k: int) -> dict[str, float]:
    stats = tmp / f"stats{k}.{{rank}}.json"
    cmd = [str(BIN / "mpirun"), "-n", str(k), "--oversubscribe", "--bind-to", "none"]
    cmd += [str(BIN / "shardc-run"), str(prog), "-q", f"--outputs={tmp / f'out{k}.npz'}"]
    start = time.perf_counter()
    subprocess.run(
        cmd, check=True, stdout=subprocess.DEVNULL, env={**ENV, "SHARDC_MPI_STATS": str(stats)}
    )
    wall = time.perf_counter() - start
    ranks = [json.loads(Path(str(stats).format(rank=r)).read_text()) for r in range(k)]
    ref, got = np.load(tmp / "ref.npz"), np.load(tmp / f"out{k}.npz")
    identical = all(ref[n].tobytes() == got[n].tobytes() for n in ref.files)
    return {
        "wall": wall,
        "rss": max(r["max_rss_bytes"] for r in ranks),
        "sent": max(r["bytes_sent"] for r in ranks),
        "identical": identical,
    }


def _mib(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, default=16384, help="megatron rows (batch x seq)")
    p.add_argument("--dp-width", type=int, default=2048, help="dp64 weights: width x width")
    p.add_argument("--dp-tokens", type=int, default=128, help="dp64 tokens per device")
    p.add_argument("--ranks", default="2,4,8")
    args = p.parse_args()
    ranks = [int(k) for k in args.ranks.split(",")]
    print(f"{os.cpu_count()} cores; wall of the whole shardc-run command; efficiency =")
    print("speedup / ranks; memory = the largest rank's max RSS; sent = the most any rank sent.\n")
    print(
        "| program | run | wall | speedup | efficiency | peak memory per rank | bytes sent per rank | outputs |"
    )
    print("|---|---|---|---|---|---|---|---|")
    programs = [
        (f"megatron MLP, 8 devices, {args.tokens}x4096 bf16", megatron(args.tokens), "megatron"),
        (
            f"DP step, 64 devices, {args.dp_width}x{args.dp_width} f32 weights, "
            f"64x{args.dp_tokens} tokens",
            dp64(args.dp_width, args.dp_tokens),
            "dp64",
        ),
    ]
    for title, text, name in programs:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            prog = _compile(text, tmp, name)
            base = _in_process(prog, tmp)
            print(
                f"| {title} | in process | {base['wall']:.1f} s | 1.00 | 1.00 | "
                f"{_mib(base['rss'])} | 0 | reference |",
                flush=True,
            )
            for k in ranks:
                r = _under_mpi(prog, tmp, k)
                speedup = base["wall"] / r["wall"]
                same = "bit-identical" if r["identical"] else "DIFFER"
                print(
                    f"| | mpirun -n {k} | {r['wall']:.1f} s | {speedup:.2f} | "
                    f"{speedup / k:.2f} | {_mib(r['rss'])} | {_mib(r['sent'])} | {same} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
