"""Ctrl-C (SIGINT) stops a long command cleanly (issue 17): the solvers leave the signal to
the program, a simulation asked to stop ends at a consistent point and what it covered is
written, marked partial; `alloc simulate` and `alloc whatif` exit 130 with one line."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from conftest import host, instance, snapshot_of

from alloc.domain import BudgetPath, Snapshot, TraceJob, WorkloadId
from alloc.ledger import MemoryStore
from alloc.metrics import metrics, timeline_rows
from alloc.sim.engine import SimConfig, Simulation
from alloc.sim.policies import planner
from alloc.sim.run import NothingSimulated, RunSpec, run
from alloc.solve.arrays import INF, ArrayModel
from alloc.solve.milp_backend import BACKENDS
from alloc.solve.milp_backend import solve as solve_model


@contextmanager
def sigint_recorded() -> Iterator[list[float]]:
    """SIGINTs received (their times) while inside, instead of KeyboardInterrupt."""
    seen: list[float] = []
    previous = signal.signal(signal.SIGINT, lambda *_: seen.append(time.monotonic()))
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def knapsacks(n: int = 150, rows: int = 60, seed: int = 0) -> ArrayModel:
    """A multi-dimensional 0-1 knapsack no backend proves optimal within a second."""
    rng = np.random.default_rng(seed)
    model = ArrayModel()
    x = model.variables(n, 0.0, 1.0, rng.integers(1, 100, n).astype(float), integer=True)
    weights = rng.integers(1, 100, (rows, n)).astype(float)
    r = model.rows("capacity", rows, -INF, weights.sum(axis=1) // 2)
    model.terms(np.repeat(r, n), np.tile(x, rows), weights.ravel())
    return model


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_solver_leaves_ctrl_c_to_the_program(backend):
    # SCIP and CP-SAT catch SIGINT by default: the solve ends early as if its time limit had
    # come and the program never hears of it (a simulation would carry on with a round cut
    # short). Here the program's handler gets the signal once the solve, run to its limit,
    # returns.
    model = knapsacks()
    model.matrix().scipy()  # scipy loaded now: the signal must come during the solve itself
    with sigint_recorded() as seen:
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        began = time.monotonic()
        timer.start()
        result = solve_model(model, backend, time_limit_s=1.5, threads=1, seed=1, gap=0.0)
        timer.join()
        time.sleep(0.05)  # a pending handler runs at the next bytecode
    assert result.status == "feasible"  # the time limit ended it, not the signal
    assert result.seconds >= 1.4
    assert len(seen) == 1 and seen[0] - began >= 1.4


# -- the simulation asked to stop ----------------------------------------------------------

HOUR = 3600.0


def one_team_lab() -> Snapshot:
    """One host of 8 GPUs; team a holds it all."""
    return snapshot_of(
        instance(
            hosts=[host("h1", block="b1", rack="r1")],
            budgets={"name": "root", "children": [{"name": "a", "share": "100%"}]},
        )
    )


def three_hour_job(**fields: Any) -> TraceJob:
    """Team a's 8-GPU job from 0 s for 3 h (protected for its first hour)."""
    return TraceJob(WorkloadId("j1"), BudgetPath("a"), 8, 0.0, 3 * HOUR, HOUR, **fields)


def stopped_at(limit_s: float) -> tuple[Simulation, Callable[[], bool]]:
    """A one-day run of `three_hour_job` asked to stop once it has reached `limit_s`."""
    sim = Simulation(
        one_team_lab(),
        [three_hour_job(), TraceJob(WorkloadId("j2"), BudgetPath("a"), 8, 1800.0, HOUR, HOUR)],
        planner("greedy"),
        SimConfig(days=1.0, validate_passes=True),
        MemoryStore(),
    )
    return sim, lambda: sim.world.now_s >= limit_s


def test_a_simulation_asked_to_stop_covers_the_time_it_reached():
    # Asked to stop at 2 h: the instant at 2 h (a periodic round) is handled whole, then the
    # run ends there. j1 has run 2 of its 3 hours (16 GPU-hours, charged up to the stop and
    # still running); j2, queued since 30 min, has waited 1.5 h so far and never started.
    sim, stop = stopped_at(2 * HOUR)
    result = sim.run(stop=stop)
    assert (result.partial, result.stopped_at_s, result.horizon_s) == (True, 2 * HOUR, 2 * HOUR)
    assert result.rounds >= 1 and result.violations == 0
    world = result.world
    assert world.ledger.window_gpu_hours(world.epoch0 + result.horizon_s) == {"a": 16.0}
    m = metrics(result, "greedy", 1)
    assert (m["days"], m["partial"]) == (1.0, True)
    assert m["simulated_days"] == pytest.approx(2 / 24, abs=1e-6)  # rounded to 6 places
    assert m["stopped_at"] == "2026-11-30T14:00:00Z"  # the lab's now plus 2 h
    assert m["teams"]["a"]["delivered_gpu_hours"] == 16.0
    assert m["jobs"]["running_at_end"] == 1 and m["jobs"]["queued_at_end"] == 1
    assert m["wait_s"]["small"]["max"] == 1.5 * HOUR  # until the stop, not the day's end
    assert m["wait_allocated_s"] == {
        "p50": 0.0,
        "p90": 1.5 * HOUR,
        "max": 1.5 * HOUR,
        "count": 2,
        "never_started": 1,
    }
    assert [row["hour"] for row in timeline_rows(result)] == [0, 1]


