"""Entitlement in `alloc explain`: why a candidate of the fair-share order is entitled this
round or not (what stood in its way at its turn, models/round.md 2.3), and what would have to
change for it to be, naming only conditions that do not already hold.

One notion throughout: a node's *entitlement* this round (the "entitled" column of `alloc
solve`), counted as the fair-share walk counts it (protected work and the entitled work ranked
ahead). Its *allocation alone* (effective allocation x ready GPUs) is another figure, and is
called so wherever it appears."""

from __future__ import annotations

from alloc.domain import (
    HOUR_S,
    Action,
    BudgetPath,
    Occupancy,
    Reason,
    Workload,
    WorkloadId,
    path_prefixes,
)
from alloc.policy.fairshare import ratio as ratio_of
from alloc.readable import count, counted, gpus, natural_key
from alloc.report.fmt import ratio
from alloc.solve.context import RoundContext

ENTITLED = (
    "entitled this round: its GPUs fit what is left of the entitlement of every node on its "
    "path and of the ready GPUs"
)
AHEAD = "protected work and the entitled work ranked ahead of it"


def order_line(ctx: RoundContext, wid: WorkloadId) -> str:
    """`fair-share order: 7 of 23 allocated candidates; ...` and why it is entitled or not,
    with the numbers of its turn."""
    share = ctx.share
    head = (
        f"fair-share order: {count(share.rank[wid] + 1)} of "
        f"{counted(len(share.order), 'allocated candidate')}; "
    )
    if wid in share.entitled:
        return head + ENTITLED
    cut = share.shortfalls.get(wid)
    if cut is None:
        return head + "not entitled this round"
    g = ctx.snapshot.by_id[wid].gpus
    if cut.gang is not None:
        return head + (
            f"not entitled this round: it runs as backfill on hosts reserved for {cut.gang}, "
            "which still waits, so past its minimum runtime it is over its entitlement "
            "(models/round.md 8.5)"
        )
    parts = []
    ready = ready_gpus(ctx)
    if cut.committed_gpus + g > ready:  # the ready capacity
        left = max(ready - cut.committed_gpus, 0)
        later = sum(1 for o in share.order[share.rank[wid] + 1 :] if o in share.entitled)
        after = (
            f" ({counted(later, 'smaller workload')} ranked after it "
            f"{'fits' if later == 1 else 'fit'} in them, entitled)"
            if later
            else ""
        )
        parts.append(
            f"at its turn {AHEAD} held {count(cut.committed_gpus)} of the "
            f"{counted(ready, 'ready GPU')}, and the {count(left)} left are fewer than the "
            f"{count(g)} it needs{after}"
        )
    for node, at, then in cut.exceeded:
        limit, raised = node_limit(ctx, node, then)
        counting = f"{AHEAD} count" if not parts else "they count"
        parts.append(
            f"{node} is entitled to {gpus(limit)}{raised}, of which {counting} {count(at)}: "
            f"the {count(max(limit - at, 0))} left are fewer than the {count(g)} it needs"
        )
    return head + "not entitled this round: " + "; and ".join(parts)


