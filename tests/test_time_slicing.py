"""Time slicing across the window (issue 15, decision 2; models/round.md 2.5, rules TS1-TS4).

The hand-derived case: 4 hosts of 8 GPUs in one block (32 GPUs; a window of 32 x 168 =
5,376 GPU-h), teams a and b with 50% each (owed 2,688 GPU-h over the window, 16 GPUs now).
a was charged 2,600 GPU-h (deficit 88, TS1), b 3,200 (512 ahead of its share: the slicing
budget, TS2). a runs a-small (8 GPUs, protected until 8 h); b runs b-2, b-3, b-4 past their
protection. a's 16-GPU gang (minimum runtime 4 h) is beyond a's entitlement (8 + 16 > 16) by
8 GPUs: cost 8 x 4 = 32 GPU-h, within 88 and 512, so it is entitled by time slicing (TS3) and
displaces b's runs beyond b's entitlement (b-3, b-4). a pays it back (TS4): a holds 24 GPUs,
its window usage grows by 24 GPU-h an hour while the usage before the run leaves the window at
2,600 / 168 an hour, so its deficit 88 - (24 - 15.48) t reaches 0 at t = 10.32 h; the next full
round (every 5 minutes) rebalances the gang, at 10 h 20 min.
"""

from __future__ import annotations

import pytest
from conftest import NOW, ago, host, instance, snapshot_of, workload
from test_sim_engine import HOUR, job, simulate

from alloc.domain import Action, Reason, WorkloadId
from alloc.explain import explain
from alloc.round import RoundOptions, solve_round

GANG = WorkloadId("a-gang")
HOSTS = [host(f"h{i}", block="X", rack="x") for i in range(1, 5)]


def _lab(usage_a: float = 2600.0, usage_b: float = 3200.0, queued: bool = True) -> dict:
    long = {"runtime": "30h"}  # work left, for the simulation
    running = [workload("a-small", 8, "a", "8h", started=NOW.isoformat(), hosts={"h1": 8}, **long)]
    running += [
        workload(f"b-{i}", 8, "b", "1h", started=ago(hours=5), hosts={f"h{i}": 8}, **long)
        for i in (2, 3, 4)
    ]
    gang = [workload("a-gang", 16, "a", "4h", submitted=ago(minutes=1))] if queued else []
    return instance(hosts=HOSTS, workloads=running + gang, usage={"a": usage_a, "b": usage_b})


def test_a_gang_beyond_its_teams_share_starts_when_the_team_is_behind_enough(solver):
    snap = snapshot_of(_lab())
    result = solve_round(snap, RoundOptions(solver=solver))
    plan, share = result.plan, result.context.share
    gang = plan.decision(GANG)
    assert (gang.action, gang.reason) == (Action.START, Reason.UNDER_ALLOCATION)
    assert share.time_sliced[GANG] == (8.0, 32.0)  # 8 GPUs beyond, for 4 h
    assert share.entitlement_gpus["a"] == 24  # raised to what a holds (TS3)
    for b in ("b-3", "b-4"):
        d = plan.decision(WorkloadId(b))
        assert (d.action, d.reason) == (Action.PREEMPT, Reason.REBALANCED)
    assert plan.decision(WorkloadId("b-2")).action is Action.KEEP  # within b's entitlement
    why = " ".join(explain(snap, plan, "a-gang").why)
    assert "a is 88 GPU-h behind its share over the window" in why
    assert "hold 8 GPUs beyond its entitlement" in why and "(32 GPU-h" in why


@pytest.mark.parametrize(
    ("usage_a", "usage_b", "why"),
    [
        (2680.0, 3200.0, "a is only 8 GPU-h behind: the gang's 32 GPU-h are not paid for"),
        (2600.0, 2688.0, "nobody is ahead of its share: nobody can give (TS2)"),
        (2700.0, 3200.0, "a is ahead of its share"),
    ],
)
def test_no_time_slicing_without_a_deficit_that_pays_for_it_or_a_surplus_to_give(
    usage_a, usage_b, why, solver
):
    plan = solve_round(snapshot_of(_lab(usage_a, usage_b)), RoundOptions(solver=solver)).plan
    gang = plan.decision(GANG)
    assert (gang.action, gang.reason) == (Action.WAIT, Reason.OVER_ALLOCATION), why


@pytest.mark.parametrize("policy", ["milp", "greedy"])
def test_the_gang_starts_by_time_slicing_and_is_rebalanced_once_its_team_caught_up(policy):
    snap = snapshot_of(_lab(queued=False))
    jobs = [job("a-gang", "a", 16, 0.0, 20 * HOUR, 4 * HOUR)]
    result = simulate(snap, jobs, policy, days=0.5)
    assert result.violations == 0, result.first_violations
    assert result.world.jobs[GANG].first_start_s == 0.0
    stops = [(p.t_s, p.workload, p.reason) for p in result.recorder.preemptions]
    assert stops[:2] == [(0.0, "b-3", "rebalanced"), (0.0, "b-4", "rebalanced")]
    # Paid back: rebalanced at the first full round after a's deficit reached 0 (10.32 h),
    # and not started again within the 12 h: that needs the full cost again (TS4).
    assert stops[2:] == [(10 * HOUR + 20 * 60, "a-gang", "rebalanced")]
