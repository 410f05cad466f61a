"""The four PNG plots of one simulation: occupancy, delivered vs owed, waits, fair share.

Figures are drawn with matplotlib's object API on the Agg canvas (no pyplot, so no global
state, no GUI backend and no window, whatever backend the process has chosen).

A lab's tree may have hundreds of teams (`alloc generate` makes 150 leaves by default): the
bars of delivered vs owed show the `BARS` teams furthest below what they were owed, and the
fair-share plot names the `NAMED` teams furthest from their share and draws the others as
grey lines, each plot saying how many it leaves out (report.html's table has every team).
One bar or one legend entry per team of such a tree made a figure 250 inches tall, or a
legend wider than the figure (matplotlib: "constrained_layout not applied")."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from alloc.io.files import atomic_path
from alloc.printable import shown
from alloc.readable import natural_key
from alloc.report.data import CLASSES, PLOTS, Run, fnum, load_run, num
from alloc.report.fmt import count, counted, duration, pct

DPI = 110
BARS = 30  # teams in the delivered-vs-owed plot, worst first
NAMED = 20  # teams named (coloured, in the legend) in the fair-share plot
TEAM_COLORS = matplotlib.colormaps["tab20"]
STACK = (
    ("allocated", "allocated", "#2b6cb0"),
    ("unallocated", "unallocated", "#63b3ed"),
    ("idle", "idle (ready, unused)", "#f6ad55"),
    ("unavailable", "unavailable (not ready)", "#a0aec0"),
)
CLASS_COLORS = {
    "debug": "#38a169",
    "small": "#3182ce",
    "large": "#805ad5",
    "unallocated": "#a0aec0",
}
# Wait-time ticks: (seconds, label); waits under one second are drawn at one second.
WAIT_TICKS = (
    (1, "≤1 s"),
    (60, "1 min"),
    (600, "10 min"),
    (3600, "1 h"),
    (86400, "1 d"),
    (604800, "1 w"),
)


def save(fig: Figure, path: Path) -> None:
    """A PNG written whole or not at all (alloc.io.files)."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=DPI, format="png")


def write_plots(out_dir: Path) -> list[Path]:
    """Draw occupancy.png, delivered_vs_owed.png, waits_cdf.png and fairshare.png into
    `out_dir` from the files a simulation wrote there; returns their paths."""
    out_dir = Path(out_dir)
    run = load_run(out_dir)
    drawers = (_occupancy, _delivered_vs_owed, _waits_cdf, _fairshare)
    paths = []
    for name, draw in zip(PLOTS, drawers, strict=True):
        with plain_text():
            fig = draw(run)
            path = out_dir / name
            save(fig, path)
        paths.append(path)
    return paths


def plain_text() -> AbstractContextManager[None]:
    """Draw team names and labels as text, "$" and all (no mathtext)."""
    return matplotlib.rc_context({"text.parse_math": False})


def _placeholder(fig: Figure, ax: Axes, title: str, message: str) -> Figure:
    ax.set_title(title)
    ax.text(
        0.5,
        0.5,
        message,
        ha="center",
        va="center",
        fontsize=12,
        color="#718096",
        transform=ax.transAxes,
    )
    ax.set_axis_off()
    return fig


def _steps(hours: list[float], values: list[float]) -> tuple[list[float], list[float]]:
    """Hourly averages as a step: each value held over [hour, hour + 1), x in days."""
    xs: list[float] = []
    ys: list[float] = []
    for h, v in zip(hours, values, strict=True):
        xs += [h / 24, (h + 1) / 24]
        ys += [v, v]
    return xs, ys


