"""The "Why" of `alloc explain`: the fair-share order and the entitlement for work that
competes for its node's share, and for work that waits for room (`no_room`) the shape it needs,
the hosts that could hold it, what holds them and what would make room."""

from __future__ import annotations

import numpy as np

from alloc.domain import Action, Decision, Occupancy, Plan, Reason, Snapshot, WorkloadId
from alloc.explain.entitled import granted_ratios, order_line
from alloc.explain.facts import held_by_node
from alloc.explain.room import down_hosts, free_after, holders, release_s
from alloc.io.durations import format_time
from alloc.policy.contract import runtime_delta
from alloc.readable import count, counted, duration, number
from alloc.report.fmt import ratio
from alloc.solve.context import RoundContext
from alloc.solve.placement import place
from alloc.solve.problem import Shape


def why_lines(ctx: RoundContext, plan: Plan, wid: WorkloadId, d: Decision) -> list[str]:
    """Why the plan decides `d` for the workload, as sentences with numbers."""
    out: list[str] = []
    snapshot = ctx.snapshot
    w = snapshot.by_id[wid]
    if (d.action, d.reason, d.occupancy) == (Action.WAIT, Reason.NO_ROOM, Occupancy.ALLOCATED):
        # Room, not fair share, keeps it waiting: where it would go and what holds that first.
        out += _placement_why(ctx, plan, wid)
        if out and wid not in ctx.share.rank:  # ranked nowhere: its node's entitlement and
            return out + _own_reservation(plan, d)  # GPUs held do not bear on it
    if d.reason is Reason.RESERVED:
        out += _reserved_why(ctx, plan, wid)
    out += _own_reservation(plan, d)
    if wid in ctx.share.rank:
        out.append(order_line(ctx, wid))
        if w.budget:
            horizon = duration(snapshot.policy.horizon_s)
            out.append(
                "projected ratios when its turn came (window usage plus, for the "
                f"{horizon} horizon, protected work and the grants ranked ahead of it; top "
                "level first): " + ", ".join(ratio(r) for r in granted_ratios(ctx, wid))
            )
    if w.budget and d.occupancy is Occupancy.ALLOCATED:
        held = held_by_node(plan, snapshot, w.budget)
        out.append(
            f"{w.budget} holds {counted(held, 'allocated GPU')} after this round; its "
            f"entitlement is {count(ctx.share.entitlement_gpus.get(w.budget, 0))}"
        )
    sliced = ctx.share.time_sliced.get(wid)
    if sliced is not None and w.budget:
        excess, cost = sliced
        behind = (
            (1 - ctx.share.ratios[w.budget])
            * ctx.snapshot.budgets.effective_allocation(w.budget)
            * ctx.share.capacity_gpu_hours
        )
        out.append(
            f"time slicing across the window (models/round.md 2.5): {w.budget} is "
            f"{number(behind, 0)} GPU-h behind its share over the window, so it may hold "
            f"{counted(excess, 'GPU')} beyond its entitlement for this workload's "
            f"minimum runtime ({number(cost, 0)} "
            "GPU-h, paid from what other nodes used beyond their shares); its entitlement "
            "along the path is raised to what it holds, and it pays it back as its ratio rises"
        )
    if d.occupancy is Occupancy.UNALLOCATED and d.action is Action.WAIT:
        idle = int(free_after(ctx, plan).sum())
        out.append(
            f"unallocated work only takes GPUs that no allocated workload can use; "
            f"{counted(idle, 'ready GPU')} {'is' if idle == 1 else 'are'} idle after this round"
        )
    if d.action is Action.PREEMPT:
        taken = _taken_by(plan, snapshot, wid)
        if taken:
            out.append("its GPUs go to: " + ", ".join(taken))
    return out


def _own_reservation(plan: Plan, d: Decision) -> list[str]:
    """The hosts the plan reserves for a waiting gang (models/round.md 8): a fact of the
    round, not a change it waits for."""
    if d.action is not Action.WAIT:
        return []
    return [
        f"hosts {', '.join(r.hosts)} are reserved for it (models/round.md 8): no other "
        f"allocated work starts there, and their protected work ends by "
        f"{format_time(r.ready_at)}, when it can start"
        for r in plan.reservations
        if r.workload == d.workload
    ]


