"""`alloc explain`'s "Why" names the real cause of a wait: a workload that waits for room
(`no_room`) is told the shape it needs, the ready hosts that could hold it, what holds them
and what would make room, with numbers; a workload that waits on its node's entitlement is
still told about the fair-share order and the entitlement, and what stood in its way at its
turn (a node's entitlement or the ready GPUs). Every figure of an answer agrees with the
others and with `alloc solve`'s summary (`alloc.summary`), at the moment it names. Every plan
is checked against the invariants (`solve_checked`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ago, host, instance, snapshot_of, solve_checked, workload

from alloc.domain import Action, Plan, Reason, Snapshot, WorkloadId
from alloc.explain import explain
from alloc.io import load_instance
from alloc.solve.context import round_context
from alloc.summary import NodeRow, summarize

EXAMPLES = Path(__file__).resolve().parents[1] / "instances" / "examples"


def why(snapshot: Snapshot, wid: str, solver: str = "greedy") -> list[str]:
    """The Why of `wid`, which must wait with the reason the test is about."""
    plan = solve_checked(snapshot, solver)
    d = plan.decision(WorkloadId(wid))
    assert d.action is Action.WAIT, d
    return explain(snapshot, plan, wid).why


def solved(snapshot: Snapshot, plan: Plan, node: str) -> NodeRow:
    """`node`'s row of `alloc solve`'s Budgets table for this plan."""
    return next(r for r in summarize(round_context(snapshot), plan).nodes if r.path == node)


def test_a_gang_that_protected_work_keeps_out_is_told_about_room_not_entitlement(solver):
    """reservation.yaml: a's 32-GPU gang needs 4 whole hosts of one block; b's protected runs
    hold h0-h5 (ending 12:30, 13:00, ... 15:00), so even with everything else gone only h6
    and h7 are whole: 2 of 4. It is ranked nowhere this round, so a's entitlement (8 GPUs)
    goes to a's two small runs, which is not what keeps the gang waiting."""
    snap = load_instance(EXAMPLES / "reservation.yaml")
    plan = solve_checked(snap, solver)
    assert plan.decision(WorkloadId("a-gang")).reason is Reason.NO_ROOM
    lines = explain(snap, plan, "a-gang").why
    assert lines[:2] == [
        "it needs 4 whole hosts of 8 GPUs in one network block (32 GPUs); 8 ready hosts could "
        "take part, all in one block",
        "the work the contract keeps this round (inside its minimum runtime, or costly to "
        "stop) leaves it no room: with all other work gone, 2 whole hosts in block default "
        "would be free (h6, h7) of the 4 it needs; it has room once that work has ended on 2 "
        "more hosts there",
    ]
    assert lines[2].startswith(
        "what holds them after this round, soonest free first: h6: workload b-scavenge "
        "(8 GPUs, unallocated, yields to allocated work at once); h0: workload b-run0 (8 GPUs, "
        "protected until 2026-11-30T12:30:00Z); h1: workload b-run1 (8 GPUs, protected until "
        "2026-11-30T13:00:00Z)"
    )
    assert lines[2].endswith("; and 1 more host")
    assert lines[3:] == [
        "so it takes no place in this round's fair-share order, and a's entitlement this round "
        "(8 GPUs) counts only the demand of a's work that can start (models/round.md 2.3)",
        "hosts h0, h1, h6, h7 are reserved for it (models/round.md 8): no other allocated work "
        "starts there, and their protected work ends by 2026-11-30T13:00:00Z, when it can start",
    ]
    # Before: the whole Why was "a holds 8 allocated GPUs after this round; its entitlement
    # is 8", as if its team's share kept it waiting.
    assert not any(line.startswith("a holds") for line in lines)


def test_a_small_gang_is_told_how_many_more_hosts_must_free_and_who_holds_them(solver):
    """Four hosts of one block X. a's runs hold h1 (protected until 14:00) and h2 (until
    15:00); b's 24-GPU gang needs 3 whole hosts: h3 and h4 are 2, one more must free."""
    hosts = [host(f"h{i}", block="X") for i in range(1, 5)]
    snap = snapshot_of(
        instance(
            hosts=hosts,
            workloads=[
                workload("a-1", 8, "a", "4h", started=ago(hours=2), hosts={"h1": 8}),
                workload("a-2", 8, "a", "4h", started=ago(hours=1), hosts={"h2": 8}),
                workload("b-gang", 24, "b", "4h"),
            ],
        )
    )
    assert why(snap, "b-gang", solver) == [
        "it needs 3 whole hosts of 8 GPUs in one network block (24 GPUs); 4 ready hosts could "
        "take part, all in one block",
        "the work the contract keeps this round (inside its minimum runtime, or costly to "
        "stop) leaves it no room: with all other work gone, 2 whole hosts in block X would be "
        "free (h3, h4) of the 3 it needs; it has room once that work has ended on 1 more host "
        "there",
        "what holds them after this round, soonest free first: h1: workload a-1 (8 GPUs, "
        "protected until 2026-11-30T14:00:00Z); h2: workload a-2 (8 GPUs, protected until "
        "2026-11-30T15:00:00Z)",
        "so it takes no place in this round's fair-share order, and b's entitlement this round "
        "(0 GPUs) counts only the demand of b's work that can start (models/round.md 2.3)",
    ]


