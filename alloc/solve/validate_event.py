"""An event pass's decisions checked against every invariant of SPEC.md (models/round.md 9.4).

A pass decides only what changed, and it is checked the same way: each of its decisions
against the contract (recomputed from the workload, as `validate` does), and the invariants
that span decisions on the hosts where something changed since the last round or pass
(everywhere else the last round's validation still holds): capacity (1), shapes (2), no
protected or allocated work preempted (3), unallocated work holding no GPUs a waiting
allocated workload could use (4, reserved hosts aside), no start ahead of a waiting
higher-priority workload of its node that fits in its place (6). `validate` checks a pass's
whole plan from scratch when asked (`Rounds(validate_whole=True)`: tests and CI).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator

import numpy as np

from alloc.domain import Action, Decision, Occupancy, Snapshot, WorkloadId
from alloc.policy.contract import standing
from alloc.policy.weights import Tier
from alloc.readable import counted
from alloc.solve.carry import PassState, Queued
from alloc.solve.placement import PlaceIndex, place
from alloc.solve.validate import decision_problems


def check_pass(
    state: PassState,
    decisions: tuple[Decision, ...],
    touched: Iterable[int],
    arrived: Collection[WorkloadId],
) -> list[str]:
    """`state` as the pass leaves it before recording (its starts held, its victims released);
    `touched`: hosts whose holders changed since the last round or pass; `arrived`: work the
    state first saw since then (the only waits a pass lists)."""
    problems: list[str] = []
    view, hosts, load = state.view, state.hosts, state.load
    unknown = [d.workload for d in decisions if d.workload not in view]
    problems += [f"{w}: decision for an unknown workload (plan format)" for w in unknown]
    decided = [view[d.workload] for d in decisions if d.workload in view]
    if len({w.id for w in decided}) != len(decided):
        problems.append("a workload has more than one decision (plan format)")
    # The contract recomputed for each decided workload, as `validate` does.
    at = Snapshot(state.now, state.policy, state.cluster, state.budgets, {}, ())
    max_rt = state.policy.max_min_runtime_s
    for d in decisions:
        w = view.get(d.workload)
        if w is None:
            continue
        s = standing(at, w)
        mini = at
        problems += decision_problems(mini, hosts, w, d, s, max_rt)
        if d.action is Action.PREEMPT and s.occupancy is Occupancy.ALLOCATED:
            problems.append(f"{w.id}: an event pass preempts allocated work (9)")
        if d.action is Action.KEEP:
            problems.append(f"{w.id}: an event pass lists only what it changes, not a keep (9)")
        if d.action is Action.WAIT and w.id not in arrived:
            problems.append(f"{w.id}: an event pass lists a wait only for new work (9)")
    touched = sorted(set(touched))
    cap = hosts.cap
    for h in touched:
        used = sum(load.held[w][h] for w in load.on_host.get(h, ()))
        if used > cap[h]:
            problems.append(
                f"host {hosts.names[h]}: {counted(int(used), 'GPU')} given, it has {cap[h]} (1)"
            )
    problems += _unallocated_yields(state, touched)
    problems += _priority_order(state, decisions)
    return problems


def _unallocated_yields(state: PassState, touched: list[int]) -> list[str]:
    """(4) on the touched hosts: no waiting allocated workload fits free GPUs plus those
    unallocated work holds (hosts reserved for another gang excluded)."""
    load, hosts = state.load, state.hosts
    unallocated = load.reclaim.get(Tier.UNALLOCATED)
    if unallocated is None or not load.reclaim_total.get(Tier.UNALLOCATED) or not touched:
        return []  # as `validate`: with no unallocated work anywhere there is nothing to yield
    room = np.where(hosts.ready, np.maximum(hosts.cap - load.used, 0) + unallocated, 0)
    near = [h for h in touched if hosts.ready[h] and room[h] > 0]
    if not near:
        return []
    most = max(int(room[h]) for h in near)
    whole = any(room[h] == hosts.cap[h] for h in near)
    out = []
    seen: set[int] = set()
    for q in _allocated_kinds(state, most, whole):
        shape = state.shape(q)
        if id(shape) in seen:
            continue
        seen.add(id(shape))
        if shape.single:
            fits = any(shape.allowed[h] and room[h] >= shape.gpus for h in near)
        else:
            fits = any(shape.allowed[h] and room[h] == hosts.cap[h] for h in near) and (
                place(shape, room, hosts) is not None
            )
        if fits:
            out.append(f"{q.workload.id}: waits while unallocated work holds GPUs it could use (4)")
    return out


def _allocated_kinds(state: PassState, most: int, whole: bool) -> Iterator[Queued]:
    """A waiting allocated workload of each request that may fit a room of `most` GPUs on one
    host (any request, whole hosts being needed, if some host's room is whole), and each gang
    a reservation is held for (whose shape is its own)."""
    load = state.load
    for (gpus, _, _), members in state.by_request.items():
        if gpus > most and not whole:
            continue
        for wid in members:
            q = state.queued[wid]
            if (
                q.occupancy is Occupancy.ALLOCATED
                and q.placeable
                and not load.holds(wid)
                and wid not in state.gangs
            ):
                yield q
                break
    for wid in state.gangs:
        gang = state.queued.get(wid)
        if gang is not None and gang.placeable and not load.holds(wid):
            yield gang


def _priority_order(state: PassState, decisions: tuple[Decision, ...]) -> list[str]:
    """(6) no start of this pass ahead of a waiting workload of its node and occupancy class
    with higher priority that fits in its place."""
    load, hosts = state.load, state.hosts
    free = load.free()
    out = []
    for d in decisions:
        if d.action is not Action.START:
            continue
        a = state.queued[d.workload]
        place_of = PlaceIndex(hosts, [{hosts.index[h]: g for h, g in d.hosts.items()}])
        for b in state.groups.get((a.workload.budget, a.occupancy), ()):
            qb = state.queued[b]
            if (
                qb.workload.priority > a.workload.priority
                and qb.placeable
                and not load.holds(b)
                and place_of.find(state.shape(qb), free) is not None
            ):
                out.append(
                    f"{a.workload.id} (priority {a.workload.priority}) starts ahead of {b} "
                    f"(priority {qb.workload.priority}), which fits in its place (6)"
                )
    return out
