"""The executor protocol: `snapshot() -> Snapshot` and `apply(plan) -> ApplyReport`.

The simulator, the controller and any cluster manager adapter implement it; the round function
never sees which one it talks to."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol, runtime_checkable

from alloc.domain import (
    Action,
    BudgetPath,
    BudgetTree,
    Cluster,
    HostName,
    Plan,
    Policy,
    Snapshot,
    Workload,
    WorkloadId,
)


class ClusterError(RuntimeError):
    """A call to the cluster manager that failed (after its attempts, alloc.adapters.retry)
    or was refused: Slurm's SlurmError, Kubernetes' KubeError. A command that only reads the
    cluster says it could not reach it (alloc.controller.opening)."""


@dataclass(frozen=True, slots=True)
class ActionResult:
    workload: WorkloadId
    action: Action
    ok: bool
    detail: str = ""
    at: datetime | None = None  # when the cluster carried it out, if it says
    changed: bool = True  # False: the cluster was already so (a plan applied twice)


@dataclass(frozen=True, slots=True)
class HostResult:
    """What became of a host the plan lists as drained (handed to repair or removed)."""

    host: HostName
    ok: bool
    detail: str = ""
    changed: bool = True  # False: nothing was done (already marked, or work still there)


@dataclass(frozen=True, slots=True)
class ApplyReport:
    results: tuple[ActionResult, ...]
    hosts: tuple[HostResult, ...] = ()

    @property
    def failed(self) -> tuple[ActionResult, ...]:
        return tuple(r for r in self.results if not r.ok)

    @property
    def failed_hosts(self) -> tuple[HostResult, ...]:
        return tuple(r for r in self.hosts if not r.ok)


@dataclass(frozen=True, slots=True)
class EndedRun:
    """A run the cluster reports ended (completed, failed, cancelled), with its own times:
    the controller's ledger charges it exactly even when no round saw it end."""

    workload: WorkloadId
    budget: BudgetPath | None
    gpus: int
    charged: bool
    started: datetime
    ended: datetime


class FaultKind(StrEnum):
    FAILED = "failed"  # the command answered with an error (or could not be run)
    TIMEOUT = "timeout"  # no answer within its time limit: it was killed
    UNPARSABLE = "unparsable"  # it answered, but not with what it should (garbage, truncated)


@dataclass(frozen=True, slots=True)
class ExecutorFault:
    """One failed attempt of a call to the cluster manager: what went wrong, and whether (after
    how long) it is tried again. A fault with `retry_in_s` None was the last attempt."""

    kind: FaultKind
    command: str  # the call, shortly: "scontrol requeuehold", "squeue --json"
    message: str
    attempt: int  # 1 for the first try
    retry_in_s: float | None  # the wait before the next attempt; None: given up

    @property
    def gave_up(self) -> bool:
        return self.retry_in_s is None


def cluster_snapshot(
    now: datetime,
    policy: Policy,
    cluster: Cluster,
    budgets: BudgetTree,
    read: Iterable[tuple[Workload, str, str]],
) -> tuple[Snapshot, dict[WorkloadId, str]]:
    """A cluster manager's snapshot from the workloads its adapter read, each with why its
    declared contract was not used and why no round may place it now ("" for none): the
    blocked ones are left out, and both reasons become notes for `alloc status`. The window's
    usage is the controller's (its ledger), not the cluster's."""
    read = list(read)
    notes = {w.id: blocked or problem for w, problem, blocked in read if blocked or problem}
    snapshot = Snapshot(
        now=now,
        policy=policy,
        cluster=cluster,
        budgets=budgets,
        usage_gpu_hours={},
        workloads=tuple(w for w, _, blocked in read if not blocked),
    )
    return snapshot, notes


def unfunded_note(no_budget: str) -> str:
    """The note on a job whose budget maps to no node (`Executor.no_budget`), as its reader
    writes it among the others (`note: 6: its account 'physics' is not mapped ...: it runs
    unfunded`); `alloc explain`, whose headline says the same, leaves that note out."""
    return f"{no_budget}: it runs unfunded"


class Executor(Protocol):
    def snapshot(self) -> Snapshot: ...

    def apply(self, plan: Plan) -> ApplyReport: ...

    def ended_runs(self) -> tuple[EndedRun, ...]:
        """Runs that ended recently, as far as the cluster remembers (read with the last
        snapshot)."""
        ...

    def notes(self) -> Mapping[WorkloadId, str]:
        """Jobs the last snapshot left out or read otherwise than declared, and why (a bad
        contract comment, a job the cluster holds back): for `alloc status`."""
        ...

    def no_budget(self) -> Mapping[WorkloadId, str]:
        """Workloads of the last snapshot without a budget although their job named one, and
        why: `its account 'physics' is not mapped to a budget node (slurm.accounts)`. What
        `alloc explain` says of them instead of "it names no budget"."""
        ...

    def changes(self) -> str:
        """A cheap fingerprint of what a round reacts to (jobs queued, running or ended, host
        states): when it changes between rounds, the controller runs one early (an event)."""
        ...

    def faults(self) -> tuple[ExecutorFault, ...]:
        """The failed attempts of calls to the cluster manager since the last call of this
        (each reported once): the controller logs, counts and records them."""
        ...


class StaleEpoch(Exception):
    """An executor refused a plan: a later epoch of the leader lease has acted on it already
    (the controller that sent it was paused or cut off past its lease)."""


@runtime_checkable
class Guarded(Protocol):
    """An executor that asks, before each action of a plan, whether it may still act: `check`
    raises (the controller's leader lease has run out: models/failover.md) and the rest of the
    plan is not applied. For cluster managers that check no fencing token (Slurm, Kubernetes):
    a controller paused or cut off in the middle of an apply stops before its next action."""

    def apply_guarded(self, plan: Plan, check: Callable[[], None]) -> ApplyReport: ...


@runtime_checkable
class Fenced(Protocol):
    """An executor that checks the leader lease's epoch itself (models/failover.md): a plan of
    an epoch older than one it has applied is refused whole (StaleEpoch), in the same
    transaction as the actions it would take."""

    def apply_fenced(self, plan: Plan, holder: str, epoch: int) -> ApplyReport: ...
