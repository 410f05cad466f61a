"""The event pass: between full rounds, start queued work on GPUs that are free now or that
unallocated work holds, in the last full round's fair-share order (models/round.md, section 9).

It runs on the full round's own primitives: the `Load` the state carries, the placement
searches of `placement.py` (best fit, cheapest unallocated victims) and the priority swap of
invariant 6 (`repair.yield_to_priority`). It never rebalances allocated work, and it looks
only at what can have changed: work queued since the last pass, and the queued requests that
fit on hosts whose room grew (something ended there). Every other queued workload did not fit
after the last round or pass (each leaves no queued workload that fits free GPUs, nor allocated
work that fits GPUs unallocated work holds) and still does not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from types import MappingProxyType

import numpy as np

from alloc.domain import (
    Action,
    BudgetPath,
    Decision,
    HostName,
    Occupancy,
    Reason,
    WorkloadId,
)
from alloc.policy.contract import runtime_delta
from alloc.policy.weights import UNALLOCATED_PREEMPT_FIXED, UNALLOCATED_VALUE, Tier
from alloc.solve.carry import PassState, Queued
from alloc.solve.load import Load
from alloc.solve.placement import place_displacing
from alloc.solve.problem import Shape
from alloc.solve.repair import yield_to_priority
from alloc.solve.validate_event import check_pass

MAX_WALKS = 4  # victims may free more than their displacer takes: walk again (rarely needed)
_DISPLACE = (Tier.UNALLOCATED,)


@dataclass(frozen=True, slots=True)
class PassResult:
    """The decisions of one pass (only the workloads it changes) and the hosts it touched."""

    decisions: tuple[Decision, ...]
    drained_hosts: tuple[HostName, ...]
    touched: frozenset[int]  # hosts whose holders changed in this pass or since the last one
    metrics: dict[str, float]
    problems: tuple[str, ...]  # its decisions against the invariants (validate_event.check_pass)


def event_pass(state: PassState, now: datetime) -> PassResult:
    state.now = now
    state.refresh_tiers()
    load = state.load
    touched = set(state.grown)
    arrived = {wid for wid in state.new if wid in state.queued}  # first seen since the last
    candidates = _candidates(state)
    # What the pass consumes; what it leaves (work it displaces, the room of a reservation
    # that lapses) is the next pass's to look at.
    state.fresh.clear()
    state.grown.clear()
    state.new.clear()
    started: dict[WorkloadId, dict[int, int]] = {}
    preempted: list[WorkloadId] = []
    for _ in range(MAX_WALKS):
        changed, short = _walk(state, load, candidates, started, preempted)
        changed |= _priority(state, load, started)
        if state.grown:  # a gang started on its reservation: the rest of it is free to all
            touched |= state.grown
            candidates = sorted(set(candidates) | set(_candidates(state)), key=state.order_key)
            state.grown.clear()
            continue
        if not changed or not short:
            break
    decisions = _decisions(state, started, preempted, arrived)
    for placement in started.values():
        touched.update(placement)
    index = state.hosts.index
    for wid in preempted:
        touched.update(index[h] for h in state.view[wid].hosts)
    problems = tuple(check_pass(state, decisions, touched, arrived))
    _record(state, decisions)
    hosts = state.hosts
    names: tuple[HostName, ...] = ()
    if state.draining:  # draining hosts its last work has left: ready for repair or removal
        names = tuple(hosts.names[i] for i in np.flatnonzero(hosts.draining & (load.used == 0)))
    ready = state.ready_gpus
    allocated = state.held_gpus[Occupancy.ALLOCATED]
    unallocated = state.held_gpus[Occupancy.UNALLOCATED]
    metrics = {
        "occupancy": (allocated + unallocated) / ready if ready else 0.0,
        "allocated_occupancy": allocated / ready if ready else 0.0,
        "unallocated_occupancy": unallocated / ready if ready else 0.0,
        "ready_gpus": ready,
        "installed_gpus": state.installed_gpus,
    }
    return PassResult(decisions, names, frozenset(touched), metrics, problems)


def _candidates(state: PassState) -> list[WorkloadId]:
    """Work queued since the last pass, and the members of every queued request that may fit
    on a host whose room grew: free GPUs plus those unallocated work holds (which allocated
    work may displace; reserved hosts are left to the placement search)."""
    out = set(state.fresh)
    if state.grown:
        load = state.load
        free = load.free()
        unallocated = load.reclaim.get(Tier.UNALLOCATED)
        cap = state.hosts.cap
        grown = [h for h in state.grown if state.hosts.ready[h]]
        room = {
            h: int(free[h]) + (int(unallocated[h]) if unallocated is not None else 0) for h in grown
        }
        for members in state.by_request.values():
            if not members:
                continue
            shape = state.own_shape(state.queued[next(iter(members))])
            allowed = shape.allowed
            if shape.single:
                fits = any(allowed[h] and room[h] >= shape.gpus for h in grown)
            else:
                fits = any(allowed[h] and room[h] == cap[h] for h in grown)
            if fits:
                out.update(members)
    placeable = [wid for wid in out if state.queued[wid].placeable]
    placeable.sort(key=state.order_key)
    return placeable


def _walk(
    state: PassState,
    load: Load,
    candidates: list[WorkloadId],
    started: dict[WorkloadId, dict[int, int]],
    preempted: list[WorkloadId],
) -> tuple[bool, bool]:
    """Place each candidate in order; returns (anything changed, some candidate did not fit)."""
    # (shape, may displace) -> load version and the shape (kept: its id is not reused)
    failed: dict[tuple[int, bool], tuple[int, Shape]] = {}
    changed = short = False
    for wid in candidates:
        if wid in started:
            continue
        q = state.queued[wid]
        shape = state.shape(q)
        allocated = q.occupancy is Occupancy.ALLOCATED
        memo = (id(shape), allocated)
        if (f := failed.get(memo)) is not None and f[0] == load.version and f[1] is shape:
            short = True
            continue
        found = place_displacing(shape, load, _DISPLACE if allocated else ())
        if found is None:
            failed[memo] = (load.version, shape)
            short = True
            continue
        for v in found.victims:
            load.release(v)
            if v in started:
                del started[v]  # started earlier in this pass: it just does not start
            else:
                preempted.append(v)
        _hold(state, load, q, found.placement)
        started[wid] = found.placement
        state.lapse(wid)  # a gang that starts no longer holds its reservation's other hosts
        changed = True
    return changed, short


def _hold(state: PassState, load: Load, q: Queued, placement: dict[int, int]) -> None:
    if q.occupancy is Occupancy.ALLOCATED:
        load.hold(q.workload.id, placement)
    else:
        cost = q.workload.gpus * (UNALLOCATED_VALUE + UNALLOCATED_PREEMPT_FIXED)
        load.hold(q.workload.id, placement, Tier.UNALLOCATED, cost)


def _priority(state: PassState, load: Load, started: dict[WorkloadId, dict[int, int]]) -> bool:
    """Invariant 6 for this pass's starts: a start yields its place to a waiting workload of its
    node and occupancy class with higher priority that fits there."""
    groups: dict[tuple[BudgetPath | None, Occupancy], list[WorkloadId]] = {}
    for wid in started:
        q = state.queued[wid]
        groups.setdefault((q.workload.budget, q.occupancy), []).append(wid)
    changed = False
    for (budget, occupancy), starts in groups.items():
        lowest = min(state.queued[a].workload.priority for a in starts)
        waiting = sorted(  # in the order, as the repair's swap takes them
            (
                b
                for b in state.groups.get((budget, occupancy), ())
                if b not in started
                and state.queued[b].placeable
                and state.queued[b].workload.priority > lowest
            ),
            key=state.order_key,
        )
        if not waiting:
            continue
        members = waiting + starts
        priority = {w: state.queued[w].workload.priority for w in members}
        shapes = {w: state.shape(state.queued[w]) for w in members}

        def hold(load: Load, wid: WorkloadId, placement: dict[int, int]) -> None:
            _hold(state, load, state.queued[wid], placement)

        for yielded, placed in yield_to_priority(waiting, starts, priority, shapes, load, hold):
            del started[yielded]
            started[placed] = load.held[placed]
            changed = True
    return changed


_START_REASON = {
    Tier.ENTITLED: Reason.UNDER_ALLOCATION,
    Tier.OVER: Reason.OVER_ALLOCATION,
    Tier.UNALLOCATED: Reason.UNALLOCATED_FILL,
}


def _decisions(
    state: PassState,
    started: dict[WorkloadId, dict[int, int]],
    preempted: list[WorkloadId],
    arrived: set[WorkloadId],
) -> tuple[Decision, ...]:
    """Its starts and preemptions, and a wait for work queued since the last round that it
    leaves waiting (an executor holds it: nothing starts but what alloc starts)."""
    names = state.hosts.names
    now = state.now
    out = []
    for wid, placement in started.items():
        q = state.queued[wid]
        w = q.workload
        reason = _START_REASON[state.tier[wid]] if q.funded else Reason.UNFUNDED
        allocated = q.occupancy is Occupancy.ALLOCATED
        until = now + runtime_delta(w.min_runtime_s) if allocated else None
        hosts = {names[h]: g for h, g in sorted(placement.items())}
        lease = (
            state.reserved.backfill_for(wid, placement)
            if state.reserved is not None and allocated
            else ()
        )
        out.append(Decision(wid, Action.START, q.occupancy, reason, hosts, until, lease))
    for wid in preempted:
        out.append(
            Decision(wid, Action.PREEMPT, Occupancy.UNALLOCATED, Reason.UNALLOCATED_DISPLACED)
        )
    for wid in sorted(arrived):
        if wid not in started:
            q = state.queued[wid]
            out.append(Decision(wid, Action.WAIT, q.occupancy, _wait_reason(state, q)))
    return tuple(out)


def _wait_reason(state: PassState, q: Queued) -> Reason:
    """Why a pass leaves new work waiting, as a full round would say it (alloc.solve.decisions):
    no place of the cluster can ever hold it; its GPUs would take a node on its path beyond
    the entitlement of the last full round (its tier, `PassState.refresh_tiers`); or it is
    entitled and the GPUs are not there (a place held by others waits for a full round)."""
    if not q.placeable:
        return Reason.TOO_LARGE
    wid = q.workload.id
    if (
        q.occupancy is Occupancy.ALLOCATED
        and state.tier.get(wid) is Tier.OVER
        and wid not in state.unranked
    ):
        return Reason.OVER_ALLOCATION
    return Reason.NO_ROOM


def _record(state: PassState, decisions: tuple[Decision, ...]) -> None:
    """The state as the plan leaves it, until `sync` says what the cluster did: starts run
    where planned, preempted work is queued again."""
    load = state.load
    changed = []
    for d in decisions:
        if d.action is Action.WAIT:
            continue
        w = state.view[d.workload]
        if d.action is Action.START:
            load.release(d.workload)  # held by the pass: `sync` holds it as running
            changed.append(
                replace(
                    w,
                    started=state.now,
                    hosts=MappingProxyType(dict(d.hosts)),
                    backfill_for=d.backfill_for,
                )
            )
        else:
            load.hold(d.workload, {state.hosts.index[h]: g for h, g in w.hosts.items()})
            changed.append(replace(w, started=None, hosts=MappingProxyType({}), backfill_for=()))
    state.sync(changed)
    state.decided(decisions)
