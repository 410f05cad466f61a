"""`alloc simulate`: a thin wrapper around alloc.sim.run, with its progress on stderr
(`alloc.cli.progress`) and Ctrl-C writing what was simulated so far, marked partial, and
exiting 130 (`alloc.cli.stop`). `alloc whatif` is in `alloc.cli.whatif_cmd`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from alloc.cli.common import check_writable, guarded, say_left, say_replaced
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


def simulate(
    lab: LabArg = None,
    trace: TraceOpt = None,
    synthetic: SyntheticOpt = False,
    policy: Annotated[
        str | None,
        typer.Option(
            metavar="POLICY",
            help="milp, greedy, fairshare-sort, legacy-priority or fifo (default: the lab's "
            "solver).",
        ),
    ] = None,
    days: DaysOpt = 30.0,
    seed: SeedOpt = 1,
    start: StartOpt = None,
    out: OutOpt = Path("sim-out"),
    round_interval: RoundIntervalOpt = "5m",
    min_round_gap: MinRoundGapOpt = "10s",
    checkpoint: CheckpointOpt = None,
    mtbf: MtbfOpt = None,
    repair: RepairOpt = "8h",
    host_events: HostEventsOpt = None,
    time_limit: TimeLimitOpt = None,
    ledger: Annotated[
        str,
        typer.Option(
            metavar="FILE", help="SQLite file for the ledger (:memory: keeps it in memory)."
        ),
    ] = ":memory:",
    legacy_top: LegacyTopOpt = 0.8,
    legacy_cap: LegacyCapOpt = 1.0,
    rounds: RoundsOpt = "events",
    validate_passes: ValidatePassesOpt = False,
    progress_every: ProgressEveryOpt = "10s",
) -> None:
    """Simulate a lab over time: same round function, simulated clock and executor. Ctrl-C
    stops at the end of the current round, writes what was simulated (marked partial) and
    exits 130."""

    from alloc.cli.progress import ProgressDisplay
    from alloc.cli.render import print_summary
    from alloc.cli.stop import StopOnSigint, exit_interrupted
    from alloc.report.fmt import stopped_after
    from alloc.sim.run import RUN_FILES, NothingSimulated, run

    def act() -> None:
        check_writable("--out", out, folder=True)
        interval = progress_interval(progress_every)
        common = (round_interval, min_round_gap, checkpoint, mtbf, repair, host_events, time_limit)
        options = sim_options(
            *common,
            ledger=ledger,
            start=start,
            legacy=(legacy_top, legacy_cap),
            rounds=rounds,
            validate_passes=validate_passes,
        )
        base, inputs = base_spec(lab, trace, synthetic, days, seed, options)
        chosen = check_policy(policy) if policy is not None else base.policy
        spec = replace(base, policy=chosen, out=str(out), label=chosen)
        say_replaced(out, RUN_FILES)
        left, doubt = _comparison_files(out, trace)
        say_left(out, left, "`alloc whatif`", doubt)
        display = ProgressDisplay([(chosen, days * 86400.0)], interval)
        try:
            with StopOnSigint(display.stop_requested) as stop, display:
                display.start(chosen)
                metrics = run(spec, display.reporter(chosen), inputs, stop, display.writer(chosen))
        except NothingSimulated:
            exit_interrupted("stopped before the simulation began; nothing written")
        print_summary(stdout_console(), metrics, out)
        if metrics.get("partial"):
            exit_interrupted(f"{stopped_after(metrics)}; the partial results are in {out}")
        if stop.requested:  # after the simulation ended, while its files were written
            exit_interrupted(f"the run was complete; its results are in {out}")

    guarded(act)


def _comparison_files(out: Path, trace: Path | None = None) -> tuple[list[str], str]:
    """What an `alloc whatif` left in `out`: its comparison, its runs' folders and the
    trace.csv it wrote with --synthetic (its runs' metrics.json say so). A trace.csv that its
    runs read without that mark (a whatif of an earlier version, or the user's own trace given
    with --trace) is named with a doubt, the second value; one that this run reads (`trace`)
    is not named."""
    import json

    from alloc.report.compare import COMPARISON_FILES

    if not out.is_dir():
        return [], ""
    runs = sorted(p.name for p in out.iterdir() if (p / "metrics.json").is_file())
    left = [*COMPARISON_FILES, *runs]
    written = out / "trace.csv"
    if not runs or not written.is_file() or (trace is not None and _same(trace, written)):
        return left, ""
    marks = []
    for name in runs:
        try:
            metrics = json.loads((out / name / "metrics.json").read_text())
        except (OSError, ValueError):
            continue
        read = metrics.get("trace") if isinstance(metrics, dict) else None
        if isinstance(read, str) and Path(read).name == "trace.csv":
            # the mark: whatif wrote it into its --out, the parent of this run's folder
            marks.append(metrics.get("trace_from") == "synthetic")
    if any(marks):
        return [*left, "trace.csv"], ""
    if marks:  # its runs read a trace.csv, perhaps this one: which may be the user's own
        return [*left, "trace.csv"], "trace.csv is that run's only if it ran with --synthetic"
    return left, ""


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False
