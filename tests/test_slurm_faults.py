"""Executor faults inside a round, against the real local Slurm (tests/slurm_local.py) with an
injected failing wrapper around its commands (tests/slurm_faults.py): a preemption the cluster
accepted for two of a gang's four nodes only, squeue answering garbage or truncated JSON,
scontrol hanging. Each fault is reported (the round's outcome, the state's record, the
metric, `alloc status`), each call is tried again after a backoff that grows, and the next
round starts from what `squeue` shows; the ledger holds only what the cluster ran. Every plan
is checked against SPEC.md's invariants."""

from __future__ import annotations

from pathlib import Path

import pytest
from fault_checks import backed_off, checked, round_view
from slurm_faults import DOWN, FaultySlurm
from slurm_local import PLAIN, Cluster, cluster_of
from typer.testing import CliRunner

from alloc.adapters.base import FaultKind
from alloc.adapters.slurm import SlurmExecutor, SlurmSite
from alloc.adapters.slurm.commands import SlurmCommands
from alloc.cli.app import app
from alloc.controller import Controller
from alloc.controller.metrics import ControllerMetrics
from alloc.controller.state import StateStore
from alloc.domain import Action, BudgetNode, BudgetPath, BudgetTree, Policy

TREE = BudgetTree(BudgetNode("lab", 1.0, (), (BudgetNode("nlp", 0.5), BudgetNode("vision", 0.5))))
SITE = SlurmSite(accounts={"nlp": BudgetPath("nlp"), "vision": BudgetPath("vision")})
ATTEMPTS = 3
CONFIG = """\
name: faults
state: sqlite:///{db}
policy: {{solver: greedy, time_limit: 5s}}
budgets:
  name: lab
  children: [{{name: nlp, share: 50%}}, {{name: vision, share: 50%}}]
metrics: {{port: 0}}
slurm: {{accounts: {{nlp: nlp, vision: vision}}}}
"""


@pytest.fixture
def slurm(tmp_path_factory):
    yield from cluster_of(PLAIN, tmp_path_factory)


@pytest.fixture
def faulty(slurm: Cluster, tmp_path: Path) -> FaultySlurm:
    return FaultySlurm(tmp_path / "wrapped", slurm.env)


def controller_of(faulty: FaultySlurm, tmp_path: Path, timeout_s: float = 10.0) -> Controller:
    commands = SlurmCommands(timeout_s=timeout_s, attempts=ATTEMPTS, backoff_s=0.2, env=faulty.env)
    policy = Policy(solver="greedy", time_limit_s=5.0)
    executor = SlurmExecutor(SITE, TREE, policy, commands)
    return Controller(executor, StateStore(f"sqlite:///{tmp_path / 'state.db'}"), 1.0, TREE)


def squeue_view(slurm: Cluster) -> tuple[dict[str, set[str]], set[str]]:
    """The jobs running (with their nodes) and the jobs pending, as squeue shows them, once
    nothing is completing."""
    jobs = slurm.wait(lambda jobs: all(j["job_state"] != "COMPLETING" for j in jobs.values()))
    running = {
        i: {n["nodename"] for n in j["job_resources"]["allocated_nodes"]}
        for i, j in jobs.items()
        if j["job_state"] == "RUNNING"
    }
    return running, {i for i, j in jobs.items() if j["job_state"] == "PENDING"}


