"""`alloc queue`'s table: one line per workload, fitted to the terminal's width (long ids,
budget paths and, last, reasons shortened with an ellipsis; never wrapped), then a footer of
workloads and GPUs per state. Plain text, so that it reads the same in a terminal, a pipe and a
log file. Every number is written here (`duration_text`, `ratio_text`), by the rules of
`alloc.readable` that every output follows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from alloc.cli.render import ratio_text as solve_ratio_text
from alloc.queue import QueueRow, by_state
from alloc.readable import count, counted, duration

ELLIPSIS = "…"


def duration_text(seconds: float | None) -> str:
    """As every alloc output writes a duration (`alloc.readable.duration`): 0 s, 45 s, 15 min,
    1 h 3 min, 3 d 2 h ("-" when absent; a negative wait reads 0 s)."""
    return duration(None if seconds is None else max(0.0, seconds))


def ratio_text(r: float | None) -> str:
    """A fair-share ratio as `alloc solve` prints it (two decimals; inf for a node without a
    share); "-" for unfunded work without a budget."""
    return "-" if r is None else solve_ratio_text(r)


def gpus_text(n: int) -> str:
    return count(n)


def plural(n: int, word: str) -> str:
    return counted(n, word)


def shorten_end(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + ELLIPSIS


def shorten_middle(text: str, width: int) -> str:
    """An id keeps its head and its tail (`olmo-7b-…-run-3`): both tell runs apart."""
    if len(text) <= width:
        return text
    keep = max(0, width - 1)
    head = keep - keep // 2
    return text[:head] + ELLIPSIS + text[len(text) - keep // 2 :]


def shorten_path(text: str, width: int) -> str:
    """A budget path keeps its leaf: the nodes above it are cut to their first letter from the
    top down (`v…/c…/alice`), then what is left loses its start (`…/alice`)."""
    parts = text.split("/")
    for i in range(len(parts) - 1):
        if len("/".join(parts)) <= width:
            break
        if len(parts[i]) > 2:
            parts[i] = parts[i][0] + ELLIPSIS
    short = "/".join(parts)
    return short if len(short) <= width else ELLIPSIS + short[len(short) - max(0, width - 1) :]


@dataclass
class Column:
    head: str
    cells: list[str]
    right: bool = False  # numbers align right
    shorten: Callable[[str, int], str] | None = None  # None: never shortened
    # How far it may be narrowed at each stage of `fit`, as (stage, width) pairs.
    stages: tuple[tuple[int, int], ...] = ()

    @property
    def natural(self) -> int:
        return max([len(self.head), *(len(c) for c in self.cells)])


# Ids, paths and GPU types are first narrowed to a readable width, then reasons to 16 (every
# reason whole but unallocated_displaced), then ids, paths and types to their least, and only
# then reasons further: the reason is what a person reads the queue for.
NAME = ((1, 12), (3, 8))
PATH = ((1, 10), (3, 6))
TYPE = ((1, 6), (3, 4))
REASON = ((2, 16), (4, 8))


def fit(columns: Sequence[Column], width: int | None) -> tuple[list[int], str]:
    """Column widths and the separator: two spaces when everything fits so, else one space and
    the shortenable columns narrowed, widest first, stage by stage (`Column.stages`; a line
    longer than `width` only when even the last stage is not enough). `width` None: no
    limit."""
    widths = [c.natural for c in columns]
    if width is None or sum(widths) + 2 * (len(columns) - 1) <= width:
        return widths, "  "
    over = sum(widths) + len(columns) - 1 - width
    for stage in sorted({s for c in columns for s, _ in c.stages}):
        least = {i: w for i, c in enumerate(columns) for s, w in c.stages if s == stage}
        while over > 0:
            room = [i for i, w in least.items() if widths[i] > w]
            if not room:
                break
            widest = max(room, key=lambda i: (widths[i], -i))
            widths[widest] -= 1
            over -= 1
    _give_back(columns, widths)
    return widths, " "


def _give_back(columns: Sequence[Column], widths: list[int]) -> None:
    """A shortened column whose cells came out narrower than its width (a path cut at its
    slashes) gives the rest to the other shortened columns, those shortened last first."""
    cut = [i for i, c in enumerate(columns) if c.shorten is not None and widths[i] < c.natural]
    spare = 0
    for i in cut:
        shorten = columns[i].shorten
        assert shorten is not None
        used = max([len(columns[i].head), *(len(shorten(t, widths[i])) for t in columns[i].cells)])
        spare += widths[i] - used
        widths[i] = used
    for i in sorted(cut, key=lambda i: -max(s for s, _ in columns[i].stages)):
        more = min(spare, columns[i].natural - widths[i])
        widths[i] += more
        spare -= more


def table_lines(rows: Sequence[QueueRow], width: int | None, types: bool) -> list[str]:
    """The header and one line per row; `types`: a TYPE column (the GPU type asked for)."""
    columns = [
        Column("ID", [r.id for r in rows], shorten=shorten_middle, stages=NAME),
        Column("STATE", [r.state.value for r in rows]),
        Column("BUDGET", [r.budget or "-" for r in rows], shorten=shorten_path, stages=PATH),
        Column("GPUS", [gpus_text(r.gpus) for r in rows], right=True),
    ]
    if types:
        types_ = [r.gpu_type or "any" for r in rows]
        columns.append(Column("TYPE", types_, shorten=shorten_end, stages=TYPE))
    columns += [
        Column("WAIT", [duration_text(r.wait_s) for r in rows], right=True),
        Column("MINRUN", [duration_text(r.min_runtime_s) for r in rows], right=True),
        Column("RATIO", [ratio_text(r.ratio) for r in rows], right=True),
        Column("REASON", [r.reason.value for r in rows], shorten=shorten_end, stages=REASON),
    ]
    widths, sep = fit(columns, width)

    def line(cells: Sequence[str]) -> str:
        parts = []
        for c, w, text in zip(columns, widths, cells, strict=True):
            if c.shorten is not None:
                text = c.shorten(text, w)
            parts.append(text.rjust(w) if c.right else text.ljust(w))
        return sep.join(parts).rstrip()

    lines = [line([c.head for c in columns])]
    lines += [line([c.cells[i] for c in columns]) for i in range(len(rows))]
    return lines


def footer(rows: Sequence[QueueRow], total: int, width: int | None) -> list[str]:
    """Workloads and GPUs per state: `3 of 7 workloads, 24 GPUs: 1 running-protected (8 GPUs),
    2 waiting (16 GPUs)`; broken between states (never inside one) where it would pass
    `width`."""
    counts = by_state(rows)
    shown = len(rows)
    head = (
        f"{shown:,} of {plural(total, 'workload')}" if shown != total else plural(total, "workload")
    )
    head += f", {plural(sum(g for _, g in counts.values()), 'GPU')}"
    items = [f"{n:,} {s.value} ({plural(g, 'GPU')})" for s, (n, g) in counts.items()]
    if not items:
        return [head]
    lines = [head + ": " + items[0]]
    for k, item in enumerate(items[1:], start=2):
        comma = 1 if k < len(items) else 0  # room for the comma that may end the line
        if width is not None and len(lines[-1]) + 2 + len(item) + comma > width:
            lines[-1] += ","
            lines.append("  " + item)
        else:
            lines[-1] += ", " + item
    return lines
