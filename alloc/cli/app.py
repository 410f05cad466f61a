"""The `alloc` command line (typer). Thin: parse arguments, call the library, print, exit.

Exit codes (SPEC.md): 0 success; 2 bad input (file, field and what is wrong; nothing written);
1 internal error; 130 stopped by Ctrl-C (SIGINT), with one line: `simulate` and `whatif` first
write what they measured, marked partial (alloc.cli.stop), other commands stop at once
(alloc.cli.common); 141 quietly when stdout's reader has gone (`| head -1`; SIGPIPE's code).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from alloc.cli.commands import Command, Group
from alloc.cli.common import (
    MissingInput,
    check_writable,
    flush_stdout,
    guarded,
    out,
    say_written,
    table_width,
    whole_writes,
    write_atomically,
)
from alloc.cli.params import seconds, solver_option, whole
from alloc.cli.plans import (
    checked_plan,
    same_instance,
    violation,
    violations_summary,
)
from alloc.io.errors import InputError
from alloc.printable import shown
from alloc.readable import counted

app = typer.Typer(
    name="alloc",  # how messages name the program when it is not run as `alloc` (tests)
    cls=Group,  # the commands of other modules are imported when they run (alloc.cli.commands)
    rich_markup_mode=None,  # plain help, as git and kubectl print it (and 0.15 s sooner)
    add_completion=False,
    no_args_is_help=True,
    help="Optimization-based batch allocator for shared GPU training clusters.",
)


def _print_version(wanted: bool) -> None:
    """`alloc --version`: the installed package's version (read when asked, not at start-up)."""
    if not wanted:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        number = version("alloc")
    except PackageNotFoundError:  # a source tree on the path, not installed
        from alloc import __version__ as number
    out.print(f"alloc {number}", markup=False, highlight=False)
    raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Optimization-based batch allocator for shared GPU training clusters."""


@app.command(cls=Command)
def solve(
    instance: Annotated[Path, typer.Argument(help="Instance YAML (see `alloc schema`).")],
    solver: Annotated[str | None, solver_option()] = None,
    time_limit: Annotated[
        str | None,
        typer.Option(metavar="DURATION", help="Wall-clock limit of the round, e.g. 10s (above 0)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", metavar="FILE", help="Write the plan JSON.")
    ] = None,
    depth: Annotated[int, whole(min=1, help="Budget tree levels shown.")] = 2,
    json_out: Annotated[bool, typer.Option("--json", help="Print the plan JSON instead.")] = False,
) -> None:
    """Solve one round and print its summary (and write the plan with -o)."""
    from alloc.io import dump_plan, load_instance
    from alloc.round import RoundOptions, solve_round
    from alloc.summary import summarize

    def act() -> None:
        # above 0: with no time to solve in, every round would be a fallback
        limit = seconds("--time-limit", time_limit, above=0.0)
        if output is not None:
            check_writable("--output", output)
        snapshot = load_instance(instance)
        result = solve_round(snapshot, RoundOptions(solver=solver, time_limit_s=limit))
        plan = result.plan
        if output is not None:
            write_atomically(output, dump_plan(plan))
        if json_out:
            sys.stdout.write(dump_plan(plan))
            return
        from alloc.cli.render import render_solve

        render_solve(out, str(instance), plan, summarize(result.context, plan), depth)
        if output is not None:
            say_written("plan", output)

    guarded(act)


@app.command(cls=Command)
def validate(
    instance: Annotated[Path, typer.Argument(help="Instance YAML.")],
    plan: Annotated[Path, typer.Argument(help="Plan JSON to check against the instance.")],
) -> None:
    """Check a plan against every invariant of the contract; exit 1 if any is broken."""
    from alloc.io import load_instance, load_plan
    from alloc.solve.validate import validate as check

    def act() -> None:
        snapshot = load_instance(instance)
        loaded = load_plan(plan)
        same_instance(snapshot, loaded, plan)
        problems = check(snapshot, loaded)
        if problems:
            for p in problems:
                rule, fact = violation(p)
                of = f" of {rule}" if rule else ""
                out.print(f"[red]violation[/]{of}: {escape(shown(fact))}", highlight=False)
            out.print(
                f"{shown(str(plan))}: {violations_summary(problems)}", markup=False, highlight=False
            )
            raise typer.Exit(1)
        out.print(
            f"{plan}: valid ({counted(len(snapshot.workloads), 'decision')}, every invariant "
            "holds)",
            markup=False,
        )

    guarded(act)


@app.command(cls=Command)
def explain(
    instance: Annotated[
        str | None,
        typer.Argument(
            help="Instance YAML (or, with --config, the workload id).", show_default=False
        ),
    ] = None,
    workload: Annotated[str | None, typer.Argument(help="Workload id.")] = None,
    plan: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Explain this plan instead of solving.")
    ] = None,
    solver: Annotated[str | None, solver_option()] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE", help="Controller config: explain against the live cluster and ledger."
        ),
    ] = None,
) -> None:
    """Why a workload starts, waits or is preempted, and what would have to change:
    `alloc explain INSTANCE WORKLOAD`, or live `alloc explain --config FILE WORKLOAD`."""
    from alloc.domain import WorkloadId
    from alloc.explain import explain as explain_workload
    from alloc.io import load_instance
    from alloc.round import RoundOptions, solve_round

    def act() -> None:
        if config is not None:
            if instance is None:  # the one argument is the workload id
                raise MissingInput(
                    "WORKLOAD", "required, but not given: alloc explain --config FILE WORKLOAD"
                )
            if workload is not None or plan is not None:
                raise InputError("--config", "", "with --config give only the workload id")
            from alloc.adapters.base import unfunded_note
            from alloc.cli.live_cmd import read_live, say_notes

            live = read_live(config)
            snapshot, notes, no_budget = live.snapshot, live.notes, live.no_budget
            source, wanted = f"the cluster of {config}", WorkloadId(instance)
            unmapped = no_budget.get(wanted)
            if unmapped is None or notes.get(wanted) != unfunded_note(unmapped):
                # unless the note is only what the headline says
                say_notes(notes, only=wanted)
        else:
            if instance is None or workload is None:
                raise MissingInput(
                    "WORKLOAD" if instance else "INSTANCE",
                    "required, but not given: alloc explain INSTANCE WORKLOAD (or, live, "
                    "alloc explain --config FILE WORKLOAD)",
                )
            snapshot, source, wanted = load_instance(instance), instance, WorkloadId(workload)
            unmapped = None
        if wanted not in snapshot.by_id:
            raise InputError(source, "workloads", f"no workload with id {wanted!r}")
        if plan:
            chosen, ctx = checked_plan(snapshot, source, plan, decides=wanted), None
        else:
            result = solve_round(snapshot, RoundOptions(solver=solver))
            chosen, ctx = result.plan, result.context
        # Names as the cluster wrote them; lines broken to COLUMNS or the terminal, each keeping
        # its section's indent (whole in a pipe or a log file).
        why = explain_workload(snapshot, chosen, wanted, ctx, no_budget=unmapped)
        for line in why.text(table_width()):
            out.print(line, highlight=False, markup=False, soft_wrap=True)

    guarded(act)


@app.command(cls=Command)
def schema() -> None:
    """Print the JSON Schema of the instance file."""
    from alloc.io import SCHEMA_FILE

    sys.stdout.write(SCHEMA_FILE.read_text(encoding="utf-8"))


def main() -> None:
    # alloc's pydantic models only check input files: no pydantic plugin (logfire and the like)
    # observes them, so skip the scan of every installed package's entry points for plugins
    # (~20 ms at each start, on top of the ~0.3 s the libraries take); typer does the same
    # for its parameter adapters. An explicit setting is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")
    whole_writes()  # a closed pipe ends with 141 under PYTHONUNBUFFERED=1 too
    try:
        app()
    finally:
        # What `sys.stdout.write` left in the buffer goes out now, not at interpreter exit,
        # where a closed pipe would print "Exception ignored ... BrokenPipeError" and exit 120.
        flush_stdout()


if __name__ == "__main__":
    main()
