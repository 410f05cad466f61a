"""The bounds of everything alloc reads (README, "Limits of input"): a file, a value, the
nesting of a YAML document and the size of a cluster; and `read_input`, which reads a file
within them. Input beyond a bound is bad input (exit 2,
naming the file, line and field and the bound), never a hang, an exhausted memory or an
internal error. The bounds a real lab could outgrow are read from the environment:

    ALLOC_MAX_FILE_MB   size of one input file (instance, trace, host events, plan), MiB
    ALLOC_MAX_VALUES    values (scalars, lists, mappings) in one YAML file
    ALLOC_MAX_ROWS      rows of one CSV file (trace, host events)
    ALLOC_MAX_HOSTS     hosts in one cluster
    ALLOC_MAX_GPUS      GPUs in one cluster
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from alloc.io.errors import InputError

MIB = 1 << 20
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Limits:
    file_bytes: int = 16 * MIB  # a 65,536-GPU instance is 1.4 MB
    values: int = 500_000  # a 65,536-GPU instance has 173,000; ~1 s to read 500,000
    rows: int = 250_000  # Philly's trace has 82,000 jobs; ~3 s to read 250,000
    nesting: int = 64  # YAML collections within collections (a 30-level budget tree)
    text: int = 4096  # characters of one YAML value or CSV field
    hosts: int = 65_536
    gpus: int = 262_144  # 4x the largest cluster alloc is measured on
    seconds: float = 10 * 365 * 86_400.0  # a time or duration in a trace: ten years


# name of the environment variable -> (field of Limits, unit it is given in)
SETTINGS = {
    "ALLOC_MAX_FILE_MB": ("file_bytes", MIB),
    "ALLOC_MAX_VALUES": ("values", 1),
    "ALLOC_MAX_ROWS": ("rows", 1),
    "ALLOC_MAX_HOSTS": ("hosts", 1),
    "ALLOC_MAX_GPUS": ("gpus", 1),
}


@cache
def limits() -> Limits:
    """The bounds in force: the defaults, each replaced by its environment variable if set.
    A variable that is not a positive whole number is bad input (a typo must not lift or
    silently ignore a bound)."""
    given: dict[str, int] = {}
    for variable, (field, unit) in SETTINGS.items():
        text = os.environ.get(variable)
        if text is None:
            continue
        digits = text.strip().replace("_", "").replace(",", "")
        if not (digits.isdigit() and int(digits) > 0):
            raise InputError(
                "the environment", variable, f"expected a whole number above 0, got {text!r}"
            )
        given[field] = int(digits) * unit
    return Limits(**given)


def setting(field: str) -> str:
    """How to raise the bound `field` (for error messages), or "" when it is fixed."""
    for variable, (name, _) in SETTINGS.items():
        if name == field:
            return f" (set {variable} to allow more)"
    return ""


def check_text(value: str, file: str, field: str, line: int | None) -> str:
    """`value` if it is within the characters of one value alloc reads, else InputError."""
    most = limits().text
    if len(value) > most:
        raise InputError(
            file,
            field,
            f"a value of {len(value):,} characters, more than the {most:,} alloc reads",
            line,
        )
    return value


def bounded_rows(reader: Iterator[R], file: str) -> Iterator[R]:
    """The rows of a csv reader or DictReader, each field within the characters alloc reads,
    and a row the csv module cannot read (a field past its own bound of 131,072 characters)
    reported as bad input at its line."""
    lines: Any = getattr(reader, "reader", reader)  # a DictReader's line_num lags on an error
    bounds = limits()
    for count in range(bounds.rows + 1):
        try:
            row: Any = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            message = f"not valid CSV: {exc}"
            if "field limit" in str(exc):
                message = (
                    f"a value of more than {csv.field_size_limit():,} characters, more than "
                    f"the {bounds.text:,} alloc reads"
                )
            raise InputError(file, "", message, lines.line_num) from None
        if count == bounds.rows:
            raise InputError(
                file,
                "",
                f"more than {bounds.rows:,} rows, the most alloc reads" + setting("rows"),
                lines.line_num,
            )
        cells = row.values() if isinstance(row, dict) else row
        if max(map(_length, cells), default=0) > bounds.text:
            named = row.items() if isinstance(row, dict) else enumerate(row)
            for name, value in named:
                if isinstance(value, str):
                    check_text(value, file, name if isinstance(name, str) else "", lines.line_num)
        yield row


def _length(cell: object) -> int:
    return len(cell) if isinstance(cell, str) else 0


def read_input(path: str | Path, encoding: str = "utf-8", kind: str = "file") -> str:
    """The text of an input file; InputError naming the file once and what is wrong with it
    (the system's own message repeats the file name: `x.csv: [Errno 21] Is a directory:
    'x.csv'`). `encoding` `utf-8-sig` drops a byte order mark; `kind` names what was expected
    (`a CSV file`). At most `file_bytes` are read: a larger file, or an endless one such as
    /dev/zero, is refused without being read in full."""
    file = str(path)
    most = limits().file_bytes
    try:
        with open(path, "rb") as stream:
            raw = stream.read(most + 1)
    except FileNotFoundError:
        raise InputError(file, "", "no such file") from None
    except IsADirectoryError:
        raise InputError(file, "", f"is a folder, expected {_article(kind)}") from None
    except PermissionError:
        raise InputError(file, "", "cannot read the file: permission denied") from None
    except OSError as exc:
        raise InputError(file, "", f"cannot read the file: {exc.strerror or exc}") from None
    if len(raw) > most:
        raise InputError(
            file,
            "",
            f"larger than {most / MIB:,.0f} MiB, the most alloc reads{setting('file_bytes')}",
        )
    try:
        return raw.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        byte = raw[exc.start] if exc.start < len(raw) else 0
        raise InputError(
            file, "", f"not UTF-8 text (byte 0x{byte:02x} cannot be read; save it as UTF-8)", line
        ) from None


def _article(kind: str) -> str:
    return kind if kind.startswith(("a ", "an ")) else f"a {kind}"
