"""report.html: one simulation's metrics, tables and plots in a single self-contained page."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from alloc.io.files import write_atomically
from alloc.metrics.quantiles import nearest_rank
from alloc.readable import natural_key
from alloc.report.data import CLASSES, Run, fnum, load_run, num
from alloc.report.fmt import (
    WALL_TIME,
    Cell,
    count,
    count_of,
    data_uri,
    duration,
    e,
    hours,
    number,
    page,
    partial,
    pct,
    simulated_span,
    table,
    wall_time,
    worst_team,
)
from alloc.report.plots import write_plots

CAPTIONS = {
    "occupancy.png": "GPUs by state (hourly averages); dashed: GPUs asked for by queued work.",
    "delivered_vs_owed.png": "Per team: GPU-hours owed and delivered, and delivered/owed.",
    "waits_cdf.png": "Distribution of waits until first start, per class.",
    "fairshare.png": "Fair-share ratio of each team over time; 1.0 is exactly its share.",
}


def write_report(out_dir: Path, title: str, credit: str | None = None) -> Path:
    """Write out_dir/report.html (and the four PNGs it embeds) from a simulation's output
    folder. Without `credit`, the run's own metrics.json "credit", if any, is shown."""
    out_dir = Path(out_dir)
    run = load_run(out_dir)
    pngs = write_plots(out_dir)
    banner = partial(run.metrics)
    body = [
        f'<p class="partial">{e(banner)}</p>' if banner else "",
        _header(run.metrics),
        "<h2>The four metrics</h2>",
        _pyramid(run.metrics),
        "<h2>Teams</h2>",
        _teams(run),
        "<h2>Waits by class</h2>",
        _waits(run.metrics),
        "<h2>Events</h2>",
        _events(run),
        "<h2>Plots</h2>",
    ]
    for png in pngs:
        body.append(
            f'<figure><img src="{data_uri(png)}" alt="{e(png.stem)}">'
            f'<figcaption class="muted">{e(CAPTIONS.get(png.name, ""))}</figcaption>'
            "</figure>"
        )
    path = out_dir / "report.html"
    write_atomically(path, page(title, "\n".join(body), run.credit(credit)))
    return path


def _days(days: float) -> str:
    return simulated_span(days)


def _header(m: dict[str, Any]) -> str:
    parts = [
        f"policy <b>{e(m.get('policy', '?'))}</b>",
        f"seed {e(m.get('seed', '?'))}",
        "? days" if not isinstance(m.get("days"), int | float) else f"{_days(m['days'])}",
    ]
    if m.get("source"):
        parts.append(f"source {e(m['source'])}")
    return f'<p class="muted">{" · ".join(parts)}</p>'


def _idle_split(m: dict[str, Any]) -> str:
    """GPU time idle while work was queued: while waiting work fit the free GPUs / while none
    did (a gang waiting for whole hosts)."""
    idle = m.get("idle_while_queued")
    if not isinstance(idle, dict):
        return ""
    return (
        f" (idle then: {pct(_val(idle, 'work_fit'))} while waiting work fit the free GPUs, "
        f"{pct(_val(idle, 'nothing_fit'))} while none did)"
    )


def _val(m: dict[str, Any], key: str) -> float | None:
    v = m.get(key)
    return None if v is None else fnum(v)


def _worst(m: dict[str, Any], hourly: bool = False) -> str:
    """The worst team, as HTML: "worst team nlp/a at 93.0%", "no team below 100%", "all 15
    teams tie at 87.0%", or "no funded teams" when none was owed anything."""
    name, ratio = worst_team(m, hourly)
    if ratio is None:
        return "no funded teams"
    if ratio >= 1.0 - 1e-6:
        return "no team below 100%"
    if name.endswith(" tie"):
        return f"{e(name)} at {pct(ratio)}"
    return f"worst team {e(name)} at {pct(ratio)}"


def _pyramid(m: dict[str, Any]) -> str:
    waits = m.get("wait_s") or {}

    def wait(cls: str) -> str:
        w = waits.get(cls) or {}
        return f"{duration(_val(w, 'p50'))} / {duration(_val(w, 'p90'))}"

    util = m.get("utilization")
    rows: list[list[Cell]] = [
        ["availability", pct(_val(m, "availability")), "ready GPU time / installed GPU time"],
        [
            "occupancy",
            pct(_val(m, "occupancy")),
            f"allocated {pct(_val(m, 'allocated_occupancy'))}, unallocated "
            f"{pct(_val(m, 'unallocated_occupancy'))}; while work was queued "
            f"{pct(_val(m, 'occupancy_while_queued'))}{_idle_split(m)}",
        ],
        [
            "impact: delivered / owed",
            pct(_val(m, "delivered_over_owed")),
            f"over the window's periods; {_worst(m)}",
        ],
        [
            "impact: hour by hour",
            pct(_val(m, "delivered_over_owed_hourly")),
            f"credit capped every hour; {_worst(m, hourly=True)}",
        ],
        [
            "impact: waits p50 / p90",
            "",
            f"debug {wait('debug')}; small {wait('small')}; large {wait('large')}",
        ],
        [
            "utilization",
            pct(fnum(util)) if util is not None else "not in the trace",
            "GPU capacity used by running work (trace column util)",
        ],
    ]
    return table(["metric", "value", "detail"], [[r[0], r[1], ("l", str(r[2]))] for r in rows])


