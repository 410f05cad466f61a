"""`alloc whatif`'s terminal output: a table with one row per run (delivered / owed, the worst
team, waits of allocated work, preemptions), with `--teams` one per team and run, then notes.
Formatting only: every number comes from the comparison (`alloc.report.compare`).

Each row of a table is one line whatever the console's width (80 columns, a pipe): columns
are as wide as their widest cell, and when the row is wider than the console the text
columns (run labels, budget paths) are narrowed, their longer cells shortened in the middle
with an ellipsis; numbers are never cut."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.text import Text

from alloc.report.compare import Comparison
from alloc.report.fmt import duration, pct, signed, stopped_after

GAP = 2  # spaces between columns
NARROWEST = 8  # a text column is not narrowed below this


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    right: bool = True  # numbers align right
    shrinks: bool = False  # text that may be shortened to fit


def shorten(text: str, width: int) -> str:
    """`text` in at most `width` characters: cut in the middle, marked by an ellipsis (a
    budget path keeps its first and its last part: its program and its team)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def fit(columns: list[Column], rows: list[list[str]], width: int) -> list[int]:
    """Column widths: each column's widest cell (or header), the text columns narrowed one
    character at a time, widest first, until the row fits `width` or none can narrow more."""
    widths = [max([len(c.header), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    total = sum(widths) + GAP * (len(widths) - 1)
    while total > width:
        narrowable = [i for i, c in enumerate(columns) if c.shrinks and widths[i] > NARROWEST]
        if not narrowable:
            break
        widest = max(narrowable, key=lambda i: widths[i])
        widths[widest] -= 1
        total -= 1
    return widths


def lines(columns: list[Column], rows: list[list[str]], widths: list[int]) -> list[str]:
    """The header, a rule and the rows, each one line of the given column widths (a row of
    one cell is a group heading: it may use the whole line)."""
    full = sum(widths) + GAP * (len(widths) - 1)

    def line(cells: list[str]) -> str:
        if len(cells) == 1:
            return shorten(cells[0], full)
        parts = []
        for cell, column, w in zip(cells, columns, widths, strict=True):
            cell = shorten(cell, w)
            parts.append(cell.rjust(w) if column.right else cell.ljust(w))
        return (" " * GAP).join(parts).rstrip()

    rule = (" " * GAP).join("─" * w for w in widths)
    return [line([c.header for c in columns]), rule, *(line(r) for r in rows)]


def print_table(console: Console, columns: list[Column], rows: list[list[str]]) -> None:
    """The table in the console's width: the header and group headings bold, the rule dim."""
    widths = fit(columns, [r for r in rows if len(r) > 1], console.width)
    styles = ["bold", "dim", *("bold" if len(r) == 1 else "" for r in rows)]
    for text, style in zip(lines(columns, rows, widths), styles, strict=True):
        console.print(Text(text, style=style), soft_wrap=True)


def overall_rows(c: Comparison) -> tuple[list[Column], list[list[str]]]:
    columns = [
        Column("run", right=False, shrinks=True),
        Column("d/o"),
        Column("worst team", right=False, shrinks=True),
        Column("its d/o"),
        Column("wait p50"),
        Column("wait p90"),
        Column("preempt."),
    ]
    rows = []
    for i, label in enumerate(c.labels):
        m = c.runs[i].metrics
        o = c.overall(i)
        worst = m.get("worst_team") or {}
        rows.append(
            [
                label + (" *" if c.partial(i) else ""),
                pct(o["delivered_over_owed"]),
                str(worst.get("budget", "-")),
                pct(o["worst_team_delivered_over_owed"]),
                duration(o["wait_allocated_p50_s"]),
                duration(o["wait_allocated_p90_s"]),
                f"{o['preemptions'] or 0:,.0f}",
            ]
        )
    return columns, rows


def team_rows(c: Comparison) -> tuple[list[Column], list[list[str]]]:
    """A heading row per team (its budget path), then a row per run: GPU-hours delivered and
    owed, delivered / owed, its change against the run's baseline (percentage points; blank
    for a baseline, "-" when there is none to take), waits p50 / p90, preemptions."""
    columns = [
        Column("team / run", right=False, shrinks=True),
        Column("delivered"),
        Column("owed"),
        Column("d/o"),
        Column("Δ d/o"),
        Column("wait p50 / p90"),
        Column("preempt."),
    ]
    rows: list[list[str]] = []
    for team in c.teams:
        rows.append([team])
        for i, label in enumerate(c.labels):
            t, d = c.team(team, i), c.team_delta(team, i)
            name = "  " + label + (" *" if c.partial(i) else "")
            if t is None:
                rows.append([name, *["-"] * 6])
                continue
            ratio = None if d is None else d["delivered_over_owed"]
            delta = "" if c.is_baseline(i) else "-" if ratio is None else signed(100 * ratio, 1)
            rows.append(
                [
                    name,
                    f"{t['delivered_gpu_hours'] or 0.0:,.0f}",
                    f"{t['owed_gpu_hours'] or 0.0:,.0f}",
                    pct(t["delivered_over_owed"]),
                    delta,
                    f"{duration(t['wait_p50_s']):>6} / {duration(t['wait_p90_s']):>6}",
                    f"{t['preemptions'] or 0:.0f}",
                ]
            )
    return columns, rows


def _by_baseline(c: Comparison) -> dict[int, list[int]]:
    """The runs compared with each baseline (not the baselines themselves)."""
    out: dict[int, list[int]] = {}
    for i, b in enumerate(c.baseline):
        if b != i:
            out.setdefault(b, []).append(i)
    return out


def print_comparison(
    console: Console,
    c: Comparison,
    stale: list[str],
    credit: str | None,
    out: Path,
    teams: bool = False,
) -> None:
    """The per-run table, with `teams` the per-team table, and the notes: partial runs and
    runs not run, a run not contended (every run's allocated demand below the ready GPUs),
    runs of an earlier comparison in the folder (`stale`), the credit, the folder."""
    console.print(Text("What if: one row per run", style="bold"), soft_wrap=True)
    print_table(console, *overall_rows(c))
    console.print(
        "d/o: delivered / owed over the window; waits: of allocated work, to first start",
        highlight=False,
        markup=False,
    )
    if teams:
        console.print()
        console.print(Text("What if: per team and run", style="bold"), soft_wrap=True)
        print_table(console, *team_rows(c))
        if c.single_baseline:
            against = c.labels[0]
        else:
            against = "each run's baseline: " + ", ".join(
                f"{c.labels[b]} (for {', '.join(c.labels[i] for i in runs)})"
                for b, runs in _by_baseline(c).items()
            )
        legend = [
            "delivered, owed: GPU-hours; wait p50 / p90: of the team's allocated work",
            f"Δ d/o: percentage points against {against}",
        ]
        for line in legend:
            console.print(line, highlight=False, markup=False)
    for i, label in enumerate(c.labels):
        if c.partial(i):
            console.print(
                f"* partial: {label} {stopped_after(c.runs[i].metrics)}",
                highlight=False,
                markup=False,
            )
    if teams and c.any_partial:
        console.print(
            "a run's deltas are shown only against a baseline that covers the same time",
            highlight=False,
            markup=False,
        )
    if c.not_run:
        console.print(
            f"not run (stopped before they began): {', '.join(c.not_run)}",
            highlight=False,
            markup=False,
        )
    demand = [(r.metrics.get("allocated_demand_over_ready") or {}).get("mean") for r in c.runs]
    if demand and all(d is not None and d < 1.0 for d in demand):
        console.print(
            f"note: allocated demand averaged at most {max(d or 0.0 for d in demand):.2f}x "
            "the ready GPUs in every run: with room for nearly all work, budgets and "
            "policies can change little (a smaller cluster, or --start at a busy time, "
            "shows them at work)",
            highlight=False,
            markup=False,
        )
    if stale:
        console.print(
            f"note: {out} also holds runs of an earlier comparison, left as they were and "
            f"not compared: {', '.join(stale)}",
            highlight=False,
            markup=False,
        )
    if credit:
        console.print(credit, highlight=False, markup=False)
    console.print(f"outputs in {out} (open comparison.html)", highlight=False, markup=False)