def test_a_gang_in_the_order_is_told_who_took_the_room_and_its_place_in_the_order():
    """One host, two teams of 50%; b used 500 GPU-h of the window, a nothing. Both queue 8
    GPUs: the host fits either beside the (absent) protected work, and a, first in the order,
    takes it. b's run waits for room that exists, so its Why says who took it and then the
    fair-share order and its node's entitlement that decided it."""
    snap = snapshot_of(
        instance(
            hosts=[host("h1")],
            usage={"a": 0, "b": 500},
            workloads=[workload("a-1", 8, "a", "2h"), workload("b-1", 8, "b", "2h")],
        )
    )
    lines = why(snap, "b-1")
    assert lines[:2] == [
        "it needs 8 GPUs on one host; 1 ready host could hold it: h1",
        "beside the work the contract keeps this round there is room of its shape, which this "
        "round's plan gives to other work (its fair-share order is below): h1: workload a-1 "
        "(8 GPUs, protected until 2026-11-30T14:00:00Z)",
    ]
    assert lines[2].startswith("fair-share order: 2 of 2 allocated candidates")
    assert "b holds 0 allocated GPUs after this round; its entitlement is 4" in lines


def test_a_holder_is_named_as_a_workload_so_a_job_id_does_not_read_as_a_count():
    """Slurm's job ids are numbers: `gpu-node1: 1 (8 GPUs, ...)` read like a count of one.
    The same case as above, with a's run named `1` as Slurm would."""
    snap = snapshot_of(
        instance(
            hosts=[host("gpu-node1")],
            usage={"a": 0, "b": 500},
            workloads=[workload("1", 8, "a", "2h"), workload("2", 8, "b", "2h")],
        )
    )
    assert (
        "gpu-node1: workload 1 (8 GPUs, protected until 2026-11-30T14:00:00Z)" in why(snap, "2")[1]
    )


def test_work_waiting_beside_a_reservation_is_named_where_it_can_start():
    """reservation.yaml: b-next waits `reserved`; the change line said "it starts elsewhere",
    right after a sentence about a-gang, so "it" read as either."""
    snap = load_instance(EXAMPLES / "reservation.yaml")
    plan = solve_checked(snap, "greedy")
    assert plan.decision(WorkloadId("b-next")).reason is Reason.RESERVED
    line = next(x for x in explain(snap, plan, "b-next").change if "reserved for" in x)
    assert line.startswith("hosts h0, h1, h6, h7 are reserved for a-gang until it starts")
    assert line.endswith("; b-next can start on other hosts once room of its shape frees on them")


def test_work_whose_gpu_type_has_no_ready_host_is_told_which_hosts_are_down():
    snap = snapshot_of(
        instance(
            hosts=[host("h1", gpu_type="a100"), host("h2", gpu_type="h100", state="unhealthy")],
            workloads=[workload("w", 4, gpu_type="h100")],
        )
    )
    assert why(snap, "w") == ["no host of its GPU type is ready: h2 (unhealthy)"]


def test_work_waiting_on_its_entitlement_keeps_the_entitlement_why(solver):
    """fairshare-flat.yaml: b-7 waits over_allocation: its Why is the fair-share order and
    what b holds against its entitlement, and nothing about room."""
    snap = load_instance(EXAMPLES / "fairshare-flat.yaml")
    plan = solve_checked(snap, solver)
    assert plan.decision(WorkloadId("b-7")).reason is Reason.OVER_ALLOCATION
    lines = explain(snap, plan, "b-7").why
    assert lines == [
        "fair-share order: 10 of 10 allocated candidates; not entitled this round: at its turn "
        "protected work and the entitled work ranked ahead of it held 8 of the 8 ready GPUs, "
        "and the 0 left are fewer than the 1 it needs; and b is entitled to 6 GPUs, of which "
        "they count 6: the 0 left are fewer than the 1 it needs",
        "projected ratios when its turn came (window usage plus, for the 7 d horizon, protected "
        "work and the grants ranked ahead of it; top level first): 2.000",
        "b holds 6 allocated GPUs after this round; its entitlement is 6",
    ]