def test_a_simulation_not_stopped_is_whole():
    sim, _ = stopped_at(2 * HOUR)
    result = sim.run(stop=lambda: False)
    m = metrics(result, "greedy", 1)
    assert (result.partial, m["partial"], m["simulated_days"]) == (False, False, 1.0)
    assert "stopped_at" not in m


def test_a_partial_run_writes_every_file_whole_and_says_it_is_partial(tmp_path):
    reached: list[float] = []
    spec = RunSpec(
        label="greedy",
        lab_yaml=yaml.safe_dump(
            instance(
                hosts=[host("h1", block="b1", rack="r1")],
                budgets={"name": "root", "children": [{"name": "a", "share": "100%"}]},
            )
        ),
        lab_file="lab.yaml",
        policy="greedy",
        days=1.0,
        out=str(tmp_path / "out"),
        trace=str(trace_file(tmp_path)),
    )

    def progress(t_s: float, rounds: int, passes: int) -> None:
        reached.append(t_s)

    m = run(spec, progress, stop=lambda: bool(reached) and reached[-1] >= 2 * HOUR)
    out = tmp_path / "out"
    on_disk = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert on_disk == m and m["partial"]
    assert m["simulated_days"] == pytest.approx(2 / 24, abs=1e-6)
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "partial: stopped after 2 h of 1 d simulated (8%)" in report
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []  # no temporary file
    assert len(list(csv.DictReader((out / "timeline.csv").open(encoding="utf-8")))) == 2


def test_a_run_stopped_before_it_began_writes_nothing(tmp_path):
    spec = RunSpec(
        label="greedy",
        lab_yaml=yaml.safe_dump(instance()),
        lab_file="lab.yaml",
        policy="greedy",
        days=1.0,
        out=str(tmp_path / "out"),
        trace=str(trace_file(tmp_path, budget="a")),
    )
    with pytest.raises(NothingSimulated):
        run(spec, stop=lambda: True)
    assert not (tmp_path / "out").exists()


def trace_file(tmp_path: Path, budget: str = "a") -> Path:
    path = tmp_path / "trace.csv"
    path.write_text(
        "id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology\n"
        f"j1,{budget},8,0,10800,1h,true,0,\nj2,{budget},8,1800,3600,1h,true,0,\n",
        encoding="utf-8",
    )
    return path


# -- Ctrl-C on the command line: real processes, no terminal --------------------------------

ROOT = Path(__file__).resolve().parents[1]


def interrupted(command: list[str], out: Path, runs: list[str]) -> tuple[int, str, str]:
    """Start `alloc ...` (stdout to a file, no terminal), wait until each of `runs` has shown
    progress (rounds run), send SIGINT, wait for the end: (exit code, stdout, stderr)."""
    stdout = out.parent / f"{out.name}.stdout"
    with stdout.open("w", encoding="utf-8") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "alloc.cli.app", *command, "--out", str(out)],
            cwd=ROOT,
            stdout=sink,
            stderr=subprocess.PIPE,
            text=True,
        )
        seen: list[str] = []
        waiting = set(runs)
        deadline = time.monotonic() + 240
        assert process.stderr is not None
        while waiting:
            line = process.stderr.readline()
            assert line and time.monotonic() < deadline, "".join(seen)  # ended, or too slow
            seen.append(line)
            progress = re.match(r"progress (\S+).*?: .*?([\d,]+) rounds", line)
            if progress and int(progress[2].replace(",", "")) > 0:
                waiting.discard(progress[1])
        process.send_signal(signal.SIGINT)
        rest = process.communicate(timeout=240)[1]
    return process.returncode, stdout.read_text(encoding="utf-8"), "".join(seen) + rest


def last_line(stderr: str) -> str:
    return stderr.strip().splitlines()[-1]


