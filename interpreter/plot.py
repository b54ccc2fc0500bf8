"""
The per-device timeline as a picture (`shardc-run --plot TIMELINE.png`, `Result.plot`).

One PNG drawn from `Timeline.slices()`: per device a **compute** row (matmuls and other
ops, and hatched red where the compute stream *waits* for communication: a sync
collective or a `done`) and a **collectives** row (the collective engine, coloured by
kind), so that overlap, or its absence, is visible without Perfetto. A level-T run has,
instead of the collective engine, an **HBM DMA** row (the device's local DMAs, HBM<->VMEM
blocks) and an **ICI DMA** row (its DMAs to other chips, labelled with the target); on
its compute row, waits for its own HBM DMAs only (`level_t_timeline.HBM_WAIT`, counted as
compute by the report) are drawn in the HBM DMA colour, not as waiting for communication. Any other stream a
timeline has (per-link rows of a finer machine model, say) gets a row of its own. A
dashed line marks the roofline bound, a solid one the step time; the title gives the
program, chip, step time, compute and exposed communication; each device's own exposed
time is written on its right.

matplotlib is an optional extra (`pip install 'shardc[plot]'`): it is imported only when
a picture is drawn, through its Agg canvas (no display, and pyplot's global backend is
left alone, so a notebook's inline plots are unaffected). Without it, `require_matplotlib`
raises one `DiagnosticError` saying how to install it.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from typing import IO, Any

from shardc.diagnostics import DiagnosticError
from shardc.interpreter.level_t_timeline import HBM_WAIT

MATMUL_OPS = frozenset({"hlo.dot", "hlo.dot_general", "hlo.convolution", "tpu.matmul"})

DMA_STREAMS = ("HBM DMA", "ICI DMA")
"""Level T's extra rows (`LevelTTimeline.slices`): local DMAs, and DMAs to other chips."""

# (label, face colour) per category, in legend order
COMPUTE_STYLE = {"matmul": "#3B6FB6", "other": "#9CC3E6"}
COLLECTIVE_STYLE = {
    "all_reduce": "#E8853A",
    "all_gather": "#4E9F50",
    "reduce_scatter": "#8C6BB1",
    "all_to_all": "#9C755F",
    "permute": "#D46BA3",
    "other": "#9E9E9E",
}
DMA_STYLE = {"HBM DMA": "#B0B0B0", "ICI DMA": "#E8853A"}
WAIT_FACE = "#F8D3CF"
WAIT_EDGE = "#C62828"
LINE_STEP = "#222222"
LINE_ROOFLINE = "#C62828"

DPI = 110
WIDTH_IN = 14.0


def require_matplotlib(what: str = "shardc-run: error: --plot") -> None:
    """Raise one `DiagnosticError` if matplotlib cannot be imported."""
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
    except ImportError:
        raise DiagnosticError(
            f"{what} needs matplotlib, which is not installed: "
            "pip install 'shardc[plot]' (or pip install matplotlib)"
        ) from None


def plot_timeline(
    timeline: Any,
    path: str,
    *,
    program: str | None = None,
    what: str = "shardc-run: error: --plot",
) -> str:
    """Draw `timeline` to the PNG file `path`, atomically (nothing is left on failure)."""
    require_matplotlib(what)
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            render_png(timeline, f, program=program)
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        prog = what.split(":", 1)[0]
        raise DiagnosticError(f"{prog}: error: cannot write '{path}': {e}") from None
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


# Drawing --------------------------------------------------------------------------------


def _time_unit(t: float) -> tuple[str, float]:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if t >= scale:
            return unit, scale
    return "ns", 1e-9


def _fmt(t: float) -> str:
    from shardc.interpreter.timing import format_seconds

    return format_seconds(t).replace("us", "µs")


def _short(name: str) -> str:
    return name.split(".", 1)[-1]


def _category(stream: str, op: Any) -> str:
    """The colour key of a slice."""
    if stream == "wait":
        return "dma:HBM DMA" if op.name == HBM_WAIT else "wait"
    name = op.name
    if name.startswith("collective."):
        kind = _short(name).removesuffix("_start")
        return "coll:" + (kind if kind in COLLECTIVE_STYLE else "other")
    if stream in DMA_STYLE:
        return "dma:" + stream
    if stream != "compute":
        return "coll:other"
    return "compute:" + ("matmul" if name in MATMUL_OPS else "other")


def _label(stream: str, op: Any, nbytes: int) -> str:
    from shardc.interpreter.timing import format_bytes

    if stream == "wait" and op.name == HBM_WAIT:
        return "HBM"
    if stream == "wait":
        kind = _waited_kind(op)
        return f"wait {kind}" if kind else "wait"
    short = _short(op.name).removesuffix("_start")
    if op.name.startswith("collective.") and nbytes:
        return f"{short} {format_bytes(nbytes)}"
    return short


