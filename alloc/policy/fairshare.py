"""Hierarchical fair share over the sliding window (models/round.md, section 2).

A node's usage is its own charged GPU-hours plus its descendants'. Its fair-share ratio is
usage / (effective allocation x window capacity). Work is ordered level by level, as in Slurm's
Fair Tree: at each level the sibling with the lowest ratio goes first, so a program's unused time
flows to its own other projects before any other program gets it. Priority and then submission
time order work only inside one budget leaf.

The order is *projected*: every grant adds `gpus x horizon` GPU-hours to the nodes on its path
before the next pick, so a node that has just been granted work competes with its new, higher
ratio. With the default horizon (the lookback window) the order interleaves siblings in
proportion to their shares, shifted by how far each is ahead or behind over the window; cutting
it at the ready capacity gives every node its entitlement for this round (section 2.3).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from alloc.domain import (
    HOUR_S,
    ROOT_PATH,
    Action,
    BudgetPath,
    BudgetTree,
    Occupancy,
    Snapshot,
    Workload,
    WorkloadId,
    path_prefixes,
)
from alloc.policy.contract import Standing, is_funded
from alloc.policy.entitlement import Shortfall, entitlements, shortfall
from alloc.policy.timeslice import TimeSlicing


def aggregate_usage(
    tree: BudgetTree, own_gpu_hours: Mapping[BudgetPath, float]
) -> dict[BudgetPath, float]:
    """Each node's usage: its own charged GPU-hours plus those of all its descendants."""
    total = {path: 0.0 for path in tree.paths()}
    for path, hours in own_gpu_hours.items():
        total[ROOT_PATH] += hours
        for prefix in path_prefixes(path):
            total[prefix] += hours
    return total


def ratio(usage_gpu_hours: float, effective: float, capacity_gpu_hours: float) -> float:
    denominator = effective * capacity_gpu_hours
    if denominator <= 0:
        return math.inf
    return usage_gpu_hours / denominator


def leaf_order_key(w: Workload, lost_hours: float = 0.0) -> tuple[int, bool, float, float, str]:
    """Inside one budget leaf: higher priority first; at equal priority running work before
    queued work, the running work with most at stake (`lost_hours` a preemption would destroy)
    first; then earlier submission, then id (models/round.md 2.2)."""
    return (-w.priority, not w.running, -lost_hours, w.submitted.timestamp(), w.id)


