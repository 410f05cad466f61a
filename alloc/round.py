"""One scheduling round: snapshot in, validated plan out. The simulator and the controller call
exactly this function; no clock, I/O or global state below it (STYLE.md habit 1)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from alloc.domain import Plan, Reservation, Snapshot, SolverReport
from alloc.solve.context import RoundContext, round_context
from alloc.solve.decisions import decisions, drained_hosts, occupancy_metrics
from alloc.solve.greedy import greedy
from alloc.solve.load import Load
from alloc.solve.memo import RoundMemo
from alloc.solve.milp import Outcome, solve_milp
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


@dataclass(frozen=True, slots=True)
class RoundResult:
    plan: Plan
    context: RoundContext  # what the round saw: fair share, tiers, host arrays (for reports)
    load: Load  # who holds which GPUs once the plan is carried out (the plan's own assignment)


def run_round(snapshot: Snapshot, options: RoundOptions | None = None) -> Plan:
    return solve_round(snapshot, options).plan


def solve_round(
    snapshot: Snapshot, options: RoundOptions | None = None, memo: RoundMemo | None = None
) -> RoundResult:
    """`memo`: what the previous round on this cluster left to reuse (the same plan)."""
    options = options or RoundOptions()
    solver = options.solver or snapshot.policy.solver
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {solver!r}; expected one of {', '.join(SOLVERS)}")
    limit = (
        options.time_limit_s if options.time_limit_s is not None else snapshot.policy.time_limit_s
    )
    started = time.perf_counter()
    ctx = round_context(snapshot, memo)
    warm = complete(ctx, greedy(ctx))
    warm_value = objective(ctx, warm)
    greedy_seconds = time.perf_counter() - started

    def greedy_report(note: str = "") -> SolverReport:
        """The greedy's plan: asked for (status `greedy`), or `note` says why the MILP fell
        back to it (status `fallback`); a fallback always says why."""
        status = "fallback" if note else "greedy"
        return SolverReport("greedy", status, warm_value, None, None, greedy_seconds, note)

    def plan_of(load: Load, report: SolverReport) -> Plan:
        return _plan(ctx, load, report, greedy_seconds, time.perf_counter() - started)

    final = warm
    if solver == "greedy":
        plan = plan_of(warm, greedy_report())
    else:
        # Leave time after the solver for decoding, repair and validation (each about a greedy
        # round's work), so that the whole round keeps within the limit.
        reserve = min(0.25 * limit, 2 * greedy_seconds + 0.02)
        backend = options.backend or snapshot.policy.backend
        outcome = solve_milp(ctx, warm, warm_value, started + limit - reserve, backend)
        if outcome.load is None:
            plan = plan_of(warm, greedy_report(outcome.note or "greedy answered"))
        else:
            final = outcome.load
            plan = plan_of(outcome.load, _milp_report(outcome))
    checks = (ctx.standings, ctx.hosts, ctx.reservations, ctx.memo, ctx.share.entitlement_gpus)
    problems = validate(snapshot, plan, *checks)
    if problems and plan.report.solver == "milp":
        note = f"MILP plan failed validation ({problems[0]}); greedy answered"
        plan, final = plan_of(warm, greedy_report(note)), warm
        problems = validate(snapshot, plan, *checks)
    if problems:
        raise InvalidPlanError(problems)
    return RoundResult(plan, ctx, final)


def _milp_report(outcome: Outcome) -> SolverReport:
    assert outcome.objective is not None
    status, bound, gap, note = outcome.status, outcome.bound, None, outcome.note
    if bound is not None:
        if bound < outcome.objective - 1e-6 * max(1.0, abs(outcome.objective)):
            # A plan better than the model's bound: the model is not a relaxation of the rules
            # the plan keeps. Say so instead of reporting a gap of zero.
            note = f"bound {bound:.6g} below the plan's objective: bound discarded"
            status, bound = "feasible", None
        else:
            gap = max(0.0, bound - outcome.objective) / max(abs(bound), 1e-9)
    return SolverReport("milp", status, outcome.objective, bound, gap, outcome.solver_seconds, note)


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
        reservations=tuple(
            Reservation(r.workload, tuple(ctx.hosts.names[h] for h in r.hosts), r.ready_at)
            for r in ctx.reservations
        ),
    )
