"""The one way alloc's commands print a table to a console (`alloc solve`, `simulate`,
`whatif`, `status`, `budgets`), in the manner of kubectl and squeue: the title as a plain
line, a header row, columns two spaces apart, no borders, then a legend for the short
headers (and for the codes it wrote shorter). Each row is one line in the console's width, or
in the width given (`alloc.cli.columns` narrows the text columns that may be shortened;
numbers are never cut), so a table reads the same in an 80-column terminal, a pipe and a log
file. Cells are plain text (no markup); every number in them is written by `alloc.readable`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Literal

from rich.console import Console
from rich.text import Text

from alloc.cli.columns import About, Column, about, fit, format_row, notes, visible, wrap
from alloc.printable import shown

__all__ = ["print_table", "prose_width", "say"]


def print_table(
    console: Console,
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    *,
    title: str | None = None,
    legend: Sequence[str | About] = (),
    rule: bool = False,
    tight: int = 1,
    width: int | None | Literal["console"] = "console",
) -> None:
    """`title` (bold), the header (bold; with `rule` a dim rule under it), one line per row (a
    row of one cell is a group heading, bold), then each line of `legend` as prose (a line
    about columns, `About`, without the parts of those left out), and what the codes written
    shorter stand for. `tight`: the spaces between columns when the table
    is narrowed to the width. `width`: the console's (COLUMNS, a terminal's, else 80 in a
    pipe), or the one given (None: nothing shortened or broken). The title, the legend and
    the notes are the table's: broken at spaces to the width it is fitted to, in a pipe too
    (`wrap`). Names in cells, title and legend are shown escaped (`alloc.printable.shown`)."""
    rows = visible(rows)
    title = None if title is None else shown(title)
    fitted = width if isinstance(width, int) or width is None else console.width
    layout = fit(columns, rows, fitted, tight)
    said = [shown(about(entry, columns, layout)) for entry in legend]
    ending = [*(text for text in said if text), *notes(columns, layout, rows)]
    broken = [line for text in ending for line in wrap(text, fitted)]
    if title is not None:
        console.print(Text("\n".join(wrap(title, fitted)), style="bold"), soft_wrap=True)
    console.print(
        Text(format_row(columns, layout, [c.head for c in columns]), style="bold"), soft_wrap=True
    )
    if rule:
        kept = (w for i, w in enumerate(layout.widths) if i not in layout.dropped)
        line = layout.sep.join("─" * w for w in kept)
        console.print(Text(line, style="dim"), soft_wrap=True)
    for row in rows:
        style = "bold" if len(row) == 1 and len(columns) > 1 else ""
        console.print(Text(format_row(columns, layout, row), style=style), soft_wrap=True)
    for line in broken:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def prose_width(console: Console) -> int | None:
    """The width a command's prose (a line that is no table's) is broken to: COLUMNS, else
    a terminal's; None in a pipe or a log file without COLUMNS, where a line is whole (a log
    line is one line)."""
    columns = os.environ.get("COLUMNS", "")
    if (columns.isdigit() and int(columns) > 0) or console.is_terminal:
        return console.width
    return None


def say(console: Console, text: str, style: str = "") -> None:
    """A line of prose, plain text, broken at spaces to `prose_width` (`wrap`)."""
    for line in wrap(text, prose_width(console)):
        console.print(Text(line, style=style), soft_wrap=True)
