"""From a finished assignment to the plan's decisions, each with its reason (STYLE.md habit 4)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType

import numpy as np

from alloc.domain import Action, Decision, HostName, Occupancy, Reason, Workload, WorkloadId
from alloc.policy.contract import runtime_delta
from alloc.policy.weights import Tier
from alloc.solve.context import RoundContext
from alloc.solve.load import Load
from alloc.solve.placement import place
from alloc.solve.problem import Shape

_NO_HOSTS: Mapping[HostName, int] = MappingProxyType({})  # a waiting decision's hosts

_HOLDING = {
    Tier.ENTITLED: Reason.UNDER_ALLOCATION,
    Tier.OVER: Reason.OVER_ALLOCATION,
    Tier.UNALLOCATED: Reason.UNALLOCATED_FILL,
    Tier.PROTECTED: Reason.PROTECTED,
}
_PREEMPT = {
    Tier.UNALLOCATED: Reason.UNALLOCATED_DISPLACED,
    Tier.OVER: Reason.REBALANCED,
    Tier.ENTITLED: Reason.MAKE_ROOM,
}


def _holding_reason(ctx: RoundContext, wid: WorkloadId) -> Reason:
    if not ctx.standings[wid].funded:
        return Reason.UNFUNDED
    return _HOLDING[ctx.tier(wid)]


def _preempt_reason(ctx: RoundContext, wid: WorkloadId) -> Reason:
    return _PREEMPT[ctx.tier(wid)]


class _WaitReasons:
    """Why queued workloads wait, most specific first; answers are cached per request shape
    because the free GPUs do not change while the plan is written."""

    def __init__(self, ctx: RoundContext, load: Load) -> None:
        self.ctx = ctx
        self.load = load
        self.fits: dict[tuple[int, bool], bool] = {}
        # Per shape: no host, or no ready host, of its GPU type (None: there are some).
        self.typed: dict[int, Reason | None] = {}
        self.never: dict[int, Reason] = {}  # per shape: why it fits no empty ready cluster

    def _fits(self, shape: Shape, loose: bool, free: np.ndarray | None = None) -> bool:
        key = (id(shape), loose)
        if free is None and key in self.fits:
            return self.fits[key]
        if loose:
            shape = Shape(shape.gpus, shape.types, shape.allowed, shape.single, block=False)
        fits = place(shape, self.load.free() if free is None else free, self.ctx.hosts) is not None
        if free is None:
            self.fits[key] = fits
        return fits

    def _fits_but_for_reservations(self, own: Shape) -> bool:
        """It would fit on free GPUs and those of unallocated work, reserved hosts included."""
        key = (id(own), False)
        if key not in self.fits:
            unallocated, _, _ = self.load.displaceable((Tier.UNALLOCATED,))
            room = self.load.free() + np.where(self.ctx.hosts.ready, unallocated, 0)
            self.fits[key] = place(own, room, self.ctx.hosts) is not None
        return self.fits[key]

    def __call__(self, wid: WorkloadId) -> Reason:
        ctx = self.ctx
        shape = ctx.shapes[wid]
        hosts = ctx.hosts
        if id(shape) not in self.typed:
            typed = shape.types[hosts.type_of]
            self.typed[id(shape)] = (
                Reason.GPU_TYPE  # no host of that type at all
                if not typed.any()
                else Reason.NO_ROOM  # hosts of that type exist, none is ready
                if not (typed & hosts.ready).any()
                else None
            )
        untyped = self.typed[id(shape)]
        if untyped is not None:
            return untyped
        if wid not in ctx.placeable:
            if id(shape) not in self.never:
                empty = np.where(hosts.ready, hosts.cap, 0)
                loose = self._fits(shape, True, empty)
                self.never[id(shape)] = Reason.TOPOLOGY if loose else Reason.TOO_LARGE
            return self.never[id(shape)]
        own = ctx.unreserved_shapes.get(wid)
        if own is not None and self._fits_but_for_reservations(own):
            return Reason.RESERVED
        if wid not in ctx.weights.tier:
            return Reason.NO_ROOM  # protected work leaves no place of its shape this round
        if shape.block and self._fits(shape, True):
            return Reason.TOPOLOGY
        if ctx.tier(wid) is Tier.OVER and ctx.share.over_entitlement(wid):
            # At its turn its GPUs would take a node on its path beyond its entitlement.
            return Reason.OVER_ALLOCATION
        return Reason.NO_ROOM  # entitled, or cut only by the ready GPUs: they are not there


def decisions(ctx: RoundContext, load: Load) -> tuple[Decision, ...]:
    snapshot = ctx.snapshot
    names = ctx.hosts.names
    wait_reason = _WaitReasons(ctx, load)
    standings, held, now = ctx.standings, load.held, snapshot.now
    last = ctx.memo.decisions if ctx.memo is not None else None
    backfill = ctx.backfill
    made: dict[WorkloadId, tuple[Workload, Decision]] = {}
    out = []

    def decided(
        w: Workload,
        action: Action,
        occupancy: Occupancy,
        reason: Reason,
        hosts: Mapping[HostName, int] = _NO_HOSTS,
        until: datetime | None = None,
    ) -> None:
        """The decision, or the last round's equal decision object for the same workload value
        (made once: the memo's validation reuses it)."""
        if last is not None:
            entry = last.get(w.id)
            if entry is not None and entry[0] is w:
                d = entry[1]
                if (
                    d.action is action
                    and d.occupancy is occupancy
                    and d.reason is reason
                    and d.protected_until == until
                    and (d.hosts is hosts or d.hosts == hosts)
                ):
                    made[w.id] = entry
                    out.append(d)
                    return
            d = Decision(w.id, action, occupancy, reason, hosts, until)
            made[w.id] = (w, d)
            out.append(d)
            return
        out.append(Decision(w.id, action, occupancy, reason, hosts, until))

    for w in snapshot.workloads:
        wid = w.id
        s = standings[wid]
        if s.forced is Action.KEEP:  # the commonest: protected work
            reason = s.forced_reason or Reason.PROTECTED
            decided(w, Action.KEEP, s.occupancy, reason, w.hosts, s.protected_until)
            continue
        if s.forced is Action.PREEMPT:
            assert s.forced_reason is not None
            out.append(Decision(wid, Action.PREEMPT, s.occupancy, s.forced_reason))
            continue
        allocated = s.occupancy is Occupancy.ALLOCATED
        if wid in held:
            # Solvers never move running work: kept, it holds the hosts it runs on.
            if w.running:
                action, placement, until = Action.KEEP, w.hosts, s.protected_until
            else:
                action = Action.START
                placement = {names[h]: g for h, g in sorted(held[wid].items())}
                until = now + runtime_delta(w.min_runtime_s) if allocated else None
            reason = _holding_reason(ctx, wid)
            if action is Action.KEEP:
                decided(w, action, s.occupancy, reason, placement, until)
            else:
                lease = (
                    backfill.backfill_for(wid, held[wid])
                    if backfill is not None and allocated
                    else ()
                )
                out.append(Decision(wid, action, s.occupancy, reason, placement, until, lease))
        elif w.running:
            out.append(Decision(wid, Action.PREEMPT, s.occupancy, _preempt_reason(ctx, wid)))
        else:
            decided(w, Action.WAIT, s.occupancy, wait_reason(wid))
    if last is not None:
        last.clear()
        last.update(made)
    return tuple(out)


def drained_hosts(ctx: RoundContext, load: Load) -> tuple[HostName, ...]:
    """Draining hosts that hold nothing once the plan is applied: ready for repair or removal."""
    names = ctx.hosts.names
    return tuple(names[i] for i in np.flatnonzero(ctx.hosts.draining & (load.used == 0)))


def occupancy_metrics(ctx: RoundContext, load: Load) -> dict[str, float]:
    hosts = ctx.hosts
    ready = hosts.ready
    ready_gpus = int(hosts.cap[ready].sum())
    allocated = unallocated = 0
    all_ready = ctx.snapshot.cluster.all_ready
    for wid, placement in load.held.items():
        if all_ready:
            on_ready = sum(placement.values())
        else:
            on_ready = sum(g for h, g in placement.items() if ready[h])
        if ctx.standings[wid].occupancy is Occupancy.ALLOCATED:
            allocated += on_ready
        else:
            unallocated += on_ready
    share = (lambda x: x / ready_gpus) if ready_gpus else (lambda x: 0.0)
    return {
        "occupancy": share(allocated + unallocated),
        "allocated_occupancy": share(allocated),
        "unallocated_occupancy": share(unallocated),
        "ready_gpus": ready_gpus,
        "installed_gpus": int(hosts.cap.sum()),
    }
