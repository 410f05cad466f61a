"""Columns of plain text fitted to a width: the one helper behind every table alloc prints (`alloc
queue`, `alloc whatif`, and the tables of `alloc.cli.tables`).

A row is one line whatever the width. Columns are as wide as their widest cell (or header), two
spaces apart. When that is wider than the width, the columns that may be shortened are narrowed
one character at a time, widest first, stage by stage (`Column.stages`: how far each may go at
each stage): the codes of a column written shorter (`Column.codes`, `over_allocation` ->
`over_alloc`, explained by `abbreviations`), then its longer cells shortened with an ellipsis
(`Column.shorten`, one of alloc.cli.shorten's); numbers are never cut, and a column of names
(`Column.distinct`: ids, budget paths) never so far that two of its different cells read the
same; the legend (`abbreviations`) promises only the codes written shorter that a cell shows
whole. A column whose cells come out narrower than its width at a stage frees the rest before
the next stage. When the last stage still leaves a line wider than the width, the columns a
table marks as least useful (`Column.drop`) are left out, the least useful first, and the
table's notes (`notes`) name them; a table still too wide says so there rather than overflow
silently (every line a table prints fits the width, COLUMNS in a terminal). A row is one line,
but for a column of labels (`Column.wrap`: a summary's metric names), whose cells are broken
at spaces onto more lines rather than cut, the row's other cells on its first. A row of one
cell is a group heading and may use the whole line. Every cell is shown as `alloc.printable.shown`
writes it (a name a cluster reports may hold an escape sequence or a line break), before it is
measured (`visible`)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from alloc.cli.shorten import shorten_end
from alloc.printable import shown

__all__ = [
    "About",
    "Column",
    "Layout",
    "about",
    "abbreviations",
    "fit",
    "notes",
    "format_row",
    "lines",
    "visible",
    "wrap",
]

GAP = 2  # spaces between columns when the row fits so


@dataclass(frozen=True, slots=True)
class Column:
    head: str
    right: bool = False  # numbers align right
    shorten: Callable[[str, int], str] | None = None  # None: never cut
    # How far it may be narrowed at each stage of `fit`, as (stage, width) pairs.
    stages: tuple[tuple[int, int], ...] = ()
    # Codes in its cells written shorter where a cell does not fit (`over_allocation` ->
    # `over_alloc`), before it is cut; the table's legend says what they stand for.
    codes: Mapping[str, str] = field(default_factory=dict)
    distinct: bool = False  # names: never narrowed so far that two different cells read alike
    # Left out when even the last stage leaves the line too wide: 0 never, else the columns
    # with the highest `drop` first (the least useful).
    drop: int = 0
    # Labels: a cell too wide is broken at spaces onto more lines (`wrap`, the lines after the
    # first indented two spaces more than it), never cut.
    wrap: bool = False

    def cut(self, text: str, width: int) -> str:
        """The cell in `width`: whole if it fits, else with its codes written shorter (the
        longest first) until it does, else shortened (if it may be)."""
        if len(text) <= width:
            return text
        for code in sorted(self.codes, key=len, reverse=True):
            text = text.replace(code, self.codes[code])
            if len(text) <= width:
                return text
        return text if self.shorten is None else self.shorten(text, width)

    def lines(self, text: str, width: int) -> list[str]:
        """The cell in `width` as the lines it is shown on: one (`cut`), but for a label
        (`wrap`) broken at spaces, each line after the first indented two spaces more than
        the first (a word longer than the width stays whole)."""
        if not self.wrap or len(text) <= width:
            return [self.cut(text, width)]
        indent = " " * (len(text) - len(text.lstrip(" ")) + 2)
        return textwrap.wrap(
            text,
            max(1, width),
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        ) or [text]

    def used(self, text: str, width: int) -> int:
        """How wide the cell is shown in `width` (its longest line)."""
        return max(len(line) for line in self.lines(text, width))

    @property
    def narrows(self) -> bool:
        return self.shorten is not None or bool(self.codes) or self.wrap


@dataclass(frozen=True, slots=True)
class Layout:
    widths: list[int]
    sep: str
    dropped: frozenset[int] = frozenset()  # columns left out (`Column.drop`)
    width: int | None = None  # the width fitted to

    @property
    def full(self) -> int:
        shown = [w for i, w in enumerate(self.widths) if i not in self.dropped]
        return sum(shown) + len(self.sep) * (len(shown) - 1)


def _cells(columns: Sequence[Column], rows: Sequence[Sequence[str]], i: int) -> list[str]:
    return [columns[i].head, *(r[i] for r in rows if len(r) == len(columns))]


def fit(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int | None,
    tight: int = 1,
) -> Layout:
    """Column widths and the separator: two spaces when everything fits so, else `tight`
    spaces and the shortenable columns narrowed, widest first, stage by stage (a line longer
    than `width` only when even the last stage is not enough). `width` None: no limit. Rows
    of one cell (headings) take no part."""
    natural = [max(len(c) for c in _cells(columns, rows, i)) for i in range(len(columns))]
    widths = list(natural)
    if width is None or sum(widths) + GAP * (len(columns) - 1) <= width:
        return Layout(widths, " " * GAP)
    over = sum(widths) + tight * (len(columns) - 1) - width
    names = {i: set(_cells(columns, rows, i)[1:]) for i, c in enumerate(columns) if c.distinct}
    for stage in sorted({s for c in columns for s, _ in c.stages}):
        least = {i: w for i, c in enumerate(columns) for s, w in c.stages if s == stage}
        narrowed = list(least)
        while over > 0:
            room = [i for i, w in least.items() if widths[i] > w]
            if not room:
                break
            widest = max(room, key=lambda i: (widths[i], -i))
            if widest in names and not _distinct(columns[widest], names[widest], widths[widest]):
                del least[widest]  # two names would read alike: as narrow as it goes
                continue
            widths[widest] -= 1
            over -= 1
        # A column whose cells came out narrower than its width (codes written shorter, a
        # path cut at its slashes, ratios without a level) frees the rest before the next
        # stage narrows another column.
        for i in narrowed:
            if widths[i] < natural[i]:
                used = max(columns[i].used(t, widths[i]) for t in _cells(columns, rows, i))
                over -= widths[i] - used
                widths[i] = used
    dropped: set[int] = set()
    if over > 0:  # measured afresh: the least useful columns left out until the rest fit
        _give_back(columns, rows, natural, widths)
        over = Layout(widths, " " * tight).full - width
        for i in sorted(
            (i for i, c in enumerate(columns) if c.drop), key=lambda i: -columns[i].drop
        ):
            if over <= 0:
                break
            dropped.add(i)
            over -= widths[i] + tight
    _give_back(columns, rows, natural, widths, max(0, -over))
    return Layout(widths, " " * tight, frozenset(dropped), width)


def _distinct(column: Column, names: set[str], width: int) -> bool:
    """Whether the names still read apart with the column one character narrower."""
    return len({column.cut(name, width - 1) for name in names}) == len(names)


def _give_back(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    natural: list[int],
    widths: list[int],
    spare: int = 0,
) -> None:
    """A shortened column whose cells came out narrower than its width (a path cut at its
    slashes) gives the rest, with the `spare` columns already gave, to the other shortened
    columns, those shortened last first, each only as much as its cells then show: a column
    is never wider than its widest cell (or header) as shown (`protected` for
    `running-protected` is 9 wide, not the 13 it was narrowed to), the rest goes on."""
    cut = [i for i, c in enumerate(columns) if c.narrows and widths[i] < natural[i]]
    for i in cut:
        used = max(columns[i].used(t, widths[i]) for t in _cells(columns, rows, i))
        spare += widths[i] - used
        widths[i] = used
    for i in sorted(cut, key=lambda i: -max((s for s, _ in columns[i].stages), default=0)):
        while spare > 0 and widths[i] < natural[i]:
            more = widths[i] + min(spare, natural[i] - widths[i])
            used = max(columns[i].used(t, more) for t in _cells(columns, rows, i))
            if used <= widths[i]:
                break  # more room shows nothing more of its cells
            spare -= used - widths[i]
            widths[i] = used


def format_row(columns: Sequence[Column], layout: Layout, cells: Sequence[str]) -> str:
    """One line: each cell shortened to its column's width (if it may be) and aligned; a row
    of one cell, a heading, shortened to the whole line. A label broken onto more lines
    (`Column.wrap`) makes more lines, joined by newlines, the row's other cells on its first;
    a label runs on into the blank a shorter number right of it leaves only to be one line
    (its words never on both sides of the value)."""
    if len(cells) == 1 and len(columns) > 1:
        return (columns[0].shorten or shorten_end)(cells[0], layout.full)
    kept = [
        (c, w, text)
        for i, (c, w, text) in enumerate(zip(columns, layout.widths, cells, strict=True))
        if i not in layout.dropped
    ]
    shown = []
    for k, (c, w, text) in enumerate(kept):
        parts = c.lines(text, w)
        if c.wrap and len(parts) > 1 and k + 1 < len(kept) and kept[k + 1][0].right:
            # a label may run on into the blank a shorter number right of it leaves, when it
            # then is one line: a label broken is broken in its column, never around its value
            after, width_after, value = kept[k + 1]
            room = w + width_after - len(after.cut(value, width_after))
            if len(c.lines(text, room)) == 1:
                parts = c.lines(text, room)
        shown.append((c, w, parts))
    out = []
    for k in range(max(len(parts) for _, _, parts in shown)):
        line, over = [], 0  # how far a label ran on into the column right of it
        for c, w, parts in shown:
            text = parts[k] if k < len(parts) else ""
            line.append(text.rjust(w - over) if c.right else text.ljust(w))
            over = max(0, len(text) - w) if c.wrap else 0
        out.append(layout.sep.join(line).rstrip())
    return "\n".join(out)


# A legend line about columns: its parts, each the heads of one or more columns (joined by
# ", ") and what they mean, shown as `heads: meaning` joined by "; " (`share: of the parent;
# of all: of the cluster`, `delivered, owed: GPU-hours`).
About = tuple[tuple[str, str], ...]


def about(entry: str | About, columns: Sequence[Column], layout: Layout) -> str:
    """A legend line as a fitted table shows it: a line of prose as it is; a line about
    columns (`About`) without the heads of the columns left out (`Column.drop`), a part
    without its meaning when all its heads are, "" when all the line's are."""
    if isinstance(entry, str):
        return entry
    gone = {columns[i].head for i in layout.dropped}
    parts = []
    for heads, text in entry:
        kept = [head for head in heads.split(", ") if head not in gone]
        if kept:
            parts.append(f"{', '.join(kept)}: {text}")
    return "; ".join(parts)


