"""Baseline policies to compare against: what labs ran before the contract.

- `fifo`: first come, first served; a workload that does not fit is skipped (backfill); nothing
  is ever preempted but work on hosts in maintenance.
- `legacy-priority`: static priority levels. Users' observed behaviour is configurable: a
  fraction of submissions comes at the highest level (`inflation`, default 0.8: most users
  mark their work top priority; at 1.0 nobody is of a strictly lower level, nothing can be
  preempted, and the policy is FIFO).
  Workloads with a minimum runtime ask to opt out of preemption; each team may hold at most its
  share of the ready GPUs x `cap` as non-preemptible work (the earliest started first), the rest
  runs preemptible. A queued workload that does not fit preempts preemptible running work of a
  strictly lower level, the lowest levels and latest starts first. No fair share, no budgets.

Both place work as the round allocator does (gangs whole, whole hosts, one block for topology
block, best fit) so that the comparison is about policy, not placement. Their plans use the
contract's occupancy (what is charged) and the nearest reason; they do not keep the contract's
invariants, and the simulator counts what they break.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta

from alloc.domain import (
    Action,
    Decision,
    HostName,
    HostState,
    Occupancy,
    Plan,
    Reason,
    Snapshot,
    SolverReport,
    Workload,
    WorkloadId,
)
from alloc.policy.contract import occupancy_of
from alloc.solve.load import Load
from alloc.solve.placement import place_displacing
from alloc.solve.problem import host_arrays, shapes_of


@dataclass(frozen=True, slots=True)
class LegacyConfig:
    levels: int = 3  # priorities 0 .. levels-1
    inflation: float = 0.8  # fraction of submissions made at the highest level
    cap: float = 1.0  # non-preemptible GPUs per team <= cap x its share of the ready GPUs
    seed: int = 1


def _level(config: LegacyConfig, workload: WorkloadId, priority: int) -> int:
    digest = hashlib.sha256(f"{config.seed}:{workload}".encode()).digest()
    if int.from_bytes(digest[:8], "big") / 2**64 < config.inflation:
        return config.levels - 1
    return max(0, min(config.levels - 1, priority))


def legacy_priority(snapshot: Snapshot, config: LegacyConfig | None = None) -> Plan:
    config = config or LegacyConfig()
    return _plan(snapshot, config)


def fifo(snapshot: Snapshot) -> Plan:
    return _plan(snapshot, None)


def _plan(snapshot: Snapshot, config: LegacyConfig | None) -> Plan:
    hosts = host_arrays(snapshot)
    shapes = shapes_of((w for w in snapshot.workloads if not w.running), hosts)
    load = Load(hosts)
    level = {w.id: (_level(config, w.id, w.priority) if config else 0) for w in snapshot.workloads}
    down = {h.name for h in snapshot.cluster.hosts if h.state is HostState.MAINTENANCE}
    preempted: set[WorkloadId] = set()
    firm = _non_preemptible(snapshot, config) if config else set()
    running = sorted((w for w in snapshot.workloads if w.running), key=_started)
    for w in running:
        if set(w.hosts) & down:
            preempted.add(w.id)
            continue
        placement = {hosts.index[h]: g for h, g in w.hosts.items()}
        if w.id in firm or config is None:
            load.hold(w.id, placement)
        else:
            # Displaceable by strictly higher levels; the lowest level and latest start first.
            started = w.started.timestamp() if w.started else 0.0
            load.hold(w.id, placement, level[w.id], level[w.id] * 1e11 - started)
    queue = sorted(
        (w for w in snapshot.workloads if not w.running),
        key=lambda w: (-level[w.id], w.submitted, w.id),
    )
    for w in queue:
        victims = tuple(range(level[w.id])) if config else ()
        found = place_displacing(shapes[w.id], load, victims)
        if found is None:
            continue
        for v in found.victims:
            load.release(v)
            preempted.add(v)
        load.hold(w.id, found.placement)
    return Plan(
        now=snapshot.now,
        report=SolverReport(
            "legacy-priority" if config else "fifo", "heuristic", 0.0, None, None, 0.0
        ),
        decisions=tuple(
            _decision(snapshot, w, load, preempted, hosts.names) for w in snapshot.workloads
        ),
        drained_hosts=tuple(
            h.name
            for i, h in enumerate(snapshot.cluster.hosts)
            if h.state.draining and load.used[i] == 0
        ),
    )


def _started(w: Workload) -> float:
    return w.started.timestamp() if w.started else 0.0


def _non_preemptible(snapshot: Snapshot, config: LegacyConfig) -> set[WorkloadId]:
    """Running work that opted out of preemption, within each team's cap, earliest first."""
    ready = snapshot.cluster.ready_gpus
    used: dict[str, int] = {}
    firm = set()
    for w in sorted((w for w in snapshot.workloads if w.running), key=_started):
        if w.min_runtime_s <= 0 or not w.budget:
            continue
        cap = config.cap * snapshot.budgets.effective_allocation(w.budget) * ready
        if used.get(w.budget, 0) + w.gpus <= cap:
            used[w.budget] = used.get(w.budget, 0) + w.gpus
            firm.add(w.id)
    return firm


def _decision(
    snapshot: Snapshot,
    w: Workload,
    load: Load,
    preempted: set[WorkloadId],
    names: tuple[HostName, ...],
) -> Decision:
    occupancy = occupancy_of(snapshot, w)
    allocated = occupancy is Occupancy.ALLOCATED
    if load.holds(w.id):
        hosts = {names[h]: g for h, g in sorted(load.held[w.id].items())}
        start = w.started if w.running else snapshot.now
        until = start + timedelta(seconds=w.min_runtime_s) if allocated and start else None
        action = Action.KEEP if w.running else Action.START
        reason = Reason.UNDER_ALLOCATION if allocated else Reason.UNALLOCATED_FILL
        return Decision(w.id, action, occupancy, reason, hosts, until)
    if w.running:
        reason = Reason.REBALANCED if allocated else Reason.UNALLOCATED_DISPLACED
        if w.id in preempted and any(
            snapshot.cluster.host(h).state is HostState.MAINTENANCE for h in w.hosts
        ):
            reason = Reason.HOST_MAINTENANCE
        return Decision(w.id, Action.PREEMPT, occupancy, reason)
    return Decision(w.id, Action.WAIT, occupancy, Reason.NO_ROOM)
