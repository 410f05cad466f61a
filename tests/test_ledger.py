"""The usage ledger (alloc.ledger): what it charges, how its window queries answer, and that
its two stores and its two ways of answering agree."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import host, instance, snapshot_of

from alloc.domain import BudgetPath, WorkloadId
from alloc.ledger import Interval, Ledger, MemoryStore, SQLiteStore
from alloc.sim.recorder import Rates, Recorder
from alloc.sim.world import World

HOUR = 3600.0
BUDGETS = (BudgetPath("a"), BudgetPath("b"), BudgetPath("p/x"), None)


def w(name: str) -> WorkloadId:
    return WorkloadId(name)


def same_usage(got: dict[BudgetPath, float], want: dict[BudgetPath, float]) -> bool:
    """Equal per budget within rounding; a budget missing on one side counts as 0."""
    keys = set(got) | set(want)
    return all(got.get(k, 0.0) == pytest.approx(want.get(k, 0.0), abs=1e-6) for k in keys)


def random_intervals(rng: random.Random, n: int) -> list[Interval]:
    out = []
    for i in range(n):
        start = rng.uniform(0.0, 1000.0)
        out.append(
            Interval(
                w(f"j{i}"),
                rng.choice(BUDGETS),
                rng.choice((1, 2, 4, 8)),
                start,
                start + rng.choice((0.0, rng.uniform(0.0, 300.0))),
                rng.random() < 0.7,
            )
        )
    return out


# the two stores


@pytest.mark.parametrize("seed", range(5))
def test_the_sqlite_and_memory_stores_answer_every_window_alike(seed):
    rng = random.Random(seed)
    intervals = random_intervals(rng, 60)
    memory, sqlite = MemoryStore(), SQLiteStore()
    memory.add(intervals)
    sqlite.add(intervals)
    for _ in range(30):
        start = rng.uniform(-100.0, 1200.0)
        end = start + rng.choice((0.0, rng.uniform(0.0, 600.0)))
        assert same_usage(sqlite.charged_between(start, end), memory.charged_between(start, end))
    assert sorted(sqlite.intervals(), key=repr) == sorted(memory.intervals(), key=repr)


def test_a_store_counts_only_the_charged_part_of_an_interval_inside_the_window():
    # a: 4 GPUs over [0, 100], charged: 4 x 50 = 200 GPU-seconds fall inside [50, 150).
    # b: 8 GPUs over [0, 100], not charged; None: charged but without a budget. Neither counts.
    rows = [
        Interval(w("x"), BudgetPath("a"), 4, 0.0, 100.0, True),
        Interval(w("y"), BudgetPath("b"), 8, 0.0, 100.0, False),
        Interval(w("z"), None, 8, 0.0, 100.0, True),
    ]
    for store in (MemoryStore(), SQLiteStore()):
        store.add(rows)
        assert store.charged_between(50.0, 150.0) == {"a": pytest.approx(200.0)}
        assert store.charged_between(100.0, 200.0) == {}  # touching the end is not inside


# the ledger's running integral against the store


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("make_store", [MemoryStore, SQLiteStore], ids=["memory", "sqlite"])
def test_window_usage_from_the_running_integral_equals_the_store_over_random_runs(seed, make_store):
    rng = random.Random(seed)
    lookback = 500.0
    ledger = Ledger(make_store(), lookback)
    # Usage before the first event, one interval per budget as the simulator records it.
    ledger.record(
        [
            Interval(w("before:a"), BudgetPath("a"), 2.0, -lookback, 0.0, True),
            Interval(w("before:b"), BudgetPath("b"), 0.5, -lookback, 0.0, True),
        ]
    )
    t = 0.0
    running: list[WorkloadId] = []
    for step in range(300):
        t += rng.choice((0.0, rng.uniform(0.0, 60.0), rng.uniform(0.0, 400.0)))
        op = rng.random()
        if op < 0.4 or not running:
            job = w(f"j{step}")
            ledger.start(job, rng.choice(BUDGETS), rng.choice((1, 2, 8)), t, rng.random() < 0.7)
            running.append(job)
        elif op < 0.8:
            ledger.stop(running.pop(rng.randrange(len(running))), t)
        else:
            got = ledger.window_gpu_hours(t)
            assert same_usage(got, ledger.window_from_store(t)), (step, t)
    t += 10.0
    assert same_usage(ledger.window_gpu_hours(t), ledger.window_from_store(t))


def test_a_charged_run_counts_in_the_window_and_an_uncharged_one_does_not():
    ledger = Ledger(MemoryStore(), 10 * HOUR)
    ledger.start(w("alloc"), BudgetPath("a"), 8, 0.0, True)
    ledger.start(w("scratch"), BudgetPath("a"), 4, 0.0, False)  # minimum runtime 0: free
    ledger.start(w("orphan"), None, 2, 0.0, True)  # no budget: nothing to charge
    # After 2 h: a was charged 8 GPUs x 2 h = 16 GPU-hours, while it still runs.
    assert ledger.window_gpu_hours(2 * HOUR) == {"a": pytest.approx(16.0)}
    ledger.stop(w("alloc"), 3 * HOUR)
    ledger.stop(w("scratch"), 3 * HOUR)
    ledger.stop(w("orphan"), 3 * HOUR)
    assert ledger.window_gpu_hours(4 * HOUR) == {"a": pytest.approx(24.0)}
    # Every interval is stored, charged or not.
    stored = {i.workload: i.charged for i in ledger.store.intervals()}
    assert stored == {"alloc": True, "scratch": False, "orphan": True}
    # 11 h: the window [1 h, 11 h] holds 2 of the 3 hours: 16 GPU-hours.
    assert ledger.window_gpu_hours(11 * HOUR) == {"a": pytest.approx(16.0)}
    # 13 h: the run has left the window.
    assert ledger.window_gpu_hours(13 * HOUR) == {}


def test_usage_is_kept_per_budget_path_not_summed_into_ancestors():
    ledger = Ledger(MemoryStore(), 10 * HOUR)
    ledger.start(w("x"), BudgetPath("p/x"), 2, 0.0, True)
    assert ledger.window_gpu_hours(HOUR) == {"p/x": pytest.approx(2.0)}


def test_recorded_intervals_that_overlap_on_one_budget_are_all_counted():
    # a: 1 GPU over [0, 100] and 1 GPU over [50, 150]: 200 GPU-seconds in all.
    ledger = Ledger(MemoryStore(), 1000.0)
    ledger.record(
        [
            Interval(w("x"), BudgetPath("a"), 1, 0.0, 100.0, True),
            Interval(w("y"), BudgetPath("a"), 1, 50.0, 150.0, True),
        ]
    )
    assert ledger.window_from_store(200.0) == {"a": pytest.approx(200 / HOUR)}
    assert ledger.window_gpu_hours(200.0) == {"a": pytest.approx(200 / HOUR)}


# time


def test_the_ledger_refuses_time_that_goes_back():
    ledger = Ledger(MemoryStore(), HOUR)
    ledger.start(w("x"), BudgetPath("a"), 1, 100.0, True)
    with pytest.raises(ValueError, match="forward"):
        ledger.stop(w("x"), 50.0)
    ledger.window_gpu_hours(200.0)
    with pytest.raises(ValueError, match="forward"):
        ledger.window_gpu_hours(150.0)
    with pytest.raises(ValueError, match="forward"):
        ledger.start(w("y"), BudgetPath("a"), 1, 199.0, True)
    # The same instant is not going back.
    ledger.stop(w("x"), 200.0)


# the lab's usage before the start, as the simulator records it


def world_of(data: dict) -> World:
    lab = snapshot_of(data)
    return World(lab, [], Ledger(MemoryStore(), lab.policy.lookback_s), Recorder(Rates()))


def test_the_labs_usage_is_spread_evenly_over_the_window_before_the_start():
    # a used 168 GPU-hours in the 7-day window: 1 GPU all along. A day later a sixth of the
    # window holds no usage: 144 GPU-hours remain; seven days later none.
    world = world_of(instance(hosts=[host("h1")], usage={"a": 168.0, "b": 0.0}))
    assert world.snapshot().usage_gpu_hours == {"a": pytest.approx(168.0)}
    world.advance(86400.0)
    assert world.snapshot().usage_gpu_hours == {"a": pytest.approx(144.0)}
    world.advance(3.5 * 86400.0)
    assert world.snapshot().usage_gpu_hours == {"a": pytest.approx(84.0)}
    world.advance(7 * 86400.0)
    assert world.snapshot().usage_gpu_hours == {}
    # The window's capacity stays 8 ready GPUs x 168 h all along.
    assert world.snapshot().usage_capacity_gpu_hours == pytest.approx(8 * 168.0)


def test_the_labs_usage_follows_the_labs_lookback():
    # lookback 10 h, a used 20 GPU-hours: 2 GPUs over the 10 hours before the start.
    world = world_of(instance(hosts=[host("h1")], usage={"a": 20.0}, policy={"lookback": "10h"}))
    world.advance(5 * HOUR)
    assert world.snapshot().usage_gpu_hours == {"a": pytest.approx(10.0)}
    assert world.ledger.window_from_store(world.epoch0 + 5 * HOUR) == {"a": pytest.approx(10.0)}


# persistence


def test_a_file_backed_ledger_keeps_its_intervals_across_a_reopen(tmp_path: Path):
    path = tmp_path / "ledger.sqlite"
    ledger = Ledger(SQLiteStore(path), 10 * HOUR)
    ledger.start(w("x"), BudgetPath("a"), 8, 0.0, True)
    ledger.start(w("y"), BudgetPath("b"), 2, HOUR, False)
    ledger.stop(w("x"), 2 * HOUR)
    ledger.start(w("z"), BudgetPath("b"), 4, 2 * HOUR, True)
    before = ledger.window_gpu_hours(3 * HOUR)  # a: 16, b: 4
    assert before == {"a": pytest.approx(16.0), "b": pytest.approx(4.0)}
    ledger.close(3 * HOUR)  # closes y and z at 3 h, then the file

    reopened = SQLiteStore(path)
    rows = sorted(reopened.intervals(), key=lambda i: i.workload)
    assert rows == [
        Interval(w("x"), BudgetPath("a"), 8, 0.0, 2 * HOUR, True),
        Interval(w("y"), BudgetPath("b"), 2, HOUR, 3 * HOUR, False),
        Interval(w("z"), BudgetPath("b"), 4, 2 * HOUR, 3 * HOUR, True),
    ]
    # A restarted controller rebuilds the same view from the file alone.
    assert same_usage(Ledger(reopened, 10 * HOUR).window_from_store(3 * HOUR), before)
    reopened.add([Interval(w("later"), BudgetPath("a"), 1, 3 * HOUR, 4 * HOUR, True)])
    reopened.close()
    assert len(list(SQLiteStore(path).intervals())) == 4
