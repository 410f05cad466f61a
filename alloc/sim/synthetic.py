"""A synthetic lab like the one SPEC.md describes, and a month of its submissions.

Lab: 1,024 GPUs (128 hosts of 8, blocks of 32), 4 programs, 15 teams (the budget leaves; each
program's teams split its share), ~150 researchers (10 per team on average; a researcher is a
submitter, not a budget node). Window usage before the start: each team's allocation x the
window's capacity x a lognormal factor (sigma 0.3), so fair share matters from the first round.

Trace (per team, in proportion to its share x a lognormal activity factor, sigma 0.3):
- debug: 1-8 GPUs, 5-40 minutes of work, minimum runtime 5-15 minutes, ~1.5% of the GPU-hours;
- training: 1-32 GPUs, 1-24 hours, minimum runtime 1-4 hours, resumable 90%, ~45%;
- large training: 64, 128 or 256 GPUs, 12-48 hours, minimum runtime 4-8 hours, ~45%;
- scavenger: 1-8 GPUs, 1-12 hours, minimum runtime 0 (unallocated), ~8.5%.
Arrivals are Poisson with a day/night cycle; the offered work equals the cluster's GPU-hours
(x `load`), on top of a backlog at the start of 1.5x the cluster's GPUs, which keeps demand
around 2-3x supply. Priorities 0-2 inside teams.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime

from alloc.domain import (
    HOUR_S,
    BudgetNode,
    BudgetPath,
    BudgetTree,
    Cluster,
    Host,
    HostName,
    Policy,
    Snapshot,
    TraceJob,
    WorkloadId,
)

PROGRAMS = (("nlp", 35.0, 4), ("vision", 30.0, 4), ("robotics", 20.0, 4), ("science", 15.0, 3))


@dataclass(frozen=True, slots=True)
class JobClass:
    kind: str
    share: float  # of the offered GPU-hours
    sizes: tuple[int, ...]
    runtime_h: tuple[float, float]  # log-uniform range
    min_runtime_h: tuple[float, float]  # uniform range; (0, 0) = unallocated
    resumable: float


CLASSES = (
    JobClass("debug", 0.015, (1, 1, 2, 4, 8), (5 / 60, 40 / 60), (5 / 60, 15 / 60), 1.0),
    JobClass("train", 0.45, (1, 2, 4, 8, 8, 16, 32), (1.0, 24.0), (1.0, 4.0), 0.9),
    JobClass("large", 0.45, (64, 64, 128, 256), (12.0, 48.0), (4.0, 8.0), 0.95),
    JobClass("scavenger", 0.085, (1, 2, 4, 8), (1.0, 12.0), (0.0, 0.0), 0.9),
)


@dataclass(frozen=True, slots=True)
class SyntheticLab:
    hosts: int = 128
    gpus_per_host: int = 8
    hosts_per_block: int = 32
    researchers: int = 150
    days: float = 30.0
    load: float = 1.0  # offered GPU-hours / cluster GPU-hours
    backlog: float = 1.5  # GPUs queued at the start / cluster GPUs
    seed: int = 1
    now: datetime = datetime(2026, 11, 1, 0, 0, tzinfo=UTC)


def synthetic_lab(spec: SyntheticLab | None = None) -> tuple[Snapshot, list[TraceJob]]:
    spec = spec or SyntheticLab()
    rng = random.Random(f"synthetic:{spec.seed}")
    cluster = Cluster(
        "synthetic-lab",
        tuple(
            Host(
                HostName(f"h{i + 1:03d}"),
                spec.gpus_per_host,
                "h100",
                f"h-b{i // spec.hosts_per_block + 1}",
                f"h-r{i // 4 + 1}",
            )
            for i in range(spec.hosts)
        ),
    )
    tree = _tree(rng)
    policy = Policy()
    capacity_h = cluster.ready_gpus * policy.lookback_s / HOUR_S
    teams = tree.leaves()
    usage = {
        t: round(tree.effective_allocation(t) * capacity_h * rng.lognormvariate(0, 0.3), 1)
        for t in teams
    }
    lab = Snapshot(spec.now, policy, cluster, tree, usage, ())
    activity = [tree.effective_allocation(t) * rng.lognormvariate(0, 0.3) for t in teams]
    jobs = _backlog(spec, rng, cluster.ready_gpus, teams, activity)
    jobs += _arrivals(spec, rng, cluster.ready_gpus, teams, activity, len(jobs))
    return lab, sorted(jobs, key=lambda j: (j.submitted_s, j.id))


def _tree(rng: random.Random) -> BudgetTree:
    programs = []
    for name, share, n_teams in PROGRAMS:
        weights = [rng.uniform(0.6, 1.4) for _ in range(n_teams)]
        total = sum(weights)
        teams = tuple(
            BudgetNode(f"team{i + 1}", math.floor(1000 * w / total) / 1000)
            for i, w in enumerate(weights)
        )
        programs.append(BudgetNode(name, share / 100, (f"pm-{name}",), teams))
    return BudgetTree(BudgetNode("lab", 1.0, ("director",), tuple(programs)))


def _job(rng: random.Random, n: int, team: BudgetPath, cls: JobClass, t: float) -> TraceJob:
    lo, hi = cls.runtime_h
    runtime_h = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    min_lo, min_hi = cls.min_runtime_h
    min_runtime_h = min(rng.uniform(min_lo, min_hi), runtime_h) if min_hi > 0 else 0.0
    return TraceJob(
        id=WorkloadId(f"{cls.kind}-{n:06d}"),
        budget=team,
        gpus=rng.choice(cls.sizes),
        submitted_s=round(t, 3),
        runtime_s=round(runtime_h * HOUR_S, 1),
        min_runtime_s=round(min_runtime_h * HOUR_S),
        resumable=rng.random() < cls.resumable,
        priority=rng.choice((0, 0, 0, 1, 2)),
        kind=cls.kind,
    )


def _mean_gpu_hours(cls: JobClass) -> float:
    lo, hi = cls.runtime_h
    mean_runtime = (hi - lo) / math.log(hi / lo)  # mean of a log-uniform variable
    return sum(cls.sizes) / len(cls.sizes) * mean_runtime


def _arrivals(
    spec: SyntheticLab,
    rng: random.Random,
    gpus: int,
    teams: tuple[BudgetPath, ...],
    activity: list[float],
    first: int,
) -> list[TraceJob]:
    jobs: list[TraceJob] = []
    offered = gpus * spec.load  # GPU-hours per hour
    for cls in CLASSES:
        rate = offered * cls.share / _mean_gpu_hours(cls) / HOUR_S  # jobs per second
        t = 0.0
        peak = 1.5 * rate  # thinning for a day/night cycle: 0.5x .. 1.5x the mean rate
        while True:
            t += rng.expovariate(peak)
            if t > spec.days * 86400:
                break
            cycle = 1.0 + 0.5 * math.sin(2 * math.pi * (t / 86400.0 - 0.25))
            if rng.random() * 1.5 > cycle:
                continue
            team = rng.choices(teams, weights=activity)[0]
            jobs.append(_job(rng, first + len(jobs) + 1, team, cls, t))
    return jobs


def _backlog(
    spec: SyntheticLab,
    rng: random.Random,
    gpus: int,
    teams: tuple[BudgetPath, ...],
    activity: list[float],
) -> list[TraceJob]:
    jobs: list[TraceJob] = []
    queued = 0
    while queued < spec.backlog * gpus:
        cls = rng.choices(CLASSES[1:], weights=[c.share for c in CLASSES[1:]])[0]
        team = rng.choices(teams, weights=activity)[0]
        job = _job(rng, len(jobs) + 1, team, cls, 0.0)
        jobs.append(job)
        queued += job.gpus
    return jobs
