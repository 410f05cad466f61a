"""Ctrl-C (SIGINT) during a long command (`alloc simulate`, `alloc whatif`): the first asks the
run to stop at its next consistent point (the end of the instant of simulated time it is in,
its round done), and the command writes what was measured so far, marked partial, then exits
130; a second one stops at once (`KeyboardInterrupt`, exit 130 by `alloc.cli.common.guarded`:
the files written by then are whole, each being written atomically)."""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any, NoReturn

import typer

from alloc.cli.common import EXIT_INTERRUPTED, err


class StopOnSigint:
    """While entered, SIGINT sets `requested` (and calls `on_request`, e.g. to tell worker
    processes) instead of raising; a second SIGINT raises KeyboardInterrupt. Calling the
    object answers "was a stop asked?" (the simulation's `stop` predicate)."""

    def __init__(self, on_request: Callable[[], None] | None = None) -> None:
        self.requested = False
        self._on_request = on_request
        self._previous: Any = None

    def __call__(self) -> bool:
        return self.requested

    def __enter__(self) -> StopOnSigint:
        # A process started with SIGINT ignored (a shell script's background job) keeps
        # ignoring it, as every program does: a Ctrl-C meant for the script is not for it.
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        if self._on_request is not None:
            self._on_request()


def exit_interrupted(message: str) -> NoReturn:
    """The one line a command stopped by Ctrl-C ends with, on stderr, and exit 130."""
    err.print(f"interrupted (Ctrl-C): {message}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_INTERRUPTED)
