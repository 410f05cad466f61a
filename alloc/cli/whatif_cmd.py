"""`alloc whatif`: one trace replayed under several budget trees and policies, `--jobs` runs at
a time in worker processes, then compared (`alloc.report.compare`). The progress of every run
shows on stderr (`alloc.cli.progress`; workers send theirs through a queue). Ctrl-C stops the
runs under way at the end of their current round (workers are told through an event, and
stop by themselves when the terminal's Ctrl-C reaches them too); runs not yet begun are not
run; what was measured is written and compared, partial runs marked so; exit 130."""

from __future__ import annotations

import multiprocessing
import queue
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from alloc.cli.common import check_writable, guarded, say_replaced, write_atomically
from alloc.cli.sim_options import (
    CheckpointOpt,
    DaysOpt,
    HostEventsOpt,
    LabArg,
    LegacyCapOpt,
    LegacyTopOpt,
    MtbfOpt,
    ProgressEveryOpt,
    RepairOpt,
    RoundsOpt,
    SeedOpt,
    StartOpt,
    SyntheticOpt,
    TraceOpt,
    ValidatePassesOpt,
    base_spec,
    check_policy,
    progress_interval,
    sim_options,
    stdout_console,
)
from alloc.io.errors import InputError

if TYPE_CHECKING:
    from alloc.cli.progress import ProgressDisplay
    from alloc.sim.run import RunSpec

WORKER_REPORT_EVERY_S = 0.5  # a worker sends its run's progress at most this often


@dataclass
class Outcome:
    """What the runs gave: each run's metrics (whole or partial), the runs never begun, and
    whether a stop was asked."""

    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    not_run: list[str] = field(default_factory=list)
    stopped: bool = False


def whatif(
    lab: LabArg = None,
    trace: TraceOpt = None,
    synthetic: SyntheticOpt = False,
    scenario: Annotated[
        list[Path] | None,
        typer.Option(help="Scenario YAML (budgets, policy, usage); repeat for several."),
    ] = None,
    policies: Annotated[str, typer.Option(help="Comma-separated policies.")] = "milp",
    days: DaysOpt = 30.0,
    seed: SeedOpt = 1,
    start: StartOpt = None,
    out: Annotated[Path, typer.Option(help="Output folder.")] = Path("whatif-out"),
    jobs: Annotated[int, typer.Option(min=1, help="Runs in parallel processes.")] = 1,
    teams: Annotated[
        bool, typer.Option("--teams", help="Also print the table per team and run.")
    ] = False,
    round_interval: Annotated[str, typer.Option(help="Periodic round.")] = "5m",
    min_round_gap: Annotated[str, typer.Option(help="Event rounds coalesce.")] = "10s",
    checkpoint: CheckpointOpt = None,
    mtbf: MtbfOpt = None,
    repair: RepairOpt = "8h",
    host_events: HostEventsOpt = None,
    time_limit: Annotated[str | None, typer.Option(help="MILP limit per round.")] = None,
    legacy_top: LegacyTopOpt = 0.8,
    legacy_cap: LegacyCapOpt = 1.0,
    rounds: RoundsOpt = "events",
    validate_passes: ValidatePassesOpt = False,
    progress_every: ProgressEveryOpt = "10s",
) -> None:
    """Replay one trace under several budget trees and/or policies, side by side (every run
    meets the same host failures: the failure model is seeded). Prints a table with a row per
    run (and, with --teams, per team and run). Ctrl-C stops the runs under way at the end of
    their current round, compares what was measured (marked partial) and exits 130."""
    from alloc.cli.progress import ProgressDisplay
    from alloc.cli.render_whatif import print_comparison
    from alloc.cli.stop import exit_interrupted
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
            outcome = _run_parallel(specs, jobs, display)
        else:
            outcome = _run_in_turn(specs, display)
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
                f"{len(outcome.results) - len(partial)} run(s) complete, {len(partial)} "
                f"partial, {len(outcome.not_run)} not run"
            )
            exit_interrupted(f"{what}; the comparison of what was measured is in {out}")

    guarded(act)


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
    from alloc.sim.run import load_inputs
    from alloc.sim.synthetic import SyntheticLab, synthetic_trace

    base, (lab_snapshot, _) = base_spec(lab, trace, synthetic, days, seed, options)
    names = [check_policy(p.strip(), "--policies") for p in policies.split(",") if p.strip()]
    if not names:
        raise InputError("--policies", "", "name at least one policy, e.g. milp,greedy")
    if len(set(names)) < len(names):
        raise InputError("--policies", "", f"a policy is named twice: {policies}")
    labs = [("base", base.lab_yaml, base.lab_file)]
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
    trace_text: str | None = None
    if base.trace is None:
        # One synthetic trace, drawn from the base lab, replayed under every scenario.
        drawn = synthetic_trace(lab_snapshot, SyntheticLab(days=days, seed=seed))
        trace_text = write_trace_text(drawn)
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
    if trace_text is not None:
        trace_path = out / "trace.csv"
        write_atomically(trace_path, trace_text)
        specs = [replace(s, trace=str(trace_path)) for s in specs]
    return specs, len(names), base.credit


