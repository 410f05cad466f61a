"""Commands that read the live cluster of a controller config: `alloc status` (the queue in the
round's order, with what the round would do) and the live snapshot `alloc explain --config`
uses. Read-only: nothing is applied or recorded."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NamedTuple

import typer

from alloc.cli.columns import Column, wrap
from alloc.cli.common import err, guarded, out, table_width
from alloc.cli.params import solver_option
from alloc.cli.queue_table import REASONS
from alloc.cli.shorten import (
    ratios_all_levels,
    shorten_duration,
    shorten_middle,
    shorten_path,
    shorten_ratios,
)
from alloc.cli.tables import print_table
from alloc.printable import shown
from alloc.readable import count, natural_key

if TYPE_CHECKING:
    from alloc.domain import Snapshot, WorkloadId
    from alloc.status import QueueRow


# How far the text columns of `alloc status` may be narrowed (as in `alloc queue`): names and
# paths to a readable width, then the ratios along the path as far as every level keeps its
# ratio and its node's name (`ratios_all_levels`), the decision (its reason written shorter)
# and the standing, then names and paths to their least (never so far that two read alike:
# the ratios name the nodes), then the ratios (levels left out, `…`), then every decision
# its reason written shorter (`wait (over_alloc)`, said in the legend), never cut.
NAME = ((1, 12), (5, 8))
PATH = ((1, 16), (5, 6))
RATIOS_LEAST = 12  # `… > r13 0.00`
DECISION = ((3, 19), (7, 0))
STANDING = ((4, 8),)  # `entitled`; `unalloc` for unallocated
WAITING = ((8, 6),)  # in its largest unit (`13 h`), the last resort: `59 min`
STANDINGS = {"over its entitlement": "over", "unallocated": "unalloc"}


def ratios_column(cells: list[str]) -> Column:
    """The ratios along each workload's budget path, never a ratio without its node's name
    (`shorten_ratios`)."""
    every = max((ratios_all_levels(shown(text)) for text in cells), default=0)
    return Column(
        "ratios", shorten=shorten_ratios, stages=((2, max(every, RATIOS_LEAST)), (6, RATIOS_LEAST))
    )


def queue_table(rows: Sequence[QueueRow]) -> tuple[list[Column], list[list[str]]]:
    """The columns and cells of `alloc status`'s queue: place, workload, budget, GPUs, the
    priority (a column only when some workload has one), time waiting, this round's decision,
    the standing and the ratios along the budget path."""
    from alloc.status import waited

    prio = any(r.priority for r in rows)
    columns = [
        Column("#", right=True),
        Column("workload", shorten=shorten_middle, stages=NAME, distinct=True),
        Column("budget", shorten=shorten_path, stages=PATH, distinct=True),
        Column("GPUs", right=True),
        *([Column("prio", right=True, drop=2)] if prio else []),
        # left out of a narrow terminal, in turn: the standing (the decision says most of it),
        # the priority, the time waiting (a deep budget tree's paths and ratios need the room)
        Column("waiting", right=True, shorten=shorten_duration, stages=WAITING, drop=1),
        Column("this round", stages=DECISION, codes=REASONS),
        Column("standing", stages=STANDING, codes=STANDINGS, drop=3),
        ratios_column([r.path for r in rows]),
    ]
    cells = [
        [
            count(r.position) if r.position else "-",
            r.workload,
            r.budget,
            count(r.gpus),
            *([str(r.priority)] if prio else []),
            waited(r.waiting_s),
            r.decision,
            r.standing,
            r.path,
        ]
        for r in rows
    ]
    return columns, cells


def say(text: str, width: int | None) -> None:
    """A line of prose, broken at spaces to the width (`table_width`)."""
    for line in wrap(text, width):
        out.print(line, markup=False, highlight=False, soft_wrap=True)


def say_notes(notes: Mapping[WorkloadId, str], only: str | None = None) -> None:
    """The executor's notes on jobs it left out or read otherwise than declared, in the one
    form every live command gives them, on stderr (beside a table, CSV or JSON on stdout):
    `note: 6: unknown key 'min_runtim' (...)`; `only`: the one job explained."""
    for job, why in sorted(notes.items(), key=lambda n: natural_key(n[0])):
        if only is None or job == only:  # names and reasons as the cluster wrote them
            note = f"note: {shown(job)}: {shown(why)}"
            err.print(note, markup=False, highlight=False, soft_wrap=True)


class Live(NamedTuple):
    """The live cluster of a controller config, as its commands read it."""

    snapshot: Snapshot  # with the ledger's window usage
    notes: dict[WorkloadId, str]  # the executor's, on jobs it left out or read otherwise
    no_budget: dict[WorkloadId, str]  # why a job that named a budget has none
    last: dict[str, Mapping[str, object]]  # the controller's last decision about each
    unseen: int  # running workloads its ledger has not seen yet
    ended: int  # runs its ledger holds open of work no longer running (closed next round)
    simulated: bool  # its rounds are stamped with the simulated cluster's time


def live(config: Path) -> Snapshot:
    """The live cluster of a controller config, with its ledger's window usage."""
    return read_live(config).snapshot


