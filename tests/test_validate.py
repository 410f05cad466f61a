"""`validate` catches every broken invariant: each test breaks one in a valid plan."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from conftest import NOW, ago, host, instance, snapshot_of, solve_checked, workload

from alloc.domain import (
    Action,
    Decision,
    HostName,
    Occupancy,
    Plan,
    Reason,
    Reservation,
    WorkloadId,
)
from alloc.io import load_instance
from alloc.solve.reserve import Held
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
    assert "host h1: 10 GPUs given (run 6, new 4), it has 8 (1)" in validate(snap, plan)


def test_a_start_on_a_host_that_is_not_ready_is_invariant_1():
    snap = snapshot_of(
        instance(hosts=[host("h1"), host("h2", state="unhealthy")], workloads=[workload("w", 8)])
    )
    plan = with_decision(solve_checked(snap), "w", hosts={HostName("h2"): 8})
    assert "w: starts on h2, which is unhealthy (1)" in validate(snap, plan)


@pytest.mark.parametrize(
    "gpus,hosts,topology,blocks,message",
    [
        (
            4,
            {"h1": 2, "h2": 2},
            "any",
            ("b", "b"),
            "w: spread over 2 hosts (h1: 2, h2: 2), but its 4 GPUs fit on one host, so it gets "
            "one (2)",
        ),
        (
            16,
            {"h1": 8, "h2": 4},
            "any",
            ("b", "b"),
            "w: larger than one host (16 GPUs), so it gets whole hosts, but gets 4 of the 8 "
            "GPUs of h2 (2)",
        ),
        (
            16,
            {"h1": 8, "h2": 8},
            "block",
            ("b1", "b2"),
            "w: topology block, but starts across 2 blocks (b1: h1; b2: h2) (2)",
        ),
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
    assert message in validate(snap, plan)


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
    assert "w2: no decision (plan format)" in validate(snap, dropped)
    doubled = replace(plan, decisions=plan.decisions + plan.decisions[:1])
    assert f"{plan.decisions[0].workload}: 2 decisions, one per workload (plan format)" in validate(
        snap, doubled
    )
    extra = Decision(WorkloadId("ghost"), Action.WAIT, Occupancy.ALLOCATED, Reason.NO_ROOM)
    assert "ghost: decision for a workload not in the instance (plan format)" in validate(
        snap, replace(plan, decisions=plan.decisions + (extra,))
    )


def test_kept_work_stays_where_it_runs():
    snap = snapshot_of(
        instance(
            workloads=[workload("run", 4, min_runtime="4h", started=ago(hours=1), hosts={"h1": 4})]
        )
    )
    plan = with_decision(solve_checked(snap), "run", hosts={HostName("h2"): 4})
    assert "run: kept on h2: 4, but it runs on h1: 4 (models/round.md 1.2)" in validate(snap, plan)


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
    assert "old: kept, but h1 is retired (host_draining) (1)" in validate(snap, kept)


def test_drained_hosts_are_exactly_the_emptied_draining_hosts():
    snap = snapshot_of(instance(hosts=[host("h1", state="unhealthy"), host("h2")]))
    plan = solve_checked(snap)
    assert plan.drained_hosts == ("h1",)
    assert (
        "host h1: unhealthy and empty after the plan, so drained, but not listed in "
        "drained_hosts (models/round.md 1.1)" in validate(snap, replace(plan, drained_hosts=()))
    )
    wrong = replace(plan, drained_hosts=("h1", "h2"))
    assert any("listed as drained, but it is ready" in p for p in validate(snap, wrong))


# --- each violation names the broken fact, with its numbers (issue 17) ---------------------


def _started(snap, wid: str, hosts: dict[str, int], **changes):
    plan = with_decision(
        solve_checked(snap),
        wid,
        action=Action.START,
        reason=Reason.UNDER_ALLOCATION,
        hosts={HostName(h): g for h, g in hosts.items()},
        protected_until=NOW + timedelta(hours=2),
    )
    return with_decision(plan, wid, **changes) if changes else plan


def test_a_one_gpu_workload_given_a_whole_host_is_told_as_gpus_given_against_gpus_asked():
    snap = snapshot_of(instance(workloads=[workload("small", 1)]))
    problems = validate(snap, _started(snap, "small", {"h1": 8}))
    assert problems == ["small: given 8 GPUs (h1: 8), but it asks for 1 GPU (2)"]


def test_a_start_on_hosts_of_another_gpu_type_names_both_types():
    snap = snapshot_of(
        instance(
            hosts=[host("h1", gpu_type="h100"), host("h2", gpu_type="a100")],
            workloads=[workload("w", 8, gpu_type="a100")],
        )
    )
    problems = validate(snap, _started(snap, "w", {"h1": 8}))
    assert "w: needs a100 GPUs, but starts on h1, which has h100 GPUs (2)" in problems


def test_a_gang_on_more_whole_hosts_than_it_needs_names_both_counts():
    snap = snapshot_of(
        instance(hosts=[host("h1"), host("h2"), host("h3")], workloads=[workload("w", 16)])
    )
    problems = validate(snap, _started(snap, "w", {"h1": 8, "h2": 8, "h3": 8}))
    assert "w: gets 3 hosts of 8 GPUs for 16 GPUs, which take 2 hosts (2)" in problems


def test_a_gang_on_hosts_of_two_sizes_names_each_size():
    snap = snapshot_of(
        instance(
            hosts=[host("h1"), host("h2", gpus=4), host("h3")],
            workloads=[workload("w", 12, topology="any")],
        )
    )
    problems = validate(snap, _started(snap, "w", {"h1": 8, "h2": 4}))
    assert (
        "w: larger than one host (12 GPUs), so it gets whole hosts of one size, but gets "
        "hosts of several (h1 has 8, h2 has 4) (2)" in problems
    )


def test_a_start_with_zero_gpus_on_a_host_names_the_host():
    snap = snapshot_of(instance(workloads=[workload("w", 8)]))
    problems = validate(snap, _started(snap, "w", {"h1": 8, "h2": 0}))
    assert (
        "w: holds 0 GPUs on h2 (a count above 0 for each host it holds) (plan format)" in problems
    )


def test_a_wrong_protection_end_names_the_minimum_runtime_and_the_right_end():
    snap = snapshot_of(instance(workloads=[workload("w", 8, min_runtime="2h")]))
    plan = _started(snap, "w", {"h1": 8}, protected_until=NOW + timedelta(hours=3))
    assert validate(snap, plan) == [
        "w: protected until 2026-11-30T15:00:00Z, but its minimum runtime of 2 h from now, "
        "2026-11-30T12:00:00Z protects it until 2026-11-30T14:00:00Z (models/round.md 1.1)"
    ]


def test_a_minimum_runtime_above_the_maximum_names_both():
    snap = snapshot_of(instance(workloads=[workload("w", 4, min_runtime="90m")]))
    plan = solve_checked(snap)
    tight = replace(snap, policy=replace(snap.policy, max_min_runtime_s=3600.0))
    assert "w: minimum runtime 1 h 30 min is above max_min_runtime 1 h (7)" in validate(tight, plan)


def test_protected_unfunded_work_says_why_it_is_unfunded():
    snap = snapshot_of(instance(workloads=[workload("w", 4, budget=None, min_runtime="4h")]))
    plan = with_decision(solve_checked(snap), "w", protected_until=NOW + timedelta(hours=4))
    assert (
        "w: protected until 2026-11-30T16:00:00Z, but unfunded work is never protected (it "
        "names no budget, so it is unfunded) (5)" in validate(snap, plan)
    )
    wrong = with_decision(solve_checked(snap), "w", occupancy=Occupancy.ALLOCATED)
    assert (
        "w: occupancy allocated, the contract says unallocated (it names no budget, so it is "
        "unfunded) (5)" in validate(snap, wrong)
    )


def test_work_of_a_budget_with_no_share_is_unfunded_and_said_so():
    budgets = {
        "name": "root",
        "children": [{"name": "a", "share": "100%"}, {"name": "z", "share": "0%"}],
    }
    snap = snapshot_of(instance(budgets=budgets, workloads=[workload("w", 4, budget="z")]))
    wrong = with_decision(solve_checked(snap), "w", occupancy=Occupancy.ALLOCATED)
    assert any(
        "its budget z has an effective allocation of 0: its share of its parent is 0%, so it "
        "is unfunded" in p
        for p in validate(snap, wrong)
    )


def test_preempting_protected_work_names_the_end_of_its_protection():
    snap = snapshot_of(
        instance(
            workloads=[workload("run", 8, min_runtime="4h", started=ago(hours=1), hosts={"h1": 8})]
        )
    )
    plan = with_decision(
        solve_checked(snap), "run", action=Action.PREEMPT, reason=Reason.REBALANCED, hosts={}
    )
    assert validate(snap, plan) == [
        "run: preempt, but it is protected until 2026-11-30T15:00:00Z (3)"
    ]


def test_preempting_work_too_costly_to_stop_names_how_long_it_ran_and_the_interval():
    snap = snapshot_of(
        instance(
            workloads=[workload("run", 8, started=ago(hours=5), hosts={"h1": 8}, resumable=False)],
            policy={"checkpoint_interval": "1h"},
        )
    )
    plan = with_decision(
        solve_checked(snap), "run", action=Action.PREEMPT, reason=Reason.REBALANCED, hosts={}
    )
    assert validate(snap, plan) == [
        "run: preempt, but it cannot resume and has run 5 h, longer than the checkpoint "
        "interval of 1 h: the contract keeps it to its end (costly_to_stop) (models/round.md 1.1)"
    ]


def test_allocated_work_waiting_beside_unallocated_work_names_the_host_and_the_holder():
    snap = snapshot_of(
        instance(
            hosts=[host("h1")],
            workloads=[
                workload("free", 8, min_runtime="0", hosts={"h1": 8}, started=ago(minutes=5)),
                workload("paid", 8),
            ],
        )
    )
    plan = with_decision(
        solve_checked(snap),
        "free",
        action=Action.KEEP,
        hosts={HostName("h1"): 8},
        reason=Reason.UNALLOCATED_FILL,
    )
    plan = with_decision(
        plan, "paid", action=Action.WAIT, hosts={}, reason=Reason.NO_ROOM, protected_until=None
    )
    assert validate(snap, plan) == [
        "paid: waits for 8 GPUs, which it would have on h1, held by unallocated free (4)"
    ]


def test_a_host_listed_as_drained_that_still_holds_work_names_the_work():
    snap = snapshot_of(
        instance(
            hosts=[host("h1", state="retired"), host("h2")],
            workloads=[workload("old", 4, min_runtime="4h", started=ago(hours=1), hosts={"h1": 4})],
        )
    )
    plan = solve_checked(snap)
    assert plan.drained_hosts == ()
    wrong = replace(plan, drained_hosts=("h1", "h9"))
    assert validate(snap, wrong) == [
        "host h1: listed as drained, but 4 GPUs of it stay held (old) (models/round.md 1.1)",
        "host h9: listed as drained, but not a host of the instance (models/round.md 1.1)",
    ]


def test_work_kept_on_an_unknown_host_names_the_host_and_its_gpus():
    snap = snapshot_of(
        instance(workloads=[workload("run", 4, started=ago(hours=1), hosts={"h1": 4})])
    )
    plan = with_decision(solve_checked(snap), "run", hosts={HostName("h9"): 4})
    problems = validate(snap, plan)
    assert "run: holds 4 GPUs on h9, which is not a host of the instance (1)" in problems


def test_a_reservation_the_rule_does_not_make_says_what_the_rule_reserves():
    from alloc.domain import Reservation

    snap = snapshot_of(instance(workloads=[workload("w", 4)]))
    plan = solve_checked(snap)
    wrong = replace(plan, reservations=(Reservation(WorkloadId("w"), (HostName("h2"),), NOW),))
    assert "w: reserves h2, but the rule reserves nothing for it (8)" in validate(snap, wrong)


# --- a gang on the hosts reserved for it is told the broken fact, not its own reservation ---

RESERVATION = Path(__file__).parent.parent / "instances" / "examples" / "reservation.yaml"


def _gang_started(hosts: list[str], *preempted: str) -> list[str]:
    """instances/examples/reservation.yaml solved, then edited as a user might: a-gang (32
    GPUs: four whole hosts) started on `hosts`, b-scavenge (unallocated, on h6) left waiting,
    `preempted` runs of b preempted. The plan still reserves h0, h1, h6 and h7 for a-gang."""
    snap = load_instance(RESERVATION)
    plan = solve_checked(snap)
    assert [r.hosts for r in plan.reservations] == [("h0", "h1", "h6", "h7")]
    plan = _started(snap, "a-gang", {h: 8 for h in hosts}, protected_until=NOW.replace(hour=16))
    plan = with_decision(plan, "b-scavenge", action=Action.WAIT, hosts={}, reason=Reason.NO_ROOM)
    for wid in preempted:
        plan = with_decision(plan, wid, action=Action.PREEMPT, hosts={}, reason=Reason.REBALANCED)
    return validate(snap, plan)


@pytest.mark.parametrize(
    "hosts,preempted,problems",
    [
        (
            ["h0", "h1", "h6", "h7"],
            (),
            [
                "host h0: 16 GPUs given (a-gang 8, b-run0 8), it has 8 (1)",
                "host h1: 16 GPUs given (a-gang 8, b-run1 8), it has 8 (1)",
            ],
        ),
        (
            ["h0", "h1", "h6", "h7"],
            ("b-run0", "b-run1"),
            [
                "b-run0: preempt, but it is protected until 2026-11-30T12:30:00Z (3)",
                "b-run1: preempt, but it is protected until 2026-11-30T13:00:00Z (3)",
            ],
        ),
        (["h6", "h7"], (), ["a-gang: gets 2 hosts of 8 GPUs for 32 GPUs, which take 4 hosts (2)"]),
        (
            ["h2", "h3", "h6", "h7"],
            (),
            [
                "host h2: 16 GPUs given (a-gang 8, b-run2 8), it has 8 (1)",
                "host h3: 16 GPUs given (a-gang 8, b-run3 8), it has 8 (1)",
            ],
        ),
    ],
    ids=[
        "on all its reserved hosts, beside the protected runs there",
        "on all its reserved hosts, the protected runs there preempted",
        "on the two of its reserved hosts that are free",
        "half on its reserved hosts, half beside protected runs elsewhere",
    ],
)
def test_a_gang_started_on_its_own_reserved_hosts_is_told_what_keeps_it_from_fitting(
    hosts, preempted, problems
):
    assert _gang_started(hosts, *preempted) == problems


def test_a_gang_may_start_on_its_own_reservation_when_nothing_is_broken():
    """An hour later, the reservation still due (as when an event pass's whole plan is checked
    against the last full round's reservations): b-run0 and b-run1 have ended, b-scavenge runs
    on h6 and a's small runs are gone. a-gang starts on its four reserved hosts and b-scavenge
    yields: the plan breaks nothing. Left waiting instead, a-gang could use the GPUs b-scavenge
    holds on its own reserved hosts (4)."""
    data = yaml.safe_load(RESERVATION.read_text())
    data["now"] = "2026-11-30T13:00:00Z"
    gone = ("b-run0", "b-run1", "a-later", "a-debug")
    data["workloads"] = [w for w in data["workloads"] if w["id"] not in gone]
    for w in data["workloads"]:
        if w["id"] == "b-scavenge":
            w.update(started="2026-11-30T12:00:00Z", hosts={"h6": 8})
    snap = snapshot_of(data)
    plan = solve_checked(snap)
    gang = plan.decision(WorkloadId("a-gang"))
    assert gang.action is Action.START and sorted(gang.hosts) == ["h0", "h1", "h6", "h7"]
    ready_at = NOW.replace(hour=13)
    reserved = (
        Reservation(WorkloadId("a-gang"), tuple(map(HostName, sorted(gang.hosts))), ready_at),
    )
    due = (Held(WorkloadId("a-gang"), (0, 1, 6, 7), ready_at),)
    assert validate(snap, replace(plan, reservations=reserved), due=due) == []
    waits = with_decision(plan, "a-gang", action=Action.WAIT, hosts={}, reason=Reason.NO_ROOM)
    waits = with_decision(
        waits,
        "b-scavenge",
        action=Action.KEEP,
        hosts={HostName("h6"): 8},
        reason=Reason.UNALLOCATED_FILL,
    )
    assert validate(snap, replace(waits, reservations=reserved), due=due) == [
        "a-gang: waits for 32 GPUs, which it would have on h0, h1, h6, h7, held by unallocated "
        "b-scavenge (4)"
    ]


def test_a_gang_started_on_another_gangs_reservation_is_told_it_backfills_none():
    """Two teams' 16-GPU gangs blocked by c's protected runs (h1 ends at 12:10, h2 at 12:20,
    ...): h1, h2 are reserved for a-gang (ready 12:20), h3, h4 for b-gang (ready 12:40)."""
    budgets = {"name": "root", "children": [{"name": n, "share": "33%"} for n in "abc"]}
    runs = [
        workload(
            f"c-run{i}", 8, "c", "4h", started=ago(hours=4, minutes=-10 * i), hosts={f"h{i}": 8}
        )
        for i in range(1, 9)
    ]
    gangs = [workload("a-gang", 16, "a", "4h"), workload("b-gang", 16, "b", "4h")]
    snap = snapshot_of(
        instance(
            hosts=[host(f"h{i}") for i in range(1, 9)],
            budgets=budgets,
            workloads=runs + gangs,
            usage={"c": 100},
        )
    )
    plan = _started(snap, "b-gang", {"h2": 8, "h3": 8}, protected_until=NOW.replace(hour=16))
    assert [(r.workload, r.hosts) for r in plan.reservations] == [
        ("a-gang", ("h1", "h2")),
        ("b-gang", ("h3", "h4")),
    ]
    assert validate(snap, plan) == [
        "host h2: 16 GPUs given (c-run2 8, b-gang 8), it has 8 (1)",
        "host h3: 16 GPUs given (c-run3 8, b-gang 8), it has 8 (1)",
        "b-gang: starts on h2, reserved for a-gang until 2026-11-30T12:20:00Z, but a gang "
        "holding a reservation of its own backfills no other (8.5)",
    ]


def test_work_that_cannot_resume_is_told_it_backfills_no_reservation():
    """b-next asks for 30 minutes only, well before a-gang's hosts are ready at 13:00: able to
    resume it backfills one of them; unable to, the contract could keep it past 13:00."""
    data = yaml.safe_load(RESERVATION.read_text())
    (b_next,) = [w for w in data["workloads"] if w["id"] == "b-next"]
    b_next["min_runtime"] = "30m"
    backfill = solve_checked(snapshot_of(data)).decision(WorkloadId("b-next"))
    assert backfill.action is Action.START and backfill.backfill_for == ("a-gang",)
    b_next["resumable"] = False
    snap = snapshot_of(data)
    plan = solve_checked(snap)
    assert plan.decision(WorkloadId("b-next")).reason is Reason.RESERVED
    plan = _started(
        snap,
        "b-next",
        {"h7": 8},
        protected_until=NOW.replace(minute=30),
        backfill_for=(WorkloadId("a-gang"),),
    )
    assert validate(snap, plan) == [
        "b-next: starts on h7, reserved for a-gang until 2026-11-30T13:00:00Z, but it cannot "
        "resume, and only resumable work backfills (the contract could keep it past then) (8.5)"
    ]


# --- every violation names the rule it breaks (issue 17) ------------------------------------


def _tamperings(plan: Plan) -> list[Plan]:
    """Each decision of `plan` changed one way at a time, and the plan's lists changed: enough
    ways to break every rule `validate` checks on a small instance."""
    hosts = [HostName("h1"), HostName("h2"), HostName("h3"), HostName("h9")]
    later = NOW + timedelta(hours=7)
    out = [
        replace(plan, decisions=plan.decisions[1:]),
        replace(plan, decisions=plan.decisions + plan.decisions[:1]),
        replace(plan, drained_hosts=("h1", "h3", "h9")),
        replace(plan, drained_hosts=()),
    ]
    for d in plan.decisions:
        changes: list[dict[str, object]] = [
            {"action": a, "hosts": {}} for a in (Action.WAIT, Action.PREEMPT)
        ]
        changes += [
            {"action": a, "hosts": {h: 8}, "protected_until": later}
            for a in (Action.START, Action.KEEP)
            for h in hosts
        ]
        changes += [{"occupancy": o} for o in (Occupancy.ALLOCATED, Occupancy.UNALLOCATED)]
        changes += [{"protected_until": later}, {"protected_until": None}]
        changes += [{"reason": r} for r in (Reason.PROTECTED, Reason.HOST_MAINTENANCE)]
        changes += [{"hosts": {hosts[0]: 0, **d.hosts}}]
        out += [with_decision(plan, d.workload, **c) for c in changes]
    return out


def test_every_violation_names_the_invariant_or_rule_it_breaks():
    from alloc.cli.plans import violation

    snap = snapshot_of(
        instance(
            hosts=[host("h1"), host("h2", state="retired"), host("h3", state="maintenance")],
            workloads=[
                workload("kept", 4, started=ago(hours=1), hosts={"h1": 4}),
                workload("old", 4, started=ago(hours=10), hosts={"h2": 4}),
                workload("down", 8, min_runtime="4h", started=ago(hours=1), hosts={"h3": 8}),
                workload("stiff", 2, started=ago(hours=5), hosts={"h1": 2}, resumable=False),
                workload("free", 1, budget=None, min_runtime="0s"),
                workload("gang", 16, budget="b"),
                workload("new", 8, budget="b", gpu_type="a100"),
            ],
            policy={"checkpoint_interval": "1h"},
        )
    )
    found = {p for plan in _tamperings(solve_checked(snap)) for p in validate(snap, plan)}
    assert len(found) > 30  # many different facts, each with its rule
    assert [p for p in found if not violation(p)[0]] == []


def test_a_queued_workload_marked_preempted_is_told_as_queued_not_as_displaced():
    snap = snapshot_of(
        instance(
            workloads=[
                workload("free", 4, budget=None, min_runtime="0s", hosts={"h1": 4}),
                workload("new", 4),
            ]
        )
    )
    plan = with_decision(
        solve_checked(snap), "new", action=Action.PREEMPT, reason=Reason.REBALANCED, hosts={}
    )
    assert validate(snap, plan) == [
        "new: queued, so it starts or waits, not 'preempt' (models/round.md 1.1)"
    ]
