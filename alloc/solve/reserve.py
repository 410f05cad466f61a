"""Reservations: hosts held back for a gang that protected work keeps from starting
(models/round.md, section 8).

Without them a large gang never starts on a busy cluster: each time a host's protected work
ends, its GPUs go to smaller work that starts there with a new protection, and the gang never
sees enough whole hosts at once. A reservation is recomputed every round from the snapshot
alone (no state between rounds):

- a *candidate* is a queued allocated multi-host gang that fits the empty ready cluster but
  that protected work keeps from starting this round (so no solver could start it), whose
  leaf is owed (effective allocation x ready GPUs) at least its GPUs plus the allocated GPUs
  the leaf holds now (or time slicing pays for the excess: models/round.md 2.5), so that it is
  entitled to start once its hosts free, and has used less than its share over the window
  (ratio below 1); one per leaf, its first by priority and submission; candidates go lowest
  ratio first;
- its hosts are the ones of its shape where protected work ends soonest (a host without
  protected work: now), in one block for topology `block`,
  disjoint from earlier reservations; `ready_at` is the latest of those protection ends;
  a host holding work kept as `costly_to_stop` is never reserved (that work has no known end);
- at most `MAX_RESERVED_SHARE` of the ready hosts are reserved in one round.

On reserved hosts no allocated workload starts this round (the gang itself cannot: it does not
fit) but *backfill*: allocated work whose minimum runtime ends by the reservation's `ready_at`
(models/round.md 8.5). Such a start names the gangs whose hosts it takes (`backfill_for`);
once past its minimum runtime it holds its GPUs as over its entitlement while any of them
waits, so the gang, entitled, displaces it when its hosts were promised. Unallocated work may
fill their idle GPUs (it yields at once), and running work there is decided as anywhere else.
Once enough protections have ended the gang can start, the reservation lapses, and the gang
competes in fair-share order like any workload (if entitled, it displaces work beyond its
entitlement, the backfill among it, and unallocated work).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import numpy as np

from alloc.domain import (
    BudgetPath,
    Occupancy,
    Reason,
    Snapshot,
    Workload,
    WorkloadId,
    path_prefixes,
)
from alloc.policy.contract import Standing, runtime_delta
from alloc.policy.fairshare import window_ratios
from alloc.policy.timeslice import TimeSlicing
from alloc.readable import count, counted, gpus
from alloc.solve.placement import place
from alloc.solve.problem import HostArrays, Shape, shape_of

MAX_RESERVED_SHARE = 0.5  # of the ready hosts, per round


@dataclass(frozen=True, slots=True)
class Held:
    """One reservation in host indices (the plan names hosts: `alloc.domain.Reservation`)."""

    workload: WorkloadId
    hosts: tuple[int, ...]
    ready_at: datetime


def reservations(
    snapshot: Snapshot,
    st: Mapping[WorkloadId, Standing],
    hosts: HostArrays,
    why_not: dict[WorkloadId, str] | None = None,
) -> tuple[Held, ...]:
    """The round's reservations; `why_not`, when given, receives for every queued allocated
    multi-host gang without one the rule's reason (for `alloc explain`)."""
    gangs = _candidates(snapshot, st, hosts, why_not)
    if not gangs:
        return ()
    now = snapshot.now.timestamp()
    protected_used = np.zeros(hosts.count, np.int64)
    release = np.full(hosts.count, now)
    for s in st.values():
        if not s.protected:
            continue
        # Work kept because stopping it would destroy hours of it has no known end: its hosts
        # cannot be promised to a gang (reserved in vain, they would idle for days).
        ends = math.inf
        if s.forced_reason is Reason.PROTECTED and s.protected_until is not None:
            ends = s.protected_until.timestamp()
        for h, g in s.workload.hosts.items():
            i = hosts.index[h]
            protected_used[i] += g
            release[i] = max(release[i], ends)
    beside = np.where(hosts.ready, np.maximum(hosts.cap - protected_used, 0), 0)
    budget = int(MAX_RESERVED_SHARE * np.count_nonzero(hosts.ready))
    taken = np.zeros(hosts.count, bool)
    out: list[Held] = []
    for w, shape in gangs:
        if place(shape, beside, hosts) is not None:
            # It can start this round (displacing what it may): the solvers decide.
            if why_not is not None:
                why_not[w] = "it fits beside the protected work this round: it needs no reservation"
            continue
        eligible = shape.allowed & ~taken & np.isfinite(release)
        chosen = _soonest_hosts(shape, eligible, release, hosts)
        if chosen is None:
            if why_not is not None:
                why_not[w] = _no_hosts(shape, taken, release, hosts)
            continue
        if len(chosen) > budget:
            if why_not is not None:
                why_not[w] = (
                    f"it needs {counted(len(chosen), 'host')} and this round's reservations may "
                    f"hold only {count(budget)} more (at most {MAX_RESERVED_SHARE:.0%} of the "
                    "ready hosts)"
                )
            continue
        budget -= len(chosen)
        taken[chosen] = True
        ready_at = datetime.fromtimestamp(float(release[chosen].max()), UTC)
        out.append(Held(w, tuple(int(h) for h in chosen), ready_at))
    return tuple(out)


