"""Backfill: work that may not backfill, and gangs no hosts are held for (models/round.md 8,
8.5; found in review of 28cff6e)."""

from __future__ import annotations

from conftest import NOW, ago, host, instance, snapshot_of, solve_checked, workload
from test_backfill import GANG, _start

from alloc.domain import WorkloadId


def test_work_that_cannot_resume_does_not_backfill(solver):
    """Past a checkpoint interval of running, work that cannot resume is kept by the contract
    (`costly_to_stop`): started as backfill it could keep the gang's hosts past ready_at."""
    q = [
        workload("a-gang", 16, "a", "4h", submitted=ago(minutes=30)),
        workload("b-short", 8, "b", "1h", submitted=ago(minutes=10), resumable=False),
    ]
    plan = solve_checked(snapshot_of(_start(q)), solver)
    short = plan.decision(WorkloadId("b-short"))
    assert short.backfill_for == () and "h2" not in short.hosts


TREE = {
    "name": "root",
    "children": [
        {
            "name": "p",
            "share": "34%",
            "children": [{"name": "a", "share": "50%"}, {"name": "b", "share": "50%"}],
        },
        {"name": "q", "share": "33%"},
        {"name": "r", "share": "33%"},
    ],
}
H13 = [host("h1", block="X", rack="x"), host("h2", block="X", rack="x")] + [
    host(f"h{i}", block=f"B{i}", rack=f"r{i}") for i in range(3, 14)
]


def _lab(t0: bool):
    wl = [
        workload(
            f"b-p{i}",
            8,
            "p/b",
            "8h",
            started=NOW.isoformat() if t0 else ago(hours=2),
            hosts={f"h{i}": 8},
        )
        for i in (3, 4, 5)
    ]
    wl += [
        workload(f"q-{i}", 8, "q", "1h", started=ago(hours=5), hosts={f"h{i}": 8})
        for i in (6, 7, 8, 9)
    ]
    wl += [
        workload(f"r-{i}", 8, "r", "1h", started=ago(hours=5), hosts={f"h{i}": 8})
        for i in (10, 11, 12, 13)
    ]
    wl += [
        workload("q-big", 40, "q", "1h", topology="any", submitted=ago(hours=9)),
        workload("r-big", 40, "r", "1h", topology="any", submitted=ago(hours=9)),
    ]
    if t0:
        wl += [
            workload("b-old", 8, "p/b", "4h", started=ago(hours=2), hosts={"h1": 8}),
            workload("a-gang", 16, "p/a", "4h", submitted=ago(minutes=30), topology="block"),
            workload("b-short", 8, "p/b", "1h", submitted=ago(minutes=10)),
        ]
    else:
        wl += [
            workload(
                "a-gang", 16, "p/a", "4h", submitted=ago(hours=2, minutes=30), topology="block"
            ),
            workload(
                "b-short",
                8,
                "p/b",
                "1h",
                started=ago(hours=2),
                submitted=ago(hours=2),
                hosts={"h2": 8},
                backfill_for=["a-gang"],
            ),
        ]
    return snapshot_of(instance(hosts=H13, budgets=TREE, workloads=wl, usage={}))


def test_no_reservation_nor_backfill_for_a_gang_whose_program_is_beyond_what_it_is_owed(solver):
    """p/b's protected runs leave program p no room for a's gang (p owed 35 GPUs, holding 32):
    holding hosts (and their backfill) for it would keep them from others in vain; the check
    is made at every node of the gang's path, not only at its leaf (models/round.md 8)."""
    first = solve_checked(_lab(True), solver)
    assert all(r.workload != GANG for r in first.reservations)
    assert first.decision(WorkloadId("b-short")).backfill_for == ()
