"""The embedded default store: SQLite, in a file or in memory."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

from alloc.domain import BudgetPath, WorkloadId
from alloc.ledger.store import Interval

SCHEMA = """
CREATE TABLE IF NOT EXISTS intervals (
    workload TEXT NOT NULL,
    budget   TEXT,
    gpus     REAL NOT NULL,
    start_s  REAL NOT NULL,
    end_s    REAL NOT NULL,
    charged  INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS intervals_end ON intervals (end_s);
"""


class SQLiteStore:
    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        self._db = sqlite3.connect(self.path)
        self._db.executescript(SCHEMA)

    def add(self, intervals: Iterable[Interval]) -> None:
        rows = [
            (i.workload, i.budget, i.gpus, i.start_s, i.end_s, int(i.charged)) for i in intervals
        ]
        if rows:
            with self._db:
                self._db.executemany("INSERT INTO intervals VALUES (?, ?, ?, ?, ?, ?)", rows)

    def charged_between(self, start_s: float, end_s: float) -> dict[BudgetPath, float]:
        query = (
            "SELECT budget, SUM(gpus * (MIN(end_s, ?) - MAX(start_s, ?))) FROM intervals "
            "WHERE charged = 1 AND budget IS NOT NULL AND end_s > ? AND start_s < ? "
            "GROUP BY budget"
        )
        rows = self._db.execute(query, (end_s, start_s, start_s, end_s))
        return {BudgetPath(b): float(s) for b, s in rows}

    def intervals(self) -> Iterator[Interval]:
        for w, b, g, s, e, c in self._db.execute("SELECT * FROM intervals ORDER BY start_s"):
            yield Interval(WorkloadId(w), BudgetPath(b) if b else None, g, s, e, bool(c))

    def close(self) -> None:
        self._db.close()
