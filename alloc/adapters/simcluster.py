"""A simulated cluster that lives in an SQLite file: the controller's `sim` executor.

The simulator (alloc.sim) keeps its world in memory and drives its own clock. A controller
instead talks to a cluster that outlives it: this one keeps its hosts, jobs, clock and the
record of every run in a file, and every call is one transaction, so a controller killed at
any moment finds the cluster exactly as the cluster last changed. Its clock moves in one of two
ways. By default `apply()` acts at the current simulated time, then moves the clock one
`step_s` and completes the jobs whose work is done by then (at the exact second it was done);
`snapshot()` only reads. Once `simulated_clock()` has handed out a clock (a controller's dry run
on simulated time, `alloc controller run --clock simulated`), the cluster follows that clock
instead: every call first brings it to the clock's time (completing the work done by then),
and apply acts at that time without moving it. A preemption keeps
resumable work up to its last checkpoint (alloc.sim.jobs.after_preemption); a start needs a
queued job and room on ready hosts. Its `runs` table is the truth a crash-safety test
compares the controller's ledger with.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable
from datetime import datetime, timedelta
from pathlib import Path

from alloc.adapters import fence
from alloc.adapters.base import (
    ActionResult,
    ApplyReport,
    EndedRun,
    ExecutorFault,
    HostResult,
    StaleEpoch,
)
from alloc.domain import (
    Action,
    BudgetPath,
    Cluster,
    Host,
    HostName,
    HostState,
    Plan,
    Snapshot,
    Topology,
    TraceJob,
    Workload,
    WorkloadId,
)
from alloc.policy.contract import allocated_in
from alloc.sim.clock import SimulatedClock
from alloc.sim.jobs import after_preemption

SCHEMA = """
CREATE TABLE IF NOT EXISTS clock (id INTEGER PRIMARY KEY CHECK (id = 0), now_s REAL NOT NULL);
CREATE TABLE IF NOT EXISTS hosts (
    name TEXT PRIMARY KEY, gpus INTEGER NOT NULL, gpu_type TEXT NOT NULL, block TEXT NOT NULL,
    rack TEXT NOT NULL, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, budget TEXT, gpus INTEGER NOT NULL, min_runtime_s REAL NOT NULL,
    resumable INTEGER NOT NULL, priority INTEGER NOT NULL, topology TEXT, gpu_type TEXT,
    submitted_s REAL NOT NULL, runtime_s REAL NOT NULL, work_done_s REAL NOT NULL,
    state TEXT NOT NULL, started_s REAL, hosts TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    job TEXT NOT NULL, started_s REAL NOT NULL, ended_s REAL, gpus INTEGER NOT NULL,
    budget TEXT, PRIMARY KEY (job, started_s));
