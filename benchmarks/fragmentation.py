"""The fragmentation family: large gangs queued behind many small unprotected runs.

The situation the SPEC names as the reason for a MILP ("the greedy 'sort and place' answer
fragments the cluster so the largest jobs starve"), built directly from `alloc.domain` values:

- a cluster of 8-GPU hosts in blocks of 32 hosts, every host full with 2-4 small runs (1-4 GPUs)
  of *over-served* teams, all started long ago (past their minimum runtime, so none protected);
  about a quarter of them are unallocated (minimum runtime 0);
- a queue of *under-served* teams: many small jobs (1-4 GPUs, about 35% of the cluster) and large
  gangs (64, 128 or 256 GPUs, topology block, about 100% of the cluster); inside each team the
  small jobs were submitted earlier, so they come first in the fair-share order.

Under-served demand (about 1.35x the cluster) covers the whole ready capacity, so every running
allocated job is beyond its entitlement: an entitled queued job may displace any running job. The
first ~65% of the cluster's worth of gangs (in fair-share order) are entitled, the rest are over
their entitlement. Nothing is tuned per seed: the seed only draws sizes, teams and times.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

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
    Topology,
    Workload,
    WorkloadId,
)

LARGE_GANG_GPUS = 64  # "large" in SPEC's metrics: work of 64 GPUs or more
SMALL_SIZES = {1: 0.3, 2: 0.3, 3: 0.1, 4: 0.3}
GANG_SIZES = {64: 0.5, 128: 0.3, 256: 0.2}
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

# Programs: two under-served with large shares, two over-served with small shares.
UNDER = {"nlp": 0.40, "vision": 0.40}
OVER = {"robotics": 0.10, "science": 0.10}
TEAMS_PER_PROGRAM = 3
UNDER_USAGE = 0.1  # window usage / (allocation x window capacity) of under-served teams
OVER_USAGE = 3.5  # ... and of over-served teams (the cluster is 78% charged over the window)


@dataclass(frozen=True, slots=True)
class FragmentationSpec:
    hosts: int = 128
    gpus_per_host: int = 8
    hosts_per_block: int = 32
    unallocated_runs: float = 0.25  # of the running small jobs, the fraction with min_runtime 0
    small_queued: float = 0.35  # queued small GPUs / ready GPUs
    gangs_queued: float = 1.0  # queued large-gang GPUs / ready GPUs
    seed: int = 1


def fragmentation_snapshot(spec: FragmentationSpec, policy: Policy | None = None) -> Snapshot:
    rng = random.Random(spec.seed)
    policy = policy or Policy()
    cluster = _cluster(spec)
    tree, under_teams, over_teams = _tree(rng)
    capacity_h = cluster.ready_gpus * policy.lookback_s / HOUR_S
    usage: dict[BudgetPath, float] = {}
    for team in under_teams:
        usage[team] = round(UNDER_USAGE * tree.effective_allocation(team) * capacity_h)
    for team in over_teams:
        usage[team] = round(OVER_USAGE * tree.effective_allocation(team) * capacity_h)

    workloads: list[Workload] = []

    def next_id(kind: str) -> WorkloadId:
        return WorkloadId(f"{kind}{len(workloads) + 1:05d}")

    # Running: every host full with 2-4 small runs of over-served teams, past protection.
    for host in cluster.hosts:
        for gpus in _partition(rng, host.gpus):
            unallocated = rng.random() < spec.unallocated_runs
            min_runtime = 0.0 if unallocated else rng.choice((1, 2, 4)) * HOUR_S
            started = NOW - timedelta(seconds=min_runtime + rng.uniform(1, 24) * HOUR_S)
            workloads.append(
                Workload(
                    id=next_id("run"),
                    budget=rng.choice(over_teams),
                    gpus=gpus,
                    min_runtime_s=min_runtime,
                    submitted=started - timedelta(seconds=rng.uniform(0, 2) * HOUR_S),
                    resumable=rng.random() < 0.8,
                    started=started,
                    hosts={host.name: gpus},
                )
            )

    # Queued: small jobs of under-served teams (submitted 12-36 h ago) ...
    weights = [tree.effective_allocation(t) for t in under_teams]
    target = spec.small_queued * cluster.ready_gpus
    total = 0
    while total < target:
        gpus = rng.choices(list(SMALL_SIZES), weights=list(SMALL_SIZES.values()))[0]
        workloads.append(
            Workload(
                id=next_id("small"),
                budget=rng.choices(under_teams, weights=weights)[0],
                gpus=gpus,
                min_runtime_s=rng.choice((1, 2, 4, 8)) * HOUR_S,
                submitted=NOW - timedelta(seconds=rng.uniform(12, 36) * HOUR_S),
                resumable=rng.random() < 0.8,
            )
        )
        total += gpus
    # ... and large gangs of the same teams (submitted 1-6 h ago, after their small jobs).
    target = spec.gangs_queued * cluster.ready_gpus
    total = 0
    while total < target:
        gpus = rng.choices(list(GANG_SIZES), weights=list(GANG_SIZES.values()))[0]
        workloads.append(
            Workload(
                id=next_id("gang"),
                budget=rng.choices(under_teams, weights=weights)[0],
                gpus=gpus,
                min_runtime_s=rng.choice((4, 6, 8)) * HOUR_S,
                submitted=NOW - timedelta(seconds=rng.uniform(1, 6) * HOUR_S),
                resumable=True,
                topology=Topology.BLOCK,
            )
        )
        total += gpus

    return Snapshot(
        now=NOW,
        policy=policy,
        cluster=cluster,
        budgets=tree,
        usage_gpu_hours=usage,
        workloads=tuple(workloads),
    )


def _cluster(spec: FragmentationSpec) -> Cluster:
    width = max(3, len(str(spec.hosts)))
    return Cluster(
        f"frag-{spec.hosts * spec.gpus_per_host}",
        tuple(
            Host(
                name=HostName(f"h{i + 1:0{width}d}"),
                gpus=spec.gpus_per_host,
                gpu_type="h100",
                block=f"h-b{i // spec.hosts_per_block + 1}",
                rack=f"h-r{i // 4 + 1}",
            )
            for i in range(spec.hosts)
        ),
    )


def _tree(rng: random.Random) -> tuple[BudgetTree, list[BudgetPath], list[BudgetPath]]:
    programs = []
    under: list[BudgetPath] = []
    over: list[BudgetPath] = []
    for name, share in {**UNDER, **OVER}.items():
        raw = [rng.uniform(0.5, 1.5) for _ in range(TEAMS_PER_PROGRAM)]
        teams = tuple(BudgetNode(f"team{i + 1}", round(r / sum(raw), 3)) for i, r in enumerate(raw))
        programs.append(BudgetNode(name, share, (f"pm-{name}",), teams))
        paths = [BudgetPath(f"{name}/{t.name}") for t in teams]
        (under if name in UNDER else over).extend(paths)
    return BudgetTree(BudgetNode("institute", 1.0, ("director",), tuple(programs))), under, over


def _partition(rng: random.Random, gpus: int) -> list[int]:
    """A random split of a host's GPUs into 2-4 runs of 1-4 GPUs each."""
    while True:
        parts = []
        left = gpus
        while left > 0:
            parts.append(min(left, rng.choices(list(SMALL_SIZES), list(SMALL_SIZES.values()))[0]))
            left -= parts[-1]
        if 2 <= len(parts) <= 4:
            return parts
