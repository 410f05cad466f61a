"""What every `alloc` command shares: the consoles, the exit-code boundary (SPEC.md: 0 success;
2 bad input, naming file, field and what is wrong, with nothing written; 1 internal error, or
a cluster or database that could not be reached, said as such;
130, the convention for SIGINT: stopped by Ctrl-C; 141, the convention for SIGPIPE: the
reader of stdout went away, as `alloc queue | head -1` does), and writing files whole or not
at all (`alloc.io.files`)."""

from __future__ import annotations

import errno
import io
import os
import shutil
import sys
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from alloc.io import InputError
from alloc.io.errors import Unreachable
from alloc.io.files import write_atomically
from alloc.printable import shown

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_STDOUT_CLOSED",
    "Conflict",
    "MissingInput",
    "WithUsage",
    "bad_input",
    "check_writable",
    "console",
    "err",
    "flush_stdout",
    "whole_writes",
    "guarded",
    "on_the_command_line",
    "out",
    "say_left",
    "say_replaced",
    "say_written",
    "table_width",
    "write_atomically",
]


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """rich's own answer to a closed pipe is exit 1 (an internal error, for alloc): pass
        it on to `stdout_closed` instead, as every other write to a closed pipe is."""
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def console(stderr: bool = False) -> Console:
    """A console for people. In a terminal, prose wraps at its width. Otherwise (a pipe, a log
    file) no line is ever broken (`soft_wrap`: a log line is one line), and tables
    (`alloc.cli.tables`) fit the width COLUMNS gives, else a terminal's, else 80."""
    stream = sys.stderr if stderr else sys.stdout
    return _Console(stderr=stderr, soft_wrap=not stream.isatty())


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
EXIT_STDOUT_CLOSED = 141  # 128 + SIGPIPE, as a shell reports `git log | head -1`'s git


def stdout_closed() -> NoReturn:
    """End the command quietly (no message, no traceback) with 141 when the reader of its
    output has gone: `alloc queue | head -1` once head has its line. Python ignores SIGPIPE and
    raises BrokenPipeError instead; git and squeue are ended by the signal, which a shell
    reports as 141 (with `set -o pipefail`). stdout is pointed at /dev/null first, so that
    what is still buffered is not written again, and fails again, when Python flushes it at
    exit (the Python docs' recipe: library/signal.html, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # a stdout without a file descriptor (a test's)
        pass
    raise SystemExit(EXIT_STDOUT_CLOSED)


def flush_stdout() -> None:
    """Write out what stdout still buffers (`sys.stdout.write` of a plan or a script), while a
    closed pipe can still be answered with `stdout_closed`."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_closed()


def whole_writes() -> None:
    """Make stdout write whole or fail, also under PYTHONUNBUFFERED=1 (or `python -u`). There
    stdout's text layer writes straight to the file descriptor, one `write` call per text,
    whose count it ignores: when the reader of a pipe goes away in the middle of a large
    write (`alloc queue | head -1`), the kernel reports the part it took, the rest is dropped
    without an error, and the command ended 0 where it ends 141 buffered. A buffered writer
    writes on until all is written or the pipe fails (BrokenPipeError: `stdout_closed`); line
    buffering keeps the output as prompt as unbuffered output is, a line at a time. The
    descriptor stays sys.__stdout__'s (closefd=False)."""
    stream = sys.stdout
    if not isinstance(stream, io.TextIOWrapper) or not isinstance(stream.buffer, io.FileIO):
        return  # buffered already (the usual case), or not a file (a test's)
    raw = io.FileIO(stream.fileno(), "w", closefd=False)
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(raw),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=True,
        write_through=True,
    )


