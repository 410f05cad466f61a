"""Constraint (6) of the MILP (priority inside a node) respects backfill levels: a higher-priority
workload that may not backfill a reserved host does not forbid a lower one that may
(models/round.md 5.2 and 8.5; found in review of 28cff6e)."""

from __future__ import annotations

from conftest import NOW, ago, host, instance, snapshot_of, solve_checked, workload

from alloc.domain import Action, WorkloadId

HOSTS = [
    host("h1", block="X", rack="x1"),
    host("h2", block="X", rack="x1"),
    host("h3", block="Y", rack="y1"),
    host("h4", block="Y", rack="y1"),
]
BUDGETS = {
    "name": "root",
    "children": [
        {"name": "a", "share": "50%"},
        {"name": "b", "share": "25%"},
        {"name": "c", "share": "25%"},
    ],
}


def snap():
    wl = [
        workload("b-old", 8, "b", "4h", started=ago(hours=2), hosts={"h1": 8}),
        workload("b-other", 8, "b", "8h", started=NOW.isoformat(), hosts={"h3": 8}),
        workload("c-run", 8, "c", "1h", started=ago(hours=3), hosts={"h4": 8}),
        workload("a-gang", 16, "a", "4h", submitted=ago(minutes=30)),
        workload("b-long", 8, "b", "3h", priority=5, submitted=ago(minutes=20)),
        workload("b-short", 8, "b", "1h", priority=0, submitted=ago(minutes=10)),
    ]
    return snapshot_of(
        instance(
            hosts=HOSTS, budgets=BUDGETS, workloads=wl, usage={"a": 0.0, "b": 2000.0, "c": 0.0}
        )
    )


def test_a_higher_priority_class_that_may_not_backfill_does_not_forbid_one_that_may():
    s = snap()
    plan = solve_checked(s, "milp")
    r = plan.report
    assert plan.decision(WorkloadId("b-short")).action is Action.START
    assert "bound discarded" not in r.note, r.note
    assert r.status == "optimal", r.status