def _occupancy(run: Run) -> Figure:
    fig = Figure(figsize=(10, 4.8), layout="constrained")
    ax = fig.add_subplot()
    title = "GPUs by state over time"
    rows = run.timeline
    if not rows:
        return _placeholder(fig, ax, title, "no timeline in this run")
    hours = [num(r, "hour") for r in rows]
    stack = []
    for key, _, _ in STACK:
        xs, ys = _steps(hours, [num(r, key) for r in rows])
        stack.append(ys)
    ax.stackplot(
        xs,
        *stack,
        labels=[label for _, label, _ in STACK],
        colors=[color for _, _, color in STACK],
        linewidth=0,
    )
    qx, qy = _steps(hours, [num(r, "queued") for r in rows])
    top = max(max(num(r, "installed") for r in rows), 1.0)
    qax = ax
    if max(qy) > 2 * top:  # demand dwarfs the cluster: give it its own scale
        qax = ax.twinx()
        qax.set_ylabel("queued GPUs (dashed)")
        qax.set_ylim(0, max(qy) * 1.05)
    qax.plot(qx, qy, linestyle="--", color="#1a202c", linewidth=1.3, label="queued (demand)")
    ax.set_ylim(0, max(top, max(qy) if qax is ax else 0.0) * 1.05)
    ax.set_xlim(xs[0], xs[-1])
    m = run.metrics
    ax.set_title(
        f"{title}: availability {pct(_get(m, 'availability'))}, occupancy "
        f"{pct(_get(m, 'occupancy'))} (allocated {pct(_get(m, 'allocated_occupancy'))}, "
        f"unallocated {pct(_get(m, 'unallocated_occupancy'))})",
        fontsize=11,
    )
    ax.set_xlabel("time (days)")
    ax.set_ylabel("GPUs (hourly average)")
    handles, labels = ax.get_legend_handles_labels()
    if qax is not ax:
        h2, l2 = qax.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    fig.legend(handles, labels, loc="outside lower center", ncols=5, fontsize=9, frameon=False)
    ax.grid(alpha=0.3)
    return fig


def _get(m: dict[str, Any], key: str) -> float | None:
    value = m.get(key)
    return None if value is None else fnum(value)


def _delivered_vs_owed(run: Run) -> Figure:
    teams = run.team_metrics
    n = min(len(teams), BARS)
    fig = Figure(figsize=(11, max(3.0, 0.42 * n + 1.6)), layout="constrained")
    title = "Delivered vs owed GPU-hours per team"
    if not teams:
        return _placeholder(fig, fig.add_subplot(), title, "no funded teams in this run")
    left, right = fig.subplots(1, 2, sharey=True, width_ratios=(3, 2))
    # Teams owed nothing (no ratio) last: they got all of nothing.
    order = sorted(
        teams, key=lambda t: (fnum(teams[t].get("delivered_over_owed"), 2.0), natural_key(t))
    )
    order = order[:n]
    if len(teams) > n:
        title = f"{title}: the {n} furthest below what they were owed, of {count(len(teams))}"
    ys = list(range(n))
    owed = [fnum(teams[t].get("owed_gpu_hours")) for t in order]
    delivered = [fnum(teams[t].get("delivered_gpu_hours")) for t in order]
    ratio = [fnum(teams[t].get("delivered_over_owed"), 0.0) for t in order]
    h = 0.38
    left.barh([y + h / 2 for y in ys], owed, height=h, color="#cbd5e0", label="owed")
    left.barh([y - h / 2 for y in ys], delivered, height=h, color="#2b6cb0", label="delivered")
    left.set_yticks(ys, [shown(t) for t in order], fontsize=9)
    left.invert_yaxis()  # worst team on top
    left.set_xlabel("GPU-hours over the run")
    left.legend(loc="lower right", fontsize=9)
    left.grid(axis="x", alpha=0.3)
    colors = ["#c53030" if r < 0.9 else "#dd6b20" if r < 0.98 else "#2f855a" for r in ratio]
    right.barh(ys, [100 * r for r in ratio], height=0.6, color=colors)
    right.axvline(100, color="#1a202c", linestyle="--", linewidth=1.2)
    for y, r, o in zip(ys, ratio, owed, strict=True):
        label = "owed nothing" if o == 0 else pct(r)
        if r >= 0.2:  # inside its bar: clear of the 100% line
            right.text(
                100 * r - 1.5, y, label, va="center", ha="right", fontsize=8.5, color="white"
            )
        else:
            right.text(100 * r + 1, y, label, va="center", fontsize=8.5)
    # The stricter hour-by-hour figure as a mark on each bar (older runs may not have it).
    hourly = [
        (y, teams[t].get("delivered_over_owed_hourly")) for y, t in zip(ys, order, strict=True)
    ]
    marks = [(y, 100 * fnum(r)) for y, r in hourly if r is not None]
    if marks:
        right.scatter(
            [x for _, x in marks],
            [y for y, _ in marks],
            marker="|",
            s=160,
            color="#1a202c",
            linewidths=2,
            zorder=3,
            label="hour by hour",
        )
        right.legend(loc="lower right", fontsize=8.5)
    right.set_xlim(0, 100 * max(1.0, *ratio) + 5)
    right.set_xlabel("delivered / owed, % (bars: over the window; dashed: 100%)")
    right.grid(axis="x", alpha=0.3)
    m = run.metrics
    fig.suptitle(
        f"{title} (overall delivered/owed {pct(_get(m, 'delivered_over_owed'))})", fontsize=12
    )
    return fig


