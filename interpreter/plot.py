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


def render_png(timeline: Any, file: IO[bytes], *, program: str | None = None) -> None:
    """Draw the timeline as a PNG into an open binary file."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.transforms import blended_transform_factory

    report = timeline.report()
    slices = timeline.slices()
    n_devices = len(timeline.devices)
    rows = _rows(slices, n_devices, timeline.level)
    row_of = {r: i for i, r in enumerate(rows)}
    rows_per_device = max(1, len(rows) // max(1, n_devices))

    step = report["step_time_s"]
    end = max([step, *(s.end for s in slices)]) or 1e-9
    unit, scale = _time_unit(end)

    # geometry: a fixed width, a row height that keeps 8 devices x 2 rows comfortable
    row_in = 0.32 if len(rows) <= 64 else max(0.1, 20.0 / len(rows))
    # a gap between devices: y of row i is i plus its device's index times the gap
    gap = 0.35 if rows_per_device > 1 else 0.0
    ys = [i + rows[i][0] * gap for i in range(len(rows))]
    plot_h = (ys[-1] + 1) * row_in if rows else row_in
    top_in, bottom_in = 0.95, 0.9
    height_in = plot_h + top_in + bottom_in
    fig = Figure(figsize=(WIDTH_IN, height_in), dpi=DPI)
    FigureCanvasAgg(fig)
    left_in, right_in = 1.35, 1.75
    ax = fig.add_axes(
        (
            left_in / WIDTH_IN,
            bottom_in / height_in,
            1 - (left_in + right_in) / WIDTH_IN,
            plot_h / height_in,
        )
    )
    axis_px = (WIDTH_IN - left_in - right_in) * DPI
    xmax = end * 1.01 / scale
    px_per_unit = axis_px / xmax
    bar_h = 0.78
    label_text = len(rows) <= 64

    # bars, batched per (row, category)
    batches: dict[tuple[int, str], list[tuple[float, float]]] = defaultdict(list)
    counts: dict[int, int] = defaultdict(int)
    labels: list[tuple[float, float, int, str, str]] = []
    for s in slices:
        stream = "compute" if s.stream == "wait" else s.stream
        r = row_of.get((s.device, stream))
        if r is None:
            continue
        x0, w = s.start / scale, (s.end - s.start) / scale
        if w <= 0:
            continue
        cat = _category(s.stream, s.op)
        batches[(r, cat)].append((x0, w))
        counts[r] += 1
        if label_text:
            text = _label(s.stream, s.op, s.bytes)
            if w * px_per_unit >= 7.0 * len(text) + 6:
                labels.append((x0 + w / 2, ys[r], r, text, cat))

    seen: set[str] = set()
    for (r, cat), spans in batches.items():
        seen.add(cat)
        dense = counts[r] > 400
        y0 = ys[r] - bar_h / 2
        if cat == "wait":
            ax.broken_barh(
                spans,
                (y0 + bar_h * 0.12, bar_h * 0.76),
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
            (y0, bar_h),
            facecolors=face,
            edgecolors="white",
            linewidth=0.0 if dense else 0.5,
            zorder=3,
        )
    for x, y, _, text, cat in labels:
        dark = cat in (
            "compute:matmul",
            "coll:reduce_scatter",
            "coll:all_to_all",
            "coll:all_gather",
        )
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
            color="white" if dark else "#1A1A1A",
            clip_on=True,
            bbox=box,
        )

    # device bands, row labels, per-device numbers
    per_device = {p["device"]: p for p in report.get("per_device", [])}
    slowest = report.get("slowest_device", 0)
    ax.set_yticks(ys)
    tick_labels = []
    for d, stream in rows:
        tick_labels.append(f"dev {d}  {stream}" if stream == "compute" else stream)
    ax.set_yticklabels(tick_labels, fontsize=8)
    for lab, (_d, stream) in zip(ax.get_yticklabels(), rows, strict=False):
        if stream == "compute":
            lab.set_fontweight("bold")
    right = blended_transform_factory(ax.transAxes, ax.transData)
    for d in range(n_devices):
        first = row_of[(d, "compute")]
        last = first + rows_per_device - 1
        if d % 2 == 1:
            ax.axhspan(
                ys[first] - 0.5 - gap / 2,
                ys[last] + 0.5 + gap / 2,
                color="#F2F2F2",
                zorder=0,
                linewidth=0,
            )
        p = per_device.get(d)
        if p is not None and timeline.level != "G":
            mid = (ys[first] + ys[last]) / 2
            text = f"exposed {_fmt(p['exposed_comm_time_s'])}"
            if d == slowest and n_devices > 1:
                text += "\n◀ slowest device"
            ax.text(
                1.008,
                mid,
                text,
                transform=right,
                fontsize=8,
                va="center",
                ha="left",
                color=WAIT_EDGE if p["exposed_comm_time_s"] > 0 else "#444444",
                fontweight="bold" if d == slowest and n_devices > 1 else "normal",
            )
    if rows:
        ax.set_ylim(ys[-1] + 0.5 + gap / 2, ys[0] - 0.5 - gap / 2)
    ax.set_xlim(0, xmax)
    ax.set_xlabel(f"time ({unit})", fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#DDDDDD", linewidth=0.6, zorder=1)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)

    roofline = report.get("roofline_time_s", 0.0)
    ax.axvline(step / scale, color=LINE_STEP, linewidth=1.2, zorder=5)
    if timeline.level != "G" and 0 < roofline < step:
        ax.axvline(roofline / scale, color=LINE_ROOFLINE, linewidth=1.0, linestyle="--", zorder=5)

    # title
    head = program or "program"
    chip = report.get("chip", getattr(timeline.chip, "name", "?"))
    devices = f"{n_devices} device" + ("s" if n_devices != 1 else "")
    line1 = f"{head}  ·  {chip}  ·  {devices}  ·  level {timeline.level}"
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
    fig.text(
        left_in / WIDTH_IN,
        1 - 0.3 / height_in,
        line1,
        fontsize=11.5,
        fontweight="bold",
        va="center",
        ha="left",
    )
    fig.text(
        left_in / WIDTH_IN,
        1 - 0.62 / height_in,
        line2,
        fontsize=9.5,
        va="center",
        ha="left",
        color="#333333",
    )

    # legend: what is on the picture, in a fixed order
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
    if timeline.level != "G" and 0 < roofline < step:
        handles.append(
            Line2D(
                [], [], color=LINE_ROOFLINE, linewidth=1.0, linestyle="--", label="roofline bound"
            )
        )
    fig.legend(
        handles=handles,
        loc="lower left",
        ncol=min(len(handles), 8),
        fontsize=8.5,
        frameon=False,
        bbox_to_anchor=(left_in / WIDTH_IN - 0.01, 0.02 / height_in),
        handlelength=1.6,
        columnspacing=1.4,
    )
    fig.savefig(file, format="png", dpi=DPI)


__all__ = ["plot_timeline", "render_png", "require_matplotlib"]
