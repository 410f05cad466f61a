"""`alloc controller run`, `alloc status` and live `alloc explain` on a simulated cluster (the
controller's `sim` executor: no cluster manager needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sim2 import write_lab
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.controller import StateStore
from alloc.io.controller_config import state_url

CONFIG = """\
name: sim2
executor: sim
interval: 0.01
state: sqlite:///{state}
policy: {{solver: greedy}}
budgets:
  name: lab
  children: [{{name: nlp, share: 50%}}, {{name: vision, share: 50%}}]
metrics: {{port: 0}}
sim: {{lab: lab.yaml, trace: trace.csv, cluster: cluster.db, step: 15m}}
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    write_lab(tmp_path)
    path = tmp_path / "controller.yaml"
    path.write_text(CONFIG.format(state=tmp_path / "state.db"))
    return path


def alloc(*args: str | Path):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_the_controller_runs_rounds_and_status_says_why_work_waits(config, tmp_path):
    result = alloc("controller", "run", "--config", config, "--rounds", "3")
    assert result.exit_code == 0, result.stderr
    assert "round 1: full round, 2 started, 0 preempted, 0 failed" in result.stderr
    store = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    assert {r.workload for r in store.open_runs()} == {"a", "b"}
    assert len(store.rounds()) == 3
    store.close()
    # t = 45 min: c waits; nlp's work is protected until 1 h.
    status = alloc("status", "--config", config)
    assert status.exit_code == 0, status.stderr
    lines = status.stdout.splitlines()
    (row,) = [line for line in lines if line.split()[:2] == ["-", "c"]]  # -: blocked
    (last,) = [line for line in lines if line.split()[:1] == ["c"]]  # what was last decided
    assert "vision" in row and "wait (no_room)" in row and "blocked" in row
    assert "#: place in the queue, in the round's order; -: blocked, no place this round" in (
        status.stdout
    )
    assert "running: 2 workloads; this round keeps 2" in status.stdout
    # Which kind of round last decided each workload: here, full rounds (no event came).
    assert "full round" in last and "15 min ago" in last and "wait (no_room)" in last
    # ... on the simulated cluster's clock, which the table says (the lease's is the wall's)
    assert "when (simulated)" in status.stdout and "(wall clock)" in status.stdout
    assert "running: 2 workloads; this round keeps 2 (last decided: 2 by a full round)" in (
        status.stdout
    )
    why = alloc("explain", "--config", config, "c")
    assert why.exit_code == 0, why.stderr
    assert why.stdout.startswith("c: wait")
    assert "vision: share 50.0% of its parent" in why.stdout
    assert "protection" in why.stdout


def test_live_explain_of_an_unknown_workload_is_bad_input(config):
    alloc("controller", "run", "--config", config, "--rounds", "1")
    result = alloc("explain", "--config", config, "nope")
    assert result.exit_code == 2
    assert "no workload with id 'nope'" in result.stderr


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda t: t.replace("step: 15m", "step: 0"), ["sim.step", "above 0"]),
        (lambda t: t.replace("executor: sim", "executor: nomad"), ["executor"]),
        (lambda t: t.replace("trace.csv", "missing.csv"), ["missing.csv", "no such file"]),
        (lambda t: t.replace("interval: 0.01", "interval: soon"), ["interval"]),
    ],
    ids=["zero step", "unknown executor", "missing trace", "bad interval"],
)
def test_a_bad_controller_config_is_bad_input(config, tmp_path, change, named):
    config.write_text(change(config.read_text()))
    for command in (
        ["controller", "run", "--config", config, "--rounds", "1"],
        ["status", "--config", config],
    ):
        result = alloc(*command)
        assert result.exit_code == 2, (command, result.stderr)
        for text in named:
            assert text in result.stderr, (text, result.stderr)
    assert not (tmp_path / "state.db").exists()


def test_a_relative_sqlite_state_is_kept_beside_the_config_wherever_alloc_runs(
    config, tmp_path, monkeypatch
):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    written = config.read_text().replace(f"sqlite:///{tmp_path}/", "sqlite:///")
    assert "state: sqlite:///state.db" in written
    config.write_text(written)
    assert alloc("controller", "run", "--config", config, "--rounds", "1").exit_code == 0
    assert (tmp_path / "state.db").exists() and not list(elsewhere.iterdir())
    status = alloc("status", "--config", config)  # reads the same state
    assert status.exit_code == 0, status.stderr
    assert "rounds: 1 " in status.stdout


