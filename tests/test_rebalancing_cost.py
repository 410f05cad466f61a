"""Rebalancing weighs the work a victim loses (models/round.md 1.1 and 7): work that cannot
resume and has run longer than a checkpoint interval is not rebalanced (costly_to_stop), and
among resumable victims the one that checkpointed last goes first."""

from __future__ import annotations

from conftest import ago, host, instance, solve_checked, workload


def team_a_run(name: str, on: str, ran_min: float, resumable: bool = True):
    """A run of team a on one whole host, past its 20-minute protection."""
    return workload(
        name,
        8,
        "a",
        min_runtime="20m",
        resumable=resumable,
        hosts={on: 8},
        started=ago(minutes=ran_min),
    )


def decide(solver: str, first, second) -> dict:
    # Two hosts of 8; team a holds both; team b (far behind) queues 8 GPUs and is entitled to
    # them: one of a's runs must go.
    lab = instance(
        hosts=[host("h1"), host("h2")],
        usage={"a": 500.0, "b": 0.0},
        workloads=[first, second, workload("b-job", 8, "b", min_runtime="1h")],
    )
    plan = solve_checked(lab, solver)
    return {wid: (d.action.value, d.reason.value) for wid, d in plan.by_workload.items()}


def test_work_that_cannot_resume_and_ran_past_a_checkpoint_interval_is_kept(solver):
    d = decide(
        solver,
        team_a_run("a-resumable", "h1", 210),
        team_a_run("a-fragile", "h2", 180, resumable=False),
    )
    assert d["a-fragile"] == ("keep", "costly_to_stop")
    assert d["a-resumable"] == ("preempt", "rebalanced")
    assert d["b-job"][0] == "start"


def test_work_that_cannot_resume_is_rebalanced_within_its_first_checkpoint_interval(solver):
    # 30 minutes run: past its 20-minute protection, within the 1 h checkpoint interval.
    d = decide(
        solver,
        team_a_run("a-young", "h1", 30, resumable=False),
        team_a_run("a-fragile", "h2", 180, resumable=False),
    )
    assert d["a-young"][0] == "preempt" and d["a-fragile"][0] == "keep"


def test_the_resumable_run_that_checkpointed_last_is_rebalanced_first(solver):
    # Checkpoints every hour of a run: a-fresh (2 h 6 min) loses 6 minutes if stopped now,
    # a-stale (1 h 54 min) 54 minutes: a-fresh goes.
    d = decide(solver, team_a_run("a-stale", "h1", 114), team_a_run("a-fresh", "h2", 126))
    assert d["a-fresh"][0] == "preempt" and d["a-stale"][0] == "keep"