def assert_lines_stop_when_written(stderr: str, runs: list[str]) -> None:
    """Each run's progress lines end with one saying its partial report is written; no line
    gives an ETA once the stop was asked."""
    lines = stderr.splitlines()
    for label in runs:
        mine = [line for line in lines if re.match(rf"progress {re.escape(label)}\b", line)]
        writing = [line for line in mine if "writing the" in line]
        assert writing == mine[-1:], mine
        assert re.search(r": stopped after .* writing the partial report \.\.\.$", mine[-1])
    stopping = [line for line in lines if "stopping after the current round" in line]
    assert not [line for line in stopping if "ETA" in line], stopping


def test_ctrl_c_stops_simulate_and_writes_what_it_simulated_marked_partial(tmp_path):
    out = tmp_path / "out"
    command = ["simulate", "--synthetic", "--days", "5", "--policy", "greedy"]
    code, stdout, stderr = interrupted([*command, "--progress-every", "0.5s"], out, ["greedy"])
    assert code == 130, stderr
    assert "Traceback" not in stderr
    assert re.fullmatch(
        rf"interrupted \(Ctrl-C\): stopped after \d+ \w+(?: \d+ \w+)? of 5 d simulated \(\d+%\); "
        rf"the partial results are in {re.escape(str(out))}",
        last_line(stderr),
    )
    # The progress lines stop with the simulation; one says the partial report is written.
    assert_lines_stop_when_written(stderr, ["greedy"])
    m = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert m["partial"] is True and m["days"] == 5.0 and 0 < m["simulated_days"] < 5
    assert m["stopped_at"].startswith("20") and m["invariant_violations"] == 0
    assert json.loads(json.dumps(m)) == m
    for name in ("timeline.csv", "teams.csv", "jobs.csv", "rounds.csv"):
        assert list(csv.DictReader((out / name).open(encoding="utf-8"))), name
    assert 'class="partial">partial: stopped after' in (out / "report.html").read_text(
        encoding="utf-8"
    )
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary file left
    # The terminal summary says it, above its table and in its title.
    assert stdout.startswith("partial: stopped after ")
    assert "greedy, 5 days (partial)" in stdout


@pytest.mark.parametrize("jobs", ["1", "2"], ids=["runs in turn", "runs in two workers"])
def test_ctrl_c_stops_whatif_and_compares_what_was_measured(tmp_path, jobs):
    # Three runs of 5 days: interrupted while the first (in turn) or the first two (two
    # workers) run; those are partial, the others never began; the comparison says so.
    out = tmp_path / "out"
    command = ["whatif", "--synthetic", "--days", "5", "--policies", "greedy,fifo,fairshare-sort"]
    command += ["--jobs", jobs, "--progress-every", "0.5s"]
    started = ["base/greedy", "base/fifo"][: int(jobs)]
    code, stdout, stderr = interrupted(command, out, started)
    assert code == 130, stderr
    assert "Traceback" not in stderr
    not_run = ["base/greedy", "base/fifo", "base/fairshare-sort"][int(jobs) :]
    assert last_line(stderr) == (
        f"interrupted (Ctrl-C): 0 runs complete, {len(started)} partial, {len(not_run)} "
        f"not run; the comparison of what was measured is in {out}"
    )
    assert_lines_stop_when_written(stderr, started)
    comparison = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    assert comparison["partial"] is True and comparison["not_run"] == not_run
    assert [r["label"] for r in comparison["runs"]] == started
    for entry in comparison["runs"]:
        assert entry["partial"] is True and 0 < entry["simulated_days"] < 5
        m = json.loads((out / entry["folder"] / "metrics.json").read_text(encoding="utf-8"))
        assert m["partial"] is True and m["simulated_days"] == entry["simulated_days"]
    for label in not_run:
        assert not (out / label.replace("/", "-")).exists()
    html = (out / "comparison.html").read_text(encoding="utf-8")
    assert "partial comparison: stopped before the end" in html
    assert f"Not run: {', '.join(not_run)}" in html
    rows = [line for line in stdout.splitlines() if line.startswith(tuple(started))]
    assert [line.split()[:2] for line in rows] == [[label, "*"] for label in started]
    assert f"not run (stopped before they began): {', '.join(not_run)}" in stdout


def test_a_process_that_ignores_sigint_keeps_ignoring_it():
    # A shell script's background job is started with SIGINT ignored: a Ctrl-C meant for the
    # script is not for it, and `alloc simulate` in it runs on as any program would.
    from alloc.cli.stop import StopOnSigint

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with StopOnSigint() as stop:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            assert not stop()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_the_first_sigint_asks_to_stop_and_the_second_stops_at_once():
    from alloc.cli.stop import StopOnSigint

    told: list[bool] = []
    before = signal.getsignal(signal.SIGINT)
    with StopOnSigint(lambda: told.append(True)) as stop:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        assert stop() and told == [True]
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
    assert signal.getsignal(signal.SIGINT) is before  # put back as it was
