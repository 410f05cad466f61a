"""The controller's Prometheus metrics (`/metrics`): SPEC's pyramid as it happens, round by
round, and the health of the controller itself.

- availability: `alloc_ready_gpus` / `alloc_installed_gpus`;
- occupancy: `alloc_held_gpus{occupancy="allocated"|"unallocated"}` over ready GPUs;
- impact, per budget node: `alloc_delivered_gpu_seconds_total`, `alloc_owed_gpu_seconds_total`
  (owed = effective allocation x ready GPUs, capped at the node's demand; integrated between
  rounds at each round's rates) and the delivered time credited against it as SPEC's impact
  metric does: over the window (`alloc_delivered_within_owed_gpu_seconds_total`: consecutive
  lookback periods from the controller's first round, each crediting min(delivered, owed) in
  it) and hour by hour (`..._hourly_gpu_seconds_total`); `alloc_delivered_over_owed` and
  `alloc_delivered_over_owed_hourly` are those credits over what was owed since the controller
  started (a credit of the current period only grows, so the counters never go down);
  `alloc_wait_seconds{class}` at each start (debug, small, large, unallocated);
- utilization is not known to the controller (the cluster manager reports it, if at all);
- the controller: `alloc_round_seconds` (histogram), `alloc_rounds_total{status}` (optimal,
  feasible, fallback, greedy, event, failed), `alloc_fallbacks_total` (rounds in which the MILP
  failed and the greedy answered; not rounds of a controller told to use the greedy),
  `alloc_starts_total`, `alloc_preemptions_total{reason}`, `alloc_action_failures_total`,
  `alloc_drains_total`, `alloc_executor_errors_total{kind}` (failed attempts of calls to the
  cluster manager: failed, timeout, unparsable; each attempt counts, retried or not); which
  controller leads: `alloc_controller_leader{controller}` (1 while this one holds the leader
  lease, else 0) and `alloc_controller_epoch{controller}` (the lease's epoch it holds, or the
  latest it has seen).
"""

from __future__ import annotations

import math
from collections import defaultdict

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from alloc.controller.lease import Lease
from alloc.controller.loop import RoundOutcome
from alloc.domain import Action, BudgetPath, Plan, Snapshot, path_prefixes
from alloc.domain.snapshot import HOUR_S
from alloc.metrics.pyramid import wait_class
from alloc.policy.contract import allocated_in


def impact_rates(snapshot: Snapshot, plan: Plan) -> dict[BudgetPath, tuple[float, float]]:
    """(delivered, owed) GPUs per budget node after the plan: delivered = GPUs its allocated
    work holds, owed = effective allocation x ready GPUs, capped at its allocated demand."""
    tree = snapshot.budgets
    held: defaultdict[BudgetPath, float] = defaultdict(float)
    demand: defaultdict[BudgetPath, float] = defaultdict(float)
    for w in snapshot.workloads:
        if not w.budget or not allocated_in(tree, w):
            continue
        holds = plan.decision(w.id).action in (Action.START, Action.KEEP)
        for p in path_prefixes(w.budget):
            demand[p] += w.gpus
            held[p] += w.gpus if holds else 0.0
    ready = float(plan.metrics.get("ready_gpus", snapshot.cluster.ready_gpus))
    return {
        p: (held[p], min(tree.effective_allocation(p) * ready, demand[p]))
        for p in tree.paths()
        if p
    }


