"""Event passes (models/round.md, section 9): between full rounds, a pass starts queued work on
free GPUs and on GPUs unallocated work holds, in the last full round's order, and never
rebalances allocated work.

Each scenario is one full round, then something happens (an arrival, a completion), then both
an event pass and a full round decide the new situation. Where a pass may act, the two agree
(derived by hand in each comment); where it may not (rebalancing), they differ as documented.
Every pass is checked on its own decisions and, whole, from scratch (`validate_whole`).

Unless a test says otherwise: hosts of 8 GPUs, teams a and b with 50% each, no usage.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import NOW, ago, host, instance, snapshot_of, solve_checked, workload

from alloc.domain import Action, Plan, Reason, Snapshot
from alloc.round import RoundOptions
from alloc.rounds import Rounds
from alloc.solve.validate import validate


def after(data: dict[str, Any], plan: Plan) -> dict[str, Any]:
    """The instance once `plan` is carried out (starts run from now, preempted work waits)."""
    out = {**data, "workloads": []}
    for w in data["workloads"]:
        d = plan.decision(w["id"])
        w = dict(w)
        if d.action is Action.START:
            w["started"] = data["now"]
            w["hosts"] = dict(d.hosts)
        elif d.action is Action.PREEMPT:
            w.pop("started", None)
            w.pop("hosts", None)
        out["workloads"].append(w)
    return out


def two_ways(before: dict[str, Any], change, solver: str) -> tuple[Plan, Plan, Snapshot]:
    """A full round on `before`; then `change` (a function of the instance once that round's
    plan is carried out) happens. Returns the event pass's plan (whole), a full round's plan on
    the new instance, and the new snapshot."""
    rounds = Rounds(RoundOptions(solver=solver), validate_whole=True)
    first = rounds.full(snapshot_of(before)).plan
    now = change(after(before, first))
    snapshot = snapshot_of(now)
    rounds.sync_snapshot(snapshot)
    delta = rounds.event(snapshot.now, snapshot)
    assert delta.kind == "event"
    whole = rounds.whole(delta, snapshot)
    assert validate(snapshot, whole, due=tuple(rounds.state.reservations)) == []
    return whole, solve_checked(snapshot, solver), snapshot


def decisions(plan: Plan) -> dict[str, tuple[str, dict[str, int]]]:
    return {d.workload: (d.action.value, dict(d.hosts)) for d in plan.decisions}


def arrive(*workloads: dict[str, Any]):
    def change(data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "workloads": [*data["workloads"], *workloads]}

    return change


def complete(*ids: str):
    def change(data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "workloads": [w for w in data["workloads"] if w["id"] not in ids]}

    return change


def test_an_arrival_starts_on_free_gpus_where_a_full_round_would_put_it(solver):
    # h1 holds b's 6-GPU run (2 free), h2 is empty. q (team a, 2 GPUs) arrives: best fit puts
    # it on h1's 2 free GPUs, in a pass and in a full round alike.
    before = instance(
        workloads=[workload("r", 6, "b", "4h", hosts={"h1": 6}, started=ago(hours=1))]
    )
    ev, full, _ = two_ways(before, arrive(workload("q", 2, "a", submitted=NOW.isoformat())), solver)
    assert decisions(ev)["q"] == decisions(full)["q"] == ("start", {"h1": 2})
    assert ev.decision("q").reason is Reason.UNDER_ALLOCATION


def test_an_allocated_arrival_displaces_unallocated_fill_at_once(solver):
    # Both hosts are full of unallocated work (u1, u2: minimum runtime 0). q (team a, 8 GPUs)
    # arrives: invariant 4, it displaces one of them. Which one: the cheapest victim (equal
    # here: the full round's choice and the pass's are both u1 on h1, the first host).
    before = instance(
        workloads=[
            workload("u1", 8, "a", "0", hosts={"h1": 8}, started=ago(hours=1)),
            workload("u2", 8, "b", "0", hosts={"h2": 8}, started=ago(hours=1)),
        ]
    )
    ev, full, _ = two_ways(before, arrive(workload("q", 8, "a", submitted=NOW.isoformat())), solver)
    assert decisions(ev)["q"][0] == decisions(full)["q"][0] == "start"
    victims_ev = {w for w, (a, _) in decisions(ev).items() if a == "preempt"}
    victims_full = {w for w, (a, _) in decisions(full).items() if a == "preempt"}
    assert len(victims_ev) == len(victims_full) == 1
    assert ev.decision(victims_ev.pop()).reason is Reason.UNALLOCATED_DISPLACED


def test_a_completion_frees_room_for_the_first_waiting_workload_in_fair_share_order(solver):
    # Both hosts busy with protected work; queued: b1 (team b) and a1 (team a), 8 GPUs each.
    # b has used more of its share over the window (usage), so a1 is first in the order.
    # r (h1) completes: in a pass as in a full round, a1 takes h1 and b1 waits.
    before = instance(
        workloads=[
            workload("r", 8, "b", "4h", hosts={"h1": 8}, started=ago(hours=1)),
            workload("s", 8, "b", "4h", hosts={"h2": 8}, started=ago(hours=1)),
            workload("b1", 8, "b", submitted=ago(hours=3)),
            workload("a1", 8, "a", submitted=ago(hours=2)),
        ],
        usage={"a": 10.0, "b": 500.0},
    )
    ev, full, _ = two_ways(before, complete("r"), solver)
    assert decisions(ev)["a1"] == decisions(full)["a1"] == ("start", {"h1": 8})
    assert decisions(ev)["b1"][0] == decisions(full)["b1"][0] == "wait"


def test_a_pass_never_rebalances_allocated_work_the_next_full_round_does(solver):
    # Three hosts (24 GPUs, 12 owed to each team). b runs v and w (4 GPUs each, past their
    # protection) on h1, z (8) and y (4) protected on h2 and h3. a's 8-GPU q and q2 arrive:
    # a is entitled to 12 (its share), b's 12 are z and y, so v and w are over b's
    # entitlement; no host has 8 free. A full round rebalances v and w and starts q on h1; a
    # pass may not preempt allocated work, so q waits for the next full round (round.md 9.3).
    hosts = [host("h1"), host("h2"), host("h3")]
    before = instance(
        hosts=hosts,
        workloads=[
            workload("v", 4, "b", "1m", hosts={"h1": 4}, started=ago(hours=1)),
            workload("w", 4, "b", "1m", hosts={"h1": 4}, started=ago(hours=1)),
            workload("z", 8, "b", "4h", hosts={"h2": 8}, started=ago(minutes=10)),
            workload("y", 4, "b", "4h", hosts={"h3": 4}, started=ago(minutes=10)),
        ],
    )
    q = [workload(q, 8, "a", submitted=NOW.isoformat()) for q in ("q", "q2")]
    ev, full, _ = two_ways(before, arrive(*q), solver)
    assert decisions(full)["q"] == ("start", {"h1": 8})
    assert {full.decision(v).reason for v in ("v", "w")} == {Reason.REBALANCED}
    assert decisions(ev)["q"][0] == "wait"
    assert decisions(ev)["v"][0] == decisions(ev)["w"][0] == "keep"


def test_a_start_yields_to_a_waiting_higher_priority_workload_of_its_node(solver):
    # a runs x (4 GPUs) on h2; h1 holds b's r (4 GPUs, protected) beside 4 free GPUs, and b's
    # s fills h2's other 4. Queued: a's hi (8 GPUs, priority 5) and lo (4 GPUs, priority 0).
    # a is entitled to 8: x and lo fit in it, hi does not (4 + 8 > 8), so lo comes first in
    # the order. r completes: lo would take 4 of h1's 8 free GPUs, but hi (higher priority,
    # same node) fits in that place: invariant 6, hi starts on h1 and lo waits. Both agree.
    before = instance(
        workloads=[
            workload("r", 4, "b", "4h", hosts={"h1": 4}, started=ago(hours=1)),
            workload("x", 4, "a", "4h", hosts={"h2": 4}, started=ago(hours=1)),
            workload("s", 4, "b", "4h", hosts={"h2": 4}, started=ago(hours=1)),
            workload("hi", 8, "a", priority=5, submitted=ago(hours=2)),
        ],
    )

    def change(data: dict[str, Any]) -> dict[str, Any]:
        data = complete("r")(data)
        return arrive(workload("lo", 4, "a", submitted=NOW.isoformat()))(data)

    ev, full, _ = two_ways(before, change, solver)
    assert decisions(ev)["hi"] == decisions(full)["hi"] == ("start", {"h1": 8})
    assert decisions(ev)["lo"][0] == decisions(full)["lo"][0] == "wait"


def test_a_pass_honours_the_last_full_rounds_reservations(solver):
    # The hand-derived reservation example: a-gang (team a, 32 GPUs, one block of four 8-GPU
    # hosts) is blocked by protected work; the full round reserves h0, h1, h6, h7. A 1-GPU run
    # of team a arriving afterwards must not start on them; free GPUs elsewhere: none.
    from pathlib import Path

    import yaml

    example = Path(__file__).parent.parent / "instances" / "examples" / "reservation.yaml"
    before = yaml.safe_load(example.read_text())
    rounds = Rounds(RoundOptions(solver=solver), validate_whole=True)
    first = rounds.full(snapshot_of(before)).plan
    assert first.reservations
    reserved = set(first.reservations[0].hosts)
    data = arrive(workload("tiny", 1, "b", submitted=before["now"]))(after(before, first))
    snapshot = snapshot_of(data)
    rounds.sync_snapshot(snapshot)
    plan = rounds.whole(rounds.event(snapshot.now, snapshot), snapshot)
    d = plan.decision("tiny")
    assert d.action is Action.WAIT or not (set(d.hosts) & reserved)
    assert plan.reservations == first.reservations


def test_a_pass_lists_a_draining_host_its_last_work_left():
    # h1 is unhealthy: r (protected) keeps running there until it ends. When r completes the
    # pass lists h1 as drained, as a full round would.
    before = instance(
        hosts=[host("h1", state="unhealthy"), host("h2")],
        workloads=[workload("r", 8, "a", "4h", hosts={"h1": 8}, started=ago(hours=1))],
    )
    ev, full, _ = two_ways(before, complete("r"), "greedy")
    assert ev.drained_hosts == full.drained_hosts == ("h1",)


def test_a_pass_lists_only_what_it_changes():
    # One arrival on a free host: the pass's own plan has that one start and nothing else.
    rounds = Rounds(RoundOptions(solver="greedy"))
    before = instance(
        workloads=[workload("r", 8, "b", "4h", hosts={"h1": 8}, started=ago(hours=1))]
    )
    rounds.full(snapshot_of(before))
    snapshot = snapshot_of(arrive(workload("q", 8, "a", submitted=NOW.isoformat()))(before))
    rounds.sync_snapshot(snapshot)
    plan = rounds.event(snapshot.now)
    assert [(d.workload, d.action.value) for d in plan.decisions] == [("q", "start")]
    assert plan.kind == "event"
    assert plan.report.status == "event"


@pytest.mark.parametrize("option", ["rounds", "validate_passes"])
def test_a_bad_round_option_is_refused(option):
    from alloc.sim.engine import SimConfig

    if option == "rounds":
        with pytest.raises(ValueError, match="rounds"):
            SimConfig(rounds="sometimes")
    else:
        assert SimConfig(validate_passes=True).validate_passes


def test_a_gang_starts_in_a_pass_on_the_hosts_reserved_for_it(solver):
    # The reservation example without team a's small runs: the round reserves h0, h1, h6, h7
    # for a-gang (32 GPUs, all a is owed). Then b-run0 and b-run1 end early (h0, h1 free): the
    # gang fits its own reservation, with h6's unallocated b-scavenge displaced (invariant 4).
    # A pass starts it there, as a full round would, and its reservation lapses with the start.
    from pathlib import Path

    import yaml

    example = Path(__file__).parent.parent / "instances" / "examples" / "reservation.yaml"
    before = yaml.safe_load(example.read_text())
    before["workloads"] = [w for w in before["workloads"] if w["id"] not in ("a-later", "a-debug")]
    ev, full, _ = two_ways(before, complete("b-run0", "b-run1"), solver)
    hosts = {"h0": 8, "h1": 8, "h6": 8, "h7": 8}
    assert decisions(ev)["a-gang"] == decisions(full)["a-gang"] == ("start", hosts)
    assert decisions(ev)["b-scavenge"][0] == decisions(full)["b-scavenge"][0] == "preempt"
    assert ev.reservations == ()


def test_the_rest_of_a_lapsed_reservation_is_free_to_all_in_the_same_pass(solver):
    # The reservation example without team a's small runs: h0, h1, h6, h7 are reserved for
    # a-gang. b-run2..b-run5 end: the gang fits on h2-h5 and starts there; its reservation
    # lapses with the start, so h7 (free) and h6 (unallocated fill) are no longer held for
    # anyone: b-next (8 GPUs) may start there in the same pass (invariant 4 would be broken
    # if it waited while b-scavenge held h6). Validated whole in `two_ways`.
    from pathlib import Path

    import yaml

    example = Path(__file__).parent.parent / "instances" / "examples" / "reservation.yaml"
    before = yaml.safe_load(example.read_text())
    before["workloads"] = [w for w in before["workloads"] if w["id"] not in ("a-later", "a-debug")]
    ev, _, _ = two_ways(before, complete("b-run2", "b-run3", "b-run4", "b-run5"), solver)
    assert decisions(ev)["a-gang"][0] == "start"
    assert decisions(ev)["b-next"][0] == "start"
    assert ev.reservations == ()


def test_work_a_pass_displaces_is_looked_at_by_the_next_pass():
    # h1 runs p (team b, 4 GPUs, protected) beside 4 free GPUs; h2 runs u1 and u2 (unallocated,
    # 4 each). q (team a, 8 GPUs) arrives: the pass starts it on h2 and preempts u1 and u2.
    # Requeued, either fits h1's 4 free GPUs: the next pass (on any event) starts one there.
    rounds = Rounds(RoundOptions(solver="greedy"), validate_whole=True)
    before = instance(
        workloads=[
            workload("p", 4, "b", "4h", hosts={"h1": 4}, started=ago(hours=1)),
            workload("u1", 4, "b", "0", hosts={"h2": 4}, started=ago(hours=1)),
            workload("u2", 4, "b", "0", hosts={"h2": 4}, started=ago(hours=1)),
        ]
    )
    first = rounds.full(snapshot_of(before)).plan
    data = arrive(workload("q", 8, "a", submitted=NOW.isoformat()))(after(before, first))
    snapshot = snapshot_of(data)
    rounds.sync_snapshot(snapshot)
    one = rounds.event(snapshot.now, snapshot)
    assert {d.workload: d.action.value for d in one.decisions} == {
        "q": "start",
        "u1": "preempt",
        "u2": "preempt",
    }
    data = after(data, rounds.whole(one, snapshot))
    snapshot = snapshot_of(data)
    rounds.sync_snapshot(snapshot)
    two = rounds.event(snapshot.now, snapshot)
    assert [(d.workload, d.action.value, dict(d.hosts)) for d in two.decisions] == [
        ("u1", "start", {"h1": 4})
    ]


def test_no_pass_follows_once_protection_on_a_draining_host_has_ended():
    # h1 is unhealthy; r (protected until 1 h from now) keeps running there. Until then passes
    # may follow the full round; after it the contract preempts r (host_draining), which only
    # a full round does, so the state no longer fits a snapshot of that time.
    from datetime import timedelta

    before = instance(
        hosts=[host("h1", state="unhealthy"), host("h2")],
        workloads=[workload("r", 8, "a", "2h", hosts={"h1": 8}, started=ago(hours=1))],
    )
    rounds = Rounds(RoundOptions(solver="greedy"))
    rounds.full(snapshot_of(before))
    assert rounds.fits_snapshot(snapshot_of(before))
    later = dict(before, now=(NOW + timedelta(hours=1, minutes=1)).isoformat())
    assert not rounds.fits_snapshot(snapshot_of(later))


def test_arrived_work_a_pass_leaves_waiting_gets_the_reason_a_full_round_gives(solver):
    # b runs r (8 GPUs, protected) on h1: all it is entitled to. qa (team a) and qb (team b),
    # 8 GPUs each, arrive; h2 holds one of them. qa is entitled and starts; qb's GPUs would
    # take b beyond its entitlement: it waits `over_allocation`, in a pass as in a full round
    # (not `no_room`, which says it is entitled and the GPUs are not there).
    before = instance(
        workloads=[workload("r", 8, "b", "4h", hosts={"h1": 8}, started=ago(hours=1))]
    )
    new = [workload(w, 8, t, submitted=NOW.isoformat()) for w, t in (("qa", "a"), ("qb", "b"))]
    ev, full, _ = two_ways(before, arrive(*new), solver)
    assert decisions(ev)["qa"] == decisions(full)["qa"] == ("start", {"h2": 8})
    assert ev.decision("qb").action is full.decision("qb").action is Action.WAIT
    assert ev.decision("qb").reason is full.decision("qb").reason is Reason.OVER_ALLOCATION
