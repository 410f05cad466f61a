"""`alloc queue`: the queue as Slurm's squeue shows it, one line per workload (alloc.queue
builds the rows, alloc.cli.queue_table lays out the table). Read-only: nothing is applied or
recorded. The solvers load when the command runs, not when the command line starts."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alloc.cli.common import MissingInput, guarded, table_width
from alloc.cli.params import one_of, solver_option
from alloc.cli.plans import checked_plan
from alloc.io.errors import InputError

if TYPE_CHECKING:
    from alloc.domain import BudgetPath, BudgetTree, Plan, Snapshot, WorkloadId
    from alloc.queue import QueueRow, State
    from alloc.solve.context import RoundContext

FORMATS = ("table", "json", "csv")


def queue(
    instance: Annotated[
        Path | None, typer.Argument(help="Instance YAML (not with --config).", show_default=False)
    ] = None,
    plan: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Show this plan of the instance instead of solving."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE", help="Controller config: the live cluster and ledger instead of a file."
        ),
    ] = None,
    solver: Annotated[str | None, solver_option()] = None,
    sort: Annotated[
        str | None,
        typer.Option(
            metavar="KEY",
            help="wait or gpus (largest first), ratio (lowest first), budget, id, state. "
            "Default: running work, then what starts, then what waits, in the round's order.",
        ),
    ] = None,
    reverse: Annotated[bool, typer.Option("-r", "--reverse", help="Reverse the order.")] = False,
    budget: Annotated[
        list[str] | None,
        typer.Option(
            metavar="PATH", help="Only work in this budget node's subtree, e.g. nlp (repeatable)."
        ),
    ] = None,
    state: Annotated[
        list[str] | None,
        typer.Option(
            metavar="STATE",
            help="Only work in this state: running-protected, running, preempted, starting, "
            "waiting (repeatable, or a comma list).",
        ),
    ] = None,
    output_format: Annotated[
        str,
        typer.Option(
            "--format", metavar="FORMAT", help="table, json or csv (fields: see the README)."
        ),
    ] = "table",
    wide: Annotated[
        bool, typer.Option("--wide", help="Table: shorten nothing, whatever the width.")
    ] = False,
) -> None:
    """The queue like squeue, one line per workload: its state after this round, budget,
    GPUs, wait, minimum runtime, fair-share ratio and reason (read-only).

    `alloc queue INSTANCE [--plan PLAN]`, or live `alloc queue --config FILE`. States:
    running-protected, running, preempted, starting, waiting."""
    from alloc.queue import SORT_KEYS, queue_rows, select, sort_rows

    def act() -> None:
        _one_of("--format", output_format, FORMATS)
        if sort is not None:
            _one_of("--sort", sort, SORT_KEYS)
        states = _states(state)
        snapshot, source, notes = _snapshot(instance, plan, config)
        budgets = _budgets(budget, snapshot.budgets, source)
        chosen, ctx = _plan_and_context(snapshot, source, plan, solver)
        rows = queue_rows(snapshot, chosen, ctx.share.ratios, ctx.ranked)
        picked = sort_rows(select(rows, states, budgets), sort, reverse)
        if output_format == "json":
            sys.stdout.write(_json(snapshot, picked))
        elif output_format == "csv":
            sys.stdout.write(_csv(picked))
        else:
            from alloc.cli.queue_table import ELLIPSIS, footer, table_lines
            from alloc.queue import has_gpu_types

            width = None if wide else table_width()
            lines = table_lines(picked, width, has_gpu_types(snapshot))
            lines += footer(picked, len(rows), width)
            text = "\n".join(lines) + "\n"
            if not _can_write(ELLIPSIS):  # a log in a legacy encoding: one column still
                text = text.replace(ELLIPSIS, "*")
            sys.stdout.write(text)
        from alloc.cli.live_cmd import say_notes

        say_notes(notes)

    guarded(act)


def _can_write(text: str) -> bool:
    try:
        text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _one_of(option: str, value: str, choices: tuple[str, ...]) -> None:
    one_of(option, value, choices)


def _states(values: list[str] | None) -> frozenset[State] | None:
    """--state, repeated or as a comma list."""
    from alloc.queue import State

    if not values:
        return None
    names = [v.strip() for text in values for v in text.split(",") if v.strip()]
    valid = [s.value for s in State]
    for name in names:
        one_of("--state", name, valid)
    if not names:
        raise InputError("--state", "", f"no state given; expected one of {', '.join(valid)}")
    return frozenset(State(n) for n in names)


def _budgets(values: list[str] | None, tree: BudgetTree, source: str) -> list[BudgetPath] | None:
    from alloc.domain import BudgetPath
    from alloc.queue import known_paths

    if not values:
        return None
    known = known_paths(tree)
    for value in values:
        if value not in tree or not value:
            listed = ", ".join(known[:12])
            if len(known) > 12:
                listed += f" ... ({len(known)} in all)"
            raise InputError(
                "--budget",
                "",
                f"no budget node {value!r} in {source}; its nodes are: {listed or 'none'}",
            )
    return [BudgetPath(v) for v in values]


def _snapshot(
    instance: Path | None, plan: Path | None, config: Path | None
) -> tuple[Snapshot, str, dict[WorkloadId, str]]:
    """The instance's snapshot, or the live one of a controller config (with the executor's
    notes on jobs it left out or read otherwise)."""
    from alloc.io import load_instance

    if config is not None:
        if instance is not None or plan is not None:
            raise InputError(
                "--config",
                "",
                "with --config the round is solved on the live cluster: give no INSTANCE "
                "and no --plan",
            )
        from alloc.cli.live_cmd import read_live

        live = read_live(config)
        return live.snapshot, f"the cluster of {config}", live.notes
    if instance is None:
        raise MissingInput("INSTANCE", "required, but not given (or, live, --config FILE)")
    return load_instance(instance), str(instance), {}


def _plan_and_context(
    snapshot: Snapshot, source: str, plan: Path | None, solver: str | None
) -> tuple[Plan, RoundContext]:
    """The plan given, checked against the instance (its reasons would be stated as facts), or
    the round solved as `alloc solve` solves it; and what the round saw (ratios, order)."""
    if plan is None:
        from alloc.round import RoundOptions, solve_round

        result = solve_round(snapshot, RoundOptions(solver=solver))
        return result.plan, result.context
    from alloc.solve.context import round_context

    chosen = checked_plan(snapshot, source, plan)
    return chosen, round_context(snapshot)


def _json(snapshot: Snapshot, rows: list[QueueRow]) -> str:
    from alloc.io.durations import format_time
    from alloc.queue import State, by_state, record

    counts = by_state(rows)
    return (
        json.dumps(
            {
                "now": format_time(snapshot.now),
                "cluster": snapshot.cluster.name,
                "workloads": [record(r) for r in rows],
                "states": {
                    s.value: dict(zip(("workloads", "gpus"), counts.get(s, (0, 0)), strict=True))
                    for s in State
                },
            },
            indent=1,
        )
        + "\n"
    )


def _csv(rows: list[QueueRow]) -> str:
    import io

    from alloc.queue import FIELDS, record

    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=FIELDS, lineterminator="\n")
    # With lines ended by "\n", the csv module leaves a lone "\r" unquoted, and a reader
    # takes it for the end of the row: a row with one (a name a cluster reports) is quoted.
    quoted = csv.DictWriter(text, FIELDS, lineterminator="\n", quoting=csv.QUOTE_ALL)
    writer.writeheader()
    for r in rows:
        row = {k: "" if v is None else v for k, v in record(r).items()}
        (quoted if any("\r" in str(v) for v in row.values()) else writer).writerow(row)
    return text.getvalue()
