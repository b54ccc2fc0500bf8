"""
Simulated bus bandwidth of the collective kernels `lower-to-tpu` emits (issue 7): the ring
all_reduce, all_gather and reduce_scatter of one f32 message over 4, 8 and 16 devices,
4 KiB to 256 MiB, on v5e and v5p, one way round and both ways; and a 2-D torus all_reduce
against a 1-D ring over the same 16 chips.

    python bench/collectives.py [--chips v5e v5p] [--devices 4 8 16] [--max-size 256M]
                                [--plot bench/collectives.png] [--quick]

Each point lowers a level-S program of one collective (`lower-to-tpu{chip=..,
bidirectional=..}`) and runs the kernel on the level-T simulator in its timing mode
(`run_level_t(..., values=False)`: every DMA, semaphore and link share simulated, no bytes
moved), so 16 devices x 256 MiB takes seconds. Time is the simulated step time.

Bus bandwidth as NCCL's tests define it: message size V = the full array (the all_reduce
buffer, the all_gather output, the reduce_scatter input), algbw = V / time, busbw = algbw x
2(N-1)/N for all_reduce and x (N-1)/N for the other two: the bytes each device's links
carry per second, comparable across N and kinds. The bound is what the chip's ICI links
give a ring: `ici_link_bw` one way round, twice that both ways on a ring with wraparound
links (`Chip.axis_bandwidth_for`).

One way vs both ways: the pass's `bidirectional` option (default: both ways exactly where
the axis has wraparound). Both-ways rows are measured only on rings with wraparound (v5e:
an axis of 16; v5p: multiples of 4): on a line the two directions' rings share every link
and gain nothing (forced both ways, a v5e all_gather over 4 devices moves 43.8 GB/s at
64 MiB against 44.0 one way).

2-D vs 1-D over the same 16 chips: a mesh ["a"=4, "b"=4] is a 4x4 torus (v5p: with
wraparound on both axes, so both ways; v5e: lines, one way). The all_reduce over
["a", "b"] lowers to the 2-D torus algorithm: half the buffer reduce-scattered over a then
b, the other half over b then a, both halves' rings at once, then all-gathered in reverse,
so every phase keeps both axes' links busy. The 1-D ring over the same chips is the
level-S program over one axis of 16 (mesh ["x"=16]), run on the same physical 4x4 torus
(`run_level_t(torus=(4, 4))`: device d at torus coordinates unravel(d, (4, 4)), every DMA
routed over the torus's links; the ring's wrap hops ride links the ring does not otherwise
use, so it loses nothing but latency). Its bound is one axis's ring bandwidth; the 2-D
algorithm's is two axes' (twice that), which is why it is faster.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

from shardc.dialects import make_context
from shardc.hardware.chips import get_chip
from shardc.interpreter.level_t import run_level_t
from shardc.interpreter.testing import parse
from shardc.lowering.lower_to_tpu import LowerToTpuPass

KIB, MIB = 1024, 1024**2
KINDS = ("all_reduce", "all_gather", "reduce_scatter")
TABLE_SIZES = (4 * KIB, 64 * KIB, MIB, 16 * MIB, 256 * MIB)
"""Sizes the markdown table shows (the plot shows every size run)."""


def program(kind: str, size: int, mesh: str, axes: str, n: int) -> str:
    """A level-S program of one collective over an f32 message of `size` bytes."""
    full = size // 4
    if kind == "all_reduce":
        arg = res = full
        op = f"%r = collective.all_reduce add %a on @m[{axes}] : tensor<{full}xf32>"
    elif kind == "all_gather":
        arg, res = full // n, full
        op = f"%r = collective.all_gather %a on @m[{axes}], dim = 0 : (tensor<{arg}xf32>) -> tensor<{res}xf32>"
    else:
        arg, res = full, full // n
        op = f"%r = collective.reduce_scatter add %a on @m[{axes}], dim = 0 : (tensor<{arg}xf32>) -> tensor<{res}xf32>"
    return f"""
