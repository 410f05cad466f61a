"""The runs of `alloc whatif`: one after the other in this process, or `--jobs` at a time in
worker processes whose progress comes through a queue and which a stop reaches through an event
(loaded when whatif runs: the command line starts without multiprocessing)."""

from __future__ import annotations

import multiprocessing
import queue
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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


def _ended(display: ProgressDisplay, outcome: Outcome, label: str, metrics: Any) -> None:
    """Record how run `label` ended: its metrics (whole or partial), or None: not run."""
    if metrics is None:
        outcome.not_run.append(label)
        display.finish(label, "not run")
        return
    outcome.results[label] = metrics
    display.finish(label, "partial" if metrics.get("partial") else "done", metrics)


def run_in_turn(specs: list[RunSpec], display: ProgressDisplay) -> Outcome:
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
                    label = spec.label
                    metrics = run(
                        spec, display.reporter(label), stop=stop, writing=display.writer(label)
                    )
            _ended(display, outcome, spec.label, metrics)
        outcome.stopped = stop.requested
    outcome.not_run.sort(key=[s.label for s in specs].index)
    return outcome


def run_parallel(specs: list[RunSpec], jobs: int, display: ProgressDisplay) -> Outcome:
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
    """Pass the workers' reports on to the display: (kind, label, simulated seconds, full
    rounds, event passes), kind `progress` or `writing` (the run's simulation is over)."""
    while True:
        try:
            kind, label, t_s, rounds, passes = updates.get_nowait()
        except queue.Empty:
            return
        state = display.runs[label].state
        if kind == "writing" and state in ("waiting", "running"):
            display.writing(label, t_s, rounds, passes)
        elif state in ("waiting", "running"):
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
    updates.put(("progress", spec.label, 0.0, 0, 0))
    next_at = 0.0

    def report(t_s: float, rounds: int, passes: int) -> None:
        nonlocal next_at
        now = time.monotonic()
        if now >= next_at:
            next_at = now + WORKER_REPORT_EVERY_S
            updates.put(("progress", spec.label, t_s, rounds, passes))

    def writing(t_s: float, rounds: int, passes: int) -> None:
        updates.put(("writing", spec.label, t_s, rounds, passes))

    try:
        return spec.label, run(spec, report, stop=stop, writing=writing)
    except NothingSimulated:
        return spec.label, None
