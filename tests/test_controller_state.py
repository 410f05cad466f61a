"""The controller's state store: the ledger of runs is written by keyed, repeatable sightings,
so a restarted controller neither loses nor repeats a charge (no cluster needed)."""

from __future__ import annotations

import os

import pytest

from alloc.controller.state import Run, StateStore

H = 3600.0


POSTGRES = os.environ.get("ALLOC_TEST_POSTGRES_URL")  # set by .ci/run (.ci/postgres)


@pytest.fixture(params=["memory", "file", "postgres"])
def store(request, tmp_path):
    if request.param == "postgres":
        if not POSTGRES:
            if os.environ.get("ALLOC_REQUIRE_POSTGRES") == "1":
                pytest.fail("ALLOC_REQUIRE_POSTGRES=1 but ALLOC_TEST_POSTGRES_URL is not set")
            pytest.skip("no PostgreSQL (.ci/run starts one: .ci/postgres)")
        url = POSTGRES
    elif request.param == "memory":
        url = "sqlite:///:memory:"
    else:
        url = f"sqlite:///{tmp_path}/s.db"
    s = StateStore(url)
    if request.param == "postgres":
        from alloc.controller.tables import metadata

        metadata.drop_all(s.engine)  # each test starts from an empty database
        metadata.create_all(s.engine)
    yield s
    s.close()


def run(w, start, gpus=8, budget="a", charged=True, end=None):
    return Run(w, start, budget, gpus, charged, end)


def test_a_run_is_opened_when_first_seen_and_closed_when_no_longer_seen(store):
    assert store.observe(100.0, [run("j1", 0.0)]) == (1, 0)
    assert store.observe(200.0, [run("j1", 0.0)]) == (0, 0)  # seen again: nothing new
    assert store.observe(300.0, []) == (0, 1)  # gone, no end reported: closed when missed
    assert store.runs() == [run("j1", 0.0, end=300.0)]


def test_the_end_the_cluster_reports_is_used_even_for_a_run_never_seen_running(store):
    store.observe(100.0, [run("j1", 0.0)])
    store.observe(500.0, [], ended=[run("j1", 0.0, end=250.0), run("j2", 150.0, end=400.0)])
    assert store.runs() == [run("j1", 0.0, end=250.0), run("j2", 150.0, end=400.0)]
    assert store.observe(600.0, [], ended=[run("j2", 150.0, end=400.0)]) == (0, 0)


def test_a_requeued_job_runs_again_as_a_new_run(store):
    store.observe(100.0, [run("j1", 0.0)])
    assert store.close_run("j1", 0.0, 120.0)
    assert not store.close_run("j1", 0.0, 130.0)  # closed once
    store.observe(200.0, [run("j1", 180.0)])
    assert store.runs() == [run("j1", 0.0, end=120.0), run("j1", 180.0)]


def test_repeating_a_sighting_changes_nothing(store):
    # A controller killed after writing a sighting sees the cluster again when it restarts.
    sightings = [
        (100.0, [run("j1", 0.0), run("j2", 50.0, 4, "b")], []),
        (200.0, [run("j2", 50.0, 4, "b")], [run("j1", 0.0, end=180.0)]),
        (300.0, [run("j3", 290.0, 2, None, False)], []),
    ]
    for now, running, ended in sightings:
        store.observe(now, running, ended)
        before = store.runs()
        assert store.observe(now, running, ended) == (0, 0)
        assert store.runs() == before
    assert store.runs() == [
        run("j1", 0.0, end=180.0),
        run("j2", 50.0, 4, "b", end=300.0),
        run("j3", 290.0, 2, None, False),
    ]


def test_a_job_the_cluster_requeued_on_its_own_is_charged_once(store):
    # j1 ran from 0, the cluster requeued it (no end reported) and it ran again from 30: the
    # first run ended by 30 at the latest, not at the round that noticed (60).
    store.observe(10.0, [run("j1", 0.0)])
    store.observe(60.0, [run("j1", 30.0)])
    assert store.runs() == [run("j1", 0.0, end=30.0), run("j1", 30.0)]