class Credit:
    """Delivered GPU-seconds credited up to what was owed, period by period: consecutive
    periods of `period_s` from `origin_s`, each crediting min(delivered in it, owed in it)."""

    def __init__(self, origin_s: float, period_s: float) -> None:
        self.origin_s, self.period_s = origin_s, period_s
        self.index = 0  # the open period
        self.closed = 0.0  # credit of the periods before it
        self.delivered = self.owed = 0.0  # of the open period

    def add(self, t0: float, t1: float, delivered: float, owed: float) -> None:
        """Rates (GPUs) held from t0 to t1, split at the periods' boundaries."""
        while t0 < t1:
            k = max(self.index, int((t0 - self.origin_s) // self.period_s))
            end = self.origin_s + (k + 1) * self.period_s
            if end <= t0:  # rounding put t0 on the boundary: it opens the next period
                k, end = k + 1, end + self.period_s
            if k != self.index:
                self.closed += min(self.delivered, self.owed)
                self.index, self.delivered, self.owed = k, 0.0, 0.0
            end = min(end, t1)
            self.delivered += delivered * (end - t0)
            self.owed += owed * (end - t0)
            t0 = end

    @property
    def credited(self) -> float:
        return self.closed + min(self.delivered, self.owed)


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        r = self.registry = registry or CollectorRegistry()
        self.round_seconds = Histogram(
            "alloc_round_seconds",
            "Seconds of a whole round (snapshot, solve, apply, record)",
            buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
            registry=r,
        )
        self.rounds = Counter("alloc_rounds", "Rounds by solver status", ["status"], registry=r)
        self.fallbacks = Counter(
            "alloc_fallbacks",
            "Rounds in which the MILP failed and the greedy fallback answered",
            registry=r,
        )
        self.starts = Counter("alloc_starts", "Workloads started", registry=r)
        self.preemptions = Counter(
            "alloc_preemptions", "Workloads preempted", ["reason"], registry=r
        )
        self.action_failures = Counter(
            "alloc_action_failures", "Actions the cluster refused", registry=r
        )
        self.drains = Counter("alloc_drains", "Drained hosts handed over", registry=r)
        self.executor_errors = Counter(
            "alloc_executor_errors",
            "Failed attempts of calls to the cluster manager (failed, timeout, unparsable)",
            ["kind"],
            registry=r,
        )
        self.installed = Gauge("alloc_installed_gpus", "GPUs installed", registry=r)
        self.ready = Gauge("alloc_ready_gpus", "GPUs on ready hosts", registry=r)
        self.held = Gauge(
            "alloc_held_gpus", "GPUs held by work on ready hosts", ["occupancy"], registry=r
        )
        self.delivered = Counter(
            "alloc_delivered_gpu_seconds",
            "Allocated GPU-seconds a budget node's work held",
            ["budget"],
            registry=r,
        )
        self.owed = Counter(
            "alloc_owed_gpu_seconds", "GPU-seconds a budget node was owed", ["budget"], registry=r
        )
        self.within = Counter(
            "alloc_delivered_within_owed_gpu_seconds",
            "Delivered GPU-seconds up to what was owed in each lookback period",
            ["budget"],
            registry=r,
        )
        self.within_hourly = Counter(
            "alloc_delivered_within_owed_hourly_gpu_seconds",
            "Delivered GPU-seconds up to what was owed in each hour",
            ["budget"],
            registry=r,
        )
        self.ratio = Gauge(
            "alloc_delivered_over_owed",
            "Delivered within owed over the window / owed since the controller started",
            ["budget"],
            registry=r,
        )
        self.ratio_hourly = Gauge(
            "alloc_delivered_over_owed_hourly",
            "Delivered within owed hour by hour / owed since the controller started",
            ["budget"],
            registry=r,
        )
        self.waits = Histogram(
            "alloc_wait_seconds",
            "Wait from submission to start, by class",
            ["class"],
            buckets=(10, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 86400, 3 * 86400, 7 * 86400),
            registry=r,
        )
        self.leader = Gauge(
            "alloc_controller_leader",
            "1 while this controller holds the leader lease (it acts), 0 as a standby",
            ["controller"],
            registry=r,
        )
        self.epoch = Gauge(
            "alloc_controller_epoch",
            "The leader lease's epoch held, or the latest seen",
            ["controller"],
            registry=r,
        )
        self._last: tuple[float, dict[BudgetPath, tuple[float, float]]] | None = None
        self._origin_s: float | None = None  # the first round: the periods count from it
        self._lookback_s = HOUR_S
        self._owed: defaultdict[BudgetPath, float] = defaultdict(float)
        self._credit: dict[BudgetPath, tuple[Credit, Credit]] = {}  # window, hourly

    def watch(self, lease: Lease) -> None:
        """The leader gauges read the lease whenever /metrics is scraped."""
        self.leader.labels(lease.holder).set_function(lambda: float(lease.held))
        self.epoch.labels(lease.holder).set_function(lambda: float(lease.epoch or lease.seen))

    def observe(self, outcome: RoundOutcome) -> None:
        self.round_seconds.observe(outcome.seconds)
        for fault in outcome.faults:
            self.executor_errors.labels(fault.kind.value).inc()
        plan, snapshot = outcome.plan, outcome.snapshot
        if outcome.error or plan is None or snapshot is None:
            self.rounds.labels("failed").inc()
            return
        self.rounds.labels(plan.report.status).inc()
        if plan.report.status == "fallback":  # the MILP's failure, not the greedy asked for
            self.fallbacks.inc()
        self.starts.inc(outcome.started)
        self.action_failures.inc(outcome.failed)
        report = outcome.report
        done = [r for r in report.results if r.ok and r.changed] if report else []
        self.drains.inc(sum(h.ok and h.changed for h in report.hosts) if report else 0)
        for r in done:  # what the cluster did, not what the plan said again
            d = plan.decision(r.workload)
            if r.action is Action.PREEMPT:
                self.preemptions.labels(d.reason.value).inc()
            elif r.action is Action.START:
                w = snapshot.by_id[r.workload]
                cls = wait_class(w.gpus, w.min_runtime_s, allocated_in(snapshot.budgets, w))
                self.waits.labels(cls).observe((snapshot.now - w.submitted).total_seconds())
        m = plan.metrics
        ready = float(m.get("ready_gpus", 0.0))
        self.installed.set(float(m.get("installed_gpus", 0.0)))
        self.ready.set(ready)
        self.held.labels("allocated").set(float(m.get("allocated_occupancy", 0.0)) * ready)
        self.held.labels("unallocated").set(float(m.get("unallocated_occupancy", 0.0)) * ready)
        if self._origin_s is None:
            self._origin_s, self._lookback_s = outcome.at_s, snapshot.policy.lookback_s
        self._integrate(outcome.at_s, impact_rates(snapshot, plan))

    def _integrate(self, now_s: float, rates: dict[BudgetPath, tuple[float, float]]) -> None:
        """The previous round's rates held until this round."""
        if self._last is not None:
            then, before = self._last
            now_s = max(now_s, then)
            for p, (delivered, owed) in before.items():
                credits = self._credit.get(p)
                if credits is None:
                    origin = self._origin_s if self._origin_s is not None else then
                    credits = Credit(origin, self._lookback_s), Credit(origin, HOUR_S)
                    self._credit[p] = credits
                was = [c.credited for c in credits]
                for c in credits:
                    c.add(then, now_s, delivered, owed)
                self.delivered.labels(p).inc(delivered * (now_s - then))
                self.owed.labels(p).inc(owed * (now_s - then))
                self._owed[p] += owed * (now_s - then)
                window, hourly = credits
                self.within.labels(p).inc(window.credited - was[0])
                self.within_hourly.labels(p).inc(hourly.credited - was[1])
                # NaN while nothing was owed (as metrics.json's null): not 100% of nothing
                owed_s = self._owed[p]
                self.ratio.labels(p).set(window.credited / owed_s if owed_s > 0 else math.nan)
                self.ratio_hourly.labels(p).set(
                    hourly.credited / owed_s if owed_s > 0 else math.nan
                )
        self._last = (now_s, rates)

    def serve(self, port: int, address: str = "127.0.0.1") -> None:
        """/metrics over HTTP (a daemon thread); nothing else is served."""
        start_http_server(port, address, registry=self.registry)