def over_clause(ctx: RoundContext, wid: WorkloadId) -> str | None:
    """Why a candidate is over its entitlement, for the headline of `over_allocation` and
    `rebalanced`, as things stood at its turn (the numbers of `order_line`): a node on its
    path has no entitlement left or is beyond it, or is within it and only this workload's
    GPUs would take it past; or, cut by the ready GPUs alone, its nodes are within their
    entitlements; or it is backfill whose gang waits. None: the round has no shortfall for it
    (a plan from elsewhere), and the generic words stand."""
    cut = ctx.share.shortfalls.get(wid)
    if cut is None:
        return None
    if cut.gang is not None:
        return (
            f"it runs as backfill on hosts reserved for {cut.gang}, which still waits, so past "
            "its minimum runtime it is beyond its entitlement for this round"
        )
    w = ctx.snapshot.by_id[wid]
    if not cut.exceeded:
        return (
            "the nodes of its budget path are within their entitlements for this round, but "
            f"at its turn {AHEAD} held {count(cut.committed_gpus)} of the "
            f"{counted(ready_gpus(ctx), 'ready GPU')}, too many to leave it its "
            f"{counted(w.gpus, 'GPU')}"
        )
    limits = [(node, at, node_limit(ctx, node, then)[0]) for node, at, then in cut.exceeded]
    node, at, limit = next((n for n in limits if n[1] >= n[2] - 1e-9), limits[0])
    who = f"its budget node {node}" if node == w.budget else f"{node}, above its budget node,"
    if at > limit + 1e-9:
        return (
            f"{who} is beyond its entitlement for this round ({count(at)} GPUs against "
            f"{count(limit)})"
        )
    if limit < 1 - 1e-9:
        return f"{who} is entitled to no GPUs this round"
    if at >= limit - 1e-9:
        return f"{who} has used all its entitlement for this round ({gpus(limit)})"
    return (
        f"{who} is within its entitlement for this round ({count(at)} of {gpus(limit)}), but "
        f"this workload's {counted(w.gpus, 'GPU')} would take it beyond"
    )


def ready_gpus(ctx: RoundContext) -> int:
    """The ready GPUs the fair-share walk cuts its order at."""
    return int(ctx.hosts.cap[ctx.hosts.ready].sum())


def node_limit(ctx: RoundContext, node: BudgetPath, then: float) -> tuple[float, str]:
    """The entitlement to name for a node in a candidate's way: the round's (as `alloc solve`
    prints it) when that is no more than the node had at the candidate's turn (time slicing may
    lower it later in the walk, which leaves the candidate as short as it was), else the one of
    its turn and what it became (raised for work entitled after it)."""
    final = ctx.share.entitlement_gpus.get(node, 0)
    if final <= then + 1e-9:
        return final, ""
    return then, (
        f" at its turn (raised to {count(final)} later in the order, for work entitled as its "
        "leaf's first or by time slicing: models/round.md 2.3, 2.5)"
    )


def shortfall_changes(ctx: RoundContext, wid: WorkloadId) -> list[str]:
    """What would let a candidate that is not entitled be: for each node in its way, room in
    its entitlement, or, for work larger than the leaf's whole entitlement, the conditions of
    the leaf's exception (2.3) that do not hold yet; or room in the ready capacity."""
    cut = ctx.share.shortfalls.get(wid)
    if cut is None or cut.gang is not None:
        return []
    w = ctx.snapshot.by_id[wid]
    out = []
    ready = ready_gpus(ctx)
    if cut.committed_gpus + w.gpus > ready:
        out.append(
            f"{count(w.gpus)} of the ready GPUs left at its turn in the fair-share order; "
            f"{AHEAD} hold {count(cut.committed_gpus)} of the {count(ready)}"
            + _listed(ctx, wid, None)
            + f", leaving {count(max(ready - cut.committed_gpus, 0))}: that work ends, or more "
            "hosts are ready"
        )
    for node, at, then in cut.exceeded:
        limit, raised = node_limit(ctx, node, then)
        leaf = node == w.budget
        if leaf and w.gpus > limit:
            unmet = []
            if at > 0:
                unmet.append(f"{node} holds nothing else ({AHEAD} count {count(at)}")
                unmet[-1] += _listed(ctx, wid, node, ": ") + ")"
            r = ctx.share.ratios[node]
            if r >= 1.0:
                unmet.append(f"{node} is behind its share over the window (ratio {ratio(r)} now)")
            out.append(
                f"it asks for more than all of {node}'s entitlement this round ({gpus(limit)}"
                f"{raised}): it is entitled as {node}'s first work when "
                + " and ".join(unmet)
                + " (models/round.md 2.3)"
            )
        elif w.gpus > limit:
            out.append(
                f"it asks for more than all of {node}'s entitlement this round ({gpus(limit)}"
                f"{raised}): {node} is entitled to more when its siblings want less of the "
                "ready GPUs or protected work elsewhere ends"
            )
        else:
            under = "" if leaf else f" under {node}"
            fit = "fits" if w.gpus == 1 else "fit"
            out.append(
                f"{node} is entitled to {gpus(limit)} this round{raised}: its "
                f"{counted(w.gpus, 'GPU')} {fit} once {AHEAD}{under} count at most "
                f"{count(limit - w.gpus)}; they count {count(at)}"
                + _listed(ctx, wid, node, ": ")
                + " (that work ends"
                + ("" if leaf else f", or {node} is entitled to more: its siblings want less")
                + ")"
            )
    return out


