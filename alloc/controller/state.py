"""The controller's durable state, in SQLite by default and in any database SQLAlchemy reaches
(PostgreSQL with a `postgresql://` URL): the ledger of runs, every round's plan with each
decision and its reason, and every action applied with its outcome.

The ledger is kept as *runs*: a run is one stretch a workload ran, keyed by (workload, the
time it started), with its budget, GPUs and whether it is charged. A run is written the first
time a round sees it running (from the cluster's own start time, so nothing before the first
sighting is lost) and closed when it is seen ended (at the end time the cluster reports, or
at the time alloc stopped it, or else at the first round that no longer sees it). Every write
is keyed and idempotent, so a controller killed at any moment and restarted neither loses a
charge nor charges anything twice: it re-reads the cluster and carries on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import (
    Connection,
    Engine,
    Row,
    Select,
    and_,
    create_engine,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)

from alloc.adapters.base import ApplyReport
from alloc.controller.queries import close_open, decided_in, latest_decision, preempted_at
from alloc.controller.tables import (
    actions,
    budget_changes,
    decisions,
    metadata,
    rounds,
    runs,
)
from alloc.domain import BudgetPath, Plan, WorkloadId


@dataclass(frozen=True, slots=True)
class Run:
    workload: WorkloadId
    started_s: float
    budget: BudgetPath | None
    gpus: int
    charged: bool
    ended_s: float | None = None

    @property
    def key(self) -> tuple[str, float]:
        return (self.workload, self.started_s)


class StateStore:
    def __init__(self, url: str = "sqlite:///:memory:") -> None:
        self.url = url
        self.engine: Engine = create_engine(url)
        metadata.create_all(self.engine)
        self._upgrade()
        # Run first in every write of the ledger, the plans and the actions, inside its
        # transaction: the leader lease's check (alloc.controller.lease) refuses the write of a
        # controller that no longer holds it.
        self.fence: Callable[[Connection], None] | None = None

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        with self.engine.begin() as db:
            if self.fence is not None:
                self.fence(db)
            yield db

    def _upgrade(self) -> None:
        """A state database written before rounds had a kind gets the column (every round
        in it was a full round), and one written before backfill its decisions' column."""
        with self.engine.begin() as db:
            names = {c["name"] for c in inspect(db).get_columns("rounds")}
            if "kind" not in names:
                db.execute(
                    text("ALTER TABLE rounds ADD COLUMN kind VARCHAR(10) DEFAULT 'full' NOT NULL")
                )
            names = {c["name"] for c in inspect(db).get_columns("decisions")}
            if "backfill_for" not in names:  # written before backfill: no start was one
                db.execute(text("ALTER TABLE decisions ADD COLUMN backfill_for JSON"))

    # the ledger

    def observe(
        self, now_s: float, running: Iterable[Run], ended: Iterable[Run] = ()
    ) -> tuple[int, int]:
        """One round's sighting, in one transaction: runs seen running are opened if new;
        runs the cluster reports ended are written closed (or closed if open); open runs seen
        neither way are closed at `now_s`. (opened, closed)."""
        running = list(running)
        ended_by = {r.key: r for r in ended}
        seen = {r.key for r in running}
        opened = closed = 0
        with self._write() as db:
            known = {
                (w, s): e
                for w, s, e in db.execute(select(runs.c.workload, runs.c.started_s, runs.c.ended_s))
            }
            for r in running:
                if r.key not in known:
                    db.execute(insert(runs).values(_row(r, None)))
                    opened += 1
            for key, r in ended_by.items():
                if key not in known:
                    db.execute(insert(runs).values(_row(r, r.ended_s)))
                    closed += 1
                elif known[key] is None and key not in seen:
                    closed += close_open(db, key, r.ended_s if r.ended_s is not None else now_s)
            # A run no longer seen ended by now at the latest, and before any later run of the
            # same job began (a cluster that requeued it on its own: it stopped, then ran again).
            later: dict[str, list[float]] = {}
            for w, start in [*known, *seen]:
                later.setdefault(w, []).append(start)
            for key, end in known.items():
                # a sighting older than the run cannot know it (a clock going back)
                if end is None and key not in seen and key not in ended_by and now_s >= key[1]:
                    after = [t for t in later[key[0]] if t > key[1]]
                    stopped = preempted_at(db, key)  # alloc stopped it, then died: that time
                    closed += close_open(db, key, min([now_s, *after, *stopped]))
        return opened, closed

    def close_run(self, workload: WorkloadId, started_s: float, ended_s: float) -> bool:
        """Close one open run (alloc stopped it); False when it was not open."""
        with self._write() as db:
            return bool(close_open(db, (workload, started_s), ended_s))

    def runs(self) -> list[Run]:
        with self.engine.connect() as db:
            rows = db.execute(select(runs).order_by(runs.c.started_s, runs.c.workload))
            return [_run(row) for row in rows]

    def open_runs(self) -> list[Run]:
        return [r for r in self.runs() if r.ended_s is None]

    def window_gpu_hours(self, now_s: float, lookback_s: float) -> dict[BudgetPath, float]:
        """Charged GPU-hours per budget path (its own) in [now - lookback, now]; open runs
        count up to now."""
        start = now_s - lookback_s
        end = func.coalesce(runs.c.ended_s, now_s)
        upper = func.min(end, now_s) if self._sqlite else func.least(end, now_s)
        lower = (
            func.max(runs.c.started_s, start)
            if self._sqlite
            else func.greatest(runs.c.started_s, start)
        )
        query = (
            select(runs.c.budget, func.sum(runs.c.gpus * (upper - lower)))
            .where(
                and_(
                    runs.c.charged,
                    runs.c.budget.is_not(None),
                    end > start,
                    runs.c.started_s < now_s,
                )
            )
            .group_by(runs.c.budget)
        )
        with self.engine.connect() as db:
            return {BudgetPath(b): s / 3600.0 for b, s in db.execute(query) if s and s > 1e-9}

    @property
    def _sqlite(self) -> bool:
        return self.engine.dialect.name == "sqlite"

    # rounds

    def record_plan(self, at_s: float, plan: Plan) -> int:
        """The plan with every decision, before anything of it is applied (write-ahead)."""
        r = plan.report
        with self._write() as db:
            inserted = db.execute(
                insert(rounds).values(
                    at_s=at_s,
                    solver=r.solver,
                    status=r.status,
                    objective=r.objective,
                    gap=r.gap,
                    solve_seconds=r.solve_seconds,
                    note=r.note[:2000],
                    kind=plan.kind,
                )
            ).inserted_primary_key
            assert inserted is not None
            round_id = int(inserted[0])
            rows = [
                dict(
                    round_id=round_id,
                    workload=d.workload,
                    action=d.action.value,
                    occupancy=d.occupancy.value,
                    reason=d.reason.value,
                    hosts={str(h): g for h, g in d.hosts.items()},
                    backfill_for=list(d.backfill_for) if d.backfill_for else None,
                )
                for d in plan.decisions
            ]
            if rows:
                db.execute(insert(decisions), rows)
        return int(round_id)

    def record_apply(self, round_id: int, applied_s: float, report: ApplyReport) -> None:
        rows = [
            dict(
                round_id=round_id,
                workload=a.workload,
                action=a.action.value,
                ok=a.ok,
                detail=a.detail[:2000],
            )
            for a in report.results
        ] + [
            dict(
                round_id=round_id,
                workload=f"host:{h.host}",
                action="drained",
                ok=h.ok,
                detail=h.detail[:2000],
            )
            for h in report.hosts
            if h.changed or not h.ok  # a host already marked is not news every round
        ]
        with self._write() as db:
            if rows:
                db.execute(insert(actions), rows)
            db.execute(update(rounds).where(rounds.c.id == round_id).values(applied_s=applied_s))

    def rounds(self, last: int = 20) -> list[Mapping[str, object]]:
        with self.engine.connect() as db:
            rows = db.execute(select(rounds).order_by(rounds.c.id.desc()).limit(last))
            return [dict(r._mapping) for r in rows]

    def decisions_of(self, round_id: int) -> list[Mapping[str, object]]:
        with self.engine.connect() as db:
            rows = db.execute(select(decisions).where(decisions.c.round_id == round_id))
            return [dict(r._mapping) for r in rows]

    def last_decisions(self, workloads: Iterable[str]) -> dict[str, Mapping[str, object]]:
        """For each of these workloads, the last recorded decision about it with the kind of
        round that made it (a full round decides every workload, an event pass what it
        changes) and when: {workload: {action, reason, kind, at_s, round_id}}."""

        def query(part: list[str]) -> Select:  # type: ignore[type-arg]
            latest = latest_decision(part)
            return select(
                decisions.c.workload,
                decisions.c.action,
                decisions.c.reason,
                rounds.c.kind,
                rounds.c.at_s,
                rounds.c.id.label("round_id"),
            ).select_from(
                decisions.join(latest, decided_in(latest)).join(
                    rounds, rounds.c.id == decisions.c.round_id
                )
            )

        return {row.workload: dict(row._mapping) for row in self._chunked(workloads, query)}

    def leases(self, workloads: Iterable[str]) -> dict[str, tuple[WorkloadId, ...]]:
        """For each of these (running) workloads started as backfill, the gangs its last
        start named (models/round.md 8.5): what the next round's snapshot carries."""

        def query(part: list[str]) -> Select:  # type: ignore[type-arg]
            latest = latest_decision(part, decisions.c.action == "start")
            return select(decisions.c.workload, decisions.c.backfill_for).join(
                latest, decided_in(latest)
            )

        return {
            row.workload: tuple(WorkloadId(g) for g in row.backfill_for)
            for row in self._chunked(workloads, query)
            if row.backfill_for
        }

    def _chunked(
        self,
        workloads: Iterable[str],
        query: Callable[[list[str]], Select],  # type: ignore[type-arg]
    ) -> Iterator[Row]:  # type: ignore[type-arg]
        """The rows of `query` for these workloads, asked 500 at a time (a bound list of
        parameters stays within every database's limit)."""
        wanted = list(dict.fromkeys(workloads))
        with self.engine.connect() as db:
            for chunk in range(0, len(wanted), 500):
                yield from db.execute(query(wanted[chunk : chunk + 500]))

    def actions_of(self, round_id: int) -> list[Mapping[str, object]]:
        with self.engine.connect() as db:
            rows = db.execute(select(actions).where(actions.c.round_id == round_id))
            return [dict(r._mapping) for r in rows]

    # budget governance (alloc.controller.budgets checks who may change what)

    def change_share(
        self, at_s: float, who: str, path: BudgetPath, old: float, new: float, os_user: str = ""
    ) -> None:
        with self.engine.begin() as db:
            db.execute(
                insert(budget_changes).values(
                    at_s=at_s, who=who, os_user=os_user or who, path=path, old=old, new=new
                )
            )

    def shares(self) -> dict[BudgetPath, float]:
        """Each changed node's latest share."""
        with self.engine.connect() as db:
            rows = db.execute(
                select(budget_changes.c.path, budget_changes.c.new).order_by(budget_changes.c.id)
            )
            return {BudgetPath(p): float(n) for p, n in rows}

    def budget_history(self) -> list[Mapping[str, object]]:
        with self.engine.connect() as db:
            rows = db.execute(select(budget_changes).order_by(budget_changes.c.id))
            return [dict(r._mapping) for r in rows]

    def close(self) -> None:
        self.engine.dispose()


def _row(r: Run, ended_s: float | None) -> dict[str, object]:
    return dict(
        workload=r.workload,
        started_s=r.started_s,
        budget=r.budget,
        gpus=r.gpus,
        charged=r.charged,
        ended_s=ended_s,
    )


def _run(row: object) -> Run:
    m = row._mapping  # type: ignore[attr-defined]
    return Run(
        WorkloadId(m["workload"]),
        m["started_s"],
        m["budget"],
        m["gpus"],
        m["charged"],
        m["ended_s"],
    )
