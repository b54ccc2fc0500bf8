"""
Run every benchmark and write their tables to one file, `bench/RESULTS.md`.

    python bench/run_all.py [--quick] [--jax-python PATH]

Each benchmark runs as its own process (each measures its ratios within its own run) and
prints markdown; this script collects the output under one heading per benchmark. With
`--quick` the slow parse benchmark runs at smaller sizes. XLA's side of the partition
quality table needs a Python with jax (`--jax-python` or SHARDC_JAX_PYTHON).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).parent
ROOT = BENCH.parent


def benchmarks(quick: bool, jax_python: str) -> list[tuple[str, list[str]]]:
    """(title, command) per benchmark, in the order of the issues that asked for them."""
    py = sys.executable
    return [
        (
            "Parse, verify, print (issue 2)",
            [
                py,
                "-m",
                "shardc.bench.parse_print",
                *(["--sizes", "1000,10000", "--wall-sizes", ""] if quick else []),
            ],
        ),
        ("Interpreter overhead (issue 3)", [py, str(BENCH / "interpreter.py")]),
        (
            "Partition quality against XLA (issue 4)",
            [py, str(BENCH / "partition_quality.py"), "--jax-python", jax_python],
        ),
        (
            "Propagate + partition speed (issue 4)",
            [
                py,
                str(BENCH / "partition_speed.py"),
                *(["--sizes", "2000", "10000"] if quick else []),
            ],
        ),
        ("Communication overlap (issue 6)", [py, str(BENCH / "overlap.py")]),
        (
            "Collective bus bandwidth on the level-T simulator (issue 7)",
            [py, str(BENCH / "collectives.py"), *(["--quick"] if quick else [])],
        ),
        (
            "Level-T simulation of a Megatron layer (issue 7)",
            [
                py,
                str(BENCH / "level_t_megatron.py"),
                *(["--hidden", "1024", "--tokens", "512"] if quick else []),
            ],
        ),
        ("Fusion: unfused vs fused (issue 14)", [py, str(BENCH / "fusion.py")]),
        (
            "JAX corpus import + run speed against ec28c97 (issue 13)",
            [py, str(BENCH / "corpus_speed.py"), *(["--repeat", "1"] if quick else [])],
        ),
    ]


def run(title: str, command: list[str]) -> str:
    start = time.monotonic()
    try:
        out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=1800)
        body = out.stdout.strip() or "(no output)"
        if out.returncode != 0:
            last = (out.stderr.strip().splitlines() or ["?"])[-1]
            body += f"\n\n(failed with exit status {out.returncode}: {last})"
    except subprocess.TimeoutExpired:
        body = "(timed out after 30 minutes)"
    took = time.monotonic() - start
    print(f"{title}: {took:.0f} s", file=sys.stderr)
    return f"## {title}\n\n`{' '.join(Path(c).name if i < 2 else c for i, c in enumerate(command))}` ({took:.0f} s)\n\n{body}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--jax-python", default=os.environ.get("SHARDC_JAX_PYTHON", sys.executable))
    parser.add_argument("-o", "--output", default=str(BENCH / "RESULTS.md"))
    args = parser.parse_args()
    sections = [run(t, c) for t, c in benchmarks(args.quick, args.jax_python)]
    header = (
        "# Benchmark results\n\n"
        f"Written by `bench/run_all.py` on {datetime.date.today()}, Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs ({platform.machine()}). Each table's "
        "ratios were measured within one run; the machine is shared, so absolute times vary.\n"
    )
    text = "\n".join([header, *sections])
    tmp = Path(args.output).with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(args.output)
    print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
