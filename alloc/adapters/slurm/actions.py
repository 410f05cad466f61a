"""What alloc asks of Slurm to carry out a plan, as data: for each decision that acts, and for
each drained host, the `scontrol` commands to run, chosen from the plan and the cluster as
read. Pure: the executor runs these steps (alloc.adapters.slurm.executor) and `alloc export
--to slurm` writes the same steps as a script (alloc.adapters.slurm.script), so the two never
disagree about what an action is.

- preempt: `scontrol requeuehold -- ID`: the job stops and goes back to the queue held.
- wait: `scontrol hold -- ID` for a pending job that is not held, so only alloc starts work.
- start: `scontrol update JobId=ID NodeList=a,b NumNodes=2`, then `scontrol release -- ID`.
- a drained host: `scontrol update NodeName=H State=DRAIN Reason=alloc: drain complete, ready
  for repair (its old reason)`, once nothing runs there.

Order: preemptions first (they free the nodes), then holds (a job released earlier that the
plan now keeps waiting cannot take the nodes another job is released onto), then starts, then
drains. Each action is checked against the cluster as read: a running job is not started
again, a stopped one not stopped again, a held one not held again (applying a plan twice
changes nothing the second time). Every argument is one argv entry, never read by a shell,
and a job id comes after `--`, so an id that begins with `-` is never taken for an option.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from alloc.adapters.slurm.read import SlurmJob
from alloc.domain import Action, HostName, Plan, WorkloadId

DRAINED_REASON = "alloc: drain complete, ready for repair"
NO_SUCH_JOB = "no such job in Slurm"
MAX_REASON = 200  # characters of a node's reason that alloc writes
_ORDER = {Action.PREEMPT: 0, Action.WAIT: 1, Action.START: 2}


@dataclass(frozen=True, slots=True)
class JobSeen:
    """What the choice of commands needs to know about one job."""

    state: str  # Slurm's job_state: PENDING, RUNNING, COMPLETING...
    held: bool = False  # pending and held
    pinned: str = ""  # the nodes it is required to run on, as alloc set them ("a,b")
    hosts: tuple[HostName, ...] = ()  # where it runs

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"


@dataclass(frozen=True, slots=True)
class ClusterSeen:
    """The managed jobs by id and each node's drain reason ("" for none)."""

    jobs: Mapping[WorkloadId, JobSeen]
    reasons: Mapping[HostName, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class Step:
    argv: tuple[str, ...]
    label: str  # what it does, for a person: "requeue, held", "pin to a,b"...


@dataclass(frozen=True, slots=True)
class SlurmAction:
    """One decision's part (or one drained host's): the steps to run in order, none when the
    cluster already is as planned; `detail` says what is true once they ran (or, without
    steps, what was found); `ok` False: it cannot be done (no such job, running elsewhere)."""

    kind: str  # start | preempt | wait | drain
    workload: WorkloadId | None  # the job it acts on (None for a drain)
    host: HostName | None  # the node it acts on (a drain only)
    steps: tuple[Step, ...]
    detail: str
    ok: bool = True
    found: bool = True  # the job is in Slurm
    hosts: tuple[HostName, ...] = ()  # a start's planned nodes; the nodes a preempted job frees

    @property
    def action(self) -> Action:
        return Action(self.kind)  # a decision's action (not for a drain)

    @property
    def target(self) -> str:
        return str(self.workload if self.workload is not None else self.host)


def seen_from(jobs: Iterable[SlurmJob], reasons: Mapping[HostName, str]) -> ClusterSeen:
    """The cluster as the executor read it (alloc.adapters.slurm.read)."""
    return ClusterSeen(
        {j.workload.id: JobSeen(j.state, j.held, j.pinned, tuple(j.workload.hosts)) for j in jobs},
        dict(reasons),
    )


def implied_by(plan: Plan) -> ClusterSeen:
    """The cluster as the plan implies it, for a plan exported without reading the cluster: a
    job to start is pending and held, one to keep or preempt runs (a kept one on its hosts; the
    plan does not say where a preempted one runs), one to wait is pending and not held (so it
    is held, which is harmless if it already is), and no drained host carries a reason yet."""
    states = {
        Action.START: JobSeen("PENDING", held=True),
        Action.WAIT: JobSeen("PENDING", held=False),
        Action.PREEMPT: JobSeen("RUNNING"),
    }
    jobs = {
        d.workload: JobSeen("RUNNING", hosts=tuple(d.hosts))
        if d.action is Action.KEEP
        else states[d.action]
        for d in plan.decisions
    }
    return ClusterSeen(jobs)


def plan_actions(plan: Plan, seen: ClusterSeen) -> tuple[SlurmAction, ...]:
    """The actions that carry out `plan` on the cluster `seen`, in the order they run."""
    acting = sorted(
        (d for d in plan.decisions if d.action in _ORDER), key=lambda d: _ORDER[d.action]
    )
    out = []
    for d in acting:
        job = seen.jobs.get(d.workload)
        if job is None:
            kind = d.action.value
            out.append(SlurmAction(kind, d.workload, None, (), NO_SUCH_JOB, False, found=False))
            continue
        act = _job_action(d.action, d.workload, job, tuple(d.hosts))
        if act is not None:
            out.append(act)
    # A host is handed to repair once a fresh read finds nothing on it (the plan lists it in
    # the round its last work is preempted: that work is still stopping).
    busy = {h for j in seen.jobs.values() if not j.pending for h in j.hosts}
    out.extend(_drain(h, seen.reasons.get(h, ""), h in busy) for h in plan.drained_hosts)
    return tuple(out)


def _job_action(
    action: Action, job_id: WorkloadId, job: JobSeen, hosts: tuple[HostName, ...]
) -> SlurmAction | None:
    """None when there is nothing to do or report (a waiting job already held, or running)."""
    kind = action.value

    def act(detail: str, *steps: Step, ok: bool = True) -> SlurmAction:
        nodes = job.hosts if action is Action.PREEMPT else hosts
        return SlurmAction(kind, job_id, None, steps, detail, ok, hosts=nodes)

    if action is Action.PREEMPT:
        if job.pending:
            return act("already stopped")
        return act(
            "requeued, held", Step(("scontrol", "requeuehold", "--", job_id), "requeue, held")
        )
    if action is Action.START:
        if not job.pending:
            where = ",".join(sorted(job.hosts))
            if set(job.hosts) == set(hosts):
                return act(f"already running on {where}")
            return act(f"already running elsewhere ({where})", ok=False)
        names = ",".join(sorted(hosts))
        if not job.held and job.pinned == names:
            return act(f"already released on {names}")
        pin = (
            "scontrol",
            "update",
            f"JobId={job_id}",
            f"NodeList={names}",
            f"NumNodes={len(hosts)}",
        )
        release = ("scontrol", "release", "--", job_id)
        return act(f"released on {names}", Step(pin, f"pin to {names}"), Step(release, "release"))
    if action is Action.WAIT and job.pending and not job.held:
        return act("held", Step(("scontrol", "hold", "--", job_id), "hold"))
    return None


def _drain(name: HostName, reason: str, busy: bool) -> SlurmAction:
    def act(detail: str, *steps: Step) -> SlurmAction:
        return SlurmAction("drain", None, name, steps, detail)

    if reason.startswith(DRAINED_REASON):
        return act("already marked")
    if busy:
        return act("work still on it: marked once it has left")
    new = DRAINED_REASON + (f" ({reason})" if reason else "")
    argv = ("scontrol", "update", f"NodeName={name}", "State=DRAIN", f"Reason={new[:MAX_REASON]}")
    return act("marked for repair", Step(argv, "mark drained, ready for repair"))
