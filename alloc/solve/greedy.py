"""The greedy fallback: the fair-share sort with best-fit placement (models/round.md, section 6).

Candidates are taken in the round's order: entitled allocated work by fair-share rank, then
allocated work beyond its entitlement, then unallocated work. Running work stays where it is
unless displaced. A workload that does not fit on free GPUs may displace unallocated work and,
when it is itself entitled, allocated work that is beyond its own entitlement and past its
minimum runtime; the cheapest such set is chosen (lost value plus preemption cost).
"""

from __future__ import annotations

from alloc.domain import WorkloadId
from alloc.policy.weights import Tier
from alloc.solve.context import RoundContext
from alloc.solve.load import Load
from alloc.solve.placement import Displacement, place_displacing
from alloc.solve.problem import Shape

# Rebalancing never preempts more GPUs of work over its entitlement than this many times what
# the entitled workload asks for (at least a host's worth): a 1-GPU job does not send a 200-GPU
# run back to the queue. Unallocated work yields whatever its size (invariant 4).
MAX_DISPLACED_PER_GPU = 8


def displaceable_tiers(tier: Tier) -> tuple[Tier, ...]:
    if tier is Tier.ENTITLED:
        return (Tier.UNALLOCATED, Tier.OVER)
    if tier is Tier.OVER:
        return (Tier.UNALLOCATED,)
    return ()


def find_place(ctx: RoundContext, load: Load, wid: WorkloadId) -> Displacement | None:
    """The cheapest place for a queued workload, displacing what its tier may displace.

    The answer depends only on the shape, the tier and the load, so a search that failed is
    not repeated until the load changes (a long queue holds many workloads of one shape)."""
    shape = ctx.shapes[wid]
    tier = ctx.tier(wid)
    key = (id(shape), tier)
    if load.failed_at(key, shape):
        return None
    found = _find_place(ctx, load, shape, tier)
    if found is None:
        load.fail(key, shape)
    return found


def _find_place(ctx: RoundContext, load: Load, shape: Shape, tier: Tier) -> Displacement | None:
    tiers = displaceable_tiers(tier)
    found = place_displacing(shape, load, tiers)
    if found is None or Tier.OVER not in tiers:
        return found
    over = sum(sum(load.held[v].values()) for v in found.victims if ctx.tier(v) is Tier.OVER)
    if over > max(MAX_DISPLACED_PER_GPU * shape.gpus, int(ctx.hosts.cap.max())):
        return place_displacing(shape, load, (Tier.UNALLOCATED,))
    return found


def greedy(ctx: RoundContext) -> Load:
    load = ctx.initial_load()
    for wid in ctx.order:
        if ctx.standings[wid].workload.running:
            continue  # kept where it runs unless displaced; never moved
        found = find_place(ctx, load, wid)
        if found is None:
            continue
        for v in found.victims:
            load.release(v)
        ctx.hold(load, wid, found.placement)
    return load
