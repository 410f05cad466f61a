"""`fairshare-sort`: the published design of the lab whose contract `alloc` keeps, as a
baseline (issue 15, decision 4), so that a user sees what the optimiser buys over it.

One round, from the snapshot alone (no event passes, no state between rounds):
1. The contract first, as in every policy: protected work (and work too costly to stop) keeps
   its GPUs; work on a host in maintenance, and unprotected work on a draining host, is
   preempted.
2. Allocated work (running past its protection, and queued) is sorted hierarchically by window
   usage over allocation: level by level the sibling with the lower fair-share ratio first
   (then its name), and inside a leaf by priority, running before queued, submission. The
   ratios are those of the window before the round: a pick does not raise them (no
   projection, no entitlements).
3. In that order, running work keeps its place unless work ahead of it took it; queued work
   goes to the first place that fits the free GPUs (first fit, gangs on whole hosts, one block
   for topology block), else displaces unallocated work and running work ranked after it, the
   lowest ranked first (rebalancing past the minimum runtime). No reservations: a gang waits
   until whole hosts are free.
4. Unallocated work (minimum runtime 0, or no budget) after it, in the same order (unfunded
   work last): running work stays where nothing displaced it, queued work takes free GPUs,
   first fit.
5. Work left waiting is tried again, in order, on the free GPUs and over unallocated work
   until nothing more starts (invariant 4: unallocated work never holds GPUs that waiting
   allocated work could use).

Plans carry the contract's occupancy and reasons (allocated starts and keeps as
`under_allocation`: the design has no entitlement to say otherwise). The simulator validates
every plan of it against SPEC's invariants and counts what it breaks.
"""

from __future__ import annotations

import math
from datetime import timedelta

from alloc.domain import (
    Action,
    Decision,
    Occupancy,
    Plan,
    Reason,
    Snapshot,
    SolverReport,
    Workload,
    WorkloadId,
    path_prefixes,
)
from alloc.policy.contract import Standing, standings
from alloc.policy.fairshare import leaf_order_key, window_ratios
from alloc.solve.load import Load
from alloc.solve.placement import first_fit, place_displacing
from alloc.solve.problem import HostArrays, host_arrays, shapes_of

UNALLOCATED = "unallocated"  # displacement categories: unallocated work, and ...
LATER = "ranked later"  # ... running allocated work not reached yet in the order


def fairshare_sort(snapshot: Snapshot) -> Plan:
    hosts = host_arrays(snapshot)
    st = standings(snapshot)
    _, ratios = window_ratios(snapshot)
    load = Load(hosts)
    preempted: dict[WorkloadId, Reason] = {}
    allocated: list[Workload] = []
    unallocated: list[Workload] = []
    for s in st.values():
        w = s.workload
        if s.forced is Action.PREEMPT:
            assert s.forced_reason is not None
            preempted[w.id] = s.forced_reason
        elif s.forced is Action.KEEP:
            load.hold(w.id, _placement(hosts, w))
        else:
            (allocated if s.occupancy is Occupancy.ALLOCATED else unallocated).append(w)

    def key(w: Workload) -> tuple[object, ...]:
        if not st[w.id].funded or not w.budget:
            return (((math.inf, ""),), leaf_order_key(w))  # unfunded work: last, by priority
        return (tuple((ratios[p], p) for p in path_prefixes(w.budget)), leaf_order_key(w))

    allocated.sort(key=key)
    unallocated.sort(key=key)
    # Running work waits for its turn as displaceable: unallocated work at no cost, allocated
    # work at a cost that falls with its rank (the lowest ranked is displaced first).
    n = len(allocated)
    for rank, w in enumerate(allocated):
        if w.running:
            load.hold(w.id, _placement(hosts, w), LATER, 1.0 + n - rank)
    for w in unallocated:
        if w.running:
            load.hold(w.id, _placement(hosts, w), UNALLOCATED, 0.0)
    shapes = shapes_of((w for w in snapshot.workloads if not w.running), hosts)

    def start(w: Workload, categories: tuple[str, ...]) -> bool:
        shape = shapes[w.id]
        placement = first_fit(shape, load.free(), hosts)
        if placement is None and categories:
            found = place_displacing(shape, load, categories)
            if found is None:
                return False
            for v in found.victims:
                unallocated_victim = load.category[v][0] == UNALLOCATED
                load.release(v)
                preempted[v] = (
                    Reason.UNALLOCATED_DISPLACED if unallocated_victim else Reason.REBALANCED
                )
            placement = found.placement
        if placement is None:
            return False
        load.hold(w.id, placement)
        return True

    waiting: list[Workload] = []
    for w in allocated:
        if w.running:
            if load.holds(w.id):  # its turn: nobody ahead of it took its place
                load.hold(w.id, load.release(w.id))
        elif not start(w, (UNALLOCATED, LATER)):
            waiting.append(w)
    for w in unallocated:
        if not w.running:
            start(w, ())
    while waiting:
        left = [w for w in waiting if not start(w, (UNALLOCATED,))]
        if len(left) == len(waiting):
            break
        waiting = left
    return Plan(
        now=snapshot.now,
        report=SolverReport("fairshare-sort", "heuristic", 0.0, None, None, 0.0),
        decisions=tuple(
            _decision(snapshot, st[w.id], load, preempted, hosts) for w in snapshot.workloads
        ),
        drained_hosts=tuple(
            h.name
            for i, h in enumerate(snapshot.cluster.hosts)
            if h.state.draining and load.used[i] == 0
        ),
    )


def _placement(hosts: HostArrays, w: Workload) -> dict[int, int]:
    return {hosts.index[h]: g for h, g in w.hosts.items()}


def _decision(
    snapshot: Snapshot,
    s: Standing,
    load: Load,
    preempted: dict[WorkloadId, Reason],
    hosts: HostArrays,
) -> Decision:
    w = s.workload
    if w.id in preempted:
        return Decision(w.id, Action.PREEMPT, s.occupancy, preempted[w.id])
    if not load.holds(w.id):
        return Decision(w.id, Action.WAIT, s.occupancy, Reason.NO_ROOM)
    placed = {hosts.names[h]: g for h, g in sorted(load.held[w.id].items())}
    allocated = s.occupancy is Occupancy.ALLOCATED
    reason = (
        Reason.UNDER_ALLOCATION
        if allocated
        else Reason.UNALLOCATED_FILL
        if s.funded
        else Reason.UNFUNDED
    )
    if w.running:
        if s.forced is Action.KEEP and s.forced_reason is not None:
            reason = s.forced_reason
        return Decision(w.id, Action.KEEP, s.occupancy, reason, placed, s.protected_until)
    until = snapshot.now + timedelta(seconds=w.min_runtime_s) if allocated else None
    return Decision(w.id, Action.START, s.occupancy, reason, placed, until)
