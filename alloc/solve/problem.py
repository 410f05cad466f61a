"""The numpy view of one round: host arrays and request shapes behind explicit index maps.

numpy lives only inside `solve/` (STYLE.md habit 2). Hosts are indexed 0..H-1 in cluster order.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from alloc.domain import Cluster, HostName, Snapshot, Topology, Workload, WorkloadId
from alloc.policy.contract import Standing

Request = tuple[int, str | None, Topology]  # gpus, GPU type, topology: what fixes a shape


@dataclass(frozen=True, slots=True)
class HostArrays:
    names: tuple[HostName, ...]
    index: Mapping[HostName, int]
    cap: np.ndarray  # GPUs per host
    ready: np.ndarray  # accepts new work
    draining: np.ndarray  # unhealthy or retired: work leaves, the host is handed over empty
    type_of: np.ndarray  # index into `types`
    types: tuple[str, ...]
    block_of: np.ndarray  # index into `blocks`
    blocks: tuple[str, ...]
    hosts_per_block: np.ndarray
    rack_of: np.ndarray  # index of the host's rack (racks of one name in two blocks differ)
    kind_of: np.ndarray  # index into `kinds`
    kinds: tuple[tuple[int, int], ...]  # (GPU type index, capacity): hosts a gang may mix
    # `shapes_of`'s memo: (gpus, GPU type, topology) -> Shape on these hosts (a Shape is never
    # changed once made, and these arrays live as long as their cluster: see `host_arrays`)
    shapes: dict[Request, Shape] = field(default_factory=dict, compare=False, repr=False)
    # The same requests: whether they fit these hosts empty (every ready GPU free).
    fits_empty: dict[Request, bool] = field(default_factory=dict, compare=False, repr=False)

    @property
    def count(self) -> int:
        return len(self.names)


_ARRAYS: dict[int, tuple[weakref.ref[Cluster], HostArrays]] = {}


def host_arrays(snapshot: Snapshot) -> HostArrays:
    """The arrays of the snapshot's cluster, built once per Cluster value (a cluster is frozen;
    the simulator and the controller hand the same one to every round until a host changes)."""
    cluster = snapshot.cluster
    cached = _ARRAYS.get(id(cluster))
    if cached is not None and cached[0]() is cluster:
        return cached[1]
    arrays = _host_arrays(cluster)
    if len(_ARRAYS) > 64:
        _ARRAYS.clear()
    _ARRAYS[id(cluster)] = (weakref.ref(cluster), arrays)
    return arrays


def _host_arrays(cluster: Cluster) -> HostArrays:
    hosts = cluster.hosts
    types = tuple(sorted({h.gpu_type for h in hosts}))
    blocks = tuple(dict.fromkeys(h.block for h in hosts))
    type_index = {t: i for i, t in enumerate(types)}
    block_index = {b: i for i, b in enumerate(blocks)}
    block_of = np.fromiter((block_index[h.block] for h in hosts), np.int64, len(hosts))
    kind_index = {
        k: i for i, k in enumerate(dict.fromkeys((type_index[h.gpu_type], h.gpus) for h in hosts))
    }
    return HostArrays(
        names=tuple(h.name for h in hosts),
        index=MappingProxyType({h.name: i for i, h in enumerate(hosts)}),
        cap=np.fromiter((h.gpus for h in hosts), np.int64, len(hosts)),
        ready=np.fromiter((h.state.accepts_work for h in hosts), bool, len(hosts)),
        draining=np.fromiter((h.state.draining for h in hosts), bool, len(hosts)),
        type_of=np.fromiter((type_index[h.gpu_type] for h in hosts), np.int64, len(hosts)),
        types=types,
        block_of=block_of,
        blocks=blocks,
        hosts_per_block=np.bincount(block_of, minlength=len(blocks)),
        rack_of=np.unique([f"{h.block}/{h.rack}" for h in hosts], return_inverse=True)[1]
        if hosts
        else np.zeros(0, np.int64),
        kind_of=np.fromiter(
            (kind_index[(type_index[h.gpu_type], h.gpus)] for h in hosts), np.int64, len(hosts)
        ),
        kinds=tuple(kind_index),
    )


@dataclass(frozen=True, slots=True)
class Shape:
    """Where a workload may go. A workload that fits on one ready host of its type goes on one
    host (with at least `gpus` GPUs); a larger one gets whole hosts, all of one GPU type and
    capacity, inside one block when `block` is set (models/round.md, section 1.2)."""

    gpus: int
    types: np.ndarray  # acceptable GPU types (bool per index of HostArrays.types)
    allowed: np.ndarray  # ready hosts of an acceptable type (and, single-host, large enough)
    single: bool
    block: bool

    def hosts_needed(self, capacity: int) -> int:
        return 1 if self.single else -(-self.gpus // capacity)


def shape_of(w: Workload, hosts: HostArrays) -> Shape:
    types = np.array([w.gpu_type is None or t == w.gpu_type for t in hosts.types], bool)
    typed = types[hosts.type_of] if hosts.count else np.zeros(0, bool)
    # One host if a ready host of its type is large enough (all hosts of its type when none is
    # ready, so that the shape stays defined); else whole hosts of the ready ones.
    usable = typed & hosts.ready if np.any(typed & hosts.ready) else typed
    single = bool(np.any(usable & (hosts.cap >= w.gpus)))
    allowed = typed & hosts.ready
    if single:
        allowed &= hosts.cap >= w.gpus
    return Shape(w.gpus, types, allowed, single, not single and w.topology is Topology.BLOCK)


def request_of(w: Workload) -> Request:
    """What a workload asks for, as far as its shape goes: the key of the host arrays' memos."""
    return (w.gpus, w.gpu_type, w.topology)


def shapes_of(workloads: Iterable[Workload], hosts: HostArrays) -> dict[WorkloadId, Shape]:
    """Shapes of many workloads; workloads that ask for the same thing share one Shape."""
    cache = hosts.shapes
    out = {}
    for w in workloads:
        key = request_of(w)
        if key not in cache:
            cache[key] = shape_of(w, hosts)
        out[w.id] = cache[key]
    return out


def running_use(
    hosts: HostArrays, standings: Mapping[WorkloadId, Standing]
) -> tuple[np.ndarray, np.ndarray, dict[WorkloadId, dict[int, int]]]:
    """GPUs per host held by work the contract keeps, and by running work the solver may
    preempt; and where each of those runs (host index -> GPUs), built in the same pass."""
    index = hosts.index
    at: tuple[list[int], list[int]] = ([], [])  # host indices: protected, optional
    gpus: tuple[list[int], list[int]] = ([], [])
    placements: dict[WorkloadId, dict[int, int]] = {}
    for wid, s in standings.items():
        if s.protected:
            which = 0
        elif s.optional_running:
            which = 1
        else:
            continue
        placement = {index[h]: g for h, g in s.workload.hosts.items()}
        placements[wid] = placement
        at[which].extend(placement)
        gpus[which].extend(placement.values())
    fixed = np.zeros(hosts.count, np.int64)
    optional = np.zeros(hosts.count, np.int64)
    np.add.at(fixed, at[0], gpus[0])
    np.add.at(optional, at[1], gpus[1])
    return fixed, optional, placements
