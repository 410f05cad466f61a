"""`alloc controller run --config FILE`: the controller beside a real cluster manager (Slurm),
every round reading the cluster, deciding, acting and recording (alloc.controller)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated

import typer

from alloc.cli.common import err, guarded
from alloc.io import InputError
from alloc.readable import count, duration

controller_app = typer.Typer(
    rich_markup_mode=None,
    no_args_is_help=True,
    help="Run alloc as a controller beside a cluster manager.",
)


@controller_app.command("run")
def run(
    config: Annotated[Path, typer.Option("--config", help="Controller config YAML.")],
    executor: Annotated[
        str | None, typer.Option(help="The cluster manager driven (default: the config's).")
    ] = None,
    rounds: Annotated[
        int | None, typer.Option(min=1, help="Stop after this many rounds (default: never).")
    ] = None,
) -> None:
    """Run rounds every `interval` (config) until interrupted (Ctrl-C or SIGTERM end the
    current round first)."""
    from alloc.controller.build import executor_for
    from alloc.controller.loop import Controller, RoundOutcome
    from alloc.controller.metrics import ControllerMetrics
    from alloc.controller.state import StateStore
    from alloc.io.controller_config import load_controller_config

    def act() -> None:
        settings = load_controller_config(config)
        kind = executor or settings.executor
        cluster = executor_for(settings, kind)
        try:
            store = StateStore(settings.state_url)
        except Exception as exc:  # noqa: BLE001 - SQLAlchemy: a bad URL or database
            message = f"cannot open {settings.state_url}: {exc}"
            raise InputError(str(config), "state", message) from None
        controller = Controller(
            cluster,
            store,
            settings.interval_s,
            settings.budgets,
            event_poll_s=settings.event_poll_s,
            min_round_gap_s=settings.min_round_gap_s,
        )
        metrics = ControllerMetrics()
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
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        err.print(
            f"controller {settings.name}: a round every {duration(settings.interval_s)}, state "
            "in "
            f"{settings.state_url}"
            + (
                f", /metrics on {settings.metrics_address}:{settings.metrics_port}"
                if settings.metrics_port
                else ""
            ),
            highlight=False,
        )

        def report(o: RoundOutcome) -> None:
            metrics.observe(o)
            if o.error:
                err.print(f"round failed: {o.error}", markup=False)
                return
            status = o.plan.report.status if o.plan else "-"
            err.print(
                f"round {o.round_id}: {count(o.started)} started, {count(o.preempted)} "
                f"preempted, {count(o.failed)} failed; {status}; {o.seconds:.2f} s; "
                f"{'full round' if o.kind == 'full' else 'event pass'}",
                markup=False,
            )

        try:
            controller.run(stop, rounds, on_round=report)
        finally:
            store.close()

    guarded(act)
