"""When a round cannot change anything, the simulator need not run it.

For policies that keep the contract a plan changes something only if (a) some queued workload
can start, which needs room on free GPUs plus GPUs of work the solvers may displace (running
work past its protection, and unallocated work), or (b) the contract forces an action: work
past its protection on a draining host, work on a host in maintenance, a draining host that
is empty and due to be handed over. Preemptions only ever make room for starts (a preemption
that frees GPUs nobody takes is undone by the repair pass), so when neither holds the plan
keeps everything and starts nothing. This is checked from the world in O(running + hosts) and
one vectorised placement test per distinct request shape.
"""

from __future__ import annotations

import numpy as np

from alloc.domain import HostState
from alloc.sim.world import World


def nothing_to_decide(world: World) -> bool:
    if not world.queued and world.trouble == 0:
        return True  # the common case, in O(1)
    now = world.now_s
    hosts = world.hosts
    names = [n for n in hosts if n not in world.removed]
    index = {n: i for i, n in enumerate(names)}
    free = np.zeros(len(names), np.int64)
    room = np.zeros(len(names), np.int64)  # free plus displaceable
    cap = np.zeros(len(names), np.int64)
    ready = np.zeros(len(names), bool)
    for i, n in enumerate(names):
        h = hosts[n]
        cap[i] = h.gpus
        ready[i] = h.state is HostState.READY
        if h.state.draining and world.used[n] == 0:
            return False  # an empty draining host is due to be handed over
        if h.state is HostState.MAINTENANCE and world.used[n]:
            return False
        if ready[i]:
            free[i] = h.gpus - world.used[n]
    for sj in world.running.values():
        protected = sj.allocated and now < sj.seg_start_s + sj.job.min_runtime_s
        for n, gpus in sj.hosts.items():
            i = index[n]
            if not ready[i]:
                if not protected:
                    return False  # unprotected work on a draining host must go
                continue
            if not protected:
                room[i] += gpus
    room += free
    if not world.queued:
        return True
    largest = int(cap[ready].max()) if ready.any() else 0
    whole = ready & (room == cap)
    seen: set[tuple[int, str]] = set()
    for sj in world.queued.values():
        key = (sj.job.gpus, sj.topology.value)
        if key in seen:
            continue
        seen.add(key)
        g = sj.job.gpus
        if g <= largest:
            if np.any(ready & (cap >= g) & (room >= g)):
                return False
        elif _whole_hosts_fit(whole, cap, g):
            return False
    return True


def _whole_hosts_fit(whole: np.ndarray, cap: np.ndarray, gpus: int) -> bool:
    """Enough whole hosts of one size anywhere (ignoring blocks: conservative)."""
    for c in np.unique(cap[whole]).tolist():
        if np.count_nonzero(whole & (cap == c)) >= -(-gpus // c):
            return True
    return False
