"""The one percentile definition of every figure alloc reports (metrics.json, the terminal
summary, report.html's tables and its wait plot, the what-if comparison): the nearest rank.
The p-th percentile of n values is the k-th smallest, k = ceil(p x n) (at least 1): always a
value that occurred, the median of an even count the lower of the two middle ones. Imports
nothing heavy, so a report drawn from files uses it without loading the simulator."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence


def nearest_rank(ordered: Sequence[float], p: float) -> float:
    """The p-th percentile (0 < p <= 1) of values sorted ascending; at least one value."""
    if not ordered:
        raise ValueError("no values: a percentile needs at least one")
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


def summary(values: Iterable[float], digits: int = 3) -> dict[str, float | None]:
    """p50, p90 and max (rounded to `digits` decimals; None without values) and the count."""
    ordered = sorted(values)
    if not ordered:
        return {"p50": None, "p90": None, "max": None, "count": 0}
    return {
        "p50": round(nearest_rank(ordered, 0.5), digits),
        "p90": round(nearest_rank(ordered, 0.9), digits),
        "max": round(ordered[-1], digits),
        "count": len(ordered),
    }
