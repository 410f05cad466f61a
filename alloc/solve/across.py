"""Entitlement along the whole path (models/round.md 2.4): what a full round's plan must
satisfy beyond where each workload fits.

1. A start or keep is `under_allocation` only within entitlement at every level: per budget
   node, the GPUs its work holds as entitled (`under_allocation`) or as the contract keeps it
   (protected, costly to stop), on ready hosts, stay within the node's entitlement (or within
   its protected GPUs, when protected work alone exceeds it). The fair share's entitled set
   (2.3) gives this by construction.
2. Rebalancing never takes GPUs from a node below its entitlement to give them to a sibling
   above its own: for a preempted allocated workload V (`rebalanced` or `make_room`) and an
   allocated start R on one of V's hosts, at the level where their paths part, V's side must
   not end the round below its entitlement while R's side ends it above its own. The round
   keeps such victims and solves again (`alloc/round.py`).

`across_load` finds the rule-2 pairs of a solver's load; `entitlement_problems` states both
rules' breaches of a plan as validation problems, with the same rule-2 test (`_pairs`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:  # validate reads this module; the round context is only a type here
    from alloc.solve.context import RoundContext
    from alloc.solve.load import Load

ENTITLED_REASONS = frozenset({Reason.UNDER_ALLOCATION, Reason.PROTECTED, Reason.COSTLY_TO_STOP})
REBALANCING = frozenset({Reason.REBALANCED, Reason.MAKE_ROOM})


@dataclass(frozen=True, slots=True)
class Across:
    """A rule-2 breach: `receiver` starts on hosts `victim` gave up."""

    victim: WorkloadId
    receiver: WorkloadId
    below: BudgetPath  # the victim's side where the paths part, ending below its entitlement
    above: BudgetPath  # the receiver's side, ending above its own


def across_load(ctx: RoundContext, load: Load) -> list[Across]:
    """Rule-2 pairs of a solver's load: victims are allocated running work the solver may
    preempt and did not keep."""
    snapshot = ctx.snapshot
    by_id = snapshot.by_id
    held = load.held
    victims = [
        wid
        for wid in ctx.running_at
        if wid not in held
        and ctx.standings[wid].occupancy is Occupancy.ALLOCATED
        and not ctx.standings[wid].protected
    ]
    if not victims:
        return []
    names = ctx.hosts.names
    starts = (
        (wid, (names[h] for h in placement))
        for wid, placement in held.items()
        if not by_id[wid].running and ctx.standings[wid].occupancy is Occupancy.ALLOCATED
    )
    allocated = (wid for wid in held if ctx.standings[wid].occupancy is Occupancy.ALLOCATED)
    return _pairs(snapshot, victims, starts, allocated, ctx.share.entitlement_gpus)


def _pairs(
    snapshot: Snapshot,
    victims: list[WorkloadId],
    starts: Iterable[tuple[WorkloadId, Iterable[str]]],
    allocated: Iterable[WorkloadId],
    entitlement: Mapping[BudgetPath, int],
) -> list[Across]:
    """`victims`: preempted allocated work; `starts`: allocated starts and their hosts;
    `allocated`: every allocated workload started or kept (each counts the GPUs it asked)."""
    by_id = snapshot.by_id
    on_host: defaultdict[str, list[WorkloadId]] = defaultdict(list)
    for wid, hosts in starts:
        for h in hosts:
            on_host[h].append(wid)
    after: defaultdict[BudgetPath, int] = defaultdict(int)
    for wid in allocated:
        w = by_id[wid]
        for p in path_prefixes(w.budget) if w.budget else ():
            after[p] += w.gpus
    out = []
    for v in sorted(victims):
        vw = by_id[v]
        if not vw.budget:
            continue
        for r in sorted({r for h in vw.hosts for r in on_host.get(h, ())}):
            rb = by_id[r].budget
            meet = _parting(vw.budget, rb) if rb else None
            if meet is None:
                continue
            a, b = meet
            if after[a] < entitlement.get(a, 0) and after[b] > entitlement.get(b, 0):
                out.append(Across(v, r, a, b))
    return out


def _parting(x: BudgetPath, y: BudgetPath) -> tuple[BudgetPath, BudgetPath] | None:
    """The two sibling nodes where the paths of x and y part (None: one holds the other)."""
    for a, b in zip(path_prefixes(x), path_prefixes(y), strict=False):
        if a != b:
            return a, b
    return None


def entitlement_problems(
    snapshot: Snapshot, plan: Plan, entitlement: Mapping[BudgetPath, int]
) -> list[str]:
    ready = {h.name for h in snapshot.cluster.hosts if h.state.accepts_work}
    entitled: defaultdict[BudgetPath, int] = defaultdict(int)
    forced: defaultdict[BudgetPath, int] = defaultdict(int)
    by_id = snapshot.by_id
    victims: list[WorkloadId] = []
    starts: list[tuple[WorkloadId, Iterable[str]]] = []
    allocated: list[WorkloadId] = []
    for d in plan.decisions:
        if d.occupancy is not Occupancy.ALLOCATED:
            continue
        if d.action is Action.PREEMPT:
            if d.reason in REBALANCING:
                victims.append(d.workload)
            continue
        if d.action not in (Action.START, Action.KEEP):
            continue
        allocated.append(d.workload)
        if d.action is Action.START:
            starts.append((d.workload, d.hosts))
        if d.reason not in ENTITLED_REASONS:
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
    problems = [
        f"{p}: holds {gpus} GPUs as entitled (under_allocation, protected, costly to stop) but "
        f"is entitled to {entitlement.get(p, 0)} this round (models/round.md 2.4, rule 1)"
        for p, gpus in sorted(entitled.items())
        if gpus > max(entitlement.get(p, 0), forced[p])
    ]
    for x in _pairs(snapshot, victims, starts, allocated, entitlement):
        problems.append(
            f"{x.victim} is rebalanced and {x.receiver} starts on its GPUs, but {x.below} ends "
            f"the round below its entitlement while {x.above} ends above its own "
            f"(models/round.md 2.4, rule 2)"
        )
    return problems
