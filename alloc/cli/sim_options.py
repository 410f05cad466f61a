"""What `alloc simulate` and `alloc whatif` share: their options, and the checks of their
inputs (bad input is an InputError naming the option or file, found before anything runs)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from alloc.cli.common import Conflict, MissingInput, check_writable, console
from alloc.cli.params import number, one_of, seconds, whole
from alloc.io.errors import InputError
from alloc.io.limits import read_input
from alloc.readable import duration

if TYPE_CHECKING:  # the simulator and the solvers load when a command runs, not before
    from alloc.sim.run import Inputs, RunSpec


def stdout_console() -> Console:
    """The console of a command's tables, made when the command runs (`common.console`)."""
    return console()


LabArg = Annotated[
    Path | None,
    typer.Argument(help="Lab instance YAML (cluster, budgets, policy; optional with --synthetic)."),
]
TraceOpt = Annotated[
    Path | None, typer.Option("--trace", metavar="FILE", help="Trace CSV to replay.")
]
SyntheticOpt = Annotated[
    bool,
    typer.Option(
        "--synthetic", help="Use the built-in generator (and the built-in lab if no LAB is given)."
    ),
]
DaysOpt = Annotated[float, number(above=0.0, metavar="DAYS", help="Simulated days.")]
SeedOpt = Annotated[int, whole(help="Seed of the generator and the failure model.")]
StartOpt = Annotated[
    str | None,
    typer.Option(
        metavar="DURATION",
        help="Replay the trace from this long after the lab's now (e.g. 30d): earlier jobs are "
        "left out, the cluster starts empty, --days count from here, dates stay the trace's.",
    ),
]
ProgressEveryOpt = Annotated[
    str,
    typer.Option(
        envvar="ALLOC_PROGRESS_EVERY",
        metavar="DURATION",
        help="Without a terminal (CI, nohup, a log file): a progress line on stderr this "
        "often (0: none). With a terminal the progress is shown live.",
    ),
]


def progress_interval(text: str) -> float | None:
    """--progress-every in seconds; None for 0 (no progress lines)."""
    return seconds("--progress-every", text) or None


def check_policy(name: str, option: str = "--policy") -> str:
    from alloc.sim.policies import REGISTRY

    return one_of(option, name, list(REGISTRY))


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

    if trace is None and not synthetic:
        raise MissingInput("", "give --trace TRACE.csv or --synthetic")
    if trace is not None and synthetic:
        raise Conflict("give exactly one of --trace TRACE.csv or --synthetic")
    step = options.get("round_interval_s") or 300.0
    if days * 86_400.0 < step:  # not one round: "0 s simulated"
        raise InputError(
            "--days",
            "",
            f"expected at least one --round-interval of simulated time, {duration(step)} "
            f"({step / 86_400.0:.3g} days), got {days:g}",
        )
    if synthetic and options.get("start_s"):
        raise InputError(
            "--start", "", "replays a trace from later on: give --trace, not --synthetic"
        )
    if lab is None:
        if not synthetic:
            raise MissingInput(
                "LAB", "required, but not given (or --synthetic for the built-in lab)"
            )
        from alloc.sim.synthetic import SyntheticLab, synthetic_lab

        built, _ = synthetic_lab(SyntheticLab(days=days, seed=seed))
        text = dump_instance(built, "the built-in synthetic lab (alloc.sim.synthetic)")
        source = "<built-in lab>"
    else:
        text = read_input(lab, kind="a YAML file")
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
    interval = seconds("--round-interval", round_interval, above=0.0)
    mtbf_s = seconds("--mtbf", mtbf, above=0.0)  # omitted: no failures
    limit = seconds("--time-limit", time_limit, above=0.0)
    if ledger != ":memory:":
        _check_new_ledger(Path(ledger))
    return {
        "round_interval_s": interval,
        "min_round_gap_s": seconds("--min-round-gap", min_round_gap),
        "checkpoint_interval_s": seconds("--checkpoint", checkpoint),
        "mtbf_h": mtbf_s / 3600.0 if mtbf_s else None,
        "repair_h": (seconds("--repair", repair) or 0.0) / 3600.0,
        "host_events": str(host_events) if host_events else None,
        "time_limit_s": limit,
        "ledger": ledger,
        "start_s": seconds("--start", start) or 0.0,
        "legacy_top": legacy[0],
        "legacy_cap": legacy[1],
        "rounds": rounds,
        "validate_passes": validate_passes,
    }


def _check_new_ledger(path: Path) -> None:
    """A ledger file is written by one run only: it must not exist yet, or be an empty SQLite
    file (runs mixed in one ledger would be read as one). Nothing is created here."""
    import sqlite3

    check_writable("--ledger", path)
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


OutOpt = Annotated[Path, typer.Option(metavar="DIR", help="Output folder.")]
RoundIntervalOpt = Annotated[
    str,
    typer.Option(metavar="DURATION", help="Time between two periodic full rounds (above 0)."),
]
MinRoundGapOpt = Annotated[
    str,
    typer.Option(
        metavar="DURATION",
        help="Events (arrivals, completions, requeues, host changes) call a round at most "
        "this often: those that come sooner after the last round are decided together, by "
        "one round when this much time has passed.",
    ),
]
TimeLimitOpt = Annotated[
    str | None,
    typer.Option(metavar="DURATION", help="Wall-clock limit of each round's MILP (above 0)."),
]
LegacyTopOpt = Annotated[
    float,
    number(
        min=0.0,
        max=1.0,
        metavar="FRACTION",
        help="legacy-priority: fraction of submissions made at the highest level (users' "
        "behaviour; at 1 nobody can preempt anybody and the policy is FIFO).",
    ),
]
CheckpointOpt = Annotated[
    str | None,
    typer.Option(
        metavar="DURATION",
        help="Checkpoint interval: the progress resumable work keeps when preempted, and when "
        "non-resumable work becomes costly_to_stop (replaces the lab policy's "
        "checkpoint_interval).",
    ),
]
MtbfOpt = Annotated[
    str | None,
    typer.Option(
        metavar="DURATION",
        help="Mean time between failures of a host (e.g. 60d; above 0); off by default.",
    ),
]
RepairOpt = Annotated[str, typer.Option(metavar="DURATION", help="Repair time of a drained host.")]
HostEventsOpt = Annotated[
    Path | None,
    typer.Option(metavar="FILE", help="Host state changes to replay: a CSV of time,host,state."),
]
RoundsOpt = Annotated[
    str,
    typer.Option(
        metavar="KIND",
        help="events: a full round every --round-interval and when a host changes, event "
        "passes on arrivals, completions and requeues between them; full: a full round on "
        "every event (slower; the model before event passes).",
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
    number(
        min=0.0,
        metavar="MULTIPLE",
        help="legacy-priority: non-preemptible GPUs per team, as a multiple of its share.",
    ),
]