def test_a_run_alloc_preempted_before_it_died_closes_when_the_plan_said_so(store):
    # The plan preempting j1 was recorded at 100 s; the controller died before recording the
    # action; at 500 s j1 is no longer running and the cluster reports no end for it.
    from datetime import UTC, datetime

    from alloc.domain import Action, Decision, Occupancy, Plan, Reason, SolverReport

    store.observe(50.0, [run("j1", 0.0)])
    stop = Decision("j1", Action.PREEMPT, Occupancy.ALLOCATED, Reason.REBALANCED)
    report = SolverReport("greedy", "fallback", 0.0, None, None, 0.0)
    store.record_plan(100.0, Plan(datetime.fromtimestamp(100, UTC), report, (stop,)))
    store.observe(500.0, [])
    assert store.runs() == [run("j1", 0.0, end=100.0)]


def test_a_run_whose_preemption_the_cluster_refused_closes_when_it_is_no_longer_seen(store):
    # The plan at 100 s preempted j1 but the requeue failed (recorded): j1 ran on. At 300 s
    # it is gone with no end reported (the cluster requeued it itself): it ran until then.
    from datetime import UTC, datetime

    from alloc.adapters.base import ActionResult, ApplyReport
    from alloc.domain import Action, Decision, Occupancy, Plan, Reason, SolverReport

    store.observe(50.0, [run("j1", 0.0)])
    stop = Decision("j1", Action.PREEMPT, Occupancy.ALLOCATED, Reason.REBALANCED)
    report = SolverReport("greedy", "fallback", 0.0, None, None, 0.0)
    round_id = store.record_plan(100.0, Plan(datetime.fromtimestamp(100, UTC), report, (stop,)))
    refused = ActionResult("j1", Action.PREEMPT, False, "requeue, held failed: timed out")
    store.record_apply(round_id, 101.0, ApplyReport((refused,)))
    store.observe(200.0, [run("j1", 0.0)])
    store.observe(300.0, [])
    assert store.runs() == [run("j1", 0.0, end=300.0)]


def test_a_sighting_older_than_a_run_does_not_close_it(store):
    store.observe(300.0, [run("j3", 290.0)])
    assert store.observe(100.0, []) == (0, 0)
    assert store.open_runs() == [run("j3", 290.0)]


def test_the_window_charges_allocated_runs_by_budget_open_ones_up_to_now(store):
    store.observe(0.0, [], ended=[run("old", -10 * H, end=-9 * H)])  # outside a 7 h window
    store.observe(0.0, [], ended=[run("j1", -2 * H, 8, "a", end=-1 * H)])
    store.observe(0.0, [run("j2", -0.5 * H, 4, "b"), run("free", -H, 2, None, False)])
    usage = store.window_gpu_hours(0.0, 7 * H)
    assert usage == {"a": pytest.approx(8.0), "b": pytest.approx(2.0)}
    assert store.window_gpu_hours(0.0, 1.5 * H) == {
        "a": pytest.approx(4.0),
        "b": pytest.approx(2.0),
    }


def test_plans_actions_and_budget_changes_are_kept(store):
    from conftest import host, instance, solve_checked, workload

    from alloc.adapters.base import ActionResult, ApplyReport, HostResult
    from alloc.domain import Action

    plan = solve_checked(
        instance(hosts=[host("h1")], workloads=[workload("w1", 8), workload("w2", 8, "b")]),
        "greedy",
    )
    round_id = store.record_plan(1000.0, plan)
    (row,) = store.rounds()
    assert (row["id"], row["at_s"], row["applied_s"]) == (round_id, 1000.0, None)
    decided = {d["workload"]: (d["action"], d["reason"]) for d in store.decisions_of(round_id)}
    assert decided == {d.workload: (d.action.value, d.reason.value) for d in plan.decisions}
    report = ApplyReport(
        (ActionResult("w1", Action.START, True, "released on h1"),),
        (HostResult("h9", False, "scontrol: no such node"),),
    )
    store.record_apply(round_id, 1001.0, report)
    assert store.rounds()[0]["applied_s"] == 1001.0
    assert {(a["workload"], a["ok"]) for a in store.actions_of(round_id)} == {
        ("w1", True),
        ("host:h9", False),
    }
    store.change_share(1002.0, "pm", "a", 0.5, 0.4)
    store.change_share(1003.0, "pm", "a", 0.4, 0.3)
    assert store.shares() == {"a": 0.3}
    assert [(c["old"], c["new"]) for c in store.budget_history()] == [(0.5, 0.4), (0.4, 0.3)]


