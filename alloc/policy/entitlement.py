"""How many GPUs each budget node is entitled to this round (models/round.md, section 2.3).

Top down from the ready GPUs: a node's entitlement is split among its children, each getting
its share of it, at least the GPUs its protected work holds and at most its demand (GPUs of
its allocated work that could run: protected, running, queued). What a child cannot use stays
with its siblings (Fair Tree's rule: a program's unused time goes to its own projects first)
and goes to them in fair-share order: lowest ratio over the window first. A leaf's
entitlement is therefore at least what SPEC calls *owed* (effective allocation x ready
capacity, capped at its demand), and the window decides who uses what others leave.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from alloc.domain import ROOT_PATH, BudgetPath, BudgetTree, WorkloadId


@dataclass(frozen=True, slots=True)
class Shortfall:
    """Why a candidate of the fair-share order is not entitled, as things stood at its turn
    (2.3). `exceeded`: each node on its path whose entitlement it would exceed, top down, with
    the GPUs protected work and the grants ranked ahead of it counted against the node then and
    the node's entitlement then (a leaf behind its share that holds nothing is not among them:
    2.3's exception). `committed_gpus`: the ready GPUs those held by then (beyond the ready
    capacity when they and its own exceed it). `gang`: backfill past its minimum runtime,
    over its entitlement while that gang waits (8.5)."""

    exceeded: tuple[tuple[BudgetPath, float, float], ...]
    committed_gpus: float
    gang: WorkloadId | None = None


def shortfall(
    gpus: int,
    path: tuple[BudgetPath, ...],
    behind: bool,
    counted: Mapping[BudgetPath, float],
    entitled_gpus: Mapping[BudgetPath, float],
    committed: float,
) -> Shortfall:
    """What stands in the way of a candidate of `gpus` that is not entitled at its turn: the
    nodes on its `path` it would exceed (not its leaf when `behind`: 2.3's exception), and the
    ready GPUs already `committed`."""
    limits = [(p, counted[p], entitled_gpus.get(p, 0.0)) for p in (path[:-1] if behind else path)]
    return Shortfall(tuple(n for n in limits if n[1] + gpus > n[2] + 1e-9), committed)


def split(
    total: float, shares: list[float], lo: list[float], hi: list[float], ratios: list[float]
) -> list[float]:
    """Each child first gets its share of `total`, at least `lo` (protected GPUs), at most `hi`
    (demand); when protected GPUs push the sum past `total`, the shares are scaled down so the
    sum fits. What is left goes to the children still short of their demand, lowest fair-share
    ratio first (the node that used least of its allocation over the window)."""
    n = len(shares)
    if n == 0:
        return []

    def base(x: float) -> list[float]:
        return [min(hi[i], max(lo[i], x * shares[i])) for i in range(n)]

    alloc = base(total)
    if sum(alloc) > total + 1e-9:
        # The sum is piecewise linear and non-decreasing in x: find the piece where it reaches
        # `total` among the breakpoints lo/share and hi/share, then interpolate.
        points = sorted(
            {0.0, total}
            | {
                v / s
                for s, low_i, high_i in zip(shares, lo, hi, strict=True)
                if s > 0
                for v in (low_i, high_i)
                if v / s < total
            }
        )
        below = 0.0
        for x in points:
            if sum(base(x)) > total:
                f0, f1 = sum(base(below)), sum(base(x))
                t = (total - f0) / (f1 - f0) if f1 > f0 else 0.0
                alloc = base(below + t * (x - below))
                break
            below = x
    left = total - sum(alloc)
    for i in sorted(range(n), key=lambda i: (ratios[i], i)):
        if left <= 1e-9:
            break
        more = min(left, hi[i] - alloc[i])
        if more > 0:
            alloc[i] += more
            left -= more
    return alloc


def entitlements(
    tree: BudgetTree,
    capacity: float,
    demand: Mapping[BudgetPath, float],
    protected: Mapping[BudgetPath, float],
    ratios: Mapping[BudgetPath, float],
) -> dict[BudgetPath, float]:
    """Entitled GPUs per node, whole GPUs that sum at every node to at most the node's own;
    `demand` and `protected` are per node (subtree totals)."""
    out: dict[BudgetPath, float] = {ROOT_PATH: min(capacity, demand.get(ROOT_PATH, 0.0))}
    stack = [ROOT_PATH]
    while stack:
        parent = stack.pop()
        children = tree.children(parent)
        if not children:
            continue
        hi = [demand.get(c, 0.0) for c in children]
        order = [ratios.get(c, 0.0) for c in children]
        alloc = split(
            out[parent],
            [tree.node(c).share for c in children],
            [protected.get(c, 0.0) for c in children],
            hi,
            order,
        )
        alloc = whole_gpus(out[parent], alloc, hi, order)
        for child, gpus in zip(children, alloc, strict=True):
            out[child] = gpus
            stack.append(child)
    return out


def whole_gpus(
    total: float, alloc: list[float], hi: list[float], ratios: list[float]
) -> list[float]:
    """`split`'s fractions as whole GPUs (a workload holds whole GPUs, so a node entitled to
    0.6 of one is entitled to none of it): each child gets the whole part of its fraction,
    and the GPUs left of the parent's whole total go one by one to the children with the
    largest fractional parts, lowest fair-share ratio first at a tie, never beyond a child's
    demand. The children's sum stays within the parent's whole GPUs (2.3)."""
    base = [math.floor(a + 1e-9) for a in alloc]
    left = math.floor(total + 1e-9) - sum(base)
    by_fraction = sorted(range(len(alloc)), key=lambda i: (-(alloc[i] - base[i]), ratios[i], i))
    for i in by_fraction:
        if left <= 0:
            break
        if alloc[i] - base[i] > 1e-9 and base[i] + 1 <= hi[i] + 1e-9:
            base[i] += 1
            left -= 1
    return [float(b) for b in base]
