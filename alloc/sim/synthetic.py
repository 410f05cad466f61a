"""A synthetic lab like the one SPEC.md describes, and a month of its submissions.

Lab: 1,024 GPUs (128 hosts of 8, blocks of 32), 4 programs, 15 teams (the budget leaves; in
each program one team holds about 40% of the program's share, in nlp the pretraining team 75%,
and the others split the rest),
~150 researchers (a researcher submits; budgets are per team). Window usage before the start:
each team's allocation x the window's capacity x a lognormal factor (sigma 0.2).

Trace, per team, sized to the team: its *share* is its effective allocation x the cluster's
GPUs, and no job asks for more than the team's share (rounded down to a power of two): a
256-GPU run belongs to a team holding at least 256 GPUs (nlp's pretraining team). Each team
offers work equal to its share of the cluster's GPU-hours (x `load`) in four classes (of its
GPU-hours):
- debug: 1-8 GPUs, 5-40 minutes of work, minimum runtime 5-15 minutes, ~2%;
- training: 1-32 GPUs, 1-24 hours, minimum runtime 1-4 hours, resumable 90%, ~50%;
- large training: 64 GPUs up to the team's cap, 12-48 hours, minimum runtime 4-8 hours,
  ~40% (teams too small for 64-GPU runs offer it as training);
- scavenger: 1-8 GPUs, 1-12 hours, minimum runtime 0 (unallocated), ~8%.
Arrivals are Poisson with a day/night cycle; at the start every team also has a backlog of 1.5x
its share in GPUs, so that demand starts near 2x supply (each team's backlog stops at the job
that takes it past 1.5x: 1.6-1.9x in all; a team whose share is smaller than one job gets it
with the matching probability; a lab's own allocated workloads count toward the backlog,
`synthetic_trace`). The offered load is 0.95 of the
cluster's GPU-hours. Work that preemptions destroy comes back as demand, so how demand moves
depends on the policy (measured at seed 1 over 30 days, `allocated demand / ready GPUs`):
legacy-priority and fifo destroy little and hold it near 2x (first day 3.0x and 3.2x, last
day 2.0x and 2.1x); greedy's rebalancing destroyed 148,000 GPU-hours (a fifth of the month's
capacity) and demand grew from 2.0x to 6.6x at 74e5d81; since rebalancing weighs what a
victim loses (models/round.md section 7) greedy destroys 28,000 and demand holds near 1.8x.
At load 1.0 (74e5d81's greedy) it grew from 2.2x to 3.4x in the first week alone; at 0.9 it
fell to ~1.6x.
Inside a team debug work has priority 2 (researchers mark it
urgent) and the rest 0 or 1.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
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
    share: float  # of a team's offered GPU-hours
    sizes: tuple[int, ...]
    runtime_h: tuple[float, float]  # log-uniform range
    min_runtime_h: tuple[float, float]  # uniform range; (0, 0) = unallocated
    resumable: float


CLASSES = (
    JobClass("debug", 0.02, (1, 1, 2, 4, 8), (5 / 60, 40 / 60), (5 / 60, 15 / 60), 1.0),
    JobClass("train", 0.50, (1, 2, 4, 8, 8, 16, 32), (1.0, 24.0), (1.0, 4.0), 0.9),
    JobClass("large", 0.40, (64, 128, 256), (12.0, 48.0), (4.0, 8.0), 0.95),
    JobClass("scavenger", 0.08, (1, 2, 4, 8), (1.0, 12.0), (0.0, 0.0), 0.9),
)


@dataclass(frozen=True, slots=True)
class SyntheticLab:
    hosts: int = 128
    gpus_per_host: int = 8
    hosts_per_block: int = 32
    researchers: int = 150
    days: float = 30.0
    load: float = 0.95  # offered GPU-hours / cluster GPU-hours (docstring)
    backlog: float = 1.5  # GPUs queued at the start / cluster GPUs
    seed: int = 1
    now: datetime = datetime(2026, 11, 1, 0, 0, tzinfo=UTC)


def synthetic_lab(spec: SyntheticLab | None = None) -> tuple[Snapshot, list[TraceJob]]:
    """The built-in lab and its trace."""
    spec = spec or SyntheticLab()
    rng = random.Random(f"synthetic-lab:{spec.seed}")
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
    usage = {
        t: round(tree.effective_allocation(t) * capacity_h * rng.lognormvariate(0, 0.2), 1)
        for t in tree.leaves()
    }
    lab = Snapshot(spec.now, policy, cluster, tree, usage, ())
    return lab, synthetic_trace(lab, spec)


def synthetic_trace(lab: Snapshot, spec: SyntheticLab | None = None) -> list[TraceJob]:
    """A trace for any lab: every funded leaf submits work sized to its share of the lab's
    ready GPUs, as described above. The backlog tops up the allocated work the lab already
    holds (running or queued) to `backlog` x its GPUs: a lab whose workloads ask for that
    much (`alloc generate` makes 2.5x) gets none, and starts no busier than the others."""
    spec = spec or SyntheticLab()
    rng = random.Random(f"synthetic-trace:{spec.seed}")
    gpus = lab.cluster.ready_gpus
    held = sum(w.gpus for w in lab.workloads if w.budget and w.min_runtime_s > 0)
    wanted = spec.backlog * gpus
    top_up = max(0.0, 1.0 - held / wanted) if wanted > 0 else 0.0
    jobs: list[TraceJob] = []
    for team in lab.budgets.leaves():
        share = lab.budgets.effective_allocation(team) * gpus
        if share <= 0:
            continue
        cap = 2 ** int(math.log2(max(1.0, share)))
        classes = _classes_for(cap)
        jobs += _backlog(rng, team, spec.backlog * share * top_up, classes, len(jobs))
        jobs += _arrivals(spec, rng, team, share, classes, len(jobs))
    return sorted(jobs, key=lambda j: (j.submitted_s, j.id))


def _classes_for(cap: int) -> tuple[JobClass, ...]:
    """The classes a team of that size runs, sizes capped; large work moves to training when
    the team cannot run 64 GPUs."""
    out = []
    moved = 0.0
    for c in CLASSES:
        sizes = tuple(g for g in c.sizes if g <= cap)
        if not sizes:
            moved += c.share
            continue
        out.append(c if sizes == c.sizes else replace(c, sizes=sizes))
    return tuple(replace(c, share=c.share + moved) if c.kind == "train" else c for c in out)


def _tree(rng: random.Random) -> BudgetTree:
    programs = []
    for name, share, n_teams in PROGRAMS:
        lead = 0.75 if name == "nlp" else 0.4  # nlp's pretraining team runs the 256-GPU jobs
        weights = [lead] + [
            (1 - lead) / (n_teams - 1) * rng.uniform(0.8, 1.2) for _ in range(n_teams - 1)
        ]
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
        # Debug work is marked urgent inside its team, as labs do; the rest spreads over 0-1.
        priority=2 if cls.kind == "debug" else rng.choice((0, 0, 0, 1)),
        kind=cls.kind,
    )


def _mean_gpu_hours(cls: JobClass) -> float:
    lo, hi = cls.runtime_h
    mean_runtime = (hi - lo) / math.log(hi / lo)  # mean of a log-uniform variable
    return sum(cls.sizes) / len(cls.sizes) * mean_runtime


def _arrivals(
    spec: SyntheticLab,
    rng: random.Random,
    team: BudgetPath,
    share: float,
    classes: tuple[JobClass, ...],
    first: int,
) -> list[TraceJob]:
    jobs: list[TraceJob] = []
    for cls in classes:
        rate = share * spec.load * cls.share / _mean_gpu_hours(cls) / HOUR_S  # jobs a second
        t = 0.0
        peak = 1.5 * rate  # thinning for a day/night cycle: 0.5x .. 1.5x the mean rate
        while True:
            t += rng.expovariate(peak)
            if t > spec.days * 86400:
                break
            cycle = 1.0 + 0.5 * math.sin(2 * math.pi * (t / 86400.0 - 0.25))
            if rng.random() * 1.5 > cycle:
                continue
            jobs.append(_job(rng, first + len(jobs) + 1, team, cls, t))
    return jobs


def _backlog(
    rng: random.Random,
    team: BudgetPath,
    gpus: float,
    classes: tuple[JobClass, ...],
    first: int,
) -> list[TraceJob]:
    """Jobs queued at the start, until they ask for `gpus`. A team whose whole backlog is
    smaller than the job drawn (a share of a GPU, in a tree of hundreds of teams) gets that
    job with the probability that makes its backlog `gpus` on average: one job each made
    a 16-host lab's 600 teams start with 5x its GPUs queued."""
    jobs: list[TraceJob] = []
    queued = 0
    allocated = [c for c in classes if c.kind in ("train", "large")]
    while queued < gpus:
        cls = rng.choices(allocated, weights=[c.share for c in allocated])[0]
        job = _job(rng, first + len(jobs) + 1, team, cls, 0.0)
        if not jobs and job.gpus > gpus and rng.random() * job.gpus >= gpus:
            break
        jobs.append(job)
        queued += job.gpus
    return jobs