def test_a_state_database_from_before_round_kinds_is_upgraded_in_place(tmp_path):
    # A database written before rounds had a kind (every round then was a full round): the
    # store adds the column, reads the old rounds as full ones and records new rounds' kinds.
    import sqlite3
    from datetime import UTC, datetime

    from alloc.domain import Plan, SolverReport

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE rounds (id INTEGER PRIMARY KEY AUTOINCREMENT, at_s FLOAT NOT NULL, "
            "solver VARCHAR(20) NOT NULL, status VARCHAR(20) NOT NULL, objective FLOAT NOT NULL,"
            " gap FLOAT, solve_seconds FLOAT NOT NULL, note VARCHAR(2000) NOT NULL, "
            "applied_s FLOAT)"
        )
        db.execute(
            "INSERT INTO rounds (at_s, solver, status, objective, solve_seconds, note) "
            "VALUES (1.0, 'milp', 'optimal', 0.0, 0.1, '')"
        )
    store = StateStore(f"sqlite:///{path}")
    report = SolverReport("event", "event", 0.0, None, None, 0.0)
    store.record_plan(2.0, Plan(datetime.now(UTC), report, (), kind="event"))
    assert [r["kind"] for r in reversed(store.rounds())] == ["full", "event"]
    store.close()


def test_the_gangs_a_backfill_start_named_come_back_with_its_run(store):
    """models/round.md 8.5: a start as backfill names its gangs; the controller keeps that in
    its record of the plan, and the next round's snapshot carries it on the running workload
    (`controller_view`), whatever the executor shows."""
    from dataclasses import replace
    from datetime import UTC, datetime

    from conftest import instance, snapshot_of, workload

    from alloc.controller.build import controller_view
    from alloc.domain import Action, Decision, Occupancy, Plan, Reason, SolverReport, WorkloadId

    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    report = SolverReport("greedy", "fallback", 0.0, None, None, 0.0)
    short = Decision(
        WorkloadId("w1"),
        Action.START,
        Occupancy.ALLOCATED,
        Reason.UNDER_ALLOCATION,
        {"h1": 8},
        now,
        (WorkloadId("gang"),),
    )
    other = replace(short, workload=WorkloadId("w2"), backfill_for=())
    store.record_plan(1.0, Plan(now, report, (short, other)))
    assert store.leases(["w1", "w2", "w3"]) == {"w1": ("gang",)}
    snap = snapshot_of(
        instance(
            workloads=[
                workload("w1", 8, hosts={"h1": 8}),
                workload("w2", 8, hosts={"h2": 8}),
                workload("gang", 16),
            ]
        )
    )
    view = controller_view(snap, store)
    assert view.workload(WorkloadId("w1")).backfill_for == ("gang",)
    assert view.workload(WorkloadId("w2")).backfill_for == ()
    # A later start of the same workload that is not backfill ends the lease.
    store.record_plan(2.0, Plan(now, report, (replace(short, backfill_for=()),)))
    assert store.leases(["w1"]) == {}


def test_a_state_database_from_before_backfill_is_upgraded_in_place(tmp_path):
    import sqlite3

    path = tmp_path / "old.db"
    StateStore(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as db:  # as written before the column existed
        db.execute("ALTER TABLE decisions DROP COLUMN backfill_for")
        assert "backfill_for" not in {r[1] for r in db.execute("PRAGMA table_info(decisions)")}
    store = StateStore(f"sqlite:///{path}")
    assert store.leases(["w1"]) == {}
    store.close()
    with sqlite3.connect(path) as db:
        assert "backfill_for" in {r[1] for r in db.execute("PRAGMA table_info(decisions)")}
