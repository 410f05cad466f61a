"""`alloc whatif`: one trace replayed under several budget trees and policies, `--jobs` runs at
a time in worker processes, then compared (`alloc.report.compare`). The progress of every run
shows on stderr (`alloc.cli.progress`; workers send theirs through a queue). Ctrl-C stops the
runs under way at the end of their current round (workers are told through an event, and
stop by themselves when the terminal's Ctrl-C reaches them too); runs not yet begun are not
run; what was measured is written and compared, partial runs marked so; exit 130."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from alloc.cli.common import check_writable, guarded, say_left, say_replaced, write_atomically
from alloc.cli.params import whole
from alloc.cli.sim_options import (
    CheckpointOpt,
    DaysOpt,
    HostEventsOpt,
    LabArg,
    LegacyCapOpt,
    LegacyTopOpt,
    MinRoundGapOpt,
    MtbfOpt,
    OutOpt,
    ProgressEveryOpt,
    RepairOpt,
    RoundIntervalOpt,
    RoundsOpt,
    SeedOpt,
    StartOpt,
    SyntheticOpt,
    TimeLimitOpt,
    TraceOpt,
    ValidatePassesOpt,
    base_spec,
    check_policy,
    progress_interval,
    sim_options,
    stdout_console,
)
from alloc.io.errors import InputError
from alloc.readable import counted

if TYPE_CHECKING:
    from alloc.domain import BudgetTree, TraceJob
    from alloc.sim.run import RunSpec


def whatif(
    lab: LabArg = None,
    trace: TraceOpt = None,
    synthetic: SyntheticOpt = False,
    scenario: Annotated[
        list[Path] | None,
        typer.Option(
            metavar="FILE", help="Scenario YAML (budgets, policy, usage); repeat for several."
        ),
    ] = None,
    policies: Annotated[
        str,
        typer.Option(
            metavar="POLICIES",
            help="Comma-separated policies: milp, greedy, fairshare-sort, legacy-priority, fifo.",
        ),
    ] = "milp",
    days: DaysOpt = 30.0,
    seed: SeedOpt = 1,
    start: StartOpt = None,
    out: OutOpt = Path("whatif-out"),
    jobs: Annotated[int, whole(min=1, help="Runs at a time, in parallel processes.")] = 1,
    teams: Annotated[
        bool, typer.Option("--teams", help="Also print the table per team and run.")
    ] = False,
    round_interval: RoundIntervalOpt = "5m",
    min_round_gap: MinRoundGapOpt = "10s",
    checkpoint: CheckpointOpt = None,
    mtbf: MtbfOpt = None,
    repair: RepairOpt = "8h",
    host_events: HostEventsOpt = None,
    time_limit: TimeLimitOpt = None,
    legacy_top: LegacyTopOpt = 0.8,
    legacy_cap: LegacyCapOpt = 1.0,
    rounds: RoundsOpt = "events",
    validate_passes: ValidatePassesOpt = False,
    progress_every: ProgressEveryOpt = "10s",
) -> None:
    """Replay one trace under several budget trees and/or policies, side by side (every run
    meets the same host failures: the failure model is seeded). Prints a table with a row per
    run (and, with --teams, per team and run). Writes the comparison, a folder per run and
    (with --synthetic) trace.csv into --out, saying first which files of an earlier run it
    replaces; files of an `alloc simulate` run there are named and left as they are. Ctrl-C
    stops the runs under way at the end of their current round, compares what was measured
    (marked partial) and exits 130."""
    from alloc.cli.progress import ProgressDisplay
    from alloc.cli.render_whatif import print_comparison
    from alloc.cli.stop import exit_interrupted
    from alloc.cli.whatif_runs import run_in_turn, run_parallel
    from alloc.report.compare import compare, write_comparison

    def act() -> None:
        check_writable("--out", out, folder=True)
        interval = progress_interval(progress_every)
        common = (round_interval, min_round_gap, checkpoint, mtbf, repair, host_events, time_limit)
        options = sim_options(
            *common,
            ledger=":memory:",
            start=start,
            legacy=(legacy_top, legacy_cap),
            rounds=rounds,
            validate_passes=validate_passes,
        )
        specs, n_policies, credit = _specs(
            lab, trace, synthetic, days, seed, options, scenario or [], policies, out
        )
        display = ProgressDisplay([(s.label, days * 86400.0) for s in specs], interval)
        if jobs > 1 and len(specs) > 1:
            outcome = run_parallel(specs, jobs, display)
        else:
            outcome = run_in_turn(specs, display)
        ran = [(i, s) for i, s in enumerate(specs) if s.label in outcome.results]
        if not ran:
            exit_interrupted("stopped before any run began; no comparison written")
        # A scenario is compared with the base tree under the same policy (its budget effect);
        # the base tree's runs with the first of them (the policies' effect).
        first = {p: i for i, s in reversed(list(enumerate(specs))) for p in [s.policy]}
        wanted = [first[s.policy] if i >= n_policies else 0 for i, s in enumerate(specs)]
        index = {i: k for k, (i, _) in enumerate(ran)}
        baselines = [index.get(wanted[i], k) for k, (i, _) in enumerate(ran)]
        runs = [(s.label, Path(s.out)) for _, s in ran]
        write_comparison(out, runs, credit, baselines, outcome.not_run)
        ours = {Path(s.out).name for _, s in ran}  # a run not run now may have an old folder
        stale = sorted(
            p.name for p in out.iterdir() if (p / "metrics.json").is_file() and p.name not in ours
        )
        c = compare(runs, baselines, outcome.not_run)
        print_comparison(stdout_console(), c, stale, credit, out, teams)
        if outcome.stopped:
            partial = [label for label, m in outcome.results.items() if m.get("partial")]
            what = (
                f"{counted(len(outcome.results) - len(partial), 'run')} complete, "
                f"{len(partial):,} partial, {len(outcome.not_run):,} not run"
            )
            exit_interrupted(f"{what}; the comparison of what was measured is in {out}")

    guarded(act)


def _check_nodes_used(
    path: Path, tree: BudgetTree, jobs: Sequence[TraceJob], trace: str | None
) -> None:
    """A scenario's tree must hold every budget node the trace's workloads are charged to: one
    that lacks one is the scenario's fault (its file and the node), not a line of the trace,
    least of all of the synthetic trace alloc drew itself."""
    from alloc.domain import BudgetPath

    used = Counter(str(j.budget) for j in jobs if j.budget is not None)
    missing = [b for b in used if BudgetPath(b) not in tree]
    if missing:
        more = f" (and {counted(len(missing) - 1, 'other node')})" if len(missing) > 1 else ""
        source = f"the trace {trace}" if trace else "the synthetic trace drawn from the lab"
        raise InputError(
            str(path),
            "budgets",
            f"has no node {missing[0]!r}{more}, which {counted(used[missing[0]], 'workload')} "
            f"of {source} {'is' if used[missing[0]] == 1 else 'are'} charged to: a scenario "
            "changes the tree's shares and may add nodes, but keeps every node the trace uses",
        )


def _specs(
    lab: Path | None,
    trace: Path | None,
    synthetic: bool,
    days: float,
    seed: int,
    options: dict[str, Any],
    scenarios: list[Path],
    policies: str,
    out: Path,
) -> tuple[list[RunSpec], int, str | None]:
    """Every run, checked (bad input raises before anything runs): one per tree (the lab's,
    `base`, then each scenario's) and policy; with the number of policies and the credit."""
    from alloc.io import dump_instance, parse_instance
    from alloc.io.scenario import load_scenario
    from alloc.io.trace_csv import parse_trace
    from alloc.io.trace_csv import trace_text as write_trace_text
    from alloc.report.compare import COMPARISON_FILES
    from alloc.sim.run import RUN_FILES, load_inputs
    from alloc.sim.synthetic import SyntheticLab, synthetic_trace

    base, (lab_snapshot, jobs) = base_spec(lab, trace, synthetic, days, seed, options)
    names = [check_policy(p.strip(), "--policies") for p in policies.split(",") if p.strip()]
    if not names:
        raise InputError("--policies", "", "name at least one policy, e.g. milp,greedy")
    if len(set(names)) < len(names):
        raise InputError("--policies", "", f"a policy is named twice: {policies}")
    labs = [("base", base.lab_yaml, base.lab_file)]
    trees: list[tuple[Path, BudgetTree]] = []
    for path in scenarios:
        name, alt = load_scenario(path, lab_snapshot)
        source = f"scenario {name} ({path})"
        if any(name == other for other, _, _ in labs):
            raise InputError(
                str(path),
                "name",
                f"a second run named {name!r}: give the scenario "
                "another name (`base` is the lab's own tree)",
            )
        labs.append((name, dump_instance(alt, source), source))
        trees.append((path, alt.budgets))
    trace_text: str | None = None
    if base.trace is None:
        # One synthetic trace, drawn from the base lab, replayed under every scenario.
        jobs = synthetic_trace(lab_snapshot, SyntheticLab(days=days, seed=seed))
        trace_text = write_trace_text(jobs)
    for path, scenario_tree in trees:
        _check_nodes_used(path, scenario_tree, jobs, base.trace)
    specs = []
    for name, text, source in labs:
        if trace_text is not None:
            tree = parse_instance(text, source)
            parse_trace(
                trace_text,
                "the synthetic trace",
                tree.budgets,
                tree.policy.max_min_runtime_s,
                source,
            )
        elif name != "base":  # the base lab and the trace were read by base_spec
            # Once per tree, not per policy: e.g. a trace budget that this tree lacks.
            load_inputs(replace(base, lab_yaml=text, lab_file=source))
        for p in names:
            specs.append(
                replace(
                    base,
                    label=f"{name}/{p}",
                    lab_yaml=text,
                    policy=p,
                    out=str(out / f"{name}-{p}"),
                    lab_file=source,
                )
            )
    written = [*COMPARISON_FILES, *(Path(s.out).name for s in specs)]
    say_replaced(out, written + (["trace.csv"] if trace_text is not None else []))
    say_left(out, RUN_FILES, "`alloc simulate`")
    if trace_text is not None:
        trace_path = out / "trace.csv"
        write_atomically(trace_path, trace_text)
        # Marked in each run's metrics.json: `alloc simulate` into this folder then names
        # trace.csv among what whatif left (not a user's own trace.csv that a run read).
        specs = [
            replace(s, trace=str(trace_path), extra={**s.extra, "trace_from": "synthetic"})
            for s in specs
        ]
    return specs, len(names), base.credit