def off_reserved(shape: Shape, reserved: np.ndarray) -> Shape:
    """Where queued allocated work may start under reservations: its shape without them."""
    return replace(shape, allowed=shape.allowed & ~reserved)


def reserved_mask(held: tuple[Held, ...], hosts: HostArrays) -> np.ndarray:
    mask = np.zeros(hosts.count, bool)
    for r in held:
        mask[list(r.hosts)] = True
    return mask


class Reserved:
    """The round's reservations as host arrays, for backfill (models/round.md 8.5): a queued
    allocated workload other than their gangs may start on a reserved host only if its minimum
    runtime ends by the host's `ready_at`. Reservations are disjoint: each host has one."""

    def __init__(self, held: tuple[Held, ...], hosts: HostArrays) -> None:
        self.held = held
        self.gangs = frozenset(r.workload for r in held)
        self.mask = reserved_mask(held, hosts)
        self.until = np.full(hosts.count, math.inf)  # each reserved host's ready_at
        self.gang_of: dict[int, WorkloadId] = {}
        for r in held:
            self.until[list(r.hosts)] = r.ready_at.timestamp()
            for h in r.hosts:
                self.gang_of[h] = r.workload
        self.ends = sorted({r.ready_at.timestamp() for r in held})
        self._blocked: dict[int, np.ndarray] = {}
        self._shapes: dict[tuple[int, int | str], Shape] = {}

    def __bool__(self) -> bool:
        return bool(self.held)

    def level(self, w: Workload, now: datetime) -> int:
        """How many of the distinct `ready_at`s come before `w`'s protection would end if it
        started `now`: it may backfill the reservations of the others (0: all of them). Work
        that cannot resume backfills nothing: past a checkpoint interval of running the
        contract keeps it (`costly_to_stop`), so it could hold the gang's hosts past
        `ready_at`."""
        if not w.resumable:
            return len(self.ends)
        ends = (now + runtime_delta(w.min_runtime_s)).timestamp()
        return bisect_left(self.ends, ends - 1e-6)  # a protection ending at ready_at is fine

    def blocked(self, level: int) -> np.ndarray:
        """The reserved hosts work of this level may not start on."""
        mask = self._blocked.get(level)
        if mask is None:
            cut = self.ends[level - 1] if level else -math.inf
            mask = self._blocked[level] = self.mask & (self.until <= cut)
        return mask

    def shape_for(self, w: Workload, shape: Shape, now: datetime) -> Shape:
        """Where queued allocated `w` (not a reserving gang) may start `now`: off the reserved
        hosts it may not backfill; one Shape object per shape and level."""
        level = self.level(w, now)
        if level == 0:
            return shape
        key = (id(shape), level)
        out = self._shapes.get(key)
        if out is None:
            out = self._shapes[key] = off_reserved(shape, self.blocked(level))
        return out

    def gang_shape(self, gang: WorkloadId, shape: Shape) -> Shape:
        """Where a reserving gang may start: off the other gangs' reserved hosts."""
        key = (id(shape), str(gang))
        out = self._shapes.get(key)
        if out is None:
            others = self.mask & np.array(
                [self.gang_of.get(h) not in (None, gang) for h in range(len(self.mask))], bool
            )
            out = self._shapes[key] = off_reserved(shape, others)
        return out

    def held_at(self, host: int) -> datetime:
        """The `ready_at` of the reservation holding `host`."""
        return datetime.fromtimestamp(float(self.until[host]), UTC)

    def backfill_for(
        self, workload: WorkloadId, placement: Mapping[int, int]
    ) -> tuple[WorkloadId, ...]:
        """The gangs whose reserved hosts an allocated start takes (none: it is not backfill;
        a gang on its own reservation is not backfill either)."""
        if workload in self.gangs:
            return ()
        return tuple(sorted({self.gang_of[h] for h in placement if h in self.gang_of}))


