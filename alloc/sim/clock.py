"""The clocks a controller runs on (STYLE: simulation differs from production only by the clock
and the executor plugged in). The wall clock is the real one; the simulated clock belongs to
the simulated cluster (`SimCluster.simulated_clock`): waiting on it moves simulated time at
once instead of sleeping, and the cluster's jobs progress by it."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Epoch seconds: what records are stamped with."""
        ...

    def monotonic(self) -> float:
        """Seconds that only go forward: what intervals are measured with."""
        ...

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        """Let `seconds` pass; True when the wait ended early because `stop` is set."""
        ...


class WallClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        return stop.wait(max(0.0, seconds))


@dataclass
class SimulatedClock:
    """Simulated seconds `t_s` since `epoch_s` (the lab's `now`). A wait moves it at once; a
    wait that would pass `end_s` stops there and sets `stop`: a simulated run ends."""

    epoch_s: float
    t_s: float = 0.0
    end_s: float = math.inf

    def now(self) -> float:
        return self.epoch_s + self.t_s

    def monotonic(self) -> float:
        return self.t_s

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        if stop.is_set():
            return True
        if self.t_s + seconds > self.end_s:
            self.t_s = max(self.t_s, self.end_s)
            stop.set()
            return True
        self.t_s += max(0.0, seconds)
        return False
