"""The facts of `alloc explain`: the headline (what the plan decides for the workload, in the
words of its reason), its contract, the fair-share ratios along its budget path, and the GPUs a
budget node holds after the plan."""

from __future__ import annotations

from alloc.domain import (
    Action,
    Decision,
    Occupancy,
    Plan,
    Reason,
    Snapshot,
    Workload,
    WorkloadId,
    path_prefixes,
)
from alloc.explain.entitled import over_clause
from alloc.io.durations import format_time
from alloc.policy.contract import unfunded_because
from alloc.readable import count, counted, duration, gpus, number
from alloc.report.fmt import ratio
from alloc.solve.context import RoundContext

# The words of `over_allocation` and `rebalanced` when the round's shortfall does not say
# which node is in the way and how (`entitled.over_clause` does when it does).
OVER = "its budget node is beyond its entitlement for this round"

REASON_TEXT = {
    Reason.UNDER_ALLOCATION: "its budget node is within its entitlement for this round",
    Reason.OVER_ALLOCATION: OVER,
    Reason.PROTECTED: "it is inside its minimum runtime, so nothing may preempt it",
    Reason.COSTLY_TO_STOP: "it cannot resume and has run longer than a checkpoint interval: "
    "rebalancing it would destroy all it ran, so it runs to its end",
    Reason.UNALLOCATED_FILL: "minimum runtime 0: it runs free of charge on GPUs nobody "
    "entitled needs, and yields at once when they do",
    Reason.UNFUNDED: "no budget with a share above 0 pays for it, so it runs as unallocated "
    "work: free, never protected, never charged, first to yield",
    Reason.UNALLOCATED_DISPLACED: "it is unallocated work and allocated work needed its GPUs",
    Reason.REBALANCED: f"it is past its minimum runtime and {OVER}, so it yields to work that "
    "is entitled",
    Reason.MAKE_ROOM: "it is past its minimum runtime and entitled work ranked ahead of it in "
    "the fair-share order (such as a gang) needed its place",
    Reason.HOST_DRAINING: "its host is draining (unhealthy or retired) and its protection is over",
    Reason.HOST_MAINTENANCE: "its host went into maintenance under it",
    Reason.NO_ROOM: "no place fits it this round",
    Reason.TOPOLOGY: "there are enough free GPUs, but not inside one network block",
    Reason.GPU_TYPE: "no host in the cluster has the GPU type it asks for",
    Reason.TOO_LARGE: "it is larger than anything the ready cluster can ever give it",
    Reason.RESERVED: "the room that fits it is held back for a gang that protected work keeps "
    "from starting, and its minimum runtime would outlast the time the gang's hosts are "
    "promised (a reservation; models/round.md, section 8)",
}


# Work beyond its node's entitlement that starts or keeps running: why it may (SPEC, reason
# `over_allocation`: "on capacity no entitled work can use"), and that it is allocated work
# all the same (SPEC 3: charged to its budget, protected for its minimum runtime).
HOLDING_TEXT = {
    (Action.START, Reason.OVER_ALLOCATION): f"{OVER}, and it may start all the same because no "
    "entitled waiting work can use these GPUs; it runs as allocated work: charged to its budget "
    "and protected for its minimum runtime, after which entitled work that needs the GPUs "
    "rebalances it",
    (Action.KEEP, Reason.OVER_ALLOCATION): f"{OVER}, and it keeps running because no entitled "
    "waiting work can use its GPUs; entitled work that needs them rebalances it",
}


def headline(
    plan: Plan,
    wid: WorkloadId,
    snapshot: Snapshot | None = None,
    ctx: RoundContext | None = None,
    no_budget: str | None = None,
) -> str:
    """`a-gang: wait (no_room): no place fits it this round.` Unfunded work says why it is
    (with the snapshot): it names no budget, or which node on its path has a share of 0%.
    Work over its entitlement says (with the round's context) which node on its path is in
    the way, and whether that node is beyond its entitlement or only its own GPUs would take
    it past."""
    d = plan.decision(wid)
    where = f" on {_hosts(d)}" if d.action.holds_gpus else ""
    text = HOLDING_TEXT.get((d.action, d.reason), REASON_TEXT[d.reason])
    if d.reason in (Reason.OVER_ALLOCATION, Reason.REBALANCED) and ctx is not None:
        clause = over_clause(ctx, wid)
        if clause is not None:
            text = text.replace(OVER, clause)
    if d.reason is Reason.UNFUNDED and snapshot is not None:
        why = unfunded_because(snapshot.budgets, snapshot.by_id[wid], no_budget)
        if why is not None:
            text = f"{why}; {_UNFUNDED_RUNS}"
    return f"{wid}: {d.action.value}{where} ({d.reason.value}): {text}."


_UNFUNDED_RUNS = "it runs as unallocated work: free, never protected, never charged"


