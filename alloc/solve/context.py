"""Everything a solver reads for one round, computed once (snapshot in, arrays out)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

import numpy as np

from alloc.domain import Occupancy, Snapshot, WorkloadId
from alloc.policy.contract import Standing, standings
from alloc.policy.fairshare import FairShare, fair_share
from alloc.policy.weights import Tier, Weights, weights
from alloc.solve.load import Load
from alloc.solve.memo import RoundMemo
from alloc.solve.placement import place
from alloc.solve.problem import (
    HostArrays,
    Shape,
    host_arrays,
    request_of,
    running_use,
    shapes_of,
)
from alloc.solve.reserve import Held, Reserved, reservations


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
    running_at: Mapping[WorkloadId, Mapping[int, int]]  # those two kinds: host index -> GPUs
    reservations: tuple[Held, ...] = ()  # hosts held back for blocked gangs (section 8)
    backfill: Reserved | None = None  # the reserved hosts, and who may backfill them (8.5)
    unreserved_shapes: Mapping[WorkloadId, Shape] = field(  # the restricted ones' own shapes
        default_factory=lambda: MappingProxyType({})
    )
    memo: RoundMemo | None = None  # what the last round left to reuse (solve/memo.py)

    @property
    def ranked(self) -> tuple[WorkloadId, ...]:
        """The round's order as people read it (`alloc queue`'s rank and position, `alloc
        status`'s `#`, `alloc explain`'s place): the allocated candidates in fair-share order
        (models/round.md 2.2, `share.order`, where `share.rank` counts from 0), then the
        unallocated ones in theirs. `order` holds the same workloads as the solvers take them:
        the entitled ones first."""
        share = self.share
        return share.order + self.order[len(share.order) :]

    def tier(self, workload: WorkloadId) -> Tier:
        return self.weights.tier[workload]

    def initial_load(self) -> Load:
        """Protected work held and every optional running workload kept where it is."""
        load = Load(self.hosts)
        used = self.fixed_used + self.optional_used
        self.hold_running(load, self.running_at, no_copy=True, used=used)
        return load

    def running_placement(self, workload: WorkloadId) -> dict[int, int]:
        return dict(self.running_at[workload])

    def hold(self, load: Load, workload: WorkloadId, placement: dict[int, int]) -> None:
        """Hold with the tier as displacement category and the value lost if displaced."""
        load.hold(*self._holding(workload, placement))

    def hold_running(
        self,
        load: Load,
        workloads: Iterable[WorkloadId],
        no_copy: bool = False,
        used: np.ndarray | None = None,
    ) -> None:
        """`hold` of running workloads where they run, in bulk (the same state); `no_copy` and
        `used` as `Load.hold_all` takes them."""
        running_at = self.running_at
        load.hold_all(
            (self._holding(wid, running_at[wid]) for wid in workloads), no_copy=no_copy, used=used
        )

    def _holding(
        self, workload: WorkloadId, placement: Mapping[int, int]
    ) -> tuple[WorkloadId, Mapping[int, int], Tier | None, float]:
        if self.standings[workload].protected:
            return workload, placement, None, 0.0
        cost = self.weights.hold_value[workload] + self.weights.preempt_cost.get(workload, 0.0)
        return workload, placement, self.tier(workload), cost

    def start_free(self) -> np.ndarray:
        """Free GPUs per host at the start of the round (optional running work still in place)."""
        free = self.hosts.cap - self.fixed_used - self.optional_used
        return np.where(self.hosts.ready, np.maximum(free, 0), 0)


def round_context(snapshot: Snapshot, memo: RoundMemo | None = None) -> RoundContext:
    if memo is not None:
        memo = memo.for_round(snapshot.budgets, snapshot.cluster, snapshot.policy)
    st = standings(snapshot, memo.standings if memo is not None else None)
    hosts = host_arrays(snapshot)
    own = shapes_of((s.workload for s in st.values() if s.forced is None), hosts)
    held = reservations(snapshot, st, hosts)
    backfill = Reserved(held, hosts)
    shapes, unreserved = _avoiding_reservations(st, own, backfill, snapshot.now)
    fixed, optional, running_at = running_use(hosts, st)
    empty = np.where(hosts.ready, hosts.cap, 0)
    beside_protected = np.where(hosts.ready, np.maximum(hosts.cap - fixed, 0), 0)
    # Placeable: could ever start on this cluster (reservations aside); startable: this round.
    # Work that cannot start this round even if everything unprotected made way (a gang that
    # protected work leaves no room for) takes no place in the order: its node's entitlement
    # goes to its work that can start (models/round.md 2.3). Running work the solver may keep
    # is both; each queued shape is placed once.
    placeable: set[WorkloadId] = set()
    startable: set[WorkloadId] = set()
    fits_empty = hosts.fits_empty  # memoised with the shapes: the empty cluster is fixed
    fits_now: dict[int, bool] = {}  # a reservation restricts a shape: it may fit less now
    for wid, shape in shapes.items():
        s = st[wid]
        if s.optional_running:
            placeable.add(wid)
            startable.add(wid)
            continue
        request = request_of(s.workload)
        ever = fits_empty.get(request)
        if ever is None:
            ever = fits_empty[request] = place(own[wid], empty, hosts) is not None
        if not ever:
            continue
        placeable.add(wid)
        now = fits_now.get(id(shape))
        if now is None:
            now = fits_now[id(shape)] = place(shape, beside_protected, hosts) is not None
        if now:
            startable.add(wid)
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
        placeable=frozenset(placeable),
        order=tuple(entitled + over + unallocated),
        fixed_used=fixed,
        optional_used=optional,
        running_at=MappingProxyType(running_at),
        reservations=held,
        backfill=backfill if held else None,
        unreserved_shapes=MappingProxyType(unreserved),
        memo=memo,
    )


def _avoiding_reservations(
    st: Mapping[WorkloadId, Standing],
    shapes: dict[WorkloadId, Shape],
    backfill: Reserved,
    now: datetime,
) -> tuple[dict[WorkloadId, Shape], dict[WorkloadId, Shape]]:
    """Queued allocated work other than the reserving gangs may start on a reserved host only
    as backfill (its minimum runtime ends by the host's `ready_at`): its shape leaves the
    others out. Returns the shapes and, for the restricted ones, their own."""
    if not backfill:
        return shapes, {}
    out = dict(shapes)
    own: dict[WorkloadId, Shape] = {}
    for wid, shape in shapes.items():
        s = st[wid]
        w = s.workload
        if w.running or s.occupancy is not Occupancy.ALLOCATED or wid in backfill.gangs:
            continue
        restricted = backfill.shape_for(w, shape, now)
        if restricted is not shape:
            out[wid] = restricted
            own[wid] = shape
    return out, own
