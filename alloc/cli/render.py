"""Rich tables for the terminal. Formatting only: every number comes from `alloc.summary`,
`alloc.explain` or the plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from alloc.cli.columns import About, Column
from alloc.cli.shorten import shorten_middle, shorten_path
from alloc.cli.tables import print_table, say
from alloc.domain import Plan
from alloc.domain.plan import WITHOUT_MODEL
from alloc.io.durations import format_time
from alloc.printable import shown
from alloc.readable import count, counted, duration, hours, number
from alloc.readable import pct as fmt_pct
from alloc.report.fmt import WALL_TIME, partial, ratio, simulated_span, wall_time, worst_team
from alloc.report.fmt import demand as fmt_demand
from alloc.summary import Summary


def ratio_text(r: float) -> str:
    """A fair-share ratio as the terminal shows it: two decimals, inf for a node without a share."""
    return ratio(r, 2)


# Budget names and paths: cut in the middle, not below 8 characters.
NAME = ((1, 8),)
DROP = {"waiting": 3, "unalloc": 2, "of all": 1}
# Each line about columns (`About`): a column left out of a narrow console is left out of it.
BUDGETS_LEGEND: tuple[About, ...] = (
    (("share", "of the parent"), ("of all", "of the cluster"), ("owed", "capped at its demand")),
    (
        ("held", "allocated GPUs its work holds after the round"),
        ("unalloc", "unallocated ones"),
    ),
    (("demand", "GPUs of its allocated work, running or queued"),),
    (("waiting", "how many of those workloads wait (its unallocated work: see Decisions)"),),
    (("ratio", "fair-share ratio over the window"),),
)


def render_solve(console: Console, source: str, plan: Plan, summary: Summary, depth: int) -> None:
    r = plan.report
    m = plan.metrics
    gap = "-" if r.gap is None else f"{r.gap:.3%}"
    bound = "-" if r.bound is None else f"{r.bound:,.2f}"
    round_s = m.get("round_seconds", 0.0)
    say(console, f"{shown(source)} at {format_time(plan.now)} (round: {round_s:.3f} s)")
    # A MILP round the greedy plan already settled solved no model: no time to report.
    took = "without a MILP" if r.note == WITHOUT_MODEL else f"in {r.solve_seconds:.3f} s"
    # The greedy solver's status is its name: said once (`solver greedy in 0.017 s`).
    status = "" if r.status == r.solver else f": {shown(r.status)}"
    say(
        console,
        f"solver {shown(r.solver)}{status} {took}, "
        f"objective {r.objective:,.2f}, bound {bound}, gap {gap}",
    )
    if r.note:
        say(console, f"note: {shown(r.note)}", "yellow" if r.status == "fallback" else "dim")

    console.print()
    print_table(
        console,
        [
            Column("action"),
            Column("reason"),
            Column("workloads", right=True),
            Column("GPUs", right=True),
        ],
        [
            [action.value, reason.value, count(n), count(gpus)]
            for (action, reason), (n, gpus) in summary.by_action.items()
        ],
        title="Decisions",
    )

    console.print()
    heads = ("share", "of all", "owed", "entitled", "held", "unalloc", "demand", "waiting", "ratio")
    print_table(
        console,
        [
            Column("node", shorten=shorten_middle, stages=NAME),
            # left out of a narrow console, in turn: waiting (Decisions counts it), the
            # unallocated GPUs, the share of all
            *(Column(h, right=True, drop=DROP.get(h, 0)) for h in heads),
        ],
        [
            [
                "  " * (row.depth - 1) + row.path.rsplit("/", 1)[-1],
                f"{row.share:.1%}",
                f"{row.effective:.1%}",
                number(row.owed_gpus, 0),
                count(row.entitled_gpus),
                count(row.assigned_gpus),
                count(row.unallocated_gpus),
                count(row.demand_gpus),
                count(row.waiting),
                ratio_text(row.ratio),
            ]
            for row in summary.nodes
            if 0 < row.depth <= depth
        ],
        title="Budgets (GPUs)",
        legend=BUDGETS_LEGEND,
    )

    console.print()
    print_table(
        console,
        [Column(h, right=True) for h in ("ready GPUs", "allocated", "unallocated", "idle")],
        [
            [
                count(int(m.get("ready_gpus", 0))),
                fmt_pct(m.get("allocated_occupancy", 0)),  # never 100% what is not
                fmt_pct(m.get("unallocated_occupancy", 0)),
                fmt_pct(1 - m.get("occupancy", 0)),
            ]
        ],
        title="Occupancy of ready GPUs after the round",
    )


# A metric's label is broken at spaces onto more lines on a narrow console, down to this
# width; its value is never cut (`wait large (p50 / p90 / max)`: `0 s / 7 h 12 min / 7 h 12 min`).
LABEL = ((1, 16),)


def _pct(x: float | None) -> str:
    return fmt_pct(x, 2)


def print_summary(console: Console, m: dict[str, Any], out: Path) -> None:
    banner = partial(m)
    if banner:
        console.print(f"[bold red]{escape(banner)}[/]", highlight=False, soft_wrap=True)
    title = (
        (f"{m.get('label')}: " if m.get("label") != m["policy"] else "")
        + f"{m['policy']}, {simulated_span(m['days'])}"
        + (" (partial)" if banner else "")
    )
    rows = [
        ("availability (ready / installed GPU time)", _pct(m["availability"])),
        ("occupancy (held / ready GPU time)", _pct(m["occupancy"])),
        (
            "  allocated / unallocated",
            f"{_pct(m['allocated_occupancy'])} / {_pct(m['unallocated_occupancy'])}",
        ),
        ("  while work was queued", _pct(m["occupancy_while_queued"])),
        ("  idle then: waiting work fit / nothing fit", _idle_split(m)),
        ("impact: delivered / owed over the window", _pct(m["delivered_over_owed"])),
        ("  worst team", _worst(m)),
        ("  hour by hour, overall", _pct(m.get("delivered_over_owed_hourly"))),
        ("  worst team hour by hour", _worst(m, hourly=True)),
        (
            "utilization",
            _pct(m["utilization"]) if m["utilization"] is not None else "not in the trace",
        ),
    ]
    for cls, w in m["wait_s"].items():
        if w["count"]:
            rows.append(
                (
                    f"wait {cls} (p50 / p90 / max)",
                    f"{duration(w['p50'])} / {duration(w['p90'])} / {duration(w['max'])}",
                )
            )
            never = w.get("never_started", 0)
            if never:
                rows.append(("  never started", count(never)))
    rows += [
        (
            "preemptions (GPU-hours lost)",
            f"{count(m['preemptions'])} ({number(m['preempted_gpu_hours_lost'], 0)})",
        ),
        (
            "  apart: hosts into maintenance",
            f"{count(m.get('host_maintenance_preemptions', 0))} "
            f"({number(m.get('host_maintenance_gpu_hours_lost', 0.0), 0)})",
        ),
        (
            "drains completed (median duration)",
            f"{count(m['drains_completed'])} ({hours(m['drain_hours_p50'])})"
            if m["drains_completed"]
            else "none",
        ),
        (
            "allocated demand / ready GPUs",
            fmt_demand(m.get("allocated_demand_over_ready"), m.get("simulated_days", m["days"])),
        ),
        ("invariant violations", count(m["invariant_violations"])),
        (
            "full rounds (skipped as quiet)",
            f"{count(m.get('full_rounds', m['rounds']))} ({count(m['skipped_rounds'])})",
        ),
        (
            "event passes (skipped as quiet)",
            f"{count(m.get('event_passes', 0))} ({count(m.get('skipped_passes', 0))})",
        ),
        (WALL_TIME, wall_time(m.get("wall_seconds"))),
    ]
    columns = [Column("metric", wrap=True, stages=LABEL), _value_column(m)]
    print_table(console, columns, [list(r) for r in rows], title=title)
    never_fit = (m.get("jobs") or {}).get("never_fit", 0)
    if never_fit:
        one = never_fit == 1
        console.print(
            f"warning: {counted(never_fit, 'job')} {'is' if one else 'are'} larger than every "
            f"place this lab has: {'it never starts' if one else 'they never start'} and "
            f"{'is' if one else 'are'} not counted as demand",
            highlight=False,
        )
    if m.get("credit"):
        console.print(escape(str(m["credit"])), highlight=False)
    console.print(f"outputs in {escape(str(out))} (open report.html)", highlight=False)


def _value_column(m: dict[str, Any]) -> Column:
    """The summary's values: never cut, but for the budget path of a worst team, cut as a
    path is (`c…/pretraining-of-very-large-models 12.34%`), its ratio and phrase whole, once
    the labels are broken as far as they go."""
    paths = {}  # a worst team's cell -> its path and what follows it
    for hourly in (False, True):
        worst = m.get("worst_team_hourly" if hourly else "worst_team") or {}
        path = str(worst.get("budget") or "") if isinstance(worst, dict) else ""
        cell = shown(_worst(m, hourly))
        if path and cell.startswith(shown(path)):
            paths[cell] = (shown(path), cell[len(shown(path)) :])

    def shorten(text: str, width: int) -> str:
        if text not in paths:
            return text
        path, rest = paths[text]
        return shorten_path(path, max(1, width - len(rest))) + rest

    least = max([0, *(len(rest) + min(len(path), 8) for path, rest in paths.values())])
    return Column("value", right=True, shorten=shorten, stages=((2, least),))


def _worst(m: dict[str, Any], hourly: bool = False) -> str:
    """The worst team and its ratio; "none below 100%" when no team got less than it was
    owed, "all 15 teams tie at 87.00%" when no team is worse than another."""
    name, ratio = worst_team(m, hourly)
    if ratio is None or ratio >= 1.0 - 1e-6:
        return name
    return f"{name} at {_pct(ratio)}" if name.endswith(" tie") else f"{name} {_pct(ratio)}"


def _idle_split(m: dict[str, Any]) -> str:
    idle = m.get("idle_while_queued")
    if not idle:
        return "-"
    return f"{_pct(idle['work_fit'])} / {_pct(idle['nothing_fit'])}"
