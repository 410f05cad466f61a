"""metrics.json of one simulation (SPEC.md, "Simulation and what-if").

- availability: ready GPU time / installed GPU time.
- occupancy: GPU time held by work / ready GPU time, split allocated / unallocated; and the same
  over the time in which a round had left queued work waiting that could start on the ready
  cluster if it were empty (`occupancy_while_queued`: the seconds between an arrival and the
  round that starts it do not count, nor work larger than every place it could ever have);
  the GPU time idle in it is split (`idle_while_queued`) by whether some waiting work fit
  into the free GPUs as they were (`work_fit`: idle the round could have filled; allocated
  work does not count reserved hosts) or none did (`nothing_fit`: the waiting work needed
  more room than was free, e.g. a gang waiting for whole hosts to empty).
- impact, per budget leaf ("team"): owed = effective allocation x ready GPU time, capped hour by
  hour at the team's demand (GPU time of its allocated work, queued or running, but not of
  work larger than every place the lab has: it can never run; `jobs.never_fit` counts it);
  delivered = its allocated GPU time. A budget is a share of GPU *time* over the window, so
  delivered/owed is taken over the window: the run is cut into consecutive lookback periods
  from its start (the policy's lookback in whole hours; the last period may be shorter), each
  period credits min(delivered in it, owed in it), and the ratio is the credited sum over the
  owed sum (a gang above the share one day and below it the next gets what it is owed; time
  delivered beyond what was owed in one period does not make up for another period). The
  stricter hour-by-hour figure, which credits min(delivered, owed) every hour, is reported
  beside it as `delivered_over_owed_hourly`. Both are null for a team owed nothing. Overall:
  the same sums over all teams (null when nothing was owed); the worst team is the lowest
  window ratio among the teams owed something (`worst_team_hourly`: the lowest hourly one).
- waits (first start minus submission) of allocated work by class: debug (at most 8 GPUs and a
  minimum runtime of at most 15 minutes), large (64 GPUs or more), small (the rest); work with
  minimum runtime 0 or no budget is reported apart as `unallocated`. A job that never started
  counts with the time it waited until the end of the run (a lower bound), and per class
  `never_started` says how many did. p50 and p90 are nearest-rank percentiles
  (`alloc.metrics.quantiles`, the one definition the reports and the wait plot use too).
  `wait_allocated_s`: the same over all allocated work
  (the three classes together).
- a run stopped before its end (Ctrl-C) is `partial`: every figure covers the simulated time
  reached (`simulated_days`, `stopped_at`), not the `days` asked for.
- allocated demand: GPUs of allocated work (queued or running, that fits the lab) over ready
  GPUs, averaged over the run and over its first and last day (SPEC's lab has 2-3x);
- preemptions, the GPU-hours they destroyed; those of work on a host that went into
  maintenance under it (reason host_maintenance: an availability event, not a choice of the
  plan, SPEC invariant 3) are counted apart, `host_maintenance_preemptions` and
  `host_maintenance_gpu_hours_lost`, and not in `preemptions`; drains completed and their
  median duration
  (nearest rank, as every percentile);
  utilization where the trace gives `util`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from alloc.domain import BudgetPath, Reason
from alloc.io.durations import format_time
from alloc.metrics.quantiles import nearest_rank, summary
from alloc.readable import natural_key
from alloc.sim.engine import SimResult
from alloc.sim.jobs import SimJob

HOUR = 3600.0
HOST_MAINTENANCE = Reason.HOST_MAINTENANCE.value  # as a preemption records its reason


def job_class(sj: SimJob, allocated: bool) -> str:
    return wait_class(sj.job.gpus, sj.job.min_runtime_s, allocated)


def job_wait(result: SimResult, sj: SimJob) -> tuple[str, float, bool]:
    """A submitted job's class, its wait until its first start (until the end of the run when
    it never started) and whether it is allocated: what metrics.json's waits and jobs.csv,
    which the wait plot reads, both count."""
    j = sj.job
    budget = j.budget or None  # none, or empty: unfunded
    funded = budget is not None and result.lab.budgets.effective_allocation(budget) > 0
    allocated = funded and j.min_runtime_s > 0
    start = sj.first_start_s if sj.first_start_s is not None else result.horizon_s
    return job_class(sj, allocated), max(0.0, start - j.submitted_s), allocated


def wait_class(gpus: int, min_runtime_s: float, allocated: bool) -> str:
    """debug (at most 8 GPUs, minimum runtime at most 15 minutes), large (64 GPUs or more),
    small (the rest) for allocated work; else unallocated."""
    if not allocated:
        return "unallocated"
    if gpus >= 64:
        return "large"
    if gpus <= 8 and min_runtime_s <= 15 * 60:
        return "debug"
    return "small"


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else 1.0


def _share(num: float, den: float) -> float | None:
    """A ratio of what was owed, or None when nothing was (not 100% of nothing)."""
    return round(num / den, 6) if den > 0 else None


def _worst(teams: dict[str, Any], key: str) -> dict[str, Any] | None:
    """The team with the lowest `key` among those owed something (a team owed nothing has no
    ratio), with that ratio."""
    owed = [(k, t[key]) for k, t in teams.items() if t[key] is not None]
    if not owed:
        return None
    budget, ratio = min(owed, key=lambda kv: kv[1])
    return {"budget": budget, key: ratio}


@dataclass(frozen=True, slots=True)
class Impact:
    """GPU-seconds of one leaf over a run: owed, delivered, and the delivered time credited
    against what was owed over the window's periods (`within`) and hour by hour
    (`within_hourly`)."""

    owed: float
    delivered: float
    within: float
    within_hourly: float


def period_hours(lookback_s: float) -> int:
    """The window's periods in whole hours (at least one), the unit the recorder keeps."""
    return max(1, round(lookback_s / HOUR))


