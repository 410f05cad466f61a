"""What a simulation records for its metrics: piecewise-constant GPU counts integrated into
hourly buckets, and the events (preemptions, drains, rounds) as they happen."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from alloc.domain import BudgetPath, HostName, WorkloadId

HOUR = 3600.0


@dataclass
class Rates:
    """GPU counts at this moment; the world keeps them current."""

    installed: int = 0
    ready: int = 0
    allocated: int = 0  # GPUs held on ready hosts by allocated work
    unallocated: int = 0  # ... by unallocated work
    allocated_elsewhere: int = 0  # GPUs of allocated work on hosts not ready (draining)
    queued: int = 0  # GPUs asked for by queued work
    waiting: int = 0  # GPUs of queued work the last round left waiting that could ever start
    fits: bool = False  # some work the last round left waiting fits into the free GPUs
    delivered: defaultdict[BudgetPath, int] = field(default_factory=lambda: defaultdict(int))
    demand: defaultdict[BudgetPath, int] = field(default_factory=lambda: defaultdict(int))
    busy_util: float = 0.0  # sum of gpus x util over running work that states its util
    busy_util_gpus: int = 0  # GPUs of that work


@dataclass(frozen=True, slots=True)
class Preemption:
    t_s: float
    workload: WorkloadId
    budget: BudgetPath | None
    gpus: int
    lost_gpu_s: float
    reason: str


@dataclass(frozen=True, slots=True)
class Drain:
    host: HostName
    start_s: float
    end_s: float


@dataclass(frozen=True, slots=True)
class RoundRecord:
    t_s: float
    seconds: float
    status: str
    violations: int
    starts: int
    preempts: int
    kind: str = "full"  # full round | event pass (models/round.md 9)


class Series:
    """GPU-seconds per hour of the simulation."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def add(self, hour: int, gpu_seconds: float) -> None:
        if hour >= len(self.values):
            self.values.extend([0.0] * (hour + 1 - len(self.values)))
        self.values[hour] += gpu_seconds

    def at(self, hour: int) -> float:
        return self.values[hour] if hour < len(self.values) else 0.0

    def total(self) -> float:
        return sum(self.values)


@dataclass
class Recorder:
    rates: Rates
    at_s: float = 0.0
    installed: Series = field(default_factory=Series)
    ready: Series = field(default_factory=Series)
    allocated: Series = field(default_factory=Series)
    unallocated: Series = field(default_factory=Series)
    queued: Series = field(default_factory=Series)
    allocated_unavailable: Series = field(default_factory=Series)  # allocated, on hosts not ready
    ready_while_waiting: Series = field(default_factory=Series)
    held_while_waiting: Series = field(default_factory=Series)
    ready_while_fits: Series = field(default_factory=Series)  # ... and some of it fit as is
    held_while_fits: Series = field(default_factory=Series)
    util: Series = field(default_factory=Series)  # gpu x util seconds
    util_gpus: Series = field(default_factory=Series)
    delivered: defaultdict[BudgetPath, Series] = field(default_factory=lambda: defaultdict(Series))
    demand: defaultdict[BudgetPath, Series] = field(default_factory=lambda: defaultdict(Series))
    ratios: dict[int, dict[BudgetPath, float]] = field(default_factory=dict)  # hour -> leaf ratio
    preemptions: list[Preemption] = field(default_factory=list)
    drains: list[Drain] = field(default_factory=list)
    rounds: list[RoundRecord] = field(default_factory=list)
    _since: dict[tuple[int, BudgetPath], float] = field(default_factory=dict)

    def advance(self, t: float) -> None:
        """Integrate the current rates from the last call up to `t`."""
        start = self.at_s
        if t <= start:
            return
        r = self.rates
        while start < t:
            hour = int(start // HOUR)
            end = min(t, (hour + 1) * HOUR)
            dt = end - start
            self.installed.add(hour, r.installed * dt)
            self.ready.add(hour, r.ready * dt)
            self.allocated.add(hour, r.allocated * dt)
            self.unallocated.add(hour, r.unallocated * dt)
            self.queued.add(hour, r.queued * dt)
            if r.allocated_elsewhere:
                self.allocated_unavailable.add(hour, r.allocated_elsewhere * dt)
            if r.waiting:
                self.ready_while_waiting.add(hour, r.ready * dt)
                self.held_while_waiting.add(hour, (r.allocated + r.unallocated) * dt)
                if r.fits:
                    self.ready_while_fits.add(hour, r.ready * dt)
                    self.held_while_fits.add(hour, (r.allocated + r.unallocated) * dt)
            if r.busy_util_gpus:
                self.util.add(hour, r.busy_util * dt)
                self.util_gpus.add(hour, r.busy_util_gpus * dt)
            start = end
        self.at_s = t

    # Per team, the rates change far less often than anything else moves: each team's series
    # is integrated when its own rate changes (and at `flush`), not at every event.

    def delivered_change(self, leaf: BudgetPath, gpus: int) -> None:
        """The team's allocated GPUs running change by `gpus`, now (`at_s`)."""
        self._leaf_change(self.rates.delivered, self.delivered, leaf, gpus)

    def demand_change(self, leaf: BudgetPath, gpus: int) -> None:
        """The team's allocated demand changes by `gpus`, now (`at_s`)."""
        self._leaf_change(self.rates.demand, self.demand, leaf, gpus)

    def _leaf_change(
        self,
        rates: defaultdict[BudgetPath, int],
        series: defaultdict[BudgetPath, Series],
        leaf: BudgetPath,
        gpus: int,
    ) -> None:
        key = (id(rates), leaf)
        since = self._since.get(key, self.at_s)
        _integrate(series[leaf], rates[leaf], since, self.at_s)
        rates[leaf] += gpus
        self._since[key] = self.at_s

    def flush(self) -> None:
        """Every team's series integrated up to `at_s` (before the series are read)."""
        for rates, series in (
            (self.rates.delivered, self.delivered),
            (self.rates.demand, self.demand),
        ):
            for leaf in list(rates):
                self._leaf_change(rates, series, leaf, 0)


def _integrate(series: Series, rate: int, start: float, end: float) -> None:
    if not rate:
        return
    while start < end:
        hour = int(start // HOUR)
        stop = min(end, (hour + 1) * HOUR)
        series.add(hour, rate * (stop - start))
        start = stop
