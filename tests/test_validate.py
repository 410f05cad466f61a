"""`validate` catches every broken invariant: each test breaks one in a valid plan."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from conftest import NOW, ago, host, instance, snapshot_of, solve_checked, workload

from alloc.domain import Action, Decision, HostName, Occupancy, Plan, Reason, WorkloadId
from alloc.solve.validate import validate


def with_decision(plan: Plan, wid: str, **changes) -> Plan:
    decisions = tuple(replace(d, **changes) if d.workload == wid else d for d in plan.decisions)
    return replace(plan, decisions=decisions)


def test_a_valid_plan_has_no_violations():
    snap = snapshot_of(instance(workloads=[workload("w1", 4)]))
    assert validate(snap, solve_checked(snap)) == []


def test_more_gpus_on_a_host_than_it_has_is_invariant_1():
    snap = snapshot_of(
        instance(
            hosts=[host("h1")], workloads=[workload("run", 6, hosts={"h1": 6}), workload("new", 4)]
        )
    )
    plan = with_decision(
        solve_checked(snap),
        "new",
        action=Action.START,
        hosts={HostName("h1"): 4},
        reason=Reason.UNDER_ALLOCATION,
        protected_until=NOW + timedelta(hours=2),
    )
    assert any("10 GPUs given, it has 8 (1)" in p for p in validate(snap, plan))


def test_a_start_on_a_host_that_is_not_ready_is_invariant_1():
    snap = snapshot_of(
        instance(hosts=[host("h1"), host("h2", state="unhealthy")], workloads=[workload("w", 8)])
    )
    plan = with_decision(solve_checked(snap), "w", hosts={HostName("h2"): 8})
    assert any("not ready (1)" in p for p in validate(snap, plan))


@pytest.mark.parametrize(
    "gpus,hosts,topology,blocks,message",
    [
        (4, {"h1": 2, "h2": 2}, "any", ("b", "b"), "fits on one host"),
        (16, {"h1": 8, "h2": 4}, "any", ("b", "b"), "whole hosts"),
        (16, {"h1": 8, "h2": 8}, "block", ("b1", "b2"), "across blocks"),
    ],
    ids=[
        "a small gang split over two hosts",
        "a large gang on part of a host",
        "a block gang across blocks",
    ],
)
def test_gangs_start_whole_on_whole_hosts_in_one_block_is_invariant_2(
    gpus, hosts, topology, blocks, message
):
    snap = snapshot_of(
        instance(
            hosts=[
                host("h1", block=blocks[0]),
                host("h2", block=blocks[1]),
                host("h3", block="b1"),
            ],
            workloads=[workload("w", gpus, topology=topology)],
        )
    )
    plan = solve_checked(snap)
    plan = with_decision(
        plan,
        "w",
        action=Action.START,
        reason=Reason.UNDER_ALLOCATION,
        hosts={HostName(h): g for h, g in hosts.items()},
        protected_until=NOW + timedelta(hours=2),
    )
    assert any(message in p for p in validate(snap, plan)), validate(snap, plan)


def test_preempting_protected_work_is_invariant_3():
    snap = snapshot_of(
        instance(
            workloads=[workload("run", 8, min_runtime="4h", started=ago(hours=1), hosts={"h1": 8})]
        )
    )
    plan = with_decision(
        solve_checked(snap), "run", action=Action.PREEMPT, reason=Reason.REBALANCED, hosts={}
    )
    assert any("(3)" in p for p in validate(snap, plan))


def test_unallocated_work_holding_what_waiting_allocated_work_needs_is_invariant_4():
    snap = snapshot_of(
        instance(
            hosts=[host("h1")],
            workloads=[
                workload("free", 8, min_runtime="0", hosts={"h1": 8}, started=ago(minutes=5)),
                workload("paid", 8),
            ],
        )
    )
    plan = solve_checked(snap)
    assert plan.decision(WorkloadId("paid")).action is Action.START
    plan = with_decision(
        plan, "free", action=Action.KEEP, hosts={HostName("h1"): 8}, reason=Reason.UNALLOCATED_FILL
    )
    plan = with_decision(
        plan, "paid", action=Action.WAIT, hosts={}, reason=Reason.NO_ROOM, protected_until=None
    )
    assert any("(4)" in p for p in validate(snap, plan))


def test_protecting_unfunded_work_is_invariant_5():
    snap = snapshot_of(instance(workloads=[workload("w", 4, budget=None, min_runtime="4h")]))
    plan = with_decision(solve_checked(snap), "w", protected_until=NOW + timedelta(hours=4))
    assert any("(5)" in p for p in validate(snap, plan))
    plan = with_decision(solve_checked(snap), "w", occupancy=Occupancy.ALLOCATED)
    assert any("the contract says unallocated" in p for p in validate(snap, plan))


def test_starting_ahead_of_higher_priority_work_of_the_same_node_is_invariant_6():
    snap = snapshot_of(
        instance(
            hosts=[host("h1")],
            workloads=[workload("low", 8, priority=0), workload("high", 8, priority=5)],
        )
    )
    plan = solve_checked(snap)
    assert plan.decision(WorkloadId("high")).action is Action.START
    plan = with_decision(
        plan,
        "low",
        action=Action.START,
        hosts={HostName("h1"): 8},
        reason=Reason.UNDER_ALLOCATION,
        protected_until=NOW + timedelta(hours=2),
    )
    plan = with_decision(
        plan, "high", action=Action.WAIT, hosts={}, reason=Reason.NO_ROOM, protected_until=None
    )
    assert any("(6)" in p for p in validate(snap, plan))


def test_a_minimum_runtime_above_the_maximum_is_invariant_7():
    snap = snapshot_of(
        instance(workloads=[workload("w", 4, min_runtime="2h")], policy={"max_min_runtime": "8h"})
    )
    plan = solve_checked(snap)
    tight = replace(snap, policy=replace(snap.policy, max_min_runtime_s=3600.0))
    assert any("(7)" in p for p in validate(tight, plan))


def test_every_workload_has_exactly_one_decision():
    snap = snapshot_of(instance(workloads=[workload("w1", 4), workload("w2", 4)]))
    plan = solve_checked(snap)
    dropped = replace(plan, decisions=plan.decisions[:1])
    assert "w2: no decision" in validate(snap, dropped)
    doubled = replace(plan, decisions=plan.decisions + plan.decisions[:1])
    assert "a workload has more than one decision" in validate(snap, doubled)
    extra = Decision(WorkloadId("ghost"), Action.WAIT, Occupancy.ALLOCATED, Reason.NO_ROOM)
    assert "ghost: decision for an unknown workload" in validate(
        snap, replace(plan, decisions=plan.decisions + (extra,))
    )


def test_kept_work_stays_where_it_runs():
    snap = snapshot_of(
        instance(
            workloads=[workload("run", 4, min_runtime="4h", started=ago(hours=1), hosts={"h1": 4})]
        )
    )
    plan = with_decision(solve_checked(snap), "run", hosts={HostName("h2"): 4})
    assert any("other hosts than it runs on" in p for p in validate(snap, plan))


def test_unprotected_work_on_a_draining_host_must_go():
    snap = snapshot_of(
        instance(
            hosts=[host("h1", state="retired"), host("h2")],
            workloads=[workload("old", 4, started=ago(hours=10), hosts={"h1": 4})],
        )
    )
    plan = solve_checked(snap)
    assert plan.drained_hosts == ("h1",)
    kept = with_decision(
        plan, "old", action=Action.KEEP, hosts={HostName("h1"): 4}, reason=Reason.UNDER_ALLOCATION
    )
    assert any("host_draining" in p for p in validate(snap, kept))


def test_drained_hosts_are_exactly_the_emptied_draining_hosts():
    snap = snapshot_of(instance(hosts=[host("h1", state="unhealthy"), host("h2")]))
    plan = solve_checked(snap)
    assert plan.drained_hosts == ("h1",)
    assert "host h1: drained but not listed" in validate(snap, replace(plan, drained_hosts=()))
    wrong = replace(plan, drained_hosts=("h1", "h2"))
    assert any("listed as drained, but it is ready" in p for p in validate(snap, wrong))
