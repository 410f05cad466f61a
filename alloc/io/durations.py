"""Durations (`90s`, `15m`, `8h`, `7d`, `1h30m` or seconds) and ISO 8601 times with a zone."""

from __future__ import annotations

import math
import re
from datetime import datetime
from functools import lru_cache

from alloc.io.limits import limits

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_WHOLE = re.compile(r"^\s*(?:\d+(?:\.\d+)?\s*[smhdw]\s*)+$")


def parse_duration(value: object) -> float:
    """Seconds from a number of seconds or a string such as '90s', '8h' or '1h30m'."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration such as 90s, 15m, 8h or 7d, got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _seconds_of(value)
    else:
        raise ValueError(f"expected a duration such as 90s, 15m, 8h or 7d, got {value!r}")
    if not math.isfinite(seconds):  # 1e400 seconds, or a YAML .inf
        raise ValueError(f"expected a finite duration, got {value!r}")
    if seconds < 0:
        raise ValueError(f"a duration must be zero or more, got {value!r}")
    if seconds > limits().seconds:
        raise ValueError(f"{value!r} is more than ten years, the longest duration alloc reads")
    return seconds


@lru_cache(maxsize=1024)  # a lab's file writes the same few durations thousands of times
def _seconds_of(text: str) -> float:
    if _WHOLE.match(text.lower()):
        return sum(float(n) * _UNITS[u] for n, u in _PART.findall(text.lower()))
    if re.fullmatch(r"\s*\d+(\.\d+)?([eE][+-]?\d+)?\s*", text):
        return float(text)  # seconds; YAML reads 1e9 as a string
    if text.strip().lower().lstrip("+-") in ("inf", "infinity", "nan"):
        return float(text)  # refused by parse_duration as not finite, as 1e400 is
    raise ValueError(f"expected a duration such as 90s, 15m, 8h or 7d, got {text!r}")


def format_duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    if float(seconds).is_integer():
        return f"{int(seconds)}s"
    return f"{seconds!r}s"


def parse_time(value: object) -> datetime:
    """An ISO 8601 time that names its zone, e.g. 2026-11-30T12:00:00Z."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(
                f"expected an ISO 8601 time such as 2026-11-30T12:00:00Z, got {value!r}"
            ) from None
    else:
        raise ValueError(f"expected an ISO 8601 time such as 2026-11-30T12:00:00Z, got {value!r}")
    if parsed.tzinfo is None:
        raise ValueError(f"the time {value!r} has no zone; add one, e.g. Z or +01:00")
    if not 1970 <= parsed.year <= 9000:
        raise ValueError(f"the time {value!r} is out of range (years 1970 to 9000)")
    return parsed


def format_time(value: datetime) -> str:
    text = value.isoformat()
    return text.replace("+00:00", "Z")
