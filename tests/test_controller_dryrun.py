"""`alloc controller run --clock simulated`: the controller's own loop, state store and metrics
on the simulated cluster's clock: hours of simulated time in seconds, ending when the trace
is done, and the same runs as `alloc simulate` on the same lab and trace."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from sim2 import write_lab
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.controller import Controller, RoundOutcome, StateStore
from alloc.controller.build import executor_for
from alloc.controller.dryrun import DryRun
from alloc.controller.metrics import ControllerMetrics
from alloc.io.controller_config import load_controller_config
from alloc.solve.validate import validate

H = 3600.0
# The lab and trace of tests/sim2.py: nlp's a and b (10 h of work each, protected
# 1 h) start at once; vision's c (1 h, protected 30 min) arrives at 30 min and waits: nlp's
# work is protected. The full round at 1 h rebalances (vision is owed half): b is preempted,
# keeping its hour of work (checkpoints every hour), and c starts. c ends at 2 h, when the
# full round restarts b; a ends at 10 h, b at 2 h + 9 h = 11 h: the trace is done.
CONFIG = """\
name: sim2
executor: sim
interval: 1h
event_poll: 1m
min_round_gap: 1m
state: sqlite:///{state}
policy: {{solver: milp, time_limit: 10s}}
budgets:
  name: lab
  children: [{{name: nlp, share: 50%}}, {{name: vision, share: 50%}}]
