"""Finding a place for one workload on the current free GPUs, with or without displacing others.

Best fit: a single-host workload goes to the fullest host that still fits it; whole hosts come
from the block with the fewest whole free hosts that still fits the gang, so that whole blocks
stay free for the largest gangs (models/round.md, section 1.2 and 4.3).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from alloc.domain import WorkloadId
from alloc.solve.load import Load, Placement
from alloc.solve.problem import HostArrays, Shape

CANDIDATE_HOSTS = 24  # single-host displacement: hosts examined exactly, cheapest first


def place(shape: Shape, free: np.ndarray, hosts: HostArrays) -> Placement | None:
    if shape.single:
        fits = shape.allowed & (free >= shape.gpus)
        if not fits.any():
            return None
        idx = np.flatnonzero(fits)
        best = idx[np.argmin(free[idx])]
        return {int(best): shape.gpus}
    chosen = _whole_hosts(shape, shape.allowed & (free == hosts.cap), hosts, None)
    return None if chosen is None else {int(h): int(hosts.cap[h]) for h in chosen}


def first_fit(shape: Shape, free: np.ndarray, hosts: HostArrays) -> Placement | None:
    """The first place that fits, in host order (the published baseline's placement, not the
    allocator's): a single-host workload on the first host with room; a gang on the first whole
    free hosts of one GPU type and size (inside the first block that has enough of them, for
    topology block)."""
    if shape.single:
        idx = np.flatnonzero(shape.allowed & (free >= shape.gpus))
        return {int(idx[0]): shape.gpus} if len(idx) else None
    eligible = shape.allowed & (free == hosts.cap)
    for kind, (_, capacity) in enumerate(hosts.kinds):
        need = shape.hosts_needed(capacity)
        idx = np.flatnonzero(eligible & (hosts.kind_of == kind))
        if shape.block:
            # The block of the first host whose block holds enough of them.
            blocks = hosts.block_of[idx]
            fits = np.bincount(blocks, minlength=len(hosts.blocks))[blocks] >= need
            idx = idx[blocks == blocks[fits][0]] if fits.any() else idx[:0]
        if len(idx) >= need:
            return {int(h): int(hosts.cap[h]) for h in idx[:need]}
    return None


def _whole_hosts(
    shape: Shape, eligible: np.ndarray, hosts: HostArrays, cost: np.ndarray | None
) -> np.ndarray | None:
    """Pick whole hosts among `eligible` for a multi-host gang, all of one GPU type and size:
    the cheapest, in the best-fitting block (topology block), else as few blocks as possible
    (topology any); inside a block, from as few racks as possible."""
    best: tuple[tuple[float, ...], np.ndarray] | None = None
    per_kind = np.bincount(hosts.kind_of[eligible], minlength=len(hosts.kinds))
    for kind, (_, capacity) in enumerate(hosts.kinds):
        need = shape.hosts_needed(capacity)
        if per_kind[kind] < need:
            continue
        idx = np.flatnonzero(eligible & (hosts.kind_of == kind))
        c = np.zeros(len(idx)) if cost is None else cost[idx]
        blocks = hosts.block_of[idx]
        # Inside a block: cheapest first, then hosts of the racks with most eligible hosts, so
        # that a gang spans few racks.
        racks = hosts.rack_of[idx]
        per_rack = np.bincount(racks)[racks]
        order = np.lexsort((idx, racks, -per_rack, c, blocks))
        idx, c, blocks = idx[order], c[order], blocks[order]
        starts = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1]])
        counts = np.diff(np.r_[starts, len(idx)])
        waste = need * capacity - shape.gpus
        fit = counts >= need
        option: tuple[tuple[float, ...], np.ndarray] | None = None
        if fit.any():
            s, n = starts[fit], counts[fit]
            cs = np.r_[0.0, np.cumsum(c)]
            totals = cs[s + need] - cs[s]
            pick = np.lexsort((idx[s], n, totals))[0]
            first = int(s[pick])
            option = ((float(totals[pick]), waste, 1, int(n[pick])), idx[first : first + need])
        elif not shape.block:
            # Spread over the blocks with the most eligible hosts, cheapest hosts first.
            by_size = np.lexsort((starts, -counts))
            taken = np.cumsum(counts[by_size])
            used = int(np.searchsorted(taken, need)) + 1
            parts = [idx[starts[b] : starts[b] + counts[b]] for b in by_size[:used].tolist()]
            parts_cost = [c[starts[b] : starts[b] + counts[b]] for b in by_size[:used].tolist()]
            left = need - int(taken[used - 2]) if used > 1 else need
            parts[-1], parts_cost[-1] = parts[-1][:left], parts_cost[-1][:left]
            total = float(sum(p.sum() for p in parts_cost))
            option = ((total, waste, used, 0), np.concatenate(parts))
        if option is not None and (best is None or option[0] < best[0]):
            best = option
    return None if best is None else best[1]


def place_on(shape: Shape, load: Load) -> Placement | None:
    """`place` on the load's free GPUs, rejecting in O(1) what surely cannot fit, and at once
    what failed at the load's current version (a queue holds many workloads of one shape)."""
    key = ("free GPUs", id(shape))  # greedy.find_place keys (id, tier): no clash
    if load.failed_at(key, shape):
        return None
    may_fit = (
        load.may_fit_single(shape.gpus, shape.types)
        if shape.single
        else load.may_fit_whole(shape.gpus, shape.types)
    )
    found = place(shape, load.free(), load.hosts) if may_fit else None
    if found is None:
        load.fail(key, shape)
    return found


@dataclass(frozen=True, slots=True)
class Displacement:
    placement: Placement
    victims: tuple[WorkloadId, ...]
    cost: float


def place_displacing(
    shape: Shape, load: Load, categories: tuple[Hashable, ...]
) -> Displacement | None:
    """The cheapest place for `shape` if holders of `categories` may be displaced."""
    placement = place_on(shape, load)
    if placement is not None:
        return Displacement(placement, (), 0.0)
    if not categories or not any(load.reclaim_total.get(c, 0) > 0 for c in categories):
        return None
    reclaim, host_cost, total = load.displaceable(categories, whole=shape.single)
    if total == 0:
        return None
    hosts = load.hosts
    free = load.free()
    reclaim = np.where(hosts.ready, reclaim, 0)
    if shape.single:
        return _single_displacing(shape, load, free, reclaim, host_cost, categories)
    eligible = shape.allowed & (free + reclaim == hosts.cap)
    chosen = _whole_hosts(shape, eligible, hosts, host_cost)
    if chosen is None:
        return None
    victims = sorted(
        {v for h in chosen for v in load.on_host[int(h)] if _victim(load, v, categories)}
    )
    return Displacement(
        {int(h): int(hosts.cap[h]) for h in chosen},
        tuple(victims),
        sum(load.category[v][1] for v in victims),
    )


def _victim(load: Load, workload: WorkloadId, categories: tuple[Hashable, ...]) -> bool:
    entry = load.category.get(workload)
    return entry is not None and entry[0] in categories


def _single_displacing(
    shape: Shape,
    load: Load,
    free: np.ndarray,
    reclaim: np.ndarray,
    host_cost: np.ndarray,
    categories: tuple[Hashable, ...],
) -> Displacement | None:
    candidates = np.flatnonzero(shape.allowed & (free + reclaim >= shape.gpus))
    if len(candidates) == 0:
        return None
    candidates = candidates[np.argsort(host_cost[candidates], kind="stable")][:CANDIDATE_HOSTS]
    best: Displacement | None = None
    for h in candidates.tolist():
        need = shape.gpus - int(free[h])
        here = sorted(
            (v for v in load.on_host[h] if _victim(load, v, categories)),
            key=lambda v: (load.category[v][1] / load.held[v][h], v),
        )
        taken: list[WorkloadId] = []
        for v in here:
            if need <= 0:
                break
            taken.append(v)
            need -= load.held[v][h]
        # Drop victims that turned out unnecessary, most expensive first.
        for v in sorted(taken, key=lambda v: -load.category[v][1]):
            if need + load.held[v][h] <= 0:
                taken.remove(v)
                need += load.held[v][h]
        cost = sum(load.category[v][1] for v in taken)
        if best is None or cost < best.cost:
            best = Displacement({h: shape.gpus}, tuple(sorted(taken)), cost)
    return best


class PlaceIndex:
    """Places held by several workloads, to ask whether a shape fits on the free GPUs plus the
    GPUs of any *one* of them (invariant 6's "fits in the same place"). For single-host shapes
    one vectorised test covers every place: the largest place on each host is enough."""

    def __init__(self, hosts: HostArrays, places: list[Placement]) -> None:
        self.hosts = hosts
        self.places = places
        self.alive = [True] * len(places)
        self._best: np.ndarray | None = None
        self._owner: np.ndarray | None = None

    def remove(self, i: int) -> None:
        self.alive[i] = False
        self._best = None

    def _index(self) -> tuple[np.ndarray, np.ndarray]:
        if self._best is None or self._owner is None:
            self._best = np.zeros(self.hosts.count, np.int64)
            self._owner = np.full(self.hosts.count, -1, np.int64)
            for i, placement in enumerate(self.places):
                if self.alive[i]:
                    for h, g in placement.items():
                        if g > self._best[h]:
                            self._best[h], self._owner[h] = g, i
        return self._best, self._owner

    def find(self, shape: Shape, free: np.ndarray) -> int | None:
        """The index of a place that `shape` fits in together with `free`, or None."""
        if shape.single:
            best, owner = self._index()
            fits = np.flatnonzero(shape.allowed & (owner >= 0) & (free + best >= shape.gpus))
            return int(owner[fits[0]]) if len(fits) else None
        cap = self.hosts.cap
        for i, placement in enumerate(self.places):
            if not self.alive[i] or not any(free[h] + g == cap[h] for h, g in placement.items()):
                continue  # a gang needs whole hosts: this place frees none
            room = free.copy()
            for h, g in placement.items():
                room[h] += g
            if place(shape, room, self.hosts) is not None:
                return i
        return None
