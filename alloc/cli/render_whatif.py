"""`alloc whatif`'s terminal output: a table with one row per run (delivered / owed, the worst
team, waits of allocated work, preemptions), with `--teams` one per team and run, then notes.
Formatting only: every number comes from the comparison (`alloc.report.compare`).

Each row of a table is one line whatever the console's width (80 columns, a pipe): columns
are as wide as their widest cell, two spaces apart, and when the row is wider than the
console one space apart and the text columns narrowed: run labels cut in the middle with an
ellipsis, budget paths as paths are (`shorten_path`: the leaf kept, the nodes above it cut to
their initials). Numbers, the headers and the fixed phrases of the worst-team column (`none
below 100%`, `all 3 teams tie`, the ` and 2 more` after a path) are never cut."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from rich.console import Console
from rich.text import Text

from alloc.cli import tables
from alloc.cli.columns import About, Column, fit, visible
from alloc.cli.shorten import shorten_duration, shorten_middle_keep_tail, shorten_path
from alloc.printable import shown
from alloc.report.compare import Comparison
from alloc.report.fmt import duration, pct, signed, stopped_after, worst_team


def text_column(head: str, stage: int = 1, least: int = 8) -> Column:
    """Run labels and budget paths: cut in the middle, not below `least` characters; a column
    of a later `stage` only once those of earlier stages are at their narrowest."""
    return Column(head, shorten=shorten_middle_keep_tail, stages=((stage, least),))


# A run's label is cut no shorter than this, the README's `science-up/greedy` (at 60 columns
# the labels read `bas…eedy`, `sci…eedy`); a longer label is cut to it before a column is
# left out.
RUN_LEAST = 17


def run_names(console: Console, c: Comparison) -> dict[str, str]:
    """Each run's cell (its label, ` *` when partial) as the table of runs shows it in the
    console's width: the table of teams names each run the same (it read `science-up/greedy`
    in one and `scienc…p/greedy` in the other)."""
    columns, rows = overall_rows(c)
    rows = visible(rows)
    width = fit(columns, rows, console.width, tight=1).widths[0]
    columns, rows = team_rows(c)  # labels cut as the table of teams alone would
    rows = visible(rows)
    width = min(width, fit(columns, rows, console.width, tight=1).widths[0] - 2)
    return {row[0]: shorten_middle_keep_tail(row[0], width) for row in visible(overall_rows(c)[1])}


# Times waiting in their largest unit (`11 h 22 min` -> `11 h+`), once paths and run labels
# are cut: text is cut before a number is written shorter.
WAIT = ((4, 4),)

# The least width of a budget path cut to fit (as `text_column`'s cells), beside a phrase.
_PATH_LEAST = 8


def worst_team_column(cells: Mapping[str, tuple[str, str]]) -> Column:
    """The worst team of each run: `cells` maps each cell as shown to its budget path (""
    for none) and the fixed phrase after it (` and 2 more`, or the whole cell when it names
    no path: `none below 100%`, `all 3 teams tie`, `-`). Only the path is cut, as a path;
    the column never gets narrower than its header, its phrases, or a phrase after the
    shortest cut of a path."""
    head = "worst team"

    def shorten(text: str, width: int) -> str:
        path, phrase = cells.get(text, ("", text))
        if not path:
            return text
        return shorten_path(path, max(1, width - len(phrase))) + phrase

    least = max(
        [len(head), _PATH_LEAST]
        + [
            len(phrase) + (min(len(path), _PATH_LEAST) if path else 0)
            for path, phrase in cells.values()
        ]
    )
    return Column(head, shorten=shorten, stages=((1, least),))


def print_table(
    console: Console, columns: list[Column], rows: list[list[str]], legend: list[str | About]
) -> None:
    """The table in the console's width, with a rule under the header and each team's name
    heading its rows (`alloc.cli.tables`): two spaces between columns where the rows fit so,
    else one (as `alloc queue` and `alloc status`) before any text is cut; its legend broken
    at spaces to the same width."""
    tables.print_table(console, columns, rows, rule=True, tight=1, legend=legend)


def overall_rows(
    c: Comparison, names: dict[str, str] | None = None
) -> tuple[list[Column], list[list[str]]]:
    """A row per run; `names`: each run's cell as both tables show it (`run_names`)."""
    worst = {i: _worst_team_parts(c.runs[i].metrics) for i in range(len(c.labels))}
    columns = [
        # A run's label is what a reader looks for: cut last, never below the usual label
        # (`science-up/greedy`), and then the per-team table names it alike (`run_names`).
        text_column("run", stage=3, least=RUN_LEAST),
        Column("d/o", right=True),
        worst_team_column({shown(p + s): (shown(p), s) for p, s in worst.values()}),
        Column("its d/o", right=True, drop=1),
        Column("wait p50", right=True, shorten=shorten_duration, stages=WAIT, drop=2),
        Column("wait p90", right=True, shorten=shorten_duration, stages=WAIT),
        Column("preempt.", right=True),
    ]
    rows = []
    for i, label in enumerate(c.labels):
        o = c.overall(i)
        cell = label + (" *" if c.partial(i) else "")
        rows.append(
            [
                (names or {}).get(shown(cell), cell),
                pct(o["delivered_over_owed"]),
                "".join(worst[i]),
                pct(o["worst_team_delivered_over_owed"]),
                duration(o["wait_allocated_p50_s"]),
                duration(o["wait_allocated_p90_s"]),
                f"{o['preemptions'] or 0:,.0f}",
            ]
        )
    return columns, rows


