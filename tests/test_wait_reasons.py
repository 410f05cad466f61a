"""Why allocated work waits, said the same way by the plan, `alloc explain`, `alloc status` and
`alloc queue` (issue 17, a new user's walkthrough): work whose GPUs would take a node on its
budget path beyond that node's entitlement waits `over_allocation` (SPEC: beyond its
entitlement), whatever its leaf's own ratio; `no_room` is for work its nodes are entitled to
run whose GPUs are not there. The headline names the node in the way and says whether it has no
entitlement left or only this workload would take it past; the projected ratios count only
what the round granted; what would have to change lists no condition that already holds.
Every plan is checked against the invariants (`solve_checked`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ago, host, instance, snapshot_of, solve_checked, workload

from alloc.domain import Action, Occupancy, Plan, Reason, Snapshot, WorkloadId
from alloc.explain import explain
from alloc.generate import GeneratorSpec, generate
from alloc.io import load_instance
from alloc.queue import queue_rows as plan_rows
from alloc.solve.context import round_context
from alloc.status import queue_rows

EXAMPLES = Path(__file__).resolve().parents[1] / "instances" / "examples"
PROGRAM_AND_TEAM = {
    "name": "root",
    "children": [
        {
            "name": "p",
            "share": "50%",
            "children": [{"name": "x", "share": "50%"}, {"name": "y", "share": "50%"}],
        },
        {"name": "q", "share": "50%"},
    ],
}


def _program_full() -> Snapshot:
    """3 hosts (24 GPUs). Program p (50%) has teams x and y; y's protected run holds h0. p is
    entitled to 12 GPUs (half of 24; q asks for 16), y to its protected 8, x to the 4 left.
    q is far ahead over the window (ratio 0.99), so p's x-gang (16 GPUs) is first in the
    order: x holds nothing and is behind (ratio 0), so x's own entitlement is no bar (its
    first work may be larger, models/round.md 2.3), but p's is: 8 + 16 > 12. The ready GPUs
    are not what stops it (8 + 16 = 24). Then q-1 (8) is entitled and q-2 (8) is over q's 12.
    Before: x-gang waited `no_room`, because x's own projected ratio was below 1."""
    return snapshot_of(
        instance(
            hosts=[host("h0"), host("h1"), host("h2")],
            budgets=PROGRAM_AND_TEAM,
            usage={"q": 2000},
            workloads=[
                workload("y-run", 8, "p/y", "4h", started=ago(hours=1), hosts={"h0": 8}),
                workload("x-gang", 16, "p/x", "4h"),
                workload("q-1", 8, "q"),
                workload("q-2", 8, "q", submitted=ago(hours=10)),
            ],
        )
    )


def _decisions_and_views_agree(snap: Snapshot, plan: Plan) -> None:
    """Every waiting candidate of the order: `over_allocation` exactly when a node on its path
    is in its way at its turn (a `no_room` over its entitlement was the issue); `alloc status`
    says "over its entitlement" of those and of no other waiting work, and `alloc queue`
    shows the plan's reason."""
    ctx = round_context(snap)
    share = ctx.share
    standing = {r.workload: r for r in queue_rows(ctx, plan)}
    shown = {r.id: r.reason for r in plan_rows(snap, plan, share.ratios, ctx.ranked)}
    for d in plan.decisions:
        if d.action is not Action.WAIT or d.occupancy is not Occupancy.ALLOCATED:
            continue
        over = share.over_entitlement(d.workload)
        assert (d.reason is Reason.OVER_ALLOCATION) == (
            over and d.reason not in (Reason.TOPOLOGY, Reason.RESERVED)
        ), (d, share.shortfalls.get(d.workload))
        assert d.reason is not Reason.NO_ROOM or not over, d
        assert (standing[d.workload].standing == "over its entitlement") == over, d
        assert standing[d.workload].decision == f"wait ({d.reason.value})"
        assert shown[d.workload] is d.reason


