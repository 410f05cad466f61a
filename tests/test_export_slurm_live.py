"""`alloc export --to slurm` against the real local Slurm (tests/slurm_local.py): the script
exported with --config and run with bash leaves the jobs pinned, released, held and requeued
and the drained node marked exactly as `SlurmExecutor.apply` of the same plan does on an
identical second set of jobs, and `--apply` does the same end to end. Every plan is checked
against SPEC.md's invariants."""

from __future__ import annotations

import dataclasses
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from slurm_local import PLAIN, Cluster, cluster_of
from typer.testing import CliRunner

from alloc.adapters.slurm.actions import DRAINED_REASON, implied_by, plan_actions
from alloc.adapters.slurm.commands import SlurmCommands
from alloc.adapters.slurm.executor import SlurmExecutor
from alloc.adapters.slurm.read import SlurmSite
from alloc.adapters.slurm.script import slurm_script
from alloc.cli.app import app
from alloc.domain import Action, BudgetNode, BudgetPath, BudgetTree, Plan, Policy, WorkloadId
from alloc.io import dump_plan
from alloc.round import run_round
from alloc.solve.validate import validate

TREE = BudgetTree(BudgetNode("lab", 1.0, (), (BudgetNode("nlp", 0.5), BudgetNode("vision", 0.5))))
SITE = SlurmSite(accounts={"nlp": BudgetPath("nlp"), "vision": BudgetPath("vision")})
CONFIG = """\
name: local
executor: slurm
state: sqlite:///{folder}/state.db
policy: {{solver: greedy, time_limit: 5s}}
budgets:
  name: lab
  children:
    - {{name: nlp, share: 50%}}
    - {{name: vision, share: 50%}}
metrics: {{port: 0}}
slurm:
  accounts: {{nlp: nlp, vision: vision}}
  command_timeout: 15s
"""
REASON = "xid 79 'q' \"d\" $(touch {folder}/pwned) `touch {folder}/pwned`; rm -rf {folder}/victim"


@pytest.fixture
def slurm(tmp_path_factory):
    yield from cluster_of(PLAIN, tmp_path_factory)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "victim").mkdir()
    (tmp_path / "controller.yaml").write_text(CONFIG.format(folder=tmp_path))
    return tmp_path


def scenario(slurm: Cluster, folder: Path) -> dict[str, str]:
    """gpu-node4 drained (with a hostile reason) and empty; unallocated u1, u2, u3 run on
    gpu-node1..3; nlp's `a` (2 nodes, held) and unallocated `w` (3 nodes: it cannot start
    while anything runs, so Slurm never starts it before alloc holds it) queue. Job ids by
    role."""
    reason = REASON.format(folder=folder)
    slurm.run("scontrol", "update", "NodeName=gpu-node4", "State=DRAIN", f"Reason={reason}")
    roles = {}
    for n in (1, 2, 3):
        pinned = ("sbatch", "--parsable", "-A", "vision", "-N", "1", "--gres=gpu:8")
        out = slurm.run(*pinned, "-w", f"gpu-node{n}", "--output", "/dev/null", str(slurm.script))
        roles[f"u{n}"] = out.strip().split(";")[0]
    slurm.wait(lambda jobs: all(jobs[roles[f"u{n}"]]["job_state"] == "RUNNING" for n in (1, 2, 3)))
    roles["a"] = slurm.sbatch("nlp", "gpu:8", nodes=2, comment="alloc: min_runtime=30m")
    roles["w"] = slurm.sbatch("vision", "gpu:8", nodes=3, hold=False)
    return roles


def executor_of(slurm: Cluster) -> SlurmExecutor:
    policy = Policy(solver="greedy", time_limit_s=5.0)
    return SlurmExecutor(SITE, TREE, policy, commands=SlurmCommands(env=slurm.env))


def solved(executor: SlurmExecutor) -> Plan:
    snapshot = executor.snapshot()
    plan = run_round(snapshot)
    assert validate(snapshot, plan) == []
    return plan


def renamed(plan: Plan, ids: dict[str, str], now: datetime) -> Plan:
    """The same decisions for a second set of jobs read at `now`: each job id replaced and
    every time moved by as much as `now` is later than the plan's."""
    later = now - plan.now
    decisions = tuple(
        dataclasses.replace(
            d,
            workload=WorkloadId(ids[d.workload]),
            protected_until=d.protected_until and d.protected_until + later,
        )
        for d in plan.decisions
    )
    assert plan.reservations == ()
    return dataclasses.replace(plan, now=now, decisions=decisions)


def outcome(slurm: Cluster, roles: dict[str, str]) -> dict[str, tuple]:
    """Each role's job once Slurm has settled: state, held, nodes, restarts; and gpu-node4."""

    def settled(jobs: dict) -> bool:
        a = jobs[roles["a"]]
        return a["job_state"] == "RUNNING" and all(
            jobs[j]["job_state"] in ("RUNNING", "PENDING") for j in roles.values()
        )

    jobs = slurm.wait(settled, timeout_s=40)
    out: dict[str, tuple] = {}
    for role, job in roles.items():
        j = jobs[job]
        held = "held" in str(j["state_reason"]).lower() or j["priority"] == 0
        nodes = j["job_resources"]["allocated_nodes"] if j["job_state"] == "RUNNING" else ()
        out[role] = (j["job_state"], held, sorted(n["nodename"] for n in nodes), j["restart_cnt"])
    node = next(n for n in slurm.commands.json("sinfo")["nodes"] if n["name"] == "gpu-node4")
    out["gpu-node4"] = (node["reason"], sorted(node.get("state_flags") or ()))
    return out


