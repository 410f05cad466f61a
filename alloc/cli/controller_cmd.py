"""`alloc controller run --config FILE`: the controller beside a real cluster manager (Slurm),
every round reading the cluster, deciding, acting and recording (alloc.controller); with
`--clock simulated`, a dry run of it on the simulated cluster's time (alloc.controller.dryrun)."""

from __future__ import annotations

import os
import signal
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alloc.cli.commands import Command, Subcommands
from alloc.cli.common import err, guarded, out
from alloc.cli.params import seconds, whole
from alloc.io import InputError
from alloc.printable import shown
from alloc.readable import count, duration

if TYPE_CHECKING:
    from alloc.adapters.base import Executor
    from alloc.controller.dryrun import DryRun
    from alloc.io.controller_config import ControllerSettings

controller_app = typer.Typer(
    cls=Subcommands,
    rich_markup_mode=None,
    no_args_is_help=True,
    help="Run alloc as a controller beside a cluster manager.",
)


@controller_app.command(
    "run", cls=Command, short_help="Run rounds beside the cluster manager until stopped."
)
def run(
    config: Annotated[
        Path, typer.Option("--config", metavar="FILE", help="Controller config YAML.")
    ],
    executor: Annotated[
        str | None,
        typer.Option(
            metavar="EXECUTOR",
            help="The cluster manager driven: slurm, kubernetes or sim (default: the config's).",
        ),
    ] = None,
    rounds: Annotated[
        int | None, whole(min=1, help="Stop after this many rounds (default: never).")
    ] = None,
    clock: Annotated[
        str,
        typer.Option(
            metavar="CLOCK",
            help="wall, or simulated: a dry run on the sim executor's simulated time (the "
            "interval and polls pass at once; it ends when the trace is done).",
        ),
    ] = "wall",
    until: Annotated[
        str | None,
        typer.Option(
            metavar="DURATION",
            help="With --clock simulated: stop when the simulated clock is this long after the "
            "lab's `now` (where the trace's times count from), e.g. 6h or 2d.",
        ),
    ] = None,
    wide: Annotated[
        bool,
        typer.Option(
            "--wide",
            help="With --clock simulated: the summary lists every budget node's delivered/owed "
            "(else, when the teams do not fit one line, the top level and the lowest teams).",
        ),
    ] = False,
    controller_id: Annotated[
        str | None,
        typer.Option(
            "--id",
            metavar="NAME",
            help="This controller's name in the leader lease and /metrics (default: "
            "NAME@HOST:PID); every controller sharing the state has its own.",
        ),
    ] = None,
) -> None:
    """Run rounds every `interval` (config) until interrupted (Ctrl-C or SIGTERM end the
    current round first); with --clock simulated, on simulated time until the trace is done."""
    from alloc.controller.budgets import GovernanceError, with_shares
    from alloc.controller.build import executor_for
    from alloc.controller.lease import Lease
    from alloc.controller.loop import Controller, RoundOutcome
    from alloc.controller.metrics import ControllerMetrics
    from alloc.controller.opening import check_state, open_state, reaching, sqlite_file
    from alloc.io.controller_config import load_controller_config

    def act() -> None:
        settings = load_controller_config(config)
        kind = executor or settings.executor
        # where the executor was chosen, for messages about it: the option or the config
        chosen = f"--executor {kind}" if executor else f"{config} runs executor {kind}"
        until_s = _simulated_options(clock, until, kind, chosen, wide)
        check_state(settings)  # its folder, before the cluster's file is created
        # A database server first (it may not answer: then no cluster file is created); an
        # SQLite file once the cluster is (a bad lab or trace: no state file either).
        server = open_state(settings) if sqlite_file(settings.state_url) is None else None
        try:
            if clock == "simulated":
                cluster, dry = _dry_run(settings, kind, until_s)
            else:
                cluster, dry = executor_for(settings, kind), None
        except BaseException:
            if server is not None:
                server.close()
            raise
        store = server or open_state(settings)  # created on the first run
        try:
            with reaching(settings):
                with_shares(settings.budgets, store.shares())  # siblings over 100%: bad input
        except GovernanceError as exc:
            store.close()
            raise InputError(str(config), "budgets", str(exc)) from None
        except BaseException:
            store.close()
            raise
        holder = controller_id or f"{settings.name}@{socket.gethostname()}:{os.getpid()}"

        def leading(change: str, epoch: int) -> None:
            now = {
                "taken": "leads",
                "released": "released the leader lease",  # a clean stop: no fault
            }.get(change, "lost the leader lease and stands by")
            err.print(f"controller {shown(holder)}: {now} (epoch {epoch})", markup=False)

        try:
            lease = Lease(store, holder, settings.lease_s, on_change=leading)
        except Exception as exc:  # noqa: BLE001 - SQLAlchemy: the database refused the table
            store.close()
            raise InputError(str(config), "state", f"cannot keep a lease in it: {exc}") from None
        controller = Controller(
            cluster,
            store,
            settings.interval_s,
            settings.budgets,
            event_poll_s=settings.event_poll_s,
            min_round_gap_s=settings.min_round_gap_s,
            lease=lease,
        )
        if dry is not None:
            controller.clock = dry.clock
        metrics = ControllerMetrics()
        metrics.watch(lease)
        if settings.metrics_port:
            try:
                metrics.serve(settings.metrics_port, settings.metrics_address)
            except OSError as exc:
                store.close()
                where = f"{settings.metrics_address}:{settings.metrics_port}"
                raise InputError(
                    str(config), "metrics", f"cannot serve on {where}: {exc}"
                ) from None
        stop = threading.Event()
        heard: list[int] = []  # the signals that asked it to stop

        def stopping(sig: int, _frame: object) -> None:
            heard.append(sig)
            stop.set()

        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, stopping)
        err.print(
            f"controller {settings.name}: "
            + (
                f"a dry run on simulated time from {dry.at():%Y-%m-%d %H:%M:%S} UTC, "
                if dry
                else ""
            )
            + f"a round every {duration(settings.interval_s)}, state in "
            f"{settings.state_url}"
            + (
                f", /metrics on {settings.metrics_address}:{settings.metrics_port}"
                if settings.metrics_port
                else ""
            )
            + f"; leader lease {duration(settings.lease_s)} as {shown(holder)}",
            highlight=False,
            markup=False,
        )
        if not lease.acquire():
            err.print(
                f"controller {shown(holder)}: another controller holds the leader lease "
                f"(epoch {lease.seen}): standing by",
                markup=False,
            )

        ran: list[bool] = []  # each round: whether it failed (--rounds: exit 1 if any did)

        def report(o: RoundOutcome) -> None:
            metrics.observe(o)
            ran.append(bool(o.error))
            if dry is not None:
                err.print(shown(dry.line(o)), markup=False, highlight=False)
                if dry.observe(o):
                    stop.set()  # the trace is done (or nothing left can ever start)
                return
            err.print(shown(o.line()), markup=False, highlight=False)

        try:
            controller.run(stop, rounds, on_round=report)
        finally:
            lease.release()
            store.close()
        if dry is not None:
            for line in dry.summary(metrics, settings.budgets, rounds, wide):
                out.print(shown(line), markup=False, highlight=False)
        if signal.SIGINT in heard:  # Ctrl-C: 130, as README's exit codes say
            from alloc.cli.stop import exit_interrupted

            exit_interrupted("the controller stopped after its current round")
        if rounds is not None and any(ran):  # a run of N rounds is a check: it did not pass
            err.print(
                f"{count(sum(ran))} of the {count(len(ran))} rounds failed (--rounds {rounds})",
                markup=False,
                highlight=False,
            )
            raise typer.Exit(1)

    guarded(act)