@pytest.mark.parametrize(
    ("written", "used"),
    [
        ("sqlite:///state.db", "sqlite:///conf/state.db"),
        ("sqlite:///run/state.db?timeout=5", "sqlite:///conf/run/state.db?timeout=5"),
        ("sqlite+pysqlite:///../state.db", "sqlite+pysqlite:///conf/../state.db"),
        ("sqlite:////var/lib/alloc/state.db", "sqlite:////var/lib/alloc/state.db"),
        ("sqlite://", "sqlite://"),
        ("sqlite:///:memory:", "sqlite:///:memory:"),
        ("sqlite:///file:state.db?uri=true", "sqlite:///file:state.db?uri=true"),
        ("postgresql+psycopg://alloc@db/alloc", "postgresql+psycopg://alloc@db/alloc"),
    ],
    ids=[
        "a file beside the config",
        "a file in a folder beside it, options kept",
        "a file above it, with a driver",
        "an absolute path",
        "in memory",
        "in memory, by name",
        "an SQLite URI",
        "another database",
    ],
)
def test_a_relative_sqlite_path_is_relative_to_the_config_and_the_rest_as_written(written, used):
    assert state_url(written, Path("conf")) == used


def test_metrics_are_served_for_prometheus(config, tmp_path):
    import socket
    import urllib.request

    from alloc.controller import Controller
    from alloc.controller.build import executor_for
    from alloc.controller.metrics import ControllerMetrics
    from alloc.io.controller_config import load_controller_config

    settings = load_controller_config(config)
    store = StateStore(settings.state_url)
    controller = Controller(executor_for(settings), store, interval_s=0.0)
    metrics = ControllerMetrics()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    metrics.serve(port)
    for _ in range(4):  # t = 0, 15, 30, 45 min: nlp's a and b hold both hosts
        metrics.observe(controller.round_once())
    store.close()
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    lines = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
    assert lines['alloc_rounds_total{status="greedy"}'] == 4  # the greedy policy's status
    assert lines["alloc_fallbacks_total"] == 0  # the greedy was asked for: no MILP failed
    assert lines["alloc_starts_total"] == 2
    assert lines["alloc_ready_gpus"] == 16 and lines['alloc_held_gpus{occupancy="allocated"}'] == 16
    assert lines["alloc_round_seconds_count"] == 4
    # nlp is owed 8 of 16 GPUs and holds 16: all it is owed, for 45 minutes.
    assert lines['alloc_owed_gpu_seconds_total{budget="nlp"}'] == 8 * 2700
    assert lines['alloc_delivered_over_owed{budget="nlp"}'] == 1.0
    # vision: demand from 30 min (c arrives), owed 8 GPUs, delivered none.
    assert lines['alloc_owed_gpu_seconds_total{budget="vision"}'] == 8 * 900
    assert lines['alloc_delivered_over_owed{budget="vision"}'] == 0.0
    # Within 45 minutes the window's period and the hour are the same: the same figures.
    assert lines['alloc_delivered_over_owed_hourly{budget="nlp"}'] == 1.0
    assert lines['alloc_delivered_within_owed_hourly_gpu_seconds_total{budget="nlp"}'] == 8 * 2700
    assert 'alloc_wait_seconds_count{class="small"}' in lines


def test_a_share_changed_while_the_controller_runs_is_used_from_its_next_round(config):
    from alloc.controller import Controller
    from alloc.controller.build import executor_for
    from alloc.io.controller_config import load_controller_config

    settings = load_controller_config(config)
    store = StateStore(settings.state_url)
    controller = Controller(executor_for(settings), store, 0.0, settings.budgets)
    first = controller.round_once()
    assert first.snapshot is not None
    assert first.snapshot.budgets.node("vision").share == 0.5
    result = alloc("budgets", "set", "vision", "30%", "--as", "anyone", "--config", config)
    assert result.exit_code == 2  # the config names no owners: nobody may
    store.change_share(0.0, "director", "vision", 0.5, 0.3)  # as an owner would
    second = controller.round_once()
    assert second.snapshot is not None
    assert second.snapshot.budgets.node("vision").share == 0.3
    assert second.snapshot.budgets.effective_allocation("nlp") == 0.5
    store.close()


