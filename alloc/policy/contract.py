"""The time-slicing contract on one snapshot: who is allocated, who is protected, who must go.

Pure functions of the snapshot (STYLE.md habit 1). See models/round.md, section 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import lru_cache
from types import MappingProxyType
from typing import NamedTuple

from alloc.domain import (
    HOUR_S,
    Action,
    BudgetTree,
    Host,
    HostName,
    HostState,
    Occupancy,
    Reason,
    Snapshot,
    Workload,
    WorkloadId,
    path_prefixes,
)


class Standing(NamedTuple):
    """What the contract says about one workload this round, before any solver runs.

    A named tuple (immutable, built in a fraction of a frozen dataclass's time: a round builds
    one per workload), made only by `_made`, which derives the last three fields (so no
    `_replace`: it would leave them stale)."""

    workload: Workload
    funded: bool
    occupancy: Occupancy
    protected_until: datetime | None  # end of the minimum runtime of running allocated work
    forced: Action | None  # KEEP or PREEMPT when the contract decides alone; None = solver's choice
    forced_reason: Reason | None
    protected: bool  # forced KEEP: kept whatever the solver does
    optional_running: bool  # running, and the solver may keep or preempt it
    lost_hours: float  # optional running work: `lost_hours_per_gpu` (0 for the others)


def _made(
    workload: Workload,
    funded: bool,
    occupancy: Occupancy,
    protected_until: datetime | None,
    forced: Action | None,
    forced_reason: Reason | None,
    lost_hours: float = 0.0,
) -> Standing:
    return _new_tuple(  # Standing(...) without the named tuple's own __new__ (a frame less)
        Standing,
        (
            workload,
            funded,
            occupancy,
            protected_until,
            forced,
            forced_reason,
            forced is Action.KEEP,
            workload.running and forced is None,
            lost_hours,
        ),
    )


_new_tuple = tuple.__new__


def is_funded(snapshot: Snapshot, workload: Workload) -> bool:
    """Funded = it names a budget node whose effective allocation is above zero."""
    return funded_in(snapshot.budgets, workload)


def funded_in(budgets: BudgetTree, workload: Workload) -> bool:
    if not workload.budget:
        return False
    return budgets.effective_allocation(workload.budget) > 0


def unfunded_because(
    budgets: BudgetTree, workload: Workload, no_budget: str | None = None
) -> str | None:
    """Why the workload is unfunded (SPEC invariant 5), None when it is funded: it names no
    budget (or, `no_budget`, what it named maps to none: `its account 'physics' is not mapped
    to a budget node (slurm.accounts)`), or a node whose effective allocation is 0, said by
    the first node on its path whose share is 0% (`its budget p/z has an effective allocation
    of 0: p has a share of 0% of its parent`)."""
    if not workload.budget:
        return no_budget or "it names no budget"
    if budgets.effective_allocation(workload.budget) > 0:
        return None
    zero = next((p for p in path_prefixes(workload.budget) if budgets.node(p).share <= 0), None)
    if zero is None:  # every share above 0, their product below the smallest float
        why = "the product of the shares along its path is below any number"
    elif zero == workload.budget:
        why = "its share of its parent is 0%"
    else:
        why = f"{zero} has a share of 0% of its parent"
    return f"its budget {workload.budget} has an effective allocation of 0: {why}"


def allocated_in(budgets: BudgetTree, workload: Workload) -> bool:
    """Allocated (charged and protected) = funded with a minimum runtime above zero."""
    return funded_in(budgets, workload) and workload.min_runtime_s > 0


def occupancy_of(snapshot: Snapshot, workload: Workload) -> Occupancy:
    if allocated_in(snapshot.budgets, workload):
        return Occupancy.ALLOCATED
    return Occupancy.UNALLOCATED


@lru_cache(maxsize=4096)
def runtime_delta(seconds: float) -> timedelta:
    """A minimum runtime as a timedelta, made once per value (a round asks for hundreds, a
    trace has few distinct ones)."""
    return timedelta(seconds=seconds)


def standing(snapshot: Snapshot, workload: Workload) -> Standing:
    return _standing(snapshot, workload, snapshot.cluster.by_name)


def _standing(
    snapshot: Snapshot, workload: Workload, by_name: Mapping[HostName, Host] | None
) -> Standing:
    """`by_name`: the hosts, or None when every host is ready (nothing to look up)."""
    funded = funded_in(snapshot.budgets, workload)
    allocated = funded and workload.min_runtime_s > 0  # allocated_in, without asking twice
    occupancy = Occupancy.ALLOCATED if allocated else Occupancy.UNALLOCATED
    if not workload.running:
        return _made(workload, funded, occupancy, None, None, None)
    assert workload.started is not None
    protected_until = None
    if allocated:
        protected_until = workload.started + runtime_delta(workload.min_runtime_s)
        if by_name is None and snapshot.now < protected_until:
            return _made(workload, True, occupancy, protected_until, Action.KEEP, Reason.PROTECTED)
    states = {by_name[h].state for h in workload.hosts} if by_name is not None else None
    if states and HostState.MAINTENANCE in states:
        # The host went out of service under it: an availability event, not a choice of the plan.
        return _made(
            workload, funded, occupancy, protected_until, Action.PREEMPT, Reason.HOST_MAINTENANCE
        )
    if protected_until is not None and snapshot.now < protected_until:
        return _made(workload, funded, occupancy, protected_until, Action.KEEP, Reason.PROTECTED)
    if states and any(s.draining for s in states):
        return _made(
            workload, funded, occupancy, protected_until, Action.PREEMPT, Reason.HOST_DRAINING
        )
    if (
        allocated
        and not workload.resumable
        and workload.running_seconds(snapshot.now) > snapshot.policy.checkpoint_interval_s
    ):
        # Rebalancing it would destroy all it ran (hours): it runs to its end (round.md 1.1).
        return _made(
            workload, funded, occupancy, protected_until, Action.KEEP, Reason.COSTLY_TO_STOP
        )
    lost = lost_hours_per_gpu(snapshot, workload)
    return _made(workload, funded, occupancy, protected_until, None, None, lost)


StandingCache = dict[WorkloadId, tuple[Workload, Standing]]


def standings(
    snapshot: Snapshot, cache: StandingCache | None = None
) -> Mapping[WorkloadId, Standing]:
    """Every workload's standing. `cache` (kept by the caller from round to round, for one
    budget tree) reuses a standing where it cannot have changed: the same workload value,
    queued (its standing does not depend on the time), or running protected on a cluster
    whose hosts are all ready, until its protection ends."""
    cluster = snapshot.cluster
    by_name = None if cluster.all_ready else cluster.by_name
    if cache is None:
        return MappingProxyType({w.id: _standing(snapshot, w, by_name) for w in snapshot.workloads})
    now = snapshot.now
    out: dict[WorkloadId, Standing] = {}
    fresh: StandingCache = {}
    for w in snapshot.workloads:
        entry = cache.get(w.id)
        if entry is not None and entry[0] is w:
            s = entry[1]
            if not w.running or (
                by_name is None
                and s.protected
                and s.protected_until is not None
                and now < s.protected_until
            ):
                out[w.id] = s
                fresh[w.id] = entry
                continue
        s = _standing(snapshot, w, by_name)
        out[w.id] = s
        fresh[w.id] = (w, s)
    cache.clear()
    cache.update(fresh)
    return MappingProxyType(out)


def lost_hours_per_gpu(snapshot: Snapshot, w: Workload) -> float:
    """Work a preemption destroys: everything for non-resumable work, else the work since its
    last checkpoint (resumable work checkpoints every `checkpoint_interval` of its run), so
    rebalancing takes work that has just checkpointed first."""
    ran_h = w.running_seconds(snapshot.now) / HOUR_S
    interval_h = snapshot.policy.checkpoint_interval_s / HOUR_S
    if not w.resumable or interval_h <= 0:
        return ran_h
    return ran_h % interval_h
