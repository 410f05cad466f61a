"""A budget node whose effective allocation is 0 is unfunded (SPEC invariant 5; issue 18, point
3a): work charged to it is never protected and never charged, in the round, in the simulator's
ledger and in what explain and status say, and the checker rejects a plan that protects it,
charges it or gives it a reason of protected work. Here the 0 comes from above: program p has
a share of 0%, its team z 100% of that."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from conftest import ago, host, instance, snapshot_of, solve_checked, workload

from alloc.domain import Action, BudgetPath, Occupancy, Reason, TraceJob, WorkloadId
from alloc.explain import explain
from alloc.ledger import MemoryStore
from alloc.policy.contract import allocated_in, unfunded_because
from alloc.round import RoundOptions, solve_round
from alloc.sim.engine import SimConfig, Simulation
from alloc.sim.policies import planner
from alloc.solve.validate import validate
from alloc.status import queue_rows

ZERO_PROGRAM: dict[str, Any] = {
    "name": "root",
    "children": [
        {"name": "a", "share": "100%"},
        {"name": "p", "share": "0%", "children": [{"name": "z", "share": "100%"}]},
    ],
}
# z's run started 30 minutes ago with a minimum runtime of 2 h: it would be protected if funded.
Z_RUN = workload("z-run", 8, budget="p/z", hosts={"h1": 8}, started=ago(minutes=30))


def lab(*work: dict[str, Any], hosts: int = 1, usage: float = 5.0) -> Any:
    return snapshot_of(
        instance(
            hosts=[host(f"h{i}") for i in range(1, hosts + 1)],
            budgets=ZERO_PROGRAM,
            usage={"p/z": usage},
            workloads=list(work),
        )
    )


def test_a_node_under_a_zero_share_is_unfunded_and_says_which_node_has_the_zero():
    snap = lab(Z_RUN)
    z = snap.by_id[WorkloadId("z-run")]
    assert not allocated_in(snap.budgets, z)
    assert unfunded_because(snap.budgets, z) == (
        "its budget p/z has an effective allocation of 0: p has a share of 0% of its parent"
    )


def test_unfunded_work_inside_its_minimum_runtime_yields_to_allocated_work(solver):
    # One host: a's queued run needs it. z-run would be protected for 1 h 30 min more if p
    # had a share; with none it is unallocated and displaced at once.
    plan = solve_checked(lab(Z_RUN, workload("a-run", 8, budget="a")), solver)
    z = plan.decision(WorkloadId("z-run"))
    assert (z.action, z.occupancy, z.reason) == (
        Action.PREEMPT,
        Occupancy.UNALLOCATED,
        Reason.UNALLOCATED_DISPLACED,
    )
    assert plan.decision(WorkloadId("a-run")).action is Action.START


def test_unfunded_work_nobody_needs_runs_unprotected_under_its_own_reason(solver):
    plan = solve_checked(lab(Z_RUN, workload("z-next", 8, budget="p/z"), hosts=2), solver)
    for wid, action in (("z-run", Action.KEEP), ("z-next", Action.START)):
        d = plan.decision(WorkloadId(wid))
        assert (d.action, d.occupancy, d.reason) == (action, Occupancy.UNALLOCATED, Reason.UNFUNDED)
        assert d.protected_until is None


@pytest.mark.parametrize(
    ("change", "said"),
    [
        pytest.param(
            {"protected_until": ago(hours=-2)},
            "z-run: protected until 2026-11-30T14:00:00Z, but unfunded work is never protected "
            "(its budget p/z has an effective allocation of 0: p has a share of 0% of its "
            "parent, so it is unfunded) (5)",
            id="protected",
        ),
        pytest.param(
            {"occupancy": Occupancy.ALLOCATED},
            "z-run: occupancy allocated, the contract says unallocated (its budget p/z has an "
            "effective allocation of 0: p has a share of 0% of its parent, so it is unfunded) (5)",
            id="charged",
        ),
        pytest.param(
            {"reason": Reason.PROTECTED},
            "z-run: keep (protected), but it is unallocated (its budget p/z has an effective "
            "allocation of 0: p has a share of 0% of its parent, so it is unfunded), and "
            "unallocated work is never protected (5)",
            id="kept-as-protected",
        ),
        pytest.param(
            {"reason": Reason.COSTLY_TO_STOP},
            "z-run: keep (costly_to_stop), but it is unallocated",
            id="kept-as-costly-to-stop",
        ),
    ],
)
def test_the_checker_rejects_unfunded_work_protected_charged_or_kept_as_protected(change, said):
    from datetime import datetime

    snap = lab(Z_RUN, hosts=2)
    plan = solve_checked(snap)
    if "protected_until" in change:
        change = {"protected_until": datetime.fromisoformat(change["protected_until"])}
    wrong = replace(
        plan,
        decisions=tuple(
            replace(d, **change) if d.workload == "z-run" else d for d in plan.decisions
        ),
    )
    problems = validate(snap, wrong)
    assert any(p.startswith(said) for p in problems), problems


def test_explain_and_status_say_the_work_is_unfunded_and_which_node_has_no_share():
    snap = lab(Z_RUN, workload("z-next", 8, budget="p/z"), hosts=2)
    result = solve_round(snap, RoundOptions(solver="greedy"))
    assert validate(snap, result.plan) == []
    lines = explain(snap, result.plan, "z-next", result.context).lines()
    assert lines[0] == (
        "z-next: start on h2:8 (unfunded): its budget p/z has an effective allocation of 0: p "
        "has a share of 0% of its parent; it runs as unallocated work: free, never protected, "
        "never charged."
    )
    assert (
        "  unfunded: its budget p/z has an effective allocation of 0: p has a share of 0% of "
        "its parent; never protected, never charged"
    ) in lines
    (row,) = queue_rows(result.context, result.plan)
    assert (row.workload, row.standing, row.path) == (
        "z-next",
        "unallocated",
        "unfunded: p has a share of 0%",
    )


def test_work_with_no_budget_is_told_it_names_none():
    snap = snapshot_of(instance(workloads=[workload("free", 1, budget=None)]))
    result = solve_round(snap, RoundOptions(solver="greedy"))
    assert validate(snap, result.plan) == []
    assert explain(snap, result.plan, "free", result.context).headline.startswith(
        "free: start on h1:1 (unfunded): it names no budget; it runs as unallocated work"
    )
    (row,) = queue_rows(result.context, result.plan)
    assert row.path == "unfunded"


@pytest.mark.parametrize("policy", ["greedy", "milp"])
def test_the_simulator_never_charges_work_of_a_node_under_a_zero_share(policy):
    # z's job (8 GPUs, 2 h minimum runtime) runs from 0 s; a's arrives at 600 s and displaces
    # it at once (not protected); z's job runs again once a's is done. No interval of z's is
    # charged: nothing of p/z is in the window's usage at the end.
    jobs = [
        TraceJob(WorkloadId("z"), BudgetPath("p/z"), 8, 0.0, 3600.0, 7200.0),
        TraceJob(WorkloadId("a"), BudgetPath("a"), 8, 600.0, 3600.0, 1800.0),
    ]
    sim = Simulation(
        lab(usage=0.0),
        jobs,
        planner(policy),
        SimConfig(days=0.5, keeps_contract=True, validate_passes=True),
        MemoryStore(),
    )
    result = sim.run()
    assert result.violations == 0
    e0 = result.world.epoch0
    spans = sorted(
        (i.workload, i.start_s - e0, i.end_s - e0, i.charged)
        for i in result.world.ledger.store.intervals()
        if not i.workload.startswith("usage-before:")
    )
    assert [(w, start, charged) for w, start, _, charged in spans] == [
        ("a", 600.0, True),
        ("z", 0.0, False),
        ("z", 4200.0, False),
    ]
    assert spans[1][2] == 600.0  # displaced when a arrived, inside its 2 h minimum runtime
    used = result.world.ledger.window_gpu_hours(e0 + result.horizon_s)
    assert "p/z" not in used and "p" not in used