def _teams(run: Run) -> str:
    teams = run.team_metrics
    if not teams:
        return '<p class="muted">No funded teams.</p>'
    rows: list[list[Cell]] = []
    for team in sorted(
        teams, key=lambda t: (fnum(teams[t].get("delivered_over_owed"), 2), natural_key(t))
    ):
        t = teams[team]
        ratio = _val(t, "delivered_over_owed")  # None: owed nothing
        tone = "" if ratio is None else "bad" if ratio < 0.9 else "good" if ratio >= 0.98 else ""
        rows.append(
            [
                e(team),
                number(_val(t, "owed_gpu_hours")),
                number(_val(t, "delivered_gpu_hours")),
                (tone, pct(ratio)),
                duration(_val(t, "wait_p50_s")),
                duration(_val(t, "wait_p90_s")),
                count(int(fnum(t.get("preemptions")))),
            ]
        )
    return table(
        [
            "team",
            "owed GPU-h",
            "delivered GPU-h",
            "delivered / owed",
            "wait p50",
            "wait p90",
            "preemptions",
        ],
        rows,
    ) + (
        '<p class="muted">delivered / owed is taken over the window: each lookback period '
        "credits at most what it owed (hour by hour, the stricter figure, is "
        "<code>delivered_over_owed_hourly</code> in metrics.json); owed is the team's share of "
        "ready GPUs, capped hour by hour at its demand.</p>"
    )


def _waits(m: dict[str, Any]) -> str:
    waits = m.get("wait_s") or {}
    rows: list[list[Cell]] = []
    for cls in CLASSES:
        w = waits.get(cls)
        if not isinstance(w, dict):
            continue
        jobs = w.get("count")
        rows.append(
            [
                cls,
                count_of(jobs),
                duration(_val(w, "p50")),
                duration(_val(w, "p90")),
                duration(_val(w, "max")),
                count_of(w.get("never_started")),
            ]
        )
    if not rows:
        return '<p class="muted">No waits recorded.</p>'
    return table(["class", "jobs", "p50", "p90", "max", "never started"], rows) + (
        '<p class="muted">debug: at most 8 GPUs and a minimum runtime of at most 15 min; '
        "large: 64 GPUs or more; small: the rest; unallocated: minimum runtime 0 or no budget. "
        "A job that never started counts its wait until the end of the run.</p>"
    )


def _events(run: Run) -> str:
    m = run.metrics
    jobs = m.get("jobs") or {}
    statuses = Counter(r.get("status", "?") for r in run.rounds)
    solve = sorted(num(r, "seconds") for r in run.rounds)
    drain_p50 = m.get("drain_hours_p50")
    rows: list[list[Cell]] = [
        ["preemptions", count_of(m.get("preemptions"))],
        ["GPU-hours lost to preemptions", number(_val(m, "preempted_gpu_hours_lost"))],
        ["drains completed", count_of(m.get("drains_completed"))],
        ["drain duration p50", "-" if drain_p50 is None else hours(fnum(drain_p50))],
        ["invariant violations", count_of(m.get("invariant_violations"))],
        # The terminal summary's words (alloc.cli.render.print_summary).
        [
            "full rounds (skipped as quiet)",
            f"{count_of(m.get('rounds'))} ({count_of(m.get('skipped_rounds', 0))})",
        ],
        [
            "event passes (skipped as quiet)",
            f"{count_of(m.get('event_passes', 0))} ({count_of(m.get('skipped_passes', 0))})",
        ],
        [
            "full rounds and event passes by status",
            e(", ".join(f"{k} {count(v)}" for k, v in sorted(statuses.items()))) or "-",
        ],
        [
            "time of a full round or event pass, p50 / max",
            f"{nearest_rank(solve, 0.5):.3f} s / {solve[-1]:.3f} s" if solve else "-",
        ],
        [WALL_TIME, wall_time(_val(m, "wall_seconds"))],
        [
            "jobs submitted / completed",
            f"{count_of(jobs.get('submitted'))} / {count_of(jobs.get('completed'))}",
        ],
        [
            "running / queued at the end",
            f"{count_of(jobs.get('running_at_end'))} / {count_of(jobs.get('queued_at_end'))}",
        ],
    ]
    if m.get("invariant_violations"):
        rows[4] = [("bad", "invariant violations"), ("bad", count_of(m["invariant_violations"]))]
    return table(["event", "value"], rows)