@dataclass(frozen=True, slots=True)
class FairShare:
    capacity_gpu_hours: float
    usage_gpu_hours: Mapping[BudgetPath, float]  # aggregated over the subtree
    ratios: Mapping[BudgetPath, float]  # over the window, before this round
    order: tuple[WorkloadId, ...]  # allocated candidates in fair-share order
    rank: Mapping[WorkloadId, int]
    entitled: frozenset[WorkloadId]  # candidates that fit the ready capacity in order (2.3)
    entitlement_gpus: Mapping[BudgetPath, int]  # protected + entitled GPUs per node
    grant_ratios: Mapping[WorkloadId, tuple[float, ...]]  # projected ratios along the path at grant
    unallocated_order: tuple[WorkloadId, ...]
    # Per node (subtree totals): GPUs of protected work plus those of the ordered candidates,
    # i.e. what the projection has charged once the whole order is granted.
    demand_gpus: Mapping[BudgetPath, float]
    # Entitled by time slicing across the window (2.5): GPUs beyond entitlement, cost GPU-h
    time_sliced: Mapping[WorkloadId, tuple[float, float]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    # The candidates that are not entitled, and what stood in the way at their turn (2.3)
    shortfalls: Mapping[WorkloadId, Shortfall] = field(default_factory=lambda: MappingProxyType({}))

    def over_entitlement(self, workload: WorkloadId) -> bool:
        """A candidate that is not entitled because its GPUs would take a node on its path
        beyond that node's entitlement (or it is backfill past its minimum runtime whose gang
        waits, 8.5): SPEC's `over_allocation`. A candidate cut only by the ready capacity is
        within its entitlement: the GPUs are not there (`no_room`)."""
        cut = self.shortfalls.get(workload)
        return cut is not None and (cut.gang is not None or bool(cut.exceeded))


def window_ratios(snapshot: Snapshot) -> tuple[dict[BudgetPath, float], dict[BudgetPath, float]]:
    usage = aggregate_usage(snapshot.budgets, snapshot.usage_gpu_hours)
    capacity = snapshot.window_capacity_gpu_hours
    eff = snapshot.budgets.effective
    return usage, {p: ratio(usage[p], eff[p], capacity) for p in usage}


class _ProjectedTree:
    """The projected order (section 2.2): at each internal node, the child with the lowest
    projected ratio (then name) picks next, each pick charging `gpus x horizon` to its path.

    A child's picks depend only on its own subtree, and its ratio only grows with them, so the
    order is a merge, computed bottom-up: each child's sequence with the ratio it has before
    each of its picks, sorted by (ratio, child name, position) at its parent. This is the
    pick-by-pick walk of a heap per node, without the heaps."""

    def __init__(self, snapshot: Snapshot, usage: Mapping[BudgetPath, float]) -> None:
        self.tree = snapshot.budgets
        self.capacity = snapshot.window_capacity_gpu_hours
        self.horizon_h = snapshot.policy.horizon_s / HOUR_S
        self.projected = dict(usage)
        self.queues: dict[BudgetPath, list[Workload]] = {}

    def charge(self, path: BudgetPath, gpus: int) -> None:
        added = gpus * self.horizon_h
        self.projected[ROOT_PATH] += added
        for prefix in path_prefixes(path):
            self.projected[prefix] += added

    def load(self, candidates: Iterable[Standing]) -> None:
        by_leaf: dict[BudgetPath, list[Standing]] = defaultdict(list)
        for s in candidates:
            assert s.workload.budget
            by_leaf[s.workload.budget].append(s)
        for leaf, work in by_leaf.items():
            if len(work) > 1:
                work.sort(key=lambda s: leaf_order_key(s.workload, s.lost_hours))
            self.queues[leaf] = [s.workload for s in work]

    def order(self) -> list[tuple[Workload, tuple[float, ...]]]:
        """Every loaded workload in pick order, with the projected ratios along its path (top
        level first) at its grant."""
        return self._sequence(ROOT_PATH)

    def _sequence(self, node: BudgetPath) -> list[tuple[Workload, tuple[float, ...]]]:
        # Work filed on the node itself (a controller account may name an inner node) goes
        # before its children's, as a walk that reaches the node takes it first.
        own: list[tuple[Workload, tuple[float, ...]]] = [(w, ()) for w in self.queues.get(node, ())]
        merged: list[tuple[float, str, int, Workload, tuple[float, ...]]] = []
        for child in self.tree.children(node):
            picks = self._sequence(child)
            if not picks:
                continue
            name = child.rsplit("/", 1)[-1]
            projected = self.projected[child]
            effective = self.tree.effective[child]
            for i, (w, below) in enumerate(picks):
                r = ratio(projected, effective, self.capacity)
                merged.append((r, name, i, w, (r, *below)))
                projected += w.gpus * self.horizon_h
        merged.sort(key=lambda m: m[:3])
        return own + [(m[3], m[4]) for m in merged]


def fair_share(
    snapshot: Snapshot,
    standings: Mapping[WorkloadId, Standing],
    placeable: frozenset[WorkloadId] | set[WorkloadId],
    ready_gpus: int,
) -> FairShare:
    """Order allocated candidates and cut the order at the ready capacity (section 2).

    `placeable` holds the workloads that fit the ready cluster when it is empty; the others can
    never start this round and take no place in the order.
    """
    usage, ratios = window_ratios(snapshot)
    projected = _ProjectedTree(snapshot, usage)
    committed = 0
    held: dict[BudgetPath, int] = defaultdict(int)  # GPUs counted against each leaf so far
    wanted: dict[BudgetPath, int] = defaultdict(int)  # GPUs of each leaf's candidates
    candidates = []
    all_ready, by_name = snapshot.cluster.all_ready, snapshot.cluster.by_name
    for s in standings.values():
        if s.occupancy is not Occupancy.ALLOCATED:
            continue
        w = s.workload
        if s.forced is Action.KEEP:  # protected
            assert w.budget
            projected.charge(w.budget, w.gpus)
            ready_held = (
                sum(w.hosts.values())
                if all_ready
                else sum(g for h, g in w.hosts.items() if by_name[h].state.accepts_work)
            )
            committed += ready_held
            held[w.budget] += ready_held
        elif s.forced is None and w.id in placeable:
            assert w.budget
            candidates.append(s)
            wanted[w.budget] += w.gpus
    # Per node (subtree totals): GPUs protected work holds, and those plus what is wanted.
    protected_gpus: dict[BudgetPath, float] = defaultdict(float)
    demand: dict[BudgetPath, float] = defaultdict(float)
    for leaf, gpus in held.items():
        for p in (ROOT_PATH, *path_prefixes(leaf)):
            protected_gpus[p] += gpus
            demand[p] += gpus
    for leaf, gpus in wanted.items():
        for p in (ROOT_PATH, *path_prefixes(leaf)):
            demand[p] += gpus
    projected.load(candidates)
    entitled_gpus = entitlements(snapshot.budgets, ready_gpus, demand, protected_gpus, ratios)

    order: list[WorkloadId] = []
    grant_ratios: dict[WorkloadId, tuple[float, ...]] = {}
    entitled: set[WorkloadId] = set()
    # GPUs counted against every node (subtree totals): protected work, then each grant. A
    # grant keeps every node on its path within its entitlement (2.3): a leaf within its own
    # entitlement cannot take what its parent's other children are entitled to.
    counted: dict[BudgetPath, float] = defaultdict(float, protected_gpus)
    by_id = snapshot.by_id
    slicing = TimeSlicing(snapshot, usage)
    passed_over: set[BudgetPath] = set()  # leaves with a candidate left beyond entitlement
    sliced_by: dict[WorkloadId, tuple[float, float]] = {}
    short: dict[WorkloadId, Shortfall] = {}
    for w, at_grant in projected.order():
        order.append(w.id)
        grant_ratios[w.id] = at_grant
        assert w.budget
        leaf = w.budget
        path = path_prefixes(leaf)
        # A workload larger than all its node is owed would never be entitled: it is when its
        # node holds nothing else and is behind over the window (time slicing of gangs larger
        # than a team's share), within what the nodes above it are entitled to.
        behind = held[leaf] == 0 and ratios[leaf] < 1.0
        if committed + w.gpus > ready_gpus:  # entitled work never exceeds the ready capacity
            short[w.id] = shortfall(w.gpus, path, behind, counted, entitled_gpus, committed)
            continue
        gang = waiting_gang(by_id, w) if w.backfill_for else None
        if gang is not None:  # backfill past its minimum runtime: over while its gang waits
            short[w.id] = Shortfall((), committed, gang=gang)  # (8.5)
            continue
        within = counted[leaf] + w.gpus <= entitled_gpus.get(leaf, 0.0) + 1e-9
        above = all(counted[p] + w.gpus <= entitled_gpus.get(p, 0.0) + 1e-9 for p in path[:-1])
        sliced = False
        if not ((within or behind) and above):
            short[w.id] = shortfall(w.gpus, path, behind, counted, entitled_gpus, committed)
            # Time slicing across the window (2.5, TS3): the leaf's first candidate beyond
            # entitlement, paid for by the leaf's deficit and the others' surplus.
            if leaf in passed_over:
                continue
            passed_over.add(leaf)
            excess = max(counted[p] + w.gpus - entitled_gpus.get(p, 0.0) for p in path)
            paid = 0.0 if w.running else w.min_runtime_s  # TS4: keeping costs nothing
            # TS2: the GPUs come out of what leaves ahead of their share over the window are
            # still entitled to and have not been granted, furthest ahead first.
            mine = set(path)
            lowered = slicing.from_leaves_ahead(excess, mine, ratios, entitled_gpus, counted)
            if lowered is None or not slicing.affords(leaf, excess, paid):
                continue
            slicing.take(leaf, excess, paid)
            del short[w.id]
            sliced_by[w.id] = (excess, slicing.cost(excess, paid))
            sliced = True
            for p, give in lowered.items():
                entitled_gpus[p] -= give
        entitled.add(w.id)
        committed += w.gpus
        held[leaf] += w.gpus
        for p in path:
            counted[p] += w.gpus
        if sliced:  # every node on its path is entitled to what it then holds
            for p in path:
                entitled_gpus[p] = max(entitled_gpus.get(p, 0.0), counted[p])
        elif not within:  # time slicing: the leaf is entitled to it this round
            entitled_gpus[leaf] = counted[leaf]
    entitlement = {p: int(round(g)) for p, g in entitled_gpus.items()}

    by_budget: dict[BudgetPath | None, tuple[float, ...]] = {}  # a leaf's ratios, once

    def unallocated_key(w: Workload) -> tuple[object, ...]:
        ratios_of = by_budget.get(w.budget)
        if ratios_of is None:
            funded = is_funded(snapshot, w)
            ratios_of = by_budget[w.budget] = _path_ratios(ratios, w) if funded else (math.inf,)
        return (ratios_of, *leaf_order_key(w))

    unallocated = sorted(
        (
            s.workload
            for s in standings.values()
            if s.occupancy is Occupancy.UNALLOCATED and s.forced is None
        ),
        key=unallocated_key,
    )
    return FairShare(
        capacity_gpu_hours=snapshot.window_capacity_gpu_hours,
        usage_gpu_hours=MappingProxyType(usage),
        ratios=MappingProxyType(ratios),
        order=tuple(order),
        rank=MappingProxyType({wid: i for i, wid in enumerate(order)}),
        entitled=frozenset(entitled),
        entitlement_gpus=MappingProxyType(entitlement),
        grant_ratios=MappingProxyType(grant_ratios),
        unallocated_order=tuple(w.id for w in unallocated),
        demand_gpus=MappingProxyType(demand),
        time_sliced=MappingProxyType(sliced_by),
        shortfalls=MappingProxyType(short),
    )


def waiting_gang(by_id: Mapping[WorkloadId, Workload], w: Workload) -> WorkloadId | None:
    """Running `w` started as backfill on hosts reserved for a gang that still waits
    (models/round.md 8.5): past its minimum runtime it is over its entitlement, so that the
    gang, entitled, displaces it. The first such gang (None: none waits)."""
    for gang in w.backfill_for:
        g = by_id.get(gang)
        if g is not None and not g.running:
            return gang
    return None


def _path_ratios(ratios: Mapping[BudgetPath, float], w: Workload) -> tuple[float, ...]:
    assert w.budget
    return tuple(ratios[p] for p in path_prefixes(w.budget))
