"""
Whether `spmd-propagate` (or the whole `spmd-pipeline`) grows faster than the program, on
bench/partition_speed.py's generated programs (issue 14 item 7), told apart from what a
shared machine adds:

    python bench/propagate_growth.py [--sizes 1000 10000 50000] [--pipeline]

1. Work: every function's call count under cProfile (the collector off), from one size to
   the next. Call counts do not depend on the machine's load: a function called more than
   1.03x the growth in ops is listed (a superlinear walk, use-list scan or revisit would
   show there).
2. Time: CPU seconds (`time.process_time`) of the pass, and the part of them spent in
   Python's cyclic garbage collector (`gc.callbacks`). A full collection traverses every
   live object (the whole module), so it costs in proportion to the program and lands in
   whichever pass crosses the collector's threshold: one full collection in a pass makes
   that pass look superlinear between two sizes. The growth without it is the pass's own.
   With `--pipeline`, the same for every pass of `spmd-pipeline` (micro-batch on).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import itertools
import pstats
import time
from collections.abc import Callable

from shardc.bench.partition_speed import program
from shardc.dialects import make_context
from shardc.parsing import parse_and_verify
from shardc.passes.spmd_pipeline import SpmdPipelinePass
from shardc.passes.spmd_propagate import SpmdPropagatePass
from xdsl.passes import ModulePass

_GC = [0.0, 0.0]
"""Seconds spent in the collector so far, and the start of the running collection."""


def _gc_clock(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        _GC[1] = time.process_time()
    else:
        _GC[0] += time.process_time() - _GC[1]


def call_counts(n_ops: int) -> dict[str, int]:
    """Calls per function of one `spmd-propagate` on `program(n_ops)` (collector off)."""
    ctx = make_context()
    module = parse_and_verify(ctx, program(n_ops), "bench")
    gc.collect()
    gc.disable()
    profile = cProfile.Profile()
    profile.enable()
    SpmdPropagatePass().apply(ctx, module)
    profile.disable()
    gc.enable()
    stats = pstats.Stats(profile).stats  # pyright: ignore[reportAttributeAccessIssue]
    return {f"{f.rsplit('/', 1)[-1]}:{line}({name})": v[1] for (f, line, name), v in stats.items()}


def pass_times(n_ops: int, pipeline: bool) -> dict[str, tuple[float, float]]:
    """Pass name -> (CPU s, of which in the collector) on `program(n_ops)`."""
    ctx = make_context()
    module = parse_and_verify(ctx, program(n_ops), "bench")
    gc.collect()
    times: dict[str, tuple[float, float]] = {}
    last = [time.process_time(), _GC[0]]

    def after(p: ModulePass) -> None:
        now, in_gc = time.process_time(), _GC[0]
        cpu, coll = times.get(p.name, (0.0, 0.0))
        times[p.name] = (cpu + now - last[0], coll + in_gc - last[1])
        last[:] = [time.process_time(), _GC[0]]

    if pipeline:
        SpmdPipelinePass(micro_batch=True).run(ctx, module, after)
    else:
        p = SpmdPropagatePass()
        p.apply(ctx, module)
        after(p)
    return times


def _growth(rows: dict[int, dict[str, tuple[float, float]]], key: Callable[..., float]) -> str:
    return ", ".join(
        f"{n0}->{n1} {key(rows[n1]) / key(rows[n0]):.2f}x" for n0, n1 in itertools.pairwise(rows)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 50_000])
    parser.add_argument("--pipeline", action="store_true", help="every pass of spmd-pipeline")
    args = parser.parse_args()
    counts = {n: call_counts(n) for n in args.sizes}
    for n0, n1 in itertools.pairwise(args.sizes):
        ratio = n1 / n0
        over = [
            f for f, c in counts[n1].items() if c > 50 and c > 1.03 * ratio * counts[n0].get(f, 0)
        ]
        total = sum(counts[n1].values()) / sum(counts[n0].values())
        print(
            f"calls {n0} -> {n1} ({ratio:.0f}x ops): all functions {total:.2f}x; "
            f"superlinear: {', '.join(over) or 'none'}"
        )
    gc.callbacks.append(_gc_clock)
    rows = {n: pass_times(n, args.pipeline) for n in args.sizes}
    print(
        "\n| pass | "
        + " | ".join(f"{n} ops: CPU s (in gc)" for n in args.sizes)
        + " | growth | growth without gc |"
    )
    print("|---" * (len(args.sizes) + 3) + "|")
    names = list(rows[args.sizes[0]])
    for name in [*names, "total"] if len(names) > 1 else names:

        def cpu(r: dict[str, tuple[float, float]], name: str = name) -> float:
            return sum(r[k][0] for k in names) if name == "total" else r[name][0]

        def own(r: dict[str, tuple[float, float]], name: str = name) -> float:
            return cpu(r) - (sum(r[k][1] for k in names) if name == "total" else r[name][1])

        cells = " | ".join(
            f"{cpu(rows[n]):.3f} ({cpu(rows[n]) - own(rows[n]):.3f})" for n in args.sizes
        )
        print(f"| {name} | {cells} | {_growth(rows, cpu)} | {_growth(rows, own)} |")


if __name__ == "__main__":
    main()