def test_a_single_host_run_that_protected_work_keeps_out_is_told_about_room_too():
    """protection.yaml: b-train needs the one host, whose protected a-train runs to 15:00."""
    lines = why(load_instance(EXAMPLES / "protection.yaml"), "b-train")
    assert lines == [
        "it needs 8 GPUs on one host; 1 ready host could hold it: h1",
        "the work the contract keeps this round (inside its minimum runtime, or costly to "
        "stop) leaves it no room: with all other work gone, the most free on one of those "
        "hosts would be 0 of its 8 GPUs; it has room once enough of that work ends on one of "
        "them",
        "what holds them after this round, soonest free first: h1: workload a-train (8 GPUs, "
        "protected until 2026-11-30T15:00:00Z)",
        "so it takes no place in this round's fair-share order, and b's entitlement this round "
        "(0 GPUs) counts only the demand of b's work that can start (models/round.md 2.3)",
    ]


def test_a_figure_from_before_the_round_says_so_and_gives_the_one_after_it_as_solve_does(solver):
    """Issue: "robotics holds 52 allocated GPUs" where `alloc solve` printed 38 (52 counted a
    run this round preempts). 8 hosts of one block; a (50%) is ahead over the window and runs
    a-old, 40 GPUs past its protection; b's two queued runs are entitled, so the round preempts
    a-old (rebalanced). a's 40-GPU gang waits, and no hosts are held back for it: a held 40
    before the round and 0 after it, solve's "held"."""
    snap = snapshot_of(
        instance(
            hosts=[host(f"h{i}", block="X") for i in range(8)],
            usage={"a": 6000, "b": 0},
            workloads=[
                workload("b-run0", 8, "b", "4h", started=ago(hours=1), hosts={"h0": 8}),
                workload("b-run1", 8, "b", "4h", started=ago(hours=1), hosts={"h1": 8}),
                workload(
                    "a-old", 40, "a", started=ago(hours=5), hosts={f"h{i}": 8 for i in range(2, 7)}
                ),
                workload("b-q1", 8, "b"),
                workload("b-q2", 8, "b"),
                workload("a-gang", 40, "a", "4h"),
            ],
        )
    )
    plan = solve_checked(snap, solver)
    assert plan.decision(WorkloadId("a-old")).reason is Reason.REBALANCED
    held = solved(snap, plan, "a").assigned_gpus
    assert held == 0
    answer = explain(snap, plan, "a-gang")
    assert f"a holds {held} allocated GPUs after this round; its entitlement is 32" in answer.why
    (line,) = [c for c in answer.change if c.startswith("no hosts are held back")]
    assert "its running work held 40 allocated GPUs before this round" in line
    assert line.endswith(f"; after this round's plan a holds {held} allocated GPUs")


def test_work_passed_over_for_its_node_is_told_so_not_that_the_capacity_ran_out(solver):
    """Issue: "7 of 23 allocated candidates; beyond the ready capacity" while 13 workloads
    ranked after it started `under_allocation`. 4 hosts; a (ratio 1.0 over the window, 2.0
    with its protected run) is ranked before b (2.2), but a's protected 16 GPUs fill its
    entitlement of 16: a-q is first in the order and waits, and b's two runs ranked after it
    start. The Why names a's entitlement (solve's "entitled") and never the ready capacity."""
    snap = snapshot_of(
        instance(
            hosts=[host(f"h{i}") for i in range(4)],
            usage={"a": 2700, "b": 6000},
            workloads=[
                workload("a-run", 16, "a", "4h", started=ago(hours=1), hosts={"h0": 8, "h1": 8}),
                workload("a-q", 8, "a"),
                workload("b-q1", 8, "b"),
                workload("b-q2", 8, "b"),
            ],
        )
    )
    plan = solve_checked(snap, solver)
    assert plan.decision(WorkloadId("a-q")).action is Action.WAIT
    later = [w for w in ("b-q1", "b-q2") if plan.decision(WorkloadId(w)).action is Action.START]
    assert later == ["b-q1", "b-q2"]
    assert {plan.decision(WorkloadId(w)).reason for w in later} == {Reason.UNDER_ALLOCATION}
    entitled = solved(snap, plan, "a").entitled_gpus
    lines = explain(snap, plan, "a-q").why
    assert lines[0] == (
        "fair-share order: 1 of 3 allocated candidates; not entitled this round: a is entitled "
        f"to {entitled} GPUs, of which protected work and the entitled work ranked ahead of it "
        "count 16: the 0 left are fewer than the 8 it needs"
    )
    assert not any("capacity" in line or "ready GPUs" in line for line in lines)


