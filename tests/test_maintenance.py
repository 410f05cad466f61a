"""Work on a host in maintenance is preempted with reason host_maintenance even when protected
(SPEC invariant 3; issue 18, point 3b): an availability event, not a choice of the plan. The
checker holds plans to it both ways, and a simulation's metrics count such preemptions apart
from the plan's own. (`alloc status` does too: tests/test_controller_cli.py.)"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from conftest import ago, host, instance, snapshot_of, solve_checked, workload

from alloc.domain import (
    Action,
    BudgetPath,
    HostName,
    HostState,
    Occupancy,
    Plan,
    Reason,
    TraceJob,
    WorkloadId,
)
from alloc.ledger import MemoryStore
from alloc.metrics import metrics
from alloc.sim.engine import SimConfig, Simulation
from alloc.sim.hosts import HostEvent
from alloc.sim.policies import planner
from alloc.solve.validate import validate

# h1 is in maintenance. On it: a's run, protected for 1 h 30 min more; b's run past its
# minimum runtime; unallocated scratch work. The gang spans h1 and h2. h3 and h4 are ready.
ON_H1 = [
    workload("protected", 4, budget="a", hosts={"h1": 4}, started=ago(minutes=30)),
    workload("past", 2, budget="b", hosts={"h1": 2}, started=ago(hours=5)),
    workload("scratch", 2, budget="a", min_runtime="0", hosts={"h1": 2}),
    workload("gang", 16, budget="b", hosts={"h2": 8, "h5": 8}, started=ago(minutes=10)),
]


def lab(**top: Any) -> Any:
    hosts = [host("h1", state="maintenance"), host("h2", state="maintenance")]
    hosts += [host(f"h{i}") for i in (3, 4, 5)]
    return snapshot_of(instance(hosts=hosts, workloads=ON_H1, **top))


def test_all_work_on_a_host_in_maintenance_is_preempted_for_it_even_when_protected(solver):
    plan = solve_checked(lab(), solver)
    for wid in ("protected", "past", "scratch", "gang"):
        d = plan.decision(WorkloadId(wid))
        assert (d.action, d.reason) == (Action.PREEMPT, Reason.HOST_MAINTENANCE), wid
    assert plan.decision(WorkloadId("scratch")).occupancy is Occupancy.UNALLOCATED
    assert plan.drained_hosts == ()  # maintenance is not a drain


def with_decision(plan: Plan, wid: str, **changes: Any) -> Plan:
    return replace(
        plan,
        decisions=tuple(replace(d, **changes) if d.workload == wid else d for d in plan.decisions),
    )


@pytest.mark.parametrize(
    ("wid", "reason"),
    [
        ("protected", Reason.REBALANCED),
        ("past", Reason.MAKE_ROOM),
        ("scratch", Reason.UNALLOCATED_DISPLACED),
        ("gang", Reason.HOST_DRAINING),
    ],
)
def test_a_preemption_of_work_on_a_host_in_maintenance_under_another_reason_is_rejected(
    wid, reason
):
    snap = lab()
    wrong = with_decision(solve_checked(snap), wid, reason=reason)
    assert any(
        p.startswith(f"{wid}: preempted ({reason.value}), but h")
        and p.endswith(
            "went into maintenance under it: an availability event, reason host_maintenance (3)"
        )
        for p in validate(snap, wrong)
    ), validate(snap, wrong)


def test_protected_work_kept_on_a_host_in_maintenance_is_rejected():
    snap = lab()
    placed = snap.by_id[WorkloadId("protected")].hosts
    kept = with_decision(
        solve_checked(snap),
        "protected",
        action=Action.KEEP,
        reason=Reason.PROTECTED,
        hosts=placed,
        protected_until=snap.by_id[WorkloadId("protected")].started.replace(hour=13),
    )
    assert "protected: kept, but h1 is maintenance (host_maintenance) (1)" in validate(snap, kept)


def test_a_preemption_the_plan_chose_passed_off_as_host_maintenance_is_rejected():
    # On a ready cluster a's queued run displaces the scratch work: unallocated_displaced.
    snap = snapshot_of(
        instance(
            hosts=[host("h1")],
            workloads=[
                workload("scratch", 8, min_runtime="0", hosts={"h1": 8}),
                workload("queued", 8, budget="a"),
            ],
        )
    )
    plan = solve_checked(snap)
    assert plan.decision(WorkloadId("scratch")).reason is Reason.UNALLOCATED_DISPLACED
    hidden = with_decision(plan, "scratch", reason=Reason.HOST_MAINTENANCE)
    assert (
        "scratch: preempted for host_maintenance, but none of its hosts is in maintenance (h1 "
        "is ready): a preemption the plan chose, with its own reason (3)"
    ) in validate(snap, hidden)


HOUR = 3600.0


@pytest.mark.parametrize("policy", ["greedy", "milp"])
def test_a_simulation_counts_preemptions_for_host_maintenance_apart(policy):
    # One host. a's job (8 GPUs, 2 h minimum runtime, 3 h of work) runs from 0 s; h1 goes into
    # maintenance at 1000 s, inside its protection: preempted for host_maintenance (1000 s
    # lost, no checkpoint yet), back at 2000 s. b's unallocated job arrives at 4 h and is
    # displaced by a's second job at 5 h: the plan's own preemption.
    jobs = [
        TraceJob(WorkloadId("a1"), BudgetPath("a"), 8, 0.0, 3 * HOUR, 2 * HOUR),
        TraceJob(WorkloadId("u"), BudgetPath("b"), 8, 5.5 * HOUR, 10 * HOUR, 0.0),
        TraceJob(WorkloadId("a2"), BudgetPath("a"), 8, 6 * HOUR, HOUR, HOUR),
    ]
    events = (
        HostEvent(1000.0, HostName("h1"), HostState.MAINTENANCE),
        HostEvent(2000.0, HostName("h1"), HostState.READY),
    )
    sim = Simulation(
        snapshot_of(instance(hosts=[host("h1")])),
        jobs,
        planner(policy),
        SimConfig(days=0.5, keeps_contract=True, validate_passes=True, host_events=events),
        MemoryStore(),
    )
    result = sim.run()
    assert result.violations == 0
    by = {(p.workload, p.reason, p.t_s) for p in result.recorder.preemptions}
    assert by == {("a1", "host_maintenance", 1000.0), ("u", "unallocated_displaced", 6 * HOUR)}
    m = metrics(result, policy, 1)
    assert (m["preemptions"], m["host_maintenance_preemptions"]) == (1, 1)
    assert m["host_maintenance_gpu_hours_lost"] == pytest.approx(8 * 1000 / HOUR, abs=1e-3)
    assert m["teams"]["a"]["preemptions"] == 0
    assert m["teams"]["a"]["host_maintenance_preemptions"] == 1