def _ended(display: ProgressDisplay, outcome: Outcome, label: str, metrics: Any) -> None:
    """Record how run `label` ended: its metrics (whole or partial), or None: not run."""
    if metrics is None:
        outcome.not_run.append(label)
        display.finish(label, "not run")
        return
    outcome.results[label] = metrics
    display.finish(label, "partial" if metrics.get("partial") else "done", metrics)


def _run_in_turn(specs: list[RunSpec], display: ProgressDisplay) -> Outcome:
    """The runs one after the other in this process."""
    from alloc.cli.stop import StopOnSigint
    from alloc.sim.run import NothingSimulated, run

    outcome = Outcome()
    with StopOnSigint(display.stop_requested) as stop, display:
        for spec in specs:
            metrics = None
            if not stop.requested:
                display.start(spec.label)
                with suppress(NothingSimulated):  # stopped at once: not run
                    metrics = run(spec, display.reporter(spec.label), stop=stop)
            _ended(display, outcome, spec.label, metrics)
        outcome.stopped = stop.requested
    outcome.not_run.sort(key=[s.label for s in specs].index)
    return outcome


def _run_parallel(specs: list[RunSpec], jobs: int, display: ProgressDisplay) -> Outcome:
    """The runs in `jobs` worker processes; their progress comes through a queue, a stop
    goes to them through an event."""
    from alloc.cli.stop import StopOnSigint

    context = multiprocessing.get_context()
    updates: Any = context.Queue()
    stop_all = context.Event()
    outcome = Outcome()
    with ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=_start_worker,
        initargs=(updates, stop_all),
    ) as pool:
        # Every worker is started (forked) by the first submission, before the display's
        # threads exist: a fork copies only the thread that forks.
        futures: dict[Future[tuple[str, dict[str, Any] | None]], str] = {
            pool.submit(_run_in_worker, spec): spec.label for spec in specs
        }

        def stop_requested() -> None:
            stop_all.set()
            display.stop_requested()

        with StopOnSigint(stop_requested) as stop, display:
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                _show(updates, display)
                for future in done:
                    label = futures[future]
                    metrics = None if future.cancelled() else future.result()[1]
                    _ended(display, outcome, label, metrics)
                if stop.requested:
                    for future in pending:
                        future.cancel()  # not begun: not run (a begun one stops itself)
            _show(updates, display)
            outcome.stopped = stop.requested
    outcome.not_run.sort(key=[s.label for s in specs].index)
    return outcome


def _show(updates: Any, display: ProgressDisplay) -> None:
    """Pass the workers' progress reports on to the display."""
    while True:
        try:
            label, t_s, rounds, passes = updates.get_nowait()
        except queue.Empty:
            return
        if display.runs[label].state in ("waiting", "running"):
            display.update(label, t_s, rounds, passes)


_WORKER: dict[str, Any] = {}  # in a worker process: its queue and its stop predicate


def _start_worker(updates: Any, stop_all: Any) -> None:
    """A worker's start: Ctrl-C (the terminal's reaches every process of the group) asks its
    run to stop, as the parent's event does; a second one ends it at once."""
    from alloc.cli.stop import StopOnSigint

    sigint = StopOnSigint().__enter__()  # for the worker's whole life
    _WORKER["updates"] = updates
    _WORKER["stop"] = lambda: sigint.requested or stop_all.is_set()


def _run_in_worker(spec: RunSpec) -> tuple[str, dict[str, Any] | None]:
    """One run in a worker; None for a run stopped before it began (nothing written)."""
    from alloc.sim.run import NothingSimulated, run

    stop, updates = _WORKER["stop"], _WORKER["updates"]
    if stop():
        return spec.label, None
    updates.put((spec.label, 0.0, 0, 0))
    next_at = 0.0

    def report(t_s: float, rounds: int, passes: int) -> None:
        nonlocal next_at
        now = time.monotonic()
        if now >= next_at:
            next_at = now + WORKER_REPORT_EVERY_S
            updates.put((spec.label, t_s, rounds, passes))

    try:
        return spec.label, run(spec, report, stop=stop)
    except NothingSimulated:
        return spec.label, None
