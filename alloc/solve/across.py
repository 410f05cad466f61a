"""Entitlements kept along the whole path (models/round.md 2.4): what a full round's plan must
satisfy beyond where each workload fits.

1. A start or keep is `under_allocation` only within entitlement at every level: per budget
   node, the GPUs its work holds as entitled (`under_allocation`) or as the contract keeps it
   (protected, costly to stop), on ready hosts, stay within the node's entitlement (or its
   protected GPUs, when protected work alone exceeds it).
2. Rebalancing never takes GPUs from a node below its entitlement to give them to a sibling
   above its own: for a preempted allocated workload V (`rebalanced` or `make_room`) and an
   allocated start R on one of V's hosts, at the level where their paths meet, V's side must
   not end the round below its entitlement while R's side ends it above its own.

`rebalanced_across` finds the pairs that break rule 2 (the round keeps those victims and
solves again); `entitlement_problems` states both rules' breaches as validation problems.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from alloc.domain import (
    Action,
    BudgetPath,
    Occupancy,
    Plan,
    Reason,
    Snapshot,
    WorkloadId,
    path_prefixes,
)

ENTITLED_REASONS = frozenset({Reason.UNDER_ALLOCATION, Reason.PROTECTED, Reason.COSTLY_TO_STOP})
REBALANCING = frozenset({Reason.REBALANCED, Reason.MAKE_ROOM})


@dataclass(frozen=True, slots=True)
class Across:
    victim: WorkloadId
    receiver: WorkloadId
    below: BudgetPath  # the victim's side at the meeting level, ending below its entitlement
    above: BudgetPath  # the receiver's side, ending above its own


def held_after(snapshot: Snapshot, plan: Plan) -> dict[BudgetPath, int]:
    """Allocated GPUs each budget node (subtree) holds once the plan is carried out (each
    workload's own GPUs)."""
    out: defaultdict[BudgetPath, int] = defaultdict(int)
    by_id = snapshot.by_id
    for d in plan.decisions:
        if d.occupancy is not Occupancy.ALLOCATED or d.action not in (Action.START, Action.KEEP):
            continue
        w = by_id[d.workload]
        if w.budget:
            for p in path_prefixes(w.budget):
                out[p] += w.gpus  # what it asked (a gang may hold whole hosts beyond it)
    return out


def rebalanced_across(
    snapshot: Snapshot, plan: Plan, entitlement: Mapping[BudgetPath, int]
) -> list[Across]:
    """The (victim, receiver) pairs that break rule 2."""
    by_id = snapshot.by_id
    victims = [
        d.workload
        for d in plan.decisions
        if d.action is Action.PREEMPT
        and d.reason in REBALANCING
        and d.occupancy is Occupancy.ALLOCATED
    ]
    if not victims:
        return []
    on_host: defaultdict[str, list[WorkloadId]] = defaultdict(list)
    for d in plan.decisions:
        if d.action is Action.START and d.occupancy is Occupancy.ALLOCATED:
            for h in d.hosts:
                on_host[h].append(d.workload)
    after = held_after(snapshot, plan)
    out = []
    for v in victims:
        vw = by_id[v]
        assert vw.budget
        receivers = sorted({r for h in vw.hosts for r in on_host.get(h, ())})
        for r in receivers:
            rb = by_id[r].budget
            assert rb
            meet = _meeting(vw.budget, rb)
            if meet is None:
                continue
            a, b = meet
            if after[a] < entitlement.get(a, 0) and after[b] > entitlement.get(b, 0):
                out.append(Across(v, r, a, b))
    return out


def _meeting(x: BudgetPath, y: BudgetPath) -> tuple[BudgetPath, BudgetPath] | None:
    """The two sibling nodes where the paths of x and y part (None: one holds the other)."""
    for a, b in zip(path_prefixes(x), path_prefixes(y), strict=False):
        if a != b:
            return a, b
    return None


def entitlement_problems(
    snapshot: Snapshot, plan: Plan, entitlement: Mapping[BudgetPath, int]
) -> list[str]:
    problems = []
    ready = {h.name for h in snapshot.cluster.hosts if h.state.accepts_work}
    entitled: defaultdict[BudgetPath, int] = defaultdict(int)
    forced: defaultdict[BudgetPath, int] = defaultdict(int)
    by_id = snapshot.by_id
    for d in plan.decisions:
        if d.occupancy is not Occupancy.ALLOCATED or d.reason not in ENTITLED_REASONS:
            continue
        if d.action not in (Action.START, Action.KEEP):
            continue
        w = by_id[d.workload]
        if not w.budget:
            continue
        # As the fair share counts them: a start its GPUs, work the contract keeps what it
        # holds on ready hosts.
        gpus = (
            w.gpus
            if d.reason is Reason.UNDER_ALLOCATION
            else sum(g for h, g in w.hosts.items() if h in ready)
        )
        for p in path_prefixes(w.budget):
            entitled[p] += gpus
            if d.reason is not Reason.UNDER_ALLOCATION:
                forced[p] += gpus
    for p, gpus in sorted(entitled.items()):
        limit = max(entitlement.get(p, 0), forced[p])
        if gpus > limit:
            problems.append(
                f"{p}: holds {gpus} GPUs as entitled (under_allocation, protected, costly to "
                f"stop) but is entitled to {entitlement.get(p, 0)} this round (2.4, rule 1)"
            )
    for x in rebalanced_across(snapshot, plan, entitlement):
        problems.append(
            f"{x.victim} is rebalanced and {x.receiver} starts on its GPUs, but {x.below} ends "
            f"the round below its entitlement while {x.above} ends above its own (2.4, rule 2)"
        )
    return problems
