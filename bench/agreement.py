"""
Level S vs level T everywhere (issue 15 item 5): one table of the step time of every
example, every program the other bench/ scripts build (at their sizes) and every JAX
corpus program, at level S (the program `lower-to-tpu` receives in `tpu-pipeline`: every
pass before it) and at level T (the kernel it makes, simulated DMA by DMA), on v5e and
v5p, all `--timing-only`. A row whose program does not lower yet says which op stops it
(`does not lower: <op>`), so lowerings added later show up here without a change; a ratio
outside [0.9, 1.1] is flagged.

    python bench/agreement.py [--chips v5e v5p] [--only SUBSTRING] [--no-large | --large-only]

Programs, by where they come from:
- examples/*.mlir, examples/overlap/*.mlir, examples/real_size/*.mlir;
- bench/overlap.py's cases (dp_grads, megatron4, fsdp; small and large);
- bench/level_t_megatron.py's layer (tokens 2048, hidden 4096, f32, 2x4);
- bench/collectives.py's single collectives (its table's kinds, sizes and rings, and the
  2-D 4x4 all_reduce);
- bench/fidelity.py's programs (the scaling book's and Google Cloud's scenarios);
- bench/partition_quality.py's issue-14 example (bf16 and f32);
- tests/frontends/corpus: each program's StableHLO (imported, then partitioned by
  `tpu-pipeline`) and XLA's own per-device HLO of the same jit (imported as it is).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import shardc
from shardc.dialects import make_context
from shardc.lowering.tpu_pipeline import TpuPipelinePass
from shardc.parsing import parse_and_verify
from xdsl.dialects.builtin import ModuleOp

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "frontends" / "corpus"
TOLERANCE = 0.10
"""Issue 15 item 5: level T within 10% of level S."""


@dataclass(frozen=True)
class Program:
    group: str
    name: str
    load: Callable[[], ModuleOp]
    """A fresh module of the program (parsed or imported)."""
    large: bool = False
    """Real-size: skipped with `--no-large`."""


def _text(text: str, name: str) -> Callable[[], ModuleOp]:
    return lambda: parse_and_verify(make_context(), text, name)


def _lazy_text(make: Callable[[], str], name: str) -> Callable[[], ModuleOp]:
    return lambda: parse_and_verify(make_context(), make(), name)


def example_programs() -> list[Program]:
    out = []
    for sub, large in (("", False), ("overlap/", True), ("real_size/", True)):
        for path in sorted((ROOT / "examples" / sub).glob("*.mlir")):
            name = f"examples/{sub}{path.name}"
            out.append(Program("examples", name, _text(path.read_text(), name), large))
    return out


def bench_programs() -> list[Program]:
    """The programs bench/overlap.py, level_t_megatron.py, collectives.py, fidelity.py
    and partition_quality.py build, at their sizes."""
    from shardc.bench import collectives, fidelity, overlap, partition_quality
    from shardc.bench.level_t_megatron import megatron_mlp

    out = [
        Program("overlap.py", c.name, _lazy_text(c.make, c.name), "large" in c.name)
        for c in overlap.CASES
    ]
    out.append(
        Program(
            "level_t_megatron.py",
            "megatron MLP 2048x4096 f32 2x4",
            _lazy_text(lambda: megatron_mlp(2048, 4096), "megatron"),
            True,
        )
    )
    for n in (4, 8, 16):
        for kind in collectives.KINDS:
            for size in collectives.TABLE_SIZES:
                name = f"{kind} {collectives.human(size)} ring of {n}"
                text = collectives.program(kind, size, f'"x"={n}', '"x"', n)
                out.append(Program("collectives.py", name, _text(text, name)))
    for size in collectives.TABLE_SIZES:
        name = f"all_reduce {collectives.human(size)} 2-D 4x4"
        text = collectives.program("all_reduce", size, '"a"=4, "b"=4', '"a", "b"', 16)
        out.append(Program("collectives.py", name, _text(text, name)))
    seen: set[str] = set()
    for row in fidelity.ROWS:
        if row.program not in seen:  # two rows share a program (book model, profile)
            seen.add(row.program)
            out.append(Program("fidelity.py", row.scenario, _text(row.program, row.scenario)))
    for dtype in ("bf16", "f32"):
        text = partition_quality.ISSUE_EXAMPLE.replace("xT>", f"x{dtype}>")
        name = f"issue 14 example {dtype}"
        out.append(Program("partition_quality.py", name, _text(text, name)))
    return out


def corpus_programs() -> list[Program]:
    from shardc.frontends.hlo_text import import_hlo_text
    from shardc.frontends.stablehlo import import_stablehlo

    manifest = json.loads((CORPUS / "manifest.json").read_text())["programs"]
    out = []
    for name, meta in manifest.items():
        files = meta["files"]
        stablehlo, hlo = CORPUS / files["stablehlo"], CORPUS / files["hlo"]
        out.append(
            Program(
                "corpus",
                f"{name} (StableHLO)",
                lambda p=stablehlo, n=name: import_stablehlo(p.read_text(), n).module,
            )
        )
        out.append(
            Program(
                "corpus",
                f"{name} (XLA's HLO)",
                lambda p=hlo: import_hlo_text(p.read_text(), p.name).module,
            )
        )
    return out


def all_programs() -> list[Program]:
    return example_programs() + bench_programs() + corpus_programs()


# Measuring -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    s: float | None
    t: float | None
    note: str = ""
    """Why there is no ratio: does not compile / lower / run."""

    @property
    def ratio(self) -> float | None:
        return self.t / self.s if self.s and self.t is not None else None


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:100]


def _lowering_problem(e: BaseException) -> str:
    """`does not lower: <op>` from lower-to-tpu's refusal (else its first line)."""
    text = str(e)
    found = re.search(r"lower-to-tpu: (.+?) is not supported", text)
    return f"does not lower: {found.group(1) if found else _first_line(e)}"