def export(slurm: Cluster, *args: str | Path):
    result = CliRunner().invoke(app, ["export", *(str(a) for a in args)], env=slurm.env)
    assert result.exit_code in (0, 1), result.output + result.stderr
    return result


def test_the_exported_script_run_with_bash_does_what_the_executor_does(slurm, folder):
    executor = executor_of(slurm)
    config = folder / "controller.yaml"
    roles = scenario(slurm, folder)
    plan = solved(executor)
    by_role = {r: plan.by_workload[WorkloadId(j)].action for r, j in roles.items()}
    assert by_role["a"] is Action.START and by_role["w"] is Action.WAIT
    assert sorted(by_role[u].value for u in ("u1", "u2", "u3")) == ["keep", "preempt", "preempt"]
    assert plan.drained_hosts == ("gpu-node4",)
    plan_file = folder / "plan.json"
    plan_file.write_text(dump_plan(plan))
    (folder / "out").mkdir()
    result = export(slurm, plan_file, "--to", "slurm", "--config", config, "-o", folder / "out")
    assert result.exit_code == 0
    script = (folder / "out" / "alloc-plan.sh").read_text()
    # exactly the executor's steps on the cluster as it is now (the header says when it read)
    body = script.split("set -euo pipefail")[1]
    actions = executor.actions(plan)
    assert body == slurm_script(plan, actions, []).split("set -euo pipefail")[1]
    assert [len(a.steps) for a in actions] == [1, 1, 1, 2, 1]  # 2 requeues, hold, start, drain
    # without --config: the same steps, but the node's own reason is not known
    implied = [s.argv for a in plan_actions(plan, implied_by(plan)) for s in a.steps]
    read = [s.argv for a in actions for s in a.steps]
    assert implied[:-1] == read[:-1]
    assert implied[-1] == (*read[-1][:-1], f"Reason={DRAINED_REASON}")
    reason = REASON.format(folder=folder)
    done = subprocess.run(["bash", "out/alloc-plan.sh"], env=slurm.env, cwd=folder, timeout=120)
    assert done.returncode == 0
    by_script = outcome(slurm, roles)
    assert by_script["gpu-node4"] == (f"{DRAINED_REASON} ({reason})"[:200], ["DRAIN"])
    assert not (folder / "pwned").exists() and (folder / "victim").is_dir()

    # The same plan, applied by the executor to an identical second set of jobs.
    slurm.reset()
    again = scenario(slurm, folder)
    snapshot = executor.snapshot()
    same = renamed(plan, {roles[r]: again[r] for r in roles}, snapshot.now)
    assert validate(snapshot, same) == []
    report = executor.apply(same)
    assert report.failed == () and report.failed_hosts == ()
    assert outcome(slurm, again) == by_script


def test_apply_runs_the_actions_end_to_end_and_a_second_apply_changes_nothing(slurm, folder):
    executor = executor_of(slurm)
    config = folder / "controller.yaml"
    roles = scenario(slurm, folder)
    plan = solved(executor)
    plan_file = folder / "plan.json"
    plan_file.write_text(dump_plan(plan))
    dry = export(slurm, plan_file, "--to", "slurm", "--config", config)
    assert dry.exit_code == 0 and dry.stdout.startswith("#!/usr/bin/env bash")
    assert [j["job_state"] for j in slurm.jobs().values() if j["job_id"] == int(roles["a"])] == [
        "PENDING"
    ]  # a dry run runs nothing
    result = export(slurm, plan_file, "--to", "slurm", "--config", config, "--apply")
    assert result.exit_code == 0, result.stdout
    lines = result.stdout.splitlines()
    assert lines[-1] == "5 ok, 0 failed"
    assert f"ok      job {roles['a']}: start: released on " in result.stdout
    assert "ok      host gpu-node4: drain: marked for repair" in lines
    applied = outcome(slurm, roles)
    preempted = [u for u in ("u1", "u2", "u3") if applied[u][0] == "PENDING"]
    assert len(preempted) == 2 and all(applied[u][1:] == (True, [], 1) for u in preempted)
    planned = sorted(plan.by_workload[WorkloadId(roles["a"])].hosts)
    assert applied["a"] == ("RUNNING", False, planned, 0)
    assert applied["w"][:2] == ("PENDING", True)
    second = export(slurm, plan_file, "--to", "slurm", "--config", config, "--apply")
    assert second.exit_code == 0
    assert "requeued" not in second.stdout and "released" not in second.stdout
    assert "already marked" in second.stdout and "already running on" in second.stdout
    assert outcome(slurm, roles) == applied


def test_apply_reports_an_action_that_fails_and_exits_1(slurm, folder):
    executor = executor_of(slurm)
    roles = scenario(slurm, folder)
    plan = solved(executor)
    slurm.run("scancel", roles["a"])  # gone before the plan is applied
    slurm.wait(lambda jobs: jobs[roles["a"]]["job_state"] == "CANCELLED")
    plan_file = folder / "plan.json"
    plan_file.write_text(dump_plan(plan))
    config = folder / "controller.yaml"
    result = export(slurm, plan_file, "--to", "slurm", "--config", config, "--apply")
    assert result.exit_code == 1
    assert f"failed  job {roles['a']}: start: no such job in Slurm" in result.stdout
    assert result.stdout.splitlines()[-1] == "4 ok, 1 failed"