def test_work_the_ready_gpus_left_over_cannot_hold_is_told_the_smaller_work_after_it_fits():
    """Two hosts, one team. a-run (protected) holds 6 GPUs; a-8, a-4 and a-2 queue in that
    order. a-8 is entitled (14 of 16 GPUs counted); a-4 finds 2 left of the ready GPUs and of
    a's entitlement, and a-2, ranked after it, fits them and starts: the Why says both, with
    the numbers of a-4's turn, and that smaller work after it fits."""
    snap = snapshot_of(
        instance(
            hosts=[host("h0"), host("h1")],
            budgets={"name": "root", "children": [{"name": "a", "share": "100%"}]},
            workloads=[
                workload("a-run", 6, "a", "4h", started=ago(hours=1), hosts={"h0": 6}),
                workload("a-8", 8, "a", submitted=ago(hours=5)),
                workload("a-4", 4, "a", submitted=ago(hours=4)),
                workload("a-2", 2, "a", submitted=ago(hours=3)),
            ],
        )
    )
    plan = solve_checked(snap, "greedy")
    assert plan.decision(WorkloadId("a-2")).reason is Reason.UNDER_ALLOCATION
    assert solved(snap, plan, "a").entitled_gpus == 16
    (line,) = [w for w in why(snap, "a-4") if w.startswith("fair-share order")]
    assert line == (
        "fair-share order: 2 of 3 allocated candidates; not entitled this round: at its turn "
        "protected work and the entitled work ranked ahead of it held 14 of the 16 ready GPUs, "
        "and the 2 left are fewer than the 4 it needs (1 smaller workload ranked after it fits "
        "in them, entitled); and a is entitled to 16 GPUs, of which they count 14: the 2 left "
        "are fewer than the 4 it needs"
    )


def test_one_rounding_rule_for_gpu_figures_across_an_answer():
    """Issue: "entitled to 19 GPUs (its allocation alone: 13)" then "vision is owed 12 GPUs",
    where 40% of 32 GPUs is 12.8. vision's 24-GPU gang waits for room protected work holds,
    and no hosts are held back for it: every line that names vision's allocation alone says
    12.8 GPUs, and what is beyond it 24 - 12.8 = 11.2."""
    snap = snapshot_of(
        instance(
            hosts=[host(f"h{i}", block="X") for i in range(4)],
            budgets={
                "name": "root",
                "children": [
                    {"name": "vision", "share": "40%"},
                    {"name": "other", "share": "60%"},
                ],
            },
            workloads=[
                workload(
                    "o-run", 16, "other", "4h", started=ago(hours=1), hosts={"h0": 8, "h1": 8}
                ),
                workload("v-gang", 24, "vision", "4h"),
            ],
        )
    )
    plan = solve_checked(snap)
    assert solved(snap, plan, "vision").owed_gpus == pytest.approx(12.8)
    text = "\n".join(explain(snap, plan, "v-gang").lines())
    assert "entitled to 0 GPUs this round (its allocation alone: 12.8 GPUs)" in text
    assert "vision's allocation alone is 12.8 GPUs" in text
    assert "it would be 11.2 GPUs beyond its allocation" in text
    assert "13 GPUs" not in text and "12 GPUs" not in text and "owed" not in text


def test_a_start_beyond_its_entitlement_says_why_it_may_start_and_that_it_is_protected():
    """Issue: a start `over_allocation` got the wait's words ("its budget node is beyond its
    entitlement"). Two hosts; b's protected run holds 6 GPUs of h0 and b's 8-GPU run finds no
    room; a-1 (entitled) takes h1 and a-2, beyond a's 8, starts on the 2 GPUs left, which no
    entitled waiting work can use. As allocated work (SPEC 3) it is charged and protected for
    its minimum runtime: the plan says so (protected_until), and so does the answer."""
    snap = snapshot_of(
        instance(
            hosts=[host("h0"), host("h1")],
            workloads=[
                workload("b-run", 6, "b", "4h", started=ago(hours=1), hosts={"h0": 6}),
                workload("b-q", 8, "b"),
                workload("a-1", 8, "a"),
                workload("a-2", 2, "a"),
            ],
        )
    )
    plan = solve_checked(snap, "greedy")
    d = plan.decision(WorkloadId("a-2"))
    assert (d.action, d.reason) == (Action.START, Reason.OVER_ALLOCATION)
    assert d.protected_until is not None
    answer = explain(snap, plan, "a-2")
    assert answer.headline == (
        "a-2: start on h0:2 (over_allocation): its budget node a has used all its entitlement "
        "for this round (8 GPUs), and it may start all the same because no entitled waiting "
        "work can use these GPUs; it runs as allocated work: charged to its budget and "
        "protected for its minimum runtime, after which entitled work that needs the GPUs "
        "rebalances it."
    )
    assert "protected until 2026-11-30T14:00:00Z" in answer.facts
    held = solved(snap, plan, "a").assigned_gpus
    assert f"a holds {held} allocated GPUs after this round; its entitlement is 8" in answer.why
