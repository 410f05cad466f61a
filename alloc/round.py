"""One scheduling round: snapshot in, validated plan out. The simulator and the controller call
exactly this function; no clock, I/O or global state below it (STYLE.md habit 1)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from alloc.domain import Plan, Snapshot, SolverReport
from alloc.solve.context import RoundContext, round_context
from alloc.solve.decisions import decisions, drained_hosts, occupancy_metrics
from alloc.solve.greedy import greedy
from alloc.solve.load import Load
from alloc.solve.milp import solve_milp
from alloc.solve.repair import complete
from alloc.solve.score import objective
from alloc.solve.validate import validate

SOLVERS = ("milp", "greedy")


class InvalidPlanError(RuntimeError):
    """Even the greedy plan broke an invariant: a bug, reported as an internal error."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems[:5]))
        self.problems = problems


@dataclass(frozen=True, slots=True)
class RoundOptions:
    solver: str | None = None  # None: the snapshot's policy decides
    time_limit_s: float | None = None
    backend: str | None = None  # None: the snapshot's policy decides
    extra_metrics: dict[str, float] = field(default_factory=dict)


def run_round(snapshot: Snapshot, options: RoundOptions | None = None) -> Plan:
    options = options or RoundOptions()
    solver = options.solver or snapshot.policy.solver
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; expected one of {', '.join(SOLVERS)}")
    limit = (
        options.time_limit_s if options.time_limit_s is not None else snapshot.policy.time_limit_s
    )
    started = time.perf_counter()
    deadline = started + limit
    ctx = round_context(snapshot)
    warm = complete(ctx, greedy(ctx))
    warm_value = objective(ctx, warm)
    greedy_seconds = time.perf_counter() - started
    fallback_plan = _plan(
        ctx,
        warm,
        SolverReport(
            "greedy",
            "fallback",
            warm_value,
            None,
            None,
            greedy_seconds,
            "" if solver == "greedy" else "greedy answered",
        ),
        greedy_seconds,
        greedy_seconds,
    )
    if solver == "greedy":
        return _checked(snapshot, fallback_plan, None)
    backend = options.backend or snapshot.policy.backend
    # Leave time after the solver for decoding, repair and validation (each about a greedy
    # round's work), so that the whole round keeps within the limit.
    reserve = min(0.25 * limit, 2 * greedy_seconds + 0.02)
    outcome = solve_milp(ctx, warm, warm_value, deadline - reserve, backend)
    if outcome.load is None:
        return _checked(snapshot, _renote(fallback_plan, outcome.note), None)
    assert outcome.objective is not None
    gap = None
    if outcome.bound is not None:
        gap = max(0.0, outcome.bound - outcome.objective) / max(abs(outcome.bound), 1e-9)
    report = SolverReport(
        "milp",
        outcome.status,
        outcome.objective,
        outcome.bound,
        gap,
        outcome.solver_seconds,
        outcome.note,
    )
    plan = _plan(ctx, outcome.load, report, greedy_seconds, time.perf_counter() - started)
    return _checked(snapshot, plan, fallback_plan)


def _plan(
    ctx: RoundContext, load: Load, report: SolverReport, greedy_seconds: float, seconds: float
) -> Plan:
    metrics = occupancy_metrics(ctx, load)
    metrics["greedy_seconds"] = greedy_seconds
    metrics["round_seconds"] = seconds
    return Plan(
        now=ctx.snapshot.now,
        report=report,
        decisions=decisions(ctx, load),
        drained_hosts=drained_hosts(ctx, load),
        metrics=metrics,
    )


def _renote(plan: Plan, note: str) -> Plan:
    r = plan.report
    report = SolverReport(r.solver, r.status, r.objective, r.bound, r.gap, r.solve_seconds, note)
    return Plan(plan.now, report, plan.decisions, plan.drained_hosts, plan.metrics)


def _checked(snapshot: Snapshot, plan: Plan, fallback: Plan | None) -> Plan:
    problems = validate(snapshot, plan)
    if not problems:
        return plan
    if fallback is not None:
        note = f"MILP plan failed validation ({problems[0]}); greedy answered"
        return _checked(snapshot, _renote(fallback, note), None)
    raise InvalidPlanError(problems)