def _waited_kind(op: Any) -> str | None:
    """The kind of collective a wait is for: the op itself, or a `done`'s `_start`."""
    if op.name == "collective.done" and op.operands:
        owner = getattr(op.operands[0], "owner", None)
        if owner is not None and hasattr(owner, "name"):
            op = owner
    if op.name.startswith("collective.") and op.name != "collective.done":
        return _short(op.name).removesuffix("_start")
    return None


def _rows(slices: list[Any], n_devices: int, level: str) -> list[tuple[int, str]]:
    """(device, stream) per row, top to bottom; "wait" slices are drawn on "compute"."""
    extra: dict[int, list[str]] = defaultdict(list)
    for s in slices:
        if s.stream not in ("compute", "wait", "collectives") and s.stream not in extra[s.device]:
            extra[s.device].append(s.stream)
    has_collectives = level == "S" or any(s.stream == "collectives" for s in slices)
    rows: list[tuple[int, str]] = []
    for d in range(n_devices):
        rows.append((d, "compute"))
        if has_collectives:
            rows.append((d, "collectives"))
        if level == "T":
            rows.extend((d, stream) for stream in DMA_STREAMS)
        rows.extend(
            (d, stream)
            for stream in extra.get(d, [])
            if not (level == "T" and stream in DMA_STREAMS)
        )
    return rows


@dataclass
class _Layout:
    """Where everything goes: rows, their y positions, the figure's size, the time axis."""

    rows: list[tuple[int, str]]
    row_of: dict[tuple[int, str], int]
    rows_per_device: int
    n_devices: int
    ys: list[float]
    gap: float
    plot_h: float
    height_in: float
    unit: str
    scale: float
    xmax: float
    px_per_unit: float
    label_text: bool


LEFT_IN, RIGHT_IN = 1.35, 1.75
TOP_IN, BOTTOM_IN = 0.95, 0.9
BAR_H = 0.78


