"""Calls to a cluster manager tried again with backoff and jitter, every failed attempt kept as
an `ExecutorFault`: shared by Slurm's commands (alloc.adapters.slurm.commands) and the
Kubernetes API (alloc.adapters.kubernetes.api), so both report their faults alike.

One attempt is a function that answers, or raises `Failed` (its kind, its message, and
whether another attempt is worth it). A failed attempt is logged and kept as a fault; unless
it was the last of `attempts`, or not worth another, it is tried again after a wait: the
backoff (`backoff_s`, doubled after each failed attempt, capped at `max_backoff_s`) with
jitter, drawn between half of it and all of it, so each wait is at least the one before and
callers that failed together do not come back together. The last `Failed` is raised for the
caller to turn into its own error. Anything else an attempt raises (an answer that is a
refusal: a job id Slurm does not know, a 404 or a 409 from Kubernetes) passes through untried
and unrecorded. Faults wait in `faults` until `take_faults()` hands them on (the controller
logs, counts and records them); nobody taking them, the last 1,000 are kept.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from alloc.adapters.base import ExecutorFault, FaultKind

__all__ = ["Failed", "Retrier"]

T = TypeVar("T")
KEPT = 1000  # faults kept when nobody takes them


class Failed(Exception):
    """One failed attempt: `kind`, what went wrong, and whether another attempt is worth it
    (False: the call is given up at once, its fault recorded all the same)."""

    def __init__(self, kind: FaultKind, message: str, again: bool = True) -> None:
        super().__init__(message.strip())
        self.kind, self.message, self.again = kind, message.strip(), again


@dataclass(kw_only=True)
class Retrier:
    attempts: int = 3  # in all, the first one included
    backoff_s: float = 0.5  # the first wait; doubled after each failed attempt
    max_backoff_s: float = 30.0
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(default_factory=random.Random)
    faults: list[ExecutorFault] = field(default_factory=list)  # not yet taken
    log: logging.Logger = field(
        default=logging.getLogger("alloc.executor"), repr=False, compare=False
    )

    def call(self, command: str, attempt: Callable[[], T], retry: bool = True) -> T:
        """`attempt()`'s answer, tried up to `attempts` times (once if not `retry`); the last
        `Failed` is raised. `command` names the call shortly in the faults ("squeue --json",
        "list pods"): no job, pod or host."""
        attempts = max(1, self.attempts if retry else 1)
        delay = self.backoff_s
        for number in range(1, attempts + 1):
            try:
                return attempt()
            except Failed as failed:
                last = number == attempts or not failed.again
                wait = None if last else self.jittered(delay)
                self.record(command, failed, number, wait)
                if wait is None:
                    raise
                self.sleep(wait)
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def jittered(self, delay: float) -> float:
        """Between half the backoff and all of it, the backoff capped at `max_backoff_s`."""
        capped = min(delay, self.max_backoff_s)
        return capped / 2 + self.rng.uniform(0.0, capped / 2)

    def record(self, command: str, failed: Failed, number: int, wait: float | None) -> None:
        fault = ExecutorFault(failed.kind, command, failed.message[:500], number, wait)
        self.faults.append(fault)
        del self.faults[:-KEPT]
        then = "given up" if wait is None else f"again in {wait:.2f} s"
        self.log.warning(
            "%s: %s (attempt %d, %s): %s", command, failed.kind, number, then, fault.message
        )

    def take_faults(self) -> tuple[ExecutorFault, ...]:
        """The faults since the last call, each handed on once."""
        taken, self.faults = tuple(self.faults), []
        return taken
