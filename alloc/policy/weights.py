"""Objective weights of one round (models/round.md, section 4).

The terms are tiered so that each dominates the next, in the order SPEC.md gives:
serve allocated demand in fair-share order, then avoid preemptions (weighted by the work they
destroy), then place compactly, then fill idle GPUs with unallocated work. Every weight is per GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

import numpy as np

from alloc.domain import Occupancy, Snapshot, WorkloadId
from alloc.policy.contract import Standing
from alloc.policy.fairshare import FairShare

# (4.1) value per GPU held after the round, by tier; the rank spread orders work inside a tier.
ENTITLED_VALUE = 3.0
OVER_VALUE = 1.0
ALLOCATED_RANK_SPREAD = 0.1
UNALLOCATED_VALUE = 0.010
UNALLOCATED_RANK_SPREAD = 0.001
# (4.2) preemption cost per GPU: a fixed part plus a part for the work destroyed, saturating
# at LOST_WORK_SATURATION_H lost hours per GPU. Fixed parts exceed the rank spreads (no churn
# inside a tier); the largest allocated cost stays below ENTITLED - OVER - spread, so work beyond
# its entitlement always yields to entitled work.
ALLOCATED_PREEMPT_FIXED = 0.2
ALLOCATED_PREEMPT_LOST = 0.7
UNALLOCATED_PREEMPT_FIXED = 0.004
UNALLOCATED_PREEMPT_LOST = 0.004
LOST_WORK_SATURATION_H = 8.0
# (4.3) compaction, per GPU placed: small work on a host costs in proportion to that host's free
# fraction (best fit); whole hosts cost in proportion to their block's free fraction (keep whole
# blocks for the largest gangs); a gang spread over blocks pays per extra block.
HOST_FREE_COST = 0.002
BLOCK_FREE_COST = 0.004
SPREAD_COST_PER_BLOCK = 0.003


class Tier(StrEnum):
    PROTECTED = "protected"
    ENTITLED = "entitled"
    OVER = "over"
    UNALLOCATED = "unallocated"


@dataclass(frozen=True, slots=True)
class Weights:
    tier: Mapping[WorkloadId, Tier]
    hold_value: Mapping[WorkloadId, float]  # gained when it holds GPUs after the round
    preempt_cost: Mapping[WorkloadId, float]  # paid when optional running work is preempted


def weights(
    snapshot: Snapshot, standings: Mapping[WorkloadId, Standing], share: FairShare
) -> Weights:
    tier: dict[WorkloadId, Tier] = {}
    value: dict[WorkloadId, float] = {}
    cost: dict[WorkloadId, float] = {}
    n_alloc = max(1, len(share.order))
    n_unalloc = max(1, len(share.unallocated_order))
    for wid, rank in share.rank.items():
        g = standings[wid].workload.gpus
        top = 1.0 - rank / n_alloc
        if wid in share.entitled:
            tier[wid], value[wid] = (
                Tier.ENTITLED,
                g * (ENTITLED_VALUE + ALLOCATED_RANK_SPREAD * top),
            )
        else:
            tier[wid], value[wid] = Tier.OVER, g * (OVER_VALUE + ALLOCATED_RANK_SPREAD * top)
    for rank, wid in enumerate(share.unallocated_order):
        g = standings[wid].workload.gpus
        tier[wid] = Tier.UNALLOCATED
        value[wid] = g * (UNALLOCATED_VALUE + UNALLOCATED_RANK_SPREAD * (1.0 - rank / n_unalloc))
    for wid, s in standings.items():
        if s.protected:
            # Not a decision: protected work is kept whatever the solver does, so it adds nothing
            # to the objective (and does not dilute the reported gap).
            tier[wid], value[wid] = Tier.PROTECTED, 0.0
        if not s.optional_running:
            continue
        lost = min(1.0, s.lost_hours / LOST_WORK_SATURATION_H)
        g = s.workload.gpus
        if s.occupancy is Occupancy.ALLOCATED:
            cost[wid] = g * (ALLOCATED_PREEMPT_FIXED + ALLOCATED_PREEMPT_LOST * lost)
        else:
            cost[wid] = g * (UNALLOCATED_PREEMPT_FIXED + UNALLOCATED_PREEMPT_LOST * lost)
    return Weights(MappingProxyType(tier), MappingProxyType(value), MappingProxyType(cost))


def host_cost_per_gpu(free_gpus: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """(4.3) Cost per GPU of small work on a host with `free_gpus` free as the round starts."""
    return HOST_FREE_COST * free_gpus / capacity


def block_cost_per_gpu(whole_free_hosts: np.ndarray, hosts_in_block: np.ndarray) -> np.ndarray:
    """(4.3) Cost per GPU of a whole host taken in a block with that many whole free hosts."""
    return BLOCK_FREE_COST * whole_free_hosts / hosts_in_block
