"""Which importer a trace looks made for, so that `alloc trace import philly` given an ITP
trace (or the reverse) says so, rather than that a file it expected is missing. A guess from
the file names and the header lines only; the import itself still checks everything."""

from __future__ import annotations

from pathlib import Path

from alloc.io.errors import InputError

_MAX_FILES = 50  # CSVs of a folder looked at (a guess: a huge folder is not read through)


def _header(path: Path) -> set[str]:
    """The columns of a CSV file's first line; none when it cannot be read."""
    try:
        with path.open(encoding="utf-8-sig", errors="replace") as f:
            return {c.strip() for c in f.readline(4096).split(",")}
    except OSError:
        return set()


def looks_like(source: Path) -> str | None:
    """`philly` or `itp`: the kind of trace `source` (a CSV, or a folder of them) looks like;
    None when it looks like neither."""
    from alloc.traces import itp, philly

    if source.is_dir():
        if (source / philly.JOBS_FILE).is_file():
            return "philly"
        if (source / itp.DEFAULT_FILE).is_file():
            return "itp"
        try:
            files = sorted(p for p in source.glob("*.csv") if p.is_file())[:_MAX_FILES]
        except OSError:
            return None
    else:
        files = [source]
    for path in files:
        header = _header(path)
        if set(itp.COLUMNS) <= header:
            return "itp"
        if set(philly.COLUMNS) <= header:
            return "philly"
    return None


def not_a(kind: str, source: Path, why: str) -> InputError:
    """`source` is not a `kind` trace (`why`: what it lacks), with the importer it looks made
    for, if another."""
    names = {"philly": "a Philly trace", "itp": "an ITP trace"}
    other = looks_like(source)
    hint = (
        f"; it looks like {names[other]}: alloc trace import {other} {source}"
        if other is not None and other != kind
        else ""
    )
    return InputError(str(source), "", f"not {names[kind]}: {why}{hint}")