def _reserved_why(ctx: RoundContext, plan: Plan, wid: WorkloadId) -> list[str]:
    """Which gangs hold the hosts that would fit it (the plan's `reservations`), until when,
    and why it may not backfill them (models/round.md 8.5): SPEC invariant 4 does not count
    them as GPUs it could use this round."""
    w, hosts = ctx.snapshot.by_id[wid], ctx.hosts
    allowed = ctx.unreserved_shapes.get(wid, ctx.shapes[wid]).allowed  # reserved hosts too
    held = [r for r in plan.reservations if any(allowed[hosts.index[h]] for h in r.hosts)]
    if not held:
        return []
    gangs = "; ".join(
        f"{r.workload} holds {', '.join(r.hosts)} until {format_time(r.ready_at)}" for r in held
    )
    if not w.resumable:
        yours = "it cannot resume, and only resumable work backfills a reservation"
    else:
        ends = format_time(ctx.snapshot.now + runtime_delta(w.min_runtime_s))
        yours = (
            f"its minimum runtime of {duration(w.min_runtime_s)} from now would protect it "
            f"until {ends}, after that"
        )
    return [
        f"hosts that could hold it are reserved for gangs that protected work keeps from "
        f"starting ({gangs}): allocated work starts there only as backfill, whose "
        f"protection ends by then, and {yours}"
    ]


def _placement_why(ctx: RoundContext, plan: Plan, wid: WorkloadId) -> list[str]:
    """Why allocated work waits for room (`no_room`): the shape it needs, the ready hosts that
    could hold it, what holds them after this round (soonest free first), and, when the work
    the contract keeps leaves it no place even with all other work gone, by how much."""
    snapshot, hosts = ctx.snapshot, ctx.hosts
    w = snapshot.by_id[wid]
    shape = ctx.unreserved_shapes.get(wid, ctx.shapes[wid])
    typed = shape.types[hosts.type_of]
    if not (typed & hosts.ready).any():
        return [f"no host of its GPU type is ready: {down_hosts(ctx, typed)}"]
    if wid not in ctx.placeable:  # (a plan from a file may say no_room for such work)
        return []
    candidates = np.flatnonzero(shape.allowed)
    free = free_after(ctx, plan)
    kept = np.where(hosts.ready, np.maximum(hosts.cap - ctx.fixed_used, 0), 0)
    of_type = f" of GPU type {w.gpu_type}" if w.gpu_type else ""
    if shape.single:
        out = [
            f"it needs {counted(w.gpus, 'GPU')} on one host{of_type}; "
            f"{counted(len(candidates), 'ready host')} could hold it: "
            + _some([hosts.names[i] for i in candidates])
        ]
        held = [int(i) for i in candidates if free[i] < w.gpus]
    else:
        size = int(hosts.cap[candidates].max())
        need = shape.hosts_needed(size)
        out = [
            f"it needs {counted(need, 'whole host')} of {counted(size, 'GPU')} "
            f"{'in one network block' if shape.block else 'in any blocks'} "
            f"({counted(w.gpus, 'GPU')}); {_blocks(ctx, candidates, need if shape.block else 0)}"
        ]
        held = [int(i) for i in candidates if free[i] < hosts.cap[i]]
    them = "them"
    if wid not in ctx.share.rank:
        out.append(_kept_work_in_the_way(ctx, wid, shape, kept))
    elif (room := place(ctx.shapes[wid], kept, hosts)) is not None:
        given = [f"{hosts.names[i]}: {holders(ctx, plan, i, given=True)}" for i in room]
        if not any(line.endswith(": ") for line in given):
            held, them = [i for i in held if i not in room], "the others"  # not again below
            out.append(
                "beside the work the contract keeps this round there is room of its shape, "
                "which this round's plan gives to other work (its fair-share order is below): "
                + "; ".join(given)
            )
    if held:
        release = release_s(ctx, plan, wid)
        held.sort(key=lambda i: (release[i], i))
        shown = "; ".join(f"{hosts.names[i]}: {holders(ctx, plan, i)}" for i in held[:6])
        more = f"; and {counted(len(held) - 6, 'more host')}" if len(held) > 6 else ""
        out.append(f"what holds {them} after this round, soonest free first: {shown}{more}")
    if wid not in ctx.share.rank and w.budget:
        entitled = ctx.share.entitlement_gpus.get(w.budget, 0)
        out.append(
            "so it takes no place in this round's fair-share order, and "
            f"{w.budget}'s entitlement this round ({counted(entitled, 'GPU')}) counts only the "
            f"demand of {w.budget}'s work that can start (models/round.md 2.3)"
        )
    return out