def test_a_change_in_the_cluster_starts_a_round_before_the_interval_is_over(config):
    import threading
    import time

    from alloc.controller import Controller
    from alloc.controller.build import executor_for
    from alloc.io.controller_config import load_controller_config

    settings = load_controller_config(config)
    executor = executor_for(settings)
    fingerprint = ["before"]
    executor.changes = lambda: fingerprint[0]  # type: ignore[method-assign]
    store = StateStore(settings.state_url)
    controller = Controller(
        executor, store, interval_s=60.0, event_poll_s=0.05, min_round_gap_s=0.3
    )
    stop = threading.Event()
    times: list[float] = []
    errors: list[str] = []

    kinds: list[str] = []

    def on_round(outcome) -> None:
        times.append(time.monotonic())
        errors.append(outcome.error)
        kinds.append(outcome.kind)

    thread = threading.Thread(target=controller.run, args=(stop, 3), kwargs={"on_round": on_round})
    thread.start()
    time.sleep(1.0)
    assert len(times) == 1  # nothing changed: no round before the 60 s interval
    fingerprint[0] = "a job arrived"
    time.sleep(1.0)
    assert len(times) == 2  # an event round, at least the minimum gap after the first
    assert times[1] - times[0] >= 0.3
    fingerprint[0] = "another"  # within the gap of the last round: coalesced, then a round
    time.sleep(1.0)
    stop.set()
    thread.join(timeout=10)
    assert len(times) == 3
    assert errors == ["", "", ""]
    # The first round is a full round; the rounds on events are event passes, recorded as
    # such (the periodic full round is not due before 60 s).
    assert kinds == ["full", "event", "event"]
    assert [r["kind"] for r in reversed(store.rounds())] == ["full", "event", "event"]
    store.close()


def test_event_passes_start_nothing_a_full_round_must_rebalance_for(config):
    # Rounds 15 min apart (the simulated cluster's step). t = 0: a full round starts nlp's a
    # and b. c (vision, 8 GPUs) arrives at 30 min: the passes at 30, 45 and 60 min leave it
    # waiting (the pass that first sees it records the wait: the executor holds it), even at
    # 60 min when a's and b's protection has ended, since a pass never preempts allocated
    # work. The full round at 75 min rebalances: vision is owed its half, so one of nlp's
    # runs is preempted and c starts. Every plan is validated whole before it is applied.
    from alloc.controller import Controller
    from alloc.controller.build import executor_for
    from alloc.io.controller_config import load_controller_config

    settings = load_controller_config(config)
    executor = executor_for(settings)
    store = StateStore(settings.state_url)
    controller = Controller(executor, store)
    kinds = [False, True, True, True, True, False]  # event?
    outcomes = [controller.round_once(event=e) for e in kinds]
    assert [o.error for o in outcomes] == [""] * 6
    assert [o.kind for o in outcomes] == ["full", "event", "event", "event", "event", "full"]
    assert [(o.started, o.preempted) for o in outcomes] == [
        (2, 0),
        (0, 0),
        (0, 0),
        (0, 0),
        (0, 0),
        (1, 1),
    ]
    # The pass at 30 min recorded c's wait; the full round, c's start.
    third = store.decisions_of(outcomes[2].round_id)
    assert [(d["workload"], d["action"]) for d in third] == [("c", "wait")]
    last = store.last_decisions(["a", "b", "c"])
    assert last["c"]["action"] == "start" and last["c"]["kind"] == "full"
    # The outcome's plan is whole (for metrics and reports): one decision per workload.
    assert {d.workload for d in outcomes[2].plan.decisions} == {"a", "b", "c"}
    store.close()


def test_the_controller_credits_delivered_time_per_lookback_period_and_per_hour():
    # One node owed 4 GPUs for 3 hours (12 GPU-hours) gets 0 GPUs in hours 0-1 and 8 in
    # hour 2. A 3-hour lookback: one period, credited min(8, 12) = 8 GPU-hours. A 2-hour
    # lookback: the first period credits min(0, 8) = 0, the second min(8, 4) = 4. Hour by
    # hour (a 1-hour period): only hour 2 counts, min(8, 4) = 4.
    from alloc.controller.metrics import Credit

    hour = 3600.0
    for period_h, expected in ((3, 8.0), (2, 4.0), (1, 4.0)):
        credit = Credit(100.0, period_h * hour)
        credit.add(100.0, 100.0 + 0.5 * hour, 0.0, 4.0)  # rounds half an hour apart
        credit.add(100.0 + 0.5 * hour, 100.0 + 2 * hour, 0.0, 4.0)
        seen = [credit.credited]
        credit.add(100.0 + 2 * hour, 100.0 + 3 * hour, 8.0, 4.0)
        seen.append(credit.credited)
        assert credit.credited == pytest.approx(expected * hour)
        assert seen == sorted(seen)  # a counter: the credit never goes down
    # Rates held across several boundaries at once are split at each of them.
    credit = Credit(0.0, hour)
    credit.add(0.0, 3 * hour, 2.0, 1.0)
    assert credit.credited == pytest.approx(3 * hour)


