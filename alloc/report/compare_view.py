"""comparison.png and comparison.html of a what-if comparison (see `alloc.report.compare`)."""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from alloc.io.files import write_atomically
from alloc.printable import shown
from alloc.readable import natural_key
from alloc.report.compare import COUNTS, OVERALL_KEYS, TEAM_KEYS, TOLERANCE, WORST, Comparison
from alloc.report.data import CLASSES, fnum
from alloc.report.fmt import (
    Cell,
    data_uri,
    duration,
    e,
    number,
    page,
    partial,
    pct,
    signed,
    signed_duration,
    stopped_after,
    table,
    worst_team,
)
from alloc.report.plots import BARS, WAIT_TICKS, plain_text, save


def write_png(path: Path, c: Comparison) -> Path:
    """Top: each team's delivered/owed per run (grouped bars); bottom: p50 and p90 waits per
    class per run."""
    with plain_text():
        return _draw(path, c)


def _shown_teams(c: Comparison) -> list[str]:
    """The teams of the top plot: all, or for a large tree the `BARS` with the lowest
    delivered / owed in any run (in the comparison's order)."""
    if len(c.teams) <= BARS:
        return c.teams

    def lowest(team: str) -> float:
        ratios = [(c.team(team, i) or {}).get("delivered_over_owed") for i in range(len(c.runs))]
        return min((r for r in ratios if r is not None), default=2.0)

    chosen = set(sorted(c.teams, key=lambda t: (lowest(t), natural_key(t)))[:BARS])
    return [t for t in c.teams if t in chosen]


def _draw(path: Path, c: Comparison) -> Path:
    teams = _shown_teams(c)
    n_runs, n_teams = len(c.runs), max(1, len(teams))
    top_h = max(2.5, n_teams * (0.2 + 0.16 * n_runs))
    fig = Figure(figsize=(11, top_h + 3.6), layout="constrained")
    top, bottom = fig.subplots(2, 1, height_ratios=(top_h, 3.2))
    width = 0.8 / n_runs
    if teams:
        for i, label in enumerate(c.labels):
            ys = [t - 0.4 + width * (i + 0.5) for t in range(len(teams))]
            ratios = [(c.team(team, i) or {}).get("delivered_over_owed") for team in teams]
            xs = [100 * (r or 0.0) for r in ratios]
            top.barh(ys, xs, height=width * 0.92, color=f"C{i % 10}", label=shown(label))
            for y, r, team in zip(ys, ratios, teams, strict=True):
                if r is None and c.team(team, i) is not None:  # not 0%: nothing was owed
                    top.text(1, y, "owed nothing", va="center", fontsize=7, color="#4a5568")
        top.set_yticks(range(len(teams)), [shown(t) for t in teams], fontsize=9)
        top.invert_yaxis()
        top.axvline(100, color="#1a202c", linestyle="--", linewidth=1.1)
        top.set_xlabel("delivered / owed (%)")
        top.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, title="run")
        top.grid(axis="x", alpha=0.3)
    else:
        top.text(0.5, 0.5, "no funded teams", ha="center", va="center", transform=top.transAxes)
        top.set_axis_off()
    some = len(teams) < len(c.teams)
    top.set_title(
        "Delivered / owed per team and run"
        + (f": the {len(teams)} teams lowest in any run, of {len(c.teams):,}" if some else "")
    )

    classes = [cls for cls in CLASSES if any(_count(c, i, cls) for i in range(n_runs))]
    highest = 1.0
    for i, label in enumerate(c.labels):
        xs = [k - 0.4 + width * (i + 0.5) for k in range(len(classes))]
        p50 = [max(1.0, _wait(c, i, cls, "p50")) for cls in classes]
        p90 = [max(1.0, _wait(c, i, cls, "p90")) for cls in classes]
        highest = max([highest, *p90])
        bottom.bar(xs, p90, width=width * 0.92, color=f"C{i % 10}", alpha=0.35)
        bottom.bar(xs, p50, width=width * 0.92, color=f"C{i % 10}", label=label)
    bottom.set_yscale("log")
    bottom.set_ylim(1.0, max(86400.0, highest * 2))
    ticks = [(s, lab) for s, lab in WAIT_TICKS if s <= max(86400.0, highest * 2)]
    bottom.set_yticks([s for s, _ in ticks], [lab for _, lab in ticks])
    bottom.minorticks_off()
    bottom.set_xticks(range(len(classes)), classes)
    bottom.set_ylabel("wait (log scale)")
    bottom.set_title(
        "Wait until first start per class: p50 (solid) and p90 (light); "
        "waits under 1 s sit on the axis"
    )
    if classes:
        bottom.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, title="run")
    bottom.grid(axis="y", alpha=0.3)
    if not classes:
        bottom.text(0.5, 0.5, "no jobs", ha="center", va="center", transform=bottom.transAxes)
    save(fig, path)
    return path


def _count(c: Comparison, i: int, cls: str) -> float:
    w = (c.runs[i].metrics.get("wait_s") or {}).get(cls) or {}
    return fnum(w.get("count"), 1.0 if w else 0.0)


def _wait(c: Comparison, i: int, cls: str, q: str) -> float:
    return fnum(((c.runs[i].metrics.get("wait_s") or {}).get(cls) or {}).get(q))


def _tone(delta: float, higher_better: bool | None, tol: float) -> str:
    if higher_better is None or abs(delta) <= tol:
        return ""
    return "good" if (delta > 0) == higher_better else "bad"