def guarded(action: Callable[[], T]) -> T:
    """Map Ctrl-C to exit 130, a cluster or database that could not be reached (Unreachable)
    and anything unexpected to exit 1, each with one line and no traceback. (`alloc
    simulate` and `alloc whatif` catch the first Ctrl-C themselves and write what they
    measured: see `alloc.cli.stop`.) Bad input (InputError) is said by the
    command that runs the action (`alloc.cli.commands.Command`: it knows its name), and a
    closed stdout is no error: the command group ends it (`Group`, `stdout_closed`)."""
    try:
        return action()
    except (BrokenPipeError, InputError):
        raise
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        err.print(
            "interrupted (Ctrl-C): stopped at once; files already written are whole",
            highlight=False,
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Unreachable as exc:
        err.print(f"[red]error:[/] {escape(shown(str(exc)))}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    except Exception as exc:  # noqa: BLE001 - the boundary of the program
        if os.environ.get("ALLOC_DEBUG"):
            raise
        what = escape(shown(str(exc)))  # one line, whatever the exception says
        err.print(f"[red]internal error:[/] {type(exc).__name__}: {what}", highlight=False)
        raise typer.Exit(1) from None


def bad_input(message: str, command: str = "", more: Iterable[str] = ()) -> NoReturn:
    """Bad input: exit 2 after one line on stderr, in one form for every kind of it:
    `error: alloc generate: --levels: what is wrong` for the command line (the command, the
    option or argument, what is wrong with its value or with how they go together; typer's
    own checks too: `alloc.cli.commands`) and `error: lab.yaml:41: workloads[3].gpus: what
    is wrong` for an input file (SPEC.md). `more`: lines after it (a usage line)."""
    line = f"{command}: {message}" if command else message
    err.print(f"[red]error:[/] {escape(shown(line))}", highlight=False, soft_wrap=True)
    for extra in more:
        err.print(extra, markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(2)


class WithUsage(InputError):
    """Bad input on the command line that its usage line helps with: what it lacks
    (MissingInput) or options given together that do not go together (Conflict)."""


class Conflict(WithUsage):
    """Options given together that exclude each other (`--trace` and `--synthetic`): said as
    other bad input on the command line is, then followed by the usage line, as what the
    command line lacks is."""

    def __init__(self, message: str, option: str = "") -> None:
        super().__init__(option, "", message)


class MissingInput(WithUsage):
    """What a command line lacks that typer cannot know is needed (an argument that is
    optional in one form of the command, `alloc queue [INSTANCE]` or `--config`; an option
    another option needs): said as other bad input on the command line is, then followed by
    the usage line, as typer's own `required, but not given` is (`alloc.cli.commands`).
    `name`: the argument (INSTANCE) or the option (--config), or "" for a choice of them."""

    def __init__(self, name: str, message: str = "required, but not given") -> None:
        option = name.startswith("-")
        super().__init__(name if option else "", "" if option else name, message)


def on_the_command_line(exc: InputError) -> bool:
    """Whether `exc` is about the command line rather than a file: its `file` is then the
    option (`--levels`) or empty (how options go together, an argument: its `field`)."""
    return not exc.file or exc.file.startswith("-")


def check_writable(option: str, path: Path, folder: bool = False, existing: bool = False) -> None:
    """Bad input (exit 2) before any work when `path` (a file, or a folder with `folder`)
    could not be written: it is the other kind, the folder it goes into does not exist (it is
    not created: a mistyped path is not silently made; an output folder itself may be new,
    unless `existing`), that folder is a file, or it is read-only."""
    kind = "folder" if folder else "file"
    if path.exists() and path.is_dir() != folder:
        raise InputError(option, "", f"{path} exists and is not a {kind}")
    if folder and existing and not path.exists():
        raise InputError(
            option,
            "",
            f"cannot write into {path}: the folder {path} does not exist (create it first)",
        )
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


def say_written(what: str, path: Path) -> None:
    """A file a command wrote (`plan written to plan.json`): on stdout, as what the command
    produced (its result; the data itself went into the file), where diagnostics (`replacing
    ...`, warnings, progress) go to stderr. Every command that writes a file with -o says so
    here, in these words."""
    out.print(f"{what} written to {path}", markup=False, highlight=False, soft_wrap=True)


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


def say_left(folder: Path, names: Iterable[str], other: str, doubt: str = "") -> None:
    """Before a run writes into `folder`: the files there of the other kind of run (a report
    of `alloc simulate` where `alloc whatif` writes a comparison, or the reverse), which it
    leaves as they are, named so that they are not taken for this run's; `doubt` says which
    of them may not be that run's (`trace.csv is its only if ...`)."""
    there = [folder / n for n in names if (folder / n).exists()]
    if there:
        shown = ", ".join(p.name + ("/" if p.is_dir() else "") for p in there)
        err.print(
            f"note: {folder} also holds {shown}, left from an earlier {other} run: not this "
            "run's, left as they are" + (f" ({doubt})" if doubt else ""),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
