"""Entitlements kept along the whole path (issue 15, decision 5; models/round.md 2.4): a start
or keep is `under_allocation` only within entitlement at every level, entitlements are whole
GPUs, and a team's work cannot take what its program's other teams are entitled to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import SOLVERS, TWO_PROGRAMS, actions, ago, host, instance, snapshot_of, workload
from hypothesis import given
from test_properties import PROPERTY, instances

from alloc.domain import Action, Occupancy, Plan, Reason, Snapshot, path_prefixes
from alloc.io import load_instance
from alloc.policy.entitlement import whole_gpus
from alloc.round import RoundOptions, solve_round
from alloc.solve.across import entitlement_problems
from alloc.solve.validate import validate

HOSTS = [host(f"h{i}") for i in range(1, 5)]  # 32 GPUs
# a has used more than its share over the window (ratio above 1: no time slicing for it); q is
# further behind than p, so its work goes first.
USAGE = {"p/a": 2000.0, "p/b": 0.0, "q/c": 1000.0}


def held_after(snapshot: Snapshot, plan: Plan) -> dict[str, int]:
    """Allocated GPUs each budget node (subtree) holds once the plan is carried out."""
    out: dict[str, int] = {}
    for d in plan.decisions:
        w = snapshot.by_id[d.workload]
        if d.occupancy is Occupancy.ALLOCATED and d.action in (Action.START, Action.KEEP):
            for p in path_prefixes(w.budget or ""):
                out[p] = out.get(p, 0) + w.gpus
    return out


def checked(data: dict[str, Any], solver: str):
    snapshot = snapshot_of(data)
    result = solve_round(snapshot, RoundOptions(solver=solver))
    plan = result.plan
    assert validate(snapshot, plan) == []
    assert entitlement_problems(snapshot, plan, result.context.share.entitlement_gpus) == []
    return snapshot, result


@pytest.mark.parametrize("solver", SOLVERS)
def test_rebalancing_inside_a_node_below_its_entitlement_still_happens(solver):
    # The same p, but q holds its 16 with protected work and queues nothing: b's B1 (entitled,
    # 8 of b's 8) takes A1's place, a sibling in the same program that does not end above its
    # own entitlement. A1 is rebalanced.
    jobs = [
        workload("A1", 16, "p/a", hosts={"h1": 8, "h2": 8}, started=ago(hours=10)),
        workload("C1", 8, "q/c", hosts={"h3": 8}, started=ago(hours=1)),
        workload("C4", 8, "q/c", hosts={"h4": 8}, started=ago(hours=1)),
        workload("B1", 8, "p/b"),
    ]
    _, result = checked(
        instance(hosts=HOSTS, budgets=TWO_PROGRAMS, usage=USAGE, workloads=jobs), solver
    )
    plan = result.plan
    assert actions(plan)["A1"] == "preempt" and actions(plan)["B1"] == "start"
    assert plan.decision("A1").reason is Reason.REBALANCED


@pytest.mark.parametrize("solver", SOLVERS)
def test_a_time_sliced_gang_stays_within_its_programs_entitlement(solver):
    # b has no work, so p's 16 GPUs are all a's; a is behind over the window and holds
    # nothing, so its 24-GPU gang G may be entitled beyond a's own 16 (time slicing), but not
    # beyond p's 16: q's C1 and C2 (entitled, 8 + 8 of q's 16) start, and G, over its
    # entitlement, waits (the 16 GPUs left do not hold it). Before the whole-path rule G was
    # entitled and p counted 24 GPUs of entitled work against its 16.
    jobs = [
        workload("G", 24, "p/a"),
        workload("C1", 8, "q/c"),
        workload("C2", 8, "q/c"),
    ]
    data = instance(hosts=HOSTS, budgets=TWO_PROGRAMS, usage={"p/a": 10.0}, workloads=jobs)
    snapshot, result = checked(data, solver)
    share = result.context.share
    assert share.entitlement_gpus["p"] == 16 and share.entitlement_gpus["q"] == 16
    assert "G" not in share.entitled
    plan = result.plan
    assert actions(plan) == {"G": "wait", "C1": "start", "C2": "start"}
    assert held_after(snapshot, plan)["q"] == 16


def test_entitlements_are_whole_gpus_within_the_parents():
    # 0.6 / 0.4 of one GPU: the whole GPU goes to the larger fraction; 12.5 + 12.5 of 25 give
    # 13 + 12 (the lower ratio first at a tie), never beyond a child's demand.
    assert whole_gpus(1.0, [0.6, 0.4], [5.0, 5.0], [0.0, 0.0]) == [1.0, 0.0]
    assert whole_gpus(25.0, [12.5, 12.5], [20.0, 20.0], [0.9, 0.3]) == [12.0, 13.0]
    assert whole_gpus(25.0, [12.5, 12.5], [12.0, 20.0], [0.3, 0.9]) == [12.0, 13.0]


@PROPERTY
@given(data=instances())
def test_every_full_round_keeps_entitlements_along_the_whole_path(data):
    # Random trees of 1-3 levels, clusters and workloads (test_properties.instances): both
    # solvers' plans keep both rules of models/round.md 2.4 with the round's entitlements.
    snapshot = snapshot_of(data)
    for solver in SOLVERS:
        result = solve_round(snapshot, RoundOptions(solver=solver))
        entitlement = result.context.share.entitlement_gpus
        assert entitlement_problems(snapshot, result.plan, entitlement) == []


@pytest.mark.parametrize("solver", SOLVERS)
def test_the_bundled_lab_round_keeps_entitlements_along_the_whole_path(solver):
    # instances/lab-1024.yaml (issue 15): robotics/team1 held 74 GPUs as entitled work against
    # its 64 (a researcher's time-sliced gang took what its program's other teams were owed).
    snapshot = load_instance(Path(__file__).parent.parent / "instances" / "lab-1024.yaml")
    result = solve_round(snapshot, RoundOptions(solver=solver))
    plan, entitlement = result.plan, result.context.share.entitlement_gpus
    assert validate(snapshot, plan) == []
    assert entitlement_problems(snapshot, plan, entitlement) == []
    entitled = sum(
        snapshot.by_id[d.workload].gpus
        for d in plan.decisions
        if d.reason is Reason.UNDER_ALLOCATION
        and (snapshot.by_id[d.workload].budget or "").startswith("robotics/team1/")
    )
    assert entitled <= entitlement["robotics/team1"]