metrics: {{port: 0}}
sim: {{lab: lab.yaml, trace: trace.csv, cluster: cluster.db}}
"""
EPOCH = 1795996800.0  # 2026-11-30T00:00:00Z
RUNS = [  # (job, started, ended, GPUs, budget), seconds from the lab's now
    ("a", 0.0, 10 * H, 8, "nlp"),
    ("b", 0.0, 1 * H, 8, "nlp"),
    ("c", 1 * H, 2 * H, 8, "vision"),
    ("b", 2 * H, 11 * H, 8, "nlp"),
]
# Full rounds every hour of simulated time, 0 h to 11 h. Event passes when the cluster's queue
# changes (looked at every minute, at least a minute after the last round): after the
# controller's own starts and stops (as Slurm's queue shows them), and at c's arrival. A
# change seen when the hourly round is due is that round's (c's end at 2 h, a's at 10 h).
ROUNDS = [  # (seconds from the lab's now, kind, started, preempted)
    (0.0, "full", 2, 0),
    (60.0, "event", 0, 0),
    (1800.0, "event", 0, 0),  # c arrives and waits: nlp's work is protected
    (1 * H, "full", 1, 1),  # rebalanced: b stops, c starts
    (1 * H + 60, "event", 0, 0),
    (2 * H, "full", 1, 0),  # c is done: b starts again
    (2 * H + 60, "event", 0, 0),
    *((k * H, "full", 0, 0) for k in range(3, 12)),
]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    write_lab(tmp_path)
    path = tmp_path / "controller.yaml"
    path.write_text(CONFIG.format(state=tmp_path / "state.db"))
    return path


def alloc(*args: str | Path):
    return CliRunner().invoke(app, [str(a) for a in args])


def dry_run(config: Path, until_s: float | None = None):
    """What `alloc controller run --clock simulated` wires, with every round kept."""
    settings = load_controller_config(config)
    cluster = executor_for(settings)
    dry = DryRun.start(cluster, until_s)
    store = StateStore(settings.state_url)
    controller = Controller(
        cluster,
        store,
        settings.interval_s,
        settings.budgets,
        event_poll_s=settings.event_poll_s,
        min_round_gap_s=settings.min_round_gap_s,
        clock=dry.clock,
    )
    metrics = ControllerMetrics()
    outcomes: list[RoundOutcome] = []
    stop = threading.Event()

    def on_round(o: RoundOutcome) -> None:
        outcomes.append(o)
        metrics.observe(o)
        if dry.observe(o):
            stop.set()

    controller.run(stop, on_round=on_round)
    return cluster, store, dry, metrics, outcomes


def test_a_dry_run_covers_the_trace_in_simulated_time_with_both_kinds_of_rounds(config):
    cluster, store, dry, metrics, outcomes = dry_run(config)
    assert dry.why_over == "the trace is done"
    assert [o.error for o in outcomes] == [""] * len(ROUNDS)
    assert [(o.at_s - EPOCH, o.kind, o.started, o.preempted) for o in outcomes] == ROUNDS
    # 11 hours of simulated time, every record stamped with it.
    assert dry.clock.t_s == 11 * H
    recorded = list(reversed(store.rounds(last=100)))
    assert [(r["at_s"] - EPOCH, r["kind"]) for r in recorded] == [(t, k) for t, k, _, _ in ROUNDS]
    assert all(r["applied_s"] == r["at_s"] for r in recorded)  # waiting took no simulated time
    # Every plan of either kind, whole, keeps the SPEC's invariants on the cluster it was
    # made for; full rounds were solved by the MILP.
    for o in outcomes:
        assert o.plan is not None and o.snapshot is not None
        assert validate(o.snapshot, o.plan) == [], (o.at_s - EPOCH, o.kind)
        assert {d.workload for d in o.plan.decisions} == {w.id for w in o.snapshot.workloads}
        assert o.plan.report.solver == ("milp" if o.kind == "full" else "event")
    # The ledger is what the simulated cluster ran, run by run and to the second.
    ran = [(j, s - EPOCH, e - EPOCH, g, b) for j, s, e, g, b in cluster.runs()]
    assert sorted(ran) == sorted(RUNS)
    ledger = [(r.workload, r.started_s - EPOCH, r.ended_s, r.gpus, r.budget) for r in store.runs()]
    assert sorted((j, s, e - EPOCH, g, b) for j, s, e, g, b in ledger) == sorted(RUNS)
    assert all(r.charged for r in store.runs())

    # /metrics: vision was owed 8 GPUs from c's arrival (30 min) to its end (2 h), 12
    # GPU-hours, and got 8; nlp was owed its half for 11 hours and held at least that.
    def sample(name: str, budget: str) -> float | None:
        return metrics.registry.get_sample_value(name, {"budget": budget})

    assert sample("alloc_owed_gpu_seconds_total", "vision") == 12 * H
    assert sample("alloc_delivered_gpu_seconds_total", "vision") == 8 * H
    assert sample("alloc_delivered_over_owed", "vision") == pytest.approx(2 / 3)
    assert sample("alloc_owed_gpu_seconds_total", "nlp") == 88 * H
    assert sample("alloc_delivered_over_owed", "nlp") == 1.0
    assert metrics.registry.get_sample_value("alloc_starts_total") == 4
    store.close()


def test_the_dry_run_agrees_with_alloc_simulate_on_the_same_lab_and_trace(config, tmp_path):
    # `alloc simulate` with the controller's interval and gap runs the same round function on
    # the same inputs: the same runs, to the second, and the same delivered over owed. Its
    # rounds differ: it jumps to each event where the controller polls each minute (here every
    # time is on the minute, so both see each change at once), it runs no pass after its own
    # starts and stops (a real cluster manager's queue changes then, so the controller's
    # fingerprint does): 1 event pass (c's arrival) against the controller's 4, and it runs
    # to its horizon rather than to the end of the trace.
    from alloc.ledger import SQLiteStore
    from alloc.sim.output import write_run
    from alloc.sim.run import RunSpec, load_inputs, simulate

    cluster, store, _, metrics, outcomes = dry_run(config)
    lab = (tmp_path / "lab.yaml").read_text()
    spec = RunSpec(
        "dry",
        lab,
        str(tmp_path / "lab.yaml"),
        "milp",
        days=1,
        out=str(tmp_path / "sim"),
        trace=str(tmp_path / "trace.csv"),
        round_interval_s=H,
        min_round_gap_s=60.0,
        ledger=str(tmp_path / "sim-ledger.sqlite"),
    )
    result = simulate(spec, *load_inputs(spec), None)
    simulated = [
        (str(i.workload), i.start_s - EPOCH, i.end_s - EPOCH, int(i.gpus), i.budget)
        for i in SQLiteStore(spec.ledger).intervals()
    ]
    assert sorted(simulated) == sorted(RUNS)
    assert sorted((j, s - EPOCH, e - EPOCH, g, b) for j, s, e, g, b in cluster.runs()) == sorted(
        RUNS
    )
    # What each ran, rounds that changed nothing aside: the same starts and stops at the
    # same times, by the same kind of round.
    acted = [(t, k, n, p) for t, k, n, p in ROUNDS if n or p]
    assert [
        (r.t_s, r.kind, r.starts, r.preempts)
        for r in result.recorder.rounds
        if r.starts or r.preempts
    ] == acted
    assert [
        (o.at_s - EPOCH, o.kind, o.started, o.preempted)
        for o in outcomes
        if o.started or o.preempted
    ] == acted
    # The simulator runs its whole horizon (--days 1: hourly full rounds 0 h to 24 h) and skips
    # those that provably change nothing; the controller ran the 12 of the trace (0 h to 11 h).
    assert result.rounds + result.skipped_rounds == 25
    assert result.passes == 1 and sum(o.kind == "event" for o in outcomes) == 4
    teams = write_run(result, tmp_path / "sim", "milp", 1, {})["teams"]
    for team in ("nlp", "vision"):
        dry = metrics.registry.get_sample_value("alloc_delivered_over_owed", {"budget": team})
        assert dry == pytest.approx(teams[team]["delivered_over_owed"], abs=1e-6)
    store.close()


def test_the_command_prints_each_round_and_status_reads_the_run_back(config, tmp_path):
    result = alloc("controller", "run", "--config", config, "--clock", "simulated")
    assert result.exit_code == 0, result.stderr
    assert "a dry run on simulated time from 2026-11-30 00:00:00 UTC" in result.stderr
    lines = [line for line in result.stderr.splitlines() if ") round " in line]
    assert len(lines) == len(ROUNDS)
    assert lines[0].startswith("2026-11-30 00:00:00 (+0:00:00) round 1: full round, 2 started")
    assert lines[3].startswith(
        "2026-11-30 01:00:00 (+1:00:00) round 4: full round, 1 started, 1 preempted"
    )
    assert lines[-1].startswith("2026-11-30 11:00:00 (+11:00:00) round 16: full round")
    assert "UTC (11 h) in " in result.stdout and "s: the trace is done" in result.stdout
    assert "16 rounds (12 full rounds, 4 event passes), 4 started, 1 preempted" in result.stdout
    assert "delivered/owed: nlp 100.0%, vision 66.7%" in result.stdout

    status = alloc("status", "--config", config)
    assert status.exit_code == 0, status.stderr
    text = " ".join(status.stdout.split())  # as one line, whatever the console wrapped
    assert "sim2 at 2026-11-30 11:00:00 UTC" in text
    assert (
        "rounds: 16 from 2026-11-30 00:00:00 UTC to 2026-11-30 11:00:00 UTC (11 h; simulated "
        "time): "
        "12 full rounds, 4 event passes (event 4, optimal 12); carried out: starts 4, "
        "preemptions 1" in text
    )
    assert "ledger: 4 runs (0 running); charged GPU-hours: nlp 160.0, vision 8.0" in text
    # Two clocks in one view, each said: the rounds' (simulated) and the lease's (wall).
    assert "(11 h; simulated time)" in text
    assert "released the lease" in text and text.endswith("ago (wall clock)")

    # Run again: the simulated cluster has run its trace; nothing is run or written.
    before = (tmp_path / "state.db").stat().st_mtime_ns
    again = alloc("controller", "run", "--config", config, "--clock", "simulated")
    assert again.exit_code == 2
    assert "cluster.db" in again.stderr and "has run its whole trace" in again.stderr
    assert (tmp_path / "state.db").stat().st_mtime_ns == before
    # A new cluster with the old state would mix two runs: bad input too.
    (tmp_path / "cluster.db").unlink()
    mixed = alloc("controller", "run", "--config", config, "--clock", "simulated")
    assert mixed.exit_code == 2
    assert "state.db" in mixed.stderr and "an earlier run's" in mixed.stderr


def test_metrics_served_during_a_dry_run_count_its_rounds_in_simulated_time(config):
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config.write_text(config.read_text().replace("{port: 0}", f"{{port: {port}}}"))
    result = alloc("controller", "run", "--config", config, "--clock", "simulated")
    assert result.exit_code == 0, result.stderr
    assert f"/metrics on 127.0.0.1:{port}" in result.stderr
    # The server thread outlives the command here (the test's process goes on).
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    lines = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }
    assert lines['alloc_rounds_total{status="optimal"}'] == 12  # the full rounds
    assert lines['alloc_rounds_total{status="event"}'] == 4  # the event passes
    assert lines["alloc_starts_total"] == 4
    assert sum(v for k, v in lines.items() if k.startswith("alloc_preemptions_total")) == 1
    assert lines['alloc_owed_gpu_seconds_total{budget="nlp"}'] == 88 * H  # simulated seconds
    assert lines['alloc_delivered_over_owed{budget="vision"}'] == pytest.approx(2 / 3)


def test_until_stops_the_simulated_clock_and_a_second_run_carries_on_to_the_same_runs(config):
    result = alloc(
        "controller", "run", "--config", config, "--clock", "simulated", "--until", "90m"
    )
    assert result.exit_code == 0, result.stderr
    # Rounds at 0, 1 min, 30 min, 1 h and 1 h 1 min; the next is due at 2 h, after --until.
    assert len([line for line in result.stderr.splitlines() if ") round " in line]) == 5
    assert (
        "(1 h 30 min) in " in result.stdout
        and "the simulated clock reached --until" in result.stdout
    )
    # The rest of the trace, from where the cluster was left (its first round is a full one).
    rest = alloc("controller", "run", "--config", config, "--clock", "simulated")
    assert rest.exit_code == 0, rest.stderr
    assert "the trace is done" in rest.stdout
    settings = load_controller_config(config)
    store = StateStore(settings.state_url)
    ledger = [(r.workload, r.started_s - EPOCH, r.ended_s, r.gpus, r.budget) for r in store.runs()]
    assert sorted((j, s, e - EPOCH, g, b) for j, s, e, g, b in ledger) == sorted(RUNS)
    store.close()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--clock", "simulated", "--executor", "slurm"], ["--clock", "needs the sim executor"]),
        (["--clock", "simulated", "--executor", "kubernetes"], ["executor kubernetes"]),
        (["--until", "2h"], ["--until", "--clock simulated"]),
        (["--clock", "simulated", "--until", "soon"], ["--until", "expected a duration"]),
        (["--clock", "simulated", "--until", "0"], ["--until", "above 0"]),
        (["--clock", "sundial"], ["--clock", "wall or simulated"]),
    ],
    ids=[
        "slurm on simulated time",
        "kubernetes on simulated time",
        "until on the wall clock",
        "until not a duration",
        "until zero",
        "unknown clock",
    ],
)
def test_bad_clock_options_are_bad_input_and_nothing_is_written(config, tmp_path, args, named):
    result = alloc("controller", "run", "--config", config, *args)
    assert result.exit_code == 2, result.stderr
    for text in named:
        assert text in result.stderr, (text, result.stderr)
    assert not (tmp_path / "state.db").exists()
    assert not (tmp_path / "cluster.db").exists()


def test_the_readme_example_runs_to_the_end_of_its_trace(tmp_path):
    # instances/controller/ as a clone has it (dry-run/ holds only its .gitignore), copied.
    here = Path(__file__).parent.parent / "instances" / "controller"
    folder = tmp_path / "controller"
    shutil.copytree(here, folder, ignore=shutil.ignore_patterns("*.db"))
    config = folder / "dry-run.yaml"
    result = alloc("controller", "run", "--config", config, "--clock", "simulated")
    assert result.exit_code == 0, result.stderr
    # Its simulated cluster and state are kept beside it, in the folder git ignores.
    assert {"cluster.db", "state.db"} <= {p.name for p in (folder / "dry-run").iterdir()}
    assert f"state in sqlite:///{folder}/dry-run/state.db" in result.stderr
    assert "s: the trace is done" in result.stdout
    assert "48 started, 16 preempted" in result.stdout
    settings = load_controller_config(config)
    store = StateStore(settings.state_url)
    cluster = executor_for(settings)
    assert cluster.unfinished() == 0  # type: ignore[attr-defined]
    ledger = sorted((r.workload, r.started_s, r.ended_s, r.gpus, r.budget) for r in store.runs())
    assert ledger == sorted(cluster.runs())  # type: ignore[attr-defined]
    store.close()
    status = alloc("status", "--config", config)
    assert status.exit_code == 0, status.stderr
    assert "ledger: 48 runs (0 running)" in " ".join(status.stdout.split())


def test_status_says_why_its_reason_differs_from_the_controllers_last_round(tmp_path):
    """README tutorial 4: at 5 h the controller's last round, on the cluster before its own
    plan, left j12, j25 and j29 waiting as vision was over its allocation; once it had
    started j19 and preempted j14 and j18, status's round finds no room for them. The two
    rounds saw different clusters: status says so beside the controller's record."""
    here = Path(__file__).parent.parent / "instances" / "controller"
    folder = tmp_path / "controller"
    shutil.copytree(here, folder, ignore=shutil.ignore_patterns("*.db"))
    config = folder / "dry-run.yaml"
    run = alloc("controller", "run", "--config", config, "--clock", "simulated", "--until", "5h")
    assert run.exit_code == 0, run.stderr
    status = alloc("status", "--config", config)
    assert status.exit_code == 0, status.stderr
    text = " ".join(status.stdout.split())
    assert "before it carried out its own starts and preemptions" in text
    assert (
        "j12, j25, j29: this round's reason differs from the controller's: it sees the cluster "
        "after the controller's last starts and preemptions" in text
    )
    assert "1 more running, not yet seen by a round" in text  # j19, started by the last round
