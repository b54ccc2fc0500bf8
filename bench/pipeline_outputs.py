"""
Write what `spmd-pipeline` makes of bench/partition_speed.py's programs and of every
example, one file each, so that two checkouts can be compared with `diff -r`: a change
meant to make the pipeline faster must leave every decision it makes as it was.

    python bench/pipeline_outputs.py OUT_DIR [--sizes 1000] [--examples DIR ...]

Each program is run on v5e and v5p (the chips whose cost models differ in what pays).
Run it in each checkout (for another checkout: `PYTHONPATH` a folder holding a `shardc`
link to it), then `diff -r OUT_A OUT_B`.
"""

from __future__ import annotations

import argparse
import io
import pathlib
import sys

from shardc.bench.partition_speed import program
from shardc.dialects import make_context
from shardc.parsing import parse_and_verify
from shardc.passes.spmd_pipeline import SpmdPipelinePass
from xdsl.printer import Printer

REPO = pathlib.Path(__file__).resolve().parent.parent
CHIPS = ("v5e", "v5p")


def pipeline_output(text: str, name: str, chip: str) -> str:
    """The module `spmd-pipeline{chip=...}` makes of `text`, printed."""
    ctx = make_context()
    module = parse_and_verify(ctx, text, name)
    SpmdPipelinePass(chip=chip).apply(ctx, module)
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000])
    parser.add_argument(
        "--examples",
        type=pathlib.Path,
        nargs="*",
        default=[REPO / "examples", pathlib.Path("/work/shared/examples")],
    )
    args = parser.parse_args()
    programs = [(f"bench_{n}", program(n)) for n in args.sizes]
    for folder in args.examples:
        # named the same in every checkout: the repository's own examples as "repo"
        label = "repo" if folder.resolve().is_relative_to(REPO) else folder.parent.name
        for path in sorted(folder.rglob("*.mlir")):
            name = "_".join((label, *path.relative_to(folder).with_suffix("").parts))
            programs.append((name, path.read_text()))
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in programs:
        for chip in CHIPS:
            print(name, chip, file=sys.stderr)
            (args.out / f"{name}.{chip}.mlir").write_text(pipeline_output(text, name, chip))


if __name__ == "__main__":
    main()
