"""Reservations (models/round.md, section 8): hosts held back for a gang that protected work
keeps from starting. The hand-derived round is instances/examples/reservation.yaml (tested with
every example); here: what validate accepts, the plan file, when no reservation is made, and
the starvation it prevents over time."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from conftest import NOW, ago, host, instance, snapshot_of, solve_checked, workload
from test_sim_engine import HOUR, job, simulate

from alloc.domain import Action, HostName, Occupancy, Reason, Reservation, WorkloadId
from alloc.io import dump_plan, load_instance, load_plan
from alloc.solve.validate import validate

EXAMPLE = Path(__file__).parent.parent / "instances" / "examples" / "reservation.yaml"


def test_a_plan_may_only_declare_the_reservations_the_rule_makes(solver):
    snap = load_instance(EXAMPLE)
    plan = solve_checked(snap, solver)
    (r,) = plan.reservations
    moved = replace(r, hosts=(HostName("h2"), HostName("h3"), HostName("h6"), HostName("h7")))
    problems = validate(snap, replace(plan, reservations=(moved,)))
    assert (
        "a-gang: reserves h2, h3, h6, h7, but the rule reserves h0, h1, h6, h7 for it (8)"
        in problems
    ), problems


def test_no_allocated_work_starts_on_a_reserved_host(solver):
    snap = load_instance(EXAMPLE)
    plan = solve_checked(snap, solver)
    start = replace(
        plan.decision(WorkloadId("b-next")),
        action=Action.START,
        reason=Reason.OVER_ALLOCATION,
        hosts={HostName("h7"): 8},
        protected_until=NOW.replace(hour=14),
    )
    tampered = replace(
        plan, decisions=tuple(start if d.workload == "b-next" else d for d in plan.decisions)
    )
    problems = validate(snap, tampered)
    assert problems == [
        "b-next: starts on h7, reserved for a-gang until 2026-11-30T13:00:00Z, but its minimum "
        "runtime of 2 h from now protects it until 2026-11-30T14:00:00Z (8.5)"
    ]
    # The same start in a plan that reserves nothing breaks no invariant of SPEC.md: a policy
    # need not reserve (the baselines do not).
    assert validate(snap, replace(tampered, reservations=())) == []


def test_reservations_are_written_to_and_read_from_the_plan_file(tmp_path):
    plan = solve_checked(load_instance(EXAMPLE), "greedy")
    path = tmp_path / "plan.json"
    path.write_text(dump_plan(plan))
    assert (
        load_plan(path).reservations
        == plan.reservations
        == (
            Reservation(
                WorkloadId("a-gang"),
                (HostName("h0"), HostName("h1"), HostName("h6"), HostName("h7")),
                NOW.replace(hour=13),
            ),
        )
    )


def _example(**changes) -> dict:
    data = yaml.safe_load(EXAMPLE.read_text())
    for key, value in changes.items():
        if key == "gang_gpus":
            data["workloads"][0]["gpus"] = value
        else:
            data[key] = value
    return data


@pytest.mark.parametrize(
    "changes",
    [
        {"usage": {"a": 6000, "b": 0}},  # a used more than its share of the window (5,376 h)
        {"gang_gpus": 40},  # more than a is owed (50% of 64 GPUs)
        {"policy": {"time_limit": "20s"}, "gang_gpus": 16},  # fits on h6 and h7: it starts
    ],
    ids=["over its share", "beyond what it is owed", "not blocked"],
)
def test_no_reservation_when_the_gang_is_not_owed_the_room_or_not_blocked(changes, solver):
    plan = solve_checked(snapshot_of(_example(**changes)), solver)
    assert plan.reservations == ()
    assert plan.decision(WorkloadId("b-scavenge")).occupancy is Occupancy.UNALLOCATED


def test_hosts_whose_work_has_no_known_end_are_not_reserved(solver):
    """b-run0 on h0 cannot resume and has run 3.5 h, past its 1-hour protection: the contract
    keeps it (costly_to_stop) and nobody knows when it ends. Its host is not promised to the
    gang: the next soonest (h2, free at 13:30) is reserved in its place."""
    data = _example()
    run0 = data["workloads"][1]
    assert run0["id"] == "b-run0"
    run0.update(min_runtime="1h", resumable=False)
    snap = snapshot_of(data)
    plan = solve_checked(snap, solver)
    assert plan.decision(WorkloadId("b-run0")).reason is Reason.COSTLY_TO_STOP
    assert plan.reservations == (
        Reservation(
            WorkloadId("a-gang"),
            (HostName("h1"), HostName("h2"), HostName("h6"), HostName("h7")),
            NOW.replace(hour=13, minute=30),
        ),
    )


@pytest.mark.parametrize("policy", ["greedy", "milp"])
def test_a_gang_starts_when_the_reserved_hosts_free_instead_of_starving(policy):
    """Team b's runs end one host at a time (h1 at 1 h, h2 at 2 h, ...) and b keeps a queue of
    4-hour runs. Without a reservation each freed host goes to b's next run and team a's
    16-GPU gang never sees two free hosts; with one, h1 is held back at 1 h and the gang starts
    at 2 h, when h2 frees."""
    running = [
        workload(
            f"b-run{i}",
            8,
            budget="b",
            min_runtime=f"{i}h",
            runtime=f"{i}h",
            started=NOW.isoformat(),
            hosts={f"h{i}": 8},
        )
        for i in range(1, 5)
    ]
    snap = snapshot_of(
        instance(
            hosts=[host(f"h{i}", block="b1", rack="r1") for i in range(1, 5)], workloads=running
        )
    )
    jobs = [job("a-gang", "a", 16, 0.0, 2 * HOUR, 2 * HOUR)]
    jobs += [job(f"b-next{i}", "b", 8, 0.0, 4 * HOUR, 4 * HOUR) for i in range(12)]
    result = simulate(snap, jobs, policy, days=0.5)
    gang = result.world.jobs[WorkloadId("a-gang")]
    assert gang.first_start_s == 2 * HOUR
    assert result.violations == 0


def test_the_milp_opens_reserved_hosts_only_to_work_that_may_start_there(monkeypatch):
    """The reservation is ready at 13:00. b-next (2 h: protected until 14:00) may not start on
    its hosts; a-debug (15 min) and b-scavenge (unallocated, yields at once) may. The model
    opens the reserved pools by level (models/round.md 5.2 and 8.5): the warm start, with
    b-scavenge on a reserved host, is a point of the model, and its solution is the greedy's."""
    from alloc.solve import milp
    from alloc.solve.context import round_context
    from alloc.solve.greedy import greedy
    from alloc.solve.milp_decode import hint
    from alloc.solve.milp_model import build_model
    from alloc.solve.repair import complete

    snap = load_instance(EXAMPLE)
    ctx = round_context(snap)
    warm = complete(ctx, greedy(ctx))
    assert warm.holds(WorkloadId("b-scavenge"))
    rm = build_model(ctx, warm.held)
    level = {w: c.level for c in rm.classes for w in c.members}
    # b-next fits nowhere it may go (only reserved hosts have 8 free GPUs): not in the model
    assert WorkloadId("b-next") not in level
    assert level[WorkloadId("a-debug")] == level[WorkloadId("b-scavenge")] == 0
    assert (
        ctx.backfill is not None
        and ctx.backfill.level(snap.workload(WorkloadId("b-next")), snap.now) == 1
    )  # its protection would end after the one reservation's ready_at
    reserved_pools = {i for i, p in enumerate(rm.pools) if p.reserved}
    assert reserved_pools and all(rm.pools[i].res == 1 for i in reserved_pools)
    assert all(not rm.pools[i].open_to(1) and rm.pools[i].open_to(0) for i in reserved_pools)
    assert hint(ctx, rm, warm)[rm.y[WorkloadId("b-scavenge")]] == 1.0

    monkeypatch.setattr(milp, "QUICK_GAP", -1.0)  # no knapsack shortcut: always the model
    plan = solve_checked(snap, "milp")
    assert plan.report.status != "fallback"
    assert plan.decision(WorkloadId("b-scavenge")).action is Action.START
    assert plan.decision(WorkloadId("b-next")).reason is Reason.RESERVED


