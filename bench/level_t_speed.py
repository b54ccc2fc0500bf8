"""
How fast level T's timing-only mode is at real sizes (issue 15 item 4): the simulator's
cost must follow the number of DMAs and blocks, not bytes, and a real-size transformer
layer must simulate in at most 15 s and 1 GiB.

    python bench/level_t_speed.py [--chip v5e] [--only NAME] [--profile OUT]

Programs: examples/real_size/transformer_layer.mlir (batch 8, sequence 2048, model 4096,
FFN 16384, bf16, 2x4 mesh) and bench/level_t_megatron.py's Megatron MLP (tokens 2048,
hidden 4096, f32). Each is compiled with `tpu-pipeline` and run with `timing_only=True`
in a fresh process (so its peak RSS is its own): compile and simulation wall time, peak
RSS of the whole process, simulated events (the event loop's resumes, drains and
completions), DMAs, and events per CPU second of simulation. One run each; the machine may
be shared, so the wall times are upper bounds and the CPU times are what counts.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ("transformer_layer", "megatron_mlp")


def source(name: str) -> str:
    if name == "transformer_layer":
        return (ROOT / "examples/real_size/transformer_layer.mlir").read_text()
    from shardc.bench.level_t_megatron import megatron_mlp

    return megatron_mlp(2048, 4096)


def measure(name: str, chip: str, profile: str | None = None) -> dict:
    """Compile and simulate one program (timing only) in this process."""
    import shardc

    t0, c0 = time.perf_counter(), time.process_time()
    kernel = shardc.compile(source(name), "tpu-pipeline", chip=chip, filename=name)
    compile_s, compile_cpu = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    if profile:
        import cProfile

        with cProfile.Profile() as prof:
            result = shardc.run(kernel, timing_only=True, chip=chip)
        prof.dump_stats(profile)
    else:
        result = shardc.run(kernel, timing_only=True, chip=chip)
    run_s, run_cpu = time.perf_counter() - t0, time.process_time() - c0
    sim = result.timeline.sim
    return {
        "program": name,
        "compile_s": compile_s,
        "compile_cpu_s": compile_cpu,
        "run_s": run_s,
        "run_cpu_s": run_cpu,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "events": sim.events.popped,
        "dmas": len(sim.dmas),
        "step_time_s": result.report["step_time_s"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chip", default="v5e")
    parser.add_argument("--only", choices=PROGRAMS, help="run one program in this process")
    parser.add_argument("--profile", metavar="OUT", help="with --only: cProfile the run")
    args = parser.parse_args()
    if args.only:
        print(json.dumps(measure(args.only, args.chip, args.profile)))
        return
    rows = []
    for name in PROGRAMS:
        cmd = [sys.executable, __file__, "--only", name, "--chip", args.chip]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    print(f"level T --timing-only on {args.chip}, one run each (fresh process per program)\n")
    print(
        "| program | compile wall / CPU (s) | simulate wall / CPU (s) | peak RSS | events | "
        "DMAs | events per CPU s | simulated step |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['program']} | {r['compile_s']:.1f} / {r['compile_cpu_s']:.1f} | "
            f"{r['run_s']:.1f} / {r['run_cpu_s']:.1f} | {r['peak_rss_bytes'] / 2**20:.0f} MiB | "
            f"{r['events']} | {r['dmas']} | {r['events'] / max(r['run_cpu_s'], 1e-9):.0f} | "
            f"{r['step_time_s'] * 1e3:.3f} ms |"
        )
    print(
        "\nCPU: the process's own (time.process_time), what the wall time would be on an "
        "idle core; the machine may be shared."
    )


if __name__ == "__main__":
    main()
