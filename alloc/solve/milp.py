"""The MILP round solver (models/round.md, section 5.4): bound, neighbourhood, polish.

1. The LP relaxation (GLOP) bounds every plan and shows where the greedy plan is already
   right: integer variables whose LP value equals their greedy value.
2. Those are fixed and the much smaller rest is solved to a tight gap (a RINS neighbourhood,
   warm-started from the greedy plan).
3. If time remains and the gap to the LP bound is still above the policy's, the whole model is
   solved from that incumbent until the time limit.
0. Before any model: a fractional-knapsack bound (O(n log n)); a greedy plan within the gap of
   it is the answer (as it is when within the gap of the LP bound of step 1).
Every plan is decoded onto hosts and repaired; the answer is never worse than the greedy plan.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from alloc.domain.plan import WITHOUT_MODEL
from alloc.solve.context import RoundContext
from alloc.solve.load import Load
from alloc.solve.milp_decode import decode, hint
from alloc.solve.milp_model import RoundModel, build_model
from alloc.solve.repair import complete
from alloc.solve.score import compaction_costs, objective

if TYPE_CHECKING:
    from alloc.solve.milp_backend import BackendResult

INTEGRAL = 1e-6
NEIGHBOURHOOD_GAP = 1e-4
QUICK_GAP = 1e-3


@dataclass(frozen=True, slots=True)
class Outcome:
    load: Load | None  # None: no solution, the caller falls back
    status: str  # optimal | feasible | fallback (no plan: the round falls back to the greedy)
    objective: float | None
    bound: float | None
    solver_seconds: float  # inside the backends
    note: str = ""


def solve_milp(
    ctx: RoundContext, warm: Load, warm_objective: float, deadline: float, backend: str
) -> Outcome:
    policy = ctx.snapshot.policy
    quick = knapsack_bound(ctx)
    # The shortcut is for easy rounds (most of a simulation); a hard round with a loose
    # stopping gap still gets the model, which often does far better than that gap.
    if _gap(quick, warm_objective) <= min(policy.mip_gap, QUICK_GAP):
        return Outcome(warm, "optimal", warm_objective, quick, 0.0, WITHOUT_MODEL)
    if deadline - time.perf_counter() <= 0.01:
        return Outcome(None, "fallback", None, None, 0.0, "time limit spent before the solve")
    # OR-Tools and scipy load here, when a round needs the model (most small rounds end at
    # the shortcut above; `alloc solve` of an example starts without them).
    from alloc.solve.milp_backend import LP_BACKEND, solve

    rm = build_model(ctx, warm.held)
    start = hint(ctx, rm, warm)

    def run(
        which: str,
        *,
        fixed: np.ndarray | None = None,
        warm: np.ndarray | None = None,
        relax: bool = False,
        gap: float = policy.mip_gap,
    ) -> BackendResult:
        remaining = deadline - time.perf_counter()
        return solve(
            rm.model,
            which,
            time_limit_s=max(0.01, remaining),
            threads=policy.threads,
            seed=policy.seed,
            gap=gap,
            hint=warm,
            fixed=fixed,
            relax=relax,
        )

    if deadline - time.perf_counter() <= 0.01:
        return Outcome(None, "fallback", None, None, 0.0, "time limit spent before the solve")
    seconds = 0.0
    lp = run(LP_BACKEND, relax=True)
    seconds += lp.seconds
    if lp.values is None:
        return Outcome(None, "fallback", None, None, seconds, f"LP relaxation: {lp.status}")
    bound = lp.objective
    if _gap(bound, warm_objective) <= min(policy.mip_gap, QUICK_GAP):
        return Outcome(
            warm,
            "optimal",
            warm_objective,
            bound,
            seconds,
            "the greedy plan is within the gap of the LP bound",
        )
    integer = rm.model.built()[0][3]
    agree = integer & (np.abs(lp.values - start) < INTEGRAL)
    # The neighbourhood is small: solve it to a tight gap whatever the policy's stopping gap,
    # else a warm start already within that gap would be returned unchanged.
    best = run(backend, warm=start, fixed=agree, gap=min(policy.mip_gap, NEIGHBOURHOOD_GAP))
    seconds += best.seconds
    values = best.values if best.values is not None else start
    load, value = _decoded(ctx, rm, values, warm, warm_objective)
    gap = _gap(bound, value)
    if gap > policy.mip_gap and deadline - time.perf_counter() > 0.05:
        full = run(backend, warm=hint(ctx, rm, load))
        seconds += full.seconds
        if full.bound is not None and bound is not None:
            bound = min(bound, full.bound)
        if full.values is not None:
            candidate, cvalue = _decoded(ctx, rm, full.values, load, value)
            load, value = candidate, cvalue
        gap = _gap(bound, value)
    status = "optimal" if gap <= policy.mip_gap else "feasible"
    note = "" if value > warm_objective + 1e-9 else "the greedy plan was not improved"
    return Outcome(load, status, value, bound, seconds, note)


def knapsack_bound(ctx: RoundContext) -> float:
    """(5.4, step 0) A bound in O(n log n): the fractional knapsack of every candidate's value
    per GPU held (less the least compaction cost it could pay) into the ready GPUs that
    protected work leaves, ignoring placement. When the greedy plan is already this close, no
    model is built."""
    hosts = ctx.hosts
    capacity = float(np.sum(np.where(hosts.ready, hosts.cap - ctx.fixed_used, 0).clip(min=0)))
    wts = ctx.weights
    least = _least_compaction(ctx)
    items = []
    for wid in ctx.order:
        shape = ctx.shapes[wid]
        w = ctx.standings[wid].workload
        cost = 0.0
        if w.running:
            held = float(sum(g for h, g in w.hosts.items() if hosts.ready[hosts.index[h]]))
        else:
            held, cost = least[id(shape)]
        value = wts.hold_value[wid] + wts.preempt_cost.get(wid, 0.0) - cost
        if value > 0:
            items.append((value / max(held, 1e-9), held))
    items.sort(reverse=True)
    total = -sum(wts.preempt_cost.values())
    for per_gpu, held in items:
        if capacity <= 0:
            break
        take = min(held, capacity)
        total += per_gpu * take
        capacity -= take
    return total


def _least_compaction(ctx: RoundContext) -> dict[int, tuple[float, float]]:
    """Per request shape: the fewest GPUs it can hold and the least compaction cost it can pay
    (4.3), whatever the other decisions (costs are priced at the start of the round)."""
    hosts = ctx.hosts
    small, whole = compaction_costs(ctx)
    room = ctx.start_free() + ctx.optional_used
    takeable = hosts.ready & (ctx.fixed_used == 0)
    out: dict[int, tuple[float, float]] = {}
    for shape in {id(s): s for s in ctx.shapes.values()}.values():
        options = []
        if shape.single:
            part = shape.allowed & (hosts.cap > shape.gpus) & (room >= shape.gpus)
            if part.any():
                options.append((float(shape.gpus), shape.gpus * float(small[part].min())))
            full = shape.allowed & (hosts.cap == shape.gpus) & takeable
            if full.any():
                options.append((float(shape.gpus), shape.gpus * float(whole[full].min())))
        else:
            for c in np.unique(hosts.cap[shape.allowed]).tolist():
                ok = shape.allowed & (hosts.cap == c) & takeable
                if ok.any():
                    held = float(shape.hosts_needed(c) * c)
                    options.append((held, held * float(whole[ok].min())))
        # Fewest GPUs and least cost, each over every option: a valid lower bound on both.
        out[id(shape)] = (
            (min(o[0] for o in options), min(o[1] for o in options))
            if options
            else (float(shape.gpus), 0.0)
        )
    return out


def _decoded(
    ctx: RoundContext, rm: RoundModel, values: np.ndarray, fallback: Load, fallback_value: float
) -> tuple[Load, float]:
    """Decode and repair; keep `fallback` if placement lost more than the model foresaw."""
    load = complete(ctx, decode(ctx, rm, values))
    value = objective(ctx, load)
    if value < fallback_value - 1e-6:
        return fallback, fallback_value
    return load, value


def _gap(bound: float | None, value: float) -> float:
    if bound is None:
        return float("inf")
    return max(0.0, bound - value) / max(abs(bound), 1e-9)