def _worst_team_parts(m: dict[str, object]) -> tuple[str, str]:
    """The worst team as `worst_team` names it, split into the budget path it names ("" for
    none) and the phrase after it: `("nlp/a", " and 2 more")`, `("", "none below 100%")`."""
    name = worst_team(m)[0]
    worst = m.get("worst_team")
    budget = str(worst.get("budget") or "") if isinstance(worst, dict) else ""
    if budget and (name == budget or name.startswith(budget + " and ")):
        return budget, name[len(budget) :]
    return "", name


def team_rows(
    c: Comparison, names: dict[str, str] | None = None
) -> tuple[list[Column], list[list[str]]]:
    """A heading row per team (its budget path), then a row per run: GPU-hours delivered and
    owed, delivered / owed, its change against the run's baseline (percentage points; blank
    for a baseline, "-" when there is none to take), waits p50 / p90, preemptions."""
    given = names or {}  # each run's cell -> as the table of runs shows it (`run_names`)
    cells = [label + (" *" if c.partial(i) else "") for i, label in enumerate(c.labels)]
    labels = {"  " + given.get(shown(cell), shown(cell)) for cell in cells}
    # given `names`, runs named as in the table of runs; else cut alike, not below RUN_LEAST
    least = max(len("team / run"), *(len(label) for label in labels))
    if names is None:
        least = min(least, 2 + RUN_LEAST)
    columns = [
        Column("team / run", shorten=_run_or_team(labels), stages=((1, least),)),
        Column("delivered", right=True, drop=2),  # d/o says what these two do
        Column("owed", right=True, drop=1),
        Column("d/o", right=True),
        Column("Δ d/o", right=True),
        Column("wait p50 / p90", right=True, shorten=_waits, stages=WAIT),
        Column("preempt.", right=True),
    ]
    rows: list[list[str]] = []
    for team in c.teams:
        rows.append([team])
        for i, label in enumerate(c.labels):
            t, d = c.team(team, i), c.team_delta(team, i)
            cell = label + (" *" if c.partial(i) else "")
            name = "  " + given.get(shown(cell), cell)
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


def _waits(text: str, width: int) -> str:
    """`4 h 38 min / 10 h 17 min` in `width`: the longer time in its largest unit first (of
    two as long, the p90, the larger, which loses the least of itself), then the other
    (`4 h 38 min / 10 h+`, then `4 h+ / 10 h+`), only as far as it must. Padded to line up
    with the other rows only when whole: a time written shorter leaves no blank in its cell
    (`1 h 5 min / 4 h+`, not `1 h 5 min /   4 h+`), the room it freed goes to the column."""
    p50, sep, p90 = text.partition(" / ")
    if not sep:
        return text
    times = [p50.strip(), p90.strip()]
    pad = next((p for p in (6, 5, 4) if len(f"{times[0]:>{p}} / {times[1]:>{p}}") <= width), 0)
    if pad or len(" / ".join(times)) <= width:
        return f"{times[0]:>{pad}} / {times[1]:>{pad}}" if pad else " / ".join(times)
    for i in sorted((0, 1), key=lambda i: (-len(times[i]), -i)):
        times[i] = shorten_duration(times[i], width)
        if len(" / ".join(times)) <= width:
            break
    return " / ".join(times)


def _run_or_team(labels: set[str]) -> Callable[[str, int], str]:
    """The first column of the teams table: a run's label (indented) is cut in the middle
    (only when `run_names` measures how far: printed, it is as the table of runs shows it,
    and the column is as wide as it); a team's path heading its rows is cut as a path."""

    def shorten(text: str, width: int) -> str:
        if text in labels:
            return shorten_middle_keep_tail(text, width)
        return shorten_path(text, width)

    return shorten


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
    names = run_names(console, c)
    print_table(
        console,
        *overall_rows(c, names),
        legend=["d/o: delivered / owed over the window; waits: of allocated work, to first start"],
    )
    if teams:
        console.print()
        console.print(Text("What if: per team and run", style="bold"), soft_wrap=True)
        if c.single_baseline:
            against = c.labels[0]
        else:
            against = "each run's baseline: " + ", ".join(
                f"{c.labels[b]} (for {', '.join(c.labels[i] for i in runs)})"
                for b, runs in _by_baseline(c).items()
            )
        legend: list[str | About] = [
            (
                ("delivered, owed", "GPU-hours"),  # left out of a narrow console, in turn
                ("wait p50 / p90", "of the team's allocated work"),
            ),
            f"Δ d/o: percentage points against {against}",
        ]
        print_table(console, *team_rows(c, names), legend=legend)
    for i, label in enumerate(c.labels):
        if c.partial(i):
            console.print(
                f"* partial: {shown(label)} {stopped_after(c.runs[i].metrics)}",
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
            f"not run (stopped before they began): {shown(', '.join(c.not_run))}",
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