def visible(rows: Sequence[Sequence[str]]) -> list[list[str]]:
    """The rows with every cell as it is shown (`alloc.printable.shown`)."""
    return [[shown(cell) for cell in row] for row in rows]


def abbreviations(columns: Sequence[Column], layout: Layout, rows: Sequence[Sequence[str]]) -> str:
    """What the codes written shorter in these rows stand for, for the table's legend
    (`over_alloc = over_allocation, displaced = unallocated_displaced`); "" when none is."""
    used = []
    for i, c in enumerate(columns):
        if i in layout.dropped:
            continue
        cells = {r[i]: c.cut(r[i], layout.widths[i]) for r in rows if len(r) == len(columns)}
        for code, short in c.codes.items():
            # promised only where the short code is shown whole
            if any(
                code in text and code not in cut and short in cut for text, cut in cells.items()
            ):
                used.append(f"{short} = {code}")
    return ", ".join(used)


def notes(columns: Sequence[Column], layout: Layout, rows: Sequence[Sequence[str]]) -> list[str]:
    """The lines a table ends with when it was fitted: what the codes written shorter stand
    for, the columns left out at this width, and, when even so a line is wider than the
    width, that it is (never an overflow nobody is told of)."""
    out = []
    short = abbreviations(columns, layout, rows)
    if short:
        out.append(f"abbreviated: {short}")
    if layout.dropped:
        heads = ", ".join(columns[i].head for i in sorted(layout.dropped))
        out.append(f"left out at {layout.width} columns: {heads}")
    # measured as printed: a cell that may not be cut (a code written shorter, a long word of
    # a label) can be wider than its column
    widest = max(
        (
            len(line)
            for r in [[c.head for c in columns], *rows]
            if len(r) == len(columns)
            for line in format_row(columns, layout, r).split("\n")
        ),
        default=0,
    )
    if layout.width is not None and widest > layout.width:
        out.append(
            f"the table is {widest} characters wide, wider than the {layout.width} "
            "columns given (COLUMNS)"
        )
    return out


def lines(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int | None,
    tight: int = 1,
) -> list[str]:
    """The header and one line per row (more for a label broken, `Column.wrap`), fitted to
    `width` (`fit`)."""
    rows = visible(rows)
    layout = fit(columns, rows, width, tight)
    return [
        line
        for r in [[c.head for c in columns], *rows]
        for line in format_row(columns, layout, r).split("\n")
    ]  # the caller adds `notes`


def wrap(text: str, width: int | None) -> list[str]:
    """A line of prose broken at spaces to fit `width`, the lines after the first indented by
    two spaces (a word longer than the width stays whole); one line when `width` is None."""
    if width is None or len(text) <= width:
        return [text]
    return textwrap.wrap(
        text, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
    )
