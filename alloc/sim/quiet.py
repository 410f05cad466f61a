"""When a round cannot change anything, the simulator need not run it; and which events call
for a round at once (the others wait for the periodic one).

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

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from alloc.domain import Cluster, HostName, HostState, Reservation, Topology, WorkloadId
from alloc.sim.jobs import SimJob
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
    world_index: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    typed: dict[str | None, np.ndarray] = field(default_factory=dict)  # ready hosts of a type
    largest: dict[str | None, int] = field(default_factory=dict)  # GPUs of its largest one
    # Hosts interchangeable for a gang: the same GPU type and size (`kind_of`), and in the same
    # block too (`block_kind_of`); the GPUs of each group's hosts (`*_cap`).
    kind_of: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    kind_cap: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    block_kind_of: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    block_kind_cap: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    off: list[tuple[tuple[Reservation, ...], np.ndarray]] = field(default_factory=list)

    def used(self, world: World) -> np.ndarray:
        """GPUs in use per host of this cluster, now."""
        return world.used_array[self.world_index]

    def ready_of(self, gpu_type: str | None) -> np.ndarray:
        """Ready hosts of a GPU type (any type: None). Read-only."""
        mask = self.typed.get(gpu_type)
        if mask is None:
            mask = self.ready.copy()
            if gpu_type is not None:
                mask &= np.array([ty == gpu_type for ty in self.types], bool)
            self.typed[gpu_type] = mask
            self.largest[gpu_type] = int(self.cap[mask].max()) if mask.any() else 0
        return mask

    def reserved(self, held: tuple[Reservation, ...]) -> np.ndarray:
        """Each host's `ready_at` (a timestamp) under these reservations, infinite off them
        (the last ones asked are kept: a plan's reservations)."""
        if self.off and self.off[0][0] is held:
            return self.off[0][1]
        until = np.full(len(self.names), np.inf)
        index = {n: i for i, n in enumerate(self.names)}
        for r in held:
            for h in r.hosts:
                if h in index:
                    until[index[h]] = r.ready_at.timestamp()
        self.off[:] = [(held, until)]
        return until

    def gang_fits(self, whole: np.ndarray, gpus: int, one_block: bool) -> bool:
        """`whole` (hosts with every GPU free) holds enough hosts of one GPU type and size for
        a gang of `gpus`, in one block if `one_block`."""
        group, group_cap = (
            (self.block_kind_of, self.block_kind_cap)
            if one_block
            else (self.kind_of, self.kind_cap)
        )
        count = np.bincount(group[whole], minlength=len(group_cap))
        return bool(np.any(count >= -(-gpus // group_cap)))


_last: list[_Hosts] = []  # a one-entry cache: the cluster of the last call


def _hosts(world: World) -> _Hosts:
    cluster = world.cluster()
    if _last and _last[0].cluster is cluster:
        return _last[0]
    hosts = cluster.hosts
    kinds: dict[tuple[str, int], int] = {}
    block_kinds: dict[tuple[str, int, str], int] = {}
    kind_of = [kinds.setdefault((h.gpu_type, h.gpus), len(kinds)) for h in hosts]
    block_kind_of = [
        block_kinds.setdefault((h.gpu_type, h.gpus, h.block), len(block_kinds)) for h in hosts
    ]
    table = _Hosts(
        cluster,
        tuple(h.name for h in hosts),
        {h.name: i for i, h in enumerate(hosts)},
        np.array([h.gpus for h in hosts], np.int64),
        tuple(h.gpu_type for h in hosts),
        np.array([h.state is HostState.READY for h in hosts], bool),
        np.array([h.state.draining for h in hosts], bool),
        np.array([h.state is HostState.MAINTENANCE for h in hosts], bool),
        np.array([world.host_index[h.name] for h in hosts], np.int64),
        kind_of=np.array(kind_of, np.int64),
        kind_cap=np.array([c for _, c in kinds], np.int64),
        block_kind_of=np.array(block_kind_of, np.int64),
        block_kind_cap=np.array([c for _, c, _ in block_kinds], np.int64),
    )
    _last[:] = [table]
    return table


def nothing_to_decide(world: World) -> bool:
    if not world.queued and world.trouble == 0:
        return True  # the common case, in O(1)
    now = world.now_s
    t = _hosts(world)
    index, cap, ready = t.index, t.cap, t.ready
    used = t.used(world)
    if world.trouble:
        if np.any(t.draining & (used == 0)):
            return False  # an empty draining host is due to be handed over
        if np.any(t.maintenance & (used > 0)):
            return False
    free = np.where(ready, cap - used, 0)
    # The room below (free plus displaceable GPUs) is at least the free GPUs on every host, so
    # a job that fits the free GPUs fits it too: no need to sum it (after an arrival, the
    # most common case).
    if _some_fits(world, t, free):
        return False
    room = np.zeros(len(t.names), np.int64)  # displaceable GPUs
    if world.trouble == 0:  # every host of the cluster is ready: sum the GPUs at once
        at: list[int] = []
        gpus: list[int] = []
        for sj in world.running.values():
            if not sj.allocated or now >= sj.seg_start_s + sj.job.min_runtime_s:
                at.extend(index[n] for n in sj.hosts)
                gpus.extend(sj.hosts.values())
        np.add.at(room, at, gpus)
    else:
        for sj in world.running.values():
            protected = sj.allocated and now < sj.seg_start_s + sj.job.min_runtime_s
            for n, g in sj.hosts.items():
                i = index[n]
                if not ready[i]:
                    if not protected:
                        return False  # unprotected work on a draining host must go
                    continue
                if not protected:
                    room[i] += g
    room += free
    return not _some_fits(world, t, room)


def _some_fits(world: World, t: _Hosts, room: np.ndarray) -> bool:
    """Some queued job fits into `room` (GPUs per host), blocks ignored (conservative)."""
    cap = t.cap
    seen: set[tuple[int, str, str | None]] = set()
    for sj in world.queued_kinds():
        wanted = sj.job.gpu_type
        key = (sj.job.gpus, sj.topology.value, wanted)
        if key in seen:
            continue
        seen.add(key)
        usable = t.ready_of(wanted)  # ready hosts a job may use
        g = sj.job.gpus
        if g <= t.largest[wanted]:
            if np.any(usable & (cap >= g) & (room >= g)):
                return True
        elif _whole_hosts_fit(usable & (room == cap), cap, g):
            return True
    return False


def _whole_hosts_fit(whole: np.ndarray, cap: np.ndarray, gpus: int) -> bool:
    """Enough whole hosts of one size anywhere (ignoring blocks: conservative)."""
    for c in np.unique(cap[whole]).tolist():
        if np.count_nonzero(whole & (cap == c)) >= -(-gpus // c):
            return True
    return False


def waiting_fits_free(
    world: World, reserved: tuple[Reservation, ...], only: Iterable[WorkloadId] | None = None
) -> bool:
    """Some queued job fits into the GPUs free right now, as it is: on one ready host of its
    type with room, or (larger than every such host) on enough whole free hosts of one size,
    in one block for topology block. Hosts reserved for a gang count for allocated work only
    as backfill (its minimum runtime ends by their `ready_at`: models/round.md 8.5). After a
    round this is a GPU the round left idle although waiting work could use it (`metrics`:
    idle while waiting work fit). `only`: these queued jobs instead of the whole queue."""
    if not world.queued:
        return False
    jobs = (
        world.queued_kinds()
        if only is None
        else (world.queued[j] for j in only if j in world.queued)
    )
    t = _hosts(world)
    used = t.used(world)
    free = np.where(t.ready, t.cap - used, 0)
    whole_free = free == t.cap
    until = t.reserved(reserved) if reserved else None
    gangs = {r.workload for r in reserved}
    now = world.at(world.now_s).timestamp()
    seen: set[tuple[int, Topology, str | None, float]] = set()
    for sj in jobs:
        off = None
        if until is not None and world.charged(sj.job):
            # As solve.reserve.Reserved.level: a gang and work that cannot resume backfill
            # nothing; 1e-6: a protection that ends at ready_at may.
            backfills = sj.job.id not in gangs and sj.job.resumable
            ends = now + sj.job.min_runtime_s - 1e-6 if backfills else math.inf
            off = until < ends
        key = (sj.job.gpus, sj.topology, sj.job.gpu_type, -1.0 if off is None else ends)
        if key in seen:
            continue
        seen.add(key)
        of_type = t.ready_of(sj.job.gpu_type)
        largest = t.largest[sj.job.gpu_type]
        if not largest:
            continue
        # Its shape (one host, or whole hosts) comes from the ready hosts of its type;
        # reservations only narrow where it may go (solve.reserve.Reserved.shape_for).
        usable = of_type & ~off if off is not None else of_type
        g = sj.job.gpus
        if g <= largest:
            if np.any(usable & (free >= g)):
                return True
            continue
        # A gang takes whole hosts of one GPU type and size (in one block for topology block).
        if t.gang_fits(usable & whole_free, g, sj.topology is Topology.BLOCK):
            return True
    return False


def could_take_place(world: World, sj: SimJob) -> bool:
    """Some queued allocated job fits on one of the running job's hosts with its GPUs and
    the host's free GPUs (any queued allocated gang counts: blocks are not checked)."""
    room = max((world.hosts[h].gpus - world.used[h] + g for h, g in sj.hosts.items()), default=0)
    largest = max(world.hosts[h].gpus for h in sj.hosts) if sj.hosts else 0
    for q in world.queued.values():
        if world.charged(q.job) and (q.job.gpus <= room or q.job.gpus > largest):
            return True
    return False


def on_draining_host(world: World, sj: SimJob) -> bool:
    return any(world.hosts[h].state.draining for h in sj.hosts)