def _dry_run(
    settings: ControllerSettings, kind: str, until_s: float | None
) -> tuple[Executor, DryRun]:
    """The simulated cluster and its dry run, once the state is known to be this cluster's
    (none of its rounds after the cluster's time): nothing is created before, so a refused
    dry run writes nothing. A cluster file not yet there starts at its lab's `now`."""
    from alloc.controller.build import executor_for
    from alloc.controller.dryrun import DryRun, check_state
    from alloc.controller.opening import open_state, sqlite_file
    from alloc.io import load_instance

    fresh = settings.sim is not None and not settings.sim.cluster.exists()
    if fresh and settings.sim is not None:
        at_s = load_instance(settings.sim.lab).now.timestamp()
    else:
        cluster = executor_for(settings, kind)
        dry = DryRun.start(cluster, until_s)
        at_s = dry.clock.now()
    state = sqlite_file(settings.state_url)
    if state is None or state.exists():
        store = open_state(settings, existing=True)
        try:
            check_state(store, at_s)
        finally:
            store.close()
    if fresh:
        cluster = executor_for(settings, kind)
        dry = DryRun.start(cluster, until_s)
    return cluster, dry


def _simulated_options(
    clock: str, until: str | None, kind: str, chosen: str, wide: bool = False
) -> float | None:
    """--clock, --until and --wide checked before anything is opened or written; --until in
    seconds. `chosen` says where the executor `kind` came from (`--executor slurm`, or
    `FILE runs executor slurm`)."""
    if clock not in ("wall", "simulated"):
        raise InputError("--clock", "", f"expected wall or simulated, got {clock!r}")
    until_s = seconds("--until", until, above=0.0)
    if clock == "wall":
        if until is not None:
            raise InputError(
                "--until",
                "",
                "only with --clock simulated: it ends a dry run at a time of the simulated clock",
            )
        if wide:
            raise InputError(
                "--wide", "", "only with --clock simulated: it widens a dry run's summary"
            )
        return None
    if kind != "sim":
        raise InputError(
            "--clock",
            "",
            f"a simulated clock is the simulated cluster's: it needs the sim executor, and "
            f"{chosen} (use --executor sim, or --clock wall)",
        )
    return until_s
