"""Controller round latency, whatever the cluster manager (benchmarks.slurm, benchmarks.kubernetes):
`rounds` controller rounds back to back, full rounds and event passes in turn
(models/round.md 9), each snapshot + solve + record + apply."""

from __future__ import annotations

import statistics
from typing import Any

from alloc.adapters.base import Executor
from alloc.controller import Controller, StateStore


def round_latency(executor: Executor, rounds: int) -> dict[str, Any]:
    """Median, max and min seconds of the rounds, and the medians of each kind; what started."""
    controller = Controller(executor, StateStore("sqlite:///:memory:"), interval_s=0.0)
    times: dict[str, list[float]] = {"full": [], "event": []}
    started = 0
    for i in range(rounds):
        outcome = controller.round_once(event=i % 2 == 1)
        if outcome.error:
            raise RuntimeError(outcome.error)
        times[outcome.kind].append(outcome.seconds)
        started += outcome.started
    every = times["full"] + times["event"]
    return {
        "rounds": rounds,
        "median_s": statistics.median(every),
        "max_s": max(every),
        "min_s": min(every),
        "full_median_s": statistics.median(times["full"]),
        "event_median_s": statistics.median(times["event"]) if times["event"] else None,
        "started": started,
    }