def measure(program: Program, chip: str) -> Result:
    """Level S and level T step times (s) of one program on `chip`."""
    ctx = make_context()
    try:
        module = program.load()
        lower = TpuPipelinePass(chip=chip).to_level_s(ctx, module)
    except Exception as e:  # noqa: BLE001 - the table says why, the run goes on
        return Result(None, None, f"does not compile: {_first_line(e)}")
    try:
        s = shardc.run(module.clone(), timing_only=True, chip=chip).report["step_time_s"]
    except Exception as e:  # noqa: BLE001
        return Result(None, None, f"level S fails: {_first_line(e)}")
    try:
        lower.apply(ctx, module)
    except Exception as e:  # noqa: BLE001
        return Result(s, None, _lowering_problem(e))
    try:
        t = shardc.run(module, timing_only=True, chip=chip).report["step_time_s"]
    except Exception as e:  # noqa: BLE001
        return Result(s, None, f"level T fails: {_first_line(e)}")
    return Result(s, t)


def _us(t: float | None) -> str:
    return "" if t is None else f"{t * 1e6:.2f}"


def _cells(r: Result) -> list[str]:
    if r.ratio is None:
        return [_us(r.s), r.note, ""]
    flag = abs(r.ratio - 1) > TOLERANCE + 1e-12
    return [_us(r.s), _us(r.t), f"**{r.ratio:.2f}**" if flag else f"{r.ratio:.2f}"]


def table(rows: list[tuple[Program, dict[str, Result]]], chips: list[str]) -> list[str]:
    head = ["source", "program"]
    for c in chips:
        head += [f"{c} level S (us)", f"{c} level T (us)", f"{c} T / S"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for program, results in rows:
        cells = [program.group, program.name]
        for c in chips:
            cells += _cells(results[c])
        out.append("| " + " | ".join(cells) + " |")
    return out


def summary(rows: list[tuple[Program, dict[str, Result]]], chips: list[str]) -> list[str]:
    """Per source: rows within 10% on every chip, outside it somewhere, not lowering."""
    groups: dict[str, list[int]] = {}
    for program, results in rows:
        counts = groups.setdefault(program.group, [0, 0, 0])
        ratios = [results[c].ratio for c in chips]
        if any(r is None for r in ratios):
            counts[2] += 1
        elif all(abs(r - 1) <= TOLERANCE + 1e-12 for r in ratios if r is not None):
            counts[0] += 1
        else:
            counts[1] += 1
    out = ["| source | within 10% | outside 10% | no level T (does not lower / fails) |"]
    out.append("|---|---|---|---|")
    for group, (ok, off, none) in groups.items():
        out.append(f"| {group} | {ok} | {off} | {none} |")
    total = [sum(g[i] for g in groups.values()) for i in range(3)]
    out.append(f"| all | {total[0]} | {total[1]} | {total[2]} |")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chips", nargs="+", default=["v5e", "v5p"])
    parser.add_argument("--only", default="", help="programs whose source or name contains it")
    parser.add_argument("--no-large", action="store_true", help="skip the real-size programs")
    parser.add_argument("--large-only", action="store_true", help="only the real-size programs")
    args = parser.parse_args(argv)
    start = time.monotonic()
    rows: list[tuple[Program, dict[str, Result]]] = []
    for program in all_programs():
        if args.only and args.only not in f"{program.group} {program.name}":
            continue
        if (args.no_large and program.large) or (args.large_only and not program.large):
            continue
        t0 = time.monotonic()
        rows.append((program, {c: measure(program, c) for c in args.chips}))
        print(f"{program.group}: {program.name} ({time.monotonic() - t0:.1f} s)", file=sys.stderr)
    took = time.monotonic() - start
    print(
        f"Level T / level S step time, `--timing-only`, {len(rows)} programs x "
        f"{', '.join(args.chips)}; {took:.0f} s in all. Bold: outside [0.9, 1.1].\n"
    )
    print("\n".join(summary(rows, args.chips)))
    print()
    print("\n".join(table(rows, args.chips)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
