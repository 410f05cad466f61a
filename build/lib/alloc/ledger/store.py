"""Where intervals are kept: a small interface a server database can implement later."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from alloc.domain import BudgetPath, WorkloadId


@dataclass(frozen=True, slots=True)
class Interval:
    """A workload ran on `gpus` GPUs from `start_s` to `end_s` (seconds since the epoch)."""

    workload: WorkloadId
    budget: BudgetPath | None
    gpus: float
    start_s: float
    end_s: float
    charged: bool  # allocated occupancy: counted against its budget

    @property
    def gpu_seconds(self) -> float:
        return self.gpus * (self.end_s - self.start_s)


class LedgerStore(Protocol):
    def add(self, intervals: Iterable[Interval]) -> None: ...

    def charged_between(self, start_s: float, end_s: float) -> dict[BudgetPath, float]:
        """Charged GPU-seconds per budget path that fall inside [start_s, end_s)."""
        ...

    def intervals(self) -> Iterator[Interval]: ...

    def close(self) -> None: ...


def overlap(interval: Interval, start_s: float, end_s: float) -> float:
    return max(0.0, min(interval.end_s, end_s) - max(interval.start_s, start_s)) * interval.gpus


class MemoryStore:
    """A list: for tests and for runs that need no file."""

    def __init__(self) -> None:
        self._rows: list[Interval] = []

    def add(self, intervals: Iterable[Interval]) -> None:
        self._rows.extend(intervals)

    def charged_between(self, start_s: float, end_s: float) -> dict[BudgetPath, float]:
        out: dict[BudgetPath, float] = defaultdict(float)
        for i in self._rows:
            if i.charged and i.budget and i.end_s > start_s and i.start_s < end_s:
                out[i.budget] += overlap(i, start_s, end_s)
        return dict(out)

    def intervals(self) -> Iterator[Interval]:
        return iter(list(self._rows))

    def close(self) -> None:
        pass
