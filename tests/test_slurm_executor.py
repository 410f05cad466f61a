"""The Slurm executor against a real Slurm (tests/slurm_local.py): jobs submitted with sbatch
under two accounts, rounds run, and squeue/sinfo show the planned placements, requeues and
drains. Every plan is checked against SPEC.md's invariants."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from slurm_local import PLAIN, TYPED, Cluster, cluster_of

from alloc.adapters.slurm.commands import SlurmCommands
from alloc.adapters.slurm.executor import DRAINED_REASON, SlurmExecutor
from alloc.adapters.slurm.read import SlurmSite
from alloc.domain import Action, BudgetNode, BudgetPath, BudgetTree, HostState, Policy
from alloc.round import run_round
from alloc.solve.validate import validate

TREE = BudgetTree(BudgetNode("lab", 1.0, (), (BudgetNode("nlp", 0.5), BudgetNode("vision", 0.5))))
SITE = SlurmSite(accounts={"nlp": BudgetPath("nlp"), "vision": BudgetPath("vision")})


@pytest.fixture
def slurm(tmp_path_factory):
    yield from cluster_of(PLAIN, tmp_path_factory)


@pytest.fixture
def typed_slurm(tmp_path_factory):
    yield from cluster_of(TYPED, tmp_path_factory)


def executor_of(cluster: Cluster) -> SlurmExecutor:
    policy = Policy(solver="greedy", time_limit_s=5.0)
    return SlurmExecutor(SITE, TREE, policy, commands=SlurmCommands(env=cluster.env))


@pytest.fixture
def executor(slurm: Cluster) -> SlurmExecutor:
    return executor_of(slurm)


def round_once(executor: SlurmExecutor):
    snapshot = executor.snapshot()
    plan = run_round(snapshot)
    assert validate(snapshot, plan) == []
    return snapshot, plan, executor.apply(plan)


def running_on(jobs: dict, job_id: str) -> set[str]:
    j = jobs[job_id]
    if j["job_state"] != "RUNNING":
        return set()
    return {n["nodename"] for n in j["job_resources"]["allocated_nodes"]}


def test_jobs_of_two_accounts_start_where_the_plan_puts_them(slurm, executor):
    a = slurm.sbatch("nlp", "gpu:8", comment="alloc: min_runtime=1h")
    b = slurm.sbatch("vision", "gpu:8", nodes=2, comment="alloc: min_runtime=2h topology=block")
    c = slurm.sbatch("vision", "gpu:4", comment="scavenging, no contract")
    snapshot, plan, report = round_once(executor)
    by = snapshot.by_id
    assert (by[a].budget, by[a].gpus, by[a].min_runtime_s) == ("nlp", 8, 3600.0)
    assert (by[b].budget, by[b].gpus, by[b].min_runtime_s) == ("vision", 16, 7200.0)
    assert by[c].min_runtime_s == 0.0  # no contract: unallocated
    starts = {d.workload: set(d.hosts) for d in plan.decisions if d.action is Action.START}
    assert set(starts) == {a, b, c}
    assert report.failed == ()
    jobs = slurm.wait(lambda jobs: all(running_on(jobs, j) for j in starts))
    assert {j: running_on(jobs, j) for j in starts} == starts


def test_applying_the_same_plan_twice_changes_nothing_the_second_time(slurm, executor):
    a = slurm.sbatch("nlp", "gpu:8", nodes=2, comment="alloc: min_runtime=1h")
    _, plan, first = round_once(executor)
    assert [(r.workload, r.ok, r.changed) for r in first.results] == [(a, True, True)]
    slurm.wait(lambda jobs: running_on(jobs, a))
    second = executor.apply(plan)
    assert [(r.ok, r.changed, r.detail.split(" on ")[0]) for r in second.results] == [
        (True, False, "already running")
    ]
    jobs = slurm.wait(lambda jobs: running_on(jobs, a))
    assert jobs[a]["restart_cnt"] == 0


def test_allocated_work_preempts_unallocated_work_which_is_requeued_held(slurm, executor):
    free = [slurm.sbatch("vision", "gpu:8", comment="") for _ in range(4)]
    round_once(executor)
    slurm.wait(lambda jobs: all(running_on(jobs, j) for j in free))
    urgent = slurm.sbatch("nlp", "gpu:8", nodes=2, comment="alloc: min_runtime=30m")
    _, plan, report = round_once(executor)
    preempted = [d.workload for d in plan.decisions if d.action is Action.PREEMPT]
    assert len(preempted) == 2 and set(preempted) <= set(free)
    assert report.failed == ()
    planned = set(plan.by_workload[urgent].hosts)
    jobs = slurm.wait(lambda jobs: running_on(jobs, urgent) == planned, timeout_s=40)
    for j in preempted:
        assert jobs[j]["job_state"] == "PENDING" and jobs[j]["restart_cnt"] == 1
        assert "held" in jobs[j]["state_reason"].lower() or jobs[j]["priority"] == 0


def test_an_unhealthy_node_drains_is_marked_for_repair_and_returns_when_resumed(slurm, executor):
    free = [slurm.sbatch("vision", "gpu:8", comment="") for _ in range(4)]
    round_once(executor)
    jobs = slurm.wait(lambda jobs: all(running_on(jobs, j) for j in free))
    victim = next(j for j in free if running_on(jobs, j) == {"gpu-node1"})
    slurm.run("scontrol", "update", "NodeName=gpu-node1", "State=DRAIN", "Reason=xid 79")
    snapshot, plan, _ = round_once(executor)
    assert snapshot.cluster.host("gpu-node1").state is HostState.UNHEALTHY
    assert plan.by_workload[victim].action is Action.PREEMPT  # unallocated: at once
    slurm.wait(lambda jobs: not running_on(jobs, victim))
    _, plan, report = round_once(executor)
    assert plan.drained_hosts == ("gpu-node1",)
    assert [(h.host, h.ok) for h in report.hosts] == [("gpu-node1", True)]
    node = next(n for n in slurm.commands.json("sinfo")["nodes"] if n["name"] == "gpu-node1")
    assert node["reason"] == f"{DRAINED_REASON} (xid 79)"
    assert executor.apply(plan).hosts[0].detail == "already marked"
    slurm.run("scontrol", "update", "NodeName=gpu-node1", "State=RESUME")
    # Back in service once its slurmd answers again (NOT_RESPONDING reads as maintenance).
    deadline = time.monotonic() + 30
    while executor.snapshot().cluster.host("gpu-node1").state is not HostState.READY:
        assert time.monotonic() < deadline, "gpu-node1 did not return to service"
        time.sleep(0.3)


HOSTILE = [
    ("$(touch /tmp/alloc-pwned); rm -rf /tmp/alloc-pwned-dir", "alloc: min_runtime=1h"),
    ("name`touch /tmp/alloc-pwned`", "alloc: min_runtime=1h $(touch /tmp/alloc-pwned)"),
    ("quotes'\"", "alloc: min_runtime=1h; touch /tmp/alloc-pwned"),
    ("new\nline", "alloc: min_runtime=1h\ntouch /tmp/alloc-pwned"),
    ("huge" + "x" * 1000, "alloc: min_runtime=1h " + "y" * 1000),  # Slurm's limits: ~1 KiB
]


def test_hostile_names_and_comments_never_reach_a_shell_nor_break_a_round(slurm, executor):
    pwned = Path("/tmp/alloc-pwned")
    pwned.unlink(missing_ok=True)
    ids = [slurm.sbatch("nlp", "gpu:1", name=name, comment=comment) for name, comment in HOSTILE]
    # An account name is user input too (no accounting database checks it here): unmapped,
    # so the job is unfunded work, and the name is never run.
    ids.append(
        slurm.sbatch("x;$(touch /tmp/alloc-pwned)'\"", "gpu:1", comment="alloc: min_runtime=1h")
    )
    snapshot, plan, report = round_once(executor)
    assert {w.id for w in snapshot.workloads} == set(ids)
    assert snapshot.by_id[ids[-1]].budget is None
    assert report.failed == ()
    assert not pwned.exists()
    assert set(executor.problems) <= set(ids)


def test_two_gpu_types_each_job_gets_hosts_of_the_type_it_asks_for(typed_slurm):
    executor = executor_of(typed_slurm)
    snapshot = executor.snapshot()
    assert {h.name: (h.gpus, h.gpu_type) for h in snapshot.cluster.hosts} == {
        "a100-a": (4, "a100"),
        "a100-b": (4, "a100"),
        "h100-a": (8, "h100"),
        "h100-b": (8, "h100"),
    }
    a100 = typed_slurm.sbatch("nlp", "gpu:a100:4", nodes=2, comment="alloc: min_runtime=1h")
    h100 = typed_slurm.sbatch("vision", "gpu:h100:4", comment="alloc: min_runtime=1h")
    snapshot, plan, report = round_once(executor)
    assert (snapshot.by_id[a100].gpus, snapshot.by_id[a100].gpu_type) == (8, "a100")
    assert (snapshot.by_id[h100].gpus, snapshot.by_id[h100].gpu_type) == (4, "h100")
    assert set(plan.by_workload[a100].hosts) == {"a100-a", "a100-b"}
    assert set(plan.by_workload[h100].hosts) <= {"h100-a", "h100-b"}
    assert report.failed == ()
    jobs = typed_slurm.wait(lambda jobs: running_on(jobs, a100) and running_on(jobs, h100))
    assert running_on(jobs, a100) == {"a100-a", "a100-b"}
    assert running_on(jobs, h100) == set(plan.by_workload[h100].hosts)


class LeaseRanOut(Exception):
    pass


def test_a_controller_whose_lease_runs_out_mid_apply_stops_before_its_next_action(slurm, executor):
    jobs = [slurm.sbatch("nlp", "gpu:8", comment="alloc: min_runtime=1h") for _ in range(3)]
    snapshot = executor.snapshot()
    plan = run_round(snapshot)
    assert validate(snapshot, plan) == []
    assert {d.workload for d in plan.decisions if d.action is Action.START} == set(jobs)
    asked = []

    def check() -> None:  # the lease held for the first action only
        asked.append(len(asked))
        if len(asked) > 1:
            raise LeaseRanOut

    with pytest.raises(LeaseRanOut):
        executor.apply_guarded(plan, check)
    slurm.wait(lambda now: any(running_on(now, j) for j in jobs))
    time.sleep(2)  # long enough for a start the apply would have asked for to show
    seen = slurm.jobs()
    started = [j for j in jobs if running_on(seen, j)]
    assert len(started) == 1  # the first start only
    # The next controller's round starts from what Slurm shows: the other two, once.
    _, _, report = round_once(executor)
    assert sorted(r.workload for r in report.results if r.changed) == sorted(
        set(jobs) - set(started)
    )
