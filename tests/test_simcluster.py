"""The simulated cluster the controller's `sim` executor drives (alloc.adapters.simcluster):
it lives in a file, a snapshot only reads, each apply acts then moves the clock one step (or,
following its simulated clock, the clock moves as the controller waits on it), and it records
every run."""

from __future__ import annotations

from dataclasses import replace

import yaml
from conftest import host, instance

from alloc.adapters.simcluster import SimCluster
from alloc.domain import Action, Plan, TraceJob, WorkloadId
from alloc.io import parse_instance
from alloc.round import run_round
from alloc.solve.validate import validate

H = 3600.0


def lab():
    return parse_instance(yaml.safe_dump(instance(hosts=[host("h1"), host("h2")])))


def job(i, budget, gpus, submitted, runtime, min_runtime, resumable=True):
    return TraceJob(WorkloadId(i), budget, gpus, submitted, runtime, min_runtime, resumable)


def step(cluster: SimCluster) -> Plan:
    snapshot = cluster.snapshot()
    plan = run_round(snapshot)
    assert validate(snapshot, plan) == []
    report = cluster.apply(plan)
    assert report.failed == ()
    return plan


def test_work_starts_completes_at_its_exact_end_and_survives_reopening(tmp_path):
    the_lab = lab()
    epoch = the_lab.now.timestamp()
    jobs = [job("a", "a", 8, 0.0, 1.5 * H, H), job("late", "b", 8, 5 * H, H, H)]
    cluster = SimCluster(tmp_path / "c.db", the_lab, jobs, step_s=H)
    plan = step(cluster)  # t = 0: a starts; late is not submitted yet; the clock goes to 1 h
    assert [d.workload for d in plan.decisions if d.action is Action.START] == ["a"]
    assert cluster.snapshot() == cluster.snapshot()  # reading moves nothing
    cluster.close()
    cluster = SimCluster(tmp_path / "c.db", the_lab, [], step_s=H)  # a new process
    (a,) = cluster.snapshot().workloads  # still running since 0 (its progress: see its end)
    assert a.started == the_lab.now and a.runtime_s is None  # as a cluster manager shows it
    step(cluster)  # t = 1 h .. 2 h: a ends at 1.5 h
    assert cluster.runs() == [("a", epoch, epoch + 1.5 * H, 8, "a")]
    assert [(e.workload, e.charged) for e in cluster.ended_runs()] == [("a", True)]
    assert cluster.unfinished() == 1


def test_a_preempted_job_keeps_its_work_up_to_its_last_checkpoint(tmp_path):
    the_lab = lab()
    the_lab = replace(the_lab, policy=replace(the_lab.policy, checkpoint_interval_s=H))
    jobs = [job("free", None, 16, 0.0, 10 * H, 0.0)]
    cluster = SimCluster(tmp_path / "c.db", the_lab, jobs, step_s=1.5 * H)
    step(cluster)  # t = 0: the unallocated job takes both hosts; the clock goes to 1.5 h
    cluster.close()
    cluster = SimCluster(tmp_path / "c.db", the_lab, [], step_s=1.5 * H)
    snapshot = cluster.snapshot()  # t = 1.5 h: it ran 1.5 h, checkpointed at 1 h
    (free,) = snapshot.workloads
    assert free.running and free.runtime_s is None  # what is left shows once it stops
    kept = run_round(snapshot)  # it keeps running; the test stops it by hand
    stop = replace(kept, decisions=tuple(replace(d, action=Action.PREEMPT) for d in kept.decisions))
    report = cluster.apply(stop)
    assert [(r.action, r.ok, r.detail) for r in report.results] == [
        (Action.PREEMPT, True, "requeued")
    ]
    again = cluster.snapshot()
    assert again.workloads[0].runtime_s == 10 * H - 1 * H  # 1 h kept, 0.5 h lost
    again = cluster.apply(stop).results[0]
    assert (again.detail, again.ok, again.changed) == ("already stopped", True, False)


def test_following_its_simulated_clock_the_cluster_moves_as_the_clock_does(tmp_path):
    import threading

    the_lab = lab()
    jobs = [job("a", "a", 8, 0.0, 1.5 * H, H), job("late", "b", 8, 2 * H, H, H)]
    cluster = SimCluster(tmp_path / "c.db", the_lab, jobs, step_s=H)
    clock = cluster.simulated_clock(end_s=3 * H)
    stop = threading.Event()
    quiet = cluster.changes()
    step(cluster)  # t = 0: a starts; the clock does not move
    assert cluster.snapshot().now == the_lab.now
    started = cluster.changes()
    assert started != quiet  # a start changes the queue, as a real cluster's does
    assert clock.wait(stop, H) is False
    assert cluster.changes() == started  # 1 h: nothing happened
    assert clock.wait(stop, 0.5 * H) is False
    done = cluster.changes()
    assert done != started  # 1.5 h: a's work is done, before anything reads the cluster
    assert cluster.snapshot().workloads == ()  # reading brings the cluster to the clock's time
    assert cluster.changes() == done  # ... which is no news
    assert cluster.runs() == [
        ("a", the_lab.now.timestamp(), the_lab.now.timestamp() + 1.5 * H, 8, "a")
    ]
    assert clock.wait(stop, 0.5 * H) is False
    assert cluster.changes() != done  # 2 h: late is submitted
    assert [w.id for w in cluster.snapshot().workloads] == ["late"]
    assert cluster.to_arrive() == 0 and cluster.unfinished() == 1
    assert clock.wait(stop, 2 * H) is True and stop.is_set()  # past its end: the run is over
    assert clock.t_s == 3 * H
