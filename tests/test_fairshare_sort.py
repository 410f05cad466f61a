"""`--policy fairshare-sort`, the published design as a baseline (issue 15, decision 4): the
queue sorted hierarchically by window usage over allocation, first fit, minimum-runtime
protection and rebalancing past it, no reservations, no projection. Every plan is checked
against SPEC's invariants."""

from __future__ import annotations

from typing import Any

from conftest import TWO_PROGRAMS, actions, ago, instance, snapshot_of, started, workload

from alloc.domain import Plan, Reason
from alloc.round import RoundOptions, run_round
from alloc.sim.fairshare_sort import fairshare_sort
from alloc.solve.validate import validate


def plan_of(data: dict[str, Any]) -> Plan:
    snapshot = snapshot_of(data)
    plan = fairshare_sort(snapshot)
    assert validate(snapshot, plan) == []
    return plan


def reason(plan: Plan, workload: str) -> Reason:
    return plan.decision(workload).reason  # type: ignore[arg-type]


def test_the_node_with_the_lower_ratio_goes_first_level_by_level():
    # Program p (50%) holds a and b; program q (50%) holds c. b has used the least of all, but
    # p as a whole has used more than q: q's c goes first (siblings are compared first), then
    # inside p, b before a. One 8-GPU host each for two of the three jobs.
    jobs = [workload("A", 8, "p/a"), workload("B", 8, "p/b"), workload("C", 8, "q/c")]
    plan = plan_of(
        instance(budgets=TWO_PROGRAMS, workloads=jobs, usage={"p/a": 300, "p/b": 10, "q/c": 200})
    )
    assert started(plan) == {"C", "B"}


def test_the_sort_is_not_projected_the_team_behind_takes_everything_it_fits():
    # a is a little behind b. The published sort ranks all of a's work first: a's two 8-GPU
    # jobs take both hosts. The round allocator charges each pick to the projected ratios and
    # interleaves the teams: one each.
    jobs = [workload(f"{t}{i}", 8, t.lower()) for t in "AB" for i in (1, 2)]
    data = instance(workloads=jobs, usage={"a": 100, "b": 110})
    assert started(plan_of(data)) == {"A1", "A2"}
    ours = run_round(snapshot_of(data), RoundOptions(solver="greedy"))
    assert {w[0] for w in started(ours)} == {"A", "B"}


def test_running_work_past_its_minimum_runtime_is_rebalanced_protected_work_is_not():
    # a runs two 8-GPU jobs: A1 for 10 h (past its 2 h minimum runtime), A2 for 1 h (protected).
    # b, far behind over the window, queues an 8-GPU job: A1 is preempted, B starts on h1.
    jobs = [
        workload("A1", 8, "a", hosts={"h1": 8}, started=ago(hours=10)),
        workload("A2", 8, "a", hosts={"h2": 8}, started=ago(hours=1)),
        workload("B", 8, "b"),
    ]
    plan = plan_of(instance(workloads=jobs, usage={"a": 500, "b": 0}))
    assert actions(plan) == {"A1": "preempt", "A2": "keep", "B": "start"}
    assert reason(plan, "A1") is Reason.REBALANCED and reason(plan, "A2") is Reason.PROTECTED
    assert plan.decision("B").hosts == {"h1": 8}
    # Inside its protection A1 stays, and B waits.
    jobs[0] = workload("A1", 8, "a", hosts={"h1": 8}, started=ago(hours=1))
    plan = plan_of(instance(workloads=jobs, usage={"a": 500, "b": 0}))
    assert actions(plan) == {"A1": "keep", "A2": "keep", "B": "wait"}


def test_work_ahead_in_the_order_keeps_its_place_work_behind_it_does_not_churn():
    # b's running B (past its protection) ranks ahead of a's queued A: B stays, A waits.
    jobs = [
        workload("B", 8, "b", hosts={"h1": 8}, started=ago(hours=10)),
        workload("X", 8, "b", hosts={"h2": 8}, started=ago(hours=10)),
        workload("A", 8, "a"),
    ]
    plan = plan_of(instance(workloads=jobs, usage={"a": 500, "b": 0}))
    assert actions(plan) == {"B": "keep", "X": "keep", "A": "wait"}


def test_first_fit_takes_the_first_host_with_room_not_the_fullest():
    # h1 has 6 GPUs free, h2 only 2: a 2-GPU job goes to h1 (best fit would pick h2).
    jobs = [
        workload("R1", 2, "a", hosts={"h1": 2}, started=ago(hours=1)),
        workload("R2", 6, "a", hosts={"h2": 6}, started=ago(hours=1)),
        workload("Q", 2, "b"),
    ]
    plan = plan_of(instance(workloads=jobs))
    assert plan.decision("Q").hosts == {"h1": 2}
    ours = run_round(snapshot_of(instance(workloads=jobs)), RoundOptions(solver="greedy"))
    assert ours.decision("Q").hosts == {"h2": 2}


def test_no_reservation_small_work_fills_what_a_waiting_gang_needs():
    # a's 16-GPU gang G needs both hosts; h1 is busy (protected). b's small job S is behind G
    # in the order but starts on h2: nothing holds h2 back for the gang.
    jobs = [
        workload("P", 8, "b", hosts={"h1": 8}, started=ago(hours=1)),
        workload("G", 16, "a"),
        workload("S", 4, "b"),
    ]
    plan = plan_of(instance(workloads=jobs, usage={"a": 0, "b": 500}))
    assert actions(plan) == {"P": "keep", "G": "wait", "S": "start"}
    assert plan.reservations == ()


def test_allocated_work_displaces_unallocated_work_and_the_rest_fills_idle_gpus():
    # Unallocated U (minimum runtime 0) fills h1; a's queued 8-GPU job needs it (h2 is held by
    # protected work): U is displaced at once (invariant 4). Queued unallocated V gets nothing.
    jobs = [
        workload("U", 8, "a", min_runtime="0s", hosts={"h1": 8}, started=ago(hours=1)),
        workload("P", 8, "b", hosts={"h2": 8}, started=ago(hours=1)),
        workload("A", 8, "a"),
        workload("V", 4, None, min_runtime="0s"),
    ]
    plan = plan_of(instance(workloads=jobs))
    assert actions(plan) == {"U": "preempt", "P": "keep", "A": "start", "V": "wait"}
    assert reason(plan, "U") is Reason.UNALLOCATED_DISPLACED


def test_priority_orders_work_only_inside_its_own_node():
    # a's high-priority job goes before a's low-priority one, but not before b's work when b
    # is behind: b's B (priority 0) starts before a's H (priority 10).
    jobs = [
        workload("L", 8, "a", priority=0),
        workload("H", 8, "a", priority=10),
        workload("B", 8, "b", priority=0),
    ]
    plan = plan_of(instance(workloads=jobs, usage={"a": 100, "b": 0}))
    assert started(plan) == {"B", "H"}
