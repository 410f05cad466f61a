"""`alloc queue`'s table: one line per workload, fitted to the terminal's width (long ids and
budget paths shortened with an ellipsis, never so far that two read alike; reason codes, then
states, written shorter with a legend; never wrapped), then a footer of workloads and GPUs per
state. Plain text, so that it reads the same in a terminal, a pipe and a log file. Every number
is written here (`duration_text`, `ratio_text`), by the rules of `alloc.readable` that every
output follows."""

from __future__ import annotations

from collections.abc import Sequence

from alloc.cli.columns import Column, fit, format_row, notes, visible, wrap
from alloc.cli.render import ratio_text as solve_ratio_text
from alloc.cli.shorten import ELLIPSIS, shorten_duration, shorten_end, shorten_middle, shorten_path
from alloc.domain import Reason
from alloc.queue import QueueRow, State, by_state
from alloc.readable import count, counted, duration

__all__ = [
    "ELLIPSIS",
    "REASONS",
    "duration_text",
    "footer",
    "ratio_text",
    "shorten_middle",
    "shorten_path",
    "table_lines",
]


def duration_text(seconds: float | None) -> str:
    """As every alloc output writes a duration (`alloc.readable.duration`): 0 s, 45 s, 15 min,
    1 h 3 min, 3 d 2 h ("-" when absent; a negative wait reads 0 s)."""
    return duration(None if seconds is None else max(0.0, seconds))


def ratio_text(r: float | None) -> str:
    """A fair-share ratio as `alloc solve` prints it (two decimals; inf for a node without a
    share); "-" for unfunded work without a budget."""
    return "-" if r is None else solve_ratio_text(r)


# Reason codes as a narrow table writes them (`alloc status` too), each at most 12 characters;
# the legend under the table says what those it shortened stand for.
REASONS: dict[str, str] = {
    Reason.UNDER_ALLOCATION: "under_alloc",
    Reason.OVER_ALLOCATION: "over_alloc",
    Reason.COSTLY_TO_STOP: "costly_stop",
    Reason.UNALLOCATED_FILL: "unalloc_fill",
    Reason.UNALLOCATED_DISPLACED: "displaced",
    Reason.HOST_DRAINING: "draining",
    Reason.HOST_MAINTENANCE: "maintenance",
}
STATES: dict[str, str] = {State.RUNNING_PROTECTED: "protected"}

# Ids and GPU types are first narrowed to a readable width and paths to 16 (cut at their
# slashes), then reasons to 12 (every reason whole or written shorter), then ids, paths and
# types to their least (ids and paths never so far that two read alike), then states; reasons are
# never cut: the reason is what a person reads the queue for.
NAME = ((1, 12), (3, 8))
PATH = ((1, 16), (3, 6))
TYPE = ((1, 6), (3, 4))
STATE = ((4, 9),)
REASON = ((2, 12),)  # never cut: every reason whole or written shorter (`protect…` was cut)
WAIT = ((4, 7),)  # in its largest unit: `1 d 21 h` -> `2 d`


def table_lines(rows: Sequence[QueueRow], width: int | None, types: bool) -> list[str]:
    """The header and one line per row, then (when it wrote codes shorter) a legend line;
    `types`: a TYPE column (the GPU type asked for)."""
    columns = [
        Column("ID", shorten=shorten_middle, stages=NAME, distinct=True),
        Column("STATE", stages=STATE, codes=STATES),
        Column("BUDGET", shorten=shorten_path, stages=PATH, distinct=True),
        Column("GPUS", right=True),
    ]
    if types:
        columns.append(Column("TYPE", shorten=shorten_end, stages=TYPE))
    columns += [
        Column("WAIT", right=True, shorten=shorten_duration, stages=WAIT),
        Column("MINRUN", right=True, drop=1),  # the least useful: a narrow terminal leaves it out
        Column("RATIO", right=True),
        Column("REASON", shorten=shorten_end, stages=REASON, codes=REASONS),
    ]
    cells = [
        [
            r.id,
            r.state.value,
            r.budget or "-",
            count(r.gpus),
            *([r.gpu_type or "any"] if types else []),
            duration_text(r.wait_s),
            duration_text(r.min_runtime_s),
            ratio_text(r.ratio),
            r.reason.value,
        ]
        for r in rows
    ]
    cells = visible(cells)  # a name a cluster reports, escaped before it is measured
    layout = fit(columns, cells, width)
    out = [format_row(columns, layout, [c.head for c in columns])]
    out += [format_row(columns, layout, r) for r in cells]
    return out + [line for note in notes(columns, layout, cells) for line in wrap(note, width)]


def footer(rows: Sequence[QueueRow], total: int, width: int | None) -> list[str]:
    """Workloads and GPUs per state: `3 of 7 workloads, 24 GPUs: 1 running-protected (8 GPUs),
    2 waiting (16 GPUs)`; broken between states (never inside one, and after the colon too)
    where it would pass `width`."""
    counts = by_state(rows)
    shown = len(rows)
    head = (
        f"{shown:,} of {counted(total, 'workload')}"
        if shown != total
        else counted(total, "workload")
    )
    head += f", {counted(sum(g for _, g in counts.values()), 'GPU')}"
    items = [f"{n:,} {s.value} ({counted(g, 'GPU')})" for s, (n, g) in counts.items()]
    if not items:
        return [head]
    lines = [head + ":"]
    for k, item in enumerate(items, start=1):
        comma = 1 if k < len(items) else 0  # room for the comma that may end the line
        sep = ", " if k > 1 else " "
        if width is not None and len(lines[-1]) + len(sep) + len(item) + comma > width:
            lines[-1] += sep.rstrip()
            lines.append("  " + item)
        else:
            lines[-1] += sep + item
    return lines
