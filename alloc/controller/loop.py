"""The controller: every round it reads the cluster, decides with the same round function as
the simulator, records the plan, acts, and records what happened (alloc/controller/state.py).

Two kinds of rounds, as in the simulator (models/round.md 9, `alloc.rounds`): a full round
every `interval_s` (and whenever the cluster's hosts, the budget tree or the policy are not
those of the last full round), and between them an event pass when the executor's
`changes()` fingerprint moves (a job submitted or ended): it starts what fits, never
rebalances, and records only what it decides. Every plan of either kind is validated whole
against the cluster it was made for before anything of it is applied.

One round, in an order that keeps the state consistent whenever the process dies:
1. snapshot from the executor; the ledger records what it sees running and what the cluster
   reports ended (keyed writes: repeating them changes nothing);
2. the fair-share usage of the window comes from that ledger;
3. the plan is solved, validated and recorded with every decision (write-ahead);
4. the executor applies it (idempotent against the cluster: a job already started is not
   started again); runs alloc stopped are closed at the time it stopped them;
5. the outcome of every action is recorded and the round marked applied.
A crash between 3 and 5 leaves a round recorded but not applied; the next round starts from a
fresh snapshot, so nothing is started twice.

Executor faults: each call to the cluster manager has a timeout and is tried again with backoff
by the executor; every failed attempt (failed, timeout, unparsable) comes back in the round's
outcome, is logged, recorded (alloc.controller.faults: `alloc status`) and counted
(`alloc_executor_errors_total{kind}`). A call that still fails ends the round with the error
recorded if the round needed its answer (reading the cluster), or fails its action, reported
with how far it got, if it was acting. Either way nothing is assumed of it: the next round is
a full round, after a backoff that doubles up to the interval, that reads the cluster again
and plans from what it shows; the ledger opens runs only for work the cluster shows running,
and closes a preempted run at the time alloc stopped it only when the preemption went
through. The state is never left half-written (every write is one transaction).

With a leader lease (alloc.controller.lease, models/failover.md), rounds run only while this
controller holds it: a standby tries to take it every quarter of its duration, a leader that
loses it stops at once (every write of its round is refused, and before the executor acts the
lease is confirmed and the executor handed its epoch) and becomes a standby; a controller that
takes it begins with a full round on fresh state.

Intervals, polls and the times recorded are the `clock`'s: the wall clock beside a real
cluster, or a simulated cluster's own clock (alloc.sim.clock), on which waiting takes no time:
a dry run of this same loop (`alloc controller run --clock simulated`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from alloc.adapters.base import (
    ApplyReport,
    ClusterError,
    Executor,
    ExecutorFault,
    Fenced,
    Guarded,
)
from alloc.controller.build import controller_view
from alloc.controller.faults import record_faults
from alloc.controller.lease import Lease
from alloc.controller.state import Run, StateStore
from alloc.domain import Action, BudgetTree, Plan, Snapshot
from alloc.policy.contract import allocated_in
from alloc.rounds import Rounds
from alloc.sim.clock import Clock, WallClock
from alloc.solve.validate import validate

log = logging.getLogger("alloc.controller")


@dataclass
class RoundOutcome:
    at_s: float
    round_id: int | None = None
    plan: Plan | None = None  # whole: an event pass's decisions and every other workload's state
    snapshot: Snapshot | None = None  # what the round saw (with the ledger's usage)
    report: ApplyReport | None = None  # what the executor did
    kind: str = "full"  # full round | event pass
    started: int = 0  # actions that changed the cluster (not "already running")
    preempted: int = 0
    failed: int = 0
    seconds: float = 0.0
    error: str = ""
    faults: tuple[ExecutorFault, ...] = ()  # failed attempts of calls to the cluster manager

    def line(self) -> str:
        """This round in one line, on either clock (a dry run prefixes the simulated time):
        `round 3: full round, 2 started, 0 preempted, 0 failed; optimal; 0.24 s`, then the
        failed calls to the cluster if any; `round failed: sinfo --json: ...; 6 failed calls
        to the cluster` for a round that failed."""
        faults = f"; {len(self.faults):,} failed calls to the cluster" if self.faults else ""
        if self.error:
            return f"round failed: {self.error}{faults}"
        kind = "full round" if self.kind == "full" else "event pass"
        status = self.plan.report.status if self.plan else "-"
        return (
            f"round {self.round_id or '-'}: {kind}, {self.started:,} started, "
            f"{self.preempted:,} preempted, {self.failed:,} failed; {status}; "
            f"{self.seconds:.2f} s{faults}"
        )

    @property
    def troubled(self) -> bool:
        """The round failed, an action failed or a call had to be tried again: the next
        round is a full one, after a backoff."""
        return bool(self.error or self.failed or self.faults)


def _failure(exc: Exception) -> str:
    """Why a round failed: a cluster's error as it says itself (`sinfo --json: no answer
    within 10 s`, naming its command); anything else with its class (`NotLeader: ...`)."""
    if isinstance(exc, ClusterError) and str(exc):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


@dataclass
class Controller:
    executor: Executor
    store: StateStore
    interval_s: float = 60.0
    budgets: BudgetTree | None = None  # the config's tree (shares changed since: the store's)
    event_poll_s: float = 0.0  # look for changes this often between rounds (0: periodic only)
    min_round_gap_s: float = 10.0  # an event round comes at least this long after the last
    clock: Clock = field(default_factory=WallClock)
    history: list[RoundOutcome] = field(default_factory=list)
    # The state event passes carry from the last full round (validated whole every pass).
    rounds: Rounds = field(default_factory=lambda: Rounds(validate_whole=True))
    _baseline: str | None = None  # the change fingerprint as the last round began
    lease: Lease | None = None  # rounds only while it is held (None: a controller alone)

    def round_once(self, event: bool = False) -> RoundOutcome:
        """One round: an event pass if `event` and the last full round's state still fits the
        cluster, else a full round."""
        # What the cluster looked like as the round began: a change while it runs (a job
        # submitted meanwhile) calls for the next pass (the round's own actions do too).
        self._baseline = self._changes() if self.event_poll_s > 0 else None
        began = time.perf_counter()
        try:
            outcome = self._round(event)
        except Exception as exc:  # noqa: BLE001 - any executor failure ends only this round
            # Said once, by the round's line (on_round); a warning too printed it twice. The
            # traceback is kept for a debug log.
            log.debug("round failed", exc_info=True)
            outcome = RoundOutcome(self.clock.now(), error=_failure(exc))
        outcome.seconds = time.perf_counter() - began
        outcome.faults = self._faults(outcome)
        self.history.append(outcome)
        del self.history[:-100]
        return outcome

    def _round(self, event: bool) -> RoundOutcome:
        # The controller's budget tree first (charges follow it), then this round's sightings,
        # then the window's usage including them.
        snapshot = controller_view(self.executor.snapshot(), self.store, self.budgets)
        now_s = snapshot.now.timestamp()
        self._observe(snapshot, now_s)
        snapshot = controller_view(snapshot, self.store)
        rounds = self.rounds
        if event and rounds.fits_snapshot(snapshot):
            rounds.sync_snapshot(snapshot)
            plan = rounds.event(snapshot.now, snapshot)  # validated whole inside
        else:
            plan = rounds.full(snapshot).plan
            problems = validate(snapshot, plan)
            if problems:  # the round validates: a bug, and nothing of the plan is applied
                raise AssertionError(f"the round's plan breaks the contract: {problems[:3]}")
        round_id = self.store.record_plan(now_s, plan)
        report = self._apply(plan)
        done = [r for r in report.results if r.ok and r.changed]
        rounds.applied(
            (r.workload for r in done if r.action is Action.START),
            (r.workload for r in done if r.action is Action.PREEMPT),
        )
        stopped_s = self.clock.now()
        for result in report.results:
            if result.ok and result.changed and result.action is Action.PREEMPT:
                w = snapshot.by_id.get(result.workload)
                if w is not None and w.started is not None:
                    at = result.at.timestamp() if result.at is not None else stopped_s
                    self.store.close_run(w.id, w.started.timestamp(), at)
        self.store.record_apply(round_id, stopped_s, report)
        return RoundOutcome(
            now_s,
            round_id,
            self.rounds.whole(plan, snapshot),  # a pass's whole plan: metrics, reports
            snapshot,
            report,
            kind=plan.kind,
            started=sum(r.ok and r.changed and r.action is Action.START for r in report.results),
            preempted=sum(
                r.ok and r.changed and r.action is Action.PREEMPT for r in report.results
            ),
            failed=len(report.failed) + len(report.failed_hosts),
        )

    def _faults(self, outcome: RoundOutcome) -> tuple[ExecutorFault, ...]:
        """The executor's faults of this round (and of the change polls before it), recorded."""
        faults: tuple[ExecutorFault, ...] = ()
        try:
            faults = tuple(self.executor.faults())
            if faults:
                gave_up = sum(f.gave_up for f in faults)
                log.warning(
                    "%d failed attempts of calls to the cluster, %d given up", len(faults), gave_up
                )
                record_faults(self.store, outcome.at_s, outcome.round_id, faults)
        except Exception as exc:  # noqa: BLE001 - a state store down fails the next round
            log.warning("cannot record the executor's faults: %s", exc)
        return faults

    def _apply(self, plan: Plan) -> ApplyReport:
        """The executor acts: under a lease, only once it is confirmed, with its epoch."""
        if self.lease is None:
            return self.executor.apply(plan)
        epoch = self.lease.confirm()  # NotLeader: nothing of the plan is applied
        if isinstance(self.executor, Fenced):
            return self.executor.apply_fenced(plan, self.lease.holder, epoch)
        if isinstance(self.executor, Guarded):  # NotLeader between two actions: the rest waits
            return self.executor.apply_guarded(plan, self.lease.check)
        return self.executor.apply(plan)

    def _observe(self, snapshot: Snapshot, now_s: float) -> None:
        running = [
            Run(w.id, w.started.timestamp(), w.budget, w.gpus, allocated_in(snapshot.budgets, w))
            for w in snapshot.workloads
            if w.started is not None
        ]
        ended = [
            Run(e.workload, e.started.timestamp(), e.budget, e.gpus, e.charged, e.ended.timestamp())
            for e in self.executor.ended_runs()
        ]
        self.store.observe(now_s, running, ended)

    def run(
        self,
        stop: threading.Event | None = None,
        rounds: int | None = None,
        on_round: Callable[[RoundOutcome], None] | None = None,
    ) -> None:
        """A full round every `interval_s` and event passes between them, until `stop` is
        set (or `rounds` rounds of either kind have run); after a troubled round (it
        failed, an action failed, a call was tried again) the next one is a full round, after
        a wait that doubles, up to the interval, from 1 s."""
        stop = stop or threading.Event()
        backoff = 1.0
        done = 0
        event = False
        clock = self.clock
        next_full = clock.monotonic()
        while not stop.is_set() and (rounds is None or done < rounds):
            if self.lease is not None and not self.lease.held:
                if not self._standby(stop):
                    break
                event, backoff = False, 1.0
            outcome = self.round_once(event)
            if on_round is not None:
                on_round(outcome)
            done += 1
            if self.lease is not None and not self.lease.held:
                continue  # lost: a standby from now on
            if outcome.troubled:
                next_full = clock.monotonic() + min(backoff, self.interval_s)
                backoff *= 2
            else:
                backoff = 1.0
                if outcome.kind == "full":
                    next_full = clock.monotonic() + self.interval_s
            if rounds is not None and done >= rounds:
                break
            wait = max(0.0, next_full - clock.monotonic())
            event = self._wait(stop, wait, not outcome.troubled)

    def _standby(self, stop: threading.Event) -> bool:
        """Until this controller takes the lease (True: its rounds start afresh, with a full
        round) or `stop` is set (False). The lease's time is real whatever the clock."""
        lease = self.lease
        assert lease is not None
        while not lease.acquire():
            if stop.wait(lease.retry_s):
                return False
        self.rounds = Rounds(validate_whole=True)
        return True

    def _wait(self, stop: threading.Event, wait_s: float, events: bool) -> bool:
        """Until the next periodic round (False), or an event (True): the cluster's
        fingerprint changed (a job arrived or ended, a host changed), at least
        `min_round_gap_s` after the last round (events coalesce) and before the periodic
        round is due (which then decides everything a pass would)."""
        clock = self.clock
        began = clock.monotonic()
        last = self._baseline if events and self.event_poll_s > 0 else None
        while not stop.is_set():
            elapsed = clock.monotonic() - began
            left = wait_s - elapsed
            if left <= 0:
                return False
            if last is None:  # periodic rounds only
                clock.wait(stop, left)
                return False
            if clock.wait(stop, min(left, max(self.event_poll_s, self.min_round_gap_s - elapsed))):
                return False
            elapsed = clock.monotonic() - began
            if elapsed >= wait_s:  # the periodic round is due: it takes the place of a pass
                return False
            if elapsed >= self.min_round_gap_s:
                now = self._changes()
                if now is not None and now != last:
                    log.info("event pass")
                    return True
        return False

    def _changes(self) -> str | None:
        try:
            return self.executor.changes()
        except Exception as exc:  # noqa: BLE001 - the next round reports the cluster's state
            log.warning("cannot read the cluster's changes: %s", exc)
            return None