def _fmt(key: str, value: float | None) -> str:
    if value is None:
        return "-"
    if key.endswith("_s") and key != "wall_seconds":
        return duration(value)
    if key == "drain_hours_p50":  # a duration given in hours
        return duration(value * 3600)
    if "occupancy" in key or "over_owed" in key or key in ("availability", "utilization"):
        return pct(value)
    if key in COUNTS:
        return f"{value:,.0f}"
    return number(value)


def _fmt_delta(key: str, delta: float) -> str:
    if key.endswith("_s") and key != "wall_seconds":
        return signed_duration(delta)
    if key == "drain_hours_p50":
        return signed_duration(delta * 3600)
    if "occupancy" in key or "over_owed" in key or key in ("availability", "utilization"):
        return signed(100 * delta, 1, " pp")
    return signed(delta, 0 if key in COUNTS else 1)


def _with_delta(
    key: str, value: float | None, delta: float | None, better: bool | None, tol: float
) -> Cell:
    if value is None:
        return "-"
    if delta is None:
        return _fmt(key, value)
    delta_text = _fmt_delta(key, delta)
    return (
        "" if delta_text == "0" else _tone(delta, better, tol),  # no colour for what shows as 0
        f'{_fmt(key, value)} <span class="muted">({e(delta_text)})</span>',
    )


def _partial_banner(c: Comparison) -> str:
    """What was stopped before its end, if anything: the partial runs and those not run."""
    if not c.any_partial:
        return ""
    parts = [
        f"{e(label)} {e(stopped_after(c.runs[i].metrics))}"
        for i, label in enumerate(c.labels)
        if c.partial(i)
    ]
    text = "partial comparison: stopped before the end."
    if parts:
        text += " Partial runs: " + "; ".join(parts) + "."
    if c.not_run:
        text += " Not run: " + e(", ".join(c.not_run)) + "."
    text += " A run's deltas are shown only against a baseline that covers the same time."
    return f'<p class="partial">{text}</p>'


def write_html(path: Path, c: Comparison, png: Path, credit: str | None) -> Path:
    runs_rows: list[list[Cell]] = [
        [
            e(label),
            e(r.metrics.get("policy", "?")),
            e(r.metrics.get("seed", "?")),
            e(r.metrics.get("days", "?")),
            ("bad", e(partial(r.metrics) or "")) if c.partial(i) else "whole",
            e(c.labels[c.baseline[i]]),
            e(r.folder),
        ]
        for i, (label, r) in enumerate(zip(c.labels, c.runs, strict=True))
    ]
    overall_rows: list[list[Cell]] = []
    for key, better in OVERALL_KEYS:
        name = key.removesuffix("_s").replace("_over_owed", " / owed").replace("_", " ")
        if key in WORST:
            name = WORST[key][0].replace("_", " ") + " delivered / owed"
        cells: list[Cell] = [e(name)]
        for i in range(len(c.runs)):
            value = c.overall(i)[key]
            delta = None if c.is_baseline(i) else c.overall_delta(i)[key]
            cell = _with_delta(key, value, delta, better, 1e-6 if "occ" in key else 0.0)
            hourly = key in WORST and WORST[key][0] == "worst_team_hourly"
            worst = worst_team(c.runs[i].metrics, hourly) if key in WORST else ("-", None)
            if worst[1] is not None:
                # The worst team may differ between runs: name it (or say none is below 100%).
                named = f"{e(worst[0])}: "
                cell = (cell[0], named + cell[1]) if isinstance(cell, tuple) else named + cell
            cells.append(cell)
        overall_rows.append(cells)
    team_head = ["team"]
    for label in c.labels:
        team_head += [
            f"{e(label)}<br>{name}"
            for name in (
                "delivered h",
                "owed h",
                "d/o",
                "d/o hourly",
                "wait p50",
                "wait p90",
                "preempt.",
            )
        ]
    team_rows: list[list[Cell]] = []
    for team in c.teams:
        cells = [e(team)]
        for i in range(len(c.runs)):
            numbers = c.team(team, i)
            deltas = None if c.is_baseline(i) else c.team_delta(team, i)
            for key, better in TEAM_KEYS:
                cells.append(
                    _with_delta(
                        key,
                        numbers[key] if numbers else None,
                        deltas[key] if deltas else None,
                        better,
                        TOLERANCE[key],
                    )
                )
        team_rows.append(cells)
    if c.single_baseline:
        intro = (
            f'<p class="muted">Baseline: <b>{e(c.labels[0])}</b>; deltas in parentheses are '
            "against it (green: better, red: worse; pp = percentage points).</p>"
        )
    else:
        intro = (
            '<p class="muted">Deltas in parentheses are against each run\'s baseline (column '
            "<i>baseline</i> below: a scenario against the base tree under the same policy; "
            "green: better, red: worse; pp = percentage points).</p>"
        )
    body = [
        _partial_banner(c),
        intro,
        "<h2>Runs</h2>",
        table(
            ["run", "policy", "seed", "days", "simulated", "baseline", "folder"],
            runs_rows,
            left=7,
        ),
        "<h2>Over the run</h2>",
        table(["metric", *(e(label) for label in c.labels)], overall_rows),
        "<h2>Per team</h2>",
        table(team_head, team_rows) if c.teams else '<p class="muted">No funded teams.</p>',
        '<p class="muted">A team missing from a run (its budget tree differs) shows "-".</p>',
        f'<h2>Plots</h2><img src="{data_uri(png)}" alt="comparison">',
    ]
    title = "What-if comparison: " + " vs ".join(c.labels)
    write_atomically(path, page(title, "\n".join(body), credit))
    return path
