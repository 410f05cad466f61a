"""The greedy fallback: the fair-share sort with best-fit placement (models/round.md, section 6).

Candidates are taken in the round's order: entitled allocated work by fair-share rank, then
allocated work beyond its entitlement, then unallocated work. Running work stays where it is
unless displaced. A workload that does not fit on free GPUs may displace unallocated work and,
when it is itself entitled, allocated work that is beyond its own entitlement and past its
minimum runtime; the cheapest such set is chosen (lost value plus preemption cost).
"""

from __future__ import annotations

from alloc.policy.weights import Tier
from alloc.solve.context import RoundContext
from alloc.solve.load import Load
from alloc.solve.placement import place_displacing


def displaceable_tiers(tier: Tier) -> tuple[Tier, ...]:
    if tier is Tier.ENTITLED:
        return (Tier.UNALLOCATED, Tier.OVER)
    if tier is Tier.OVER:
        return (Tier.UNALLOCATED,)
    return ()


def greedy(ctx: RoundContext) -> Load:
    load = ctx.initial_load()
    for wid in ctx.order:
        if ctx.standings[wid].workload.running:
            continue  # kept where it runs unless displaced; never moved
        found = place_displacing(ctx.shapes[wid], load, displaceable_tiers(ctx.tier(wid)))
        if found is None:
            continue
        for v in found.victims:
            load.release(v)
        ctx.hold(load, wid, found.placement)
    return load
