"""Passes that every solver's answer goes through before it becomes a plan (models/round.md, 7).

They only ever add value: keep preempted work whose GPUs end up free, fill idle GPUs that
queued work can use, let waiting allocated work
displace unallocated work (invariant 4), and swap a started workload for a waiting one of
higher priority in the same budget node that fits in its place (invariant 6). Each pass is a
fixed point of the next, so a solver's answer that already keeps the invariants passes through
unchanged.
"""

from __future__ import annotations

from collections import defaultdict

from alloc.domain import Occupancy, WorkloadId
from alloc.policy.weights import Tier
from alloc.solve.context import RoundContext
from alloc.solve.load import Load
from alloc.solve.placement import place, place_displacing, place_on

MAX_PASSES = 20


def complete(ctx: RoundContext, load: Load) -> Load:
    for _ in range(MAX_PASSES):
        changed = restore(ctx, load)
        changed |= fill(ctx, load)
        changed |= displace_unallocated(ctx, load)
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


def displace_unallocated(ctx: RoundContext, load: Load) -> bool:
    """Invariant 4: no unallocated work holds GPUs a waiting allocated workload could use."""
    changed = False
    for wid in ctx.order:
        if ctx.tier(wid) is Tier.UNALLOCATED or load.holds(wid):
            continue
        if load.reclaim_total.get(Tier.UNALLOCATED, 0) == 0:
            break
        if ctx.standings[wid].workload.running:
            changed |= _keep_displacing(ctx, load, wid)
            continue
        found = place_displacing(ctx.shapes[wid], load, (Tier.UNALLOCATED,))
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
        need = g - int(free[h])
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
    waiting one of higher priority that fits in its place."""
    groups: dict[tuple[object, Occupancy], list[WorkloadId]] = defaultdict(list)
    for wid in ctx.order:
        s = ctx.standings[wid]
        if not s.workload.running:
            groups[(s.workload.budget, s.occupancy)].append(wid)
    changed = False
    for members in groups.values():
        if len({ctx.standings[w].workload.priority for w in members}) < 2:
            continue
        for b in members:
            if load.holds(b):
                continue
            pb = ctx.standings[b].workload.priority
            ahead = sorted(
                (a for a in members if load.holds(a) and ctx.standings[a].workload.priority < pb),
                key=lambda a: ctx.standings[a].workload.priority,
            )
            for a in ahead:
                placement = load.release(a)
                found = place(ctx.shapes[b], load.free(), ctx.hosts)
                if found is None:
                    ctx.hold(load, a, placement)
                    continue
                ctx.hold(load, b, found)
                changed = True
                break
    return changed