def test_a_gangs_nodes_freed_in_part_leave_it_held_and_the_next_round_completes_it(
    slurm, faulty, tmp_path
):
    # Four unallocated jobs fill the four nodes; an allocated gang of all four nodes comes.
    # Its round preempts the four, but the cluster accepts the requeue of two only: the gang
    # is not released (Slurm would start it by itself once the others end), the two stopped
    # jobs wait held, the other two still run, and that is what the next round sees. It
    # completes the gang's start: the other two are preempted and the gang starts whole.
    controller = controller_of(faulty, tmp_path)
    free = [slurm.sbatch("vision", "gpu:8", comment="") for _ in range(4)]
    checked(controller.round_once())
    slurm.wait(lambda jobs: all(jobs[j]["job_state"] == "RUNNING" for j in free))
    gang = slurm.sbatch("nlp", "gpu:8", nodes=4, comment="alloc: min_runtime=1h")
    faulty.inject("scontrol", "requeuehold", skip=2, times=100, message=DOWN)

    half = checked(controller.round_once())
    assert {d.workload for d in half.plan.decisions if d.action is Action.PREEMPT} == set(free)
    assert half.report is not None
    by = {(r.workload, r.action): r for r in half.report.results}
    stopped = [j for j in free if by[j, Action.PREEMPT].ok]
    still = [j for j in free if not by[j, Action.PREEMPT].ok]
    assert len(stopped) == 2 and len(still) == 2
    for j in still:
        assert by[j, Action.PREEMPT].detail == f"requeue, held failed: {DOWN}"
    start = by[gang, Action.START]
    assert not start.ok
    assert start.detail == (
        f"not released: its nodes still run {', '.join(sorted(still))} (not preempted)"
    )
    assert (half.started, half.preempted, half.failed) == (0, 2, 3)
    # Reported: every failed attempt, each call given up after ATTEMPTS tries with backoff.
    assert [f.kind for f in half.faults] == [FaultKind.FAILED] * 2 * ATTEMPTS
    assert sum(f.gave_up for f in half.faults) == 2
    calls = [c for c in faulty.calls("scontrol", "requeuehold") if c.mode]
    backed_off(list(half.faults[:ATTEMPTS]), calls[:ATTEMPTS])
    assert half.troubled  # the next round is a full one, after a backoff

    faulty.clear()
    running, pending = squeue_view(slurm)
    assert set(running) == set(still)
    assert pending == {*stopped, gang}
    jobs = slurm.jobs()
    assert all(jobs[j]["restart_cnt"] == 1 for j in stopped)
    assert jobs[gang]["state_reason"].startswith("JobHeld")
    store = controller.store
    ledger = {r.workload: r for r in store.runs()}
    assert gang not in ledger  # nothing started: nothing charged
    assert {j for j in free if ledger[j].ended_s is not None} == set(stopped)

    done = checked(controller.round_once())
    assert round_view(done) == (running, pending)  # it planned from what squeue showed
    assert {d.workload for d in done.plan.decisions if d.action is Action.PREEMPT} == set(still)
    assert done.plan.by_workload[gang].action is Action.START
    assert (done.started, done.preempted, done.failed, done.faults) == (1, 2, 0, ())
    jobs = slurm.wait(lambda jobs: jobs[gang]["job_state"] == "RUNNING", timeout_s=40)
    after = checked(controller.round_once())
    assert round_view(after) == squeue_view(slurm)
    assert round_view(after)[0] == {gang: {f"gpu-node{i}" for i in range(1, 5)}}
    ledger = {r.workload: r for r in store.runs()}
    assert ledger[gang].started_s == jobs[gang]["start_time"] and ledger[gang].charged
    assert all(ledger[j].ended_s is not None and not ledger[j].charged for j in free)
    store.close()


def test_garbage_json_from_squeue_fails_the_round_and_the_next_one_carries_on(
    slurm, faulty, tmp_path
):
    controller = controller_of(faulty, tmp_path)
    a = slurm.sbatch("nlp", "gpu:8", nodes=2, comment="alloc: min_runtime=1h")
    faulty.inject("squeue", "--json", mode="garbage", times=ATTEMPTS)

    failed = controller.round_once()
    assert failed.error.startswith("squeue --json: unreadable JSON")  # a cluster error, unnamed
    assert [(f.kind, f.command) for f in failed.faults] == [
        (FaultKind.UNPARSABLE, "squeue --json")
    ] * ATTEMPTS
    assert failed.faults[-1].gave_up
    backed_off(list(failed.faults), faulty.calls("squeue", "--json"))
    assert controller.store.rounds() == []  # nothing planned, nothing applied
    assert squeue_view(slurm) == ({}, {a})

    ok = checked(controller.round_once())
    assert (ok.started, ok.faults) == (1, ())
    slurm.wait(lambda jobs: jobs[a]["job_state"] == "RUNNING")
    after = checked(controller.round_once())
    assert round_view(after) == squeue_view(slurm)

    # Reported: the metric counts every failed attempt, `alloc status` sums them up.
    metrics = ControllerMetrics()
    metrics.observe(failed)
    count = metrics.registry.get_sample_value
    assert count("alloc_executor_errors_total", {"kind": "unparsable"}) == ATTEMPTS
    assert count("alloc_rounds_total", {"status": "failed"}) == 1
    controller.store.close()
    config = tmp_path / "controller.yaml"
    config.write_text(CONFIG.format(db=tmp_path / "state.db"))
    status = CliRunner().invoke(app, ["status", "--config", str(config)], env=slurm.env)
    assert status.exit_code == 0, status.stderr
    assert (
        f"executor faults: {ATTEMPTS} failed attempts (unparsable {ATTEMPTS}), 1 call given "
        "up on; the last at "
    ) in status.stdout
    assert "squeue --json: unparsable, attempt 3, given up: unreadable JSON" in status.stdout


