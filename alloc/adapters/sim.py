"""The simulator's executor: the same protocol a real cluster manager implements."""

from __future__ import annotations

from datetime import UTC, datetime

from alloc.adapters.base import ActionResult, ApplyReport, EndedRun, ExecutorFault
from alloc.domain import Action, Occupancy, Plan, Snapshot, WorkloadId
from alloc.sim.world import World


class SimExecutor:
    def __init__(self, world: World, checkpoint_s: float) -> None:
        self.world = world
        self.checkpoint_s = checkpoint_s

    def snapshot(self) -> Snapshot:
        return self.world.snapshot()

    def notes(self) -> dict[WorkloadId, str]:
        return {}  # every job is read as declared

    def no_budget(self) -> dict[WorkloadId, str]:
        return {}  # a workload's budget is the one it names

    def faults(self) -> tuple[ExecutorFault, ...]:
        return ()  # its calls never fail

    def changes(self) -> str:
        """The simulator's engine drives its rounds from its own events; for a controller,
        what queues, runs and which hosts are up."""
        w = self.world
        return f"{len(w.queued)}/{len(w.running)}/{len(w.removed)}/{w.now_s}"

    def ended_runs(self) -> tuple[EndedRun, ...]:
        """Every run the simulated cluster has ended so far (its ledger's closed intervals)."""
        return tuple(
            EndedRun(i.workload, i.budget, int(i.gpus), i.charged, _at(i.start_s), _at(i.end_s))
            for i in self.world.ledger.store.intervals()
        )

    def apply(self, plan: Plan) -> ApplyReport:
        """Preemptions first (they free GPUs), then starts; each checked against the cluster
        as it is, so a plan applied twice changes nothing the second time."""
        world = self.world
        results = []
        for d in plan.decisions:
            if d.action is Action.PREEMPT:
                if d.workload in world.running:
                    world.preempt(d.workload, self.checkpoint_s, d.reason.value)
                    results.append(ActionResult(d.workload, d.action, True))
                else:
                    results.append(ActionResult(d.workload, d.action, False, "not running"))
        for d in plan.decisions:
            if d.action is not Action.START:
                continue
            problem = self._cannot_start(d.workload, {str(h): g for h, g in d.hosts.items()})
            if problem:
                results.append(ActionResult(d.workload, d.action, False, problem))
                continue
            world.start(
                d.workload, dict(d.hosts), d.occupancy is Occupancy.ALLOCATED, d.backfill_for
            )
            results.append(ActionResult(d.workload, d.action, True))
        return ApplyReport(tuple(results))

    def _cannot_start(self, workload: str, hosts: dict[str, int]) -> str:
        world = self.world
        if workload not in world.queued:
            return "not queued"
        for name, gpus in hosts.items():
            host = world.hosts.get(name)  # type: ignore[call-overload]
            if host is None or name in world.removed or not host.state.accepts_work:
                return f"host {name} cannot take work"
            if world.used[name] + gpus > host.gpus:  # type: ignore[index]
                return f"host {name} has no room"
        return ""


def _at(epoch_s: float) -> datetime:
    return datetime.fromtimestamp(epoch_s, UTC)
