"""Which `scontrol` commands carry out a plan (alloc.adapters.slurm.actions): chosen from the
plan and the cluster as read, in one pure function that the Slurm executor runs and `alloc
export --to slurm` writes out. The plan here is solved and checked (conftest.solve_checked)."""

from __future__ import annotations

import pytest
from conftest import ago, host, instance, solve_checked, workload

from alloc.adapters.slurm.actions import (
    DRAINED_REASON,
    NO_SUCH_JOB,
    ClusterSeen,
    JobSeen,
    implied_by,
    plan_actions,
)
from alloc.domain import HostName, Plan, WorkloadId


def one_of_each() -> Plan:
    """h1 runs unallocated u1, h2 protected k, h3 is unhealthy and empty. Team a's `a`
    (priority 5) takes h1 from u1; its `w` (priority 0) finds no room and waits; h3 is
    handed to repair."""
    plan = solve_checked(
        instance(
            hosts=[host("h1"), host("h2"), host("h3", state="unhealthy")],
            workloads=[
                workload("u1", 8, "b", "0", hosts={"h1": 8}),
                workload("k", 8, "b", "2h", hosts={"h2": 8}, started=ago(hours=1)),
                workload("a", 8, "a", priority=5),
                workload("w", 8, "a", priority=0),
            ],
        )
    )
    assert {d.workload: d.action.value for d in plan.decisions} == {
        "u1": "preempt",
        "k": "keep",
        "a": "start",
        "w": "wait",
    }
    assert plan.drained_hosts == ("h3",) and dict(plan.by_workload["a"].hosts) == {"h1": 8}
    return plan


PLAN = one_of_each()
PIN = ("scontrol", "update", "JobId=a", "NodeList=h1", "NumNodes=1")
MARK = ("scontrol", "update", "NodeName=h3", "State=DRAIN", f"Reason={DRAINED_REASON}")
AS_PLANNED = {
    "u1": JobSeen("RUNNING", hosts=(HostName("h1"),)),
    "k": JobSeen("RUNNING", hosts=(HostName("h2"),)),
    "a": JobSeen("PENDING", held=True),
    "w": JobSeen("PENDING", held=False),
}


def argvs(seen: ClusterSeen) -> list[tuple[str, ...]]:
    return [s.argv for a in plan_actions(PLAN, seen) for s in a.steps]


def test_preemptions_then_holds_then_starts_then_drains_each_job_id_after_a_double_dash():
    assert argvs(ClusterSeen(AS_PLANNED)) == [
        ("scontrol", "requeuehold", "--", "u1"),
        ("scontrol", "hold", "--", "w"),
        PIN,
        ("scontrol", "release", "--", "a"),
        MARK,
    ]


def test_without_reading_the_cluster_jobs_are_as_the_plan_implies():
    implied = implied_by(PLAN)
    assert {WorkloadId(k): v for k, v in AS_PLANNED.items() if k != "u1"}.items() <= (
        implied.jobs.items()
    )
    assert implied.jobs[WorkloadId("u1")].state == "RUNNING"  # where, the plan does not say
    assert argvs(implied) == argvs(ClusterSeen(AS_PLANNED))


def found(seen: dict[str, JobSeen], reasons: dict[str, str] | None = None):
    """(kind, target, ok, detail, argv of its steps) of each action."""
    cluster = ClusterSeen(
        {WorkloadId(k): v for k, v in seen.items()},
        {HostName(k): v for k, v in (reasons or {}).items()},
    )
    return [
        (a.kind, a.target, a.ok, a.detail, [s.argv for s in a.steps])
        for a in plan_actions(PLAN, cluster)
    ]


def with_(**jobs: JobSeen) -> dict[str, JobSeen]:
    return {**AS_PLANNED, **jobs}


@pytest.mark.parametrize(
    "seen, expected",
    [
        pytest.param(
            with_(u1=JobSeen("PENDING", held=True)),
            ("preempt", "u1", True, "already stopped", []),
            id="a job to preempt that is already pending is not stopped again",
        ),
        pytest.param(
            with_(a=JobSeen("RUNNING", hosts=(HostName("h1"),))),
            ("start", "a", True, "already running on h1", []),
            id="a job to start that runs where planned is left alone",
        ),
        pytest.param(
            with_(a=JobSeen("RUNNING", hosts=(HostName("h2"),))),
            ("start", "a", False, "already running elsewhere (h2)", []),
            id="a job to start that runs elsewhere is a failed action",
        ),
        pytest.param(
            with_(a=JobSeen("PENDING", held=False, pinned="h1")),
            ("start", "a", True, "already released on h1", []),
            id="a job to start already released onto its hosts is not released again",
        ),
        pytest.param(
            with_(a=JobSeen("PENDING", held=False, pinned="h2")),
            ("start", "a", True, "released on h1", [PIN, ("scontrol", "release", "--", "a")]),
            id="a job released onto other hosts is pinned again",
        ),
        pytest.param(
            {k: v for k, v in AS_PLANNED.items() if k != "a"},
            ("start", "a", False, NO_SUCH_JOB, []),
            id="a job Slurm does not list is a failed action",
        ),
    ],
)
def test_each_action_is_checked_against_the_cluster_as_read(seen, expected):
    kind, target = expected[:2]
    assert [f for f in found(seen) if f[:2] == (kind, target)] == [expected]


def test_a_waiting_job_already_held_or_not_pending_asks_nothing_and_reports_nothing():
    for w in (JobSeen("PENDING", held=True), JobSeen("RUNNING", hosts=(HostName("h2"),))):
        assert [f for f in found(with_(w=w)) if f[1] == "w"] == []


def test_a_missing_job_is_not_found_and_has_no_steps():
    (missing,) = [a for a in plan_actions(PLAN, ClusterSeen({})) if a.workload == "a"]
    assert (missing.ok, missing.found, missing.steps) == (False, False, ())


@pytest.mark.parametrize(
    "reasons, jobs, expected",
    [
        pytest.param(
            {"h3": "xid 79"},
            AS_PLANNED,
            (True, "marked for repair", [(*MARK[:4], f"Reason={DRAINED_REASON} (xid 79)")]),
            id="the node's own reason is kept after alloc's",
        ),
        pytest.param(
            {"h3": "r" * 500},
            AS_PLANNED,
            (
                True,
                "marked for repair",
                [(*MARK[:4], f"Reason={DRAINED_REASON} ({'r' * 500}"[:207])],
            ),
            id="a reason is cut at 200 characters",
        ),
        pytest.param(
            {"h3": f"{DRAINED_REASON} (xid 79)"},
            AS_PLANNED,
            (True, "already marked", []),
            id="a node already marked is not marked again",
        ),
        pytest.param(
            {},
            with_(k=JobSeen("COMPLETING", hosts=(HostName("h3"),))),
            (True, "work still on it: marked once it has left", []),
            id="a node with work still on it is marked by a later round",
        ),
    ],
)
def test_a_drained_host_is_marked_for_repair_once_empty(reasons, jobs, expected):
    ((_, _, *rest),) = [f for f in found(jobs, reasons) if f[0] == "drain"]
    assert tuple(rest) == expected
