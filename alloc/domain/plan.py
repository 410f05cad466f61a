"""A round's answer: one decision per workload, the drains completed, the solver's report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType

from alloc.domain.ids import HostName, WorkloadId


class Action(StrEnum):
    START = "start"
    KEEP = "keep"
    PREEMPT = "preempt"
    WAIT = "wait"

    @property
    def holds_gpus(self) -> bool:
        return self is Action.START or self is Action.KEEP  # identity: read millions of times


class Occupancy(StrEnum):
    ALLOCATED = "allocated"  # charged to its budget, protected for its minimum runtime
    UNALLOCATED = "unallocated"  # free of charge, never protected, displaced at once


class Reason(StrEnum):
    # start / keep
    UNDER_ALLOCATION = "under_allocation"  # within its budget node's entitlement this round
    OVER_ALLOCATION = "over_allocation"  # beyond its entitlement, on capacity nobody entitled needs
    PROTECTED = "protected"  # inside its minimum runtime
    COSTLY_TO_STOP = "costly_to_stop"  # not resumable, past a checkpoint interval: not rebalanced
    UNALLOCATED_FILL = "unallocated_fill"  # minimum runtime 0: free, on otherwise idle GPUs
    UNFUNDED = "unfunded"  # no budget behind it: runs (or waits) as unallocated work
    # preempt
    UNALLOCATED_DISPLACED = "unallocated_displaced"  # allocated work needed its GPUs
    REBALANCED = "rebalanced"  # past its minimum runtime and over its entitlement
    MAKE_ROOM = "make_room"  # past its minimum runtime; room for entitled work ranked ahead
    HOST_DRAINING = "host_draining"  # its host is unhealthy or retired
    HOST_MAINTENANCE = "host_maintenance"  # its host went to maintenance under it
    # wait
    NO_ROOM = "no_room"  # no place fits it this round
    TOPOLOGY = "topology"  # enough GPUs, but not inside one block
    GPU_TYPE = "gpu_type"  # no ready host of the requested type has room
    TOO_LARGE = "too_large"  # larger than every ready place it could ever have
    RESERVED = "reserved"  # the room that fits it is held back for a blocked gang (round.md 8)


_NO_HOSTS: Mapping[HostName, int] = MappingProxyType({})  # read-only: one for every decision


@dataclass(frozen=True, slots=True)
class Decision:
    workload: WorkloadId
    action: Action
    occupancy: Occupancy
    reason: Reason
    hosts: Mapping[HostName, int] = field(default_factory=lambda: _NO_HOSTS)
    protected_until: datetime | None = None
    # A start on hosts reserved for these gangs (backfill, models/round.md 8.5): it yields to
    # them once its minimum runtime, which ends by their `ready_at`, is over.
    backfill_for: tuple[WorkloadId, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.hosts, MappingProxyType):
            object.__setattr__(self, "hosts", MappingProxyType(dict(self.hosts)))

    @property
    def gpus_held(self) -> int:
        return sum(self.hosts.values()) if self.action.holds_gpus else 0


# The note of a MILP round that needed no model: the greedy plan is already within the gap of
# the fractional-knapsack bound (models/round.md 5.4, step 0), so no MILP was built or solved
# (solve_seconds 0): `alloc solve` says so instead of "optimal in 0.000 s".
WITHOUT_MODEL = "the greedy plan is within the gap of the knapsack bound"


@dataclass(frozen=True, slots=True)
class SolverReport:
    solver: str  # milp | greedy
    # optimal | feasible (the MILP's plan) | fallback (the MILP failed or found nothing in time:
    # the greedy answered) | greedy (the greedy was asked for) | event (an event pass)
    status: str
    objective: float
    bound: float | None
    gap: float | None
    solve_seconds: float
    note: str = ""  # e.g. why the MILP fell back (always given with `fallback`)


@dataclass(frozen=True, slots=True)
class Reservation:
    """Hosts held back this round for a gang that protected work keeps from starting: no
    allocated work starts on them but backfill, whose minimum runtime ends by `ready_at`, when
    their last protected work ends (models/round.md 8)."""

    workload: WorkloadId
    hosts: tuple[HostName, ...]
    ready_at: datetime


@dataclass(frozen=True, slots=True)
class Plan:
    now: datetime
    report: SolverReport
    decisions: tuple[Decision, ...]
    drained_hosts: tuple[HostName, ...] = ()
    metrics: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    reservations: tuple[Reservation, ...] = ()
    # Which kind of round decided it (models/round.md 9): "full", or "event" for an event pass
    # (whose own decisions name only what it changes; a plan shown or written is always whole).
    kind: str = "full"
    by_workload: Mapping[WorkloadId, Decision] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics", MappingProxyType(dict(self.metrics)))
        object.__setattr__(
            self, "by_workload", MappingProxyType({d.workload: d for d in self.decisions})
        )

    def decision(self, workload: WorkloadId) -> Decision:
        return self.by_workload[workload]