def contract_facts(
    ctx: RoundContext, plan: Plan, wid: WorkloadId, no_budget: str | None = None
) -> list[str]:
    """What it asks for and what the contract makes of it: size, minimum runtime, occupancy,
    since when it runs and until when it is protected, backfill."""
    snapshot = ctx.snapshot
    d = plan.decision(wid)
    w = snapshot.by_id[wid]
    s = ctx.standings[wid]
    facts = [
        f"{counted(w.gpus, 'GPU')}, minimum runtime {duration(w.min_runtime_s)}, "
        f"{'resumable' if w.resumable else 'not resumable'}, priority {w.priority}, "
        f"topology {w.topology.value}" + (f", GPU type {w.gpu_type}" if w.gpu_type else "")
    ]
    why = unfunded_because(snapshot.budgets, w, no_budget)
    if why is not None:
        facts.append(f"unfunded: {why}; never protected, never charged")
    facts.append(
        f"occupancy: {s.occupancy.value}"
        + (" (minimum runtime 0)" if s.funded and w.min_runtime_s == 0 else "")
    )
    if w.started is not None:
        ran = (snapshot.now - w.started).total_seconds()
        facts.append(f"running since {format_time(w.started)} ({duration(ran)})")
    if d.protected_until is not None:
        facts.append(f"protected until {format_time(d.protected_until)}")
    return facts + _backfill_lines(plan, w, d)


def _hosts(d: Decision) -> str:
    items = list(d.hosts.items())
    text = ", ".join(f"{h}:{g}" for h, g in items[:6])
    return text + (f" (+{count(len(items) - 6)} more hosts)" if len(items) > 6 else "")


def budget_path(ctx: RoundContext, budget: str) -> list[str]:
    """Each node from the top down to `budget`: share, usage, ratio, rank among its siblings
    and its entitlement this round."""
    tree = ctx.snapshot.budgets
    share = ctx.share
    ready = ctx.snapshot.cluster.ready_gpus
    lines = [
        f"window capacity {number(share.capacity_gpu_hours, 0)} GPU-h over "
        f"{duration(ctx.snapshot.policy.lookback_s)}; ratio = usage / "
        "(effective allocation x capacity); lower goes first, level by level",
        "entitled: the GPUs its work may hold this round: its allocation alone (effective "
        f"allocation x the {counted(ready, 'ready GPU')}), plus what other nodes leave unused, "
        "less what protected work elsewhere holds beyond its own, at most what its work that "
        "can start asks for (models/round.md 2.3)",
    ]
    for p in path_prefixes(budget):  # type: ignore[arg-type]
        parent = p.rsplit("/", 1)[0] if "/" in p else ""
        siblings = sorted(tree.children(parent), key=lambda c: share.ratios[c])  # type: ignore
        rank = siblings.index(p) + 1
        # The siblings just ahead of it and just behind it (lower ratio goes first).
        near = [c for c in siblings[max(0, rank - 4) : rank + 2] if c != p]
        others = ", ".join(f"{c.rsplit('/', 1)[-1]} {ratio(share.ratios[c])}" for c in near)
        if len(siblings) - 1 > len(near):
            others += f"; {count(len(siblings) - 1 - len(near))} more"
        lines.append(
            f"{p}: share {tree.node(p).share:.1%} of its parent, effective "
            f"{tree.effective_allocation(p):.2%}, usage {number(share.usage_gpu_hours[p], 0)} "
            f"GPU-h, ratio {ratio(share.ratios[p])}, {count(rank)} of {count(len(siblings))} "
            "among its siblings" + (f" ({others})" if others else "")
        )
        alone = tree.effective_allocation(p) * ready
        lines.append(
            f"  entitled to {counted(share.entitlement_gpus.get(p, 0), 'GPU')} this round "
            f"(its allocation alone: {gpus(alone)})"
        )
    return lines


def held_by_node(plan: Plan, snapshot: Snapshot, node: str) -> int:
    """The allocated GPUs the work of `node` and the nodes beneath it holds after the plan."""
    total = 0
    for d in plan.decisions:
        w = snapshot.by_id[d.workload]
        if (
            d.occupancy is Occupancy.ALLOCATED
            and w.budget
            and (w.budget == node or w.budget.startswith(node + "/"))
        ):
            total += d.gpus_held
    return total


def _backfill_lines(plan: Plan, w: Workload, d: Decision) -> list[str]:
    """A start or a run as backfill on hosts reserved for gangs (models/round.md 8.5)."""
    if d.action is Action.START and d.backfill_for:
        ready = {r.workload: format_time(r.ready_at) for r in plan.reservations}
        gangs = ", ".join(f"{g} (ready at {ready[g]})" for g in d.backfill_for if g in ready)
        return [
            f"backfill: it starts on hosts reserved for {gangs}; its protection ends before "
            "then, and once it is over it yields to the gang while the gang waits"
        ]
    if w.running and w.backfill_for:
        return [
            f"backfill: it started on hosts reserved for {', '.join(w.backfill_for)}; past its "
            "minimum runtime it holds its GPUs as over its entitlement while any of them waits"
        ]
    return []