def read_live(config: Path) -> Live:
    """The live cluster, the executor's notes, the controller's last recorded decision
    about each workload in it (with the kind of round that made it), and how many running
    workloads its ledger has not seen yet."""
    from alloc.controller.budgets import GovernanceError
    from alloc.controller.build import executor_for, live_snapshot, unseen_runs
    from alloc.controller.opening import open_state, reaching, unwritten
    from alloc.io import InputError
    from alloc.io.controller_config import load_controller_config

    settings = load_controller_config(config)
    executor = executor_for(settings, existing=True)  # read-only: nothing is created
    store = open_state(settings, existing=True)
    fresh = unwritten(settings)
    if fresh is not None:  # a real cluster before the controller's first round
        err.print(
            f"note: no state at {fresh} yet (the controller has not run): the window's usage "
            "is taken as none",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    try:
        with reaching(settings):
            runs = store.open_runs()  # the ledger read once for all three below
            snapshot = live_snapshot(executor, store, settings.budgets, runs)
            last = store.last_decisions(w.id for w in snapshot.workloads)
            unseen = len(unseen_runs(snapshot, store, runs))
            running = {(w.id, w.started.timestamp()) for w in snapshot.workloads if w.started}
            ended = sum(r.key not in running for r in runs)
    except GovernanceError as exc:  # the config's tree and the shares changed since
        raise InputError(str(config), "budgets", str(exc)) from None
    finally:
        store.close()
    notes, no_budget = dict(executor.notes()), dict(executor.no_budget())
    return Live(snapshot, notes, no_budget, last, unseen, ended, settings.executor == "sim")


def status(
    config: Annotated[
        Path, typer.Option("--config", metavar="FILE", help="Controller config YAML.")
    ],
    solver: Annotated[str | None, solver_option()] = None,
) -> None:
    """The queue in the round's order, with what this round would do with each workload and
    the ratios along its budget path its place was decided by: why work waits (read-only)."""
    from alloc.controller.history import recorded_with_leader
    from alloc.controller.opening import open_state, reaching
    from alloc.io.controller_config import load_controller_config
    from alloc.round import RoundOptions, solve_round
    from alloc.status import (
        ORDER,
        RATIOS,
        last_decided,
        queue_rows,
        reasons_differ,
        running_counts,
        running_line,
    )

    def act() -> None:
        seen = read_live(config)
        snapshot, notes, last = seen.snapshot, seen.notes, seen.last
        result = solve_round(snapshot, RoundOptions(solver=solver))
        counts = running_counts(result.plan, result.context)
        width = table_width()
        print_table(
            out,
            *queue_table(queue_rows(result.context, result.plan)),
            title=f"{snapshot.cluster.name} at {snapshot.now:%Y-%m-%d %H:%M:%S %Z}: queue in "
            f"the round's order ({ORDER})",
            legend=[
                "#: place in the queue, in the round's order; -: blocked, no place this round "
                "(it could not start even if all the work the round may stop made way)",
                RATIOS,
            ],
            width=width,
        )
        if last:
            now_s = snapshot.now.timestamp()
            decided = [
                [w.id, *last_decided(last[w.id], now_s)]
                for w in sorted(
                    snapshot.workloads, key=lambda w: (not w.running, natural_key(w.id))
                )
                if w.id in last
            ]
            out.print()
            print_table(
                out,
                [
                    Column("workload", shorten=shorten_middle, stages=NAME, distinct=True),
                    Column("round"),
                    Column("when (simulated)" if seen.simulated else "when", right=True),
                    Column("decision", stages=DECISION, codes=REASONS),
                ],
                decided,
                title="what the controller last decided, on the cluster as its round saw it, "
                "before it carried out its own starts and preemptions (a full round decides "
                "every workload, an event pass what it changes)",
                width=width,
            )
            differ = reasons_differ(last, result.plan)
            if differ:
                say(
                    f"{', '.join(shown(w) for w in differ)}: this "
                    "round's reason differs from the controller's: it sees the cluster after "
                    "the controller's last starts and preemptions",
                    width,
                )
        running = running_line(counts)
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
        say(f"running: {running}", width)
        settings = load_controller_config(config)
        store = open_state(settings, existing=True)
        try:
            with reaching(settings):
                lines = recorded_with_leader(store, seen.unseen, seen.ended, seen.simulated)
        finally:
            store.close()
        for line in lines:
            say(shown(line), width)
        say_notes(notes)

    guarded(act)
