"""Who holds which GPUs while a plan is being built: the mutable scratch state of one solve.

Besides the GPUs used per host it keeps, per *category* of holder that others may displace
(a tier), the GPUs and the cost per host that displacing them would free and destroy, and a
histogram of free GPUs per GPU type, so that a request that cannot fit is rejected in O(1).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping

import numpy as np

from alloc.domain import WorkloadId
from alloc.solve.problem import HostArrays

# Host index -> GPUs. Never changed once made: a load keeps the placements it is given (the
# round's running placements are shared by every load built from its context) and hands them
# back on release; a new placement is a new dict.
Placement = dict[int, int]


class Load:
    def __init__(self, hosts: HostArrays) -> None:
        self.hosts = hosts
        self.used = np.zeros(hosts.count, np.int64)
        self._free = np.where(hosts.ready, hosts.cap, 0)
        self.held: dict[WorkloadId, Placement] = {}
        self._on_host: defaultdict[int, set[WorkloadId]] | None = defaultdict(set)
        self.category: dict[WorkloadId, tuple[Hashable, float]] = {}
        self.reclaim: dict[Hashable, np.ndarray] = {}
        self.reclaim_cost: dict[Hashable, np.ndarray] = {}  # each victim's cost shared by host
        self.reclaim_full: dict[Hashable, np.ndarray] = {}  # each victim's whole cost per host
        self.reclaim_total: dict[Hashable, int] = defaultdict(int)
        top = int(hosts.cap.max()) if hosts.count else 0
        self.histogram = np.zeros((len(hosts.types), top + 1), np.int64)  # [type, free] -> hosts
        ready = np.flatnonzero(hosts.ready)
        np.add.at(self.histogram, (hosts.type_of[ready], hosts.cap[ready]), 1)
        # Ready hosts with every GPU free, per kind (GPU type and size): a gang's quick test.
        self.whole = np.bincount(hosts.kind_of[ready], minlength=len(hosts.kinds))
        # Every hold or release changes the version: a search that failed at this version
        # fails again (`failed`: search key -> version and the Shape searched; see
        # `failed_at`).
        self.version = 0
        self.failed: dict[Hashable, tuple[int, object]] = {}

    @property
    def on_host(self) -> defaultdict[int, set[WorkloadId]]:
        """Who holds GPUs on each host; built when first asked after a bulk `hold_all` (most
        rounds never ask: nothing is displaced). Read-only."""
        if self._on_host is None:
            self._on_host = defaultdict(set)
            for workload, placement in self.held.items():
                for h in placement:
                    self._on_host[h].add(workload)
        return self._on_host

    def free(self) -> np.ndarray:
        """GPUs new work may take per host (nothing on hosts that are not ready). Read-only."""
        return self._free

    def _touch(self, h: int, delta: int) -> None:
        self.used[h] += delta
        if self.hosts.ready[h]:
            t = self.hosts.type_of[h]
            cap = self.hosts.cap[h]
            was_whole = self._free[h] == cap
            self.histogram[t, self._free[h]] -= 1
            self._free[h] = max(0, cap - self.used[h])
            self.histogram[t, self._free[h]] += 1
            now_whole = self._free[h] == cap
            if was_whole != now_whole:
                self.whole[self.hosts.kind_of[h]] += 1 if now_whole else -1

    def hold(
        self,
        workload: WorkloadId,
        placement: Mapping[int, int],
        category: Hashable | None = None,
        cost: float = 0.0,
    ) -> None:
        """Give `placement` to `workload`; a `category` makes it displaceable at `cost`."""
        assert workload not in self.held, workload
        self.version += 1
        self.held[workload] = dict(placement)
        total = sum(placement.values())
        on_host = self._on_host
        for h, g in placement.items():
            self._touch(h, g)
            if on_host is not None:
                on_host[h].add(workload)
        if category is not None:
            self.category[workload] = (category, cost)
            self._reclaim_arrays(category)
            for h, g in placement.items():
                self.reclaim[category][h] += g
                self.reclaim_cost[category][h] += cost * g / total
                self.reclaim_full[category][h] += cost
            self.reclaim_total[category] += total

    def hold_all(
        self,
        items: Iterable[tuple[WorkloadId, Mapping[int, int], Hashable | None, float]],
        no_copy: bool = False,
        used: np.ndarray | None = None,
    ) -> None:
        """`hold` for many workloads at once (a round's running work), with the arrays updated
        in bulk: the same state as holding them one by one, in a fraction of the time.
        `no_copy`: the placements are kept without a copy (nobody changes them: a load never
        changes a placement it holds, it releases it). `used`: the GPUs they hold per host, when
        the caller has summed them already."""
        hs: list[int] = []
        gs: list[int] = []
        per_category: dict[Hashable, tuple[list[int], list[int], list[float], list[float]]] = {}
        held = self.held
        self._on_host = None  # rebuilt from `held` when asked
        for workload, placement, category, cost in items:
            assert workload not in held, workload
            held[workload] = placement if no_copy else dict(placement)  # type: ignore[assignment]
            if used is None:
                hs.extend(placement)
                gs.extend(placement.values())
            if category is None:
                continue
            total = sum(placement.values())
            self.category[workload] = (category, cost)
            lists = per_category.get(category)
            if lists is None:
                lists = per_category[category] = ([], [], [], [])
            ch, cg, shared, full = lists
            for h, g in placement.items():
                ch.append(h)
                cg.append(g)
                shared.append(cost * g / total)
                full.append(cost)
            self.reclaim_total[category] += total
        if used is not None:
            self.used += used
        elif hs:
            np.add.at(self.used, hs, gs)
        else:
            return
        self.version += 1
        hosts = self.hosts
        self._free = np.where(hosts.ready, np.maximum(hosts.cap - self.used, 0), 0)
        ready = np.flatnonzero(hosts.ready)
        self.histogram[:] = 0
        np.add.at(self.histogram, (hosts.type_of[ready], self._free[ready]), 1)
        whole = ready[self._free[ready] == hosts.cap[ready]]
        self.whole = np.bincount(hosts.kind_of[whole], minlength=len(hosts.kinds))
        for category, (ch, cg, shared, full) in per_category.items():
            self._reclaim_arrays(category)
            np.add.at(self.reclaim[category], ch, cg)
            np.add.at(self.reclaim_cost[category], ch, shared)
            np.add.at(self.reclaim_full[category], ch, full)

    def _reclaim_arrays(self, category: Hashable) -> None:
        if category not in self.reclaim:
            self.reclaim[category] = np.zeros(self.hosts.count, np.int64)
            self.reclaim_cost[category] = np.zeros(self.hosts.count)
            self.reclaim_full[category] = np.zeros(self.hosts.count)

    def release(self, workload: WorkloadId) -> Placement:
        placement = self.held.pop(workload)
        self.version += 1
        total = sum(placement.values())
        on_host = self._on_host
        for h, g in placement.items():
            self._touch(h, -g)
            if on_host is not None:
                on_host[h].discard(workload)
        if workload in self.category:
            category, cost = self.category.pop(workload)
            for h, g in placement.items():
                self.reclaim[category][h] -= g
                self.reclaim_cost[category][h] -= cost * g / total
                self.reclaim_full[category][h] -= cost
            self.reclaim_total[category] -= total
        return placement

    def failed_at(self, key: Hashable, shape: object) -> bool:
        """A search for `shape` under `key` (which names it by `id`) failed at this version.
        The entry keeps the shape itself: a load outlives the shapes of the round or pass
        that searched it (an event pass carries it), and the id of a shape that is gone may
        be another's, so that a hit by id alone would depend on memory reuse."""
        entry = self.failed.get(key)
        return entry is not None and entry[0] == self.version and entry[1] is shape

    def fail(self, key: Hashable, shape: object) -> None:
        self.failed[key] = (self.version, shape)

    def holds(self, workload: WorkloadId) -> bool:
        return workload in self.held

    def displaceable(
        self, categories: Iterable[Hashable], whole: bool = False
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """GPUs and cost per host that displacing every holder of `categories` would free; the
        cost of a holder spread over several hosts is shared among them, or with `whole`
        counted in full on each (what clearing one host alone costs)."""
        gpus = np.zeros(self.hosts.count, np.int64)
        cost = np.zeros(self.hosts.count)
        total = 0
        costs = self.reclaim_full if whole else self.reclaim_cost
        for c in categories:
            if self.reclaim_total.get(c, 0) > 0:
                gpus += self.reclaim[c]
                cost += costs[c]
                total += self.reclaim_total[c]
        return gpus, cost, total

    def may_fit_single(self, gpus: int, types: np.ndarray) -> bool:
        """Some ready host of an allowed type has `gpus` free (types: bool mask over types)."""
        return bool(self.histogram[types, gpus:].any()) if gpus < self.histogram.shape[1] else False

    def may_fit_whole(self, gpus: int, types: np.ndarray) -> bool:
        """Enough ready hosts of one allowed kind have every GPU free for a gang of `gpus`
        (ignoring blocks: a necessary condition)."""
        for kind, (gpu_type, cap) in enumerate(self.hosts.kinds):
            if types[gpu_type] and self.whole[kind] >= -(-gpus // cap):
                return True
        return False
