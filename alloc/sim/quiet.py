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

from dataclasses import dataclass

import numpy as np

from alloc.domain import Cluster, HostName, HostState
from alloc.sim.world import World


@dataclass(frozen=True, slots=True)
class _Hosts:
    """The cluster's hosts as arrays, built once per `World.cluster()` (hosts changed)."""

    cluster: Cluster
    names: tuple[HostName, ...]
    index: dict[HostName, int]
    cap: np.ndarray
    types: tuple[str, ...]
    ready: np.ndarray
    draining: np.ndarray
    maintenance: np.ndarray


_last: list[_Hosts] = []  # a one-entry cache: the cluster of the last call


def _hosts(world: World) -> _Hosts:
    cluster = world.cluster()
    if _last and _last[0].cluster is cluster:
        return _last[0]
    hosts = cluster.hosts
    table = _Hosts(
        cluster,
        tuple(h.name for h in hosts),
        {h.name: i for i, h in enumerate(hosts)},
        np.array([h.gpus for h in hosts], np.int64),
        tuple(h.gpu_type for h in hosts),
        np.array([h.state is HostState.READY for h in hosts], bool),
        np.array([h.state.draining for h in hosts], bool),
        np.array([h.state is HostState.MAINTENANCE for h in hosts], bool),
    )
    _last[:] = [table]
    return table


def nothing_to_decide(world: World) -> bool:
    if not world.queued and world.trouble == 0:
        return True  # the common case, in O(1)
    now = world.now_s
    t = _hosts(world)
    index, cap, ready = t.index, t.cap, t.ready
    used = np.fromiter((world.used[n] for n in t.names), np.int64, len(t.names))
    if world.trouble:
        if np.any(t.draining & (used == 0)):
            return False  # an empty draining host is due to be handed over
        if np.any(t.maintenance & (used > 0)):
            return False
    free = np.where(ready, cap - used, 0)
    room = np.zeros(len(t.names), np.int64)  # displaceable GPUs
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
    of_type: dict[str | None, np.ndarray] = {None: ready}  # ready hosts a job may use
    seen: set[tuple[int, str, str | None]] = set()
    for sj in world.queued.values():
        wanted = sj.job.gpu_type
        key = (sj.job.gpus, sj.topology.value, wanted)
        if key in seen:
            continue
        seen.add(key)
        if wanted not in of_type:
            of_type[wanted] = ready & np.array([ty == wanted for ty in t.types], bool)
        usable = of_type[wanted]
        g = sj.job.gpus
        largest = int(cap[usable].max()) if usable.any() else 0
        if g <= largest:
            if np.any(usable & (cap >= g) & (room >= g)):
                return False
        elif _whole_hosts_fit(usable & (room == cap), cap, g):
            return False
    return True


def _whole_hosts_fit(whole: np.ndarray, cap: np.ndarray, gpus: int) -> bool:
    """Enough whole hosts of one size anywhere (ignoring blocks: conservative)."""
    for c in np.unique(cap[whole]).tolist():
        if np.count_nonzero(whole & (cap == c)) >= -(-gpus // c):
            return True
    return False
