"""The executor's faults as the controller keeps them: every failed attempt of a call to the
cluster manager (a command that failed, hung past its timeout, or answered with output that
does not read: alloc.adapters.base.ExecutorFault) is written with the round it happened in,
and `alloc status` sums them up."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from sqlalchemy import func, insert, select

from alloc.adapters.base import ExecutorFault
from alloc.controller.state import StateStore
from alloc.controller.tables import executor_faults
from alloc.printable import shown
from alloc.readable import counted


def record_faults(
    store: StateStore, at_s: float, round_id: int | None, faults: Iterable[ExecutorFault]
) -> int:
    """Write the faults of one round (in one transaction); how many."""
    rows = [
        dict(
            at_s=at_s,
            round_id=round_id,
            kind=f.kind.value,
            command=f.command[:200],
            attempt=f.attempt,
            retry_in_s=f.retry_in_s,
            message=f.message[:500],
        )
        for f in faults
    ]
    if rows:
        with store.engine.begin() as db:
            db.execute(insert(executor_faults), rows)
    return len(rows)


def fault_lines(store: StateStore) -> list[str]:
    """For `alloc status`: the faults recorded by kind, how many calls were given up on, and
    the last fault; none when there was none."""
    t = executor_faults
    with store.engine.connect() as db:
        rows = db.execute(select(t.c.kind, func.count()).group_by(t.c.kind)).all()
        kinds: dict[str, int] = {str(k): int(n) for k, n in rows}
        if not kinds:
            return []
        gave_up = db.execute(
            select(func.count()).select_from(t).where(t.c.retry_in_s.is_(None))
        ).scalar_one()
        last = db.execute(select(t).order_by(t.c.id.desc()).limit(1)).one()._mapping
    by_kind = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    at = datetime.fromtimestamp(float(last["at_s"]), UTC)
    wait = last["retry_in_s"]
    then = "given up" if wait is None else f"tried again after {wait:.2f} s"
    return [
        f"executor faults: {counted(sum(kinds.values()), 'failed attempt')} ({by_kind}), "
        f"{counted(gave_up, 'call')} given up on; the last at {at:%Y-%m-%d %H:%M:%S} UTC: "
        f"{shown(str(last['command']))}: {last['kind']}, attempt {last['attempt']}, {then}: "
        f"{shown(str(last['message']))}"
    ]