def wait_label(run: Run, cls: str) -> str:
    """The wait plot's legend entry of a class: its jobs, how many never started, p50 and p90
    (`Run.wait_summary`: the percentiles of report.html's tables and metrics.json)."""
    q = run.wait_summary(cls)
    never = run.never_started(cls)
    jobs = counted(int(q["count"] or 0), "job")
    return (
        f"{cls} ({jobs}{f', {count(never)} never started' if never else ''}; "
        f"p50 {duration(q['p50'])}, p90 {duration(q['p90'])})"
    )


def _waits_cdf(run: Run) -> Figure:
    fig = Figure(figsize=(9, 4.8), layout="constrained")
    ax = fig.add_subplot()
    title = "Wait until first start, by class"
    longest = 1.0
    for cls in CLASSES:
        waits = run.waits(cls)
        if not waits:
            continue
        n = len(waits)
        xs = [max(1.0, w) for w in waits]
        ys = [(i + 1) / n for i in range(n)]
        longest = max(longest, xs[-1])
        label = wait_label(run, cls)
        ax.step(
            [xs[0], *xs],
            [0.0, *ys],
            where="post",
            color=CLASS_COLORS[cls],
            linewidth=1.6,
            label=label,
        )
    if longest == 1.0 and not run.jobs:
        return _placeholder(fig, ax, title, "no jobs in this run")
    ax.set_xscale("log")
    right = max(86400.0, longest * 1.5)
    ax.set_xlim(0.7, right)  # waits under 1 s are drawn at 1 s, off the axis
    ticks = [(s, label) for s, label in WAIT_TICKS if s <= right]
    ax.set_xticks([s for s, _ in ticks], [label for _, label in ticks])
    ax.minorticks_off()
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(
        "wait from submission to first start (log scale; under 1 s drawn at 1 s; a job that "
        "never started counts its wait to the end of the run)",
        fontsize=9,
    )
    ax.set_ylabel("fraction of jobs started within")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=9)
    ax.grid(alpha=0.3)
    return fig


def _fairshare(run: Run) -> Figure:
    series: dict[str, tuple[list[float], list[float]]] = {}
    for r in run.teams:
        hours, ratios = series.setdefault(r.get("team", ""), ([], []))
        hours.append(num(r, "hour"))
        ratios.append(num(r, "ratio"))
    many = len(series) > 8
    fig = Figure(figsize=(12 if many else 10, 4.8), layout="constrained")
    ax = fig.add_subplot()
    title = "Fair-share ratio per team (charged / entitled over the lookback window)"
    if not series:
        return _placeholder(fig, ax, title, "no funded teams in this run")
    steps = {team: _steps(*hr) for team, hr in series.items()}  # a ratio holds for its hour
    named = sorted(series, key=natural_key)
    if len(series) > NAMED:
        # The teams furthest from their share on average are named; the others are grey.
        def off(team: str) -> float:
            ratios = series[team][1]
            return sum(abs(r - 1.0) for r in ratios) / len(ratios)

        named = sorted(
            sorted(series, key=lambda t: (-off(t), natural_key(t)))[:NAMED], key=natural_key
        )
        others = [
            list(zip(*steps[t], strict=True))
            for t in sorted(set(series) - set(named), key=natural_key)
        ]
        ax.add_collection(
            LineCollection(
                others,
                colors="#cbd5e0",
                linewidths=0.8,
                label=f"the other {count(len(others))} teams",
            )
        )
        title = f"{title}: the {NAMED} teams furthest from their share named"
    end = max(xs[-1] for xs, _ in steps.values())
    for i, team in enumerate(named):
        xs, ys = steps[team]
        style = ("-", "--", ":")[(i // 20) % 3]  # 20 distinct colours, then line styles
        ax.plot(
            xs, ys, linestyle=style, color=TEAM_COLORS(i % 20), linewidth=1.3, label=shown(team)
        )
    ax.set_xlim(0, end)
    ax.axhline(1.0, color="#1a202c", linestyle="--", linewidth=1.0)
    ax.autoscale_view(scalex=False)  # the grey lines count too
    ax.set_ylim(bottom=0)
    ax.set_xlabel("time (days)")
    ax.set_ylabel("fair-share ratio (1.0 = exactly its share)")
    ax.set_title(title, fontsize=11 if many else None)
    ax.grid(alpha=0.3)
    if many:
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    else:
        ax.legend(loc="best", fontsize=9)
    return fig