"""


class SimCluster:
    """`lab` gives the cluster's epoch (its `now`), policy, budget tree and, when the file is
    new, its hosts; `jobs` (a trace, submission times in seconds from the epoch) are loaded
    when the file is new."""

    def __init__(
        self, path: str | Path, lab: Snapshot, jobs: Iterable[TraceJob] = (), step_s: float = 300.0
    ) -> None:
        self.path = Path(path)
        self.lab = lab
        self.step_s = step_s
        self.checkpoint_s = lab.policy.checkpoint_interval_s
        self.clock: SimulatedClock | None = None  # None: the clock moves one step per apply
        # transactions by hand; one caller at a time, from any thread
        self.db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        for statement in SCHEMA.split(";"):
            if statement.strip():
                self.db.execute(statement)
        if self.db.execute("SELECT COUNT(*) FROM clock").fetchone()[0] == 0:
            self._load(list(jobs))  # one transaction: a crash here loads again next time

    def _load(self, jobs: list[TraceJob]) -> None:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        db.executemany(
            "INSERT INTO hosts VALUES (?, ?, ?, ?, ?, ?)",
            [
                (h.name, h.gpus, h.gpu_type, h.block, h.rack, h.state.value)
                for h in self.lab.cluster.hosts
            ],
        )
        db.executemany(
            "INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 'pending', NULL, '{}')",
            [
                (
                    j.id,
                    j.budget,
                    j.gpus,
                    j.min_runtime_s,
                    int(j.resumable),
                    j.priority,
                    j.topology.value if j.topology else None,
                    j.gpu_type,
                    j.submitted_s,
                    j.runtime_s,
                )
                for j in jobs
            ],
        )
        db.execute("INSERT INTO clock VALUES (0, 0.0)")
        db.execute("COMMIT")

    def simulated_clock(self, end_s: float = math.inf) -> SimulatedClock:
        """A clock at the cluster's current time (seconds since the lab's `now`) that the
        cluster follows from now on; waiting on it past `end_s` ends the run."""
        self.clock = SimulatedClock(self.lab.now.timestamp(), self._now(), end_s)
        return self.clock

    # the executor protocol

    def snapshot(self) -> Snapshot:
        """The cluster at its current time (a pure read, once at the clock's time)."""
        self._catch_up()
        return self._snapshot(self._now())

    def _catch_up(self) -> None:
        """Following a clock: the cluster moves to its time (one transaction)."""
        if self.clock is None or self.clock.t_s <= self._now():
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self._advance(self.clock.t_s)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def _advance(self, now: float) -> None:
        """Inside a transaction: the clock moves to `now` and the work that is done by then
        completes, at the exact second it was done."""
        db = self.db
        running = db.execute(
            "SELECT id, started_s, runtime_s, work_done_s FROM jobs WHERE state = 'running'"
        ).fetchall()
        for job, started, runtime, done in running:
            finish = started + (runtime - done)
            if finish <= now:
                db.execute(
                    "UPDATE jobs SET state = 'done', work_done_s = runtime_s, "
                    "started_s = NULL, hosts = '{}' WHERE id = ?",
                    (job,),
                )
                db.execute(
                    "UPDATE runs SET ended_s = ? WHERE job = ? AND started_s = ?",
                    (finish, job, started),
                )
        db.execute("UPDATE clock SET now_s = ?", (now,))

    def _snapshot(self, now: float) -> Snapshot:
        hosts = tuple(
            Host(HostName(n), g, t, b, r, HostState(s))
            for n, g, t, b, r, s in self.db.execute("SELECT * FROM hosts ORDER BY name")
        )
        cluster = Cluster(self.lab.cluster.name, hosts)
        rows = self.db.execute(
            "SELECT id, budget, gpus, min_runtime_s, resumable, priority, topology, gpu_type, "
            "submitted_s, runtime_s, work_done_s, state, started_s, hosts FROM jobs "
            "WHERE state IN ('pending', 'running') AND submitted_s <= ? ORDER BY id",
            (now,),
        )
        workloads = []
        for (
            i,
            budget,
            gpus,
            min_rt,
            resumable,
            prio,
            topo,
            gtype,
            sub,
            runtime,
            done,
            state,
            started,
            placed,
        ) in rows:
            running = state == "running"
            workloads.append(
                Workload(
                    id=WorkloadId(i),
                    budget=BudgetPath(budget) if budget else None,
                    gpus=gpus,
                    min_runtime_s=min_rt,
                    submitted=self._at(sub),
                    resumable=bool(resumable),
                    priority=prio,
                    topology=Topology(topo) if topo else cluster.default_topology(gpus, gtype),
                    gpu_type=gtype,
                    started=self._at(started) if running else None,
                    hosts={HostName(h): g for h, g in json.loads(placed).items()},
                    # The work a queued job still needs. Running work reads as a cluster
                    # manager shows it: nothing that changes while it runs (a controller's
                    # event pass would take it for news every time).
                    runtime_s=None if running else max(0.0, runtime - done),
                )
            )
        return Snapshot(
            self._at(now), self.lab.policy, cluster, self.lab.budgets, {}, tuple(workloads)
        )

    def apply(self, plan: Plan) -> ApplyReport:
        """Preemptions, then starts, at the cluster's current time; then its clock moves one
        step (completing the work done by then), unless it follows a clock. One transaction."""
        return self._apply(plan)

    def apply_fenced(self, plan: Plan, holder: str, epoch: int) -> ApplyReport:
        """`apply` by the controller holding `epoch` of the leader lease: refused whole
        (StaleEpoch) when a later epoch has applied; recorded with holder and epoch, action by
        action (alloc.adapters.fence)."""
        try:
            return self._apply(plan, (holder, epoch))
        except StaleEpoch:
            self.db.execute("BEGIN IMMEDIATE")
            fence.record(self.db, holder, epoch, self._now(), (), refused=True)
            self.db.execute("COMMIT")
            raise

    def _apply(self, plan: Plan, by: tuple[str, int] | None = None) -> ApplyReport:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            if by is not None:
                fence.admit(db, *by)
            if self.clock is not None and self.clock.t_s > self._now():
                self._advance(self.clock.t_s)
            now = self._now()
            results = [
                self._preempt(d.workload, now) for d in plan.decisions if d.action is Action.PREEMPT
            ]
            results += [
                self._start(d.workload, dict(d.hosts), now)
                for d in plan.decisions
                if d.action is Action.START
            ]
            if by is not None:
                fence.record(db, *by, now, results)
            if self.clock is None:
                self._advance(now + self.step_s)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return ApplyReport(
            tuple(results), tuple(HostResult(h, True, "drained") for h in plan.drained_hosts)
        )

    def _preempt(self, job: WorkloadId, now: float) -> ActionResult:
        row = self.db.execute(
            "SELECT state, started_s, work_done_s, resumable FROM jobs WHERE id = ?", (job,)
        ).fetchone()
        if row is None or row[0] != "running":
            return ActionResult(job, Action.PREEMPT, True, "already stopped", self._at(now), False)
        _, started, done, resumable = row
        done, _ = after_preemption(done, now - started, bool(resumable), self.checkpoint_s)
        self.db.execute(
            "UPDATE jobs SET state = 'pending', work_done_s = ?, started_s = NULL, hosts = '{}' "
            "WHERE id = ?",
            (done, job),
        )
        self.db.execute(
            "UPDATE runs SET ended_s = ? WHERE job = ? AND started_s = ?", (now, job, started)
        )
        return ActionResult(job, Action.PREEMPT, True, "requeued", self._at(now))

    def _start(self, job: WorkloadId, hosts: dict[HostName, int], now: float) -> ActionResult:
        row = self.db.execute(
            "SELECT state, hosts, gpus, budget, submitted_s FROM jobs WHERE id = ?", (job,)
        ).fetchone()
        if row is None or row[4] > now:
            return ActionResult(job, Action.START, False, "no such job", self._at(now))
        state, placed, gpus, budget, _ = row
        if state == "running":
            same = set(json.loads(placed)) == {str(h) for h in hosts}
            detail = "already running there" if same else "already running elsewhere"
            return ActionResult(job, Action.START, same, detail, self._at(now), False)
        if state != "pending":
            return ActionResult(job, Action.START, False, f"job is {state}", self._at(now))
        problem = self._no_room(hosts)
        if problem:
            return ActionResult(job, Action.START, False, problem, self._at(now))
        self.db.execute(
            "UPDATE jobs SET state = 'running', started_s = ?, hosts = ? WHERE id = ?",
            (now, json.dumps({str(h): g for h, g in hosts.items()}), job),
        )
        self.db.execute("INSERT INTO runs VALUES (?, ?, NULL, ?, ?)", (job, now, gpus, budget))
        return ActionResult(job, Action.START, True, "started", self._at(now))

    def _no_room(self, hosts: dict[HostName, int]) -> str:
        used: dict[str, int] = {}
        for (placed,) in self.db.execute("SELECT hosts FROM jobs WHERE state = 'running'"):
            for h, g in json.loads(placed).items():
                used[h] = used.get(h, 0) + g
        for name, gpus in hosts.items():
            row = self.db.execute(
                "SELECT gpus, state FROM hosts WHERE name = ?", (name,)
            ).fetchone()
            if row is None or row[1] != HostState.READY.value:
                return f"host {name} cannot take work"
            if used.get(name, 0) + gpus > row[0]:
                return f"host {name} has no room"
        return ""

    def notes(self) -> dict[WorkloadId, str]:
        return {}  # every job is read as declared

    def no_budget(self) -> dict[WorkloadId, str]:
        return {}  # a workload's budget is the one it names

    def faults(self) -> tuple[ExecutorFault, ...]:
        return ()  # its calls never fail

    def changes(self) -> str:
        """Moved one step per apply, the cluster changes only then (its clock moves). Following
        a clock, it changes as a real cluster's queue does: a job submitted, started, stopped or
        done by the clock's time (read only: what is done by then need not be written yet)."""
        if self.clock is None:
            return str(self._now())
        t = self.clock.t_s
        db = self.db
        (arrived,) = db.execute("SELECT COUNT(*) FROM jobs WHERE submitted_s <= ?", (t,)).fetchone()
        started, ended = db.execute("SELECT COUNT(*), COUNT(ended_s) FROM runs").fetchone()
        (due,) = db.execute(
            "SELECT COUNT(*) FROM jobs WHERE state = 'running' "
            "AND started_s + (runtime_s - work_done_s) <= ?",
            (t,),
        ).fetchone()
        return f"{arrived}/{started}/{ended + due}"

    def ended_runs(self) -> tuple[EndedRun, ...]:
        self._catch_up()
        out = []
        for job, started, ended, gpus, budget in self.db.execute(
            "SELECT job, started_s, ended_s, gpus, budget FROM runs WHERE ended_s IS NOT NULL"
        ):
            w = self._workload_for_charge(job, budget, gpus)
            out.append(
                EndedRun(
                    WorkloadId(job),
                    w.budget,
                    gpus,
                    allocated_in(self.lab.budgets, w),
                    self._at(started),
                    self._at(ended),
                )
            )
        return tuple(out)

    def _workload_for_charge(self, job: str, budget: str | None, gpus: int) -> Workload:
        (min_rt,) = self.db.execute(
            "SELECT min_runtime_s FROM jobs WHERE id = ?", (job,)
        ).fetchone()
        return Workload(
            WorkloadId(job), BudgetPath(budget) if budget else None, gpus, min_rt, self.lab.now
        )

    # for tests and reports

    def runs(self) -> list[tuple[str, float, float | None, int, str | None]]:
        """Every run: (job, started, ended or None, GPUs, budget), times in epoch seconds."""
        epoch = self.lab.now.timestamp()
        return [
            (j, epoch + s, None if e is None else epoch + e, g, b)
            for j, s, e, g, b in self.db.execute("SELECT * FROM runs ORDER BY started_s, job")
        ]

    def unfinished(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM jobs WHERE state != 'done'").fetchone()[0])

    def to_arrive(self) -> int:
        """Jobs of the trace not submitted yet at the cluster's time."""
        (n,) = self.db.execute(
            "SELECT COUNT(*) FROM jobs WHERE submitted_s > ?", (self._now(),)
        ).fetchone()
        return int(n)

    def now_s(self) -> float:
        """The cluster's time: seconds since the lab's `now`."""
        return self._now()

    def _now(self) -> float:
        return float(self.db.execute("SELECT now_s FROM clock").fetchone()[0])

    def _at(self, seconds: float) -> datetime:
        return self.lab.now + timedelta(seconds=seconds)

    def close(self) -> None:
        self.db.close()
