"""Numbers as a person writes them, in everything alloc prints for people (the terminal, the
reports, explanations and error messages; not the JSON and CSV files, which keep full
precision). One rule each, here, used by every writer:

- counts: whole numbers with a thousands separator from 1,000 on (`1,024 GPUs`, `950 GPUs`);
- a count with its noun agrees with it: `1 GPU`, `8 GPUs`, `1 host`, `0 jobs` (`counted`);
- a number of GPUs that need not be whole (a share of the ready GPUs): one decimal when it is
  fractional, the same figure in every line (`gpus`: `12.8 GPUs`, never 13 here and 12 there);
- durations: whole units as a person says them: seconds below a minute (`45 s`), minutes
  below an hour (`15 min`), hours and minutes below a day (`1 h`, `1 h 3 min`), then days
  and hours (`2 d 5 h`), each rounded half up to the last unit shown (`duration`; never
  `1.04444 h` or `62.7 min`);
- other quantities: a fixed number of decimals with the same separator (`number`);
- fractions: percentages with a fixed number of decimals (`pct`);
- times: ISO 8601 with the zone, UTC as `Z` (`moment`: `2026-11-30T12:00:00Z`), as the
  input files write them.

And names (workloads, budget nodes, hosts, owners) listed for people are in natural order, as
a person counts: `r1, r2, r10`, not the text order `r1, r10, r2` (`natural_key`).

Imports nothing of ours, so every layer may use it."""

from __future__ import annotations

import math
import re
from datetime import datetime

MINUTE_S = 60
HOUR_S = 3600
DAY_S = 86400


def count(n: float) -> str:
    """A whole number: `7`, `950`, `1,024`, `82,247` (a float that is whole reads the same;
    one that is not keeps one decimal: `2.5`)."""
    if float(n).is_integer():
        return f"{int(n):,}"
    return number(n, 1)


def counted(n: float, noun: str, plural: str | None = None) -> str:
    """`n` and its noun, which agrees with it: `1 GPU`, `8 GPUs`, `1,024 GPUs`, `0 jobs`;
    `plural` for a noun that does not just take an s (`counted(n, "child", "children")`)."""
    return f"{count(n)} {noun if n == 1 else (plural or noun + 's')}"


def gpus(n: float) -> str:
    """GPUs, whole or not: `8 GPUs`, `1 GPU`, `12.8 GPUs` (0.87 is `0.9 GPUs`)."""
    return counted(round(n, 1), "GPU")


def number(value: float | None, digits: int = 1) -> str:
    """A quantity that is not a count: `digits` decimals and the thousands separator
    (`1,234.5`); `-` for None (not measured)."""
    return "-" if value is None else f"{value:,.{digits}f}"


def pct(value: float | None, digits: int = 1) -> str:
    """A fraction as a percentage: `0.953` -> `95.3%`; `-` for None. Rounded to the nearest,
    except that what is not 100% never reads 100%: 0.99995 is `99.9%` with one digit, `99.99%`
    with two (the terminal and report.html said `99.99%` and `100.0%` of one run)."""
    if value is None:
        return "-"
    text = f"{100 * value:.{digits}f}"
    if value < 1.0 and float(text) >= 100.0:
        text = f"{100.0 - 10.0**-digits:.{digits}f}"
    return text + "%"


def _half_up(x: float) -> int:
    return math.floor(x + 0.5)


def duration(seconds: float | None) -> str:
    """A duration in whole units: `0 s`, `45 s`, `15 min`, `1 h`, `1 h 3 min`, `1 d`,
    `2 d 5 h`, `-45 s` (rounded half up to the last unit shown: 3,779 s is `1 h 3 min`,
    90 s is `2 min`); `-` for None."""
    if seconds is None:
        return "-"
    s = abs(seconds)
    if _half_up(s) < MINUTE_S:
        whole = _half_up(s)
        text = f"{whole} s"
    elif _half_up(s / MINUTE_S) < 60:
        whole = _half_up(s / MINUTE_S)
        text = f"{whole} min"
    elif _half_up(s / MINUTE_S) < 24 * 60:
        whole = _half_up(s / MINUTE_S)
        h, m = divmod(whole, 60)
        text = f"{h} h" + (f" {m} min" if m else "")
    else:
        whole = _half_up(s / HOUR_S)
        d, h = divmod(whole, 24)
        text = f"{count(d)} d" + (f" {h} h" if h else "")
    return ("-" if seconds < 0 and whole else "") + text  # no "-0 s"


def signed_duration(seconds: float) -> str:
    """A change of a duration: `+2 min`, `-45 s`, or `0` when it rounds to nothing."""
    text = duration(seconds)
    if text == "0 s":
        return "0"
    return ("+" if seconds > 0 else "") + text


def hours(h: float | None) -> str:
    """A duration given in hours, written as `duration` writes it."""
    return duration(None if h is None else h * HOUR_S)


def moment(value: datetime) -> str:
    """A point in time as the input files write it: `2026-11-30T12:00:00Z`."""
    return value.isoformat().replace("+00:00", "Z")


_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[object, ...]:
    """The sort key of a name in natural order: its runs of digits compared as numbers, the
    rest as text (`r2` before `r10`, `nlp/team9` before `nlp/team10`); names that differ only
    in leading zeros (`r01`, `r1`) then by their text, so the order is total. A run of digits
    is compared by its length without leading zeros and then its digits, so a name of
    thousands of digits needs no int (Python refuses to make one past 4,300 digits)."""
    parts = _DIGITS.split(name)
    key: list[object] = []
    for i, part in enumerate(parts):
        if i % 2:
            digits = part.lstrip("0")
            key.append((len(digits), digits))
        else:
            key.append(part)
    return (tuple(key), name)
