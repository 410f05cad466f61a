"""The SQL behind alloc.controller.state's ledger and records, over the tables of
alloc.controller.tables: closing a run, when a recorded plan preempted it, and the last
decision about each workload."""

from __future__ import annotations

from sqlalchemy import ColumnElement, Subquery, and_, func, select, update

from alloc.controller.tables import actions, decisions, rounds, runs


def latest_decision(part: list[str], *where: ColumnElement[bool]) -> Subquery:
    """Per workload of `part`, the last round that decided about it (so that `where`)."""
    return (
        select(decisions.c.workload, func.max(decisions.c.round_id).label("round_id"))
        .where(decisions.c.workload.in_(part), *where)
        .group_by(decisions.c.workload)
        .subquery()
    )


def decided_in(latest: Subquery) -> ColumnElement[bool]:
    """A decision is the one of `latest`: its workload's, in that round."""
    return and_(
        latest.c.workload == decisions.c.workload, latest.c.round_id == decisions.c.round_id
    )


def preempted_at(db: object, key: tuple[str, float]) -> list[float]:
    """When a recorded plan first preempted this run (written before it was applied), unless
    the cluster refused that preemption (its action recorded failed: the run went on)."""
    workload, started_s = key
    refused = and_(
        actions.c.round_id == decisions.c.round_id,
        actions.c.workload == decisions.c.workload,
        actions.c.action == "preempt",
        actions.c.ok.is_(False),
    )
    first = db.execute(  # type: ignore[attr-defined]
        select(func.min(rounds.c.at_s))
        .select_from(
            decisions.join(rounds, decisions.c.round_id == rounds.c.id).outerjoin(actions, refused)
        )
        .where(
            and_(
                decisions.c.workload == workload,
                decisions.c.action == "preempt",
                rounds.c.at_s >= started_s,
                actions.c.id.is_(None),
            )
        )
    ).scalar()
    return [float(first)] if first is not None else []


def close_open(db: object, key: tuple[str, float], ended_s: float) -> int:
    """Close the run of this key if it is open (at `ended_s`, never before it began): 1 if
    it was, else 0."""
    workload, started_s = key
    result = db.execute(  # type: ignore[attr-defined]
        update(runs)
        .where(
            and_(
                runs.c.workload == workload, runs.c.started_s == started_s, runs.c.ended_s.is_(None)
            )
        )
        .values(ended_s=max(ended_s, started_s))
    )
    return int(result.rowcount)
