"""Hourly timelines of a simulation, as rows for CSV files and plots."""

from __future__ import annotations

from typing import Any

from alloc.metrics.pyramid import HOUR
from alloc.sim.engine import SimResult


def _hour_seconds(result: SimResult, h: int) -> float:
    """The length of hour h inside the run: the last hour may be partial."""
    return max(1e-9, min(HOUR, result.horizon_s - h * HOUR))


def timeline_rows(result: SimResult) -> list[dict[str, Any]]:
    """Per hour, in average GPUs: installed, ready, allocated, unallocated, idle, unavailable,
    queued; and `allocated_on_unavailable`: allocated work still running on hosts that are
    not ready (draining), part of `unavailable`, not of `allocated`, but delivered to its team
    (teams.csv). The timeline counts GPUs held, teams are delivered the GPUs their work asked
    for: the two reconcile (allocated + allocated_on_unavailable = delivered) except for a
    gang of a size no host count fills, which holds whole hosts (12 GPUs on two 8-GPU hosts
    hold 16)."""
    r = result.recorder
    rows = []
    for h in range(len(r.installed.values)):
        length = _hour_seconds(result, h)
        installed = r.installed.at(h) / length
        ready = r.ready.at(h) / length
        allocated = r.allocated.at(h) / length
        unallocated = r.unallocated.at(h) / length
        rows.append(
            {
                "hour": h,
                "installed": round(installed, 3),
                "ready": round(ready, 3),
                "allocated": round(allocated, 3),
                "unallocated": round(unallocated, 3),
                "idle": round(max(0.0, ready - allocated - unallocated), 3),
                "unavailable": round(installed - ready, 3),
                "queued": round(r.queued.at(h) / length, 3),
                "allocated_on_unavailable": round(r.allocated_unavailable.at(h) / length, 3),
            }
        )
    return rows


def team_rows(result: SimResult) -> list[dict[str, Any]]:
    """Per hour and team, in average GPUs: owed (capped at demand), delivered, demand; and the
    team's fair-share ratio over the window at the first round of the hour (empty before any)."""
    r = result.recorder
    budgets = result.lab.budgets
    rows = []
    last_ratios: dict[str, float] = {}
    for h in range(len(r.ready.values)):
        length = _hour_seconds(result, h)
        if h in r.ratios:
            last_ratios = {str(k): v for k, v in r.ratios[h].items()}
        ready = r.ready.values[h] / length
        for leaf in budgets.leaves():
            eff = budgets.effective_allocation(leaf)
            if eff <= 0:
                continue
            demand = r.demand[leaf].at(h) / length
            ratio = last_ratios.get(str(leaf))
            rows.append(
                {
                    "hour": h,
                    "team": leaf,
                    "owed": round(min(eff * ready, demand), 3),
                    "delivered": round(r.delivered[leaf].at(h) / length, 3),
                    "demand": round(demand, 3),
                    "ratio": "" if ratio is None else round(ratio, 4),
                }
            )
    return rows


def job_rows(result: SimResult) -> list[dict[str, Any]]:
    """One row per submitted job: class, waits (as metrics.json counts them: `job_wait`),
    preemptions, lost work."""
    from alloc.metrics.pyramid import job_wait

    rows = []
    for sj in result.world.jobs.values():
        j = sj.job
        if sj.state == "pending":
            continue
        cls, wait, _ = job_wait(result, sj)
        start = sj.first_start_s
        rows.append(
            {
                "id": j.id,
                "team": j.budget or "",
                "class": cls,
                "kind": j.kind or "",
                "gpus": j.gpus,
                "submitted_s": j.submitted_s,
                "first_start_s": "" if start is None else round(start, 3),
                "end_s": "" if sj.end_s is None else round(sj.end_s, 3),
                "wait_s": round(wait, 3),
                "started": "true" if start is not None else "false",
                "preemptions": sj.preemptions,
                "lost_gpu_hours": round(sj.lost_gpu_s / 3600.0, 4),
                "state": sj.state,
            }
        )
    return rows