spmd.mesh @m = <[{mesh}]>
func.func @main(%a: tensor<{arg}xf32>) -> tensor<{res}xf32> attributes {{spmd.per_device_io}} {{
  {op}
  func.return %r : tensor<{res}xf32>
}}
"""


def simulate(
    text: str, chip: str, n: int, bidirectional: bool | None, torus: tuple[int, ...] | None = None
) -> float:
    """Lower and run in the timing mode; the simulated step time in seconds."""
    module = parse(text)
    LowerToTpuPass(chip=chip, bidirectional=bidirectional).apply(make_context(), module)
    _, report = run_level_t(module, [[None, None]] * n, chip=chip, values=False, torus=torus)
    return report["step_time_s"]


def bus_factor(kind: str, n: int) -> float:
    return 2 * (n - 1) / n if kind == "all_reduce" else (n - 1) / n


@dataclass
class Row:
    chip: str
    n: int
    kind: str
    ways: str
    """"one way" or "both ways"."""
    bound: float
    """Bus bandwidth bound, bytes/s."""
    times: dict[int, float]

    def busbw(self, size: int) -> float:
        return size / self.times[size] * bus_factor(self.kind, self.n)


def sizes_up_to(top: int) -> list[int]:
    """4 KiB, 16 KiB, ... (powers of 4) up to `top`."""
    out, s = [], 4 * KIB
    while s <= top:
        out.append(s)
        s *= 4
    return out


def ring_rows(chips: list[str], devices: list[int], sizes: list[int]) -> list[Row]:
    rows = []
    for chip_name in chips:
        chip = get_chip(chip_name)
        for n in devices:
            wrap = chip.has_wraparound(n)
            for kind in KINDS:
                variants = [("one way", False)] + ([("both ways", True)] if wrap else [])
                for ways, bidi in variants:
                    bound = chip.axis_bandwidth_for(bidi)
                    times = {
                        s: simulate(program(kind, s, f'"x"={n}', '"x"', n), chip_name, n, bidi)
                        for s in sizes
                    }
                    rows.append(Row(chip_name, n, kind, ways, bound, times))
    return rows


def torus_rows(chips: list[str], sizes: list[int]) -> list[tuple[str, Row, Row]]:
    """(chip, 1-D ring over 16 on a 4x4 torus, 2-D torus all_reduce) per chip."""
    out = []
    for chip_name in chips:
        chip = get_chip(chip_name)
        wrap = chip.has_wraparound(4)
        one_d = {
            s: simulate(program("all_reduce", s, '"x"=16', '"x"', 16), chip_name, 16, wrap, (4, 4))
            for s in sizes
        }
        two_d = {
            s: simulate(
                program("all_reduce", s, '"a"=4, "b"=4', '"a", "b"', 16), chip_name, 16, wrap
            )
            for s in sizes
        }
        ways = "both ways" if wrap else "one way"
        bound = chip.axis_bandwidth_for(wrap)
        out.append(
            (
                chip_name,
                Row(chip_name, 16, "all_reduce", f"1-D ring, {ways}", bound, one_d),
                Row(chip_name, 16, "all_reduce", f"2-D 4x4, {ways}", 2 * bound, two_d),
            )
        )
    return out


def gbps(x: float) -> str:
    return f"{x / 1e9:.1f}"


def human(size: int) -> str:
    return f"{size // MIB} MiB" if size >= MIB else f"{size // KIB} KiB"


def table(rows: list[Row], sizes: list[int]) -> str:
    shown = [s for s in sizes if s in TABLE_SIZES] or sizes
    top = sizes[-1]
    head = [
        "chip",
        "N",
        "collective",
        "ring",
        *(f"{human(s)}" for s in shown),
        "bound",
        f"% of bound at {human(top)}",
        f"time at {human(shown[0])} (µs)",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [
            r.chip,
            str(r.n),
            r.kind,
            r.ways,
            *(gbps(r.busbw(s)) for s in shown),
            gbps(r.bound),
            f"{100 * r.busbw(top) / r.bound:.1f}",
            f"{r.times[shown[0]] * 1e6:.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


LARGE = 64 * MIB
"""The large-message targets are judged at the largest size run, if at least this."""


def targets(rows: list[Row], pairs: list[tuple[str, Row, Row]], sizes: list[int]) -> str:
    top = sizes[-1]
    if top < LARGE:
        return (
            f"(largest message {human(top)}: the large-message targets need sizes of "
            f"{human(LARGE)} or more; run without --quick)"
        )
    worst = min(rows, key=lambda r: r.busbw(top) / r.bound)
    small = max(rows, key=lambda r: r.busbw(sizes[0]) / r.bound)
    out = [
        (
            f"- large messages ({human(top)}): every row at >= {100 * worst.busbw(top) / worst.bound:.1f}% of its "
            f"bound (worst: {worst.chip} N={worst.n} {worst.kind} {worst.ways}); target >= 95%: "
            f"{'met' if worst.busbw(top) >= 0.95 * worst.bound else 'MISSED'}"
        ),
        (
            f"- small messages ({human(sizes[0])}): latency-bound, at most "
            f"{100 * small.busbw(sizes[0]) / small.bound:.1f}% of the bound "
            f"({small.chip} N={small.n} {small.kind} {small.ways})"
        ),
    ]
    ratios = []
    for r in rows:
        if r.ways == "both ways":
            one = next(
                o for o in rows if (o.chip, o.n, o.kind, o.ways) == (r.chip, r.n, r.kind, "one way")
            )
            ratios.append((r.busbw(top) / one.busbw(top), r))
    if ratios:
        lo, r = min(ratios, key=lambda x: x[0])
        out.append(
            f"- both ways / one way at {human(top)}: >= {lo:.2f}x (lowest: {r.chip} N={r.n} {r.kind}); "
            f"target >= 1.9x: {'met' if lo >= 1.9 else 'MISSED'}"
        )
    for chip, one_d, two_d in pairs:
        speed = [one_d.times[s] / two_d.times[s] for s in sizes]
        out.append(
            f"- {chip}: 2-D 4x4 all_reduce vs 1-D ring over the same 16 chips: "
            f"{min(speed):.2f}x to {max(speed):.2f}x faster ({speed[-1]:.2f}x at {human(top)}); "
            f"target faster: {'met' if min(speed) > 1 else 'MISSED'}"
        )
    return "\n".join(out)


def plot(rows: list[Row], pairs: list[tuple[str, Row, Row]], sizes: list[int], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chips = sorted({r.chip for r in rows})
    fig, axes = plt.subplots(
        len(chips), len(KINDS) + 1, figsize=(18, 4.2 * len(chips)), squeeze=False
    )
    for i, chip in enumerate(chips):
        panels = [(k, [r for r in rows if r.chip == chip and r.kind == k]) for k in KINDS]
        panels.append(
            (
                "all_reduce, 16 chips: 2-D vs 1-D",
                [r for c, a, b in pairs if c == chip for r in (a, b)],
            )
        )
        for j, (title, panel) in enumerate(panels):
            ax = axes[i][j]
            for r in panel:
                label = r.ways if j == len(KINDS) else f"N={r.n}, {r.ways}"
                ax.plot(
                    sizes,
                    [r.busbw(s) / 1e9 for s in sizes],
                    marker="o",
                    ms=3,
                    ls="-" if "both" in r.ways or "2-D" in r.ways else "--",
                    label=label,
                )
            for bound in sorted({r.bound for r in panel}):
                ax.axhline(bound / 1e9, color="grey", lw=0.8, ls=":")
            ax.set_xscale("log", base=2)
            ax.set_xticks(sizes[::2], [human(s) for s in sizes[::2]], fontsize=7)
            ax.set_title(f"{chip}: {title}", fontsize=9)
            ax.set_ylabel("bus bandwidth (GB/s)", fontsize=8)
            ax.legend(fontsize=6)
            ax.grid(alpha=0.3)
    fig.suptitle("lower-to-tpu collectives on the level-T simulator (dotted: ICI bound)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def parse_size(text: str) -> int:
    units = {"K": KIB, "M": MIB, "G": 1024 * MIB}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chips", nargs="+", default=["v5e", "v5p"])
    parser.add_argument("--devices", nargs="+", type=int, default=[4, 8, 16])
    parser.add_argument("--max-size", default="256M")
    parser.add_argument("--plot", default=str(Path(__file__).parent / "collectives.png"))
    parser.add_argument("--quick", action="store_true", help="up to 4 MiB, no plot")
    args = parser.parse_args()
    top = 4 * MIB if args.quick else parse_size(args.max_size)
    sizes = sizes_up_to(top)
    start = time.monotonic()
    rows = ring_rows(args.chips, args.devices, sizes)
    pairs = torus_rows(args.chips, sizes)
    took = time.monotonic() - start
    print(
        f"Bus bandwidth (GB/s) of one f32 message, simulated (timing mode), {len(sizes)} sizes "
        f"{human(sizes[0])}..{human(top)}; {took:.0f} s in all.\n"
    )
    print(table(rows, sizes))
    print("\n2-D torus vs 1-D ring, all_reduce over 16 chips (a 4x4 torus):\n")
    print(table([r for _, a, b in pairs for r in (a, b)], sizes))
    print("\nTargets (issue 7):\n")
    print(targets(rows, pairs, sizes))
    if not args.quick and args.plot:
        plot(rows, pairs, sizes, args.plot)
        print(f"\nPlot: `{Path(args.plot).name}`")


if __name__ == "__main__":
    main()
