"""
Import and run speed of the JAX corpus (`tests/frontends/corpus/`), now against a baseline
commit, measured in one run: issue 13 asks that importing and running the corpus stays
within 2x of the per-op time before its work began (commit ec28c97).

    python bench/corpus_speed.py [--baseline REV] [--repeat N]

For each version (this checkout, and REV checked out into a temporary git worktree) a
fresh Python imports every StableHLO and HLO-text program of the corpus, runs it at the
level it is in with seeded inputs, then compiles the StableHLO ones with `spmd-pipeline`
and runs them at level S. Times are the best of N repeats; the per-op time is the total
over the programs both versions take, divided by the ops they imported.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "frontends" / "corpus"
BASELINE = "ec28c97"
"""The last commit before issue 13's work (the 'today' its speed goal refers to)."""

RUNNER = r"""
import json, sys, time
import shardc
from shardc.frontends.stablehlo import import_stablehlo
from shardc.frontends.hlo_text import import_hlo_text

def best(fn, repeat):
    times, value = [], None
    for _ in range(repeat):
        t0 = time.perf_counter(); value = fn(); times.append(time.perf_counter() - t0)
    return min(times), value

repeat = int(sys.argv[1])
out = {}
for path in sys.argv[2:]:
    text = open(path).read()
    hlo = path.endswith(".hlo.txt")
    try:
        t_imp, result = best(lambda: (import_hlo_text if hlo else import_stablehlo)(text, path), repeat)
        module = result.module
        ops = sum(1 for _ in module.walk())
        t_run, _ = best(lambda: shardc.run(module, seed=0), repeat)
        t_pipe = t_runs = 0.0
        if not hlo and "spmd.partitioned" not in str(module):
            t_pipe, compiled = best(lambda: shardc.compile(module, "spmd-pipeline"), repeat)
            t_runs, _ = best(lambda: shardc.run(compiled, seed=0), repeat)
        out[path] = {"ops": ops, "import": t_imp, "run": t_run, "pipeline": t_pipe, "run_s": t_runs}
    except Exception as e:
        out[path] = {"error": f"{type(e).__name__}: {e}"[:200]}
print(json.dumps(out))
"""


def measure(source: Path, files: list[Path], repeat: int) -> dict[str, dict]:
    """Run the corpus with the `shardc` package at `source` (a repository checkout)."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "shardc").symlink_to(source, target_is_directory=True)
        env = dict(os.environ, PYTHONPATH=tmp, SHARDC_PROGRESS_AFTER="1000000")
        proc = subprocess.run(
            [sys.executable, "-c", RUNNER, str(repeat), *map(str, files)],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp,
            check=False,
        )
    if proc.returncode != 0:
        raise SystemExit(f"runner failed for {source}:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def per_op(results: dict[str, dict], paths: list[str]) -> tuple[float, int]:
    total = sum(
        results[p]["import"] + results[p]["run"] + results[p]["pipeline"] + results[p]["run_s"]
        for p in paths
    )
    ops = sum(results[p]["ops"] for p in paths)
    return total / max(ops, 1), ops


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default=BASELINE, help=f"commit to compare with ({BASELINE})")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    files = sorted(CORPUS.glob("*.stablehlo.mlir")) + sorted(CORPUS.glob("*.hlo.txt"))
    now = measure(ROOT, files, args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        checkout = Path(tmp) / "baseline"
        subprocess.run(
            [
                "git",
                "-C",
                str(ROOT),
                "worktree",
                "add",
                "-q",
                "--detach",
                str(checkout),
                args.baseline,
            ],
            check=True,
        )
        try:
            base = measure(checkout, files, args.repeat)
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(checkout)],
                check=False,
            )
    both = [str(f) for f in files if "error" not in now[str(f)] and "error" not in base[str(f)]]
    print(f"{'program':40} {'ops':>5} {'now ms':>9} {'base ms':>9} {'ratio':>6}")
    for p in both:
        t_now = sum(now[p][k] for k in ("import", "run", "pipeline", "run_s"))
        t_base = sum(base[p][k] for k in ("import", "run", "pipeline", "run_s"))
        print(
            f"{Path(p).name:40} {now[p]['ops']:5d} {1e3 * t_now:9.1f} {1e3 * t_base:9.1f} "
            f"{t_now / t_base:6.2f}"
        )
    now_op, ops = per_op(now, both)
    base_op, _ = per_op(base, both)
    print(
        f"\nper-op time over {len(both)} programs ({ops} ops): now {1e6 * now_op:.0f} us, "
        f"{args.baseline} {1e6 * base_op:.0f} us, ratio {now_op / base_op:.2f} (goal <= 2)"
    )
    failed = [Path(p).name for p in map(str, files) if "error" in now[p]]
    if failed:
        print("not imported now:", ", ".join(failed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
