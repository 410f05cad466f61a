"""Commands that read the live cluster of a controller config: `alloc status` (the queue in the
round's order, with what the round would do) and the live snapshot `alloc explain --config`
uses. Read-only: nothing is applied or recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from alloc.cli.common import guarded, out
from alloc.domain import Snapshot, WorkloadId


def live(config: Path) -> Snapshot:
    """The live cluster of a controller config, with its ledger's window usage."""
    return live_with_notes(config)[0]


def live_with_notes(config: Path) -> tuple[Snapshot, dict[WorkloadId, str]]:
    """The live cluster and the executor's notes on jobs it left out or read otherwise."""
    from alloc.controller.build import executor_for, live_snapshot
    from alloc.controller.state import StateStore
    from alloc.io.controller_config import load_controller_config

    settings = load_controller_config(config)
    executor = executor_for(settings)
    store = StateStore(settings.state_url)
    try:
        snapshot = live_snapshot(executor, store, settings.budgets)
    finally:
        store.close()
    return snapshot, dict(executor.notes())


def status(
    config: Annotated[Path, typer.Option("--config", help="Controller config YAML.")],
    solver: Annotated[
        str | None, typer.Option(help="milp or greedy (default: the policy's).")
    ] = None,
) -> None:
    """The queue in the round's order, with what this round would do with each workload and
    the fair-share ratios along its budget path: why work waits (read-only)."""
    from rich.table import Table

    from alloc.round import RoundOptions, solve_round
    from alloc.status import queue_rows, running_counts, waited

    def act() -> None:
        snapshot, notes = live_with_notes(config)
        result = solve_round(snapshot, RoundOptions(solver=solver))
        counts = running_counts(result.plan, result.context)
        table = Table(
            title=f"{snapshot.cluster.name} at {snapshot.now:%Y-%m-%d %H:%M:%S %Z}: queue in "
            "the round's order (lower fair-share ratio first, level by level)",
            title_justify="left",
        )
        for head in (
            "#",
            "workload",
            "budget",
            "GPUs",
            "prio",
            "waiting",
            "this round",
            "standing",
            "ratios along its path",
        ):
            table.add_column(head, justify="right" if head in ("#", "GPUs", "prio") else "left")
        for r in queue_rows(result.context, result.plan):
            table.add_row(
                str(r.rank) if r.rank else "-",
                escape(r.workload),
                escape(r.budget),
                str(r.gpus),
                str(r.priority),
                waited(r.waiting_s),
                r.decision,
                r.standing,
                escape(r.path),
            )
        out.print(table)
        running = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "none"
        out.print(f"running: {running}", highlight=False)
        for job, why in sorted(notes.items()):
            out.print(f"{job}: {why}", markup=False, highlight=False)

    guarded(act)
