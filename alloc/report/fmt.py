"""Formatting for reports: HTML fragments, and the numbers as `alloc.readable` writes them."""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from alloc.printable import shown
from alloc.readable import count, counted, duration, hours, number, pct, signed_duration

__all__ = [  # the numbers as alloc.readable writes them, and the HTML around them
    "CSS",
    "Cell",
    "count",
    "count_of",
    "counted",
    "data_uri",
    "demand",
    "duration",
    "e",
    "hours",
    "number",
    "page",
    "pct",
    "ratio",
    "signed",
    "signed_duration",
    "simulated_span",
    "table",
    "WALL_TIME",
    "wall_time",
    "worst_team",
]


# What `wall_seconds` measures, as the summary and report.html name it: the simulation's own
# time, from its first event to its last; not reading the inputs nor writing the outputs
# (the plots and report.html, which the progress line shows as "writing the report ...").
WALL_TIME = "wall time, simulation only (no report)"


def wall_time(seconds: object) -> str:
    """`wall_seconds` as the summary shows it: `91.8 s`; `-` when absent."""
    return f"{seconds:,.1f} s" if isinstance(seconds, int | float) else "-"


def simulated_span(days: float) -> str:
    """The simulated time of a run, as a title says it: `5 days`, `1 day` in whole days, else
    a duration (`alloc.readable.duration`): `0.05` is `1 h 12 min`, not `0.05 days`."""
    seconds = days * 86_400.0
    if days >= 1 and days == int(days):
        return counted(int(days), "day")
    return duration(seconds)


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em auto;
max-width:1100px;padding:0 1em;color:#1a202c;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.6em;
border-bottom:1px solid #cbd5e0}
table{border-collapse:collapse;margin:.5em 0;font-size:.92em}
th,td{border:1px solid #cbd5e0;padding:.25em .6em;text-align:right}
th{background:#edf2f7}td.l,th.l{text-align:left}
.credit{background:#fefcbf;border:1px solid #ecc94b;padding:.4em .8em;font-size:.9em}
.muted{color:#718096}.good{color:#276749;background:#f0fff4}
.bad{color:#9b2c2c;background:#fff5f5}
.partial{background:#fed7d7;border:1px solid #c53030;padding:.4em .8em;font-weight:bold}
img{max-width:100%;display:block;margin:.8em 0;border:1px solid #e2e8f0}
"""


def count_of(value: object) -> str:
    """A count read from metrics.json, `-` when it is missing (a run from before it existed)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return count(value)


def signed(value: float, digits: int = 1, unit: str = "") -> str:
    if round(value, digits) == 0:
        return "0"
    return f"{value:+,.{digits}f}{unit}"


def e(value: object) -> str:
    """Text as HTML: markup characters escaped, and characters that do not display (a control,
    a bidirectional override) written as visible escapes (`alloc.printable.shown`)."""
    return html.escape(shown(str(value)), quote=True)


def data_uri(png: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")


Cell = str | tuple[str, str]  # HTML, or (CSS class, HTML)


def table(head: Iterable[str], rows: Iterable[Iterable[Cell]], left: int = 1) -> str:
    """An HTML table of already-escaped cells; the first `left` columns align left."""
    out = ["<table><tr>"]
    out += [f'<th class="l">{h}</th>' if i < left else f"<th>{h}</th>" for i, h in enumerate(head)]
    out.append("</tr>")
    for row in rows:
        out.append("<tr>")
        for i, cell in enumerate(row):
            classes = ["l"] if i < left else []
            if isinstance(cell, tuple):
                classes.append(cell[0])
                cell = cell[1]
            attr = f' class="{" ".join(c for c in classes if c)}"' if any(classes) else ""
            out.append(f"<td{attr}>{cell}</td>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def page(title: str, body: str, credit: str | None) -> str:
    note = f'<p class="credit">{e(credit)}</p>' if credit else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{e(title)}</title><style>{CSS}</style></head><body>\n"
        f"<h1>{e(title)}</h1>\n{note}\n{body}\n{note}\n</body></html>\n"
    )


def stopped_after(m: dict[str, Any]) -> str:
    """How far a partial run went: "stopped after 3 d 5 h of 7 d simulated (46%)"."""
    days, reached = m.get("days"), m.get("simulated_days")
    if not isinstance(days, int | float) or not isinstance(reached, int | float):
        return "stopped before its end"
    share = f" ({reached / days:.0%})" if days > 0 else ""
    return f"stopped after {duration(reached * 86400)} of {duration(days * 86400)} simulated{share}"


def partial(m: dict[str, Any]) -> str | None:
    """The banner of a run stopped before its end (metrics.json's `partial`): "partial:
    stopped after 3 d 5 h of 7 d simulated (46%), at 2026-12-03T16:48:00Z; the figures
    cover the time simulated"; None for a whole run."""
    if not m.get("partial"):
        return None
    at = f", at {m['stopped_at']}" if m.get("stopped_at") else ""
    return f"partial: {stopped_after(m)}{at}; the figures cover the time simulated"


def demand(d: dict[str, float | None] | None, days: float | None = None) -> str:
    """metrics.json's allocated_demand_over_ready: "2.10x (first day 2.20x, last 2.05x)"; for
    a run of `days` no longer than a day, whose first and last day are the run, "2.10x"."""
    if not d:
        return "-"  # a run from before the figure existed

    def x(v: float | None) -> str:
        return f"{v:.2f}x" if v is not None else "-"

    if days is not None and days <= 1:
        return x(d.get("mean"))
    return f"{x(d.get('mean'))} (first day {x(d.get('first_day'))}, last {x(d.get('last_day'))})"


def ratio(value: float, digits: int = 3) -> str:
    """A fair-share ratio; an unfunded node's is infinite."""
    return "inf" if math.isinf(value) else f"{value:.{digits}f}"


def worst_team(m: dict[str, Any], hourly: bool = False) -> tuple[str, float | None]:
    """Who metrics.json's worst team (`worst_team_hourly` if `hourly`) is, as a report names
    it, and its ratio: the team's path; "none below 100%" when every team owed something got
    all of it; "all 15 teams tie" when they all got the same share of it, and "nlp/a and 2
    more" when some but not all tie at the lowest ratio (none of them is worse than the
    others); "-" and None when no team was owed anything."""
    key = "delivered_over_owed_hourly" if hourly else "delivered_over_owed"
    worst = m.get("worst_team_hourly" if hourly else "worst_team") or {}
    lowest = worst.get(key)
    if not isinstance(lowest, int | float):
        return "-", None
    if lowest >= 1.0 - 1e-6:
        return "none below 100%", float(lowest)
    teams = m.get("teams") or {}
    ratios = [t.get(key) for t in teams.values() if isinstance(t, dict)]
    owed = [r for r in ratios if isinstance(r, int | float)]
    tied = sum(1 for r in owed if abs(r - lowest) <= 1e-6)
    if tied > 1 and tied == len(owed):
        return f"all {tied} teams tie", float(lowest)
    name = str(worst.get("budget", "-"))
    return (f"{name} and {tied - 1} more" if tied > 1 else name), float(lowest)
