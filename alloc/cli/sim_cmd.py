"""`alloc simulate` and `alloc whatif`: thin wrappers around alloc.sim.run."""

from __future__ import annotations

import sqlite3
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from alloc.cli.common import check_writable, guarded, write_atomically
from alloc.io.durations import parse_duration
from alloc.io.errors import InputError

if TYPE_CHECKING:  # the simulator and the solvers load when a command runs, not before
    from alloc.sim.run import Inputs, RunSpec

out_console = Console(width=None if sys.stdout.isatty() else 120)

LabArg = Annotated[
    Path | None,
    typer.Argument(help="Lab instance YAML (cluster, budgets, policy; optional with --synthetic)."),
]
TraceOpt = Annotated[Path | None, typer.Option("--trace", help="Trace CSV to replay.")]
SyntheticOpt = Annotated[
    bool,
    typer.Option(
        "--synthetic", help="Use the built-in generator (and the built-in lab if no LAB is given)."
    ),
]
DaysOpt = Annotated[float, typer.Option(min=0.001, help="Simulated days.")]
SeedOpt = Annotated[int, typer.Option(help="Seed of the generator and the failure model.")]
StartOpt = Annotated[
    str | None,
    typer.Option(
        help="Replay the trace from this long after the lab's now (e.g. 30d): earlier jobs are "
        "left out, the cluster starts empty, --days count from here, dates stay the trace's."
    ),
]


