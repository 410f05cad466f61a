"""Everything one round reads: the policy, the cluster, the budgets, the usage and the workloads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

from alloc.domain.budget import BudgetTree
from alloc.domain.cluster import Cluster
from alloc.domain.ids import BudgetPath, WorkloadId
from alloc.domain.workload import Workload

HOUR_S = 3600.0
DAY_S = 86400.0


@dataclass(frozen=True, slots=True)
class Policy:
    lookback_s: float = 7 * DAY_S
    max_min_runtime_s: float = 8 * HOUR_S
    solver: str = "milp"
    time_limit_s: float = 10.0
    threads: int = 2
    seed: int = 0
    mip_gap: float = 0.001  # relative gap at which the MILP stops early
    backend: str = "scip"  # the MILP's OR-Tools backend: scip | sat
    # How long this round's grants are assumed to last when the fair-share order projects each
    # node's ratio forward (models/round.md, section 2). None = the lookback window.
    fairshare_horizon_s: float | None = None
    # Resumable work loses on average half of this when preempted (preemption cost, section 4).
    checkpoint_interval_s: float = HOUR_S

    @property
    def horizon_s(self) -> float:
        return self.fairshare_horizon_s if self.fairshare_horizon_s is not None else self.lookback_s


@dataclass(frozen=True, slots=True)
class Snapshot:
    now: datetime
    policy: Policy
    cluster: Cluster
    budgets: BudgetTree
    usage_gpu_hours: Mapping[BudgetPath, float]  # each node's own charged usage in the window
    workloads: tuple[Workload, ...]
    usage_capacity_gpu_hours: float | None = None
    by_id: Mapping[WorkloadId, Workload] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "usage_gpu_hours", MappingProxyType(dict(self.usage_gpu_hours)))
        object.__setattr__(self, "by_id", MappingProxyType({w.id: w for w in self.workloads}))

    def workload(self, workload_id: WorkloadId) -> Workload:
        return self.by_id[workload_id]

    @property
    def window_capacity_gpu_hours(self) -> float:
        """Ready GPU-hours of the lookback window: the denominator of every fair-share ratio
        (today's ready GPUs x the lookback; installed GPUs when none is ready, so that ratios
        stay finite while the whole cluster is down)."""
        if self.usage_capacity_gpu_hours is not None:
            return self.usage_capacity_gpu_hours
        gpus = self.cluster.ready_gpus or self.cluster.installed_gpus
        return gpus * self.policy.lookback_s / HOUR_S
