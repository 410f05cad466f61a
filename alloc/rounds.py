"""The two kinds of rounds over one cluster (models/round.md, section 9), as the simulator and
the controller drive them: a full round (`solve_round`) on the clock and when hosts change, and
between full rounds cheap event passes on what the cluster did (arrivals, completions,
requeues), from the state the last full round left (`alloc/solve/carry.py`).

The caller tells the state what changed (`sync`: workloads queued or running now, where, and
workloads gone), then asks for a pass; a pass's plan lists only the workloads it changes and is
checked against every invariant on those decisions (with `validate_whole`, its whole plan is
checked from scratch as well: tests and CI). Nothing here reads a clock or does I/O.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from alloc.domain import (
    Action,
    Cluster,
    Decision,
    Occupancy,
    Plan,
    Reason,
    Reservation,
    Snapshot,
    SolverReport,
    Workload,
    WorkloadId,
)
from alloc.policy.contract import standings
from alloc.round import InvalidPlanError, RoundOptions, RoundResult, solve_round
from alloc.solve.carry import PassState
from alloc.solve.event import event_pass
from alloc.solve.memo import RoundMemo
from alloc.solve.reserve import Held
from alloc.solve.validate import validate

__all__ = ["ROUND_KINDS", "Rounds"]

ROUND_KINDS = ("events", "full")  # event passes between full rounds | a full round every time


@dataclass
class Rounds:
    options: RoundOptions | None = None
    validate_whole: bool = False  # also validate every pass's whole plan from scratch
    state: PassState | None = None
    memo: RoundMemo = field(default_factory=RoundMemo)  # what one full round leaves the next
    _named: tuple[list[Held], tuple[Reservation, ...]] | None = None
    _inflight: dict[WorkloadId, bool] = field(default_factory=dict)  # started: True

    def full(self, snapshot: Snapshot, synced: bool = False) -> RoundResult:
        """A full round; what it leaves is the state the next passes start from. `synced`: the
        caller has told the state everything up to `snapshot` (the simulator does), so the
        state is rebased on the round instead of built anew (the same state, cheaper)."""
        result = solve_round(snapshot, self.options, self.memo)
        self._inflight.clear()  # the round decided from what the cluster showed
        ctx, load, decisions = result.context, result.load, result.plan.decisions
        if synced and self.state is not None and self.state.cluster is snapshot.cluster:
            self.state.rebase(ctx, load, decisions)
        else:
            self.state = PassState(ctx, load, decisions)
        return result

    @property
    def ready(self) -> bool:
        """A full round has run: passes may follow."""
        return self.state is not None

    def fits_snapshot(self, snapshot: Snapshot) -> bool:
        """Passes may follow on this snapshot: its hosts (with their states), budget tree and
        policy are those of the last full round (compared by value: a controller reads a new
        snapshot every time)."""
        state = self.state
        return (
            state is not None
            and (state.cluster is snapshot.cluster or state.cluster == snapshot.cluster)
            and (state.budgets is snapshot.budgets or state.budgets == snapshot.budgets)
            and state.policy == snapshot.policy
            and (state.drain_due is None or snapshot.now < state.drain_due)
        )

    def fits(self, cluster: Cluster, now: datetime | None = None) -> bool:
        """Passes may follow on this cluster: a full round has run on it (a host that changed
        state makes a new cluster value, and the state of the last round stale), and no
        protection on a draining host has ended since (`now`, when given)."""
        state = self.state
        return (
            state is not None
            and state.cluster is cluster
            and (now is None or state.drain_due is None or now < state.drain_due)
        )

    def applied(self, started: Iterable[WorkloadId], preempted: Iterable[WorkloadId]) -> None:
        """What the executor says it did with the last plan (the controller's path): until the
        cluster shows it, a start stays running and a preemption stays stopped in the state, so
        that a pass soon after does not undo them (a released job Slurm has not started yet,
        a requeued one still completing)."""
        self._inflight.update(dict.fromkeys(started, True))
        self._inflight.update(dict.fromkeys(preempted, False))

    def sync(self, changed: Iterable[Workload], gone: Iterable[WorkloadId] = ()) -> None:
        assert self.state is not None, "a full round comes first"
        self.state.sync(changed, gone)

    def sync_snapshot(self, snapshot: Snapshot) -> None:
        """What changed between the state's view and `snapshot` (the controller's path: it
        reads the whole cluster every time anyway)."""
        assert self.state is not None, "a full round comes first"
        view = self.state.view
        by_id = snapshot.by_id
        inflight = self._inflight
        changed = []
        for w in snapshot.workloads:
            if view.get(w.id) == w:
                inflight.pop(w.id, None)
                continue
            started = inflight.get(w.id)
            if started is not None and w.running != started:
                continue  # the cluster has not caught up with the last plan yet
            inflight.pop(w.id, None)
            changed.append(w)
        gone = [wid for wid in view if wid not in by_id]
        for wid in gone:
            inflight.pop(wid, None)
        self.state.sync(changed, gone)

    def reservations(self) -> tuple[Reservation, ...]:
        """The last full round's reservations still in force (their gangs still wait)."""
        if self.state is None:
            return ()
        held = self.state.reservations
        if self._named is not None and self._named[0] is held:
            return self._named[1]  # unchanged since asked (a pass rarely changes them)
        names = self.state.hosts.names
        named = tuple(
            Reservation(r.workload, tuple(names[h] for h in r.hosts), r.ready_at) for r in held
        )
        self._named = (held, named)
        return named

    def event(self, now: datetime, whole: Snapshot | None = None) -> Plan:
        """An event pass at `now`; `whole`: the cluster's snapshot, to validate the pass's whole
        plan against (required with `validate_whole`)."""
        assert self.state is not None, "a full round comes first"
        began = time.perf_counter()
        held = tuple(self.state.reservations)
        result = event_pass(self.state, now)
        # In force after the pass: a gang it started no longer holds its hosts.
        reservations = self.reservations()
        report = SolverReport("event", "event", 0.0, None, None, time.perf_counter() - began)
        metrics = dict(result.metrics)
        metrics["round_seconds"] = time.perf_counter() - began
        plan = Plan(
            now,
            report,
            result.decisions,
            result.drained_hosts,
            metrics,
            reservations,
            kind="event",
        )
        problems = list(result.problems)
        if self.validate_whole:
            assert whole is not None, "validate_whole needs the snapshot the pass decided on"
            problems += validate(whole, self.whole(plan, whole), due=held)
        if problems:
            raise InvalidPlanError(problems)
        return plan

    def whole(self, plan: Plan, snapshot: Snapshot) -> Plan:
        """A pass's plan with a decision for every workload of `snapshot` (the one it decided
        on): what it does not change keeps running or keeps waiting, with the reason the last
        round that decided it gave."""
        if plan.kind != "event":
            return plan
        assert self.state is not None
        state = self.state
        st = standings(snapshot)
        out: list[Decision] = []
        for w in snapshot.workloads:
            d = plan.by_workload.get(w.id)
            if d is not None:
                out.append(d)
                continue
            s = st[w.id]
            if w.running:
                if s.forced is Action.KEEP:
                    reason = s.forced_reason or Reason.PROTECTED
                elif not s.funded:
                    reason = Reason.UNFUNDED
                elif s.occupancy is Occupancy.UNALLOCATED:
                    reason = Reason.UNALLOCATED_FILL
                else:
                    reason = state.last_reason(w.id, Reason.UNDER_ALLOCATION)
                    if reason not in _HOLDING or reason is Reason.PROTECTED:
                        reason = Reason.UNDER_ALLOCATION  # its protection has ended since
                until = s.protected_until
                out.append(Decision(w.id, Action.KEEP, s.occupancy, reason, w.hosts, until))
            else:
                reason = state.last_reason(w.id, Reason.NO_ROOM)
                if reason in _HOLDING:
                    reason = Reason.NO_ROOM
                out.append(Decision(w.id, Action.WAIT, s.occupancy, reason))
        return Plan(
            plan.now,
            plan.report,
            tuple(out),
            plan.drained_hosts,
            plan.metrics,
            plan.reservations,
            kind="event",
        )


_HOLDING = frozenset(
    {
        Reason.UNDER_ALLOCATION,
        Reason.OVER_ALLOCATION,
        Reason.PROTECTED,
        Reason.COSTLY_TO_STOP,
        Reason.UNALLOCATED_FILL,
        Reason.UNFUNDED,
    }
)
