"""Rebalancing weighs the work a victim loses (models/round.md 1.1 and 7): work that cannot
resume and has run longer than a checkpoint interval is not rebalanced (costly_to_stop), and
among resumable victims the one that checkpointed last goes first."""

from __future__ import annotations

from conftest import ago, host, instance, solve_checked, workload


def lab(*running):
    # Two hosts of 8; team a holds both, past protection; team b (far behind) queues 8 GPUs and
    # is entitled to them: one of a's runs must go.
    return instance(
        hosts=[host("h1"), host("h2")],
        usage={"a": 500.0, "b": 0.0},
        workloads=[*running, workload("b-job", 8, "b", min_runtime="1h")],
    )


def test_work_that_cannot_resume_and_ran_past_a_checkpoint_interval_is_kept(solver):
    plan = solve_checked(
        lab(
            workload(
                "a-resumable", 8, "a", min_runtime="20m", hosts={"h1": 8}, started=ago(hours=3.5)
            ),
            workload(
                "a-fragile",
                8,
                "a",
                min_runtime="20m",
                resumable=False,
                hosts={"h2": 8},
                started=ago(hours=3),
            ),
        ),
        solver,
    )
    d = plan.by_workload
    assert (d["a-fragile"].action.value, d["a-fragile"].reason.value) == ("keep", "costly_to_stop")
    assert (d["a-resumable"].action.value, d["a-resumable"].reason.value) == (
        "preempt",
        "rebalanced",
    )
    assert d["b-job"].action.value == "start" and set(d["b-job"].hosts) == {"h1"}


def test_work_that_cannot_resume_is_rebalanced_within_its_first_checkpoint_interval(solver):
    # 30 minutes run: past its 20-minute protection, within the 1 h checkpoint interval.
    plan = solve_checked(
        lab(
            workload(
                "a-young",
                8,
                "a",
                min_runtime="20m",
                resumable=False,
                hosts={"h1": 8},
                started=ago(minutes=30),
            ),
            workload(
                "a-fragile",
                8,
                "a",
                min_runtime="20m",
                resumable=False,
                hosts={"h2": 8},
                started=ago(hours=3),
            ),
        ),
        solver,
    )
    d = plan.by_workload
    assert d["a-young"].action.value == "preempt" and d["a-fragile"].action.value == "keep"


def test_the_resumable_run_that_checkpointed_last_is_rebalanced_first(solver):
    # Checkpoints every hour of a run: a-fresh (2 h 6 min) lost 6 minutes if stopped now,
    # a-stale (1 h 54 min) 54 minutes: a-fresh goes.
    plan = solve_checked(
        lab(
            workload(
                "a-stale", 8, "a", min_runtime="20m", hosts={"h1": 8}, started=ago(minutes=114)
            ),
            workload(
                "a-fresh", 8, "a", min_runtime="20m", hosts={"h2": 8}, started=ago(minutes=126)
            ),
        ),
        solver,
    )
    d = plan.by_workload
    assert d["a-fresh"].action.value == "preempt" and d["a-stale"].action.value == "keep"
