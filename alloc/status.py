"""`alloc status`: the queue in the round's order with, for each workload, what this round does
with it and the fair-share ratios along its budget path that its place was decided by
(projected at its turn for allocated work, `ORDER` and `RATIOS`): the "why am I waiting" view.
Pure: a round's snapshot, plan and context in, rows out."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from alloc.domain import (
    Action,
    BudgetTree,
    Plan,
    Reason,
    Workload,
    WorkloadId,
    path_prefixes,
)
from alloc.queue import queue_positions
from alloc.readable import counted, natural_key
from alloc.report.fmt import duration, ratio
from alloc.solve.context import RoundContext


@dataclass(frozen=True, slots=True)
class QueueRow:
    position: int | None  # place in the queue (alloc.queue.queue_positions); None: blocked
    workload: WorkloadId
    budget: str
    gpus: int
    priority: int
    waiting_s: float
    decision: str  # e.g. "start (under_allocation)", "wait (over_allocation)"
    standing: str  # entitled | over its entitlement | cluster full | unallocated | blocked
    path: str  # "nlp 0.82 > olmo 0.95": window ratios from the top level down


# What the order is by and what the ratios column shows: the ratios it was decided by.
ORDER = (
    "allocated work by lower projected fair-share ratio, level by level, then unallocated "
    "work by lower ratio"
)
RATIOS = (
    "ratios: those its place was decided by, along its budget path from the top down: for "
    "allocated work projected at its turn (window usage plus protected work and the grants "
    "ranked ahead, as if held for the horizon), for unallocated work over the window"
)


def queue_rows(ctx: RoundContext, plan: Plan) -> list[QueueRow]:
    """Queued work in the round's order (`RoundContext.ranked`: allocated work in fair-share
    order, then unallocated work), then blocked queued work: work that has no place in the
    order, as it could not start this round even if all the work the round may stop made way
    (models/round.md 2.3). The ratios are those the order weighs (`ORDER`, `RATIOS`)."""
    snapshot = ctx.snapshot
    ratios = ctx.share.ratios
    projected = ctx.share.grant_ratios
    position = queue_positions(snapshot, ctx.ranked)
    queued = [w for w in snapshot.workloads if not w.running]
    queued.sort(key=lambda w: (position.get(w.id, math.inf), w.submitted, natural_key(w.id)))
    rows = []
    for w in queued:
        d = plan.decision(w.id)
        if w.id not in position:
            standing = "blocked"
        elif w.id in ctx.share.entitled:
            standing = "entitled"
        elif ctx.share.over_entitlement(w.id):
            standing = "over its entitlement"
        elif w.id in ctx.share.rank:  # within it, but the ready GPUs ran out at its turn
            standing = "cluster full"
        else:
            standing = "unallocated"
        at_turn = projected.get(w.id, ())
        path = (
            " > ".join(
                f"{p.rsplit('/', 1)[-1]} "
                f"{ratio(at_turn[i] if i < len(at_turn) else ratios.get(p, math.inf), 2)}"
                for i, p in enumerate(path_prefixes(w.budget))
            )
            if w.budget and ctx.standings[w.id].funded
            else _unfunded(snapshot.budgets, w)
        )
        rows.append(
            QueueRow(
                position.get(w.id),
                w.id,
                w.budget or "-",
                w.gpus,
                w.priority,
                (snapshot.now - w.submitted).total_seconds(),
                f"{d.action.value} ({d.reason.value})",
                standing,
                path,
            )
        )
    return rows


def _unfunded(budgets: BudgetTree, w: Workload) -> str:
    """`unfunded` (no budget), or `unfunded: p has a share of 0%` (effective allocation 0)."""
    if not w.budget:
        return "unfunded"
    zero = next((p for p in path_prefixes(w.budget) if budgets.node(p).share <= 0), None)
    return f"unfunded: {zero} has a share of 0%" if zero else "unfunded: effective allocation 0"


def running_counts(plan: Plan, ctx: RoundContext) -> dict[str, int]:
    """Running workloads by what this round does with them (keep, preempt), the work on hosts
    gone into maintenance apart (an availability event, not a choice of the plan)."""
    out: dict[str, int] = {}
    for w in ctx.snapshot.workloads:
        if w.running:
            d = plan.decision(w.id)
            key = "kept" if d.action is Action.KEEP else d.action.value
            if d.reason is Reason.HOST_MAINTENANCE:
                key = "preempted as its host went into maintenance"
            out[key] = out.get(key, 0) + 1
    return out


def reasons_differ(last: Mapping[str, Mapping[str, object]], plan: Plan) -> list[str]:
    """The workloads the controller last left waiting or kept for another reason than this
    round gives (in natural order). Its round saw the cluster before it carried out its own
    plan, this one after: a start it made is kept now and a preemption waits (the plan done,
    not a difference), but a wait's reason can change (over_allocation then, no_room now)."""
    out = []
    for w, row in last.items():
        now = plan.decision(WorkloadId(w))
        was = (str(row["action"]), str(row["reason"]))
        if was[0] in ("wait", "keep") and was != (now.action.value, now.reason.value):
            out.append(w)
    return sorted(out, key=natural_key)


def running_line(counts: dict[str, int]) -> str:
    """How many workloads run and what this round does with them: `3 workloads; this round keeps
    2 and preempts 1` (not `3 kept`, which read as if they had run before and been kept)."""
    if not counts:
        return "none"
    verbs = {"kept": "keeps", "preempt": "preempts"}
    done = [
        f"{verbs.get(k, 'preempts')} {n}"
        + ("" if k in verbs else " as their host went into maintenance")
        for k, n in sorted(counts.items())
    ]
    said = done[0] if len(done) == 1 else f"{', '.join(done[:-1])} and {done[-1]}"
    return f"{counted(sum(counts.values()), 'workload')}; this round {said}"


def waited(seconds: float) -> str:
    return duration(max(0.0, seconds))


def last_decided(row: Mapping[str, object], now_s: float) -> tuple[str, str, str]:
    """The controller's last recorded decision about a workload, as (kind of round, how long
    ago, what it decided): ("event pass", "3 min ago", "start (under_allocation)")."""
    kind = "full round" if row["kind"] == "full" else "event pass"
    at = row["at_s"]
    ago = duration(max(0.0, now_s - float(at))) if isinstance(at, int | float) else "?"
    return kind, f"{ago} ago", f"{row['action']} ({row['reason']})"