def _layout(slices: list[Any], n_devices: int, level: str, step: float) -> _Layout:
    rows = _rows(slices, n_devices, level)
    rows_per_device = max(1, len(rows) // max(1, n_devices))
    end = max([step, *(s.end for s in slices)]) or 1e-9
    unit, scale = _time_unit(end)
    # geometry: a fixed width, a row height that keeps 8 devices x 2 rows comfortable
    row_in = 0.32 if len(rows) <= 64 else max(0.1, 20.0 / len(rows))
    # a gap between devices: y of row i is i plus its device's index times the gap
    gap = 0.35 if rows_per_device > 1 else 0.0
    ys = [i + rows[i][0] * gap for i in range(len(rows))]
    plot_h = (ys[-1] + 1) * row_in if rows else row_in
    axis_px = (WIDTH_IN - LEFT_IN - RIGHT_IN) * DPI
    xmax = end * 1.01 / scale
    return _Layout(
        rows=rows,
        row_of={r: i for i, r in enumerate(rows)},
        rows_per_device=rows_per_device,
        n_devices=n_devices,
        ys=ys,
        gap=gap,
        plot_h=plot_h,
        height_in=plot_h + TOP_IN + BOTTOM_IN,
        unit=unit,
        scale=scale,
        xmax=xmax,
        px_per_unit=axis_px / xmax,
        label_text=len(rows) <= 64,
    )


def _figure(lay: _Layout) -> tuple[Any, Any]:
    """The figure (on an Agg canvas) and its one axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH_IN, lay.height_in), dpi=DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_axes(
        (
            LEFT_IN / WIDTH_IN,
            BOTTOM_IN / lay.height_in,
            1 - (LEFT_IN + RIGHT_IN) / WIDTH_IN,
            lay.plot_h / lay.height_in,
        )
    )
    return fig, ax


Bars = dict[tuple[int, str], list[tuple[float, float]]]
Label = tuple[float, float, int, str, str]


def _bars(slices: list[Any], lay: _Layout) -> tuple[Bars, dict[int, int], list[Label]]:
    """Bars batched per (row, category), bars per row, and the labels that fit."""
    batches: Bars = defaultdict(list)
    counts: dict[int, int] = defaultdict(int)
    labels: list[Label] = []
    for s in slices:
        stream = "compute" if s.stream == "wait" else s.stream
        r = lay.row_of.get((s.device, stream))
        if r is None:
            continue
        x0, w = s.start / lay.scale, (s.end - s.start) / lay.scale
        if w <= 0:
            continue
        cat = _category(s.stream, s.op)
        batches[(r, cat)].append((x0, w))
        counts[r] += 1
        if lay.label_text:
            text = _label(s.stream, s.op, s.bytes)
            if w * lay.px_per_unit >= 7.0 * len(text) + 6:
                labels.append((x0 + w / 2, lay.ys[r], r, text, cat))
    return batches, counts, labels


def _draw_bars(ax: Any, batches: Bars, counts: dict[int, int], lay: _Layout) -> set[str]:
    """Draw the bars; returns the categories drawn (for the legend)."""
    seen: set[str] = set()
    for (r, cat), spans in batches.items():
        seen.add(cat)
        dense = counts[r] > 400
        y0 = lay.ys[r] - BAR_H / 2
        if cat == "wait":
            ax.broken_barh(
                spans,
                (y0 + BAR_H * 0.12, BAR_H * 0.76),
                facecolors=WAIT_FACE,
                edgecolors=WAIT_EDGE,
                linewidth=0.0 if dense else 0.6,
                hatch="////",
                zorder=2,
            )
            continue
        group, key = cat.split(":", 1)
        face = {"compute": COMPUTE_STYLE, "dma": DMA_STYLE}.get(group, COLLECTIVE_STYLE)[key]
        ax.broken_barh(
            spans,
            (y0, BAR_H),
            facecolors=face,
            edgecolors="white",
            linewidth=0.0 if dense else 0.5,
            zorder=3,
        )
    return seen


DARK_CATEGORIES = ("compute:matmul", "coll:reduce_scatter", "coll:all_to_all", "coll:all_gather")
"""Bars dark enough for white text."""


def _draw_labels(ax: Any, labels: list[Label]) -> None:
    for x, y, _, text, cat in labels:
        box = (
            {"boxstyle": "square,pad=0.15", "facecolor": WAIT_FACE, "linewidth": 0}
            if cat == "wait"
            else None
        )
        ax.text(
            x,
            y,
            text,
            ha="center",
            va="center",
            fontsize=7.5,
            zorder=4,
            color="white" if cat in DARK_CATEGORIES else "#1A1A1A",
            clip_on=True,
            bbox=box,
        )


def _draw_row_labels(ax: Any, lay: _Layout) -> None:
    ax.set_yticks(lay.ys)
    tick_labels = []
    for d, stream in lay.rows:
        tick_labels.append(f"dev {d}  {stream}" if stream == "compute" else stream)
    ax.set_yticklabels(tick_labels, fontsize=8)
    for lab, (_d, stream) in zip(ax.get_yticklabels(), lay.rows, strict=False):
        if stream == "compute":
            lab.set_fontweight("bold")


def _draw_devices(ax: Any, lay: _Layout, report: dict[str, Any], level: str) -> None:
    """Alternate device bands, and each device's exposed time on the right."""
    from matplotlib.transforms import blended_transform_factory

    per_device = {p["device"]: p for p in report.get("per_device", [])}
    slowest = report.get("slowest_device", 0)
    many = lay.n_devices > 1
    right = blended_transform_factory(ax.transAxes, ax.transData)
    for d in range(lay.n_devices):
        first = lay.row_of[(d, "compute")]
        last = first + lay.rows_per_device - 1
        if d % 2 == 1:
            ax.axhspan(
                lay.ys[first] - 0.5 - lay.gap / 2,
                lay.ys[last] + 0.5 + lay.gap / 2,
                color="#F2F2F2",
                zorder=0,
                linewidth=0,
            )
        p = per_device.get(d)
        if p is not None and level != "G":
            text = f"exposed {_fmt(p['exposed_comm_time_s'])}"
            if d == slowest and many:
                text += "\n◀ slowest device"
            ax.text(
                1.008,
                (lay.ys[first] + lay.ys[last]) / 2,
                text,
                transform=right,
                fontsize=8,
                va="center",
                ha="left",
                color=WAIT_EDGE if p["exposed_comm_time_s"] > 0 else "#444444",
                fontweight="bold" if d == slowest and many else "normal",
            )


def _style_axes(ax: Any, lay: _Layout) -> None:
    if lay.rows:
        ax.set_ylim(lay.ys[-1] + 0.5 + lay.gap / 2, lay.ys[0] - 0.5 - lay.gap / 2)
    ax.set_xlim(0, lay.xmax)
    ax.set_xlabel(f"time ({lay.unit})", fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#DDDDDD", linewidth=0.6, zorder=1)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _shows_roofline(report: dict[str, Any], level: str) -> bool:
    return level != "G" and 0 < report.get("roofline_time_s", 0.0) < report["step_time_s"]


def _draw_time_lines(ax: Any, lay: _Layout, report: dict[str, Any], level: str) -> None:
    """The step time (solid) and the roofline bound (dashed)."""
    ax.axvline(report["step_time_s"] / lay.scale, color=LINE_STEP, linewidth=1.2, zorder=5)
    if _shows_roofline(report, level):
        roofline = report.get("roofline_time_s", 0.0)
        ax.axvline(
            roofline / lay.scale, color=LINE_ROOFLINE, linewidth=1.0, linestyle="--", zorder=5
        )


def _title_lines(timeline: Any, report: dict[str, Any], program: str | None) -> tuple[str, str]:
    n_devices = len(timeline.devices)
    head = program or "program"
    chip = report.get("chip", getattr(timeline.chip, "name", "?"))
    devices = f"{n_devices} device" + ("s" if n_devices != 1 else "")
    line1 = f"{head}  ·  {chip}  ·  {devices}  ·  level {timeline.level}"
    step = report["step_time_s"]
    roofline = report.get("roofline_time_s", 0.0)
    exposed = report["exposed_comm_time_s"]
    share = f" ({exposed / step:.0%} of step)" if step > 0 else ""
    line2 = (
        f"step {_fmt(step)}   compute {_fmt(report['compute_time_s'])}   "
        f"exposed comm {_fmt(exposed)}{share}   roofline bound {_fmt(roofline)}"
    )
    counts_by_kind = report.get("collectives", {})
    total = sum(counts_by_kind.values())
    if total:
        from shardc.interpreter.timing import format_bytes

        kinds = ", ".join(f"{k} {v}" for k, v in counts_by_kind.items() if v)
        line2 += f"   collectives {total} ({kinds}), {format_bytes(report['comm_bytes'])}/device"
    return line1, line2


def _draw_title(fig: Any, lay: _Layout, lines: tuple[str, str]) -> None:
    line1, line2 = lines
    x = LEFT_IN / WIDTH_IN
    fig.text(
        x, 1 - 0.3 / lay.height_in, line1, fontsize=11.5, fontweight="bold", va="center", ha="left"
    )
    fig.text(
        x, 1 - 0.62 / lay.height_in, line2, fontsize=9.5, va="center", ha="left", color="#333333"
    )


def _legend_handles(seen: set[str], roofline: bool) -> list[Any]:
    """What is on the picture, in a fixed order."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = []
    for key, face in COMPUTE_STYLE.items():
        if f"compute:{key}" in seen:
            handles.append(
                Patch(facecolor=face, label="matmul" if key == "matmul" else "other compute")
            )
    if "wait" in seen:
        handles.append(
            Patch(
                facecolor=WAIT_FACE,
                edgecolor=WAIT_EDGE,
                hatch="////",
                label="compute waits for comm",
            )
        )
    for key, face in DMA_STYLE.items():
        if f"dma:{key}" in seen:
            handles.append(Patch(facecolor=face, label=key))
    for key, face in COLLECTIVE_STYLE.items():
        if f"coll:{key}" in seen:
            handles.append(Patch(facecolor=face, label=key if key != "other" else "other"))
    handles.append(Line2D([], [], color=LINE_STEP, linewidth=1.2, label="step time"))
    if roofline:
        handles.append(
            Line2D(
                [], [], color=LINE_ROOFLINE, linewidth=1.0, linestyle="--", label="roofline bound"
            )
        )
    return handles


def _draw_legend(fig: Any, lay: _Layout, handles: list[Any]) -> None:
    fig.legend(
        handles=handles,
        loc="lower left",
        ncol=min(len(handles), 8),
        fontsize=8.5,
        frameon=False,
        bbox_to_anchor=(LEFT_IN / WIDTH_IN - 0.01, 0.02 / lay.height_in),
        handlelength=1.6,
        columnspacing=1.4,
    )


def render_png(timeline: Any, file: IO[bytes], *, program: str | None = None) -> None:
    """Draw the timeline as a PNG into an open binary file."""
    report = timeline.report()
    slices = timeline.slices()
    level = timeline.level
    lay = _layout(slices, len(timeline.devices), level, report["step_time_s"])
    fig, ax = _figure(lay)
    batches, counts, labels = _bars(slices, lay)
    seen = _draw_bars(ax, batches, counts, lay)
    _draw_labels(ax, labels)
    _draw_row_labels(ax, lay)
    _draw_devices(ax, lay, report, level)
    _style_axes(ax, lay)
    _draw_time_lines(ax, lay, report, level)
    _draw_title(fig, lay, _title_lines(timeline, report, program))
    _draw_legend(fig, lay, _legend_handles(seen, _shows_roofline(report, level)))
    fig.savefig(file, format="png", dpi=DPI)


__all__ = ["plot_timeline", "render_png", "require_matplotlib"]