def test_work_its_program_has_no_room_for_waits_over_allocation_though_its_team_is_behind(solver):
    snap = _program_full()
    plan = solve_checked(snap, solver)
    d = plan.decision(WorkloadId("x-gang"))
    assert (d.action, d.reason) == (Action.WAIT, Reason.OVER_ALLOCATION)
    _decisions_and_views_agree(snap, plan)
    answer = explain(snap, plan, "x-gang")
    assert answer.headline == (
        "x-gang: wait (over_allocation): p, above its budget node, is within its entitlement "
        "for this round (8 of 12 GPUs), but this workload's 16 GPUs would take it beyond."
    )
    assert answer.why[0] == (
        "fair-share order: 1 of 3 allocated candidates; not entitled this round: p is entitled "
        "to 12 GPUs, of which protected work and the entitled work ranked ahead of it count 8: "
        "the 4 left are fewer than the 16 it needs"
    )


@pytest.mark.parametrize("wid", ["w00021", "w00029", "w00032"])
def test_the_walkthrough_lab_waits_over_allocation_where_a_node_is_in_the_way(wid, solver):
    """`alloc generate --hosts 16` (seed 1): these waited `no_room` while explain said
    "science is entitled to 35 GPUs, of which ... count 28: the 7 left are fewer than the 8 it
    needs" (and `alloc status`: `wait (no_room)  over`)."""
    snap = generate(GeneratorSpec(hosts=16, seed=1))
    plan = solve_checked(snap, solver)
    assert plan.decision(WorkloadId(wid)).reason is Reason.OVER_ALLOCATION
    _decisions_and_views_agree(snap, plan)
    assert "not entitled this round" in explain(snap, plan, wid).why[0]


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_example_waits_for_the_reason_its_views_give(path):
    snap = load_instance(path)
    _decisions_and_views_agree(snap, solve_checked(snap, "greedy"))


# --- the headline: the node in the way, and whether it is beyond or only this work would be ---


@pytest.mark.parametrize(
    ("example", "wid", "says"),
    [
        (
            "fairshare-flat.yaml",
            "b-7",
            "its budget node b has used all its entitlement for this round (6 GPUs)",
        ),
        (
            "fairshare-flat.yaml",
            "a-3",
            "its budget node a has used all its entitlement for this round (2 GPUs)",
        ),
    ],
    ids=["b has used its 6", "a has used its 2 (lowered by b's time slicing)"],
)
def test_the_headline_says_the_node_has_no_entitlement_left(example, wid, says):
    snap = load_instance(EXAMPLES / example)
    plan = solve_checked(snap, "greedy")
    assert explain(snap, plan, wid).headline == f"{wid}: wait (over_allocation): {says}."


def test_the_headline_says_the_node_is_within_its_entitlement_when_only_this_work_would_pass_it():
    """Tutorial 4's j13 was told "its budget node is beyond its entitlement" while vision held
    16 of its 19 GPUs and only j13's 4 would take it past. The same here: 2 hosts (16 GPUs),
    a and b at 50%; b asks for 4 only, so a is entitled to 8 + the 4 b leaves = 12; a's
    protected run holds 8 and a-q (8) would make 16. (b-q takes 4 of h1, so a-q waits.)"""
    snap = snapshot_of(
        instance(
            hosts=[host("h0"), host("h1")],
            workloads=[
                workload("a-run", 8, "a", "4h", started=ago(hours=1), hosts={"h0": 8}),
                workload("a-q", 8, "a"),
                workload("b-q", 4, "b"),
            ],
        )
    )
    plan = solve_checked(snap, "greedy")
    ctx = round_context(snap)
    assert ctx.share.entitlement_gpus["a"] == 12
    d = plan.decision(WorkloadId("a-q"))
    assert (d.action, d.reason) == (Action.WAIT, Reason.OVER_ALLOCATION)
    assert explain(snap, plan, "a-q").headline == (
        "a-q: wait (over_allocation): its budget node a is within its entitlement for this "
        "round (8 of 12 GPUs), but this workload's 8 GPUs would take it beyond."
    )


