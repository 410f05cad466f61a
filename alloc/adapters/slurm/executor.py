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
one not stopped again) and reported ok with what was found. Which commands an action takes is
chosen in one place, alloc.adapters.slurm.actions, which `alloc export --to slurm` uses too.

Faults (alloc.adapters.slurm.commands: each command has a timeout and is retried with
backoff): an action whose command still fails is reported failed, saying how far it got
("pin to a,b done; release failed: ..."), and nothing is assumed of it. A start whose
planned nodes are still held by a job whose preemption failed is not released (Slurm would
start the gang there by itself once they free): it is reported failed too. A gang is one
Slurm job, which Slurm starts on all its nodes at once or not at all, so a half-done apply
never leaves a gang running in part; the next round reads the cluster again and plans from
what it shows (the jobs stopped so far wait held, the rest still run).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from alloc.adapters.base import (
    ActionResult,
    ApplyReport,
    EndedRun,
    ExecutorFault,
    HostResult,
    cluster_snapshot,
)
from alloc.adapters.slurm.actions import DRAINED_REASON, SlurmAction, plan_actions, seen_from
from alloc.adapters.slurm.commands import SlurmCommands, SlurmError
from alloc.adapters.slurm.read import (
    SlurmJob,
    SlurmSite,
    ended_from_squeue,
    hosts_from_sinfo,
    jobs_from_squeue,
)
from alloc.domain import (
    BudgetTree,
    Cluster,
    HostName,
    Plan,
    Policy,
    Snapshot,
    WorkloadId,
)
from alloc.policy.contract import allocated_in

__all__ = ["DRAINED_REASON", "SlurmExecutor"]


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
        self.unmapped: dict[WorkloadId, str] = {}  # jobs whose account has no budget node
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
        self.unmapped = {j.workload.id: j.no_budget for j in jobs if j.no_budget}
        return snapshot

    def ended_runs(self) -> tuple[EndedRun, ...]:
        return self._ended

    def notes(self) -> dict[WorkloadId, str]:
        return dict(self.problems)

    def no_budget(self) -> dict[WorkloadId, str]:
        return dict(self.unmapped)

    def faults(self) -> tuple[ExecutorFault, ...]:
        return self.commands.take_faults()

    def changes(self) -> str:
        """Jobs with their states and nodes with theirs, in Slurm's short forms (cheap)."""
        jobs = self.commands.run("squeue", "-h", "-o", "%i %T %r")
        nodes = self.commands.run("sinfo", "-h", "-N", "-o", "%N %t")
        return hashlib.sha256((jobs + "\n" + nodes).encode()).hexdigest()

    def actions(self, plan: Plan) -> tuple[SlurmAction, ...]:
        """What `apply(plan)` would ask of Slurm now: the cluster is read, nothing changed."""
        _, jobs, reasons = self.read()
        return plan_actions(plan, seen_from(jobs, reasons))

    def apply(self, plan: Plan) -> ApplyReport:
        """Preemptions first (they free the nodes), then holds, then starts, then drains
        (alloc.adapters.slurm.actions chooses the commands)."""
        return self.carry_out(self.actions(plan))

    def apply_guarded(self, plan: Plan, check: Callable[[], None]) -> ApplyReport:
        """`apply`, with `check()` before each action (alloc.adapters.base.Guarded)."""
        return self.carry_out(self.actions(plan), check)

    def carry_out(
        self, actions: Iterable[SlurmAction], check: Callable[[], None] = lambda: None
    ) -> ApplyReport:
        """Run each action's steps in order; an action whose step fails stops there and is
        reported failed with how far it got and Slurm's message, and the next action is
        tried, except a start onto nodes a failed preemption left busy. `check` is called
        before each action that runs commands; what it raises stops the apply there."""
        results, hosts = [], []
        busy: dict[HostName, WorkloadId] = {}  # nodes whose job's preemption failed
        for a in actions:
            if a.steps:
                check()
            ok, detail = a.ok, a.detail
            blocking = sorted({busy[h] for h in a.hosts if h in busy}) if a.kind == "start" else []
            if blocking and a.steps:
                still = ", ".join(blocking)
                ok, detail = False, f"not released: its nodes still run {still} (not preempted)"
            else:
                ok, detail = self._steps(a, ok, detail)
                if not ok and a.kind == "preempt" and a.workload is not None:
                    busy.update(dict.fromkeys(a.hosts, a.workload))
            if a.host is not None:
                hosts.append(HostResult(a.host, ok, detail, changed=bool(a.steps)))
                continue
            assert a.workload is not None
            results.append(
                ActionResult(
                    a.workload,
                    a.action,
                    ok,
                    detail,
                    datetime.now(UTC) if a.found else None,
                    changed=not detail.startswith("already"),
                )
            )
        return ApplyReport(tuple(results), tuple(hosts))

    def _steps(self, a: SlurmAction, ok: bool, detail: str) -> tuple[bool, str]:
        """(ok, detail) once the action's steps ran, or stopped at the first that failed."""
        for done, step in enumerate(a.steps):
            try:
                self.commands.run(*step.argv)
            except SlurmError as e:
                before = "".join(f"{s.label} done; " for s in a.steps[:done])
                return False, f"{before}{step.label} failed: {e.message}"
        return ok, detail
