"""The tables of the controller's state store (alloc.controller.state): the ledger of runs,
the rounds with their decisions and actions, the executor's faults and the budget changes.
The leader lease keeps its own (alloc.controller.lease)."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
)

metadata = MetaData()
runs = Table(
    "runs",
    metadata,
    Column("workload", String(200), primary_key=True),
    Column("started_s", Float, primary_key=True),
    Column("budget", String(1000), nullable=True),
    Column("gpus", Integer, nullable=False),
    Column("charged", Boolean, nullable=False),
    Column("ended_s", Float, nullable=True, index=True),
)
rounds = Table(
    "rounds",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at_s", Float, nullable=False, index=True),
    Column("solver", String(20), nullable=False),
    Column("status", String(20), nullable=False),
    Column("objective", Float, nullable=False),
    Column("gap", Float, nullable=True),
    Column("solve_seconds", Float, nullable=False),
    Column("note", String(2000), nullable=False),
    Column("applied_s", Float, nullable=True),  # None: planned, not (yet) applied
    # full round | event pass (models/round.md 9); a pass records only what it changes
    Column("kind", String(10), nullable=False, server_default="full"),
)
decisions = Table(
    "decisions",
    metadata,
    Column("round_id", Integer, ForeignKey("rounds.id"), primary_key=True),
    Column("workload", String(200), primary_key=True),
    Column("action", String(20), nullable=False),
    Column("occupancy", String(20), nullable=False),
    Column("reason", String(40), nullable=False),
    Column("hosts", JSON, nullable=False),
    # a start as backfill on hosts reserved for these gangs (models/round.md 8.5)
    Column("backfill_for", JSON, nullable=True),
)
# `alloc status`: the last decision about each workload (decisions of many rounds).
decisions_by_workload = Index("decisions_by_workload", decisions.c.workload, decisions.c.round_id)
actions = Table(
    "actions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("round_id", Integer, ForeignKey("rounds.id"), nullable=False, index=True),
    Column("workload", String(200), nullable=False),
    Column("action", String(20), nullable=False),
    Column("ok", Boolean, nullable=False),
    Column("detail", String(2000), nullable=False),
)

# Failed attempts of calls to the cluster manager (alloc.controller.faults writes and reads them).
executor_faults = Table(
    "executor_faults",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at_s", Float, nullable=False, index=True),  # the round's time
    Column("round_id", Integer, nullable=True),  # None: the round failed before its plan
    Column("kind", String(20), nullable=False),  # failed | timeout | unparsable
    Column("command", String(200), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("retry_in_s", Float, nullable=True),  # None: the last attempt (given up)
    Column("message", String(500), nullable=False),
)

budget_changes = Table(
    "budget_changes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("at_s", Float, nullable=False),
    Column("who", String(200), nullable=False),
    Column("os_user", String(200), nullable=False),  # the account that ran the command
    Column("path", String(1000), nullable=False),
    Column("old", Float, nullable=False),
    Column("new", Float, nullable=False),
)

__all__ = [
    "actions",
    "budget_changes",
    "decisions",
    "executor_faults",
    "metadata",
    "rounds",
    "runs",
]
