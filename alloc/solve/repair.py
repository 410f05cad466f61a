"""Passes that every solver's answer goes through before it becomes a plan (models/round.md, 7).

They keep preempted work whose GPUs end up free, fill idle GPUs that queued work can use, let
waiting allocated work displace unallocated work (invariant 4) and waiting entitled work
displace work beyond its entitlement (the contract's rebalancing), and swap a started workload
for a waiting one of higher priority in the same budget node that fits in its place
(invariant 6). A solver's answer that already keeps all this passes through unchanged.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping

from alloc.domain import Occupancy, WorkloadId
from alloc.policy.weights import Tier
from alloc.solve.context import RoundContext
from alloc.solve.greedy import displaceable_tiers, find_place
from alloc.solve.load import Load
from alloc.solve.placement import PlaceIndex, place, place_on
from alloc.solve.problem import Shape

MAX_PASSES = 20


def complete(ctx: RoundContext, load: Load) -> Load:
    for _ in range(MAX_PASSES):
        changed = restore(ctx, load)
        changed |= fill(ctx, load)
        changed |= displace(ctx, load)
        changed |= priority_swaps(ctx, load)
        if not changed:
            break
    return load


def restore(ctx: RoundContext, load: Load) -> bool:
    """Keep running work that a solver preempted although its GPUs end the round free."""
    changed = False
    free = load.free()
    for wid in ctx.order:
        if load.holds(wid) or not ctx.standings[wid].optional_running:
            continue
        placement = ctx.running_placement(wid)
        if all(free[h] >= g for h, g in placement.items()):
            ctx.hold(load, wid, placement)
            changed = True
    return changed


def fill(ctx: RoundContext, load: Load) -> bool:
    """Start queued work, in the round's order, wherever it fits on free GPUs."""
    changed = False
    for wid in ctx.order:
        if load.holds(wid) or ctx.standings[wid].workload.running:
            continue
        placement = place_on(ctx.shapes[wid], load)
        if placement is not None:
            ctx.hold(load, wid, placement)
            changed = True
    return changed


def displace(ctx: RoundContext, load: Load) -> bool:
    """Invariant 4, and rebalancing: no unallocated work holds GPUs a waiting allocated workload
    could use, and no work beyond its entitlement holds GPUs waiting entitled work could use."""
    changed = False
    for wid in ctx.order:
        if ctx.tier(wid) is Tier.UNALLOCATED or load.holds(wid):
            continue
        tiers = displaceable_tiers(ctx.tier(wid))
        if not any(load.reclaim_total.get(t, 0) for t in tiers):
            continue
        if ctx.standings[wid].workload.running:
            changed |= _keep_displacing(ctx, load, wid)
            continue
        found = find_place(ctx, load, wid)
        if found is None:
            continue
        for v in found.victims:
            load.release(v)
        ctx.hold(load, wid, found.placement)
        changed = True
    return changed


def _keep_displacing(ctx: RoundContext, load: Load, wid: WorkloadId) -> bool:
    """Keep a preempted allocated workload where it ran if unallocated work stands in its way."""
    placement = ctx.running_placement(wid)
    free = load.free()
    release: set[WorkloadId] = set()
    for h, g in placement.items():
        if not ctx.hosts.ready[h]:
            return False
        # GPUs on h already freed by victims chosen for earlier hosts count too.
        need = g - int(free[h]) - sum(load.held[v].get(h, 0) for v in release)
        for v in sorted(load.on_host[h] - release, key=lambda v: (ctx.tier(v), v)):
            if need <= 0:
                break
            if ctx.tier(v) is not Tier.UNALLOCATED or ctx.standings[v].protected:
                continue
            release.add(v)
            need -= load.held[v][h]
        if need > 0:
            return False
    for v in release:
        load.release(v)
    ctx.hold(load, wid, placement)
    return True


def priority_swaps(ctx: RoundContext, load: Load) -> bool:
    """Invariant 6: inside one budget node (and occupancy class) no workload starts ahead of a
    waiting one of higher priority that fits in its place: a lower-priority start whose place
    fits the waiting workload yields it."""
    groups: dict[tuple[object, Occupancy], list[WorkloadId]] = defaultdict(list)
    for wid in ctx.order:
        s = ctx.standings[wid]
        if not s.workload.running:
            groups[(s.workload.budget, s.occupancy)].append(wid)
    changed = False
    for members in groups.values():
        priority = {w: ctx.standings[w].workload.priority for w in members}
        if len(set(priority.values())) < 2:
            continue
        waiting = [b for b in members if not load.holds(b)]
        started = [a for a in members if load.holds(a)]
        swaps = yield_to_priority(waiting, started, priority, ctx.shapes, load, ctx.hold)
        changed |= bool(swaps)
    return changed


def yield_to_priority(
    waiting: list[WorkloadId],
    started: list[WorkloadId],
    priority: Mapping[WorkloadId, int],
    shapes: Mapping[WorkloadId, Shape],
    load: Load,
    hold: Callable[[Load, WorkloadId, dict[int, int]], None],
) -> list[tuple[WorkloadId, WorkloadId]]:
    """Invariant 6 inside one group (a budget node and occupancy class): each waiting workload,
    highest priority first, takes the place of a started one of lower priority when it fits
    there with the free GPUs. `hold(load, workload, placement)` gives a placement. Returns the
    (yielded, placed) pairs; the event pass (alloc/solve/event.py) shares it with the repair."""
    swaps: list[tuple[WorkloadId, WorkloadId]] = []
    level: int | None = None
    ahead: list[WorkloadId] = []
    index = PlaceIndex(load.hosts, [])
    for b in sorted(waiting, key=lambda b: -priority[b]):
        if level != priority[b]:
            level = priority[b]
            ahead = sorted(
                (a for a in started if load.holds(a) and priority[a] < level),
                key=lambda a: priority[a],
            )
            index = PlaceIndex(load.hosts, [load.held[a] for a in ahead])
        if not ahead:
            continue
        found = index.find(shapes[b], load.free())
        if found is None:
            continue
        placement = load.release(ahead[found])
        target = place(shapes[b], load.free(), load.hosts)
        if target is None:  # cannot happen: it fits on free plus that place
            hold(load, ahead[found], placement)
            continue
        index.remove(found)
        hold(load, b, target)
        swaps.append((ahead[found], b))
    return swaps