def _duration(option: str, text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise InputError(option, "", str(exc)) from None


def _policy(name: str, option: str = "--policy") -> str:
    from alloc.sim.policies import REGISTRY

    if name not in REGISTRY:
        raise InputError(
            option, "", f"unknown policy {name!r}; expected one of {', '.join(REGISTRY)}"
        )
    return name


def base_spec(
    lab: Path | None,
    trace: Path | None,
    synthetic: bool,
    days: float,
    seed: int,
    options: dict[str, Any],
) -> tuple[RunSpec, Inputs]:
    """The run's inputs, checked: a lab file (or the built-in lab) and a trace or --synthetic;
    with the lab and the jobs as read (a run of this spec under any policy starts from them)."""
    from alloc.io import dump_instance
    from alloc.sim.run import RunSpec, load_inputs

    if (trace is None) == (not synthetic):
        raise InputError("alloc", "", "give exactly one of --trace TRACE.csv or --synthetic")
    if synthetic and options.get("start_s"):
        raise InputError(
            "--start", "", "replays a trace from later on: give --trace, not --synthetic"
        )
    if lab is None:
        if not synthetic:
            raise InputError("alloc", "", "give a LAB.yaml, or --synthetic for the built-in lab")
        from alloc.sim.synthetic import SyntheticLab, synthetic_lab

        built, _ = synthetic_lab(SyntheticLab(days=days, seed=seed))
        text = dump_instance(built, "the built-in synthetic lab (alloc.sim.synthetic)")
        source = "<built-in lab>"
    else:
        try:
            text = lab.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(str(lab), "", f"cannot read the file: {exc}") from None
        source = str(lab)
    credit = next(
        (
            line.lstrip("# ").strip()
            for line in text.splitlines()
            if line.startswith("#") and "Philly" in line
        ),
        None,
    )
    spec = RunSpec(
        label="base",
        lab_yaml=text,
        lab_file=source,
        policy="milp",
        days=days,
        out="",
        trace=str(trace) if trace else None,
        seed=seed,
        credit=credit,
        **options,
    )
    inputs = load_inputs(spec)  # bad input stops here, before anything runs
    return replace(spec, policy=inputs[0].policy.solver), inputs  # the lab's solver by default


def sim_options(
    round_interval: str,
    min_round_gap: str,
    checkpoint: str | None,
    mtbf: str | None,
    repair: str,
    host_events: Path | None,
    time_limit: str | None,
    *,
    ledger: str,
    start: str | None,
    legacy: tuple[float, float],
    rounds: str = "events",
    validate_passes: bool = False,
) -> dict[str, Any]:
    """The run options shared by simulate and whatif, checked; `legacy`: (top, cap)."""
    from alloc.rounds import ROUND_KINDS

    if rounds not in ROUND_KINDS:
        raise InputError(
            "--rounds",
            "",
            f"expected events (event passes between full rounds) or full (a full round on "
            f"every event), got {rounds!r}",
        )
    interval = _duration("--round-interval", round_interval)
    if not interval:
        raise InputError("--round-interval", "", "the periodic round needs an interval above 0")
    mtbf_s = _duration("--mtbf", mtbf)
    if mtbf is not None and not mtbf_s:
        raise InputError(
            "--mtbf", "", "a mean time between failures is above 0 (omit it for no failures)"
        )
    limit = _duration("--time-limit", time_limit)
    if time_limit is not None and not limit:
        raise InputError("--time-limit", "", "a time limit is above 0")
    if ledger != ":memory:":
        _check_new_ledger(Path(ledger))
    return {
        "round_interval_s": interval,
        "min_round_gap_s": _duration("--min-round-gap", min_round_gap),
        "checkpoint_interval_s": _duration("--checkpoint", checkpoint),
        "mtbf_h": mtbf_s / 3600.0 if mtbf_s else None,
        "repair_h": (_duration("--repair", repair) or 0.0) / 3600.0,
        "host_events": str(host_events) if host_events else None,
        "time_limit_s": limit,
        "ledger": ledger,
        "start_s": _duration("--start", start) or 0.0,
        "legacy_top": legacy[0],
        "legacy_cap": legacy[1],
        "rounds": rounds,
        "validate_passes": validate_passes,
    }


def _check_new_ledger(path: Path) -> None:
    """A ledger file is written by one run only: it must not exist yet, or be an empty SQLite
    file (runs mixed in one ledger would be read as one). Nothing is created here."""

    check_writable("--ledger", path)
    if not path.parent.is_dir():
        raise InputError("--ledger", "", f"the folder {path.parent} does not exist")
    if not path.exists() or path.stat().st_size == 0:
        return
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master")]
            rows = db.execute("SELECT COUNT(*) FROM intervals").fetchone()[0] if tables else 0
    except sqlite3.Error as exc:
        raise InputError("--ledger", "", f"{path} is not an SQLite ledger: {exc}") from None
    if rows or (tables and "intervals" not in tables):
        what = f"{rows} intervals" if rows else "tables of something else"
        raise InputError("--ledger", "", f"{path} already holds {what}: give a new file")


LegacyTopOpt = Annotated[
    float,
    typer.Option(
        min=0.0,
        max=1.0,
        help="legacy-priority: fraction of submissions made at the highest level (users' "
        "behaviour; at 1 nobody can preempt anybody and the policy is FIFO).",
    ),
]
CheckpointOpt = Annotated[
    str | None,
    typer.Option(
        help="Checkpoint interval: the progress resumable work keeps when preempted, and when "
        "non-resumable work becomes costly_to_stop (replaces the lab policy's "
        "checkpoint_interval)."
    ),
]
MtbfOpt = Annotated[
    str | None,
    typer.Option(help="Mean time between failures of a host (e.g. 60d); off by default."),
]
RepairOpt = Annotated[str, typer.Option(help="Repair time of a drained host.")]
HostEventsOpt = Annotated[Path | None, typer.Option(help="CSV time,host,state.")]
RoundsOpt = Annotated[
    str,
    typer.Option(
        help="events: a full round every --round-interval and when a host changes, event "
        "passes on arrivals, completions and requeues between them; full: a full round on "
        "every event (slower; the model before event passes)."
    ),
]
ValidatePassesOpt = Annotated[
    bool,
    typer.Option(
        "--validate-passes",
        help="Also validate the whole plan of every event pass from scratch (slower).",
    ),
]
LegacyCapOpt = Annotated[
    float,
    typer.Option(
        min=0.0,
        help="legacy-priority: non-preemptible GPUs per team, as a multiple of its share.",
    ),
]


def simulate(
    lab: LabArg = None,
    trace: TraceOpt = None,
    synthetic: SyntheticOpt = False,
    policy: Annotated[
        str | None,
        typer.Option(
            help="milp, greedy, fairshare-sort, legacy-priority or fifo (default: the lab's "
            "solver)."
        ),
    ] = None,
    days: DaysOpt = 30.0,
    seed: SeedOpt = 1,
    start: StartOpt = None,
    out: Annotated[Path, typer.Option(help="Output folder.")] = Path("sim-out"),
    round_interval: Annotated[str, typer.Option(help="Periodic round.")] = "5m",
    min_round_gap: Annotated[str, typer.Option(help="Event rounds coalesce.")] = "10s",
    checkpoint: CheckpointOpt = None,
    mtbf: MtbfOpt = None,
    repair: RepairOpt = "8h",
    host_events: HostEventsOpt = None,
    time_limit: Annotated[str | None, typer.Option(help="MILP limit per round.")] = None,
    ledger: Annotated[str, typer.Option(help="SQLite file for the ledger.")] = ":memory:",
    legacy_top: LegacyTopOpt = 0.8,
    legacy_cap: LegacyCapOpt = 1.0,
    rounds: RoundsOpt = "events",
    validate_passes: ValidatePassesOpt = False,
) -> None:
    """Simulate a lab over time: same round function, simulated clock and executor."""

    from alloc.cli.render import print_summary
    from alloc.sim.run import run

    def act() -> None:
        check_writable("--out", out, folder=True)
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
        chosen = _policy(policy) if policy is not None else base.policy
        spec = replace(base, policy=chosen, out=str(out), label=chosen)
        with Progress(
            TextColumn("simulating"),
            BarColumn(),
            TextColumn("day {task.fields[d]}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        ) as bar:
            task = bar.add_task("sim", total=days * 86400.0, d="0.0")

            def progress(t_s: float, rounds: int, passes: int) -> None:
                bar.update(task, completed=t_s, d=f"{t_s / 86400:.1f}")

            metrics = run(spec, progress, inputs)
        print_summary(out_console, metrics, out)

    guarded(act)


def _one(spec: RunSpec) -> tuple[str, dict[str, Any]]:
    from alloc.sim.run import run

    return spec.label, run(spec)


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
) -> None:
    """Replay one trace under several budget trees and/or policies, side by side (every run
    meets the same host failures: the failure model is seeded)."""
    from alloc.cli.render import print_comparison
    from alloc.io import dump_instance, parse_instance
    from alloc.io.scenario import load_scenario
    from alloc.io.trace_csv import parse_trace
    from alloc.io.trace_csv import trace_text as write_trace_text
    from alloc.sim.run import load_inputs
    from alloc.sim.synthetic import SyntheticLab, synthetic_trace

    def act() -> None:
        check_writable("--out", out, folder=True)
        common = (round_interval, min_round_gap, checkpoint, mtbf, repair, host_events, time_limit)
        legacy = (legacy_top, legacy_cap)
        options = sim_options(
            *common,
            ledger=":memory:",
            start=start,
            legacy=legacy,
            rounds=rounds,
            validate_passes=validate_passes,
        )
        base, (lab_snapshot, _) = base_spec(lab, trace, synthetic, days, seed, options)
        names = [_policy(p.strip(), "--policies") for p in policies.split(",") if p.strip()]
        if not names:
            raise InputError("--policies", "", "name at least one policy, e.g. milp,greedy")
        if len(set(names)) < len(names):
            raise InputError("--policies", "", f"a policy is named twice: {policies}")
        labs = [("base", base.lab_yaml, base.lab_file)]
        for path in scenario or []:
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
        if trace_text is not None:
            trace_path = out / "trace.csv"
            write_atomically(trace_path, trace_text)
            specs = [replace(s, trace=str(trace_path)) for s in specs]
        results: dict[str, dict[str, Any]] = {}
        if jobs > 1 and len(specs) > 1:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                for future in as_completed([pool.submit(_one, s) for s in specs]):
                    label, metrics = future.result()
                    results[label] = metrics
                    out_console.print(f"done: {escape(label)}", highlight=False)
        else:
            for s in specs:
                label, metrics = _one(s)
                results[label] = metrics
                out_console.print(f"done: {escape(label)}", highlight=False)
        from alloc.report import comparison_table, write_comparison

        runs = [(s.label, Path(s.out)) for s in specs]
        # A scenario is compared with the base tree under the same policy (its budget effect);
        # the base tree's runs with the first of them (the policies' effect).
        first = {p: i for i, s in reversed(list(enumerate(specs))) for p in [s.policy]}
        baselines = [first[s.policy] if i >= len(names) else 0 for i, s in enumerate(specs)]
        write_comparison(out, runs, base.credit, baselines)
        ours = {Path(sp.out).name for sp in specs}
        stale = sorted(
            p.name for p in out.iterdir() if (p / "metrics.json").is_file() and p.name not in ours
        )
        print_comparison(
            out_console, comparison_table(runs, baselines), results, stale, base.credit, out
        )

    guarded(act)
