"""Commands that read the live cluster of a controller config: `alloc status` (the queue in the
round's order, with what the round would do) and the live snapshot `alloc explain --config`
uses. Read-only: nothing is applied or recorded."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from alloc.cli.common import guarded, out
from alloc.readable import count

if TYPE_CHECKING:
    from alloc.domain import Snapshot, WorkloadId


def live(config: Path) -> Snapshot:
    """The live cluster of a controller config, with its ledger's window usage."""
    return live_with_notes(config)[0]


def live_with_notes(config: Path) -> tuple[Snapshot, dict[WorkloadId, str]]:
    """The live cluster and the executor's notes on jobs it left out or read otherwise."""
    snapshot, notes, _ = _live(config)
    return snapshot, notes


def _live(
    config: Path,
) -> tuple[Snapshot, dict[WorkloadId, str], dict[str, Mapping[str, object]]]:
    """The live cluster, the executor's notes, and the controller's last recorded decision
    about each workload in it (with the kind of round that made it)."""
    from alloc.controller.build import executor_for, live_snapshot
    from alloc.controller.state import StateStore
    from alloc.io.controller_config import load_controller_config

    settings = load_controller_config(config)
    executor = executor_for(settings)
    store = StateStore(settings.state_url)
    try:
        snapshot = live_snapshot(executor, store, settings.budgets)
        last = store.last_decisions(w.id for w in snapshot.workloads)
    finally:
        store.close()
    return snapshot, dict(executor.notes()), last


def status(
    config: Annotated[Path, typer.Option("--config", help="Controller config YAML.")],
    solver: Annotated[
        str | None, typer.Option(help="milp or greedy (default: the policy's).")
    ] = None,
) -> None:
    """The queue in the round's order, with what this round would do with each workload and
    the fair-share ratios along its budget path: why work waits (read-only)."""
    from rich.table import Table

    from alloc.controller.history import recorded_at
    from alloc.io.controller_config import load_controller_config
    from alloc.round import RoundOptions, solve_round
    from alloc.status import last_decided, queue_rows, running_counts, waited

    def act() -> None:
        snapshot, notes, last = _live(config)
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
                count(r.rank) if r.rank else "-",
                escape(r.workload),
                escape(r.budget),
                count(r.gpus),
                str(r.priority),
                waited(r.waiting_s),
                r.decision,
                r.standing,
                escape(r.path),
            )
        out.print(table)
        if last:
            decided = Table(
                title="what the controller last decided (a full round decides every workload, "
                "an event pass what it changes)",
                title_justify="left",
            )
            for head in ("workload", "round", "when", "decision"):
                decided.add_column(head)
            now_s = snapshot.now.timestamp()
            for w in sorted(snapshot.workloads, key=lambda w: (not w.running, w.id)):
                row = last.get(w.id)
                if row is not None:
                    kind, when, what = last_decided(row, now_s)
                    decided.add_row(escape(w.id), kind, when, what)
            out.print(decided)
        running = ", ".join(f"{count(n)} {k}" for k, n in sorted(counts.items())) or "none"
        kinds = Counter(
            str(last[w.id]["kind"]) for w in snapshot.workloads if w.running and w.id in last
        )
        if kinds:
            running += (
                " (last decided: "
                + ", ".join(
                    f"{count(kinds[k])} by {'a full round' if k == 'full' else 'an event pass'}"
                    for k in sorted(kinds)
                )
                + ")"
            )
        out.print(f"running: {running}", highlight=False)
        for line in recorded_at(load_controller_config(config).state_url):
            out.print(line, markup=False, highlight=False)
        for job, why in sorted(notes.items()):
            out.print(f"{job}: {why}", markup=False, highlight=False)

    guarded(act)
