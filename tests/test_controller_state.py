"""The controller's state store: the ledger of runs is written by keyed, repeatable sightings,
so a restarted controller neither loses nor repeats a charge (no cluster needed)."""

from __future__ import annotations

import pytest

from alloc.controller.state import Run, StateStore

H = 3600.0


@pytest.fixture(params=["memory", "file"])
def store(request, tmp_path):
    url = "sqlite:///:memory:" if request.param == "memory" else f"sqlite:///{tmp_path}/s.db"
    s = StateStore(url)
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
