"""
Propagate + partition cost against parsing the same file, for generated programs of 10k
and 50k ops (chains of elementwise ops and dots with reshards between them), in one run.

    python bench/partition_speed.py [--sizes 10000 50000]

Targets (issue 4): linear growth, and propagate + partition at most the cost of parsing.
Times are CPU times (`time.process_time`), so other load on the machine does not count.
"""

from __future__ import annotations

import argparse
import time

from shardc.dialects import make_context
from shardc.parsing import parse_and_verify
from shardc.passes.spmd_partition import SpmdPartitionPass
from shardc.passes.spmd_propagate import SpmdPropagatePass

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000])
    args = parser.parse_args()
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
