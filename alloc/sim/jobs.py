"""A job in the simulation (its trace entry and its progress), and the lab's workloads as jobs."""

from __future__ import annotations

from dataclasses import dataclass, field

from alloc.domain import HostName, Snapshot, Topology, TraceJob, Workload, WorkloadId


@dataclass
class SimJob:
    job: TraceJob
    topology: Topology
    state: str = "pending"  # pending | queued | running | done
    work_done_s: float = 0.0
    seg_start_s: float = 0.0
    hosts: dict[HostName, int] = field(default_factory=dict)
    allocated: bool = False  # of the running segment: charged and protected
    backfill_for: tuple[WorkloadId, ...] = ()  # of the running segment (models/round.md 8.5)
    first_start_s: float | None = None
    end_s: float | None = None
    preemptions: int = 0
    lost_gpu_s: float = 0.0
    version: int = 0  # bumped at every start and stop: stale events are ignored
    cached: Workload | None = None

    @property
    def remaining_s(self) -> float:
        return max(0.0, self.job.runtime_s - self.work_done_s)


def after_preemption(
    work_done_s: float, ran_s: float, resumable: bool, checkpoint_s: float
) -> tuple[float, float]:
    """(work done, work lost) of a job stopped after running `ran_s` of this run: resumable
    work keeps its progress up to its last checkpoint, other work starts over."""
    if resumable and checkpoint_s > 0:
        kept = (ran_s // checkpoint_s) * checkpoint_s
        return work_done_s + kept, ran_s - kept
    return 0.0, work_done_s + ran_s


def lab_jobs(lab: Snapshot) -> list[TraceJob]:
    """The lab's workloads as jobs; each states the work it still needs from now (`runtime`).
    A running one has done (now - started) of it already, so its whole run needs the sum."""
    out = []
    for w in lab.workloads:
        assert w.runtime_s is not None, f"{w.id}: a simulated workload states its runtime"
        ran = (lab.now - w.started).total_seconds() if w.started else 0.0
        out.append(
            TraceJob(
                id=w.id,
                budget=w.budget,
                gpus=w.gpus,
                submitted_s=(w.submitted - lab.now).total_seconds(),
                runtime_s=w.runtime_s + ran,
                min_runtime_s=w.min_runtime_s,
                resumable=w.resumable,
                priority=w.priority,
                topology=w.topology,
                kind="lab",
                gpu_type=w.gpu_type,
            )
        )
    return out
