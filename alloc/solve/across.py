"""Entitlement along the whole path (models/round.md 2.4): a start or keep is
`under_allocation` only within entitlement at every level. Per budget node, the GPUs its work
holds as entitled (`under_allocation`) or as the contract keeps it (protected, costly to
stop), on ready hosts, stay within the node's entitlement (or within its protected GPUs,
when protected work alone exceeds it). The fair share's entitled set (2.3) gives this by
construction; `validate` checks it with the round's own entitlements.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from alloc.domain import Action, BudgetPath, Occupancy, Plan, Reason, Snapshot, path_prefixes
from alloc.readable import count, counted

ENTITLED_REASONS = frozenset({Reason.UNDER_ALLOCATION, Reason.PROTECTED, Reason.COSTLY_TO_STOP})


def entitlement_problems(
    snapshot: Snapshot, plan: Plan, entitlement: Mapping[BudgetPath, int]
) -> list[str]:
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
    return [
        f"{p}: holds {counted(gpus, 'GPU')} as entitled (under_allocation, protected, costly to "
        f"stop) but is entitled to {count(entitlement.get(p, 0))} this round (models/round.md 2.4)"
        for p, gpus in sorted(entitled.items())
        if gpus > max(entitlement.get(p, 0), forced[p])
    ]