def test_explain_says_who_holds_the_reservation_and_until_when():
    from alloc.explain import explain

    snap = load_instance(EXAMPLE)
    plan = solve_checked(snap, "greedy")
    gang = "\n".join(explain(snap, plan, "a-gang").lines())
    assert "hosts h0, h1, h6, h7 are reserved for it" in gang
    assert "2026-11-30T13:00:00Z" in gang
    waiting = "\n".join(explain(snap, plan, "b-next").lines())
    assert "b-next: wait (reserved)" in waiting
    assert "reserved for a-gang" in waiting


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        (
            {"gang_gpus": 40},
            "a's allocation alone is 32 GPUs (its effective allocation x the 64 ready GPUs) and "
            "its running work held 0 allocated GPUs before this round: with its 40 it would be "
            "8 GPUs beyond its allocation",
        ),
        ({"usage": {"a": 6000, "b": 0}}, "a has used its share over the window (ratio 1.12)"),
        (
            {"costly": 6},
            "every set of hosts of its shape holds work kept as costly_to_stop, which has no "
            "known end",
        ),
    ],
    ids=["beyond what it is owed", "over its share", "no host with a known end"],
)
def test_explain_says_why_no_hosts_are_held_back_for_a_waiting_gang(changes, said):
    from alloc.explain import explain

    costly = changes.pop("costly", 0)
    data = _example(**changes)
    for run in data["workloads"][1 : 1 + costly]:  # b's runs: past a 1-hour protection
        run.update(min_runtime="1h", resumable=False)
    snap = snapshot_of(data)
    plan = solve_checked(snap, "greedy")
    assert plan.reservations == ()
    text = " ".join(" ".join(explain(snap, plan, "a-gang").lines()).split())
    assert f"no hosts are held back for it (models/round.md 8): {said}" in text


