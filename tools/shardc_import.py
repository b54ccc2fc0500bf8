"""
`shardc-import`: StableHLO (what JAX's `lower().as_text()` prints, Shardy or GSPMD
shardings) or XLA HLO module text (`compile().as_text()`, `--xla_dump_to`) to `hlo` +
`spmd` (+ `collective`).

    shardc-import FILE|- [-o OUT.mlir] [--format auto|stablehlo|hlo] [--stats]
                  [--print-debuginfo] [--check-support] [--per-device | --global]

The format is detected from the text (HLO module text starts with `HloModule`). A
StableHLO program becomes a level-G program (or a partitioned level-S one if it uses
shard_map). An HLO module XLA has partitioned (scheduled, or with collectives; or with
`--per-device`) becomes a per-device level-S program marked `spmd.per_device_io`; one that
is the partitioner's input (`sharding=` and no collectives; or with `--global`) a level-G
program with its shardings (see `shardc.frontends`). `--stats` prints, on stderr, the source ops and constructs the
import converted. `--print-debuginfo` prints each op's location: where its source op
is in FILE, fused with the origin FILE records (JAX's `loc(...)`, HLO `metadata=`). Any
problem in the input is one `file:line:col: error: ...` diagnostic naming the op or
attribute, exit status 1, and no output file is written. `--check-support` imports
nothing: it lists every op, `custom_call` target and element type of FILE the importer does
not support, each with its first location and count (`shardc.frontends.support`), and exits
1 if there is any.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from shardc.diagnostics import DiagnosticError
from shardc.frontends.common import ImportResult
from shardc.tools.cli import run_tool
from shardc.tools.shardc_opt import write_output
from xdsl.printer import Printer

PROG = "shardc-import"


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 1, like the other tools
        self.print_usage(sys.stderr)
        raise DiagnosticError(f"{PROG}: error: {message}")


def build_arg_parser() -> argparse.ArgumentParser:
    p = _ArgumentParser(
        prog=PROG,
        description="Import StableHLO or XLA HLO text as shardc hlo/spmd/collective IR.",
    )
    p.add_argument(
        "file", metavar="FILE", help="the input (.mlir StableHLO or HLO text), - for stdin"
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="OUT.mlir",
        default=None,
        help="write the program here (default: stdout)",
    )
    p.add_argument(
        "--format",
        choices=("auto", "stablehlo", "hlo"),
        default="auto",
        help="the input format (default: detected from the text)",
    )
    p.add_argument(
        "--stats", action="store_true", help="print the ops and constructs converted (on stderr)"
    )
    p.add_argument(
        "--print-debuginfo",
        action="store_true",
        help="print each op's location: its place in FILE and, where FILE records it, "
        "JAX's (Python file, line, op name)",
    )
    level = p.add_mutually_exclusive_group()
    level.add_argument(
        "--per-device",
        dest="per_device",
        action="store_const",
        const=True,
        default=None,
        help="HLO text: read the module as XLA's per-device output (the default for "
        "scheduled modules and modules with collectives)",
    )
    level.add_argument(
        "--global",
        dest="per_device",
        action="store_const",
        const=False,
        help="HLO text: read the module as the partitioner's input, a level-G program with "
        "its shardings (the default for a module with sharding= and no collectives)",
    )
    p.add_argument(
        "--check-support",
        action="store_true",
        help="import nothing; list every unsupported op, custom_call target and element type "
        "of FILE with its first location and count (exit 1 if there is any)",
    )
    return p


def read_input(path: str) -> tuple[str, str]:
    if path == "-":
        data = sys.stdin.buffer.read()
        name = "<stdin>"
    else:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise DiagnosticError(
                f"{path}:1:1: error: cannot read the file: {e.strerror or e}"
            ) from None
        name = path
    try:
        return data.decode("utf-8"), name
    except UnicodeDecodeError as e:
        raise DiagnosticError(f"{name}: error: not UTF-8 text (byte {e.start})") from None


def detect_format(text: str, fmt: str = "auto") -> str:
    """`hlo` or `stablehlo` (`fmt` auto-detects from the text)."""
    from shardc.frontends.hlo_text import looks_like_hlo_text

    if fmt == "auto":
        return "hlo" if looks_like_hlo_text(text) else "stablehlo"
    return fmt


def check_support(text: str, filename: str, fmt: str = "auto") -> int:
    """`--check-support`: print the gaps; 1 if there is any."""
    from shardc.frontends.support import hlo_text_support, stablehlo_support

    if detect_format(text, fmt) == "hlo":
        report = hlo_text_support(text, filename)
    else:
        report = stablehlo_support(text, filename)
    print(report.format_text())
    return 1 if report.gaps else 0


def import_text(
    text: str, filename: str, fmt: str = "auto", per_device: bool | None = None
) -> ImportResult:
    """Import StableHLO or HLO text (`fmt` auto-detects; `per_device`: how to read HLO
    text, None to decide from the module)."""
    from shardc.frontends.hlo_text import import_hlo_text

    fmt = detect_format(text, fmt)
    if fmt == "hlo":
        return import_hlo_text(text, filename, per_device)
    from shardc.frontends.stablehlo import import_stablehlo

    return import_stablehlo(text, filename)


def render(result: ImportResult, debuginfo: bool = False) -> str:
    from io import StringIO

    out = StringIO()
    Printer(stream=out, print_debuginfo=debuginfo).print_op(result.module)
    out.write("\n")
    return out.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    def body() -> int:
        args = build_arg_parser().parse_args(argv)
        text, filename = read_input(args.file)
        if args.check_support:
            return check_support(text, filename, args.format)
        result = import_text(text, filename, args.format, args.per_device)
        output = render(result, args.print_debuginfo)
        if args.stats:
            print(result.stats.summary(), file=sys.stderr)
        if args.output is None:
            sys.stdout.write(output)
        else:
            write_output(args.output, output)
        return 0

    return run_tool(PROG, body)


if __name__ == "__main__":
    sys.exit(main())