def impact(result: SimResult, leaf: BudgetPath) -> Impact:
    r = result.recorder
    eff = result.lab.budgets.effective_allocation(leaf)
    demand, delivered = r.demand[leaf], r.delivered[leaf]
    period = period_hours(result.lab.policy.lookback_s)
    owed = got = total = hourly = 0.0
    period_owed = period_got = 0.0
    for h, ready_s in enumerate(r.ready.values):
        if h % period == 0:
            got += min(period_got, period_owed)
            period_owed = period_got = 0.0
        o = min(eff * ready_s, demand.at(h))
        d = delivered.at(h)
        owed += o
        total += d
        hourly += min(d, o)
        period_owed += o
        period_got += d
    got += min(period_got, period_owed)
    return Impact(owed, total, got, hourly)


def demand_over_ready(result: SimResult) -> dict[str, float | None]:
    """Allocated demand (queued or running) over ready GPUs: over the run, its first and its
    last day."""
    r = result.recorder
    hours = len(r.ready.values)

    def ratio(first: int, last: int) -> float | None:
        span = range(max(0, first), min(hours, last))
        ready = sum(r.ready.values[h] for h in span)
        demand = sum(s.at(h) for s in r.demand.values() for h in span)
        return round(demand / ready, 3) if ready > 0 else None

    return {
        "mean": ratio(0, hours),
        "first_day": ratio(0, 24),
        "last_day": ratio(hours - 24, hours),
    }


def idle_while_queued(result: SimResult) -> dict[str, float] | None:
    """Idle GPU time while work was queued, as fractions of the ready GPU time then: in all,
    while some waiting work fit into the free GPUs, and while none did."""
    r = result.recorder
    ready_q = r.ready_while_waiting.total()
    if ready_q <= 0:
        return None
    idle = ready_q - r.held_while_waiting.total()
    fit = r.ready_while_fits.total() - r.held_while_fits.total()
    return {
        "total": round(idle / ready_q, 6),
        "work_fit": round(fit / ready_q, 6),
        "nothing_fit": round((idle - fit) / ready_q, 6),
    }


def _stopped_at(result: SimResult) -> str:
    """The simulated date a partial run reached, to the second."""
    return format_time(result.world.at(round(result.horizon_s)))


