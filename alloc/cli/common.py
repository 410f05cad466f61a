"""What every `alloc` command shares: the consoles, the exit-code boundary (SPEC.md: 0 success;
2 bad input, naming file, field and what is wrong, with nothing written; 1 internal error;
and 130, the convention for SIGINT: stopped by Ctrl-C), and writing files whole or not at
all (`alloc.io.files`)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from alloc.io import InputError
from alloc.io.files import write_atomically

__all__ = [
    "EXIT_INTERRUPTED",
    "check_writable",
    "console",
    "err",
    "guarded",
    "out",
    "say_replaced",
    "table_width",
    "write_atomically",
]


def console(stderr: bool = False) -> Console:
    """A console for people. In a terminal, prose wraps at its width. Otherwise (a pipe, a log
    file) no line is ever broken (`soft_wrap`: a log line is one line), and tables
    (`alloc.cli.tables`) fit the width COLUMNS gives, else a terminal's, else 80."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, soft_wrap=not stream.isatty())


def table_width() -> int | None:
    """The width `alloc queue` and `alloc status` fit their lines to: COLUMNS, else the
    terminal's; None (nothing shortened, no line broken) in a pipe or a log file, as
    `kubectl get` writes there."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


out = console()
err = console(stderr=True)
T = TypeVar("T")
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C stopped


def guarded(action: Callable[[], T]) -> T:
    """Map bad input to exit 2, Ctrl-C to exit 130 and anything unexpected to exit 1, each
    with one line and no traceback. (`alloc simulate` and `alloc whatif` catch the first
    Ctrl-C themselves and write what they measured: see `alloc.cli.stop`.)"""
    try:
        return action()
    except InputError as exc:
        err.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        err.print(
            "interrupted (Ctrl-C): stopped at once; files already written are whole",
            highlight=False,
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:  # noqa: BLE001 - the boundary of the program
        if os.environ.get("ALLOC_DEBUG"):
            raise
        err.print(
            f"[red]internal error:[/] {type(exc).__name__}: {escape(str(exc))}", highlight=False
        )
        raise typer.Exit(1) from None


def check_writable(option: str, path: Path, folder: bool = False) -> None:
    """Bad input (exit 2) before any work when `path` (a file, or a folder with `folder`)
    could not be written: it is the other kind, the folder it goes into does not exist (it is
    not created: a mistyped path is not silently made; an output folder itself may be new),
    that folder is a file, or it is read-only."""
    kind = "folder" if folder else "file"
    if path.exists() and path.is_dir() != folder:
        raise InputError(option, "", f"{path} exists and is not a {kind}")
    parent = path if folder and path.is_dir() else path.parent
    if not parent.exists():
        above = parent
        while not above.exists():
            above = above.parent
        if not above.is_dir():
            raise InputError(option, "", f"cannot write {path}: {above} is a file")
        what = "create" if folder else "write"
        raise InputError(
            option,
            "",
            f"cannot {what} {path}: the folder {parent} does not exist (create it first)",
        )
    if not parent.is_dir():
        raise InputError(option, "", f"cannot write {path}: {parent} is a file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(option, "", f"cannot write {path}: {parent} is not writable")


def replaced_by_run(folder: Path, names: Iterable[str]) -> str | None:
    """What a run writing `names` into `folder` replaces, to say before it starts: `replacing
    metrics.json, report.html in out/, from the run of 2026-12-02 16:39 UTC` (a folder named
    with a slash), or None when none of them is there. The time is the newest of them."""
    there = [folder / n for n in names if (folder / n).exists()]
    if not there:
        return None
    newest = max(p.stat().st_mtime for p in there)
    when = datetime.fromtimestamp(newest, UTC).strftime("%Y-%m-%d %H:%M UTC")
    shown = ", ".join(p.name + ("/" if p.is_dir() else "") for p in there)
    return f"replacing {shown} in {folder}, from the run of {when}"


def say_replaced(folder: Path, names: Iterable[str]) -> None:
    """Before a run writes into `folder`: which files of an earlier run it replaces, if any."""
    line = replaced_by_run(folder, names)
    if line is not None:
        err.print(line, markup=False, highlight=False, soft_wrap=True)
