"""The MILP round solver (models/round.md, section 5.4): bound, neighbourhood, polish.

1. The LP relaxation (GLOP) bounds every plan and shows where the greedy plan is already
   right: integer variables whose LP value equals their greedy value.
2. Those are fixed and the much smaller rest is solved to a tight gap (a RINS neighbourhood,
   warm-started from the greedy plan).
3. If time remains and the gap to the LP bound is still above the policy's, the whole model is
   solved from that incumbent until the time limit.
Every plan is decoded onto hosts and repaired; the answer is never worse than the greedy plan.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from alloc.solve.context import RoundContext
from alloc.solve.load import Load
from alloc.solve.milp_backend import LP_BACKEND, BackendResult, solve
from alloc.solve.milp_decode import decode, hint
from alloc.solve.milp_model import RoundModel, build_model
from alloc.solve.repair import complete
from alloc.solve.score import objective

INTEGRAL = 1e-6
NEIGHBOURHOOD_GAP = 1e-4


@dataclass(frozen=True, slots=True)
class Outcome:
    load: Load | None  # None: no solution, the caller falls back
    status: str  # optimal | feasible | fallback
    objective: float | None
    bound: float | None
    solver_seconds: float  # inside the backends
    note: str = ""


def solve_milp(
    ctx: RoundContext, warm: Load, warm_objective: float, deadline: float, backend: str
) -> Outcome:
    policy = ctx.snapshot.policy
    rm = build_model(ctx)
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
    integer = rm.model.vectors()[3]
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
