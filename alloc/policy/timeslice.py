"""Time slicing across the window (models/round.md 2.5; issue 15, decision 2).

A budget is a share of GPU *time* over the window: a leaf behind its share may hold more than
its entitlement this round, and pays it back afterwards (its usage, hence its ratio, rises, so
its work goes later in the order and is rebalanced first). The rules, numbered as in
models/round.md 2.5:

TS1. A leaf's *deficit* is what it is owed over the window less what it was charged:
     `D(L) = A(L) x W - U(L)` GPU-hours (A its effective allocation, W the window capacity).
TS2. The round's *slicing budget* is what other leaves were charged beyond their share over
     the window: `S = sum over funded leaves of max(0, U(l) - A(l) x W)`; the GPUs a
     time-sliced grant holds beyond entitlement come out of the entitlement that leaves ahead
     of their share still have ungranted this round (furthest ahead first: their entitlement,
     and that of their nodes not above the grant, is lowered), so no leaf behind its share
     loses any of its entitlement, and over the window the leaves ahead have at least S to
     give before they are below what they are owed.
TS3. A candidate beyond the entitlement of its leaf (or of a node above it) is entitled by
     time slicing when it is its leaf's first such candidate in the order (priority inside the
     node stays the node's own order: invariant 6), it fits the ready capacity with everything
     granted before it, the leaf is still behind and the others still ahead (D(L) > 0, S > 0),
     and, for queued work, its *cost*, the GPUs it holds beyond the entitlement of the most
     exceeded node on its path times its minimum runtime (what it holds for certain), is within
     both its leaf's deficit and what is left of the slicing budget. The entitlement of every
     node on its path is raised to what it then holds; the cost is taken from both.
TS4. Payback: running work keeps a time-sliced place while TS3 holds for it at no cost; once
     its leaf has caught up (D(L) <= 0) it is over its entitlement and the next full round
     rebalances it like any such work. Starting again needs the full cost (TS3): the
     hysteresis keeps a gang from being stopped and restarted round after round.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from alloc.domain import HOUR_S, BudgetPath, Snapshot, path_prefixes


class TimeSlicing:
    """TS1-TS3 for one round: what each leaf may still borrow and what the others can give."""

    def __init__(self, snapshot: Snapshot, usage: Mapping[BudgetPath, float]) -> None:
        tree = snapshot.budgets
        capacity = snapshot.window_capacity_gpu_hours
        eff = tree.effective
        self.deficit: dict[BudgetPath, float] = {}
        surplus = 0.0
        for leaf in tree.leaves():
            owed = eff.get(leaf, 0.0) * capacity
            if owed <= 0:
                continue
            used = usage.get(leaf, 0.0)
            self.deficit[leaf] = owed - used
            surplus += max(0.0, used - owed)
        self.budget = surplus

    def cost(self, excess_gpus: float, min_runtime_s: float) -> float:
        return excess_gpus * min_runtime_s / HOUR_S

    def affords(self, leaf: BudgetPath, excess_gpus: float, min_runtime_s: float) -> bool:
        """TS3 for work to start (`min_runtime_s` its minimum runtime) or to keep (0: the
        leaf must only still be behind, and the others still ahead)."""
        cost = self.cost(excess_gpus, min_runtime_s)
        room = min(self.deficit.get(leaf, 0.0), self.budget)
        return room > 0 and cost <= room + 1e-9

    def take(self, leaf: BudgetPath, excess_gpus: float, min_runtime_s: float) -> None:
        cost = self.cost(excess_gpus, min_runtime_s)
        self.deficit[leaf] = self.deficit.get(leaf, 0.0) - cost
        self.budget -= cost

    def from_leaves_ahead(
        self,
        excess: float,
        mine: set[BudgetPath],
        ratios: Mapping[BudgetPath, float],
        entitled: Mapping[BudgetPath, float],
        counted: Mapping[BudgetPath, float],
    ) -> dict[BudgetPath, float] | None:
        """TS2: how much each node's entitlement is lowered to give `excess` GPUs to a
        time-sliced grant whose path is `mine`: from leaves ahead of their share over the
        window, furthest ahead first, out of what is ungranted at each of them and at every
        node above it that is not above the grant too (each keeps at least what it holds).
        None if they cannot give that much."""
        lowered: dict[BudgetPath, float] = defaultdict(float)
        left = excess
        ahead = ((ratios[g], g) for g, d in self.deficit.items() if d < 0)
        for _, giver in sorted(ahead, reverse=True):
            if giver in mine:
                continue
            nodes = [p for p in path_prefixes(giver) if p not in mine]
            give = min(
                [left] + [entitled.get(p, 0.0) - lowered[p] - counted.get(p, 0.0) for p in nodes]
            )
            if give <= 1e-9:
                continue
            for p in nodes:
                lowered[p] += give
            left -= give
            if left <= 1e-9:
                return lowered
        return None
