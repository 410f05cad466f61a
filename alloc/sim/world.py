"""The simulated cluster: hosts, jobs and their progress, the ledger and the recorder.

It knows nothing of scheduling: it answers `snapshot()` and carries out starts and preemptions
as the executor tells it, keeping every counter the metrics need current. Times are seconds
since the start of the simulation (`t0`, the lab instance's `now`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import numpy as np

from alloc.domain import (
    ROOT_PATH,
    BudgetPath,
    Cluster,
    Host,
    HostName,
    HostState,
    Snapshot,
    Topology,
    TraceJob,
    Workload,
    WorkloadId,
    path_prefixes,
)
from alloc.ledger import Interval, Ledger
from alloc.ledger.integral import RunningIntegral
from alloc.sim.jobs import SimJob, after_preemption, lab_jobs
from alloc.sim.recorder import Drain, Preemption, Rates, Recorder


@dataclass(frozen=True, slots=True)
class Started:
    completes_at_s: float
    protected_until_s: float | None


class World:
    def __init__(
        self, lab: Snapshot, jobs: list[TraceJob], ledger: Ledger, recorder: Recorder
    ) -> None:
        self.lab = lab
        self.t0: datetime = lab.now
        self.now_s = 0.0
        self.ledger = ledger
        self.recorder = recorder
        self.rates: Rates = recorder.rates
        self.hosts: dict[HostName, Host] = {h.name: h for h in lab.cluster.hosts}
        self.removed: set[HostName] = set()
        self.used: dict[HostName, int] = {h: 0 for h in self.hosts}
        # The same, as an array in the order of `hosts` (the quiet-round tests read it whole).
        self.host_index = {name: i for i, name in enumerate(self.hosts)}
        self.used_array = np.zeros(len(self.hosts), np.int64)
        self.drain_started: dict[HostName, float] = {}
        self.trouble = sum(1 for h in self.hosts.values() if h.state is not HostState.READY)
        for name, host in self.hosts.items():
            if host.state.draining:
                self.drain_started[name] = 0.0  # draining since the start
        self._cluster: Cluster | None = None
        # (gpus, topology, gpu type) -> fits the empty ready cluster; reset when hosts change
        self._fits_empty: dict[tuple[int, Topology, str | None], bool] = {}
        self._ever_fits: dict[tuple[int, Topology, str | None], bool] = {}  # never reset
        # A trace job without a topology gets the instance's default (one per request size
        # and type: a trace has tens of thousands of jobs).
        every = (*lab_jobs(lab), *jobs)
        defaults = {
            (g, t): lab.cluster.default_topology(g, t)
            for g, t in {(j.gpus, j.gpu_type) for j in every if j.topology is None}
        }
        self.jobs: dict[WorkloadId, SimJob] = {
            j.id: SimJob(j, j.topology or defaults[(j.gpus, j.gpu_type)]) for j in every
        }
        self.queued: dict[WorkloadId, SimJob] = {}
        # Queued jobs by what decides where they fit (gpus, topology, GPU type, charged): one
        # representative each and how many (the quiet-round tests look at shapes, not jobs).
        self.queued_shapes: dict[
            tuple[int, Topology, str | None, bool], dict[WorkloadId, SimJob]
        ] = {}
        self.running: dict[WorkloadId, SimJob] = {}
        # Jobs that arrived, started, stopped or ended since the engine last looked (it tells
        # the state event passes carry: alloc.rounds)
        self.touched: dict[WorkloadId, None] = {}  # in the order they happened
        self.ready_integral = RunningIntegral()
        self._init_rates()
        # Before t0 the cluster is taken as it is at t0, and the lab's usage as spread evenly
        # over the window before t0 (the ledger has no earlier history).
        lookback = lab.policy.lookback_s
        self.ready_integral.change(-lookback, self.rates.ready)
        self.ledger.record(
            [
                Interval(
                    WorkloadId(f"usage-before:{path}"),
                    path,
                    hours * 3600.0 / lookback,
                    -lookback + self.epoch0,
                    self.epoch0,
                    True,
                )
                for path, hours in lab.usage_gpu_hours.items()
                if hours > 0
            ]
        )
        # The lab's own workloads are the state at the start: queued ones are queued, running
        # ones run where they are, charged from the start on (their past is in `usage`).
        for w in lab.workloads:
            sj = self.jobs[w.id]
            self.arrive(w.id)
            if w.started is not None:
                ran = (self.t0 - w.started).total_seconds()
                self.start(w.id, dict(w.hosts), self.charged(sj.job), w.backfill_for)
                sj.seg_start_s = -ran
                sj.first_start_s = -ran

    # -- time ------------------------------------------------------------------------------

    @property
    def epoch0(self) -> float:
        return self.t0.timestamp()

    def at(self, t_s: float) -> datetime:
        return self.t0 + timedelta(seconds=t_s)

    def advance(self, t_s: float) -> None:
        """Move the clock; the recorder integrates what held since the last move."""
        assert t_s >= self.now_s, (t_s, self.now_s)
        self.recorder.advance(t_s)
        self.now_s = t_s

    # -- counters ------------------------------------------------------------------------

    def _init_rates(self) -> None:
        r = self.rates
        r.installed = sum(h.gpus for n, h in self.hosts.items() if n not in self.removed)
        r.ready = sum(h.gpus for h in self.hosts.values() if h.state is HostState.READY)

    def _funded_leaf(self, job: TraceJob) -> BudgetPath | None:
        if job.budget and self.lab.budgets.effective_allocation(job.budget) > 0:
            return job.budget
        return None

    def charged(self, job: TraceJob) -> bool:
        """Allocated occupancy: funded and a minimum runtime above zero."""
        return self._funded_leaf(job) is not None and job.min_runtime_s > 0

    def fits_empty(self, sj: SimJob) -> bool:
        """The job fits the ready cluster with nothing running: one ready host large enough,
        or enough whole ready hosts of one type and size (in one block for topology block), of
        the job's GPU type if it names one."""
        key = (sj.job.gpus, sj.topology, sj.job.gpu_type)
        if key not in self._fits_empty:
            ready = (
                h
                for n, h in self.hosts.items()
                if h.state is HostState.READY and n not in self.removed
            )
            self._fits_empty[key] = _fits(sj, ready)
        return self._fits_empty[key]

    def could_ever_run(self, sj: SimJob) -> bool:
        """The job fits the lab's hosts, every one ready and empty: else no round can ever
        start it (larger than every place it could have), and it is not demand."""
        key = (sj.job.gpus, sj.topology, sj.job.gpu_type)
        if key not in self._ever_fits:
            self._ever_fits[key] = _fits(sj, self.lab.cluster.hosts)
        return self._ever_fits[key]

    def startable_queued_gpus(self) -> int:
        """GPUs of queued work that could start on this ready cluster if it were empty (work
        larger than every place it could have does not count as waiting for GPUs)."""
        return sum(
            key[0] * len(members)
            for key, members in self.queued_shapes.items()
            if self.fits_empty(next(iter(members.values())))
        )

    def _held(self, sj: SimJob, sign: int) -> None:
        """Add (+1) or remove (-1) a running job's GPUs from the counters."""
        r = self.rates
        for name, gpus in sj.hosts.items():
            self.used[name] += sign * gpus
            self.used_array[self.host_index[name]] += sign * gpus
            self._count(sj, sign * gpus, self.hosts[name].state is HostState.READY)
        if sj.allocated and sj.job.budget:
            self.recorder.delivered_change(sj.job.budget, sign * sj.job.gpus)
        if sj.job.util is not None:
            r.busy_util += sign * sj.job.gpus * sj.job.util
            r.busy_util_gpus += sign * sj.job.gpus

    def _demand(self, sj: SimJob, sign: int) -> None:
        leaf = self._funded_leaf(sj.job)
        if leaf is not None and sj.job.min_runtime_s > 0 and self.could_ever_run(sj):
            self.recorder.demand_change(leaf, sign * sj.job.gpus)

    # -- jobs ------------------------------------------------------------------------------

    def arrive(self, job_id: WorkloadId) -> None:
        sj = self.jobs[job_id]
        sj.state = "queued"
        self.queued[job_id] = sj
        self._queue_shape(sj, +1)
        self.touched[job_id] = None
        self.rates.queued += sj.job.gpus
        self._demand(sj, +1)

    def start(
        self,
        job_id: WorkloadId,
        hosts: dict[HostName, int],
        allocated: bool,
        backfill_for: tuple[WorkloadId, ...] = (),
    ) -> Started:
        sj = self.queued.pop(job_id)
        self._queue_shape(sj, -1)
        self.touched[job_id] = None
        self.rates.queued -= sj.job.gpus
        sj.state = "running"
        sj.hosts = dict(hosts)
        sj.allocated = allocated
        sj.backfill_for = backfill_for
        sj.seg_start_s = self.now_s
        sj.version += 1
        sj.cached = None
        if sj.first_start_s is None:
            sj.first_start_s = self.now_s
        self.running[job_id] = sj
        self._held(sj, +1)
        self.ledger.start(job_id, sj.job.budget, sj.job.gpus, self.epoch0 + self.now_s, allocated)
        protected = self.now_s + sj.job.min_runtime_s if allocated else None
        return Started(self.now_s + sj.remaining_s, protected)

    def _stop(self, sj: SimJob) -> float:
        """End the running segment; returns how long it ran."""
        self._held(sj, -1)
        self.ledger.stop(sj.job.id, self.epoch0 + self.now_s)
        del self.running[sj.job.id]
        self.touched[sj.job.id] = None
        sj.version += 1
        sj.cached = None
        ran = self.now_s - sj.seg_start_s
        sj.hosts = {}
        return ran

    def preempt(self, job_id: WorkloadId, checkpoint_s: float, reason: str) -> None:
        """Stop and requeue: resumable work keeps its progress up to its last checkpoint,
        other work starts over."""
        sj = self.running[job_id]
        ran = self._stop(sj)
        sj.work_done_s, lost = after_preemption(sj.work_done_s, ran, sj.job.resumable, checkpoint_s)
        sj.preemptions += 1
        sj.lost_gpu_s += lost * sj.job.gpus
        self.recorder.preemptions.append(
            Preemption(self.now_s, job_id, sj.job.budget, sj.job.gpus, lost * sj.job.gpus, reason)
        )
        sj.state = "queued"
        self.queued[job_id] = sj
        self._queue_shape(sj, +1)
        self.rates.queued += sj.job.gpus

    def _queue_shape(self, sj: SimJob, sign: int) -> None:
        key = (sj.job.gpus, sj.topology, sj.job.gpu_type, self.charged(sj.job))
        members = self.queued_shapes.get(key)
        if sign > 0:
            if members is None:
                self.queued_shapes[key] = {sj.job.id: sj}
            else:
                members[sj.job.id] = sj
        else:
            assert members is not None
            del members[sj.job.id]
            if not members:
                del self.queued_shapes[key]

    def queued_kinds(self) -> Iterable[SimJob]:
        """One queued job of each shape (gpus, topology, GPU type, charged)."""
        return (next(iter(members.values())) for members in self.queued_shapes.values())

    def complete(self, job_id: WorkloadId) -> None:
        sj = self.running[job_id]
        ran = self._stop(sj)
        sj.work_done_s += ran
        sj.state = "done"
        sj.end_s = self.now_s
        self._demand(sj, -1)

    # -- hosts -----------------------------------------------------------------------------

    def set_host_state(self, name: HostName, state: HostState) -> None:
        host = self.hosts[name]
        if host.state is state or name in self.removed:
            return
        r = self.rates
        was_ready = host.state is HostState.READY
        self.trouble += int(was_ready) - int(state is HostState.READY)
        self._host_share(name, -1)
        self.hosts[name] = replace(host, state=state)
        self._host_share(name, +1)
        now_ready = state is HostState.READY
        if was_ready != now_ready:
            delta = host.gpus if now_ready else -host.gpus
            r.ready += delta
            self.ready_integral.change(self.now_s, delta)
        if state.draining and name not in self.drain_started:
            self.drain_started[name] = self.now_s
        elif not state.draining:
            self.drain_started.pop(name, None)  # back in service: a later drain starts afresh
        self._cluster = None
        self._fits_empty.clear()

    def _host_share(self, name: HostName, sign: int) -> None:
        """Move the GPUs held on a host between 'on ready hosts' and 'elsewhere'."""
        ready = self.hosts[name].state is HostState.READY
        for sj in self.running.values():
            gpus = sj.hosts.get(name, 0)
            if gpus:
                self._count(sj, sign * gpus, ready)

    def _count(self, sj: SimJob, gpus: int, on_ready: bool) -> None:
        """Count `gpus` (negative: uncount) of a running job on a ready host as allocated or
        unallocated occupancy, on a host that is not ready (draining) as allocated work
        still delivered to its team, or as nothing for unallocated work."""
        r = self.rates
        if on_ready:
            if sj.allocated:
                r.allocated += gpus
            else:
                r.unallocated += gpus
        elif sj.allocated:
            r.allocated_elsewhere += gpus

    def drained(self, name: HostName) -> Drain | None:
        """A draining host is empty: record the drain (once) and hand the host over."""
        start = self.drain_started.pop(name, None)
        if start is None:
            return None
        drain = Drain(name, start, self.now_s)
        self.recorder.drains.append(drain)
        return drain

    def remove(self, name: HostName) -> None:
        """A retired host, drained, leaves the cluster."""
        self.removed.add(name)
        self.trouble -= 1
        self.rates.installed -= self.hosts[name].gpus
        self._cluster = None
        self._fits_empty.clear()

    # -- snapshot --------------------------------------------------------------------------

    def cluster(self) -> Cluster:
        if self._cluster is None:
            self._cluster = Cluster(
                self.lab.cluster.name,
                tuple(h for n, h in self.hosts.items() if n not in self.removed),
            )
        return self._cluster

    def workload(self, sj: SimJob) -> Workload:
        if sj.cached is None:
            j = sj.job
            running = sj.state == "running"
            sj.cached = Workload(
                id=j.id,
                budget=j.budget,
                gpus=j.gpus,
                min_runtime_s=j.min_runtime_s,
                submitted=self.at(j.submitted_s),
                resumable=j.resumable,
                priority=j.priority,
                topology=sj.topology,
                gpu_type=j.gpu_type,
                started=self.at(sj.seg_start_s) if running else None,
                hosts=sj.hosts if running else {},
                backfill_for=sj.backfill_for if running else (),
            )
        return sj.cached

    def window_capacity_gpu_hours(self) -> float:
        return self.ready_integral.window(self.now_s, self.lab.policy.lookback_s) / 3600.0

    def snapshot(self) -> Snapshot:
        workloads = tuple(self.workload(sj) for sj in self.running.values()) + tuple(
            self.workload(sj) for sj in self.queued.values()
        )
        return Snapshot(
            now=self.at(self.now_s),
            policy=self.lab.policy,
            cluster=self.cluster(),
            budgets=self.lab.budgets,
            usage_gpu_hours=self.ledger.window_gpu_hours(self.epoch0 + self.now_s),
            workloads=workloads,
            usage_capacity_gpu_hours=max(self.window_capacity_gpu_hours(), 1e-9),
        )

    def leaf_ratios(self) -> dict[BudgetPath, float]:
        """Each leaf's fair-share ratio over the window now (for the timelines)."""
        usage = self.ledger.window_gpu_hours(self.epoch0 + self.now_s)
        total: dict[BudgetPath, float] = {}
        for path, hours in usage.items():
            for p in (ROOT_PATH, *path_prefixes(path)):
                total[p] = total.get(p, 0.0) + hours
        capacity = max(self.window_capacity_gpu_hours(), 1e-9)
        out = {}
        for leaf in self.lab.budgets.leaves():
            eff = self.lab.budgets.effective_allocation(leaf)
            out[leaf] = total.get(leaf, 0.0) / (eff * capacity) if eff > 0 else float("inf")
        return out


def _fits(sj: SimJob, hosts: Iterable[Host]) -> bool:
    """One of `hosts` large enough, or enough whole ones of one type and size (in one block
    for topology block), of the job's GPU type if it names one."""
    gpus, wanted = sj.job.gpus, sj.job.gpu_type
    groups: dict[tuple[str | None, str, int], int] = {}
    for host in hosts:
        if wanted is not None and host.gpu_type != wanted:
            continue
        if host.gpus >= gpus:
            return True
        block = host.block if sj.topology is Topology.BLOCK else None
        group = (block, host.gpu_type, host.gpus)
        groups[group] = groups.get(group, 0) + 1
    return any(n * cap >= gpus for (*_, cap), n in groups.items())
