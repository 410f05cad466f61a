"""`alloc explain`: why a workload starts, waits or is preempted, the ratios along its budget
path, and what would have to change. Pure: snapshot and plan in, sentences out."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

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
from alloc.io.durations import format_time
from alloc.policy.weights import Tier
from alloc.readable import count, counted, duration, number
from alloc.report.fmt import ratio
from alloc.solve.context import RoundContext, round_context
from alloc.solve.placement import place
from alloc.solve.problem import Shape
from alloc.solve.reserve import reservations

REASON_TEXT = {
    Reason.UNDER_ALLOCATION: "its budget node is within its entitlement for this round",
    Reason.OVER_ALLOCATION: "its budget node is beyond its entitlement for this round",
    Reason.PROTECTED: "it is inside its minimum runtime, so nothing may preempt it",
    Reason.COSTLY_TO_STOP: "it cannot resume and has run longer than a checkpoint interval: "
    "rebalancing it would destroy all it ran, so it runs to its end",
    Reason.UNALLOCATED_FILL: "minimum runtime 0: it runs free of charge on GPUs nobody "
    "entitled needs, and yields at once when they do",
    Reason.UNFUNDED: "it has no budget behind it, so it runs as unallocated work: free, "
    "never protected, first to yield",
    Reason.UNALLOCATED_DISPLACED: "it is unallocated work and allocated work needed its GPUs",
    Reason.REBALANCED: "it is past its minimum runtime and its budget node is beyond its "
    "entitlement, so it yields to work that is entitled",
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


@dataclass
class Explanation:
    headline: str
    facts: list[str] = field(default_factory=list)
    path: list[str] = field(default_factory=list)
    why: list[str] = field(default_factory=list)
    change: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [self.headline, ""]
        for title, items in (
            ("Contract", self.facts),
            ("Fair share along its budget path", self.path),
            ("Why", self.why),
            ("What would have to change", self.change),
        ):
            if items:
                out.append(f"{title}:")
                out += [f"  {line}" for line in items]
        return out


def explain(
    snapshot: Snapshot, plan: Plan, workload: str, ctx: RoundContext | None = None
) -> Explanation:
    ctx = ctx or round_context(snapshot)
    wid = WorkloadId(workload)
    d = plan.decision(wid)
    w = snapshot.by_id[wid]
    s = ctx.standings[wid]
    where = f" on {_hosts(d)}" if d.action.holds_gpus else ""
    e = Explanation(f"{wid}: {d.action.value}{where} ({d.reason.value}): {REASON_TEXT[d.reason]}.")
    e.facts.append(
        f"{counted(w.gpus, 'GPU')}, minimum runtime {duration(w.min_runtime_s)}, "
        f"{'resumable' if w.resumable else 'not resumable'}, priority {w.priority}, "
        f"topology {w.topology.value}" + (f", GPU type {w.gpu_type}" if w.gpu_type else "")
    )
    if not s.funded:
        e.facts.append("unfunded: no budget node with a share above zero pays for it")
    e.facts.append(
        f"occupancy: {s.occupancy.value}"
        + (" (minimum runtime 0)" if s.funded and w.min_runtime_s == 0 else "")
    )
    if w.started is not None:
        ran = (snapshot.now - w.started).total_seconds()
        e.facts.append(f"running since {format_time(w.started)} ({duration(ran)})")
    if d.protected_until is not None:
        e.facts.append(f"protected until {format_time(d.protected_until)}")
    e.facts += _backfill_lines(plan, w, d)
    if w.budget:
        e.path = _path(ctx, w.budget)
    e.why = _why(ctx, plan, wid, d)
    e.change = _change(ctx, plan, wid, d)
    return e


def _hosts(d: Decision) -> str:
    items = list(d.hosts.items())
    text = ", ".join(f"{h}:{g}" for h, g in items[:6])
    return text + (f" (+{count(len(items) - 6)} more hosts)" if len(items) > 6 else "")


def _path(ctx: RoundContext, budget: str) -> list[str]:
    tree = ctx.snapshot.budgets
    share = ctx.share
    lines = [
        f"window capacity {number(share.capacity_gpu_hours, 0)} GPU-h over "
        f"{duration(ctx.snapshot.policy.lookback_s)}; ratio = usage / "
        "(effective allocation x capacity); lower goes first, level by level"
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
        alone = tree.effective_allocation(p) * ctx.snapshot.cluster.ready_gpus
        lines.append(
            f"  entitled to {counted(share.entitlement_gpus.get(p, 0), 'GPU')} this round "
            f"(its allocation alone: {number(alone, 0)})"
        )
    return lines


def _held_by_node(plan: Plan, snapshot: Snapshot, node: str) -> int:
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


def _why(ctx: RoundContext, plan: Plan, wid: WorkloadId, d: Decision) -> list[str]:
    out: list[str] = []
    snapshot = ctx.snapshot
    w = snapshot.by_id[wid]
    if (d.action, d.reason, d.occupancy) == (Action.WAIT, Reason.NO_ROOM, Occupancy.ALLOCATED):
        # Room, not fair share, keeps it waiting: where it would go and what holds that first.
        out += _placement_why(ctx, plan, wid)
        if out and wid not in ctx.share.rank:  # ranked nowhere: its node's entitlement and
            return out  # GPUs held do not bear on it (the last line says why)
    if wid in ctx.share.rank:
        rank = ctx.share.rank[wid]
        tier = ctx.tier(wid)
        out.append(
            f"fair-share order: {count(rank + 1)} of "
            f"{counted(len(ctx.share.order), 'allocated candidate')}; "
            f"{'inside' if tier is Tier.ENTITLED else 'beyond'} the ready capacity "
            f"({'entitled' if tier is Tier.ENTITLED else 'not entitled'} this round)"
        )
        at = ctx.share.grant_ratios.get(wid)
        if at:
            out.append(
                "projected ratios when its turn came (window usage plus this round's grants "
                "before it, top level first): " + ", ".join(ratio(r) for r in at)
            )
    if w.budget and d.occupancy is Occupancy.ALLOCATED:
        held = _held_by_node(plan, snapshot, w.budget)
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
        idle = int(_free_after(ctx, plan).sum())
        out.append(
            f"unallocated work only takes GPUs that no allocated workload can use; "
            f"{counted(idle, 'ready GPU')} {'is' if idle == 1 else 'are'} idle after this round"
        )
    if d.action is Action.PREEMPT:
        taken = _taken_by(plan, snapshot, wid)
        if taken:
            out.append("its GPUs go to: " + ", ".join(taken))
    return out


def _placement_why(ctx: RoundContext, plan: Plan, wid: WorkloadId) -> list[str]:
    """Why allocated work waits for room (`no_room`): the shape it needs, the ready hosts that
    could hold it, what holds them after this round (soonest free first), and, when the work
    the contract keeps leaves it no place even with all other work gone, by how much."""
    snapshot, hosts = ctx.snapshot, ctx.hosts
    w = snapshot.by_id[wid]
    shape = ctx.unreserved_shapes.get(wid, ctx.shapes[wid])
    typed = shape.types[hosts.type_of]
    if not (typed & hosts.ready).any():
        return [f"no host of its GPU type is ready: {_down_hosts(ctx, typed)}"]
    if wid not in ctx.placeable:  # (a plan from a file may say no_room for such work)
        return []
    candidates = np.flatnonzero(shape.allowed)
    free = _free_after(ctx, plan)
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
        given = [f"{hosts.names[i]}: {_holders(ctx, plan, i, given=True)}" for i in room]
        if not any(line.endswith(": ") for line in given):
            held, them = [i for i in held if i not in room], "the others"  # not again below
            out.append(
                "beside the work the contract keeps this round there is room of its shape, "
                "which this round's plan gives to other work (its fair-share order is below): "
                + "; ".join(given)
            )
    if held:
        release = _release(ctx, plan, wid)
        held.sort(key=lambda i: (release[i], i))
        shown = "; ".join(f"{hosts.names[i]}: {_holders(ctx, plan, i)}" for i in held[:6])
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


def _holders(ctx: RoundContext, plan: Plan, host: int, given: bool = False) -> str:
    """Who holds GPUs on a host after the plan, and until when: `b-run0 (protected until T)`;
    with `given`, only the work the plan chose to put or keep there (not what the contract
    keeps)."""
    name = ctx.hosts.names[host]
    out = []
    for d in plan.decisions:
        if not d.action.holds_gpus or name not in d.hosts:
            continue
        if given and ctx.standings[d.workload].protected:
            continue
        if d.protected_until is not None and d.protected_until > ctx.snapshot.now:
            until = f"protected until {format_time(d.protected_until)}"
        elif d.occupancy is Occupancy.UNALLOCATED:
            until = "unallocated, yields to allocated work at once"
        elif d.reason is Reason.COSTLY_TO_STOP:
            until = "costly to stop, no known end"
        else:
            until = f"past its protection, {d.reason.value}"
        out.append(f"{d.workload} ({counted(d.hosts[name], 'GPU')}, {until})")
    return ", ".join(out)


def _taken_by(plan: Plan, snapshot: Snapshot, wid: WorkloadId) -> list[str]:
    hosts = set(snapshot.by_id[wid].hosts)
    return [
        f"{d.workload} ({d.reason.value})"
        for d in plan.decisions
        if d.action is Action.START and hosts & set(d.hosts)
    ][:10]


def _free_after(ctx: RoundContext, plan: Plan) -> np.ndarray:
    used = np.zeros(ctx.hosts.count, np.int64)
    for d in plan.decisions:
        if d.action.holds_gpus:
            for h, g in d.hosts.items():
                used[ctx.hosts.index[h]] += g
    return np.where(ctx.hosts.ready, np.maximum(ctx.hosts.cap - used, 0), 0)


def _change(ctx: RoundContext, plan: Plan, wid: WorkloadId, d: Decision) -> list[str]:
    if d.action is not Action.WAIT:
        return []
    w = ctx.snapshot.by_id[wid]
    shape = ctx.unreserved_shapes.get(wid, ctx.shapes[wid])
    hosts = ctx.hosts
    held = _reservation_lines(plan, wid)
    if d.reason is Reason.RESERVED:
        return held
    # Work that never fits (even the empty ready cluster) has room held for it by nobody and
    # no share that would help: only the request or the cluster can change (below).
    own = _own_node_in_the_way(ctx, plan, wid) if wid in ctx.placeable else []
    if (
        not shape.single
        and wid in ctx.placeable
        and d.occupancy is Occupancy.ALLOCATED
        and all(r.workload != wid for r in plan.reservations)
    ):
        why: dict[WorkloadId, str] = {}
        reservations(ctx.snapshot, ctx.standings, hosts, why)
        if wid in why and not (own and w.budget and why[wid].startswith(f"{w.budget} is owed")):
            held.append(f"no hosts are held back for it (models/round.md 8): {why[wid]}")
        elif wid in why:  # the same numbers as the line below: say it once
            held.append(
                "no hosts are held back for it (models/round.md 8): they could idle in vain "
                "while its node is beyond what it is owed"
            )
    held += own
    if d.reason is Reason.GPU_TYPE:  # no host of that type at all, ready or not
        return [f"a host with GPU type {w.gpu_type} (types here: {', '.join(hosts.types)})"]
    typed = shape.types[hosts.type_of]
    back = _down_hosts(ctx, typed)  # hosts of its type that are not ready
    if not (typed & hosts.ready).any():
        return held + [f"a host of its GPU type ready again: {back}"]
    if wid not in ctx.placeable:  # it does not fit even the empty ready cluster
        return held + _never_fits(ctx, w, shape, typed, back)
    free = _free_after(ctx, plan)
    room = place(ctx.shapes[wid], free, hosts)  # under this round's reservations
    out = []
    if room is not None:
        where = ", ".join(f"{hosts.names[h]} ({counted(int(free[h]), 'GPU')} free)" for h in room)
        out.append(f"nothing about room: a place of its shape is free after this round ({where})")
    else:
        if shape.single:
            best = int(free[shape.allowed].max()) if shape.allowed.any() else 0
            out.append(
                f"{counted(w.gpus, 'GPU')} free on one host; the most free on a host it may use "
                f"is {count(best)}"
            )
        else:
            need = shape.hosts_needed(int(hosts.cap[shape.allowed].max()))
            whole = shape.allowed & (free == hosts.cap)
            per_block = np.bincount(hosts.block_of[whole], minlength=len(hosts.blocks))
            scope = "in one block" if shape.block else "anywhere"
            best = int(per_block.max()) if shape.block else int(whole.sum())
            out.append(
                f"{counted(need, 'whole free host')} {scope}; the best it has now is {count(best)}"
            )
        when = _earliest(ctx, plan, wid)
        if when is not None and when > ctx.snapshot.now:  # (not a time that has come)
            out.append(
                f"room of that shape frees at the earliest at {format_time(when)}, when the "
                "protection of the work there ends (work still entitled then keeps running)"
            )
        elif when is None:
            out.append(
                "every place of that shape is held, at least in part, by work past its "
                "protection that ranks ahead of it this round: it starts when such work ends, "
                "or when its own node moves ahead in the fair-share order"
            )
    beyond = _beyond_entitlement(ctx, plan, w)
    if d.reason is Reason.OVER_ALLOCATION and beyond:
        out.append(
            f"or {beyond} drops back within its entitlement: its ratio must fall below "
            "those of the nodes ahead of it (their work is entitled first)"
        )
    if d.reason is Reason.TOPOLOGY and shape.block and _fits(ctx, shape, free, block=False):
        out.append("or the workload accepts topology any (it fits across blocks now)")
    return held + out


def _down_hosts(ctx: RoundContext, typed: np.ndarray) -> str:
    """The hosts of `typed` that take no work, with their state: `h3 (unhealthy), h4 ...`."""
    hosts, by_name = ctx.hosts, ctx.snapshot.cluster.by_name
    down = [hosts.names[i] for i in np.flatnonzero(typed & ~hosts.ready)]
    shown = ", ".join(f"{h} ({by_name[h].state.value})" for h in down[:6])
    return shown + (f" and {len(down) - 6} more" if len(down) > 6 else "")


def _fits(ctx: RoundContext, shape: Shape, free: np.ndarray, block: bool) -> bool:
    """Whether `shape`, with topology block or not, fits into `free` on the hosts it allows."""
    loose = Shape(shape.gpus, shape.types, shape.allowed, shape.single, block)
    return place(loose, free, ctx.hosts) is not None


def _largest(ctx: RoundContext, usable: np.ndarray, block: bool) -> int:
    """The most GPUs one workload can get of the `usable` hosts, all empty: one host, or whole
    hosts of one GPU type and size (in one block with `block`)."""
    hosts = ctx.hosts
    most = int(hosts.cap[usable].max()) if usable.any() else 0
    for kind, (_, capacity) in enumerate(hosts.kinds):
        mine = usable & (hosts.kind_of == kind)
        if block:
            per_block = np.bincount(hosts.block_of[mine], minlength=len(hosts.blocks))
            most = max(most, int(per_block.max()) * capacity)
        else:
            most = max(most, int(mine.sum()) * capacity)
    return most


def _never_fits(
    ctx: RoundContext, w: Workload, shape: Shape, typed: np.ndarray, back: str
) -> list[str]:
    """What would make room for work the empty ready cluster has no place for: fewer GPUs
    (the most it could get), topology any (when that fits), hosts back (when with them it
    would fit), each only when it would help."""
    hosts = ctx.hosts
    ready = typed & hosts.ready
    everything = np.where(typed, hosts.cap, 0)
    strict = Shape(shape.gpus, shape.types, ready, shape.single, shape.block)
    if shape.block and _fits(ctx, strict, np.where(ready, hosts.cap, 0), block=False):
        most = _largest(ctx, ready, block=True)
        out = [
            f"no network block has room for it, even empty (one block gives at most "
            f"{counted(most, 'GPU')} of its kind): the workload accepts topology any (it fits "
            "the ready cluster across blocks), or asks for at most "
            f"{counted(most, 'GPU')}"
        ]
    else:
        most = _largest(ctx, ready, block=False)
        out = [
            f"it asks for {counted(w.gpus, 'GPU')}; the ready cluster gives at most "
            f"{counted(most, 'GPU')} of its GPU type to one workload: ask for at most "
            f"{count(most)}"
        ]
    whole = Shape(shape.gpus, shape.types, typed, shape.single, shape.block)
    if back and place(whole, everything, hosts) is not None:
        out.append(f"or hosts come back: {back}")
    return out


def _beyond_entitlement(ctx: RoundContext, plan: Plan, w: Workload) -> str:
    """The deepest node on the workload's budget path that, with the workload, would hold more
    allocated GPUs than it is entitled to this round ("" when none would)."""
    if not w.budget:
        return ""
    entitlement = ctx.share.entitlement_gpus
    beyond = ""
    for p in path_prefixes(w.budget):  # type: ignore[arg-type]
        if _held_by_node(plan, ctx.snapshot, p) + w.gpus > entitlement.get(p, 0):
            beyond = p
    return beyond


def _own_node_in_the_way(ctx: RoundContext, plan: Plan, wid: WorkloadId) -> list[str]:
    """When the workload and what its own node holds exceed what the node is owed, the node's
    own running work is what keeps it waiting: say how much of it, and which."""
    snapshot = ctx.snapshot
    w = snapshot.by_id[wid]
    if not w.budget or plan.decision(wid).occupancy is not Occupancy.ALLOCATED:
        return []
    ready = int(ctx.hosts.cap[ctx.hosts.ready].sum())
    # Whole GPUs, tolerant of float error (0.3 x 0.75 x 120 is 26.999...: owed 27).
    owed = math.floor(snapshot.budgets.effective_allocation(w.budget) * ready + 1e-9)
    held = _held_by_node(plan, snapshot, w.budget)
    if w.gpus + held <= owed:
        return []
    mine = sorted(
        (
            (d.gpus_held, snapshot.by_id[d.workload])
            for d in plan.decisions
            if d.occupancy is Occupancy.ALLOCATED
            and d.action.holds_gpus
            and snapshot.by_id[d.workload].budget == w.budget
        ),
        key=lambda gw: (-gw[0], gw[1].id),
    )
    shown = ", ".join(f"{o.id} ({counted(g, 'GPU')}, priority {o.priority})" for g, o in mine[:5])
    more = f" and {count(len(mine) - 5)} more" if len(mine) > 5 else ""
    if w.gpus > owed:
        first = (
            f"it asks for more than all {w.budget} is owed ({counted(owed, 'GPU')}: its "
            f"effective allocation x the {counted(ready, 'ready GPU')}): it is entitled only "
            f"when {w.budget} holds "
            "nothing else and is behind over the window (models/round.md 2.3)"
        )
    else:
        first = (
            f"{w.budget} is owed {counted(owed, 'GPU')} (its effective allocation x the "
            f"{counted(ready, 'ready GPU')}): with its {count(w.gpus)} it is within that only "
            f"while {w.budget} holds at most {counted(owed - w.gpus, 'other allocated GPU')}"
        )
    return [f"{first}; it holds {count(held)}" + (f": {shown}{more}" if shown else "")]


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


def _reservation_lines(plan: Plan, wid: WorkloadId) -> list[str]:
    """What the plan's reservations mean for `wid`: its own, or the ones in its way."""
    w = plan.decision(wid)
    out = []
    for r in plan.reservations:
        names = ", ".join(r.hosts)
        when = format_time(r.ready_at)
        if r.workload == wid:
            out.append(
                f"hosts {names} are reserved for it: no other allocated work starts there, and "
                f"their protected work ends by {when}, when it can start"
            )
        elif w.reason is Reason.RESERVED:
            out.append(
                f"hosts {names} are reserved for {r.workload} until it starts (its room frees "
                f"by {when}); it starts elsewhere when room of its shape frees there"
            )
    return out