def test_explain_names_the_runs_of_its_own_node_that_keep_a_gang_beyond_what_it_is_owed():
    """Team big (60% of 64 GPUs: its allocation alone 38.4) holds 12 GPUs of priority-1 runs;
    its 32-GPU gang would take it 5.6 GPUs beyond its allocation, so no hosts are held back
    for it: explain says so with the figure before the round and after it (as `alloc solve`'s
    "held"), and names the runs, largest first."""
    from alloc.explain import explain

    def run(id, gpus, host, started):
        return workload(
            id,
            gpus,
            budget="big",
            min_runtime="4h",
            priority=1,
            started=started,
            hosts={host: gpus},
        )

    data = instance(
        hosts=[host(f"h{i}", block=f"b{i // 4}") for i in range(8)],
        budgets={
            "name": "lab",
            "children": [{"name": "big", "share": "60%"}, {"name": "other", "share": "40%"}],
        },
        workloads=[
            run("big-run1", 8, "h0", ago(hours=1)),
            run("big-run2", 4, "h4", ago(hours=1)),
            workload("big-gang", 32, budget="big", min_runtime="4h"),
        ],
    )
    snap = snapshot_of(data)
    plan = solve_checked(snap, "greedy")
    text = " ".join(" ".join(explain(snap, plan, "big-gang").lines()).split())
    assert (
        "big's allocation alone is 38.4 GPUs (its effective allocation x the 64 ready GPUs) and "
        "its running work held 12 allocated GPUs before this round: with its 32 it would be "
        "5.6 GPUs beyond its allocation, so hosts held for it could idle in vain (time slicing "
        "across the window does not pay for them: models/round.md 2.5); after this round's "
        "plan big holds 12 allocated GPUs: big-run1 (8 GPUs, priority 1), big-run2 (4 GPUs, "
        "priority 1)"
    ) in text


