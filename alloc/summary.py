"""What a round did, in numbers a manager reads: decisions by action and reason, and per budget
node its allocation, this round's entitlement, what it got and its fair-share ratio."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from alloc.domain import ROOT_PATH, Action, BudgetPath, Occupancy, Plan, Reason, path_prefixes
from alloc.solve.context import RoundContext


@dataclass(frozen=True, slots=True)
class NodeRow:
    path: BudgetPath
    depth: int
    share: float  # fraction of the parent's share
    effective: float  # fraction of the cluster's time
    owed_gpus: float  # effective allocation x ready GPUs, capped at its demand (SPEC's "owed")
    entitled_gpus: int  # this round's entitlement (protected + entitled work)
    demand_gpus: int  # GPUs of its allocated work, running or queued
    assigned_gpus: int  # allocated GPUs held after the round
    unallocated_gpus: int  # unallocated GPUs held after the round by its work
    waiting: int  # its allocated workloads left waiting (counted as demand is)
    ratio: float  # fair-share ratio over the window, before the round


@dataclass(frozen=True, slots=True)
class Summary:
    by_action: dict[tuple[Action, Reason], tuple[int, int]]  # -> (workloads, GPUs)
    nodes: tuple[NodeRow, ...]


def summarize(ctx: RoundContext, plan: Plan) -> Summary:
    snapshot = ctx.snapshot
    by_action: Counter[tuple[Action, Reason]] = Counter()
    gpus_by_action: Counter[tuple[Action, Reason]] = Counter()
    demand: defaultdict[BudgetPath, int] = defaultdict(int)
    assigned: defaultdict[BudgetPath, int] = defaultdict(int)
    unallocated: defaultdict[BudgetPath, int] = defaultdict(int)
    waiting: defaultdict[BudgetPath, int] = defaultdict(int)
    for d in plan.decisions:
        w = snapshot.by_id[d.workload]
        key = (d.action, d.reason)
        by_action[key] += 1
        gpus_by_action[key] += w.gpus
        if not w.budget:
            continue
        for p in (ROOT_PATH, *path_prefixes(w.budget)):
            if d.occupancy is Occupancy.ALLOCATED:  # demand and waiting count the same work
                demand[p] += w.gpus
                assigned[p] += d.gpus_held
                waiting[p] += d.action is Action.WAIT
            else:
                unallocated[p] += d.gpus_held
    ready = snapshot.cluster.ready_gpus
    tree = snapshot.budgets
    nodes = tuple(
        NodeRow(
            path=p,
            depth=len(path_prefixes(p)),
            share=tree.node(p).share,
            effective=tree.effective_allocation(p),
            owed_gpus=min(tree.effective_allocation(p) * ready, demand[p]),
            entitled_gpus=ctx.share.entitlement_gpus.get(p, 0),
            demand_gpus=demand[p],
            assigned_gpus=assigned[p],
            unallocated_gpus=unallocated[p],
            waiting=waiting[p],
            ratio=ctx.share.ratios[p],
        )
        for p in tree.paths()
    )
    return Summary(
        {k: (n, gpus_by_action[k]) for k, n in sorted(by_action.items())},
        nodes,
    )