def test_truncated_json_from_squeue_is_read_again_and_the_round_goes_on(slurm, faulty, tmp_path):
    controller = controller_of(faulty, tmp_path)
    a = slurm.sbatch("vision", "gpu:4", comment="alloc: min_runtime=30m")
    faulty.inject("squeue", "--json", mode="truncated")

    ok = checked(controller.round_once())
    (fault,) = ok.faults
    assert (fault.kind, fault.command, fault.attempt) == (FaultKind.UNPARSABLE, "squeue --json", 1)
    assert fault.message.startswith("unreadable JSON") and not fault.gave_up
    calls = faulty.calls("squeue", "--json")
    assert [c.mode for c in calls] == ["truncated", "", ""]  # (apply reads it again)
    backed_off([fault], calls)
    assert ok.started == 1 and ok.troubled
    slurm.wait(lambda jobs: jobs[a]["job_state"] == "RUNNING")
    after = checked(controller.round_once())
    planned = set(ok.plan.by_workload[a].hosts)
    assert round_view(after) == squeue_view(slurm) == ({a: planned}, set())
    (run,) = [r for r in controller.store.runs() if r.workload == a]  # (and earlier tests' jobs)
    assert (run.workload, run.budget, run.gpus, run.charged) == (a, "vision", 4, True)
    controller.store.close()


def test_a_hanging_scontrol_times_out_is_tried_again_and_a_half_done_start_is_redone(
    slurm, faulty, tmp_path
):
    # scontrol release hangs: each attempt is killed at the timeout and tried again. The
    # first round's attempts all hang: the job was pinned to its nodes but not released, and
    # the start is reported so. The next round sees it pending and held, starts it again,
    # and its first attempt hangs too, the second goes through.
    controller = controller_of(faulty, tmp_path, timeout_s=1.0)
    a = slurm.sbatch("nlp", "gpu:8", nodes=2, comment="alloc: min_runtime=1h")
    faulty.inject("scontrol", "release", mode="hang", seconds=60, times=ATTEMPTS + 1)

    half = checked(controller.round_once())
    assert half.report is not None
    (result,) = half.report.results
    nodes = ",".join(sorted(half.plan.by_workload[a].hosts))
    assert not result.ok
    assert result.detail == f"pin to {nodes} done; release failed: no answer within 1 s"
    assert [f.kind for f in half.faults] == [FaultKind.TIMEOUT] * ATTEMPTS
    releases = faulty.calls("scontrol", "release")
    backed_off(list(half.faults), releases)
    assert all(b.t - a.t >= 1.0 for a, b in zip(releases, releases[1:], strict=False))
    assert squeue_view(slurm) == ({}, {a})
    job = slurm.jobs()[a]
    assert job["state_reason"].startswith("JobHeld") and job["required_nodes"] == nodes
    assert [r for r in controller.store.runs() if r.workload == a] == []

    again = checked(controller.round_once())
    assert round_view(again) == ({}, {a})
    assert (again.started, again.failed) == (1, 0)
    (fault,) = again.faults
    assert (fault.kind, fault.attempt, fault.gave_up) == (FaultKind.TIMEOUT, 1, False)
    jobs = slurm.wait(lambda jobs: jobs[a]["job_state"] == "RUNNING")
    after = checked(controller.round_once())
    assert round_view(after) == squeue_view(slurm) == ({a: set(nodes.split(","))}, set())
    (run,) = [r for r in controller.store.runs() if r.workload == a]
    assert run.started_s == jobs[a]["start_time"] and run.charged
    controller.store.close()