def metrics(result: SimResult, policy: str, seed: int) -> dict[str, Any]:
    r = result.recorder
    world = result.world
    funded = {
        leaf
        for leaf in result.lab.budgets.leaves()
        if result.lab.budgets.effective_allocation(leaf) > 0
    }
    ready = r.ready.total()
    held = r.allocated.total() + r.unallocated.total()
    ready_q = r.ready_while_waiting.total()
    held_q = r.held_while_waiting.total()

    waits: dict[str, list[float]] = {"debug": [], "small": [], "large": [], "unallocated": []}
    never = dict.fromkeys(waits, 0)  # jobs of each class that never started
    team_waits: dict[BudgetPath, list[float]] = {leaf: [] for leaf in funded}
    for sj in world.jobs.values():
        if sj.state == "pending":
            continue
        cls, wait, allocated = job_wait(result, sj)
        waits[cls].append(wait)
        never[cls] += sj.first_start_s is None
        if allocated and sj.job.budget in team_waits:
            team_waits[sj.job.budget].append(wait)

    teams: dict[str, Any] = {}
    owed_all = got_all = hourly_all = 0.0
    # The plan's own preemptions, and apart those a host going into maintenance forced.
    own = [p for p in r.preemptions if p.reason != HOST_MAINTENANCE]
    down = [p for p in r.preemptions if p.reason == HOST_MAINTENANCE]
    preempted_by_team = Counter(p.budget for p in own)
    down_by_team = Counter(p.budget for p in down)
    for leaf in sorted(funded, key=natural_key):  # teams in natural order: r2 before r10
        i = impact(result, leaf)
        owed_all += i.owed
        got_all += i.within
        hourly_all += i.within_hourly
        w = summary(team_waits[leaf])
        teams[leaf] = {
            "owed_gpu_hours": round(i.owed / HOUR, 3),
            "delivered_gpu_hours": round(i.delivered / HOUR, 3),
            "delivered_within_owed_gpu_hours": round(i.within / HOUR, 3),
            "delivered_within_owed_hourly_gpu_hours": round(i.within_hourly / HOUR, 3),
            # None when the team was owed nothing (no demand): not 100% of it
            "delivered_over_owed": _share(i.within, i.owed),
            "delivered_over_owed_hourly": _share(i.within_hourly, i.owed),
            "jobs": w["count"],
            "wait_p50_s": w["p50"],
            "wait_p90_s": w["p90"],
            "preemptions": preempted_by_team.get(leaf, 0),
            "host_maintenance_preemptions": down_by_team.get(leaf, 0),
        }
    drains = sorted((d.end_s - d.start_s) / HOUR for d in r.drains)
    util_gpus = r.util_gpus.total()
    allocated_waits = [w for cls in ("debug", "small", "large") for w in waits[cls]]
    return {
        "policy": policy,
        "seed": seed,
        "days": result.config.days,  # asked for; a partial run covers `simulated_days`
        "partial": result.partial,
        "simulated_days": round(result.horizon_s / 86400.0, 6),
        **({"stopped_at": _stopped_at(result)} if result.partial else {}),
        # The rounds run, each kind by its name (the progress line's "rounds" are both).
        # "rounds" is "full_rounds" under its first name, kept for the files and scripts
        # that read it.
        "full_rounds": result.rounds,
        "event_passes": result.passes,
        "rounds": result.rounds,
        "round_model": result.config.rounds,
        "skipped_rounds": result.skipped_rounds,
        "skipped_passes": result.skipped_passes,
        "wall_seconds": round(result.wall_seconds, 3),
        "availability": round(_ratio(ready, r.installed.total()), 6),
        "occupancy": round(_ratio(held, ready), 6),
        "allocated_occupancy": round(_ratio(r.allocated.total(), ready), 6),
        "unallocated_occupancy": round(_ratio(r.unallocated.total(), ready), 6),
        # None when no work was ever queued that could start: nothing to measure
        "occupancy_while_queued": round(held_q / ready_q, 6) if ready_q > 0 else None,
        "idle_while_queued": idle_while_queued(result),
        "delivered_over_owed": _share(got_all, owed_all),
        "delivered_over_owed_hourly": _share(hourly_all, owed_all),
        "worst_team": _worst(teams, "delivered_over_owed"),
        "worst_team_hourly": _worst(teams, "delivered_over_owed_hourly"),
        "teams": teams,
        "wait_s": {k: summary(v) | {"never_started": never[k]} for k, v in waits.items()},
        "wait_allocated_s": summary(allocated_waits)
        | {"never_started": sum(never[cls] for cls in ("debug", "small", "large"))},
        "allocated_demand_over_ready": demand_over_ready(result),
        "preemptions": len(own),
        "preempted_gpu_hours_lost": round(sum(p.lost_gpu_s for p in own) / HOUR, 3),
        "host_maintenance_preemptions": len(down),
        "host_maintenance_gpu_hours_lost": round(sum(p.lost_gpu_s for p in down) / HOUR, 3),
        "drains_completed": len(drains),
        "drain_hours_p50": round(nearest_rank(drains, 0.5), 3) if drains else None,
        "utilization": round(r.util.total() / util_gpus, 6) if util_gpus else None,
        "invariant_violations": result.violations,
        "jobs": {
            "submitted": sum(1 for sj in world.jobs.values() if sj.state != "pending"),
            "completed": sum(1 for sj in world.jobs.values() if sj.state == "done"),
            "running_at_end": len(world.running),
            "queued_at_end": len(world.queued),
            # larger than every place the lab has: never started, not counted as demand
            "never_fit": sum(
                1
                for sj in world.jobs.values()
                if sj.state != "pending" and not world.could_ever_run(sj)
            ),
        },
    }