def _some(names: list[str], limit: int = 6) -> str:
    """`h1, h2, h3` or `h1, ..., h6 and 4 more`."""
    more = f" and {count(len(names) - limit)} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _blocks(ctx: RoundContext, candidates: np.ndarray, need: int) -> str:
    """The ready hosts of its GPU type by block: with `need` (topology block), the blocks
    that have that many."""
    hosts = ctx.hosts
    per_block = np.bincount(hosts.block_of[candidates], minlength=len(hosts.blocks))
    used = np.flatnonzero(per_block)
    text = f"{counted(len(candidates), 'ready host')} could take part"
    if len(used) == 1:
        return text + (", all in one block" if need else "")
    text += f" in {count(len(used))} blocks"
    if not need:
        return text
    big = [b for b in used if per_block[b] >= need]
    named = _some([f"{hosts.blocks[b]} ({count(per_block[b])})" for b in big])
    return text + f", {count(len(big))} with {count(need)} or more: {named}"


def _kept_work_in_the_way(
    ctx: RoundContext, wid: WorkloadId, shape: Shape, kept: np.ndarray
) -> str:
    """Why a workload cannot start this round even if every workload the solver may move made
    way: the work the contract keeps leaves too little room of its shape (models/round.md 2.3),
    or the room it leaves is reserved for other gangs (8)."""
    hosts, w = ctx.hosts, ctx.snapshot.by_id[wid]
    first = (
        "the work the contract keeps this round (inside its minimum runtime, or costly to "
        "stop) leaves it no room: with all other work gone, "
    )
    if place(shape, kept, hosts) is not None:
        return (
            "beside the work the contract keeps this round there is room of its shape only on "
            "hosts reserved for other gangs (models/round.md 8)"
        )
    candidates = np.flatnonzero(shape.allowed)
    if shape.single:
        most = int(kept[candidates].max())
        return (
            first + f"the most free on one of those hosts would be {count(most)} of its "
            f"{counted(w.gpus, 'GPU')}; it has room once enough of that work ends on one of them"
        )
    need = shape.hosts_needed(int(hosts.cap[candidates].max()))
    whole = candidates[kept[candidates] == hosts.cap[candidates]]
    where = ""
    if shape.block:  # the block that needs the fewest more hosts, of those large enough
        size = np.bincount(hosts.block_of[candidates], minlength=len(hosts.blocks))
        free = np.bincount(hosts.block_of[whole], minlength=len(hosts.blocks))
        block = int(np.argmin(np.where(size >= need, need - free, np.iinfo(np.int64).max)))
        whole = whole[hosts.block_of[whole] == block]
        where = f" in block {hosts.blocks[block]}"
    names = f" ({_some([hosts.names[i] for i in whole])})" if len(whole) else ""
    return (
        first + f"{counted(len(whole), 'whole host')}{where} would be free{names} of the "
        f"{count(need)} it needs; it has room once that work has ended on "
        f"{counted(need - len(whole), 'more host')}{' there' if shape.block else ''}"
    )


def _taken_by(plan: Plan, snapshot: Snapshot, wid: WorkloadId) -> list[str]:
    """The starts that take GPUs of a preempted workload's hosts (at most 10)."""
    hosts = set(snapshot.by_id[wid].hosts)
    return [
        f"{d.workload} ({d.reason.value})"
        for d in plan.decisions
        if d.action is Action.START and hosts & set(d.hosts)
    ][:10]
