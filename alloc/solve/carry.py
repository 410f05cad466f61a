"""What an event pass carries from the last full round, kept in step with the cluster
(models/round.md, section 9).

A full round decides everything from its snapshot. The state it leaves behind is exact as long
as the cluster does not change under it: the host arrays and shapes (a host change calls a full
round), the fair-share order and its ratios, each node's entitlement, the reservations. What
does change between full rounds, work arriving, starting, ending and being requeued, comes in
through `sync` one workload at a time, so that a pass costs what changed, not the cluster:

- a `Load` holding every running workload where it runs (unallocated work displaceable, as in
  a full round; allocated work fixed: a pass never rebalances it);
- the queue, by request (what fixes a shape) and by budget node and occupancy class (the groups
  of invariant 6), each queued workload with its key in the fair-share order;
- the allocated GPUs each node runs, against which the last full round's entitlements are
  counted, and the hosts whose room grew since the last pass (where something ended).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from types import MappingProxyType

import numpy as np

from alloc.domain import (
    HOUR_S,
    ROOT_PATH,
    Action,
    BudgetPath,
    Decision,
    Occupancy,
    Reason,
    Workload,
    WorkloadId,
    path_prefixes,
)
from alloc.policy.contract import allocated_in, funded_in
from alloc.policy.fairshare import leaf_order_key
from alloc.policy.weights import UNALLOCATED_PREEMPT_FIXED, UNALLOCATED_VALUE, Tier
from alloc.solve.context import RoundContext
from alloc.solve.load import Load
from alloc.solve.placement import place
from alloc.solve.problem import Request, Shape, request_of, shapes_of
from alloc.solve.reserve import Held, Reserved

Group = tuple[BudgetPath | None, Occupancy]  # a budget node and an occupancy class
# The order a pass walks its candidates in: entitled work, work over its entitlement, then
# unallocated work, each by its key (models/round.md 9.2).
TIER_ORDER = {Tier.ENTITLED: 0, Tier.OVER: 1, Tier.UNALLOCATED: 2}


@dataclass(frozen=True, slots=True)
class Queued:
    """A queued workload as a pass sees it."""

    workload: Workload
    occupancy: Occupancy
    funded: bool
    request: Request
    placeable: bool  # fits the empty ready cluster: else no round can start it


class PassState:
    """The state between full rounds, as a full round's plan leaves the cluster: built from the
    round's context and the assignment its plan was made from (`sync` then corrects for what
    the cluster did otherwise, e.g. a start that failed). The next full round on the same
    cluster `rebase`s it: what the round decides anew (order, entitlements, reservations, the
    assignment) is taken from it, the queue is kept and moved by the round's plan."""

    def __init__(self, ctx: RoundContext, load: Load, decisions: Iterable[Decision]) -> None:
        snapshot = ctx.snapshot
        self.cluster = snapshot.cluster
        self.hosts = ctx.hosts
        self.ready_gpus = int(ctx.hosts.cap[ctx.hosts.ready].sum())
        self.installed_gpus = int(ctx.hosts.cap.sum())
        self.draining = bool(ctx.hosts.draining.any())
        self.view: dict[WorkloadId, Workload] = dict(snapshot.by_id)
        self.last: dict[WorkloadId, Decision] = {}
        self.queued: dict[WorkloadId, Queued] = {}
        self.by_request: defaultdict[Request, set[WorkloadId]] = defaultdict(set)
        self.groups: defaultdict[Group, set[WorkloadId]] = defaultdict(set)
        self.tier: dict[WorkloadId, Tier] = {}
        self.key: dict[WorkloadId, tuple[object, ...]] = {}
        self.dirty: set[BudgetPath | None] = set()
        self.fresh: set[WorkloadId] = set()  # queued since the last pass
        self.new: set[WorkloadId] = set()  # of those, first seen since the last round or pass
        self.grown: set[int] = set()  # hosts whose room grew since the last pass
        self._take_round(ctx, load)
        for w in snapshot.workloads:
            if not w.running:
                self._enqueue(w)
        self.fresh.clear()  # the round has decided them
        self._move(decisions)

    def rebase(self, ctx: RoundContext, load: Load, decisions: Iterable[Decision]) -> None:
        """A full round on the cluster this state is kept in step with (its view is the
        round's snapshot): take the round's order, entitlements, reservations and assignment,
        and move the queue as its plan does."""
        assert ctx.snapshot.cluster is self.cluster
        self._take_round(ctx, load)
        for w in ctx.snapshot.workloads:  # keys anew, in the snapshot's order (as __init__)
            if not w.running:
                q = self.queued[w.id]
                self.key[w.id] = self._key(q)
        self._move(decisions)

    def _take_round(self, ctx: RoundContext, load: Load) -> None:
        snapshot = ctx.snapshot
        self.policy = snapshot.policy
        self.budgets = snapshot.budgets
        self.now: datetime = snapshot.now
        share = ctx.share
        self.ratios = share.ratios
        self.entitlement: Mapping[BudgetPath, int] = share.entitlement_gpus
        self.capacity_gpu_hours = share.capacity_gpu_hours
        self.horizon_h = snapshot.policy.horizon_s / HOUR_S
        self.rank: Mapping[WorkloadId, int] = share.rank
        # The order is sorted by the top-level node's projected ratio at each grant (a node's
        # picks raise its ratio, models/round.md 2.2): an arrival is placed in it by that
        # ratio, charged after everything its path had at the round (9.2), i.e. its protected
        # work and every candidate of the order.
        self.top_keys = [
            share.grant_ratios[wid][0] if share.grant_ratios[wid] else -math.inf
            for wid in share.order
        ]
        usage = share.usage_gpu_hours
        self.projected = {
            p: usage.get(p, 0.0) + self.horizon_h * share.demand_gpus.get(p, 0.0) for p in usage
        }
        self.seq = 0
        self.arrival_key: dict[WorkloadId, tuple[float, ...]] = {}
        # Work queued at the round that the round could not rank (a gang protected work leaves
        # no room for) takes no place in the order and counts against nothing, as in the round.
        self.unranked = {
            wid
            for wid, s in ctx.standings.items()
            if s.occupancy is Occupancy.ALLOCATED
            and not s.workload.running
            and wid not in share.rank
        }
        self._path_ratios: dict[BudgetPath | None, tuple[float, ...]] = {}
        self.reservations: list[Held] = list(ctx.reservations)
        self._set_reserved()
        # The live state: the plan's assignment (running work held where it runs, unallocated
        # work displaceable at what a preemption would cost, as in the round).
        self.load = load
        self.running_alloc: defaultdict[BudgetPath, int] = defaultdict(int)
        self.held_gpus = {Occupancy.ALLOCATED: 0, Occupancy.UNALLOCATED: 0}  # on ready hosts
        ready = self.hosts.ready
        st = ctx.standings
        for wid, placement in load.held.items():
            s = st[wid]
            on_ready = sum(g for h, g in placement.items() if ready[h])
            self.held_gpus[s.occupancy] += on_ready
            if s.occupancy is Occupancy.ALLOCATED:
                assert s.workload.budget is not None
                self.running_alloc[s.workload.budget] += on_ready
        self.dirty.update(b for (b, _) in self.groups)
        self.dirty.update(self.running_alloc)
        self.fresh.clear()
        self.new.clear()
        self.grown.clear()
        # A pass may not follow once protected work on a draining host reaches its end: the
        # contract then preempts it (host_draining), which only a full round does (9.1).
        self.drain_due: datetime | None = min(
            (
                s.protected_until
                for s in ctx.standings.values()
                if s.protected
                and s.protected_until is not None
                and any(self.cluster.by_name[h].state.draining for h in s.workload.hosts)
            ),
            default=None,
        )

    def _move(self, decisions: Iterable[Decision]) -> None:
        """The queue and the view as the round's plan leaves them (its assignment, the load,
        already does): starts run, preempted work waits again."""
        now = self.now
        for d in decisions:
            self.last[d.workload] = d
            if d.action is Action.START:
                w = self.view[d.workload]
                self._dequeue(w.id)
                self.view[w.id] = replace(
                    w, started=now, hosts=d.hosts, backfill_for=d.backfill_for
                )
            elif d.action is Action.PREEMPT:
                w = replace(
                    self.view[d.workload], started=None, hosts=MappingProxyType({}), backfill_for=()
                )
                self.view[w.id] = w
                self._enqueue(w)  # fresh: preempted work may fit elsewhere, the next pass looks

    # -- keys --------------------------------------------------------------------------------

    def _charge(self, w: Workload) -> None:
        assert w.budget is not None
        added = w.gpus * self.horizon_h
        self.projected[ROOT_PATH] = self.projected.get(ROOT_PATH, 0.0) + added
        for p in path_prefixes(w.budget):
            self.projected[p] = self.projected.get(p, 0.0) + added

    def _allocated_key(self, w: Workload) -> tuple[float, ...]:
        rank = self.rank.get(w.id)
        if rank is not None:
            return (float(rank),)
        key = self.arrival_key.get(w.id)
        if key is None:
            assert w.budget is not None
            top = path_prefixes(w.budget)[0] if w.budget != ROOT_PATH else ROOT_PATH
            effective = self.budgets.effective.get(top, 0.0)
            denominator = effective * self.capacity_gpu_hours
            r_top = self.projected.get(top, 0.0) / denominator if denominator > 0 else math.inf
            self.seq += 1
            if w.id in self.unranked:
                # The round could not rank it: it takes no place in the order and charges
                # nothing (9.2); after the round's picks, by its path's projected ratio.
                return (len(self.top_keys) + 0.5, r_top, float(self.seq))
            self._charge(w)
            position = bisect_right(self.top_keys, r_top) - 0.5
            key = self.arrival_key[w.id] = (position, r_top, float(self.seq))
        return key

    def _unallocated_key(self, w: Workload, funded: bool) -> tuple[object, ...]:
        budget = w.budget if funded else None
        ratios = self._path_ratios.get(budget)
        if ratios is None:
            ratios = self._path_ratios[budget] = (
                tuple(self.ratios.get(p, math.inf) for p in path_prefixes(budget))
                if budget
                else (math.inf,)
            )
        return (ratios, *leaf_order_key(w))

    def _key(self, q: Queued) -> tuple[object, ...]:
        """Its key in the order: the round's rank or an arrival's (9.2) for allocated work,
        the round's own key (ratios along its path, then the leaf's order) for the rest."""
        if q.occupancy is Occupancy.ALLOCATED:
            return self._allocated_key(q.workload)
        return self._unallocated_key(q.workload, q.funded)

    # -- reservations ------------------------------------------------------------------------

    def _set_reserved(self) -> None:
        self.gangs = frozenset(r.workload for r in self.reservations)
        self.reserved: Reserved | None = (
            Reserved(tuple(self.reservations), self.hosts) if self.reservations else None
        )

    def lapse(self, workload: WorkloadId) -> None:
        """The gang started or left the queue: its reservation ends."""
        if workload in self.gangs:
            for r in self.reservations:
                if r.workload == workload:
                    self.grown.update(r.hosts)  # other allocated work may start there now
            self.reservations = [r for r in self.reservations if r.workload != workload]
            self._set_reserved()

    def shape(self, q: Queued) -> Shape:
        """Where a queued workload may start: its shape, without the reserved hosts allocated
        work other than the gangs they are held for may not backfill (models/round.md 8.5)."""
        own = self.own_shape(q)
        if self.reserved is None or q.occupancy is not Occupancy.ALLOCATED:
            return own
        if q.workload.id in self.gangs:  # its own reservation's hosts, not another gang's
            return self.reserved.gang_shape(q.workload.id, own)
        return self.reserved.shape_for(q.workload, own, self.now)

    def own_shape(self, q: Queued) -> Shape:
        return self._own(q.request, q.workload)

    def _own(self, request: Request, w: Workload) -> Shape:
        shape = self.hosts.shapes.get(request)
        if shape is None:
            shape = shapes_of((w,), self.hosts)[w.id]
        return shape

    # -- keeping in step ---------------------------------------------------------------------

    def sync(self, changed: Iterable[Workload], gone: Iterable[WorkloadId] = ()) -> None:
        """The cluster as it is now for these workloads (queued or running, where); `gone`:
        workloads that left it (completed, cancelled)."""
        for w in changed:
            old = self.view.get(w.id)
            if old is None and not w.running:
                self.new.add(w.id)
            if old is not None:
                if old is w:
                    continue
                if old == w:
                    self.view[w.id] = w
                    if w.id in self.queued:
                        q = self.queued[w.id]
                        self.queued[w.id] = Queued(w, q.occupancy, q.funded, q.request, q.placeable)
                    continue
                self._drop(w.id)
            self._add(w)
        for wid in gone:
            if wid in self.view:
                self._drop(wid)

    def _add(self, w: Workload) -> None:
        self.view[w.id] = w
        if w.running:
            self._hold(w)
        else:
            self._enqueue(w)

    def _enqueue(self, w: Workload) -> None:
        funded = funded_in(self.budgets, w)
        allocated = funded and w.min_runtime_s > 0
        occupancy = Occupancy.ALLOCATED if allocated else Occupancy.UNALLOCATED
        request = request_of(w)
        fits = self.hosts.fits_empty.get(request)
        if fits is None:
            empty = np.where(self.hosts.ready, self.hosts.cap, 0)
            own = self._own(request, w)
            fits = self.hosts.fits_empty[request] = place(own, empty, self.hosts) is not None
        q = self.queued[w.id] = Queued(w, occupancy, funded, request, fits)
        self.by_request[request].add(w.id)
        self.groups[(w.budget, occupancy)].add(w.id)
        self.key[w.id] = self._key(q)
        if allocated:
            self.dirty.add(w.budget)
        else:
            self.tier[w.id] = Tier.UNALLOCATED
        self.fresh.add(w.id)

    def _dequeue(self, wid: WorkloadId) -> None:
        self.new.discard(wid)
        q = self.queued.pop(wid)
        self.by_request[q.request].discard(wid)
        self.groups[(q.workload.budget, q.occupancy)].discard(wid)
        self.key.pop(wid, None)
        self.tier.pop(wid, None)
        self.fresh.discard(wid)
        self.unranked.discard(wid)
        if q.occupancy is Occupancy.ALLOCATED:
            self.dirty.add(q.workload.budget)
        self.lapse(wid)

    def _hold(self, w: Workload) -> None:
        index = self.hosts.index
        placement = {index[h]: g for h, g in w.hosts.items()}
        ready = self.hosts.ready
        on_ready = sum(g for h, g in placement.items() if ready[h])
        if allocated_in(self.budgets, w):
            self.load.hold(w.id, placement)
            assert w.budget is not None
            self.running_alloc[w.budget] += on_ready
            self.dirty.add(w.budget)
            self.held_gpus[Occupancy.ALLOCATED] += on_ready
        else:
            # Started since the round: its value, nothing lost yet (models/round.md 4).
            cost = w.gpus * (UNALLOCATED_VALUE + UNALLOCATED_PREEMPT_FIXED)
            self.load.hold(w.id, placement, Tier.UNALLOCATED, cost)
            self.held_gpus[Occupancy.UNALLOCATED] += on_ready

    def _drop(self, wid: WorkloadId) -> None:
        w = self.view.pop(wid)
        if w.running:
            if self.load.holds(wid):
                placement = self.load.release(wid)
                self.grown.update(placement)
                ready = self.hosts.ready
                on_ready = sum(g for h, g in placement.items() if ready[h])
                if allocated_in(self.budgets, w):
                    assert w.budget is not None
                    self.running_alloc[w.budget] -= on_ready
                    self.dirty.add(w.budget)
                    self.held_gpus[Occupancy.ALLOCATED] -= on_ready
                else:
                    self.held_gpus[Occupancy.UNALLOCATED] -= on_ready
            return
        self._dequeue(wid)

    # -- tiers -------------------------------------------------------------------------------

    def refresh_tiers(self) -> None:
        """Tiers and keys of the queued allocated work of every node that changed: walking the
        node's queue in its own order (priority, then submission), a workload is entitled if
        it fits in what is left of the node's entitlement of the last full round after the
        allocated GPUs the node runs now and the entitled work ahead of it, or if the node holds
        nothing and is behind over the window (models/round.md 2.3 and 9.2). The node's work
        takes the keys its members hold, in its own order, as the round's merge would. Every
        node above it stays within its entitlement too, counting the allocated GPUs each of
        its leaves runs now and their entitled queued work (a leaf that is not refreshed keeps
        its tiers until the next full round, even where room appeared above it)."""
        if not self.dirty:
            return
        counted: defaultdict[BudgetPath, int] = defaultdict(int)  # per node, subtree totals
        for leaf, gpus in self.running_alloc.items():
            for p in path_prefixes(leaf):
                counted[p] += gpus
        for (node, occupancy), wids in self.groups.items():
            if node is None or node in self.dirty or occupancy is not Occupancy.ALLOCATED:
                continue
            gpus = sum(
                self.queued[w].workload.gpus for w in wids if self.tier.get(w) is Tier.ENTITLED
            )
            for p in path_prefixes(node) if gpus else ():
                counted[p] += gpus
        # Nodes behind over the window first, as the full round's order would (and in one
        # order whatever the set's: passes are deterministic).
        dirty = sorted(
            (n for n in self.dirty if n is not None),
            key=lambda n: (self.ratios.get(n, math.inf), n),
        )
        for node in dirty:
            members = [self.queued[wid] for wid in self.groups.get((node, Occupancy.ALLOCATED), ())]
            if not members:
                continue
            members.sort(key=lambda q: leaf_order_key(q.workload))
            slots = sorted(self.key[q.workload.id] for q in members)
            path = path_prefixes(node)
            held = self.running_alloc.get(node, 0)
            cap = self.entitlement.get(node, 0)
            behind = self.ratios.get(node, math.inf) < 1.0
            for q, slot in zip(members, slots, strict=True):
                wid = q.workload.id
                self.key[wid] = slot
                g = q.workload.gpus
                ranked = wid not in self.unranked
                above = all(counted[p] + g <= self.entitlement.get(p, 0) + 1e-9 for p in path[:-1])
                if (
                    q.placeable
                    and ranked
                    and above
                    and (held + g <= cap + 1e-9 or (held == 0 and behind))
                ):
                    self.tier[wid] = Tier.ENTITLED
                    held += g
                    for p in path:
                        counted[p] += g
                else:
                    self.tier[wid] = Tier.OVER
        self.dirty.clear()

    def order_key(self, wid: WorkloadId) -> tuple[int, tuple[object, ...]]:
        return (TIER_ORDER[self.tier[wid]], self.key[wid])

    # -- what a pass records -----------------------------------------------------------------

    def decided(self, decisions: Iterable[Decision]) -> None:
        for d in decisions:
            self.last[d.workload] = d

    def last_reason(self, wid: WorkloadId, default: Reason) -> Reason:
        d = self.last.get(wid)
        if d is None or d.action is Action.PREEMPT:
            return default
        return d.reason
