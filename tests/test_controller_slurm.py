"""The controller against a real Slurm (tests/slurm_local.py): `alloc controller run` reads
the cluster, starts what the plan says, and keeps its ledger, plans and actions in its state
database; a restarted controller carries on from the same state without repeating anything."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from slurm_local import PLAIN, Cluster, cluster_of
from typer.testing import CliRunner

from alloc.adapters.slurm import SlurmExecutor, SlurmSite
from alloc.adapters.slurm.commands import SlurmCommands
from alloc.cli.app import app
from alloc.controller import Controller
from alloc.controller.state import StateStore
from alloc.io.controller_config import load_controller_config

CONFIG = """\
name: local
interval: 1s
state: sqlite:///{db}
policy: {{solver: greedy, time_limit: 5s}}
budgets:
  name: lab
  children:
    - {{name: nlp, share: 50%, owners: [pm-nlp]}}
    - {{name: vision, share: 50%}}
metrics: {{port: 0}}
slurm:
  accounts: {{nlp: nlp, vision: vision}}
  command_timeout: 15s
"""


@pytest.fixture
def slurm(tmp_path_factory):
    yield from cluster_of(PLAIN, tmp_path_factory)


def controller(slurm: Cluster, config: Path, rounds: int):
    return CliRunner().invoke(
        app,
        ["controller", "run", "--config", str(config), "--rounds", str(rounds)],
        env=slurm.env,
    )


def test_controller_rounds_start_jobs_and_record_runs_plans_and_actions(slurm, tmp_path):
    db = tmp_path / "state.db"
    config = tmp_path / "controller.yaml"
    config.write_text(CONFIG.format(db=db))
    a = slurm.sbatch("nlp", "gpu:8", nodes=2, comment="alloc: min_runtime=1h")
    b = slurm.sbatch("vision", "gpu:4", comment="alloc: min_runtime=30m priority=2")
    result = controller(slurm, config, 1)
    assert result.exit_code == 0, result.output + result.stderr
    assert "round 1: full round, 2 started, 0 preempted, 0 failed" in result.stderr
    slurm.wait(lambda jobs: all(jobs[j]["job_state"] == "RUNNING" for j in (a, b)))
    # The second round sees both running: their runs open, charged from Slurm's start time.
    result = controller(slurm, config, 1)
    assert result.exit_code == 0, result.output + result.stderr
    store = StateStore(f"sqlite:///{db}")
    jobs = slurm.jobs()
    # (jobs of earlier tests ended minutes ago: Slurm still lists them, and they ran)
    runs = {r.workload: r for r in store.runs() if r.workload in (a, b)}
    assert set(runs) == {a, b}
    assert {r.workload for r in store.open_runs()} == {a, b}
    assert runs[a].started_s == jobs[a]["start_time"] and runs[a].ended_s is None
    assert (runs[a].budget, runs[a].gpus, runs[a].charged) == ("nlp", 16, True)
    first, second = sorted(store.rounds(), key=lambda r: r["id"])
    assert first["applied_s"] is not None and second["applied_s"] is not None
    decided = {d["workload"]: d for d in store.decisions_of(first["id"])}
    assert decided[a]["action"] == "start" and len(decided[a]["hosts"]) == 2
    assert {x["workload"] for x in store.actions_of(first["id"]) if x["ok"]} == {a, b}
    # A job that ends is closed at the end Slurm reports, not at the next round.
    slurm.run("scancel", b)
    ended = slurm.wait(lambda jobs: jobs[b]["job_state"] == "CANCELLED")
    time.sleep(1.1)
    result = controller(slurm, config, 1)
    assert result.exit_code == 0, result.output + result.stderr
    runs = {r.workload: r for r in store.runs() if r.workload in (a, b)}
    assert runs[b].ended_s == ended[b]["end_time"]
    assert runs[a].ended_s is None
    store.close()


def test_a_bad_controller_config_is_bad_input_naming_file_line_and_field(tmp_path):
    config = tmp_path / "controller.yaml"
    config.write_text(
        CONFIG.format(db=tmp_path / "s.db").replace("vision: vision}", "vision: viz}")
    )
    result = CliRunner().invoke(app, ["controller", "run", "--config", str(config)])
    assert result.exit_code == 2
    assert f"{config}:12: slurm.accounts.vision: unknown budget node 'viz'" in result.stderr
    assert not (tmp_path / "s.db").exists()


def test_slurmctld_stopped_in_the_middle_of_a_round_fails_that_round_only(slurm, tmp_path):
    config = tmp_path / "controller.yaml"
    config.write_text(CONFIG.format(db=tmp_path / "state.db"))
    settings = load_controller_config(config)
    commands = SlurmCommands(timeout_s=2.0, attempts=2, backoff_s=0.2, env=slurm.env)
    site = SlurmSite(settings.slurm.accounts)
    executor = SlurmExecutor(site, settings.budgets, settings.policy, commands)
    store = StateStore(settings.state_url)
    controller = Controller(executor, store, interval_s=1.0)
    a = slurm.sbatch("nlp", "gpu:8", comment="alloc: min_runtime=1h")
    pid = int((PLAIN / "run" / "slurmctld.pid").read_text())
    apply = executor.apply

    def apply_with_slurmctld_stopped(plan):
        os.kill(pid, signal.SIGSTOP)  # between the snapshot and the first action
        return apply(plan)

    executor.apply = apply_with_slurmctld_stopped  # type: ignore[method-assign]
    try:
        failed = controller.round_once()
    finally:
        os.kill(pid, signal.SIGCONT)
    assert "no answer within 2 s" in failed.error
    (planned,) = store.rounds()
    assert planned["applied_s"] is None  # recorded before acting, never marked applied
    executor.apply = apply  # type: ignore[method-assign]
    ok = controller.round_once()
    assert ok.error == "" and ok.started == 1
    jobs = slurm.wait(lambda jobs: jobs[a]["job_state"] == "RUNNING")
    assert jobs[a]["restart_cnt"] == 0
    assert [r["applied_s"] is not None for r in sorted(store.rounds(), key=lambda r: r["id"])] == [
        False,
        True,
    ]
    store.close()


def test_status_says_why_a_jobs_contract_was_not_used(slurm, tmp_path):
    config = tmp_path / "controller.yaml"
    config.write_text(CONFIG.format(db=tmp_path / "state.db"))
    typo = slurm.sbatch("nlp", "gpu:2", comment="alloc: min_runtime=soon")
    waits = slurm.sbatch("nlp", "gpu:2", comment="alloc: min_runtime=1h")
    slurm.run("scontrol", "update", f"JobId={waits}", f"Dependency=afterok:{typo}")
    slurm.run("scontrol", "release", waits)  # now Slurm itself keeps it waiting
    slurm.wait(lambda jobs: jobs[waits]["state_reason"] == "Dependency")
    result = CliRunner().invoke(app, ["status", "--config", str(config)], env=slurm.env)
    assert result.exit_code == 0, result.stderr
    assert f"note: {typo}: min_runtime: expected a duration" in result.stderr  # notes: stderr
    assert f"note: {waits}: Slurm holds it back (Dependency" in result.stderr
