"""In an event pass a reserving gang starts on its own reservation's hosts, never on another
gang's (models/round.md 9.3; found in review)."""

from __future__ import annotations

from conftest import NOW, ago, host, instance, snapshot_of, workload
from test_event_pass import after, complete

from alloc.domain import Action, WorkloadId
from alloc.round import RoundOptions
from alloc.rounds import Rounds
from alloc.solve.validate import validate

HOSTS = [
    host("h1", block="X", rack="x"),
    host("h2", block="X", rack="x"),
    host("h3", block="Y", rack="y"),
    host("h4", block="Y", rack="y"),
    host("h5", block="Z", rack="z"),
    host("h6", block="Z", rack="z"),
    host("h7", block="W", rack="w"),
    host("h8", block="W", rack="w"),
]
TREE = {
    "name": "root",
    "children": [
        {"name": "a", "share": "40%"},
        {"name": "b", "share": "20%"},
        {"name": "c", "share": "40%"},
    ],
}


def test_a_gang_does_not_start_on_another_gangs_reservation_in_a_pass(solver):
    now = NOW.isoformat()
    before = instance(
        hosts=HOSTS,
        budgets=TREE,
        usage={"a": 0.0, "b": 0.0, "c": 500.0},
        workloads=[
            workload("b-y", 8, "b", "1h", started=now, hosts={"h3": 8}),
            workload("b-x", 8, "b", "3h", started=now, hosts={"h1": 8}),
            workload("b-z1", 8, "b", "8h", started=now, hosts={"h5": 8}),
            workload("b-z2", 8, "b", "8h", started=now, hosts={"h6": 8}),
            workload("b-w1", 8, "b", "8h", started=now, hosts={"h7": 8}),
            workload("b-w2", 8, "b", "8h", started=now, hosts={"h8": 8}),
            workload("g1", 16, "a", "4h", submitted=ago(minutes=5)),
            workload("g2", 16, "c", "4h", submitted=ago(minutes=5)),
        ],
    )
    rounds = Rounds(RoundOptions(solver=solver), validate_whole=True)
    first = rounds.full(snapshot_of(before)).plan
    data = complete("b-x")(after(before, first))
    snap = snapshot_of(data)
    rounds.sync_snapshot(snap)
    held = tuple(rounds.state.reservations)
    delta = rounds.event(snap.now, snap)  # validate_whole: an invalid pass raises
    whole = rounds.whole(delta, snap)
    problems = validate(snap, whole, due=held)
    assert problems == []
    g1 = whole.decision(WorkloadId("g1"))
    assert not (g1.action is Action.START and set(g1.hosts) == {"h1", "h2"})
