"""Frozen values that every layer shares. Imports nothing of ours."""

from alloc.domain.budget import BudgetNode, BudgetTree
from alloc.domain.cluster import Cluster, Host, HostState
from alloc.domain.ids import ROOT_PATH, BudgetPath, HostName, WorkloadId, join_path, path_prefixes
from alloc.domain.plan import (
    Action,
    Decision,
    Occupancy,
    Plan,
    Reason,
    Reservation,
    SolverReport,
)
from alloc.domain.snapshot import DAY_S, HOUR_S, Policy, Snapshot
from alloc.domain.trace import TraceJob
from alloc.domain.workload import Topology, Workload

__all__ = [
    "DAY_S",
    "HOUR_S",
    "ROOT_PATH",
    "Action",
    "BudgetNode",
    "BudgetPath",
    "BudgetTree",
    "Cluster",
    "Decision",
    "Host",
    "HostName",
    "HostState",
    "Occupancy",
    "Plan",
    "Policy",
    "Reason",
    "Reservation",
    "Snapshot",
    "SolverReport",
    "Topology",
    "TraceJob",
    "Workload",
    "WorkloadId",
    "join_path",
    "path_prefixes",
]
