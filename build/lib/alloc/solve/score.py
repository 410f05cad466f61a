"""The round's objective evaluated on a finished assignment (models/round.md, section 4).

Both solvers are scored by this one function, so their plans can be compared; the MILP's own
objective equals it on every assignment the model can express.
"""

from __future__ import annotations

import numpy as np

from alloc.domain import Topology
from alloc.policy.weights import SPREAD_COST_PER_BLOCK, block_cost_per_gpu, host_cost_per_gpu
from alloc.solve.context import RoundContext
from alloc.solve.load import Load


def compaction_costs(ctx: RoundContext) -> tuple[np.ndarray, np.ndarray]:
    """Per host: cost per GPU of small work placed there, and of the host taken whole."""
    hosts = ctx.hosts
    free = ctx.start_free()
    whole = hosts.ready & (free == hosts.cap)
    whole_per_block = np.bincount(hosts.block_of[whole], minlength=len(hosts.blocks))
    small = host_cost_per_gpu(free, hosts.cap)
    whole_cost = block_cost_per_gpu(
        whole_per_block[hosts.block_of], hosts.hosts_per_block[hosts.block_of]
    )
    return small, whole_cost


def objective(ctx: RoundContext, load: Load) -> float:
    value = sum(ctx.weights.hold_value.get(wid, 0.0) for wid in load.held)
    lost = sum(cost for wid, cost in ctx.weights.preempt_cost.items() if not load.holds(wid))
    small, whole = compaction_costs(ctx)
    compaction = 0.0
    for wid, placement in load.held.items():
        w = ctx.standings[wid].workload
        if w.running:
            continue
        blocks = set()
        for h, g in placement.items():
            if g == ctx.hosts.cap[h]:
                compaction += g * whole[h]
            else:
                compaction += g * small[h]
            blocks.add(int(ctx.hosts.block_of[h]))
        if w.topology is Topology.ANY and len(blocks) > 1:
            compaction += SPREAD_COST_PER_BLOCK * (len(blocks) - 1)
    return float(value - lost - compaction)
