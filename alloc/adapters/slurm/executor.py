"""The Slurm executor: `snapshot()` reads the cluster with `sinfo --json` and `squeue --json`;
`apply(plan)` acts with `scontrol` (alloc.adapters.slurm.read says how Slurm maps to alloc).

- start: pin the held job to the planned nodes (`scontrol update JobId=.. NodeList=..
  NumNodes=..`) and release it; Slurm starts it there as soon as the nodes are free.
- preempt: `scontrol requeuehold`: the job stops, goes back to the queue held (so Slurm does
  not restart it on its own) and restarts from its last checkpoint when alloc starts it again;
  a job that does not resume restarts from scratch (its progress is its own affair).
- wait: a pending job that is not held is held, so that only alloc starts work.
- drained hosts: the node stays DRAIN with the reason `alloc: drain complete, ready for repair`
  (the first reason kept after it); the node returns to service when someone (or a repair
  system) resumes it.

Applying the same plan twice changes nothing the second time: each action is checked against
the cluster as read at the start of `apply` (a running job is not started again, a stopped
one not stopped again) and reported ok with what was found.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime

from alloc.adapters.base import (
    ActionResult,
    ApplyReport,
    EndedRun,
    HostResult,
    cluster_snapshot,
)
from alloc.adapters.slurm.commands import SlurmCommands, SlurmError
from alloc.adapters.slurm.read import (
    SlurmJob,
    SlurmSite,
    ended_from_squeue,
    hosts_from_sinfo,
    jobs_from_squeue,
)
from alloc.domain import (
    Action,
    BudgetTree,
    Cluster,
    HostName,
    Plan,
    Policy,
    Snapshot,
    WorkloadId,
)
from alloc.policy.contract import allocated_in

DRAINED_REASON = "alloc: drain complete, ready for repair"


class SlurmExecutor:
    def __init__(
        self,
        site: SlurmSite,
        budgets: BudgetTree,
        policy: Policy | None = None,
        commands: SlurmCommands | None = None,
        cluster_name: str = "slurm",
    ) -> None:
        self.site = site
        self.budgets = budgets
        self.policy = policy or Policy()
        self.commands = commands or SlurmCommands()
        self.cluster_name = cluster_name
        self.problems: dict[WorkloadId, str] = {}  # jobs whose comment was not used, and why
        self._ended: tuple[EndedRun, ...] = ()

    def read(self) -> tuple[Cluster, tuple[SlurmJob, ...], dict[HostName, str]]:
        """The cluster, the managed jobs, and each node's drain reason."""
        nodes = self.commands.json("sinfo")
        cluster = Cluster(self.cluster_name, hosts_from_sinfo(nodes, self.site))
        queue = self.commands.json("squeue")
        limit = self.policy.max_min_runtime_s
        jobs = jobs_from_squeue(queue, self.site, cluster, limit)
        self._ended = tuple(
            EndedRun(w.id, w.budget, w.gpus, allocated_in(self.budgets, w), w.started, ended)
            for w, ended in ended_from_squeue(queue, self.site, cluster, limit)
            if w.started is not None
        )
        reasons = {
            HostName(str(n["name"])): str(n.get("reason") or "") for n in nodes.get("nodes", ())
        }
        return cluster, jobs, reasons

    def snapshot(self) -> Snapshot:
        cluster, jobs, _ = self.read()
        now = datetime.now(UTC)
        read = ((j.workload, j.problem, j.blocked) for j in jobs)
        snapshot, self.problems = cluster_snapshot(now, self.policy, cluster, self.budgets, read)
        return snapshot

    def ended_runs(self) -> tuple[EndedRun, ...]:
        return self._ended

    def notes(self) -> dict[WorkloadId, str]:
        return dict(self.problems)

    def changes(self) -> str:
        """Jobs with their states and nodes with theirs, in Slurm's short forms (cheap)."""
        jobs = self.commands.run("squeue", "-h", "-o", "%i %T %r")
        nodes = self.commands.run("sinfo", "-h", "-N", "-o", "%N %t")
        return hashlib.sha256((jobs + "\n" + nodes).encode()).hexdigest()

    def apply(self, plan: Plan) -> ApplyReport:
        """Preemptions first (they free the nodes), then holds, then starts, then drains."""
        _, jobs, reasons = self.read()
        by_id = {j.workload.id: j for j in jobs}
        results = []
        # Preemptions free nodes; holds come before releases, so a job released earlier that
        # the plan now keeps waiting cannot take the nodes another job is released onto.
        order = {Action.PREEMPT: 0, Action.WAIT: 1, Action.START: 2}
        acting = sorted(
            (d for d in plan.decisions if d.action in order), key=lambda d: order[d.action]
        )
        for d in acting:
            job = by_id.get(d.workload)
            if job is None:
                results.append(ActionResult(d.workload, d.action, False, "no such job in Slurm"))
                continue
            try:
                done = self._act(d.action, job, dict(d.hosts))
            except SlurmError as e:
                done = (False, e.message)
            if done is not None:
                ok, detail = done
                results.append(
                    ActionResult(
                        d.workload,
                        d.action,
                        ok,
                        detail,
                        datetime.now(UTC),
                        changed=not detail.startswith("already"),
                    )
                )
        # A host is handed to repair once a fresh read finds nothing on it (the plan lists it
        # in the round its last work is preempted: that work is still stopping).
        busy = {h for j in jobs if j.state != "PENDING" for h in j.workload.hosts}
        drained = tuple(self._drained(name, reasons, name in busy) for name in plan.drained_hosts)
        return ApplyReport(tuple(results), drained)

    def _act(
        self, action: Action, job: SlurmJob, hosts: dict[HostName, int]
    ) -> tuple[bool, str] | None:
        """Carry out one action: (ok, detail); None when there was nothing to do or report
        (a waiting job already held)."""
        w = job.workload
        if action is Action.PREEMPT:
            if job.state == "PENDING":
                return True, "already stopped"
            self.commands.run("scontrol", "requeuehold", str(w.id))
            return True, "requeued, held"
        if action is Action.START:
            if job.state != "PENDING":
                where = ",".join(sorted(w.hosts))
                if set(w.hosts) == set(hosts):
                    return True, f"already running on {where}"
                return False, f"already running elsewhere ({where})"
            names = ",".join(sorted(hosts))
            if not job.held and job.pinned == names:
                return True, f"already released on {names}"
            pin = ("scontrol", "update", f"JobId={w.id}", f"NodeList={names}")
            self.commands.run(*pin, f"NumNodes={len(hosts)}")
            self.commands.run("scontrol", "release", str(w.id))
            return True, f"released on {names}"
        if action is Action.WAIT and job.state == "PENDING" and not job.held:
            self.commands.run("scontrol", "hold", str(w.id))
            return True, "held"
        return None

    def _drained(self, name: HostName, reasons: Mapping[HostName, str], busy: bool) -> HostResult:
        reason = reasons.get(name, "")
        if reason.startswith(DRAINED_REASON):
            return HostResult(name, True, "already marked", changed=False)
        if busy:
            return HostResult(name, True, "work still on it: marked once it has left", False)
        new = DRAINED_REASON + (f" ({reason})" if reason else "")
        drain = ("scontrol", "update", f"NodeName={name}", "State=DRAIN")
        try:
            self.commands.run(*drain, f"Reason={new[:200]}")
        except SlurmError as e:
            return HostResult(name, False, e.message)
        return HostResult(name, True, "marked for repair")
