"""
Propagate + partition cost against parsing the same file, for generated programs of 10k
and 50k ops (chains of elementwise ops and dots with reshards between them), in one run.

    python bench/partition_speed.py [--sizes 10000 50000]
    python bench/partition_speed.py --pipeline [--sizes 1000 10000 50000] [--no-micro-batch]

Targets (issue 4): linear growth, and propagate + partition at most the cost of parsing.
Times are CPU times (`time.process_time`), so other load on the machine does not count.

`--pipeline` (issue 14 item 7) times the whole `spmd-pipeline` (its gates included) pass by
pass on the same programs: each pass's time, the pipeline's against parsing (target: at
most 3x), and the growth from one size to the next (target: at most 1.1x the growth in
ops, 5.5x per 5x); missed targets are flagged with `!`.
"""

from __future__ import annotations

import argparse
import itertools
import math
import time

from shardc.dialects import make_context
from shardc.parsing import parse_and_verify
from shardc.passes.spmd_partition import SpmdPartitionPass
from shardc.passes.spmd_pipeline import SpmdPipelinePass
from shardc.passes.spmd_propagate import SpmdPropagatePass
from xdsl.passes import ModulePass

T = "tensor<64x64xf32>"
SHARDINGS = ['[{"x"}, {}]', '[{}, {"x"}]', '[{"x"}, {"y"}]', "[{}, {}]"]


def program(n_ops: int) -> str:
    """A chain: dot, elementwise ops, and every 10th op a constraint to another sharding."""
    lines = [
        'spmd.mesh @mesh = <["x"=2, "y"=4]>',
        f'func.func @main(%a: {T} {{spmd.sharding = #spmd.sharding<@mesh, [{{"x"}}, {{}}]>}},',
        f'                %w: {T} {{spmd.sharding = #spmd.sharding<@mesh, [{{}}, {{"y"}}]>}}) -> {T} {{',
    ]
    prev = "%a"
    for i in range(n_ops):
        if i % 10 == 9:
            s = SHARDINGS[(i // 10) % len(SHARDINGS)]
            lines.append(f"  %v{i} = spmd.constraint {prev} <@mesh, {s}> : {T}")
        elif i % 5 == 0:
            lines.append(
                f"  %v{i} = hlo.dot {prev}, %w, contracting_dims = [1] x [0] : ({T}, {T}) -> {T}"
            )
        else:
            op = ("add", "mul", "max")[i % 3]
            lines.append(f"  %v{i} = hlo.{op} {prev}, %a : {T}")
        prev = f"%v{i}"
    lines.append(f"  func.return {prev} : {T}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def measure(n_ops: int) -> tuple[float, float, float]:
    ctx = make_context()
    text = program(n_ops)
    start = time.process_time()
    module = parse_and_verify(ctx, text, "bench")
    parsed = time.process_time()
    SpmdPropagatePass().apply(ctx, module)
    propagated = time.process_time()
    SpmdPartitionPass().apply(ctx, module)
    partitioned = time.process_time()
    return parsed - start, propagated - parsed, partitioned - propagated


PIPELINE_TARGET = 3.0
"""The whole pipeline at most this many times the parse (issue 14 item 7)."""
GROWTH_SLACK = 1.1
"""Growth at most this many times the growth in ops (5.5x for 5x)."""


def measure_pipeline(n_ops: int, micro_batch: bool) -> tuple[float, dict[str, float]]:
    """(parse s, pass name -> s) for `spmd-pipeline` on `program(n_ops)`."""
    ctx = make_context()
    text = program(n_ops)
    start = time.process_time()
    module = parse_and_verify(ctx, text, "bench")
    parse = time.process_time() - start
    times: dict[str, float] = {}
    last = time.process_time()

    def after(p: ModulePass) -> None:
        nonlocal last
        now = time.process_time()
        times[p.name] = times.get(p.name, 0.0) + now - last
        last = now

    SpmdPipelinePass(micro_batch=micro_batch).run(ctx, module, after)
    return parse, times


def pipeline_table(sizes: list[int], micro_batch: bool) -> list[str]:
    """The per-pass table and the growth of each pass from one size to the next."""
    runs = [measure_pipeline(n, micro_batch) for n in sizes]
    names = list(runs[0][1])
    rows = [
        "| ops | parse s | " + " | ".join(names) + " | pipeline s | pipeline / parse |",
        "|---" * (len(names) + 4) + "|",
    ]
    for n, (parse, times) in zip(sizes, runs, strict=True):
        total = sum(times.values())
        flag = "" if total <= PIPELINE_TARGET * parse else " !"
        cells = " | ".join(f"{times[k]:.2f}" for k in names)
        rows.append(f"| {n} | {parse:.2f} | {cells} | {total:.2f} | {total / parse:.2f}{flag} |")
    for (n0, (p0, t0)), (n1, (p1, t1)) in itertools.pairwise(zip(sizes, runs, strict=True)):
        limit = GROWTH_SLACK * n1 / n0
        growth = {k: t1[k] / t0[k] if t0[k] > 0 else math.inf for k in names}
        growth["pipeline"] = sum(t1.values()) / sum(t0.values())
        growth["parse"] = p1 / p0
        cells = ", ".join(
            f"{k} {g:.2f}x{' !' if g > limit and k in (*names, 'pipeline') else ''}"
            for k, g in growth.items()
        )
        rows.append(f"\ngrowth {n0} -> {n1} ({n1 / n0:.0f}x ops, limit {limit:.1f}x): {cells}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--pipeline", action="store_true", help="time spmd-pipeline by pass")
    parser.add_argument("--no-micro-batch", action="store_true", help="micro-batch=false")
    args = parser.parse_args()
    if args.pipeline:
        sizes = args.sizes or [1_000, 10_000, 50_000]
        print("\n".join(pipeline_table(sizes, not args.no_micro_batch)))
        return
    args.sizes = args.sizes or [10_000, 50_000]
    rows = [
        "| ops | parse + verify s | propagate s | partition s | (propagate + partition) / parse |",
        "|---|---|---|---|---|",
    ]
    totals: list[float] = []
    for n in args.sizes:
        parse, propagate, partition = measure(n)
        totals.append(propagate + partition)
        rows.append(
            f"| {n} | {parse:.2f} | {propagate:.2f} | {partition:.2f} | "
            f"{(propagate + partition) / parse:.2f} |"
        )
    print("\n".join(rows))
    if len(totals) >= 2:
        growth = totals[-1] / totals[-2]
        size = args.sizes[-1] / args.sizes[-2]
        print(f"\ngrowth of propagate + partition: {growth:.2f}x for {size:.1f}x the ops")


if __name__ == "__main__":
    main()