@pytest.mark.parametrize(
    ("kubernetes", "named"),
    [
        ("{queues: {ns1: nlp/nowhere}}", ["kubernetes.queues.ns1", "nlp/nowhere"]),
        ("{kubeconfig: /nonexistent/kubeconfig}", ["kubernetes", "cannot connect"]),
        ("{attempts: 0}", ["kubernetes.attempts"]),
        ("{surprise: 1}", ["kubernetes.surprise"]),
    ],
    ids=["unknown budget", "no kubeconfig", "zero attempts", "unknown key"],
)
def test_a_bad_kubernetes_config_is_bad_input(config, kubernetes, named):
    text = config.read_text().replace("executor: sim", "executor: kubernetes")
    config.write_text(text + f"kubernetes: {kubernetes}\n")
    result = alloc("controller", "run", "--config", config, "--rounds", "1")
    assert result.exit_code == 2, result.stderr
    for text in named:
        assert text in result.stderr, result.stderr


def test_status_counts_preemptions_for_host_maintenance_apart_from_the_plans_own(config, tmp_path):
    # At 45 min a and b run on h1 and h2, protected until 1 h. h1 goes into maintenance: the
    # next round preempts a although it is protected (reason host_maintenance), an
    # availability event that status reports apart. Then h2 does too: the round status runs
    # would preempt b the same way.
    import sqlite3

    assert alloc("controller", "run", "--config", config, "--rounds", "3").exit_code == 0
    cluster = sqlite3.connect(tmp_path / "cluster.db")
    cluster.execute("UPDATE hosts SET state = 'maintenance' WHERE name = 'h1'")
    cluster.commit()
    result = alloc("controller", "run", "--config", config, "--rounds", "1")
    assert result.exit_code == 0, result.stderr
    assert "0 started, 1 preempted, 0 failed" in result.stderr
    cluster.execute("UPDATE hosts SET state = 'maintenance' WHERE name = 'h2'")
    cluster.commit()
    cluster.close()
    status = alloc("status", "--config", config)
    assert status.exit_code == 0, status.stderr
    text = " ".join(status.stdout.split())
    assert "running: 1 workload; this round preempts 1 as their host went into maintenance" in text
    assert "carried out: starts 2, preemptions 0, and apart 1 as hosts went into maintenance" in (
        text
    )


@pytest.mark.parametrize("command", ["status", "queue", "explain", "solve"])
@pytest.mark.parametrize("solver", ["gurobi", "GREEDY"])
def test_every_command_with_solver_says_an_unknown_solver_is_bad_input(config, command, solver):
    """One check of `--solver` for every command (status once reached the round with it and
    said `internal error: ValueError`)."""
    args = ["--config", config] if command in ("status", "queue") else [config.parent / "lab.yaml"]
    if command == "explain":
        args.append("a")
    result = alloc(command, *args, "--solver", solver)
    assert result.exit_code == 2, result.output
    assert f"--solver: expected milp or greedy, got '{solver}'" in result.stderr
    assert "internal error" not in result.output


def test_the_cli_knows_the_solvers_the_round_knows():
    from alloc.cli.params import SOLVER_NAMES
    from alloc.round import SOLVERS

    assert SOLVER_NAMES == SOLVERS


def test_status_counts_work_a_round_started_that_the_ledger_has_not_seen_yet(config, tmp_path):
    """The ledger opens a run when a round sees it running, the round after its start: right
    after the first round status says so rather than `0 runs (0 running)` alone."""
    assert alloc("controller", "run", "--config", config, "--rounds", "1").exit_code == 0
    status = alloc("status", "--config", config)
    assert status.exit_code == 0, status.stderr
    text = " ".join(status.stdout.split())
    assert "ledger: 0 runs (0 running; 2 more running, not yet seen by a round)" in text
    assert "running: 2 workloads; this round keeps 2" in text