def _listed(ctx: RoundContext, wid: WorkloadId, node: BudgetPath | None, lead: str = " (") -> str:
    """The work counted against `node` (None: the cluster) at `wid`'s turn, largest first (at
    most 5 named): protected work (its GPUs on ready hosts) and the entitled work ranked ahead
    of it."""
    work = _counted_work(ctx, wid, node)
    if not work:
        return ""
    shown = ", ".join(f"{o.id} ({counted(g, 'GPU')}, {how})" for g, o, how in work[:5])
    shown += f" and {count(len(work) - 5)} more" if len(work) > 5 else ""
    return lead + shown + (")" if lead == " (" else "")


def _counted_work(
    ctx: RoundContext, wid: WorkloadId, node: BudgetPath | None
) -> list[tuple[int, Workload, str]]:
    """The work counted against `node` (None: the cluster) at `wid`'s turn; largest first."""
    share, by_name = ctx.share, ctx.snapshot.cluster.by_name
    mine = share.rank[wid]
    out = []
    for s in ctx.standings.values():
        w = s.workload
        if s.occupancy is not Occupancy.ALLOCATED or not w.budget:
            continue
        if node is not None and w.budget != node and not w.budget.startswith(node + "/"):
            continue
        if s.forced is Action.KEEP:
            held = sum(g for h, g in w.hosts.items() if by_name[h].state.accepts_work)
            how = "costly to stop" if s.forced_reason is Reason.COSTLY_TO_STOP else "protected"
            out.append((held, w, how))
        elif w.id in share.entitled and share.rank[w.id] < mine:
            out.append((w.gpus, w, f"entitled, {count(share.rank[w.id] + 1)} in the order"))
    return sorted((o for o in out if o[0]), key=lambda o: (-o[0], natural_key(o[1].id)))


def granted_ratios(ctx: RoundContext, wid: WorkloadId) -> tuple[float, ...]:
    """The ratios along `wid`'s path (top level first) at its turn, projected as the round
    charges a grant (2.2: its GPUs for the horizon) but counting only what the round gave:
    protected work and the entitled work ranked ahead of it. (The order itself charges every
    pick ahead, granted or not, which no node was given.)"""
    share, snapshot = ctx.share, ctx.snapshot
    budget = snapshot.by_id[wid].budget
    assert budget
    path = path_prefixes(budget)
    mine = share.rank[wid]
    held = dict.fromkeys(path, 0)
    for s in ctx.standings.values():
        w = s.workload
        if s.occupancy is not Occupancy.ALLOCATED or not w.budget:
            continue
        if s.forced is not Action.KEEP and not (w.id in share.entitled and share.rank[w.id] < mine):
            continue
        for p in path_prefixes(w.budget):
            if p in held:
                held[p] += w.gpus
    horizon_h = snapshot.policy.horizon_s / HOUR_S
    effective, capacity = snapshot.budgets.effective, share.capacity_gpu_hours
    usage = share.usage_gpu_hours
    return tuple(ratio_of(usage[p] + held[p] * horizon_h, effective[p], capacity) for p in path)


def counted_gpus(ctx: RoundContext, wid: WorkloadId, node: BudgetPath | None) -> int:
    """The GPUs `_counted_work` lists (tests check they are the walk's own count)."""
    return sum(g for g, _, _ in _counted_work(ctx, wid, node))