def test_the_headline_says_when_only_the_ready_gpus_ran_out(solver):
    """gang-after-preemption.yaml: b, far behind, is entitled to its 32-GPU gang by the
    exception for a leaf that holds nothing (models/round.md 2.3), which takes what a could
    still be granted out of the ready GPUs, not out of a's published entitlement (20). So at
    a-1a's turn a counts 8 (a-5, costly to stop) of its 20, and a-1a is cut by the ready GPUs
    alone: the headline must not say a is beyond its entitlement."""
    snap = load_instance(EXAMPLES / "gang-after-preemption.yaml")
    plan = solve_checked(snap, solver)
    assert not round_context(snap).share.over_entitlement(WorkloadId("a-1a"))
    assert explain(snap, plan, "a-1a").headline == (
        "a-1a: preempt (rebalanced): it is past its minimum runtime and the nodes of its budget "
        "path are within their entitlements for this round, but at its turn protected work and "
        "the entitled work ranked ahead of it held 40 of the 40 ready GPUs, too many to leave "
        "it its 4 GPUs, so it yields to work that is entitled."
    )


# --- the projected ratios count only what the round granted ----------------------------------


def test_the_projected_ratios_charge_only_the_work_granted_ahead(solver):
    """2 hosts (16 GPUs), teams a and b at 50%, nothing used: window capacity 16 x 168 =
    2,688 GPU-h, so one 8-GPU grant charged for the 7-day horizon (1,344 GPU-h) is a ratio of
    1.0 for a team (1,344 / (0.5 x 2,688)). The order picks a-1, b-1, a-2, a-3, b-2: a and b
    are each entitled to 8, so a-1 and b-1 are granted and a-2 is not. At a-3's turn a has been
    granted a-1 only: 1.000 (charging a-2 too, as the order's projection does, said 2.000)."""
    snap = snapshot_of(
        instance(
            workloads=[
                workload("a-1", 8, "a", submitted=ago(hours=3)),
                workload("a-2", 8, "a", submitted=ago(hours=2)),
                workload("a-3", 8, "a", submitted=ago(hours=1)),
                workload("b-1", 8, "b"),
            ],
        )
    )
    plan = solve_checked(snap, solver)
    ctx = round_context(snap)
    assert ctx.share.order[:4] == ("a-1", "b-1", "a-2", "a-3")
    assert ctx.share.entitled == {"a-1", "b-1"}
    assert ctx.share.grant_ratios[WorkloadId("a-3")] == (2.0,)  # the order's projection
    lines = explain(snap, plan, "a-3").why
    assert (
        "projected ratios when its turn came (window usage plus, for the 7 d horizon, protected "
        "work and the grants ranked ahead of it; top level first): 1.000"
    ) in lines


# --- what would have to change: no condition that holds already ------------------------------


def test_a_gang_with_hosts_reserved_for_it_is_not_told_to_get_a_reservation(solver):
    """Tutorial 1: reservation.yaml's a-gang has h0, h1, h6 and h7 reserved for it; that was
    listed as a change. It is a fact of the round (its Why); the changes are the room that has
    not freed yet."""
    snap = load_instance(EXAMPLES / "reservation.yaml")
    plan = solve_checked(snap, solver)
    answer = explain(snap, plan, "a-gang")
    assert answer.change == [
        "4 whole free hosts in one block; the best it has now is 1",
        "room of that shape frees at the earliest at 2026-11-30T13:00:00Z, when the protection "
        "of the work there ends (work still entitled then keeps running)",
    ]
    assert answer.why[-1] == (
        "hosts h0, h1, h6, h7 are reserved for it (models/round.md 8): no other allocated work "
        "starts there, and their protected work ends by 2026-11-30T13:00:00Z, when it can start"
    )