def test_the_live_view_charges_running_work_the_ledger_has_not_seen_as_its_sighting_will():
    """status, queue and explain see the usage the controller's next round sees once it has
    recorded the work it sees running (its ledger opens a run the round after its start)."""
    from conftest import ago, host, instance, snapshot_of, workload

    from alloc.controller.build import controller_view, live_snapshot, unseen_runs

    snapshot = snapshot_of(
        instance(
            workloads=[
                workload("r", 8, hosts={"h1": 8}, started=ago(hours=3)),
                workload("u", 8, budget="b", min_runtime="0s", hosts={"h2": 8}),
                workload("q", 8),
            ],
            hosts=[host("h1"), host("h2"), host("h3")],
        )
    )

    class Still:  # an executor whose cluster stays as it is
        def snapshot(self):
            return snapshot

        def ended_runs(self):
            return []

    store = StateStore()
    seen = live_snapshot(Still(), store)  # type: ignore[arg-type]
    assert [r.workload for r in unseen_runs(seen, store)] == ["r", "u"]
    assert seen.usage_gpu_hours and "b" not in seen.usage_gpu_hours  # u is not charged
    store.observe(snapshot.now.timestamp(), unseen_runs(seen, store))  # the round's sighting
    after = controller_view(snapshot, store)
    assert unseen_runs(after, store) == []
    assert after.usage_gpu_hours == pytest.approx(seen.usage_gpu_hours)


def test_a_clean_stop_says_the_controller_released_its_lease_not_that_it_lost_it(config):
    result = alloc("controller", "run", "--config", config, "--rounds", "1")
    assert result.exit_code == 0, result.stderr
    assert "released the leader lease (epoch 1)" in result.stderr
    assert "lost the leader lease" not in result.stderr


def test_ctrl_c_stops_the_controller_after_its_round_with_exit_130(config):
    """README's exit codes: 130 stopped by Ctrl-C (SIGINT); the lease is released, not lost."""
    import os
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).parent.parent
    process = subprocess.Popen(
        [sys.executable, "-m", "alloc", "controller", "run", "--config", str(config)],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while not any(line.startswith("round 1:") for line in seen):
        line = process.stderr.readline()
        assert line and time.monotonic() < deadline, "".join(seen)
        seen.append(line)
    process.send_signal(signal.SIGINT)
    stderr = "".join(seen) + process.communicate(timeout=60)[1]
    assert process.returncode == 130, stderr
    assert "released the leader lease" in stderr and "lost the leader lease" not in stderr
    assert stderr.strip().splitlines()[-1] == (
        "interrupted (Ctrl-C): the controller stopped after its current round"
    )


@pytest.mark.parametrize(
    "executor, named",
    [
        pytest.param(["--executor", "slurm"], "and --executor slurm (use", id="the option"),
        pytest.param([], "runs executor kubernetes (use", id="the config"),
    ],
)
def test_a_simulated_clock_without_the_sim_executor_names_where_the_executor_came_from(
    config, executor, named
):
    if not executor:
        config.write_text(config.read_text().replace("executor: sim", "executor: kubernetes"))
    result = alloc("controller", "run", "--config", config, "--clock", "simulated", *executor)
    assert result.exit_code == 2, result.output
    assert "--clock: a simulated clock is the simulated cluster's" in result.stderr
    assert named in " ".join(result.stderr.split())
    if executor:
        assert "runs executor" not in result.stderr


@pytest.mark.parametrize(
    "command",
    [["status"], ["queue"], ["explain", "a"]],
    ids=["status", "queue", "explain"],
)
def test_every_live_command_gives_the_executors_notes_in_one_form(config, monkeypatch, command):
    """A job read otherwise than declared (a Slurm comment's typo): `note: JOB: WHY` on stderr
    from status, queue and explain alike (status and explain once wrote it without `note:`,
    or not at all)."""
    import alloc.controller.build as build

    real = build.executor_for

    def noted(settings, kind=None, **options):
        executor = real(settings, kind, **options)
        executor.notes = lambda: {"a": "unknown key 'min_runtim'"}
        return executor

    monkeypatch.setattr(build, "executor_for", noted)
    assert alloc("controller", "run", "--config", config, "--rounds", "1").exit_code == 0
    result = alloc(command[0], "--config", config, *command[1:])
    assert result.exit_code == 0, result.output
    assert "note: a: unknown key 'min_runtim'" in result.stderr
    assert "unknown key" not in result.stdout