def _earliest(ctx: RoundContext, plan: Plan, wid: WorkloadId) -> datetime | None:
    """The soonest time at which protection ends on enough hosts for the workload to fit; None
    when every place it could have is held, at least in part, by work without an end in sight
    (past its protection but ranked ahead of it this round, or unallocated work in the way of
    unallocated work)."""
    snapshot = ctx.snapshot
    shape = ctx.unreserved_shapes.get(wid, ctx.shapes[wid])
    hosts = ctx.hosts
    release = _release(ctx, plan, wid)
    candidates = np.flatnonzero(shape.allowed)
    if len(candidates) == 0:
        return None
    if shape.single:
        seconds = float(release[candidates].min())
    else:
        need = shape.hosts_needed(int(hosts.cap[candidates].max()))
        seconds = math.inf
        groups = (
            [
                candidates[hosts.block_of[candidates] == b]
                for b in np.unique(hosts.block_of[candidates])
            ]
            if shape.block
            else [candidates]
        )
        for group in groups:
            if len(group) >= need:
                seconds = min(seconds, float(np.sort(release[group])[need - 1]))
    if math.isinf(seconds):
        return None
    return snapshot.now + timedelta(seconds=seconds)


def _release(ctx: RoundContext, plan: Plan, wid: WorkloadId) -> np.ndarray:
    """Per host, the seconds until every holder there after the plan may yield to `wid`:
    protected work when its protection ends, unallocated work at once (to allocated work),
    other work never that anyone knows of (inf)."""
    snapshot, hosts = ctx.snapshot, ctx.hosts
    allocated = ctx.standings[wid].occupancy is Occupancy.ALLOCATED
    release = np.zeros(hosts.count)
    for d in plan.decisions:
        if not d.action.holds_gpus:
            continue
        if d.protected_until is not None and d.protected_until > snapshot.now:
            wait = (d.protected_until - snapshot.now).total_seconds()
        elif allocated and d.occupancy is Occupancy.UNALLOCATED:
            wait = 0.0  # unallocated work yields to allocated work at once
        else:
            wait = math.inf
        for h in d.hosts:
            i = hosts.index[h]
            release[i] = max(release[i], wait)
    return release