def _candidates(
    snapshot: Snapshot,
    st: Mapping[WorkloadId, Standing],
    hosts: HostArrays,
    why_not: dict[WorkloadId, str] | None,
) -> list[tuple[WorkloadId, Shape]]:
    ready_gpus = int(hosts.cap[hosts.ready].sum())
    largest = int(hosts.cap[hosts.ready].max()) if hosts.ready.any() else 0
    running: dict[BudgetPath, int] = defaultdict(int)  # allocated GPUs held per node
    for s in st.values():
        if s.workload.running and s.occupancy is Occupancy.ALLOCATED and s.workload.budget:
            for p in path_prefixes(s.workload.budget):
                running[p] += s.workload.gpus
    first: dict[BudgetPath, Standing] = {}
    gangs: list[Standing] = []
    usage, ratios = window_ratios(snapshot)
    slicing = TimeSlicing(snapshot, usage)
    for s in st.values():
        w = s.workload
        if w.running or s.occupancy is not Occupancy.ALLOCATED or w.gpus <= largest:
            continue
        assert w.budget is not None  # allocated work is funded
        # Entitled to it once its hosts free: what each node on its path holds plus the gang
        # within what the node is owed (else the hosts, and their backfill, would wait for a
        # gang that cannot start when they free), or time slicing pays for the excess.
        node, excess = max(
            (
                (p, running[p] + w.gpus - snapshot.budgets.effective_allocation(p) * ready_gpus)
                for p in path_prefixes(w.budget)
            ),
            key=lambda pe: pe[1],
        )
        # float error: 26.999... is 27; beyond: time slicing may entitle it (2.5, TS3)
        if excess > 1e-9 and not slicing.affords(w.budget, excess, w.min_runtime_s):
            if why_not is not None:
                alone = snapshot.budgets.effective_allocation(node) * ready_gpus
                why_not[w.id] = (
                    f"{node}'s allocation alone is {gpus(alone)} (its effective allocation x "
                    f"the {counted(ready_gpus, 'ready GPU')}) and its running work held "
                    f"{counted(running[node], 'allocated GPU')} before this round: with its "
                    f"{count(w.gpus)} it would be {gpus(excess)} beyond its allocation, so "
                    "hosts held for it could idle in vain (time slicing across the window does "
                    "not pay for them: models/round.md 2.5)"
                )
            continue
        gangs.append(s)
        best = first.get(w.budget)
        if best is None or _team_key(s) < _team_key(best):
            first[w.budget] = s
    if not first:
        return []
    empty = np.where(hosts.ready, hosts.cap, 0)
    out = []
    for budget, s in sorted(first.items(), key=lambda kv: (ratios[kv[0]], _team_key(kv[1]))):
        if ratios[budget] >= 1.0:
            if why_not is not None:
                why_not[s.workload.id] = (
                    f"{budget} has used its share over the window (ratio {ratios[budget]:.2f})"
                )
            continue
        shape = shape_of(s.workload, hosts)
        if shape.single or place(shape, empty, hosts) is None:
            continue
        out.append((s.workload.id, shape))
    if why_not is not None:  # one candidate per leaf: the others wait behind it
        for s in gangs:
            leader = first[s.workload.budget]  # type: ignore[index]
            if leader is not s:
                why_not[s.workload.id] = why_not.get(
                    leader.workload.id,
                    f"{leader.workload.id} of the same node goes first (one reservation per "
                    "node: higher priority, then earlier submission)",
                )
    return out


def _no_hosts(shape: Shape, taken: np.ndarray, release: np.ndarray, hosts: HostArrays) -> str:
    """Why no hosts of the gang's shape could be reserved: the causes told apart."""
    free_of_costly = np.isfinite(release)
    if _soonest_hosts(shape, shape.allowed & free_of_costly, release, hosts) is not None:
        return "the hosts of its shape are reserved for gangs ahead of it this round"
    if _soonest_hosts(shape, shape.allowed & ~taken, release, hosts) is not None:
        return (
            "every set of hosts of its shape holds work kept as costly_to_stop, which has no "
            "known end (it runs until it finishes)"
        )
    return (
        "no set of hosts of its shape is both free of costly_to_stop work and outside the "
        "reservations of gangs ahead of it"
    )


def _team_key(s: Standing) -> tuple[int, datetime, str]:
    w = s.workload
    return (-w.priority, w.submitted, str(w.id))


def _soonest_hosts(
    shape: Shape, eligible: np.ndarray, release: np.ndarray, hosts: HostArrays
) -> np.ndarray | None:
    """The hosts of one kind (and one block for topology block) whose work ends soonest."""
    best: tuple[float, int, np.ndarray] | None = None
    for kind, (_, capacity) in enumerate(hosts.kinds):
        need = shape.hosts_needed(capacity)
        idx = np.flatnonzero(eligible & (hosts.kind_of == kind))
        groups = [idx[hosts.block_of[idx] == b] for b in np.unique(hosts.block_of[idx])]
        for group in groups if shape.block else [idx]:
            if len(group) < need:
                continue
            chosen = group[np.lexsort((group, release[group]))[:need]]
            key = (float(release[chosen].max()), int(chosen.min()))
            if best is None or key < best[:2]:
                best = (*key, np.sort(chosen))
    return None if best is None else best[2]
