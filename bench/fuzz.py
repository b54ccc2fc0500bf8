"""
Mutation fuzzing of every tool at scale (issue 16 item 3): N mutated inputs per tool
(`tests/fuzz/harness.py`: the project's examples, lit inputs, JAX corpus StableHLO and
HLO text, XLA partitioner tests and lowered kernels, each mutated one to three times),
each run in process under a 30 s limit and classified as accepted, cleanly rejected or a
defect (traceback, internal error, hang, exit status other than 0/1, exit 1 without a
message). Target: 0 defects at 10,000 inputs per tool.

    python bench/fuzz.py [--inputs 10000] [--tools opt run ...] [--seed 0] [--show 3]

Prints the table (per tool: inputs, accepted, rejected, defects) and, per defect class,
its count and a smallest input, so a defect is a reproducible bug report.
"""

from __future__ import annotations

import argparse
import collections
import random
import re
import resource
import time

from shardc.tests.fuzz.harness import TOOLS, mutated, run_tool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=10000, help="mutated inputs per tool")
    parser.add_argument("--tools", nargs="*", default=sorted(TOOLS), choices=sorted(TOOLS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=1, help="inputs shown per defect class")
    args = parser.parse_args()
    # a runaway allocation is a defect to report, not a reason to take the machine down
    resource.setrlimit(resource.RLIMIT_AS, (8 * 1024**3, resource.RLIM_INFINITY))
    print("| tool | inputs | accepted | rejected | defects | wall time |")
    print("|---|---|---|---|---|---|")
    defects: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
    for tool in args.tools:
        rng = random.Random(f"{args.seed}:{tool}")
        counts: collections.Counter[str] = collections.Counter()
        start = time.perf_counter()
        for _ in range(args.inputs):
            text, suffix = mutated(TOOLS[tool][0], rng)
            outcome = run_tool(tool, text, suffix)
            counts[outcome.kind] += 1
            if outcome.defect is not None:
                key = (tool, re.sub(r"\d+", "N", outcome.message)[:160] or outcome.defect)
                defects[key].append(text)
        wall = time.perf_counter() - start
        print(
            f"| {tool} | {args.inputs} | {counts['accepted']} | {counts['rejected']} | "
            f"{counts['defect']} | {wall:.0f} s |",
            flush=True,
        )
    for (tool, message), texts in sorted(defects.items(), key=lambda kv: -len(kv[1])):
        print(f"\n## {len(texts)} x {tool}: {message}")
        for text in sorted(texts, key=len)[: args.show]:
            print("```\n" + text + "\n```")


if __name__ == "__main__":
    main()
