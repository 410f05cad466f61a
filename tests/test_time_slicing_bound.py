"""Time slicing never takes GPUs from a team that is behind its share (models/round.md 2.5,
TS2): the GPUs come out of the ungranted entitlement of teams ahead (found in review)."""

from __future__ import annotations

from conftest import NOW, ago, host, instance, snapshot_of, workload

from alloc.domain import Action
from alloc.round import RoundOptions, solve_round

HOSTS = [host(f"h{i}", block="X", rack="x") for i in range(1, 7)]  # 48 GPUs
THREE = {
    "name": "root",
    "children": [
        {"name": "a", "share": "33.3333%"},
        {"name": "b", "share": "33.3333%"},
        {"name": "c", "share": "33.3334%"},
    ],
}


def test_slicing_leaves_a_team_that_is_behind_what_it_is_owed(solver):
    # W = 48 x 168 = 8064 GPU-h, each team owed ~2688. a: 0 (deficit 2688), b: 1000 (behind,
    # deficit 1688), c: 5000 (ahead by 2312 = S) but c has no work now.
    running = [
        workload(f"b-{i}", 8, "b", "1h", started=ago(hours=5), hosts={f"h{i}": 8}, runtime="30h")
        for i in (2, 3, 4)
    ]
    running.append(workload("a-small", 8, "a", "8h", started=NOW.isoformat(), hosts={"h1": 8}))
    gang = [workload("a-gang", 32, "a", "1h", topology="any", submitted=ago(minutes=1))]
    snap = snapshot_of(
        instance(
            hosts=HOSTS,
            budgets=THREE,
            workloads=running + gang,
            usage={"a": 0.0, "b": 1000.0, "c": 5000.0},
        )
    )
    result = solve_round(snap, RoundOptions(solver=solver))
    plan, share = result.plan, result.context.share
    owed_b = snap.budgets.effective_allocation("b") * 48
    b_holds = sum(
        sum(d.hosts.values())
        for d in plan.decisions
        if d.workload.startswith("b-") and d.action in (Action.KEEP, Action.START)
    )
    assert share.ratios["b"] < 1.0
    assert b_holds >= owed_b - 1e-6, f"b (behind) holds {b_holds} < owed {owed_b:.1f}"
    assert "a-gang" not in share.time_sliced  # c, ahead, has nothing to give: no slicing
