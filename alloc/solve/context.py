"""Everything a solver reads for one round, computed once (snapshot in, arrays out)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from alloc.domain import Snapshot, WorkloadId
from alloc.policy.contract import Standing, standings
from alloc.policy.fairshare import FairShare, fair_share
from alloc.policy.weights import Tier, Weights, weights
from alloc.solve.load import Load
from alloc.solve.placement import place
from alloc.solve.problem import HostArrays, Shape, fixed_and_optional_use, host_arrays, shapes_of


@dataclass(frozen=True, slots=True)
class RoundContext:
    snapshot: Snapshot
    standings: Mapping[WorkloadId, Standing]
    share: FairShare
    weights: Weights
    hosts: HostArrays
    shapes: Mapping[WorkloadId, Shape]  # every workload that is not forced by the contract
    placeable: frozenset[WorkloadId]  # running where it may stay, or fits the empty ready cluster
    order: tuple[WorkloadId, ...]  # decision candidates: entitled, over, then unallocated
    fixed_used: np.ndarray  # GPUs per host held by protected work
    optional_used: np.ndarray  # GPUs per host held by running work the solver may preempt

    def tier(self, workload: WorkloadId) -> Tier:
        return self.weights.tier[workload]

    def initial_load(self) -> Load:
        """Protected work held and every optional running workload kept where it is."""
        load = Load(self.hosts)
        for wid, s in self.standings.items():
            if s.protected or s.optional_running:
                self.hold(load, wid, self.running_placement(wid))
        return load

    def running_placement(self, workload: WorkloadId) -> dict[int, int]:
        hosts = self.standings[workload].workload.hosts
        return {self.hosts.index[h]: g for h, g in hosts.items()}

    def hold(self, load: Load, workload: WorkloadId, placement: dict[int, int]) -> None:
        """Hold with the tier as displacement category and the value lost if displaced."""
        if self.standings[workload].protected:
            load.hold(workload, placement)
            return
        cost = self.weights.hold_value[workload] + self.weights.preempt_cost.get(workload, 0.0)
        load.hold(workload, placement, self.tier(workload), cost)

    def start_free(self) -> np.ndarray:
        """Free GPUs per host at the start of the round (optional running work still in place)."""
        free = self.hosts.cap - self.fixed_used - self.optional_used
        return np.where(self.hosts.ready, np.maximum(free, 0), 0)


def round_context(snapshot: Snapshot) -> RoundContext:
    st = standings(snapshot)
    hosts = host_arrays(snapshot)
    shapes = shapes_of((s.workload for s in st.values() if s.forced is None), hosts)
    fixed, optional = fixed_and_optional_use(snapshot, hosts, st)
    empty = np.where(hosts.ready, hosts.cap, 0)
    beside_protected = np.where(hosts.ready, np.maximum(hosts.cap - fixed, 0), 0)
    unique = {id(shape): shape for shape in shapes.values()}
    fits_empty = {key: place(shape, empty, hosts) is not None for key, shape in unique.items()}
    fits_now = {
        key: fits_empty[key] and place(shape, beside_protected, hosts) is not None
        for key, shape in unique.items()
    }
    placeable = frozenset(
        wid for wid, shape in shapes.items() if st[wid].optional_running or fits_empty[id(shape)]
    )
    # Work that cannot start this round even if everything unprotected made way (a gang that
    # protected work leaves no room for) takes no place in the order: its node's entitlement
    # goes to its work that can start (models/round.md 2.3).
    startable = frozenset(
        wid for wid, shape in shapes.items() if st[wid].optional_running or fits_now[id(shape)]
    )
    share = fair_share(snapshot, st, startable, int(empty.sum()))
    w = weights(snapshot, st, share)
    entitled = [wid for wid in share.order if wid in share.entitled]
    over = [wid for wid in share.order if wid not in share.entitled]
    unallocated = [wid for wid in share.unallocated_order if wid in startable]
    return RoundContext(
        snapshot=snapshot,
        standings=st,
        share=share,
        weights=w,
        hosts=hosts,
        shapes=MappingProxyType(shapes),
        placeable=placeable,
        order=tuple(entitled + over + unallocated),
        fixed_used=fixed,
        optional_used=optional,
    )
