"""Who acted on the simulated cluster (alloc.adapters.simcluster), as a cluster manager that
checks fencing tokens would keep it (models/failover.md): every plan a controller applied, with
the holder and the epoch of the leader lease it acted under, and each of its actions. A plan of
an epoch older than one already applied is refused whole, in the transaction that would have
applied it, and the refusal is recorded too. What a failover test compares with the ledger."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from alloc.adapters.base import ActionResult, StaleEpoch

SCHEMA = """
CREATE TABLE IF NOT EXISTS applies (
    id INTEGER PRIMARY KEY AUTOINCREMENT, wall_s REAL NOT NULL, cluster_s REAL NOT NULL,
    holder TEXT NOT NULL, epoch INTEGER NOT NULL, refused INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS applied (
    apply_id INTEGER NOT NULL, job TEXT NOT NULL, action TEXT NOT NULL,
    changed INTEGER NOT NULL);
"""


@dataclass(frozen=True, slots=True)
class Applied:
    """One plan applied (or refused): when (the wall clock and the cluster's), by whom."""

    id: int
    wall_s: float
    cluster_s: float
    holder: str
    epoch: int
    refused: bool
    # (job, action, changed): changed False when the cluster was already so
    actions: tuple[tuple[str, str, bool], ...] = field(default=())


def create(db: sqlite3.Connection) -> None:
    for statement in SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)


def admit(db: sqlite3.Connection, holder: str, epoch: int) -> None:
    """Inside the apply's transaction: StaleEpoch when a later epoch has applied, or this epoch
    under another holder (a lease never gives one epoch to two)."""
    create(db)
    latest = db.execute(
        "SELECT epoch, holder FROM applies WHERE refused = 0 ORDER BY id DESC LIMIT 1"
    ).fetchone()
    if latest is None:
        return
    if epoch < latest[0] or (epoch == latest[0] and holder != latest[1]):
        raise StaleEpoch(
            f"{holder} acts under epoch {epoch} of the leader lease, and {latest[1]} under "
            f"epoch {latest[0]} has acted since: refused"
        )


def record(
    db: sqlite3.Connection,
    holder: str,
    epoch: int,
    cluster_s: float,
    results: Iterable[ActionResult],
    refused: bool = False,
) -> None:
    """Inside the apply's transaction (a refusal: in its own, after)."""
    create(db)
    cursor = db.execute(
        "INSERT INTO applies (wall_s, cluster_s, holder, epoch, refused) VALUES (?, ?, ?, ?, ?)",
        (time.time(), cluster_s, holder, epoch, int(refused)),
    )
    db.executemany(
        "INSERT INTO applied VALUES (?, ?, ?, ?)",
        [(cursor.lastrowid, r.workload, r.action.value, int(r.changed and r.ok)) for r in results],
    )


def history(path: str | Path) -> list[Applied]:
    """Every plan applied or refused on the cluster in this file, in order."""
    with sqlite3.connect(str(path), timeout=30) as db:
        create(db)
        actions: dict[int, list[tuple[str, str, bool]]] = {}
        for apply_id, job, action, changed in db.execute("SELECT * FROM applied ORDER BY rowid"):
            actions.setdefault(apply_id, []).append((job, action, bool(changed)))
        return [
            Applied(i, w, c, h, e, bool(r), tuple(actions.get(i, ())))
            for i, w, c, h, e, r in db.execute("SELECT * FROM applies ORDER BY id")
        ]
