"""The ledger of one cluster: closed intervals go to a store; running ones stay open; window
queries are answered from an in-memory running integral, so a round's fair-share usage costs
O(budgets), not a scan of the window (the store answers the same question from its rows).

For each budget path the charged GPU-seconds are a running integral whose slope is the GPUs
charged to that path (alloc/ledger/integral.py).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from alloc.domain import BudgetPath, WorkloadId
from alloc.ledger.integral import RunningIntegral
from alloc.ledger.store import Interval, LedgerStore


@dataclass
class _Open:
    budget: BudgetPath | None
    gpus: float
    start_s: float
    charged: bool


class Ledger:
    def __init__(self, store: LedgerStore, lookback_s: float) -> None:
        self.store = store
        self.lookback_s = lookback_s
        self.open: dict[WorkloadId, _Open] = {}
        self._integrals: defaultdict[BudgetPath, RunningIntegral] = defaultdict(RunningIntegral)
        self._now = float("-inf")

    def start(
        self, workload: WorkloadId, budget: BudgetPath | None, gpus: float, t: float, charged: bool
    ) -> None:
        assert workload not in self.open, workload
        self._tick(t)
        self.open[workload] = _Open(budget, gpus, t, charged)
        if charged and budget:
            self._integrals[budget].change(t, gpus)

    def stop(self, workload: WorkloadId, t: float) -> Interval:
        self._tick(t)
        o = self.open.pop(workload)
        interval = Interval(workload, o.budget, o.gpus, o.start_s, t, o.charged)
        self.store.add([interval])
        if o.charged and o.budget:
            self._integrals[o.budget].change(t, -o.gpus)
        return interval

    def record(self, intervals: list[Interval]) -> None:
        """Closed intervals from before the ledger's first event (e.g. usage an instance
        states for its window): stored, and counted by later window queries."""
        self.store.add(intervals)
        changes = sorted(
            [(i.start_s, i.budget, i.gpus) for i in intervals if i.charged and i.budget]
            + [(i.end_s, i.budget, -i.gpus) for i in intervals if i.charged and i.budget]
        )
        for t, budget, delta in changes:
            assert budget
            self._integrals[budget].change(t, delta)

    def _tick(self, t: float) -> None:
        if t < self._now:
            raise ValueError(f"the ledger's time goes forward only ({t} < {self._now})")
        self._now = t

    def window_gpu_hours(self, t: float) -> dict[BudgetPath, float]:
        """Charged GPU-hours per budget path (its own, not its descendants') in [t - L, t]."""
        self._tick(t)
        out = {}
        for path, integral in self._integrals.items():
            used = integral.window(t, self.lookback_s)
            if used > 1e-9:
                out[path] = used / 3600.0
        return out

    def window_from_store(self, t: float) -> dict[BudgetPath, float]:
        """The same question answered by the store plus the open intervals (a check, and the
        way a restarted controller rebuilds its view)."""
        start = t - self.lookback_s
        seconds = defaultdict(float, self.store.charged_between(start, t))
        for o in self.open.values():
            if o.charged and o.budget:
                seconds[o.budget] += o.gpus * max(0.0, t - max(o.start_s, start))
        return {p: s / 3600.0 for p, s in seconds.items() if s > 1e-9}

    def close(self, t: float) -> None:
        """Close every open interval at `t` and the store."""
        for workload in list(self.open):
            self.stop(workload, t)
        self.store.close()