def test_explain_counts_what_a_node_is_owed_in_whole_gpus_despite_float_error():
    """t/leaf is owed 0.3 x 0.75 x 120 = 26.999... GPUs in floats: 27. It holds 19, so its
    waiting 8-GPU run is within what it is owed: its own runs are not blamed."""
    from alloc.explain import explain

    def run(id, gpus, on, budget):
        return workload(
            id,
            gpus,
            budget=budget,
            min_runtime="4h",
            priority=1,
            started=ago(hours=1),
            hosts={on: gpus},
        )

    work = [
        run("l0", 8, "h0", "t/leaf"),
        run("l1", 8, "h1", "t/leaf"),
        run("l2", 3, "h2", "t/leaf"),
    ]
    work += [run(f"o{i}", 8, f"h{i}", "o") for i in range(3, 15)]
    work += [workload("w", 8, budget="t/leaf", min_runtime="4h")]
    tree = {
        "name": "lab",
        "children": [
            {
                "name": "t",
                "share": "30%",
                "children": [{"name": "leaf", "share": "75%"}, {"name": "x", "share": "25%"}],
            },
            {"name": "o", "share": "70%"},
        ],
    }
    snap = snapshot_of(
        instance(hosts=[host(f"h{i}") for i in range(15)], budgets=tree, workloads=work)
    )
    text = " ".join(" ".join(explain(snap, solve_checked(snap, "greedy"), "w").lines()).split())
    assert "w: wait" in text
    assert "holds at most" not in text and "more than all" not in text


def test_explain_tells_a_second_gang_of_the_node_that_the_first_goes_first():
    """One reservation per node: a's 32-GPU gang (priority 0, earlier) is reserved for; its
    24-GPU gang of the same priority, submitted later, is told so (and not the reason of a
    third gang that is beyond what a is owed)."""
    from alloc.explain import explain

    data = _example()
    data["workloads"] += [
        {
            "id": "a-gang2",
            "budget": "a",
            "gpus": 24,
            "min_runtime": "4h",
            "submitted": "2026-11-30T08:00:00Z",
        },
        {
            "id": "a-huge",
            "budget": "a",
            "gpus": 40,
            "min_runtime": "4h",
            "priority": 2,
            "submitted": "2026-11-30T06:00:00Z",
        },
    ]
    snap = snapshot_of(data)
    plan = solve_checked(snap, "greedy")
    assert [r.workload for r in plan.reservations] == ["a-gang"]

    def said(wid: str) -> str:
        return " ".join(" ".join(explain(snap, plan, wid).lines()).split())

    assert "a-gang of the same node goes first (one reservation per node" in said("a-gang2")
    assert "a's allocation alone is 32 GPUs" in said("a-huge")
    assert "a's allocation alone" not in said("a-gang2")


def test_gpus_reserved_for_a_gang_are_not_gpus_other_waiting_allocated_work_could_use(solver):
    # Invariant 4 (issue 18, point 3c): b-scavenge (unallocated) idles on h6, reserved for
    # a-gang, while b-next waits: b-next could not start there this round (it would outlast
    # the reservation), so nothing is broken. The same plan without its reservation leaves
    # b-next waiting for GPUs unallocated work holds.
    snap = load_instance(EXAMPLE)
    plan = solve_checked(snap, solver)
    assert plan.decision(WorkloadId("b-scavenge")).hosts == {HostName("h6"): 8}
    assert plan.decision(WorkloadId("b-next")).reason is Reason.RESERVED
    assert validate(snap, replace(plan, reservations=())) == [
        "b-next: waits for 8 GPUs, which it would have on h6, held by unallocated b-scavenge (4)"
    ]


def test_the_plan_file_names_the_gang_that_holds_the_reserved_hosts():
    import json

    from alloc.io import dump_plan

    written = json.loads(dump_plan(solve_checked(load_instance(EXAMPLE), "greedy")))
    assert written["reservations"] == [
        {
            "workload": "a-gang",
            "hosts": ["h0", "h1", "h6", "h7"],
            "ready_at": "2026-11-30T13:00:00Z",
        }
    ]


def test_explain_tells_work_waiting_for_a_reserved_host_which_gang_holds_it_and_why_not_it():
    from alloc.explain import explain

    snap = load_instance(EXAMPLE)
    plan = solve_checked(snap, "greedy")
    why = explain(snap, plan, "b-next").why
    assert why[0] == (
        "hosts that could hold it are reserved for gangs that protected work keeps from starting "
        "(a-gang holds h0, h1, h6, h7 until 2026-11-30T13:00:00Z): allocated work starts there "
        "only as backfill, whose protection ends by then, and its minimum runtime of 2 h from "
        "now would protect it until 2026-11-30T14:00:00Z, after that"
    )
